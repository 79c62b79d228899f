// SPDX-License-Identifier: MIT
/* Native symbolization without reading a file: a skipped file, anonymous memory, a gone process. */
#include "testlib.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "symbolize/symbolize_native.h"

static uint64_t code_address(void (*function)(void))
{
	return (uint64_t)(uintptr_t)function;
}

/* The interpreter's own file is left to the Python frames. */
static void test_skips_the_given_file(void **state)
{
	struct symbolize_native *symbolizer = symbolize_native_new();
	struct pf_frame frame = { .name = "untouched" };
	uint64_t ip = code_address((void (*)(void))deflateInit2_);
	struct proc_file_id libz = test_file_holding(ip);

	(void)state;
	assert_int_not_equal(libz.inode, 0);
	assert_int_equal(symbolize_native_resolve(symbolizer, getpid(), NULL, ip, &frame), 1);
	assert_int_equal(symbolize_native_resolve(symbolizer, getpid(), &libz, ip, &frame), 0);
	symbolize_native_free(symbolizer);
}

/* Heap and stack are no file: nothing to name. */
static void test_anonymous_memory_is_not_a_frame(void **state)
{
	struct symbolize_native *symbolizer = symbolize_native_new();
	struct pf_frame frame;
	char *heap = malloc(64);
	int on_stack = 0;

	(void)state;
	assert_int_equal(symbolize_native_resolve(symbolizer, getpid(), NULL, (uint64_t)(uintptr_t)heap, &frame), 0);
	assert_int_equal(symbolize_native_resolve(symbolizer, getpid(), NULL, (uint64_t)(uintptr_t)&on_stack, &frame), 0);
	assert_int_equal(symbolize_native_resolve(symbolizer, getpid(), NULL, 0x10, &frame), 0);
	free(heap);
	symbolize_native_free(symbolizer);
}

/* An exited process's late samples get no native frame, and no error. */
static void test_gone_process_gives_no_frame(void **state)
{
	struct symbolize_native *symbolizer = symbolize_native_new();
	struct pf_frame frame;
	pid_t pid = fork();

	(void)state;
	if (pid == 0)
		_exit(0);
	assert_true(pid > 0);
	waitpid(pid, NULL, 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(symbolize_native_resolve(symbolizer, pid, NULL,
						   code_address((void (*)(void))deflateInit2_), &frame), 0);
	symbolize_native_forget_pid(symbolizer, pid);
	symbolize_native_free(symbolizer);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_skips_the_given_file),
		cmocka_unit_test(test_anonymous_memory_is_not_a_frame),
		cmocka_unit_test(test_gone_process_gives_no_frame),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
