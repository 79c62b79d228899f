/* SPDX-License-Identifier: MIT */
/* Pre-faults the heap that set-up is about to fill, in one call instead of a fault per page. */
#ifndef PYBPFPROF_HEAP_WARM_H
#define PYBPFPROF_HEAP_WARM_H

#include <stddef.h>

/* Leaves `bytes` of the malloc heap resident (in huge pages where the kernel has them) and
 * free for the allocations that follow. Only a speed-up: where the kernel or allocator cannot
 * do it, nothing changes. Once per process. */
void heap_warm(size_t bytes);
/* After set-up: the heap grows in ordinary pages again, so that a small allocation never
 * makes a whole huge page resident. Call after trimming. */
void heap_cool(void);

#endif
