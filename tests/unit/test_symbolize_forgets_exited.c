// SPDX-License-Identifier: MIT
/*
 * The symbolizer's state per process: 200 short processes (fake CPython 3.11 objects built in
 * this process's memory), each symbolized and then gone, leave the set and the cache empty; and
 * the decoded frame table that grew for a few busy processes goes back to its first size once
 * they are gone, its bytes back in the target budget; and the names of processes gone leave
 * the table when it is compacted, while a live process's frames keep theirs.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
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

/* Processes that each name all of their functions anew, as a host's short scripts do. */
#define NAMING_PROCESSES 24

/* The fake's code objects named "<prefix>_<i>" each (file and function), in this process's memory:
 * a fork made now sees them so. */
static void name_codes(struct fake_target *fake, uint8_t **names, const char *prefix)
{
	const struct py_offsets *off = &fake->config.off;

	for (int i = 0; i < FAKE_CODES; i++) {
		char text[64];

		snprintf(text, sizeof(text), "%s_function_number_%d", prefix, i);
		free(names[i]);
		names[i] = fake_str(off, text);
		put_pointer(fake->codes[i], off->code_filename, names[i]);
		put_pointer(fake->codes[i], off->code_name, names[i]);
		put_pointer(fake->codes[i], off->code_qualname, names[i]);
	}
}

/* Code object i as name_codes named it, resolved as pid's (resolve() for one name per code object). */
static int resolve_named(struct symbolize_py_cache *cache, pid_t pid, const struct fake_target *fake,
			 uint8_t *const *names, int i, struct pf_frame *frame)
{
	const struct py_offsets *off = &fake->config.off;
	uint8_t span[PY_STRING_SPAN_MAX + 8] = { 0 };
	uint64_t name_hash, name = (uint64_t)(uintptr_t)names[i];
	uint32_t checksum;

	memcpy(span, names[i] + py_string_span_low(off), py_string_span(off));
	name_hash = py_string_identity(off, span);
	checksum = py_code_checksum(i + 1, 0, name, name, name_hash, name_hash);
	return symbolize_py_resolve(cache, pid, &fake->config, (uint64_t)(uintptr_t)fake->codes[i], checksum, 0, frame);
}

static pid_t paused_fork(void)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		pause();
		_exit(0);
	}
	return pid;
}

static void end_child(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static uint64_t store_held(const struct target_budget *budget, const char *name)
{
	struct target_budget_store_stats stores[TARGET_BUDGET_MAX_STORES];
	int count = target_budget_stats(budget, stores);

	for (int i = 0; i < count; i++)
		if (strcmp(stores[i].name, name) == 0)
			return stores[i].held;
	fail_msg("no %s store in the budget", name);
	return 0;
}

/* Every code object of the kept process still names its frame "kept_function_number_<i>". */
static void kept_names_hold(struct symbolize_py_cache *cache, pid_t kept, const struct fake_target *fake,
			    uint8_t *const *names)
{
	for (int i = 0; i < FAKE_CODES; i++) {
		struct pf_frame frame;
		char want[64];

		snprintf(want, sizeof(want), "kept_function_number_%d", i);
		assert_int_equal(resolve_named(cache, kept, fake, names, i, &frame), 0);
		assert_string_equal(frame.name, want);
		assert_string_equal(frame.file, want);
	}
}

/*
 * One process lives through the run while 24 others come, name 200 functions each, and go. Without
 * compaction their names stay for the run; with it (between drains, as the session calls it) the
 * table holds a bounded multiple of what the live process uses, the budget's store says the same,
 * and the live process's frames keep their names.
 */
static void names_of_processes_gone_leave_on_compaction(void **state)
{
	struct symbolize_py_cache *compacted = symbolize_py_cache_new(), *kept_all = symbolize_py_cache_new();
	struct symbolize_py_stats stats, control;
	struct target_budget *budget;
	struct fake_target fake;
	uint8_t *kept_names[FAKE_CODES] = { 0 }, *names[FAKE_CODES] = { 0 };
	struct pf_frame frame;
	uint64_t generation;
	size_t after_first = 0;
	pid_t kept;

	(void)state;
	assert_int_equal(target_budget_new(0, &budget), 0);
	assert_int_equal(symbolize_py_cache_set_budget(compacted, budget), 0);
	build_fake_target(&fake, 64);
	name_codes(&fake, kept_names, "kept");
	kept = paused_fork();
	for (int i = 0; i < FAKE_CODES; i++) {
		assert_int_equal(resolve_named(compacted, kept, &fake, kept_names, i, &frame), 0);
		assert_int_equal(resolve_named(kept_all, kept, &fake, kept_names, i, &frame), 0);
	}
	for (int process = 0; process < NAMING_PROCESSES; process++) {
		char prefix[32];
		pid_t pid;

		snprintf(prefix, sizeof(prefix), "gone%d", process);
		name_codes(&fake, names, prefix);
		pid = paused_fork();
		for (int i = 0; i < FAKE_CODES; i++) {
			assert_int_equal(resolve_named(compacted, pid, &fake, names, i, &frame), 0);
			assert_int_equal(resolve_named(kept_all, pid, &fake, names, i, &frame), 0);
		}
		end_child(pid);
		symbolize_py_forget_pid(compacted, pid);
		symbolize_py_forget_pid(kept_all, pid);
		generation = symbolize_py_generation(compacted);
		if (symbolize_py_compact_names(compacted) > 0) {
			/* what frames hold by then is invalid: the generation says so */
			assert_true(symbolize_py_generation(compacted) != generation);
			symbolize_py_cache_stats(compacted, &stats);
			if (!after_first)
				after_first = stats.name_table_bytes;
		}
		symbolize_py_cache_stats(compacted, &stats);
		assert_int_equal(store_held(budget, "code names"), stats.name_table_bytes);
	}
	kept_names_hold(compacted, kept, &fake, kept_names);
	symbolize_py_cache_stats(compacted, &stats);
	symbolize_py_cache_stats(kept_all, &control);
	print_message("names' table: %zu bytes compacted %" PRIu64 " times (%zu after the first), %zu kept for "
		      "the run, for %d processes of %d names each\n",
		      stats.name_table_bytes, stats.name_compactions, after_first, control.name_table_bytes,
		      NAMING_PROCESSES + 1, FAKE_CODES);
	assert_true(stats.name_compactions >= 1);
	assert_true(stats.name_table_bytes * 2 < control.name_table_bytes);
	/* the live process's names, and the room to double, at most */
	assert_true(stats.name_table_bytes < 2 * after_first + SYMBOLIZE_PY_COMPACT_MIN_BYTES);
	end_child(kept);
	for (int i = 0; i < FAKE_CODES; i++) {
		free(kept_names[i]);
		free(names[i]);
	}
	symbolize_py_cache_free(compacted);
	symbolize_py_cache_free(kept_all);
	target_budget_free(budget);
	free_fake_target(&fake);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(exited_processes_are_forgotten),
		cmocka_unit_test(the_frame_table_shrinks_when_its_processes_go),
		cmocka_unit_test(names_of_processes_gone_leave_on_compaction),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
