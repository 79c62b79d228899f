// SPDX-License-Identifier: MIT
/* proc/launch_files: the files a command maps before its first instruction, found as exec and ld.so find them. */
#include "testlib.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc/launch_files.h"

static char paths[LAUNCH_FILES_MAX][PATH_MAX];

static bool found(size_t count, const char *part)
{
	for (size_t i = 0; i < count; i++)
		if (strstr(paths[i], part))
			return true;
	return false;
}

/* A name on PATH is the file execvp runs; the libraries it names come after it. */
static void test_name_on_path(void **state)
{
	char *argv[] = { "sh", "-c", "true", NULL };
	char *old = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
	char real[PATH_MAX];
	size_t count;

	(void)state;
	setenv("PATH", "/nonexistent:/usr/bin:/bin", 1);
	count = launch_files_find(argv, paths, LAUNCH_FILES_MAX);
	assert_true(count >= 2);
	assert_string_equal(paths[0], "/usr/bin/sh");
	assert_true(found(count, "/libc.so.6"));
	for (size_t i = 1; i < count; i++)
		assert_non_null(realpath(paths[i], real));
	if (old)
		setenv("PATH", old, 1);
	free(old);
}

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_name_on_path),
		cmocka_unit_test(test_scripts),
		cmocka_unit_test(test_not_found),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
