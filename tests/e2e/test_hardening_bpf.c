// SPDX-License-Identifier: MIT
/*
 * The BPF target map does not leak: a target and the child it forked leave it
 * when they exit even if userspace never reads their notices; an entry whose
 * process is gone without an exit (added too late) is swept by the
 * reconciliation; notices lost to a full proc_events ring are counted.
 */
#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>

#include "testlib.h"

#include "sampler/bpf_sampler.h"

extern char **environ;

static struct bpf_sampler *open_sampler(bool watch_exec)
{
	struct bpf_sampler_options options = { .frequency_hz = 99, .follow_forks = true, .watch_exec = watch_exec };
	struct bpf_sampler *sampler = NULL;
	char error[512] = "";

	if (bpf_sampler_open(&sampler, &options, error, sizeof(error)))
		fail_msg("bpf_sampler_open: %s", error);
	return sampler;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* A target forks (BPF copies its entry to the child), both exit; nobody consumes the notices. */
static void exits_leave_the_target_map(void **state)
{
	struct bpf_sampler *sampler = open_sampler(false);
	int go[2];
	pid_t target;
	char byte = 0;

	(void)state;
	assert_int_equal(bpf_sampler_target_count(sampler), 0);
	assert_int_equal(pipe(go), 0);
	target = fork();
	assert_true(target >= 0);
	if (target == 0) {
		pid_t child;

		close(go[1]);
		if (read(go[0], &byte, 1) != 1)
			_exit(1);
		child = fork();
		if (child == 0) {
			sleep_ms(50);
			_exit(0);
		}
		waitpid(child, NULL, 0);
		_exit(0);
	}
	close(go[0]);
	assert_int_equal(bpf_sampler_add_target(sampler, target, NULL), 0);
	assert_int_equal(bpf_sampler_target_count(sampler), 1);
	assert_int_equal(write(go[1], "g", 1), 1);
	close(go[1]);
	waitpid(target, NULL, 0);
	assert_int_equal(bpf_sampler_target_count(sampler), 0);
	bpf_sampler_close(sampler);
}

/* An entry made after its process exited has no exit to clear it: the sweep does. */
static void reconciliation_drops_gone_processes(void **state)
{
	struct bpf_sampler *sampler = open_sampler(false);
	pid_t gone = fork();

	(void)state;
	assert_true(gone >= 0);
	if (gone == 0)
		_exit(0);
	waitpid(gone, NULL, 0);
	assert_int_equal(bpf_sampler_add_target(sampler, gone, NULL), 0);
	assert_int_equal(bpf_sampler_add_target(sampler, getpid(), NULL), 0);
	assert_int_equal(bpf_sampler_target_count(sampler), 2);
	assert_int_equal(bpf_sampler_reconcile_targets(sampler, 1), 1);
	/* paced: not again before BPF_SAMPLER_RECONCILE_MS */
	assert_int_equal(bpf_sampler_reconcile_targets(sampler, 2), 0);
	assert_int_equal(bpf_sampler_target_count(sampler), 1);
	assert_int_equal(bpf_sampler_reconciled_count(sampler), 1);
	bpf_sampler_close(sampler);
}

/* More execs than the proc_events ring holds, none consumed: the dropped notices are counted. */
static void lost_proc_events_are_counted(void **state)
{
	struct bpf_sampler *sampler = open_sampler(true);
	uint64_t counters[PBP_CNT_MAX];
	char *const argv[] = { "/bin/true", NULL };

	(void)state;
	for (int i = 0; i < 2500; i++) {
		pid_t pid;

		assert_int_equal(posix_spawn(&pid, argv[0], NULL, NULL, argv, environ), 0);
		waitpid(pid, NULL, 0);
	}
	assert_int_equal(bpf_sampler_counters(sampler, counters), 0);
	assert_true(counters[PBP_CNT_PROC_EVENTS_LOST] > 0);
	bpf_sampler_close(sampler);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(exits_leave_the_target_map),
		cmocka_unit_test(reconciliation_drops_gone_processes),
		cmocka_unit_test(lost_proc_events_are_counted),
	};

	if (geteuid() != 0) {
		fprintf(stderr, "test_hardening_bpf: needs root\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
