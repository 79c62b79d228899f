// SPDX-License-Identifier: MIT
#include "sampler/syscall_names.h"

#include <errno.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>

int syscall_number(const char *name)
{
	/* libseccomp answers a name of another architecture with a negative pseudo-number. */
	int number = seccomp_syscall_resolve_name(name);

	return number >= 0 && number < PBP_SYSCALL_MAX ? number : -ENOENT;
}

int syscall_number_compat_only(const char *name)
{
#if defined(__x86_64__)
	int number = seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86, name);

	if (syscall_number(name) >= 0)
		return -ENOENT;
	return number >= 0 && number < PBP_SYSCALL_MAX ? number : -ENOENT;
#else
	(void)name;
	return -ENOENT;
#endif
}

bool syscall_returns_bytes(const char *name)
{
	static const char *const moving[] = {
		"read",	    "write",	 "pread64",	  "pwrite64", "readv",	 "writev",   "preadv",
		"pwritev",  "preadv2",	 "pwritev2",	  "recvfrom", "sendto",	 "recvmsg",  "sendmsg",
		"sendfile", "splice",	 "tee",		  "vmsplice", "copy_file_range", "getrandom",
		"process_vm_readv", "process_vm_writev",
	};

	for (size_t i = 0; i < sizeof(moving) / sizeof(moving[0]); i++)
		if (strcmp(name, moving[i]) == 0)
			return true;
	return false;
}

size_t syscall_known_names(const char **names, size_t max)
{
	static char *known[PBP_SYSCALL_MAX];
	static size_t known_count;
	size_t count = 0;

	if (!known_count)
		for (int number = 0; number < PBP_SYSCALL_MAX; number++) {
			char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, number);

			if (name)
				known[known_count++] = name;
		}
	for (size_t i = 0; i < known_count && count < max; i++)
		names[count++] = known[i];
	return count;
}

void syscall_filter_add(struct syscall_filter *filter, int number)
{
	if (number >= 0 && number < PBP_SYSCALL_MAX)
		filter->mask[number / 64] |= 1ull << (number % 64);
}

void syscall_filter_add_ia32(struct syscall_filter *filter, const char *name)
{
#if defined(__x86_64__)
	/* libseccomp's i386 table, generated from the kernel's syscall_32.tbl */
	int number = seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86, name);

	if (number >= 0 && number < PBP_SYSCALL_MAX)
		filter->mask_ia32[number / 64] |= 1ull << (number % 64);
#else
	(void)filter;
	(void)name;
#endif
}
