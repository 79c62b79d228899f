// SPDX-License-Identifier: MIT
/* A collapsed-stacks file from anyone: what `pybpfprof convert` and `top` read. */
#include "fuzz.h"

int fuzz_collapsed_reader_run(const uint8_t *data, size_t size)
{
	return fuzz_profile_read("collapsed", data, size);
}
