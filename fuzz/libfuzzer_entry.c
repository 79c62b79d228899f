// SPDX-License-Identifier: MIT
/* libFuzzer's entry point, built once per harness with -DFUZZ_TARGET=fuzz_<name>_run. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return FUZZ_TARGET(data, size);
}
