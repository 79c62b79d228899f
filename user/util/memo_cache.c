// SPDX-License-Identifier: MIT
#include "util/memo_cache.h"

#include <stdlib.h>
#include <string.h>

#include "util/array.h"

/* Values start the block: round the key's offset up to what malloc aligns to. */
#define VALUE_ALIGN _Alignof(max_align_t)

void memo_cache_init(struct memo_cache *cache, size_t max_entries, size_t max_bytes)
{
	memset(cache, 0, sizeof(*cache));
	hash_index_init(&cache->index);
	cache->max_entries = max_entries;
	cache->max_bytes = max_bytes;
}

void memo_cache_clear(struct memo_cache *cache)
{
	for (size_t i = 0; i < cache->count; i++)
		free(cache->entries[i].block);
	hash_index_clear(&cache->index);
	cache->count = 0;
	cache->hand = 0;
	cache->bytes = 0;
}

void memo_cache_free(struct memo_cache *cache)
{
	memo_cache_clear(cache);
	hash_index_free(&cache->index);
	free(cache->entries);
	memset(cache, 0, sizeof(*cache));
}

static inline uint64_t load_word(const uint8_t *bytes)
{
	uint64_t word;

	memcpy(&word, bytes, sizeof(word));
	return word;
}

/* A multiply per word, the lanes independent of each other; hash_combine mixes them at the end. */
static inline uint64_t lane_round(uint64_t lane, uint64_t word)
{
	return (lane ^ word) * 0x9e3779b185ebca87ull;
}

uint64_t memo_cache_hash(const void *key, size_t len)
{
	const uint8_t *bytes = key, *end = bytes + len;
	uint64_t lane0 = len, lane1 = 0x9e3779b97f4a7c15ull, lane2 = 0xbf58476d1ce4e5b9ull;
	uint64_t lane3 = 0x94d049bb133111ebull, tail = 0;

	for (; end - bytes >= 32; bytes += 32) {
		lane0 = lane_round(lane0, load_word(bytes));
		lane1 = lane_round(lane1, load_word(bytes + 8));
		lane2 = lane_round(lane2, load_word(bytes + 16));
		lane3 = lane_round(lane3, load_word(bytes + 24));
	}
	for (; end - bytes >= 8; bytes += 8)
		lane0 = lane_round(lane0, load_word(bytes));
	if (end > bytes)
		memcpy(&tail, bytes, (size_t)(end - bytes));
	lane1 = lane_round(lane1, tail);
	return hash_combine(hash_combine(lane0, lane1), hash_combine(lane2, lane3));
}

uint64_t memo_cache_hash_parts(const struct memo_key_part *parts, size_t count)
{
	uint64_t hash = count;

	for (size_t i = 0; i < count; i++)
		hash = hash_combine(hash, memo_cache_hash(parts[i].data, parts[i].len));
	return hash;
}

struct lookup {
	const struct memo_key_part *parts;
	size_t count;
	size_t key_len; /* of all parts */
};

static size_t key_offset(size_t value_len)
{
	return (value_len + VALUE_ALIGN - 1) / VALUE_ALIGN * VALUE_ALIGN;
}

static size_t parts_len(const struct memo_key_part *parts, size_t count)
{
	size_t len = 0;

	for (size_t i = 0; i < count; i++)
		len += parts[i].len;
	return len;
}

static bool entry_matches(const void *context, uint32_t position, const void *wanted)
{
	const struct memo_cache_entry *entry = &((const struct memo_cache *)context)->entries[position];
	const struct lookup *lookup = wanted;
	const uint8_t *kept = entry->block + key_offset(entry->value_len);

	if (entry->key_len != lookup->key_len)
		return false;
	for (size_t i = 0; i < lookup->count; i++) {
		if (lookup->parts[i].len && memcmp(kept, lookup->parts[i].data, lookup->parts[i].len) != 0)
			return false;
		kept += lookup->parts[i].len;
	}
	return true;
}

void *memo_cache_find_parts(struct memo_cache *cache, uint64_t hash, const struct memo_key_part *parts,
			    size_t count, size_t *value_len)
{
	struct lookup lookup = { parts, count, parts_len(parts, count) };
	int64_t position = hash_index_find(&cache->index, hash, entry_matches, cache, &lookup);
	struct memo_cache_entry *entry;

	if (position < 0)
		return NULL;
	entry = &cache->entries[position];
	entry->referenced = true;
	*value_len = entry->value_len;
	return entry->block;
}

void *memo_cache_find(struct memo_cache *cache, uint64_t hash, const void *key, size_t key_len,
		      size_t *value_len)
{
	struct memo_key_part part = { key, key_len };

	return memo_cache_find_parts(cache, hash, &part, 1, value_len);
}

static size_t entry_bytes(const struct memo_cache_entry *entry)
{
	return key_offset(entry->value_len) + entry->key_len;
}

/* Removes the entry at position; the last one takes its place. */
static void remove_at(struct memo_cache *cache, size_t position)
{
	struct memo_cache_entry *entry = &cache->entries[position];
	size_t last = cache->count - 1;

	hash_index_remove(&cache->index, entry->hash, (uint32_t)position);
	cache->bytes -= entry_bytes(entry);
	free(entry->block);
	if (position != last) {
		/* Same hash, new position: the index is rebuilt for it, never grown. */
		hash_index_remove(&cache->index, cache->entries[last].hash, (uint32_t)last);
		cache->entries[position] = cache->entries[last];
		(void)hash_index_insert(&cache->index, cache->entries[position].hash, (uint32_t)position);
	}
	cache->count--;
}

/* The clock: passes over entries found since its last pass (clearing their mark), evicts the next. */
static void evict_one(struct memo_cache *cache)
{
	for (;;) {
		struct memo_cache_entry *entry;

		if (cache->hand >= cache->count)
			cache->hand = 0;
		entry = &cache->entries[cache->hand];
		if (!entry->referenced)
			break;
		entry->referenced = false;
		cache->hand++;
	}
	remove_at(cache, cache->hand);
	cache->evictions++;
}

void *memo_cache_put_parts(struct memo_cache *cache, uint64_t hash, const struct memo_key_part *parts,
			   size_t count, size_t value_len)
{
	size_t key_len = parts_len(parts, count), bytes = key_offset(value_len) + key_len;
	struct memo_cache_entry *entry;
	uint8_t *block, *key;

	if (bytes > cache->max_bytes || cache->max_entries == 0)
		return NULL;
	while (cache->count && (cache->count >= cache->max_entries || cache->bytes + bytes > cache->max_bytes))
		evict_one(cache);
	if (ARRAY_RESERVE(cache->entries, cache->capacity, cache->count + 1))
		return NULL;
	block = malloc(bytes);
	if (!block)
		return NULL;
	if (hash_index_insert(&cache->index, hash, (uint32_t)cache->count)) {
		free(block);
		return NULL;
	}
	key = block + key_offset(value_len);
	for (size_t i = 0; i < count; i++) {
		if (parts[i].len)
			memcpy(key, parts[i].data, parts[i].len);
		key += parts[i].len;
	}
	entry = &cache->entries[cache->count++];
	*entry = (struct memo_cache_entry){ .hash = hash, .block = block, .value_len = value_len,
					    .key_len = key_len };
	cache->bytes += bytes;
	return block;
}

void *memo_cache_put(struct memo_cache *cache, uint64_t hash, const void *key, size_t key_len,
		     size_t value_len)
{
	struct memo_key_part part = { key, key_len };

	return memo_cache_put_parts(cache, hash, &part, 1, value_len);
}
