// SPDX-License-Identifier: MIT
#include "proc/target_mem.h"

#include <errno.h>
#include <sys/uio.h>

int target_mem_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };
	ssize_t got;

	if (len == 0)
		return 0;
	if (addr == 0)
		return -EFAULT;
	got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (got < 0)
		return -errno;
	return (size_t)got == len ? 0 : -EFAULT;
}

int target_mem_read_u64(pid_t pid, uint64_t addr, uint64_t *value)
{
	return target_mem_read(pid, addr, value, sizeof(*value));
}

int target_mem_read_s32(pid_t pid, uint64_t addr, int32_t *value)
{
	return target_mem_read(pid, addr, value, sizeof(*value));
}
