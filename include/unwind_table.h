/* SPDX-License-Identifier: MIT */
/*
 * What BPF and userspace must agree on to unwind native (C) frames without
 * frame pointers: the compact unwind table of one ELF file.
 *
 * Userspace (user/unwind/file_table.c) builds one table per distinct file
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
	UNWIND_STOP_DELETED_FILE = 8, /* pc in a mapping of a file deleted since (not opened) */
	UNWIND_STOP_NOT_WALKED = 9,  /* native stacks off, or no user registers (a kernel thread) */
	UNWIND_STOP_COUNT = 10,
};

/*
 * Where BPF finds a table: the `unwind_tables` ARRAY (UNWIND_MAX_TABLES entries)
 * indexed by table id holds each loaded file's rows as a chunk and a range in it.
 * Userspace frees a range when no target maps its file any more.
 *
 * The rows live in the `unwind_rows` ARRAY_OF_MAPS: chunks, each an mmapable ARRAY
 * that userspace creates when a table needs room and frees when its last table
 * goes. Every page of a chunk is resident (kernel memory; the profiler maps a
 * table's pages only to write them, or to read them for a late walk), so chunks
 * are small, UNWIND_CHUNK_ROWS rows (1 MiB),
 * and a table whose slots exceed that gets a chunk of its own, the power of two
 * of rows that fits it: memory follows the tables placed. The sizes of all chunks
 * held at once never exceed the rows asked for (UNWIND_ROWS_DEFAULT unless the
 * user asks). A table (its rows and page index) lies in one chunk.
 */
#define UNWIND_MAX_TABLES 4096
#define UNWIND_CHUNK_ROWS (1u << 17)
/* The largest chunk: the largest table and its page index. */
#define UNWIND_CHUNK_MAX_ROWS (1u << 19)
#define UNWIND_MAX_CHUNKS 64
#define UNWIND_ROWS_DEFAULT (1u << 22) /* 32 MiB of rows at most: some 30 distinct interpreters' files */
/* A run with given targets (-p, a launched command): 8 MiB at most, some 8 interpreters' files. */
#define UNWIND_ROWS_TARGETED (1u << 20)

#define UNWIND_TABLE_NONE 0xffffffffu

/*
 * A table's page index narrows the search: entry p is the row that holds file
 * pc page_base + (p << UNWIND_PAGE_SHIFT), so the row of any pc in that page
 * lies in [entry p, entry p + 1]; one more entry closes the last page (the
 * last row). BPF then bisects a page's few rows (a handful of cache lines)
 * instead of the whole file's (some 17 dependent loads across 500 KiB): at
 * 1 kHz every sample starts with a cold cache. 1 KiB pages of code hold ~20
 * rows and cost 4 bytes of index per KiB of the file's code.
 *
 * The index lives in the rows map right after the table's rows, two entries
 * per 8-byte slot (entry p at byte 4 * p of the first slot after the rows):
 * one range, one budget, one allocator per table.
 */
#define UNWIND_PAGE_SHIFT 10
/* A table whose code spans more pages than it has rows (a hostile or odd file)
 * gets no index rather than one larger than its rows. */

struct unwind_table_ref {
	__u32 first_row;  /* in its chunk */
	__u32 row_count;  /* 0: the slot is free */
	__u32 page_base;  /* file pc of the index's page 0 (the first row's pc, page-aligned) */
	__u32 page_count; /* index entries (pages + 1) after the rows; 0: no index, bisect every row */
	/* Set by the sampler, new for every table it places: BPF's per-CPU cache of rows found
	 * is keyed by it, so a slot reused by another file never answers with the old file's rows. */
	__u32 generation;
	__u32 chunk;      /* the chunk's index in unwind_rows */
};

/* Slots of the rows map a table occupies: its rows, then its page index. */
static inline __u32 unwind_table_slots(__u32 row_count, __u32 page_count)
{
	return row_count + (page_count + 1) / 2;
}

/* A table has at most as many index entries as rows (else it gets no index), so the largest
 * fits in the largest chunk. */
_Static_assert(UNWIND_TABLE_MAX_ROWS + (UNWIND_TABLE_MAX_ROWS + 1) / 2 <= UNWIND_CHUNK_MAX_ROWS,
	       "the largest chunk holds the largest table and its page index");
_Static_assert(UNWIND_CHUNK_ROWS <= UNWIND_CHUNK_MAX_ROWS, "a default chunk is no larger than the largest");
/* Chunks are never smaller than UNWIND_CHUNK_ROWS when the rows asked for are whole default chunks
 * (the sampler rounds them up), so the default rows space needs at most this many. */
_Static_assert((__u64)UNWIND_MAX_CHUNKS * UNWIND_CHUNK_ROWS >= UNWIND_ROWS_DEFAULT, "the default rows space fits");

/*
 * One executable file mapping of a target (`unwind_procs` HASH: host tgid ->
 * struct unwind_proc). Userspace rewrites a process's whole value in one
 * update whenever its mappings change, so BPF never sees half of a change.
 */
#define UNWIND_MAX_MAPPINGS 256

struct unwind_mapping {
	__u64 start;      /* runtime [start, end) */
	__u64 end;
	__u64 bias;       /* file pc = runtime pc - bias */
	__u32 table_id;   /* into unwind_tables; UNWIND_TABLE_NONE: stop with stop_cause */
	__u8 stop_cause;  /* with UNWIND_TABLE_NONE: UNWIND_STOP_NO_TABLE or _DELETED_FILE */
	__u8 reserved[3];
};

struct unwind_proc {
	__u32 count;      /* mappings[0, count) sorted by start, not overlapping */
	__u32 reserved;
	struct unwind_mapping mappings[UNWIND_MAX_MAPPINGS];
};

#define UNWIND_LAYOUT "the native-unwinding maps are shared by BPF and userspace"
_Static_assert(sizeof(struct unwind_table_ref) == 24, UNWIND_LAYOUT);
_Static_assert(__builtin_offsetof(struct unwind_table_ref, chunk) == 20, UNWIND_LAYOUT);
_Static_assert(sizeof(struct unwind_row) == 2 * sizeof(__u32), "two page index entries per rows-map slot");
_Static_assert(sizeof(struct unwind_mapping) == 32, UNWIND_LAYOUT);
_Static_assert(__builtin_offsetof(struct unwind_mapping, table_id) == 24, UNWIND_LAYOUT);
_Static_assert(__builtin_offsetof(struct unwind_proc, mappings) == 8, UNWIND_LAYOUT);
_Static_assert((UNWIND_MAX_MAPPINGS & (UNWIND_MAX_MAPPINGS - 1)) == 0, "masked index");
_Static_assert((UNWIND_MAX_FRAMES & (UNWIND_MAX_FRAMES - 1)) == 0, "masked index");

#endif
