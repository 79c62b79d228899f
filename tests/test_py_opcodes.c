/* SPDX-License-Identifier: MIT */
/*
 * The instruction names of each CPython (user/profile/py_opcode_table.inc) are generated from
 * the interpreters themselves by tests/scripts/gen_py_opcodes.sh: the committed table must be
 * what the generator gives on this machine's interpreters (pyenv 3.11-3.13, the sid chroot's
 * 3.14 and 3.15), and the lookups must name what annotate shows.
 */
#include <stdlib.h>
#include <string.h>

#include "profile/py_opcodes.h"
#include "testlib.h"

static void test_committed_table_is_generated(void **state)
{
	char command[PATH_MAX * 2], generated[] = "/tmp/pybpfprof-opcodes-XXXXXX", committed[PATH_MAX];
	uint8_t *want, *got;
	size_t want_len = 0, got_len = 0;
	int fd = mkstemp(generated), status;

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	FORMAT(command, "sh %s/tests/scripts/gen_py_opcodes.sh > %s", test_source_dir(), generated);
	status = system(command);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 2) {
		unlink(generated);
		skip(); /* an interpreter is missing: the generator said which */
	}
	assert_int_equal(status, 0);
	FORMAT(committed, "%s/user/profile/py_opcode_table.inc", test_source_dir());
	want = read_whole_file(generated, &want_len);
	got = read_whole_file(committed, &got_len);
	unlink(generated);
	assert_non_null(want);
	assert_non_null(got);
	if (want_len != got_len || memcmp(want, got, want_len))
		fail_msg("%s differs from tests/scripts/gen_py_opcodes.sh's output: regenerate it", committed);
	free(want);
	free(got);
}

/* Numbers from each interpreter's opcode module (python3.X -c 'import dis; print(dis._all_opmap[...])'). */
static void test_names_by_version(void **state)
{
	char text[64];

	(void)state;
	assert_string_equal(py_opcode_name(3, 12, 73), "LOAD_ATTR_INSTANCE_VALUE");
	assert_string_equal(py_opcode_base_name(3, 12, 73), "LOAD_ATTR");
	assert_string_equal(py_opcode_name(3, 12, 106), "LOAD_ATTR");
	assert_null(py_opcode_base_name(3, 12, 106));
	assert_string_equal(py_opcode_name(3, 13, 193), "LOAD_ATTR_INSTANCE_VALUE");
	assert_string_equal(py_opcode_name(3, 15, 186), "LOAD_ATTR_INSTANCE_VALUE");
	assert_string_equal(py_opcode_name(3, 11, 122), "BINARY_OP");
	assert_string_equal(py_opcode_describe(3, 12, 73, text, sizeof(text)), "LOAD_ATTR_INSTANCE_VALUE (LOAD_ATTR)");
	assert_string_equal(py_opcode_describe(3, 12, 106, text, sizeof(text)), "LOAD_ATTR");
	/* before 3.11 there is nothing to name; a byte a version leaves unnamed is said as a number */
	assert_false(py_opcode_version_known(3, 10));
	assert_null(py_opcode_name(3, 10, 100));
	assert_string_equal(py_opcode_describe(3, 10, 100, text, sizeof(text)), "opcode 100");
	assert_null(py_opcode_name(3, 12, -1));
	assert_null(py_opcode_name(3, 12, 256));
	/* an instruction's caches are its base's: LOAD_ATTR has 9 units from 3.12, 4 in 3.11 */
	assert_int_equal(py_opcode_cache_units(3, 12, 73), 9);
	assert_int_equal(py_opcode_cache_units(3, 12, 106), 9);
	assert_int_equal(py_opcode_cache_units(3, 11, 106), 4);
	assert_int_equal(py_opcode_cache_units(3, 10, 106), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_committed_table_is_generated),
		cmocka_unit_test(test_names_by_version),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
