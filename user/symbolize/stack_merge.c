// SPDX-License-Identifier: MIT
#include "symbolize/stack_merge.h"

#include <errno.h>
#include <string.h>

#include "util/array.h"

/*
 * The interpreter's generic call path: what runs between a Python-level call
 * and the C function it lands in (or the Python function it starts). Prefixes
 * cover the families (cfunction_vectorcall_FASTCALL, _PyObject_CallMethod...).
 */
static const char *const call_machinery_prefixes[] = {
	"_PyEval_", "PyEval_", "_PyFunction_", "PyFunction_", "_PyObject_Call", "PyObject_Call",
	"_PyObject_Vectorcall", "PyObject_Vectorcall", "_PyObject_FastCall", "_PyObject_MakeTpCall",
	"_PyVectorcall_", "PyVectorcall_", "cfunction_", "_PyCFunction_", "PyCFunction_",
	"_PyMethodDef_", "method_vectorcall", "_PyMethodDescr_", "methoddescr_call",
	"wrapperdescr_call", "wrapper_call", "classmethoddescr_call", "vectorcall_", "object_vacall",
	"call_function", "do_call_core", "fast_function", "function_code_fastcall", "slot_tp_call",
	/* 3.13+: the specialised calls of the bytecode */
	"_Py_BuiltinCall", "_PyCallMethodDescriptor", "_Py_VectorCall",
	/* 2.7 */
	"ext_do_call", "function_call", "instancemethod_call", "method_call",
};

static bool has_prefix(const char *name, const char *prefix)
{
	return strncmp(name, prefix, strlen(prefix)) == 0;
}

enum native_role stack_merge_role_of_name(const char *name, unsigned major)
{
	const char *eval_function = major == 2 ? "PyEval_EvalFrameEx" : "_PyEval_EvalFrameDefault";

	if (!name || !*name)
		return NATIVE_ROLE_INTERPRETER_UNNAMED;
	if (strcmp(name, eval_function) == 0)
		return NATIVE_ROLE_EVAL;
	for (size_t i = 0; i < ARRAY_SIZE(call_machinery_prefixes); i++)
		if (has_prefix(name, call_machinery_prefixes[i]))
			return NATIVE_ROLE_CALL_MACHINERY;
	return NATIVE_ROLE_INTERPRETER;
}

/* The Python frames of each activation, leaf first: group_end[k] is the last
 * Python index of the k-th activation from the leaf. */
struct activation_groups {
	size_t count;
	size_t python_paired; /* Python frames [0, python_paired) ran in the activations found */
	size_t native_kept;   /* native frames [0, native_kept) are merged; the rest ran in a cut part */
	bool mismatch;
};

/*
 * A cut Python walk whose frames [python_paired, python_count) ran in no activation found:
 * they ran in the one below the last found (or, with none found, in the innermost), which BPF
 * could not mark (its shim lay too far past the cut). The native frames from that activation
 * to the root ran in the cut part: how many native frames stay. The activation is the first
 * evaluation function past the last one found, or the first interpreter frame with no name
 * (a stripped interpreter's cold part of it has none): no frame below it is shown.
 */
static size_t natives_above_cut(const struct merge_input *input, size_t first_unpaired)
{
	for (size_t n = first_unpaired; n < input->native_count; n++)
		if (input->native_role[n] == NATIVE_ROLE_EVAL_UNMARKED ||
		    input->native_role[n] == NATIVE_ROLE_INTERPRETER_UNNAMED)
			return n;
	/* A walk cut short never reached it: the frames walked stay above the leftover ones. */
	if (input->native_truncated)
		return input->native_count;
	/* Not found: what lies below the last activation found cannot be placed. */
	return first_unpaired;
}

/*
 * Pairs activations (EVAL frames, leaf first) with groups of Python frames.
 * Fills group_end[] for every EVAL frame in leaf-first order; a Python stack cut
 * at its root (no entry mark at its end) gives its remainder to the last one.
 * In a cut Python walk the activation that ran the outermost frame kept ends
 * the native frames merged.
 */
static struct activation_groups pair_activations(const struct merge_input *input, size_t *group_end)
{
	struct activation_groups groups = { .native_kept = input->native_count };
	size_t next_python = 0, first_unpaired = 0;

	for (size_t n = 0; n < input->native_count; n++) {
		size_t end = next_python;

		if (input->native_role[n] != NATIVE_ROLE_EVAL)
			continue;
		if (next_python >= input->python_count || groups.count >= STACK_MERGE_MAX_ACTIVATIONS) {
			groups.mismatch = true; /* an activation with no Python frame left */
			return groups;
		}
		while (end + 1 < input->python_count && !input->python_entry[end])
			end++;
		group_end[groups.count++] = end;
		next_python = end + 1;
		first_unpaired = n + 1;
		if (input->python_cut && next_python == input->python_count) {
			groups.native_kept = n + 1;
			break;
		}
	}
	groups.python_paired = next_python;
	if (next_python == input->python_count)
		return groups;
	if (input->python_cut)
		groups.native_kept = natives_above_cut(input, first_unpaired);
	else if (!input->native_truncated)
		groups.mismatch = true; /* Python frames that no activation ran, though the walk reached theirs */
	return groups;
}

/* Whether a native frame above the thread's outermost activation is shown by default. */
static bool keep_native(enum native_role role)
{
	return role == NATIVE_ROLE_FOREIGN || role == NATIVE_ROLE_INTERPRETER;
}

static void push(struct merge_step *steps, size_t *count, uint32_t source, size_t index)
{
	steps[(*count)++] = (struct merge_step){ .source = source, .index = (uint32_t)index };
}

static void reverse(struct merge_step *steps, size_t count)
{
	for (size_t i = 0, j = count ? count - 1 : 0; i < j; i++, j--) {
		struct merge_step swap = steps[i];

		steps[i] = steps[j];
		steps[j] = swap;
	}
}

/* Root to leaf over the native frames, an activation's Python frames in place of it. */
static size_t merge_paired(const struct merge_input *input, const size_t *group_end,
			   const struct activation_groups *groups, struct merge_step *steps)
{
	/* Only walks that reached the root have a bootstrap below the outermost activation. */
	bool below_first_activation = groups->count > 0 && !input->native_truncated && !input->python_cut;
	size_t count = 0, group = groups->count;

	for (size_t p = input->python_count; p-- > groups->python_paired;)
		push(steps, &count, MERGE_PYTHON, p);
	for (size_t n = groups->native_kept; n-- > 0;) {
		enum native_role role = input->native_role[n];

		if (role == NATIVE_ROLE_EVAL) {
			size_t end = group_end[--group];
			size_t start = group ? group_end[group - 1] + 1 : 0;

			for (size_t p = end + 1; p-- > start;)
				push(steps, &count, MERGE_PYTHON, p);
			below_first_activation = false;
			continue;
		}
		if (input->keep_all || (!below_first_activation && keep_native(role)))
			push(steps, &count, MERGE_NATIVE, n);
	}
	reverse(steps, count);
	return count;
}

/* Counts disagree: the native frames above the innermost activation, over every Python frame. */
static size_t merge_unpaired(const struct merge_input *input, struct merge_step *steps)
{
	size_t leaf_segment = 0, count = 0;

	while (leaf_segment < input->native_count && input->native_role[leaf_segment] != NATIVE_ROLE_EVAL)
		leaf_segment++;
	for (size_t p = input->python_count; p-- > 0;)
		push(steps, &count, MERGE_PYTHON, p);
	for (size_t n = leaf_segment; n-- > 0;)
		if (input->keep_all || keep_native(input->native_role[n]))
			push(steps, &count, MERGE_NATIVE, n);
	reverse(steps, count);
	return count;
}

int stack_merge(const struct merge_input *input, struct merge_step *steps, size_t *step_count)
{
	/* One group per activation; native stacks hold at most STACK_MERGE_MAX_ACTIVATIONS. */
	size_t group_end[STACK_MERGE_MAX_ACTIVATIONS];
	struct activation_groups groups = pair_activations(input, group_end);

	if (groups.mismatch) {
		*step_count = merge_unpaired(input, steps);
		return -EPROTO;
	}
	*step_count = merge_paired(input, group_end, &groups, steps);
	return 0;
}
