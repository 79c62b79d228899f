/* SPDX-License-Identifier: MIT */
/*
 * Walking a thread's native (user-space C) stack without frame pointers,
 * leaf first, from the compact unwind tables userspace loads per file
 * (include/unwind_table.h gives the row semantics and the stop causes).
 *
 * One bpf_loop iteration per frame: find the pc's mapping, take the pc's row from
 * this CPU's row cache or else bisect the rows of the pc's page of its file (at most
 * UNWIND_SEARCH_STEPS steps), apply the row, take the return address (and the saved rbp)
 * from a copy of the target's stack. The stack is copied in windows of
 * PBP_NATIVE_WINDOW_BYTES, each holding several frames: a copy costs about what a word's
 * read costs, and a frame that saves rbp below the return address took two reads before
 * (32 Python + 22 native frames on 3.12: 4.4 -> 3.4 us per sample). The registers and
 * the progress live in map memory (pbp_native_walk), so the verifier sees
 * them as unknown and checks the loop body once; every bisection bound
 * comes from a map value for the same reason (a constant bound would be
 * explored path by path).
 */
#ifndef PYBPFPROF_BPF_NATIVE_WALK_H
#define PYBPFPROF_BPF_NATIVE_WALK_H

#include "maps.h"

/* Halvings that bring any mapping count <= UNWIND_MAX_MAPPINGS to one. */
#define PBP_MAPPING_SEARCH_STEPS 9
_Static_assert((1u << (PBP_MAPPING_SEARCH_STEPS - 1)) >= UNWIND_MAX_MAPPINGS, "enough mapping bisection steps");
_Static_assert((1u << (UNWIND_SEARCH_STEPS - 1)) >= UNWIND_TABLE_MAX_ROWS, "enough row bisection steps");

struct pbp_native_walk_ctx {
	const struct unwind_proc *proc;
	struct pbp_cpu_scratch *scratch;
	struct task_struct *task;  /* the walked thread, NULL: the current task (pbp_read_target) */
};

static __always_inline bool pbp_mapping_holds(const struct unwind_mapping *mapping, __u64 pc)
{
	return pc >= mapping->start && pc < mapping->end;
}

/* The index of the mapping holding pc, or -1: the previous frame's first (callers
 * are often in the same file), else bisection over the sorted mappings. Global, as
 * pbp_find_row is, so that the verifier checks it once. */
__noinline int pbp_find_mapping(const struct unwind_proc *proc, struct pbp_native_walk *walk, __u64 pc)
{
	__u32 count, base = 0, len, last;

	if (!proc || !walk)
		return -1;
	count = proc->count;
	last = walk->last_mapping & (UNWIND_MAX_MAPPINGS - 1);

	if (count > UNWIND_MAX_MAPPINGS)
		count = UNWIND_MAX_MAPPINGS;
	if (last < count && pbp_mapping_holds(&proc->mappings[last], pc))
		return last;
	len = count;
	for (int step = 0; step < PBP_MAPPING_SEARCH_STEPS; step++) {
		__u32 half = len >> 1;

		if (len <= 1)
			break;
		if (proc->mappings[(base + half) & (UNWIND_MAX_MAPPINGS - 1)].start <= pc) {
			base += half;
			len -= half;
		} else {
			len = half;
		}
	}
	base &= UNWIND_MAX_MAPPINGS - 1;
	if (count == 0 || !pbp_mapping_holds(&proc->mappings[base], pc))
		return -1;
	walk->last_mapping = base;
	return base;
}

/* The chunk of the rows map that holds the table (include/unwind_table.h), or NULL. */
static __always_inline void *pbp_rows_chunk(const struct unwind_table_ref *ref)
{
	__u32 chunk = ref->chunk;

	return bpf_map_lookup_elem(&unwind_rows, &chunk);
}

/* The slot of the table's page index in chunk that holds entries p & ~1 and p | 1
 * (include/unwind_table.h), or NULL (a key past the chunk's end finds nothing: chunks
 * differ in size). */
static __always_inline const __u32 *pbp_page_slot(void *chunk, const struct unwind_table_ref *ref, __u32 page)
{
	__u32 key = ref->first_row + ref->row_count + page / 2;

	return bpf_map_lookup_elem(chunk, &key);
}

/*
 * Narrows [*base, *base + *len) to the rows of file_pc's page when the table
 * has a page index; a pc past the last page searches the last page (ending in a GAP).
 * An even page's two entries share a slot: one lookup (each is a call, chunks being
 * inner maps of differing sizes).
 */
static __always_inline void pbp_narrow_to_page(void *chunk, const struct unwind_table_ref *ref, __u64 file_pc,
					       __u32 *base, __u32 *len)
{
	const __u32 *slot;
	__u64 page;
	long first, last;

	if (ref->page_count < 2 || file_pc < ref->page_base)
		return;
	page = (file_pc - ref->page_base) >> UNWIND_PAGE_SHIFT;
	if (page >= ref->page_count - 1)
		page = ref->page_count - 2;
	slot = pbp_page_slot(chunk, ref, (__u32)page);
	if (!slot)
		return;
	first = slot[page & 1];
	if (page & 1) {
		slot = pbp_page_slot(chunk, ref, (__u32)page + 1);
		if (!slot)
			return;
		last = slot[0];
	} else {
		last = slot[1];
	}
	if (last < first || (__u64)last >= ref->row_count)
		return;
	*base = ref->first_row + (__u32)first;
	*len = (__u32)(last - first) + 1;
}

/*
 * The last row of the table with row.pc <= file_pc, copied to *found: 0, or -1 (no such row).
 * A global function: the verifier checks it once, on its own, with every argument unknown,
 * instead of every bisection path again at each place and iteration of the native walk.
 */
__noinline int pbp_find_row(const struct unwind_table_ref *ref, __u64 file_pc, struct unwind_row *found)
{
	__u32 base, len, key;
	const struct unwind_row *row;
	void *chunk;

	if (!ref || !found)
		return -1;
	chunk = pbp_rows_chunk(ref);
	if (!chunk)
		return -1;
	base = ref->first_row;
	len = ref->row_count;
	pbp_narrow_to_page(chunk, ref, file_pc, &base, &len);
	for (int step = 0; step < UNWIND_SEARCH_STEPS; step++) {
		__u32 half = len >> 1;

		if (len <= 1)
			break;
		key = base + half;
		row = bpf_map_lookup_elem(chunk, &key);
		if (!row)
			return -1;
		if (row->pc <= file_pc) {
			base += half;
			len -= half;
		} else {
			len = half;
		}
	}
	key = base;
	row = bpf_map_lookup_elem(chunk, &key);
	if (!row || row->pc > file_pc)
		return -1;
	*found = *row;
	return 0;
}

/* The row cache's tag for file_pc in ref's table, 0 where it has none (a table placed without
 * a generation, a pc past 32 bits: rows hold 32-bit pcs). */
static __always_inline __u64 pbp_row_tag(const struct unwind_table_ref *ref, __u64 file_pc)
{
	if (ref->generation == 0 || file_pc > 0xffffffffull)
		return 0;
	return (__u64)ref->generation << 32 | file_pc;
}

static __always_inline struct pbp_row_cache_entry *pbp_row_cache_slot(__u64 tag)
{
	__u32 index = (__u32)((tag * 0x9e3779b97f4a7c15ull) >> 40) & (PBP_ROW_CACHE_ENTRIES - 1);

	return bpf_map_lookup_elem(&row_cache, &index);
}

/* The row of file_pc in ref's table, from this CPU's cache or else the table: 0, or -1 (no row). */
static __always_inline int pbp_row_of(const struct unwind_table_ref *ref, __u64 file_pc, struct unwind_row *found)
{
	__u64 tag = pbp_row_tag(ref, file_pc);
	struct pbp_row_cache_entry *slot = tag ? pbp_row_cache_slot(tag) : NULL;

	if (slot && slot->tag == tag) {
		*found = slot->row;
		return 0;
	}
	if (pbp_find_row(ref, file_pc, found) != 0)
		return -1;
	if (slot) {
		slot->row = *found;
		slot->tag = tag;
	}
	return 0;
}

/*
 * Copies a window of the target's stack starting at addr: PBP_NATIVE_WINDOW_BYTES, or up to the
 * end of addr's page once a full window has failed in this walk (the walk's frames lie in mapped
 * stack, but a window past the outermost frame can run off the top of the main thread's stack:
 * a faulting copy costs more than several small ones, so it is tried once per walk).
 */
static __always_inline int pbp_load_native_window(struct pbp_cpu_scratch *scratch, __u64 addr,
						 struct task_struct *task)
{
	struct pbp_native_walk *walk = &scratch->native;
	__u32 len = PBP_NATIVE_WINDOW_BYTES;

	if (!walk->window_page_bound) {
		if (pbp_read_target(scratch->stack_window, len, addr, task) == 0)
			goto loaded;
		walk->window_page_bound = 1;
	}
	len = PBP_PAGE_MASK + 1 - (__u32)(addr & PBP_PAGE_MASK);
	if (len > PBP_NATIVE_WINDOW_BYTES)
		len = PBP_NATIVE_WINDOW_BYTES;
	if (pbp_read_target(scratch->stack_window, len, addr, task) != 0) {
		walk->window_len = 0;
		return -1;
	}
loaded:
	walk->window_lo = addr;
	walk->window_len = len;
	return 0;
}

/* One word of the target's stack at addr, from the walk's window (copied anew when addr lies
 * outside it): 0, or -1 if it cannot be read. */
static __always_inline int pbp_stack_word(struct pbp_cpu_scratch *scratch, __u64 addr, __u64 *word,
					  struct task_struct *task)
{
	struct pbp_native_walk *walk = &scratch->native;
	__u64 rel = addr - walk->window_lo;

	/* Written so that no sum can wrap: addr is the target's to choose. */
	if (addr < walk->window_lo || rel >= walk->window_len || walk->window_len - rel < sizeof(*word)) {
		if (pbp_load_native_window(scratch, addr, task) != 0 || walk->window_len < sizeof(*word))
			return pbp_read_target(word, sizeof(*word), addr, task) == 0 ? 0 : -1;
		rel = 0;
	}
	*word = *(const __u64 *)(scratch->stack_window + (rel & (PBP_NATIVE_WINDOW_BYTES - 1)));
	return 0;
}

/* Reads the caller's pc (and rbp, if the row saved it) below cfa, the lower address first so
 * that one window holds both. Returns 0 or -1. */
static __always_inline int pbp_read_caller(struct pbp_cpu_scratch *scratch, __u64 cfa, __u32 rbp_offset8,
					   struct task_struct *task)
{
	struct pbp_native_walk *walk = &scratch->native;
	__u64 bp = walk->bp, pc;

	if (rbp_offset8 != 0 && pbp_stack_word(scratch, cfa - 8 * (__u64)rbp_offset8, &bp, task) != 0)
		return -1;
	if (pbp_stack_word(scratch, cfa - 8, &pc, task) != 0)
		return -1;
	walk->bp = bp;
	walk->pc = pc;
	return 0;
}

/*
 * Whether the frame occupying [sp, cfa) of the stack holds the next C-stack shim
 * the Python walk passed (3.12+): then it is an activation of the evaluation
 * function, whatever its name (stripped, or its call site in a .cold part).
 * Shims and frames both go from the leaf towards higher addresses.
 */
static __always_inline void pbp_claim_shim(struct pbp_native_walk *walk, __u64 sp, __u64 cfa)
{
	struct pbp_cpu_scratch *scratch = container_of(walk, struct pbp_cpu_scratch, native);
	__u32 next = walk->next_shim;
	__u64 shim;

	walk->holds_shim = 0;
	if (next >= scratch->walk.shim_count || next >= PBP_MAX_SHIMS)
		return;
	shim = scratch->shim_addr[next & (PBP_MAX_SHIMS - 1)];
	if (shim < sp) {
		/* a shim no walked frame holds (a frame the walk could not see): skip it */
		walk->next_shim = next + 1;
		return;
	}
	if (shim < cfa) {
		walk->holds_shim = 1;
		walk->next_shim = next + 1;
	}
}

/* Unwinds the frame at walk->pc into its caller's registers: PBP_NATIVE_WALKING, or why it cannot. */
static __always_inline __u32 pbp_unwind_frame(const struct unwind_proc *proc, struct pbp_cpu_scratch *scratch,
					      bool is_caller, struct task_struct *task)
{
	struct pbp_native_walk *walk = &scratch->native;
	__u64 pc = walk->pc, sp = walk->sp, file_pc, cfa;
	const struct unwind_mapping *mapping;
	const struct unwind_table_ref *ref;
	struct unwind_row row_copy, *row = &row_copy;
	__u32 table_id;
	long index;

	index = pbp_find_mapping(proc, walk, pc);
	if (index < 0)
		return UNWIND_STOP_NO_MAPPING;
	mapping = &proc->mappings[index & (UNWIND_MAX_MAPPINGS - 1)];
	table_id = mapping->table_id;
	if (table_id == UNWIND_TABLE_NONE)
		return mapping->stop_cause < UNWIND_STOP_COUNT ? mapping->stop_cause : UNWIND_STOP_NO_TABLE;
	/* A caller's pc is a return address: the call itself is the byte before. */
	file_pc = pc - mapping->bias - (is_caller ? 1 : 0);
	ref = bpf_map_lookup_elem(&unwind_tables, &table_id);
	if (!ref || ref->row_count == 0)
		return UNWIND_STOP_NO_TABLE;
	if (pbp_row_of(ref, file_pc, row) != 0)
		return UNWIND_STOP_NO_CFI;
	switch (row->kind) {
	case UNWIND_ROW_CFA_RSP:
		cfa = sp + 8 * (__u64)row->cfa_offset8;
		break;
	case UNWIND_ROW_CFA_RBP:
		cfa = walk->bp + 8 * (__u64)row->cfa_offset8;
		break;
	case UNWIND_ROW_PLT:
		cfa = sp + 8 + ((file_pc & 15) >= 11 ? 8 : 0);
		break;
	case UNWIND_ROW_ROOT:
		return UNWIND_STOP_ROOT;
	case UNWIND_ROW_UNSUPPORTED:
		return UNWIND_STOP_UNSUPPORTED;
	default:
		return UNWIND_STOP_NO_CFI;
	}
	if (cfa <= sp)
		return UNWIND_STOP_BAD_FRAME;
	pbp_claim_shim(walk, sp, cfa);
	if (pbp_read_caller(scratch, cfa, row->kind == UNWIND_ROW_PLT ? 0 : row->rbp_offset8, task) != 0)
		return UNWIND_STOP_READ_FAULT;
	if (walk->pc == 0)
		return UNWIND_STOP_BAD_FRAME;
	walk->sp = cfa;
	return PBP_NATIVE_WALKING;
}

/* One frame: record its pc, then unwind to its caller. */
static long pbp_native_step(__u32 index, void *opaque)
{
	struct pbp_native_walk_ctx *ctx = opaque;
	struct pbp_cpu_scratch *scratch = ctx->scratch;
	struct pbp_native_walk *walk = &scratch->native;
	__u32 slot = walk->out_base + index;
	__u32 stop;

	if (index >= UNWIND_MAX_FRAMES || slot >= PBP_SAMPLE_WORDS - PBP_MAX_KERNEL_FRAMES) {
		walk->stop = UNWIND_STOP_MAX_FRAMES;
		return 1;
	}
	scratch->out.words[slot] = walk->pc;
	walk->frame_count = index + 1;
	stop = pbp_unwind_frame(ctx->proc, scratch, index != 0, ctx->task);
	if (walk->holds_shim)
		scratch->out.words[slot] |= PBP_NATIVE_PC_EVAL;
	if (stop == PBP_NATIVE_WALKING)
		return 0;
	walk->stop = stop;
	return 1;
}

static __always_inline void pbp_count_native_stop(__u32 stop)
{
	__u64 *value = bpf_map_lookup_elem(&unwind_stops, &stop);

	if (value)
		*value += 1;
}

/* The context only allows loads at a constant offset from itself: volatile keeps
 * clang from computing the address in a register first. */
static __always_inline __u64 pbp_ctx_reg(struct bpf_perf_event_data *ctx, __u32 offset)
{
	return *(const volatile __u64 *)((const char *)ctx + offset);
}

/* The user registers the task saved on its last entry to the kernel (a thread that is not running,
 * or the current one in a system call). False for a kernel thread. */
static __always_inline bool pbp_task_user_regs(struct task_struct *task, struct pbp_native_walk *walk)
{
	struct pt_regs *regs;

	if (!task->mm)
		return false;
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	if (!regs || (regs->cs & 3) != 3)
		return false;
	walk->pc = regs->ip;
	walk->sp = regs->sp;
	walk->bp = regs->bp;
	return true;
}

/*
 * The user registers to start from: the interrupted ones in user mode; in
 * the kernel (a system call, a fault) the ones the task saved on entry, so
 * that a sample in a syscall gets its user stack too. False for a kernel thread.
 */
static __always_inline bool pbp_user_regs(struct bpf_perf_event_data *ctx, bool user_mode,
					  struct pbp_native_walk *walk)
{
	if (user_mode) {
		walk->pc = pbp_ctx_reg(ctx, __builtin_offsetof(struct pt_regs, ip));
		walk->sp = pbp_ctx_reg(ctx, __builtin_offsetof(struct pt_regs, sp));
		walk->bp = pbp_ctx_reg(ctx, __builtin_offsetof(struct pt_regs, bp));
		return true;
	}
	return pbp_task_user_regs(bpf_get_current_task_btf(), walk);
}

/*
 * Writes the native pcs right after the record's Python frames; sets native_frame_count and
 * native_stop. The registers come from the perf event (ctx, task NULL: the current task) or,
 * for another task (ctx NULL), from what it saved entering the kernel.
 */
static __always_inline void pbp_walk_native_of(struct bpf_perf_event_data *ctx, struct task_struct *task,
					       struct pbp_cpu_scratch *scratch, bool user_mode)
{
	struct pbp_record *rec = &scratch->out.rec;
	struct pbp_native_walk *walk = &scratch->native;
	struct pbp_native_walk_ctx walk_ctx = { .scratch = scratch, .task = task };
	__u32 tgid = rec->pid;

	walk_ctx.proc = bpf_map_lookup_elem(&unwind_procs, &tgid);
	walk->frame_count = 0;
	walk->stop = UNWIND_STOP_NOT_WALKED;
	walk->next_shim = 0;
	walk->holds_shim = 0;
	walk->window_lo = 0;
	walk->window_len = 0;
	walk->window_page_bound = 0;
	if (walk_ctx.proc && (task ? pbp_task_user_regs(task, walk) : pbp_user_regs(ctx, user_mode, walk))) {
		walk->out_base = 2 * (__u32)rec->py_frame_count;
		walk->stop = PBP_NATIVE_WALKING;
		bpf_loop(UNWIND_MAX_FRAMES, pbp_native_step, &walk_ctx, 0);
		if (walk->stop == PBP_NATIVE_WALKING)
			walk->stop = UNWIND_STOP_MAX_FRAMES;
	}
	rec->native_frame_count = (__u16)walk->frame_count;
	rec->native_stop = (__u8)walk->stop;
	pbp_count_native_stop(walk->stop);
}

/*
 * For a walk that stopped for want of a table or a mapping: the user stack from the stopping frame's sp,
 * copied into this CPU's stack_copy with the frame's registers and the shims no frame claimed
 * yet (include/sample_record.h). Page by page: a copy that runs past the end of the stack's
 * mapping keeps the pages before it. Returns the copy, or NULL when not even one byte could
 * be read.
 */
static __always_inline struct pbp_stack_copy_buf *pbp_copy_stack(struct pbp_cpu_scratch *scratch,
								 struct task_struct *task)
{
	struct pbp_native_walk *walk = &scratch->native;
	__u32 zero = 0, copied = 0, shims = 0;
	struct pbp_stack_copy_buf *copy = bpf_map_lookup_elem(&stack_copy, &zero);
	__u64 addr = walk->sp;

	if (!copy)
		return NULL;
	for (__u32 i = 0; i < PBP_STACK_COPY_BYTES / PBP_COPY_PAGE + 1; i++) {
		__u32 len = PBP_COPY_PAGE - (__u32)(addr & PBP_PAGE_MASK);

		if (copied >= PBP_STACK_COPY_BYTES)
			break;
		if (len > PBP_STACK_COPY_BYTES - copied)
			len = PBP_STACK_COPY_BYTES - copied;
		if (len == 0 || len > PBP_COPY_PAGE)
			break;
		if (pbp_read_target(copy->bytes + (copied & (PBP_STACK_COPY_BYTES - 1)), len, addr, task) != 0)
			break;
		copied += len;
		addr += len;
	}
	if (copied == 0)
		return NULL;
	for (__u32 i = 0; i < PBP_MAX_SHIM_COPY; i++) {
		__u32 next = walk->next_shim + i;

		if (next >= scratch->walk.shim_count || next >= PBP_MAX_SHIMS)
			break;
		/* keeps clang from dropping the mask the verifier needs (it knows next < PBP_MAX_SHIMS) */
		asm volatile("" : "+r"(next));
		next &= PBP_MAX_SHIMS - 1;
		copy->shims[i] = scratch->shim_addr[next];
		shims = i + 1;
	}
	copy->head.sp = walk->sp;
	copy->head.bp = walk->bp;
	copy->head.copy_len = copied;
	copy->head.shim_count = (__u16)shims;
	copy->head.reserved = 0;
	return copy;
}

static __always_inline void pbp_walk_native(struct bpf_perf_event_data *ctx, struct pbp_cpu_scratch *scratch,
					    bool user_mode)
{
	pbp_walk_native_of(ctx, NULL, scratch, user_mode);
}

#endif
