/* SPDX-License-Identifier: MIT */
/*
 * The line table decoder against CPython itself: every interpreter on the
 * machine dumps its own tables and the locations it computes for every
 * instruction offset (tests/scripts/linetable_dump.py), and the decoder must
 * agree on each one. Plus hand-made tables for the malformed cases.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>

#include "symbolize/py_linetable.h"
#include "testlib.h"

/* The checkout: $PYBPFPROF_SRCDIR, else the first parent of this binary holding tests/scripts. */
/* The command running interpreter `label` (tests/pythons/list-pythons.sh), or false if absent. */
/* All of a command's standard output (NUL-terminated), or NULL; *status its exit status. */
static char *command_output(const char *command, int *status)
{
	FILE *pipe = popen(command, "r");
	size_t len = 0, capacity = 1 << 16;
	char *out = malloc(capacity);
	size_t got;

	if (!pipe || !out) {
		if (pipe)
			pclose(pipe);
		free(out);
		return NULL;
	}
	while ((got = fread(out + len, 1, capacity - len - 1, pipe)) > 0) {
		len += got;
		if (capacity - len - 1 == 0) {
			char *bigger = realloc(out, capacity * 2);

			if (!bigger)
				break;
			out = bigger;
			capacity *= 2;
		}
	}
	out[len] = 0;
	*status = pclose(pipe);
	return out;
}

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* "-" is the empty table. Returns the byte count, or -1. */
static long decode_hex(const char *hex, uint8_t *out, size_t capacity)
{
	size_t len = strlen(hex);

	if (strcmp(hex, "-") == 0)
		return 0;
	if (len % 2 || len / 2 > capacity)
		return -1;
	for (size_t i = 0; i < len / 2; i++) {
		int high = hex_value(hex[2 * i]), low = hex_value(hex[2 * i + 1]);

		if (high < 0 || low < 0)
			return -1;
		out[i] = (uint8_t)(high << 4 | low);
	}
	return (long)(len / 2);
}

struct fixture_check {
	unsigned major, minor;
	size_t code_objects, locations, mismatches, errors;
	size_t with_columns, multi_line, no_line;
};

static void check_location(struct fixture_check *check, const char *code_name, const uint8_t *table,
			   size_t table_len, int32_t firstlineno, const char *loc_line)
{
	long offset;
	int line, end_line, column, end_column;
	struct py_location got;
	int rc;

	if (sscanf(loc_line, "loc %ld %d %d %d %d", &offset, &line, &end_line, &column, &end_column) != 5) {
		check->errors++;
		return;
	}
	check->locations++;
	check->with_columns += column >= 0;
	check->multi_line += end_line > line;
	check->no_line += line < 0;
	rc = py_linetable_lookup(check->major, check->minor, table, table_len, firstlineno, (uint32_t)offset,
				 &got);
	if (rc == 0 && got.line == line && got.end_line == end_line && got.column == column &&
	    got.end_column == end_column)
		return;
	if (check->mismatches++ < 10)
		print_error("%u.%u %s offset %ld: want %d-%d:%d-%d, got rc %d %d-%d:%d-%d\n", check->major,
			    check->minor, code_name, offset, line, end_line, column, end_column, rc, got.line,
			    got.end_line, got.column, got.end_column);
}

static void check_fixture_output(char *output, struct fixture_check *check)
{
	static uint8_t table[1 << 20];
	char name[512] = "";
	long table_len = -1;
	int firstlineno = 0;
	size_t declared = 0;
	char *save = NULL;

	for (char *line = strtok_r(output, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		static char hex[2 << 20];
		long code_bytes;

		if (strncmp(line, "version ", 8) == 0) {
			assert_int_equal(sscanf(line, "version %u %u", &check->major, &check->minor), 2);
		} else if (strncmp(line, "code ", 5) == 0) {
			assert_int_equal(sscanf(line, "code %511s %d %2097151s %ld", name, &firstlineno, hex,
						&code_bytes),
					 4);
			table_len = decode_hex(hex, table, sizeof(table));
			assert_true(table_len >= 0);
			check->code_objects++;
		} else if (strncmp(line, "loc ", 4) == 0) {
			assert_true(table_len >= 0);
			check_location(check, name, table, (size_t)table_len, firstlineno, line);
		} else if (strncmp(line, "end ", 4) == 0) {
			assert_int_equal(sscanf(line, "end %zu", &declared), 1);
		} else {
			check->errors++;
		}
	}
	assert_int_equal(declared, check->code_objects);
}

static void check_interpreter(const char *label)
{
	char command[1024], run[PATH_MAX + 1200];
	struct fixture_check check = { 0 };
	int status = -1;
	char *output;

	if (!test_python_command(label, command, sizeof(command))) {
		print_message("python %s is not installed\n", label);
		skip();
	}
	snprintf(run, sizeof(run), "%s %s/tests/scripts/linetable_dump.py", command, test_source_dir());
	output = command_output(run, &status);
	assert_non_null(output);
	assert_int_equal(status, 0);
	check_fixture_output(output, &check);
	free(output);

	assert_int_equal(check.errors, 0);
	assert_true(check.code_objects >= 20);
	assert_true(check.locations >= 4000);
	assert_int_equal(check.mismatches, 0);
	/* The fixture really exercised what each format can express. */
	if (check.major == 3 && check.minor >= 11) {
		assert_true(check.with_columns > check.locations / 2);
		assert_true(check.multi_line > 0);
	}
	if (check.major == 3 && check.minor >= 10)
		assert_true(check.no_line > 0);
	print_message("python %s: %zu code objects, %zu offsets agree\n", label, check.code_objects,
		      check.locations);
}

#define INTERPRETER_TEST(fn, label)                                                                   \
	static void fn(void **state)                                                                  \
	{                                                                                             \
		(void)state;                                                                          \
		check_interpreter(label);                                                             \
	}

INTERPRETER_TEST(test_cpython_2_7, "2.7")
INTERPRETER_TEST(test_cpython_3_6, "3.6")
INTERPRETER_TEST(test_cpython_3_7, "3.7")
INTERPRETER_TEST(test_cpython_3_8, "3.8")
INTERPRETER_TEST(test_cpython_3_9, "3.9")
INTERPRETER_TEST(test_cpython_3_10, "3.10")
INTERPRETER_TEST(test_cpython_3_11, "3.11")
INTERPRETER_TEST(test_cpython_3_11_static, "3.11-static")
INTERPRETER_TEST(test_cpython_3_12, "3.12")
INTERPRETER_TEST(test_cpython_3_13, "3.13")
INTERPRETER_TEST(test_cpython_3_14, "3.14")
INTERPRETER_TEST(test_cpython_3_15, "3.15")

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
		cmocka_unit_test(test_cpython_2_7),
		cmocka_unit_test(test_cpython_3_6),
		cmocka_unit_test(test_cpython_3_7),
		cmocka_unit_test(test_cpython_3_8),
		cmocka_unit_test(test_cpython_3_9),
		cmocka_unit_test(test_cpython_3_10),
		cmocka_unit_test(test_cpython_3_11),
		cmocka_unit_test(test_cpython_3_11_static),
		cmocka_unit_test(test_cpython_3_12),
		cmocka_unit_test(test_cpython_3_13),
		cmocka_unit_test(test_cpython_3_14),
		cmocka_unit_test(test_cpython_3_15),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
