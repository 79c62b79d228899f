// SPDX-License-Identifier: MIT
#include "cli/top_states.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "util/array.h"

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
	weigh(&states->all, status, weight);
	weigh(&states->by_thread[id], status, weight);
	return 0;
}

static double share(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static void print_row(FILE *out, const struct top_state_weights *weights)
{
	for (size_t i = 0; i < TOP_STATE_COUNT; i++)
		fprintf(out, " %13.2f%%", share(weights->in_state[i], weights->total));
	fputc('\n', out);
}

void top_states_print(const struct top_states *states, FILE *out)
{
	size_t threads = intern_count(&states->thread_ids);

	fprintf(out, "time by state (states overlap; a format that does not record one shows 0):\n");
	fprintf(out, "  %-24s", "thread (pid:tid)");
	for (size_t i = 0; i < TOP_STATE_COUNT; i++)
		fprintf(out, " %14s", state_columns[i].title);
	fprintf(out, " %14s\n", "share of all");
	fprintf(out, "  %-24s", "all");
	print_row(out, &states->all);
	for (size_t id = 0; id < threads; id++) {
		const struct thread_key *key = intern_key(&states->thread_ids, (uint32_t)id, NULL);
		char label[48];

		if (key->iid)
			snprintf(label, sizeof(label), "%" PRIu32 ":%" PRIu64 " (iid %" PRIu32 ")", key->pid, key->tid,
				 key->iid);
		else
			snprintf(label, sizeof(label), "%" PRIu32 ":%" PRIu64, key->pid, key->tid);
		fprintf(out, "  %-24s", label);
		for (size_t i = 0; i < TOP_STATE_COUNT; i++)
			fprintf(out, " %13.2f%%", share(states->by_thread[id].in_state[i], states->by_thread[id].total));
		fprintf(out, " %13.2f%%\n", share(states->by_thread[id].total, states->all.total));
	}
}
