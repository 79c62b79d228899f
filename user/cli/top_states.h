/* SPDX-License-Identifier: MIT */
/*
 * `pybpfprof top --by-state`: where the time went by thread state (on CPU,
 * idle, holding the GIL, waiting for it, collecting garbage), overall and per
 * thread.
 */
#ifndef PYBPFPROF_CLI_TOP_STATES_H
#define PYBPFPROF_CLI_TOP_STATES_H

#include <stdint.h>
#include <stdio.h>

#include "profile/profile.h"
#include "util/intern.h"

/* The states reported, one column each. */
enum top_state {
	TOP_STATE_ON_CPU,
	TOP_STATE_IDLE,
	TOP_STATE_HAS_GIL,
	TOP_STATE_GIL_REQUESTED,
	TOP_STATE_GC,
	TOP_STATE_COUNT,
};

struct top_state_weights {
	uint64_t total;
	uint64_t in_state[TOP_STATE_COUNT];
};

struct top_states {
	struct top_state_weights all;
	struct intern_table thread_ids;     /* (pid, tid, interpreter id) -> id */
	struct top_state_weights *by_thread; /* by id */
	size_t thread_capacity;
};

void top_states_init(struct top_states *states);
void top_states_free(struct top_states *states);
/* Adds weight (the sample's, 0 or more) to its thread's states. 0 or -ENOMEM. */
int top_states_add(struct top_states *states, const struct pf_sample *sample, uint64_t weight);
/* The shares of the total, then one line per thread: each state as a share of that thread's time. */
void top_states_print(const struct top_states *states, FILE *out);

#endif
