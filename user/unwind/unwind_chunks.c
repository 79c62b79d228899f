// SPDX-License-Identifier: MIT
#include "unwind/unwind_chunks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/array.h"

struct row_range {
	uint32_t first_row, slots;
};

struct chunk {
	uint32_t rows;              /* its size; 0: no chunk at this index */
	struct row_range *ranges;   /* the tables in it, by first_row */
	size_t range_count, range_capacity;
};

struct unwind_chunks {
	size_t row_budget;
	size_t rows_held, peak_rows_held;
	struct unwind_chunk_ops ops;
	struct chunk chunks[UNWIND_MAX_CHUNKS];
};

int unwind_chunks_new(struct unwind_chunks **out, size_t row_budget, const struct unwind_chunk_ops *ops)
{
	struct unwind_chunks *chunks = calloc(1, sizeof(*chunks));

	if (!chunks)
		return -ENOMEM;
	chunks->row_budget = row_budget;
	if (ops)
		chunks->ops = *ops;
	*out = chunks;
	return 0;
}

void unwind_chunks_free(struct unwind_chunks *chunks)
{
	if (!chunks)
		return;
	for (size_t i = 0; i < UNWIND_MAX_CHUNKS; i++)
		free(chunks->chunks[i].ranges);
	free(chunks);
}

/* First fit in chunk: the index in its ranges where a free range of slots rows starts
 * (*first_row), or -1. */
static long first_fit(const struct chunk *chunk, uint32_t slots, uint32_t *first_row)
{
	uint64_t next_free = 0;

	for (size_t i = 0; i <= chunk->range_count; i++) {
		uint64_t gap_end = i < chunk->range_count ? chunk->ranges[i].first_row : chunk->rows;

		if (gap_end >= next_free && gap_end - next_free >= slots) {
			*first_row = (uint32_t)next_free;
			return (long)i;
		}
		if (i < chunk->range_count)
			next_free = (uint64_t)chunk->ranges[i].first_row + chunk->ranges[i].slots;
	}
	return -1;
}

static int insert_range(struct chunk *chunk, size_t at, uint32_t first_row, uint32_t slots)
{
	if (ARRAY_RESERVE(chunk->ranges, chunk->range_capacity, chunk->range_count + 1))
		return -ENOMEM;
	memmove(&chunk->ranges[at + 1], &chunk->ranges[at], (chunk->range_count - at) * sizeof(*chunk->ranges));
	chunk->ranges[at] = (struct row_range){ .first_row = first_row, .slots = slots };
	chunk->range_count++;
	return 0;
}

/* A new chunk's size for a table of slots rows: the default, or the power of two that holds a
 * larger table; what is left of the budget if that is less (and holds the table). 0: none fits. */
static uint32_t new_chunk_rows(const struct unwind_chunks *chunks, uint32_t slots)
{
	uint64_t rows = UNWIND_CHUNK_ROWS;
	size_t left = chunks->row_budget - chunks->rows_held;

	while (rows < slots)
		rows <<= 1;
	if (rows > UNWIND_CHUNK_MAX_ROWS)
		return 0;
	if (rows > left)
		rows = left;
	return rows >= slots ? (uint32_t)rows : 0;
}

static int add_chunk(struct unwind_chunks *chunks, uint32_t slots, uint32_t *index)
{
	uint32_t rows = new_chunk_rows(chunks, slots);
	int err;

	if (rows == 0)
		return -ENOSPC;
	for (*index = 0; *index < UNWIND_MAX_CHUNKS && chunks->chunks[*index].rows; (*index)++)
		;
	if (*index == UNWIND_MAX_CHUNKS)
		return -ENOSPC;
	err = chunks->ops.add_chunk ? chunks->ops.add_chunk(chunks->ops.ctx, *index, rows) : 0;
	if (err)
		return err;
	chunks->chunks[*index].rows = rows;
	chunks->rows_held += rows;
	if (chunks->rows_held > chunks->peak_rows_held)
		chunks->peak_rows_held = chunks->rows_held;
	return 0;
}

static void remove_chunk(struct unwind_chunks *chunks, uint32_t index)
{
	struct chunk *chunk = &chunks->chunks[index];

	if (chunks->ops.remove_chunk)
		chunks->ops.remove_chunk(chunks->ops.ctx, index);
	chunks->rows_held -= chunk->rows;
	free(chunk->ranges);
	*chunk = (struct chunk){ 0 };
}

/* First fit over the chunks held: the index in *chunk's ranges where the room starts, or -1. */
static long find_room(const struct unwind_chunks *chunks, uint32_t slots, uint32_t *chunk, uint32_t *first_row)
{
	for (*chunk = 0; *chunk < UNWIND_MAX_CHUNKS; (*chunk)++) {
		long at;

		if (!chunks->chunks[*chunk].rows)
			continue;
		at = first_fit(&chunks->chunks[*chunk], slots, first_row);
		if (at >= 0)
			return at;
	}
	return -1;
}

int unwind_chunks_allocate(struct unwind_chunks *chunks, uint32_t slots, uint32_t *chunk, uint32_t *first_row)
{
	long at;
	int err;

	if (slots == 0)
		return -EINVAL;
	at = find_room(chunks, slots, chunk, first_row);
	if (at < 0) {
		err = add_chunk(chunks, slots, chunk);
		if (err)
			return err;
		*first_row = 0;
		at = 0;
	}
	err = insert_range(&chunks->chunks[*chunk], (size_t)at, *first_row, slots);
	if (err && chunks->chunks[*chunk].range_count == 0)
		remove_chunk(chunks, *chunk);
	return err;
}

void unwind_chunks_release(struct unwind_chunks *chunks, uint32_t index, uint32_t first_row)
{
	struct chunk *chunk;

	if (index >= UNWIND_MAX_CHUNKS)
		return;
	chunk = &chunks->chunks[index];
	for (size_t i = 0; i < chunk->range_count; i++) {
		if (chunk->ranges[i].first_row != first_row)
			continue;
		memmove(&chunk->ranges[i], &chunk->ranges[i + 1], (chunk->range_count - i - 1) * sizeof(*chunk->ranges));
		if (--chunk->range_count == 0)
			remove_chunk(chunks, index);
		return;
	}
}

size_t unwind_chunks_count(const struct unwind_chunks *chunks)
{
	size_t count = 0;

	for (size_t i = 0; i < UNWIND_MAX_CHUNKS; i++)
		count += chunks->chunks[i].rows != 0;
	return count;
}

size_t unwind_chunks_rows_held(const struct unwind_chunks *chunks)
{
	return chunks->rows_held;
}

size_t unwind_chunks_peak_rows_held(const struct unwind_chunks *chunks)
{
	return chunks->peak_rows_held;
}
