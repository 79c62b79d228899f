/* SPDX-License-Identifier: MIT */
/*
 * Memory mode: each sample carries how much its process's resident memory moved since the
 * same thread's previous sample (Austin's memory mode, read from the kernel's own counters
 * instead of /proc). The counters are the mm's RSS counters, read as /proc/PID/status reads
 * them (get_mm_counter: the shared count, without summing the per-CPU parts), so the figures
 * agree with VmRSS.
 */
#ifndef PYBPFPROF_BPF_RESIDENT_MEMORY_H
#define PYBPFPROF_BPF_RESIDENT_MEMORY_H

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>

#include "maps.h"

/* include/linux/mm_types_task.h's counters (an anonymous enum: no CO-RE relocation for its
 * values, which have not moved since MM_SHMEMPAGES came in 4.5). MM_SWAPENTS is not resident. */
#define PBP_MM_FILEPAGES  0
#define PBP_MM_ANONPAGES  1
#define PBP_MM_SHMEMPAGES 3

/* Before 6.2 the counters were atomics in a struct mm_rss_stat. */
struct mm_rss_stat___atomic {
	atomic_long_t count[4];
} __attribute__((preserve_access_index));
struct mm_struct___atomic {
	struct mm_rss_stat___atomic rss_stat;
} __attribute__((preserve_access_index));

struct pbp_rss_seen {
	__u64 mm;        /* the mm it was read from: an exec'ed thread starts again */
	__s64 rss_pages;
};

/* pid_tgid -> the resident pages its previous sample saw. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, PBP_MAX_CACHED_THREADS);
	__type(key, __u64);
	__type(value, struct pbp_rss_seen);
} rss_seen SEC(".maps");

/* A counter's value as get_mm_counter() gives it: never below 0. */
static __always_inline __s64 pbp_rss_counter(struct mm_struct *mm, int counter)
{
	__s64 pages;

	if (bpf_core_type_exists(struct mm_rss_stat___atomic)) {
		struct mm_struct___atomic *old = (void *)mm;

		pages = BPF_CORE_READ(old, rss_stat.count[counter & 3].counter);
	} else {
		pages = BPF_CORE_READ(mm, rss_stat[counter & 3].count);
	}
	return pages > 0 ? pages : 0;
}

/* The current task's process's resident pages, and its mm (0: none, a kernel thread). */
static __always_inline __s64 pbp_resident_pages(__u64 *mm_out)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct mm_struct *mm = BPF_CORE_READ(task, mm);

	*mm_out = (__u64)mm;
	if (!mm)
		return 0;
	return pbp_rss_counter(mm, PBP_MM_FILEPAGES) + pbp_rss_counter(mm, PBP_MM_ANONPAGES) +
	       pbp_rss_counter(mm, PBP_MM_SHMEMPAGES);
}

/* The change in bytes since this thread's previous sample (0 at its first), remembered for its next. */
static __always_inline __s64 pbp_rss_delta(__u64 pid_tgid, __u64 page_bytes)
{
	struct pbp_rss_seen now = { 0 }, *seen;
	__s64 delta = 0;

	now.rss_pages = pbp_resident_pages(&now.mm);
	if (!now.mm)
		return 0;
	seen = bpf_map_lookup_elem(&rss_seen, &pid_tgid);
	if (seen && seen->mm == now.mm)
		delta = (now.rss_pages - seen->rss_pages) * (__s64)page_bytes;
	bpf_map_update_elem(&rss_seen, &pid_tgid, &now, BPF_ANY);
	return delta;
}

#endif
