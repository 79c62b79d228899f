/* SPDX-License-Identifier: MIT */
/*
 * Blocks a target can make the profiler hold by the megabyte and then let go (the line tables
 * of code objects: up to 1 MiB each, tens of MiB of them at once until the target budget
 * evicts them). Large ones get a mapping of their own, unmapped when freed: taken from the
 * malloc heap, they would leave it grown and holed once freed, and the small allocations that
 * follow would spread over the holes and keep pages of them resident for good (the heap's top
 * pinned, trimming gives back only whole free pages). glibc's own mmap threshold does not
 * serve here: it rises past every freed mapped block (util/heap_warm.c raises it on purpose).
 */
#ifndef PYBPFPROF_BULK_ALLOC_H
#define PYBPFPROF_BULK_ALLOC_H

#include <stddef.h>

/* From this size on (the block with its header) a block is a mapping of its own. */
#define BULK_ALLOC_MAP_BYTES ((size_t)64 << 10)

/* bytes of memory (aligned for any type), or NULL; freed by bulk_free alone. */
void *bulk_alloc(size_t bytes);
/* Frees a block of bulk_alloc (NULL: nothing). */
void bulk_free(void *block);

#endif
