// SPDX-License-Identifier: MIT
/*
 * util/heap_warm: the heap set-up is about to fill is resident before set-up touches it, so
 * that its allocations take no page faults, and the heap grows in ordinary pages again after.
 */
#include "testlib.h"

#include <malloc.h>
#include <sys/resource.h>

#include "util/heap_warm.h"

static long minor_faults(void)
{
	struct rusage usage;

	assert_int_equal(getrusage(RUSAGE_SELF, &usage), 0);
	return usage.ru_minflt;
}

/* Writes every page of a fresh allocation of bytes; the minor faults it took. */
static long faults_to_fill(size_t bytes)
{
	long before = minor_faults();
	char *block = malloc(bytes);

	assert_non_null(block);
	memset(block, 0x5a, bytes);
	/* The writes are the point: keep the compiler from dropping them with the block. */
	__asm__ volatile("" : : "r"(block) : "memory");
	free(block);
	return minor_faults() - before;
}

static void test_warmed_heap_takes_no_faults(void **state)
{
	const size_t bytes = 6u << 20; /* above glibc's first mmap threshold: a mapping of its own */
	long cold, warm;

	(void)state;
	/* The first fill is a fresh mapping, page by page (a few huge pages where THP is "always"). */
	cold = faults_to_fill(bytes);
	heap_warm(8u << 20);
	warm = faults_to_fill(bytes);
	print_message("6 MiB filled: %ld faults cold, %ld warmed\n", cold, warm);
	assert_true(warm <= 16);
	assert_true(warm * 4 < cold || cold <= 16);
	/* Still served from the warmed heap after set-up has ended. */
	heap_cool();
	warm = faults_to_fill(bytes);
	assert_true(warm <= 16);
	/* Trimmed, the heap gives its pages back; the next fill faults them in again. */
	malloc_trim(0);
	assert_true(faults_to_fill(bytes) > 16);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_warmed_heap_takes_no_faults),
	};

	return cmocka_run_group_tests_name("heap_warm", tests, NULL, NULL);
}
