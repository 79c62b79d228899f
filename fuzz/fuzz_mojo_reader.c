// SPDX-License-Identifier: MIT
/* A MOJO file from anyone: what `pybpfprof convert`, `top` and `dump` read. */
#include "fuzz.h"

int fuzz_mojo_reader_run(const uint8_t *data, size_t size)
{
	return fuzz_profile_read("mojo", data, size);
}
