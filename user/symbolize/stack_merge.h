/* SPDX-License-Identifier: MIT */
/*
 * Merging a sample's Python frames into its native stack.
 *
 * Each activation of the interpreter's evaluation function (the EVAL frames of
 * the native stack) ran some of the Python frames: walking both stacks from the
 * leaf, an activation takes the Python frames up to and including the next one
 * marked as an entry frame (every frame up to 3.10, `is_entry` in 3.11, the
 * frame below a C-stack shim from 3.12; BPF sets the mark). The Python frames
 * replace the EVAL frame; the C frames between activations stay where they ran.
 *
 * Which native frames a Python user sees by default: every frame from another
 * file (extensions, libraries) and the interpreter's own named functions
 * (builtin_sorted, list_sort_impl, a leaf such as long_add), but not the
 * interpreter's call machinery (PyObject_Vectorcall, cfunction_vectorcall_*,
 * ...: noise between a call and what it lands in), nor its functions that have
 * no name (a stripped interpreter: they tell a reader nothing), nor the thread's
 * bootstrap below its outermost activation (_start, Py_BytesMain, start_thread).
 * `keep_all` keeps every native frame.
 */
#ifndef PYBPFPROF_STACK_MERGE_H
#define PYBPFPROF_STACK_MERGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Activations merged per sample; a stack with more keeps its two halves apart (-EPROTO). */
#define STACK_MERGE_MAX_ACTIVATIONS 256

enum native_role {
	NATIVE_ROLE_FOREIGN = 0,     /* code outside the interpreter's file(s) */
	NATIVE_ROLE_INTERPRETER,     /* the interpreter's own named C function */
	NATIVE_ROLE_INTERPRETER_UNNAMED, /* the interpreter's own code with no symbol for it */
	NATIVE_ROLE_CALL_MACHINERY,  /* the interpreter's generic call path (stack_merge_role_of_name) */
	NATIVE_ROLE_EVAL,            /* an activation of the evaluation function */
	/* 3.12+: the evaluation function where BPF found no shim of a walked activation: one
	 * that runs no Python frame yet, or one that ran only frames a cut walk left out
	 * (python_cut). Shown as call machinery. */
	NATIVE_ROLE_EVAL_UNMARKED,
};

enum merge_source {
	MERGE_PYTHON = 0,
	MERGE_NATIVE = 1,
};

struct merge_step {
	uint32_t source; /* enum merge_source */
	uint32_t index;  /* into the Python or the native frames (both leaf first) */
};

struct merge_input {
	size_t python_count;
	const bool *python_entry;     /* [python_count], leaf first: the frame ends an activation */
	size_t native_count;
	const uint8_t *native_role;   /* [native_count], leaf first: enum native_role */
	bool keep_all;                /* keep the interpreter's own frames too */
	bool native_truncated;        /* the native walk stopped before the thread's root */
	bool python_cut;              /* the Python walk stopped before the thread's outermost frame */
};

/*
 * Writes the merged stack, leaf first, into steps (capacity at least
 * python_count + native_count) and its length into *step_count.
 * 0 on success. -EPROTO when the activations and the entry marks disagree
 * (more activations than marked groups, or Python frames left over from a
 * walk that reached the root); steps then hold both stacks in the order of a
 * stack without native frames: the kept native frames above the Python frames.
 * A walk cut short (native_truncated) missed the activations nearer the root:
 * the Python frames left over ran there, and go below what was walked.
 * A Python walk cut short (python_cut) left out the frames nearer the root, and
 * with them every native frame that ran below the outermost frame it kept: the
 * native stack ends at that frame's activation (from 3.12, where BPF found no
 * shim of it, the first EVAL_UNMARKED or INTERPRETER_UNNAMED frame past the
 * marked ones). Where that activation is not found, no native frame below the
 * last marked one is kept, unless the native walk stopped before reaching it.
 */
int stack_merge(const struct merge_input *input, struct merge_step *steps, size_t *step_count);

/* The role of an interpreter function by name (NULL: none): EVAL, CALL_MACHINERY,
 * INTERPRETER or INTERPRETER_UNNAMED.
 * major is the interpreter's major version (2.7's eval function differs). */
enum native_role stack_merge_role_of_name(const char *name, unsigned major);

#endif
