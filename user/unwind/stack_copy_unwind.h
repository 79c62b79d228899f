/* SPDX-License-Identifier: MIT */
/*
 * The native walk BPF could not finish (include/sample_record.h, PBP_REC_STACK_COPY), finished in
 * userspace from the stack copy its record carries, once the tables exist: the same rows, read
 * with the same rules (include/unwind_table.h) as bpf/native_walk.h applies them, so that a late
 * stack is the one BPF would have walked. Target bytes are the record's: every read is checked
 * against the copy, and the walk is bounded by UNWIND_MAX_FRAMES.
 */
#ifndef PYBPFPROF_STACK_COPY_UNWIND_H
#define PYBPFPROF_STACK_COPY_UNWIND_H

#include <stddef.h>
#include <stdint.h>

#include <unwind_table.h>

#include "unwind/file_table.h"

/* A walk's own stops beside enum unwind_stop's. */
enum {
	/* A word the walk needed lies outside the copy (the copy ended first). */
	STACK_UNWIND_PAST_COPY = UNWIND_STOP_COUNT,
	/* The table of the pc's file is still being built: the walk can go on later. */
	STACK_UNWIND_WAIT,
};

struct stack_copy_view {
	uint64_t sp;            /* the target address of bytes[0] */
	const uint8_t *bytes;
	size_t len;
	const uint64_t *shims;  /* the eval activations' C-stack shims no frame claimed yet, leaf first */
	size_t shim_count;
	size_t *used;           /* if set: raised to the end of the last word the walk read, from bytes[0] */
};

/*
 * Where the rows of pc's file are: 0 with *table (a view the callee keeps alive) and the
 * mapping's load bias (file pc = pc - bias); else the stop (an enum unwind_stop, or
 * STACK_UNWIND_WAIT).
 */
typedef int (*stack_unwind_table_fn)(void *ctx, uint64_t pc, const struct unwind_table **table, uint64_t *bias);

/*
 * Continues the walk whose frames are pcs[0, *count) (leaf first, *count >= 1): the last one is
 * the frame it stopped at, with registers bp and copy->sp. Appends the callers (capacity at
 * most: UNWIND_MAX_FRAMES), sets PBP_NATIVE_PC_EVAL on frames holding a shim as BPF does, and
 * returns why it stopped: an enum unwind_stop, STACK_UNWIND_PAST_COPY or STACK_UNWIND_WAIT.
 */
int stack_copy_unwind(const struct stack_copy_view *copy, uint64_t bp, stack_unwind_table_fn table_at, void *ctx,
		      uint64_t *pcs, size_t *count, size_t capacity);

#endif
