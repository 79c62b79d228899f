// SPDX-License-Identifier: MIT
/*
 * `pybpfprof convert` and `pybpfprof dump` as a user runs them: every
 * reference file survives MOJO -> Tachyon -> MOJO and Tachyon -> MOJO ->
 * Tachyon with every sample intact (as far as both formats hold a field),
 * collapsed output adds up, and bad input fails in one line without
 * leaving a file behind.
 */
#include "testlib.h"

#include <math.h>

#include "formats/format_registry.h"
#include "profile/profile.h"

#include <dirent.h>
#include <inttypes.h>
#include <sys/stat.h>

#define MAX_THREADS 64

/* A thread's samples as canonical text, so two readings can be compared. */
struct thread_samples {
	uint64_t tid;
	uint32_t iid;
	char *text;     /* one line per sample */
	size_t len;
	FILE *stream;
	size_t count;
};

struct profile_text {
	struct thread_samples threads[MAX_THREADS];
	size_t thread_count;
	size_t samples;
};

enum compare_fields {
	COMPARE_TIME = 1,      /* the time metric */
	COMPARE_TIMESTAMP = 2, /* absolute timestamps */
	COMPARE_GC_AS_FRAME = 4, /* a GC sample as Tachyon holds it: a "~" "<GC>" leaf frame */
};

static struct thread_samples *thread_of(struct profile_text *profile, uint64_t tid, uint32_t iid)
{
	struct thread_samples *thread;

	for (size_t i = 0; i < profile->thread_count; i++)
		if (profile->threads[i].tid == tid && profile->threads[i].iid == iid)
			return &profile->threads[i];
	assert_true(profile->thread_count < MAX_THREADS);
	thread = &profile->threads[profile->thread_count++];
	thread->tid = tid;
	thread->iid = iid;
	thread->stream = open_memstream(&thread->text, &thread->len);
	assert_non_null(thread->stream);
	return thread;
}

static void print_frame(FILE *out, const struct pf_frame *frame)
{
	/* Tachyon stores the end line as a delta from the line: "unknown end" reads back as the line. */
	int32_t end_line = frame->end_line == -1 ? frame->line : frame->end_line;

	fprintf(out, ";%d|%s|%s|%d|%d|%d|%d", frame->kind, frame->file, frame->name, frame->line,
		end_line, frame->column, frame->end_column);
}

static void read_profile(const char *path, unsigned fields, struct profile_text *profile)
{
	struct pf_reader *reader;
	struct pf_sample sample;
	char err[512];
	int got;

	memset(profile, 0, sizeof(*profile));
	if (format_registry_open_reader(&reader, path, err, sizeof(err)))
		fail_msg("%s: %s", path, err);
	while ((got = pf_reader_next_sample(reader, &sample)) > 0) {
		struct thread_samples *thread = thread_of(profile, sample.tid, sample.iid);

		if (fields & COMPARE_TIME)
			fprintf(thread->stream, "t=%llu", (unsigned long long)sample.time_us);
		if (fields & COMPARE_TIMESTAMP)
			fprintf(thread->stream, "ts=%llu", (unsigned long long)sample.timestamp_us);
		for (size_t i = 0; i < sample.frame_count; i++)
			print_frame(thread->stream, &sample.frames[i]);
		if ((fields & COMPARE_GC_AS_FRAME) && (sample.status & PF_STATUS_GC)) {
			struct pf_frame gc = pf_frame_unlocated(PF_FRAME_PYTHON, "~", "<GC>");

			print_frame(thread->stream, &gc);
		}
		fputc('\n', thread->stream);
		thread->count++;
		profile->samples++;
	}
	if (got < 0)
		fail_msg("%s: %s", path, pf_reader_error(reader));
	pf_reader_close(reader);
	for (size_t i = 0; i < profile->thread_count; i++)
		fclose(profile->threads[i].stream);
}

static void free_profile(struct profile_text *profile)
{
	for (size_t i = 0; i < profile->thread_count; i++)
		free(profile->threads[i].text);
}

/* Same threads, and in each the same samples in the same order. */
static void assert_same_samples(const char *what, struct profile_text *a, struct profile_text *b)
{
	assert_int_equal(a->samples, b->samples);
	assert_int_equal(a->thread_count, b->thread_count);
	for (size_t i = 0; i < a->thread_count; i++) {
		struct thread_samples *other = NULL;

		for (size_t j = 0; j < b->thread_count; j++)
			if (b->threads[j].tid == a->threads[i].tid && b->threads[j].iid == a->threads[i].iid)
				other = &b->threads[j];
		if (!other)
			fail_msg("%s: thread %llu missing", what, (unsigned long long)a->threads[i].tid);
		if (a->threads[i].len != other->len || memcmp(a->threads[i].text, other->text, other->len))
			fail_msg("%s: thread %llu differs", what, (unsigned long long)a->threads[i].tid);
	}
}

static int convert(const char *in, const char *out, char *err, size_t errlen)
{
	char *argv[] = { (char *)pybpfprof_binary(), "convert", (char *)in, "-o", (char *)out, NULL };

	return run_capture(argv, err, errlen);
}

static size_t list_testdata(const char *sub, const char *extension, char names[][64], size_t max)
{
	char dir_path[PATH_MAX];
	struct dirent *entry;
	size_t count = 0;
	DIR *dir;

	testdata_path(dir_path, sizeof(dir_path), sub);
	dir = opendir(dir_path);
	assert_non_null(dir);
	while ((entry = readdir(dir)) && count < max) {
		size_t len = strlen(entry->d_name), ext = strlen(extension);

		if (len > ext && strcmp(entry->d_name + len - ext, extension) == 0)
			FORMAT(names[count++], "%.*s", (int)(len - ext), entry->d_name);
	}
	closedir(dir);
	assert_true(count > 0);
	return count;
}

static void mojo_tachyon_mojo(void **state)
{
	char names[16][64];
	size_t count = list_testdata("mojo", ".mojo", names, 16);

	(void)state;
	for (size_t i = 0; i < count; i++) {
		char original[PATH_MAX], middle[PATH_MAX], back[PATH_MAX], err[1024], relative[128];
		struct profile_text before, after;
		bool memory_only = strcmp(names[i], "mode_xm") == 0;

		FORMAT(relative, "mojo/%s.mojo", names[i]);
		testdata_path(original, sizeof(original), relative);
		FORMAT(middle, "%s/%s.bin", test_tmpdir(), names[i]);
		FORMAT(back, "%s/%s.back.mojo", test_tmpdir(), names[i]);
		if (convert(original, middle, err, sizeof(err)) != 0)
			fail_msg("%s -> tachyon: %s", names[i], err);
		if (convert(middle, back, err, sizeof(err)) != 0)
			fail_msg("%s -> mojo: %s", names[i], err);
		/* Tachyon holds frames, threads, (as timestamps) time and GC (as a frame); not memory, pids. */
		{
			char replay_err[8192];
			long replayed = cpython_replay_samples(middle, replay_err, sizeof(replay_err));

			/* -1: no sid chroot, nothing to check against. */
			if (replayed != -1 && replayed < 0)
				fail_msg("python3.15 replay refused %s: %s", middle, replay_err);
			if (replayed >= 0)
				print_message("%s: CPython 3.15 replays %ld samples\n", names[i], replayed);
		}
		read_profile(original, (memory_only ? 0 : COMPARE_TIME) | COMPARE_GC_AS_FRAME, &before);
		read_profile(back, memory_only ? 0 : COMPARE_TIME, &after);
		print_message("%s: %zu samples, %zu threads survive MOJO -> Tachyon -> MOJO\n", names[i],
			      after.samples, after.thread_count);
		assert_same_samples(names[i], &before, &after);
		free_profile(&before);
		free_profile(&after);
	}
}

static void tachyon_mojo_tachyon(void **state)
{
	char names[16][64];
	size_t count = list_testdata("tachyon", ".bin", names, 16);

	(void)state;
	for (size_t i = 0; i < count; i++) {
		char original[PATH_MAX], middle[PATH_MAX], back[PATH_MAX], err[1024], relative[128];
		struct profile_text before, after;

		FORMAT(relative, "tachyon/%s.bin", names[i]);
		testdata_path(original, sizeof(original), relative);
		FORMAT(middle, "%s/%s.mojo", test_tmpdir(), names[i]);
		FORMAT(back, "%s/%s.back.bin", test_tmpdir(), names[i]);
		if (convert(original, middle, err, sizeof(err)) != 0)
			fail_msg("%s -> mojo: %s", names[i], err);
		if (convert(middle, back, err, sizeof(err)) != 0)
			fail_msg("%s -> tachyon: %s", names[i], err);
		/* MOJO holds frames, threads and time deltas, from which timestamps come back. */
		read_profile(original, COMPARE_TIMESTAMP, &before);
		read_profile(back, COMPARE_TIMESTAMP, &after);
		print_message("%s: %zu samples, %zu threads survive Tachyon -> MOJO -> Tachyon\n",
			      names[i], after.samples, after.thread_count);
		assert_same_samples(names[i], &before, &after);
		free_profile(&before);
		free_profile(&after);
	}
}

/* Collapsed output: one line per distinct stack, weights adding up to the total time. */
static void collapsed_adds_up(void **state)
{
	char original[PATH_MAX], out[PATH_MAX], err[1024];
	struct pf_reader *reader;
	struct pf_sample sample;
	unsigned long long total_in = 0, total_out = 0;
	size_t len;
	char *text, *line, *save = NULL;

	(void)state;
	testdata_path(original, sizeof(original), "mojo/out311.mojo");
	FORMAT(out, "%s/out311.collapsed", test_tmpdir());
	if (convert(original, out, err, sizeof(err)) != 0)
		fail_msg("collapsed: %s", err);
	assert_int_equal(format_registry_open_reader(&reader, original, err, sizeof(err)), 0);
	while (pf_reader_next_sample(reader, &sample) > 0)
		total_in += sample.time_us;
	pf_reader_close(reader);
	text = (char *)read_whole_file(out, &len);
	assert_non_null(text);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *space = strrchr(line, ' ');

		assert_non_null(space);
		total_out += strtoull(space + 1, NULL, 10);
		/* Root first: every stack of this profile starts in the import machinery or a module. */
		assert_null(strchr(line, '\r'));
	}
	free(text);
	assert_true(total_in > 0);
	assert_int_equal(total_in, total_out);
}

/* ---- bad input ---- */

static size_t count_lines(const char *text)
{
	size_t lines = 0;

	for (; *text; text++)
		lines += *text == '\n';
	return lines;
}

static void assert_one_line_failure(char *const argv[], const char *needle)
{
	char err[2048];
	int status = run_capture(argv, err, sizeof(err));

	print_message("%s %s -> exit %d: %s", argv[1], argv[2] ? argv[2] : "", status, err);
	assert_true(status != 0);
	assert_int_equal(count_lines(err), 1);
	if (!strstr(err, needle))
		fail_msg("expected '%s' in: %s", needle, err);
}

/* Nothing named like the output, finished or partial, may be left in dir. */
static void assert_no_output_left(const char *dir, const char *name)
{
	struct dirent *entry;
	DIR *handle = opendir(dir);

	assert_non_null(handle);
	while ((entry = readdir(handle)))
		if (strncmp(entry->d_name, name, strlen(name)) == 0)
			fail_msg("left behind: %s/%s", dir, entry->d_name);
	closedir(handle);
}

static void bad_input(void **state)
{
	char good[PATH_MAX], truncated[PATH_MAX], garbage[PATH_MAX], dir[PATH_MAX], out[PATH_MAX];
	uint8_t *data;
	size_t len;

	(void)state;
	testdata_path(good, sizeof(good), "mojo/out39.mojo");
	FORMAT(dir, "%s/bad", test_tmpdir());
	mkdir(dir, 0755);
	FORMAT(truncated, "%s/truncated.mojo", dir);
	FORMAT(garbage, "%s/garbage.data", dir);
	data = read_whole_file(good, &len);
	assert_non_null(data);
	assert_int_equal(write_whole_file(truncated, data, len / 2), 0);
	free(data);
	assert_int_equal(write_whole_file(garbage, "hello, not a profile\n", 21), 0);

	{
		char *argv[] = { (char *)pybpfprof_binary(), "dump", "/no/such/file.mojo", NULL };

		assert_one_line_failure(argv, "No such file");
	}
	{
		char *argv[] = { (char *)pybpfprof_binary(), "dump", garbage, NULL };

		assert_one_line_failure(argv, "unknown format");
	}
	{
		char *argv[] = { (char *)pybpfprof_binary(), "dump", truncated, NULL };
		int devnull = open("/dev/null", O_WRONLY), saved = dup(1);

		dup2(devnull, 1);
		assert_one_line_failure(argv, "truncated at byte");
		dup2(saved, 1);
		close(saved);
		close(devnull);
	}
	FORMAT(out, "%s/result.bin", dir);
	{
		char *argv[] = { (char *)pybpfprof_binary(), "convert", truncated, "-o", out, NULL };

		assert_one_line_failure(argv, "truncated at byte");
		assert_no_output_left(dir, "result");
	}
	{
		char *argv[] = { (char *)pybpfprof_binary(), "convert", garbage, "-o", out, NULL };

		assert_one_line_failure(argv, "unknown format");
		assert_no_output_left(dir, "result");
	}
	{
		char *argv[] = { (char *)pybpfprof_binary(), "convert", good, "-o",
				 "/no/such/dir/result.bin", NULL };

		assert_one_line_failure(argv, "cannot write");
	}
	{
		char yaml[PATH_MAX];
		char *argv[] = { (char *)pybpfprof_binary(), "convert", good, "-o", yaml, NULL };

		FORMAT(yaml, "%s/result.yaml", dir);
		assert_one_line_failure(argv, "cannot tell the format");
		assert_no_output_left(dir, "result");
	}
	{
		char *argv[] = { (char *)pybpfprof_binary(), "convert", good, "-o", out, "-f", "svgz", NULL };

		assert_one_line_failure(argv, "unknown format");
		assert_no_output_left(dir, "result");
	}
}

/* An output path that is a link or a FIFO is refused in one line and left as it was. */
static void special_outputs_are_refused(void **state)
{
	char good[PATH_MAX], link_path[PATH_MAX], fifo_path[PATH_MAX], secret[PATH_MAX];
	struct stat info;

	(void)state;
	testdata_path(good, sizeof(good), "mojo/out39.mojo");
	FORMAT(secret, "%s/secret.txt", test_tmpdir());
	FORMAT(link_path, "%s/link.bin", test_tmpdir());
	FORMAT(fifo_path, "%s/fifo.bin", test_tmpdir());
	assert_int_equal(write_whole_file(secret, "keep", 4), 0);
	unlink(link_path);
	unlink(fifo_path);
	assert_int_equal(symlink(secret, link_path), 0);
	assert_int_equal(mkfifo(fifo_path, 0600), 0);
	{
		char *argv[] = { (char *)pybpfprof_binary(), "convert", good, "-o", link_path, NULL };

		assert_one_line_failure(argv, "is a symbolic link");
	}
	{
		char *argv[] = { "timeout", "20", (char *)pybpfprof_binary(), "convert", good, "-o",
				 fifo_path, NULL };

		assert_one_line_failure(argv, "is a FIFO");
	}
	assert_int_equal(lstat(link_path, &info), 0);
	assert_true(S_ISLNK(info.st_mode));
	assert_int_equal(lstat(fifo_path, &info), 0);
	assert_true(S_ISFIFO(info.st_mode));
	assert_int_equal(stat(secret, &info), 0);
	assert_int_equal(info.st_size, 4);
	unlink(link_path);
	unlink(fifo_path);
}

/* Runs a shell command as nobody in dir (nobody's own); fails the test if it fails. */
static void as_nobody(const char *dir, const char *command)
{
	char *argv[] = { "setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "sh", "-c",
			 (char *)command, NULL };
	char err[512];
	char cwd[PATH_MAX];

	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(dir), 0);
	if (run_capture(argv, err, sizeof(err)) != 0)
		fail_msg("as nobody: %s: %s", command, err);
	assert_int_equal(chdir(cwd), 0);
}

/*
 * Inputs another user planted: a FIFO named like a profile is refused at once by dump, top and
 * convert (no hang), and collapsed text without newlines is refused within a memory bound with
 * one line (a 3 GiB sparse file, and a 64 MiB line, under a 512 MiB address-space limit).
 */
static void hostile_inputs_are_refused(void **state)
{
	char dir[] = "/tmp/pybpfprof-hostile-in.XXXXXX", fifo[PATH_MAX], sparse[PATH_MAX], long_line[PATH_MAX];
	char out[PATH_MAX], err[2048];
	const char *commands[] = { "dump", "top", "convert" };

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(chown(dir, 65534, 65534), 0);
	as_nobody(dir, "mkfifo stacks.collapsed && truncate -s 3G sparse.collapsed && "
		       "head -c 67108864 /dev/zero | tr '\\0' a > long.collapsed");
	FORMAT(fifo, "%s/stacks.collapsed", dir);
	FORMAT(sparse, "%s/sparse.collapsed", dir);
	FORMAT(long_line, "%s/long.collapsed", dir);
	FORMAT(out, "%s/out.collapsed", test_tmpdir());
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		char *argv[] = { "timeout", "10", (char *)pybpfprof_binary(), (char *)commands[i], fifo, "-o", out,
				 NULL };

		if (strcmp(commands[i], "convert") != 0)
			argv[5] = NULL;
		assert_one_line_failure(argv, "not a regular file (a FIFO)");
	}
	{
		char *argv[] = { (char *)pybpfprof_binary(), "dump", sparse, NULL };
		int status = run_limited("--as=536870912", argv, err, sizeof(err));

		print_message("sparse -> exit %d: %s", status, err);
		assert_true(status != 0);
		assert_int_equal(count_lines(err), 1);
		assert_non_null(strstr(err, "line 1: a NUL byte"));
	}
	{
		char *argv[] = { (char *)pybpfprof_binary(), "top", long_line, NULL };
		int status = run_limited("--as=536870912", argv, err, sizeof(err));

		print_message("long line -> exit %d: %s", status, err);
		assert_true(status != 0);
		assert_int_equal(count_lines(err), 1);
		assert_non_null(strstr(err, "line 1: longer than 4 MiB"));
	}
	unlink(fifo);
	unlink(sparse);
	unlink(long_line);
	rmdir(dir);
}

/*
 * An output path through a directory link another user planted (nobody's link in a directory of
 * nobody's, to a directory of root's) is refused, and nothing is written where it points; a link
 * of root's own is followed.
 */
static void planted_directory_links_are_refused(void **state)
{
	char dir[] = "/tmp/pybpfprof-hostile-out.XXXXXX", victim[PATH_MAX], command[PATH_MAX * 2];
	char good[PATH_MAX], through_planted[PATH_MAX], through_own[PATH_MAX], own_link[PATH_MAX];
	char landed[PATH_MAX];

	(void)state;
	testdata_path(good, sizeof(good), "mojo/out39.mojo");
	assert_non_null(mkdtemp(dir));
	assert_int_equal(chown(dir, 65534, 65534), 0);
	FORMAT(victim, "%s/victim", test_tmpdir());
	mkdir(victim, 0700);
	FORMAT(command, "ln -s %s evil", victim);
	as_nobody(dir, command);
	FORMAT(through_planted, "%s/evil/result.bin", dir);
	FORMAT(landed, "%s/result.bin", victim);
	unlink(landed);
	{
		char *argv[] = { (char *)pybpfprof_binary(), "convert", good, "-o", through_planted, NULL };

		assert_one_line_failure(argv, "Permission denied");
	}
	assert_false(file_exists(landed));
	assert_no_output_left(victim, "result");
	FORMAT(own_link, "%s/mine", test_tmpdir());
	unlink(own_link);
	assert_int_equal(symlink("victim", own_link), 0);
	FORMAT(through_own, "%s/mine/./result.bin", test_tmpdir());
	{
		char *argv[] = { (char *)pybpfprof_binary(), "convert", good, "-o", through_own, NULL };
		char err[1024];

		if (run_capture(argv, err, sizeof(err)) != 0)
			fail_msg("through a link of root's own: %s", err);
	}
	assert_true(file_exists(landed));
	unlink(landed);
	unlink(own_link);
	FORMAT(command, "%s/evil", dir);
	unlink(command);
	rmdir(dir);
}

static void assert_metadata_is(const char *path, const char *key, const char *want)
{
	struct pf_reader *reader;
	struct pf_sample sample;
	char err[512];
	const char *value;

	if (format_registry_open_reader(&reader, path, err, sizeof(err)))
		fail_msg("%s: %s", path, err);
	while (pf_reader_next_sample(reader, &sample) > 0)
		;
	value = pf_reader_metadata(reader, key);
	if (!value || strcmp(value, want))
		fail_msg("%s: %s is '%s', not '%s'", path, key, value ? value : "(none)", want);
	pf_reader_close(reader);
}

/* gil mode: Tachyon names it, MOJO says wall and pybpfprof_mode gil, and either converts to the
 * other; dump names the states and top --by-state splits the time by them. */
static void gil_mode_and_states(void **state)
{
	const struct pf_run_info info = { .interval_us = 1000, .mode = "wall", .own_mode = "gil",
					  .frequency_hz = 1000, .start_time_us = 1000 };
	struct pf_frame frame = pf_frame_unlocated(PF_FRAME_PYTHON, "main.py", "spin");
	char tachyon[PATH_MAX], mojo[PATH_MAX], back[PATH_MAX], err[1024], shown[16384];
	char *top_argv[] = { (char *)pybpfprof_binary(), "top", "--by-state", tachyon, NULL };
	char *dump_argv[] = { (char *)pybpfprof_binary(), "dump", "--samples", tachyon, NULL };
	struct pf_writer *writer;

	(void)state;
	FORMAT(tachyon, "%s/gil.bin", test_tmpdir());
	FORMAT(mojo, "%s/gil.mojo", test_tmpdir());
	FORMAT(back, "%s/gil.back.bin", test_tmpdir());
	assert_int_equal(pf_writer_open(&writer, tachyon, format_registry_find_name("tachyon"), NULL), 0);
	assert_int_equal(pf_writer_set_run_info(writer, &info), 0);
	for (uint64_t i = 0; i < 4; i++) {
		/* thread 8 holds the GIL three intervals of four, collecting in one */
		struct pf_sample sample = { .pid = 7, .tid = 8 + (i == 3), .timestamp_us = 1000 * (i + 2),
					    .status = PF_STATUS_ON_CPU | PF_STATUS_HAS_GIL | (i == 1 ? PF_STATUS_GC : 0),
					    .metrics = PF_METRIC_TIME, .time_us = 1000, .frame_count = 1,
					    .frames = &frame };

		assert_int_equal(pf_writer_add_sample(writer, &sample), 0);
	}
	assert_int_equal(pf_writer_close(writer), 0);
	assert_metadata_is(tachyon, "mode", "gil");
	if (convert(tachyon, mojo, err, sizeof(err)) != 0)
		fail_msg("gil tachyon -> mojo: %s", err);
	assert_metadata_is(mojo, "mode", "wall");
	assert_metadata_is(mojo, "pybpfprof_mode", "gil");
	if (convert(mojo, back, err, sizeof(err)) != 0)
		fail_msg("gil mojo -> tachyon: %s", err);
	assert_metadata_is(back, "mode", "gil");

	run_output(dump_argv, shown, sizeof(shown));
	assert_non_null(strstr(shown, "status=0x3 state=has_gil,on_cpu "));
	assert_non_null(strstr(shown, "name=\"<GC>\""));
	run_output(top_argv, shown, sizeof(shown));
	print_message("%s", shown);
	assert_non_null(strstr(shown, "holds GIL"));
	/* all: on CPU and holding the GIL 100%, GC a quarter (the <GC> frame); thread 8 (Tachyon has no
	 * pid): 3 of 4 intervals, one of its 3 collecting */
	assert_non_null(strstr(shown, "100.00%          0.00%        100.00%          0.00%         25.00%\n"));
	assert_non_null(strstr(shown, "0:8 "));
	assert_non_null(strstr(shown, "33.33%         75.00%\n"));
}

/* Four samples of thread 8 in `mode` (own_mode: ours), one of them on a CPU, into path. */
static void write_mode_file(const char *path, const char *format, const char *mode, const char *own_mode)
{
	const struct pf_run_info info = { .interval_us = 10000, .mode = mode, .own_mode = own_mode,
					  .frequency_hz = 100, .start_time_us = 1000 };
	struct pf_frame frame = pf_frame_unlocated(PF_FRAME_PYTHON, "main.py", "work");
	struct pf_writer *writer;

	assert_int_equal(pf_writer_open(&writer, path, format_registry_find_name(format), NULL), 0);
	assert_int_equal(pf_writer_set_run_info(writer, &info), 0);
	for (uint64_t i = 0; i < 4; i++) {
		struct pf_sample sample = { .pid = 7, .tid = 8, .timestamp_us = 10000 * (i + 1),
					    .status = i == 0 ? PF_STATUS_ON_CPU : PF_STATUS_IDLE,
					    .metrics = PF_METRIC_TIME, .time_us = 10000, .frame_count = 1,
					    .frames = &frame };

		assert_int_equal(pf_writer_add_sample(writer, &sample), 0);
	}
	assert_int_equal(pf_writer_close(writer), 0);
}

/* `top FILE`'s headings say what the file's mode measures: wall time is not where the CPU was. */
static void top_headings_by_mode(void **state)
{
	static const struct {
		const char *format, *mode, *own_mode, *heading;
	} files[] = {
		{ "mojo", "cpu", NULL, "own time (where the CPU was):" },
		{ "tachyon", "cpu", NULL, "own time (where the CPU was):" },
		{ "mojo", "wall", NULL, "own wall time (where the threads were, running or waiting):" },
		{ "tachyon", "wall", NULL, "own wall time (where the threads were, running or waiting):" },
		{ "mojo", "wall", "gil", "own time holding the GIL (where the GIL's holder was):" },
		{ "tachyon", "wall", "gil", "own time holding the GIL (where the GIL's holder was):" },
	};
	char path[PATH_MAX], shown[8192];
	char *argv[] = { (char *)pybpfprof_binary(), "top", path, NULL };

	(void)state;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		FORMAT(path, "%s/heading-%zu.%s", test_tmpdir(), i, files[i].format[0] == 'm' ? "mojo" : "bin");
		write_mode_file(path, files[i].format, files[i].mode, files[i].own_mode);
		run_output(argv, shown, sizeof(shown));
		if (!strstr(shown, files[i].heading))
			fail_msg("%s, %s mode: no '%s' in:\n%s", files[i].format, files[i].own_mode ? files[i].own_mode
				 : files[i].mode, files[i].heading, shown);
		if (strcmp(files[i].mode, "cpu") != 0 && strstr(shown, "CPU was"))
			fail_msg("%s, %s mode: says where the CPU was:\n%s", files[i].format, files[i].mode, shown);
	}
}

/* The "all" row of `top --by-state` of path, from its first state column. */
static void by_state_all_row(const char *path, char *row, size_t len)
{
	char *argv[] = { (char *)pybpfprof_binary(), "top", "--by-state", (char *)path, NULL };
	char shown[8192];
	const char *all, *end;

	run_output(argv, shown, sizeof(shown));
	all = strstr(shown, "\n  all ");
	assert_non_null(all);
	all += strlen("\n  all ");
	while (*all == ' ')
		all++;
	end = strchr(all, '\n');
	snprintf(row, len, "%.*s", (int)(end ? end - all : (ptrdiff_t)strlen(all)), all);
	print_message("%s: %s\n", path, row);
}

/* A state a file cannot hold reads n/a, not 0%: MOJO has no GIL and no on-CPU flag (its idle is
 * an event of full mode only); Tachyon's idle is a sample without the on-CPU flag. */
static void top_by_state_says_what_files_hold(void **state)
{
	char mojo[PATH_MAX], tachyon[PATH_MAX], cpu_mojo[PATH_MAX], row[512];
	double on_cpu, idle;

	(void)state;
	FORMAT(mojo, "%s/states-wall.mojo", test_tmpdir());
	FORMAT(tachyon, "%s/states-wall.bin", test_tmpdir());
	FORMAT(cpu_mojo, "%s/states-cpu.mojo", test_tmpdir());
	write_mode_file(mojo, "mojo", "wall", NULL);
	write_mode_file(tachyon, "tachyon", "wall", NULL);
	write_mode_file(cpu_mojo, "mojo", "cpu", NULL);
	/* on CPU, idle, holds GIL, waits for GIL, GC */
	by_state_all_row(tachyon, row, sizeof(row));
	/* (Tachyon weighs the first sample from the run's start: the shares are not 1:3 exactly.) */
	assert_int_equal(sscanf(row, "%lf%% %lf%%", &on_cpu, &idle), 2);
	assert_true(fabs(on_cpu + idle - 100) < 0.02 && idle > on_cpu);
	assert_non_null(strstr(row, "%          0.00%          0.00%          0.00%"));
	by_state_all_row(mojo, row, sizeof(row));
	assert_string_equal(row, "n/a            n/a            n/a            n/a          0.00%");
	by_state_all_row(cpu_mojo, row, sizeof(row));
	assert_string_equal(row, "100.00%            n/a            n/a            n/a          0.00%");
}

/* Function names are the target's: `top` must not let them drive the terminal. */
static void top_escapes_terminal_controls(void **state)
{
	static const char hostile[] = "evil\x1b[2J\rname\xc2\x9b" "31m";
	char path[PATH_MAX], shown[8192];
	char *argv[] = { (char *)pybpfprof_binary(), "top", path, NULL };
	struct pf_frame frames[2] = {
		pf_frame_unlocated(PF_FRAME_PYTHON, "main.py", "<module>"),
		pf_frame_unlocated(PF_FRAME_PYTHON, "main.py", hostile),
	};
	struct pf_sample sample = { .pid = 1, .tid = 1, .metrics = PF_METRIC_TIME, .time_us = 1000,
				    .frame_count = 2, .frames = frames };
	struct pf_writer *writer;
	size_t used = 0;
	ssize_t got;
	int out_fd;
	pid_t pid;

	(void)state;
	FORMAT(path, "%s/hostile.mojo", test_tmpdir());
	assert_int_equal(pf_writer_open(&writer, path, format_registry_find_name("mojo"), NULL), 0);
	assert_int_equal(pf_writer_add_sample(writer, &sample), 0);
	assert_int_equal(pf_writer_close(writer), 0);
	pid = test_spawn(argv, &out_fd, NULL);
	while (used + 1 < sizeof(shown) && (got = read(out_fd, shown + used, sizeof(shown) - 1 - used)) > 0)
		used += (size_t)got;
	shown[used] = 0;
	close(out_fd);
	assert_int_equal(test_wait_status(pid), 0);
	print_message("%s", shown);
	assert_null(strchr(shown, '\x1b'));
	assert_null(strchr(shown, '\r'));
	assert_null(strstr(shown, "\xc2\x9b"));
	assert_non_null(strstr(shown, "evil\\x1b[2J\\rname\\xc2\\x9b31m (main.py)"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(mojo_tachyon_mojo),
		cmocka_unit_test(tachyon_mojo_tachyon),
		cmocka_unit_test(collapsed_adds_up),
		cmocka_unit_test(bad_input),
		cmocka_unit_test(special_outputs_are_refused),
		cmocka_unit_test(hostile_inputs_are_refused),
		cmocka_unit_test(planted_directory_links_are_refused),
		cmocka_unit_test(top_escapes_terminal_controls),
		cmocka_unit_test(gil_mode_and_states),
		cmocka_unit_test(top_headings_by_mode),
		cmocka_unit_test(top_by_state_says_what_files_hold),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
