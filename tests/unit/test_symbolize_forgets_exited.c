// SPDX-License-Identifier: MIT
/*
 * The symbolizer's state per process: 200 short processes (fake CPython 3.11 objects built in
 * this process's memory), each symbolized and then gone, leave the set and the cache empty.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <sys/wait.h>

#include "fake_target.h"

#include "symbolize/symbolize_py.h"
#include "python/py_offsets.h"
#include "python/target_set.h"
#include "util/target_budget.h"

#define CHURNED_PROCESSES 200

struct forgetting {
	struct symbolize_py_cache *cache;
	size_t forgotten;
};

static void forget_process(void *ctx, const struct target *target)
{
	struct forgetting *forgetting = ctx;

	symbolize_py_forget_pid(forgetting->cache, target->pid);
	forgetting->forgotten++;
}

/* 200 short processes, each symbolized, then gone: the set and the cache return to empty. */
static void exited_processes_are_forgotten(void **state)
{
	struct forgetting forgetting = { .cache = symbolize_py_cache_new() };
	struct symbolize_py_stats stats;
	struct target_set set;
	struct fake_target fake;
	struct pf_frame frame;
	pid_t pids[CHURNED_PROCESSES];
	uint64_t now = 1000;

	(void)state;
	build_fake_target(&fake, 64);
	target_set_init(&set);
	for (int i = 0; i < CHURNED_PROCESSES; i++) {
		struct target *target;

		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			pause();
			_exit(0);
		}
		target = target_set_add(&set, pids[i], TARGET_FROM_SCAN);
		assert_non_null(target);
		/* the fork has our memory: the same fake objects at the same addresses */
		assert_int_equal(resolve(forgetting.cache, pids[i], &fake, i % FAKE_CODES, &frame), 0);
		target->samples = 1;
	}
	symbolize_py_cache_stats(forgetting.cache, &stats);
	assert_int_equal(stats.codes, CHURNED_PROCESSES);
	/* alive: nothing is forgotten, whatever its state */
	for (int i = 0; i < CHURNED_PROCESSES; i++)
		target_set_find(&set, pids[i])->state = TARGET_GONE;
	assert_int_equal(target_set_forget_exited(&set, now, forget_process, &forgetting), 0);
	for (int i = 0; i < CHURNED_PROCESSES; i++) {
		kill(pids[i], SIGKILL);
		waitpid(pids[i], NULL, 0);
	}
	/* the first sweep after the exits marks them, one at least TARGET_SET_FORGET_AFTER_MS later drops them */
	now += TARGET_SET_SWEEP_MS;
	assert_int_equal(target_set_forget_exited(&set, now, forget_process, &forgetting), 0);
	now += TARGET_SET_SWEEP_MS;
	assert_int_equal(target_set_forget_exited(&set, now, forget_process, &forgetting), CHURNED_PROCESSES);
	assert_int_equal(forgetting.forgotten, CHURNED_PROCESSES);
	assert_int_equal(set.count, 0);
	assert_null(target_set_find(&set, pids[0]));
	assert_int_equal(target_set_sampled_count(&set), CHURNED_PROCESSES);
	symbolize_py_cache_stats(forgetting.cache, &stats);
	assert_int_equal(stats.codes, 0);
	assert_int_equal(stats.code_bytes, 0);
	assert_int_equal(stats.frames, 0);
	/* the set still works after the removals */
	assert_non_null(target_set_add(&set, getpid(), TARGET_FROM_SCAN));
	assert_ptr_equal(target_set_find(&set, getpid()), &set.items[0]);
	target_set_free(&set);
	symbolize_py_cache_free(forgetting.cache);
	free_fake_target(&fake);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(exited_processes_are_forgotten),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
