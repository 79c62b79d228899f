/* SPDX-License-Identifier: MIT */
/*
 * Loads bpf/pyperf.bpf.c in a short-lived child process and hands its maps and programs
 * back as file descriptors (SCM_RIGHTS over a socketpair). Loading parses the kernel's BTF
 * (CO-RE relocations, tp_btf attach ids): some 12 MB of heap, at its peak, that the
 * long-lived profiler would otherwise keep as its resident high-water mark for the whole run.
 * The profiler then uses the objects through their descriptors alone.
 */
#ifndef PYBPFPROF_BPF_LOADER_H
#define PYBPFPROF_BPF_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sampler/syscall_names.h"

/* The maps the profiler uses, by descriptor. */
enum bpf_loader_map {
	LOADER_MAP_EVENTS,        /* array of maps: the record ring BPF writes to */
	LOADER_MAP_PROC_CONFIGS,
	LOADER_MAP_BUDGET_USAGE,
	LOADER_MAP_BUDGET_STRIDES,
	LOADER_MAP_UNWIND_PROCS,
	LOADER_MAP_UNWIND_ROWS,
	LOADER_MAP_UNWIND_TABLES,
	LOADER_MAP_PROC_EVENTS,
	LOADER_MAP_COUNTERS,
	LOADER_MAP_READ_ERRORS,
	LOADER_MAP_UNWIND_STOPS,
	LOADER_MAP_KSYM_ADDRS,
	LOADER_MAP_CODE_NOTES,    /* code objects' identity fields, for the freed ones */
	LOADER_MAP_BSS,           /* the programs' .bss: mapped with bpf_loader_map_bss */
	LOADER_MAP_COUNT
};

/* The programs, each loaded only where spec->load asks for it. */
enum bpf_loader_prog {
	LOADER_PROG_SAMPLE,
	LOADER_PROG_EXEC,
	LOADER_PROG_EXIT,
	LOADER_PROG_FORK,
	LOADER_PROG_OFF_CPU,
	LOADER_PROG_SYSCALL_ENTER,
	LOADER_PROG_SYSCALL_EXIT,
	LOADER_PROG_BLOCK_IO,
	LOADER_PROG_WALL,
	LOADER_PROG_KSYM_NAMES,
	LOADER_PROG_COUNT
};

/* What the programs are loaded with: their read-only configuration and which of them load. */
struct bpf_load_spec {
	bool kernel_stacks;
	bool watch_exec;
	bool follow_forks;
	bool native_stacks;
	bool gil_only;
	bool memory_deltas;
	bool exceptions_only;
	bool time_samples;
	bool overhead_budget;
	uint64_t off_cpu_min_ns;
	uint64_t tracepoint_period; /* syscalls, block I/O: one occurrence in this many on average */
	const struct syscall_filter *syscalls; /* NULL: no syscall tracing */
	bool load[LOADER_PROG_COUNT];
};

struct bpf_loaded {
	int map_fds[LOADER_MAP_COUNT];
	uint32_t map_entries[LOADER_MAP_COUNT]; /* each map's max_entries */
	int prog_fds[LOADER_PROG_COUNT];        /* -1 where not loaded */
	/* The loader child's own cost: peak resident KiB and CPU seconds (user + system). */
	long loader_peak_kib;
	double loader_cpu_s;
};

/* Loads in a child and fills *loaded (every descriptor close-on-exec). 0, or a negative errno
 * with a one-line message in errbuf (the loader's own error, or how it ended). */
int bpf_loader_load(const struct bpf_load_spec *spec, struct bpf_loaded *loaded, char *errbuf, size_t errlen);
/* Closes every descriptor of loaded (and marks them -1). */
void bpf_loaded_close(struct bpf_loaded *loaded);
/* The .bss of the programs, mapped read-write (NULL on failure, errno set); bpf_loader_unmap_bss. */
void *bpf_loader_map_bss(const struct bpf_loaded *loaded);
void bpf_loader_unmap_bss(void *bss);

#endif
