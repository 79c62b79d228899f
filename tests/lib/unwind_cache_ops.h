// SPDX-License-Identifier: MIT
/* The unwind cache's BPF side, recorded and checked (tests/lib/unwind_cache_ops.c). */
#ifndef PYBPFPROF_TESTS_UNWIND_CACHE_OPS_H
#define PYBPFPROF_TESTS_UNWIND_CACHE_OPS_H

#include "testlib.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "unwind/unwind_cache.h"

/* What the cache asked BPF to do. */
struct recorded_ops {
	size_t uploads;
	size_t releases;
	uint32_t last_released;
	bool live[UNWIND_MAX_TABLES];
	struct unwind_table_ref refs[UNWIND_MAX_TABLES];
	uint32_t chunk_rows[UNWIND_MAX_CHUNKS]; /* 0: no chunk */
	size_t chunks_added, chunks_removed;
};

uint32_t ref_slots(const struct unwind_table_ref *ref);
/* The cache's operations, each checked: a table uploaded into a chunk added before, inside it, released
 * once; a chunk removed only once no live table lies in it. ctx is a struct recorded_ops. */
int record_upload(void *ctx, uint32_t table_id, const struct unwind_table_ref *ref, const struct unwind_row *rows,
		  const uint32_t *pages);
void record_release(void *ctx, uint32_t table_id);
int record_add_chunk(void *ctx, uint32_t chunk, uint32_t rows);
void record_remove_chunk(void *ctx, uint32_t chunk);
/* A cache of row_capacity rows whose operations are recorded in recorded (zeroed first). */
struct unwind_cache *new_cache(struct recorded_ops *recorded, size_t row_capacity);
/* The process's mapping holding pc, or NULL. */
const struct unwind_mapping *mapping_at(const struct unwind_proc *proc, uint64_t pc);
/* Kills and reaps a child. */
void end_child(pid_t pid);

#endif
