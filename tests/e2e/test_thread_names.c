// SPDX-License-Identifier: MIT
/*
 * Threads by their names, end to end (real BPF, root): a program whose threads
 * threading names "hasher", "contender-1" and "sleeper" is recorded in wall mode
 * (every thread has samples) into MOJO, speedscope, pprof, SVG, gecko and JSON lines, and
 * shown by `stacks`. Each name is in each: MOJO's samples read back with it, a speedscope
 * profile is named after it, pprof has it as a thread_name label value, the flame
 * graph's tooltips name the thread of a function only that thread runs, a thread of the
 * Firefox Profiler's timeline is named after it (the file passing
 * tests/scripts/gecko_check.py), JSON lines carry it, and `stacks` heads the thread with it
 * instead of the interpreter's comm.
 *
 * A name is the target's to choose: one with an escape sequence, a quote, a backslash
 * and a bell, given by a target running as nobody, reaches no output raw.
 *
 * 2.7 (whose wall passes carry no Python stacks) is recorded in cpu mode: the two busy
 * threads' names are in MOJO.
 *
 * 2.7 and 3.6-3.13 read the name from the target (python/py_thread_name.h); 3.14+ give it
 * to the OS thread, whose name is read from /proc.
 */
#include "testlib.h"

#include "formats/format_registry.h"
#include "profile/profile.h"

#include <zlib.h>

#define SCRIPT "named_threads.py"
#define MAX_PYTHONS 32
#define NAME_COUNT 3

static const char *const thread_names[NAME_COUNT] = { "hasher", "contender-1", "sleeper" };
static const char *const name_labels[] = { "3.6", "3.7", "3.8", "3.9", "3.10", "3.11", "3.11-static",
					    "3.12", "3.13", "3.14", "3.15" };

static struct test_python pythons[MAX_PYTHONS];
static size_t python_count;

/* Which of thread_names the samples of a profile carry, as bits. */
static unsigned names_in_profile(const char *path)
{
	struct pf_reader *reader = test_open_profile(path);
	struct pf_sample sample;
	unsigned seen = 0;
	int got;

	while ((got = pf_reader_next_sample(reader, &sample)) == 1)
		for (size_t i = 0; i < NAME_COUNT; i++)
			if (sample.thread_name && strcmp(sample.thread_name, thread_names[i]) == 0)
				seen |= 1u << i;
	assert_int_equal(got, 0);
	pf_reader_close(reader);
	return seen;
}

/* The whole of a gzip file, decompressed, NUL-terminated (its length in *len). */
static char *read_gzip(const char *path, size_t *len)
{
	gzFile file = gzopen(path, "rb");
	size_t capacity = 1 << 20;
	char *data = malloc(capacity + 1);
	int got;

	assert_non_null(file);
	assert_non_null(data);
	*len = 0;
	while ((got = gzread(file, data + *len, (unsigned)(capacity - *len))) > 0) {
		*len += (size_t)got;
		if (*len == capacity) {
			capacity *= 2;
			data = realloc(data, capacity + 1);
			assert_non_null(data);
		}
	}
	assert_true(got == 0);
	gzclose(file);
	data[*len] = 0;
	return data;
}

/* Whether the first SVG tooltip of function says "(thread NAME)". */
static bool tooltip_names(const char *svg, const char *function, const char *name)
{
	char title[128], thread[128];
	const char *start, *end;

	FORMAT(title, "<title>%s (", function);
	FORMAT(thread, "(thread %s)", name);
	start = strstr(svg, title);
	end = start ? strstr(start, "</title>") : NULL;
	return end && memmem(start, (size_t)(end - start), thread, strlen(thread));
}

static void names_everywhere(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	char mojo[PATH_MAX], speedscope[PATH_MAX], pprof[PATH_MAX], svg[PATH_MAX], gecko[PATH_MAX],
		jsonl[PATH_MAX], pid_text[16], err[4096], needle[128], check[PATH_MAX * 2];
	static const char *const functions[NAME_COUNT] = { "hash_forever", "spin_forever", "sleep_forever" };
	static char out[1 << 16], out_gecko[1 << 14];
	struct test_target target;
	size_t pprof_len, speedscope_len, svg_len, jsonl_len;
	char *pprof_data, *check_argv[8];
	uint8_t *speedscope_data, *svg_data, *jsonl_data;
	int status;

	FORMAT(mojo, "%s/names-%s.mojo", test_tmpdir(), python->label);
	FORMAT(speedscope, "%s/names-%s.speedscope.json", test_tmpdir(), python->label);
	FORMAT(pprof, "%s/names-%s.pprof", test_tmpdir(), python->label);
	FORMAT(svg, "%s/names-%s.svg", test_tmpdir(), python->label);
	FORMAT(gecko, "%s/names-%s.gecko.json", test_tmpdir(), python->label);
	FORMAT(jsonl, "%s/names-%s.jsonl", test_tmpdir(), python->label);
	target.pid = test_start_ready_script(python, SCRIPT, "", &target.out_fd);
	snprintf(pid_text, sizeof(pid_text), "%d", (int)target.pid);
	{
		char *argv[] = { (char *)pybpfprof_binary(), "-q", "--mode", "wall", "-F", "100", "-p", pid_text,
				 "-d", "2", "-o", mojo, "-o", speedscope, "-o", pprof, "-o", svg,
				 "-o", gecko, "-o", jsonl, NULL };

		status = run_capture(argv, err, sizeof(err));
		if (status != 0)
			fail_msg("%s: pybpfprof exited %d: %s", python->label, status, err);
	}
	{
		char *argv[] = { (char *)pybpfprof_binary(), "stacks", pid_text, NULL };

		status = run_capture_both(argv, out, sizeof(out), err, sizeof(err));
		if (status != 0)
			fail_msg("%s: pybpfprof stacks exited %d: %s", python->label, status, err);
	}
	test_stop_target(&target);

	assert_int_equal(names_in_profile(mojo), (1u << NAME_COUNT) - 1);
	speedscope_data = read_whole_file(speedscope, &speedscope_len);
	assert_non_null(speedscope_data);
	pprof_data = read_gzip(pprof, &pprof_len);
	svg_data = read_whole_file(svg, &svg_len);
	assert_non_null(svg_data);
	jsonl_data = read_whole_file(jsonl, &jsonl_len);
	assert_non_null(jsonl_data);
	FORMAT(check, "/usr/bin/python3 %s/tests/scripts/gecko_check.py %s", test_source_dir(), gecko);
	split_command(check, check_argv, 8);
	status = run_capture_both(check_argv, out_gecko, sizeof(out_gecko), err, sizeof(err));
	if (status != 0)
		fail_msg("%s: %s: %s", python->label, gecko, err);
	for (size_t i = 0; i < NAME_COUNT; i++) {
		FORMAT(needle, "\"name\":\"%s (pid %d thread ", thread_names[i], (int)target.pid);
		if (!strstr((const char *)speedscope_data, needle))
			fail_msg("%s: no speedscope profile named %s", python->label, thread_names[i]);
		if (!memmem(pprof_data, pprof_len, thread_names[i], strlen(thread_names[i])))
			fail_msg("%s: pprof has no label %s", python->label, thread_names[i]);
		if (!tooltip_names((const char *)svg_data, functions[i], thread_names[i]))
			fail_msg("%s: the SVG's tooltip of %s does not name %s", python->label, functions[i],
				 thread_names[i]);
		FORMAT(needle, "thread %s|", thread_names[i]);
		if (!strstr(out_gecko, needle))
			fail_msg("%s: no gecko thread named %s:\n%s", python->label, thread_names[i], out_gecko);
		FORMAT(needle, "\"thread\":\"%s\"", thread_names[i]);
		if (!strstr((const char *)jsonl_data, needle))
			fail_msg("%s: no JSON line of thread %s", python->label, thread_names[i]);
		FORMAT(needle, "\"%s\" (", thread_names[i]);
		if (!strstr(out, needle))
			fail_msg("%s: stacks shows no thread %s:\n%s", python->label, thread_names[i], out);
	}
	assert_non_null(memmem(pprof_data, pprof_len, "thread_name", strlen("thread_name")));
	free(pprof_data);
	free(speedscope_data);
	free(svg_data);
	free(jsonl_data);
}

static void busy_names_27(void **state)
{
	const struct test_python *python = test_python_find(pythons, python_count, "2.7");
	char mojo[PATH_MAX], pid_text[16], err[4096];
	struct test_target target;
	int status;

	(void)state;
	if (!python)
		skip();
	FORMAT(mojo, "%s/names-2.7.mojo", test_tmpdir());
	target.pid = test_start_ready_script(python, SCRIPT, "", &target.out_fd);
	snprintf(pid_text, sizeof(pid_text), "%d", (int)target.pid);
	{
		char *argv[] = { (char *)pybpfprof_binary(), "-q", "-F", "200", "-p", pid_text, "-d", "2", "-o", mojo, NULL };

		status = run_capture(argv, err, sizeof(err));
	}
	test_stop_target(&target);
	if (status != 0)
		fail_msg("pybpfprof exited %d: %s", status, err);
	/* hasher and contender-1 */
	assert_int_equal(names_in_profile(mojo) & 3u, 3u);
}

static bool has_control_byte(const char *text, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)text[i] < 0x20 && text[i] != '\n')
			return true;
	return false;
}

/* The system's 3.11 (readable by nobody) as nobody; the name read from its memory. */
static void hostile_name_escaped(void **state)
{
	const struct test_python *system = test_python_find(pythons, python_count, "3.11-static");
	char mojo[PATH_MAX], speedscope[PATH_MAX], pid_text[16], err[4096];
	static char out[1 << 16];
	struct test_python nobody;
	struct test_target target;
	struct pf_reader *reader;
	struct pf_sample sample;
	size_t speedscope_len;
	uint8_t *speedscope_data;
	bool named = false;
	int status, got;

	(void)state;
	if (!system)
		skip();
	nobody = *system;
	FORMAT(nobody.command, "setpriv --reuid=nobody --regid=nogroup --clear-groups %s", system->command);
	FORMAT(mojo, "%s/names-hostile.mojo", test_tmpdir());
	FORMAT(speedscope, "%s/names-hostile.speedscope.json", test_tmpdir());
	target.pid = test_start_ready_script(&nobody, SCRIPT, "hostile", &target.out_fd);
	snprintf(pid_text, sizeof(pid_text), "%d", (int)target.pid);
	{
		char *argv[] = { (char *)pybpfprof_binary(), "-q", "--mode", "wall", "-F", "100", "-p", pid_text,
				 "-d", "1", "-o", mojo, "-o", speedscope, NULL };

		status = run_capture(argv, err, sizeof(err));
		if (status != 0)
			fail_msg("pybpfprof exited %d: %s", status, err);
	}
	{
		char *argv[] = { (char *)pybpfprof_binary(), "stacks", pid_text, NULL };

		status = run_capture_both(argv, out, sizeof(out), err, sizeof(err));
	}
	test_stop_target(&target);
	if (status != 0 || has_control_byte(out, strlen(out)) || !strstr(out, "\"\\x1b[31m\\\"\\\\\\x07sleeper\""))
		fail_msg("stacks (%d): %s", status, out);
	reader = test_open_profile(mojo);
	while ((got = pf_reader_next_sample(reader, &sample)) == 1)
		if (sample.thread_name && strstr(sample.thread_name, "sleeper")) {
			named = true;
			assert_false(has_control_byte(sample.thread_name, strlen(sample.thread_name)));
		}
	assert_int_equal(got, 0);
	pf_reader_close(reader);
	assert_true(named);
	speedscope_data = read_whole_file(speedscope, &speedscope_len);
	assert_non_null(speedscope_data);
	assert_false(has_control_byte((const char *)speedscope_data, speedscope_len));
	assert_non_null(strstr((const char *)speedscope_data, "\\u001b[31m"));
	free(speedscope_data);
}

int main(void)
{
	static const struct test_per_python kinds[] = { { "thread_names_", names_everywhere } };
	const struct CMUnitTest hostile[] = { cmocka_unit_test(hostile_name_escaped), cmocka_unit_test(busy_names_27) };
	int failed;

	python_count = test_pythons(pythons, MAX_PYTHONS);
	failed = test_run_per_python("test_thread_names", name_labels, sizeof(name_labels) / sizeof(name_labels[0]),
				     kinds, sizeof(kinds) / sizeof(kinds[0]));
	if (geteuid() != 0)
		return failed;
	return failed + cmocka_run_group_tests_name("test_thread_names_hostile", hostile, NULL, NULL);
}
