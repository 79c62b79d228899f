/* SPDX-License-Identifier: MIT */
/*
 * Where CPython keeps what the sampler reads, per version: a table for 2.7 and
 * 3.6-3.12 (py_offsets_table.inc, generated from each version's headers by
 * tools/gen_py_offsets.sh),
 * and a decoder of the _Py_DebugOffsets a 3.13+ target carries at the start of _PyRuntime.
 */
#ifndef PYBPFPROF_USER_PY_OFFSETS_H
#define PYBPFPROF_USER_PY_OFFSETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* the shared contract with BPF: the struct this table fills */
#include "py_proc_config.h"

/* Where the GIL's last holder and locked flag live. */
enum py_gil_where {
	PY_GIL_UNKNOWN = 0,            /* not recorded */
	PY_GIL_CURRENT_TSTATE,         /* 2.7: _PyThreadState_Current is the holder, NULL while the GIL is free */
	PY_GIL_STATIC_SYMBOLS,         /* 3.6: static gil_last_holder / gil_locked in the runtime ELF */
	PY_GIL_IN_RUNTIME,             /* 3.7-3.11: _PyRuntime + holder / locked */
	PY_GIL_VIA_INTERP_POINTER,     /* 3.12+: *(interp + pointer) + holder / locked */
};

struct py_gil_layout {
	enum py_gil_where where;
	uint32_t pointer;  /* offset of the struct _gil_runtime_state * in PyInterpreterState */
	uint32_t holder;   /* last_holder, from _PyRuntime or from the gil state */
	uint32_t locked;   /* locked, likewise */
	uint32_t requested; /* PyThreadState.gil_requested (3.15+); 0: not exposed */
};

/* Where the garbage collector's collecting flag (an int) lives. */
enum py_gc_where {
	PY_GC_UNKNOWN = 0,      /* not recorded */
	PY_GC_STATIC_SYMBOL,    /* 2.7, 3.6: gcmodule.c's static `collecting` (in .symtab, when not stripped) */
	PY_GC_IN_RUNTIME,       /* 3.7-3.8: _PyRuntime + collecting */
	PY_GC_IN_INTERP,        /* 3.9+: the main interpreter + collecting */
};

struct py_gc_layout {
	enum py_gc_where where;
	uint32_t collecting;
};

/*
 * What reading asyncio tasks out of a 3.14+ target takes: the _asyncio module's TaskObj and
 * thread-state fields (its AsyncioDebug section, py_runtime_file.h's PY_ASYNCIO_DEBUG_WORDS)
 * and the generic object layouts of _Py_DebugOffsets. known: every field below is set.
 */
struct py_asyncio_layout {
	bool known;
	uint32_t task_size, task_name, task_awaited_by, task_is_task, task_awaited_by_is_set, task_coro;
	uint32_t tstate_running_task;
	uint32_t task_node, tstate_tasks_head, interp_tasks_head; /* the lists of a thread's / an interpreter's tasks */
	uint32_t ob_type, tp_flags;
	uint32_t gen_iframe, gen_frame_state;
	uint32_t frame_executable, frame_instr_ptr, frame_stackpointer;
	uint32_t set_used, set_table, set_mask;
	uint32_t long_lv_tag, long_ob_digit;
	uint64_t code_ptr_mask;
	/* gi_frame_state values (pycore_frame.h, renumbered in 3.15): a coroutine suspended in an
	 * await, whose awaited object is at stackpointer[-awaited_slot]; and one never started */
	int8_t state_yield_from_low, state_yield_from_high, state_created;
	uint8_t awaited_slot;
	/* 3.11-3.13 (py_asyncio_table.inc): frame_stackpointer is an int, the stack's top as an
	 * index from frame_localsplus; 3.11's ints count their digits in ob_size (long_lv_tag) */
	bool stacktop_is_index, long_size_is_count;
	uint32_t frame_localsplus;
	/* 3.11-3.13 keep no awaited_by: with from_callbacks, the task awaiting one is found through
	 * its done callbacks (callbacks) and the running task in the module's _current_tasks */
	bool from_callbacks;
	struct py_asyncio_callbacks {
		uint32_t task_callback0, task_callbacks, tp_base;
		uint32_t cfunction_ml, methoddef_name;
		uint32_t cfunction_self, method_self, function_closure, cell_ref;
		uint32_t var_size, tuple_item, list_item;
		uint32_t interp_modules, module_dict, dict_keys, dict_values;
		uint32_t keys_log2_index_bytes, keys_kind, keys_nentries, keys_indices;
		/* a thread's tasks: each task's loop, the weak references of the set of all tasks,
		 * and the loop the thread runs (in its thread state, 3.13, else its dict: -1 where not) */
		uint32_t task_loop, weakref_object, tstate_dict;
		int32_t tstate_running_loop, holder_loop;
	} callbacks;
};

/* The sizeof(_Py_DebugOffsets) of the largest layout known: read at least this much. */
#define PY_DEBUG_OFFSETS_MAX_SIZE 1024u
#define PY_DEBUG_OFFSETS_COOKIE "xdebugpy"

/* The table entry for 2.7 / 3.6-3.12 by (major, minor); NULL if none. */
const struct py_offsets *py_offsets_for_version(unsigned major, unsigned minor);
/* Its GIL layout; NULL if the version has no table entry. */
const struct py_gil_layout *py_gil_layout_for_version(unsigned major, unsigned minor);

/* Its GC layout; NULL if the version has no table entry. */
const struct py_gc_layout *py_gc_layout_for_version(unsigned major, unsigned minor);

/*
 * PyCodeObject.co_version's offset for (major, minor), PY_OFF_NONE where it is not known to be
 * there: 3.12-3.15, where each interpreter stamps a new value on every code object it makes
 * (BPF's verified_code cache keys on it, bpf/maps.h). _Py_DebugOffsets does not give it: it is
 * the sixth int after co_firstlineno in all four (tests/test_code_identity.c checks it on each).
 */
uint32_t py_code_version_offset(unsigned major, unsigned minor, const struct py_offsets *off);

/* Fill offsets from a _Py_DebugOffsets blob read from the target (3.13+); -EINVAL with a reason
 * if it is not one (no cookie, too short, implausible offsets), -ENOTSUP for a free-threaded
 * build or a minor version whose layout is not known (a new minor needs its decoded header in
 * tests/data/cpython-debug-offsets/ and `make gen-offsets`). */
int py_offsets_from_debug(const void *debug_offsets, size_t len, struct py_offsets *out, uint32_t *version_hex,
			  char *err_text, size_t err_len);
/* The GIL layout from the same blob; PY_GIL_UNKNOWN if it gives none. Same errors. */
int py_gil_layout_from_debug(const void *debug_offsets, size_t len, struct py_gil_layout *out, char *err_text,
			     size_t err_len);
/* The GC layout from the same blob; PY_GC_UNKNOWN if it gives none. Same errors. */
int py_gc_layout_from_debug(const void *debug_offsets, size_t len, struct py_gc_layout *out, char *err_text,
			    size_t err_len);

/*
 * Where a 3.13 interpreter state holds its code-object counter (py_proc_config.code_stamp_addr:
 * every new code object's co_version is taken from it, then it is bumped), from a
 * _Py_DebugOffsets blob: PY_OFF_NONE in *interp_offset for a build not known to hold it there.
 * Same errors as above.
 */
int py_code_stamp_from_debug(const void *debug_offsets, size_t len, uint32_t *interp_offset, char *err_text,
			     size_t err_len);

/*
 * The object layouts of a py_asyncio_layout from a _Py_DebugOffsets blob (3.14+; known stays
 * false until py_asyncio_layout_add_module gives the module's part). Same errors as above.
 */
int py_asyncio_layout_from_debug(const void *debug_offsets, size_t len, struct py_asyncio_layout *out,
				 char *err_text, size_t err_len);
/* The whole asyncio layout of 3.11-3.13 (generated into py_asyncio_table.inc): 0, or -ENOTSUP
 * for another minor. */
int py_asyncio_layout_for_version(unsigned major, unsigned minor, struct py_asyncio_layout *out);
/* The _asyncio module's part from its AsyncioDebug words (words[count]); sets known when the
 * whole layout is plausible. 0, or -EINVAL for offsets that do not fit their objects. */
int py_asyncio_layout_add_module(struct py_asyncio_layout *layout, const uint64_t *words, size_t count);

#endif
