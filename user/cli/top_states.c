// SPDX-License-Identifier: MIT
#include "cli/top_states.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "util/array.h"
#include "util/text_quote.h"

static const struct {
	uint32_t status;
	const char *title;
} state_columns[TOP_STATE_COUNT] = {
	[TOP_STATE_ON_CPU] = { PF_STATUS_ON_CPU, "on CPU" },
	[TOP_STATE_IDLE] = { PF_STATUS_IDLE, "idle" },
	[TOP_STATE_HAS_GIL] = { PF_STATUS_HAS_GIL, "holds GIL" },
	[TOP_STATE_GIL_REQUESTED] = { PF_STATUS_GIL_REQUESTED, "waits for GIL" },
	[TOP_STATE_GC] = { PF_STATUS_GC, "GC" },
};

void top_state_sources_of(struct top_state_sources *sources, const char *format, const char *mode)
{
	bool is_mode_cpu = mode && !strcmp(mode, "cpu"), is_mode_gil = mode && !strcmp(mode, "gil");

	for (size_t i = 0; i < TOP_STATE_COUNT; i++)
		sources->of[i] = TOP_SOURCE_NONE;
	if (!strcmp(format, "tachyon")) {
		/* CPython's status bits; GC is its "~" "<GC>" leaf frame. */
		sources->of[TOP_STATE_ON_CPU] = TOP_SOURCE_STATUS;
		sources->of[TOP_STATE_IDLE] = TOP_SOURCE_NO_ON_CPU;
		sources->of[TOP_STATE_HAS_GIL] = TOP_SOURCE_STATUS;
		sources->of[TOP_STATE_GIL_REQUESTED] = TOP_SOURCE_STATUS;
		sources->of[TOP_STATE_GC] = TOP_SOURCE_STATUS;
	} else if (!strcmp(format, "mojo")) {
		/* Austin's events: GC, and IDLE in full mode only; no GIL, no on-CPU flag. */
		sources->of[TOP_STATE_GC] = TOP_SOURCE_STATUS;
		if (mode && !strcmp(mode, "full")) {
			sources->of[TOP_STATE_ON_CPU] = TOP_SOURCE_NO_IDLE;
			sources->of[TOP_STATE_IDLE] = TOP_SOURCE_STATUS;
		}
	}
	/* A cpu-mode sample is a thread on a CPU, a gil-mode one the GIL's holder, whatever the format. */
	if (is_mode_cpu && sources->of[TOP_STATE_ON_CPU] == TOP_SOURCE_NONE)
		sources->of[TOP_STATE_ON_CPU] = TOP_SOURCE_EVERY;
	if (is_mode_gil && sources->of[TOP_STATE_HAS_GIL] == TOP_SOURCE_NONE)
		sources->of[TOP_STATE_HAS_GIL] = TOP_SOURCE_EVERY;
}

/* A thread that runs code in subinterpreters is one row per interpreter: their GILs differ. */
struct thread_key {
	uint64_t tid;
	uint32_t pid;
	uint32_t iid;
};

void top_states_init(struct top_states *states)
{
	memset(states, 0, sizeof(*states));
	intern_init(&states->thread_ids);
}

void top_states_free(struct top_states *states)
{
	intern_free(&states->thread_ids);
	free(states->by_thread);
}

static void weigh(struct top_state_weights *weights, uint32_t status, uint64_t weight)
{
	weights->total += weight;
	for (size_t i = 0; i < TOP_STATE_COUNT; i++)
		if (status & state_columns[i].status)
			weights->in_state[i] += weight;
}

/* The status, with GC also where the file says it as CPython does: a "~" "<GC>" leaf frame (Tachyon
 * has no GC bit). */
static uint32_t status_of(const struct pf_sample *sample)
{
	const struct pf_frame *leaf = sample->frame_count ? &sample->frames[sample->frame_count - 1] : NULL;

	if (leaf && leaf->kind == PF_FRAME_PYTHON && !strcmp(leaf->file, "~") && !strcmp(leaf->name, "<GC>"))
		return sample->status | PF_STATUS_GC;
	return sample->status;
}

int top_states_add(struct top_states *states, const struct pf_sample *sample, uint64_t weight)
{
	struct thread_key key = { .tid = sample->tid, .pid = sample->pid, .iid = sample->iid };
	bool is_new = false;
	int64_t id = intern_add(&states->thread_ids, &key, sizeof(key), &is_new);
	uint32_t status = status_of(sample);

	if (id < 0)
		return (int)id;
	if (ARRAY_RESERVE(states->by_thread, states->thread_capacity, (size_t)id + 1))
		return -ENOMEM;
	if (is_new)
		states->by_thread[id] = (struct top_state_weights){ 0 };
	if (!states->by_thread[id].name[0] && sample->thread_name)
		text_escaped(states->by_thread[id].name, sizeof(states->by_thread[id].name), sample->thread_name);
	weigh(&states->all, status, weight);
	weigh(&states->by_thread[id], status, weight);
	return 0;
}

static double share(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* One state's share of weights' total as its source says it; negative where it cannot say. */
static double state_share(const struct top_state_weights *weights, const struct top_state_sources *sources,
			  size_t state)
{
	switch (sources->of[state]) {
	case TOP_SOURCE_STATUS:
		return share(weights->in_state[state], weights->total);
	case TOP_SOURCE_NO_ON_CPU:
		return share(weights->total - weights->in_state[TOP_STATE_ON_CPU], weights->total);
	case TOP_SOURCE_NO_IDLE:
		return share(weights->total - weights->in_state[TOP_STATE_IDLE], weights->total);
	case TOP_SOURCE_EVERY:
		return share(weights->total, weights->total);
	default:
		return -1;
	}
}

static void print_states(FILE *out, const struct top_state_weights *weights, const struct top_state_sources *sources)
{
	for (size_t i = 0; i < TOP_STATE_COUNT; i++) {
		double state = state_share(weights, sources, i);

		if (state < 0)
			fprintf(out, " %14s", "n/a");
		else
			fprintf(out, " %13.2f%%", state);
	}
}

void top_states_print(const struct top_states *states, const struct top_state_sources *sources, FILE *out)
{
	size_t threads = intern_count(&states->thread_ids);

	fprintf(out, "time by state (states overlap; n/a: this file does not record it):\n");
	fprintf(out, "  %-24s", "thread (pid:tid)");
	for (size_t i = 0; i < TOP_STATE_COUNT; i++)
		fprintf(out, " %14s", state_columns[i].title);
	fprintf(out, " %14s\n", "share of all");
	fprintf(out, "  %-24s", "all");
	print_states(out, &states->all, sources);
	fputc('\n', out);
	for (size_t id = 0; id < threads; id++) {
		const struct thread_key *key = intern_key(&states->thread_ids, (uint32_t)id, NULL);
		char label[48 + TOP_STATE_NAME_MAX];
		int len;

		if (key->iid)
			len = snprintf(label, sizeof(label), "%" PRIu32 ":%" PRIu64 " (iid %" PRIu32 ")", key->pid,
				       key->tid, key->iid);
		else
			len = snprintf(label, sizeof(label), "%" PRIu32 ":%" PRIu64, key->pid, key->tid);
		if (states->by_thread[id].name[0] && len > 0 && (size_t)len < sizeof(label))
			snprintf(label + len, sizeof(label) - (size_t)len, " %s", states->by_thread[id].name);
		fprintf(out, "  %-24s", label);
		print_states(out, &states->by_thread[id], sources);
		fprintf(out, " %13.2f%%\n", share(states->by_thread[id].total, states->all.total));
	}
}
