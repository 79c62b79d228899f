// SPDX-License-Identifier: MIT
/* proc/launch: the launched command runs only when the profiler says go, never because it died. */
#include "testlib.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "proc/launch.h"

#define ROUNDS 40

static char marker[PATH_MAX];
static char *touch_marker[] = { "/bin/sh", "-c", "echo ran > \"$0\"", marker, NULL };

static bool marker_exists(void)
{
	struct stat st;

	return stat(marker, &st) == 0;
}

/* Every process of the round, the orphaned command too (we are its subreaper). */
static void reap_all(void)
{
	while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
		;
}

/*
 * A profiler that prepares the command, then is killed: at once (the command
 * has not yet reached its gate; one CPU, so the profiler runs first after
 * fork) or once prepare returned and told us so.
 */
static void profiler_killed(bool at_once)
{
	int told[2];
	pid_t profiler;
	char byte;

	assert_int_equal(pipe(told), 0);
	profiler = fork();
	assert_true(profiler >= 0);
	if (profiler == 0) {
		struct launch launch;
		char err[256];
		cpu_set_t one;

		close(told[0]);
		CPU_ZERO(&one);
		CPU_SET(sched_getcpu() >= 0 ? sched_getcpu() : 0, &one);
		sched_setaffinity(0, sizeof(one), &one);
		if (launch_prepare(&launch, touch_marker, err, sizeof(err)))
			_exit(1);
		if (at_once)
			raise(SIGKILL);
		if (write(told[1], "p", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(told[1]);
	if (!at_once) {
		assert_int_equal(read(told[0], &byte, 1), 1);
		kill(profiler, SIGKILL);
	}
	close(told[0]);
	reap_all();
}

static void test_profiler_death_never_runs_command(void **state)
{
	(void)state;
	snprintf(marker, sizeof(marker), "%s/ran-unprofiled", test_tmpdir());
	unlink(marker);
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	for (int round = 0; round < ROUNDS; round++) {
		profiler_killed(round % 2 == 0);
		if (marker_exists())
			fail_msg("round %d: the command ran after its profiler was killed", round);
	}
	prctl(PR_SET_CHILD_SUBREAPER, 0);
}

/* Cancelled (set-up failed): the command does not run; started: it does. */
static void test_cancel_and_start(void **state)
{
	struct launch launch;
	char err[256];

	(void)state;
	snprintf(marker, sizeof(marker), "%s/ran", test_tmpdir());
	unlink(marker);
	assert_int_equal(launch_prepare(&launch, touch_marker, err, sizeof(err)), 0);
	launch_cancel(&launch);
	assert_false(marker_exists());
	assert_int_equal(launch_prepare(&launch, touch_marker, err, sizeof(err)), 0);
	assert_int_equal(launch_start(&launch, touch_marker, err, sizeof(err)), 0);
	launch_wait(&launch);
	assert_int_equal(launch_exit_code(&launch), 0);
	assert_true(marker_exists());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_profiler_death_never_runs_command),
		cmocka_unit_test(test_cancel_and_start),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
