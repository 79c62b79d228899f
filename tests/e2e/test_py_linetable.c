/* SPDX-License-Identifier: MIT */
/*
 * The line table decoder against CPython itself: every interpreter on the
 * machine dumps its own tables and the locations it computes for every
 * instruction offset (tests/scripts/linetable_dump.py), and the decoder must
 * agree on each one.
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

int main(void)
{
	const struct CMUnitTest tests[] = {
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
