// SPDX-License-Identifier: MIT
#include "util/intern.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct intern_chunk {
	struct intern_chunk *next;
	size_t used;
	size_t size;
	uint8_t data[];
};

#define CHUNK_MIN (64 * 1024)

void intern_init(struct intern_table *table)
{
	memset(table, 0, sizeof(*table));
}

static void free_chunks(struct intern_chunk *chunk)
{
	while (chunk) {
		struct intern_chunk *next = chunk->next;

		free(chunk);
		chunk = next;
	}
}

void intern_free(struct intern_table *table)
{
	free(table->slots);
	free(table->keys);
	free_chunks(table->chunks);
	memset(table, 0, sizeof(*table));
}

void intern_clear(struct intern_table *table)
{
	if (table->slots)
		memset(table->slots, 0, table->capacity * sizeof(*table->slots));
	/* Keep the newest chunk for reuse, drop the rest. */
	if (table->chunks) {
		free_chunks(table->chunks->next);
		table->chunks->next = NULL;
		table->chunks->used = 0;
	}
	table->count = 0;
	table->bytes = 0;
}

uint64_t intern_hash(const void *key, size_t len)
{
	/* FNV-1a with a final avalanche: keys are short (names, small structs). */
	const uint8_t *bytes = key;
	uint64_t hash = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++) {
		hash ^= bytes[i];
		hash *= 0x100000001b3ull;
	}
	hash ^= hash >> 33;
	hash *= 0xff51afd7ed558ccdull;
	hash ^= hash >> 33;
	return hash;
}

static const uint8_t *store_key(struct intern_table *table, const void *key, size_t len)
{
	struct intern_chunk *chunk = table->chunks;
	uint8_t *copy;

	if (!chunk || chunk->size - chunk->used < len + 1) {
		size_t size = len + 1 > CHUNK_MIN ? len + 1 : CHUNK_MIN;

		chunk = malloc(sizeof(*chunk) + size);
		if (!chunk)
			return NULL;
		chunk->size = size;
		chunk->used = 0;
		chunk->next = table->chunks;
		table->chunks = chunk;
	}
	copy = chunk->data + chunk->used;
	memcpy(copy, key, len);
	copy[len] = 0; /* string keys can be used as C strings */
	chunk->used += len + 1;
	table->bytes += len;
	return copy;
}

static int grow_slots(struct intern_table *table)
{
	size_t capacity = table->capacity ? table->capacity * 2 : 256;
	struct intern_entry *slots = calloc(capacity, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < table->capacity; i++) {
		struct intern_entry *old = &table->slots[i];
		size_t at;

		if (!old->used)
			continue;
		at = old->hash & (capacity - 1);
		while (slots[at].used)
			at = (at + 1) & (capacity - 1);
		slots[at] = *old;
	}
	free(table->slots);
	table->slots = slots;
	table->capacity = capacity;
	return 0;
}

static struct intern_entry *probe(const struct intern_table *table, uint64_t hash, const void *key,
				  size_t len)
{
	size_t at = hash & (table->capacity - 1);

	for (;;) {
		struct intern_entry *entry = &table->slots[at];

		if (!entry->used)
			return entry;
		/* The stored key lives elsewhere in memory: touch it only when the hash matches. */
		if (entry->hash == hash) {
			const struct intern_key *stored = &table->keys[entry->id];

			if (stored->len == len && memcmp(stored->data, key, len) == 0)
				return entry;
		}
		at = (at + 1) & (table->capacity - 1);
	}
}

int64_t intern_find(const struct intern_table *table, const void *key, size_t len)
{
	struct intern_entry *entry;

	if (!table->capacity)
		return -1;
	entry = probe(table, intern_hash(key, len), key, len);
	return entry->used ? (int64_t)entry->id : -1;
}

int64_t intern_add(struct intern_table *table, const void *key, size_t len, bool *is_new)
{
	uint64_t hash = intern_hash(key, len);
	struct intern_entry *entry;
	const uint8_t *copy;

	/* Keep the load factor under 1/2 so probes stay short. */
	if ((table->count + 1) * 2 > table->capacity && grow_slots(table))
		return -ENOMEM;
	entry = probe(table, hash, key, len);
	if (entry->used) {
		if (is_new)
			*is_new = false;
		return entry->id;
	}
	if (table->count == table->keys_capacity) {
		size_t capacity = table->keys_capacity ? table->keys_capacity * 2 : 256;
		struct intern_key *keys = realloc(table->keys, capacity * sizeof(*keys));

		if (!keys)
			return -ENOMEM;
		table->keys = keys;
		table->keys_capacity = capacity;
	}
	copy = store_key(table, key, len);
	if (!copy)
		return -ENOMEM;
	table->keys[table->count] = (struct intern_key){ .data = copy, .len = len };
	entry->hash = hash;
	entry->id = (uint32_t)table->count;
	entry->used = 1;
	table->count++;
	if (is_new)
		*is_new = true;
	return entry->id;
}

const void *intern_key(const struct intern_table *table, uint32_t id, size_t *len)
{
	if (id >= table->count)
		return NULL;
	if (len)
		*len = table->keys[id].len;
	return table->keys[id].data;
}
