// SPDX-License-Identifier: MIT
/*
 * A pace: at most `burst` events at once, then one more every interval_ms (a token bucket, kept
 * as the time up to which the events taken are paid for). A window that resets each second
 * would, once its burst was spent early, refuse everything for the rest of that second; a
 * bucket refilled steadily refuses for at most interval_ms after the burst.
 */
#ifndef PYBPFPROF_UTIL_PACE_H
#define PYBPFPROF_UTIL_PACE_H

#include <stdbool.h>
#include <stdint.h>

struct pace {
	uint64_t paid_until_ms; /* 0: never taken (a full bucket) */
};

/* Whether one more event may happen at now_ms (taken if so). */
bool pace_take(struct pace *pace, uint64_t now_ms, uint32_t burst, uint32_t interval_ms);

#endif
