/* SPDX-License-Identifier: MIT */
/*
 * Interning: byte-string keys to dense ids 0, 1, 2, ... in first-seen order.
 * Used for string and frame deduplication by every writer. Keys are copied
 * into stable storage; intern_key() returns them by id.
 */
#ifndef PYBPFPROF_INTERN_H
#define PYBPFPROF_INTERN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/hash.h"

struct intern_key {
	const uint8_t *data;
	size_t len;
};

struct intern_chunk;

struct intern_table {
	struct hash_index index;    /* hash -> id */
	struct intern_key *keys;    /* by id */
	size_t count;
	size_t keys_capacity;
	struct intern_chunk *chunks; /* key storage: never moves */
	size_t bytes;                /* total key bytes held */
	size_t chunk_bytes;          /* the key storage's size: its chunks' summed */
};

void intern_init(struct intern_table *table);
void intern_free(struct intern_table *table);
/* Forget every key (ids restart at 0); keeps the allocations. */
void intern_clear(struct intern_table *table);
/* The id of key, adding it if new (*is_new tells). Negative errno on ENOMEM. */
int64_t intern_add(struct intern_table *table, const void *key, size_t len, bool *is_new);
/* The id of key, or -1 if absent. */
int64_t intern_find(const struct intern_table *table, const void *key, size_t len);
const void *intern_key(const struct intern_table *table, uint32_t id, size_t *len);
/* What adding a new key of len bytes adds to intern_held_bytes: the key storage's next chunk
 * if the key does not fit the last, and the doubling of the keys' index or of the hash slots
 * when they are full. A table whose owner charges a budget charges this before the add. */
size_t intern_add_growth(const struct intern_table *table, size_t len);
static inline size_t intern_count(const struct intern_table *table) { return table->count; }
/* What the table holds on the heap: its keys' storage, their index and the hash slots. */
static inline size_t intern_held_bytes(const struct intern_table *table)
{
	return table->chunk_bytes + table->keys_capacity * sizeof(*table->keys) +
	       table->index.capacity * sizeof(*table->index.slots);
}

/*
 * Compacting a table of strings that pointers are held into (intern_key's storage never moves):
 * the strings still in use are added to a fresh table with intern_add_string, every holder
 * takes its string's copy from intern_string_in, and the old table goes.
 */
/* Whether a table holding held bytes is to be compacted: min_bytes at least, and twice what it
 * held after its last compaction (so that compactions cost in proportion to what they free). */
static inline bool intern_compaction_due(size_t held, size_t min_bytes, size_t held_after_last)
{
	return held >= min_bytes && held >= 2 * held_after_last;
}
/* text (NUL included) into table; NULL adds nothing. 0 or -ENOMEM. */
int intern_add_string(struct intern_table *table, const char *text);
/* table's copy of text, NULL if it has none (or text is NULL). */
const char *intern_string_in(const struct intern_table *table, const char *text);

#endif
