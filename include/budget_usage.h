/* SPDX-License-Identifier: MIT */
/*
 * --max-overhead: what the sample program costs each target, and how many of its ticks it
 * walks. bpf/overhead_accounts.h accounts and thins; user/session/overhead_budget.c reads the
 * accounts and sets each target's stride (user/sampler/bpf_sampler.h carries them).
 */
#ifndef PYBPFPROF_BUDGET_USAGE_H
#define PYBPFPROF_BUDGET_USAGE_H

#ifndef __bpf__
#include <linux/types.h>
#endif

/*
 * Per target and CPU (the budget_usage map), counted since the target's first tick: its ticks,
 * the ones walked and sent (one in `stride` of them, the budget_strides map, 1 when absent),
 * the BPF time those took from the program's entry to the record sent, and the BPF time the
 * skipped ones took (their map lookups: at 10 kHz, a fraction of a 1% budget in itself).
 */
struct pbp_budget_usage {
	__u64 ticks;
	__u64 kept;
	__u64 spent_ns;
	__u64 skipped_ns;
};

/* A kept sample's weight is its stride, which pbp_record.weight holds. */
#define PBP_BUDGET_MAX_STRIDE 65535u

#endif
