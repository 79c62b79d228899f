/* SPDX-License-Identifier: MIT */
/* The one clock of the program: CLOCK_MONOTONIC, the clock sample timestamps use. */
#ifndef PYBPFPROF_CLOCK_H
#define PYBPFPROF_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_monotonic_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
}

static inline uint64_t clock_monotonic_us(void)
{
	return clock_monotonic_ns() / 1000;
}

static inline uint64_t clock_monotonic_ms(void)
{
	return clock_monotonic_ns() / 1000000;
}

#endif
