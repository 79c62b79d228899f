// SPDX-License-Identifier: MIT
/* target/py_runtime_file: a verdict from the parser worker that lies is refused on the wire. */
#include "testlib.h"

#include "parser/parser_protocol.h"
#include "proc/proc_maps.h"
#include "python/py_runtime_file.h"
#include "util/clock.h"

#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

enum attack { NOTE_BOMB, SPARSE_FILES_ATTACK };

/* What a worker says of a file is checked before root uses it. */
static void lying_verdicts_are_refused(void **state)
{
	struct py_runtime_file file = { .verdict = PY_RUNTIME_HERE, .major = 3, .minor = 12,
					.sym = { .has_runtime = true, .runtime = 0x1000 } };
	struct parser_py_runtime wire, bad;
	struct py_runtime_file back;

	(void)state;
	py_runtime_file_to_wire(&file, &wire);
	assert_int_equal(py_runtime_file_from_wire(&wire, &back), 0);
	assert_int_equal(back.verdict, PY_RUNTIME_HERE);
	assert_true(back.sym.has_runtime);
	assert_int_equal(back.sym.runtime, 0x1000);
	bad = wire;
	bad.verdict = 7;
	assert_int_equal(py_runtime_file_from_wire(&bad, &back), -EBADMSG);
	bad = wire;
	bad.has_runtime = 2;
	assert_int_equal(py_runtime_file_from_wire(&bad, &back), -EBADMSG);
	bad = wire;
	bad.unread = -EPERM;
	assert_int_equal(py_runtime_file_from_wire(&bad, &back), -EBADMSG);
	bad = wire;
	bad.unread = -EFBIG; /* unread, yet a runtime */
	assert_int_equal(py_runtime_file_from_wire(&bad, &back), -EBADMSG);
}

/* The evaluation function's range comes back as the worker found it, and only a plausible one:
 * sized, within PY_EVAL_FUNCTION_MAX_BYTES, not wrapping. */
static void eval_function_ranges_are_checked(void **state)
{
	struct py_runtime_file file = { .verdict = PY_RUNTIME_HERE, .major = 3, .minor = 8,
					.sym = { .has_runtime = true, .runtime = 0x1000, .has_eval_function = true,
						 .eval_function = 0x6bf60, .eval_function_size = 34511 } };
	struct parser_py_runtime wire, bad;
	struct py_runtime_file back;

	(void)state;
	py_runtime_file_to_wire(&file, &wire);
	assert_int_equal(py_runtime_file_from_wire(&wire, &back), 0);
	assert_true(back.sym.has_eval_function);
	assert_int_equal(back.sym.eval_function, 0x6bf60);
	assert_int_equal(back.sym.eval_function_size, 34511);
	bad = wire;
	bad.has_eval_function = 2;
	assert_int_equal(py_runtime_file_from_wire(&bad, &back), -EBADMSG);
	bad = wire;
	bad.eval_function_size = 0;
	assert_int_equal(py_runtime_file_from_wire(&bad, &back), -EBADMSG);
	bad = wire;
	bad.eval_function_size = PY_EVAL_FUNCTION_MAX_BYTES + 1;
	assert_int_equal(py_runtime_file_from_wire(&bad, &back), -EBADMSG);
	bad = wire;
	bad.eval_function = UINT64_MAX - 16;
	assert_int_equal(py_runtime_file_from_wire(&bad, &back), -EBADMSG);
	/* no range: whatever the other words hold, none is taken */
	bad = wire;
	bad.has_eval_function = 0;
	bad.eval_function_size = 0;
	assert_int_equal(py_runtime_file_from_wire(&bad, &back), 0);
	assert_false(back.sym.has_eval_function);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(lying_verdicts_are_refused),
		cmocka_unit_test(eval_function_ranges_are_checked),
	};

	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
