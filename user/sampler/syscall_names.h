/* SPDX-License-Identifier: MIT */
/*
 * --event syscall:NAME[,NAME...][:bytes|:latency]: system call names as this machine's
 * architecture numbers them (libseccomp's table, generated from the kernel's), and the filter
 * BPF is given (include/syscall_events.h).
 */
#ifndef PYBPFPROF_SYSCALL_NAMES_H
#define PYBPFPROF_SYSCALL_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "syscall_events.h"

/* The longest list of names kept for the profile's metadata ("syscall:write,read"). */
#define SYSCALL_FILTER_TEXT 256

struct syscall_filter {
	uint64_t mask[PBP_SYSCALL_MASK_WORDS];      /* the wanted calls, a bit by number */
	uint64_t mask_ia32[PBP_SYSCALL_MASK_WORDS]; /* the same calls by their i386 (compat) numbers */
	enum pbp_syscall_weight weight;
	char text[SYSCALL_FILTER_TEXT];        /* "syscall:write,read": the event's name in profiles */
};

/* The number of the system call name, or -ENOENT if this architecture has none of that name. */
int syscall_number(const char *name);
/* The i386 number of a call only i386's table has (socketcall, ipc, _llseek, mmap2, ...), which
 * x86_64's 32-bit (compat) callers make; -ENOENT where this is not x86_64, the name is this
 * architecture's own, or i386 has none of that name. */
int syscall_number_compat_only(const char *name);
/* Whether the call's positive return value is the bytes it moved (the read, write, send and
 * recv families, sendfile, splice, copy_file_range, getrandom): what :bytes weighs. */
bool syscall_returns_bytes(const char *name);
/* The names this architecture knows, for suggestions: up to max of them into names (static
 * storage), their count. */
size_t syscall_known_names(const char **names, size_t max);
/* Adds the call number to the filter. */
void syscall_filter_add(struct syscall_filter *filter, int number);
/* Adds the call's i386 number, where this is x86_64 and i386 has a call of that name: a compat
 * task's calls (a 32-bit process, int $0x80) are numbered by i386's table. */
void syscall_filter_add_ia32(struct syscall_filter *filter, const char *name);

#endif
