/* SPDX-License-Identifier: MIT */
/*
 * Frames and stacks of a profile as dense ids, for the writers that lay a
 * profile out as tables (pprof, speedscope): a frame is kind + file + name +
 * line, a stack the frame ids of one sample, root first. Memory grows with
 * distinct frames and stacks, not with samples.
 */
#ifndef PYBPFPROF_STACK_TABLE_H
#define PYBPFPROF_STACK_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "formats/known_stacks.h"
#include "profile/profile.h"
#include "util/intern.h"

struct stack_table {
	struct intern_table frames; /* kind byte, line and function line (int32), file, NUL, name -> frame id */
	struct intern_table stacks; /* frame ids, root first -> stack id */
	uint32_t *scratch;          /* one sample's frame ids */
	size_t scratch_capacity;
	char *key;                  /* one frame's key */
	size_t key_capacity;
	struct known_stacks known;  /* pf_sample.stack_id -> its stack id here */
};

/* A frame id's parts (pointers into the table: valid until stack_table_free). */
struct stack_frame {
	enum pf_frame_kind kind;
	int32_t line;          /* <= 0: none */
	int32_t function_line; /* the function's first line; 0: unknown */
	const char *file;
	const char *name;
};

void stack_table_init(struct stack_table *table);
void stack_table_free(struct stack_table *table);
/* The id of the sample's stack, adding it and its frames if new; negative errno. */
int64_t stack_table_add(struct stack_table *table, const struct pf_sample *sample);
/* Stack id's frame ids, root first, read with stack_table_frame_at (the table stores
 * keys unaligned). */
const void *stack_table_stack(const struct stack_table *table, uint32_t id, size_t *depth);
static inline uint32_t stack_table_frame_at(const void *stack, size_t index)
{
	uint32_t frame;

	memcpy(&frame, (const char *)stack + index * sizeof(frame), sizeof(frame));
	return frame;
}
void stack_table_frame(const struct stack_table *table, uint32_t id, struct stack_frame *frame);
static inline size_t stack_table_frame_count(const struct stack_table *table)
{
	return intern_count(&table->frames);
}
static inline size_t stack_table_stack_count(const struct stack_table *table)
{
	return intern_count(&table->stacks);
}

#endif
