// SPDX-License-Identifier: MIT
/* Tachyon writer, reader and dump against CPython 3.15.2's files and against each other. */
#include <stdbool.h>

#include "testlib.h"
#include "util/exit_status.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <zstd.h>

#include "formats/tachyon/tachyon.h"
#include "formats/varint.h"
#include "profile/profile.h"

static const char *const reference_names[] = { "t1", "mt", "gcnat", "rle", "att315" };
#define REFERENCE_COUNT (sizeof(reference_names) / sizeof(reference_names[0]))

/* ---- small helpers ---- */

struct lines {
	char **items;
	size_t count;
	size_t capacity;
};

static void lines_add(struct lines *lines, char *line)
{
	if (lines->count == lines->capacity) {
		lines->capacity = lines->capacity ? lines->capacity * 2 : 64;
		lines->items = realloc(lines->items, lines->capacity * sizeof(*lines->items));
		assert_non_null(lines->items);
	}
	lines->items[lines->count++] = line;
}

static void lines_free(struct lines *lines)
{
	for (size_t i = 0; i < lines->count; i++)
		free(lines->items[i]);
	free(lines->items);
	memset(lines, 0, sizeof(*lines));
}

/* Text file split into lines (without newlines). */
static struct lines read_lines(const char *path)
{
	struct lines lines = { 0 };
	size_t len;
	char *data = (char *)read_whole_file(path, &len);
	char *start;

	assert_non_null(data);
	start = data;
	for (char *p = data; p < data + len; p++) {
		if (*p == '\n') {
			*p = 0;
			lines_add(&lines, strdup(start));
			start = p + 1;
		}
	}
	if (start < data + len)
		lines_add(&lines, strdup(start));
	free(data);
	return lines;
}

/* One sample the way the reference reader's raw dump shows it. */
static char *format_sample(const struct pf_sample *s)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	assert_non_null(out);
	fprintf(out, "%" PRIu64 " %" PRIu32 " %" PRIu64 " 0x%02x %zu |", s->timestamp_us, s->iid,
		s->tid, s->status, s->frame_count);
	for (size_t i = 0; i < s->frame_count; i++) {
		const struct pf_frame *f = &s->frames[s->frame_count - 1 - i];
		int64_t values[5] = { f->line, f->end_line, f->column, f->end_column, f->opcode };

		fprintf(out, "%s%s:%s", i ? " ; " : " ", f->file, f->name);
		for (int v = 0; v < 5; v++) {
			if (values[v] < 0)
				fprintf(out, ":None");
			else
				fprintf(out, ":%" PRId64, values[v]);
		}
	}
	fclose(out);
	return text;
}

static int open_reader(const char *path, void **state, const struct pf_reader_ops **ops,
		       char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY);
	int ret;

	assert_true(fd >= 0);
	ret = tachyon_reader_create(fd, state, ops, err, errlen);
	close(fd); /* the reader keeps its own mapping */
	return ret;
}

/* Every sample of a file, formatted; the return value is the reader's verdict. */
static int read_formatted(const char *path, struct lines *out, char *err, size_t errlen)
{
	const struct pf_reader_ops *ops;
	struct pf_sample sample;
	void *state;
	int ret = open_reader(path, &state, &ops, err, errlen);

	if (ret)
		return ret;
	while ((ret = ops->next_sample(state, &sample)) > 0)
		lines_add(out, format_sample(&sample));
	if (ret < 0)
		snprintf(err, errlen, "%s", ops->error(state));
	ops->destroy(state);
	return ret;
}

static void reference_path(char *out, size_t len, const char *name, const char *suffix)
{
	char relative[128];

	snprintf(relative, sizeof(relative), "tachyon/%s%s", name, suffix);
	testdata_path(out, len, relative);
}

static char *tmp_path(const char *name)
{
	char *path = malloc(256);

	assert_non_null(path);
	snprintf(path, 256, "%s/%s", test_tmpdir(), name);
	return path;
}

/* ---- varints ---- */

static void test_leb128_vectors(void **unused)
{
	static const struct {
		uint64_t value;
		uint8_t bytes[10];
		size_t len;
	} vectors[] = {
		{ 0, { 0x00 }, 1 },
		{ 1, { 0x01 }, 1 },
		{ 127, { 0x7f }, 1 },
		{ 128, { 0x80, 0x01 }, 2 },
		{ 300, { 0xac, 0x02 }, 2 },
		{ 16384, { 0x80, 0x80, 0x01 }, 3 },
		{ UINT32_MAX, { 0xff, 0xff, 0xff, 0xff, 0x0f }, 5 },
		{ UINT64_MAX, { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 }, 10 },
	};
	uint8_t buf[VARINT_MAX_BYTES];
	uint64_t value;

	(void)unused;
	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		assert_int_equal(varint_leb128_encode(vectors[i].value, buf), vectors[i].len);
		assert_memory_equal(buf, vectors[i].bytes, vectors[i].len);
		assert_int_equal(varint_leb128_decode(vectors[i].bytes, vectors[i].len, &value), vectors[i].len);
		assert_true(value == vectors[i].value);
		/* One byte short is not a value. */
		assert_int_equal(varint_leb128_decode(vectors[i].bytes, vectors[i].len - 1, &value), 0);
	}
}

static void test_zigzag_vectors(void **unused)
{
	static const struct {
		int64_t value;
		uint8_t bytes[10];
		size_t len;
	} vectors[] = {
		{ 0, { 0x00 }, 1 },
		{ -1, { 0x01 }, 1 },
		{ 1, { 0x02 }, 1 },
		{ -2, { 0x03 }, 1 },
		{ 63, { 0x7e }, 1 },
		{ -64, { 0x7f }, 1 },
		{ 64, { 0x80, 0x01 }, 2 },
		{ INT64_MAX, { 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 }, 10 },
		{ INT64_MIN, { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 }, 10 },
	};
	uint8_t buf[VARINT_MAX_BYTES];
	int64_t value;

	(void)unused;
	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		assert_int_equal(varint_zigzag_encode(vectors[i].value, buf), vectors[i].len);
		assert_memory_equal(buf, vectors[i].bytes, vectors[i].len);
		assert_int_equal(varint_zigzag_decode(vectors[i].bytes, vectors[i].len, &value), vectors[i].len);
		assert_true(value == vectors[i].value);
	}
}

/* ---- reference files ---- */

static void assert_lines_equal(const struct lines *got, const struct lines *want, const char *what)
{
	for (size_t i = 0; i < got->count && i < want->count; i++) {
		if (strcmp(got->items[i], want->items[i])) {
			print_error("%s line %zu:\n got  %s\n want %s\n", what, i + 1, got->items[i],
				    want->items[i]);
			fail();
		}
	}
	if (got->count != want->count) {
		print_error("%s: %zu lines, expected %zu\n", what, got->count, want->count);
		fail();
	}
}

static void test_reference_files_read(void **unused)
{
	(void)unused;
	for (size_t i = 0; i < REFERENCE_COUNT; i++) {
		char bin[512], expected_path[512], err[256] = "";
		struct lines got = { 0 }, want;

		reference_path(bin, sizeof(bin), reference_names[i], ".bin");
		reference_path(expected_path, sizeof(expected_path), reference_names[i],
			       ".expected-raw.txt");
		want = read_lines(expected_path);
		if (read_formatted(bin, &got, err, sizeof(err)) != 0) {
			print_error("%s: %s\n", bin, err);
			fail();
		}
		assert_lines_equal(&got, &want, reference_names[i]);
		lines_free(&got);
		lines_free(&want);
	}
}

static void test_reference_metadata(void **unused)
{
	const struct pf_reader_ops *ops;
	char path[512], err[256];
	void *state;
	const char *key, *value;
	bool saw_python = false, saw_compression = false, saw_duration = false;

	(void)unused;
	reference_path(path, sizeof(path), "t1", ".bin");
	assert_int_equal(open_reader(path, &state, &ops, err, sizeof(err)), 0);
	for (size_t i = 0; i < ops->metadata_count(state); i++) {
		ops->metadata_at(state, i, &key, &value);
		if (!strcmp(key, "python")) {
			assert_string_equal(value, "3.15.2");
			saw_python = true;
		} else if (!strcmp(key, "compression")) {
			assert_string_equal(value, "zstd");
			saw_compression = true;
		} else if (!strcmp(key, "interval")) {
			assert_string_equal(value, "1000");
		} else if (!strcmp(key, "start_time_us")) {
			assert_string_equal(value, "1599332672");
		} else if (!strcmp(key, "duration")) {
			saw_duration = true;
			assert_true(strtoull(value, NULL, 10) > 0);
		}
	}
	assert_true(saw_python && saw_compression && saw_duration);
	ops->destroy(state);
}

/* ---- writing ---- */

static int open_writer(const char *path, int level, void **state, const struct pf_writer_ops **ops,
		       int *fd)
{
	struct pf_writer_options options = PF_WRITER_OPTIONS_DEFAULT;

	options.compression_level = level;
	*fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	assert_true(*fd >= 0);
	return tachyon_writer_create(*fd, &options, state, ops);
}

/* Copy a reference file through our writer: every sample and the header metadata. */
static void reencode(const char *in_path, const char *out_path, int level)
{
	const struct pf_reader_ops *rops;
	const struct pf_writer_ops *wops;
	void *rstate, *wstate;
	struct pf_sample sample;
	char err[256];
	int fd, ret;

	assert_int_equal(open_reader(in_path, &rstate, &rops, err, sizeof(err)), 0);
	assert_int_equal(open_writer(out_path, level, &wstate, &wops, &fd), 0);
	for (size_t i = 0; i < rops->metadata_count(rstate); i++) {
		const char *key, *value;

		rops->metadata_at(rstate, i, &key, &value);
		assert_int_equal(wops->set_metadata(wstate, key, value), 0);
	}
	while ((ret = rops->next_sample(rstate, &sample)) > 0)
		assert_int_equal(wops->add_sample(wstate, &sample), 0);
	assert_int_equal(ret, 0);
	assert_int_equal(wops->finish(wstate), 0);
	wops->destroy(wstate);
	rops->destroy(rstate);
	close(fd);
}

/* Our REPEAT buffering may move whole groups relative to other threads: compare per thread. */
struct keyed_line {
	uint64_t iid;
	uint64_t tid;
	size_t index;
	char *line;
};

static int compare_keyed(const void *a, const void *b)
{
	const struct keyed_line *ka = a, *kb = b;

	if (ka->iid != kb->iid)
		return ka->iid < kb->iid ? -1 : 1;
	if (ka->tid != kb->tid)
		return ka->tid < kb->tid ? -1 : 1;
	return ka->index < kb->index ? -1 : ka->index > kb->index;
}

/* Lines start "ts iid tid ...". */
static void sort_by_thread(struct lines *lines)
{
	struct keyed_line *keyed = calloc(lines->count + 1, sizeof(*keyed));

	assert_non_null(keyed);
	for (size_t i = 0; i < lines->count; i++) {
		const char *iid = strchr(lines->items[i], ' ');
		const char *tid;

		assert_non_null(iid);
		tid = strchr(iid + 1, ' ');
		assert_non_null(tid);
		keyed[i] = (struct keyed_line){ strtoull(iid + 1, NULL, 10), strtoull(tid + 1, NULL, 10),
						i, lines->items[i] };
	}
	qsort(keyed, lines->count, sizeof(*keyed), compare_keyed);
	for (size_t i = 0; i < lines->count; i++)
		lines->items[i] = keyed[i].line;
	free(keyed);
}

static void test_reference_reencode_size(void **unused)
{
	(void)unused;
	for (size_t i = 0; i < REFERENCE_COUNT; i++) {
		char in_path[512], expected_path[512], err[256];
		char *out_path = tmp_path("reencoded.bin");
		struct lines got = { 0 }, want;
		size_t in_len, out_len;
		uint8_t *in, *out;
		uint32_t compression;

		reference_path(in_path, sizeof(in_path), reference_names[i], ".bin");
		reference_path(expected_path, sizeof(expected_path), reference_names[i],
			       ".expected-raw.txt");
		in = read_whole_file(in_path, &in_len);
		assert_non_null(in);
		memcpy(&compression, in + TACHYON_OFF_COMPRESSION, 4);
		reencode(in_path, out_path, compression ? 5 : 0);
		out = read_whole_file(out_path, &out_len);
		assert_non_null(out);
		print_message("tachyon %-7s CPython %6zu bytes, ours %6zu bytes, ratio %.3f\n",
			      reference_names[i], in_len, out_len, (double)out_len / (double)in_len);
		assert_true(out_len <= in_len);

		/* Same samples, thread by thread. */
		want = read_lines(expected_path);
		assert_int_equal(read_formatted(out_path, &got, err, sizeof(err)), 0);
		sort_by_thread(&got);
		sort_by_thread(&want);
		assert_lines_equal(&got, &want, reference_names[i]);
		lines_free(&got);
		lines_free(&want);
		free(in);
		free(out);
		free(out_path);
	}
}

/* ---- synthetic round trips ---- */

#define POOL_PYTHON 30
#define POOL_NATIVE 4
#define POOL_KERNEL 4
#define POOL_SIZE (POOL_PYTHON + POOL_NATIVE + POOL_KERNEL + 1)
#define POOL_INVALID (POOL_SIZE - 1)
#define SYN_THREADS 3
#define SYN_MAX_DEPTH 300

static struct pf_frame pool[POOL_SIZE];
static char pool_text[POOL_SIZE][2][48];

static void make_pool(void)
{
	for (int i = 0; i < POOL_SIZE; i++) {
		struct pf_frame *f = &pool[i];

		snprintf(pool_text[i][0], 48, "/srv/app/mod%d.py", i % 5);
		snprintf(pool_text[i][1], 48, "Class%d.func%d", i % 3, i);
		f->file = pool_text[i][0];
		f->name = pool_text[i][1];
		f->kind = PF_FRAME_PYTHON;
		f->line = 10 + i;
		f->end_line = 10 + i + i % 3;
		f->column = i % 7;
		f->end_column = i % 7 + 5 + i;
		f->opcode = i % 2 ? -1 : (int16_t)(i * 8 % 250);
		if (i % 6 == 5) /* no location at all */
			f->line = f->end_line = f->column = f->end_column = -1;
		if (i >= POOL_PYTHON && i < POOL_PYTHON + POOL_NATIVE) {
			f->kind = PF_FRAME_NATIVE;
			/* The last one has no file name at all. */
			snprintf(pool_text[i][0], 48, "libfoo.so.%d", i);
			if (i == POOL_PYTHON + POOL_NATIVE - 1)
				pool_text[i][0][0] = 0;
			f->line = f->end_line = f->column = f->end_column = -1;
		} else if (i >= POOL_PYTHON + POOL_NATIVE && i < POOL_INVALID) {
			f->kind = PF_FRAME_KERNEL;
			snprintf(pool_text[i][1], 48, "do_syscall_%d", i);
			f->line = 3; /* a kernel frame has no source location: the writer drops it */
		} else if (i == POOL_INVALID) {
			f->kind = PF_FRAME_INVALID;
			f->file = "";
			f->name = "";
		}
	}
}

/* The frame as it must come back from a Tachyon file. */
static struct pf_frame expected_frame(const struct pf_frame *f)
{
	struct pf_frame e = *f;

	if (f->kind == PF_FRAME_KERNEL) {
		e.file = "<kernel>";
		e.line = e.end_line = e.column = e.end_column = e.opcode = -1;
	}
	if (f->kind == PF_FRAME_INVALID) {
		e.file = "~";
		e.name = "<truncated>";
		e.line = e.end_line = e.column = e.end_column = e.opcode = -1;
	}
	return e;
}

static char *format_with_kinds(const struct pf_sample *s)
{
	char *base = format_sample(s), *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	assert_non_null(out);
	fprintf(out, "%s time=%" PRIu64 " metrics=%u kinds=", base, s->time_us, s->metrics);
	for (size_t i = 0; i < s->frame_count; i++)
		fputc('0' + s->frames[i].kind, out);
	fclose(out);
	free(base);
	return text;
}

struct syn_thread {
	uint64_t tid;
	uint32_t iid;
	uint64_t ts;
	uint64_t expected_ts;
	size_t depth;
	int stack[SYN_MAX_DEPTH]; /* pool indices, root first */
};

struct synth {
	uint32_t rng;
	uint64_t start;
	bool started;
	struct syn_thread threads[SYN_THREADS];
	struct pf_frame frames[SYN_MAX_DEPTH];
	struct pf_frame expected[SYN_MAX_DEPTH];
	unsigned step;
};

static uint32_t next_random(uint32_t *state)
{
	*state = *state * 1103515245u + 12345u;
	return *state >> 8;
}

static void synth_init(struct synth *syn, uint64_t start)
{
	memset(syn, 0, sizeof(*syn));
	syn->rng = 42;
	syn->start = start;
	syn->started = start != 0;
	for (int t = 0; t < SYN_THREADS; t++) {
		/* Threads 0 and 2 share an OS tid in different interpreters. */
		syn->threads[t].tid = t == 1 ? 0x7f0000001234ull : 4242;
		syn->threads[t].iid = t == 2 ? 1 : 0;
		syn->threads[t].ts = 5000 + 100 * (uint64_t)t;
	}
}

static void synth_change_stack(struct synth *syn, struct syn_thread *t)
{
	uint32_t r = next_random(&syn->rng);
	size_t n;

	switch (r % 12) {
	case 0: case 1: case 2: case 3: case 4:
		break; /* same stack: REPEAT */
	case 5: /* push */
		for (n = 1 + r / 16 % 3; n && t->depth < 40; n--)
			t->stack[t->depth++] = (int)(next_random(&syn->rng) % POOL_PYTHON);
		break;
	case 6: /* pop */
		n = 1 + r / 16 % 3;
		t->depth = t->depth > n ? t->depth - n : 0;
		break;
	case 7: /* pop and push */
		t->depth = t->depth > 2 ? t->depth - 2 : 0;
		t->stack[t->depth++] = (int)(next_random(&syn->rng) % (POOL_PYTHON + POOL_NATIVE));
		break;
	case 8: /* a new stack with native, kernel and invalid frames */
		t->depth = 0;
		if (r & 0x100)
			t->stack[t->depth++] = POOL_INVALID;
		for (n = 1 + r / 16 % 8; n; n--)
			t->stack[t->depth++] = (int)(next_random(&syn->rng) % (POOL_PYTHON + POOL_NATIVE));
		t->stack[t->depth++] = POOL_PYTHON + POOL_NATIVE + (int)(r / 512 % POOL_KERNEL);
		break;
	case 9: /* deeper than Tachyon allows: the innermost 256 must survive */
		t->depth = 0;
		for (n = 0; n < SYN_MAX_DEPTH; n++)
			t->stack[t->depth++] = (int)((n * 7 + r) % POOL_PYTHON);
		break;
	case 10:
		t->depth = 0;
		break;
	default: /* replace the leaf */
		if (t->depth)
			t->stack[t->depth - 1] = (int)(next_random(&syn->rng) % POOL_PYTHON);
		break;
	}
}

/* The next sample, and the line it must read back as. */
static char *synth_next(struct synth *syn, struct pf_sample *sample)
{
	uint32_t r = next_random(&syn->rng);
	struct syn_thread *t = &syn->threads[r % SYN_THREADS];
	size_t kept, first, gc;
	uint64_t delta, last;
	struct pf_sample expected;

	synth_change_stack(syn, t);
	/* Now and then a clock going backwards: the delta is clamped to 0. */
	if (r / 8 % 97 == 0)
		t->ts -= 50;
	else
		t->ts += 900 + r / 8 % 200;
	for (size_t i = 0; i < t->depth; i++)
		syn->frames[i] = pool[t->stack[i]];
	memset(sample, 0, sizeof(*sample));
	sample->tid = t->tid;
	sample->iid = t->iid;
	sample->pid = 99;
	sample->timestamp_us = t->ts;
	sample->status = (syn->step++ % 64) | (r & 0x4 ? PF_STATUS_GC : 0);
	sample->metrics = PF_METRIC_TIME;
	sample->time_us = 1000;
	sample->frame_count = t->depth;
	sample->frames = syn->frames;

	if (!syn->started) {
		syn->start = t->ts;
		syn->started = true;
	}
	last = t->expected_ts ? t->expected_ts : syn->start;
	delta = t->ts > last ? t->ts - last : 0;
	t->expected_ts = last + delta;
	/* The GC status becomes CPython's "~" "<GC>" leaf frame, within the 256 kept. */
	gc = (sample->status & PF_STATUS_GC) != 0;
	kept = t->depth > 256 - gc ? 256 - gc : t->depth;
	first = t->depth - kept;
	for (size_t i = 0; i < kept; i++)
		syn->expected[i] = expected_frame(&syn->frames[first + i]);
	if (gc)
		syn->expected[kept] = pf_frame_unlocated(PF_FRAME_PYTHON, "~", "<GC>");
	expected = (struct pf_sample){
		.iid = t->iid, .tid = t->tid, .timestamp_us = t->expected_ts,
		/* Each sample weighs one interval (1000 µs here) whatever the gap since the thread's last. */
		.status = sample->status & 0xff, .metrics = PF_METRIC_TIME, .time_us = 1000,
		.frame_count = kept + gc, .frames = syn->expected,
	};
	return format_with_kinds(&expected);
}

static int read_with_kinds(const char *path, struct lines *out, char *err, size_t errlen)
{
	const struct pf_reader_ops *ops;
	struct pf_sample sample;
	void *state;
	int ret = open_reader(path, &state, &ops, err, errlen);

	if (ret)
		return ret;
	while ((ret = ops->next_sample(state, &sample)) > 0) {
		assert_int_equal(sample.pid, 0);
		lines_add(out, format_with_kinds(&sample));
	}
	if (ret < 0)
		snprintf(err, errlen, "%s", ops->error(state));
	ops->destroy(state);
	return ret;
}

static void assert_file_holds(const char *path, struct lines *want)
{
	struct lines got = { 0 }, sorted_want = { 0 };
	char err[256] = "";

	if (read_with_kinds(path, &got, err, sizeof(err)) != 0) {
		print_error("%s: %s\n", path, err);
		fail();
	}
	for (size_t i = 0; i < want->count; i++)
		lines_add(&sorted_want, strdup(want->items[i]));
	sort_by_thread(&got);
	sort_by_thread(&sorted_want);
	assert_lines_equal(&got, &sorted_want, path);
	lines_free(&got);
	lines_free(&sorted_want);
}

static void write_synthetic(const char *path, int level, size_t count, uint64_t start,
			    struct lines *want)
{
	const struct pf_writer_ops *ops;
	struct pf_sample sample;
	struct synth *syn = malloc(sizeof(*syn));
	void *state;
	int fd;

	assert_non_null(syn);
	make_pool();
	synth_init(syn, start);
	assert_int_equal(open_writer(path, level, &state, &ops, &fd), 0);
	if (start) {
		char text[24];

		snprintf(text, sizeof(text), "%" PRIu64, start);
		assert_int_equal(ops->set_metadata(state, "start_time_us", text), 0);
	}
	assert_int_equal(ops->set_metadata(state, "python", "3.11.7"), 0);
	assert_int_equal(ops->set_metadata(state, "mode", "cpu"), 0);
	assert_int_equal(ops->set_metadata(state, "interval", "1000"), 0);
	for (size_t i = 0; i < count; i++) {
		lines_add(want, synth_next(syn, &sample));
		assert_int_equal(ops->add_sample(state, &sample), 0);
	}
	assert_int_equal(ops->set_metadata(state, "duration", "3000000"), 0);
	assert_int_equal(ops->set_metadata(state, "lost_samples", "7"), 0);
	assert_int_equal(ops->finish(state), 0);
	ops->destroy(state);
	close(fd);
	free(syn);
}

static const char *pf_metadata_lookup(const struct pf_reader_ops *ops, void *state, const char *key)
{
	const char *found = NULL;

	for (size_t i = 0; i < ops->metadata_count(state); i++) {
		const char *k, *v;

		ops->metadata_at(state, i, &k, &v);
		if (!strcmp(k, key))
			found = v;
	}
	if (!found) {
		print_error("no metadata %s\n", key);
		fail();
	}
	return found;
}

static void test_round_trip(void **unused)
{
	static const int levels[] = { 0, 5, 1 };

	(void)unused;
	for (size_t l = 0; l < sizeof(levels) / sizeof(levels[0]); l++) {
		char *path = tmp_path("synthetic.bin");
		struct lines want = { 0 };
		const struct pf_reader_ops *ops;
		char err[256];
		void *state;

		/* With an explicit start earlier than every sample, and without. */
		write_synthetic(path, levels[l], 3000, l == 1 ? 1000 : 0, &want);
		assert_file_holds(path, &want);

		assert_int_equal(open_reader(path, &state, &ops, err, sizeof(err)), 0);
		assert_string_equal(pf_metadata_lookup(ops, state, "python"), "3.11.7");
		assert_string_equal(pf_metadata_lookup(ops, state, "mode"), "cpu");
		assert_string_equal(pf_metadata_lookup(ops, state, "interval"), "1000");
		assert_string_equal(pf_metadata_lookup(ops, state, "samples"), "3000");
		assert_string_equal(pf_metadata_lookup(ops, state, "threads"), "3");
		assert_string_equal(pf_metadata_lookup(ops, state, "duration"), "3000000");
		assert_string_equal(pf_metadata_lookup(ops, state, "lost_samples"), "7");
		assert_string_equal(pf_metadata_lookup(ops, state, "sample_rate"), "1000");
		assert_string_equal(pf_metadata_lookup(ops, state, "compression"),
				    levels[l] ? "zstd" : "none");
		if (l == 1)
			assert_string_equal(pf_metadata_lookup(ops, state, "start_time_us"), "1000");
		ops->destroy(state);
		lines_free(&want);
		free(path);
	}
}

static void copy_file(const char *from, const char *to)
{
	size_t len;
	uint8_t *data = read_whole_file(from, &len);

	assert_non_null(data);
	assert_int_equal(write_whole_file(to, data, len), 0);
	free(data);
}

/* A checkpoint leaves a complete file behind; sampling then goes on into the same file. */
static void test_checkpoint(void **unused)
{
	static const int levels[] = { 5, 0 };

	(void)unused;
	make_pool();
	for (size_t l = 0; l < sizeof(levels) / sizeof(levels[0]); l++) {
		char *path = tmp_path("checkpointed.bin"), *snapshot = tmp_path("snapshot.bin");
		const struct pf_writer_ops *ops;
		struct lines want = { 0 };
		struct pf_sample sample;
		struct synth *syn = malloc(sizeof(*syn));
		void *state;
		int fd;

		assert_non_null(syn);
		synth_init(syn, 0);
		assert_int_equal(open_writer(path, levels[l], &state, &ops, &fd), 0);
		assert_int_equal(ops->set_metadata(state, "interval", "1000"), 0);
		assert_int_equal(ops->set_metadata(state, "mode", "cpu"), 0);
		for (int round = 0; round < 3; round++) {
			size_t flushed = want.count;

			for (int i = 0; i < 700; i++) {
				lines_add(&want, synth_next(syn, &sample));
				assert_int_equal(ops->add_sample(state, &sample), 0);
			}
			if (round > 0) {
				/* Between checkpoints the file on disk still holds the last one. */
				struct lines last = { want.items, flushed, flushed };

				copy_file(path, snapshot);
				assert_file_holds(snapshot, &last);
			}
			assert_int_equal(ops->flush(state), 0);
			/* A flush with nothing new in between must keep the file valid too. */
			if (round == 1)
				assert_int_equal(ops->flush(state), 0);
			copy_file(path, snapshot);
			assert_file_holds(snapshot, &want);
		}
		for (int i = 0; i < 500; i++) {
			lines_add(&want, synth_next(syn, &sample));
			assert_int_equal(ops->add_sample(state, &sample), 0);
		}
		assert_int_equal(ops->finish(state), 0);
		ops->destroy(state);
		close(fd);
		assert_file_holds(path, &want);
		lines_free(&want);
		free(syn);
		free(path);
		free(snapshot);
	}
}

static void test_empty_profile(void **unused)
{
	static const int levels[] = { 5, 0 };

	(void)unused;
	for (size_t l = 0; l < 2; l++) {
		char *path = tmp_path("empty.bin");
		const struct pf_writer_ops *ops;
		struct lines want = { 0 };
		void *state;
		int fd;

		assert_int_equal(open_writer(path, levels[l], &state, &ops, &fd), 0);
		assert_int_equal(ops->finish(state), 0);
		ops->destroy(state);
		close(fd);
		assert_file_holds(path, &want);
		free(path);
	}
}

/* A GC sample gets CPython's "~" "<GC>" leaf frame, once: a sample read from a CPython file has it. */
static void test_gc_frame_once(void **unused)
{
	char *path = tmp_path("gc.bin");
	const struct pf_writer_ops *ops;
	struct pf_frame frames[2] = { pf_frame_unlocated(PF_FRAME_PYTHON, "app.py", "churn"),
				      pf_frame_unlocated(PF_FRAME_PYTHON, "~", "<GC>") };
	struct pf_sample sample = { .tid = 7, .timestamp_us = 1000, .status = PF_STATUS_GC | PF_STATUS_HAS_GIL,
				    .metrics = PF_METRIC_TIME, .time_us = 1000, .frame_count = 1, .frames = frames };
	const struct pf_reader_ops *reader_ops;
	char err[256];
	void *state, *reader;
	int fd, got, read = 0;

	(void)unused;
	assert_int_equal(open_writer(path, 0, &state, &ops, &fd), 0);
	assert_int_equal(ops->add_sample(state, &sample), 0);
	sample.frame_count = 2;
	sample.timestamp_us = 2000;
	assert_int_equal(ops->add_sample(state, &sample), 0);
	assert_int_equal(ops->finish(state), 0);
	ops->destroy(state);
	close(fd);
	assert_int_equal(open_reader(path, &reader, &reader_ops, err, sizeof(err)), 0);
	while ((got = reader_ops->next_sample(reader, &sample)) > 0) {
		read++;
		assert_int_equal(sample.frame_count, 2);
		assert_string_equal(sample.frames[0].name, "churn");
		assert_string_equal(sample.frames[1].file, "~");
		assert_string_equal(sample.frames[1].name, "<GC>");
		assert_int_equal(sample.status, PF_STATUS_HAS_GIL);
	}
	assert_int_equal(got, 0);
	assert_int_equal(read, 2);
	reader_ops->destroy(reader);
	free(path);
}

/* ---- bad input ---- */

/* Read a whole file; 0 if it is valid, else the error (which must come with a reason). */
static int read_bytes(const uint8_t *data, size_t len)
{
	char *path = tmp_path("mangled.bin");
	struct lines got = { 0 };
	char err[256] = "";
	int ret;

	assert_int_equal(write_whole_file(path, data, len), 0);
	ret = read_formatted(path, &got, err, sizeof(err));
	if (ret < 0)
		assert_true(err[0] != 0);
	else
		assert_int_equal(ret, 0);
	lines_free(&got);
	free(path);
	return ret;
}

static void test_prefixes_fail(void **unused)
{
	(void)unused;
	{
		static const char *const names[] = { "t1" };
		size_t n = 0;
		char path[512];
		size_t len;
		uint8_t *data;

		reference_path(path, sizeof(path), names[n], ".bin");
		data = read_whole_file(path, &len);
		assert_non_null(data);
		assert_int_equal(read_bytes(data, len), 0);
		for (size_t cut = 0; cut < len; cut++) {
			if (read_bytes(data, cut) >= 0) {
				print_error("%s cut to %zu bytes read as valid\n", names[n], cut);
				fail();
			}
		}
		free(data);
	}
}

static void test_byte_flips_never_crash(void **unused)
{
	static const char *const names[] = { "t1", "mt", "rle" };
	uint32_t rng = 7;

	(void)unused;
	for (size_t n = 0; n < 3; n++) {
		char path[512];
		size_t len, rejected = 0;
		int flips = n == 2 ? 100 : 400; /* rle is big: fewer rounds */
		uint8_t *data;

		reference_path(path, sizeof(path), names[n], ".bin");
		data = read_whole_file(path, &len);
		assert_non_null(data);
		for (int i = 0; i < flips; i++) {
			size_t at = next_random(&rng) % len;
			uint8_t mask = (uint8_t)(1u << (next_random(&rng) % 8));

			data[at] ^= mask;
			rejected += read_bytes(data, len) < 0;
			data[at] ^= mask;
		}
		print_message("tachyon %s: %zu of %d single-bit flips rejected\n", names[n], rejected,
			      flips);
		/* Fields every reader must check: magic, version, offsets, footer size. */
		for (size_t at = 0; at < 8; at++) {
			data[at] ^= 0x10;
			assert_true(read_bytes(data, len) < 0);
			data[at] ^= 0x10;
		}
		data[TACHYON_OFF_STRINGS] ^= 0x01;
		assert_true(read_bytes(data, len) < 0);
		data[TACHYON_OFF_STRINGS] ^= 0x01;
		data[len - 24] ^= 0x01;
		assert_true(read_bytes(data, len) < 0);
		data[len - 24] ^= 0x01;
		/* Header sample count one too many. */
		data[TACHYON_OFF_SAMPLES] += 1;
		assert_true(read_bytes(data, len) < 0);
		data[TACHYON_OFF_SAMPLES] -= 1;
		free(data);
	}
}

/* ---- other byte order ---- */

static void swap32_at(uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	v = __builtin_bswap32(v);
	memcpy(p, &v, 4);
}

static void swap64_at(uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	v = __builtin_bswap64(v);
	memcpy(p, &v, 8);
}

static size_t skip_varint(const uint8_t *p, size_t len, uint64_t *value)
{
	size_t n = varint_leb128_decode(p, len, value);

	assert_true(n > 0);
	return n;
}

/* Swap every fixed-width field of an uncompressed file, as a big-endian writer would lay it out. */
static void make_other_endian(uint8_t *data, size_t len)
{
	uint64_t strings, pos, end, value;

	memcpy(&strings, data + TACHYON_OFF_STRINGS, 8);
	for (pos = TACHYON_HEADER_SIZE, end = strings; pos < end;) {
		uint8_t encoding = data[pos + 12];
		uint64_t count, fresh;

		swap64_at(data + pos);
		swap32_at(data + pos + 8);
		pos += 13;
		if (encoding == TACHYON_ENC_REPEAT) {
			pos += skip_varint(data + pos, end - pos, &count);
			for (uint64_t i = 0; i < count; i++)
				pos += skip_varint(data + pos, end - pos, &value) + 1;
			continue;
		}
		pos += skip_varint(data + pos, end - pos, &value) + 1;
		pos += skip_varint(data + pos, end - pos, &count);
		fresh = count;
		if (encoding != TACHYON_ENC_FULL)
			pos += skip_varint(data + pos, end - pos, &fresh);
		for (uint64_t i = 0; i < fresh; i++)
			pos += skip_varint(data + pos, end - pos, &value);
	}
	assert_true(pos == end);
	swap32_at(data + TACHYON_OFF_MAGIC);
	swap32_at(data + TACHYON_OFF_VERSION);
	swap64_at(data + TACHYON_OFF_START);
	swap64_at(data + TACHYON_OFF_INTERVAL);
	swap64_at(data + TACHYON_OFF_SAMPLES);
	swap32_at(data + TACHYON_OFF_THREADS);
	swap64_at(data + TACHYON_OFF_STRINGS);
	swap64_at(data + TACHYON_OFF_FRAMES);
	swap32_at(data + TACHYON_OFF_COMPRESSION);
	swap32_at(data + TACHYON_OFF_CONFIG);
	if (!memcmp(data + len - TACHYON_FOOTER_SIZE - TACHYON_STATS_SIZE + TACHYON_STATS_OFF_MAGIC,
		    TACHYON_STATS_MAGIC, 8)) {
		uint8_t *stats = data + len - TACHYON_FOOTER_SIZE - TACHYON_STATS_SIZE;

		swap64_at(stats + TACHYON_STATS_OFF_DURATION);
		swap64_at(stats + TACHYON_STATS_OFF_RATE);
		swap64_at(stats + TACHYON_STATS_OFF_ERROR_RATE);
		swap64_at(stats + TACHYON_STATS_OFF_MISSED);
		swap32_at(stats + TACHYON_STATS_OFF_PRESENT);
		swap32_at(stats + TACHYON_STATS_OFF_RESERVED);
		swap32_at(stats + TACHYON_STATS_OFF_VERSION);
		swap32_at(stats + TACHYON_STATS_OFF_SIZE);
	}
	swap32_at(data + len - 32);
	swap32_at(data + len - 28);
	swap64_at(data + len - 24);
}

static void test_other_endian(void **unused)
{
	static const char *const names[] = { "mt", "gcnat", "rle", NULL };

	(void)unused;
	for (size_t n = 0; n < 4; n++) {
		char path[512], err_a[256] = "", err_b[256] = "";
		char *swapped_path = tmp_path("swapped.bin");
		struct lines plain = { 0 }, swapped = { 0 }, unused_want = { 0 };
		size_t len;
		uint8_t *data;

		if (names[n]) {
			reference_path(path, sizeof(path), names[n], ".bin");
		} else {
			char *synthetic = tmp_path("synthetic-plain.bin");

			write_synthetic(synthetic, 0, 1500, 0, &unused_want);
			snprintf(path, sizeof(path), "%s", synthetic);
			free(synthetic);
			lines_free(&unused_want);
		}
		data = read_whole_file(path, &len);
		assert_non_null(data);
		make_other_endian(data, len);
		assert_int_equal(write_whole_file(swapped_path, data, len), 0);
		assert_int_equal(read_formatted(path, &plain, err_a, sizeof(err_a)), 0);
		if (read_formatted(swapped_path, &swapped, err_b, sizeof(err_b)) != 0) {
			print_error("%s swapped: %s\n", path, err_b);
			fail();
		}
		assert_true(plain.count > 0);
		assert_lines_equal(&swapped, &plain, "other-endian");
		lines_free(&plain);
		lines_free(&swapped);
		free(data);
		free(swapped_path);
	}
}

/* ---- dump ---- */

static char *dump_file(const char *path, int *ret, char *err, size_t errlen)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	int fd = open(path, O_RDONLY);

	assert_non_null(out);
	assert_true(fd >= 0);
	*ret = tachyon_dump(fd, out, err, errlen);
	close(fd);
	fclose(out);
	return text;
}

static void test_dump_reference_files(void **unused)
{
	(void)unused;
	for (size_t i = 0; i < REFERENCE_COUNT; i++) {
		char path[512], err[256] = "";
		uint64_t samples = 0, header_samples = 0, strings = 0;
		char *text, *line, *save = NULL;
		int ret;

		reference_path(path, sizeof(path), reference_names[i], ".bin");
		text = dump_file(path, &ret, err, sizeof(err));
		if (ret) {
			print_error("%s: %s\n", path, err);
			fail();
		}
		assert_true(!strncmp(text, "pybpfprof-dump format=tachyon version=1\nHeader magic=0x54414348 ", 62));
		for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			const char *count = strstr(line, " count=");
			const char *sc = strstr(line, " sample_count=");

			if (!strncmp(line, "Full ", 5) || !strncmp(line, "Suffix ", 7) ||
			    !strncmp(line, "PopPush ", 8))
				samples++;
			else if (!strncmp(line, "Repeat ", 7) && count)
				samples += strtoull(count + 7, NULL, 10);
			else if (!strncmp(line, "Header ", 7) && sc)
				header_samples = strtoull(sc + 14, NULL, 10);
			else if (!strncmp(line, "String ", 7))
				strings++;
		}
		assert_true(samples > 0);
		assert_true(samples == header_samples);
		assert_true(strings > 0);
		free(text);
	}
}

static void test_dump_bad_file(void **unused)
{
	char path[512], err[256] = "";
	char *cut_path = tmp_path("cut.bin"), *text;
	size_t len;
	uint8_t *data;
	int ret;

	(void)unused;
	reference_path(path, sizeof(path), "mt", ".bin");
	data = read_whole_file(path, &len);
	assert_non_null(data);
	/* Break a record in the middle of the sample data: records before it still print. */
	data[TACHYON_HEADER_SIZE + 12] = 0x07;
	assert_int_equal(write_whole_file(cut_path, data, len), 0);
	text = dump_file(cut_path, &ret, err, sizeof(err));
	assert_true(ret < 0);
	assert_non_null(strstr(err, "unknown stack encoding 0x07"));
	assert_non_null(strstr(text, "Header magic="));
	free(text);
	free(data);
	free(cut_path);
}

/* A ceiling on a reader's address space (the plain build: sanitizers reserve far more):
 * well above what these files really need. */

/* What the limits must still let through: our writer's file of 20000 threads with one
 * identical sample each, about 2 bytes a thread once compressed. */
static void test_many_threads_still_read(void **unused)
{
	enum { THREADS = 20000 };
	char *path = tmp_path("many-threads.bin");
	struct pf_frame frames[10];
	const struct pf_reader_ops *ops;
	const struct pf_writer_ops *wops;
	struct pf_writer_options options = PF_WRITER_OPTIONS_DEFAULT;
	struct pf_sample sample;
	void *state;
	size_t count = 0;
	char err[256];
	int fd, got;

	(void)unused;
	for (size_t i = 0; i < 10; i++)
		frames[i] = pf_frame_unlocated(PF_FRAME_PYTHON, "pool.py", "wait");
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(tachyon_writer_create(fd, &options, &state, &wops), 0);
	for (size_t t = 0; t < THREADS; t++) {
		struct pf_sample one = { .pid = 1, .tid = 100000 + t, .timestamp_us = 1000 + t,
					 .metrics = PF_METRIC_TIME, .time_us = 1000,
					 .frame_count = 10, .frames = frames };

		assert_int_equal(wops->add_sample(state, &one), 0);
	}
	assert_int_equal(wops->finish(state), 0);
	wops->destroy(state);
	close(fd);
	fd = open(path, O_RDONLY);
	assert_int_equal(tachyon_reader_create(fd, &state, &ops, err, sizeof(err)), 0);
	while ((got = ops->next_sample(state, &sample)) > 0)
		count++;
	assert_int_equal(got, 0);
	assert_int_equal(count, THREADS);
	ops->destroy(state);
	close(fd);
	free(path);
}

/*
 * A whole-host run sees thousands of short processes, each with names of its own (a hostile
 * one makes up as many as it likes). The writer forgets an exited process's threads, and its
 * string and frame tables (which stay for the file's end) stop at their bound: frames new past
 * it are written as one stand-in frame. The file still reads back whole, and a tid that comes
 * back in another process reads with its own stack and time.
 */
static void test_exited_processes_tables_bounded(void **unused)
{
	enum { PROCESSES = 3000, NAME_LEN = 1000, BOUND = 1 << 20 };
	char *path = tmp_path("exited.bin");
	struct pf_writer_options options = PF_WRITER_OPTIONS_DEFAULT;
	const struct pf_writer_ops *wops;
	const struct pf_reader_ops *ops;
	struct pf_sample sample;
	struct pf_frame frames[3];
	char names[3][NAME_LEN + 32], err[256];
	size_t count = 0, held, peak = 0, stand_ins = 0, first_named = 0;
	void *state;
	int fd, got;

	(void)unused;
	options.tables_max_bytes = BOUND;
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(tachyon_writer_create(fd, &options, &state, &wops), 0);
	assert_non_null(wops->forget_pid);
	for (uint32_t p = 0; p < PROCESSES; p++) {
		/* one tid for them all: each process's thread comes back as another's */
		struct pf_sample one = { .pid = 100 + p, .tid = 7, .timestamp_us = 1000 + 10 * (uint64_t)p,
					 .metrics = PF_METRIC_TIME, .time_us = 1000, .frame_count = 3, .frames = frames };

		for (int f = 0; f < 3; f++) {
			snprintf(names[f], sizeof(names[f]), "p%u_f%d_", p, f);
			memset(names[f] + strlen(names[f]), 'x', NAME_LEN);
			names[f][NAME_LEN] = 0;
			frames[f] = pf_frame_unlocated(PF_FRAME_PYTHON, "short.py", names[f]);
		}
		assert_int_equal(wops->add_sample(state, &one), 0);
		assert_int_equal(wops->forget_pid(state, one.pid), 0);
		held = wops->held_bytes(state);
		peak = held > peak ? held : peak;
	}
	assert_int_equal(wops->finish(state), 0);
	wops->destroy(state);
	close(fd);
	print_message("tables held at most %zu bytes for %d processes of 3 frames of %d bytes\n", peak, PROCESSES,
		      NAME_LEN);
	/* the bound, one doubling of a table past it, and the threads' few bytes */
	assert_true(peak < 3 * BOUND);

	fd = open(path, O_RDONLY);
	assert_int_equal(tachyon_reader_create(fd, &state, &ops, err, sizeof(err)), 0);
	while ((got = ops->next_sample(state, &sample)) > 0) {
		assert_int_equal(sample.frame_count, 3);
		assert_int_equal(sample.timestamp_us, 1000 + 10 * count);
		if (!strcmp(sample.frames[0].name, "<frames past the output tables' budget>"))
			stand_ins++;
		else if (!strncmp(sample.frames[0].name, "p", 1) &&
			 (unsigned)atoi(sample.frames[0].name + 1) == count && strstr(sample.frames[0].name, "_f0_"))
			first_named++;
		count++;
	}
	assert_int_equal(got, 0);
	ops->destroy(state);
	close(fd);
	assert_int_equal(count, PROCESSES);
	/* every sample either named as written or as the stand-in, most past the bound */
	assert_int_equal(first_named + stand_ins, PROCESSES);
	assert_true(first_named > 0);
	assert_true(stand_ins > PROCESSES / 2);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_leb128_vectors),
		cmocka_unit_test(test_zigzag_vectors),
		cmocka_unit_test(test_reference_files_read),
		cmocka_unit_test(test_reference_metadata),
		cmocka_unit_test(test_reference_reencode_size),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_checkpoint),
		cmocka_unit_test(test_empty_profile),
		cmocka_unit_test(test_gc_frame_once),
		cmocka_unit_test(test_prefixes_fail),
		cmocka_unit_test(test_byte_flips_never_crash),
		cmocka_unit_test(test_other_endian),
		cmocka_unit_test(test_dump_reference_files),
		cmocka_unit_test(test_dump_bad_file),
		cmocka_unit_test(test_many_threads_still_read),
		cmocka_unit_test(test_exited_processes_tables_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
