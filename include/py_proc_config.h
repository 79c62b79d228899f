/* SPDX-License-Identifier: MIT */
/*
 * What BPF and userspace must agree on about one CPython process: where its
 * interpreter list is and the layout of the few structures the sampler reads.
 *
 * Userspace fills one `struct py_proc_config` per target process (from a
 * per-minor-version table for 2.7 and 3.6-3.12, from the target's own
 * _Py_DebugOffsets for 3.13+) and stores it in the BPF `proc_configs` map
 * keyed by host tgid. Every field is data; BPF has no version `if`s beyond
 * the small enums below.
 */
#ifndef PYBPFPROF_PY_PROC_CONFIG_H
#define PYBPFPROF_PY_PROC_CONFIG_H

#ifdef __bpf__
/* vmlinux.h provides __u8 .. __u64 */
#else
#include <linux/types.h>
#include <stdbool.h>
#endif

/* An offset that does not exist in this version. */
#define PY_OFF_NONE 0xffffffffu

/*
 * How much BPF copies per read. BPF reads fields out of the copy at offsets
 * masked with (limit - 1), so both are powers of two, and userspace refuses
 * a layout that does not fit them (bpf_sampler_add_target).
 */
#define PBP_FRAME_MAX_READ 256  /* py_offsets.frame_read_size is at most this */
#define PBP_CODE_SPAN_MAX 128   /* a code object's argcount, firstlineno, filename and name, in one read */
#define PBP_TSTATE_SPAN_MAX 256 /* a thread state's _status through thread_id, in one read (else no _status) */

/*
 * PyThreadState._status.bound_gilstate (3.12-3.15: bit 3, after initialized, bound, unbound):
 * set on the thread state the thread last attached (tstate_activate binds it for the GILState
 * API and unbinds the thread's previous one), kept while it releases the GIL. A thread that
 * runs code in a subinterpreter has one thread state per interpreter, all with its thread_id:
 * this bit says which one it is in.
 */
#define PY_TSTATE_BOUND_GILSTATE (1u << 3)

/* How a frame records the instruction it is executing. */
enum py_lasti_kind {
	PY_LASTI_INT_BYTES = 0, /* <= 3.9: int f_lasti, a byte offset into co_code */
	PY_LASTI_INT_UNITS = 1, /* 3.10: int f_lasti, counted in 2-byte code units */
	PY_LASTI_PTR = 2,       /* 3.11+: pointer into co_code_adaptive (prev_instr / instr_ptr) */
};

/* How the thread state reaches the innermost frame. */
enum py_frame_link {
	PY_FRAME_LINK_DIRECT = 0, /* tstate->frame (<=3.10) or tstate->current_frame (3.13+) */
	PY_FRAME_LINK_CFRAME = 1, /* 3.11/3.12: tstate->cframe->current_frame */
};

/* How code object strings are stored. */
enum py_string_kind {
	PY_STRING_BYTES = 0,   /* 2.7: PyStringObject (ob_size, ob_sval) */
	PY_STRING_UNICODE = 1, /* 3.x: PEP 393 compact unicode */
};

struct py_offsets {
	/* _PyRuntime / interpreter list */
	__u32 runtime_interpreters_head; /* offset in _PyRuntime; NONE for 2.7/3.6 (interp_head symbol) */
	__u32 interp_next;
	__u32 interp_threads_head;
	__u32 interp_id;                 /* NONE before 3.7 */

	/* PyThreadState */
	__u32 tstate_next;
	__u32 tstate_thread_id;          /* pthread_self() == fsbase on x86-64 */
	__u32 tstate_status;             /* the _status bitfield word (3.12+); 0: not known (0 is prev) */
	__u32 tstate_frame;              /* frame / cframe / current_frame, see frame_link */
	__u32 cframe_current_frame;      /* only with PY_FRAME_LINK_CFRAME */

	/* Frames: PyFrameObject (<=3.10) or _PyInterpreterFrame (3.11+) */
	__u32 frame_previous;            /* f_back / previous */
	__u32 frame_code;                /* f_code / f_executable */
	__u32 frame_lasti;               /* f_lasti (int) or prev_instr / instr_ptr (pointer) */
	__u32 frame_owner;               /* char owner, NONE before 3.11 */
	__u32 frame_is_entry;            /* bool is_entry (3.11 only): sample_record.h's PBP_PY_FRAME_ENTRY */
	__u32 frame_read_size;           /* bytes covering every field above */
	__u8 frame_link;                 /* enum py_frame_link */
	__u8 lasti_kind;                 /* enum py_lasti_kind */
	__u8 owner_boundary;             /* owner >= this is not a Python frame (C stack / interpreter) */
	__u8 string_kind;                /* enum py_string_kind */
	__u64 code_ptr_mask;             /* ~0, or ~3 where f_executable is a tagged _PyStackRef (3.14+) */

	/* PyCodeObject */
	__u32 code_argcount;             /* int */
	__u32 code_firstlineno;          /* int */
	__u32 code_filename;
	__u32 code_name;
	__u32 code_qualname;             /* NONE before 3.11 */
	__u32 code_linetable;            /* co_lnotab (<=3.9) / co_linetable (3.10+) */
	__u32 code_code_adaptive;        /* inline bytecode, 3.11+ */

	/* Strings (str in 3.x, PyStringObject in 2.7) and bytes */
	__u32 unicode_length;
	__u32 unicode_state;
	__u32 unicode_ascii_data;        /* sizeof(PyASCIIObject) */
	__u32 unicode_compact_data;      /* sizeof(PyCompactUnicodeObject) */
	__u32 bytes_size;                /* ob_size of bytes (2.7 str) */
	__u32 bytes_data;                /* ob_sval */
	__u32 string_hash;               /* a str's cached hash: PyASCIIObject.hash (2.7: ob_shash), -1 until computed */

	/* The thread's data stack (3.11+, NONE before): its newest chunk and the top of the used
	 * part, in which the thread's innermost frames lie side by side (bpf/frame_walk.h). */
	__u32 tstate_datastack_chunk;    /* _PyStackChunk * */
	__u32 tstate_datastack_top;      /* PyObject **, right after the chunk pointer */

	/* Exceptions (--mode exception; NONE where not known): the one propagating, and the one
	 * being handled (an except block runs). */
	__u32 tstate_raised;             /* curexc_type (<=3.11), current_exception (3.12+): set while one propagates */
	__u32 tstate_exc_info;           /* _PyErr_StackItem *exc_info (3.7+); NONE: the item is the thread state (2.7, 3.6) */
	__u32 exc_item_value;            /* in that item: exc_value (3.11+), exc_type (<=3.10) */
	__u32 type_flags;                /* PyTypeObject.tp_flags (an unsigned long) */
	/* The tp_flags bit of the handled object's type: Py_TPFLAGS_BASE_EXC_SUBCLASS where it is
	 * an exception (3.11+), Py_TPFLAGS_TYPE_SUBCLASS where it is one's class (<=3.10). None,
	 * which an except block leaves behind, has neither. */
	__u32 exc_handled_flag;
};
/* PyObject.ob_type, in every 64-bit CPython with the GIL. */
#define PY_OBJECT_TYPE 8u
/* Object.h's tp_flags bit of BaseException and its subclasses (the same since 2.x). */
#define PY_TPFLAGS_BASE_EXC_SUBCLASS (1u << 30)

/*
 * _PyStackChunk, the same in 3.11-3.15: a chunk's used part ends at data + top words
 * (top is saved when the thread moves on to a newer chunk); the newest chunk's at the
 * thread state's datastack_top.
 */
#define PY_STACK_CHUNK_PREVIOUS 0u
#define PY_STACK_CHUNK_TOP 16u
#define PY_STACK_CHUNK_DATA 24u

#define PY_PROC_HAS_GIL_HOLDER 0x1u  /* gil_holder_addr/gil_locked_addr are valid */
#define PY_PROC_PENDING        0x2u  /* a target whose runtime is not found yet: sample it without Python frames */
#define PY_PROC_HAS_GC_FLAG    0x4u  /* gc_collecting_addr is valid */
#define PY_PROC_HAS_GIL_REQUEST 0x8u /* tstate_gil_requested is valid */
#define PY_PROC_HAS_ASYNCIO    0x10u /* tstate_running_task is valid */
/* 3.11-3.13 keep no running task: pbp_record.running_task is the coroutine (gen_iframe) */
#define PY_PROC_CORO_FROM_FRAMES 0x20u
/* An interpreter frame's owner when a generator or coroutine holds it (pycore_frame.h's
 * FRAME_OWNED_BY_GENERATOR in 3.11-3.13: py_asyncio_table.inc's owned_by_generator) */
#define PY_FRAME_OWNED_BY_GENERATOR 1

struct py_proc_config {
	__u64 interp_head_addr;  /* target address holding the first PyInterpreterState * */
	__u64 gil_holder_addr;   /* target address of the GIL's last holder (PyThreadState *) */
	__u64 gil_locked_addr;   /* target address of the GIL's locked flag (int) */
	__u32 version_hex;       /* PY_VERSION_HEX of the target */
	__u32 flags;             /* PY_PROC_* */
	struct py_offsets off;
	__u64 gc_collecting_addr; /* target address of the GC's collecting flag (int) */
	__u32 tstate_gil_requested; /* offset of PyThreadState.gil_requested (int, 3.15+) */
	__u32 code_version;       /* offset of PyCodeObject.co_version (3.12-3.15), PY_OFF_NONE elsewhere */
	/* offset of the thread state's asyncio running task (_PyThreadStateImpl.asyncio_running_task,
	 * 3.14+, from the _asyncio module's AsyncioDebug section): what BPF copies into
	 * pbp_record.running_task */
	__u32 tstate_running_task;
	/* With PY_PROC_CORO_FROM_FRAMES, offsetof(PyGenObject, gi_iframe): BPF records the
	 * outermost frame its generator owns (the coroutine an event loop steps) as the
	 * generator's address in pbp_record.running_task; zero otherwise */
	__u32 gen_iframe;
	/* With PY_PROC_CORO_FROM_FRAMES, once the target imported asyncio: its
	 * _asyncio._current_tasks (a dict of the task each running loop steps), in which BPF
	 * looks for the task whose coroutine that generator is (PBP_REC_ASYNC_TASK); 0 until
	 * userspace found it. The offsets of what that lookup reads: */
	__u64 current_tasks_addr;
	__u32 task_coro;              /* TaskObj.task_coro */
	__u32 dict_keys;              /* PyDictObject.ma_keys */
	__u32 keys_log2_index_bytes;  /* PyDictKeysObject.dk_log2_index_bytes (a byte) */
	__u32 keys_nentries;          /* PyDictKeysObject.dk_nentries */
	__u32 keys_indices;           /* PyDictKeysObject.dk_indices: its {hash, key, value} entries follow */
	/* TaskObj.task_name (3.11+, where the running task is known): BPF copies the running task's
	 * name into its record (PBP_REC_TASK_NAME); 0: not known */
	__u32 task_name;
	/* Target address of the main interpreter's code-object counter (a u32 that every new code
	 * object's co_version is taken from and that is then bumped: 3.13's
	 * PyInterpreterState.func_state.next_version), 0 where it is not known. While it stands
	 * still no code object is made, so none can take a freed one's address: BPF then trusts
	 * the identity it read of a code address before (bpf/maps.h, verified_code) unread. */
	__u64 code_stamp_addr;
};
/* Entries of _current_tasks BPF looks at (one per loop running a task step, and those since
 * removed: the dict keeps them until it is resized). */
#define PY_CURRENT_TASKS_SCAN 8

/*
 * Userspace writes these layouts into the proc_configs map and BPF reads
 * them: both compile this header. The offsets table is pinned up to the
 * thread state's fields (later ones come and go as the reader needs them);
 * the config's own fields and where the table starts, fully.
 */
#define PY_PROC_CONFIG_LAYOUT "struct py_proc_config: layout shared by BPF and userspace"
_Static_assert(__builtin_offsetof(struct py_offsets, runtime_interpreters_head) == 0, PY_PROC_CONFIG_LAYOUT);
_Static_assert(__builtin_offsetof(struct py_offsets, interp_next) == 4, PY_PROC_CONFIG_LAYOUT);
_Static_assert(__builtin_offsetof(struct py_offsets, interp_threads_head) == 8, PY_PROC_CONFIG_LAYOUT);
_Static_assert(__builtin_offsetof(struct py_offsets, interp_id) == 12, PY_PROC_CONFIG_LAYOUT);
_Static_assert(__builtin_offsetof(struct py_offsets, tstate_next) == 16, PY_PROC_CONFIG_LAYOUT);
_Static_assert(__builtin_offsetof(struct py_proc_config, interp_head_addr) == 0, PY_PROC_CONFIG_LAYOUT);
_Static_assert(__builtin_offsetof(struct py_proc_config, gil_holder_addr) == 8, PY_PROC_CONFIG_LAYOUT);
_Static_assert(__builtin_offsetof(struct py_proc_config, gil_locked_addr) == 16, PY_PROC_CONFIG_LAYOUT);
_Static_assert(__builtin_offsetof(struct py_proc_config, version_hex) == 24, PY_PROC_CONFIG_LAYOUT);
_Static_assert(__builtin_offsetof(struct py_proc_config, flags) == 28, PY_PROC_CONFIG_LAYOUT);
_Static_assert(__builtin_offsetof(struct py_proc_config, off) == 32, PY_PROC_CONFIG_LAYOUT);
/* BPF masks field offsets with these limits minus one. */
_Static_assert((PBP_FRAME_MAX_READ & (PBP_FRAME_MAX_READ - 1)) == 0, "PBP_FRAME_MAX_READ is a power of two");
_Static_assert((PBP_CODE_SPAN_MAX & (PBP_CODE_SPAN_MAX - 1)) == 0, "PBP_CODE_SPAN_MAX is a power of two");
_Static_assert((PBP_TSTATE_SPAN_MAX & (PBP_TSTATE_SPAN_MAX - 1)) == 0, "PBP_TSTATE_SPAN_MAX is a power of two");

/*
 * A string's identity, for the code object's: its length, its cached hash and its first
 * PY_STRING_PREFIX bytes of text (ASCII str, 2.7 str), from one copy of PY_STRING_SPAN_MAX
 * bytes at most starting at its length field. The hash alone is not enough: 2.7 computes
 * it lazily (-1 for a name never hashed), and exec'd functions' names then differ only in
 * their text. Fields that change after creation (interned state, cached UTF-8 or wchar
 * forms) are left out, so that BPF and userspace, reading at different times, agree.
 */
#define PY_STRING_PREFIX 24u
#define PY_STRING_SPAN_MAX 64u
#define PY_UNICODE_ASCII_BIT 0x40u   /* in PyASCIIObject.state, every 3.x */
#define PY_UNICODE_COMPACT_BIT 0x20u /* the text follows the header (a legacy str points to it) */

static inline __u32 py_string_span_low(const struct py_offsets *off)
{
	return off->string_kind == PY_STRING_UNICODE ? off->unicode_length : off->bytes_size;
}

/* Bytes to copy from py_string_span_low(); 0 if the layout does not fit a span. */
static inline __u32 py_string_span(const struct py_offsets *off)
{
	__u32 low = py_string_span_low(off);
	__u32 data = off->string_kind == PY_STRING_UNICODE ? off->unicode_ascii_data : off->bytes_data;
	__u32 end = data + PY_STRING_PREFIX;

	if (data < low || off->string_hash < low || off->string_hash + 8 > end || end - low > PY_STRING_SPAN_MAX ||
	    (off->string_kind == PY_STRING_UNICODE && (off->unicode_state < low || off->unicode_state + 4 > end)))
		return 0;
	return end - low;
}

static inline __u64 py_span_u64(const __u8 *span, __u32 at)
{
	__u64 value;

	__builtin_memcpy(&value, span + (at & (PY_STRING_SPAN_MAX - 1)), sizeof(value));
	return value;
}

/* The identity of the string whose span (py_string_span bytes from its length field) is copied
 * at span, which has PY_STRING_SPAN_MAX + 8 bytes of room. */
static inline __u64 py_string_identity(const struct py_offsets *off, const __u8 *span)
{
	__u32 low = py_string_span_low(off);
	__u64 length = py_span_u64(span, 0), mixed = length * 0x9e3779b97f4a7c15ull;
	__u32 data;
	bool text;

	mixed ^= py_span_u64(span, off->string_hash - low) * 0xc2b2ae3d27d4eb4full;
	if (off->string_kind == PY_STRING_UNICODE) {
		__u64 state = py_span_u64(span, off->unicode_state - low);

		/* Only where the text is inline: a legacy str has cached forms there that change. */
		text = (state & PY_UNICODE_ASCII_BIT) && (state & PY_UNICODE_COMPACT_BIT);
		data = off->unicode_ascii_data - low;
	} else {
		text = true;
		data = off->bytes_data - low;
	}
	if (!text)
		return mixed;
	for (__u32 word = 0; word < PY_STRING_PREFIX / 8; word++) {
		__u64 value = py_span_u64(span, data + 8 * word);

		/* Only the string's own bytes: past its end lies whatever the heap holds. */
		if (length <= 8 * word)
			value = 0;
		else if (length < 8 * (word + 1))
			value &= (1ull << (8 * (length - 8 * word))) - 1;
		mixed ^= (value + word) * 0x165667b19e3779f9ull;
		mixed = (mixed << 27 | mixed >> 37);
	}
	return mixed;
}

/* Where a code object holds the name it is shown by: co_qualname from 3.11, else co_name. */
static inline __u32 py_code_shown_name(const struct py_offsets *off)
{
	return off->code_qualname != PY_OFF_NONE ? off->code_qualname : off->code_name;
}

/*
 * Identity check for a code object, computed the same way by BPF (from the
 * live object) and by userspace (when it reads the object to symbolize it),
 * so that a freed and reused code address is not given a stale name. The
 * file and name pointers tell apart the objects that line and argument
 * counts cannot: every module body starts at line 1 with no arguments. The
 * strings' identities (py_string_identity) tell apart names and files that
 * were freed with their code and reused at the same address (exec'd code in a
 * loop: measured, tests/e2e/test_code_identity.c). The name is the one shown: the
 * qualified name from 3.11, else co_name.
 */
static inline __u32 py_code_checksum(__s32 firstlineno, __s32 argcount, __u64 filename_addr, __u64 name_addr,
				     __u64 filename_identity, __u64 name_identity)
{
	__u64 mixed = ((__u64)(__u32)firstlineno << 32 | (__u32)argcount) ^
		      filename_addr * 0x9e3779b97f4a7c15ull ^ name_addr * 0xc2b2ae3d27d4eb4full ^
		      filename_identity * 0x165667b19e3779f9ull ^ name_identity * 0xd6e8feb86659fd93ull;

	mixed ^= mixed >> 31;
	mixed *= 0xbf58476d1ce4e5b9ull;
	mixed ^= mixed >> 29;
	return (__u32)mixed;
}

/*
 * A code object as BPF read it the first time a CPU met it (bpf/maps.h, code_notes), by process,
 * address and checksum: its identity fields and the text of its file name and name. A module body
 * is freed as soon as its import ends, often before userspace reads the records that ran it (on a
 * busy host, or whenever the profiler is late), and its memory goes to the next module's; 2.7
 * gives every code object a file name string of its own, freed with it. So userspace names such a
 * frame from the note (user/symbolize/symbolize_py.c): from its text where BPF copied it (an ASCII
 * str, a 2.7 str), else from the strings it points at, if they still hold. The line table went
 * with the object: those frames have no line.
 */
#define PBP_NOTE_FILE_BYTES 256u /* the file name's last bytes: a long path keeps its own name */
#define PBP_NOTE_NAME_BYTES 128u /* the name's first bytes */
#define PBP_NOTE_FILE_TEXT 0x1u  /* file_tail holds the last min(filename_len, PBP_NOTE_FILE_BYTES) */
#define PBP_NOTE_NAME_TEXT 0x2u  /* name_head holds the first min(name_len, PBP_NOTE_NAME_BYTES) */
struct pbp_code_note_key {
	__u64 code_addr;
	__u32 tgid;
	__u32 checksum;
};
struct pbp_code_note {
	__u64 filename_addr;
	__u64 name_addr;          /* the shown name's (py_code_shown_name) */
	__u64 filename_identity;  /* py_string_identity of each */
	__u64 name_identity;
	__s32 firstlineno;
	__s32 argcount;
	__u32 filename_len;       /* in characters (bytes: ASCII or 2.7) */
	__u32 name_len;
	__u32 flags;              /* PBP_NOTE_* */
	__u32 reserved;
	__u8 file_tail[PBP_NOTE_FILE_BYTES];
	__u8 name_head[PBP_NOTE_NAME_BYTES];
};
_Static_assert((PBP_NOTE_FILE_BYTES & (PBP_NOTE_FILE_BYTES - 1)) == 0, "PBP_NOTE_FILE_BYTES is a power of two");
_Static_assert((PBP_NOTE_NAME_BYTES & (PBP_NOTE_NAME_BYTES - 1)) == 0, "PBP_NOTE_NAME_BYTES is a power of two");

#endif
