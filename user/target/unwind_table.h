/* SPDX-License-Identifier: MIT */
/*
 * The compact unwind table of one ELF file (include/unwind_table.h), built
 * from its .eh_frame, else its .debug_frame, with libdw. The file is read,
 * never mapped: a target's user may truncate it under us. Every count and
 * size is bounded, for hostile files.
 */
#ifndef PYBPFPROF_UNWIND_TABLE_BUILD_H
#define PYBPFPROF_UNWIND_TABLE_BUILD_H

#include <stddef.h>
#include <stdint.h>

/* The contract in include/: a quoted name would find this very file first. */
#include <unwind_table.h>

#include "util/errbuf.h"

/* The longest build-id kept (GNU build-ids are 20 bytes: SHA-1). */
#define UNWIND_FILE_ID_MAX 32

enum unwind_file_id_kind {
	UNWIND_FILE_ID_BUILD_ID = 1, /* bytes: the NT_GNU_BUILD_ID note's descriptor */
	UNWIND_FILE_ID_INODE = 2,    /* bytes: st_dev then st_ino, 8 bytes each */
};

/* Which file a table belongs to: the cache key shared by every process mapping it. */
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

/*
 * Builds the table of the ELF file open at fd (read with pread; the offset of
 * fd is not used). 0, or a negative errno with error describing it:
 * -ENOEXEC (not a 64-bit x86-64 ELF, or unreadable/truncated headers),
 * -ENODATA (no usable FDE in .eh_frame nor .debug_frame), -E2BIG (more than
 * UNWIND_TABLE_MAX_ROWS rows, or CFI too costly to interpret), -EIO (CFI
 * libdw cannot read), -ENOMEM. On error the table is empty but its id is set
 * when the file could be identified (to remember that the file has none).
 * FDEs past 4 GiB or for discarded code (address 0) are skipped and counted.
 */
int unwind_table_build(int fd, struct unwind_table *table, struct errbuf *error);
/*
 * The same table, built as libdw gives each row (dwarf_cfi_addrframe() at the
 * FDE's start, then at each row's end), replaying the FDE's program for every
 * row: quadratic in a function's rows. The oracle the tests hold
 * unwind_table_build to; the profiler does not use it.
 */
int unwind_table_build_per_row(int fd, struct unwind_table *table, struct errbuf *error);
void unwind_table_free(struct unwind_table *table);

/* The row that holds file pc (the search BPF does, page index included), or NULL below the first row. */
const struct unwind_row *unwind_table_lookup(const struct unwind_table *table, uint64_t pc);

/* The file's identity alone (no CFI read): build-id, else device and inode. 0 or negative errno. */
int unwind_table_file_id(int fd, struct unwind_file_id *id);

/* One FDE's code: [start, end), link-time addresses. */
struct unwind_function_range {
	uint64_t start;
	uint64_t end;
};

/*
 * Where the functions of the ELF file open at fd begin and end: the range of
 * every FDE of its .eh_frame (no CFI program is replayed), sorted by start.
 * A stripped file's static functions have no symbol but have an FDE: this
 * names their pcs by the function that holds them. Read with pread, bounded
 * like unwind_table_build. 0 with *ranges (the caller frees it) and *count,
 * or a negative errno with error describing it (-ENODATA: no .eh_frame;
 * -ENOEXEC, -E2BIG, -EIO, -ENOMEM as unwind_table_build).
 */
int unwind_table_function_starts(int fd, struct unwind_function_range **ranges, size_t *count,
				 struct errbuf *error);

#endif
