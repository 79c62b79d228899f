// SPDX-License-Identifier: MIT
#include "util/hash.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define HASH_INDEX_MIN_CAPACITY 64

uint64_t hash_bytes(const void *key, size_t len)
{
	const uint8_t *bytes = key;
	uint64_t hash = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++) {
		hash ^= bytes[i];
		hash *= 0x100000001b3ull;
	}
	return hash_mix64(hash);
}

void hash_index_init(struct hash_index *index)
{
	memset(index, 0, sizeof(*index));
}

void hash_index_free(struct hash_index *index)
{
	free(index->slots);
	hash_index_init(index);
}

void hash_index_clear(struct hash_index *index)
{
	if (index->slots)
		memset(index->slots, 0, index->capacity * sizeof(*index->slots));
	index->count = 0;
}

int64_t hash_index_find(const struct hash_index *index, uint64_t hash, hash_match_fn match,
			const void *context, const void *key)
{
	size_t mask = index->capacity - 1;

	if (!index->capacity)
		return -1;
	for (size_t i = hash & mask;; i = (i + 1) & mask) {
		const struct hash_slot *slot = &index->slots[i];

		if (!slot->used)
			return -1;
		if (slot->hash == hash && match(context, slot->position, key))
			return slot->position;
	}
}

static void place(struct hash_slot *slots, size_t capacity, uint64_t hash, uint32_t position)
{
	size_t mask = capacity - 1;
	size_t i = hash & mask;

	while (slots[i].used)
		i = (i + 1) & mask;
	slots[i] = (struct hash_slot){ .hash = hash, .position = position, .used = 1 };
}

static int grow(struct hash_index *index)
{
	size_t capacity = index->capacity ? index->capacity * 2 : HASH_INDEX_MIN_CAPACITY;
	struct hash_slot *slots = calloc(capacity, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < index->capacity; i++)
		if (index->slots[i].used)
			place(slots, capacity, index->slots[i].hash, index->slots[i].position);
	free(index->slots);
	index->slots = slots;
	index->capacity = capacity;
	return 0;
}

static bool insert_grows(const struct hash_index *index)
{
	return (index->count + 1) * 2 > index->capacity;
}

size_t hash_index_insert_growth(const struct hash_index *index)
{
	if (!insert_grows(index))
		return 0;
	return (index->capacity ? index->capacity : HASH_INDEX_MIN_CAPACITY) * sizeof(*index->slots);
}

int hash_index_insert(struct hash_index *index, uint64_t hash, uint32_t position)
{
	int err;

	if (insert_grows(index)) {
		err = grow(index);
		if (err)
			return err;
	}
	place(index->slots, index->capacity, hash, position);
	index->count++;
	return 0;
}

void hash_index_remove(struct hash_index *index, uint64_t hash, uint32_t position)
{
	size_t mask = index->capacity - 1;
	size_t hole;

	if (!index->capacity)
		return;
	for (hole = hash & mask;; hole = (hole + 1) & mask) {
		if (!index->slots[hole].used)
			return;
		if (index->slots[hole].hash == hash && index->slots[hole].position == position)
			break;
	}
	/* Backward shift: move up every later entry whose home lies at or before the hole. */
	for (size_t next = (hole + 1) & mask; index->slots[next].used; next = (next + 1) & mask) {
		size_t home = index->slots[next].hash & mask;

		if (((next - home) & mask) >= ((next - hole) & mask)) {
			index->slots[hole] = index->slots[next];
			hole = next;
		}
	}
	index->slots[hole] = (struct hash_slot){ 0 };
	index->count--;
}
