// SPDX-License-Identifier: MIT
#include "util/array.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int array_reserve(void **items, size_t *capacity, size_t needed, size_t item_size,
		  size_t min_capacity)
{
	size_t grown = *capacity ? *capacity : (min_capacity ? min_capacity : 1);
	void *moved;

	if (needed <= *capacity)
		return 0;
	while (grown < needed) {
		if (grown > SIZE_MAX / 2)
			return -ENOMEM;
		grown *= 2;
	}
	if (item_size && grown > SIZE_MAX / item_size)
		return -ENOMEM;
	moved = realloc(*items, grown * item_size);
	if (!moved)
		return -ENOMEM;
	*items = moved;
	*capacity = grown;
	return 0;
}

static uint64_t key_of(const void *items, size_t index, size_t item_size, size_t key_offset)
{
	uint64_t key;

	/* memcpy: the key of a packed or byte-addressed element may be unaligned */
	memcpy(&key, (const char *)items + index * item_size + key_offset, sizeof(key));
	return key;
}

const void *array_last_at_or_below_u64(const void *items, size_t count, size_t item_size, size_t key_offset,
				       uint64_t value)
{
	size_t low = 0, high = count;

	/* keys of [0, low) are <= value, keys of [high, count) are above it */
	while (low < high) {
		size_t middle = low + (high - low) / 2;

		if (key_of(items, middle, item_size, key_offset) <= value)
			low = middle + 1;
		else
			high = middle;
	}
	return low ? (const char *)items + (low - 1) * item_size : NULL;
}
