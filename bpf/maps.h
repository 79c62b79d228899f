/* SPDX-License-Identifier: MIT */
/* The maps the sample path shares with userspace, and its per-CPU scratch. */
#ifndef PYBPFPROF_BPF_MAPS_H
#define PYBPFPROF_BPF_MAPS_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "py_proc_config.h"
#include "proc_event.h"
#include "sample_record.h"
#include "unwind_table.h"

#define PBP_MAX_TARGETS 4096
#define PBP_MAX_CACHED_THREADS 16384

/*
 * Target memory is copied in windows: from 3.11 the frames of one thread
 * sit next to each other in its data stack, so one copy usually holds many
 * of them. The first window of a sample is small (most stacks are shallow
 * and a copy costs more the larger it is); deeper stacks continue with
 * large ones. The buffer has slack after the window so that a frame near
 * its end can be read with masked field offsets.
 */
#define PBP_WINDOW_FIRST_BYTES 4096
#define PBP_WINDOW_BYTES 16384
#define PBP_WINDOW_BUF (PBP_WINDOW_BYTES + 2 * PBP_FRAME_MAX_READ + 512)
#define PBP_GIL_SPAN_MAX 64     /* one read covers the GIL's holder and locked flag when closer than this */

/* tid -> its PyThreadState, revalidated on every use. */
struct pbp_tstate_cache_entry {
	__u64 tstate_addr;  /* 0: no thread state was found at checked_ns */
	__u64 checked_ns;
	__u64 interp_id;    /* of the interpreter the thread state belongs to */
	__u64 retry_ns;     /* none found: how long after checked_ns to walk again */
};

/* Walk state lives in map memory (not in the bpf_loop ctx on the stack) so
 * that the verifier sees it as unknown and converges on the loop body. */
struct pbp_frame_walk {
	__u64 frame_addr;      /* next frame to visit, 0 at the end */
	__u64 window_start;    /* target address of window[0] */
	__u64 window_len;      /* valid bytes in window */
	__u64 last_code_addr;  /* the previous frame's code object, to reuse its checksum */
	/* The last file name string whose identity was read in this sample, and that identity: a
	 * string that a code object of the stack being walked holds cannot change during the walk. */
	__u64 last_filename_addr;
	__u64 last_filename_identity;
	__u32 last_checksum;
	__u32 frame_count;     /* frames written to the record */
	__u32 flags;           /* PBP_REC_* found while walking */
	__u32 new_code;        /* a frame ran a code object this CPU had not sent before */
	__u32 shim_count;      /* C-stack shims passed (3.12+), their addresses in shim_addr */
	__u32 frames_past_cut; /* frames followed past the kept ones, looking for the cut activation's shim */
	/* 3.11+: the used part of the data-stack chunk the walk is in, [stack_lo, stack_hi)
	 * (stack_hi 0: unknown), and of the chunk before it once looked up (prev_hi 0: not yet). */
	__u64 stack_lo;
	__u64 stack_hi;        /* right after stack_lo: one read fills both */
	__u64 prev_lo;
	__u64 prev_hi;
	/* The main interpreter's code-object counter at this sample's start (config's
	 * code_stamp_addr), 0: not read, or no trust in verified identities without a read. */
	__u32 code_stamp;
	/* The epoch of hot_codes this walk's identities belong to, 0: hot_codes is not used. */
	__u32 hot_epoch;
	/* Leaf-first frames of out.py, as the previous walk on this CPU left them, whose identities
	 * this walk may take where the code address at the same index matches (pbp_hot_epoch
	 * found it in the epoch they were settled in; 0: none). */
	__u32 prev_kept;
	__u32 reserved;
};

/* What the current epoch of this CPU's hot_codes stands for, and its number (0: none yet). */
struct pbp_hot_epoch {
	__u32 tgid;
	__u32 interp_id;
	__u32 generation;
	__u32 stamp;
	__u32 epoch;
	/* The leaf-first frames at the start of out.py whose (code address, checksum) pairs were
	 * settled in kept_epoch by the last walk on this CPU: set as a walk ends, cut to the
	 * frames its record kept as the next record begins (the words after them hold its native
	 * and kernel stacks), 0 while a walk writes out.py. */
	__u32 kept_frames;
	__u32 kept_epoch;
	__u32 reserved;
};

/* 3.12+: the C-stack shims of the eval activations a sample's Python walk passed, leaf
 * first: each lies in its activation's native stack frame (bpf/native_walk.h). */
#define PBP_MAX_SHIMS 64

struct pbp_tstate_walk {
	__u64 interp_addr;
	__u64 tstate_addr;     /* thread state being checked, 0 = move to the next interpreter */
	__u64 found_addr;
	__u64 found_interp;    /* interpreter holding found_addr */
	__u64 fsbase;
	__u32 interps_seen;
	__u32 tstates_seen;    /* in the current interpreter */
	__u32 found_current;   /* found_addr is the one the thread is in, not just one of its own */
	__u32 reserved;
	__u8 span[PBP_TSTATE_SPAN_MAX + 8]; /* the cached thread state's _status through thread_id */
};

/* The native walk's registers and progress (include/unwind_table.h), in map memory like pbp_frame_walk. */
struct pbp_native_walk {
	__u64 pc;              /* the frame to record and unwind next */
	__u64 sp;
	__u64 bp;
	__u32 out_base;        /* index in pbp_sample_buf.words of the first native pc */
	__u32 frame_count;     /* native pcs written */
	__u32 last_mapping;    /* index of the mapping that held the previous pc */
	__u32 stop;            /* enum unwind_stop once the walk ended, PBP_NATIVE_WALKING before */
	__u32 next_shim;       /* the first shim no native frame has claimed yet */
	__u32 holds_shim;      /* the frame just unwound holds it: an eval activation */
	/* The copy of the target's stack in pbp_cpu_scratch.stack_window: [window_lo,
	 * window_lo + window_len) (bpf/native_walk.h). */
	__u64 window_lo;
	__u32 window_len;
	__u32 window_page_bound; /* a full window failed this walk: windows end at their page's end */
};

#define PBP_NATIVE_WALKING 0xffu
/* The native walk copies the target's stack in windows of this many bytes: one copy holds the
 * return addresses and saved rbps of several frames (a 3.12 eval activation takes 384 bytes). */
#define PBP_NATIVE_WINDOW_BYTES 1024
#define PBP_PAGE_MASK 0xfffull
/* Words of the record after the header: the Python frames (two words each), then the
 * native pcs and the kernel stack right after the last one of each. */
#define PBP_SAMPLE_WORDS (2 * PBP_MAX_PY_FRAMES + UNWIND_MAX_FRAMES + PBP_MAX_KERNEL_FRAMES)
/* The running task's name after the kernel stack (PBP_REC_TASK_NAME). */
#define PBP_TASK_NAME_WORDS (sizeof(struct pbp_task_name) / sizeof(__u64))

/* Leaf-first frames, then room for the native pcs and the kernel stack right after the last frame,
 * and the task name after them. */
struct pbp_sample_buf {
	struct pbp_record rec;
	union {
		struct pbp_py_frame py[PBP_MAX_PY_FRAMES];
		__u64 words[PBP_SAMPLE_WORDS + PBP_TASK_NAME_WORDS];
	};
};

struct pbp_cpu_scratch {
	__u64 wakeup_consumer_mark;  /* consumer position + 1 when this CPU last woke it for new code */
	__u64 last_running_task;     /* the asyncio task this CPU's last record of one ran */
	__u32 new_task;              /* this record's running task differs from it */
	__u32 has_task_name;         /* task_name holds this record's running task's */
	__u64 task_coro_code;        /* the code of the walk's outermost coroutine frame, 0 if none */
	struct pbp_task_name task_name;
	struct pbp_sample_buf out;
	struct pbp_frame_walk walk;
	struct pbp_hot_epoch hot;
	struct pbp_native_walk native;
	__u64 shim_addr[PBP_MAX_SHIMS];
	struct pbp_tstate_walk tswalk;
	__u8 code_buf[PBP_CODE_SPAN_MAX + 8]; /* a code object's identity fields, then its strings' */
	/* The identity fields of the code object pbp_code_checksum read last, for its note (code_notes);
	 * note_read says they are of the object just checked (0: its checksum came from a cache). */
	struct pbp_code_note_key note_key;
	struct pbp_code_note note;
	__u32 note_read;
	__u32 notes_saved;           /* notes this walk saved: at most PBP_CODE_NOTES_PER_WALK */
	__u8 gil_buf[PBP_GIL_SPAN_MAX + 8];
	/* The native walk's copy of the stack it is unwinding (slack: a masked offset plus a read). */
	__u8 stack_window[PBP_NATIVE_WINDOW_BYTES + 16];
};

/*
 * A sample's stack copy (include/sample_record.h), made only when its native walk stopped for
 * want of a table or a mapping. The header and the shims are contiguous, as the record carries them; the
 * bytes have a page of slack after the copy's size, for a masked offset plus a page's copy.
 */
#define PBP_COPY_PAGE 4096u
_Static_assert(PBP_MAX_SHIM_COPY >= PBP_MAX_SHIMS, "a copy holds every shim a walk can pass");
_Static_assert(PBP_COPY_PAGE == PBP_PAGE_MASK + 1, "copies go page by page");
struct pbp_stack_copy_buf {
	struct pbp_stack_copy head;
	__u64 shims[PBP_MAX_SHIM_COPY];
	__u8 bytes[PBP_STACK_COPY_BYTES + PBP_COPY_PAGE];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pbp_stack_copy_buf);
} stack_copy SEC(".maps");

/* Separate from pbp_cpu_scratch: a per-CPU map value is capped at 32 KiB. */
struct pbp_cpu_window {
	__u8 bytes[PBP_WINDOW_BUF];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PBP_MAX_TARGETS);
	__type(key, __u32);
	__type(value, struct py_proc_config);
} proc_configs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, PBP_MAX_CACHED_THREADS);
	__type(key, __u32);
	__type(value, struct pbp_tstate_cache_entry);
} tstate_cache SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pbp_cpu_scratch);
} cpu_scratch SEC(".maps");

/*
 * --event off-cpu: by tid, the record of the block a target thread is in (its stacks, taken as it
 * switched out; time_ns then, 0 once sent), sent when it switches back in. Kept for the thread's
 * life, so a thread pays the whole value's copy once and then only its record's length; dropped
 * at its exit. Not preallocated: only threads that block take memory, at most this many
 * (about 20 KiB each); one more thread's blocks count as lost.
 */
#define PBP_MAX_OFF_CPU_THREADS 1024
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, PBP_MAX_OFF_CPU_THREADS);
	__type(key, __u32);
	__type(value, struct pbp_sample_buf);
} off_cpu_blocks SEC(".maps");

/* --event syscall or block-io with a period: the target occurrences this CPU lets pass before its
 * next sample (0: not drawn yet). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} period_countdown SEC(".maps");

/* Wall mode: kernel addresses where a runnable thread was switched out, by whether they lie in
 * the kernel's way back to user space (1) or not (0): each is named once (bpf/pyperf.bpf.c). */
#define PBP_MAX_SWITCH_PCS 1024
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, PBP_MAX_SWITCH_PCS);
	__type(key, __u64);
	__type(value, __u8);
} return_to_user_pcs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pbp_cpu_window);
} cpu_window SEC(".maps");

/* The thread's state, as the kernel's scheduler holds it, at one moment. */
struct pbp_task_moment {
	__u64 switches; /* context switches so far: equal twice, the thread stayed put between */
	__u32 state;    /* __state */
	__u32 on_cpu;
};

/* Wall mode: the frames of a running thread's previous read of its Python stack, against which
 * the next read is checked (bpf/pyperf.bpf.c, pbp_read_settled_python_stack). */
struct pbp_saved_walk {
	__u64 hashes[PBP_STACK_READS]; /* of each read so far (0: none) */
	__u64 hash;                    /* of the read in the record, but its leaf's instruction */
	__u32 saved_count, now_count;  /* frames of the previous read (in py) and of the record's */
	__u32 saved_flags;             /* the previous read's record flags */
	__u32 from_leaf;               /* compared leaf first (both cut at the root), else root first */
	__u32 agreed;                  /* frames equal so far, from where the comparison started */
	__u32 settled;                 /* the stack is known: read with the thread put, or twice alike */
	__u32 stayed_put;              /* the thread stayed off the CPUs through the first read */
	__u32 new_code;                /* an earlier read met a code object new to this CPU */
	struct pbp_task_moment before; /* the thread's moment as the first read began */
	struct pbp_task_moment after;  /* and as it ended (on the stack, it would take the room of a call) */
	struct pbp_py_frame py[PBP_MAX_PY_FRAMES]; /* the previous read's frames */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pbp_saved_walk);
} saved_walk SEC(".maps");

/*
 * The code identities this CPU's walks settled lately, for the frame walk's fast path
 * (bpf/frame_walk.h): by code object address, in sets of PBP_HOT_CODE_WAYS (one cache line),
 * each way valid in one epoch. An epoch is a run of walks with the same process, interpreter,
 * pbp_code_generation and code-object counter (a nonzero one): within it no code object was
 * made, so none took the address of the one a way names, and the checksum the way holds is
 * the one a full walk would take. Small enough to stay in the CPU's cache, where
 * verified_code is not: a hit costs a load and a few compares, not a set of ways scattered
 * over a large table. Four ways, not pairs: the 900 code objects of a deep stack overflowed
 * some 50 pairs of 1024 (each overflow a miss on every walk), and overflow some 20 sets of 512.
 */
#define PBP_HOT_CODES 2048
#define PBP_HOT_CODE_WAYS 4
#define PBP_HOT_CODE_SETS (PBP_HOT_CODES / PBP_HOT_CODE_WAYS)
struct pbp_hot_code {
	__u64 code_addr;
	__u32 checksum;
	__u32 epoch;     /* 0: empty */
};
struct pbp_hot_code_set {
	struct pbp_hot_code way[PBP_HOT_CODE_WAYS];
};
struct pbp_hot_codes {
	struct pbp_hot_code_set set[PBP_HOT_CODE_SETS];
};
_Static_assert(sizeof(struct pbp_hot_code_set) == 64, "a set of hot_codes is one cache line");
_Static_assert(sizeof(struct pbp_hot_codes) <= 32768, "a per-CPU map value is capped at 32 KiB");
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pbp_hot_codes);
} hot_codes SEC(".maps");

/*
 * Code objects this CPU has sent, in sets of PBP_SEEN_CODE_WAYS by address: a
 * record with one that is not here wakes the consumer at once, so that it
 * reads the object while it still exists (a module body is freed as soon as
 * its import ends). A miss costs an extra wakeup or a later read, never a
 * wrong name. Not direct-mapped: two code objects of one hot stack that
 * shared a slot would evict each other on every sample and wake the consumer
 * every time (one 32-frame stack in nine did, measured).
 */
#define PBP_SEEN_CODE_SETS 4096
#define PBP_SEEN_CODE_WAYS 4
struct pbp_seen_code_set {
	__u64 identity[PBP_SEEN_CODE_WAYS];
	__u64 next_way;  /* replaced first-in first-out */
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PBP_SEEN_CODE_SETS);
	__type(key, __u32);
	__type(value, struct pbp_seen_code_set);
} seen_code SEC(".maps");

/*
 * What userspace needs to name a code object that is freed before it reads it (include/
 * py_proc_config.h, struct pbp_code_note): saved when a CPU sends a code object it had not sent
 * before (seen_code), so once per object and CPU in a steady run. A note is needed only until
 * userspace has read the records that ran its object, so least recently used entries go: a
 * process making code objects without end pushes out notes of objects long read (or, with the
 * profiler later than that many new objects, notes still wanted: those frames stay unresolved).
 * 2048 notes of some 500 bytes: 1 MiB of kernel memory. A walk saves at most
 * PBP_CODE_NOTES_PER_WALK (its leafmost new ones: a module body being imported is the one new
 * frame of its stack), so that a stack of a thousand new objects costs a few updates, not a
 * thousand.
 */
#define PBP_CODE_NOTES 2048
#define PBP_CODE_NOTES_PER_WALK 8
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, PBP_CODE_NOTES);
	__type(key, struct pbp_code_note_key);
	__type(value, struct pbp_code_note);
} code_notes SEC(".maps");

/*
 * Code objects whose identity this CPU has read in full (their fields and strings), by
 * process, interpreter, address and co_version. co_version (3.12+) is a counter each
 * interpreter stamps on every code object it makes and never hands out twice (it stops at
 * 0 when exhausted), so the same four are the same code object: its checksum is taken from
 * here and its strings are not read again. An exec or exit of a target bumps
 * pbp_code_generation, which every entry carries, so that no entry outlives the image it
 * was read from (a new image, or a reused pid, counts from 1 again).
 *
 * An entry also holds the code-object counter (py_proc_config.code_stamp_addr) as it was when
 * its identity was last confirmed: while the counter has not moved since, no code object was
 * made, so the object at that address is still the one read, and a frame running it takes the
 * checksum without reading the object at all (a distinct code object per frame otherwise
 * costs a read each). Sets are chosen by address and process alone, for that lookup. Sized
 * for a few thousand code objects a CPU: a deep stack of distinct functions (900 frames) fits
 * with room to spare, where 1024 entries evicted each other every sample.
 */
#define PBP_VERIFIED_CODE_SETS 2048
#define PBP_VERIFIED_CODE_WAYS 4
struct pbp_verified_code {
	__u64 code_addr;
	__u32 version;
	__u32 checksum;
	__u32 tgid;
	__u32 interp_id;
	__u32 generation;
	__u32 stamp;  /* the code-object counter when this identity was last confirmed, 0: none */
};
struct pbp_verified_code_set {
	struct pbp_verified_code way[PBP_VERIFIED_CODE_WAYS];
	__u32 next_way;  /* replaced first-in first-out */
	__u32 reserved;
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PBP_VERIFIED_CODE_SETS);
	__type(key, __u32);
	__type(value, struct pbp_verified_code_set);
} verified_code SEC(".maps");

/* Bumped by every exec and exit of a target (bpf/pyperf.bpf.c). */
__u32 pbp_code_generation = 0;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PBP_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* Failed reads per enum pbp_error site. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PBP_ERR_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} read_errors SEC(".maps");

/*
 * The record ring. Userspace creates it, sized from the rate, and replaces it with a larger
 * one when the records it sees are larger than it was sized for (deep stacks): BPF looks it
 * up for every record. The template's size binds no ring (ring buffers differ in size as
 * inner maps); it is small because the kernel allocates it while creating the outer map.
 */
struct pbp_record_ring {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, PBP_RING_TEMPLATE_BYTES);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, struct pbp_record_ring);
} events SEC(".maps");

/* Exec, fork and exit notices are rare and small. */
#define PBP_PROC_EVENTS_BYTES (64u << 10)
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, PBP_PROC_EVENTS_BYTES);
} proc_events SEC(".maps");

/*
 * Native unwinding (include/unwind_table.h): every loaded file's rows in chunks
 * (arrays userspace creates as tables need room and maps to write rows without a
 * syscall per row), where each table lies in them, and each target's executable mappings.
 * Chunks differ in size (BPF_F_INNER_MAP): the template's max_entries binds none of them,
 * and a lookup past a chunk's end returns NULL.
 */
struct unwind_rows_chunk {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE | BPF_F_INNER_MAP);
	__uint(max_entries, UNWIND_CHUNK_ROWS);
	__type(key, __u32);
	__type(value, struct unwind_row);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, UNWIND_MAX_CHUNKS);
	__type(key, __u32);
	__array(values, struct unwind_rows_chunk);
} unwind_rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, UNWIND_MAX_TABLES);
	__type(key, __u32);
	__type(value, struct unwind_table_ref);
} unwind_tables SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, PBP_MAX_TARGETS);
	__type(key, __u32);
	__type(value, struct unwind_proc);
} unwind_procs SEC(".maps");

/*
 * Per CPU, the rows the native walk found, by table generation and file pc (direct-mapped):
 * a sampled thread returns through the same call sites sample after sample, and one entry
 * here replaces the page index's and the bisection's several cache lines. An entry is
 * only ever a row of the table it names: a reused table slot has a new generation.
 */
#define PBP_ROW_CACHE_ENTRIES 4096

struct pbp_row_cache_entry {
	__u64 tag; /* generation << 32 | file pc; 0: empty */
	struct unwind_row row;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PBP_ROW_CACHE_ENTRIES);
	__type(key, __u32);
	__type(value, struct pbp_row_cache_entry);
} row_cache SEC(".maps");

/* Native walks per enum unwind_stop. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, UNWIND_STOP_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} unwind_stops SEC(".maps");

/* The kernel addresses pbp_ksym_names prints the names of (include/sample_record.h). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PBP_KSYM_BATCH);
	__type(key, __u32);
	__type(value, __u64);
	__uint(map_flags, BPF_F_MMAPABLE);
} ksym_addrs SEC(".maps");

static __always_inline void pbp_count_add(__u32 counter, __u64 amount)
{
	__u64 *value = bpf_map_lookup_elem(&counters, &counter);

	if (value)
		*value += amount;
}

static __always_inline void pbp_count(__u32 counter)
{
	pbp_count_add(counter, 1);
}

/*
 * Every read of target memory goes through here. task NULL: the sampled thread
 * is the current task (the perf_event path): bpf_probe_read_user. Otherwise
 * it is another task (the wall-mode task iterator): bpf_copy_from_user_task,
 * which only sleepable programs may call. In the perf_event program task is a
 * constant NULL, so the verifier never visits the sleepable branch there.
 */
static __always_inline long pbp_read_target(void *dst, __u32 size, __u64 addr, struct task_struct *task)
{
	if (task)
		return bpf_copy_from_user_task(dst, size, (const void *)addr, task, 0);
	return bpf_probe_read_user(dst, size, (const void *)addr);
}

/* A read at site failed: count it, and name it in the record if it is the sample's first. */
static __always_inline void pbp_read_failed(struct pbp_record *rec, __u32 site)
{
	__u64 *failures = bpf_map_lookup_elem(&read_errors, &site);

	if (failures)
		*failures += 1;
	if (rec->error == PBP_ERR_NONE)
		rec->error = (__u8)site;
}

#endif
