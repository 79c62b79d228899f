/* SPDX-License-Identifier: MIT */
/*
 * --max-overhead: each target's BPF walks may take at most a share of one CPU. Every
 * OVERHEAD_BUDGET_LOOK_MS the accounts BPF keeps per target (bpf/overhead_accounts.h) say what a
 * walk of it costs and how often it is on a CPU; a target whose walks at every tick would
 * exceed its share gets a stride N: BPF walks one tick in N, and each record weighs N, so its
 * shares and totals stay true at a lower rate. The stride follows the target's cost both ways.
 */
#ifndef PYBPFPROF_OVERHEAD_BUDGET_H
#define PYBPFPROF_OVERHEAD_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "budget_usage.h"

struct bpf_sampler;

#define OVERHEAD_BUDGET_LOOK_MS 100
/* The default for whole-host and --push runs: a share of one CPU per target, in percent. */
#define OVERHEAD_BUDGET_DEFAULT_PCT 2.0
/* A look learns the cost from at least this many walks; fewer, and the accounts add up to the next. */
#define OVERHEAD_BUDGET_MIN_WALKS 8
/* Targets followed at once (the sampler's target map holds no more). */
#define OVERHEAD_BUDGET_MAX_TARGETS 4096
#define OVERHEAD_BUDGET_NAME_MAX 16

/*
 * The stride that keeps a target's walks within share (0.01 for 1%) both of one CPU and of its
 * own CPU time (its slowdown), from its account over elapsed_ns at stride current, sampled at
 * frequency_hz: a walk's cost times its ticks per second is the CPU it would take unthrottled,
 * and a walk's cost times the rate the share of its own CPU time (ticks come frequency_hz a
 * second of it), whichever is more: a process starved by its neighbours, or running on a
 * fraction of a CPU, is not walked more for it. A higher need is met at once (with a tenth to
 * spare); a lower one only once it is a fifth below the stride, so that noise does not flap it.
 */
uint32_t overhead_budget_stride(const struct pbp_budget_usage *delta, uint64_t elapsed_ns, double share,
				unsigned frequency_hz, uint32_t current);
/* The account as the target pays it: its walks' BPF time times what a walk costs it after
 * (the cache lines refilled, measured in bench/budget.sh), its skips' as they are. */
struct pbp_budget_usage overhead_budget_charged(const struct pbp_budget_usage *delta);
/* What a skipped tick cost in the account, in ns (0: none was skipped). The stride allows for
 * it: at stride N the other N - 1 ticks of each N still pay it, so the skips' own share comes
 * off the budget before the walks are fitted in (into half of it at least). */
double overhead_budget_skip_ns(const struct pbp_budget_usage *delta);

/* What the budget did to one target. */
struct overhead_budget_target {
	pid_t pid;
	char name[OVERHEAD_BUDGET_NAME_MAX]; /* its comm when first seen ("" unknown) */
	bool live;                  /* seen among the targets at the last look */
	uint64_t samples;           /* its records at the last look */
	struct pbp_budget_usage last; /* the account at the last look that learned from it */
	uint64_t last_us;
	uint32_t stride;            /* now (1: not throttled) */
	uint32_t max_stride;
	uint64_t throttled_us;      /* when first throttled, CLOCK_MONOTONIC (0: never) */
	uint64_t released_us;       /* when last back to every tick (0: throttled still, or never) */
	uint64_t ended_us;          /* when a look first missed it among the targets (0: live) */
	double walk_us;             /* a walk's cost, at the last look that learned */
	double skip_us;             /* a skipped tick's, at the last look that saw one (0: none yet) */
	double unthrottled_share;   /* of one CPU, or of its own CPU time if more, its walks would take
				     * at every tick, then */
};

struct overhead_budget {
	double share;               /* of one CPU per target */
	unsigned frequency_hz;
	uint64_t next_look_us;
	struct overhead_budget_target *targets;
	size_t count;
	size_t capacity;
	size_t cursor;              /* where the next search for a target starts */
	size_t throttled_now;       /* targets at a stride above 1 at the last look */
	uint64_t set_errors;        /* strides BPF did not take */
	uint64_t forgotten;         /* throttled processes that ended, dropped for room (not in the summary) */
};

void overhead_budget_init(struct overhead_budget *budget, double percent, unsigned frequency_hz);
void overhead_budget_free(struct overhead_budget *budget);
/*
 * A look, at most every OVERHEAD_BUDGET_LOOK_MS: overhead_budget_look_begin says whether one is
 * due; then each live target is looked at (its stride set anew), and the look ends.
 */
bool overhead_budget_look_begin(struct overhead_budget *budget, uint64_t now_us);
/* name: its comm (NULL unknown); samples: its records so far (a target without new ones costs
 * no look at its account: an idle process on a whole host costs nothing). */
void overhead_budget_look_at(struct overhead_budget *budget, struct bpf_sampler *sampler, pid_t pid,
			     const char *name, uint64_t samples, uint64_t now_us);
void overhead_budget_look_end(struct overhead_budget *budget, uint64_t now_us);
/* Targets ever throttled. */
size_t overhead_budget_throttled_count(const struct overhead_budget *budget);
/* The rate a target is sampled at now, per CPU it runs on. */
double overhead_budget_rate_hz(const struct overhead_budget *budget, const struct overhead_budget_target *target);

#endif
