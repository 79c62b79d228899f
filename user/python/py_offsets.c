// SPDX-License-Identifier: MIT
#include "python/py_offsets.h"

#include <errno.h>
#include <string.h>

#include "util/array.h"
#include "util/errbuf.h"

struct py_version_entry {
	unsigned major, minor;
	struct py_offsets off;
	struct py_gil_layout gil;
	struct py_gc_layout gc;
};

/* Generated from each version's own headers (internal ones with Py_BUILD_CORE). */
static const struct py_version_entry version_table[] = {
#include "python/py_offsets_table.inc"
};

static const struct py_version_entry *entry_for_version(unsigned major, unsigned minor)
{
	for (size_t i = 0; i < ARRAY_SIZE(version_table); i++) {
		if (version_table[i].major == major && version_table[i].minor == minor)
			return &version_table[i];
	}
	return NULL;
}

const struct py_offsets *py_offsets_for_version(unsigned major, unsigned minor)
{
	const struct py_version_entry *entry = entry_for_version(major, minor);

	return entry ? &entry->off : NULL;
}

const struct py_gil_layout *py_gil_layout_for_version(unsigned major, unsigned minor)
{
	const struct py_version_entry *entry = entry_for_version(major, minor);

	return entry ? &entry->gil : NULL;
}

const struct py_gc_layout *py_gc_layout_for_version(unsigned major, unsigned minor)
{
	const struct py_version_entry *entry = entry_for_version(major, minor);

	return entry ? &entry->gc : NULL;
}

/*
 * _Py_DebugOffsets is a struct of uint64_t whose members change from one minor
 * version to the next, so each minor gets the position in the blob of every
 * member we use (decoded in tests/data/cpython-debug-offsets/). 0 means
 * the member is absent (the cookie is the only thing at 0).
 */
enum debug_field {
	DBG_VERSION,
	DBG_FREE_THREADED,
	DBG_RUNTIME_INTERPRETERS_HEAD,
	DBG_INTERP_SIZE,
	DBG_INTERP_ID,
	DBG_INTERP_NEXT,
	DBG_INTERP_THREADS_HEAD,
	DBG_INTERP_CEVAL_GIL,
	DBG_INTERP_GIL_STATE,
	DBG_INTERP_GIL_LOCKED,
	DBG_INTERP_GIL_HOLDER,
	DBG_TSTATE_SIZE,
	DBG_TSTATE_NEXT,
	DBG_TSTATE_INTERP,
	DBG_TSTATE_CURRENT_FRAME,
	DBG_TSTATE_THREAD_ID,
	DBG_TSTATE_NATIVE_THREAD_ID,
	DBG_TSTATE_DATASTACK_CHUNK,
	DBG_FRAME_SIZE,
	DBG_FRAME_PREVIOUS,
	DBG_FRAME_EXECUTABLE,
	DBG_FRAME_INSTR_PTR,
	DBG_FRAME_OWNER,
	DBG_CODE_SIZE,
	DBG_CODE_FILENAME,
	DBG_CODE_NAME,
	DBG_CODE_QUALNAME,
	DBG_CODE_LINETABLE,
	DBG_CODE_FIRSTLINENO,
	DBG_CODE_ARGCOUNT,
	DBG_CODE_ADAPTIVE,
	DBG_BYTES_SIZE,
	DBG_BYTES_OB_SIZE,
	DBG_BYTES_OB_SVAL,
	DBG_UNICODE_SIZE,
	DBG_UNICODE_STATE,
	DBG_UNICODE_LENGTH,
	DBG_UNICODE_ASCII_SIZE,
	DBG_UNICODE_COMPACT_SIZE,
	DBG_INTERP_GC,
	DBG_GC_COLLECTING,
	DBG_TSTATE_GIL_REQUESTED,
	DBG_TSTATE_STATUS,
	DBG_PYOBJECT_OB_TYPE,
	DBG_TYPE_TP_FLAGS,
	DBG_FRAME_STACKPOINTER,
	DBG_GEN_IFRAME,
	DBG_GEN_FRAME_STATE,
	DBG_SET_USED,
	DBG_SET_TABLE,
	DBG_SET_MASK,
	DBG_LONG_LV_TAG,
	DBG_LONG_OB_DIGIT,
	DBG_TSTATE_CURRENT_EXCEPTION,
	DBG_TSTATE_EXC_STATE,
	DBG_ERR_STACKITEM_EXC_VALUE,
	DBG_FIELD_COUNT,
};
struct debug_layout {
	unsigned minor;          /* of 3.x */
	size_t blob_size;        /* sizeof(_Py_DebugOffsets) */
	uint16_t at[DBG_FIELD_COUNT];
};

/* Generated from tests/data/cpython-debug-offsets/: a new minor version (3.16, ...) needs only
 * its decoded header there and `make gen-offsets`. */
static const struct debug_layout debug_layouts[] = {
#include "python/py_debug_layouts.inc"
};

/* Since 3.12 (wstr removed) PyCompactUnicodeObject is this size; 3.15+ says so itself. */
#define COMPACT_UNICODE_SIZE_312 56u
/* 3.12+: FRAME_OWNED_BY_CSTACK (3) and, from 3.14, FRAME_OWNED_BY_INTERPRETER (4) are not Python. */
#define OWNER_BOUNDARY_312 3u
/* 3.14+: f_executable is a _PyStackRef whose low two bits are tag bits. */
#define STACKREF_TAG_MASK 3ull
/* No struct the sampler reads is anywhere near this large. */
#define DEBUG_OFFSET_LIMIT (1u << 24)

static uint64_t blob_u64(const void *blob, size_t at)
{
	uint64_t value;

	memcpy(&value, (const char *)blob + at, sizeof(value));
	return value;
}

struct debug_decoded {
	const struct debug_layout *layout;
	unsigned minor;
	uint32_t version_hex;
	uint64_t value[DBG_FIELD_COUNT];
	int present[DBG_FIELD_COUNT];
};

static int check_within(const struct debug_decoded *dec, enum debug_field size_field, enum debug_field first,
			enum debug_field last, char *err_text, size_t err_len)
{
	uint64_t size = dec->value[size_field];

	if (size == 0 || size > DEBUG_OFFSET_LIMIT)
		return errbuf_format(err_text, err_len, -EINVAL,
				     "_Py_DebugOffsets: implausible structure size %llu",
				     (unsigned long long)size);
	for (int f = first; f <= (int)last; f++) {
		if (dec->present[f] && dec->value[f] >= size)
			return errbuf_format(err_text, err_len, -EINVAL,
					     "_Py_DebugOffsets: offset %llu beyond its structure (%llu bytes)",
					     (unsigned long long)dec->value[f], (unsigned long long)size);
	}
	return 0;
}

static int check_plausible(const struct debug_decoded *dec, char *err_text, size_t err_len)
{
	int err = check_within(dec, DBG_INTERP_SIZE, DBG_INTERP_ID, DBG_INTERP_GIL_HOLDER, err_text, err_len);

	if (!err)
		err = check_within(dec, DBG_TSTATE_SIZE, DBG_TSTATE_NEXT, DBG_TSTATE_DATASTACK_CHUNK, err_text, err_len);
	if (!err)
		err = check_within(dec, DBG_FRAME_SIZE, DBG_FRAME_PREVIOUS, DBG_FRAME_OWNER, err_text, err_len);
	if (!err)
		err = check_within(dec, DBG_CODE_SIZE, DBG_CODE_FILENAME, DBG_CODE_ADAPTIVE, err_text, err_len);
	if (!err)
		err = check_within(dec, DBG_BYTES_SIZE, DBG_BYTES_OB_SIZE, DBG_BYTES_OB_SVAL, err_text, err_len);
	if (!err)
		err = check_within(dec, DBG_UNICODE_SIZE, DBG_UNICODE_STATE, DBG_UNICODE_ASCII_SIZE, err_text, err_len);
	if (!err && dec->value[DBG_UNICODE_STATE] < 8)
		err = errbuf_format(err_text, err_len, -EINVAL,
				    "_Py_DebugOffsets: implausible unicode_object.state (no hash before it)");
	if (!err && dec->value[DBG_RUNTIME_INTERPRETERS_HEAD] >= DEBUG_OFFSET_LIMIT)
		err = errbuf_format(err_text, err_len, -EINVAL,
				    "_Py_DebugOffsets: implausible runtime_state.interpreters_head");
	return err;
}

static int decode_debug_offsets(const void *blob, size_t len, struct debug_decoded *dec, char *err_text, size_t err_len)
{
	const size_t cookie_len = strlen(PY_DEBUG_OFFSETS_COOKIE);
	uint64_t version;

	memset(dec, 0, sizeof(*dec));
	if (len < cookie_len + sizeof(uint64_t) || memcmp(blob, PY_DEBUG_OFFSETS_COOKIE, cookie_len))
		return errbuf_format(err_text, err_len, -EINVAL,
				     "no _Py_DebugOffsets (cookie \"%s\" missing)", PY_DEBUG_OFFSETS_COOKIE);
	/* the version is at the same place in every layout: right after the cookie */
	version = blob_u64(blob, cookie_len);
	if (version >> 24 != 3 || ((version >> 16) & 0xff) < 13)
		return errbuf_format(err_text, err_len, -EINVAL,
				     "_Py_DebugOffsets: version 0x%llx is not CPython 3.13+",
				     (unsigned long long)version);
	dec->version_hex = (uint32_t)version;
	dec->minor = (version >> 16) & 0xff;
	for (size_t i = 0; i < ARRAY_SIZE(debug_layouts); i++) {
		if (debug_layouts[i].minor == dec->minor)
			dec->layout = &debug_layouts[i];
	}
	if (!dec->layout)
		return errbuf_format(err_text, err_len, -ENOTSUP,
				     "CPython 3.%u: no _Py_DebugOffsets layout known for this minor version (known: 3.13-3.15)",
				     dec->minor);
	if (len < dec->layout->blob_size)
		return errbuf_format(err_text, err_len, -EINVAL,
				     "_Py_DebugOffsets: %zu bytes, 3.%u needs %zu", len, dec->minor,
				     dec->layout->blob_size);
	for (int f = 0; f < DBG_FIELD_COUNT; f++) {
		dec->present[f] = dec->layout->at[f] != 0;
		if (dec->present[f])
			dec->value[f] = blob_u64(blob, dec->layout->at[f]);
	}
	if (dec->value[DBG_FREE_THREADED])
		return errbuf_format(err_text, err_len, -ENOTSUP,
				     "CPython 3.%u free-threaded build is not supported", dec->minor);
	return check_plausible(dec, err_text, err_len);
}

/* A pointer-sized thread state member at the field's offset (the target's own figure), PY_OFF_NONE
 * where the version names none or puts it past the structure's end. */
static uint32_t tstate_member(const struct debug_decoded *dec, enum debug_field field, uint64_t plus)
{
	if (!dec->present[field] || plus >= DEBUG_OFFSET_LIMIT ||
	    dec->value[field] + plus + sizeof(uint64_t) > dec->value[DBG_TSTATE_SIZE])
		return PY_OFF_NONE;
	return (uint32_t)(dec->value[field] + plus);
}

static void fill_from_debug(const struct debug_decoded *dec, struct py_offsets *out)
{
	const uint64_t *v = dec->value;
	uint32_t frame_end = 0;
	const enum debug_field frame_fields[] = { DBG_FRAME_PREVIOUS, DBG_FRAME_EXECUTABLE, DBG_FRAME_INSTR_PTR };
	/* 0 is PyThreadState.prev: never _status, and what says "not known" */
	uint32_t status = dec->present[DBG_TSTATE_STATUS] && v[DBG_TSTATE_STATUS] + sizeof(uint32_t) <= v[DBG_TSTATE_SIZE]
				  ? (uint32_t)v[DBG_TSTATE_STATUS]
				  : 0;

	for (size_t i = 0; i < ARRAY_SIZE(frame_fields); i++) {
		if (v[frame_fields[i]] + 8 > frame_end)
			frame_end = (uint32_t)v[frame_fields[i]] + 8;
	}
	if (v[DBG_FRAME_OWNER] + 1 > frame_end)
		frame_end = (uint32_t)v[DBG_FRAME_OWNER] + 1;

	*out = (struct py_offsets){
		.runtime_interpreters_head = (uint32_t)v[DBG_RUNTIME_INTERPRETERS_HEAD],
		.interp_next = (uint32_t)v[DBG_INTERP_NEXT],
		.interp_threads_head = (uint32_t)v[DBG_INTERP_THREADS_HEAD],
		.interp_id = (uint32_t)v[DBG_INTERP_ID],
		.tstate_next = (uint32_t)v[DBG_TSTATE_NEXT],
		.tstate_thread_id = (uint32_t)v[DBG_TSTATE_THREAD_ID],
		.tstate_status = status,
		.tstate_frame = (uint32_t)v[DBG_TSTATE_CURRENT_FRAME],
		.cframe_current_frame = PY_OFF_NONE,
		.frame_previous = (uint32_t)v[DBG_FRAME_PREVIOUS],
		.frame_code = (uint32_t)v[DBG_FRAME_EXECUTABLE],
		.frame_lasti = (uint32_t)v[DBG_FRAME_INSTR_PTR],
		.frame_owner = (uint32_t)v[DBG_FRAME_OWNER],
		.frame_is_entry = PY_OFF_NONE,
		.frame_read_size = (frame_end + 7) & ~7u,
		.frame_link = PY_FRAME_LINK_DIRECT,
		.lasti_kind = PY_LASTI_PTR,
		.owner_boundary = OWNER_BOUNDARY_312,
		.string_kind = PY_STRING_UNICODE,
		.code_ptr_mask = dec->minor >= 14 ? ~STACKREF_TAG_MASK : ~0ull,
		.code_argcount = (uint32_t)v[DBG_CODE_ARGCOUNT],
		.code_firstlineno = (uint32_t)v[DBG_CODE_FIRSTLINENO],
		.code_filename = (uint32_t)v[DBG_CODE_FILENAME],
		.code_name = (uint32_t)v[DBG_CODE_NAME],
		.code_qualname = (uint32_t)v[DBG_CODE_QUALNAME],
		.code_linetable = (uint32_t)v[DBG_CODE_LINETABLE],
		.code_code_adaptive = (uint32_t)v[DBG_CODE_ADAPTIVE],
		.unicode_length = (uint32_t)v[DBG_UNICODE_LENGTH],
		.unicode_state = (uint32_t)v[DBG_UNICODE_STATE],
		.unicode_ascii_data = (uint32_t)v[DBG_UNICODE_ASCII_SIZE],
		.unicode_compact_data = dec->present[DBG_UNICODE_COMPACT_SIZE] ? (uint32_t)v[DBG_UNICODE_COMPACT_SIZE]
									     : COMPACT_UNICODE_SIZE_312,
		.bytes_size = (uint32_t)v[DBG_BYTES_OB_SIZE],
		.bytes_data = (uint32_t)v[DBG_BYTES_OB_SVAL],
		/* PyASCIIObject's hash lies right before its state in every 3.x. */
		.string_hash = (uint32_t)v[DBG_UNICODE_STATE] - 8,
		/* datastack_top follows the chunk pointer in every 3.11+ PyThreadState. */
		.tstate_datastack_chunk = dec->present[DBG_TSTATE_DATASTACK_CHUNK] ? (uint32_t)v[DBG_TSTATE_DATASTACK_CHUNK]
										 : PY_OFF_NONE,
		.tstate_datastack_top = dec->present[DBG_TSTATE_DATASTACK_CHUNK] ? (uint32_t)v[DBG_TSTATE_DATASTACK_CHUNK] + 8
									       : PY_OFF_NONE,
		/* 3.15+ name the raised exception and the thread state's own exception stack item, which
		 * CPython's sampler reads too (an except block run by a generator or coroutine has an
		 * item of its own, not seen); before, none: exception mode keeps nothing. */
		.tstate_raised = tstate_member(dec, DBG_TSTATE_CURRENT_EXCEPTION, 0),
		.tstate_exc_info = PY_OFF_NONE,
		.exc_item_value = dec->present[DBG_ERR_STACKITEM_EXC_VALUE]
					  ? tstate_member(dec, DBG_TSTATE_EXC_STATE, v[DBG_ERR_STACKITEM_EXC_VALUE])
					  : PY_OFF_NONE,
		.type_flags = dec->present[DBG_TYPE_TP_FLAGS] && v[DBG_TYPE_TP_FLAGS] < DEBUG_OFFSET_LIMIT
				      ? (uint32_t)v[DBG_TYPE_TP_FLAGS]
				      : PY_OFF_NONE,
		.exc_handled_flag = PY_TPFLAGS_BASE_EXC_SUBCLASS,
	};
}

/* co_firstlineno, co_nlocalsplus, co_framesize, co_nlocals, co_ncellvars, co_nfreevars, co_version */
#define CODE_VERSION_AFTER_FIRSTLINENO (6u * sizeof(int32_t))

uint32_t py_code_version_offset(unsigned major, unsigned minor, const struct py_offsets *off)
{
	if (major != 3 || minor < 12 || minor > 15 || off->code_firstlineno == PY_OFF_NONE)
		return PY_OFF_NONE;
	return off->code_firstlineno + CODE_VERSION_AFTER_FIRSTLINENO;
}

int py_offsets_from_debug(const void *debug_offsets, size_t len, struct py_offsets *out, uint32_t *version_hex,
			  char *err_text, size_t err_len)
{
	struct debug_decoded dec;
	int err = decode_debug_offsets(debug_offsets, len, &dec, err_text, err_len);

	if (err)
		return err;
	fill_from_debug(&dec, out);
	if (version_hex)
		*version_hex = dec.version_hex;
	return 0;
}

static void gil_from_decoded(const struct debug_decoded *dec, void *layout)
{
	const uint64_t *v = dec->value;
	struct py_gil_layout *out = layout;
	/* 0 is PyThreadState.prev: never the flag */
	uint32_t requested = dec->present[DBG_TSTATE_GIL_REQUESTED] &&
				     v[DBG_TSTATE_GIL_REQUESTED] + sizeof(int32_t) <= v[DBG_TSTATE_SIZE]
			     ? (uint32_t)v[DBG_TSTATE_GIL_REQUESTED]
			     : 0;

	*out = (struct py_gil_layout){ .where = PY_GIL_UNKNOWN, .requested = requested };
	/* holder and locked are given inside the interpreter's own gil state; we need them relative to it */
	if (!dec->present[DBG_INTERP_CEVAL_GIL] || !dec->present[DBG_INTERP_GIL_STATE] ||
	    v[DBG_INTERP_GIL_HOLDER] < v[DBG_INTERP_GIL_STATE] || v[DBG_INTERP_GIL_LOCKED] < v[DBG_INTERP_GIL_STATE])
		return;
	*out = (struct py_gil_layout){
		.where = PY_GIL_VIA_INTERP_POINTER,
		.pointer = (uint32_t)v[DBG_INTERP_CEVAL_GIL],
		.holder = (uint32_t)(v[DBG_INTERP_GIL_HOLDER] - v[DBG_INTERP_GIL_STATE]),
		.locked = (uint32_t)(v[DBG_INTERP_GIL_LOCKED] - v[DBG_INTERP_GIL_STATE]),
		.requested = requested,
	};
}

static void gc_from_decoded(const struct debug_decoded *dec, void *layout)
{
	const uint64_t *v = dec->value;
	struct py_gc_layout *out = layout;

	*out = (struct py_gc_layout){ .where = PY_GC_UNKNOWN };
	/* collecting is given inside the interpreter's gc state, which is inside the interpreter */
	if (!dec->present[DBG_INTERP_GC] || !dec->present[DBG_GC_COLLECTING] ||
	    v[DBG_INTERP_GC] + v[DBG_GC_COLLECTING] + sizeof(int32_t) > v[DBG_INTERP_SIZE])
		return;
	*out = (struct py_gc_layout){
		.where = PY_GC_IN_INTERP,
		.collecting = (uint32_t)(v[DBG_INTERP_GC] + v[DBG_GC_COLLECTING]),
	};
}

static int layout_from_debug(const void *debug_offsets, size_t len, void (*fill)(const struct debug_decoded *, void *),
			     void *out, char *err_text, size_t err_len)
{
	struct debug_decoded dec;
	int err = decode_debug_offsets(debug_offsets, len, &dec, err_text, err_len);

	if (!err)
		fill(&dec, out);
	return err;
}

int py_gil_layout_from_debug(const void *debug_offsets, size_t len, struct py_gil_layout *out, char *err_text,
			     size_t err_len)
{
	return layout_from_debug(debug_offsets, len, gil_from_decoded, out, err_text, err_len);
}

int py_gc_layout_from_debug(const void *debug_offsets, size_t len, struct py_gc_layout *out, char *err_text,
			    size_t err_len)
{
	return layout_from_debug(debug_offsets, len, gc_from_decoded, out, err_text, err_len);
}

/*
 * 3.13's PyInterpreterState.func_state.next_version: found in each build listed by the size
 * _Py_DebugOffsets gives its interpreter state (pyenv's 3.13.0, Debian's 3.13.18), by
 * compiling a code object and watching which word moves (tests/test_py_discover.c
 * checks it). A build of another size (another patch release, free-threaded) is not
 * trusted with a guess: BPF then reads every code object.
 */
static const struct {
	uint64_t interp_size;
	uint32_t next_version;
} code_stamp_builds[] = {
	{ 194968, 17000 },
	{ 194984, 17000 },
};

static void code_stamp_from_decoded(const struct debug_decoded *dec, void *layout)
{
	uint32_t *offset = layout;

	*offset = PY_OFF_NONE;
	if (dec->minor != 13 || (dec->present[DBG_FREE_THREADED] && dec->value[DBG_FREE_THREADED]) ||
	    !dec->present[DBG_INTERP_SIZE])
		return;
	for (size_t i = 0; i < sizeof(code_stamp_builds) / sizeof(code_stamp_builds[0]); i++)
		if (code_stamp_builds[i].interp_size == dec->value[DBG_INTERP_SIZE])
			*offset = code_stamp_builds[i].next_version;
}

int py_code_stamp_from_debug(const void *debug_offsets, size_t len, uint32_t *interp_offset, char *err_text,
			     size_t err_len)
{
	return layout_from_debug(debug_offsets, len, code_stamp_from_decoded, interp_offset, err_text, err_len);
}

/* No object the task reader looks at is anywhere near this large. */
#define ASYNCIO_OBJECT_LIMIT 4096u

static void asyncio_from_decoded(const struct debug_decoded *dec, void *layout)
{
	const uint64_t *v = dec->value;
	struct py_asyncio_layout *out = layout;
	const enum debug_field needed[] = { DBG_PYOBJECT_OB_TYPE, DBG_TYPE_TP_FLAGS, DBG_FRAME_STACKPOINTER,
					    DBG_GEN_IFRAME, DBG_GEN_FRAME_STATE, DBG_SET_USED, DBG_SET_TABLE,
					    DBG_SET_MASK, DBG_LONG_LV_TAG, DBG_LONG_OB_DIGIT };

	*out = (struct py_asyncio_layout){ .known = false };
	for (size_t i = 0; i < ARRAY_SIZE(needed); i++)
		if (!dec->present[needed[i]] || v[needed[i]] >= ASYNCIO_OBJECT_LIMIT)
			return;
	*out = (struct py_asyncio_layout){
		.ob_type = (uint32_t)v[DBG_PYOBJECT_OB_TYPE],
		.tp_flags = (uint32_t)v[DBG_TYPE_TP_FLAGS],
		.gen_iframe = (uint32_t)v[DBG_GEN_IFRAME],
		.gen_frame_state = (uint32_t)v[DBG_GEN_FRAME_STATE],
		.frame_executable = (uint32_t)v[DBG_FRAME_EXECUTABLE],
		.frame_instr_ptr = (uint32_t)v[DBG_FRAME_INSTR_PTR],
		.frame_stackpointer = (uint32_t)v[DBG_FRAME_STACKPOINTER],
		.set_used = (uint32_t)v[DBG_SET_USED],
		.set_table = (uint32_t)v[DBG_SET_TABLE],
		.set_mask = (uint32_t)v[DBG_SET_MASK],
		.long_lv_tag = (uint32_t)v[DBG_LONG_LV_TAG],
		.long_ob_digit = (uint32_t)v[DBG_LONG_OB_DIGIT],
		.code_ptr_mask = dec->minor >= 14 ? ~STACKREF_TAG_MASK : ~0ull,
		/* 3.14: CREATED -3, SUSPENDED -2, SUSPENDED_YIELD_FROM -1; 3.15: CREATED 0, SUSPENDED 1,
		 * SUSPENDED_YIELD_FROM 2, SUSPENDED_YIELD_FROM_LOCKED 3, and SEND keeps the awaited object
		 * one slot deeper */
		.state_yield_from_low = dec->minor >= 15 ? 2 : -1,
		.state_yield_from_high = dec->minor >= 15 ? 3 : -1,
		.state_created = dec->minor >= 15 ? 0 : -3,
		.awaited_slot = dec->minor >= 15 ? 2 : 1,
	};
}

int py_asyncio_layout_from_debug(const void *debug_offsets, size_t len, struct py_asyncio_layout *out,
				 char *err_text, size_t err_len)
{
	return layout_from_debug(debug_offsets, len, asyncio_from_decoded, out, err_text, err_len);
}

/* The AsyncioDebug words, in CPython's order (py_runtime_file.h). */
enum asyncio_word {
	AW_TASK_SIZE, AW_TASK_NAME, AW_TASK_AWAITED_BY, AW_TASK_IS_TASK, AW_TASK_AWAITED_BY_IS_SET, AW_TASK_CORO,
	AW_TASK_NODE, AW_INTERP_SIZE, AW_INTERP_TASKS_HEAD, AW_TSTATE_SIZE, AW_TSTATE_RUNNING_LOOP,
	AW_TSTATE_RUNNING_TASK, AW_TSTATE_TASKS_HEAD, AW_COUNT,
};

int py_asyncio_layout_add_module(struct py_asyncio_layout *layout, const uint64_t *words, size_t count)
{
	const enum asyncio_word pointers[] = { AW_TASK_NAME, AW_TASK_AWAITED_BY, AW_TASK_CORO };
	const enum asyncio_word flags[] = { AW_TASK_IS_TASK, AW_TASK_AWAITED_BY_IS_SET };
	uint64_t task_size;

	if (count < AW_COUNT || layout->ob_type == 0)
		return -EINVAL;
	task_size = words[AW_TASK_SIZE];
	if (task_size == 0 || task_size > ASYNCIO_OBJECT_LIMIT || words[AW_TSTATE_SIZE] > DEBUG_OFFSET_LIMIT ||
	    words[AW_TSTATE_RUNNING_TASK] + 8 > words[AW_TSTATE_SIZE] ||
	    words[AW_TSTATE_TASKS_HEAD] + 16 > words[AW_TSTATE_SIZE] || words[AW_INTERP_SIZE] > DEBUG_OFFSET_LIMIT ||
	    words[AW_INTERP_TASKS_HEAD] + 16 > words[AW_INTERP_SIZE] || words[AW_TASK_NODE] + 16 > task_size)
		return -EINVAL;
	for (size_t i = 0; i < ARRAY_SIZE(pointers); i++)
		if (words[pointers[i]] + 8 > task_size)
			return -EINVAL;
	for (size_t i = 0; i < ARRAY_SIZE(flags); i++)
		if (words[flags[i]] + 1 > task_size)
			return -EINVAL;
	layout->task_size = (uint32_t)task_size;
	layout->task_name = (uint32_t)words[AW_TASK_NAME];
	layout->task_awaited_by = (uint32_t)words[AW_TASK_AWAITED_BY];
	layout->task_is_task = (uint32_t)words[AW_TASK_IS_TASK];
	layout->task_awaited_by_is_set = (uint32_t)words[AW_TASK_AWAITED_BY_IS_SET];
	layout->task_coro = (uint32_t)words[AW_TASK_CORO];
	layout->tstate_running_task = (uint32_t)words[AW_TSTATE_RUNNING_TASK];
	layout->task_node = (uint32_t)words[AW_TASK_NODE];
	layout->tstate_tasks_head = (uint32_t)words[AW_TSTATE_TASKS_HEAD];
	layout->interp_tasks_head = (uint32_t)words[AW_INTERP_TASKS_HEAD];
	layout->known = true;
	return 0;
}

/* A row of py_asyncio_table.inc: what gdb read from one version's debug information. */
struct asyncio_table_row {
	unsigned minor;
	uint32_t task_size, task_callback0, task_callbacks, task_coro, task_name;
	uint32_t ob_type, tp_flags, tp_base;
	uint32_t gen_iframe, gen_frame_state, frame_executable, frame_instr_ptr, frame_stacktop, frame_localsplus;
	uint32_t cfunction_ml, methoddef_name;
	uint32_t cfunction_self, method_self, function_closure, cell_ref, var_size, tuple_item, list_item;
	uint32_t interp_modules, module_dict, dict_keys, dict_values;
	uint32_t keys_log2_index_bytes, keys_kind, keys_nentries, keys_indices;
	uint32_t long_lv_tag, long_ob_digit;
	uint32_t task_loop, set_mask, set_table, weakref_object, tstate_dict;
	int32_t tstate_running_loop, holder_loop; /* -1: not in this version */
	int8_t owned_by_generator, state_created, state_yield_from;
};

static const struct asyncio_table_row asyncio_table[] = {
#include "python/py_asyncio_table.inc"
};

int py_asyncio_layout_for_version(unsigned major, unsigned minor, struct py_asyncio_layout *out)
{
	for (size_t i = 0; major == 3 && i < ARRAY_SIZE(asyncio_table); i++) {
		const struct asyncio_table_row *row = &asyncio_table[i];

		/* BPF compares frame owners with the constant */
		if (row->minor != minor || row->owned_by_generator != PY_FRAME_OWNED_BY_GENERATOR)
			continue;
		*out = (struct py_asyncio_layout){
			.known = true,
			.task_size = row->task_size,
			.task_name = row->task_name,
			.task_coro = row->task_coro,
			.ob_type = row->ob_type,
			.tp_flags = row->tp_flags,
			.gen_iframe = row->gen_iframe,
			.gen_frame_state = row->gen_frame_state,
			.frame_executable = row->frame_executable,
			.frame_instr_ptr = row->frame_instr_ptr,
			.frame_stackpointer = row->frame_stacktop,
			.long_lv_tag = row->long_lv_tag,
			.long_ob_digit = row->long_ob_digit,
			.set_table = row->set_table,
			.set_mask = row->set_mask,
			.code_ptr_mask = ~0ull,
			.state_yield_from_low = row->state_yield_from,
			.state_yield_from_high = row->state_yield_from,
			.state_created = row->state_created,
			.awaited_slot = 1,
			.stacktop_is_index = true,
			.long_size_is_count = minor <= 11,
			.frame_localsplus = row->frame_localsplus,
			.from_callbacks = true,
			.callbacks = {
				.task_callback0 = row->task_callback0,
				.task_callbacks = row->task_callbacks,
				.tp_base = row->tp_base,
				.cfunction_ml = row->cfunction_ml,
				.methoddef_name = row->methoddef_name,
				.cfunction_self = row->cfunction_self,
				.method_self = row->method_self,
				.function_closure = row->function_closure,
				.cell_ref = row->cell_ref,
				.var_size = row->var_size,
				.tuple_item = row->tuple_item,
				.list_item = row->list_item,
				.interp_modules = row->interp_modules,
				.module_dict = row->module_dict,
				.dict_keys = row->dict_keys,
				.dict_values = row->dict_values,
				.keys_log2_index_bytes = row->keys_log2_index_bytes,
				.keys_kind = row->keys_kind,
				.keys_nentries = row->keys_nentries,
				.keys_indices = row->keys_indices,
				.task_loop = row->task_loop,
				.weakref_object = row->weakref_object,
				.tstate_dict = row->tstate_dict,
				.tstate_running_loop = row->tstate_running_loop,
				.holder_loop = row->holder_loop,
			},
		};
		return 0;
	}
	return -ENOTSUP;
}
