// SPDX-License-Identifier: MIT
/* symbolize/symbolize_py without a live interpreter: no layout, or a process gone, is an error. */
#include <errno.h>
#include <sys/wait.h>

#include "symbolize/symbolize_py.h"
#include "python/py_offsets.h"
#include "testlib.h"

/* Without any target: bad input is refused and nothing is cached. */
static void test_no_process(void **state)
{
	struct py_proc_config config = { 0 };
	struct symbolize_py_cache *cache = symbolize_py_cache_new();
	struct symbolize_py_stats stats;
	struct pf_frame frame;
	pid_t gone;
	int status;

	(void)state;
	assert_non_null(cache);
	config.version_hex = 0x030c01f0;
	config.off.code_argcount = PY_OFF_NONE; /* no layout at all: -EINVAL before any read */
	assert_int_equal(symbolize_py_resolve(cache, getpid(), &config, 0x1000, 1, 0, &frame), -EINVAL);

	gone = fork();
	assert_true(gone >= 0);
	if (gone == 0)
		_exit(0);
	waitpid(gone, &status, 0);
	config.off.code_argcount = 8;
	config.off.code_firstlineno = 12;
	config.off.code_filename = 16;
	config.off.code_name = 24;
	config.off.code_qualname = PY_OFF_NONE;
	config.off.code_linetable = 32;
	assert_int_equal(symbolize_py_resolve(cache, gone, &config, 0x10000, 1, 0, &frame), -ESRCH);
	symbolize_py_cache_stats(cache, &stats);
	assert_int_equal(stats.read_errors, 2);
	assert_int_equal(stats.misses, 2);
	assert_int_equal(stats.hits, 0);
	symbolize_py_forget_pid(cache, gone);
	symbolize_py_cache_free(cache);
	symbolize_py_cache_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_process),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
