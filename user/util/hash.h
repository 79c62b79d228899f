/* SPDX-License-Identifier: MIT */
/*
 * Hashing and one open-addressing index. The index maps a 64-bit hash to the
 * position of an item the caller stores elsewhere (an array, a table of ids);
 * equal hashes are told apart by the caller's match function, so keys of any
 * shape (bytes, structs) share one probing and growth rule.
 */
#ifndef PYBPFPROF_HASH_H
#define PYBPFPROF_HASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* MurmurHash3's finaliser: every input bit affects every output bit. */
static inline uint64_t hash_mix64(uint64_t value)
{
	value ^= value >> 33;
	value *= 0xff51afd7ed558ccdull;
	value ^= value >> 33;
	value *= 0xc4ceb9fe1a85ec53ull;
	value ^= value >> 33;
	return value;
}

/* Two words into one hash (e.g. pid and address). */
static inline uint64_t hash_combine(uint64_t seed, uint64_t value)
{
	return hash_mix64(seed ^ (value + 0x9e3779b97f4a7c15ull + (seed << 6) + (seed >> 2)));
}

/* FNV-1a over bytes with a final mix: keys are short (names, small structs). */
uint64_t hash_bytes(const void *key, size_t len);

struct hash_slot {
	uint64_t hash;
	uint32_t position; /* the caller's index of the item */
	uint32_t used;
};

struct hash_index {
	struct hash_slot *slots; /* power-of-two capacity, linear probing, load <= 1/2 */
	size_t capacity;
	size_t count;
};

/* Does the item at position have the key the caller is looking for? */
typedef bool (*hash_match_fn)(const void *context, uint32_t position, const void *key);

void hash_index_init(struct hash_index *index);
void hash_index_free(struct hash_index *index);
/* Forget every entry; keeps the allocation. */
void hash_index_clear(struct hash_index *index);
/* The position of the item matching key, or -1. */
int64_t hash_index_find(const struct hash_index *index, uint64_t hash, hash_match_fn match,
			const void *context, const void *key);
/* Adds (hash, position); the caller has checked it is absent. 0 or -ENOMEM. */
int hash_index_insert(struct hash_index *index, uint64_t hash, uint32_t position);
/* What the next insert adds to the slots' bytes: 0, or the doubling of the table. */
size_t hash_index_insert_growth(const struct hash_index *index);
/* Removes the entry of (hash, position) if present (backward-shift: no tombstones). */
void hash_index_remove(struct hash_index *index, uint64_t hash, uint32_t position);

#endif
