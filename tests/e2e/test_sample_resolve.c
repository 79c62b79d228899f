// SPDX-License-Identifier: MIT
/*
 * symbolize/sample_resolve with native stacks: synthetic records of this very
 * process, whose pcs lie in real functions (libz's deflate; functions of this
 * executable named like the interpreter's, since the main executable counts as
 * the interpreter), merged with Python frames; C++ names demangled. Kernel
 * frames named through a namer, each new address once, a record's in one batch.
 */
#include "native_records.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

#include "symbolize/sample_resolve.h"
#include "symbolize/symbolize_native.h"
#include "proc/proc_maps.h"

/* Interpreter functions, as the test executable's symbols (the main executable is the interpreter's). */
INTERPRETER_FUNCTION(Py_BytesMain)
INTERPRETER_FUNCTION(_PyEval_EvalFrameDefault)
INTERPRETER_FUNCTION(builtin_sorted)
INTERPRETER_FUNCTION(PyObject_Vectorcall)

static uint64_t inside(void (*function)(void))
{
	/* Past the start, as a return address is: its pc - 1 is still in the function. */
	return (uint64_t)(uintptr_t)function + 4;
}

static const uint64_t *stack_into_libz(uint64_t *pcs)
{
	/* Leaf first: deflate (exact pc), called through the call machinery from builtin_sorted, run by
	 * one activation of the eval function, below it the thread's bootstrap. */
	pcs[0] = (uint64_t)(uintptr_t)deflate + 16;
	pcs[1] = inside(PyObject_Vectorcall);
	pcs[2] = inside(builtin_sorted);
	/* 3.12+: BPF marks an activation by the C-stack shim its frame holds */
	pcs[3] = inside(_PyEval_EvalFrameDefault) | PBP_NATIVE_PC_EVAL;
	pcs[4] = inside(Py_BytesMain);
	return pcs;
}

/* Python frames at their activation, interpreter noise hidden, foreign code kept. */
static void test_merges_python_into_native(void **state)
{
	struct fixture *fixture = *state;
	static struct record_buffer buffer;
	const bool entry[2] = { false, true };
	uint64_t pcs[5];
	struct pf_sample sample;
	char text[512];

	build_record(&buffer, 2, entry, stack_into_libz(pcs), 5, UNWIND_STOP_ROOT);
	assert_int_equal(sample_resolve_record(&fixture->resolver, &buffer.record, buffer.size, &fixture->python,
					       &sample), 0);
	render(&sample, text, sizeof(text));
	/* The fake code objects cannot be read: the Python frames are <unresolved>, the sample invalid. */
	assert_string_equal(text, "INVALID;py;py;builtin_sorted;deflate");
	assert_non_null(strstr(sample.frames[4].file, "/libz.so"));
	assert_int_equal(fixture->resolver.merge_failures, 0);
	assert_int_equal(fixture->resolver.native_walks[UNWIND_STOP_ROOT], 1);
	assert_int_equal(sample_resolve_native_walk_count(&fixture->resolver), 1);

	fixture->resolver.native_keep_all = true;
	assert_int_equal(sample_resolve_record(&fixture->resolver, &buffer.record, buffer.size, &fixture->python,
					       &sample), 0);
	render(&sample, text, sizeof(text));
	assert_string_equal(text, "INVALID;Py_BytesMain;py;py;builtin_sorted;PyObject_Vectorcall;deflate");
}

/* Two activations: each takes the Python frames up to its entry mark. */
static void test_two_activations(void **state)
{
	struct fixture *fixture = *state;
	static struct record_buffer buffer;
	const bool entry[3] = { true, false, true };
	uint64_t pcs[4] = {
		inside(_PyEval_EvalFrameDefault), inside(builtin_sorted),
		inside(_PyEval_EvalFrameDefault), inside(Py_BytesMain),
	};
	struct pf_sample sample;
	char text[512];

	pcs[0] -= 4; /* the leaf's pc is exact */
	pcs[0] |= PBP_NATIVE_PC_EVAL;
	pcs[2] |= PBP_NATIVE_PC_EVAL;
	build_record(&buffer, 3, entry, pcs, 4, UNWIND_STOP_ROOT);
	assert_int_equal(sample_resolve_record(&fixture->resolver, &buffer.record, buffer.size, &fixture->python,
					       &sample), 0);
	render(&sample, text, sizeof(text));
	assert_string_equal(text, "INVALID;py;py;builtin_sorted;py");
	assert_int_equal(fixture->resolver.merge_failures, 0);
	/* From 3.12 the eval function's name alone does not make an activation: without
	 * BPF's mark the Python frames have none, and the sample is kept whole and counted. */
	pcs[0] &= ~PBP_NATIVE_PC_EVAL;
	pcs[2] &= ~PBP_NATIVE_PC_EVAL;
	build_record(&buffer, 3, entry, pcs, 4, UNWIND_STOP_ROOT);
	assert_int_equal(sample_resolve_record(&fixture->resolver, &buffer.record, buffer.size, &fixture->python,
					       &sample), 0);
	assert_int_equal(fixture->resolver.merge_failures, 1);
}

/* Up to 3.10 every Python frame is its own activation: the marks are not read. */
static void test_every_frame_an_entry_before_311(void **state)
{
	struct fixture *fixture = *state;
	static struct record_buffer buffer;
	const bool entry[2] = { false, false };
	uint64_t pcs[3] = { inside(_PyEval_EvalFrameDefault), inside(_PyEval_EvalFrameDefault), inside(Py_BytesMain) };
	struct pf_sample sample;
	char text[512];

	fixture->python.minor = 10;
	build_record(&buffer, 2, entry, pcs, 3, UNWIND_STOP_ROOT);
	assert_int_equal(sample_resolve_record(&fixture->resolver, &buffer.record, buffer.size, &fixture->python,
					       &sample), 0);
	render(&sample, text, sizeof(text));
	assert_string_equal(text, "INVALID;py;py");
	assert_int_equal(fixture->resolver.merge_failures, 0);
	/* The same marks at 3.12 leave a Python frame over: kept, counted. */
	fixture->python.minor = 12;
	assert_int_equal(sample_resolve_record(&fixture->resolver, &buffer.record, buffer.size, &fixture->python,
					       &sample), 0);
	assert_int_equal(fixture->resolver.merge_failures, 1);
}

/* Stacks that disagree are kept whole (native on top of Python) and counted; stop causes counted. */
static void test_disagreeing_stacks_kept(void **state)
{
	struct fixture *fixture = *state;
	static struct record_buffer buffer;
	const bool entry[1] = { true };
	uint64_t pcs[2] = { (uint64_t)(uintptr_t)deflate + 16, inside(builtin_sorted) };
	struct pf_sample sample;
	char text[512];

	/* a walk that reached the root with no activation for the Python frame */
	build_record(&buffer, 1, entry, pcs, 2, UNWIND_STOP_ROOT);
	assert_int_equal(sample_resolve_record(&fixture->resolver, &buffer.record, buffer.size, &fixture->python,
					       &sample), 0);
	render(&sample, text, sizeof(text));
	assert_string_equal(text, "INVALID;py;builtin_sorted;deflate");
	assert_int_equal(fixture->resolver.merge_failures, 1);
	assert_int_equal(fixture->resolver.native_walks[UNWIND_STOP_ROOT], 1);
	/* a walk cut short never reached the Python frame's activation: no disagreement */
	build_record(&buffer, 1, entry, pcs, 2, UNWIND_STOP_NO_CFI);
	assert_int_equal(sample_resolve_record(&fixture->resolver, &buffer.record, buffer.size, &fixture->python,
					       &sample), 0);
	render(&sample, text, sizeof(text));
	assert_string_equal(text, "INVALID;py;builtin_sorted;deflate");
	assert_int_equal(fixture->resolver.merge_failures, 1);
	assert_int_equal(fixture->resolver.native_walks[UNWIND_STOP_NO_CFI], 1);
}

/* No native frames in a record: the leaf frame from user_ip, as without native stacks. */
static void test_no_native_frames_keeps_leaf(void **state)
{
	struct fixture *fixture = *state;
	static struct record_buffer buffer;
	const bool entry[1] = { true };
	struct pf_sample sample;
	char text[512];

	build_record(&buffer, 1, entry, NULL, 0, UNWIND_STOP_NOT_WALKED);
	buffer.record.user_ip = (uint64_t)(uintptr_t)deflate + 16;
	assert_int_equal(sample_resolve_record(&fixture->resolver, &buffer.record, buffer.size, &fixture->python,
					       &sample), 0);
	render(&sample, text, sizeof(text));
	assert_string_equal(text, "INVALID;py;deflate");
	assert_int_equal(sample_resolve_native_walk_count(&fixture->resolver), 0);
	assert_int_equal(fixture->resolver.native_walks[UNWIND_STOP_NOT_WALKED], 1);
}

/* The interpreter's own frames are named and marked; other files' are not the interpreter's. */
static void test_lookup_roles_and_offsets(void **state)
{
	struct fixture *fixture = *state;
	struct symbolize_native_frame found;
	struct proc_file_id libz;
	Dl_info info;

	assert_int_equal(symbolize_native_lookup(fixture->resolver.native, getpid(), &fixture->python.runtime_file,
						 inside(builtin_sorted), &found), 1);
	assert_true(found.in_interpreter);
	assert_string_equal(found.symbol, "builtin_sorted");
	assert_int_equal(symbolize_native_lookup(fixture->resolver.native, getpid(), &fixture->python.runtime_file,
						 (uint64_t)(uintptr_t)deflate + 16, &found), 1);
	assert_false(found.in_interpreter);
	assert_string_equal(found.symbol, "deflate");
	/* libz named as the interpreter's file (a static build's python is the runtime's file too). */
	assert_true(dladdr((void *)(uintptr_t)deflate, &info) != 0);
	libz = test_file_holding((uint64_t)(uintptr_t)deflate);
	assert_int_not_equal(libz.inode, 0);
	assert_int_equal(symbolize_native_lookup(fixture->resolver.native, getpid(), &libz,
						 (uint64_t)(uintptr_t)deflate + 16, &found), 1);
	assert_true(found.in_interpreter);
	/* libz's ELF header page: no function covers it, its file offset names it. */
	assert_int_equal(symbolize_native_lookup(fixture->resolver.native, getpid(), NULL,
						 (uint64_t)(uintptr_t)info.dli_fbase + 0x10, &found), 1);
	assert_null(found.symbol);
	assert_true(strncmp(found.frame.name, "[libz.so", 8) == 0);
	assert_non_null(strstr(found.frame.name, "+0x10]"));
}

/* C++ symbols read as their source: libstdc++'s std::exception destructor. */
static void test_demangles_cpp_names(void **state)
{
	struct fixture *fixture = *state;
	struct symbolize_native_frame found;
	void *destructor = dlsym(RTLD_DEFAULT, "_ZNSt9exceptionD2Ev");

	assert_non_null(destructor);
	assert_int_equal(symbolize_native_lookup(fixture->resolver.native, getpid(), NULL,
						 (uint64_t)(uintptr_t)destructor + 1, &found), 1);
	assert_string_equal(found.symbol, "std::exception::~exception()");
	assert_string_equal(found.frame.name, "std::exception::~exception()");
}

/* ---- kernel frames: named by a namer, a record's new addresses in one batch ---- */

struct fake_namer {
	size_t calls, addresses_asked;
	int fail;
};

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_merges_python_into_native, native_resolver_setup, native_resolver_teardown),
		cmocka_unit_test_setup_teardown(test_two_activations, native_resolver_setup, native_resolver_teardown),
		cmocka_unit_test_setup_teardown(test_every_frame_an_entry_before_311, native_resolver_setup,
						native_resolver_teardown),
		cmocka_unit_test_setup_teardown(test_disagreeing_stacks_kept, native_resolver_setup, native_resolver_teardown),
		cmocka_unit_test_setup_teardown(test_no_native_frames_keeps_leaf, native_resolver_setup, native_resolver_teardown),
		cmocka_unit_test_setup_teardown(test_lookup_roles_and_offsets, native_resolver_setup, native_resolver_teardown),
		cmocka_unit_test_setup_teardown(test_demangles_cpp_names, native_resolver_setup, native_resolver_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
