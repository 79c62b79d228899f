/* SPDX-License-Identifier: MIT */
/* Pre-faults the heap that set-up is about to fill, in one call instead of a fault per page. */
#ifndef PYBPFPROF_HEAP_WARM_H
#define PYBPFPROF_HEAP_WARM_H

#include <stddef.h>

/* Leaves `bytes` of the malloc heap resident and free for the allocations that follow.
 * Only a speed-up: where the kernel or allocator cannot do it, nothing changes. */
void heap_warm(size_t bytes);

#endif
