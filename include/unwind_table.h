/* SPDX-License-Identifier: MIT */
/*
 * What BPF and userspace must agree on to unwind native (C) frames without
 * frame pointers: the compact unwind table of one ELF file.
 *
 * Userspace (user/target/unwind_table.c) builds one table per distinct file
 * from its .eh_frame (else .debug_frame). A table is relative to the file:
 * every `pc` is a link-time virtual address of the file (what readelf shows),
 * so one table serves every process that maps the file; the process's
 * mapping supplies the load bias (file pc = runtime pc - bias).
 *
 * The rows are sorted by pc, no two share a pc, and each holds from its pc up
 * to the next row's pc. The last row is always UNWIND_ROW_GAP, so every pc
 * inside the file's CFI has a row that ends. To unwind a frame at file pc P
 * (P - 1 for a caller frame, whose pc is a return address): find the last row
 * with row.pc <= P (binary search, UNWIND_SEARCH_STEPS halvings suffice for
 * UNWIND_TABLE_MAX_ROWS); no such row means "no CFI". Then by row.kind:
 *
 *   CFA_RSP / CFA_RBP  CFA = rsp (or rbp) + 8 * cfa_offset8; the return address
 *                      is at CFA - 8; the caller's rsp is CFA; the caller's rbp
 *                      is read at CFA - 8 * rbp_offset8, or unchanged if
 *                      rbp_offset8 is 0.
 *   PLT                a PLT stub: CFA = rsp + 8 + ((pc & 15) >= 11 ? 8 : 0)
 *                      (pc & 15 is the same at runtime: PLTs are 16-byte
 *                      aligned and biases page-aligned); rbp unchanged.
 *   ROOT               the outermost frame (_start; a thread's in clone): the
 *                      walk ends, complete.
 *   UNSUPPORTED        a rule the compact form cannot express (signal frames,
 *                      expressions, registers saved in registers): end the walk.
 *   GAP                no CFI covers [pc, next row): end the walk.
 *
 * rsp and rbp are DWARF registers 7 and 6; nothing else is tracked, which
 * covers every row of libpython 3.12 and Debian's python3.11, and all but 6
 * of libc's (the context-switching functions, whose CFA is in rdi or rdx).
 */
#ifndef PYBPFPROF_UNWIND_TABLE_H
#define PYBPFPROF_UNWIND_TABLE_H

#ifdef __bpf__
/* vmlinux.h provides __u8 .. __u64 */
#else
#include <linux/types.h>
#endif

/* Rows of one file's table, GAPs included: libpython 3.12 has 69k, Debian's
 * python3.11 65k, libc 28k. Larger files get no native unwinding (the builder
 * fails with -E2BIG) rather than an unbounded map. */
#define UNWIND_TABLE_MAX_ROWS (1u << 18)
/* Halvings of [0, count) that bring any count <= UNWIND_TABLE_MAX_ROWS to one row. */
#define UNWIND_SEARCH_STEPS 19
/* Native frames one sample may walk. */
#define UNWIND_MAX_FRAMES 256

/* The order matters to the builder: at one pc a rule wins over a GAP. */
enum unwind_row_kind {
	UNWIND_ROW_CFA_RSP = 0,
	UNWIND_ROW_CFA_RBP = 1,
	UNWIND_ROW_PLT = 2,
	UNWIND_ROW_ROOT = 3,
	UNWIND_ROW_UNSUPPORTED = 4,
	UNWIND_ROW_GAP = 5,
};

/* Offsets count 8-byte units: compilers keep rsp 8-byte aligned at every
 * instruction, and CPython has frames over 64 KiB (rsp+65616) that bytes in a
 * __u16 would not reach. */
struct unwind_row {
	__u32 pc;          /* file-relative start of the row (link-time vaddr) */
	__u16 cfa_offset8; /* CFA_RSP / CFA_RBP: CFA = register + 8 * cfa_offset8 */
	__u8 rbp_offset8;  /* caller's rbp saved at CFA - 8 * rbp_offset8; 0: unchanged */
	__u8 kind;         /* enum unwind_row_kind */
};

_Static_assert(sizeof(struct unwind_row) == 8, "struct unwind_row is the BPF map value layout");

/* Why a native walk stopped: what a sample record carries next to its native pcs. */
enum unwind_stop {
	UNWIND_STOP_ROOT = 0,        /* reached a ROOT row: the stack is complete */
	UNWIND_STOP_NO_MAPPING = 1,  /* pc in no file mapping of the process (JIT, anonymous) */
	UNWIND_STOP_NO_TABLE = 2,    /* the file has no table (none loaded, no CFI, too large) */
	UNWIND_STOP_NO_CFI = 3,      /* pc in a GAP, or before the table's first row */
	UNWIND_STOP_UNSUPPORTED = 4, /* pc in an UNSUPPORTED row */
	UNWIND_STOP_READ_FAULT = 5,  /* the return address or saved rbp could not be read */
	UNWIND_STOP_MAX_FRAMES = 6,  /* UNWIND_MAX_FRAMES reached */
	UNWIND_STOP_BAD_FRAME = 7,   /* the CFA did not grow, or the return address was 0 */
};

#endif
