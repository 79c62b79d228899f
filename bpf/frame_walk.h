/* SPDX-License-Identifier: MIT */
/*
 * Walking a thread's Python frames, leaf first, into the per-CPU record.
 *
 * Frames are copied from the target in windows: up to 3.10 a window is one
 * PyFrameObject; from 3.11 it is the used part of the thread's data-stack
 * chunk below the current frame (at most PBP_WINDOW_BYTES), because its
 * callers sit just below it there and one bulk copy is far cheaper than a
 * read per frame. Knowing the chunk's bounds keeps every copy inside memory
 * that is mapped: a copy that runs off a chunk's edge faults, and a faulting
 * copy costs more than the walk. A frame whose `previous` falls outside the
 * copy starts a new window; a frame outside the data stack (a generator's or
 * a coroutine's) is copied alone.
 */
#ifndef PYBPFPROF_BPF_FRAME_WALK_H
#define PYBPFPROF_BPF_FRAME_WALK_H

#include "maps.h"
#include "thread_state.h"

/* Iterations beyond the kept frames, for skipped shim frames (3.12+). */
#define PBP_MAX_SKIPPED_FRAMES 64
/*
 * 3.12+: frames followed past the kept ones, unrecorded, to find the shim of the activation
 * that ran the outermost kept frame. Without it the native walk cannot tell which native frame
 * that activation is, and so which native frames ran in the cut part (the interpreter's
 * start-up among them): userspace drops them all the same, but by the activation's name, which
 * a stripped interpreter's cold code does not have. Each one costs a pointer, the window copy
 * a 16 KiB stretch of them: 256 cost some 2-3 us a sample on 3.12 (1024 cost 8-19 us, for
 * stacks that userspace places without the shim all the same, only less exactly).
 */
#define PBP_CUT_SHIM_SEARCH_FRAMES 256
/* A data-stack chunk's used part beyond this is not believed (CPython's are 16 KiB, or one frame's size). */
#define PBP_DATA_STACK_MAX (1ull << 26)
/* Frames pbp_fast_frames takes at most per call. */
#ifndef PBP_FAST_FRAMES
#define PBP_FAST_FRAMES 8
#endif

struct pbp_frame_walk_ctx {
	const struct py_proc_config *config;
	struct pbp_cpu_scratch *scratch;
	struct pbp_cpu_window *window;
	struct pbp_hot_codes *hot;  /* NULL: no fast path (frames that are not in a data stack) */
	struct task_struct *task;  /* the sampled thread, NULL: the current task (pbp_read_target) */
};

static __always_inline int pbp_read_window(struct pbp_frame_walk_ctx *ctx, __u64 start, __u64 len)
{
	if (len == 0 || len > PBP_WINDOW_BYTES + PBP_FRAME_MAX_READ)
		return -1;
	if (pbp_read_target(ctx->window->bytes, len, start, ctx->task) != 0)
		return -1;
	ctx->scratch->walk.window_start = start;
	ctx->scratch->walk.window_len = len;
	return 0;
}

/* Whether [addr, addr + size) lies in [lo, hi). */
static __always_inline bool pbp_inside(__u64 addr, __u32 size, __u64 lo, __u64 hi)
{
	return addr >= lo && addr + size <= hi && addr + size > addr;
}

/* The used part of the chunk before the walk's current one ([prev_lo, prev_hi), prev_hi 0 if
 * there is none or it cannot be read): two small reads, once per chunk and sample. */
static __always_inline void pbp_find_previous_chunk(struct pbp_frame_walk_ctx *ctx)
{
	struct pbp_frame_walk *walk = &ctx->scratch->walk;
	__u64 previous = 0, top_words = 0;

	walk->prev_lo = 0;
	walk->prev_hi = 1; /* looked up: nothing matches [0, 1) */
	if (pbp_read_target(&previous, sizeof(previous), walk->stack_lo + PY_STACK_CHUNK_PREVIOUS, ctx->task) != 0 ||
	    previous == 0 ||
	    pbp_read_target(&top_words, sizeof(top_words), previous + PY_STACK_CHUNK_TOP, ctx->task) != 0 ||
	    top_words > PBP_DATA_STACK_MAX / sizeof(__u64))
		return;
	walk->prev_lo = previous;
	walk->prev_hi = previous + PY_STACK_CHUNK_DATA + top_words * sizeof(__u64);
}

/* 3.11+ with the data stack's bounds known: a window of the chunk that holds the frame at addr
 * (the current chunk or, as a deep walk goes on, the one before it), else the frame alone. */
static __always_inline int pbp_load_stack_window(struct pbp_frame_walk_ctx *ctx, __u64 addr, __u32 size)
{
	struct pbp_frame_walk *walk = &ctx->scratch->walk;
	__u64 end = addr + size, start;

	if (!pbp_inside(addr, size, walk->stack_lo, walk->stack_hi)) {
		if (walk->prev_hi == 0)
			pbp_find_previous_chunk(ctx);
		if (!pbp_inside(addr, size, walk->prev_lo, walk->prev_hi))
			return pbp_read_window(ctx, addr, size);
		walk->stack_lo = walk->prev_lo;
		walk->stack_hi = walk->prev_hi;
		walk->prev_hi = 0;
	}
	start = end - walk->stack_lo > PBP_WINDOW_BYTES ? end - PBP_WINDOW_BYTES : walk->stack_lo;
	return pbp_read_window(ctx, start, end - start);
}

/* Copy target memory so that the frame at addr (size bytes) is inside the window. */
static __always_inline int pbp_load_window(struct pbp_frame_walk_ctx *ctx, __u64 addr, __u32 size)
{
	__u64 end = addr + size;
	__u64 page_start = addr & ~PBP_PAGE_MASK;

	if (ctx->config->off.frame_owner == PY_OFF_NONE)
		return pbp_read_window(ctx, addr, size);
	if (ctx->scratch->walk.stack_hi != 0 && pbp_load_stack_window(ctx, addr, size) == 0)
		return 0;
	/* Where the data stack is not known (or its copy failed): a window that may run off
	 * the chunk's edge, then smaller ones. */
	if (ctx->scratch->walk.window_len != 0 && end > PBP_WINDOW_BYTES &&
	    pbp_read_window(ctx, end - PBP_WINDOW_BYTES, PBP_WINDOW_BYTES) == 0)
		return 0;
	if (end > PBP_WINDOW_FIRST_BYTES &&
	    pbp_read_window(ctx, end - PBP_WINDOW_FIRST_BYTES, PBP_WINDOW_FIRST_BYTES) == 0)
		return 0;
	/* The window crossed into an unmapped page (a chunk's edge): the
	 * frame's own page is mapped, so copy from its start. */
	return pbp_read_window(ctx, page_start, end - page_start);
}

static __always_inline __u32 pbp_min_u32(__u32 a, __u32 b)
{
	return a < b ? a : b;
}

static __always_inline __u32 pbp_max_u32(__u32 a, __u32 b)
{
	return a < b ? b : a;
}

/* A str's identity (py_string_identity: its length, hash and first bytes, which unlike its
 * address are not reused by another string), copied into buf. */
static __always_inline int pbp_string_identity(const struct py_offsets *off, __u64 string_addr, __u8 *buf,
					       __u64 *identity, struct task_struct *task)
{
	__u32 span = py_string_span(off);

	if (span == 0 || span > PY_STRING_SPAN_MAX)
		return -1;
	/* The bound the verifier sees (clang tests a copy of span): the buffer has this room. */
	_Static_assert(2 * PY_STRING_SPAN_MAX <= PBP_CODE_SPAN_MAX + 8, "code_buf holds a string's span");
	barrier_var(span);
	span &= 2 * PY_STRING_SPAN_MAX - 1;
	if (pbp_read_target(buf, span, string_addr + py_string_span_low(off), task) != 0)
		return -1;
	*identity = py_string_identity(off, buf);
	return 0;
}

/* The set of verified_code where a code object at code_addr of the sampled process would be (by
 * address alone: the lookup without a read does not know its co_version). */
static __always_inline struct pbp_verified_code_set *pbp_verified_code_set_of(__u64 code_addr, __u32 tgid)
{
	__u64 mixed = (code_addr ^ ((__u64)tgid << 40)) * 0x9e3779b97f4a7c15ull;
	__u32 index = (__u32)(mixed >> 48) & (PBP_VERIFIED_CODE_SETS - 1);

	return bpf_map_lookup_elem(&verified_code, &index);
}

/* The entry of the code object at code_addr in this image: with a version (read from the object),
 * the one of that version; with version 0, the one confirmed at this stamp (nonzero: the
 * code-object counter has not moved since). NULL if there is none. */
static __always_inline struct pbp_verified_code *pbp_verified_way(struct pbp_verified_code_set *set,
								  __u64 code_addr, __u32 version, __u32 stamp,
								  const struct pbp_record *rec, __u32 generation)
{
	for (__u32 i = 0; i < PBP_VERIFIED_CODE_WAYS; i++) {
		struct pbp_verified_code *way = &set->way[i];

		if (way->code_addr != code_addr || way->tgid != rec->pid || way->interp_id != rec->interp_id ||
		    way->generation != generation)
			continue;
		if (version != 0 ? way->version == version : (stamp != 0 && way->stamp == stamp))
			return way;
	}
	return NULL;
}

/* The checksum of the code object at code_addr without reading it, where its entry was confirmed
 * at this sample's stamp (no code object was made since, so none took its address); else -1. */
static __always_inline long pbp_trusted_checksum(struct pbp_cpu_scratch *scratch, __u64 code_addr)
{
	__u32 stamp = scratch->walk.code_stamp;
	struct pbp_verified_code_set *set;
	struct pbp_verified_code *way;

	if (stamp == 0)
		return -1;
	set = pbp_verified_code_set_of(code_addr, scratch->out.rec.pid);
	if (!set)
		return -1;
	way = pbp_verified_way(set, code_addr, 0, stamp, &scratch->out.rec, pbp_code_generation);
	if (!way)
		return -1;
	return way->checksum;
}

static __always_inline void pbp_remember_verified(struct pbp_verified_code_set *set, __u64 code_addr,
						  __u32 version, const struct pbp_record *rec, __u32 generation,
						  __u32 checksum, __u32 stamp)
{
	struct pbp_verified_code *way = &set->way[set->next_way & (PBP_VERIFIED_CODE_WAYS - 1)];

	way->code_addr = code_addr;
	way->version = version;
	way->checksum = checksum;
	way->tgid = rec->pid;
	way->interp_id = rec->interp_id;
	way->generation = generation;
	way->stamp = stamp;
	set->next_way += 1;
}

/* py_code_checksum() of the code object at code_addr (one read of its identity fields, one of
 * each of its strings unless it was verified before: verified_code), or -(enum pbp_error) if it
 * cannot be read. */
static __always_inline long pbp_code_checksum(struct pbp_cpu_scratch *scratch,
					      const struct py_proc_config *config, __u64 code_addr,
					      struct task_struct *task)
{
	const struct py_offsets *off = &config->off;
	struct pbp_frame_walk *walk = &scratch->walk;
	__u32 name_off = py_code_shown_name(off);
	__u32 low = pbp_min_u32(pbp_min_u32(off->code_argcount, off->code_firstlineno),
				pbp_min_u32(off->code_filename, name_off));
	__u32 high = pbp_max_u32(pbp_max_u32(off->code_argcount, off->code_firstlineno),
				 pbp_max_u32(off->code_filename, name_off));
	__u64 span = (__u64)high - low + sizeof(__u64);
	const __u8 *fields = scratch->code_buf;
	__u32 version_off = config->code_version, version = 0, generation = pbp_code_generation;
	struct pbp_verified_code_set *verified = NULL;
	struct pbp_verified_code *way;
	__s32 argcount, firstlineno;
	__u64 filename_addr, name_addr, filename_identity, name_identity;
	long checksum;

	scratch->note_read = 0;
	/* Userspace refuses layouts where this does not hold (frame_layout_fits). */
	if (span > PBP_CODE_SPAN_MAX)
		return -PBP_ERR_LAYOUT;
	if (pbp_read_target(scratch->code_buf, span, code_addr + low, task) != 0)
		return -PBP_ERR_CODE_OBJECT;
	if (version_off != PY_OFF_NONE && version_off >= low && (__u64)version_off + sizeof(__u32) <= low + span)
		version = *(const __u32 *)(fields + ((version_off - low) & (PBP_CODE_SPAN_MAX - 1)));
	if (version != 0) {
		verified = pbp_verified_code_set_of(code_addr, scratch->out.rec.pid);
		way = verified ? pbp_verified_way(verified, code_addr, version, 0, &scratch->out.rec, generation) : NULL;
		if (way) {
			/* Confirmed after this sample's stamp was read: trusted while it stands. */
			way->stamp = walk->code_stamp;
			return way->checksum;
		}
	}
	argcount = *(const __s32 *)(fields + ((off->code_argcount - low) & (PBP_CODE_SPAN_MAX - 1)));
	firstlineno = *(const __s32 *)(fields + ((off->code_firstlineno - low) & (PBP_CODE_SPAN_MAX - 1)));
	filename_addr = *(const __u64 *)(fields + ((off->code_filename - low) & (PBP_CODE_SPAN_MAX - 1)));
	name_addr = *(const __u64 *)(fields + ((name_off - low) & (PBP_CODE_SPAN_MAX - 1)));
	/* The frames of one module share its file name: one read for a run of them. */
	if (filename_addr == walk->last_filename_addr) {
		filename_identity = walk->last_filename_identity;
	} else {
		if (pbp_string_identity(off, filename_addr, scratch->code_buf, &filename_identity, task) != 0)
			return -PBP_ERR_CODE_OBJECT;
		walk->last_filename_addr = filename_addr;
		walk->last_filename_identity = filename_identity;
	}
	if (pbp_string_identity(off, name_addr, scratch->code_buf, &name_identity, task) != 0)
		return -PBP_ERR_CODE_OBJECT;
	checksum = py_code_checksum(firstlineno, argcount, filename_addr, name_addr, filename_identity, name_identity);
	scratch->note.filename_addr = filename_addr;
	scratch->note.name_addr = name_addr;
	scratch->note.filename_identity = filename_identity;
	scratch->note.name_identity = name_identity;
	scratch->note.firstlineno = firstlineno;
	scratch->note.argcount = argcount;
	scratch->note_read = 1;
	if (verified)
		pbp_remember_verified(verified, code_addr, version, &scratch->out.rec, generation, (__u32)checksum,
				      walk->code_stamp);
	return checksum;
}

/* Marks the walk when this CPU has not sent the code object before; true then. */
static __always_inline bool pbp_note_code(struct pbp_frame_walk *walk, __u64 code_addr, __u32 checksum)
{
	__u64 identity = code_addr ^ ((__u64)checksum << 32);
	__u64 mixed = identity * 0x9e3779b97f4a7c15ull;
	__u32 index = (__u32)(mixed >> 52) & (PBP_SEEN_CODE_SETS - 1);
	struct pbp_seen_code_set *set = bpf_map_lookup_elem(&seen_code, &index);

	if (!set)
		return false;
	if (set->identity[0] == identity || set->identity[1] == identity || set->identity[2] == identity ||
	    set->identity[3] == identity)
		return false;
	set->identity[set->next_way & (PBP_SEEN_CODE_WAYS - 1)] = identity;
	set->next_way += 1;
	walk->new_code = 1;
	return true;
}

/*
 * The length of the string at string_addr, with its text's last (tail) or first bytes copied to
 * out, at most cap of them; -1 where its text is not inline ASCII (a 3.x str of other characters:
 * userspace reads it at its address) or cannot be read.
 */
static __always_inline long pbp_note_text(const struct py_offsets *off, __u64 string_addr, __u8 *span_buf,
					  __u8 *out, __u32 cap, bool tail, struct task_struct *task)
{
	__u32 span = py_string_span(off), low = py_string_span_low(off), data, count;
	__u64 length, start = 0;

	if (span == 0 || span > PY_STRING_SPAN_MAX)
		return -1;
	barrier_var(span);
	span &= 2 * PY_STRING_SPAN_MAX - 1;
	if (pbp_read_target(span_buf, span, string_addr + low, task) != 0)
		return -1;
	length = py_span_u64(span_buf, 0);
	if (off->string_kind == PY_STRING_UNICODE) {
		__u64 state = py_span_u64(span_buf, off->unicode_state - low);

		if (!(state & PY_UNICODE_ASCII_BIT) || !(state & PY_UNICODE_COMPACT_BIT))
			return -1;
		data = off->unicode_ascii_data;
	} else {
		data = off->bytes_data;
	}
	if (length > 0x7fffffff)
		return -1;
	count = length < cap ? (__u32)length : cap;
	if (tail)
		start = length - count;
	barrier_var(count);
	if (count > cap)
		return -1;
	if (count != 0 && pbp_read_target(out, count, string_addr + data + start, task) != 0)
		return -1;
	return (long)length;
}

/* Saves what pbp_code_checksum just read of a code object new to this CPU, with its strings' text
 * (code_notes), for userspace to name it by if it is freed before it is read. */
static __always_inline void pbp_save_code_note(struct pbp_cpu_scratch *scratch, const struct py_offsets *off,
					       __u64 code_addr, __u32 checksum, struct task_struct *task)
{
	struct pbp_code_note *note = &scratch->note;
	long length;

	if (!scratch->note_read || scratch->notes_saved >= PBP_CODE_NOTES_PER_WALK)
		return;
	scratch->notes_saved++;
	note->flags = 0;
	note->reserved = 0;
	length = pbp_note_text(off, note->filename_addr, scratch->code_buf, note->file_tail, PBP_NOTE_FILE_BYTES,
			       true, task);
	if (length >= 0) {
		note->filename_len = (__u32)length;
		note->flags |= PBP_NOTE_FILE_TEXT;
	}
	length = pbp_note_text(off, note->name_addr, scratch->code_buf, note->name_head, PBP_NOTE_NAME_BYTES, false,
			       task);
	if (length >= 0) {
		note->name_len = (__u32)length;
		note->flags |= PBP_NOTE_NAME_TEXT;
	}
	scratch->note_key.code_addr = code_addr;
	scratch->note_key.tgid = scratch->out.rec.pid;
	scratch->note_key.checksum = checksum;
	bpf_map_update_elem(&code_notes, &scratch->note_key, note, BPF_ANY);
}

/* The set of hot_codes where the code object at code_addr would be. */
static __always_inline __u32 pbp_hot_set(__u64 code_addr)
{
	return (__u32)((code_addr * 0x9e3779b97f4a7c15ull) >> 40) & (PBP_HOT_CODE_SETS - 1);
}

/* The checksum hot_codes holds for the code object at code_addr in this epoch, else -1. */
static __always_inline long pbp_hot_checksum(const struct pbp_hot_codes *hot, __u64 code_addr, __u32 epoch)
{
	const struct pbp_hot_code_set *set = &hot->set[pbp_hot_set(code_addr) & (PBP_HOT_CODE_SETS - 1)];

	for (__u32 i = 0; i < PBP_HOT_CODE_WAYS; i++) {
		if (set->way[i].code_addr == code_addr && set->way[i].epoch == epoch)
			return set->way[i].checksum;
	}
	return -1;
}

/* Keeps a checksum settled in this epoch: in a way of its set that no code object of this epoch
 * holds, else in the last way. The others keep theirs: where more code objects of one stack
 * meet in a set than it has ways, the first ones stay and only the last way changes hands
 * (replacing in turn would miss every one of them on every walk of that stack). */
static __always_inline void pbp_hot_remember(struct pbp_hot_codes *hot, __u64 code_addr, __u32 epoch,
					     __u32 checksum)
{
	struct pbp_hot_code_set *set = &hot->set[pbp_hot_set(code_addr) & (PBP_HOT_CODE_SETS - 1)];
	struct pbp_hot_code *way = &set->way[PBP_HOT_CODE_WAYS - 1];

	for (__u32 i = 0; i < PBP_HOT_CODE_WAYS - 1; i++) {
		if (set->way[i].epoch != epoch || set->way[i].code_addr == code_addr) {
			way = &set->way[i];
			break;
		}
	}
	way->code_addr = code_addr;
	way->checksum = checksum;
	way->epoch = epoch;
}

static __always_inline __u32 pbp_instr_offset(const struct py_offsets *off, const __u8 *frame, __u64 code_addr)
{
	const __u8 *lasti = frame + (off->frame_lasti & (PBP_FRAME_MAX_READ - 1));

	if (off->lasti_kind == PY_LASTI_PTR)
		return (__u32)(*(const __u64 *)lasti - code_addr);
	return (__u32)*(const __s32 *)lasti;
}

/* Below a thread's stack pointer, this much of its C stack is taken for that of returned calls. */
#define PBP_DEAD_STACK_SPAN (64u << 10)

/*
 * The thread's user stack pointer where it is exact, 0 where not: the current task's (the
 * registers saved as the interrupt or the system call entered the kernel), or those of a task
 * that is not on a CPU. A running task's saved registers are from its last entry, long gone.
 */
static __always_inline __u64 pbp_exact_user_sp(struct task_struct *task)
{
	struct task_struct *thread = task ? task : bpf_get_current_task_btf();
	struct pt_regs *regs;

	if ((task && task->on_cpu) || !thread->mm)
		return 0;
	regs = (struct pt_regs *)bpf_task_pt_regs(thread);
	if (!regs || (regs->cs & 3) != 3)
		return 0;
	return regs->sp;
}

/*
 * Whether the link from the leaf frame to its caller (next) is a leftover. 3.12's CALL makes a
 * new frame current a few instructions before it writes the frame's link (the compiler moved
 * the store; tests/e2e/test_code_identity.c met it), so a frame that has not started yet may
 * still hold the link its slot held before: often the shim of a C call that has returned since,
 * in the C stack below the stack pointer, where no live frame is. Only a leaf not started
 * is asked (a frame that ran was linked before it did), so the stack pointer is read only
 * then: about one walk in thousands.
 */
static __always_inline bool pbp_leaf_link_stale(const struct py_offsets *off, struct task_struct *task,
						__u32 instr_offset, __u64 next)
{
	__u64 user_sp;

	if (off->frame_owner == PY_OFF_NONE || off->lasti_kind != PY_LASTI_PTR ||
	    instr_offset > off->code_code_adaptive)
		return false;
	user_sp = pbp_exact_user_sp(task);
	return user_sp != 0 && next < user_sp && user_sp - next <= PBP_DEAD_STACK_SPAN;
}

/*
 * 3.11+: frames taken as a full step (pbp_frame_step) would take them, as long as they are
 * plain ones: inside the window copied already, run by the thread (no shim, no coroutine
 * whose task is looked for), their code object's identity the previous frame's or settled in
 * this epoch (hot_codes). The first frame that is not stops it, for the full step to take.
 * Several frames a call: a bpf_loop iteration costs more than such a frame. Returns whether
 * it stopped only because it took its PBP_FAST_FRAMES: the next call goes on where it left
 * off, with no full step between (one costs several times a fast frame, its identity a
 * lookup in verified_code where the frame's own would be in hot_codes).
 */
static __always_inline bool pbp_fast_frames(struct pbp_frame_walk_ctx *ctx)
{
	const struct py_offsets *off = &ctx->config->off;
	struct pbp_cpu_scratch *scratch = ctx->scratch;
	struct pbp_frame_walk *walk = &scratch->walk;
	const struct pbp_hot_codes *hot = ctx->hot;
	const __u8 *window = ctx->window->bytes;
	__u64 addr = walk->frame_addr, start = walk->window_start, len = walk->window_len;
	__u64 last_code_addr = walk->last_code_addr, code_addr;
	__u32 last_checksum = walk->last_checksum, count = walk->frame_count, epoch = walk->hot_epoch;
	__u32 size = off->frame_read_size;
	__u8 generator_owned = (ctx->config->flags & PY_PROC_CORO_FROM_FRAMES) ? PY_FRAME_OWNED_BY_GENERATOR : 0xff;
	const struct pbp_py_frame *prev;
	struct pbp_py_frame *out;
	const __u8 *frame;
	__u32 instr_offset;
	__u8 owner;
	long checksum;
	bool more = false;

	if (size == 0 || size > PBP_FRAME_MAX_READ)
		return false;
	for (__u32 i = 0; i < PBP_FAST_FRAMES; i++) {
		if (addr < start || addr - start > len || addr - start + size > len ||
		    addr - start > PBP_WINDOW_BYTES + PBP_FRAME_MAX_READ || count >= PBP_MAX_PY_FRAMES)
			break;
		frame = window + (addr - start);
		owner = frame[off->frame_owner & (PBP_FRAME_MAX_READ - 1)];
		if (owner >= off->owner_boundary || owner == generator_owned)
			break;
		code_addr = *(const __u64 *)(frame + (off->frame_code & (PBP_FRAME_MAX_READ - 1))) & off->code_ptr_mask;
		if (code_addr == 0)
			break;
		if (code_addr != last_code_addr) {
			/* The previous record's frame at this index, where it ran the same code
			 * object: a stack sampled again is mostly the one before it. The barrier
			 * keeps the mask, as below. */
			barrier_var(count);
			prev = &scratch->out.py[count & (PBP_MAX_PY_FRAMES - 1)];
			if (count < walk->prev_kept && prev->code_addr == code_addr)
				checksum = prev->checksum;
			else if (epoch == 0 || (checksum = pbp_hot_checksum(hot, code_addr, epoch)) < 0)
				break;
			last_code_addr = code_addr;
			last_checksum = (__u32)checksum;
		}
		instr_offset = pbp_instr_offset(off, frame, code_addr);
		/* A leaf not started yet: the full step checks its link (pbp_leaf_link_stale). */
		if (count == 0 && instr_offset <= off->code_code_adaptive)
			break;
		if (off->frame_is_entry != PY_OFF_NONE && frame[off->frame_is_entry & (PBP_FRAME_MAX_READ - 1)])
			instr_offset |= PBP_PY_FRAME_ENTRY;
		/* Keeps the mask that clang would drop after the test above, for the verifier. */
		barrier_var(count);
		out = &scratch->out.py[count & (PBP_MAX_PY_FRAMES - 1)];
		out->code_addr = code_addr;
		out->instr_offset = instr_offset;
		out->checksum = last_checksum;
		count++;
		addr = *(const __u64 *)(frame + (off->frame_previous & (PBP_FRAME_MAX_READ - 1)));
		if (addr == 0)
			break;
		more = i == PBP_FAST_FRAMES - 1;
	}
	walk->frame_addr = addr;
	walk->frame_count = count;
	walk->last_code_addr = last_code_addr;
	walk->last_checksum = last_checksum;
	return more;
}

static long pbp_frame_step(__u32 index, void *opaque)
{
	struct pbp_frame_walk_ctx *ctx = opaque;
	const struct py_offsets *off = &ctx->config->off;
	struct pbp_cpu_scratch *scratch = ctx->scratch;
	struct pbp_frame_walk *walk = &scratch->walk;
	__u64 addr = walk->frame_addr;
	__u32 size = off->frame_read_size;
	/* Up to 3.10 a window is one frame object; from 3.11 a stretch of the data stack. */
	__u32 site = off->frame_owner == PY_OFF_NONE ? PBP_ERR_FRAME_OBJECT : PBP_ERR_DATA_STACK;
	struct pbp_py_frame *out;
	__u64 rel, code_addr;
	const __u8 *frame;
	__u32 count, instr_offset;
	long checksum;

	(void)index;
	if (ctx->hot) {
		if (pbp_fast_frames(ctx))
			return 0;
		addr = walk->frame_addr;
	}
	if (addr == 0)
		return 1;
	if (size == 0 || size > PBP_FRAME_MAX_READ) {
		site = PBP_ERR_LAYOUT;
		goto fault;
	}
	if (addr < walk->window_start || addr + size > walk->window_start + walk->window_len) {
		if (pbp_load_window(ctx, addr, size) != 0)
			goto fault;
	}
	rel = addr - walk->window_start;
	if (rel > PBP_WINDOW_BYTES + PBP_FRAME_MAX_READ)
		goto fault;
	frame = ctx->window->bytes + rel;
	walk->frame_addr = *(const __u64 *)(frame + (off->frame_previous & (PBP_FRAME_MAX_READ - 1)));

	if (off->frame_owner != PY_OFF_NONE &&
	    frame[off->frame_owner & (PBP_FRAME_MAX_READ - 1)] >= off->owner_boundary) {
		/* 3.12+: the shim below an activation of the evaluation function's
		 * first frame: the frame written last was that activation's outermost
		 * (unless frames were passed since, past the cut).
		 * The shim lives in that activation's C frame: its address tells the
		 * native walk which native frame is the activation. */
		count = walk->frame_count;
		if (count != 0 && count <= PBP_MAX_PY_FRAMES && walk->frames_past_cut == 0)
			scratch->out.py[(count - 1) & (PBP_MAX_PY_FRAMES - 1)].instr_offset |= PBP_PY_FRAME_ENTRY;
		if (walk->shim_count < PBP_MAX_SHIMS)
			scratch->shim_addr[walk->shim_count++ & (PBP_MAX_SHIMS - 1)] = addr;
		/* Past the cut, the first shim is all that was looked for. */
		return count >= PBP_MAX_PY_FRAMES;
	}
	code_addr = *(const __u64 *)(frame + (off->frame_code & (PBP_FRAME_MAX_READ - 1))) & off->code_ptr_mask;
	if (code_addr == 0)
		return 0;

	count = walk->frame_count;
	if (count >= PBP_MAX_PY_FRAMES) {
		walk->flags |= PBP_REC_PY_TRUNCATED;
		/* Only 3.12+ has shims (3.11 marks its entry frames itself). */
		if (off->frame_owner == PY_OFF_NONE || off->frame_is_entry != PY_OFF_NONE ||
		    walk->frames_past_cut >= PBP_CUT_SHIM_SEARCH_FRAMES)
			return 1;
		walk->frames_past_cut++;
		return 0;
	}
	if (code_addr == walk->last_code_addr) {
		checksum = walk->last_checksum;
	} else if ((checksum = pbp_trusted_checksum(scratch, code_addr)) >= 0) {
		/* Its entry was made when it was read and noted on this CPU: no new wakeup is owed. */
		walk->last_code_addr = code_addr;
		walk->last_checksum = (__u32)checksum;
		if (ctx->hot && walk->hot_epoch != 0)
			pbp_hot_remember(ctx->hot, code_addr, walk->hot_epoch, (__u32)checksum);
	} else {
		checksum = pbp_code_checksum(scratch, ctx->config, code_addr, ctx->task);
		if (checksum < 0) {
			site = (__u32)-checksum;
			goto fault;
		}
		walk->last_code_addr = code_addr;
		walk->last_checksum = (__u32)checksum;
		if (pbp_note_code(walk, code_addr, (__u32)checksum))
			pbp_save_code_note(scratch, off, code_addr, (__u32)checksum, ctx->task);
		if (ctx->hot && walk->hot_epoch != 0)
			pbp_hot_remember(ctx->hot, code_addr, walk->hot_epoch, (__u32)checksum);
	}
	/* 3.11+: the walk goes root-ward, so the last generator-owned frame is the outermost: the
	 * coroutine a task steps (3.11-3.13 find the task by it) */
	if (ctx->config->task_name && off->frame_owner != PY_OFF_NONE &&
	    frame[off->frame_owner & (PBP_FRAME_MAX_READ - 1)] == PY_FRAME_OWNED_BY_GENERATOR) {
		scratch->task_coro_code = code_addr;
		if (ctx->config->flags & PY_PROC_CORO_FROM_FRAMES)
			scratch->out.rec.running_task = addr - ctx->config->gen_iframe;
	}
	instr_offset = pbp_instr_offset(off, frame, code_addr);
	out = &scratch->out.py[count & (PBP_MAX_PY_FRAMES - 1)];
	out->code_addr = code_addr;
	out->instr_offset = instr_offset;
	/* 3.11: the frame says itself whether it is its activation's outermost. */
	if (off->frame_is_entry != PY_OFF_NONE && frame[off->frame_is_entry & (PBP_FRAME_MAX_READ - 1)])
		out->instr_offset |= PBP_PY_FRAME_ENTRY;
	out->checksum = (__u32)checksum;
	walk->frame_count = count + 1;
	/* The leaf is kept; what its leftover link leads to would be another call's frames. */
	if (count == 0 && pbp_leaf_link_stale(off, ctx->task, instr_offset, walk->frame_addr)) {
		site = PBP_ERR_STALE_LINK;
		goto fault;
	}
	return 0;

fault:
	/* Past the cut the kept frames are whole: the search for a shim just ends. */
	if (walk->frame_count >= PBP_MAX_PY_FRAMES)
		return 1;
	walk->flags |= PBP_REC_READ_FAULT;
	pbp_read_failed(&scratch->out.rec, site);
	return 1;
}

static __always_inline __u64 pbp_current_frame(const struct py_proc_config *config, struct pbp_record *rec,
					       __u64 tstate_addr, struct task_struct *task)
{
	__u64 link = pbp_read_u64(rec, tstate_addr + config->off.tstate_frame, PBP_ERR_TSTATE_FRAME, task);

	if (config->off.frame_link == PY_FRAME_LINK_CFRAME && link != 0)
		return pbp_read_u64(rec, link + config->off.cframe_current_frame, PBP_ERR_CFRAME_FRAME, task);
	return link;
}

/* 3.11+: the newest data-stack chunk and its top, the bounds of the window copies; left unknown
 * (stack_hi 0) where the version has none or they make no sense. */
static __always_inline void pbp_find_data_stack(const struct py_offsets *off, struct pbp_frame_walk *walk,
						__u64 tstate_addr, struct task_struct *task)
{
	walk->stack_lo = 0;
	walk->stack_hi = 0;
	walk->prev_lo = 0;
	walk->prev_hi = 0;
	if (off->tstate_datastack_chunk == PY_OFF_NONE ||
	    off->tstate_datastack_top != off->tstate_datastack_chunk + sizeof(__u64))
		return;
	/* The chunk and its top side by side, read straight into stack_lo and stack_hi (the
	 * stack has no room to spare for a copy: wall mode's reads nest three calls deep). */
	if (pbp_read_target(&walk->stack_lo, 2 * sizeof(__u64), tstate_addr + off->tstate_datastack_chunk,
			    task) == 0 &&
	    walk->stack_lo != 0 && walk->stack_hi >= walk->stack_lo &&
	    walk->stack_hi - walk->stack_lo <= PBP_DATA_STACK_MAX)
		return;
	walk->stack_lo = 0;
	walk->stack_hi = 0;
}

/* The main interpreter's code-object counter now, 0 where it is not known (or the thread is in
 * another interpreter, whose code objects it does not count). A failed read only costs reads. */
static __always_inline __u32 pbp_read_code_stamp(const struct py_proc_config *config, const struct pbp_record *rec,
						 struct task_struct *task)
{
	__u32 stamp = 0;

	if (config->code_stamp_addr == 0 || rec->interp_id != 0 ||
	    pbp_read_target(&stamp, sizeof(stamp), config->code_stamp_addr, task) != 0)
		return 0;
	return stamp;
}

static long pbp_hot_clear_step(__u32 index, void *opaque)
{
	struct pbp_hot_codes *hot = *(struct pbp_hot_codes **)opaque;

	hot->set[(index / PBP_HOT_CODE_WAYS) & (PBP_HOT_CODE_SETS - 1)].way[index & (PBP_HOT_CODE_WAYS - 1)].epoch = 0;
	return 0;
}

/* The epoch of hot_codes this walk is in: the current one while the process, interpreter,
 * image and code-object counter are the last walk's on this CPU, else a new one. 0 (not used)
 * without a counter. */
static __always_inline __u32 pbp_hot_epoch(struct pbp_cpu_scratch *scratch, struct pbp_hot_codes *hot)
{
	struct pbp_hot_epoch *current = &scratch->hot;
	const struct pbp_record *rec = &scratch->out.rec;
	__u32 stamp = scratch->walk.code_stamp, generation = pbp_code_generation;

	if (stamp == 0)
		return 0;
	if (current->epoch != 0 && current->tgid == rec->pid && current->interp_id == rec->interp_id &&
	    current->generation == generation && current->stamp == stamp)
		return current->epoch;
	current->epoch += 1;
	if (current->epoch == 0) {
		/* Numbers are reused: no slot may keep an old epoch's. */
		bpf_loop(PBP_HOT_CODES, pbp_hot_clear_step, &hot, 0);
		current->epoch = 1;
	}
	current->tgid = rec->pid;
	current->interp_id = rec->interp_id;
	current->generation = generation;
	current->stamp = stamp;
	return current->epoch;
}

/* Fills scratch->out.py from the thread's current frame; returns frames written, flags in walk.
 * task: the sampled thread, NULL for the current task. */
static __always_inline __u32 pbp_walk_frames(const struct py_proc_config *config,
					     struct pbp_cpu_scratch *scratch, __u64 tstate_addr,
					     struct task_struct *task)
{
	__u32 zero = 0;
	struct pbp_cpu_window *window = bpf_map_lookup_elem(&cpu_window, &zero);
	struct pbp_frame_walk_ctx ctx = { .config = config, .scratch = scratch, .task = task };
	struct pbp_frame_walk *walk = &scratch->walk;
	__u32 prev_kept;

	walk->frame_addr = pbp_current_frame(config, &scratch->out.rec, tstate_addr, task);
	walk->window_start = 0;
	walk->window_len = 0;
	walk->last_code_addr = 0;
	walk->last_checksum = 0;
	walk->last_filename_addr = 0;
	walk->last_filename_identity = 0;
	walk->frame_count = 0;
	walk->flags = 0;
	walk->new_code = 0;
	scratch->notes_saved = 0;
	walk->shim_count = 0;
	walk->frames_past_cut = 0;
	/* out.py is this walk's from here: the previous walk's frames count only for the test
	 * below, and only those this walk has not written over by its end. */
	walk->prev_kept = 0;
	prev_kept = scratch->hot.kept_frames;
	scratch->hot.kept_frames = 0;
	if (walk->frame_addr == 0) {
		walk->flags = PBP_REC_NO_FRAME;
		return 0;
	}
	if (!window)
		return 0;
	pbp_find_data_stack(&config->off, walk, tstate_addr, task);
	/* Read before any code object is: an object made after this read moves the counter on. */
	walk->code_stamp = pbp_read_code_stamp(config, &scratch->out.rec, task);
	ctx.window = window;
	walk->hot_epoch = 0;
	if (config->off.frame_owner != PY_OFF_NONE) {
		ctx.hot = bpf_map_lookup_elem(&hot_codes, &zero);
		if (ctx.hot)
			walk->hot_epoch = pbp_hot_epoch(scratch, ctx.hot);
	}
	/* Their identities hold in the epoch they were settled in, and only there (another
	 * process, image or code object made since: another epoch). */
	if (walk->hot_epoch != 0 && walk->hot_epoch == scratch->hot.kept_epoch)
		walk->prev_kept = prev_kept;
	bpf_loop(PBP_MAX_PY_FRAMES + PBP_MAX_SKIPPED_FRAMES + PBP_CUT_SHIM_SEARCH_FRAMES, pbp_frame_step, &ctx, 0);
	if (walk->frame_addr != 0 && !(walk->flags & PBP_REC_READ_FAULT))
		walk->flags |= PBP_REC_PY_TRUNCATED;
	/* Every frame written has its identity from this walk, a fault's frames before it too. */
	scratch->hot.kept_epoch = walk->hot_epoch;
	scratch->hot.kept_frames = walk->hot_epoch != 0 ? walk->frame_count : 0;
	return walk->frame_count;
}

#endif
