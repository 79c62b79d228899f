// SPDX-License-Identifier: MIT
/*
 * util/bulk_alloc: a burst of large blocks (an attacker's megabyte line tables, by the dozen)
 * freed among small allocations that stay gives its memory back to the system and leaves the
 * malloc heap as it was, where from the heap it left the heap grown and holed for good.
 */
#include "testlib.h"

#include <malloc.h>
#include <stdio.h>

#include "util/bulk_alloc.h"

#define BURST 32
#define BLOCK_BYTES ((size_t)1 << 20)

/* The process's resident memory now (KiB), from /proc/self/status. */
static long resident_kib(void)
{
	char line[256];
	long kib = -1;
	FILE *status = fopen("/proc/self/status", "r");

	assert_non_null(status);
	while (fgets(line, sizeof(line), status))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(status);
	assert_true(kib > 0);
	return kib;
}

static void test_a_burst_of_large_blocks_is_given_back(void **state)
{
	void *small[BURST];
	uint8_t *large[BURST];
	void *volatile raise;
	size_t arena_before;
	long before, during, after;

	(void)state;
	/* As in the profiler after its set-up (util/heap_warm.c): a freed 16 MiB block has raised
	 * glibc's mmap threshold past a megabyte, so malloc would serve these from the heap. */
	raise = malloc((size_t)16 << 20);
	free(raise);
	arena_before = mallinfo2().arena;
	before = resident_kib();
	for (int i = 0; i < BURST; i++) {
		large[i] = bulk_alloc(BLOCK_BYTES);
		assert_non_null(large[i]);
		memset(large[i], i, BLOCK_BYTES);
		small[i] = malloc(64); /* what the drain allocates meanwhile, and keeps */
		assert_non_null(small[i]);
	}
	during = resident_kib();
	for (int i = 0; i < BURST; i++) {
		assert_int_equal(large[i][0], i);
		assert_int_equal(large[i][BLOCK_BYTES - 1], i);
		bulk_free(large[i]);
	}
	after = resident_kib();
	print_message("%d x 1 MiB: resident %ld KiB before, %ld during, %ld after\n", BURST, before, during, after);
	assert_true(during - before >= (long)(BURST * BLOCK_BYTES / 1024) * 3 / 4);
	/* every block's pages went back at its free, the small ones kept notwithstanding */
	assert_true(after - before <= (long)(BURST * BLOCK_BYTES / 1024) / 8);
	assert_true(mallinfo2().arena - arena_before < BLOCK_BYTES);
	for (int i = 0; i < BURST; i++)
		free(small[i]);
}

static void test_small_blocks_hold_what_they_are_given(void **state)
{
	uint8_t *block;

	(void)state;
	bulk_free(NULL);
	for (size_t bytes = 0; bytes <= 2 * BULK_ALLOC_MAP_BYTES; bytes += BULK_ALLOC_MAP_BYTES / 4 - 1) {
		block = bulk_alloc(bytes);
		assert_non_null(block);
		assert_int_equal((uintptr_t)block % _Alignof(max_align_t), 0);
		memset(block, 0xa5, bytes);
		if (bytes)
			assert_int_equal(block[bytes - 1], 0xa5);
		bulk_free(block);
	}
	assert_null(bulk_alloc(SIZE_MAX - 8));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_burst_of_large_blocks_is_given_back),
		cmocka_unit_test(test_small_blocks_hold_what_they_are_given),
	};

	return cmocka_run_group_tests_name("bulk_alloc", tests, NULL, NULL);
}
