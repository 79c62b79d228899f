// SPDX-License-Identifier: MIT
/*
 * `pybpfprof annotate PROFILE`: per-line own and total shares on a MOJO file
 * written here with known numbers (recursion counted once per sample), only
 * --function's lines, source not at hand said so, a FIFO never read, the
 * source found through --path-map and --source-root, the HTML page escaping a
 * hostile file name and source line with nothing fetched from the network,
 * and one real recording of a function that spends 90% of its time on one line;
 * instructions (record --opcodes) listed with exact shares under their line; and
 * hostile inputs within bounds: a 2 GiB sparse source with a line of 1 GB read
 * 16 MiB far in little memory, a profile naming more distinct lines than
 * --memory-cap holds refused with one line.
 */
#include "formats/format_registry.h"
#include "profile/profile.h"
#include "util/exit_status.h"
#include "testlib.h"

#include <math.h>
#include <sys/resource.h>
#include <sys/stat.h>

static char out_text[4 << 20], err_text[1 << 14];

/* Runs `pybpfprof annotate ARGS...` (NULL-terminated, at most 12): its exit status, out_text and err_text. */
static int run_annotate(const char *first, ...)
{
	char *argv[16] = { (char *)pybpfprof_binary(), "annotate" };
	va_list args;
	int argc = 2;

	va_start(args, first);
	for (const char *arg = first; arg && argc < 15; arg = va_arg(args, const char *))
		argv[argc++] = (char *)arg;
	va_end(args);
	argv[argc] = NULL;
	return run_capture_both(argv, out_text, sizeof(out_text), err_text, sizeof(err_text));
}

/* A source file whose line 3 is markup a page must not run. */
static const char app_source[] = "import sys\n"
				 "def f(n):\n"
				 "    s = '<script>alert(1)</script>'  # line 3\n"
				 "    return n + 1                     # line 4\n"
				 "\n"
				 "def g():\n"
				 "    return f(1)                      # line 7\n"
				 "\n"
				 "\n"
				 "g()                                  # line 10\n";

struct frame_spec {
	const char *name;
	int32_t line;
};

static void add_sample(struct pf_writer *writer, const char *file, const struct frame_spec *spec, size_t count)
{
	struct pf_frame frames[8];
	struct pf_sample sample = { .pid = 42, .tid = 42, .metrics = PF_METRIC_TIME, .time_us = 1000 };

	for (size_t i = 0; i < count; i++) {
		frames[i] = pf_frame_unlocated(PF_FRAME_PYTHON, file, spec[i].name);
		frames[i].line = spec[i].line;
	}
	sample.frames = frames;
	sample.frame_count = count;
	assert_int_equal(pf_writer_add_sample(writer, &sample), 0);
}

/*
 * Six samples of 1000 µs in file: three [<module>:10, f:3], one [<module>:10, f:4], one
 * [<module>:10, g:7, f:3], one [<module>:10, f:3, f:3] (recursion: line 3 counts once), and a
 * native leaf under f:4 in a seventh that makes f:4 own it. Shares of 7000 µs:
 *   line 3: own 5/7 = 71.43%, total 71.43%; line 4: own 2/7 = 28.57%, total 28.57%;
 *   line 7: own 0, total 14.29%; line 10: own 0, total 100%.
 */
static void write_profile(const char *path, const char *file)
{
	const struct frame_spec plain[] = { { "<module>", 10 }, { "f", 3 } };
	const struct frame_spec other_line[] = { { "<module>", 10 }, { "f", 4 } };
	const struct frame_spec through_g[] = { { "<module>", 10 }, { "g", 7 }, { "f", 3 } };
	const struct frame_spec recursive[] = { { "<module>", 10 }, { "f", 3 }, { "f", 3 } };
	struct pf_writer_options options = PF_WRITER_OPTIONS_DEFAULT;
	struct pf_writer *writer;
	struct pf_frame frames[3];
	struct pf_sample native = { .pid = 42, .tid = 42, .metrics = PF_METRIC_TIME, .time_us = 1000 };

	unlink(path);
	assert_int_equal(pf_writer_open(&writer, path, format_registry_find_name("mojo"), &options), 0);
	for (int i = 0; i < 3; i++)
		add_sample(writer, file, plain, 2);
	add_sample(writer, file, other_line, 2);
	add_sample(writer, file, through_g, 3);
	add_sample(writer, file, recursive, 3);
	frames[0] = pf_frame_unlocated(PF_FRAME_PYTHON, file, "<module>");
	frames[0].line = 10;
	frames[1] = pf_frame_unlocated(PF_FRAME_PYTHON, file, "f");
	frames[1].line = 4;
	frames[2] = pf_frame_unlocated(PF_FRAME_NATIVE, "libc.so.6", "memcpy");
	native.frames = frames;
	native.frame_count = 3;
	assert_int_equal(pf_writer_add_sample(writer, &native), 0);
	assert_int_equal(pf_writer_close(writer), 0);
}

struct row {
	double own, total;
	bool found;
};

/* The row of line in the section of the output after the text `after` (the first such row). */
static struct row find_line(const char *text, const char *after, int line)
{
	const char *at = after ? strstr(text, after) : text;
	struct row row = { 0 };

	for (at = at ? strchr(at, '\n') : NULL; at; at = strchr(at + 1, '\n')) {
		char own[16] = "", total[16] = "";
		int number = 0, used = 0;

		/* Columns: OWN (8 wide, blank for none), TOTAL (8 wide), LINE. */
		if (strlen(at + 1) < 24)
			break;
		memcpy(own, at + 1, 8);
		memcpy(total, at + 9, 8);
		if (sscanf(at + 17, " %d%n", &number, &used) != 1 || number != line)
			continue;
		row.own = strtod(own, NULL);
		row.total = strtod(total, NULL);
		row.found = true;
		return row;
	}
	return row;
}

static void assert_line(const char *after, int line, double own, double total)
{
	struct row row = find_line(out_text, after, line);

	if (!row.found)
		fail_msg("no line %d after '%s' in:\n%s", line, after ? after : "", out_text);
	if (fabs(row.own - own) > 0.006 || fabs(row.total - total) > 0.006)
		fail_msg("line %d: own %.2f total %.2f, expected %.2f %.2f in:\n%s", line, row.own, row.total,
			 own, total, out_text);
}

static void make_app(char *dir, size_t dir_len, char *source, size_t source_len, const char *name)
{
	snprintf(dir, dir_len, "%s/%s", test_tmpdir(), name);
	mkdir(dir, 0755);
	snprintf(source, source_len, "%s/app.py", dir);
	assert_int_equal(write_whole_file(source, app_source, sizeof(app_source) - 1), 0);
}

static void test_shares_are_exact(void **state)
{
	char dir[256], source[320], profile[320];

	(void)state;
	make_app(dir, sizeof(dir), source, sizeof(source), "exact");
	snprintf(profile, sizeof(profile), "%s/run.mojo", dir);
	write_profile(profile, source);
	assert_int_equal(run_annotate(profile, NULL), EXIT_STATUS_OK);
	print_message("%s", out_text);
	assert_non_null(strstr(out_text, "7 samples"));
	assert_line("-- f:", 3, 71.43, 71.43);
	assert_line("-- f:", 4, 28.57, 28.57);
	assert_line("-- g:", 7, 0, 14.29);
	assert_line("-- <module>:", 10, 0, 100);
	/* A region shows its own function's lines: g's line 7 is context in <module>'s. */
	assert_line("-- <module>:", 7, 0, 0);
	/* The source is beside the shares; f, the hottest function, comes first. */
	assert_non_null(strstr(out_text, "return n + 1"));
	assert_non_null(strstr(out_text, "-- f: own 100.00%, total 100.00%"));
	assert_true(strstr(out_text, "-- f:") < strstr(out_text, "-- <module>:"));
	assert_true(strstr(out_text, "-- <module>:") < strstr(out_text, "-- g:"));
}

static void test_function_selects_its_lines(void **state)
{
	char dir[256], source[320], profile[320];

	(void)state;
	make_app(dir, sizeof(dir), source, sizeof(source), "function");
	snprintf(profile, sizeof(profile), "%s/run.mojo", dir);
	write_profile(profile, source);
	assert_int_equal(run_annotate(profile, "--function", "g", NULL), EXIT_STATUS_OK);
	assert_non_null(strstr(out_text, "-- g:"));
	assert_null(strstr(out_text, "-- f:"));
	assert_null(strstr(out_text, "-- <module>:"));
	assert_line("-- g:", 7, 0, 14.29);
	assert_int_equal(run_annotate(profile, "--function", "nothere", NULL), EXIT_STATUS_OK);
	assert_non_null(strstr(out_text, "no Python function of that name"));
}

static void test_missing_source_says_so(void **state)
{
	char profile[320];

	(void)state;
	snprintf(profile, sizeof(profile), "%s/missing.mojo", test_tmpdir());
	write_profile(profile, "/nonexistent/pybpfprof/app.py");
	assert_int_equal(run_annotate(profile, NULL), EXIT_STATUS_OK);
	assert_non_null(strstr(out_text, "source not at hand: No such file or directory"));
	/* The shares are still there, each sampled line with them. */
	assert_line("-- f:", 3, 71.43, 71.43);
	assert_line("-- f:", 4, 28.57, 28.57);
}

/* Collapsed stacks of bare names have no lines: said so, not an error. */
static void test_profile_without_lines_says_so(void **state)
{
	static const char text[] = "main;a 1000\nmain;b 500\n";
	char profile[320];

	(void)state;
	snprintf(profile, sizeof(profile), "%s/bare.collapsed", test_tmpdir());
	assert_int_equal(write_whole_file(profile, text, sizeof(text) - 1), 0);
	assert_int_equal(run_annotate(profile, NULL), EXIT_STATUS_OK);
	assert_non_null(strstr(out_text, "2 distinct stacks"));
	assert_non_null(strstr(out_text, "no Python frames with a source file"));
	assert_int_equal(run_annotate("/nonexistent/pybpfprof.mojo", NULL), EXIT_STATUS_TARGET);
}

/* A profile may name any path: a FIFO (which could block a reader) is not read, as nobody. */
static void test_fifo_is_not_read_as_nobody(void **state)
{
	char dir[64], fifo[128], profile[128], command[PATH_MAX + 512];

	(void)state;
	test_make_sticky_dir(dir, sizeof(dir));
	snprintf(fifo, sizeof(fifo), "%s/app.py", dir);
	snprintf(profile, sizeof(profile), "%s/fifo.mojo", dir);
	assert_int_equal(mkfifo(fifo, 0666), 0);
	assert_int_equal(chmod(fifo, 0666), 0);
	write_profile(profile, fifo);
	assert_int_equal(chmod(profile, 0644), 0);
	snprintf(command, sizeof(command), "timeout 60 %s annotate %s > %s/out.txt", pybpfprof_binary(), profile, dir);
	assert_int_equal(test_run_as_nobody(command), 0);
	snprintf(command, sizeof(command), "%s/out.txt", dir);
	{
		size_t len;
		char *text = (char *)read_whole_file(command, &len);

		assert_non_null(text);
		assert_non_null(strstr(text, "source not at hand: not a regular file"));
		free(text);
	}
}

/* A file the profile names may be any size: 16 MiB of it read, a line shown at most 1 MiB long. */
static void test_large_source_is_capped(void **state)
{
	const size_t long_line = 2u << 20, padding = 15u << 20;
	static const char middle[] = "\ndef f(n):\n    s = 1\n    return n\n\ndef g():\n    return f(1)\n\n\ng()\n";
	char source[320], profile[320];
	size_t len = long_line + sizeof(middle) - 1 + padding, longest = 0;
	char *text = malloc(len);
	const char *at;

	(void)state;
	assert_non_null(text);
	memset(text, 'a', long_line);
	memcpy(text + long_line, middle, sizeof(middle) - 1);
	memset(text + long_line + sizeof(middle) - 1, '#', padding);
	snprintf(source, sizeof(source), "%s/big.py", test_tmpdir());
	snprintf(profile, sizeof(profile), "%s/big.mojo", test_tmpdir());
	assert_int_equal(write_whole_file(source, text, len), 0);
	free(text);
	write_profile(profile, source);
	assert_int_equal(run_annotate(profile, NULL), EXIT_STATUS_OK);
	assert_non_null(strstr(out_text, "read only its first 16 MiB"));
	assert_line("-- f:", 4, 28.57, 28.57);
	for (at = out_text; at && *at;) {
		const char *end = strchr(at, '\n');
		size_t line_len = end ? (size_t)(end - at) : strlen(at);

		if (line_len > longest)
			longest = line_len;
		at = end ? end + 1 : NULL;
	}
	/* Line 1 cut at 1 MiB (and the last line, cut by the 16 MiB): the shares and number before it. */
	assert_true(longest >= (1u << 20) && longest < (1u << 20) + 64);
}

static void test_path_map_and_source_root(void **state)
{
	char dir[256], source[320], profile[320], map[512], root[256], root_app[1024];

	(void)state;
	make_app(dir, sizeof(dir), source, sizeof(source), "mapped");
	snprintf(profile, sizeof(profile), "%s/run.mojo", dir);
	/* Recorded in a container where the file was /srv/app/app.py. */
	write_profile(profile, "/srv/app/app.py");
	assert_int_equal(run_annotate(profile, NULL), EXIT_STATUS_OK);
	assert_null(strstr(out_text, "return n + 1"));
	snprintf(map, sizeof(map), "/srv/app=%s", dir);
	assert_int_equal(run_annotate(profile, "--path-map", map, NULL), EXIT_STATUS_OK);
	assert_non_null(strstr(out_text, "return n + 1"));
	assert_null(strstr(out_text, "source not at hand"));
	assert_line("-- f:", 4, 28.57, 28.57);

	/* The container's root at hand as a directory. */
	snprintf(root, sizeof(root), "%s/root", test_tmpdir());
	snprintf(root_app, sizeof(root_app), "mkdir -p %s/srv/app && cp %s %s/srv/app/", root, source, root);
	assert_int_equal(system(root_app), 0);
	assert_int_equal(run_annotate(profile, "--source-root", root, NULL), EXIT_STATUS_OK);
	assert_non_null(strstr(out_text, "return n + 1"));
	assert_null(strstr(out_text, "source not at hand"));
}

static void test_html_escapes_and_fetches_nothing(void **state)
{
	char dir[256], source[320], profile[320], page[320];
	char *html;
	size_t len;

	(void)state;
	/* A directory whose name is markup, and a source line that is. */
	snprintf(dir, sizeof(dir), "%s/<script>alert(2)<", test_tmpdir());
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(source, sizeof(source), "%s/app.py", dir);
	assert_int_equal(write_whole_file(source, app_source, sizeof(app_source) - 1), 0);
	snprintf(profile, sizeof(profile), "%s/html.mojo", test_tmpdir());
	snprintf(page, sizeof(page), "%s/heat.html", test_tmpdir());
	write_profile(profile, source);
	assert_int_equal(run_annotate(profile, "-o", page, NULL), EXIT_STATUS_OK);
	html = (char *)read_whole_file(page, &len);
	assert_non_null(html);
	assert_null(strcasestr(html, "<script"));
	assert_non_null(strstr(html, "&lt;script&gt;alert(1)&lt;/script&gt;"));
	assert_non_null(strstr(html, "&lt;script&gt;alert(2)&lt;/app.py"));
	/* Nothing from the network: no URL anywhere. */
	assert_null(strstr(html, "://"));
	/* Navigable: a link to each function's region, each region with its shares. */
	assert_non_null(strstr(html, "<a href=\"#fn"));
	assert_non_null(strstr(html, "71.43%"));
	free(html);
	/* Only a page: -o takes .html. */
	assert_int_equal(run_annotate(profile, "-o", "heat.txt", NULL), EXIT_STATUS_USAGE);
}

/*
 * 9 units of work on line 6 for each 1 on line 7, the same call, until 3 s of CPU (some 3000
 * samples at 1 kHz however loaded the machine). Each call lasts many sample periods and
 * scheduler slices (line 7's some 10 ms): with calls shorter than a slice, a loaded machine's
 * preemptions line up with the loop and favour one line (94.5% was seen with calls of a
 * fraction of a millisecond).
 */
static const char hot_script[] = "import time\n"
				 "K = 1000000\n"
				 "def work():\n"
				 "    total = 0\n"
				 "    while time.process_time() < 3.0:\n"
				 "        total += sum(range(9 * K))\n"
				 "        total += sum(range(K))\n"
				 "    return total\n"
				 "work()\n";

static void test_recording_hot_line_is_90_percent(void **state)
{
	struct test_python pythons[16];
	size_t count = test_pythons(pythons, 16);
	const struct test_python *python = test_python_find(pythons, count, "3.12");
	char script[256], profile[256], command[PATH_MAX * 4], *argv[32], header[64];
	struct row hot, cold;
	unsigned long samples = 0;
	double function_own = 0;
	const char *at;
	int argc;

	(void)state;
	if (!python && count)
		python = &pythons[0];
	assert_non_null(python);
	snprintf(script, sizeof(script), "%s/hot.py", test_tmpdir());
	snprintf(profile, sizeof(profile), "%s/hot.mojo", test_tmpdir());
	assert_int_equal(write_whole_file(script, hot_script, sizeof(hot_script) - 1), 0);
	snprintf(command, sizeof(command), "%s -q -F 1000 -o %s -- %s %s", pybpfprof_binary(), profile,
		 python->command, script);
	argc = split_command(command, argv, 31);
	argv[argc] = NULL;
	assert_int_equal(run_capture_both(argv, out_text, sizeof(out_text), err_text, sizeof(err_text)), 0);
	assert_int_equal(run_annotate(profile, "--function", "work", NULL), EXIT_STATUS_OK);
	print_message("%s", out_text);
	at = strstr(out_text, ": ");
	assert_non_null(at);
	sscanf(at + 2, "%lu", &samples);
	snprintf(header, sizeof(header), "-- work: own ");
	at = strstr(out_text, header);
	assert_non_null(at);
	assert_int_equal(sscanf(at + strlen(header), "%lf", &function_own), 1);
	/* 3 s of CPU at 1 kHz: some 3000 samples, and most of them in work. */
	assert_true(samples >= 1000);
	assert_true(function_own / 100.0 * (double)samples >= 1000);
	hot = find_line(out_text, "-- work:", 6);
	cold = find_line(out_text, "-- work:", 7);
	assert_true(hot.found && cold.found);
	print_message("line 6: %.2f%% of work's own, line 7: %.2f%%\n", 100 * hot.own / function_own,
		      100 * cold.own / function_own);
	assert_true(fabs(100 * hot.own / function_own - 90) <= 3);
	assert_true(fabs(100 * cold.own / function_own - 10) <= 3);
}

/*
 * A Tachyon profile of CPython 3.12 (3.12's opcode numbers: 73 LOAD_ATTR_INSTANCE_VALUE, 106
 * LOAD_ATTR, 122 BINARY_OP, 171 CALL): [<module>:10 CALL, f:3 LOAD_ATTR_INSTANCE_VALUE] x3,
 * [<module>:10 CALL, f:3 BINARY_OP] x1, [<module>:10 CALL, f:4 LOAD_ATTR] x1. Of 5 samples,
 * line 3: 80%: LOAD_ATTR_INSTANCE_VALUE 60%, BINARY_OP 20%; line 4: LOAD_ATTR 20%; line 10:
 * total 100%, all of it CALL.
 */
static void write_opcode_profile(const char *path, const char *file)
{
	static const struct { int32_t line; int16_t opcode; int times; } leaves[] = {
		{ 3, 73, 3 }, { 3, 122, 1 }, { 4, 106, 1 } };
	const struct pf_python_version python = { 3, 12, 1 };
	const struct pf_run_info run = { .interval_us = 1000, .mode = "cpu" };
	struct pf_writer_options options = PF_WRITER_OPTIONS_DEFAULT;
	struct pf_writer *writer;

	unlink(path);
	assert_int_equal(pf_writer_open(&writer, path, format_registry_find_name("tachyon"), &options), 0);
	assert_int_equal(pf_writer_set_python_version(writer, &python), 0);
	assert_int_equal(pf_writer_set_run_info(writer, &run), 0);
	for (size_t i = 0; i < sizeof(leaves) / sizeof(leaves[0]); i++)
		for (int n = 0; n < leaves[i].times; n++) {
			struct pf_frame frames[2] = { pf_frame_unlocated(PF_FRAME_PYTHON, file, "<module>"),
						      pf_frame_unlocated(PF_FRAME_PYTHON, file, "f") };
			struct pf_sample sample = { .pid = 42, .tid = 42, .metrics = PF_METRIC_TIME, .time_us = 1000,
						    .frames = frames, .frame_count = 2 };

			frames[0].line = 10;
			frames[0].opcode = 171;
			frames[1].line = leaves[i].line;
			frames[1].opcode = leaves[i].opcode;
			assert_int_equal(pf_writer_add_sample(writer, &sample), 0);
		}
	assert_int_equal(pf_writer_close(writer), 0);
}

/* The instruction row "NAME" under line's row (after `after`): its own and total shares. */
static struct row find_instruction(const char *after, int line, const char *name)
{
	const char *at = strstr(out_text, after);
	char line_text[32], wanted[160];
	struct row row = { 0 };
	const char *end;

	snprintf(line_text, sizeof(line_text), " %6d  ", line);
	at = at ? strstr(at, line_text) : NULL;
	snprintf(wanted, sizeof(wanted), "| %s\n", name);
	/* the rows of that line's instructions, up to the next line's row */
	for (at = at ? strchr(at, '\n') : NULL; at && (end = strchr(at + 1, '\n')); at = end) {
		char own[9] = "", total[9] = "";

		if (end - at < 30 || strncmp(at + 17, "          | ", 12))
			break;
		if (strncmp(at + 17 + 10, wanted, strlen(wanted)))
			continue;
		memcpy(own, at + 1, 8);
		memcpy(total, at + 9, 8);
		row = (struct row){ strtod(own, NULL), strtod(total, NULL), true };
	}
	return row;
}

static void assert_instruction(const char *after, int line, const char *name, double own, double total)
{
	struct row row = find_instruction(after, line, name);

	if (!row.found || fabs(row.own - own) > 0.006 || fabs(row.total - total) > 0.006)
		fail_msg("line %d's %s: %s own %.2f total %.2f, expected %.2f %.2f in:\n%s", line, name,
			 row.found ? "" : "(absent)", row.own, row.total, own, total, out_text);
}

static void test_instructions_under_their_line(void **state)
{
	char dir[256], source[320], profile[320], page[320];
	char *html;
	size_t len;

	(void)state;
	make_app(dir, sizeof(dir), source, sizeof(source), "opcodes");
	snprintf(profile, sizeof(profile), "%s/opcodes.bin", dir);
	snprintf(page, sizeof(page), "%s/opcodes.html", dir);
	write_opcode_profile(profile, source);
	assert_int_equal(run_annotate(profile, NULL), EXIT_STATUS_OK);
	assert_line("-- f:", 3, 80, 80);
	assert_instruction("-- f:", 3, "LOAD_ATTR_INSTANCE_VALUE (LOAD_ATTR)", 60, 60);
	assert_instruction("-- f:", 3, "BINARY_OP", 20, 20);
	assert_instruction("-- f:", 4, "LOAD_ATTR", 20, 20);
	assert_instruction("-- <module>:", 10, "CALL", 0, 100);
	/* hottest first: the specialised load before the binary op */
	assert_true(strstr(out_text, "| LOAD_ATTR_INSTANCE_VALUE") < strstr(out_text, "| BINARY_OP"));
	assert_non_null(strstr(out_text, "as CPython 3.12 names them"));

	assert_int_equal(run_annotate(profile, "-o", page, NULL), EXIT_STATUS_OK);
	html = (char *)read_whole_file(page, &len);
	assert_non_null(html);
	assert_non_null(strstr(html, "<td class=\"s\">60.00%</td><td class=\"s\">60.00%</td><td class=\"n\"></td>"
				     "<td>    LOAD_ATTR_INSTANCE_VALUE (LOAD_ATTR)</td>"));
	free(html);

	/* A profile without opcodes shows none (MOJO keeps no opcode). */
	write_profile(profile, source);
	assert_int_equal(run_annotate(profile, NULL), EXIT_STATUS_OK);
	assert_null(strstr(out_text, "| "));
}

/* Runs annotate ARGS (NULL-terminated) to its end: its exit status, its peak memory in KiB. */
static int run_annotate_peak(long *peak_kib, char *const argv[])
{
	struct rusage usage;
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		if (null < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0)
			_exit(127);
		execv(argv[0], argv);
		_exit(127);
	}
	assert_int_equal(wait4(pid, &status, 0, &usage), pid);
	*peak_kib = usage.ru_maxrss;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/*
 * What a target can put at a path its profile names, planted by nobody: a 2 GiB sparse file
 * whose line 5 is 1 GiB of NULs. Read 16 MiB far, its line shown at most 1 MiB long, and in
 * little memory.
 */
static void test_sparse_source_with_gigabyte_line(void **state)
{
	static const char head[] = "import sys\ndef f(n):\n    s = 1\n    return n\n";
	char dir[64], source[128], profile[128], command[1024];
	char *argv[] = { (char *)pybpfprof_binary(), "annotate", profile, NULL };
	long peak_kib = 0;

	(void)state;
	test_make_sticky_dir(dir, sizeof(dir));
	snprintf(source, sizeof(source), "%s/sparse.py", dir);
	snprintf(profile, sizeof(profile), "%s/sparse.mojo", dir);
	/* line 5: 1 GiB of NULs (a hole), then a newline; the rest a hole up to 2 GiB */
	snprintf(command, sizeof(command),
		 "printf 'import sys\\ndef f(n):\\n    s = 1\\n    return n\\n' > %s && "
		 "printf '\\n' | dd of=%s bs=1 seek=%zu conv=notrunc status=none && truncate -s 2G %s",
		 source, source, sizeof(head) - 1 + ((size_t)1 << 30), source);
	assert_int_equal(test_run_as_nobody(command), 0);
	write_profile(profile, source);
	assert_int_equal(run_annotate(profile, NULL), EXIT_STATUS_OK);
	assert_non_null(strstr(out_text, "read only its first 16 MiB"));
	assert_non_null(strstr(out_text, "    return n"));
	assert_line("-- f:", 4, 28.57, 28.57);
	assert_int_equal(run_annotate_peak(&peak_kib, argv), EXIT_STATUS_OK);
	print_message("annotate of a 2 GiB source: peak %ld KiB\n", peak_kib);
	/* the 16 MiB read and a 1 MiB line at most, with the program's own: far below a GiB */
	assert_true(peak_kib > 0 && peak_kib < 128 * 1024);
	unlink(source);
	unlink(profile);
	rmdir(dir);
}

/* 40,000 functions of one line each: some 8 MiB of tables, past a 1 MiB cap. */
static void test_memory_cap_says_so_once(void **state)
{
	struct pf_writer_options options = PF_WRITER_OPTIONS_DEFAULT;
	char profile[320], name[32];
	struct pf_writer *writer;
	const char *newline;

	(void)state;
	snprintf(profile, sizeof(profile), "%s/many.mojo", test_tmpdir());
	unlink(profile);
	assert_int_equal(pf_writer_open(&writer, profile, format_registry_find_name("mojo"), &options), 0);
	for (int i = 0; i < 40000; i++) {
		const struct frame_spec spec[] = { { name, 1 + i % 1000 } };

		snprintf(name, sizeof(name), "function_%d", i);
		add_sample(writer, "/app/many.py", spec, 1);
	}
	assert_int_equal(pf_writer_close(writer), 0);
	assert_int_equal(run_annotate(profile, "--memory-cap", "1", NULL), EXIT_STATUS_FAILED);
	assert_non_null(strstr(err_text, "memory cap holds (1 MiB; --memory-cap MIB raises it)"));
	/* one line */
	newline = strchr(err_text, '\n');
	assert_true(newline && !newline[1]);
	/* the default cap holds them (one function's report: all 40,000 would fill the pipe) */
	assert_int_equal(run_annotate(profile, "--function", "function_7", NULL), EXIT_STATUS_OK);
	assert_int_equal(run_annotate(profile, "--memory-cap", "0", NULL), EXIT_STATUS_USAGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shares_are_exact),
		cmocka_unit_test(test_function_selects_its_lines),
		cmocka_unit_test(test_missing_source_says_so),
		cmocka_unit_test(test_profile_without_lines_says_so),
		cmocka_unit_test(test_fifo_is_not_read_as_nobody),
		cmocka_unit_test(test_large_source_is_capped),
		cmocka_unit_test(test_path_map_and_source_root),
		cmocka_unit_test(test_html_escapes_and_fetches_nothing),
		cmocka_unit_test(test_recording_hot_line_is_90_percent),
		cmocka_unit_test(test_instructions_under_their_line),
		cmocka_unit_test(test_sparse_source_with_gigabyte_line),
		cmocka_unit_test(test_memory_cap_says_so_once),
	};

	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
