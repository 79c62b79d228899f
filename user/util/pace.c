// SPDX-License-Identifier: MIT
#include "util/pace.h"

bool pace_take(struct pace *pace, uint64_t now_ms, uint32_t burst, uint32_t interval_ms)
{
	uint64_t full_span = (uint64_t)burst * interval_ms;
	/* A bucket idle for long is full, and no fuller: the burst is all it has saved. */
	uint64_t earliest = now_ms > full_span ? now_ms - full_span : 0;

	if (pace->paid_until_ms < earliest)
		pace->paid_until_ms = earliest;
	if (pace->paid_until_ms + interval_ms > now_ms)
		return false;
	pace->paid_until_ms += interval_ms;
	return true;
}
