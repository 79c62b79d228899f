/* SPDX-License-Identifier: MIT */
/*
 * CPython instruction names by opcode byte, for the opcodes a profile carries
 * (pf_frame.opcode, 3.11+): the tables are generated from each interpreter by
 * tools/gen_py_opcodes.sh (py_opcode_table.inc).
 */
#ifndef PYBPFPROF_PY_OPCODES_H
#define PYBPFPROF_PY_OPCODES_H

#include <stdbool.h>
#include <stddef.h>

/*
 * The instruction byte opcode names in CPython major.minor: "LOAD_ATTR_INSTANCE_VALUE".
 * NULL when the version has no table (before 3.11, or newer than 3.15) or the byte names
 * no instruction there.
 */
const char *py_opcode_name(unsigned major, unsigned minor, int opcode);
/* For a specialised instruction, the one it specialises ("LOAD_ATTR"); else NULL. */
const char *py_opcode_base_name(unsigned major, unsigned minor, int opcode);
/*
 * The inline cache entries (2-byte code units) that follow instruction opcode in the bytecode
 * of major.minor, which is what finds the instruction an offset inside its caches belongs to;
 * -1 when not known (no table; an instruction whose successors cannot be told from it).
 */
int py_opcode_cache_units(unsigned major, unsigned minor, int opcode);
/* Whether major.minor has a table. */
bool py_opcode_version_known(unsigned major, unsigned minor);
/*
 * "NAME", "NAME (BASE)" for a specialised one (as CPython 3.15's profiling.sampling shows it),
 * or "opcode N" where the version's table does not name it; into buffer, cut to size.
 */
const char *py_opcode_describe(unsigned major, unsigned minor, int opcode, char *buffer, size_t size);

#endif
