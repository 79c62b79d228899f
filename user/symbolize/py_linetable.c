/* SPDX-License-Identifier: MIT */
#include "symbolize/py_linetable.h"

#include <errno.h>
#include <stdbool.h>

/* Line arithmetic runs in 64 bits so that a hostile table cannot overflow. */
static bool line_fits(int64_t line)
{
	return line >= INT32_MIN && line <= INT32_MAX;
}

static void set_line_only(struct py_location *out, int64_t line)
{
	out->line = (int32_t)line;
	out->end_line = (int32_t)line;
	out->column = -1;
	out->end_column = -1;
}

static void set_unknown(struct py_location *out)
{
	out->line = out->end_line = out->column = out->end_column = -1;
}

/*
 * co_lnotab: (address increment, line increment) byte pairs. The line of an
 * address is the one in force after the last pair whose cumulative address
 * does not pass it (PyCode_Addr2Line before 3.10).
 */
static int lookup_lnotab(const uint8_t *table, size_t table_len, bool signed_lines,
			 int32_t firstlineno, uint32_t byte_offset, struct py_location *out)
{
	uint64_t address = 0;
	int64_t line = firstlineno;

	if (table_len % 2)
		return -EINVAL;
	for (size_t i = 0; i < table_len; i += 2) {
		address += table[i];
		if (address > byte_offset)
			break;
		line += signed_lines ? (int8_t)table[i + 1] : table[i + 1];
		if (!line_fits(line))
			return -EINVAL;
	}
	set_line_only(out, line);
	return 0;
}

/* 3.10 co_linetable: (byte length, signed line delta) pairs; -128 means "no line". */
#define LINETABLE_310_NO_LINE (-128)

static int lookup_linetable_310(const uint8_t *table, size_t table_len, int32_t firstlineno,
				uint32_t byte_offset, struct py_location *out)
{
	uint64_t range_end = 0;
	int64_t line = firstlineno;

	if (table_len % 2)
		return -EINVAL;
	for (size_t i = 0; i < table_len; i += 2) {
		int8_t line_delta = (int8_t)table[i + 1];
		bool has_line = line_delta != LINETABLE_310_NO_LINE;

		range_end += table[i];
		if (has_line) {
			line += line_delta;
			if (!line_fits(line))
				return -EINVAL;
		}
		if (byte_offset < range_end) {
			if (has_line)
				set_line_only(out, line);
			else
				set_unknown(out);
			return 0;
		}
	}
	set_unknown(out);
	return 0;
}

/* 3.11+ location table (PEP 657): entries of a code kind and a length in code units. */
enum {
	LOCATION_SHORT_MAX = 9,    /* 0-9: same line, column packed in the code and one byte */
	LOCATION_ONE_LINE_0 = 10,  /* 10-12: line delta 0-2, column and end column bytes */
	LOCATION_ONE_LINE_2 = 12,
	LOCATION_NO_COLUMN = 13,   /* svarint line delta, no columns */
	LOCATION_LONG = 14,        /* svarint line delta, varints end line delta, column+1, end column+1 */
	LOCATION_NONE = 15,        /* no location at all */
};

struct location_reader {
	const uint8_t *table;
	size_t len;
	size_t pos;
};

static int read_byte(struct location_reader *reader, uint32_t *value)
{
	if (reader->pos >= reader->len)
		return -EINVAL;
	*value = reader->table[reader->pos++];
	return 0;
}

/* 6 value bits per byte, low groups first, 0x40 = more follow. */
static int read_varint(struct location_reader *reader, uint32_t *value)
{
	uint32_t byte;
	uint32_t result = 0;

	for (unsigned shift = 0; shift < 32; shift += 6) {
		if (read_byte(reader, &byte) < 0)
			return -EINVAL;
		result |= (byte & 63u) << shift;
		if (!(byte & 64u)) {
			*value = result;
			return 0;
		}
	}
	return -EINVAL;
}

/* Magnitude shifted left once, sign in the low bit. */
static int read_svarint(struct location_reader *reader, int64_t *value)
{
	uint32_t raw;

	if (read_varint(reader, &raw) < 0)
		return -EINVAL;
	*value = raw & 1u ? -(int64_t)(raw >> 1) : (int64_t)(raw >> 1);
	return 0;
}

/*
 * Decodes the entry at reader->pos (whose first byte is already known to
 * start an entry), advancing *line as CPython does even for entries the
 * caller does not want, and filling *out with this entry's location.
 */
static int decode_location_entry(struct location_reader *reader, uint32_t code, int64_t *line,
				 struct py_location *out)
{
	uint32_t second, third, raw;
	int64_t delta;

	if (code <= LOCATION_SHORT_MAX) {
		if (read_byte(reader, &second) < 0)
			return -EINVAL;
		out->line = out->end_line = (int32_t)*line;
		out->column = (int32_t)(code * 8 + ((second >> 4) & 7));
		out->end_column = out->column + (int32_t)(second & 15);
		return 0;
	}
	if (code >= LOCATION_ONE_LINE_0 && code <= LOCATION_ONE_LINE_2) {
		if (read_byte(reader, &second) < 0 || read_byte(reader, &third) < 0)
			return -EINVAL;
		*line += code - LOCATION_ONE_LINE_0;
		if (!line_fits(*line))
			return -EINVAL;
		out->line = out->end_line = (int32_t)*line;
		out->column = (int32_t)second;
		out->end_column = (int32_t)third;
		return 0;
	}
	if (code == LOCATION_NO_COLUMN) {
		if (read_svarint(reader, &delta) < 0)
			return -EINVAL;
		*line += delta;
		if (!line_fits(*line))
			return -EINVAL;
		set_line_only(out, *line);
		return 0;
	}
	if (code == LOCATION_LONG) {
		int64_t end_line;

		if (read_svarint(reader, &delta) < 0)
			return -EINVAL;
		*line += delta;
		if (!line_fits(*line) || read_varint(reader, &raw) < 0)
			return -EINVAL;
		end_line = *line + raw;
		if (!line_fits(end_line))
			return -EINVAL;
		out->line = (int32_t)*line;
		out->end_line = (int32_t)end_line;
		if (read_varint(reader, &raw) < 0 || raw > (uint32_t)INT32_MAX)
			return -EINVAL;
		out->column = (int32_t)raw - 1;
		if (read_varint(reader, &raw) < 0 || raw > (uint32_t)INT32_MAX)
			return -EINVAL;
		out->end_column = (int32_t)raw - 1;
		return 0;
	}
	set_unknown(out); /* LOCATION_NONE */
	return 0;
}

static int lookup_location_table(const uint8_t *table, size_t table_len, int32_t firstlineno,
				 uint32_t byte_offset, struct py_location *out)
{
	struct location_reader reader = { .table = table, .len = table_len, .pos = 0 };
	uint64_t unit = byte_offset / 2;
	uint64_t range_end = 0;
	int64_t line = firstlineno;

	/* Every entry consumes at least one byte: the loop ends with the table. */
	while (reader.pos < reader.len) {
		uint32_t first = table[reader.pos++];
		struct py_location entry;

		if (!(first & 0x80))
			return -EINVAL;
		if (decode_location_entry(&reader, (first >> 3) & 15u, &line, &entry) < 0)
			return -EINVAL;
		range_end += (first & 7u) + 1;
		if (unit < range_end) {
			*out = entry;
			return 0;
		}
	}
	set_unknown(out);
	return 0;
}

int py_linetable_lookup(unsigned major, unsigned minor, const uint8_t *table, size_t table_len,
			int32_t firstlineno, uint32_t byte_offset, struct py_location *out)
{
	if (!out || (!table && table_len))
		return -EINVAL;
	if (major == 2 && minor == 7)
		return lookup_lnotab(table, table_len, false, firstlineno, byte_offset, out);
	if (major != 3 || minor < 6)
		return -ENOTSUP;
	if (minor <= 9)
		return lookup_lnotab(table, table_len, true, firstlineno, byte_offset, out);
	if (minor == 10)
		return lookup_linetable_310(table, table_len, firstlineno, byte_offset, out);
	return lookup_location_table(table, table_len, firstlineno, byte_offset, out);
}
