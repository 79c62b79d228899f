// SPDX-License-Identifier: MIT
/* cli/options.c: the values every command reads alike (pid lists, modes, rates, durations,
 * compression), the nearest option or command for a typo, and when two outputs are one file.
 * No root, no BPF. */
#include "testlib.h"

#include "cli/options.h"
#include "profile/profile.h"

#include <errno.h>
#include <sys/stat.h>

static void pid_lists_take_every_pid_and_name_the_bad_one(void **state)
{
	pid_t pids[4];
	size_t count = 0;
	const char *bad;
	int bad_len;

	(void)state;
	assert_int_equal(options_parse_pid_list("1,22,333", pids, &count, 4, &bad, &bad_len), 0);
	assert_int_equal(count, 3);
	assert_int_equal(pids[0], 1);
	assert_int_equal(pids[2], 333);
	/* repeated -p add to the list */
	assert_int_equal(options_parse_pid_list("4", pids, &count, 4, &bad, &bad_len), 0);
	assert_int_equal(count, 4);
	assert_int_equal(options_parse_pid_list("5", pids, &count, 4, &bad, &bad_len), -E2BIG);
	assert_int_equal(count, 4);
	assert_int_equal(pids[0], 1);
	count = 0;
	assert_int_equal(options_parse_pid_list("7,x8,9", pids, &count, 4, &bad, &bad_len), -EINVAL);
	assert_int_equal(bad_len, 2);
	assert_memory_equal(bad, "x8", 2);
	static const char *const refused[] = { "", ",", "1,", ",1", "0", "-1", "+1", " 1", "1 ",
					       "2147483648", "99999999999999999999999" };
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		count = 0;
		if (options_parse_pid_list(refused[i], pids, &count, 4, &bad, &bad_len) != -EINVAL)
			fail_msg("'%s' taken as a pid list", refused[i]);
	}
}

static void counts_are_digits_within_bounds(void **state)
{
	unsigned long long value;

	(void)state;
	assert_int_equal(options_parse_count("10", 1, 10, &value), 0);
	assert_int_equal(value, 10);
	assert_int_equal(options_parse_count("11", 1, 10, &value), -EINVAL);
	assert_int_equal(options_parse_count("0", 1, 10, &value), -EINVAL);
	assert_int_equal(options_parse_count("-1", 0, 10, &value), -EINVAL);
	assert_int_equal(options_parse_count("18446744073709551616", 0, UINT64_MAX, &value), -EINVAL);
	assert_int_equal(options_parse_count("3x", 0, 10, &value), -EINVAL);
}

static void modes_are_the_recording_ones_and_say_so(void **state)
{
	enum session_mode mode = SESSION_MODE_STACKS;

	(void)state;
	assert_int_equal(options_parse_mode("wall", &mode), 0);
	assert_int_equal(mode, SESSION_MODE_WALL);
	assert_int_equal(options_parse_mode("gil", &mode), 0);
	assert_int_equal(mode, SESSION_MODE_GIL);
	assert_int_equal(options_parse_mode("cpu", &mode), 0);
	assert_int_equal(mode, SESSION_MODE_CPU);
	assert_int_equal(options_parse_mode("memory", &mode), 0);
	assert_int_equal(mode, SESSION_MODE_MEMORY);
	assert_int_equal(options_parse_mode("exception", &mode), 0);
	assert_int_equal(mode, SESSION_MODE_EXCEPTION);
	assert_int_equal(options_parse_mode("stacks", &mode), -EINVAL);
	assert_int_equal(options_parse_mode("Wall", &mode), -EINVAL);
	assert_string_equal(options_mode_names(), "cpu, wall, gil, memory or exception");
}

static void rates_take_k_and_hz(void **state)
{
	unsigned hz = 0;

	(void)state;
	assert_int_equal(options_parse_rate_hz("997", 100000, &hz), 0);
	assert_int_equal(hz, 997);
	assert_int_equal(options_parse_rate_hz("1k", 100000, &hz), 0);
	assert_int_equal(hz, 1000);
	assert_int_equal(options_parse_rate_hz("100Hz", 100000, &hz), 0);
	assert_int_equal(hz, 100);
	assert_int_equal(options_parse_rate_hz("2kHz", 100000, &hz), 0);
	assert_int_equal(hz, 2000);
	assert_int_equal(options_parse_rate_hz("100k", 100000, &hz), 0);
	assert_int_equal(hz, 100000);
	static const char *const refused[] = { "", "0", "0k", "101k", "100001", "k", "Hz", "1.5k", "-1",
					       "1kk", "10 Hz", "1M", "10s" };
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		if (options_parse_rate_hz(refused[i], 100000, &hz) != -EINVAL)
			fail_msg("'%s' taken as a rate", refused[i]);
}

static void durations_take_seconds_milliseconds_and_minutes(void **state)
{
	double seconds = 0, interval_us = 0;

	(void)state;
	assert_int_equal(options_parse_seconds("3.5", &seconds), 0);
	assert_true(seconds == 3.5);
	assert_int_equal(options_parse_seconds("2s", &seconds), 0);
	assert_true(seconds == 2);
	assert_int_equal(options_parse_seconds("500ms", &seconds), 0);
	assert_true(seconds == 0.5);
	assert_int_equal(options_parse_seconds("5m", &seconds), 0);
	assert_true(seconds == 300);
	static const char *const refused[] = { "", "0", "-1", "1h", "inf", "nan", "1e400", "s", " 1", "2 s" };
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		if (options_parse_seconds(refused[i], &seconds) != -EINVAL)
			fail_msg("'%s' taken as a duration", refused[i]);
	assert_int_equal(options_parse_interval_us("1ms", &interval_us), 0);
	assert_true(interval_us == 1000);
	assert_int_equal(options_parse_interval_us("250", &interval_us), 0);
	assert_true(interval_us == 250);
	assert_int_equal(options_parse_interval_us("10m", &interval_us), -EINVAL);
}

static void compression_is_a_level_or_none(void **state)
{
	int level = -1;

	(void)state;
	assert_int_equal(options_parse_compression("none", &level), 0);
	assert_int_equal(level, 0);
	assert_int_equal(options_parse_compression("22", &level), 0);
	assert_int_equal(level, 22);
	assert_int_equal(options_parse_compression("0", &level), -EINVAL);
	assert_int_equal(options_parse_compression("23", &level), -EINVAL);
}

static void edit_distance_counts_a_swap_as_one(void **state)
{
	(void)state;
	assert_int_equal(options_edit_distance("output", 6, "output", 6), 0);
	assert_int_equal(options_edit_distance("ouptut", 6, "output", 6), 1);
	assert_int_equal(options_edit_distance("outpt", 5, "output", 6), 1);
	assert_int_equal(options_edit_distance("", 0, "top", 3), 3);
	assert_int_equal(options_edit_distance("touch", 5, "top", 3), 3);
}

static void nearest_is_suggested_only_when_near(void **state)
{
	static const char *const commands[] = { "record", "dump", "convert", "top", "diff", "annotate", "stacks" };
	static const char *const options[] = { "output", "format", "frequency", "no-native", "no-kernel" };

	(void)state;
	assert_string_equal(options_nearest("dupm", 4, commands, 7), "dump");
	assert_string_equal(options_nearest("stack", 5, commands, 7), "stacks");
	assert_string_equal(options_nearest("anotate", 7, commands, 7), "annotate");
	assert_null(options_nearest("touch", 5, commands, 7));
	assert_null(options_nearest("python3", 7, commands, 7));
	assert_string_equal(options_nearest("frequncy", 8, options, 5), "frequency");
	assert_string_equal(options_nearest("no-kernal", 9, options, 5), "no-kernel");
	assert_null(options_nearest("bogus", 5, options, 5));
}

static const struct argp_option test_options[] = {
	{ "output", 'o', "FILE", 0, "", 0 },
	{ "quiet", 'q', NULL, 0, "", 0 },
	{ "native", 0x100, "all", OPTION_ARG_OPTIONAL, "", 0 },
	{ "ringbuf-mb", 0x101, "MB", OPTION_HIDDEN, "", 0 },
	{ 0 },
};

static int refuse(const char *first, ...)
{
	char *argv[16] = { (char *)"pybpfprof" };
	int argc = 1;
	va_list args;

	va_start(args, first);
	for (const char *arg = first; arg && argc < 15; arg = va_arg(args, const char *))
		argv[argc++] = (char *)arg;
	va_end(args);
	return options_refuse_misspelled(test_options, argc, argv, "pybpfprof", false);
}

static void a_near_long_option_is_refused_values_are_not(void **state)
{
	(void)state;
	assert_int_equal(refuse("--ouptut", "a.mojo", NULL), -EINVAL);
	assert_int_equal(refuse("--ouptut=a.mojo", NULL), -EINVAL);
	assert_int_equal(refuse("-q", "--quite", NULL), -EINVAL);
	/* known, abbreviated, argp's own, far from anything (argp says those), or a value */
	assert_int_equal(refuse("--output", "a.mojo", "--out=b.mojo", "--help", "--usage", NULL), 0);
	assert_int_equal(refuse("--bogus", NULL), 0);
	assert_int_equal(refuse("-o", "--quite", NULL), 0);
	assert_int_equal(refuse("--output", "--quite", NULL), 0);
	assert_int_equal(refuse("-qo", "--quite", NULL), 0);
	assert_int_equal(refuse("--", "--ouptut", NULL), 0);
	/* an optional value is never the next word */
	assert_int_equal(refuse("--native", "--quite", NULL), -EINVAL);
	/* in order, as record parses: argp stops at a stray word, and so does the look */
	assert_int_equal(options_refuse_misspelled(test_options, 3, (char *[]){ "pybpfprof", "app.py", "--quite", NULL },
						   "pybpfprof", true), 0);
	assert_int_equal(options_refuse_misspelled(test_options, 3, (char *[]){ "pybpfprof", "app.py", "--quite", NULL },
						   "pybpfprof", false), -EINVAL);
}

static void same_output_sees_through_spelling(void **state)
{
	char dir[PATH_MAX], link[PATH_MAX], a[PATH_MAX], b[PATH_MAX];

	(void)state;
	assert_true(options_same_output("a.mojo", "a.mojo"));
	assert_true(options_same_output("a.mojo", "./a.mojo"));
	assert_false(options_same_output("a.mojo", "b.mojo"));
	assert_false(options_same_output("a.mojo", "a.MOJO"));
	FORMAT(dir, "%s/same-output", test_tmpdir());
	FORMAT(link, "%s/same-output-link", test_tmpdir());
	mkdir(dir, 0700);
	unlink(link);
	assert_int_equal(symlink(dir, link), 0);
	FORMAT(a, "%s/run.svg", dir);
	FORMAT(b, "%s/./run.svg", link);
	assert_true(options_same_output(a, b));
	FORMAT(b, "%s/other/run.svg", dir);
	assert_false(options_same_output(a, b));
	unlink(link);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pid_lists_take_every_pid_and_name_the_bad_one),
		cmocka_unit_test(counts_are_digits_within_bounds),
		cmocka_unit_test(modes_are_the_recording_ones_and_say_so),
		cmocka_unit_test(rates_take_k_and_hz),
		cmocka_unit_test(durations_take_seconds_milliseconds_and_minutes),
		cmocka_unit_test(compression_is_a_level_or_none),
		cmocka_unit_test(edit_distance_counts_a_swap_as_one),
		cmocka_unit_test(nearest_is_suggested_only_when_near),
		cmocka_unit_test(a_near_long_option_is_refused_values_are_not),
		cmocka_unit_test(same_output_sees_through_spelling),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
