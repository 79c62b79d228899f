// SPDX-License-Identifier: MIT
/* A Tachyon file from anyone (zstd or not, either byte order): what `convert`, `top` and `dump` read. */
#include "fuzz.h"

int fuzz_tachyon_reader_run(const uint8_t *data, size_t size)
{
	return fuzz_profile_read("tachyon", data, size);
}
