// SPDX-License-Identifier: MIT
/* MOJO v3: varints, Austin's reference files, our writer, the strict reader, the dump. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <time.h>

#include "testlib.h"

#include "formats/mojo/mojo.h"
#include "formats/varint.h"
#include "profile/profile.h"

static const char *const reference_names[] = {
	"out39", "out311", "out313", "mode_xfgP", "mode_xm", "outp_sleep", "mp",
};
#define REFERENCE_COUNT (sizeof(reference_names) / sizeof(reference_names[0]))

/* ---- helpers ---- */

struct string_list {
	char **items;
	size_t count, cap;
};

static void list_push(struct string_list *list, char *item)
{
	if (list->count == list->cap) {
		list->cap = list->cap ? list->cap * 2 : 64;
		list->items = realloc(list->items, list->cap * sizeof(*list->items));
		assert_non_null(list->items);
	}
	list->items[list->count++] = item;
}

static void list_free(struct string_list *list)
{
	size_t i;

	for (i = 0; i < list->count; i++)
		free(list->items[i]);
	free(list->items);
	memset(list, 0, sizeof(*list));
}

static int compare_strings(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void list_sort(struct string_list *list)
{
	if (list->count)
		qsort(list->items, list->count, sizeof(*list->items), compare_strings);
}

static char *format_string(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *format_string(const char *fmt, ...)
{
	va_list args;
	char *text;

	va_start(args, fmt);
	assert_true(vasprintf(&text, fmt, args) >= 0);
	va_end(args);
	return text;
}

/* A sample as the strict reference decoder prints it (see testdata/README.md). */
static char *format_sample(const struct pf_sample *sample, const char *mode)
{
	char *text = NULL;
	size_t size = 0, i;
	FILE *out = open_memstream(&text, &size);

	assert_non_null(out);
	fprintf(out, "P%" PRIu32 ";T%" PRIu32 ":%" PRIu64, sample->pid, sample->iid, sample->tid);
	for (i = 0; i < sample->frame_count; i++) {
		const struct pf_frame *frame = &sample->frames[i];

		if (frame->kind == PF_FRAME_INVALID)
			fputs(";:INVALID:", out);
		else if (frame->kind == PF_FRAME_KERNEL)
			fprintf(out, ";kernel:%s:0", frame->name);
		else
			/* The reference decoder keeps Austin's native@ file prefix; ours strips it. */
			fprintf(out, ";%s%s:%s:%d",
				frame->kind == PF_FRAME_NATIVE ? PF_NATIVE_FILE_PREFIX : "", frame->file,
				frame->name,
				frame->line < 0 ? 0 : frame->line);
	}
	if (sample->status & PF_STATUS_GC)
		fputs(";:GC:", out);
	if (mode && strcmp(mode, "full") == 0)
		fprintf(out, " %" PRIu64 ",%d,%" PRId64, sample->time_us,
			(sample->status & PF_STATUS_IDLE) != 0, sample->memory);
	else if (mode && strcmp(mode, "memory") == 0)
		fprintf(out, " %" PRId64, sample->memory);
	else
		fprintf(out, " %" PRIu64, sample->time_us);
	fclose(out);
	return text;
}

static const char *metadata_value(void *state, const struct pf_reader_ops *ops, const char *key)
{
	const char *found = NULL;
	size_t i;

	for (i = 0; i < ops->metadata_count(state); i++) {
		const char *k, *v;

		ops->metadata_at(state, i, &k, &v);
		if (strcmp(k, key) == 0)
			found = v;
	}
	return found;
}

struct decoded {
	struct string_list lines;    /* formatted samples, file order */
	struct string_list metadata; /* "key: value", file order */
	size_t frame_refs;
	size_t samples;
	int result; /* 0 clean end, negative errno */
	char error[256];
};

static void decoded_free(struct decoded *decoded)
{
	list_free(&decoded->lines);
	list_free(&decoded->metadata);
}

static void decode_fd(int fd, struct decoded *decoded)
{
	const struct pf_reader_ops *ops;
	struct pf_sample sample;
	void *state;
	size_t i;
	int got;

	memset(decoded, 0, sizeof(*decoded));
	decoded->result = mojo_reader_create(fd, &state, &ops, decoded->error,
					     sizeof(decoded->error));
	if (decoded->result)
		return;
	/* Bounded by the file: each call consumes at least one event or ends. */
	while ((got = ops->next_sample(state, &sample)) == 1) {
		list_push(&decoded->lines, format_sample(&sample, metadata_value(state, ops, "mode")));
		for (i = 0; i < sample.frame_count; i++)
			decoded->frame_refs += sample.frames[i].kind == PF_FRAME_PYTHON ||
					       sample.frames[i].kind == PF_FRAME_NATIVE;
		decoded->samples++;
	}
	decoded->result = got;
	if (got < 0)
		snprintf(decoded->error, sizeof(decoded->error), "%s", ops->error(state));
	for (i = 0; i < ops->metadata_count(state); i++) {
		const char *key, *value;

		ops->metadata_at(state, i, &key, &value);
		list_push(&decoded->metadata, format_string("%s: %s", key, value));
	}
	ops->destroy(state);
}

static void decode_path(const char *path, struct decoded *decoded)
{
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	decode_fd(fd, decoded);
	close(fd);
}

static void decode_bytes(const void *data, size_t len, struct decoded *decoded)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/bytes.mojo", test_tmpdir());
	assert_int_equal(write_whole_file(path, data, len), 0);
	decode_path(path, decoded);
}

static void reference_path(char *out, size_t len, const char *name, const char *ext)
{
	char relative[128];

	snprintf(relative, sizeof(relative), "mojo/%s.%s", name, ext);
	testdata_path(out, len, relative);
}

/* The expected file: metadata (header block, before the marker line) and sample lines. */
static void load_expected(const char *name, struct string_list *metadata,
			  struct string_list *lines)
{
	char path[512];
	size_t len;
	uint8_t *text;
	char *line, *save = NULL;
	bool in_header = true;

	reference_path(path, sizeof(path), name, "expected.txt");
	text = read_whole_file(path, &len);
	assert_non_null(text);
	for (line = strtok_r((char *)text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "# ---- collapsed stacks", 23) == 0)
			in_header = false;
		else if (line[0] == '#' && in_header)
			list_push(metadata, strdup(line + 2));
		else if (line[0] != '#')
			list_push(lines, strdup(line));
	}
	free(text);
}

static void assert_lists_equal(struct string_list *a, struct string_list *b)
{
	size_t i;

	assert_int_equal(a->count, b->count);
	for (i = 0; i < a->count; i++)
		assert_string_equal(a->items[i], b->items[i]);
}

/* ---- writer helpers ---- */

struct writer_handle {
	int fd;
	void *state;
	const struct pf_writer_ops *ops;
	char path[256];
};

static void writer_open(struct writer_handle *handle, const char *name, unsigned flush_ms)
{
	struct pf_writer_options options = PF_WRITER_OPTIONS_DEFAULT;

	options.flush_interval_ms = flush_ms;
	snprintf(handle->path, sizeof(handle->path), "%s/%s", test_tmpdir(), name);
	handle->fd = open(handle->path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(handle->fd >= 0);
	assert_int_equal(mojo_writer_create(handle->fd, &options, &handle->state, &handle->ops), 0);
}

static void writer_close(struct writer_handle *handle)
{
	assert_int_equal(handle->ops->finish(handle->state), 0);
	handle->ops->destroy(handle->state);
	close(handle->fd);
}

static off_t file_size(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return st.st_size;
}

/* ---- tests ---- */

static void test_varint_vectors(void **unused)
{
	static const struct {
		int64_t value;
		uint8_t bytes[6];
		size_t len;
	} vectors[] = {
		{ 0, { 0x00 }, 1 },
		{ 63, { 0x3f }, 1 },
		{ 64, { 0x80, 0x01 }, 2 },
		{ 131, { 0x83, 0x02 }, 2 },
		{ -131, { 0xc3, 0x02 }, 2 },
		{ -1, { 0x41 }, 1 },
		{ 1000, { 0xa8, 0x0f }, 2 },
		{ 8191, { 0xbf, 0x7f }, 2 },
		{ 8192, { 0x80, 0x80, 0x01 }, 3 },
		{ 19158, { 0x96, 0xab, 0x02 }, 3 },
		{ 4294967296LL, { 0x80, 0x80, 0x80, 0x80, 0x20 }, 5 },
	};
	size_t i;

	(void)unused;
	for (i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		uint8_t out[VARINT_MAX_BYTES];
		int64_t value;

		assert_int_equal(varint_mojo_encode(vectors[i].value, out), vectors[i].len);
		assert_memory_equal(out, vectors[i].bytes, vectors[i].len);
		assert_int_equal(varint_mojo_decode(vectors[i].bytes, vectors[i].len, &value),
				 vectors[i].len);
		assert_int_equal(value, vectors[i].value);
		if (vectors[i].value >= 0) {
			uint64_t unsigned_value;

			assert_int_equal(varint_mojo_unsigned_encode((uint64_t)vectors[i].value, out),
					 vectors[i].len);
			assert_memory_equal(out, vectors[i].bytes, vectors[i].len);
			assert_int_equal(varint_mojo_unsigned_decode(vectors[i].bytes, vectors[i].len,
							     &unsigned_value),
					 vectors[i].len);
			assert_int_equal(unsigned_value, (uint64_t)vectors[i].value);
		}
	}
}

static void test_reference_files_match_expected(void **unused)
{
	size_t f;

	(void)unused;
	for (f = 0; f < REFERENCE_COUNT; f++) {
		struct string_list metadata = { 0 }, lines = { 0 };
		struct decoded decoded;
		char path[512];

		reference_path(path, sizeof(path), reference_names[f], "mojo");
		decode_path(path, &decoded);
		if (decoded.result)
			fail_msg("%s: %s", reference_names[f], decoded.error);
		load_expected(reference_names[f], &metadata, &lines);
		assert_true(lines.count > 0);
		assert_lists_equal(&decoded.metadata, &metadata);
		list_sort(&decoded.lines);
		list_sort(&lines);
		assert_lists_equal(&decoded.lines, &lines);
		decoded_free(&decoded);
		list_free(&metadata);
		list_free(&lines);
	}
}

/* Frames of the synthetic round trip: every location field, native, kernel, invalid. */
static const struct pf_frame frames_main[] = {
	{ PF_FRAME_PYTHON, "/srv/app/main.py", "<module>", 10, 12, 0, 17, -1, 0 },
	{ PF_FRAME_PYTHON, "/srv/app/main.py", "Worker.run", 20, 20, 4, 30, -1, 0 },
	{ PF_FRAME_NATIVE, "7f00deadbeef", "PyEval_EvalCode", 519, -1, -1, -1, -1, 0 },
	{ PF_FRAME_PYTHON, "/srv/app/lib.py", "helper", -1, -1, -1, -1, -1, 0 },
	{ PF_FRAME_KERNEL, "", "entry_SYSCALL_64", -1, -1, -1, -1, -1, 0 },
	{ PF_FRAME_KERNEL, "", "do_syscall_64", -1, -1, -1, -1, -1, 0 },
};
static const struct pf_frame frames_invalid[] = {
	{ PF_FRAME_INVALID, "", "", -1, -1, -1, -1, -1, 0 },
	{ PF_FRAME_PYTHON, "/srv/app/lib.py", "helper", 3, 3, 8, 9, -1, 0 },
};
static const struct pf_frame frames_quote[] = {
	{ PF_FRAME_PYTHON, "/srv/we\"ird\n.py", "f", 1, 1, 0, 1, -1, 0 },
};

static const struct pf_sample synthetic[] = {
	{ .pid = 100, .iid = 0, .tid = 100, .time_us = 1000, .memory = 4096,
	  .metrics = PF_METRIC_TIME | PF_METRIC_MEMORY, .frame_count = 6, .frames = frames_main },
	{ .pid = 100, .iid = 1, .tid = 0x7fffabcdef12ull, .time_us = 70000, .memory = -131,
	  .status = PF_STATUS_IDLE, .metrics = PF_METRIC_TIME | PF_METRIC_MEMORY,
	  .frame_count = 2, .frames = frames_invalid },
	{ .pid = 200, .iid = 0, .tid = 201, .time_us = 5, .memory = 0, .status = PF_STATUS_GC,
	  .metrics = PF_METRIC_TIME | PF_METRIC_MEMORY, .frame_count = 6, .frames = frames_main },
	{ .pid = 200, .iid = 0, .tid = 202, .time_us = 0, .memory = -9999999999LL,
	  .status = PF_STATUS_GC | PF_STATUS_IDLE, .metrics = PF_METRIC_TIME | PF_METRIC_MEMORY,
	  .frame_count = 0, .frames = NULL },
	{ .pid = 100, .iid = 0, .tid = 100, .time_us = UINT64_MAX, .memory = INT64_MAX,
	  .metrics = PF_METRIC_TIME | PF_METRIC_MEMORY, .frame_count = 6, .frames = frames_main },
	{ .pid = 4000000000u, .iid = 7, .tid = 1, .time_us = 1, .memory = 1,
	  .metrics = PF_METRIC_TIME | PF_METRIC_MEMORY, .frame_count = 1, .frames = frames_quote },
};
#define SYNTHETIC_COUNT (sizeof(synthetic) / sizeof(synthetic[0]))

static void assert_frames_equal(const struct pf_frame *a, const struct pf_frame *b)
{
	assert_int_equal(a->kind, b->kind);
	assert_string_equal(a->name, b->name);
	if (a->kind == PF_FRAME_KERNEL || a->kind == PF_FRAME_INVALID)
		return;
	assert_string_equal(a->file, b->file);
	assert_int_equal(a->line, b->line);
	assert_int_equal(a->end_line, b->end_line);
	assert_int_equal(a->column, b->column);
	assert_int_equal(a->end_column, b->end_column);
	assert_int_equal(b->opcode, -1);
}

static void assert_samples_equal(const struct pf_sample *a, const struct pf_sample *b)
{
	size_t i;

	assert_int_equal(a->pid, b->pid);
	assert_int_equal(a->iid, b->iid);
	assert_int_equal(a->tid, b->tid);
	assert_int_equal(a->status, b->status);
	assert_int_equal(a->metrics, b->metrics);
	assert_int_equal(a->time_us, b->time_us);
	assert_int_equal(a->memory, b->memory);
	assert_int_equal(a->frame_count, b->frame_count);
	for (i = 0; i < a->frame_count; i++)
		assert_frames_equal(&a->frames[i], &b->frames[i]);
}

static void write_synthetic(struct writer_handle *handle, uint64_t *ends)
{
	size_t i;

	assert_int_equal(handle->ops->set_metadata(handle->state, "python", "3.12.1"), 0);
	assert_int_equal(handle->ops->set_metadata(handle->state, "mode", "full"), 0);
	assert_int_equal(handle->ops->set_metadata(handle->state, "interval", "2000"), 0);
	for (i = 0; i < SYNTHETIC_COUNT; i++) {
		assert_int_equal(handle->ops->add_sample(handle->state, &synthetic[i]), 0);
		/* Flushing adds no bytes: the file's size is where this sample ends. */
		if (ends) {
			assert_int_equal(handle->ops->flush(handle->state), 0);
			ends[i] = (uint64_t)file_size(handle->path);
		}
	}
	assert_int_equal(handle->ops->set_metadata(handle->state, "duration", "123456"), 0);
}

static void test_round_trip_synthetic(void **unused)
{
	static const char *const expected_metadata[][2] = {
		{ "austin", "3.7.0" }, { "interval", "2000" }, { "mode", "full" },
		{ "pybpfprof", "1" }, { "python", "3.12.1" }, { "duration", "123456" },
	};
	struct writer_handle handle;
	const struct pf_reader_ops *ops;
	struct pf_sample sample;
	char error[256];
	void *state;
	size_t i;
	int fd;

	(void)unused;
	writer_open(&handle, "synthetic.mojo", 1000);
	write_synthetic(&handle, NULL);
	writer_close(&handle);

	fd = open(handle.path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(mojo_reader_create(fd, &state, &ops, error, sizeof(error)), 0);
	for (i = 0; i < SYNTHETIC_COUNT; i++) {
		assert_int_equal(ops->next_sample(state, &sample), 1);
		assert_samples_equal(&synthetic[i], &sample);
	}
	assert_int_equal(ops->next_sample(state, &sample), 0);
	assert_int_equal(ops->next_sample(state, &sample), 0);
	assert_int_equal(ops->metadata_count(state), 6);
	for (i = 0; i < 6; i++) {
		const char *key, *value;

		ops->metadata_at(state, i, &key, &value);
		assert_string_equal(key, expected_metadata[i][0]);
		assert_string_equal(value, expected_metadata[i][1]);
	}
	ops->destroy(state);
	close(fd);
}

/* ---- exited processes ---- */

#define SHORT_PROCESSES 400
#define SHORT_PROCESS_FUNCTIONS 24
#define SHORT_PROCESS_PIDS 37 /* pids come back, as the kernel reuses them */

static void short_process_frames(size_t process, struct pf_frame *frames, char names[][96],
				 char *file, size_t file_len)
{
	snprintf(file, file_len, "/srv/jobs/job_%zu.py", process);
	for (size_t f = 0; f < SHORT_PROCESS_FUNCTIONS; f++) {
		snprintf(names[f], 96, "job_%zu_step_%zu_with_a_name_long_enough_to_matter", process, f);
		frames[f] = pf_frame_unlocated(PF_FRAME_PYTHON, file, names[f]);
		frames[f].line = (int32_t)(f + 1);
	}
}

static struct pf_sample short_process_sample(size_t process, struct pf_frame *frames, const char *thread_name)
{
	struct pf_sample sample = { 0 };

	sample.pid = 1000 + (uint32_t)(process % SHORT_PROCESS_PIDS);
	sample.tid = sample.pid;
	sample.time_us = 1000;
	sample.metrics = PF_METRIC_TIME;
	sample.stack_id = process + 1;
	sample.frame_count = SHORT_PROCESS_FUNCTIONS;
	sample.frames = frames;
	sample.thread_name = thread_name;
	return sample;
}

/*
 * Hundreds of short processes in sequence, each forgotten when it exits: the writer's tables
 * stay as small as for the first few, and the file still names every process's functions
 * (a pid that comes back, or a late sample of an exited one, has its definitions written again).
 */
static void test_exited_processes_tables_freed(void **unused)
{
	struct pf_frame frames[SHORT_PROCESS_FUNCTIONS];
	char names[SHORT_PROCESS_FUNCTIONS][96];
	char file[64], thread_name[32];
	struct writer_handle handle;
	const struct pf_reader_ops *ops;
	struct pf_sample sample;
	size_t early_peak = 0, peak = 0;
	char error[256];
	void *state;
	int fd;

	(void)unused;
	writer_open(&handle, "short_processes.mojo", 1000);
	for (size_t process = 0; process < SHORT_PROCESSES; process++) {
		size_t held;

		short_process_frames(process, frames, names, file, sizeof(file));
		snprintf(thread_name, sizeof(thread_name), "job-%zu", process);
		sample = short_process_sample(process, frames, thread_name);
		for (int i = 0; i < 3; i++)
			assert_int_equal(handle.ops->add_sample(handle.state, &sample), 0);
		held = handle.ops->held_bytes(handle.state);
		peak = held > peak ? held : peak;
		if (process < 10)
			early_peak = peak;
		assert_int_equal(handle.ops->forget_pid(handle.state, sample.pid), 0);
		/* A sample drained after the process was forgotten: its tables start over. */
		if (process % 5 == 0) {
			assert_int_equal(handle.ops->add_sample(handle.state, &sample), 0);
			assert_int_equal(handle.ops->forget_pid(handle.state, sample.pid), 0);
		}
	}
	print_message("writer tables: %zu bytes after 10 processes, %zu at most over %d\n",
		      early_peak, peak, SHORT_PROCESSES);
	assert_true(early_peak > 0);
	assert_true(peak <= 2 * early_peak);
	writer_close(&handle);

	fd = open(handle.path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(mojo_reader_create(fd, &state, &ops, error, sizeof(error)), 0);
	for (size_t process = 0; process < SHORT_PROCESSES; process++) {
		int copies = 3 + (process % 5 == 0);

		short_process_frames(process, frames, names, file, sizeof(file));
		snprintf(thread_name, sizeof(thread_name), "job-%zu", process);
		for (int i = 0; i < copies; i++) {
			struct pf_sample expected = short_process_sample(process, frames, thread_name);

			assert_int_equal(ops->next_sample(state, &sample), 1);
			assert_int_equal(sample.pid, expected.pid);
			assert_int_equal(sample.frame_count, SHORT_PROCESS_FUNCTIONS);
			for (size_t f = 0; f < SHORT_PROCESS_FUNCTIONS; f++)
				assert_frames_equal(&frames[f], &sample.frames[f]);
			assert_non_null(sample.thread_name);
			assert_string_equal(sample.thread_name, thread_name);
		}
	}
	assert_int_equal(ops->next_sample(state, &sample), 0);
	ops->destroy(state);
	close(fd);
}

static void test_default_metadata_and_cpu_mode(void **unused)
{
	static const struct pf_frame frame = { PF_FRAME_PYTHON, "a.py", "f", 1, 1, 0, 1, -1, 0 };
	struct pf_sample sample = { .pid = 1, .tid = 1, .time_us = 42, .frame_count = 1,
				    .frames = &frame, .memory = 77 };
	struct writer_handle handle;
	struct decoded decoded;

	(void)unused;
	writer_open(&handle, "defaults.mojo", 1000);
	assert_int_equal(handle.ops->set_metadata(handle.state, "mode", "bogus"), -EINVAL);
	assert_non_null(strstr(handle.ops->error(handle.state), "bogus"));
	assert_int_equal(handle.ops->set_metadata(handle.state, "pybpfprof", "0.3"), 0);
	assert_int_equal(handle.ops->add_sample(handle.state, &sample), 0);
	assert_int_equal(handle.ops->set_metadata(handle.state, "mode", "memory"), -EINVAL);
	writer_close(&handle);
	decode_path(handle.path, &decoded);
	assert_int_equal(decoded.result, 0);
	assert_int_equal(decoded.metadata.count, 4);
	assert_string_equal(decoded.metadata.items[0], "austin: 3.7.0");
	assert_string_equal(decoded.metadata.items[1], "interval: 1000");
	assert_string_equal(decoded.metadata.items[2], "mode: cpu");
	assert_string_equal(decoded.metadata.items[3], "pybpfprof: 0.3");
	assert_int_equal(decoded.lines.count, 1);
	/* cpu mode carries time only: the memory value is not in the file. */
	assert_string_equal(decoded.lines.items[0], "P1;T0:1;a.py:f:1 42");
	decoded_free(&decoded);
}

static void test_flush_makes_samples_readable(void **unused)
{
	static const struct pf_frame frame = { PF_FRAME_PYTHON, "a.py", "f", 1, 1, 0, 1, -1, 0 };
	struct pf_sample sample = { .pid = 1, .tid = 1, .time_us = 42, .frame_count = 1,
				    .frames = &frame };
	struct timespec pause = { .tv_nsec = 5 * 1000 * 1000 };
	struct writer_handle handle;
	struct decoded decoded;

	(void)unused;
	writer_open(&handle, "flush.mojo", 60 * 1000);
	assert_int_equal(handle.ops->add_sample(handle.state, &sample), 0);
	assert_int_equal(file_size(handle.path), 0); /* buffered */
	assert_int_equal(handle.ops->flush(handle.state), 0);
	decode_path(handle.path, &decoded); /* as if the profiler had been killed here */
	assert_int_equal(decoded.result, 0);
	assert_int_equal(decoded.samples, 1);
	decoded_free(&decoded);
	handle.ops->destroy(handle.state);
	close(handle.fd);

	/* With a 1 ms interval, a sample added after 5 ms reaches the file by itself. */
	writer_open(&handle, "flush-interval.mojo", 1);
	assert_int_equal(handle.ops->add_sample(handle.state, &sample), 0);
	nanosleep(&pause, NULL);
	assert_int_equal(handle.ops->add_sample(handle.state, &sample), 0);
	decode_path(handle.path, &decoded);
	assert_int_equal(decoded.result, 0);
	assert_int_equal(decoded.samples, 2);
	decoded_free(&decoded);
	handle.ops->destroy(handle.state);
	close(handle.fd);
}

static void reencode(const char *source, const char *target, size_t *samples)
{
	const struct pf_reader_ops *ops;
	struct writer_handle handle;
	struct pf_sample sample;
	size_t meta_written = 0;
	char error[256];
	void *state;
	int fd, got;

	fd = open(source, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(mojo_reader_create(fd, &state, &ops, error, sizeof(error)), 0);
	writer_open(&handle, target, 1000);
	*samples = 0;
	for (;;) {
		got = ops->next_sample(state, &sample);
		/* Metadata read before this sample goes before it. */
		for (; meta_written < ops->metadata_count(state); meta_written++) {
			const char *key, *value;

			ops->metadata_at(state, meta_written, &key, &value);
			assert_int_equal(handle.ops->set_metadata(handle.state, key, value), 0);
		}
		if (got != 1)
			break;
		assert_int_equal(handle.ops->add_sample(handle.state, &sample), 0);
		(*samples)++;
	}
	assert_int_equal(got, 0);
	writer_close(&handle);
	ops->destroy(state);
	close(fd);
}

static void test_reencode_reference_files(void **unused)
{
	size_t f;

	(void)unused;
	for (f = 0; f < REFERENCE_COUNT; f++) {
		struct decoded original, ours;
		char source[512], target[128];
		size_t samples, i, j;
		double austin_per_sample, ours_per_sample;

		reference_path(source, sizeof(source), reference_names[f], "mojo");
		snprintf(target, sizeof(target), "reencoded-%s.mojo", reference_names[f]);
		reencode(source, target, &samples);
		decode_path(source, &original);
		snprintf(target, sizeof(target), "%s/reencoded-%s.mojo", test_tmpdir(),
			 reference_names[f]);
		decode_path(target, &ours);
		assert_int_equal(ours.result, 0);
		assert_int_equal(ours.samples, samples);
		list_sort(&original.lines);
		list_sort(&ours.lines);
		assert_lists_equal(&original.lines, &ours.lines);
		/* Every original metadata pair survives (ours puts austin, interval, mode first). */
		for (i = 0; i < original.metadata.count; i++) {
			for (j = 0; j < ours.metadata.count; j++)
				if (strcmp(ours.metadata.items[j], original.metadata.items[i]) == 0)
					break;
			if (j == ours.metadata.count)
				fail_msg("%s: lost metadata \"%s\"", reference_names[f],
					 original.metadata.items[i]);
		}
		austin_per_sample = (double)file_size(source) / (double)samples;
		ours_per_sample = (double)file_size(target) / (double)samples;
		print_message("%-10s %5zu samples  austin %7lld B (%.1f B/sample)  ours %7lld B "
			      "(%.1f B/sample)\n",
			      reference_names[f], samples, (long long)file_size(source),
			      austin_per_sample, (long long)file_size(target), ours_per_sample);
		assert_true(ours_per_sample < austin_per_sample);
		decoded_free(&original);
		decoded_free(&ours);
	}
}

static void test_every_prefix(void **unused)
{
	uint64_t ends[SYNTHETIC_COUNT];
	struct writer_handle handle;
	struct decoded full;
	uint8_t *data;
	size_t len, cut, i;

	(void)unused;
	writer_open(&handle, "prefix.mojo", 1000);
	write_synthetic(&handle, ends);
	writer_close(&handle);
	data = read_whole_file(handle.path, &len);
	assert_non_null(data);
	decode_bytes(data, len, &full);
	assert_int_equal(full.result, 0);
	assert_int_equal(full.samples, SYNTHETIC_COUNT);

	for (cut = 0; cut <= len; cut++) {
		struct decoded part;
		size_t complete = 0;

		for (i = 0; i < SYNTHETIC_COUNT; i++)
			complete += ends[i] <= cut;
		decode_bytes(data, cut, &part);
		if (cut == len)
			assert_int_equal(part.result, 0);
		if (part.result < 0 && !strstr(part.error, "truncated"))
			fail_msg("cut at %zu: %s", cut, part.error);
		assert_int_equal(part.samples, complete);
		for (i = 0; i < part.samples; i++)
			assert_string_equal(part.lines.items[i], full.lines.items[i]);
		if (part.result < 0)
			assert_non_null(strstr(part.error, "at byte"));
		decoded_free(&part);
	}
	decoded_free(&full);
	free(data);
}

static void test_random_flips_never_crash(void **unused)
{
	char path[512];
	uint8_t *data, *copy;
	size_t len, round;
	unsigned seed = 12345;

	(void)unused;
	reference_path(path, sizeof(path), "mode_xfgP", "mojo");
	data = read_whole_file(path, &len);
	assert_non_null(data);
	len = len > 6000 ? 6000 : len; /* a prefix keeps the test fast; cuts are legitimate too */
	copy = malloc(len);
	assert_non_null(copy);
	for (round = 0; round < 400; round++) {
		struct decoded decoded;
		FILE *sink = fopen("/dev/null", "w");
		char error[256];
		int flips = 1 + (int)(rand_r(&seed) % 4), k, fd;

		memcpy(copy, data, len);
		for (k = 0; k < flips; k++)
			copy[(size_t)rand_r(&seed) % len] ^= (uint8_t)(1u << (rand_r(&seed) % 8));
		decode_bytes(copy, len, &decoded);
		assert_true(decoded.result <= 0);
		if (decoded.result < 0)
			assert_true(decoded.error[0] != '\0');
		decoded_free(&decoded);

		assert_non_null(sink);
		snprintf(path, sizeof(path), "%s/bytes.mojo", test_tmpdir());
		fd = open(path, O_RDONLY);
		assert_true(fd >= 0);
		if (mojo_dump(fd, sink, error, sizeof(error)) < 0)
			assert_true(error[0] != '\0');
		close(fd);
		fclose(sink);
	}
	free(copy);
	free(data);
}

static void test_dump_reference_files(void **unused)
{
	size_t f;

	(void)unused;
	for (f = 0; f < REFERENCE_COUNT; f++) {
		struct decoded decoded;
		char path[512], error[256];
		char *text = NULL, *line, *save = NULL;
		size_t size = 0, frame_refs = 0, stacks = 0, lines = 0;
		FILE *out = open_memstream(&text, &size);
		int fd;

		reference_path(path, sizeof(path), reference_names[f], "mojo");
		decode_path(path, &decoded);
		fd = open(path, O_RDONLY);
		assert_true(fd >= 0);
		assert_int_equal(mojo_dump(fd, out, error, sizeof(error)), 0);
		close(fd);
		fclose(out);
		for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			if (lines++ == 0)
				assert_string_equal(line, "pybpfprof-dump format=mojo version=3");
			else
				assert_non_null(strstr(line, " at="));
			frame_refs += strncmp(line, "FrameRef ", 9) == 0;
			stacks += strncmp(line, "Stack ", 6) == 0;
		}
		assert_int_equal(frame_refs, decoded.frame_refs);
		assert_int_equal(stacks, decoded.samples);
		free(text);
		decoded_free(&decoded);
	}
}

static void test_dump_escapes_and_offsets(void **unused)
{
	static const uint8_t file[] = "MOJ\x03"
				      "\x01k\0a\"b\\c\nd\0"
				      "\x02\x01\x00" "1f\0"
				      "\x09\x83\x02";
	char *text = NULL, error[256];
	size_t size = 0;
	FILE *out = open_memstream(&text, &size);
	char path[128];
	int fd;

	(void)unused;
	snprintf(path, sizeof(path), "%s/dump.mojo", test_tmpdir());
	assert_int_equal(write_whole_file(path, file, sizeof(file) - 1), 0);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(mojo_dump(fd, out, error, sizeof(error)), 0);
	close(fd);
	fclose(out);
	assert_string_equal(text, "pybpfprof-dump format=mojo version=3\n"
				  "Metadata at=4 key=\"k\" value=\"a\\\"b\\\\c\\nd\"\n"
				  "Stack at=15 pid=1 iid=0 tid=\"1f\"\n"
				  "Time at=21 value=131\n");
	free(text);

	/* Cut inside the last event: what decoded is printed, then the reason. */
	text = NULL;
	out = open_memstream(&text, &size);
	assert_int_equal(write_whole_file(path, file, sizeof(file) - 2), 0);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(mojo_dump(fd, out, error, sizeof(error)), -EBADMSG);
	close(fd);
	fclose(out);
	assert_string_equal(error, "truncated at byte 23");
	assert_non_null(strstr(text, "Stack at=15 pid=1 iid=0 tid=\"1f\"\n"));
	assert_null(strstr(text, "Time"));
	free(text);
}

/* Bytes that the strict reader must refuse, with the reason it must give. */
static void assert_rejected(const void *bytes, size_t len, const char *reason)
{
	struct decoded decoded;

	decode_bytes(bytes, len, &decoded);
	assert_true(decoded.result < 0);
	if (!strstr(decoded.error, reason))
		fail_msg("expected \"%s\", got \"%s\"", reason, decoded.error);
	decoded_free(&decoded);
}

#define REJECT(literal, reason) assert_rejected(literal, sizeof(literal) - 1, reason)
#define HEAD "MOJ\x03\x01mode\0cpu\0"
#define STACK1 "\x02\x01\x00" "1\0"

static void test_strict_rejections(void **unused)
{
	(void)unused;
	REJECT("MOX\x03", "not a MOJO file");
	REJECT("MOJ\x04", "unsupported MOJO version 4");
	REJECT(HEAD "\x0b\x02x\0", "STRING before the first STACK at byte 14");
	REJECT(HEAD "\x09\x01", "TIME before the first STACK");
	REJECT(HEAD STACK1 "\x05\x01\x09\x01", "FRAME_REF to a frame not defined for this pid at byte 19");
	REJECT(HEAD STACK1 "\x03\x01\x05\x06\x01\x01\x01\x01", "FRAME names an undefined string");
	REJECT(HEAD STACK1 "\x0d", "unknown event id 13 at byte 19");
	REJECT(HEAD STACK1 "\x00", "unknown event id 0 at byte 19");
	REJECT(HEAD STACK1 "\x09\x01\x09\x01", "two metrics in one sample at byte 21");
	REJECT(HEAD STACK1 "\x09\x01\x0a\x01", "two metrics in one sample");
	REJECT(HEAD STACK1 "\x09\x01\x07", "GC after the metric");
	REJECT(HEAD STACK1 "\x08\x09\x01", "IDLE outside its slot");
	REJECT("MOJ\x03\x01mode\0full\0" STACK1 "\x08\x09\x01\x0a\x01", "IDLE outside its slot");
	REJECT(HEAD "\x02\x01\x00xyz\0\x09\x01", "thread id");
	REJECT(HEAD STACK1 "\x09\x41", "bad unsigned varint in TIME event");
	/* Definitions are per pid: pid 2 cannot use pid 1's frame. */
	REJECT(HEAD STACK1 "\x0b\x02" "f\0\x03\x01\x02\x02\x01\x01\x01\x01\x05\x01\x09\x01"
	       "\x02\x02\x00" "2\0\x05\x01\x09\x01", "not defined for this pid");
	REJECT(HEAD STACK1 "\x09\x01\x01k\0v\0\x05\x01", "outside a sample");
}

static void test_full_mode_sample_and_string_key_one(void **unused)
{
	/* Key 1 is "<unknown>" to Austin's readers whether or not it is defined. */
	static const uint8_t file[] = "MOJ\x03\x01mode\0full\0" STACK1
				      "\x0b\x02" "f.py\0\x03\x01\x02\x01\x05\x05\x02\x03"
				      "\x04\x05\x01\x06sym\0\x07\x09\x05\x08\x0a\x41";
	struct decoded decoded;

	(void)unused;
	decode_bytes(file, sizeof(file) - 1, &decoded);
	assert_int_equal(decoded.result, 0);
	assert_int_equal(decoded.lines.count, 1);
	assert_string_equal(decoded.lines.items[0],
			    "P1;T0:1;:INVALID:;f.py:<unknown>:5;kernel:sym:0;:GC: 5,1,-1");
	decoded_free(&decoded);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_varint_vectors),
		cmocka_unit_test(test_reference_files_match_expected),
		cmocka_unit_test(test_round_trip_synthetic),
		cmocka_unit_test(test_exited_processes_tables_freed),
		cmocka_unit_test(test_default_metadata_and_cpu_mode),
		cmocka_unit_test(test_flush_makes_samples_readable),
		cmocka_unit_test(test_reencode_reference_files),
		cmocka_unit_test(test_every_prefix),
		cmocka_unit_test(test_random_flips_never_crash),
		cmocka_unit_test(test_dump_reference_files),
		cmocka_unit_test(test_dump_escapes_and_offsets),
		cmocka_unit_test(test_strict_rejections),
		cmocka_unit_test(test_full_mode_sample_and_string_key_one),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
