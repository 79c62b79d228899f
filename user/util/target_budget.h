/* SPDX-License-Identifier: MIT */
/*
 * One budget for everything a target can make the root process hold (doc/security.md): each
 * store that a target can grow (code objects and line tables, native symbol tables, output
 * tables, ...) registers, charges the bytes it is about to keep and releases those it frees.
 * Past the limit the least recently used objects go, whichever store holds them: each store
 * says how old its oldest evictable object is (by the budget's clock, which every store
 * stamps its objects with on use) and drops objects on request. What still does not fit is
 * refused: the store remembers that object as over budget (it does not read it again).
 * Every store's bytes held, evictions and refusals are counted for the -v summary.
 * Not thread-safe: one thread charges, releases and evicts.
 */
#ifndef PYBPFPROF_UTIL_TARGET_BUDGET_H
#define PYBPFPROF_UTIL_TARGET_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

/* The default limit: what bounds the profiler's RSS against any number of attackers (the
 * soak's cap is 150 MB, of which the profiler's own state takes some 60). */
#define TARGET_BUDGET_DEFAULT_BYTES ((uint64_t)64 << 20)
/* Stores at most (each a kind of object, not an instance). */
#define TARGET_BUDGET_MAX_STORES 16
/* When over the limit, eviction goes on until this share of it (in percent) is held: a
 * full budget then evicts in batches, not at every charge. */
#define TARGET_BUDGET_LOW_WATER_PERCENT 90

/* The clock value of the store's least recently used object it could drop; UINT64_MAX: none. */
typedef uint64_t target_budget_oldest_fn(void *store);
/* Drops the store's least recently used objects last used before older_than (its own oldest
 * at least), until at least bytes are freed or none is left; returns the bytes freed (the
 * budget releases them: the store does not). */
typedef uint64_t target_budget_evict_fn(void *store, uint64_t bytes, uint64_t older_than);

struct target_budget_store_stats {
	const char *name;
	uint64_t held;      /* bytes now */
	uint64_t peak;      /* the most bytes held at once */
	uint64_t evictions; /* calls of its evict that freed something */
	uint64_t evicted_bytes;
	uint64_t refusals;  /* charges refused: the object is over budget */
	bool fixed;         /* a store under a fixed cap of its own, outside the limit (set_fixed) */
};

struct target_budget;

/* limit 0: TARGET_BUDGET_DEFAULT_BYTES. 0 or -ENOMEM. */
int target_budget_new(uint64_t limit, struct target_budget **out);
void target_budget_free(struct target_budget *budget);
uint64_t target_budget_limit(const struct target_budget *budget);

/* A store: its id (>= 0), or -ENOSPC past TARGET_BUDGET_MAX_STORES. oldest and evict NULL: its
 * objects are never evicted (only charged, released and refused). name is kept, not copied. */
int target_budget_register(struct target_budget *budget, const char *name, target_budget_oldest_fn *oldest,
			   target_budget_evict_fn *evict, void *store);

/* The clock: a new, larger value at each call; what stores stamp their objects with on use. */
uint64_t target_budget_tick(struct target_budget *budget);
/* The clock itself, for a store's per-sample path to stamp with inline (++*clock). */
uint64_t *target_budget_clock(struct target_budget *budget);

/*
 * What store holds now, set whatever it was (a store that counts what it holds rather than
 * each object, and cannot drop any): the other stores' least recently used objects go to
 * make room, as for a charge; what still does not fit counts as a refusal, but is held.
 */
void target_budget_set_held(struct target_budget *budget, int store, uint64_t bytes);

/*
 * What a store under a fixed cap of its own holds now (a table whose bytes the profiler chose,
 * kept by another thread that publishes them): shown with the other stores, outside the limit
 * (neither charged nor making others evict). Use it alone for such a store.
 */
void target_budget_set_fixed(struct target_budget *budget, int store, uint64_t bytes);

/*
 * bytes more for store: 0 when they fit, after evicting the least recently used objects of any
 * store (this one's too) if need be; -ENOSPC when they cannot (counted as a refusal: nothing
 * is charged, and the caller keeps nothing).
 */
int target_budget_charge(struct target_budget *budget, int store, uint64_t bytes);
/* A refusal the store decided itself (a share of the limit it keeps to), counted as one. */
void target_budget_refuse(struct target_budget *budget, int store);
/* An eviction the store made itself to fit a charge of its own (its bytes released as it freed
 * them), counted as one of bytes. */
void target_budget_note_eviction(struct target_budget *budget, int store, uint64_t bytes);
/* bytes of store freed (never more than it holds). */
void target_budget_release(struct target_budget *budget, int store, uint64_t bytes);

uint64_t target_budget_held(const struct target_budget *budget);
/* Every byte that left the budget so far, evicted or released. */
uint64_t target_budget_freed_total(const struct target_budget *budget);
/* The most bytes held at once over all stores. */
uint64_t target_budget_peak(const struct target_budget *budget);
/* The stores registered (at most TARGET_BUDGET_MAX_STORES) into out; their number. */
int target_budget_stats(const struct target_budget *budget, struct target_budget_store_stats *out);

#endif
