// SPDX-License-Identifier: MIT
/*
 * The _Py_DebugOffsets at the start of a 3.13+ target's _PyRuntime: the target's memory, so
 * anything; py_discover decodes the sampler's offsets and the GIL's layout from it with these.
 * The input's tail stands for the AsyncioDebug words of the file holding _asyncio (as much a
 * target's as the rest): the asyncio layout takes them on top of the blob's.
 */
#include "fuzz.h"

#include <string.h>

#include "python/py_offsets.h"
#include "python/py_runtime_file.h"

int fuzz_py_debug_offsets_run(const uint8_t *data, size_t size)
{
	struct py_offsets offsets;
	struct py_gil_layout gil;
	struct py_asyncio_layout asyncio;
	uint64_t words[PY_ASYNCIO_DEBUG_WORDS];
	uint32_t version_hex;
	char reason[256];

	py_offsets_from_debug(data, size, &offsets, &version_hex, reason, sizeof(reason));
	py_gil_layout_from_debug(data, size, &gil, reason, sizeof(reason));
	if (py_asyncio_layout_from_debug(data, size, &asyncio, reason, sizeof(reason)) == 0 && size >= sizeof(words)) {
		memcpy(words, data + size - sizeof(words), sizeof(words));
		py_asyncio_layout_add_module(&asyncio, words, PY_ASYNCIO_DEBUG_WORDS);
	}
	return 0;
}
