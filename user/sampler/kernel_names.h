/* SPDX-License-Identifier: MIT */
/*
 * Kernel addresses to names, asked of the kernel itself: the pbp_ksym_names iterator prints
 * what %ps makes of each address written into its map (include/sample_record.h). Nothing is
 * loaded up front, and modules or BPF programs loaded during the run are named too.
 */
#ifndef PYBPFPROF_KERNEL_NAMES_H
#define PYBPFPROF_KERNEL_NAMES_H

#include <stddef.h>
#include <stdint.h>

struct kernel_names;

/* Called for each address the kernel names: "symbol" or "symbol [module]" (valid for the call). */
typedef void (*kernel_name_fn)(void *context, uint64_t address, const char *name);

/* Attaches the iterator program to the profiler's own process and maps the addresses map (both
 * loaded, by descriptor). */
int kernel_names_open(struct kernel_names **out, int names_prog, int addresses);
/* Names up to PBP_KSYM_BATCH addresses in one pass (more: -E2BIG): found() is called for those
 * the kernel has a symbol for, the others are left out. 0 or -errno. */
int kernel_names_lookup(struct kernel_names *names, const uint64_t *addresses, size_t count, kernel_name_fn found,
			void *context);
void kernel_names_close(struct kernel_names *names);

#endif
