/* SPDX-License-Identifier: MIT */
/*
 * A C function that spins on a stack of its own, whose top is followed by an unmapped page
 * and whose caller is that stack's outermost frame (its return address undefined, as a
 * thread's root is): the native walk of its samples starts a few bytes below the end of
 * mapped memory. Built by tests/e2e/test_bpf_sampler.c, loaded by bpf_stack_top.py.
 */
#include <sys/mman.h>
#include <time.h>

#define PAGE 4096ul
#define STACK_PAGES 16ul

/* Calls fn(seconds) with rsp = stack_top; its return address in fn's frame reads as the root. */
void run_on_stack(void *stack_top, void (*fn)(double), double seconds);
__asm__(".text\n"
	".globl run_on_stack\n"
	".type run_on_stack, @function\n"
	"run_on_stack:\n"
	".cfi_startproc\n"
	"push %rbp\n"
	".cfi_def_cfa_offset 16\n"
	".cfi_offset %rbp, -16\n"
	"mov %rsp, %rbp\n"
	".cfi_def_cfa_register %rbp\n"
	"mov %rdi, %rsp\n"
	".cfi_undefined %rip\n"
	"call *%rsi\n"
	"mov %rbp, %rsp\n"
	"pop %rbp\n"
	".cfi_def_cfa %rsp, 8\n"
	".cfi_restore %rbp\n"
	".cfi_restore %rip\n"
	"ret\n"
	".cfi_endproc\n"
	".size run_on_stack, .-run_on_stack\n");

static volatile unsigned long spins;

static void spin(double seconds)
{
	struct timespec start, now;

	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		for (int i = 0; i < 100000; i++)
			spins++;
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((double)(now.tv_sec - start.tv_sec) + (double)(now.tv_nsec - start.tv_nsec) / 1e9 < seconds);
}

int spin_at_stack_top(double seconds)
{
	size_t size = STACK_PAGES * PAGE;
	char *region = mmap(NULL, size + PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (region == MAP_FAILED)
		return -1;
	if (mprotect(region + size, PAGE, PROT_NONE) != 0) {
		munmap(region, size + PAGE);
		return -1;
	}
	run_on_stack(region + size, spin, seconds);
	munmap(region, size + PAGE);
	return 0;
}
