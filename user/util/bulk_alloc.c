// SPDX-License-Identifier: MIT
#include "util/bulk_alloc.h"

#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

/* Before each block: what it took in all, which says how to free it. */
struct bulk_header {
	alignas(max_align_t) size_t total;
};

void *bulk_alloc(size_t bytes)
{
	struct bulk_header *header;
	size_t total;

	if (bytes > SIZE_MAX - sizeof(*header))
		return NULL;
	total = bytes + sizeof(*header);
	if (total < BULK_ALLOC_MAP_BYTES) {
		header = malloc(total);
		if (!header)
			return NULL;
	} else {
		/* populated in one call: the block is about to be written whole, and a fault per page
		 * costs this project's VM some 16 us (doc/internals.md, start-up) */
		header = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (header == MAP_FAILED)
			return NULL;
	}
	header->total = total;
	return header + 1;
}

void bulk_free(void *block)
{
	struct bulk_header *header;

	if (!block)
		return;
	header = (struct bulk_header *)block - 1;
	if (header->total < BULK_ALLOC_MAP_BYTES)
		free(header);
	else
		(void)munmap(header, header->total);
}
