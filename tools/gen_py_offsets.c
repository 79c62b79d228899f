/* SPDX-License-Identifier: MIT */
/*
 * Prints one row of user/python/py_offsets_table.inc for the CPython whose
 * headers it is compiled against (see gen_py_offsets.sh). Using the
 * compiler's offsetof on the real headers is what keeps the table honest.
 */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <frameobject.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if PY_VERSION_HEX >= 0x03070000 && PY_VERSION_HEX < 0x03080000
#include <internal/pystate.h>
#elif PY_VERSION_HEX >= 0x03080000
#include <internal/pycore_pystate.h>
#endif
#if PY_VERSION_HEX >= 0x03090000
#include <internal/pycore_interp.h>
#include <internal/pycore_runtime.h>
#endif
#if PY_VERSION_HEX >= 0x030b0000
#include <internal/pycore_frame.h>
#endif

#define NONE "PY_OFF_NONE"
#define FIELD(name, value) printf("\t\t.%s = %zu,\n", name, (size_t)(value))
#define FIELD_NONE(name) printf("\t\t.%s = " NONE ",\n", name)
#define END_OF(type, member) (offsetof(type, member) + sizeof(((type *)0)->member))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

#if PY_VERSION_HEX >= 0x030b0000
typedef _PyInterpreterFrame frame_type;
#define FRAME_CODE f_code
#define FRAME_PREVIOUS previous
#define FRAME_LASTI prev_instr
#else
typedef PyFrameObject frame_type;
#define FRAME_CODE f_code
#define FRAME_PREVIOUS f_back
#define FRAME_LASTI f_lasti
#endif

#if PY_VERSION_HEX >= 0x030c0000
/* Where _status is, once the bit the sampler tests (PY_TSTATE_BOUND_GILSTATE, bit 3) is
 * checked to be bound_gilstate; exits if the compiler put it elsewhere. */
static size_t status_offset(void)
{
	PyThreadState probe;
	unsigned int word;

	memset(&probe, 0, sizeof(probe));
	probe._status.bound_gilstate = 1;
	memcpy(&word, (const char *)&probe + offsetof(PyThreadState, _status), sizeof(word));
	if (word != 1u << 3) {
		fprintf(stderr, "gen_py_offsets: _status.bound_gilstate is 0x%x, not bit 3\n", word);
		exit(1);
	}
	return offsetof(PyThreadState, _status);
}
#endif

int main(void)
{
	size_t frame_end = MAX(END_OF(frame_type, FRAME_PREVIOUS), END_OF(frame_type, FRAME_CODE));

	frame_end = MAX(frame_end, END_OF(frame_type, FRAME_LASTI));
#if PY_VERSION_HEX >= 0x030b0000
	frame_end = MAX(frame_end, END_OF(frame_type, owner));
#endif
#if PY_VERSION_HEX >= 0x030b0000 && PY_VERSION_HEX < 0x030c0000
	frame_end = MAX(frame_end, END_OF(frame_type, is_entry));
#endif
	frame_end = (frame_end + 7) & ~(size_t)7;

	printf("\t/* CPython %d.%d */\n", PY_MAJOR_VERSION, PY_MINOR_VERSION);
	printf("\t{ .major = %d, .minor = %d, .off = {\n", PY_MAJOR_VERSION, PY_MINOR_VERSION);
#if PY_VERSION_HEX >= 0x03070000
	FIELD("runtime_interpreters_head", offsetof(_PyRuntimeState, interpreters.head));
#else
	FIELD_NONE("runtime_interpreters_head");
#endif
	FIELD("interp_next", offsetof(PyInterpreterState, next));
#if PY_VERSION_HEX >= 0x030b0000
	FIELD("interp_threads_head", offsetof(PyInterpreterState, threads.head));
#else
	FIELD("interp_threads_head", offsetof(PyInterpreterState, tstate_head));
#endif
#if PY_VERSION_HEX >= 0x03070000
	FIELD("interp_id", offsetof(PyInterpreterState, id));
#else
	FIELD_NONE("interp_id");
#endif
	FIELD("tstate_next", offsetof(PyThreadState, next));
	FIELD("tstate_thread_id", offsetof(PyThreadState, thread_id));
#if PY_VERSION_HEX >= 0x030c0000
	FIELD("tstate_status", status_offset());
#else
	FIELD("tstate_status", 0); /* no bound_gilstate bit to tell a thread's thread states apart */
#endif
#if PY_VERSION_HEX >= 0x030b0000
	FIELD("tstate_frame", offsetof(PyThreadState, cframe));
	FIELD("cframe_current_frame", offsetof(_PyCFrame, current_frame));
#else
	FIELD("tstate_frame", offsetof(PyThreadState, frame));
	FIELD_NONE("cframe_current_frame");
#endif
	FIELD("frame_previous", offsetof(frame_type, FRAME_PREVIOUS));
	FIELD("frame_code", offsetof(frame_type, FRAME_CODE));
	FIELD("frame_lasti", offsetof(frame_type, FRAME_LASTI));
#if PY_VERSION_HEX >= 0x030b0000
	FIELD("frame_owner", offsetof(frame_type, owner));
#else
	FIELD_NONE("frame_owner");
#endif
#if PY_VERSION_HEX >= 0x030b0000 && PY_VERSION_HEX < 0x030c0000
	FIELD("frame_is_entry", offsetof(frame_type, is_entry));
#else
	FIELD_NONE("frame_is_entry");
#endif
	FIELD("frame_read_size", frame_end);
#if PY_VERSION_HEX >= 0x030b0000
	printf("\t\t.frame_link = PY_FRAME_LINK_CFRAME,\n\t\t.lasti_kind = PY_LASTI_PTR,\n");
#elif PY_VERSION_HEX >= 0x030a0000
	printf("\t\t.frame_link = PY_FRAME_LINK_DIRECT,\n\t\t.lasti_kind = PY_LASTI_INT_UNITS,\n");
#else
	printf("\t\t.frame_link = PY_FRAME_LINK_DIRECT,\n\t\t.lasti_kind = PY_LASTI_INT_BYTES,\n");
#endif
#if PY_VERSION_HEX >= 0x030c0000
	printf("\t\t.owner_boundary = %d, /* FRAME_OWNED_BY_CSTACK */\n", (int)FRAME_OWNED_BY_CSTACK);
#else
	printf("\t\t.owner_boundary = 255, /* every owner is a Python frame */\n");
#endif
#if PY_MAJOR_VERSION >= 3
	printf("\t\t.string_kind = PY_STRING_UNICODE,\n");
#else
	printf("\t\t.string_kind = PY_STRING_BYTES,\n");
#endif
	printf("\t\t.code_ptr_mask = ~0ull,\n");
	FIELD("code_argcount", offsetof(PyCodeObject, co_argcount));
	FIELD("code_firstlineno", offsetof(PyCodeObject, co_firstlineno));
	FIELD("code_filename", offsetof(PyCodeObject, co_filename));
	FIELD("code_name", offsetof(PyCodeObject, co_name));
#if PY_VERSION_HEX >= 0x030b0000
	FIELD("code_qualname", offsetof(PyCodeObject, co_qualname));
#else
	FIELD_NONE("code_qualname");
#endif
#if PY_VERSION_HEX >= 0x030a0000
	FIELD("code_linetable", offsetof(PyCodeObject, co_linetable));
#else
	FIELD("code_linetable", offsetof(PyCodeObject, co_lnotab));
#endif
#if PY_VERSION_HEX >= 0x030b0000
	FIELD("code_code_adaptive", offsetof(PyCodeObject, co_code_adaptive));
#else
	FIELD_NONE("code_code_adaptive");
#endif
#if PY_MAJOR_VERSION >= 3
	FIELD("unicode_length", offsetof(PyASCIIObject, length));
	/* state is a bitfield right after hash: offsetof cannot name it */
	FIELD("unicode_state", offsetof(PyASCIIObject, hash) + sizeof(Py_hash_t));
	FIELD("unicode_ascii_data", sizeof(PyASCIIObject));
	FIELD("unicode_compact_data", sizeof(PyCompactUnicodeObject));
	FIELD("bytes_size", offsetof(PyBytesObject, ob_base.ob_size));
	FIELD("bytes_data", offsetof(PyBytesObject, ob_sval));
	FIELD("string_hash", offsetof(PyASCIIObject, hash));
#else
	FIELD_NONE("unicode_length");
	FIELD_NONE("unicode_state");
	FIELD_NONE("unicode_ascii_data");
	FIELD_NONE("unicode_compact_data");
	FIELD("bytes_size", offsetof(PyStringObject, ob_size));
	FIELD("bytes_data", offsetof(PyStringObject, ob_sval));
	FIELD("string_hash", offsetof(PyStringObject, ob_shash));
#endif
#if PY_VERSION_HEX >= 0x030b0000
	FIELD("tstate_datastack_chunk", offsetof(PyThreadState, datastack_chunk));
	FIELD("tstate_datastack_top", offsetof(PyThreadState, datastack_top));
#else
	FIELD_NONE("tstate_datastack_chunk");
	FIELD_NONE("tstate_datastack_top");
#endif
#if PY_VERSION_HEX >= 0x030c0000
	FIELD("tstate_raised", offsetof(PyThreadState, current_exception));
#else
	FIELD("tstate_raised", offsetof(PyThreadState, curexc_type));
#endif
#if PY_VERSION_HEX >= 0x030b0000
	FIELD("tstate_exc_info", offsetof(PyThreadState, exc_info));
	FIELD("exc_item_value", offsetof(_PyErr_StackItem, exc_value));
#elif PY_VERSION_HEX >= 0x03070000
	FIELD("tstate_exc_info", offsetof(PyThreadState, exc_info));
	FIELD("exc_item_value", offsetof(_PyErr_StackItem, exc_type));
#else
	FIELD_NONE("tstate_exc_info");
	FIELD("exc_item_value", offsetof(PyThreadState, exc_type));
#endif
	FIELD("type_flags", offsetof(PyTypeObject, tp_flags));
#if PY_VERSION_HEX >= 0x030b0000
	printf("\t\t.exc_handled_flag = 0x%lxu, /* Py_TPFLAGS_BASE_EXC_SUBCLASS */\n",
	       (unsigned long)Py_TPFLAGS_BASE_EXC_SUBCLASS);
#else
	printf("\t\t.exc_handled_flag = 0x%lxu, /* Py_TPFLAGS_TYPE_SUBCLASS */\n", (unsigned long)Py_TPFLAGS_TYPE_SUBCLASS);
#endif
	printf("\t}, .gil = {\n");
#if PY_VERSION_HEX >= 0x030c0000
	printf("\t\t.where = PY_GIL_VIA_INTERP_POINTER,\n");
	FIELD("pointer", offsetof(PyInterpreterState, ceval.gil));
	FIELD("holder", offsetof(struct _gil_runtime_state, last_holder));
	FIELD("locked", offsetof(struct _gil_runtime_state, locked));
#elif PY_VERSION_HEX >= 0x03070000
	printf("\t\t.where = PY_GIL_IN_RUNTIME,\n");
	FIELD("holder", offsetof(_PyRuntimeState, ceval.gil.last_holder));
	FIELD("locked", offsetof(_PyRuntimeState, ceval.gil.locked));
#elif PY_VERSION_HEX >= 0x03020000
	printf("\t\t.where = PY_GIL_STATIC_SYMBOLS, /* gil_last_holder, gil_locked */\n");
#else
	printf("\t\t.where = PY_GIL_CURRENT_TSTATE, /* the 2.x lock itself records no holder */\n");
#endif
	printf("\t}, .gc = {\n");
#if PY_VERSION_HEX >= 0x03090000
	printf("\t\t.where = PY_GC_IN_INTERP,\n");
	FIELD("collecting", offsetof(PyInterpreterState, gc.collecting));
#elif PY_VERSION_HEX >= 0x03070000
	printf("\t\t.where = PY_GC_IN_RUNTIME,\n");
	FIELD("collecting", offsetof(_PyRuntimeState, gc.collecting));
#else
	printf("\t\t.where = PY_GC_STATIC_SYMBOL, /* gcmodule.c's static collecting */\n");
#endif
	printf("\t} },\n");
	return 0;
}
