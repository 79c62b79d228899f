// SPDX-License-Identifier: MIT
#include "util/target_budget.h"

#include <errno.h>
#include <stdlib.h>

struct budget_store {
	const char *name;
	target_budget_oldest_fn *oldest;
	target_budget_evict_fn *evict;
	void *context;
	uint64_t held, peak, evictions, evicted_bytes, refusals;
	bool fixed; /* target_budget_set_fixed's: outside the limit */
};

struct target_budget {
	uint64_t limit;
	uint64_t held;
	uint64_t peak;
	uint64_t freed_total;
	uint64_t clock;
	struct budget_store stores[TARGET_BUDGET_MAX_STORES];
	int store_count;
};

int target_budget_new(uint64_t limit, struct target_budget **out)
{
	struct target_budget *budget = calloc(1, sizeof(*budget));

	if (!budget)
		return -ENOMEM;
	budget->limit = limit ? limit : TARGET_BUDGET_DEFAULT_BYTES;
	*out = budget;
	return 0;
}

void target_budget_free(struct target_budget *budget)
{
	free(budget);
}

uint64_t target_budget_limit(const struct target_budget *budget)
{
	return budget->limit;
}

int target_budget_register(struct target_budget *budget, const char *name, target_budget_oldest_fn *oldest,
			   target_budget_evict_fn *evict, void *store)
{
	if (budget->store_count == TARGET_BUDGET_MAX_STORES)
		return -ENOSPC;
	budget->stores[budget->store_count] = (struct budget_store){
		.name = name, .oldest = evict ? oldest : NULL, .evict = oldest ? evict : NULL, .context = store
	};
	return budget->store_count++;
}

uint64_t target_budget_tick(struct target_budget *budget)
{
	return ++budget->clock;
}

uint64_t *target_budget_clock(struct target_budget *budget)
{
	return &budget->clock;
}

/* The store whose oldest object is the least recently used of all (-1: none can drop any), and
 * how old the next oldest store's is (what it may evict up to before another store's turn). */
static int least_recent_store(const struct target_budget *budget, uint64_t *next_oldest)
{
	uint64_t best = UINT64_MAX;
	int chosen = -1;

	*next_oldest = UINT64_MAX;
	for (int i = 0; i < budget->store_count; i++) {
		const struct budget_store *store = &budget->stores[i];
		uint64_t oldest;

		if (!store->oldest || !store->held)
			continue;
		oldest = store->oldest(store->context);
		if (oldest < best) {
			*next_oldest = best;
			best = oldest;
			chosen = i;
		} else if (oldest < *next_oldest) {
			*next_oldest = oldest;
		}
	}
	return best == UINT64_MAX ? -1 : chosen;
}

/* Evicts, least recent first across the stores, until target bytes at most are held; false if
 * nothing more can go before that. Each round lets one store drop every object older than the
 * next store's oldest, so a full budget costs a round per store, not one per object. */
static bool evict_down_to(struct target_budget *budget, uint64_t target)
{
	while (budget->held > target) {
		uint64_t next_oldest, freed;
		int chosen = least_recent_store(budget, &next_oldest);
		struct budget_store *store;

		if (chosen < 0)
			return false;
		store = &budget->stores[chosen];
		freed = store->evict(store->context, budget->held - target, next_oldest);
		if (!freed)
			return false;
		if (freed > store->held)
			freed = store->held;
		store->held -= freed;
		budget->held -= freed;
		budget->freed_total += freed;
		store->evictions++;
		store->evicted_bytes += freed;
	}
	return true;
}

/* What may still be charged: none once stores that cannot be refused (target_budget_set_held)
 * hold more than the limit. */
static uint64_t room_left(const struct target_budget *budget)
{
	return budget->held >= budget->limit ? 0 : budget->limit - budget->held;
}

int target_budget_charge(struct target_budget *budget, int store_id, uint64_t bytes)
{
	struct budget_store *store = &budget->stores[store_id];

	if (bytes > budget->limit) {
		store->refusals++;
		return -ENOSPC;
	}
	if (bytes > room_left(budget)) {
		/* room for bytes, and down to the low water with them if they are small */
		uint64_t low_water = budget->limit / 100 * TARGET_BUDGET_LOW_WATER_PERCENT;

		evict_down_to(budget, bytes <= low_water ? low_water - bytes : budget->limit - bytes);
		/* what could not go before the low water may still have left room enough */
		if (bytes > room_left(budget)) {
			store->refusals++;
			return -ENOSPC;
		}
	}
	store->held += bytes;
	budget->held += bytes;
	if (store->held > store->peak)
		store->peak = store->held;
	if (budget->held > budget->peak)
		budget->peak = budget->held;
	return 0;
}

void target_budget_set_held(struct target_budget *budget, int store_id, uint64_t bytes)
{
	struct budget_store *store = &budget->stores[store_id];
	uint64_t held = store->held;

	if (bytes <= held) {
		target_budget_release(budget, store_id, held - bytes);
		return;
	}
	if (target_budget_charge(budget, store_id, bytes - held) == 0)
		return;
	/* refused (and counted), but held all the same */
	store->held = bytes;
	budget->held += bytes - held;
	if (store->held > store->peak)
		store->peak = store->held;
	if (budget->held > budget->peak)
		budget->peak = budget->held;
}

void target_budget_set_fixed(struct target_budget *budget, int store_id, uint64_t bytes)
{
	struct budget_store *store = &budget->stores[store_id];

	store->fixed = true;
	store->held = bytes;
	if (bytes > store->peak)
		store->peak = bytes;
}

void target_budget_refuse(struct target_budget *budget, int store_id)
{
	budget->stores[store_id].refusals++;
}

void target_budget_note_eviction(struct target_budget *budget, int store_id, uint64_t bytes)
{
	if (!bytes)
		return;
	budget->stores[store_id].evictions++;
	budget->stores[store_id].evicted_bytes += bytes;
}

void target_budget_release(struct target_budget *budget, int store_id, uint64_t bytes)
{
	struct budget_store *store = &budget->stores[store_id];

	if (bytes > store->held)
		bytes = store->held;
	store->held -= bytes;
	budget->held -= bytes;
	budget->freed_total += bytes;
}

uint64_t target_budget_held(const struct target_budget *budget)
{
	return budget->held;
}

uint64_t target_budget_freed_total(const struct target_budget *budget)
{
	return budget->freed_total;
}

uint64_t target_budget_peak(const struct target_budget *budget)
{
	return budget->peak;
}

int target_budget_stats(const struct target_budget *budget, struct target_budget_store_stats *out)
{
	for (int i = 0; i < budget->store_count; i++) {
		const struct budget_store *store = &budget->stores[i];

		out[i] = (struct target_budget_store_stats){ .name = store->name,
							      .held = store->held,
							      .peak = store->peak,
							      .fixed = store->fixed,
							      .evictions = store->evictions,
							      .evicted_bytes = store->evicted_bytes,
							      .refusals = store->refusals };
	}
	return budget->store_count;
}
