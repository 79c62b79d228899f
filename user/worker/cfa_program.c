// SPDX-License-Identifier: MIT
/*
 * Interpreting call-frame instructions once per FDE (see cfa_program.h).
 *
 * Every read checks the program's end; every loop advances the cursor, so a
 * program of N bytes costs O(N) whatever it holds.
 */
#include "worker/cfa_program.h"

#include <dwarf.h>
#include <errno.h>
#include <limits.h>
#include <string.h>

/* libdw refuses register numbers from here on (its frame holds an 8-byte slot per register). */
#define CFA_REGISTER_LIMIT ((uint64_t)INT32_MAX / 8)
#define CFA_PRIMARY_MASK 0xc0
#define CFA_OPERAND_MASK 0x3f

bool cfa_read_uleb(const uint8_t **cursor, const uint8_t *end, uint64_t *value)
{
	unsigned shift = 0;

	*value = 0;
	while (*cursor < end && shift < 64) {
		uint8_t byte = *(*cursor)++;

		*value |= (uint64_t)(byte & 0x7f) << shift;
		shift += 7;
		if (!(byte & 0x80))
			return true;
	}
	return false;
}

bool cfa_read_sleb(const uint8_t **cursor, const uint8_t *end, int64_t *value)
{
	unsigned shift = 0;
	uint64_t result = 0;

	while (*cursor < end && shift < 64) {
		uint8_t byte = *(*cursor)++;

		result |= (uint64_t)(byte & 0x7f) << shift;
		shift += 7;
		if (!(byte & 0x80)) {
			if (shift < 64 && (byte & 0x40))
				result |= ~0ull << shift;
			*value = (int64_t)result;
			return true;
		}
	}
	return false;
}

static bool read_fixed(const uint8_t **cursor, const uint8_t *end, size_t size, bool is_signed, uint64_t *value)
{
	uint64_t result = 0;

	if ((size_t)(end - *cursor) < size)
		return false;
	for (size_t i = 0; i < size; i++)
		result |= (uint64_t)(*cursor)[i] << (8 * i); /* x86-64 is little-endian */
	if (is_signed && size < 8 && (result >> (8 * size - 1)) & 1)
		result |= ~0ull << (8 * size);
	*cursor += size;
	*value = result;
	return true;
}

bool cfa_read_encoded(const uint8_t **cursor, const uint8_t *end, int encoding, uint64_t *value)
{
	int64_t signed_value;

	switch (encoding & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		return read_fixed(cursor, end, 8, false, value);
	case DW_EH_PE_udata2:
		return read_fixed(cursor, end, 2, false, value);
	case DW_EH_PE_udata4:
		return read_fixed(cursor, end, 4, false, value);
	case DW_EH_PE_sdata2:
		return read_fixed(cursor, end, 2, true, value);
	case DW_EH_PE_sdata4:
		return read_fixed(cursor, end, 4, true, value);
	case DW_EH_PE_uleb128:
		return cfa_read_uleb(cursor, end, value);
	case DW_EH_PE_sleb128:
		if (!cfa_read_sleb(cursor, end, &signed_value))
			return false;
		*value = (uint64_t)signed_value;
		return true;
	default:
		return false;
	}
}

/* ---- CFA expressions ---- */

/* One decoded operation of the few a CFA expression we recognize is made of. */
struct expression_op {
	uint8_t atom;
	uint64_t number;
	uint64_t number2;
};

static bool next_expression_op(const uint8_t **cursor, const uint8_t *end, struct expression_op *op)
{
	int64_t offset;

	memset(op, 0, sizeof(*op));
	op->atom = *(*cursor)++;
	if (op->atom >= DW_OP_breg0 && op->atom <= DW_OP_breg31) {
		if (!cfa_read_sleb(cursor, end, &offset))
			return false;
		op->number = (uint64_t)offset;
		return true;
	}
	if (op->atom == DW_OP_bregx) {
		if (!cfa_read_uleb(cursor, end, &op->number) || !cfa_read_sleb(cursor, end, &offset))
			return false;
		op->number2 = (uint64_t)offset;
		return true;
	}
	return (op->atom >= DW_OP_lit0 && op->atom <= DW_OP_lit31) || op->atom == DW_OP_and ||
	       op->atom == DW_OP_ge || op->atom == DW_OP_shl || op->atom == DW_OP_plus;
}

/* What a DW_CFA_def_cfa_expression's block [cursor, end) is, for the compact table. */
static void classify_cfa_expression(const uint8_t *cursor, const uint8_t *end, struct cfa_state *state)
{
	static const struct expression_op plt[] = {
		{ DW_OP_breg7, 8, 0 }, { DW_OP_breg16, 0, 0 }, { DW_OP_lit15, 0, 0 }, { DW_OP_and, 0, 0 },
		{ DW_OP_lit11, 0, 0 }, { DW_OP_ge, 0, 0 },     { DW_OP_lit3, 0, 0 },  { DW_OP_shl, 0, 0 },
		{ DW_OP_plus, 0, 0 },
	};
	struct expression_op first = { 0 }, op;
	size_t count = 0;
	bool is_plt = true;

	state->cfa_rule = CFA_EXPRESSION_OTHER;
	/* each op takes at least one byte: at most end - cursor iterations */
	while (cursor < end) {
		if (!next_expression_op(&cursor, end, &op))
			return;
		if (count == 0)
			first = op;
		if (count >= sizeof(plt) / sizeof(plt[0]) || op.atom != plt[count].atom ||
		    op.number != plt[count].number)
			is_plt = false;
		count++;
	}
	if (count == sizeof(plt) / sizeof(plt[0]) && is_plt) {
		state->cfa_rule = CFA_EXPRESSION_PLT;
	} else if (count == 1 && first.atom == DW_OP_bregx) {
		state->cfa_rule = CFA_EXPRESSION_BREG;
		state->cfa_register = first.number;
		state->cfa_offset = (int64_t)first.number2;
	} else if (count == 1 && first.atom >= DW_OP_breg0 && first.atom <= DW_OP_breg31) {
		state->cfa_rule = CFA_EXPRESSION_BREG;
		state->cfa_register = (uint64_t)(first.atom - DW_OP_breg0);
		state->cfa_offset = (int64_t)first.number;
	}
}

/* ---- the interpreter ---- */

struct interpreter {
	const struct cfa_cie *cie; /* NULL while running the CIE's own instructions */
	const uint8_t *cursor;
	const uint8_t *end;
	const uint8_t *program;
	uint64_t program_addr;
	struct cfa_state state;
	struct cfa_state remembered[CFA_MAX_REMEMBERED];
	size_t depth;
	uint64_t data_alignment; /* as libdw multiplies: unsigned */
};

/* libdw keeps a register's offset in a 61-bit field. */
static int64_t as_register_value(uint64_t value)
{
	return (int64_t)(value << 3) >> 3;
}

static struct cfa_register *tracked(struct interpreter *run, uint64_t regno)
{
	if (regno == CFA_REG_RBP)
		return &run->state.rbp;
	if (regno == CFA_REG_RIP)
		return &run->state.rip;
	return NULL;
}

static int set_register(struct interpreter *run, uint64_t regno, enum cfa_register_rule rule, uint64_t value)
{
	struct cfa_register *reg;

	if (regno >= CFA_REGISTER_LIMIT)
		return -EINVAL;
	reg = tracked(run, regno);
	if (reg)
		*reg = (struct cfa_register){ .rule = (uint8_t)rule, .value = as_register_value(value) };
	return 0;
}

/*
 * A register's expression rule, as libdw reports it: an empty block as no
 * location (undefined); a location CFA + N (the CFA pushed, then one
 * DW_OP_plus_uconst N) as the offset rule it is; anything else as an
 * expression.
 */
static int set_expression_register(struct interpreter *run, uint64_t regno, bool is_value, const uint8_t *block,
				   const uint8_t *block_end)
{
	struct cfa_register *reg;
	uint64_t offset;

	if (set_register(run, regno, is_value ? CFA_REGISTER_VAL_EXPRESSION : CFA_REGISTER_EXPRESSION, 0))
		return -EINVAL;
	reg = tracked(run, regno);
	if (!reg)
		return 0;
	if (block == block_end) {
		reg->rule = CFA_REGISTER_UNDEFINED;
	} else if (!is_value && *block++ == DW_OP_plus_uconst && cfa_read_uleb(&block, block_end, &offset) &&
		   block == block_end) {
		reg->rule = CFA_REGISTER_OFFSET;
		reg->value = (int64_t)offset;
	}
	return 0;
}

static int restore_register(struct interpreter *run, uint64_t regno)
{
	struct cfa_register *reg;

	if (!run->cie || regno >= CFA_REGISTER_LIMIT)
		return -EINVAL; /* a CIE has no initial state to restore to */
	reg = tracked(run, regno);
	if (reg)
		*reg = regno == CFA_REG_RBP ? run->cie->initial.rbp : run->cie->initial.rip;
	return 0;
}

static void require_register_offset(struct interpreter *run)
{
	if (run->state.cfa_rule != CFA_REG_OFFSET)
		run->state.cfa_rule = CFA_INVALID;
}

static bool read_uleb(struct interpreter *run, uint64_t *value)
{
	return cfa_read_uleb(&run->cursor, run->end, value);
}

static bool read_sleb_scaled(struct interpreter *run, uint64_t *value)
{
	int64_t factored;

	if (!cfa_read_sleb(&run->cursor, run->end, &factored))
		return false;
	*value = (uint64_t)factored * run->data_alignment;
	return true;
}

/* A block (ULEB128 length, then its bytes): its bytes, skipped over. */
static bool read_block(struct interpreter *run, const uint8_t **block, const uint8_t **block_end)
{
	uint64_t length;

	if (!read_uleb(run, &length) || length > (uint64_t)(run->end - run->cursor))
		return false;
	*block = run->cursor;
	*block_end = run->cursor + length;
	run->cursor = *block_end;
	return true;
}

/* The new location of a DW_CFA_set_loc (absolute or pc-relative, as FDE addresses are). */
static bool read_set_loc(struct interpreter *run, uint64_t *loc)
{
	int encoding = run->cie->fde_encoding;
	uint64_t operand_addr = run->program_addr + (uint64_t)(run->cursor - run->program);

	if (encoding < 0 || (encoding & DW_EH_PE_indirect) || !cfa_read_encoded(&run->cursor, run->end, encoding, loc))
		return false;
	switch (encoding & 0x70) {
	case DW_EH_PE_absptr:
		return true;
	case DW_EH_PE_pcrel:
		*loc += operand_addr;
		return true;
	default:
		return false;
	}
}

/*
 * Runs one instruction at run->cursor. A location-moving one sets *moved and
 * *loc (delta added or replaced); the others change run->state. 0 or -EINVAL.
 */
static int step(struct interpreter *run, bool *moved, uint64_t *loc)
{
	uint8_t opcode = *run->cursor++;
	uint64_t regno, operand, offset;
	const uint8_t *block, *block_end;

	*moved = false;
	switch (opcode & CFA_PRIMARY_MASK) {
	case DW_CFA_advance_loc:
		*moved = true;
		*loc += (uint64_t)(opcode & CFA_OPERAND_MASK) * (run->cie ? run->cie->code_alignment : 0);
		return run->cie ? 0 : -EINVAL;
	case DW_CFA_offset:
		if (!read_uleb(run, &offset))
			return -EINVAL;
		return set_register(run, opcode & CFA_OPERAND_MASK, CFA_REGISTER_OFFSET, offset * run->data_alignment);
	case DW_CFA_restore:
		return restore_register(run, opcode & CFA_OPERAND_MASK);
	default:
		break;
	}
	switch (opcode) {
	case DW_CFA_nop:
		return 0;
	case DW_CFA_set_loc:
		*moved = true;
		return run->cie && read_set_loc(run, loc) ? 0 : -EINVAL;
	case DW_CFA_advance_loc1:
	case DW_CFA_advance_loc2:
	case DW_CFA_advance_loc4:
	case DW_CFA_MIPS_advance_loc8: {
		static const size_t sizes[] = { 1, 2, 4 };
		size_t size = opcode == DW_CFA_MIPS_advance_loc8 ? 8 : sizes[opcode - DW_CFA_advance_loc1];

		*moved = true;
		if (!run->cie || !read_fixed(&run->cursor, run->end, size, false, &operand))
			return -EINVAL;
		*loc += operand * run->cie->code_alignment;
		return 0;
	}
	case DW_CFA_def_cfa:
		if (!read_uleb(run, &regno) || !read_uleb(run, &offset))
			return -EINVAL;
		goto def_cfa;
	case DW_CFA_def_cfa_sf:
		if (!read_uleb(run, &regno) || !read_sleb_scaled(run, &offset))
			return -EINVAL;
def_cfa:
		run->state.cfa_rule = CFA_REG_OFFSET;
		run->state.cfa_register = regno;
		run->state.cfa_offset = (int64_t)offset;
		return 0;
	case DW_CFA_def_cfa_register:
		if (!read_uleb(run, &regno))
			return -EINVAL;
		require_register_offset(run);
		run->state.cfa_register = regno;
		return 0;
	case DW_CFA_def_cfa_offset:
		if (!read_uleb(run, &offset))
			return -EINVAL;
		goto def_cfa_offset;
	case DW_CFA_def_cfa_offset_sf:
		if (!read_sleb_scaled(run, &offset))
			return -EINVAL;
def_cfa_offset:
		require_register_offset(run);
		run->state.cfa_offset = (int64_t)offset;
		return 0;
	case DW_CFA_def_cfa_expression:
		if (!read_block(run, &block, &block_end))
			return -EINVAL;
		classify_cfa_expression(block, block_end, &run->state);
		return 0;
	case DW_CFA_undefined:
	case DW_CFA_same_value:
		if (!read_uleb(run, &regno))
			return -EINVAL;
		return set_register(run, regno,
				    opcode == DW_CFA_undefined ? CFA_REGISTER_UNDEFINED : CFA_REGISTER_SAME_VALUE, 0);
	case DW_CFA_offset_extended:
	case DW_CFA_val_offset:
		if (!read_uleb(run, &regno) || !read_uleb(run, &offset))
			return -EINVAL;
		return set_register(run, regno,
				    opcode == DW_CFA_val_offset ? CFA_REGISTER_VAL_OFFSET : CFA_REGISTER_OFFSET,
				    offset * run->data_alignment);
	case DW_CFA_offset_extended_sf:
	case DW_CFA_val_offset_sf:
		if (!read_uleb(run, &regno) || !read_sleb_scaled(run, &offset))
			return -EINVAL;
		return set_register(run, regno,
				    opcode == DW_CFA_val_offset_sf ? CFA_REGISTER_VAL_OFFSET : CFA_REGISTER_OFFSET,
				    offset);
	case DW_CFA_GNU_negative_offset_extended:
		if (!read_uleb(run, &regno) || !read_uleb(run, &offset))
			return -EINVAL;
		return set_register(run, regno, CFA_REGISTER_OFFSET, (0 - offset) * run->data_alignment);
	case DW_CFA_register:
		if (!read_uleb(run, &regno) || !read_uleb(run, &operand))
			return -EINVAL;
		return set_register(run, regno, CFA_REGISTER_REGISTER, operand);
	case DW_CFA_expression:
	case DW_CFA_val_expression:
		if (!read_uleb(run, &regno) || !read_block(run, &block, &block_end))
			return -EINVAL;
		return set_expression_register(run, regno, opcode == DW_CFA_val_expression, block, block_end);
	case DW_CFA_restore_extended:
		if (!read_uleb(run, &regno))
			return -EINVAL;
		return restore_register(run, regno);
	case DW_CFA_remember_state:
		if (run->depth >= CFA_MAX_REMEMBERED)
			return -EINVAL;
		run->remembered[run->depth++] = run->state;
		return 0;
	case DW_CFA_restore_state:
		if (!run->depth)
			return -EINVAL;
		run->state = run->remembered[--run->depth];
		return 0;
	case DW_CFA_GNU_window_save:
		/* SPARC's shorthand, as libdw applies it on any machine: registers 16-31 at CFA + 8 * (n - 16) */
		run->state.rip = (struct cfa_register){ .rule = CFA_REGISTER_OFFSET, .value = 0 };
		return 0;
	case DW_CFA_GNU_args_size:
		return read_uleb(run, &operand) ? 0 : -EINVAL;
	default:
		return -EINVAL;
	}
}

int cfa_run_cie(struct cfa_cie *cie, const uint8_t *program, const uint8_t *end)
{
	struct interpreter run = {
		.cursor = program,
		.end = end,
		.program = program,
		.data_alignment = (uint64_t)cie->data_alignment,
		/* the x86-64 ABI: rbp and rip (the return-address column) keep their value */
		.state = {
			.cfa_rule = CFA_UNDEFINED,
			.rbp = { .rule = CFA_REGISTER_SAME_VALUE },
			.rip = { .rule = CFA_REGISTER_SAME_VALUE },
		},
	};
	uint64_t loc = 0;
	bool moved;

	while (run.cursor < run.end) {
		if (step(&run, &moved, &loc))
			return -EINVAL;
	}
	cie->initial = run.state;
	return 0;
}

int cfa_run_fde(const struct cfa_cie *cie, const uint8_t *program, const uint8_t *program_end,
		uint64_t program_addr, uint64_t start, uint64_t end, cfa_row_fn row, void *context,
		uint64_t *failed_at)
{
	struct interpreter run = {
		.cie = cie,
		.cursor = program,
		.end = program_end,
		.program = program,
		.program_addr = program_addr,
		.data_alignment = (uint64_t)cie->data_alignment,
		.state = cie->initial,
	};
	uint64_t loc = start, row_pc = start;
	bool moved;
	int err;

	while (run.cursor < run.end) {
		if (step(&run, &moved, &loc)) {
			*failed_at = row_pc;
			return -EINVAL;
		}
		/* an advance that stays at or before the row's pc only moves where later ones count from */
		if (!moved || loc <= row_pc)
			continue;
		err = row(context, row_pc, &run.state);
		if (err)
			return err;
		row_pc = loc;
		if (row_pc >= end)
			return 0;
	}
	return row_pc < end ? row(context, row_pc, &run.state) : 0;
}
