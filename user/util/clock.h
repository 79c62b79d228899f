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

/*
 * The same clock at the kernel tick's resolution (1-10 ms), for a deadline checked once per
 * sample: it reads the vDSO's copy of the last tick, 3 ns here, where CLOCK_MONOTONIC reads the
 * hypervisor's clock page (26 ns in a loop, and about 6% of the profiler's time at 20 kHz when
 * read once per sample). Compare it only with itself: it lags CLOCK_MONOTONIC by up to a tick.
 */
static inline uint64_t clock_coarse_ms(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
	return (uint64_t)now.tv_sec * 1000 + (uint64_t)now.tv_nsec / 1000000;
}

#endif
