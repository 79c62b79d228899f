// SPDX-License-Identifier: MIT
/*
 * The pstats, Firefox Profiler (gecko) and JSON-lines writers, on a synthetic profile whose
 * shares are known exactly (no sampling: nothing here depends on the machine's speed):
 *  - Python's own pstats.Stats loads the .pstats file on 3.11 and 3.15, and its five
 *    functions with the most own and the most total time are `pybpfprof top`'s, at the same
 *    shares;
 *  - the .gecko.json (and .gecko.json.gz) passes tests/scripts/gecko_check.py's structural
 *    checks with every thread's and process's name, every sample, the Python, native and
 *    kernel categories and a marker per run of GIL waits and of GC;
 *  - the .jsonl has one line per sample, each a JSON object with the documented fields;
 *  - `convert` writes every output format from every input format.
 */
#include "testlib.h"

#include "formats/format_registry.h"
#include "profile/profile.h"

#define SAMPLES_PER_THREAD 1000
#define INTERVAL_US 1000
#define PID 4242

static char out_text[1 << 16], err_text[1 << 14];

/* Per 20 samples: hot 9, warm 5, memcpy (native) 2, a kernel frame 3, other 1. Own shares
 * 45/25/15/10/5 %, total <module> 100, work 80, hot 45, warm 25, other 20: no ties. */
static size_t frames_of(size_t i, struct pf_frame *frames)
{
	size_t slot = i % 20;

	frames[0] = (struct pf_frame){ PF_FRAME_PYTHON, "app.py", "<module>", 40, 40, -1, -1, -1, 1 };
	if (slot < 16) {
		frames[1] = (struct pf_frame){ PF_FRAME_PYTHON, "app.py", "work", 12, 12, -1, -1, -1, 10 };
		if (slot < 9)
			frames[2] = (struct pf_frame){ PF_FRAME_PYTHON, "lib/hot.py", "hot", 3, 3, -1, -1, -1, 1 };
		else if (slot < 14)
			frames[2] = (struct pf_frame){ PF_FRAME_PYTHON, "lib/warm.py", "warm", 7, 7, -1, -1, -1, 5 };
		else
			frames[2] = pf_frame_unlocated(PF_FRAME_NATIVE, "/usr/lib/libc.so.6", "memcpy");
		return 3;
	}
	frames[1] = (struct pf_frame){ PF_FRAME_PYTHON, "app.py", "other", 30, 30, -1, -1, -1, 28 };
	if (slot < 19) {
		frames[2] = pf_frame_unlocated(PF_FRAME_KERNEL, "", "do_syscall_64");
		return 3;
	}
	return 2;
}

/* Two threads of one process, named; the worker waits for the GIL for samples 100-199 and
 * runs the GC for 500-549. */
static void write_synthetic(const char *path, const char *format_name)
{
	const struct pf_run_info info = { .interval_us = INTERVAL_US, .mode = "wall", .frequency_hz = 1000,
					  .start_time_us = 5000000 };
	struct pf_writer_options options = PF_WRITER_OPTIONS_DEFAULT;
	static const char *const thread_names[] = { "MainThread", "worker-1" };
	struct pf_writer *writer;

	assert_int_equal(pf_writer_open(&writer, path, format_registry_find_name(format_name), &options), 0);
	assert_int_equal(pf_writer_set_run_info(writer, &info), 0);
	for (size_t i = 0; i < SAMPLES_PER_THREAD; i++) {
		for (size_t t = 0; t < 2; t++) {
			struct pf_frame frames[3];
			struct pf_sample sample = {
				.pid = PID, .tid = PID + t, .timestamp_us = 5000000 + i * INTERVAL_US,
				.status = PF_STATUS_ON_CPU | (t ? 0 : PF_STATUS_MAIN_THREAD), .metrics = PF_METRIC_TIME,
				.time_us = INTERVAL_US, .process_name = "app.py", .thread_name = thread_names[t],
			};

			if (t && i >= 100 && i < 200)
				sample.status = PF_STATUS_GIL_REQUESTED;
			if (t && i >= 500 && i < 550)
				sample.status |= PF_STATUS_GC;
			sample.frame_count = frames_of(i, frames);
			sample.frames = frames;
			assert_int_equal(pf_writer_add_sample(writer, &sample), 0);
		}
	}
	/* What the writers keep is counted in the target budget: a timeline keeps every sample. */
	if (strncmp(format_name, "gecko", 5) == 0)
		assert_true(pf_writer_held_bytes(writer) >= 2 * SAMPLES_PER_THREAD * 16);
	if (strcmp(format_name, "pstats") == 0)
		assert_true(pf_writer_held_bytes(writer) > 0);
	assert_int_equal(pf_writer_close(writer), 0);
}

static void convert(const char *input, const char *output, const char *format)
{
	char *argv[] = { (char *)pybpfprof_binary(), "convert", (char *)input, "-o", (char *)output,
			 format ? "-f" : NULL, (char *)format, NULL };
	struct stat st;

	if (run_capture(argv, err_text, sizeof(err_text)) != 0)
		fail_msg("convert %s -o %s: %s", input, output, err_text);
	assert_int_equal(stat(output, &st), 0);
	assert_true(st.st_size > 0);
}

/* "own 45.00 hot (lib/hot.py)" lines of `pybpfprof top`'s own and total rankings, in order. */
static void top_lines(const char *path, char *out, size_t len)
{
	char *argv[] = { (char *)pybpfprof_binary(), "top", "-n", "5", (char *)path, NULL };
	const char *which = NULL;
	size_t used = 0;

	assert_int_equal(run_capture_both(argv, out_text, sizeof(out_text), err_text, sizeof(err_text)), 0);
	out[0] = 0;
	for (char *line = strtok(out_text, "\n"); line; line = strtok(NULL, "\n")) {
		char *end;
		double percent;

		if (strstr(line, "own ") == line)
			which = "own";
		else if (strstr(line, "total ") == line)
			which = "total";
		percent = strtod(line, &end);
		if (!which || end == line || strncmp(end, "%  ", 3) != 0)
			continue;
		used += (size_t)snprintf(out + used, len - used, "%s %.2f %s\n", which, percent, end + 3);
		assert_true(used < len);
	}
}

/* tests/scripts/pstats_check.py's rankings of file, by python (a command that takes a script),
 * without its first line. */
static void pstats_lines(const char *python, const char *file, char *out, size_t len)
{
	char command[PATH_MAX * 3], *argv[16], *body;

	FORMAT(command, "%s %s/tests/scripts/pstats_check.py %s 5", python, test_source_dir(), file);
	split_command(command, argv, 16);
	if (run_capture_both(argv, out_text, sizeof(out_text), err_text, sizeof(err_text)) != 0)
		fail_msg("%s: pstats.Stats did not load %s: %s", python, file, err_text);
	body = strchr(out_text, '\n');
	assert_non_null(body);
	snprintf(out, len, "%s", body + 1);
}

static void pstats_ranks_like_top(void **state)
{
	char mojo[PATH_MAX], pstats[PATH_MAX], chroot_copy[PATH_MAX], inside[128], python[PATH_MAX];
	char from_top[4096], from_pstats[4096];
	uint8_t *data;
	size_t len;

	(void)state;
	FORMAT(mojo, "%s/ranks.mojo", test_tmpdir());
	FORMAT(pstats, "%s/ranks.pstats", test_tmpdir());
	write_synthetic(mojo, "mojo");
	convert(mojo, pstats, NULL);
	top_lines(mojo, from_top, sizeof(from_top));
	print_message("top:\n%s", from_top);
	assert_non_null(strstr(from_top, "own 45.00 hot (lib/hot.py)\n"));

	if (!test_python_command("3.11", python, sizeof(python)))
		fail_msg("no Python 3.11 (tests/pythons/list-pythons.sh)");
	pstats_lines(python, pstats, from_pstats, sizeof(from_pstats));
	assert_string_equal(from_pstats, from_top);

	if (!test_python_command("3.15", python, sizeof(python))) {
		print_message("Python 3.15 not checked: the sid chroot is absent\n");
		return;
	}
	/* The chroot's Python sees only the chroot: the file goes in its /tmp. */
	FORMAT(inside, "/tmp/pybpfprof-ranks-%d.pstats", (int)getpid());
	FORMAT(chroot_copy, "%s%s", SID_CHROOT, inside);
	data = read_whole_file(pstats, &len);
	assert_non_null(data);
	assert_int_equal(write_whole_file(chroot_copy, data, len), 0);
	free(data);
	pstats_lines(python, inside, from_pstats, sizeof(from_pstats));
	unlink(chroot_copy);
	assert_string_equal(from_pstats, from_top);
}

/* A name that is not UTF-8 (a target's bytes) still makes a file marshal decodes. */
static void pstats_takes_any_bytes(void **state)
{
	const struct pf_frame frames[] = {
		{ PF_FRAME_PYTHON, "ev\xffil.py", "f\xc3(x", 3, 3, -1, -1, -1, 1 },
		pf_frame_unlocated(PF_FRAME_NATIVE, "", "n\x80"),
	};
	struct pf_sample sample = { .pid = 1, .tid = 1, .metrics = PF_METRIC_TIME, .time_us = 5,
				    .frame_count = 2, .frames = frames };
	struct pf_writer_options options = PF_WRITER_OPTIONS_DEFAULT;
	char path[PATH_MAX], python[PATH_MAX], ranking[4096];
	struct pf_writer *writer;

	(void)state;
	FORMAT(path, "%s/bytes.pstats", test_tmpdir());
	assert_int_equal(pf_writer_open(&writer, path, format_registry_find_name("pstats"), &options), 0);
	assert_int_equal(pf_writer_add_sample(writer, &sample), 0);
	assert_int_equal(pf_writer_close(writer), 0);
	if (!test_python_command("3.11", python, sizeof(python)))
		fail_msg("no Python 3.11 (tests/pythons/list-pythons.sh)");
	pstats_lines(python, path, ranking, sizeof(ranking));
	print_message("%s", ranking);
	assert_non_null(strstr(ranking, "own 100.00 n\xef\xbf\xbd\n"));
	assert_non_null(strstr(ranking, "total 100.00 f\xef\xbf\xbd(x (ev\xef\xbf\xbdil.py)\n"));
}

static void assert_gecko_valid(const char *path)
{
	char command[PATH_MAX * 2], *argv[8];

	FORMAT(command, "/usr/bin/python3 %s/tests/scripts/gecko_check.py %s", test_source_dir(), path);
	split_command(command, argv, 8);
	if (run_capture_both(argv, out_text, sizeof(out_text), err_text, sizeof(err_text)) != 0)
		fail_msg("%s: %s", path, err_text);
	print_message("%s", out_text);
	assert_non_null(strstr(out_text, "thread MainThread|app.py|4242|4242|1000|1000\n"));
	assert_non_null(strstr(out_text, "thread worker-1|app.py|4242|4243|1000|1000\n"));
	assert_non_null(strstr(out_text, "categories Kernel,Native,Python\n"));
	assert_non_null(strstr(out_text, "marker Waiting for GIL 1\n"));
	assert_non_null(strstr(out_text, "marker GC Collecting 1\n"));
}

static void gecko_passes_structural_check(void **state)
{
	char path[PATH_MAX];

	(void)state;
	FORMAT(path, "%s/timeline.gecko.json", test_tmpdir());
	write_synthetic(path, "gecko");
	assert_gecko_valid(path);
	FORMAT(path, "%s/timeline.gecko.json.gz", test_tmpdir());
	write_synthetic(path, "gecko-gz");
	assert_gecko_valid(path);
}

/* Samples that come out of time order (a file's, records held for late unwinding) make a
 * timeline in order, a run of GIL waits one marker that ends after it starts. */
static void gecko_orders_samples_by_time(void **state)
{
	const struct pf_frame frames[] = { { PF_FRAME_PYTHON, "app.py", "f", 1, 1, -1, -1, -1, 1 } };
	struct pf_writer_options options = PF_WRITER_OPTIONS_DEFAULT;
	char path[PATH_MAX], command[PATH_MAX * 2], *argv[8];
	struct pf_writer *writer;

	(void)state;
	FORMAT(path, "%s/backwards.gecko.json", test_tmpdir());
	assert_int_equal(pf_writer_open(&writer, path, format_registry_find_name("gecko"), &options), 0);
	for (uint64_t i = 100; i-- > 0;) {
		struct pf_sample sample = { .pid = 9, .tid = 9, .timestamp_us = 1000000 + i * 1000,
					    .status = i >= 40 && i < 60 ? PF_STATUS_GIL_REQUESTED : 0,
					    .frame_count = 1, .frames = frames, .thread_name = "t" };

		assert_int_equal(pf_writer_add_sample(writer, &sample), 0);
	}
	assert_int_equal(pf_writer_close(writer), 0);
	FORMAT(command, "/usr/bin/python3 %s/tests/scripts/gecko_check.py %s", test_source_dir(), path);
	split_command(command, argv, 8);
	if (run_capture_both(argv, out_text, sizeof(out_text), err_text, sizeof(err_text)) != 0)
		fail_msg("%s: %s", path, err_text);
	assert_non_null(strstr(out_text, "thread t|pid 9|9|9|100|100\n"));
	assert_non_null(strstr(out_text, "marker Waiting for GIL 1\n"));
}

/* Converted from Tachyon (which keeps timestamps and states, not names or pids) it is still
 * valid, its threads named by their ids. */
static void gecko_from_tachyon(void **state)
{
	char tachyon[PATH_MAX], gecko[PATH_MAX], command[PATH_MAX * 2], *argv[8];

	(void)state;
	FORMAT(tachyon, "%s/timeline.bin", test_tmpdir());
	FORMAT(gecko, "%s/from-tachyon.gecko.json", test_tmpdir());
	write_synthetic(tachyon, "tachyon");
	convert(tachyon, gecko, NULL);
	FORMAT(command, "/usr/bin/python3 %s/tests/scripts/gecko_check.py %s", test_source_dir(), gecko);
	split_command(command, argv, 8);
	if (run_capture_both(argv, out_text, sizeof(out_text), err_text, sizeof(err_text)) != 0)
		fail_msg("%s: %s", gecko, err_text);
	print_message("%s", out_text);
	assert_non_null(strstr(out_text, "thread Thread 4243|Python|0|4243|1000|1000\n"));
	assert_non_null(strstr(out_text, "marker Waiting for GIL 1\n"));
}

static void jsonl_round_trips_samples(void **state)
{
	static const char script[] =
		"import json, sys\n"
		"counts = {}\n"
		"weights = 0\n"
		"for line in open(sys.argv[1], encoding='utf-8'):\n"
		"    s = json.loads(line)\n"
		"    key = '%s/%s/%s/%s' % (s['pid'], s['tid'], s['thread'], s.get('process'))\n"
		"    counts[key] = counts.get(key, 0) + s['samples']\n"
		"    weights += s['weight']\n"
		"    assert s['frames'][0]['name'] == '<module>' and s['frames'][0]['kind'] == 'python'\n"
		"    assert s['frames'][-1]['kind'] in ('python', 'native', 'kernel')\n"
		"    assert isinstance(s['time_us'], int) and isinstance(s['state'], list)\n"
		"for key in sorted(counts): print(key, counts[key])\n"
		"print('weight', weights)\n";
	char mojo[PATH_MAX], jsonl[PATH_MAX], *argv[] = { "/usr/bin/python3", "-c", (char *)script, jsonl, NULL };

	(void)state;
	FORMAT(mojo, "%s/lines.mojo", test_tmpdir());
	FORMAT(jsonl, "%s/lines.jsonl", test_tmpdir());
	write_synthetic(mojo, "mojo");
	convert(mojo, jsonl, NULL);
	if (run_capture_both(argv, out_text, sizeof(out_text), err_text, sizeof(err_text)) != 0)
		fail_msg("%s: %s", jsonl, err_text);
	print_message("%s", out_text);
	assert_string_equal(out_text, "4242/4242/MainThread/None 1000\n"
				      "4242/4243/worker-1/None 1000\n"
				      "weight 2000000\n");
}

/* Every format convert writes, from every format it reads. */
static void convert_reaches_every_output(void **state)
{
	static const char *const inputs[] = { "mojo", "tachyon", "collapsed" };
	char names[512], source[PATH_MAX], input[PATH_MAX], output[PATH_MAX];

	(void)state;
	FORMAT(source, "%s/every.mojo", test_tmpdir());
	write_synthetic(source, "mojo");
	format_registry_names(names, sizeof(names), " ", " ");
	assert_non_null(strstr(names, "pstats"));
	assert_non_null(strstr(names, "gecko"));
	assert_non_null(strstr(names, "jsonl"));
	for (size_t i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++) {
		char list[512], *save = NULL;

		FORMAT(input, "%s/every-in.%s", test_tmpdir(), format_registry_find_name(inputs[i])->extensions[0]);
		if (strcmp(inputs[i], "mojo") != 0)
			convert(source, input, NULL);
		else
			FORMAT(input, "%s", source);
		snprintf(list, sizeof(list), "%s", names);
		for (char *name = strtok_r(list, " ", &save); name; name = strtok_r(NULL, " ", &save)) {
			const struct pf_format *format = format_registry_find_name(name);

			FORMAT(output, "%s/every-from-%s.%s", test_tmpdir(), inputs[i], format->extensions[0]);
			convert(input, output, name);
			/* and by the extension alone */
			assert_ptr_equal(format_registry_find_path(output), format);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pstats_ranks_like_top),
		cmocka_unit_test(pstats_takes_any_bytes),
		cmocka_unit_test(gecko_passes_structural_check),
		cmocka_unit_test(gecko_orders_samples_by_time),
		cmocka_unit_test(gecko_from_tachyon),
		cmocka_unit_test(jsonl_round_trips_samples),
		cmocka_unit_test(convert_reaches_every_output),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
