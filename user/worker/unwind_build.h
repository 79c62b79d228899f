/* SPDX-License-Identifier: MIT */
/*
 * Building the compact unwind table of one ELF file (unwind/file_table.h) from its
 * .eh_frame, else its .debug_frame, with libdw: the parser worker's side (root receives the
 * rows: unwind/file_table.h's unwind_table_from_worker). The file is read, never mapped: a
 * target's user may truncate it under us. Every count and size is bounded, for hostile files.
 */
#ifndef PYBPFPROF_WORKER_UNWIND_BUILD_H
#define PYBPFPROF_WORKER_UNWIND_BUILD_H

#include <stddef.h>
#include <stdint.h>

#include "unwind/file_table.h"
#include "util/errbuf.h"

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
/* The same rows alone, no id and no page index: what the worker answers root, which has both. */
int unwind_table_build_rows(int fd, struct unwind_table *table, struct errbuf *error);
/*
 * The same table, built as libdw gives each row (dwarf_cfi_addrframe() at the
 * FDE's start, then at each row's end), replaying the FDE's program for every
 * row: quadratic in a function's rows. The oracle the tests hold
 * unwind_table_build to; the profiler does not use it.
 */
int unwind_table_build_per_row(int fd, struct unwind_table *table, struct errbuf *error);

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
