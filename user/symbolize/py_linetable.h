/* SPDX-License-Identifier: MIT */
/*
 * CPython line tables, decoded without I/O: which source location an
 * instruction belongs to, for each of the table formats CPython has used.
 *   2.7         co_lnotab, unsigned line increments
 *   3.6 - 3.9   co_lnotab, signed line increments
 *   3.10        co_linetable (PEP 626): byte ranges, signed line deltas
 *   3.11+       co_linetable location table (PEP 657), with columns
 */
#ifndef PYBPFPROF_PY_LINETABLE_H
#define PYBPFPROF_PY_LINETABLE_H

#include <stddef.h>
#include <stdint.h>

/* Every field -1 when unknown; line numbers 1-based, columns 0-based (col_offset). */
struct py_location {
	int32_t line;
	int32_t end_line;
	int32_t column;
	int32_t end_column;
};

/*
 * The location of the instruction byte_offset bytes into the code
 * (co_code, or co_code_adaptive from 3.11). Before 3.11 only line is known
 * (end_line = line, columns -1). An offset past the table's end gives the
 * last line for co_lnotab (as CPython does) and an unknown location for
 * later formats. 0, -EINVAL on a malformed table, -ENOTSUP on an unknown version.
 */
int py_linetable_lookup(unsigned major, unsigned minor, const uint8_t *table, size_t table_len,
			int32_t firstlineno, uint32_t byte_offset, struct py_location *out);

#endif
