/* SPDX-License-Identifier: MIT */
/* Growable arrays: one growth rule (doubling, overflow-checked) for every site. */
#ifndef PYBPFPROF_ARRAY_H
#define PYBPFPROF_ARRAY_H

#include <stddef.h>
#include <stdint.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/*
 * Makes *items hold at least `needed` elements of item_size bytes: on growth the
 * capacity doubles (at least min_capacity) and *capacity is updated. The new
 * elements are uninitialised. 0, or -ENOMEM with *items and *capacity unchanged.
 */
int array_reserve(void **items, size_t *capacity, size_t needed, size_t item_size,
		  size_t min_capacity);

/* array_reserve for a typed pointer: ARRAY_RESERVE(list->items, list->capacity, n). */
#define ARRAY_RESERVE(items, capacity, needed) \
	array_reserve((void **)&(items), &(capacity), (needed), sizeof(*(items)), 16)

/*
 * In items (count elements of item_size bytes, sorted by the uint64_t key at
 * key_offset of each), the last element whose key is <= value: the search a
 * symbol table, a list of mappings or of function starts does for an address.
 * NULL when every key is above value (or count is 0).
 */
const void *array_last_at_or_below_u64(const void *items, size_t count, size_t item_size, size_t key_offset,
				       uint64_t value);

#endif
