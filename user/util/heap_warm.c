// SPDX-License-Identifier: MIT
#include "util/heap_warm.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/* glibc serves blocks above its mmap threshold with a fresh mapping each, so warming them
 * would be lost on free; the threshold can only be raised this far by a freed block. */
#define WARM_MAX_BYTES (31u << 20)
#define PAGE_BYTES 4096u
#define HUGE_PAGE_BYTES (2u << 20)

/* The part of the warmed block in huge pages, [huge_first, huge_end): heap_cool's to undo. */
static uintptr_t huge_first, huge_end;

/*
 * Set-up allocates some 12 MB that it mostly frees again: libbpf reads the kernel's 5.5 MB BTF
 * into one buffer and copies it into another, the BPF maps' user pages. Each
 * first touch of a page is a fault, and on a virtual machine a fault is dear: 16 us a page on
 * the PVM guest this project is measured on, 67 ms for 16 MiB, where MADV_POPULATE_WRITE fills
 * the same 16 MiB in 2.4 ms. Populated 4 KiB pages still cost the hypervisor a fault of its own
 * at their first touch from user space (11 MB copied into them: 29 ms); in 2 MiB pages, 8 ms
 * (doc/internals.md, "How it works"). So the heap is grown, made huge-page eligible where it is
 * aligned, populated, then freed: the memory stays in the heap for set-up to reuse, and the trim
 * after set-up returns what is left over (splitting the huge pages it cuts into).
 *
 * A block above glibc's mmap threshold would be a mapping of its own, unmapped on free. Freeing
 * an mmapped block raises the threshold to that block's size (glibc's dynamic threshold,
 * mallopt(3)), which keeps the dynamic adjustment working: setting M_MMAP_THRESHOLD would fix
 * it for the whole run, and a fixed threshold doubled the profiler's CPU in the whole-host soak.
 */
void heap_warm(size_t bytes)
{
	void *volatile raise;
	char *block;
	uintptr_t first, end;

	if (bytes > WARM_MAX_BYTES)
		bytes = WARM_MAX_BYTES;
	raise = malloc(bytes + PAGE_BYTES * 4);
	free(raise);
	block = malloc(bytes);
	if (!block)
		return;
	first = ((uintptr_t)block + HUGE_PAGE_BYTES - 1) & ~(uintptr_t)(HUGE_PAGE_BYTES - 1);
	end = ((uintptr_t)block + bytes) & ~(uintptr_t)(HUGE_PAGE_BYTES - 1);
	if (end > first && madvise((void *)first, end - first, MADV_HUGEPAGE) == 0) {
		huge_first = first;
		huge_end = end;
	}
	first = ((uintptr_t)block + PAGE_BYTES - 1) & ~(uintptr_t)(PAGE_BYTES - 1);
	end = ((uintptr_t)block + bytes) & ~(uintptr_t)(PAGE_BYTES - 1);
	if (end > first)
		(void)madvise((void *)first, end - first, MADV_POPULATE_WRITE);
	free(block);
}

void heap_cool(void)
{
	/* The trim may have given the range's top back already: the advice still reaches the part
	 * that is mapped (madvise then says ENOMEM for the rest). */
	if (huge_end > huge_first)
		(void)madvise((void *)huge_first, huge_end - huge_first, MADV_NOHUGEPAGE);
	huge_first = huge_end = 0;
}
