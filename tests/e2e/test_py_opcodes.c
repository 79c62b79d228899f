/* SPDX-License-Identifier: MIT */
/*
 * The instruction names of each CPython (user/profile/py_opcode_table.inc) are generated from
 * the interpreters themselves by tools/gen_py_opcodes.sh: the committed table must be
 * what the generator gives on this machine's interpreters (pyenv 3.11-3.13, the sid chroot's
 * 3.14 and 3.15), and the lookups must name what annotate shows. And --opcodes' read of a
 * frame's instruction from a (fake, in-process) 3.11 code object: the byte at the pointer, or
 * the instruction whose inline cache holds the pointer, read again when asked.
 */
#include <stdlib.h>
#include <string.h>

#include "fake_python.h"
#include "profile/py_opcodes.h"
#include "symbolize/symbolize_py.h"
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
	FORMAT(command, "sh %s/tools/gen_py_opcodes.sh > %s", test_source_dir(), generated);
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
		fail_msg("%s differs from tools/gen_py_opcodes.sh's output: regenerate it", committed);
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

/*
 * 3.11 bytecode, byte offsets: 0 RESUME, 2 LOAD_FAST, 4 LOAD_ATTR_INSTANCE_VALUE and its 4
 * cache units (6-13), 14 CALL and its 4 (16-23), 24 RETURN_VALUE. The caches hold bytes that
 * would read as instructions (40, 171, 83), as a specialised instruction's counters may.
 */
static const uint8_t bytecode_311[] = { 151, 0, 124, 0, 40, 1, 40, 40, 171, 171, 83, 83, 171, 0,
					171, 1, 83, 83, 40, 40, 171, 0, 83, 171, 83, 0 };

static int16_t opcode_at(struct symbolize_py_cache *cache, const struct fake_python *fake, int64_t byte_offset)
{
	const struct py_offsets *off = &fake->python.config.off;
	struct pbp_py_frame raw = fake_python_frame(fake, 0, (uint32_t)(off->code_code_adaptive + byte_offset));
	struct pf_frame frame;

	assert_int_equal(symbolize_py_resolve(cache, fake->python.pid, &fake->python.config, raw.code_addr,
					      raw.checksum, raw.instr_offset, &frame), 0);
	return frame.opcode;
}

static void test_frame_instruction_is_read(void **state)
{
	struct fake_python fake;
	struct symbolize_py_cache *with = symbolize_py_cache_new(), *without = symbolize_py_cache_new();
	const struct py_offsets *off;
	uint64_t generation;

	(void)state;
	assert_non_null(with);
	assert_non_null(without);
	fake_python_init(&fake, 1);
	off = &fake.python.config.off;
	assert_true(off->code_code_adaptive + sizeof(bytecode_311) <= 1024);
	memcpy(fake.codes[0] + off->code_code_adaptive, bytecode_311, sizeof(bytecode_311));
	assert_string_equal(py_opcode_name(3, 11, 40), "LOAD_ATTR_INSTANCE_VALUE");
	assert_string_equal(py_opcode_name(3, 11, 171), "CALL");
	assert_string_equal(py_opcode_name(3, 11, 83), "RETURN_VALUE");
	symbolize_py_cache_set_opcodes(with, true);

	assert_int_equal(opcode_at(with, &fake, 4), 40);
	assert_int_equal(opcode_at(with, &fake, 14), 171);
	assert_int_equal(opcode_at(with, &fake, 24), 83);
	/* inside an instruction's caches: that instruction, whatever the cache bytes read as */
	assert_int_equal(opcode_at(with, &fake, 12), 40);
	assert_int_equal(opcode_at(with, &fake, 22), 171);
	/* a frame not started (3.11: the pointer before the code) has none */
	assert_int_equal(opcode_at(with, &fake, -2), -1);
	/* without --opcodes nothing is read */
	assert_int_equal(opcode_at(without, &fake, 4), -1);
	/* read once per (code object, offset): a later change of the byte is seen only when the
	 * instructions are read again, which says the frames changed */
	fake.codes[0][off->code_code_adaptive + 4] = 106;
	assert_int_equal(opcode_at(with, &fake, 4), 40);
	assert_int_equal(opcode_at(with, &fake, 2), 124);
	generation = symbolize_py_generation(with);
	/* the frames at 4 and at 12, in its caches */
	assert_int_equal(symbolize_py_refresh_opcodes(with, 1024), 2);
	assert_true(symbolize_py_generation(with) != generation);
	assert_int_equal(opcode_at(with, &fake, 4), 106);
	assert_int_equal(opcode_at(with, &fake, 12), 106);
	assert_int_equal(opcode_at(with, &fake, 22), 171);
	generation = symbolize_py_generation(with);
	assert_int_equal(symbolize_py_refresh_opcodes(with, 1024), 0);
	assert_true(symbolize_py_generation(with) == generation);
	assert_int_equal(symbolize_py_refresh_opcodes(without, 1024), 0);

	symbolize_py_cache_free(with);
	symbolize_py_cache_free(without);
	fake_python_free(&fake);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_committed_table_is_generated),
		cmocka_unit_test(test_names_by_version),
		cmocka_unit_test(test_frame_instruction_is_read),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
