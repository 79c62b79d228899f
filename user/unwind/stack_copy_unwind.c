// SPDX-License-Identifier: MIT
#include "unwind/stack_copy_unwind.h"

#include <stdbool.h>
#include <string.h>

#include <sample_record.h>

/* The registers of the frame being unwound, as bpf/native_walk.h's struct pbp_native_walk holds them. */
struct copy_walk {
	const struct stack_copy_view *copy;
	uint64_t pc, sp, bp;
	size_t next_shim;
	int holds_shim; /* as BPF's: set or cleared only where a frame's extent is known */
};

/* One word of the copied stack at addr: 0, or -1 when it lies outside the copy. */
static int copy_word(const struct stack_copy_view *copy, uint64_t addr, uint64_t *word)
{
	uint64_t rel = addr - copy->sp;

	/* written so that no sum can wrap: addr comes from the target's stack */
	if (addr < copy->sp || rel >= copy->len || copy->len - rel < sizeof(*word))
		return -1;
	memcpy(word, copy->bytes + rel, sizeof(*word));
	if (copy->used && *copy->used < rel + sizeof(*word))
		*copy->used = rel + sizeof(*word);
	return 0;
}

/* bpf/native_walk.h's pbp_claim_shim. */
static void claim_shim(struct copy_walk *walk, uint64_t sp, uint64_t cfa)
{
	uint64_t shim;

	walk->holds_shim = 0;
	if (walk->next_shim >= walk->copy->shim_count)
		return;
	shim = walk->copy->shims[walk->next_shim];
	if (shim < sp) {
		walk->next_shim++;
		return;
	}
	if (shim < cfa) {
		walk->holds_shim = 1;
		walk->next_shim++;
	}
}

/* bpf/native_walk.h's pbp_unwind_frame: -1 (unwound to the caller's registers), or the stop. */
static int unwind_frame(struct copy_walk *walk, bool is_caller, stack_unwind_table_fn table_at, void *ctx)
{
	const struct unwind_table *table;
	const struct unwind_row *row;
	uint64_t bias, file_pc, cfa, bp = walk->bp, pc;
	int stop = table_at(ctx, walk->pc, &table, &bias);

	if (stop != 0)
		return stop;
	file_pc = walk->pc - bias - (is_caller ? 1 : 0);
	row = unwind_table_lookup(table, file_pc);
	if (!row)
		return UNWIND_STOP_NO_CFI;
	switch (row->kind) {
	case UNWIND_ROW_CFA_RSP:
		cfa = walk->sp + 8 * (uint64_t)row->cfa_offset8;
		break;
	case UNWIND_ROW_CFA_RBP:
		cfa = walk->bp + 8 * (uint64_t)row->cfa_offset8;
		break;
	case UNWIND_ROW_PLT:
		cfa = walk->sp + 8 + ((file_pc & 15) >= 11 ? 8 : 0);
		break;
	case UNWIND_ROW_ROOT:
		return UNWIND_STOP_ROOT;
	case UNWIND_ROW_UNSUPPORTED:
		return UNWIND_STOP_UNSUPPORTED;
	default:
		return UNWIND_STOP_NO_CFI;
	}
	if (cfa <= walk->sp)
		return UNWIND_STOP_BAD_FRAME;
	claim_shim(walk, walk->sp, cfa);
	if (row->kind != UNWIND_ROW_PLT && row->rbp_offset8 != 0 &&
	    copy_word(walk->copy, cfa - 8 * (uint64_t)row->rbp_offset8, &bp) != 0)
		return STACK_UNWIND_PAST_COPY;
	if (copy_word(walk->copy, cfa - 8, &pc) != 0)
		return STACK_UNWIND_PAST_COPY;
	walk->bp = bp;
	walk->pc = pc;
	if (pc == 0)
		return UNWIND_STOP_BAD_FRAME;
	walk->sp = cfa;
	return -1;
}

int stack_copy_unwind(const struct stack_copy_view *copy, uint64_t bp, stack_unwind_table_fn table_at, void *ctx,
		      uint64_t *pcs, size_t *count, size_t capacity)
{
	struct copy_walk walk = { .copy = copy, .sp = copy->sp, .bp = bp };
	size_t index;

	if (*count == 0)
		return UNWIND_STOP_NOT_WALKED;
	if (capacity > UNWIND_MAX_FRAMES)
		capacity = UNWIND_MAX_FRAMES;
	index = *count - 1;
	walk.pc = pcs[index] & ~PBP_NATIVE_PC_EVAL;
	/* BPF marked the stopping frame from the state its walk had: the walk goes on from it. */
	walk.holds_shim = (pcs[index] & PBP_NATIVE_PC_EVAL) != 0;
	for (;;) {
		int stop;

		if (index >= capacity)
			return UNWIND_STOP_MAX_FRAMES;
		pcs[index] = walk.pc;
		*count = index + 1;
		stop = unwind_frame(&walk, index != 0, table_at, ctx);
		if (walk.holds_shim)
			pcs[index] |= PBP_NATIVE_PC_EVAL;
		if (stop >= 0)
			return stop;
		index++;
	}
}
