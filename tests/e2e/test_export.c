// SPDX-License-Identifier: MIT
/*
 * pprof and speedscope files, read by the tools people open them with: one
 * recording written as MOJO, pprof and speedscope at once; `go tool pprof
 * -top` (Debian's golang-go) and speedscope's own schema (with Python's
 * jsonschema) accept the files, and their heaviest functions agree with
 * `pybpfprof top` of the MOJO file within 0.5 percentage points; pprof names
 * Python's own functions (`<module>`, `<listcomp>`, `<lambda>`) as Python does.
 */
#include "testlib.h"

#include "util/exit_status.h"

#include <math.h>

#define MAX_RANKED 256
#define TOP_COMPARED 5

struct ranked {
	char name[256];
	double percent;
};

struct ranking {
	struct ranked items[MAX_RANKED];
	size_t count;
};

static char out_text[1 << 16], err_text[1 << 14];
static char mojo[PATH_MAX], pprof_file[PATH_MAX], speedscope[PATH_MAX];
static bool recorded;

static void add_ranked(struct ranking *ranking, const char *name, size_t name_len, double percent)
{
	struct ranked *item;

	if (ranking->count == MAX_RANKED)
		return;
	item = &ranking->items[ranking->count++];
	snprintf(item->name, sizeof(item->name), "%.*s", (int)name_len, name);
	item->percent = percent;
}

/* `pybpfprof top`'s own-time lines: "   32.51%  name (file)" or "name [kernel]". */
static void parse_top(const char *text, struct ranking *ranking)
{
	const char *at = strstr(text, "own time"), *end = at ? strstr(at, "total time") : NULL;

	assert_non_null(end);
	for (at = strchr(at, '\n') + 1; at < end; at = strchr(at, '\n') + 1) {
		char *percent_end;
		double percent = strtod(at, &percent_end);
		const char *name = percent_end + 3, *line_end = strchr(name, '\n');
		const char *cut = strstr(name, " (");
		const char *kernel = strstr(name, " [kernel]");

		if (kernel && kernel < line_end && (!cut || kernel < cut))
			cut = kernel;
		if (!cut || cut > line_end)
			cut = line_end;
		add_ranked(ranking, name, (size_t)(cut - name), percent);
	}
}

/* `go tool pprof -top`: "      flat  flat%   sum%        cum   cum%" then "344ms 32.51% 32.51% 930ms 87.90%  name". */
static void parse_pprof(const char *text, struct ranking *ranking)
{
	const char *at = strstr(text, "flat%");

	assert_non_null(at);
	for (at = strchr(at, '\n'); at && at[1]; at = strchr(at + 1, '\n')) {
		char flat[32], flat_percent[32], sum[32], cum[32], cum_percent[32];
		int consumed = 0;
		const char *line_end = strchr(at + 1, '\n');

		if (sscanf(at + 1, "%31s %31s %31s %31s %31s %n", flat, flat_percent, sum, cum, cum_percent,
			   &consumed) != 5)
			continue;
		add_ranked(ranking, at + 1 + consumed,
			   (size_t)((line_end ? line_end : at + 1 + strlen(at + 1)) - (at + 1 + consumed)),
			   strtod(flat_percent, NULL));
	}
}

/* tests/scripts/speedscope_check.py: "32.51 name" per line. */
static void parse_speedscope(const char *text, struct ranking *ranking)
{
	for (const char *at = text; *at; ) {
		char *name;
		double percent = strtod(at, &name);
		const char *line_end = strchr(name, '\n');

		if (!line_end)
			break;
		add_ranked(ranking, name + 1, (size_t)(line_end - name - 1), percent);
		at = line_end + 1;
	}
}

static const struct ranked *find_ranked(const struct ranking *ranking, const char *name)
{
	for (size_t i = 0; i < ranking->count; i++)
		if (strcmp(ranking->items[i].name, name) == 0)
			return &ranking->items[i];
	return NULL;
}

/* The heaviest TOP_COMPARED of `top` are in the other ranking, each within 0.5 pp. */
static void assert_rankings_agree(const struct ranking *reference, const struct ranking *other, const char *what)
{
	assert_true(reference->count >= TOP_COMPARED);
	for (size_t i = 0; i < TOP_COMPARED; i++) {
		const struct ranked *want = &reference->items[i];
		const struct ranked *got = find_ranked(other, want->name);

		if (!got)
			fail_msg("%s: no '%s' (%.2f%% in top)", what, want->name, want->percent);
		print_message("%s: %-40s top %6.2f%%  %6.2f%%\n", what, want->name, want->percent, got->percent);
		assert_true(got->percent > want->percent - 0.5 && got->percent < want->percent + 0.5);
	}
}

/* One run, three files: a CPU-bound workload with Python, native and kernel frames. */
static void record_once(void)
{
	static const char script_text[] = "import os, zlib\n"
					  "def compress_loop(data):\n"
					  "    for _ in range(40): zlib.compress(data, 6)\n"
					  "def read_loop(fd):\n"
					  "    for _ in range(300): os.read(fd, 1 << 16)\n"
					  "def spin(n):\n"
					  "    return sum(i * i for i in range(n))\n"
					  "data = os.urandom(1 << 18)\n"
					  "fd = os.open('/dev/zero', os.O_RDONLY)\n"
					  "for _ in range(8):\n"
					  "    compress_loop(data); read_loop(fd); spin(200000)\n";
	struct test_python pythons[16];
	size_t count = test_pythons(pythons, 16);
	const struct test_python *python = NULL;
	char script[PATH_MAX], command[PATH_MAX * 6 + 64], *argv[32];

	if (recorded)
		return;
	for (size_t i = 0; i < count && !python; i++)
		if (strcmp(pythons[i].label, "3.12") == 0)
			python = &pythons[i];
	if (!python && count)
		python = &pythons[0];
	assert_non_null(python);
	snprintf(script, sizeof(script), "%s/export.py", test_tmpdir());
	snprintf(mojo, sizeof(mojo), "%s/export.mojo", test_tmpdir());
	snprintf(pprof_file, sizeof(pprof_file), "%s/export.pb.gz", test_tmpdir());
	snprintf(speedscope, sizeof(speedscope), "%s/export.speedscope.json", test_tmpdir());
	assert_int_equal(write_whole_file(script, script_text, sizeof(script_text) - 1), 0);
	snprintf(command, sizeof(command), "%s -q -F 1000 -o %s -o %s -o %s -- %s %s", pybpfprof_binary(), mojo,
		 pprof_file, speedscope, python->command, script);
	split_command(command, argv, 32);
	assert_int_equal(run_capture_both(argv, out_text, sizeof(out_text), err_text, sizeof(err_text)), 0);
	assert_true(file_exists(pprof_file) && file_exists(speedscope));
	recorded = true;
}

static void top_of(const char *path, struct ranking *ranking)
{
	char *argv[] = { (char *)pybpfprof_binary(), "top", "-n", "20", (char *)path, NULL };

	assert_int_equal(run_capture_both(argv, out_text, sizeof(out_text), err_text, sizeof(err_text)),
			 EXIT_STATUS_OK);
	parse_top(out_text, ranking);
}

static void pprof_read_by_go_tool_pprof(void **state)
{
	char *argv[] = { "go", "tool", "pprof", "-top", "-nodecount=40", pprof_file, NULL };
	struct ranking from_top = { 0 }, from_pprof = { 0 };
	unsigned long long samples;
	const char *total;
	double total_ms;
	char *unit;

	(void)state;
	if (access("/usr/bin/go", X_OK) != 0) {
		print_message("go (Debian's golang-go) absent: run `make deps`; skipped\n");
		skip();
	}
	record_once();
	top_of(mojo, &from_top);
	samples = strtoull(out_text + strlen(mojo) + 2, NULL, 10); /* "PATH: N samples (mojo)" */
	assert_int_equal(run_capture_both(argv, out_text, sizeof(out_text), err_text, sizeof(err_text)), 0);
	print_message("%.*s\n", 600, out_text);
	/* The profile says what it holds: CPU time, sampled every 1 ms, as much as the MOJO file. */
	assert_non_null(strstr(out_text, "Type: cpu"));
	total = strstr(out_text, "Total samples = ");
	assert_non_null(total);
	total_ms = strtod(total + strlen("Total samples = "), &unit);
	if (strncmp(unit, "s", 1) == 0)
		total_ms *= 1000;
	print_message("pprof total %.0f ms, MOJO %llu samples of 1 ms\n", total_ms, samples);
	assert_true(samples > 0 && fabs(total_ms - (double)samples) <= 0.01 * (double)samples + 1);
	parse_pprof(out_text, &from_pprof);
	assert_rankings_agree(&from_top, &from_pprof, "pprof");
	/* Python functions carry their first line, native frames their library's mapping. */
	{
		char command[PATH_MAX + 128];
		char *raw[] = { "sh", "-c", command, NULL };

		/* -raw prints every sample: keep its tables only */
		snprintf(command, sizeof(command), "go tool pprof -raw %s | grep -E '(compress_loop |libz)' | head -20",
			 pprof_file);
		assert_int_equal(run_capture_both(raw, out_text, sizeof(out_text), err_text, sizeof(err_text)), 0);
		assert_non_null(strstr(out_text, "compress_loop "));
		assert_non_null(strstr(out_text, "export.py:3 s=2"));
		assert_non_null(strstr(out_text, "libz.so"));
	}
	/* The threads are labels a user can focus on. */
	{
		char *tags[] = { "go", "tool", "pprof", "-tags", pprof_file, NULL };

		assert_int_equal(run_capture_both(tags, out_text, sizeof(out_text), err_text, sizeof(err_text)), 0);
		assert_non_null(strstr(out_text, "pid"));
		assert_non_null(strstr(out_text, "thread"));
		/* the launched python's own name, for its process and its main thread */
		assert_non_null(strstr(out_text, "process"));
		assert_non_null(strstr(out_text, "thread_name"));
		assert_non_null(strstr(out_text, "python"));
		assert_non_null(strstr(out_text, "container"));
	}
}

/* Whether some function `go tool pprof -top` ranks is named exactly name. */
static bool pprof_ranks(const struct ranking *ranking, const char *name)
{
	return find_ranked(ranking, name) != NULL;
}

/*
 * `go tool pprof -top` names what a Python user wrote: a module body, a list comprehension and a
 * lambda by their own names (not pprof's C++ simplification of them, "<unknown>"); the file
 * it heads the report with is the program (the executable or the interpreter), not the loader;
 * and a library the program has just loaded (zlib, at its import) has its frames named from its
 * first sample, not a bare address. 3.11: its comprehensions are frames of their own.
 */
static void pprof_names_python_functions_and_the_program(void **state)
{
	static const char script_text[] = "import zlib\n"
					  "data = bytes(range(256)) * 256\n"
					  "square_sum = lambda n: sum([i * i for i in range(n)])\n"
					  "total = 0\n"
					  "for _ in range(40):\n"
					  "    [zlib.compress(data, 6) for _ in range(4)]\n"
					  "    square_sum(30000)\n"
					  "    for i in range(30000):\n"
					  "        total += i\n";
	struct test_python pythons[16];
	size_t count = test_pythons(pythons, 16);
	const struct test_python *python = NULL;
	char script[PATH_MAX], profile[PATH_MAX], command[PATH_MAX * 6 + 64], *argv[32];
	char *top[] = { "go", "tool", "pprof", "-top", "-nodecount=200", profile, NULL };
	static struct ranking names;
	const char *file;

	(void)state;
	if (access("/usr/bin/go", X_OK) != 0) {
		print_message("go (Debian's golang-go) absent: run `make deps`; skipped\n");
		skip();
	}
	for (size_t i = 0; i < count && !python; i++)
		if (strcmp(pythons[i].label, "3.11") == 0)
			python = &pythons[i];
	if (!python) {
		print_message("no 3.11 interpreter; skipped\n");
		skip();
	}
	snprintf(script, sizeof(script), "%s/names.py", test_tmpdir());
	snprintf(profile, sizeof(profile), "%s/names.pb.gz", test_tmpdir());
	assert_int_equal(write_whole_file(script, script_text, sizeof(script_text) - 1), 0);
	snprintf(command, sizeof(command), "%s -q -F 1000 -o %s -- %s %s", pybpfprof_binary(), profile,
		 python->command, script);
	split_command(command, argv, 32);
	assert_int_equal(run_capture_both(argv, out_text, sizeof(out_text), err_text, sizeof(err_text)), 0);
	assert_int_equal(run_capture_both(top, out_text, sizeof(out_text), err_text, sizeof(err_text)), 0);
	print_message("%.*s\n", 1200, out_text);
	names = (struct ranking){ 0 };
	parse_pprof(out_text, &names);
	assert_true(pprof_ranks(&names, "<module>"));
	assert_true(pprof_ranks(&names, "<listcomp>"));
	assert_true(pprof_ranks(&names, "<lambda>"));
	assert_false(pprof_ranks(&names, "<unknown>"));
	for (size_t i = 0; i < names.count; i++)
		if (strncmp(names.items[i].name, "0x", 2) == 0)
			fail_msg("a native frame named by its address: %s", names.items[i].name);
	file = strstr(out_text, "File: ");
	assert_non_null(file);
	if (strncmp(file, "File: python3.11\n", 17) != 0 && strncmp(file, "File: libpython3.11", 19) != 0)
		fail_msg("the profile's file is not the program: %.60s", file);
}

static void speedscope_valid_against_its_schema(void **state)
{
	char script[PATH_MAX + 64], schema[PATH_MAX];
	char *argv[] = { "/usr/bin/python3", script, schema, speedscope, "40", NULL };
	struct ranking from_top = { 0 }, from_speedscope = { 0 };

	(void)state;
	record_once();
	snprintf(script, sizeof(script), "%s/tests/scripts/speedscope_check.py", test_source_dir());
	testdata_path(schema, sizeof(schema), "speedscope/file-format-schema.json");
	top_of(mojo, &from_top);
	if (run_capture_both(argv, out_text, sizeof(out_text), err_text, sizeof(err_text)) != 0)
		fail_msg("speedscope_check: %s", err_text);
	parse_speedscope(out_text, &from_speedscope);
	assert_rankings_agree(&from_top, &from_speedscope, "speedscope");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pprof_read_by_go_tool_pprof),
		cmocka_unit_test(speedscope_valid_against_its_schema),
		cmocka_unit_test(pprof_names_python_functions_and_the_program),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
