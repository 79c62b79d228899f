// SPDX-License-Identifier: MIT
/*
 * One error-text convention (doc/internals.md, "Error messages"): what a user reads begins
 * "pybpfprof: " and then the command, whichever part of the command line went wrong; the
 * lint (tools/check-error-text.sh) keeps the tree so and names each way out of it, without
 * refusing the lines that follow it.
 */
#include "testlib.h"

#include "util/exit_status.h"

#include <stdarg.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define CHECK_ERROR_TEXT "tools/check-error-text.sh"

static char out_text[1 << 16], err_text[1 << 14];

/* Runs the check on dir; its output goes to out. Returns the exit status. */
static int run_check(const char *dir, char *out, size_t len)
{
	char command[512];

	snprintf(command, sizeof(command), "%s %s", CHECK_ERROR_TEXT, dir);
	return run_shell(command, out, len);
}

static void write_file(const char *path, const char *text)
{
	FILE *file = fopen(path, "w");

	assert_non_null(file);
	assert_int_equal(fputs(text, file) >= 0, 1);
	assert_int_equal(fclose(file), 0);
}

static void the_tree_keeps_one_error_convention(void **state)
{
	char out[1 << 14];

	(void)state;
	if (run_check("user", out, sizeof(out)) != 0)
		print_message("%s", out);
	assert_int_equal(run_check("user", out, sizeof(out)), 0);
	assert_non_null(strstr(out, "ok"));
}

/* Each way a line has left the convention, one per line of a file: every line is named. */
static const char outliers[] =
	"argp_error(state, \"give one profile\");\n"
	"perror(\"open\");\n"
	"err(1, \"cannot open %s\", path);\n"
	"warnx(\"no such process\");\n"
	"error(0, errno, \"cannot read\");\n"
	"fprintf(stderr, \"pybpfprof dump: expected exactly one FILE\\n\");\n"
	"fputs(\"pybpfprof:cannot open\", stderr);\n"
	"fprintf(stderr, \"%s: unknown format '\", program);\n"
	"fprintf(stderr, \"%s: warning: -o given twice\\n\", argv[0]);\n"
	"report_error(\"Error: cannot write %s\", path);\n"
	"fprintf(stderr, \"pybpfprof: WARNING: no symbols\\n\");\n"
	"return errbuf_set(error, -EINVAL, \"%s: bad header.\", path);\n"
	"fprintf(stderr, \"pybpfprof: cannot open %s.\\n\", path);\n";

/* Lines that follow it, or are no message at all: none is named. */
static const char conforming[] =
	"fprintf(stderr, \"pybpfprof: dump: %s: cannot open: %s\\n\", path, strerror(errno));\n"
	"report_error(\"warning: BPF run-time statistics are not available\");\n"
	"options_usage_error(state, \"invalid -n '%s' (e.g. 3)\", arg);\n"
	"fputs(\"\\r\\033[Kpybpfprof: building unwind tables ...\", stderr);\n"
	"printf(\"pybpfprof %s\\n\", PYBPFPROF_VERSION);\n"
	"message = writer->ops->error(writer->state);\n"
	"return errbuf_set(error, err, \"%s: %s\", path, strerror(-err)); /* an error (its text) */\n"
	"static const char *(*error)(void *state);\n"
	"fprintf(stderr, \"  %zu processes throttled (--max-overhead)\", count);\n"
	"options_print_prefix(stderr, program);\n";

static void each_way_out_is_named_and_the_convention_is_not(void **state)
{
	char dir[256], path[300], out[1 << 14], needle[64];
	size_t lines = 0;

	(void)state;
	FORMAT(dir, "%s/error_text", test_tmpdir());
	FORMAT(path, "rm -rf %s && mkdir -p %s/cli", dir, dir);
	assert_int_equal(system(path), 0);
	FORMAT(path, "%s/cli/outliers.c", dir);
	write_file(path, outliers);
	FORMAT(path, "%s/cli/conforming.c", dir);
	write_file(path, conforming);
	assert_int_equal(run_check(dir, out, sizeof(out)), 1);
	for (const char *c = outliers; *c; c++)
		lines += *c == '\n';
	for (size_t line = 1; line <= lines; line++) {
		FORMAT(needle, "cli/outliers.c:%zu: ", line);
		if (!strstr(out, needle))
			fail_msg("line %zu of the outliers is not named in: %s", line, out);
	}
	if (strstr(out, "conforming.c"))
		fail_msg("a line that follows the convention is named in: %s", out);
}

/* Runs pybpfprof with the given arguments (NULL-terminated); stdout and stderr captured. */
#define run_pybpfprof(...) run_pybpfprof_capture(out_text, sizeof(out_text), err_text, sizeof(err_text), __VA_ARGS__)

/* stderr's first line is expected, exactly. */
static void expect_first_line(const char *expected)
{
	size_t len = strcspn(err_text, "\n");

	print_message("%s", err_text);
	if (len != strlen(expected) || strncmp(err_text, expected, len) != 0)
		fail_msg("expected '%s' first in: %s", expected, err_text);
}

/* A mistake on a command's line says "pybpfprof: CMD: ", whether argp's parse, the "did you
 * mean" hint or a warning found it; argp's line naming --help stays, and so does the status. */
static void command_line_mistakes_say_the_prefix_then_the_command(void **state)
{
	char missing[PATH_MAX], svg[PATH_MAX];

	(void)state;
	FORMAT(missing, "%s/missing.mojo", test_tmpdir());
	FORMAT(svg, "%s/twice.svg", test_tmpdir());
	unlink(missing);
	assert_int_equal(run_pybpfprof("dump", NULL), EXIT_STATUS_USAGE);
	expect_first_line("pybpfprof: dump: expected exactly one FILE");
	assert_non_null(strstr(err_text, "Try `pybpfprof dump --help'"));
	assert_int_equal(run_pybpfprof("stacks", NULL), EXIT_STATUS_USAGE);
	expect_first_line("pybpfprof: stacks: expected exactly one PID");
	assert_int_equal(run_pybpfprof("top", "-n", "x", missing, NULL), EXIT_STATUS_USAGE);
	expect_first_line("pybpfprof: top: invalid -n 'x' (a number of lines, 1 or more)");
	assert_int_equal(run_pybpfprof("top", "--lnies", "3", missing, NULL), EXIT_STATUS_USAGE);
	expect_first_line("pybpfprof: top: unrecognized option '--lnies'; did you mean --lines?");
	assert_int_equal(run_pybpfprof("convert", "-f", "svgz", missing, NULL), EXIT_STATUS_USAGE);
	expect_first_line("pybpfprof: convert: unknown format 'svgz' (use mojo, tachyon, collapsed, svg, pprof, "
			  "speedscope, pstats, gecko, gecko-gz or jsonl); did you mean svg?");
	run_pybpfprof("diff", "-o", svg, "-o", svg, missing, missing, NULL);
	assert_non_null(strstr(err_text, "pybpfprof: diff: warning: -o "));
	/* the profiling run has no command word: the prefix alone */
	assert_int_equal(run_pybpfprof("-F", "0", "-p", "1", NULL), EXIT_STATUS_USAGE);
	expect_first_line("pybpfprof: invalid frequency '0' (1-100000 Hz)");
	assert_non_null(strstr(err_text, "Try `pybpfprof --help'"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(the_tree_keeps_one_error_convention),
		cmocka_unit_test(each_way_out_is_named_and_the_convention_is_not),
		cmocka_unit_test(command_line_mistakes_say_the_prefix_then_the_command),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
