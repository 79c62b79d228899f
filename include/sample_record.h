/* SPDX-License-Identifier: MIT */
/*
 * The ring-buffer record: one per sample, written by bpf/pyperf.bpf.c,
 * handed out by user/sampler/bpf_sampler.c and read by
 * user/symbolize/sample_resolve.c. Variable length: the header, then
 * py_frame_count `struct pbp_py_frame` leaf first, then native_frame_count
 * u64 user-space pcs leaf first (the leaf's exact, the callers' return
 * addresses), then kernel_frame_count u64 kernel addresses leaf first.
 * With PBP_REC_STACK_COPY, a struct pbp_stack_copy follows the kernel
 * addresses, then its shim_count u64 shims, then copy_len bytes of the
 * user stack.
 */
#ifndef PYBPFPROF_SAMPLE_RECORD_H
#define PYBPFPROF_SAMPLE_RECORD_H

#ifndef __bpf__
#include <linux/types.h>
#endif

/* Python frames kept per sample; deeper stacks lose their root side. */
#define PBP_MAX_PY_FRAMES 1024
/* Kernel frames kept per sample (the kernel's own perf limit is 127). */
#define PBP_MAX_KERNEL_FRAMES 128
/*
 * Kernel addresses are named by the kernel itself, a record's new ones at a time: userspace
 * writes up to PBP_KSYM_BATCH of them into the ksym_addrs array (0: an empty slot) and reads
 * the pbp_ksym_names iterator, one text line per address: its hex value, a space, then what
 * the kernel's %ps prints for it ("symbol", "symbol [module]", or "0x..." where no symbol
 * holds it), and a newline.
 */
#define PBP_KSYM_BATCH PBP_MAX_KERNEL_FRAMES
/* Addresses userspace names in one pass of the iterator: a pass prints all its lines for one
 * object, which must fit the kernel's 8-page iterator buffer (a line is at most 16 + 1 + 512
 * + 59 + 1 bytes: address, space, KSYM_NAME_LEN, " [module]", newline). */
#define PBP_KSYM_PASS 48
/* The record ring buffer's size where the rate does not size it (a power of two). */
#define PBP_RINGBUF_DEFAULT_BYTES (16u << 20)
/* The size of the inner-map template of the record ring (bpf/maps.h): no ring has it. */
#define PBP_RING_TEMPLATE_BYTES (64u << 10)

/* Record flags. */
#define PBP_REC_PY_TRUNCATED  0x0001u /* more Python frames than PBP_MAX_PY_FRAMES: root side cut */
#define PBP_REC_READ_FAULT    0x0002u /* a read of target memory failed mid-walk */
#define PBP_REC_NO_TSTATE     0x0004u /* thread has no (known) PyThreadState */
#define PBP_REC_HAS_GIL       0x0008u /* thread held the GIL when sampled */
#define PBP_REC_USER_MODE     0x0010u /* sample interrupted user code */
#define PBP_REC_NO_FRAME      0x0020u /* thread state has no current frame (idle / shutting down) */
/* Wall mode (the task iterator): the thread was not runnable (its state was not TASK_RUNNING:
 * asleep, blocked on I/O or a lock). Its kernel stack names the wait. */
#define PBP_REC_OFF_CPU       0x0040u
/* The interpreter's garbage collector was running in this thread: its collecting flag was set
 * while the thread held the GIL (or, where the holder is not known, at all). */
#define PBP_REC_GC            0x0080u
/* The thread asked for the GIL and waits for it (3.15+: PyThreadState.gil_requested). */
#define PBP_REC_GIL_REQUESTED 0x0100u
/* Wall mode: the thread was on a CPU at that moment (so its kernel stack could not be read). */
#define PBP_REC_ON_A_CPU      0x0200u
/* The native walk stopped for want of a table or a mapping (UNWIND_STOP_NO_TABLE, _NO_MAPPING: a
 * library loaded since userspace read the maps): a struct pbp_stack_copy
 * and a slice of the user stack follow the kernel addresses, for userspace to unwind the rest
 * once the table exists (as perf --call-graph dwarf does). */
#define PBP_REC_STACK_COPY    0x0400u
/* 3.11-3.13 (PY_PROC_CORO_FROM_FRAMES): running_task is the task BPF found stepping the
 * sample's outermost coroutine, not that coroutine itself. */
#define PBP_REC_ASYNC_TASK    0x0800u
/* Exception mode: the thread was raising an exception or handling one (an except block ran). */
#define PBP_REC_EXCEPTION     0x1000u
/* The running task's name as BPF copied it at the sample (struct pbp_task_name, after the kernel
 * addresses and before any stack copy): a task that ends before userspace drains the record
 * keeps its name, and a task whose address another took by then is not named after that one. */
#define PBP_REC_TASK_NAME     0x2000u
/* Wall mode: the thread ran while its Python stack was read, and PBP_STACK_READS reads of it
 * never agreed: its frames are the root-side part the last two agreed on (none if the walks were
 * cut at the root), the rest unknown. */
#define PBP_REC_PY_CHANGING   0x4000u
/* How often wall mode reads the Python stack of a thread that ran while it was read, at most:
 * a read is believed when the one before it gave the same frames. */
#define PBP_STACK_READS 8
_Static_assert((PBP_STACK_READS & (PBP_STACK_READS - 1)) == 0, "BPF indexes the reads with a mask");

/*
 * pbp_py_frame.instr_offset's top bit: this frame is the last (outermost) one
 * that its activation of the evaluation function ran — 3.11's `is_entry`, or
 * the frame below a C-stack shim from 3.12. Up to 3.10 every frame is its own
 * activation and the bit is not set. user/symbolize/stack_merge.h uses it to
 * place the Python frames in the native stack.
 */
#define PBP_PY_FRAME_ENTRY       0x80000000u
/*
 * A native pc's top bit (user-space addresses never have it): the frame is an
 * activation of the evaluation function, found by the C-stack shim (3.12+)
 * that lies in its stack frame. Mask it off before naming the pc.
 */
#define PBP_NATIVE_PC_EVAL       (1ull << 63)
#define PBP_PY_FRAME_OFFSET_MASK 0x7fffffffu

struct pbp_py_frame {
	__u64 code_addr;     /* PyCodeObject * */
	__u32 instr_offset;  /* raw: f_lasti, or byte offset of instr pointer from the code object */
	__u32 checksum;      /* py_code_checksum() of the live code object */
};

struct pbp_record {
	__u64 time_ns;           /* CLOCK_MONOTONIC: bpf_ktime_get_ns(); wall mode: its pass's start */
	__u64 tstate_addr;       /* PyThreadState * (0 if none) */
	__u32 pid;               /* host tgid */
	__u32 tid;               /* host tid */
	__u32 cpu;               /* where it ran (wall mode: last ran) */
	__u32 flags;             /* PBP_REC_* */
	__u16 py_frame_count;
	__u16 kernel_frame_count;
	__u32 interp_id;         /* PyInterpreterState.id of the thread's interpreter (0 if unknown) */
	__u8 error;              /* enum pbp_error: the sample's first failed read, PBP_ERR_NONE if none */
	__u8 native_stop;        /* enum unwind_stop: why the native walk ended */
	__u16 native_frame_count; /* native pcs after the Python frames, leaf first */
	/* Wall mode: the kernel's state letter of the thread (ps's "RSDTtXZPI"), read at the moment
	 * its kernel stack was taken; 0 where unknown (cpu mode). */
	__u8 task_state;
	__u8 reserved;           /* zero */
	/* The ticks this sample stands for: 1, or the stride of a target --max-overhead thins
	 * (bpf/overhead_accounts.h); 0 is read as 1. */
	__u16 weight;
	__u64 user_ip;           /* where a sample in user mode landed (0 in kernel mode) */
	/* The asyncio Task the thread was running at that moment (its thread state's running task,
	 * where the config gives its offset: PY_PROC_HAS_ASYNCIO), 0 if none or not known. With
	 * PY_PROC_CORO_FROM_FRAMES (3.11-3.13): the task of the loop stepping the thread's
	 * outermost coroutine (PBP_REC_ASYNC_TASK), else that coroutine or generator (whose frame
	 * it owns), userspace finding its task. */
	__u64 running_task;
	/* The record's weight beside its count, by what sampled it (one of them per run: --event
	 * off-cpu, syscall:..., block-io and --mode memory exclude each other); 0 in every other record. */
	union {
		/* --event off-cpu: the nanoseconds the thread was blocked, from the switch-out its
		 * stack was taken at (time_ns) to the switch back in. */
		__u64 blocked_ns;
		/* Memory mode: the change of the process's resident memory (file, anonymous and
		 * shared pages, as /proc/PID/status's VmRSS counts them), in bytes, since this
		 * thread's previous sample; 0 at a thread's first sample. */
		__s64 rss_delta;
		/* --event syscall:... and block-io: what the sample weighs: 1 (a call counted), bytes
		 * (a call's positive return value, a block I/O's size) or nanoseconds (a call's length,
		 * entry to exit). Never 0 in a record sent. */
		__u64 event_weight;
	};
	/* struct pbp_py_frame py[py_frame_count]; __u64 native_pcs[native_frame_count];
	 * __u64 kernel_ips[kernel_frame_count]; */
};

/*
 * The first bytes of the running task's name object (a str, or the int n of a "Task-n" that
 * 3.12+ name lazily), as BPF read them at the sample: its header and the start of its text.
 * copied counts the bytes read (fewer where the object ends a mapping), 0 if none could be.
 * Userspace decodes it with the layout it knows (a longer text is cut at the copy's end).
 * Where the task ended before the record was drained, this is all that is known of it.
 */
#define PBP_TASK_NAME_BYTES 104u
struct pbp_task_name {
	__u64 name_addr;   /* the name object's address (0: the task has none) */
	/* the code object of the sample's outermost coroutine frame (the task's own coroutine,
	 * where its frames start), 0 if none */
	__u64 coro_code;
	__u32 copied;      /* bytes of it in bytes[] */
	__u32 reserved;    /* zero */
	__u8 bytes[PBP_TASK_NAME_BYTES];
};

/*
 * The stack slice a PBP_REC_STACK_COPY record carries. The walk stopped at its last native
 * pc (the frame it could not unwind, already in native_pcs); sp and bp are that frame's
 * registers, as the walk had them. The copy holds the user stack from sp up: copy_len bytes,
 * page by page, so it ends early where the stack's mapping ends. The shims (3.12+) are the
 * C-stack shims of eval activations that no walked frame claimed yet, leaf first (their
 * frames get PBP_NATIVE_PC_EVAL as in BPF's walk).
 */
#define PBP_STACK_COPY_BYTES 16384u
struct pbp_stack_copy {
	__u64 sp;          /* the stopping frame's rsp: the address of the copy's first byte */
	__u64 bp;          /* its rbp */
	__u32 copy_len;    /* bytes of stack after the shims (<= PBP_STACK_COPY_BYTES) */
	__u16 shim_count;  /* u64 shim addresses right after this header (<= PBP_MAX_SHIM_COPY) */
	__u16 reserved;    /* zero */
};
#define PBP_MAX_SHIM_COPY 64

/*
 * Which read of target memory failed: one value per read site in bpf/. A
 * record's `error` holds the first of its sample (a later read may have
 * recovered, e.g. a stale cached thread state followed by a fresh walk:
 * the flags say whether the stack is complete); the `read_errors` map counts
 * every failure per site and CPU. bpf_sampler_error_name() names them.
 *
 * One list makes both the enum and its names (X(NAME, value, name)):
 * a code added here is named where the reports print it. The values are
 * the BPF<->userspace contract and run densely from 0: keep them.
 */
#define PBP_ERROR_LIST(X)                                                                      \
	X(NONE, 0, "none")                                                                     \
	X(INTERP_HEAD, 1, "interp_head")           /* the first PyInterpreterState * (py_proc_config.interp_head_addr) */ \
	X(INTERP_NEXT, 2, "interp_next")           /* PyInterpreterState.next */               \
	X(INTERP_THREADS, 3, "interp_threads")     /* PyInterpreterState.threads.head */       \
	X(INTERP_ID, 4, "interp_id")               /* PyInterpreterState.id */                 \
	X(TSTATE_THREAD_ID, 5, "tstate_thread_id") /* PyThreadState.thread_id, walking the thread list */ \
	X(TSTATE_NEXT, 6, "tstate_next")           /* PyThreadState.next */                    \
	X(TSTATE_CACHED, 7, "tstate_cached")       /* PyThreadState.thread_id (and _status, 3.12+) of the thread's cached thread state */ \
	X(TSTATE_FRAME, 8, "tstate_frame")         /* PyThreadState.frame / cframe / current_frame */ \
	X(CFRAME_FRAME, 9, "cframe_frame")         /* _PyCFrame.current_frame (3.11, 3.12) */  \
	X(LAYOUT, 10, "layout")                    /* not a read: the config's layout exceeds PBP_FRAME_MAX_READ or PBP_CODE_SPAN_MAX */ \
	X(FRAME_OBJECT, 11, "frame_object")        /* a PyFrameObject (up to 3.10) */          \
	X(DATA_STACK, 12, "data_stack")            /* the data-stack window holding an interpreter frame (3.11+) */ \
	X(CODE_OBJECT, 13, "code_object")          /* a code object's identity fields */       \
	X(GIL, 14, "gil")                          /* the GIL's holder and locked flag */      \
	X(GC, 15, "gc")                            /* the interpreter's GC collecting flag */  \
	X(GIL_REQUESTED, 16, "gil_requested")      /* PyThreadState.gil_requested */           \
	X(TSTATE_STATUS, 17, "tstate_status")      /* PyThreadState._status of a thread state of the thread, walking the thread list */ \
	X(RUNNING_TASK, 18, "running_task")        /* the asyncio running task: the thread state's (3.14+), _current_tasks (3.11-3.13) */ \
	X(STALE_LINK, 19, "stale_link")            /* not a read: a leaf not started links below the thread's stack pointer (bpf/frame_walk.h) */

#define PBP_ERROR_ENUMERATOR(name, value, text) PBP_ERR_##name = value,
#define PBP_ERROR_PLUS_ONE(name, value, text) +1
enum pbp_error {
	PBP_ERROR_LIST(PBP_ERROR_ENUMERATOR)
	/* number of codes, the size of the read_errors map */
	PBP_ERR_COUNT = 0 PBP_ERROR_LIST(PBP_ERROR_PLUS_ONE),
};
#undef PBP_ERROR_ENUMERATOR
#undef PBP_ERROR_PLUS_ONE

/*
 * BPF writes these layouts and userspace reads them: both compile this
 * header, so a field that moves on one side only fails the build.
 */
#define PBP_RECORD_LAYOUT "struct pbp_record / pbp_py_frame: layout shared by BPF and userspace"
_Static_assert(sizeof(struct pbp_py_frame) == 16, PBP_RECORD_LAYOUT);
_Static_assert(__builtin_offsetof(struct pbp_py_frame, code_addr) == 0, PBP_RECORD_LAYOUT);
_Static_assert(__builtin_offsetof(struct pbp_py_frame, instr_offset) == 8, PBP_RECORD_LAYOUT);
_Static_assert(__builtin_offsetof(struct pbp_py_frame, checksum) == 12, PBP_RECORD_LAYOUT);
_Static_assert(sizeof(struct pbp_record) == 72, PBP_RECORD_LAYOUT);
_Static_assert(__builtin_offsetof(struct pbp_record, time_ns) == 0, PBP_RECORD_LAYOUT);
_Static_assert(__builtin_offsetof(struct pbp_record, tstate_addr) == 8, PBP_RECORD_LAYOUT);
_Static_assert(__builtin_offsetof(struct pbp_record, pid) == 16, PBP_RECORD_LAYOUT);
_Static_assert(__builtin_offsetof(struct pbp_record, tid) == 20, PBP_RECORD_LAYOUT);
_Static_assert(__builtin_offsetof(struct pbp_record, cpu) == 24, PBP_RECORD_LAYOUT);
_Static_assert(__builtin_offsetof(struct pbp_record, flags) == 28, PBP_RECORD_LAYOUT);
_Static_assert(__builtin_offsetof(struct pbp_record, py_frame_count) == 32, PBP_RECORD_LAYOUT);
_Static_assert(__builtin_offsetof(struct pbp_record, kernel_frame_count) == 34, PBP_RECORD_LAYOUT);
_Static_assert(__builtin_offsetof(struct pbp_record, interp_id) == 36, PBP_RECORD_LAYOUT);
_Static_assert(__builtin_offsetof(struct pbp_record, error) == 40, PBP_RECORD_LAYOUT);
_Static_assert(__builtin_offsetof(struct pbp_record, native_stop) == 41, PBP_RECORD_LAYOUT);
_Static_assert(__builtin_offsetof(struct pbp_record, native_frame_count) == 42, PBP_RECORD_LAYOUT);
_Static_assert(__builtin_offsetof(struct pbp_record, task_state) == 44, PBP_RECORD_LAYOUT);
_Static_assert(__builtin_offsetof(struct pbp_record, weight) == 46, PBP_RECORD_LAYOUT);
_Static_assert(__builtin_offsetof(struct pbp_record, user_ip) == 48, PBP_RECORD_LAYOUT);
_Static_assert(__builtin_offsetof(struct pbp_record, running_task) == 56, PBP_RECORD_LAYOUT);
_Static_assert(__builtin_offsetof(struct pbp_record, blocked_ns) == 64, PBP_RECORD_LAYOUT);
_Static_assert(__builtin_offsetof(struct pbp_record, rss_delta) == 64, PBP_RECORD_LAYOUT);
_Static_assert(sizeof(struct pbp_stack_copy) == 24, PBP_RECORD_LAYOUT);
_Static_assert(__builtin_offsetof(struct pbp_stack_copy, copy_len) == 16, PBP_RECORD_LAYOUT);
_Static_assert(sizeof(struct pbp_task_name) == 128, PBP_RECORD_LAYOUT);
_Static_assert(__builtin_offsetof(struct pbp_task_name, bytes) == 24, PBP_RECORD_LAYOUT);
_Static_assert((PBP_STACK_COPY_BYTES & (PBP_STACK_COPY_BYTES - 1)) == 0, "PBP_STACK_COPY_BYTES is a power of two");
/* The record is followed by 8-byte aligned frames and kernel addresses. */
_Static_assert(sizeof(struct pbp_record) % 8 == 0, PBP_RECORD_LAYOUT);
_Static_assert(PBP_ERR_COUNT <= 256, "an enum pbp_error fits pbp_record.error");
/* Dense from 0: every value indexes the read_errors map and the names (each below the count). */
#define PBP_ERROR_BELOW_COUNT(name, value, text) \
	_Static_assert(PBP_ERR_##name < PBP_ERR_COUNT, "enum pbp_error runs densely from 0: " #name);
PBP_ERROR_LIST(PBP_ERROR_BELOW_COUNT)
#undef PBP_ERROR_BELOW_COUNT
/* BPF indexes the frames with a mask. */
_Static_assert((PBP_MAX_PY_FRAMES & (PBP_MAX_PY_FRAMES - 1)) == 0, "PBP_MAX_PY_FRAMES is a power of two");
_Static_assert((PBP_RINGBUF_DEFAULT_BYTES & (PBP_RINGBUF_DEFAULT_BYTES - 1)) == 0,
	       "a ring buffer's size is a power of two");

/* Per-CPU counters (index into the `counters` array map). */
enum pbp_counter {
	PBP_CNT_SAMPLES = 0,      /* perf events that hit a target thread; in wall mode, threads sampled; off-cpu: blocks begun */
	PBP_CNT_LOST = 1,         /* records dropped: ring buffer full (off-cpu: or no room to park the block) */
	PBP_CNT_READ_FAULTS = 2,  /* samples with a failed target read */
	PBP_CNT_TRUNCATED = 3,    /* samples whose Python stack was cut */
	PBP_CNT_NO_TSTATE = 4,    /* samples of threads with no thread state */
	PBP_CNT_WAKEUPS = 5,      /* records that woke the consumer (new code objects, a filling buffer) */
	PBP_CNT_PROC_EVENTS_LOST = 6, /* exec/fork/exit notices dropped: proc_events ring full */
	PBP_CNT_TARGET_NS = 7,    /* with time_samples (--bpf-stats): ns spent on target samples */
	PBP_CNT_OTHER_NS = 8,     /* with time_samples: ns spent on runs that found no target */
	PBP_CNT_STACK_COPIES = 9, /* records sent with a stack copy (PBP_REC_STACK_COPY) */
	PBP_CNT_COPY_NS = 10,     /* with time_samples: ns spent copying stacks and sending those records */
	PBP_CNT_COPIES_DROPPED = 11, /* stack copies not sent, the ring a quarter full or more (their records went without) */
	PBP_CNT_STACK_REREADS = 12, /* wall mode: Python stacks read again, their thread ran while they were read */
	PBP_CNT_STACK_CHANGING = 13, /* wall mode: of those, stacks whose reads never agreed (PBP_REC_PY_CHANGING) */
	PBP_CNT_MAX = 14,         /* number of counters, the size of the counters map */
};

#endif
