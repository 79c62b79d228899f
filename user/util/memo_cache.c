// SPDX-License-Identifier: MIT
#include "util/memo_cache.h"

#include <stdlib.h>
#include <string.h>

#include "util/array.h"
#include "util/target_budget.h"

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
	if (cache->budget)
		target_budget_release(cache->budget, cache->budget_store, cache->bytes);
	cache->count = 0;
	cache->hand = 0;
	cache->bytes = 0;
	cache->pinned = NULL;
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
	if (cache->budget) {
		entry->used = ++*target_budget_clock(cache->budget);
		cache->pinned = entry->block;
	}
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

/* Removes the entry at position; the last one takes its place. Its bytes leave the cache; the
 * caller releases them from the budget (or the budget does, when it evicted them). */
static void remove_at(struct memo_cache *cache, size_t position)
{
	struct memo_cache_entry *entry = &cache->entries[position];
	size_t last = cache->count - 1;

	hash_index_remove(&cache->index, entry->hash, (uint32_t)position);
	cache->bytes -= entry_bytes(entry);
	if (cache->pinned == entry->block)
		cache->pinned = NULL;
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
	if (cache->budget) {
		uint64_t bytes = entry_bytes(&cache->entries[cache->hand]);

		target_budget_release(cache->budget, cache->budget_store, bytes);
		target_budget_note_eviction(cache->budget, cache->budget_store, bytes);
	}
	remove_at(cache, cache->hand);
	cache->evictions++;
}

/* The budget's side (util/target_budget.h): the stamp of the least recently used entry it may
 * drop, and dropping those. */
static uint64_t oldest_entry(void *context)
{
	const struct memo_cache *cache = context;
	uint64_t oldest = UINT64_MAX;

	for (size_t i = 0; i < cache->count; i++)
		if (cache->entries[i].used < oldest && cache->entries[i].block != cache->pinned)
			oldest = cache->entries[i].used;
	return oldest;
}

struct stamped_size {
	uint64_t used, bytes;
};

static int compare_stamps(const void *a, const void *b)
{
	uint64_t left = ((const struct stamped_size *)a)->used, right = ((const struct stamped_size *)b)->used;

	return left < right ? -1 : left > right;
}

/* The least recently used entries until bytes are freed or the next was used since older_than
 * (its oldest at least): the entries sorted by stamp give the newest stamp to drop, then one
 * pass drops every entry stamped no later. */
static uint64_t evict_for_budget(void *context, uint64_t bytes, uint64_t older_than)
{
	struct memo_cache *cache = context;
	struct stamped_size *order = malloc((cache->count ? cache->count : 1) * sizeof(*order));
	uint64_t freed = 0, planned = 0, newest_dropped = 0;
	size_t count = 0;

	if (!order)
		return 0;
	for (size_t i = 0; i < cache->count; i++)
		if (cache->entries[i].block != cache->pinned)
			order[count++] = (struct stamped_size){ cache->entries[i].used, entry_bytes(&cache->entries[i]) };
	qsort(order, count, sizeof(*order), compare_stamps);
	for (size_t i = 0; i < count && planned < bytes && (!planned || order[i].used < older_than); i++) {
		newest_dropped = order[i].used;
		planned += order[i].bytes;
	}
	free(order);
	if (!planned)
		return 0;
	/* from the end: the last entry, moved into a removed one's place, was seen already */
	for (size_t i = cache->count; i-- > 0;) {
		struct memo_cache_entry *entry = &cache->entries[i];

		if (entry->used > newest_dropped || entry->block == cache->pinned)
			continue;
		freed += entry_bytes(entry);
		remove_at(cache, i);
	}
	if (cache->hand >= cache->count)
		cache->hand = 0;
	return freed;
}

int memo_cache_set_budget(struct memo_cache *cache, struct target_budget *budget, const char *name,
			  unsigned share_percent)
{
	int store = target_budget_register(budget, name, oldest_entry, evict_for_budget, cache);
	uint64_t share = target_budget_limit(budget) / 100 * share_percent;

	if (store < 0)
		return store;
	cache->budget = budget;
	cache->budget_store = store;
	if (share < cache->max_bytes)
		cache->max_bytes = (size_t)share;
	return 0;
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
	/* the budget may evict entries of this cache to make room: before the new one is in */
	if (cache->budget && target_budget_charge(cache->budget, cache->budget_store, bytes))
		return NULL;
	block = malloc(bytes);
	if (!block || hash_index_insert(&cache->index, hash, (uint32_t)cache->count)) {
		free(block);
		if (cache->budget)
			target_budget_release(cache->budget, cache->budget_store, bytes);
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
	if (cache->budget) {
		entry->used = ++*target_budget_clock(cache->budget);
		cache->pinned = block;
	}
	cache->bytes += bytes;
	return block;
}

void *memo_cache_put(struct memo_cache *cache, uint64_t hash, const void *key, size_t key_len,
		     size_t value_len)
{
	struct memo_key_part part = { key, key_len };

	return memo_cache_put_parts(cache, hash, &part, 1, value_len);
}
