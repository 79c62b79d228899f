// SPDX-License-Identifier: MIT
/* unwind/unwind_chunks: first fit in the chunks held, chunks sized to large tables, the budget,
 * chunks freed with their last table and created again. */
#include "testlib.h"

#include <errno.h>
#include <stdlib.h>

#include "unwind/unwind_chunks.h"

/* The chunks as the caller's ops were told. */
struct recorded_chunks {
	uint32_t rows[UNWIND_MAX_CHUNKS]; /* 0: none */
	size_t added, removed;
	int refuse; /* add_chunk's answer when not 0 */
};

static int record_add(void *ctx, uint32_t chunk, uint32_t rows)
{
	struct recorded_chunks *recorded = ctx;

	assert_true(chunk < UNWIND_MAX_CHUNKS);
	assert_int_equal(recorded->rows[chunk], 0);
	if (recorded->refuse)
		return recorded->refuse;
	recorded->rows[chunk] = rows;
	recorded->added++;
	return 0;
}

static void record_remove(void *ctx, uint32_t chunk)
{
	struct recorded_chunks *recorded = ctx;

	assert_true(chunk < UNWIND_MAX_CHUNKS);
	assert_true(recorded->rows[chunk] != 0);
	recorded->rows[chunk] = 0;
	recorded->removed++;
}

static struct unwind_chunks *new_chunks(struct recorded_chunks *recorded, size_t budget)
{
	struct unwind_chunk_ops ops = { .ctx = recorded, .add_chunk = record_add, .remove_chunk = record_remove };
	struct unwind_chunks *chunks = NULL;

	memset(recorded, 0, sizeof(*recorded));
	assert_int_equal(unwind_chunks_new(&chunks, budget, &ops), 0);
	return chunks;
}

/* Allocates slots rows: asserts it succeeds and where. */
static void assert_placed(struct unwind_chunks *chunks, uint32_t slots, uint32_t chunk, uint32_t first_row)
{
	uint32_t placed_chunk = UINT32_MAX, placed_row = UINT32_MAX;

	assert_int_equal(unwind_chunks_allocate(chunks, slots, &placed_chunk, &placed_row), 0);
	assert_int_equal(placed_chunk, chunk);
	assert_int_equal(placed_row, first_row);
}

static void assert_no_room(struct unwind_chunks *chunks, uint32_t slots)
{
	uint32_t chunk, first_row;

	assert_int_equal(unwind_chunks_allocate(chunks, slots, &chunk, &first_row), -ENOSPC);
}

/* Inside a chunk: the lowest free range that holds the table, freed ranges reused. */
static void test_first_fit_in_a_chunk(void **state)
{
	struct recorded_chunks recorded;
	struct unwind_chunks *chunks = new_chunks(&recorded, UNWIND_ROWS_DEFAULT);

	(void)state;
	assert_placed(chunks, 100, 0, 0);
	assert_placed(chunks, 200, 0, 100);
	assert_placed(chunks, 300, 0, 300);
	assert_int_equal(recorded.added, 1);
	assert_int_equal(recorded.rows[0], UNWIND_CHUNK_ROWS);
	unwind_chunks_release(chunks, 0, 100);
	assert_placed(chunks, 250, 0, 600); /* the 200 freed are too few */
	assert_placed(chunks, 150, 0, 100);
	assert_placed(chunks, 50, 0, 250);
	/* What is left of the chunk, exactly; then a chunk of its own for one row more. */
	assert_placed(chunks, UNWIND_CHUNK_ROWS - 850, 0, 850);
	assert_placed(chunks, 1, 1, 0);
	assert_int_equal(unwind_chunks_count(chunks), 2);
	assert_int_equal(unwind_chunks_rows_held(chunks), 2 * UNWIND_CHUNK_ROWS);
	assert_int_equal(recorded.removed, 0);
	unwind_chunks_free(chunks);
}

/* A table larger than a default chunk gets one of its own, the power of two that holds it. */
static void test_large_table_gets_a_chunk_of_its_own(void **state)
{
	struct recorded_chunks recorded;
	struct unwind_chunks *chunks = new_chunks(&recorded, UNWIND_ROWS_DEFAULT);
	uint32_t largest = unwind_table_slots(UNWIND_TABLE_MAX_ROWS, UNWIND_TABLE_MAX_ROWS);

	(void)state;
	assert_placed(chunks, 1000, 0, 0);
	assert_placed(chunks, UNWIND_CHUNK_ROWS + 1, 1, 0);
	assert_int_equal(recorded.rows[1], 2 * UNWIND_CHUNK_ROWS);
	assert_placed(chunks, largest, 2, 0);
	assert_int_equal(recorded.rows[2], UNWIND_CHUNK_MAX_ROWS);
	assert_no_room(chunks, UNWIND_CHUNK_MAX_ROWS + 1);
	assert_int_equal(recorded.added, 3);
	/* A small table still goes first in the first chunk with room. */
	assert_placed(chunks, 10, 0, 1000);
	/* The room a large chunk has left serves small tables too. */
	assert_placed(chunks, UNWIND_CHUNK_ROWS - 100, 1, UNWIND_CHUNK_ROWS + 1);
	assert_int_equal(unwind_chunks_rows_held(chunks), UNWIND_CHUNK_ROWS + 2 * UNWIND_CHUNK_ROWS + UNWIND_CHUNK_MAX_ROWS);
	unwind_chunks_free(chunks);
}

/* The chunks' sizes summed never exceed the budget; a chunk whose last table goes is freed, and
 * its room serves the next chunk. */
static void test_budget_and_chunks_freed(void **state)
{
	struct recorded_chunks recorded;
	struct unwind_chunks *chunks = new_chunks(&recorded, 2 * UNWIND_CHUNK_ROWS);

	(void)state;
	assert_placed(chunks, UNWIND_CHUNK_ROWS, 0, 0);
	assert_placed(chunks, 10, 1, 0);
	assert_placed(chunks, 20, 1, 10);
	assert_no_room(chunks, UNWIND_CHUNK_ROWS);
	assert_no_room(chunks, UNWIND_CHUNK_ROWS + 1);
	assert_int_equal(unwind_chunks_rows_held(chunks), 2 * UNWIND_CHUNK_ROWS);
	unwind_chunks_release(chunks, 1, 10);
	assert_int_equal(recorded.removed, 0);
	unwind_chunks_release(chunks, 1, 0);
	assert_int_equal(recorded.removed, 1);
	assert_int_equal(recorded.rows[1], 0);
	assert_int_equal(unwind_chunks_count(chunks), 1);
	assert_int_equal(unwind_chunks_rows_held(chunks), UNWIND_CHUNK_ROWS);
	/* Created again when a table needs it. */
	assert_placed(chunks, UNWIND_CHUNK_ROWS, 1, 0);
	assert_int_equal(recorded.added, 3);
	unwind_chunks_release(chunks, 0, 0);
	unwind_chunks_release(chunks, 1, 0);
	assert_int_equal(unwind_chunks_count(chunks), 0);
	assert_int_equal(unwind_chunks_rows_held(chunks), 0);
	assert_int_equal(unwind_chunks_peak_rows_held(chunks), 2 * UNWIND_CHUNK_ROWS);
	/* The whole budget free: a large table's chunk fits where two default ones were. */
	assert_placed(chunks, UNWIND_CHUNK_ROWS + 1, 0, 0);
	assert_int_equal(recorded.rows[0], 2 * UNWIND_CHUNK_ROWS);
	unwind_chunks_free(chunks);
}

/* A budget under a default chunk: one chunk of the budget; the last chunk takes what is left. */
static void test_small_budget(void **state)
{
	struct recorded_chunks recorded;
	struct unwind_chunks *chunks = new_chunks(&recorded, 1000);

	(void)state;
	assert_no_room(chunks, 1001);
	assert_int_equal(recorded.added, 0);
	assert_placed(chunks, 600, 0, 0);
	assert_int_equal(recorded.rows[0], 1000);
	assert_no_room(chunks, 500);
	assert_placed(chunks, 400, 0, 600);
	unwind_chunks_free(chunks);
	chunks = new_chunks(&recorded, UNWIND_CHUNK_ROWS + 1000);
	assert_placed(chunks, UNWIND_CHUNK_ROWS - 10, 0, 0);
	assert_placed(chunks, 20, 1, 0);
	assert_int_equal(recorded.rows[1], 1000);
	unwind_chunks_free(chunks);
}

/* At most UNWIND_MAX_CHUNKS chunks, whatever the budget; a refused chunk holds nothing. */
static void test_chunk_limits(void **state)
{
	struct recorded_chunks recorded;
	struct unwind_chunks *chunks = new_chunks(&recorded, (size_t)2 * UNWIND_MAX_CHUNKS * UNWIND_CHUNK_ROWS);
	uint32_t chunk, first_row;

	(void)state;
	recorded.refuse = -EPERM;
	assert_int_equal(unwind_chunks_allocate(chunks, 10, &chunk, &first_row), -EPERM);
	assert_int_equal(unwind_chunks_allocate(chunks, 0, &chunk, &first_row), -EINVAL);
	assert_int_equal(unwind_chunks_count(chunks), 0);
	assert_int_equal(unwind_chunks_rows_held(chunks), 0);
	recorded.refuse = 0;
	for (uint32_t i = 0; i < UNWIND_MAX_CHUNKS; i++)
		assert_placed(chunks, UNWIND_CHUNK_ROWS, i, 0);
	assert_no_room(chunks, 1);
	assert_int_equal(unwind_chunks_count(chunks), UNWIND_MAX_CHUNKS);
	unwind_chunks_free(chunks);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_fit_in_a_chunk),
		cmocka_unit_test(test_large_table_gets_a_chunk_of_its_own),
		cmocka_unit_test(test_budget_and_chunks_freed),
		cmocka_unit_test(test_small_budget),
		cmocka_unit_test(test_chunk_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
