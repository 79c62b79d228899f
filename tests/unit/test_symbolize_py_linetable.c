/* SPDX-License-Identifier: MIT */
/*
 * The line table decoder (symbolize/py_linetable) on hand-made tables: each version's forms,
 * the malformed cases, and every truncation of a table read safely.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>

#include "symbolize/py_linetable.h"
#include "testlib.h"

static struct py_location lookup_ok(unsigned major, unsigned minor, const uint8_t *table, size_t len,
				    int32_t firstlineno, uint32_t offset)
{
	struct py_location location = { 0, 0, 0, 0 };

	assert_int_equal(py_linetable_lookup(major, minor, table, len, firstlineno, offset, &location), 0);
	return location;
}

static void test_lnotab_signedness(void **state)
{
	/* 6 bytes on the first line, then +0xfe lines: 2.7 reads +254, 3.6-3.9 read -2. */
	const uint8_t table[] = { 6, 0xfe };

	(void)state;
	assert_int_equal(lookup_ok(2, 7, table, sizeof(table), 10, 5).line, 10);
	assert_int_equal(lookup_ok(2, 7, table, sizeof(table), 10, 6).line, 264);
	assert_int_equal(lookup_ok(3, 8, table, sizeof(table), 10, 6).line, 8);
	assert_int_equal(lookup_ok(3, 8, table, sizeof(table), 10, 6).column, -1);
	/* Past the end: the last line, as PyCode_Addr2Line says. */
	assert_int_equal(lookup_ok(3, 8, table, sizeof(table), 10, 1000).line, 8);
	/* No table at all: everything is on the first line. */
	assert_int_equal(lookup_ok(3, 6, NULL, 0, 42, 100).line, 42);
}

static void test_linetable_310_no_line_and_end(void **state)
{
	/* 4 bytes at +1, 2 bytes with no line, 2 bytes at +1 (counted from the last real line). */
	const uint8_t table[] = { 4, 1, 2, 0x80, 2, 1 };
	struct py_location location;

	(void)state;
	assert_int_equal(lookup_ok(3, 10, table, sizeof(table), 5, 3).line, 6);
	assert_int_equal(lookup_ok(3, 10, table, sizeof(table), 5, 4).line, -1);
	assert_int_equal(lookup_ok(3, 10, table, sizeof(table), 5, 6).line, 7);
	location = lookup_ok(3, 10, table, sizeof(table), 5, 8);
	assert_int_equal(location.line, -1);
	assert_int_equal(location.end_line, -1);
}

static void test_location_table_forms(void **state)
{
	const uint8_t table[] = {
		0x80 | (14 << 3) | 0, 0x02, 0x01, 0x05, 0x0b, /* long: line +1, end +1, col 4, end col 10 */
		0x80 | (1 << 3) | 1, 0x23,                     /* short, 2 units: col 8+2, end col +3 */
		0x80 | (12 << 3) | 0, 200, 255,               /* one line +2: col 200, end col 255 */
		0x80 | (13 << 3) | 0, 0x03,                   /* no column: line -1 */
		0x80 | (15 << 3) | 0,                         /* no location */
		0x80 | (14 << 3) | 0, 0x40, 0x02, 0x02, 0x00, 0x00, /* long: +64 lines (2-byte svarint), no columns */
	};
	struct py_location location;

	(void)state;
	location = lookup_ok(3, 12, table, sizeof(table), 100, 0);
	assert_int_equal(location.line, 101);
	assert_int_equal(location.end_line, 102);
	assert_int_equal(location.column, 4);
	assert_int_equal(location.end_column, 10);
	location = lookup_ok(3, 12, table, sizeof(table), 100, 5); /* second unit of the short entry */
	assert_int_equal(location.line, 101);
	assert_int_equal(location.end_line, 101);
	assert_int_equal(location.column, 10);
	assert_int_equal(location.end_column, 13);
	location = lookup_ok(3, 11, table, sizeof(table), 100, 6);
	assert_int_equal(location.line, 103);
	assert_int_equal(location.column, 200);
	assert_int_equal(location.end_column, 255);
	location = lookup_ok(3, 13, table, sizeof(table), 100, 8);
	assert_int_equal(location.line, 102);
	assert_int_equal(location.end_line, 102);
	assert_int_equal(location.column, -1);
	location = lookup_ok(3, 13, table, sizeof(table), 100, 10);
	assert_int_equal(location.line, -1);
	assert_int_equal(location.column, -1);
	location = lookup_ok(3, 13, table, sizeof(table), 100, 12);
	assert_int_equal(location.line, 102 + 64);
	assert_int_equal(location.end_line, 102 + 64 + 2);
	assert_int_equal(location.column, -1);
	assert_int_equal(location.end_column, -1);
	/* Past the last entry: nothing is known. */
	assert_int_equal(lookup_ok(3, 13, table, sizeof(table), 100, 14).line, -1);
}

static void test_malformed_tables(void **state)
{
	const uint8_t odd[] = { 4, 1, 2 };
	const uint8_t no_entry_bit[] = { 0x10, 0x00 };
	const uint8_t truncated_long[] = { 0x80 | (14 << 3), 0x02, 0x01 };
	const uint8_t endless_varint[] = { 0x80 | (13 << 3), 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x01 };
	const uint8_t truncated_short[] = { 0x80 | (3 << 3) };
	uint8_t line_overflow[2 * 300];
	struct py_location location;

	(void)state;
	for (size_t i = 0; i < sizeof(line_overflow); i += 2) {
		line_overflow[i] = 0;
		line_overflow[i + 1] = 0x7f;
	}
	assert_int_equal(py_linetable_lookup(3, 9, odd, sizeof(odd), 1, 0, &location), -EINVAL);
	assert_int_equal(py_linetable_lookup(3, 10, odd, sizeof(odd), 1, 0, &location), -EINVAL);
	assert_int_equal(py_linetable_lookup(3, 11, no_entry_bit, sizeof(no_entry_bit), 1, 0, &location), -EINVAL);
	assert_int_equal(py_linetable_lookup(3, 12, truncated_long, sizeof(truncated_long), 1, 0, &location),
			 -EINVAL);
	assert_int_equal(py_linetable_lookup(3, 12, endless_varint, sizeof(endless_varint), 1, 0, &location),
			 -EINVAL);
	assert_int_equal(py_linetable_lookup(3, 12, truncated_short, sizeof(truncated_short), 1, 0, &location),
			 -EINVAL);
	/* 127 * 300 lines on top of INT32_MAX - 10: refused, not wrapped. */
	assert_int_equal(py_linetable_lookup(3, 9, line_overflow, sizeof(line_overflow), INT32_MAX - 10, 0,
					     &location),
			 -EINVAL);
	assert_int_equal(py_linetable_lookup(3, 5, odd, 2, 1, 0, &location), -ENOTSUP);
	assert_int_equal(py_linetable_lookup(4, 0, odd, 2, 1, 0, &location), -ENOTSUP);
	assert_int_equal(py_linetable_lookup(3, 12, NULL, 4, 1, 0, &location), -EINVAL);
	assert_int_equal(py_linetable_lookup(3, 12, odd, 2, 1, 0, NULL), -EINVAL);
}

/* Every prefix of a real-looking table either decodes or is refused: never read past its end. */
static void test_every_truncation_is_safe(void **state)
{
	const uint8_t table[] = {
		0x80 | (14 << 3) | 7, 0x42, 0x43, 0x01, 0x45, 0x46, 0x01, 0x47, 0x01,
		0x80 | (10 << 3) | 3, 1, 2, 0x80 | (5 << 3) | 2, 0x11, 0x80 | (13 << 3), 0x41, 0x03,
	};

	(void)state;
	for (size_t len = 0; len <= sizeof(table); len++) {
		uint8_t *copy = malloc(len ? len : 1); /* exact size, so ASan sees any overrun */
		struct py_location location;

		assert_non_null(copy);
		memcpy(copy, table, len);
		for (uint32_t offset = 0; offset < 64; offset++) {
			int rc = py_linetable_lookup(3, 12, copy, len, 1, offset, &location);

			assert_true(rc == 0 || rc == -EINVAL);
			rc = py_linetable_lookup(3, 10, copy, len, 1, offset, &location);
			assert_true(rc == 0 || rc == -EINVAL);
		}
		free(copy);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lnotab_signedness),
		cmocka_unit_test(test_linetable_310_no_line_and_end),
		cmocka_unit_test(test_location_table_forms),
		cmocka_unit_test(test_malformed_tables),
		cmocka_unit_test(test_every_truncation_is_safe),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
