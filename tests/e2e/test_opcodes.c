// SPDX-License-Identifier: MIT
/*
 * record --opcodes on real BPF (3.11-3.15): tests/scripts/opcode_work.py spends a function's
 * time on one line of instance attribute loads and another's on one line of integer binary
 * operations; `annotate` must list under each line the specialised instruction holding most of
 * it (LOAD_ATTR_INSTANCE_VALUE; the BINARY_OP_*_INT family), and under the caller's line its
 * CALL (3.12 leaves a caller's pointer inside the CALL's inline cache), `convert` Tachyon to
 * Tachyon must keep them, and CPython 3.15's reader must accept the file. Before 3.11 there
 * is no instruction to read: one warning, and no opcodes; a run writing no Tachyon file
 * warns that nothing keeps them. Needs root.
 */
#include "profile/profile.h"
#include "util/exit_status.h"
#include "testlib.h"

static char out_text[4 << 20], err_text[1 << 16];

/* The script's lines (tests/scripts/opcode_work.py). */
#define ATTR_LINE 19
#define ARITH_LINE 26
#define CALLER_LINE 38 /* main's call of arith */
/* Seconds of CPU the script runs: at 1 kHz some 3000 samples however loaded the machine. */
#define WORK_CPU_S "3"
/* A line's instructions are judged on at least this many of its samples. */
#define MIN_LINE_SAMPLES 300

static int run_pybpfprof(const char *args)
{
	char command[PATH_MAX * 4], *argv[40];
	int argc;

	snprintf(command, sizeof(command), "%s %s", pybpfprof_binary(), args);
	argc = split_command(command, argv, 39);
	argv[argc] = NULL;
	return run_capture_both(argv, out_text, sizeof(out_text), err_text, sizeof(err_text));
}

static void record(const struct test_python *python, const char *profile, bool opcodes)
{
	char args[PATH_MAX * 3];

	snprintf(args, sizeof(args), "-q -F 1000 %s-o %s -- %s %s/tests/scripts/opcode_work.py %s",
		 opcodes ? "--opcodes " : "", profile, python->command, test_source_dir(), WORK_CPU_S);
	if (run_pybpfprof(args) != 0)
		fail_msg("record: %s", err_text);
}

struct line_instrs {
	double total;          /* the line's total share */
	double top;            /* its hottest instruction's */
	char top_name[128];
	double family;         /* the instructions whose name starts with the family's */
	double instrs;         /* all its instructions' */
};

/* A share column of annotate's text (8 characters, blank for none). */
static double share_column(const char *column)
{
	char text[9];

	memcpy(text, column, 8);
	text[8] = 0;
	return strtod(text, NULL);
}

/* In `annotate --function F` text, line's row and the instruction rows under it. */
static struct line_instrs line_instructions(const char *text, int line, const char *family)
{
	struct line_instrs found = { 0 };
	char prefix[32];
	const char *at = text, *row;

	/* A row: own (8 characters), total (8), the line number, the source. */
	snprintf(prefix, sizeof(prefix), " %6d  ", line);
	while ((at = strstr(at, prefix)) && (at - text < 16 || (at - text > 16 && at[-17] != '\n')))
		at++;
	if (!at)
		fail_msg("no row for line %d in:\n%s", line, text);
	found.total = share_column(at - 8);
	/* Then its instructions: the shares, then "| NAME". */
	for (row = strchr(at, '\n'); row && row[1]; row = strchr(row + 1, '\n')) {
		const char *start = row + 1, *end = strchr(start, '\n');
		size_t len = end ? (size_t)(end - start) : strlen(start);
		double total;

		if (len < 29 || strncmp(start + 16, "          | ", 12))
			break;
		total = share_column(start + 8);
		if (!found.top_name[0]) {
			found.top = total;
			snprintf(found.top_name, sizeof(found.top_name), "%.*s", (int)(len - 28), start + 28);
		}
		if (!strncmp(start + 28, family, strlen(family)))
			found.family += total;
		found.instrs += total;
	}
	return found;
}

static bool any_sample(const struct pf_sample *sample, const void *arg)
{
	(void)sample;
	(void)arg;
	return true;
}

/* The annotate report of function in profile, and how many samples the profile has. */
static unsigned long annotate_function(const char *profile, const char *function)
{
	char args[PATH_MAX + 64];
	unsigned long samples = 0;
	const char *at;

	snprintf(args, sizeof(args), "annotate --function %s %s", function, profile);
	assert_int_equal(run_pybpfprof(args), EXIT_STATUS_OK);
	at = strstr(out_text, ": ");
	assert_non_null(at);
	sscanf(at + 2, "%lu", &samples);
	return samples;
}

static void check_line(const char *profile, const char *function, int line, const char *top_prefix,
		       const char *family, const char *label)
{
	unsigned long samples = annotate_function(profile, function);
	struct line_instrs instrs = line_instructions(out_text, line, family);

	print_message("%s %s line %d: %.2f%% of %lu samples; top %s %.2f%%, %s* %.2f%%, all instructions %.2f%%\n",
		      label, function, line, instrs.total, samples, instrs.top_name, instrs.top, family, instrs.family,
		      instrs.instrs);
	if (instrs.total / 100.0 * (double)samples < MIN_LINE_SAMPLES)
		fail_msg("line %d has %.0f samples, fewer than %d:\n%s", line, instrs.total / 100.0 * (double)samples,
			 MIN_LINE_SAMPLES, out_text);
	/* Every sample of the line was at one of its instructions. */
	assert_true(instrs.instrs > instrs.total * 0.95);
	/* The specialised instruction holds the majority of the line. */
	if (strncmp(instrs.top_name, top_prefix, strlen(top_prefix)) || !(instrs.family > instrs.total / 2))
		fail_msg("line %d: %s (%.2f%%) first, %s* %.2f%% of %.2f%%:\n%s", line, instrs.top_name, instrs.top,
			 family, instrs.family, instrs.total, out_text);
}

static void test_opcodes(void **state)
{
	struct test_python pythons[16];
	size_t count = test_pythons(pythons, 16);
	const struct test_python *python = test_wanted_python(state, pythons, count);
	char profile[PATH_MAX], copy[PATH_MAX], args[PATH_MAX * 3], *first;
	struct line_instrs before, after;
	size_t samples;

	snprintf(profile, sizeof(profile), "%s/opcodes-%s.bin", test_tmpdir(), python->label);
	snprintf(copy, sizeof(copy), "%s/opcodes-%s-copy.bin", test_tmpdir(), python->label);
	record(python, profile, true);
	/* A caller is at its call, though 3.12 leaves its pointer in the CALL's inline cache. */
	check_line(profile, "main", CALLER_LINE, "CALL", "CALL", python->label);
	check_line(profile, "attrs", ATTR_LINE, "LOAD_ATTR_INSTANCE_VALUE (LOAD_ATTR)", "LOAD_ATTR_INSTANCE_VALUE",
		   python->label);
	check_line(profile, "arith", ARITH_LINE, "BINARY_OP_", "BINARY_OP", python->label);
	before = line_instructions(out_text, ARITH_LINE, "BINARY_OP");
	first = strdup(out_text);
	assert_non_null(first);

	/* Tachyon to Tachyon keeps each frame's instruction, so the same report. */
	snprintf(args, sizeof(args), "convert %s -o %s", profile, copy);
	assert_int_equal(run_pybpfprof(args), 0);
	annotate_function(copy, "arith");
	after = line_instructions(out_text, ARITH_LINE, "BINARY_OP");
	assert_string_equal(before.top_name, after.top_name);
	assert_true(before.family == after.family && before.instrs == after.instrs);
	assert_string_equal(strstr(first, "\n== "), strstr(out_text, "\n== "));
	free(first);

	/* CPython 3.15's reader takes the file with its opcodes feature. */
	samples = test_count_samples(profile, any_sample, NULL);
	assert_cpython_accepts(profile, samples);
}

/* 3.10 has no inline bytecode to read: the run says so once, and its frames carry none. */
static void test_opcodes_before_311(void **state)
{
	struct test_python pythons[16];
	size_t count = test_pythons(pythons, 16);
	const struct test_python *python = test_wanted_python(state, pythons, count);
	char profile[PATH_MAX], args[PATH_MAX * 3];
	const char *warning;

	snprintf(profile, sizeof(profile), "%s/opcodes-%s.bin", test_tmpdir(), python->label);
	snprintf(args, sizeof(args), "-F 1000 --opcodes -o %s -- %s %s/tests/scripts/opcode_work.py 0.3", profile,
		 python->command, test_source_dir());
	if (run_pybpfprof(args) != 0)
		fail_msg("record: %s", err_text);
	warning = strstr(err_text, "--opcodes needs 3.11 or later");
	assert_non_null(warning);
	assert_null(strstr(warning + 1, "--opcodes needs 3.11 or later"));
	annotate_function(profile, "arith");
	assert_null(strstr(out_text, "| "));
	assert_null(strstr(err_text, "keeps the instructions"));

	/* Only Tachyon keeps them: a run writing none says so before it starts. */
	snprintf(profile, sizeof(profile), "%s/opcodes-%s.mojo", test_tmpdir(), python->label);
	snprintf(args, sizeof(args), "-F 1000 --opcodes -o %s -- %s %s/tests/scripts/opcode_work.py 0.1", profile,
		 python->command, test_source_dir());
	if (run_pybpfprof(args) != 0)
		fail_msg("record: %s", err_text);
	assert_non_null(strstr(err_text, "--opcodes: only a Tachyon file (-o NAME.bin) keeps the instructions"));
}

int main(void)
{
	static const char *const labels[] = { "3.11", "3.12", "3.13", "3.14", "3.15" };
	static const char *const old_labels[] = { "3.10" };
	static const struct test_per_python kinds[] = { { "opcodes_", test_opcodes } };
	static const struct test_per_python old_kinds[] = { { "opcodes_before_311_", test_opcodes_before_311 } };

	return test_run_per_python("opcodes", labels, sizeof(labels) / sizeof(labels[0]), kinds, 1) +
	       test_run_per_python("opcodes_old", old_labels, 1, old_kinds, 1);
}
