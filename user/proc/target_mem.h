/* SPDX-License-Identifier: MIT */
/* Reading another process's memory (process_vm_readv): never stops the target. */
#ifndef PYBPFPROF_TARGET_MEM_H
#define PYBPFPROF_TARGET_MEM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* All len bytes at addr, or a negative errno (-EFAULT if only part was readable, -ESRCH if gone). */
int target_mem_read(pid_t pid, uint64_t addr, void *buf, size_t len);
/* A pointer-sized / 32-bit value. */
int target_mem_read_u64(pid_t pid, uint64_t addr, uint64_t *value);
int target_mem_read_s32(pid_t pid, uint64_t addr, int32_t *value);

#endif
