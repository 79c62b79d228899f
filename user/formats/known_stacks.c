// SPDX-License-Identifier: MIT
#include "formats/known_stacks.h"

#include "profile/profile.h"

#include <string.h>

struct known_key {
	uint64_t stack_id;
	uint64_t epoch;
};

void known_stacks_init(struct known_stacks *known, size_t max_bytes)
{
	memo_cache_init(&known->cache, KNOWN_STACKS_MAX, max_bytes);
	known->dead_below = pf_stack_ids_dead_below();
}

/* Every entry was put before the ids died (each put looks first): all of them are dead. */
static void drop_dead(struct known_stacks *known)
{
	uint64_t dead_below = pf_stack_ids_dead_below();

	if (dead_below == known->dead_below)
		return;
	memo_cache_clear(&known->cache);
	known->dead_below = dead_below;
}

void known_stacks_free(struct known_stacks *known)
{
	memo_cache_free(&known->cache);
}

const void *known_stacks_find(struct known_stacks *known, uint64_t stack_id, uint64_t epoch, size_t *len)
{
	struct known_key key = { stack_id, epoch };

	if (!stack_id)
		return NULL;
	drop_dead(known);
	return memo_cache_find(&known->cache, memo_cache_hash(&key, sizeof(key)), &key, sizeof(key), len);
}

void *known_stacks_put(struct known_stacks *known, uint64_t stack_id, uint64_t epoch, size_t len)
{
	struct known_key key = { stack_id, epoch };

	if (!stack_id)
		return NULL;
	drop_dead(known);
	return memo_cache_put(&known->cache, memo_cache_hash(&key, sizeof(key)), &key, sizeof(key), len);
}

bool known_stacks_find_id(struct known_stacks *known, uint64_t stack_id, uint32_t *value)
{
	size_t len = 0;
	const void *kept = known_stacks_find(known, stack_id, 0, &len);

	if (!kept || len != sizeof(*value))
		return false;
	memcpy(value, kept, sizeof(*value));
	return true;
}

void known_stacks_put_id(struct known_stacks *known, uint64_t stack_id, uint32_t value)
{
	void *kept = known_stacks_put(known, stack_id, 0, sizeof(value));

	if (kept)
		memcpy(kept, &value, sizeof(value));
}

void known_stacks_clear(struct known_stacks *known)
{
	memo_cache_clear(&known->cache);
}

size_t known_stacks_held_bytes(const struct known_stacks *known)
{
	const struct memo_cache *cache = &known->cache;

	return cache->bytes + cache->capacity * sizeof(*cache->entries) +
	       cache->index.capacity * sizeof(*cache->index.slots);
}
