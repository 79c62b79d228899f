// SPDX-License-Identifier: MIT
/*
 * The command line as a new user meets it: mistakes get one clear line and the
 * exit status of their class (util/exit_status.h), nothing is launched by
 * accident, a bare run says what it does, and a file reads back the same
 * whatever its format. Real BPF where a run is needed.
 */
#include "live_top_pane.h"
#include "testlib.h"

#include "util/exit_status.h"

#include <stdarg.h>
#include <sys/stat.h>

static char out_text[1 << 16], err_text[1 << 14];

/* Runs pybpfprof with the given arguments (NULL-terminated); stdout and stderr captured. */
#define run_pybpfprof(...) run_pybpfprof_capture(out_text, sizeof(out_text), err_text, sizeof(err_text), __VA_ARGS__)

static size_t count_lines(const char *text)
{
	size_t lines = 0;

	for (; *text; text++)
		lines += *text == '\n';
	return lines;
}

/* One line on stderr naming what went wrong, and the class's status. */
static void expect_mistake(int status, int expected, const char *needle)
{
	print_message("exit %d: %s", status, err_text);
	assert_int_equal(status, expected);
	if (!strstr(err_text, needle))
		fail_msg("expected '%s' in: %s", needle, err_text);
	assert_non_null(strstr(err_text, "pybpfprof"));
}

/* ---- commands and launching ---- */

/* `pybpfprof touch FILE` is a typo of a command, not a program to run as root. */
static void unknown_command_is_not_launched(void **state)
{
	char victim[PATH_MAX];

	(void)state;
	FORMAT(victim, "%s/created-by-mistake", test_tmpdir());
	unlink(victim);
	expect_mistake(run_pybpfprof("dupm", "f.mojo", NULL), EXIT_STATUS_USAGE, "unknown command 'dupm'");
	/* the commands are listed, and how to launch one */
	assert_non_null(strstr(err_text, "dump"));
	assert_non_null(strstr(err_text, " -- "));
	expect_mistake(run_pybpfprof("touch", victim, NULL), EXIT_STATUS_USAGE, "unknown command 'touch'");
	assert_false(file_exists(victim));
}

/* --event samples on occurrences: a clock's options, wall and gil modes and unknown events are
 * refused in one line, before anything starts. */
static void event_mistakes_say_so(void **state)
{
	(void)state;
	expect_mistake(run_pybpfprof("--event", "page-fault", NULL), EXIT_STATUS_USAGE, "unknown event 'page-fault'");
	assert_non_null(strstr(err_text, "page-faults, minor-faults"));
	expect_mistake(run_pybpfprof("--event", "cs", "--mode", "wall", NULL), EXIT_STATUS_USAGE, "--mode wall");
	expect_mistake(run_pybpfprof("--event", "cs", "--mode", "gil", NULL), EXIT_STATUS_USAGE, "--mode gil");
	expect_mistake(run_pybpfprof("--event", "page-faults", "-F", "99", NULL), EXIT_STATUS_USAGE, "not -F or -i");
	expect_mistake(run_pybpfprof("--event", "cs:2", "--event-period", "3", NULL), EXIT_STATUS_USAGE,
		       "both set the period");
	expect_mistake(run_pybpfprof("--event-period", "3", NULL), EXIT_STATUS_USAGE, "goes with --event");
	expect_mistake(run_pybpfprof("--event", "cs:0", NULL), EXIT_STATUS_USAGE, "invalid period '0'");
	expect_mistake(run_pybpfprof("--event", "major-faults", "--event-period", "x", NULL), EXIT_STATUS_USAGE,
		       "invalid --event-period 'x'");
	/* live top takes them as record does, and says the same */
	expect_mistake(run_pybpfprof("top", "--event", "page-fault", NULL), EXIT_STATUS_USAGE,
		       "unknown event 'page-fault'");
	expect_mistake(run_pybpfprof("top", "--event", "syscall:wrte", NULL), EXIT_STATUS_USAGE, "did you mean write?");
	expect_mistake(run_pybpfprof("top", "--event", "off-cpu", "-F", "99", NULL), EXIT_STATUS_USAGE, "not -F");
	expect_mistake(run_pybpfprof("top", "--event", "cs", "--mode", "memory", NULL), EXIT_STATUS_USAGE,
		       "--mode memory");
	expect_mistake(run_pybpfprof("top", "--event-period", "3", NULL), EXIT_STATUS_USAGE, "goes with --event");
}

/* A command given without -- is refused before its options can pass for ours (-c, -o). */
static void command_needs_double_dash(void **state)
{
	char out[PATH_MAX], victim[PATH_MAX];

	(void)state;
	FORMAT(out, "%s/no-dash.mojo", test_tmpdir());
	FORMAT(victim, "%s/touched", test_tmpdir());
	unlink(victim);
	expect_mistake(run_pybpfprof("-o", out, "touch", victim, NULL), EXIT_STATUS_USAGE, "after --");
	expect_mistake(run_pybpfprof("-o", out, "python3", "-c", "print(1)", NULL), EXIT_STATUS_USAGE,
		       "unexpected 'python3'");
	assert_null(strstr(err_text, "compression"));
	assert_false(file_exists(victim));
	assert_false(file_exists(out));
	expect_mistake(run_pybpfprof("-o", out, "--", NULL), EXIT_STATUS_USAGE, "not followed by a command");
}

static void help_lists_exit_statuses(void **state)
{
	(void)state;
	assert_int_equal(run_pybpfprof("-h", NULL), EXIT_STATUS_OK);
	assert_non_null(strstr(out_text, "--pid"));
	assert_non_null(strstr(out_text, "EXIT STATUS"));
	assert_non_null(strstr(out_text, "64"));
	assert_non_null(strstr(out_text, "75   --push delivered no window"));
	assert_int_equal(run_pybpfprof("--help", NULL), EXIT_STATUS_OK);
	assert_non_null(strstr(out_text, "EXIT STATUS"));
	assert_int_equal(run_pybpfprof("help", NULL), EXIT_STATUS_OK);
	assert_non_null(strstr(out_text, "convert"));
	assert_non_null(strstr(out_text, "stacks"));
	assert_int_equal(run_pybpfprof("top", "--help", NULL), EXIT_STATUS_OK);
	assert_non_null(strstr(out_text, "Exit status"));
	assert_int_equal(run_pybpfprof("stacks", "--help", NULL), EXIT_STATUS_OK);
	assert_non_null(strstr(out_text, "--json"));
	assert_non_null(strstr(out_text, "Exit status"));
}

/* The same kind of mistake gets the same status, whichever command and option made it. */
static void one_status_per_class(void **state)
{
	char missing[PATH_MAX], out[PATH_MAX];

	(void)state;
	FORMAT(missing, "%s/missing.mojo", test_tmpdir());
	FORMAT(out, "%s/class.mojo", test_tmpdir());
	unlink(missing);
	/* usage: a bad value names the option it came from */
	expect_mistake(run_pybpfprof("-i", "10s", "-p", "1", NULL), EXIT_STATUS_USAGE, "invalid interval '10s'");
	assert_null(strstr(err_text, "frequency"));
	expect_mistake(run_pybpfprof("-F", "0", "-p", "1", NULL), EXIT_STATUS_USAGE, "invalid frequency");
	expect_mistake(run_pybpfprof("--bogus", NULL), EXIT_STATUS_USAGE, "unrecognized option");
	expect_mistake(run_pybpfprof("top", "-n", "x", missing, NULL), EXIT_STATUS_USAGE, "invalid -n");
	expect_mistake(run_pybpfprof("dump", NULL), EXIT_STATUS_USAGE, "expected exactly one FILE");
	expect_mistake(run_pybpfprof("convert", missing, NULL), EXIT_STATUS_USAGE, "-o OUT");
	expect_mistake(run_pybpfprof("stacks", NULL), EXIT_STATUS_USAGE, "expected exactly one PID");
	expect_mistake(run_pybpfprof("stacks", "12x", NULL), EXIT_STATUS_USAGE, "not a process id: '12x'");
	expect_mistake(run_pybpfprof("stacks", "--bogus", "1", NULL), EXIT_STATUS_USAGE, "unrecognized option");
	/* target: the file to read is missing */
	expect_mistake(run_pybpfprof("top", missing, NULL), EXIT_STATUS_TARGET, "missing.mojo");
	expect_mistake(run_pybpfprof("dump", missing, NULL), EXIT_STATUS_TARGET, "missing.mojo");
	expect_mistake(run_pybpfprof("convert", missing, "-o", out, NULL), EXIT_STATUS_TARGET, "missing.mojo");
	assert_int_equal(count_lines(err_text), 1);
	assert_false(file_exists(out));
}

/* A near miss names what was meant in one line, whichever command, and nothing runs. */
static void mistyped_options_and_commands_say_what_was_meant(void **state)
{
	char victim[PATH_MAX], profile[PATH_MAX];

	(void)state;
	FORMAT(victim, "%s/launched-by-typo", test_tmpdir());
	unlink(victim);
	testdata_path(profile, sizeof(profile), "mojo/mp.mojo");
	expect_mistake(run_pybpfprof("--ouptut", "a.mojo", "--", "touch", victim, NULL), EXIT_STATUS_USAGE,
		       "unrecognized option '--ouptut'; did you mean --output?");
	assert_int_equal(count_lines(err_text), 1);
	assert_false(file_exists(victim));
	expect_mistake(run_pybpfprof("--frequncy=99", "-p", "1", NULL), EXIT_STATUS_USAGE, "did you mean --frequency?");
	expect_mistake(run_pybpfprof("top", "--lnies", "3", profile, NULL), EXIT_STATUS_USAGE, "did you mean --lines?");
	assert_int_equal(count_lines(err_text), 1);
	expect_mistake(run_pybpfprof("stacks", "--no-kernal", "1", NULL), EXIT_STATUS_USAGE,
		       "did you mean --no-kernel?");
	expect_mistake(run_pybpfprof("dump", "--sampels", profile, NULL), EXIT_STATUS_USAGE, "did you mean --samples?");
	expect_mistake(run_pybpfprof("convert", profile, "--fromat", "svg", NULL), EXIT_STATUS_USAGE,
		       "did you mean --format?");
	expect_mistake(run_pybpfprof("convert", profile, "-o", "out.svg", "-f", "svgz", NULL), EXIT_STATUS_USAGE,
		       "unknown format 'svgz'");
	assert_non_null(strstr(err_text, "did you mean svg?"));
	expect_mistake(run_pybpfprof("-f", "tachion", "--", "true", NULL), EXIT_STATUS_USAGE,
		       "did you mean tachyon?");
	assert_int_equal(count_lines(err_text), 1);
	expect_mistake(run_pybpfprof("diff", profile, profile, "--fail-iff", "x>+1%", NULL), EXIT_STATUS_USAGE,
		       "did you mean --fail-if?");
	expect_mistake(run_pybpfprof("annotate", profile, "--fucntion", "f", NULL), EXIT_STATUS_USAGE,
		       "did you mean --function?");
	/* a value that looks like an option is still a value */
	expect_mistake(run_pybpfprof("top", "-n", "--lnies", profile, NULL), EXIT_STATUS_USAGE, "invalid -n '--lnies'");
	expect_mistake(run_pybpfprof("stakcs", "1", NULL), EXIT_STATUS_USAGE,
		       "unknown command 'stakcs'; did you mean 'stacks'?");
	assert_int_equal(count_lines(err_text), 1);
	assert_non_null(strstr(err_text, " -- stakcs"));
}

/* Two -o naming one file: written once, with a warning; convert's second, other file: refused. */
static void an_output_given_twice_is_written_once(void **state)
{
	char profile[PATH_MAX], svg[PATH_MAX], same_svg[PATH_MAX], other[PATH_MAX], page[PATH_MAX];

	(void)state;
	testdata_path(profile, sizeof(profile), "mojo/mp.mojo");
	FORMAT(svg, "%s/twice.svg", test_tmpdir());
	FORMAT(same_svg, "%s/./twice.svg", test_tmpdir());
	FORMAT(other, "%s/other.svg", test_tmpdir());
	FORMAT(page, "%s/twice.html", test_tmpdir());
	unlink(svg);
	unlink(other);
	assert_int_equal(run_pybpfprof("convert", profile, "-o", svg, "-o", same_svg, NULL), EXIT_STATUS_OK);
	assert_non_null(strstr(err_text, "warning: -o"));
	assert_non_null(strstr(err_text, "given twice"));
	assert_true(file_exists(svg));
	unlink(svg);
	expect_mistake(run_pybpfprof("convert", profile, "-o", svg, "-o", other, NULL), EXIT_STATUS_USAGE,
		       "convert writes one file");
	assert_false(file_exists(svg));
	assert_false(file_exists(other));
	/* diff refused two .svg; the same one twice is one graph */
	assert_int_equal(run_pybpfprof("diff", profile, profile, "-o", svg, "-o", same_svg, NULL), EXIT_STATUS_OK);
	assert_non_null(strstr(err_text, "given twice"));
	assert_true(file_exists(svg));
	expect_mistake(run_pybpfprof("annotate", profile, "-o", page, "-o", "elsewhere.html", NULL), EXIT_STATUS_USAGE,
		       "annotate writes one page");
}

/* record's outputs: the same file named twice is one file that reads back, and one warning. */
static void record_writes_a_repeated_output_once(void **state)
{
	char mojo[PATH_MAX], same_mojo[PATH_MAX];
	const char *first;

	(void)state;
	FORMAT(mojo, "%s/record-twice.mojo", test_tmpdir());
	FORMAT(same_mojo, "%s/./record-twice.mojo", test_tmpdir());
	unlink(mojo);
	assert_int_equal(run_pybpfprof("-q", "-o", mojo, "-o", same_mojo, "-o", mojo, "-d", "0.5", "--", "true", NULL),
			 EXIT_STATUS_OK);
	print_message("%s", err_text);
	/* one warning per repeat; nothing else is asked of stderr (a loaded host may add its own) */
	first = strstr(err_text, "given twice");
	assert_non_null(first);
	assert_non_null(strstr(first + 1, "given twice"));
	assert_null(strstr(strstr(first + 1, "given twice") + 1, "given twice"));
	assert_true(file_exists(mojo));
	assert_int_equal(run_pybpfprof("dump", mojo, NULL), EXIT_STATUS_OK);
}

/* ---- a bare run says what it does ---- */

static void whole_host_run_says_so(void **state)
{
	char out[PATH_MAX];

	(void)state;
	FORMAT(out, "%s/host.mojo", test_tmpdir());
	assert_int_equal(run_pybpfprof("-d", "1", "-o", out, NULL), EXIT_STATUS_OK);
	print_message("%s", err_text);
	assert_non_null(strstr(err_text, "every Python process on this host for 1 s"));
	assert_true(file_exists(out));
}

/* In a terminal the status line gives the scope, the time left and how to stop. */
static void status_line_in_a_terminal(void **state)
{
	char out[PATH_MAX], transcript[PATH_MAX], command[PATH_MAX * 3];
	char *argv[] = { "script", "-qec", command, transcript, NULL };
	uint8_t *text;
	size_t len;

	(void)state;
	if (access("/usr/bin/script", X_OK) != 0) {
		print_message("script (util-linux) absent: skipped\n");
		skip();
	}
	FORMAT(out, "%s/tty.mojo", test_tmpdir());
	FORMAT(transcript, "%s/tty.transcript", test_tmpdir());
	FORMAT(command, "%s -d 2.5 -o %s", pybpfprof_binary(), out);
	assert_int_equal(run_capture(argv, err_text, sizeof(err_text)), EXIT_STATUS_OK);
	text = read_whole_file(transcript, &len);
	if (!text) {
		fail_msg("no transcript at %s", transcript);
		return;
	}
	print_message("%.*s\n", (int)(len < 600 ? len : 600), (const char *)text);
	assert_non_null(strstr((char *)text, "every Python process on this host:"));
	assert_non_null(strstr((char *)text, " s left"));
	assert_non_null(strstr((char *)text, "Ctrl-C to stop"));
	assert_null(strstr((char *)text, " 1 processes"));
	assert_null(strstr((char *)text, " 1 threads"));
	free(text);
}

/* ---- formats ---- */

/* -f without -o names the default file after the format. */
static void default_file_follows_format(void **state)
{
	char dir[PATH_MAX], svg[PATH_MAX], mojo[PATH_MAX];
	char *argv[] = { (char *)pybpfprof_binary(), "-q", "-f", "svg", "-d", "0.5", "--", "true", NULL };
	pid_t pid;

	(void)state;
	FORMAT(dir, "%s/default-name", test_tmpdir());
	mkdir(dir, 0755);
	FORMAT(svg, "%s/pybpfprof.svg", dir);
	FORMAT(mojo, "%s/pybpfprof.mojo", dir);
	pid = fork();
	if (pid == 0) {
		if (chdir(dir) != 0)
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	assert_int_equal(test_wait_status(pid), 0);
	assert_true(file_exists(svg));
	assert_false(file_exists(mojo));
}

/* The "own time" lines of `top FILE`, the header left out. */
static char *own_time_section(void)
{
	char *start = strstr(out_text, "own time"), *end = start ? strstr(start, "total time") : NULL;

	assert_non_null(end);
	*end = 0;
	return strdup(start);
}

/*
 * One recording written as MOJO and as Tachyon reads back the same: a Tachyon
 * sample weighs one interval, as CPython's replay counts it, so a thread that
 * wakes now and then is not charged with the time it slept.
 */
static void tachyon_and_mojo_read_back_alike(void **state)
{
	/* Attached once the script says ready, its collector off (tests/scripts/napper.py): a
	 * collection is a GC sample, which MOJO records by a status and Tachyon by a "<GC>" leaf
	 * frame, so `top` ranks them apart by design (doc/modes.md). A launch would sample the
	 * interpreter's start-up, whose imports collect before any script can turn it off (a
	 * fresh-clone run had 2 such samples). */
	struct test_python pythons[16];
	size_t count = test_pythons(pythons, 16);
	char mojo[PATH_MAX], tachyon[PATH_MAX];
	char *from_mojo, *from_tachyon, *nap;
	const struct test_python *python = NULL;
	int out_fd, status;
	pid_t pid;

	(void)state;
	for (size_t i = 0; i < count && !python; i++)
		if (strcmp(pythons[i].label, "3.12") == 0)
			python = &pythons[i];
	if (!python && count)
		python = &pythons[0];
	if (!python)
		skip();
	FORMAT(mojo, "%s/napper.mojo", test_tmpdir());
	FORMAT(tachyon, "%s/napper.bin", test_tmpdir());
	pid = test_start_ready_script(python, "napper.py", "4", &out_fd);
	test_record_pid(python->label, "cpu", "1000", pid, "2.5", mojo, tachyon);
	close(out_fd);
	status = test_wait_status(pid);
	if (status != 0)
		fail_msg("%s: napper.py exited %d", python->label, status);

	assert_int_equal(run_pybpfprof("top", "-n", "8", mojo, NULL), EXIT_STATUS_OK);
	from_mojo = own_time_section();
	assert_int_equal(run_pybpfprof("top", "-n", "8", tachyon, NULL), EXIT_STATUS_OK);
	from_tachyon = own_time_section();
	print_message("%s: mojo\n%stachyon\n%s", python->label, from_mojo, from_tachyon);
	assert_string_equal(from_tachyon, from_mojo);
	/* The napper runs 5 ms in 405: well under 5% of the samples, never the top. */
	nap = strstr(from_tachyon, "nap_spin");
	if (nap) {
		const char *line = nap;

		while (line > from_tachyon && line[-1] != '\n')
			line--;
		assert_true(strtod(line, NULL) < 5.0);
	}
	free(from_mojo);
	free(from_tachyon);
}

/* The interval (us) a recording of `mode` with `rate` ("-F 1000", "-i 1ms", or none) writes. */
static unsigned long recorded_interval_us(const struct test_python *python, const char *mode, const char *rate_option,
					  const char *rate)
{
	char path[PATH_MAX];
	struct pf_reader *reader;
	struct pf_sample sample;
	const char *interval;
	unsigned long value;
	int status;

	FORMAT(path, "%s/rate-%s-%s.mojo", test_tmpdir(), mode, rate ? rate : "default");
	if (rate)
		status = run_pybpfprof("-q", "--mode", mode, rate_option, rate, "-o", path, "--", python->command, "-c",
				       "import time; time.sleep(0.3)", NULL);
	else
		status = run_pybpfprof("-q", "--mode", mode, "-o", path, "--", python->command, "-c",
				       "import time; time.sleep(0.3)", NULL);
	if (status != 0)
		fail_msg("--mode %s %s %s: exit %d: %s", mode, rate_option, rate ? rate : "", status, err_text);
	reader = test_open_profile(path);
	while (pf_reader_next_sample(reader, &sample) > 0)
		;
	interval = pf_reader_metadata(reader, "interval");
	assert_non_null(interval);
	value = strtoul(interval, NULL, 10);
	pf_reader_close(reader);
	return value;
}

/* Wall and gil modes read every thread at every pass: 100 Hz unless -F or -i says otherwise;
 * cpu mode 1000 Hz. */
static void default_rate_by_mode(void **state)
{
	struct test_python pythons[16];
	size_t count = test_pythons(pythons, 16);

	(void)state;
	if (!count)
		skip();
	assert_int_equal(recorded_interval_us(&pythons[0], "cpu", NULL, NULL), 1000);
	assert_int_equal(recorded_interval_us(&pythons[0], "wall", NULL, NULL), 10000);
	assert_int_equal(recorded_interval_us(&pythons[0], "gil", NULL, NULL), 10000);
	assert_int_equal(recorded_interval_us(&pythons[0], "wall", "-F", "1000"), 1000);
	assert_int_equal(recorded_interval_us(&pythons[0], "gil", "-i", "2ms"), 2000);
	assert_int_equal(recorded_interval_us(&pythons[0], "cpu", "-F", "100"), 10000);
}

/* ---- the summary after a run ---- */

/* The interpreter tests launch (3.12 where there is one); NULL: none on this machine. */
static const struct test_python *launch_python(struct test_python *pythons, size_t max)
{
	size_t count = test_pythons(pythons, max);

	for (size_t i = 0; i < count; i++)
		if (strcmp(pythons[i].label, "3.12") == 0)
			return &pythons[i];
	return count ? &pythons[0] : NULL;
}

/* Records `command` (words split on spaces) with the given options; stderr in err_text. */
static int record_command(const char *options, const char *command)
{
	char line[PATH_MAX * 6], *argv[32];

	FORMAT(line, "%s %s -- %s", pybpfprof_binary(), options, command);
	split_command(line, argv, 32);
	return run_capture_both(argv, out_text, sizeof(out_text), err_text, sizeof(err_text));
}

/*
 * After a run a user reads what was written, how much was sampled, and how to open it; the
 * profiler's internals (native walks, unwind tables and their chunks, merges, budgets) only
 * when asked with -v.
 */
static void summary_says_what_was_written_and_what_next(void **state)
{
	static const char script_text[] = "import time\n"
					  "t = time.time()\n"
					  "while time.time() - t < 0.5: pass\n";
	struct test_python pythons[16];
	const struct test_python *python = launch_python(pythons, 16);
	char script[PATH_MAX], mojo[PATH_MAX], svg[PATH_MAX], options[PATH_MAX * 3], command[PATH_MAX * 2];
	char expected[PATH_MAX * 3];
	static const char *const internals[] = { "native:", "unwind tables", "chunk", "merges", "budgets", " rows" };

	(void)state;
	if (!python)
		skip();
	FORMAT(script, "%s/summary.py", test_tmpdir());
	FORMAT(mojo, "%s/summary.mojo", test_tmpdir());
	FORMAT(svg, "%s/summary.svg", test_tmpdir());
	assert_int_equal(write_whole_file(script, script_text, sizeof(script_text) - 1), 0);
	FORMAT(options, "-F 1000 -o %s -o %s", mojo, svg);
	FORMAT(command, "%s %s", python->command, script);
	assert_int_equal(record_command(options, command), EXIT_STATUS_OK);
	print_message("%s", err_text);
	assert_non_null(strstr(err_text, "pybpfprof: wrote "));
	assert_non_null(strstr(err_text, " samples in "));
	assert_non_null(strstr(err_text, "from 1 Python process, 1 thread; "));
	FORMAT(expected, "pybpfprof: next: pybpfprof top %s; open %s in a browser\n", mojo, svg);
	assert_non_null(strstr(err_text, expected));
	for (size_t i = 0; i < sizeof(internals) / sizeof(internals[0]); i++)
		if (strstr(err_text, internals[i]))
			fail_msg("'%s' in the default summary", internals[i]);
	/* two files, the totals, at most one line of problems, the hint */
	assert_true(count_lines(err_text) <= 5);
	FORMAT(options, "-v -F 1000 -o %s -o %s", mojo, svg);
	assert_int_equal(record_command(options, command), EXIT_STATUS_OK);
	assert_non_null(strstr(err_text, "pybpfprof: unwind tables: "));
	assert_non_null(strstr(err_text, "pybpfprof: native: "));
}

/*
 * A command launched through a wrapper (a pyenv shim is a bash script running dozens of
 * subshells before it execs Python): the summary counts the processes that ran Python, and
 * -v counts the wrapper's apart.
 */
static void launcher_shells_are_not_counted_as_python(void **state)
{
	static const char app_text[] = "import time\n"
				       "t = time.time()\n"
				       "while time.time() - t < 0.5: pass\n";
	struct test_python pythons[16];
	const struct test_python *python = launch_python(pythons, 16);
	char app[PATH_MAX], wrapper[PATH_MAX], mojo[PATH_MAX], wrapper_text[PATH_MAX * 3];
	char options[PATH_MAX + 32], command[PATH_MAX + 16];

	(void)state;
	if (!python)
		skip();
	FORMAT(app, "%s/app.py", test_tmpdir());
	FORMAT(wrapper, "%s/shim.sh", test_tmpdir());
	FORMAT(mojo, "%s/shim.mojo", test_tmpdir());
	assert_int_equal(write_whole_file(app, app_text, sizeof(app_text) - 1), 0);
	/* twelve subshells that each spin a while, as a shim's do, then the interpreter in its place */
	FORMAT(wrapper_text,
	       "for i in 1 2 3 4 5 6 7 8 9 10 11 12; do ( n=0; while [ $n -lt 8000 ]; do n=$((n+1)); done ); done\n"
	       "exec %s %s\n",
	       python->command, app);
	assert_int_equal(write_whole_file(wrapper, wrapper_text, strlen(wrapper_text)), 0);
	FORMAT(options, "-F 1000 -o %s", mojo);
	FORMAT(command, "/bin/bash %s", wrapper);
	assert_int_equal(record_command(options, command), EXIT_STATUS_OK);
	print_message("%s", err_text);
	assert_non_null(strstr(err_text, "from 1 Python process, 1 thread; "));
	FORMAT(options, "-v -F 1000 -o %s", mojo);
	assert_int_equal(record_command(options, command), EXIT_STATUS_OK);
	print_message("%s", err_text);
	assert_non_null(strstr(err_text, "from 1 Python process, 1 thread; "));
	/* the shells are listed by name; one that exited before its name was read shows as "?" */
	assert_non_null(strstr(err_text, " running no Python ("));
	assert_non_null(strstr(err_text, "bash x"));
}

/* A collapsed file holds distinct stacks with their weights: top says so. */
static void top_of_collapsed_counts_stacks(void **state)
{
	static const char folded[] = "a.py:main:1;a.py:work:5 300\n"
				     "a.py:main:1;a.py:idle:9 100\n";
	char path[PATH_MAX];

	(void)state;
	FORMAT(path, "%s/two.collapsed", test_tmpdir());
	assert_int_equal(write_whole_file(path, folded, sizeof(folded) - 1), 0);
	assert_int_equal(run_pybpfprof("top", path, NULL), EXIT_STATUS_OK);
	print_message("%s", out_text);
	assert_non_null(strstr(out_text, "2 distinct stacks"));
	assert_null(strstr(out_text, "samples"));
	assert_non_null(strstr(out_text, "75.00%  work (a.py)"));
}

/* ---- live top ---- */

static char tmux_session[64];

/* The tmux session of a live-top test goes, whatever the test's outcome (and its command with it). */
static int kill_tmux_session(void **state)
{
	(void)state;
	live_top_kill(tmux_session);
	return 0;
}

/* Rows go by own share, then (equal own shares as shown) by total share: a function everything runs
 * under is never below one that no longer runs. */
static void assert_rows_ordered(const char *pane)
{
	double own_above = 101.0, total_above = 101.0;
	int rows = 0;

	for (const char *row = live_top_rows(pane); row && *row; row = strchr(row, '\n')) {
		double own, total;

		if (*row == '\n')
			row++;
		if (sscanf(row, "%lf%% %lf%%", &own, &total) != 2)
			break;
		if (own > own_above || (own == own_above && total > total_above))
			fail_msg("row %d (%.1f%% own, %.1f%% total) is below one of %.1f%% own, %.1f%% total:\n%s",
				 rows + 1, own, total, own_above, total_above, pane);
		own_above = own;
		total_above = total;
		rows++;
	}
	assert_true(rows >= 3);
}

/* The GIL share the header shows; fails if it shows none. */
static double header_gil_share(const char *pane)
{
	const char *gil = strstr(pane, "  GIL ");
	const char *titles = strstr(pane, "Function (file:line)");

	if (!gil || (titles && gil > titles))
		fail_msg("no GIL share in the header:\n%s", pane);
	return strtod(gil + strlen("  GIL "), NULL);
}

/* `pybpfprof top -- COMMAND` in a real terminal (tmux), as py-spy top shows it: the hottest function
 * leads (once the interpreter is up: a slow start only takes longer) with the line it runs (file:line), the standard library by its module's short
 * path, rows in order of own then total share (job and worker, under everything, above functions
 * that no longer run), the GIL's share in the header; the keys are on screen, q quits with status 0
 * (the command ended by q did not fail) and gives the terminal back. */
static void live_top_in_a_terminal(void **state)
{
	static const char script_text[] = "import threading\n"
					  "def hot_loop():\n"
					  "    n = 1\n"
					  "    while True:\n"
					  "        n = (n * 7 + 3) % 1000003\n"
					  "def job():\n"
					  "    hot_loop()\n"
					  "def worker():\n"
					  "    job()\n"
					  "thread = threading.Thread(target=worker)\n"
					  "thread.start()\n"
					  "thread.join()\n";
	struct test_python pythons[16];
	size_t count = test_pythons(pythons, 16);
	char script[PATH_MAX], command[PATH_MAX * 3], pane[8192];
	const char *row;

	(void)state;
	if (!live_top_tmux_present() || count == 0) {
		print_message("tmux or a Python absent: skipped\n");
		skip();
	}
	FORMAT(script, "%s/hot.py", test_tmpdir());
	assert_int_equal(write_whole_file(script, script_text, sizeof(script_text) - 1), 0);
	/* --no-native: the leaf is the Python function, whatever C helper the loop was in */
	FORMAT(command, "sh -c '%s top --no-native -F 200 -- %s %s; echo EXITED $?; sleep 60'", pybpfprof_binary(),
	       pythons[0].command, script);
	live_top_start(tmux_session, sizeof(tmux_session), "top", command);
	for (int tries = 0; tries < 120; tries++) {
		usleep(500 * 1000);
		live_top_capture(tmux_session, pane, sizeof(pane));
		if (tries >= 5 && live_top_first_row_is(pane, "hot_loop (") && strstr(pane, " (threading.py:"))
			break;
	}
	print_message("%s\n", pane);
	assert_non_null(strstr(pane, "pybpfprof top"));
	assert_non_null(strstr(pane, "q quit"));
	row = live_top_rows(pane);
	assert_non_null(row);
	/* the first row after the column titles, with the loop's line */
	if (!live_top_first_row_is(pane, "hot_loop ("))
		fail_msg("hot_loop is not on the first line:\n%s", pane);
	if (!strstr(row, "hot.py:4)") && !strstr(row, "hot.py:5)"))
		fail_msg("hot_loop's row has not the line it runs:\n%s", pane);
	/* the thread's start in the standard library, by its short name */
	assert_non_null(strstr(pane, " (threading.py:"));
	assert_null(strstr(pane, "/lib/python"));
	assert_rows_ordered(pane);
	/* one thread runs Python, holding the GIL whenever it runs */
	if (header_gil_share(pane) < 90.0)
		fail_msg("the GIL's share is %.1f%%, not about 100%%:\n%s", header_gil_share(pane), pane);
	live_top_send_keys(tmux_session, "q");
	for (int tries = 0; tries < 300 && !strstr(pane, "EXITED"); tries++) {
		usleep(100 * 1000);
		live_top_capture(tmux_session, pane, sizeof(pane));
	}
	print_message("after q:\n%s\n", pane);
	assert_non_null(strstr(pane, "EXITED 0"));
	/* the terminal is the shell's again: none of the live view is left on it */
	assert_null(strstr(pane, "q quit"));
}

/* ---- installing ---- */

/* `make install` puts the binary, its man page and its completion where a system tool's go. */
static void make_install_places_the_tool(void **state)
{
	char dest[PATH_MAX], command[PATH_MAX * 3], path[PATH_MAX + 64];
	static const char *const installed[] = { "usr/bin/pybpfprof", "usr/share/man/man1/pybpfprof.1",
						  "usr/share/bash-completion/completions/pybpfprof" };

	(void)state;
	FORMAT(dest, "%s/destdir", test_tmpdir());
	FORMAT(command, "make -s -C %s install DESTDIR=%s PREFIX=/usr >/dev/null", test_source_dir(), dest);
	assert_int_equal(system(command), 0);
	for (size_t i = 0; i < sizeof(installed) / sizeof(installed[0]); i++) {
		FORMAT(path, "%s/%s", dest, installed[i]);
		if (!file_exists(path))
			fail_msg("make install left no %s", installed[i]);
	}
	FORMAT(path, "%s/usr/bin/pybpfprof", dest);
	assert_int_equal(access(path, X_OK), 0);
	/* the man page renders, and documents the exit statuses */
	FORMAT(command, "man -l %s/usr/share/man/man1/pybpfprof.1 2>/dev/null | grep -q 'EXIT STATUS'", dest);
	if (access("/usr/bin/man", X_OK) == 0)
		assert_int_equal(system(command), 0);
}

/* What bash offers after what the user typed (the completion script, sourced as bash does). */
static void completion_offers(const char *typed, const char *expected)
{
	char command[PATH_MAX * 2];
	char *argv[] = { "bash", "-c", command, NULL };

	FORMAT(command,
	       "source %s/contrib/pybpfprof.bash-completion; COMP_WORDS=(%s); "
	       "COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _pybpfprof; echo \"${COMPREPLY[*]}\"",
	       test_source_dir(), typed);
	assert_int_equal(run_capture_both(argv, out_text, sizeof(out_text), err_text, sizeof(err_text)), 0);
	print_message("[%s] -> %s", typed, out_text);
	if (!strstr(out_text, expected))
		fail_msg("completing [%s]: expected '%s' in '%s'", typed, expected, out_text);
}

static void bash_completes_commands_and_values(void **state)
{
	(void)state;
	completion_offers("pybpfprof d", "dump");
	completion_offers("pybpfprof st", "stacks");
	completion_offers("pybpfprof --mo", "--mode");
	completion_offers("pybpfprof --mode ''", "cpu wall gil memory exception");
	completion_offers("pybpfprof --ev", "--event");
	completion_offers("pybpfprof --event page", "page-faults");
	completion_offers("pybpfprof -f sp", "speedscope");
	completion_offers("pybpfprof convert a.mojo -f gec", "gecko gecko-gz");
	completion_offers("pybpfprof convert a.mojo -f pp", "pprof");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(unknown_command_is_not_launched),
		cmocka_unit_test(command_needs_double_dash),
		cmocka_unit_test(event_mistakes_say_so),
		cmocka_unit_test(help_lists_exit_statuses),
		cmocka_unit_test(one_status_per_class),
		cmocka_unit_test(mistyped_options_and_commands_say_what_was_meant),
		cmocka_unit_test(an_output_given_twice_is_written_once),
		cmocka_unit_test(record_writes_a_repeated_output_once),
		cmocka_unit_test(whole_host_run_says_so),
		cmocka_unit_test(status_line_in_a_terminal),
		cmocka_unit_test(default_file_follows_format),
		cmocka_unit_test(tachyon_and_mojo_read_back_alike),
		cmocka_unit_test(top_of_collapsed_counts_stacks),
		cmocka_unit_test(default_rate_by_mode),
		cmocka_unit_test(summary_says_what_was_written_and_what_next),
		cmocka_unit_test(launcher_shells_are_not_counted_as_python),
		cmocka_unit_test_teardown(live_top_in_a_terminal, kill_tmux_session),
		cmocka_unit_test(make_install_places_the_tool),
		cmocka_unit_test(bash_completes_commands_and_values),
	};

	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
