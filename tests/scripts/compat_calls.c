/* SPDX-License-Identifier: MIT */
/*
 * i386 system calls from a 64-bit process: int $0x80 enters the kernel's ia32 path, numbered by
 * i386's table, whatever the process. socketcall is i386's 102, which on x86_64 is getuid; called
 * with no valid operation (0) it answers -EINVAL and touches nothing, where a getuid would answer
 * the uid. Built by tests/e2e/test_syscalls.c, loaded by syscall_work.py's compatonly mode.
 */
#include <errno.h>

#define I386_SOCKETCALL 102

/* socketcall(0, NULL) through int $0x80: -EINVAL from i386's socketcall. */
static long int80_socketcall(void)
{
	long result;

	/* r8-r11 were zeroed on the way back by kernels before 4.17: not kept across the call */
	__asm__ volatile("int $0x80"
			 : "=a"(result)
			 : "a"((long)I386_SOCKETCALL), "b"(0L), "c"(0L)
			 : "memory", "cc", "r8", "r9", "r10", "r11");
	return result;
}

/* Makes count socketcalls through int $0x80; how many answered as i386's socketcall does. */
int compat_socketcalls(int count)
{
	int answered = 0;

	for (int i = 0; i < count; i++)
		answered += int80_socketcall() == -EINVAL;
	return answered;
}
