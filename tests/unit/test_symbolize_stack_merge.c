// SPDX-License-Identifier: MIT
/* symbolize/stack_merge: Python frames placed at the eval activations that ran them. */
#include "testlib.h"

#include "symbolize/stack_merge.h"
#include "util/array.h"

#include <errno.h>

struct named_native {
	const char *name; /* NULL: no symbol */
	bool foreign;
	bool unmarked;    /* 3.12+: the evaluation function, with no shim found by BPF */
};

#define I(name) { name, false, false } /* the interpreter's own function */
#define F(name) { name, true, false }  /* a function of another file */
#define UNMARKED_EVAL { "_PyEval_EvalFrameDefault", false, true }

/* Renders a merge as "a;b;c" root to leaf, with the test's names. */
static void render(const struct merge_step *steps, size_t count, const char *const *python,
		   const struct named_native *native, char *out, size_t len)
{
	size_t used = 0;

	out[0] = 0;
	for (size_t i = count; i-- > 0;) {
		const char *name = steps[i].source == MERGE_PYTHON ? python[steps[i].index]
								   : native[steps[i].index].name;

		used += (size_t)snprintf(out + used, len - used, "%s%s", used ? ";" : "", name ? name : "?");
	}
}

static bool native_truncated;
static bool python_cut;

static int merge(const char *const *python, const bool *entry, size_t python_count,
		 const struct named_native *native, size_t native_count, unsigned major, bool keep_all,
		 char *out, size_t len)
{
	uint8_t roles[64];
	struct merge_step steps[128];
	size_t count = 0;
	struct merge_input input = {
		.python_count = python_count, .python_entry = entry,
		.native_count = native_count, .native_role = roles, .keep_all = keep_all,
		.native_truncated = native_truncated,
		.python_cut = python_cut,
	};
	int err;

	for (size_t i = 0; i < native_count; i++)
		roles[i] = native[i].foreign    ? NATIVE_ROLE_FOREIGN
			   : native[i].unmarked ? NATIVE_ROLE_EVAL_UNMARKED
						: stack_merge_role_of_name(native[i].name, major);
	err = stack_merge(&input, steps, &count);
	render(steps, count, python, native, out, len);
	return err;
}

/* The 3.11 `sorted(key=key)` sample of a real stack, leaf first. */
static const struct named_native sorted_311[] = {
	I("rangeiter_next"), I("_PyEval_EvalFrameDefault"), I("_PyEval_Vector"),
	I("PyObject_CallOneArg"), I("list_sort_impl"), I("list_sort"),
	I("cfunction_vectorcall_FASTCALL_KEYWORDS"), I("PyObject_Vectorcall"), I("builtin_sorted"),
	I("_PyEval_EvalFrameDefault"), I("PyEval_EvalCode"), I("run_mod"), I("Py_BytesMain"),
	F("__libc_start_call_main"), F("__libc_start_main"), I("_start"),
};
static const char *const sorted_python[] = { "key", "outer", "main", "<module>" };
static const bool sorted_entry_311[] = { true, false, false, true };

static void sorted_lands_between_caller_and_key(void **state)
{
	char out[1024];

	(void)state;
	assert_int_equal(merge(sorted_python, sorted_entry_311, 4, sorted_311, ARRAY_SIZE(sorted_311), 3,
			       false, out, sizeof(out)), 0);
	assert_string_equal(out, "<module>;main;outer;builtin_sorted;list_sort;list_sort_impl;key;rangeiter_next");
}

static void keep_all_shows_machinery_and_bootstrap(void **state)
{
	char out[1024];

	(void)state;
	assert_int_equal(merge(sorted_python, sorted_entry_311, 4, sorted_311, ARRAY_SIZE(sorted_311), 3,
			       true, out, sizeof(out)), 0);
	assert_string_equal(out, "_start;__libc_start_main;__libc_start_call_main;Py_BytesMain;run_mod;"
				 "PyEval_EvalCode;<module>;main;outer;builtin_sorted;PyObject_Vectorcall;"
				 "cfunction_vectorcall_FASTCALL_KEYWORDS;list_sort;list_sort_impl;"
				 "PyObject_CallOneArg;_PyEval_Vector;key;rangeiter_next");
}

/* Up to 3.10 every Python frame has its own activation. */
static void one_frame_per_activation_up_to_310(void **state)
{
	static const struct named_native native[] = {
		F("deflate_slow"), F("deflate"), F("zlib_compress"),
		I("cfunction_vectorcall_O"), I("_PyEval_EvalFrameDefault"), I("_PyFunction_Vectorcall"),
		I("_PyEval_EvalFrameDefault"), I("PyEval_EvalCode"), I("_start"),
	};
	static const char *const python[] = { "compress_it", "<module>" };
	static const bool entry[] = { true, true };
	char out[1024];

	(void)state;
	assert_int_equal(merge(python, entry, 2, native, ARRAY_SIZE(native), 3, false, out, sizeof(out)), 0);
	assert_string_equal(out, "<module>;compress_it;zlib_compress;deflate;deflate_slow");
}

/* 2.7's eval loop is PyEval_EvalFrameEx. */
static void python_27_eval_is_named_differently(void **state)
{
	static const struct named_native native[] = {
		F("read"), I("posix_read"), I("PyEval_EvalFrameEx"), I("PyEval_EvalCodeEx"),
		I("PyEval_EvalFrameEx"), I("Py_Main"), I("_start"),
	};
	static const char *const python[] = { "read_chunk", "<module>" };
	static const bool entry[] = { true, true };
	char out[1024];

	(void)state;
	assert_int_equal(stack_merge_role_of_name("PyEval_EvalFrameEx", 2), NATIVE_ROLE_EVAL);
	assert_int_equal(stack_merge_role_of_name("_PyEval_EvalFrameDefault", 2), NATIVE_ROLE_CALL_MACHINERY);
	assert_int_equal(merge(python, entry, 2, native, ARRAY_SIZE(native), 2, false, out, sizeof(out)), 0);
	assert_string_equal(out, "<module>;read_chunk;posix_read;read");
}

/* A stripped interpreter's unnamed functions are left out unless all are asked for. */
static void unnamed_interpreter_frames_are_left_out(void **state)
{
	static const struct named_native native[] = {
		F("deflate"), I(NULL), I(NULL), I("PyObject_Vectorcall"),
		I("_PyEval_EvalFrameDefault"), I(NULL), I("_start"),
	};
	static const char *const python[] = { "f", "<module>" };
	static const bool entry[] = { false, true };
	char out[1024];

	(void)state;
	assert_int_equal(merge(python, entry, 2, native, ARRAY_SIZE(native), 3, false, out, sizeof(out)), 0);
	assert_string_equal(out, "<module>;f;deflate");
	assert_int_equal(merge(python, entry, 2, native, ARRAY_SIZE(native), 3, true, out, sizeof(out)), 0);
	assert_string_equal(out, "_start;?;<module>;f;PyObject_Vectorcall;?;?;deflate");
}

/* More activations than marked groups, or Python frames left over: both stacks, old order. */
static void disagreeing_counts_keep_both_stacks(void **state)
{
	static const struct named_native three_evals[] = {
		F("memcpy"), I("_PyEval_EvalFrameDefault"), I("builtin_exec"),
		I("_PyEval_EvalFrameDefault"), I("_PyEval_EvalFrameDefault"), I("_start"),
	};
	static const char *const python[] = { "leaf", "mid", "<module>" };
	static const bool one_group[] = { false, false, true };
	static const bool three_groups[] = { true, true, true };
	static const bool four_groups_of_three[] = { true, false, false };
	char out[1024];

	(void)state;
	assert_int_equal(merge(python, one_group, 3, three_evals, ARRAY_SIZE(three_evals), 3, false, out,
			       sizeof(out)), -EPROTO);
	assert_string_equal(out, "<module>;mid;leaf;memcpy");
	assert_int_equal(merge(python, three_groups, 3, three_evals, ARRAY_SIZE(three_evals), 3, false, out,
			       sizeof(out)), 0);
	assert_string_equal(out, "<module>;mid;builtin_exec;leaf;memcpy");
	/* two groups ({leaf}, {mid, <module>}) for three activations */
	assert_int_equal(merge(python, four_groups_of_three, 3, three_evals, ARRAY_SIZE(three_evals), 3,
			       false, out, sizeof(out)), -EPROTO);
}

/* A Python stack cut at its root gives what is left to the outermost activation. */
static void a_truncated_python_stack_still_merges(void **state)
{
	static const struct named_native native[] = {
		I("_PyEval_EvalFrameDefault"), I("_PyEval_EvalFrameDefault"), I("_start"),
	};
	static const char *const python[] = { "a", "b", "c" };
	static const bool entry[] = { true, false, false };
	char out[1024];

	(void)state;
	assert_int_equal(merge(python, entry, 3, native, ARRAY_SIZE(native), 3, false, out, sizeof(out)), 0);
	assert_string_equal(out, "c;b;a");
}

/* No activation at all (a thread outside Python): every native frame is shown. */
static void a_native_thread_shows_its_native_stack(void **state)
{
	static const struct named_native native[] = {
		F("futex_wait"), I("take_gil"), I("PyEval_RestoreThread"), F("start_thread"),
	};
	char out[1024];

	(void)state;
	assert_int_equal(merge(NULL, NULL, 0, native, ARRAY_SIZE(native), 3, false, out, sizeof(out)), 0);
	assert_string_equal(out, "start_thread;take_gil;futex_wait");
}

/* A walk that stopped early (a library not yet known): what it reached merges, the
 * Python frames of the activations it missed go below, and nothing is a disagreement. */
static void a_walk_cut_short_keeps_the_older_python_frames_below(void **state)
{
	static const struct named_native leaf_only[] = { F("deflate_slow"), F("deflate") };
	static const struct named_native two_levels[] = {
		F("deflate"), F("zlib_compress"), I("_PyEval_EvalFrameDefault"), I("map_next"),
	};
	static const char *const python[] = { "compress_it", "<module>" };
	static const bool entry[] = { true, true };
	char out[1024];

	(void)state;
	native_truncated = true;
	assert_int_equal(merge(python, entry, 2, leaf_only, ARRAY_SIZE(leaf_only), 3, false, out, sizeof(out)), 0);
	assert_string_equal(out, "<module>;compress_it;deflate;deflate_slow");
	assert_int_equal(merge(python, entry, 2, two_levels, ARRAY_SIZE(two_levels), 3, false, out, sizeof(out)), 0);
	assert_string_equal(out, "<module>;map_next;compress_it;zlib_compress;deflate");
	native_truncated = false;
	assert_int_equal(merge(python, entry, 2, leaf_only, ARRAY_SIZE(leaf_only), 3, false, out, sizeof(out)),
			 -EPROTO);
}

/*
 * A Python walk cut at its root (past PBP_MAX_PY_FRAMES) on 3.12+: the activation that ran the
 * outermost frame kept lost its shim with the cut, so BPF did not mark it. The native frames
 * below it (the interpreter's start-up) ran in the cut part: they are left out, not put above
 * the leaf.
 */
static const char *const deep_python[] = { "leaf", "deep", "deep", "deep" };
static const bool deep_entry[] = { false, false, false, false };

static void a_cut_walk_leaves_out_the_native_frames_below_the_cut(void **state)
{
	static const struct named_native native[] = {
		F("clock_gettime"), I("time_time"), UNMARKED_EVAL, I("PyEval_EvalCode"), I("run_eval_code_obj"),
		I("Py_RunMain"), I("Py_BytesMain"), F("__libc_start_main"), I("_start"),
	};
	char out[1024];

	(void)state;
	python_cut = true;
	assert_int_equal(merge(deep_python, deep_entry, 4, native, ARRAY_SIZE(native), 3, false, out, sizeof(out)), 0);
	assert_string_equal(out, "deep;deep;deep;leaf;time_time;clock_gettime");
	assert_int_equal(merge(deep_python, deep_entry, 4, native, ARRAY_SIZE(native), 3, true, out, sizeof(out)), 0);
	assert_string_equal(out, "deep;deep;deep;leaf;time_time;clock_gettime");
	/* The native walk stopped before the root: the same, what was walked below the cut is left out. */
	native_truncated = true;
	assert_int_equal(merge(deep_python, deep_entry, 4, native, 5, 3, false, out, sizeof(out)), 0);
	assert_string_equal(out, "deep;deep;deep;leaf;time_time;clock_gettime");
	native_truncated = false;
	python_cut = false;
}

/* Activations whose shims were found merge as always; the cut one ends the native stack. */
static void a_cut_walk_merges_the_activations_it_kept(void **state)
{
	static const struct named_native native[] = {
		I("long_add"), I("_PyEval_EvalFrameDefault"), I("list_sort_impl"), I("builtin_sorted"), UNMARKED_EVAL,
		I("PyEval_EvalCode"), I("Py_RunMain"), F("__libc_start_main"), I("_start"),
	};
	static const char *const python[] = { "key", "sorter", "deep", "deep" };
	static const bool entry[] = { true, false, false, false };
	char out[1024];

	(void)state;
	python_cut = true;
	assert_int_equal(merge(python, entry, 4, native, ARRAY_SIZE(native), 3, false, out, sizeof(out)), 0);
	assert_string_equal(out, "deep;deep;sorter;builtin_sorted;list_sort_impl;key;long_add");
	python_cut = false;
}

/* BPF found the cut activation's shim past the kept frames: it is marked, and still ends the stack. */
static void a_cut_walk_ends_at_a_marked_activation(void **state)
{
	static const struct named_native native[] = {
		I("time_time"), I("_PyEval_EvalFrameDefault"), I("PyEval_EvalCode"), I("Py_RunMain"), I("_start"),
	};
	char out[1024];

	(void)state;
	python_cut = true;
	assert_int_equal(merge(deep_python, deep_entry, 4, native, ARRAY_SIZE(native), 3, true, out, sizeof(out)), 0);
	assert_string_equal(out, "deep;deep;deep;leaf;time_time");
	python_cut = false;
}

/* A stripped interpreter (its eval function's cold part unnamed): the first unnamed interpreter
 * frame may be the cut activation, and nothing below it is shown. */
static void a_cut_walk_in_a_stripped_interpreter(void **state)
{
	static const struct named_native native[] = {
		F("deflate"), I(NULL), I("PyEval_EvalCode"), I(NULL), I("Py_RunMain"), F("__libc_start_main"),
	};
	char out[1024];

	(void)state;
	python_cut = true;
	native_truncated = true;
	assert_int_equal(merge(deep_python, deep_entry, 4, native, ARRAY_SIZE(native), 3, true, out, sizeof(out)), 0);
	assert_string_equal(out, "deep;deep;deep;leaf;deflate");
	native_truncated = false;
	python_cut = false;
}

/* Up to 3.11 (activations by name): those past the frames kept are the cut part. */
static void a_cut_walk_up_to_311_drops_the_activations_past_the_cut(void **state)
{
	static const struct named_native native[] = {
		I("_PyEval_EvalFrameDefault"), I("_PyFunction_Vectorcall"), I("_PyEval_EvalFrameDefault"),
		I("_PyFunction_Vectorcall"), I("_PyEval_EvalFrameDefault"), I("_PyEval_EvalFrameDefault"),
		I("PyEval_EvalCode"), I("Py_RunMain"), I("_start"),
	};
	static const char *const python[] = { "a", "b", "c" };
	static const bool entry[] = { true, true, true };
	char out[1024];

	(void)state;
	python_cut = true;
	assert_int_equal(merge(python, entry, 3, native, ARRAY_SIZE(native), 3, true, out, sizeof(out)), 0);
	assert_string_equal(out, "c;_PyFunction_Vectorcall;b;_PyFunction_Vectorcall;a");
	python_cut = false;
	/* The same stack from a walk that reached the root disagrees. */
	assert_int_equal(merge(python, entry, 3, native, ARRAY_SIZE(native), 3, false, out, sizeof(out)), -EPROTO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sorted_lands_between_caller_and_key),
		cmocka_unit_test(keep_all_shows_machinery_and_bootstrap),
		cmocka_unit_test(one_frame_per_activation_up_to_310),
		cmocka_unit_test(python_27_eval_is_named_differently),
		cmocka_unit_test(unnamed_interpreter_frames_are_left_out),
		cmocka_unit_test(disagreeing_counts_keep_both_stacks),
		cmocka_unit_test(a_truncated_python_stack_still_merges),
		cmocka_unit_test(a_native_thread_shows_its_native_stack),
		cmocka_unit_test(a_walk_cut_short_keeps_the_older_python_frames_below),
		cmocka_unit_test(a_cut_walk_leaves_out_the_native_frames_below_the_cut),
		cmocka_unit_test(a_cut_walk_merges_the_activations_it_kept),
		cmocka_unit_test(a_cut_walk_ends_at_a_marked_activation),
		cmocka_unit_test(a_cut_walk_in_a_stripped_interpreter),
		cmocka_unit_test(a_cut_walk_up_to_311_drops_the_activations_past_the_cut),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
