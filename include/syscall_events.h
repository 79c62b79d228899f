/* SPDX-License-Identifier: MIT */
/*
 * --event syscall:NAME[,NAME...][:bytes|:latency]: what userspace hands BPF (bpf/pyperf.bpf.c's
 * pbp_syscall_enter/pbp_syscall_exit): the wanted system calls as a bitmap by number, and what
 * one call weighs in its record's event_weight.
 */
#ifndef PYBPFPROF_SYSCALL_EVENTS_H
#define PYBPFPROF_SYSCALL_EVENTS_H

/* x86_64's system call numbers are below this, and so are i386's (ia32: a 32-bit process, or
 * int $0x80 from a 64-bit one), which BPF tests against a bitmap of their own; the x32 ones,
 * with bit 30 set, are not taken. */
#define PBP_SYSCALL_MAX 512
#define PBP_SYSCALL_MASK_WORDS (PBP_SYSCALL_MAX / 64)

enum pbp_syscall_weight {
	PBP_SYSCALL_COUNT = 0,   /* one call: sent at entry */
	PBP_SYSCALL_BYTES = 1,   /* the call's return value where positive: sent at exit, others not */
	PBP_SYSCALL_LATENCY = 2, /* nanoseconds from entry to exit: sent at exit */
};

#endif
