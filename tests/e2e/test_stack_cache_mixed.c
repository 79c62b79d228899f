// SPDX-License-Identifier: MIT
/*
 * Stacks kept for the records that repeat them (symbolize/sample_resolve.c) and what the
 * writers keep of stacks written before (formats/known_stacks.h): the same records through
 * a resolver that keeps stacks and one that keeps none give byte-identical files, with
 * repeats, a code object renamed and forgotten in the middle, truncated stacks, kernel
 * frames, several threads and mixed native stacks. The bounded cache under them
 * (util/memo_cache.h): its clock, its budgets, and that a hash alone never matches.
 * The Python frames are fake 3.11 code objects in this process (tests/lib/fake_python.h).
 */
#include "resolve_pipeline.h"

#include <inttypes.h>

#include <unistd.h>
#include <zlib.h>

#include "fake_python.h"
#include "formats/format_registry.h"
#include "symbolize/sample_resolve.h"
#include "symbolize/symbolize_native.h"
#include "symbolize/symbolize_py.h"
#include "util/memo_cache.h"

/* Interpreter functions, as the test executable's symbols (the main executable is the interpreter's). */
INTERPRETER_FUNCTION(Py_BytesMain)
INTERPRETER_FUNCTION(_PyEval_EvalFrameDefault)

/* Mixed stacks: native pcs that differ but name the same functions share the kept stack, and the
 * files are the same as resolving each record anew. */
static void test_mixed_stacks_keyed_by_names(void **state)
{
	static struct pipeline keeping, fresh;
	static struct fake_record buffer;
	const size_t codes[] = { 7, 6, 5 };
	struct fake_python fake;
	struct pf_sample kept_sample, fresh_sample;
	uint64_t first_id = 0;

	(void)state;
	fake_python_init(&fake, 8);
	/* No such file is mapped: only the main executable is the interpreter's. */
	fake.python.runtime_file = (struct proc_file_id){ 0 };
	pipeline_open(&keeping, "mixed-keeping", true, true);
	pipeline_open(&fresh, "mixed-fresh", false, true);
	for (size_t n = 0; n < 12; n++) {
		/* Leaf first: in deflate (a pc that moves), one activation of the eval function, the bootstrap. */
		const uint64_t pcs[] = { (uint64_t)(uintptr_t)deflate + 16 + (n % 4) * 4,
					 (uint64_t)(uintptr_t)_PyEval_EvalFrameDefault + 4,
					 (uint64_t)(uintptr_t)Py_BytesMain + 4 };

		fake_python_record(&fake, &buffer, codes, 3, (uint32_t)(n % 2) * 2, NULL, 0);
		/* one activation ran all three frames: the outermost is its entry */
		((struct pbp_py_frame *)(buffer.bytes + sizeof(struct pbp_record)))[2].instr_offset |= PBP_PY_FRAME_ENTRY;
		fake_python_add_native(&buffer, pcs, 3, UNWIND_STOP_ROOT);
		buffer.record.time_ns = 1000000000ull + n * 1000000ull;
		pipeline_feed(&keeping, &fake, &buffer, &kept_sample);
		pipeline_feed(&fresh, &fake, &buffer, &fresh_sample);
		assert_same_frames(&kept_sample, &fresh_sample);
		assert_true(has_frame_named(&kept_sample, "deflate"));
		assert_true(has_frame_named(&kept_sample, "function_5"));
		if (n % 2 == 0) {
			if (!first_id)
				first_id = kept_sample.stack_id;
			assert_true(kept_sample.stack_id == first_id);
		}
	}
	/* Two leaf offsets: two stacks, whatever the pcs in deflate. */
	assert_int_equal(keeping.resolver.stack_misses, 2);
	pipeline_close(&keeping);
	pipeline_close(&fresh);
	assert_same_files(&keeping, &fresh);
	fake_python_free(&fake);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mixed_stacks_keyed_by_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
