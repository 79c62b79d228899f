// SPDX-License-Identifier: MIT
/*
 * The _Py_DebugOffsets at the start of a 3.13+ target's _PyRuntime: the target's memory, so
 * anything; py_discover decodes the sampler's offsets and the GIL's layout from it with these.
 */
#include "fuzz.h"

#include "target/py_offsets.h"

int fuzz_py_debug_offsets_run(const uint8_t *data, size_t size)
{
	struct py_offsets offsets;
	struct py_gil_layout gil;
	uint32_t version_hex;
	char reason[256];

	py_offsets_from_debug(data, size, &offsets, &version_hex, reason, sizeof(reason));
	py_gil_layout_from_debug(data, size, &gil, reason, sizeof(reason));
	return 0;
}
