// SPDX-License-Identifier: MIT
/*
 * The long whole-host run, tests/soak/soak.sh, for $SOAK_MINUTES (5 unless set; `make soak`
 * runs it by hand for longer): about 200 short Python processes a minute, one in ten hostile
 * (the attack zoo, as nobody), under a profiler with no target inside a 512 MiB memory cgroup.
 * It checks what a user would: the profiler never killed and still alive, its peak RSS under
 * 150 MB, every benign process in the profile, at most 1% of the samples lost, RSS and CPU flat
 * over the run, the budgets in the summary, each attack seen by the profiler. Its report (with
 * the RSS and CPU figures) goes to this test's output.
 */
#include "testlib.h"

#define DEFAULT_MINUTES "5"

static void whole_host_soak(void **state)
{
	const char *minutes = getenv("SOAK_MINUTES");
	char script[PATH_MAX];
	char *argv[] = { "bash", script, (char *)(minutes && *minutes ? minutes : DEFAULT_MINUTES), NULL };
	pid_t soak;

	(void)state;
	FORMAT(script, "%s/tests/soak/soak.sh", test_source_dir());
	fflush(stdout);
	soak = test_spawn(argv, NULL, NULL);
	assert_true(soak > 0);
	assert_int_equal(test_wait_status(soak), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(whole_host_soak),
	};

	if (geteuid() != 0) {
		fprintf(stderr, "test_soak: needs root (real BPF, hostile processes as nobody)\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
