// SPDX-License-Identifier: MIT
#include "util/intern.h"

#include "util/array.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct intern_chunk {
	struct intern_chunk *next;
	size_t used;
	size_t size;
	uint8_t data[];
};

/* Chunks grow from CHUNK_FIRST, doubling, to CHUNK_MAX: a writer keeps tables per process, and a
 * whole-host run meets hundreds of processes with a few keys each (a 64 KiB first chunk each
 * was most of the profiler's heap). */
#define CHUNK_FIRST 256
#define CHUNK_MAX (64 * 1024)

void intern_init(struct intern_table *table)
{
	memset(table, 0, sizeof(*table));
	hash_index_init(&table->index);
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
	hash_index_free(&table->index);
	free(table->keys);
	free_chunks(table->chunks);
	memset(table, 0, sizeof(*table));
}

void intern_clear(struct intern_table *table)
{
	hash_index_clear(&table->index);
	/* Keep the newest chunk for reuse, drop the rest. */
	if (table->chunks) {
		free_chunks(table->chunks->next);
		table->chunks->next = NULL;
		table->chunks->used = 0;
		table->chunk_bytes = table->chunks->size;
	}
	table->count = 0;
	table->bytes = 0;
}

/* The size of the chunk a key of len bytes (and its NUL) would take, 0 if it fits the last. */
static size_t next_chunk_size(const struct intern_table *table, size_t len)
{
	const struct intern_chunk *chunk = table->chunks;
	size_t size;

	if (chunk && chunk->size - chunk->used >= len + 1)
		return 0;
	size = !chunk ? CHUNK_FIRST : chunk->size < CHUNK_MAX / 2 ? chunk->size * 2 : CHUNK_MAX;
	return size < len + 1 ? len + 1 : size;
}

static const uint8_t *store_key(struct intern_table *table, const void *key, size_t len)
{
	struct intern_chunk *chunk = table->chunks;
	size_t size = next_chunk_size(table, len);
	uint8_t *copy;

	if (size) {
		chunk = malloc(sizeof(*chunk) + size);
		if (!chunk)
			return NULL;
		chunk->size = size;
		chunk->used = 0;
		chunk->next = table->chunks;
		table->chunks = chunk;
		table->chunk_bytes += size;
	}
	copy = chunk->data + chunk->used;
	memcpy(copy, key, len);
	copy[len] = 0; /* string keys can be used as C strings */
	chunk->used += len + 1;
	table->bytes += len;
	return copy;
}

/* Does the key stored under id equal the probe? (touched only when the hashes match) */
static bool key_matches(const void *context, uint32_t id, const void *probe)
{
	const struct intern_table *table = context;
	const struct intern_key *wanted = probe;
	const struct intern_key *stored = &table->keys[id];

	return stored->len == wanted->len && memcmp(stored->data, wanted->data, wanted->len) == 0;
}

int64_t intern_find(const struct intern_table *table, const void *key, size_t len)
{
	struct intern_key wanted = { .data = key, .len = len };

	return hash_index_find(&table->index, hash_bytes(key, len), key_matches, table, &wanted);
}

int64_t intern_add(struct intern_table *table, const void *key, size_t len, bool *is_new)
{
	struct intern_key wanted = { .data = key, .len = len };
	uint64_t hash = hash_bytes(key, len);
	int64_t id = hash_index_find(&table->index, hash, key_matches, table, &wanted);
	const uint8_t *copy;

	if (is_new)
		*is_new = id < 0;
	if (id >= 0)
		return id;
	if (table->count >= UINT32_MAX || ARRAY_RESERVE(table->keys, table->keys_capacity, table->count + 1))
		return -ENOMEM;
	copy = store_key(table, key, len);
	if (!copy)
		return -ENOMEM;
	if (hash_index_insert(&table->index, hash, (uint32_t)table->count))
		return -ENOMEM;
	table->keys[table->count] = (struct intern_key){ .data = copy, .len = len };
	return (int64_t)table->count++;
}

size_t intern_add_growth(const struct intern_table *table, size_t len)
{
	size_t growth = next_chunk_size(table, len) + hash_index_insert_growth(&table->index);

	/* ARRAY_RESERVE: 16 keys first, then doubling */
	if (table->count + 1 > table->keys_capacity)
		growth += (table->keys_capacity ? table->keys_capacity : 16) * sizeof(*table->keys);
	return growth;
}

const void *intern_key(const struct intern_table *table, uint32_t id, size_t *len)
{
	if (id >= table->count)
		return NULL;
	if (len)
		*len = table->keys[id].len;
	return table->keys[id].data;
}

int intern_add_string(struct intern_table *table, const char *text)
{
	return text && intern_add(table, text, strlen(text) + 1, NULL) < 0 ? -ENOMEM : 0;
}

const char *intern_string_in(const struct intern_table *table, const char *text)
{
	int64_t id;

	if (!text)
		return NULL;
	id = intern_find(table, text, strlen(text) + 1);
	return id < 0 ? NULL : intern_key(table, (uint32_t)id, NULL);
}
