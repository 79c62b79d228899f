// SPDX-License-Identifier: MIT
/*
 * The symbolizer's state per process: 200 short processes (fake CPython 3.11 objects built in
 * this process's memory), each symbolized and then gone, leave the set and the cache empty.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <sys/wait.h>

#include "testlib.h"

#include "symbolize/symbolize_py.h"
#include "python/py_offsets.h"
#include "python/target_set.h"
#include "util/target_budget.h"

#define FAKE_CODES 200
#define CHURNED_PROCESSES 200
/* PEP 393 state of a compact ASCII str: kind 1, compact, ascii. */
#define ASCII_STATE ((1u << 2) | (1u << 5) | (1u << 6))

struct fake_target {
	struct py_proc_config config;
	uint8_t *name;              /* a str object */
	uint8_t *linetable;         /* a bytes object of SYMBOLIZE_PY_MAX_LINETABLE_BYTES */
	uint8_t *codes[FAKE_CODES]; /* code objects sharing name and line table */
};

static uint8_t *fake_str(const struct py_offsets *off, const char *text)
{
	/* Room for the prefix a code object's identity copies (py_string_span), as a heap has. */
	uint8_t *object = calloc(1, off->unicode_ascii_data + strlen(text) + 1 + PY_STRING_PREFIX);
	uint32_t state = ASCII_STATE;
	int64_t length = (int64_t)strlen(text);

	assert_non_null(object);
	memcpy(object + off->unicode_state, &state, sizeof(state));
	memcpy(object + off->unicode_length, &length, sizeof(length));
	memcpy(object + off->unicode_ascii_data, text, strlen(text));
	return object;
}

static uint8_t *fake_bytes(const struct py_offsets *off, size_t size)
{
	uint8_t *object = calloc(1, off->bytes_data + size + 1);
	int64_t length = (int64_t)size;

	assert_non_null(object);
	memcpy(object + off->bytes_size, &length, sizeof(length));
	return object;
}

static void put_pointer(uint8_t *object, uint32_t offset, const void *pointer)
{
	uint64_t value = (uint64_t)(uintptr_t)pointer;

	memcpy(object + offset, &value, sizeof(value));
}

static void build_fake_target(struct fake_target *fake, size_t linetable_bytes)
{
	const struct py_offsets *off = py_offsets_for_version(3, 11);

	assert_non_null(off);
	memset(fake, 0, sizeof(*fake));
	fake->config.off = *off;
	fake->config.version_hex = 0x030b00f0;
	fake->name = fake_str(off, "fake");
	fake->linetable = fake_bytes(off, linetable_bytes);
	for (int i = 0; i < FAKE_CODES; i++) {
		int32_t firstlineno = i + 1, argcount = 0;

		fake->codes[i] = calloc(1, 1024);
		assert_non_null(fake->codes[i]);
		memcpy(fake->codes[i] + off->code_firstlineno, &firstlineno, sizeof(firstlineno));
		memcpy(fake->codes[i] + off->code_argcount, &argcount, sizeof(argcount));
		put_pointer(fake->codes[i], off->code_filename, fake->name);
		put_pointer(fake->codes[i], off->code_name, fake->name);
		put_pointer(fake->codes[i], off->code_qualname, fake->name);
		put_pointer(fake->codes[i], off->code_linetable, fake->linetable);
	}
}

static void free_fake_target(struct fake_target *fake)
{
	for (int i = 0; i < FAKE_CODES; i++)
		free(fake->codes[i]);
	free(fake->name);
	free(fake->linetable);
}

static int resolve(struct symbolize_py_cache *cache, pid_t pid, const struct fake_target *fake, int i,
		   struct pf_frame *frame)
{
	const struct py_offsets *off = &fake->config.off;
	uint64_t addr = (uint64_t)(uintptr_t)fake->codes[i], name_hash;
	uint32_t checksum;

	uint8_t span[PY_STRING_SPAN_MAX + 8] = { 0 };

	memcpy(span, fake->name + py_string_span_low(off), py_string_span(off));
	name_hash = py_string_identity(off, span);
	checksum = py_code_checksum(i + 1, 0, (uint64_t)(uintptr_t)fake->name, (uint64_t)(uintptr_t)fake->name,
				    name_hash, name_hash);
	return symbolize_py_resolve(cache, pid, &fake->config, addr, checksum, 0, frame);
}

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
