// SPDX-License-Identifier: MIT
#include "session/overhead_budget.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/bpf_sampler.h"
#include "util/array.h"

/* A raise asks for this much more than the need, so that a small rise does not raise it again. */
#define RAISE_HEADROOM 1.1
/* A lower stride is taken once the need with headroom is this far below the stride. */
#define LOWER_BELOW 0.8
/* Of the share, what the walks get at least, however much the skips take: skips that alone fill
 * the budget (events at a high rate, a small budget) cannot be thinned, and the largest stride
 * would leave a CPU's few ticks unwalked, their weight lost. */
#define WALKS_SHARE_MIN 0.5
/*
 * What a walk costs the target, over its BPF time: after the program returns, the target
 * fetches again the cache lines the walk's copies evicted (a 900-frame walk copies some 94 KB).
 * bench/budget.sh measured 1.2-1.7 times the BPF time at depth 900, 10 kHz (the unbudgeted
 * slowdown over the floor's, per walk; bench/results/budget-latest.md): the budget charges a
 * walk 1.5 times its BPF time, so that the slowdown it holds is the target's, not BPF's alone.
 */
#define WALK_TARGET_COST 1.5

/* Of one CPU, or of the target's own CPU time if more, what walks of walk_ns would take at every tick. */
static double unthrottled_share(double walk_ns, uint64_t ticks, uint64_t elapsed_ns, unsigned frequency_hz)
{
	double ticks_per_s = (double)ticks * 1e9 / (double)elapsed_ns;

	return walk_ns * (ticks_per_s > frequency_hz ? ticks_per_s : (double)frequency_hz) / 1e9;
}

double overhead_budget_skip_ns(const struct pbp_budget_usage *delta)
{
	return delta->ticks > delta->kept ? (double)delta->skipped_ns / (double)(delta->ticks - delta->kept) : 0;
}

struct pbp_budget_usage overhead_budget_charged(const struct pbp_budget_usage *delta)
{
	struct pbp_budget_usage charged = *delta;

	charged.spent_ns = (uint64_t)((double)delta->spent_ns * WALK_TARGET_COST);
	return charged;
}

uint32_t overhead_budget_stride(const struct pbp_budget_usage *delta, uint64_t elapsed_ns, double share,
				unsigned frequency_hz, uint32_t current)
{
	double walk_ns, skip_ns, walks_share, want;

	if (current < 1)
		current = 1;
	if (!delta->kept || !delta->ticks || !elapsed_ns || !(share > 0))
		return current;
	walk_ns = (double)delta->spent_ns / (double)delta->kept;
	/* At stride N a second costs ticks/N walks and the other ticks' skips: what the skips would
	 * take at any stride comes off the share first, and the walks' excess over a skip gets the
	 * rest, or WALKS_SHARE_MIN of the share where the skips leave less. */
	skip_ns = overhead_budget_skip_ns(delta);
	if (skip_ns > walk_ns)
		skip_ns = walk_ns;
	walks_share = share - unthrottled_share(skip_ns, delta->ticks, elapsed_ns, frequency_hz);
	if (walks_share < share * WALKS_SHARE_MIN)
		walks_share = share * WALKS_SHARE_MIN;
	want = ceil(unthrottled_share(walk_ns - skip_ns, delta->ticks, elapsed_ns, frequency_hz) / walks_share *
		    RAISE_HEADROOM);
	if (want < 1)
		want = 1;
	if (want > PBP_BUDGET_MAX_STRIDE)
		want = PBP_BUDGET_MAX_STRIDE;
	if (want > current || want <= LOWER_BELOW * current)
		return (uint32_t)want;
	return current;
}

void overhead_budget_init(struct overhead_budget *budget, double percent, unsigned frequency_hz)
{
	*budget = (struct overhead_budget){ .share = percent / 100.0, .frequency_hz = frequency_hz };
}

void overhead_budget_free(struct overhead_budget *budget)
{
	free(budget->targets);
	*budget = (struct overhead_budget){ 0 };
}

bool overhead_budget_look_begin(struct overhead_budget *budget, uint64_t now_us)
{
	if (now_us < budget->next_look_us)
		return false;
	budget->next_look_us = now_us + OVERHEAD_BUDGET_LOOK_MS * 1000ull;
	for (size_t i = 0; i < budget->count; i++)
		budget->targets[i].live = false;
	return true;
}

/* The targets come in the same order look after look, as they were added: the search starts
 * after the last one found, and a look costs one pass over the table, not one per target. */
static struct overhead_budget_target *find_target(struct overhead_budget *budget, pid_t pid)
{
	for (size_t n = 0; n < budget->count; n++) {
		size_t i = (budget->cursor + n) % budget->count;

		if (budget->targets[i].pid == pid) {
			budget->cursor = i + 1;
			return &budget->targets[i];
		}
	}
	return NULL;
}

/* The entry of the process that ended first, to make room for a live one; NULL if none ended. */
static struct overhead_budget_target *first_ended(struct overhead_budget *budget)
{
	struct overhead_budget_target *first = NULL;

	for (size_t i = 0; i < budget->count; i++)
		if (budget->targets[i].ended_us && (!first || budget->targets[i].ended_us < first->ended_us))
			first = &budget->targets[i];
	return first;
}

/* A new entry, its account from now on; NULL when the table is full of live targets or memory
 * short. A full table gives up the entry of the process that ended first (the summary counts it). */
static struct overhead_budget_target *add_target(struct overhead_budget *budget, pid_t pid, const char *name,
						 const struct pbp_budget_usage *usage, uint64_t now_us)
{
	struct overhead_budget_target *target;

	if (budget->count == OVERHEAD_BUDGET_MAX_TARGETS) {
		target = first_ended(budget);
		if (!target)
			return NULL;
		budget->forgotten++;
	} else if (array_reserve((void **)&budget->targets, &budget->capacity, budget->count + 1, sizeof(*target),
				 16)) {
		return NULL;
	} else {
		target = &budget->targets[budget->count++];
	}
	*target = (struct overhead_budget_target){ .pid = pid, .stride = 1, .max_stride = 1, .last = *usage,
						   .last_us = now_us };
	if (name)
		snprintf(target->name, sizeof(target->name), "%s", name);
	return target;
}

/* The stride set for target, and when it was throttled and released. */
static void set_stride(struct overhead_budget *budget, struct bpf_sampler *sampler,
		       struct overhead_budget_target *target, uint32_t stride, uint64_t now_us)
{
	if (stride == target->stride)
		return;
	if (bpf_sampler_set_budget_stride(sampler, target->pid, stride)) {
		budget->set_errors++;
		return;
	}
	if (stride > 1 && target->stride == 1) {
		if (!target->throttled_us)
			target->throttled_us = now_us;
		target->released_us = 0;
	} else if (stride == 1) {
		target->released_us = now_us;
	}
	target->stride = stride;
	if (stride > target->max_stride)
		target->max_stride = stride;
}

void overhead_budget_look_at(struct overhead_budget *budget, struct bpf_sampler *sampler, pid_t pid,
			     const char *name, uint64_t samples, uint64_t now_us)
{
	struct overhead_budget_target *target = find_target(budget, pid);
	struct pbp_budget_usage usage, delta, charged;
	uint64_t elapsed_ns;

	if (target && !target->ended_us && target->samples == samples) {
		target->live = true;
		return;
	}
	if (bpf_sampler_budget_usage(sampler, pid, &usage))
		return;
	if (target && target->ended_us) {
		/* A reused pid: a new process. */
		*target = (struct overhead_budget_target){ .pid = pid, .stride = 1, .max_stride = 1, .last = usage,
							   .last_us = now_us };
		if (name)
			snprintf(target->name, sizeof(target->name), "%s", name);
	} else if (!target) {
		target = add_target(budget, pid, name, &usage, now_us);
		if (!target)
			return;
	} else if (usage.ticks < target->last.ticks) {
		/* Its account began again (a reused pid, a re-made entry). */
		target->last = (struct pbp_budget_usage){ 0 };
		target->last_us = now_us;
	}
	target->live = true;
	target->samples = samples;
	delta = (struct pbp_budget_usage){ usage.ticks - target->last.ticks, usage.kept - target->last.kept,
					   usage.spent_ns - target->last.spent_ns,
					   usage.skipped_ns - target->last.skipped_ns };
	if (delta.kept < OVERHEAD_BUDGET_MIN_WALKS)
		return;
	elapsed_ns = (now_us - target->last_us) * 1000;
	if (!elapsed_ns)
		return;
	target->walk_us = (double)delta.spent_ns / (double)delta.kept / 1000.0;
	if (delta.ticks > delta.kept)
		target->skip_us = overhead_budget_skip_ns(&delta) / 1000.0;
	target->unthrottled_share = unthrottled_share(target->walk_us * 1000.0, delta.ticks, elapsed_ns,
						      budget->frequency_hz);
	charged = overhead_budget_charged(&delta);
	set_stride(budget, sampler, target,
		   overhead_budget_stride(&charged, elapsed_ns, budget->share, budget->frequency_hz, target->stride),
		   now_us);
	target->last = usage;
	target->last_us = now_us;
}

void overhead_budget_look_end(struct overhead_budget *budget, uint64_t now_us)
{
	size_t kept = 0;

	budget->throttled_now = 0;
	/* Gone targets are kept only if they were throttled: the summary names them, at the
	 * stride they had when they ended. */
	for (size_t i = 0; i < budget->count; i++) {
		struct overhead_budget_target *target = &budget->targets[i];

		if (!target->live && !target->throttled_us)
			continue;
		if (target->live && !target->ended_us)
			budget->throttled_now += target->stride > 1;
		else if (!target->ended_us)
			target->ended_us = now_us;
		budget->targets[kept++] = *target;
	}
	budget->count = kept;
	budget->cursor = 0;
}

size_t overhead_budget_throttled_count(const struct overhead_budget *budget)
{
	size_t count = 0;

	for (size_t i = 0; i < budget->count; i++)
		count += budget->targets[i].throttled_us != 0;
	return count;
}

double overhead_budget_rate_hz(const struct overhead_budget *budget, const struct overhead_budget_target *target)
{
	return (double)budget->frequency_hz / (double)(target->stride ? target->stride : 1);
}
