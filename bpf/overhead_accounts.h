/* SPDX-License-Identifier: MIT */
/*
 * --max-overhead (include/budget_usage.h): every tick of a target is counted per CPU; a
 * target userspace has given a stride N keeps the ticks whose count is a multiple of N, each
 * record weighing N (pbp_record.weight), and the time of every kept one is charged to it.
 * Thinning by count keeps the kept ticks evenly spread over the target's CPU time, so its
 * shares stay true; the weights keep its totals (and its share of a whole host) true.
 */
#ifndef PYBPFPROF_BPF_OVERHEAD_ACCOUNTS_H
#define PYBPFPROF_BPF_OVERHEAD_ACCOUNTS_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "maps.h"
#include "budget_usage.h"

/* Set by userspace at load: account and thin (off: every tick walked, nothing counted). */
const volatile bool overhead_budget = false;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, PBP_MAX_TARGETS);
	__type(key, __u32);
	__type(value, struct pbp_budget_usage);
} budget_usage SEC(".maps");

/* Written by userspace only: tgid -> keep one tick in this many. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PBP_MAX_TARGETS);
	__type(key, __u32);
	__type(value, __u32);
} budget_strides SEC(".maps");

/* This CPU's account of tgid, made on its first tick; NULL when the map is full (the target is
 * then walked at every tick, uncounted). */
static __always_inline struct pbp_budget_usage *pbp_budget_usage_of(__u32 tgid)
{
	struct pbp_budget_usage *usage = bpf_map_lookup_elem(&budget_usage, &tgid);
	struct pbp_budget_usage zero = {};

	if (usage)
		return usage;
	bpf_map_update_elem(&budget_usage, &tgid, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&budget_usage, &tgid);
}

/* A tick of the target: the weight of its sample, or 0 when this tick is skipped. */
static __always_inline __u32 pbp_budget_admit(struct pbp_budget_usage *usage, __u32 tgid)
{
	__u32 *stride_set = bpf_map_lookup_elem(&budget_strides, &tgid);
	__u32 stride = stride_set ? *stride_set : 1;
	__u64 tick = usage->ticks++;

	if (stride <= 1)
		return 1;
	if (stride > PBP_BUDGET_MAX_STRIDE)
		stride = PBP_BUDGET_MAX_STRIDE;
	return tick % stride == 0 ? stride : 0;
}

static __always_inline void pbp_budget_charge(struct pbp_budget_usage *usage, __u64 spent_ns)
{
	usage->kept++;
	usage->spent_ns += spent_ns;
}

/* A tick skipped by the stride costs its lookups: charged apart, so that the stride allows for
 * them (user/session/overhead_budget.c). */
static __always_inline void pbp_budget_charge_skip(struct pbp_budget_usage *usage, __u64 spent_ns)
{
	usage->skipped_ns += spent_ns;
}

/* The target's process ended: its accounts go (a reused pid starts unthrottled). */
static __always_inline void pbp_budget_forget(__u32 tgid)
{
	bpf_map_delete_elem(&budget_usage, &tgid);
	bpf_map_delete_elem(&budget_strides, &tgid);
}

#endif
