// SPDX-License-Identifier: MIT
/* target/launch_files on pyenv's CPython 3.12 (root: pyenv's folder): its libpython, found through RUNPATH. */
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

/* A library found through the executable's RUNPATH: pyenv's shared libpython. */
static void test_runpath(void **state)
{
	char python[PATH_MAX], libpython[PATH_MAX];
	char *argv[] = { python, NULL };
	size_t count;

	(void)state;
	FORMAT(python, "%s/3.12.1/bin/python3.12", test_pyenv_versions());
	FORMAT(libpython, "%s/3.12.1/lib/libpython3.12.so", test_pyenv_versions());
	if (!file_exists(python)) {
		print_message("%s is absent; skipped\n", python);
		return;
	}
	count = launch_files_find(argv, paths, LAUNCH_FILES_MAX);
	assert_string_equal(paths[0], python);
	assert_true(found(count, libpython));
	assert_true(found(count, "/libc.so.6"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_runpath),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
