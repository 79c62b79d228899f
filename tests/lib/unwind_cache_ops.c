// SPDX-License-Identifier: MIT
/*
 * The unwind cache's BPF side as the unwind cache tests see it (tests/unit/test_unwind_cache.c,
 * tests/e2e/test_unwind_cache_worker.c): every upload, release and chunk recorded and checked
 * against the contract in include/unwind_table.h; and their children ended.
 */
#include "unwind_cache_ops.h"

#include <signal.h>
#include <sys/wait.h>

uint32_t ref_slots(const struct unwind_table_ref *ref)
{
	return unwind_table_slots(ref->row_count, ref->page_count);
}

int record_upload(void *ctx, uint32_t table_id, const struct unwind_table_ref *ref,
		  const struct unwind_row *rows, const uint32_t *pages)
{
	struct recorded_ops *recorded = ctx;

	assert_true(table_id < UNWIND_MAX_TABLES);
	assert_false(recorded->live[table_id]);
	assert_true(ref->row_count > 0);
	/* The last row of a table is always a GAP (include/unwind_table.h). */
	assert_int_equal(rows[ref->row_count - 1].kind, UNWIND_ROW_GAP);
	/* A page index, when there is one, ends at the last row. */
	if (ref->page_count)
		assert_int_equal(pages[ref->page_count - 1], ref->row_count - 1);
	/* In a chunk added before, inside it. */
	assert_true(ref->chunk < UNWIND_MAX_CHUNKS);
	assert_true(recorded->chunk_rows[ref->chunk] != 0);
	assert_true((uint64_t)ref->first_row + ref_slots(ref) <= recorded->chunk_rows[ref->chunk]);
	recorded->live[table_id] = true;
	recorded->refs[table_id] = *ref;
	recorded->uploads++;
	return 0;
}

void record_release(void *ctx, uint32_t table_id)
{
	struct recorded_ops *recorded = ctx;

	assert_true(recorded->live[table_id]);
	recorded->live[table_id] = false;
	recorded->releases++;
	recorded->last_released = table_id;
}

int record_add_chunk(void *ctx, uint32_t chunk, uint32_t rows)
{
	struct recorded_ops *recorded = ctx;

	assert_true(chunk < UNWIND_MAX_CHUNKS);
	assert_int_equal(recorded->chunk_rows[chunk], 0);
	assert_true(rows != 0 && rows <= UNWIND_CHUNK_MAX_ROWS);
	recorded->chunk_rows[chunk] = rows;
	recorded->chunks_added++;
	return 0;
}

/* Only once no live table lies in the chunk. */
void record_remove_chunk(void *ctx, uint32_t chunk)
{
	struct recorded_ops *recorded = ctx;

	assert_true(chunk < UNWIND_MAX_CHUNKS);
	assert_true(recorded->chunk_rows[chunk] != 0);
	for (size_t i = 0; i < UNWIND_MAX_TABLES; i++)
		assert_false(recorded->live[i] && recorded->refs[i].chunk == chunk);
	recorded->chunk_rows[chunk] = 0;
	recorded->chunks_removed++;
}

struct unwind_cache *new_cache(struct recorded_ops *recorded, size_t row_capacity)
{
	struct unwind_cache_ops ops = { .ctx = recorded, .upload_table = record_upload,
					.release_table = record_release, .add_chunk = record_add_chunk,
					.remove_chunk = record_remove_chunk };
	struct unwind_cache *cache = NULL;

	memset(recorded, 0, sizeof(*recorded));
	assert_int_equal(unwind_cache_new(&cache, row_capacity, &ops), 0);
	return cache;
}

const struct unwind_mapping *mapping_at(const struct unwind_proc *proc, uint64_t pc)
{
	for (uint32_t i = 0; i < proc->count; i++)
		if (pc >= proc->mappings[i].start && pc < proc->mappings[i].end)
			return &proc->mappings[i];
	return NULL;
}

void end_child(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}
