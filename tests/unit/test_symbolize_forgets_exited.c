// SPDX-License-Identifier: MIT
/*
 * The symbolizer's state per process: 200 short processes (fake CPython 3.11 objects built in
 * this process's memory), each symbolized and then gone, leave the set and the cache empty; and
 * the decoded frame table that grew for a few busy processes goes back to its first size once
 * they are gone, its bytes back in the target budget.
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
#define BUSY_PROCESSES 8

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

/* What the target budget's "decoded frames" store holds now. */
static uint64_t decoded_frames_held(const struct target_budget *budget)
{
	struct target_budget_store_stats stores[TARGET_BUDGET_MAX_STORES];
	int count = target_budget_stats(budget, stores);

	for (int i = 0; i < count; i++)
		if (strcmp(stores[i].name, "decoded frames") == 0)
			return stores[i].held;
	fail_msg("no decoded frames store in the budget");
	return 0;
}

static void the_frame_table_shrinks_when_its_processes_go(void **state)
{
	struct symbolize_py_cache *cache = symbolize_py_cache_new();
	struct target_budget *budget;
	struct symbolize_py_stats stats;
	struct fake_target fake;
	struct pf_frame frame;
	pid_t pids[BUSY_PROCESSES];
	uint64_t first, grown;

	(void)state;
	assert_int_equal(target_budget_new(0, &budget), 0);
	assert_int_equal(symbolize_py_cache_set_budget(cache, budget), 0);
	first = decoded_frames_held(budget);
	build_fake_target(&fake, 64);
	for (int i = 0; i < BUSY_PROCESSES; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			pause();
			_exit(0);
		}
		/* the fork has our memory: the same fake objects at the same addresses */
		for (int code = 0; code < FAKE_CODES; code++)
			assert_int_equal(resolve(cache, pids[i], &fake, code, &frame), 0);
	}
	symbolize_py_cache_stats(cache, &stats);
	assert_int_equal(stats.frames, BUSY_PROCESSES * FAKE_CODES);
	grown = decoded_frames_held(budget);
	assert_true(grown >= 4 * first);
	for (int i = 0; i < BUSY_PROCESSES; i++) {
		kill(pids[i], SIGKILL);
		waitpid(pids[i], NULL, 0);
		symbolize_py_forget_pid(cache, pids[i]);
	}
	symbolize_py_cache_stats(cache, &stats);
	print_message("decoded frames: %" PRIu64 " bytes at first, %" PRIu64 " for %d x %d frames, %" PRIu64
		      " once their processes went\n",
		      first, grown, BUSY_PROCESSES, FAKE_CODES, decoded_frames_held(budget));
	assert_int_equal(stats.frames, 0);
	assert_int_equal(decoded_frames_held(budget), first);
	symbolize_py_cache_free(cache);
	target_budget_free(budget);
	free_fake_target(&fake);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(exited_processes_are_forgotten),
		cmocka_unit_test(the_frame_table_shrinks_when_its_processes_go),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
