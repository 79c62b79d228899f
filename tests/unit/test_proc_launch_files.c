// SPDX-License-Identifier: MIT
/* proc/launch_files: the files a command maps before its first instruction, found as exec and ld.so find them. */
#include "testlib.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "parser/parser_protocol.h"
#include "proc/launch_files.h"

static char paths[LAUNCH_FILES_MAX][PATH_MAX];

/* A #! script is its interpreter; `#!/usr/bin/env NAME` is NAME on PATH. */
static void test_scripts(void **state)
{
	char script[PATH_MAX], chained[PATH_MAX];
	char *argv[] = { chained, NULL };
	size_t count;

	(void)state;
	FORMAT(script, "%s/launch-files-%d.sh", test_tmpdir(), (int)getpid());
	FORMAT(chained, "%s/launch-files-%d-env", test_tmpdir(), (int)getpid());
	assert_int_equal(write_whole_file(script, "#!/bin/sh -e\necho hi\n", 21), 0);
	assert_int_equal(chmod(script, 0755), 0);
	argv[0] = script;
	count = launch_files_find(argv, paths, LAUNCH_FILES_MAX);
	assert_true(count >= 1);
	assert_string_equal(paths[0], "/bin/sh");
	assert_int_equal(write_whole_file(chained, "#!/usr/bin/env sh\n", 18), 0);
	assert_int_equal(chmod(chained, 0755), 0);
	argv[0] = chained;
	setenv("PATH", "/usr/bin:/bin", 1);
	count = launch_files_find(argv, paths, LAUNCH_FILES_MAX);
	assert_true(count >= 1);
	assert_string_equal(paths[0], "/usr/bin/sh");
	unlink(script);
	unlink(chained);
}

/* What exec would not run gives nothing: the command fails as it would have. */
static void test_not_found(void **state)
{
	char *missing[] = { "pybpfprof-no-such-command", NULL };
	char *empty[] = { "", NULL };

	(void)state;
	assert_int_equal(launch_files_find(missing, paths, LAUNCH_FILES_MAX), 0);
	assert_int_equal(launch_files_find(empty, paths, LAUNCH_FILES_MAX), 0);
	assert_int_equal(launch_files_find(missing, paths, 0), 0);
}

/* The peak RSS of this process so far, in KiB. */
/* What a lying worker might answer about an executable's libraries: refused whole. */
static void test_lying_dynamic_names_are_refused(void **state)
{
	struct parser_dynamic_names names;
	struct {
		struct parser_dynamic_head head;
		char names[16];
	} answer;

	(void)state;
	answer.head = (struct parser_dynamic_head){ .needed_count = 1, .names_len = 6 };
	memcpy(answer.names, "\0\0libc", 6);
	/* no NUL at the end */
	assert_int_equal(parser_dynamic_check(&answer, sizeof(answer.head) + 6, &names), -EBADMSG);
	memcpy(answer.names, "\0\0libc\0", 7 + 1);
	answer.head.names_len = 7;
	assert_int_equal(parser_dynamic_check(&answer, sizeof(answer.head) + 7, &names), 0);
	assert_string_equal(names.needed, "libc");
	/* a length that does not add up, a count that does not match the names, an empty name */
	assert_int_equal(parser_dynamic_check(&answer, sizeof(answer.head) + 6, &names), -EBADMSG);
	answer.head.needed_count = 2;
	assert_int_equal(parser_dynamic_check(&answer, sizeof(answer.head) + 7, &names), -EBADMSG);
	memcpy(answer.names, "\0\0\0", 3);
	answer.head = (struct parser_dynamic_head){ .needed_count = 1, .names_len = 3 };
	assert_int_equal(parser_dynamic_check(&answer, sizeof(answer.head) + 3, &names), -EBADMSG);
	answer.head = (struct parser_dynamic_head){ .needed_count = PARSER_MAX_NEEDED + 1, .names_len = 3 };
	assert_int_equal(parser_dynamic_check(&answer, sizeof(answer.head) + 3, &names), -EBADMSG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scripts),
		cmocka_unit_test(test_not_found),
		cmocka_unit_test(test_lying_dynamic_names_are_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
