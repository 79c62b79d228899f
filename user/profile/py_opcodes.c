// SPDX-License-Identifier: MIT
#include "profile/py_opcodes.h"

#include <stdint.h>
#include <stdio.h>

struct py_opcode_table {
	unsigned minor; /* of 3.x */
	const char *const *names;
	const char *const *bases;
	const uint8_t *caches; /* 255: not known */
};

#include "profile/py_opcode_table.inc"

static const struct py_opcode_table *table_for(unsigned major, unsigned minor)
{
	if (major != 3)
		return NULL;
	for (size_t i = 0; i < sizeof(py_opcode_tables) / sizeof(py_opcode_tables[0]); i++)
		if (py_opcode_tables[i].minor == minor)
			return &py_opcode_tables[i];
	return NULL;
}

bool py_opcode_version_known(unsigned major, unsigned minor)
{
	return table_for(major, minor) != NULL;
}

const char *py_opcode_name(unsigned major, unsigned minor, int opcode)
{
	const struct py_opcode_table *table = table_for(major, minor);

	return table && opcode >= 0 && opcode < 256 ? table->names[opcode] : NULL;
}

const char *py_opcode_base_name(unsigned major, unsigned minor, int opcode)
{
	const struct py_opcode_table *table = table_for(major, minor);

	return table && opcode >= 0 && opcode < 256 ? table->bases[opcode] : NULL;
}

int py_opcode_cache_units(unsigned major, unsigned minor, int opcode)
{
	const struct py_opcode_table *table = table_for(major, minor);

	if (!table || opcode < 0 || opcode > 255 || table->caches[opcode] == 255)
		return -1;
	return table->caches[opcode];
}

const char *py_opcode_describe(unsigned major, unsigned minor, int opcode, char *buffer, size_t size)
{
	const char *name = py_opcode_name(major, minor, opcode);
	const char *base = py_opcode_base_name(major, minor, opcode);

	if (!name)
		snprintf(buffer, size, "opcode %d", opcode);
	else if (base)
		snprintf(buffer, size, "%s (%s)", name, base);
	else
		snprintf(buffer, size, "%s", name);
	return buffer;
}
