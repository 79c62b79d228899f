/* SPDX-License-Identifier: MIT */
/*
 * The compact unwind table of one ELF file (include/unwind_table.h) as root
 * holds it. The parser worker builds it from the file's .eh_frame, else its
 * .debug_frame (worker/unwind_build.h); root asks for it (unwind_table_from_worker),
 * checks every row it receives against the file's code as root reads it itself,
 * and indexes it. Root reads nothing of a file here but its ELF and program
 * headers and its build-id note, with bounded preads.
 */
#ifndef PYBPFPROF_UNWIND_FILE_TABLE_H
#define PYBPFPROF_UNWIND_FILE_TABLE_H

#include <stddef.h>
#include <stdint.h>

/* The contract in include/. */
#include <unwind_table.h>

#include "parser/parser_client.h"
#include "util/errbuf.h"

/* The device, inode and size, 8 bytes each. */
#define UNWIND_FILE_ID_MAX 24

enum unwind_file_id_kind {
	UNWIND_FILE_ID_INODE = 2, /* bytes: st_dev, st_ino, st_size (UNWIND_FILE_ID_MAX) */
};

/*
 * Which file a table belongs to: the cache key shared by every process mapping it. Always
 * the file itself (device and inode): a build id is a file's own claim, and any user's file
 * claiming libc's would have its rows serve libc's pcs in every process. Its size tells a file
 * rewritten in place to another size from what it was (one rewritten to the same size is
 * not told apart: no time is in the key, or `touch` would make a file whose build failed new
 * again); root reads nothing of the file's own for it but the ELF header.
 */
struct unwind_file_id {
	uint8_t kind; /* enum unwind_file_id_kind */
	uint8_t len;  /* bytes used of bytes[] */
	uint8_t bytes[UNWIND_FILE_ID_MAX];
};

enum unwind_cfi_source {
	UNWIND_CFI_EH_FRAME = 1,
	UNWIND_CFI_DEBUG_FRAME = 2,
};

/* What the build saw, for tests and the bench. */
struct unwind_table_stats {
	size_t fdes;          /* FDEs turned into rows */
	size_t fdes_skipped;  /* FDEs not understood (address encoding), discarded, or past 4 GiB */
	size_t cfi_rows;      /* rows the CFI describes, before sorting and merging */
	uint64_t work;        /* CFI program bytes interpreted (the per-row path: replayed, an FDE's per row) */
	size_t by_kind[UNWIND_ROW_GAP + 1]; /* final rows of each kind */
};

struct unwind_table {
	struct unwind_row *rows; /* sorted by pc, unique pcs, the last one a GAP */
	size_t count;
	uint32_t *pages;         /* the page index (include/unwind_table.h); NULL: none */
	size_t page_count;       /* its entries, the closing one included */
	uint32_t page_base;
	struct unwind_file_id id;
	uint8_t source; /* enum unwind_cfi_source */
	struct unwind_table_stats stats;
};

void unwind_table_free(struct unwind_table *table);

/* The row that holds file pc (the search BPF does, page index included), or NULL below the first row. */
const struct unwind_row *unwind_table_lookup(const struct unwind_table *table, uint64_t pc);

/* The file's identity alone (no CFI read): fstat's device, inode and size.
 * 0, -ENOEXEC (no 64-bit x86-64 ELF header), or fstat's negative errno. */
int unwind_table_file_id(int fd, struct unwind_file_id *id);

/* One FDE's code: [start, end), link-time addresses. */
struct unwind_function_range {
	uint64_t start;
	uint64_t end;
};

/* Executable PT_LOAD segments read at most (real files have one or two). */
#define UNWIND_MAX_CODE_RANGES 16

/* Where a file's code lies at link time: its executable PT_LOAD segments. */
struct unwind_code_ranges {
	struct unwind_function_range ranges[UNWIND_MAX_CODE_RANGES];
	size_t count;
};

/*
 * The executable PT_LOAD segments of the ELF file open at fd, read by root itself with two
 * bounded preads (the header, at most 64 program headers): what a table's rows must lie in.
 * 0, -ENOEXEC (not a 64-bit x86-64 ELF, unreadable program headers, no executable segment).
 */
int unwind_table_code_ranges(int fd, struct unwind_code_ranges *code);

/*
 * Whether rows (from the parser worker: anything) are a table BPF may be given: 1 to
 * UNWIND_TABLE_MAX_ROWS rows, strictly ascending pcs, known kinds, the last a GAP, and every
 * pc inside the file's code (a range's end included: the GAP that closes its last function).
 * 0 or -EBADMSG.
 */
int unwind_table_check_rows(const struct unwind_row *rows, size_t count, const struct unwind_code_ranges *code);

/* Builds table's page index from its rows (rows and count set, pages none yet). 0 or -ENOMEM. */
int unwind_table_index_pages(struct unwind_table *table, struct errbuf *error);

/* The most payload a table's answer may take: its head and UNWIND_TABLE_MAX_ROWS rows. */
#define UNWIND_TABLE_REPLY_BUDGET ((uint32_t)(sizeof(struct parser_unwind_head) + \
					      (size_t)UNWIND_TABLE_MAX_ROWS * sizeof(struct unwind_row)))

/*
 * The table in a PARSER_REQUEST_UNWIND_ROWS answer (payload, malloc'd, len bytes: anything;
 * taken, freed or kept as the rows), for a file whose code is code: its head and rows checked
 * (unwind_table_check_rows), the table indexed. 0, -EBADMSG (the answer is a lie: table
 * empty), -ENOMEM.
 */
int unwind_table_from_payload(void *payload, size_t len, const struct unwind_code_ranges *code,
			      struct unwind_table *table, struct errbuf *error);

/*
 * The table of the ELF file open at fd (root opened it), built by client's worker and checked
 * here (unwind_table_check_rows against the code ranges root reads itself), then indexed.
 * 0, or as the build's (worker/unwind_build.h: -ENOEXEC, -ENODATA, -E2BIG, -EIO), or -ECHILD:
 * the worker died, overran its time, ran out of memory or answered rows that do not check
 * out (the file is bad for the run), -ENOSYS: no worker could be started; -ENOMEM (root's).
 * table->id is not set (the caller identified the file).
 */
int unwind_table_from_worker(struct parser_client *client, int fd, struct unwind_table *table,
			     struct errbuf *error);

#endif
