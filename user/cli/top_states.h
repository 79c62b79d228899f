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

/* A thread's name as its row shows it (a comm or a Python thread name), cut to this. */
#define TOP_STATE_NAME_MAX 32

struct top_state_weights {
	uint64_t total;
	uint64_t in_state[TOP_STATE_COUNT];
	char name[TOP_STATE_NAME_MAX]; /* a thread's, escaped, when its samples gave one; "" else */
};

struct top_states {
	struct top_state_weights all;
	struct intern_table thread_ids;     /* (pid, tid, interpreter id) -> id */
	struct top_state_weights *by_thread; /* by id */
	size_t thread_capacity;
};

/* How a file says a state, by its format and mode. */
enum top_state_source {
	TOP_SOURCE_NONE,      /* it cannot say: n/a */
	TOP_SOURCE_STATUS,    /* the sample's status bit */
	TOP_SOURCE_NO_ON_CPU, /* the absence of the on-CPU flag (Tachyon's idle) */
	TOP_SOURCE_NO_IDLE,   /* the absence of the idle event (MOJO full mode's on CPU) */
	TOP_SOURCE_EVERY,     /* every sample, by the mode (cpu: on CPU; gil: holds the GIL) */
};

struct top_state_sources {
	enum top_state_source of[TOP_STATE_COUNT];
};

/* What a file of this format ("mojo", "tachyon", ...) and mode ("cpu", "wall", "gil", "memory",
 * "full"; NULL unknown) can say of each state. */
void top_state_sources_of(struct top_state_sources *sources, const char *format, const char *mode);

void top_states_init(struct top_states *states);
void top_states_free(struct top_states *states);
/* Adds weight (the sample's, 0 or more) to its thread's states. 0 or -ENOMEM. */
int top_states_add(struct top_states *states, const struct pf_sample *sample, uint64_t weight);
/* The shares of the total, then one line per thread: each state as a share of that thread's time;
 * n/a where the file cannot say it. */
void top_states_print(const struct top_states *states, const struct top_state_sources *sources, FILE *out);

#endif
