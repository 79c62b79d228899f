// SPDX-License-Identifier: MIT
/*
 * A code object's line table as a target's memory holds it (symbolize_py reads it from there).
 * Input: major, minor (1 byte each), co_firstlineno (int32), the byte offset of an instruction
 * (uint32), both little-endian, then the table (co_lnotab or co_linetable).
 */
#include "fuzz.h"

#include <string.h>

#include "symbolize/py_linetable.h"

#define HEADER_SIZE 10u
/* Offsets looked up besides the input's: spread over the table's reach (each lookup
 * walks the table, so a fixed number of them keeps a run linear in the input). */
#define SWEEP_LOOKUPS 64u

static uint32_t load_u32(const uint8_t *bytes)
{
	return (uint32_t)bytes[0] | (uint32_t)bytes[1] << 8 | (uint32_t)bytes[2] << 16 |
	       (uint32_t)bytes[3] << 24;
}

int fuzz_py_linetable_run(const uint8_t *data, size_t size)
{
	const uint8_t *table = data + HEADER_SIZE;
	size_t table_len;
	unsigned major, minor;
	int32_t firstlineno;
	uint32_t byte_offset, step;
	struct py_location location;

	if (size < HEADER_SIZE)
		return 0;
	major = data[0];
	minor = data[1];
	firstlineno = (int32_t)load_u32(data + 2);
	byte_offset = load_u32(data + 6);
	table_len = size - HEADER_SIZE;
	py_linetable_lookup(major, minor, table, table_len, firstlineno, byte_offset, &location);
	/* A table covers at most 2 * 8 code units a byte (3.11's entries) or 255 bytes a pair. */
	step = (uint32_t)((table_len * 128 + 2) / SWEEP_LOOKUPS) & ~1u;
	for (uint32_t i = 0; i < SWEEP_LOOKUPS; i++)
		py_linetable_lookup(major, minor, table, table_len, firstlineno, i * (step ? step : 2),
				    &location);
	/* An empty table and no table at all are what a code object may hold too. */
	py_linetable_lookup(major, minor, NULL, 0, firstlineno, byte_offset, &location);
	return 0;
}
