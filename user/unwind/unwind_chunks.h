/* SPDX-License-Identifier: MIT */
/*
 * Where native-unwinding tables lie in the rows map's chunks (include/unwind_table.h):
 * first fit inside the chunks held, else a new chunk of UNWIND_CHUNK_ROWS rows, or of
 * the power of two of rows that holds a larger table; the chunks' sizes summed never
 * exceed the budget (the rows space asked for), and a chunk whose last table goes is
 * freed, so memory follows the tables placed. The caller's ops create and free the
 * chunks in BPF.
 */
#ifndef PYBPFPROF_UNWIND_CHUNKS_H
#define PYBPFPROF_UNWIND_CHUNKS_H

#include <stddef.h>
#include <stdint.h>

#include <unwind_table.h>

struct unwind_chunk_ops {
	void *ctx;
	/* Creates chunk (an index < UNWIND_MAX_CHUNKS) of rows rows: 0 or a negative errno. */
	int (*add_chunk)(void *ctx, uint32_t chunk, uint32_t rows);
	/* No table lies in chunk any more. */
	void (*remove_chunk)(void *ctx, uint32_t chunk);
};

struct unwind_chunks;

/* ops may be NULL (chunks only counted: tests). 0 or -ENOMEM. */
int unwind_chunks_new(struct unwind_chunks **out, size_t row_budget, const struct unwind_chunk_ops *ops);
/* Frees the bookkeeping only: whoever holds the chunks in BPF frees them with it. */
void unwind_chunks_free(struct unwind_chunks *chunks);
/*
 * A place for slots rows in one chunk, created if none held has room:
 * 0, -ENOSPC (no room within the budget, or no free chunk index), -ENOMEM, or
 * add_chunk's error.
 */
int unwind_chunks_allocate(struct unwind_chunks *chunks, uint32_t slots, uint32_t *chunk, uint32_t *first_row);
/* The range allocated at first_row of chunk is free again; the chunk goes with its last range. */
void unwind_chunks_release(struct unwind_chunks *chunks, uint32_t chunk, uint32_t first_row);
/* Chunks held now, their sizes summed, and the most rows held at once over the run. */
size_t unwind_chunks_count(const struct unwind_chunks *chunks);
size_t unwind_chunks_rows_held(const struct unwind_chunks *chunks);
size_t unwind_chunks_peak_rows_held(const struct unwind_chunks *chunks);

#endif
