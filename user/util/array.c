// SPDX-License-Identifier: MIT
#include "util/array.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

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
