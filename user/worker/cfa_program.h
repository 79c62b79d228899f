/* SPDX-License-Identifier: MIT */
/*
 * One pass over a CIE's and an FDE's call-frame instructions (DWARF 5 section
 * 6.4.2) on x86-64: the rows of the FDE in order, each with the rules of the
 * CFA, rbp and the return address (rip), the only registers the compact
 * unwind table keeps. The instructions are the target's (hostile): every
 * operand is bounds-checked, the remembered-state stack is bounded, and
 * malformed instructions end the program with an error, never a crash.
 *
 * The semantics are libdw's (its execute_cfi), so that the table is the one
 * dwarf_cfi_addrframe() row by row would give: the same defaults (the x86-64
 * ABI's same-value rbp and rip), the same errors (a restore or an advance in
 * a CIE, a register number past libdw's limit, restore_state on an empty
 * stack, a def_cfa_offset or def_cfa_register after a CFA expression makes the
 * CFA invalid), the same 61-bit register offsets.
 */
#ifndef PYBPFPROF_CFA_PROGRAM_H
#define PYBPFPROF_CFA_PROGRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CFA_REG_RBP 6
#define CFA_REG_RSP 7
#define CFA_REG_RIP 16

/* Remembered states one program may stack (compilers nest one or two). */
#define CFA_MAX_REMEMBERED 64

enum cfa_rule {
	CFA_UNDEFINED = 0,     /* no rule yet */
	CFA_REG_OFFSET,        /* register + offset (def_cfa*) */
	CFA_EXPRESSION_BREG,   /* an expression that is one DW_OP_breg: register + offset too */
	CFA_EXPRESSION_PLT,    /* GNU ld's x86-64 PLT: rsp + 8 + ((rip & 15) >= 11 ? 8 : 0) */
	CFA_EXPRESSION_OTHER,
	CFA_INVALID,           /* def_cfa_offset / def_cfa_register after an expression */
};

enum cfa_register_rule {
	CFA_REGISTER_UNSPECIFIED = 0, /* read as undefined: x86-64 has no same-value default */
	CFA_REGISTER_UNDEFINED,
	CFA_REGISTER_SAME_VALUE,
	CFA_REGISTER_OFFSET,     /* saved at CFA + value */
	CFA_REGISTER_VAL_OFFSET,
	CFA_REGISTER_REGISTER,
	CFA_REGISTER_EXPRESSION,
	CFA_REGISTER_VAL_EXPRESSION,
};

struct cfa_register {
	uint8_t rule;  /* enum cfa_register_rule */
	int64_t value; /* CFA_REGISTER_OFFSET / VAL_OFFSET: the offset, as libdw keeps it (61 bits) */
};

/* The rules of one row. */
struct cfa_state {
	uint8_t cfa_rule;    /* enum cfa_rule */
	uint64_t cfa_register; /* CFA_REG_OFFSET, CFA_EXPRESSION_BREG */
	int64_t cfa_offset;    /* CFA_REG_OFFSET, CFA_EXPRESSION_BREG */
	struct cfa_register rbp;
	struct cfa_register rip;
};

/* What an FDE's program needs of its CIE. */
struct cfa_cie {
	uint64_t code_alignment;
	int64_t data_alignment;
	int fde_encoding;           /* DW_EH_PE_* of DW_CFA_set_loc operands */
	struct cfa_state initial;   /* after the ABI's defaults and the CIE's initial instructions */
};

/*
 * The CIE's initial state: the x86-64 ABI's defaults, then its initial
 * instructions [program, end). 0, or -EINVAL if they are malformed or do what
 * a CIE may not (advance, restore).
 */
int cfa_run_cie(struct cfa_cie *cie, const uint8_t *program, const uint8_t *end);

/* Called with each row of an FDE, in order; a non-zero return ends the program with it. */
typedef int (*cfa_row_fn)(void *context, uint64_t pc, const struct cfa_state *state);

/*
 * The rows of the FDE covering [start, end) whose instructions are
 * [program, program_end), program_addr being the link-time address of
 * program[0] (for pc-relative DW_CFA_set_loc). A row is reported when an
 * advance moves past its pc, and the last one at the program's end; rows at
 * or past end are not. 0, or what row returned, or -EINVAL with *failed_at
 * the pc of the row the malformed instruction is in (no row is reported for it).
 */
int cfa_run_fde(const struct cfa_cie *cie, const uint8_t *program, const uint8_t *program_end,
		uint64_t program_addr, uint64_t start, uint64_t end, cfa_row_fn row, void *context,
		uint64_t *failed_at);

/* LEB128 and DW_EH_PE_* readers, bounded by end; false if the value does not fit. */
bool cfa_read_uleb(const uint8_t **cursor, const uint8_t *end, uint64_t *value);
bool cfa_read_sleb(const uint8_t **cursor, const uint8_t *end, int64_t *value);
/* An encoded pointer's value, without its application (pc-relative etc.). */
bool cfa_read_encoded(const uint8_t **cursor, const uint8_t *end, int encoding, uint64_t *value);

#endif
