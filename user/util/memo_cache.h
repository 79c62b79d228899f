/* SPDX-License-Identifier: MIT */
/*
 * A bounded cache from byte keys to byte values: what a caller derived once from a key
 * (a resolved stack from a raw one, a writer's encoding of a stack it has written), kept
 * to be reused. A lookup compares the whole key, never trusting its hash alone. Past its
 * budget (entries or bytes, keys and values counted) the clock evicts: entries not found
 * since the hand last passed them go first.
 */
#ifndef PYBPFPROF_MEMO_CACHE_H
#define PYBPFPROF_MEMO_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/hash.h"

struct memo_cache_entry {
	uint64_t hash;
	uint8_t *block;    /* the value (aligned as malloc's), then the key */
	size_t value_len;
	size_t key_len;
	bool referenced;   /* found since the clock hand last passed */
	uint64_t used;     /* under a target budget: its clock when last found or put */
};

struct target_budget;

struct memo_cache {
	struct hash_index index;          /* key hash -> position in entries */
	struct memo_cache_entry *entries; /* dense */
	size_t count, capacity;
	size_t hand;                      /* the clock's next candidate */
	size_t bytes;                     /* keys and values held */
	size_t max_entries, max_bytes;
	uint64_t evictions;
	/* Under a target budget (memo_cache_set_budget): its store, and the block a caller may
	 * still hold (the last found or put), which the budget never evicts. */
	struct target_budget *budget;
	int budget_store;
	const uint8_t *pinned;
};

void memo_cache_init(struct memo_cache *cache, size_t max_entries, size_t max_bytes);
void memo_cache_free(struct memo_cache *cache);
/*
 * From now on what the cache keeps is charged to budget as a store of its own, named name (kept,
 * not copied), within its own bounds still and at most share_percent of the budget's limit (past
 * them its clock evicts, counted as the store's evictions): a put that the budget refuses keeps
 * nothing, and the budget may evict the least recently used entries (not the one last found or
 * put: its pointer is the caller's until the next put).
 * Before the first put. 0 or -ENOSPC (no room for one more store).
 */
int memo_cache_set_budget(struct memo_cache *cache, struct target_budget *budget, const char *name,
			  unsigned share_percent);
/* Forget every entry (keeps the entry array and the index). */
void memo_cache_clear(struct memo_cache *cache);
/* A key given in pieces (parts of a record, a header built beside them): the key is their bytes in order. */
struct memo_key_part {
	const void *data;
	size_t len;
};
/* A hash for memo keys of any length: eight bytes a step, four lanes at a time. */
uint64_t memo_cache_hash(const void *key, size_t len);
/* The hash of a key in parts (not memo_cache_hash of their bytes: a cache is asked one way). */
uint64_t memo_cache_hash_parts(const struct memo_key_part *parts, size_t count);
/* The value stored under key (*value_len its length), or NULL. hash: the key's, as it was put. */
void *memo_cache_find(struct memo_cache *cache, uint64_t hash, const void *key, size_t key_len,
		      size_t *value_len);
void *memo_cache_find_parts(struct memo_cache *cache, uint64_t hash, const struct memo_key_part *parts,
			    size_t count, size_t *value_len);
/*
 * Room for a value of value_len bytes under key (absent: the caller found nothing), for the
 * caller to fill; NULL when memory is short or the entry alone is over the budget (then
 * nothing is kept). A pointer from find or put stays valid until the next put, clear or free.
 */
void *memo_cache_put(struct memo_cache *cache, uint64_t hash, const void *key, size_t key_len,
		     size_t value_len);
void *memo_cache_put_parts(struct memo_cache *cache, uint64_t hash, const struct memo_key_part *parts,
			   size_t count, size_t value_len);

#endif
