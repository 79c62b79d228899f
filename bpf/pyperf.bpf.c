// SPDX-License-Identifier: MIT
/*
 * The sample path: on every cpu-clock tick that lands in a target process,
 * one ring-buffer record with the thread's Python stack (leaf first) and
 * kernel stack. In wall mode instead a sleepable task iterator that userspace
 * runs at every interval: one record per thread of the targets, running or
 * not. Plus exec/exit notices on a second, low-rate ring buffer.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "frame_walk.h"
#include "maps.h"
#include "native_walk.h"
#include "overhead_accounts.h"
#include "resident_memory.h"
#include "syscall_events.h"
#include "thread_state.h"

char LICENSE[] SEC("license") = "GPL";

const volatile bool kernel_stacks = true;
const volatile bool watch_exec = false;
const volatile bool follow_forks = false;
/* Unwind the user-space native stack from the unwind_* maps. */
const volatile bool native_stacks = false;
/* With native_stacks: a walk stopped for want of a table or a mapping sends a copy of the stack
 * (bpf/native_walk.h). */
const volatile bool stack_copies = false;
/* gil mode: only threads holding the GIL give a record (the others are dropped before their walk). */
const volatile bool gil_only = false;
/* Exception mode: only threads raising or handling an exception give a record (bpf/thread_state.h). */
const volatile bool exceptions_only = false;
/* Memory mode: each sample carries its process's resident memory change since the thread's
 * previous one (bpf/resident_memory.h), counted in pages of page_bytes. */
const volatile bool memory_deltas = false;
const volatile __u64 page_bytes = 4096;
/* Wake the consumer once this much is waiting (0: never; it consumes on a timer). Set by
 * userspace with each record ring it puts in `events`. */
__u64 wakeup_bytes = 0;
/* --bpf-stats: time every target sample inside the program (two clock reads, ~50 ns): the
 * kernel's run-time statistics also charge the ticks that land on every other process. */
const volatile bool time_samples = false;
/* --event off-cpu:MIN_US: blocks shorter than this are not sent. */
const volatile __u64 off_cpu_min_ns = 0;
/* --event syscall:NAME,...: the wanted calls' numbers, a bit each, and what a call weighs
 * (include/syscall_events.h). */
const volatile __u64 syscall_mask[PBP_SYSCALL_MASK_WORDS] = {};
/* The same calls by their i386 numbers: a compat task's (a 32-bit process, int $0x80). */
const volatile __u64 syscall_mask_ia32[PBP_SYSCALL_MASK_WORDS] = {};
const volatile __u32 syscall_weight = PBP_SYSCALL_COUNT;
/* --event syscall or block-io with --event-period N: one occurrence in N on average is a sample
 * (1: every one); userspace weighs each sample N. */
const volatile __u64 tracepoint_period = 1;
/* Wall mode: the CLOCK_MONOTONIC time of the iterator pass in progress, set by userspace
 * before each pass: every sample of a pass carries it. */
__u64 wall_pass_ns = 0;
/* include/linux/sched.h: a macro, so not in vmlinux.h. */
#define PBP_TASK_RUNNING 0x0000u

/* The context only allows 8-byte loads of its registers, and cs is a u16 in
 * a union on recent kernels: load its whole word. */
static __always_inline bool pbp_sampled_user_mode(struct bpf_perf_event_data *ctx)
{
	const volatile __u64 *cs_word =
		(const volatile __u64 *)((const char *)ctx + __builtin_offsetof(struct pt_regs, cs));

	return (*cs_word & 3) == 3;
}

/* The GIL's holder and locked flag sit side by side in every version: one read usually covers both. */
static __always_inline void pbp_fill_gil(const struct py_proc_config *config, struct pbp_cpu_scratch *scratch,
					 struct pbp_record *rec, struct task_struct *task)
{
	__u64 holder_addr = config->gil_holder_addr, locked_addr = config->gil_locked_addr;
	__u64 low = holder_addr < locked_addr ? holder_addr : locked_addr;
	__u64 distance = (holder_addr < locked_addr ? locked_addr : holder_addr) - low;
	__u64 holder = 0;
	__s32 locked = 0;

	if (!(config->flags & PY_PROC_HAS_GIL_HOLDER))
		return;
	if (distance < PBP_GIL_SPAN_MAX) {
		if (pbp_read_target(scratch->gil_buf, distance + sizeof(__u64), low, task) != 0) {
			pbp_read_failed(rec, PBP_ERR_GIL);
			return;
		}
		locked = *(__s32 *)(scratch->gil_buf + ((locked_addr - low) & (PBP_GIL_SPAN_MAX - 1)));
		holder = *(__u64 *)(scratch->gil_buf + ((holder_addr - low) & (PBP_GIL_SPAN_MAX - 1)));
	} else if (pbp_read_target(&locked, sizeof(locked), locked_addr, task) != 0 ||
		   pbp_read_target(&holder, sizeof(holder), holder_addr, task) != 0) {
		pbp_read_failed(rec, PBP_ERR_GIL);
		return;
	}
	if (locked && holder == rec->tstate_addr)
		rec->flags |= PBP_REC_HAS_GIL;
}

/* The thread's running task and its Python frames, read in the order a walk needs them. */
static __always_inline void pbp_read_python_stack(const struct py_proc_config *config,
						  struct pbp_cpu_scratch *scratch, struct task_struct *task)
{
	struct pbp_record *rec = &scratch->out.rec;

	pbp_fill_running_task(config, scratch, task);
	rec->py_frame_count = pbp_walk_frames(config, scratch, rec->tstate_addr, task);
	pbp_find_current_task(config, scratch, task);
}

/* What pbp_fill_thread found of a thread. */
enum pbp_thread_fill {
	PBP_THREAD_UNWANTED = -1, /* not sampled (gil mode, a thread not holding the GIL) */
	PBP_THREAD_NO_STATE = 0,  /* sampled, with no thread state to walk */
	PBP_THREAD_WALKABLE = 1,  /* sampled, its frames to walk */
};

/* The thread's state but its stack: thread state, GIL, exception, GC. task: the sampled thread,
 * NULL for the current task. */
static __always_inline enum pbp_thread_fill pbp_fill_thread(const struct py_proc_config *config,
							    struct pbp_cpu_scratch *scratch,
							    struct task_struct *task)
{
	struct pbp_record *rec = &scratch->out.rec;
	__u64 tstate_addr = pbp_find_tstate(config, &scratch->tswalk, rec, task);

	if (tstate_addr == 0) {
		rec->flags |= PBP_REC_NO_TSTATE;
		pbp_count(PBP_CNT_NO_TSTATE);
		return gil_only || exceptions_only ? PBP_THREAD_UNWANTED : PBP_THREAD_NO_STATE;
	}
	rec->tstate_addr = tstate_addr;
	pbp_fill_gil(config, scratch, rec, task);
	if (gil_only && !(rec->flags & PBP_REC_HAS_GIL))
		return PBP_THREAD_UNWANTED;
	if (exceptions_only) {
		if (!pbp_thread_has_exception(config, tstate_addr, task))
			return PBP_THREAD_UNWANTED;
		rec->flags |= PBP_REC_EXCEPTION;
	}
	pbp_fill_gil_request(config, rec, task);
	pbp_fill_gc(config, rec, task);
	return PBP_THREAD_WALKABLE;
}

/* The counters of what the record's walk met. */
static __always_inline void pbp_count_walk(const struct pbp_record *rec)
{
	if (rec->flags & PBP_REC_READ_FAULT)
		pbp_count(PBP_CNT_READ_FAULTS);
	if (rec->flags & PBP_REC_PY_TRUNCATED)
		pbp_count(PBP_CNT_TRUNCATED);
}

/* The current task's thread and stack. False: the sample is not wanted, nothing walked. */
static __always_inline bool pbp_fill_python(const struct py_proc_config *config,
					    struct pbp_cpu_scratch *scratch)
{
	enum pbp_thread_fill fill = pbp_fill_thread(config, scratch, NULL);

	if (fill != PBP_THREAD_WALKABLE)
		return fill == PBP_THREAD_NO_STATE;
	pbp_read_python_stack(config, scratch, NULL);
	scratch->out.rec.flags |= scratch->walk.flags;
	pbp_count_walk(&scratch->out.rec);
	return true;
}

/* The kernel stack goes right after the Python frames and the native pcs: the current task's
 * (ctx, less its skip_frames innermost) or, with task, that task's (empty while it runs on
 * another CPU). */
static __always_inline __u32 pbp_fill_kernel_stack(void *ctx, struct task_struct *task,
						   struct pbp_cpu_scratch *scratch, __u32 skip_frames)
{
	__u32 first = 2 * (__u32)scratch->out.rec.py_frame_count + scratch->out.rec.native_frame_count;
	__u32 size = PBP_MAX_KERNEL_FRAMES * sizeof(__u64);
	long bytes;

	if (first > PBP_SAMPLE_WORDS - PBP_MAX_KERNEL_FRAMES)
		return 0;
	if (task)
		bytes = bpf_get_task_stack(task, &scratch->out.words[first], size, 0);
	else
		bytes = bpf_get_stack(ctx, &scratch->out.words[first], size, skip_frames & BPF_F_SKIP_FIELD_MASK);
	return bytes > 0 ? (__u32)bytes / sizeof(__u64) : 0;
}

/* How the record just written wakes the consumer: at once if the ring is filling, or if it
 * holds a new code object (below). */
static __always_inline __u64 pbp_wakeup_flag(struct pbp_cpu_scratch *scratch, void *ring)
{
	__u64 wakeup = BPF_RB_NO_WAKEUP, wakeup_at = wakeup_bytes;

	if (wakeup_at && bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA) >= wakeup_at)
		wakeup = BPF_RB_FORCE_WAKEUP;
	/* New code objects are read by the consumer before they can be freed, a new asyncio task
	 * before it ends (its chain). A wakeup costs
	 * more than a sample: none while the last one from this CPU is still unanswered (the
	 * consumer has not moved since), as that consumer will see this record too. */
	if (scratch->walk.new_code || scratch->new_task) {
		__u64 consumer_mark = bpf_ringbuf_query(ring, BPF_RB_CONS_POS) + 1;

		if (consumer_mark != scratch->wakeup_consumer_mark) {
			wakeup = BPF_RB_FORCE_WAKEUP;
			scratch->wakeup_consumer_mark = consumer_mark;
		}
	}
	return wakeup;
}

/* The record followed by its stack copy, in one reservation of the ring (its size is the
 * sample's: the dynptr form). 0, or -1: nothing sent. */
static __always_inline int pbp_output_with_copy(void *ring, struct pbp_cpu_scratch *scratch, __u64 len,
						struct pbp_stack_copy_buf *copy, __u64 wakeup)
{
	__u32 head_len = sizeof(copy->head) + (copy->head.shim_count & (PBP_MAX_SHIM_COPY * 2 - 1)) * sizeof(__u64);
	__u32 copy_len = copy->head.copy_len;
	struct bpf_dynptr record;

	if (head_len > sizeof(copy->head) + sizeof(copy->shims) || copy_len > PBP_STACK_COPY_BYTES)
		return -1;
	if (bpf_ringbuf_reserve_dynptr(ring, len + head_len + copy_len, 0, &record) != 0) {
		bpf_ringbuf_discard_dynptr(&record, 0);
		return -1;
	}
	if (bpf_dynptr_write(&record, 0, &scratch->out, len, 0) != 0 ||
	    bpf_dynptr_write(&record, len, copy, head_len, 0) != 0 ||
	    bpf_dynptr_write(&record, len + head_len, copy->bytes, copy_len, 0) != 0) {
		bpf_ringbuf_discard_dynptr(&record, 0);
		return -1;
	}
	bpf_ringbuf_submit_dynptr(&record, wakeup);
	return 0;
}

/* The running task's name copied at the sample (pbp_copy_task_name), after the record's kernel
 * stack (PBP_REC_TASK_NAME), once its frames are all in. */
static __always_inline void pbp_attach_task_name(struct pbp_cpu_scratch *scratch)
{
	struct pbp_record *rec = &scratch->out.rec;
	__u32 at = 2 * (__u32)rec->py_frame_count + rec->native_frame_count + rec->kernel_frame_count;

	if (!scratch->has_task_name)
		return;
	scratch->has_task_name = 0;
	scratch->task_name.coro_code = scratch->task_coro_code;
	if (at > PBP_SAMPLE_WORDS ||
	    bpf_probe_read_kernel(&scratch->out.words[at], sizeof(struct pbp_task_name), &scratch->task_name) != 0)
		return;
	rec->flags |= PBP_REC_TASK_NAME;
}

/* A record's length from its frame counts and its task name, capped at the buffer's (the
 * verifier's bound for a copy). */
static __always_inline __u64 pbp_record_len(const struct pbp_record *rec)
{
	__u64 len = sizeof(*rec) + (__u64)rec->py_frame_count * sizeof(struct pbp_py_frame) +
		    ((__u64)rec->native_frame_count + rec->kernel_frame_count) * sizeof(__u64);

	if (rec->flags & PBP_REC_TASK_NAME)
		len += sizeof(struct pbp_task_name);
	return len > sizeof(struct pbp_sample_buf) ? sizeof(struct pbp_sample_buf) : len;
}

/* copy: the sample's stack copy (PBP_REC_STACK_COPY set), or NULL. */
static __always_inline void pbp_send(struct pbp_cpu_scratch *scratch, struct pbp_stack_copy_buf *copy)
{
	struct pbp_record *rec = &scratch->out.rec;
	__u64 len;
	__u64 wakeup;
	__u32 zero = 0;
	void *ring = bpf_map_lookup_elem(&events, &zero);
	int err;

	if (!ring) {
		pbp_count(PBP_CNT_LOST);
		return;
	}
	pbp_attach_task_name(scratch);
	len = pbp_record_len(rec);
	wakeup = pbp_wakeup_flag(scratch, ring);
	/* Copies take a quarter of the ring at most: a host where many walks wait for tables (a
	 * process mapping thousands of files) would otherwise fill it with copies and lose samples. */
	if (copy && bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA) > bpf_ringbuf_query(ring, BPF_RB_RING_SIZE) / 4)
		err = -1;
	else
		err = copy ? pbp_output_with_copy(ring, scratch, len, copy, wakeup) : -1;
	if (copy && !err) {
		pbp_count(PBP_CNT_STACK_COPIES);
	} else {
		/* Without its copy, a record too large for the room left (or its share) may still fit. */
		if (copy) {
			rec->flags &= ~PBP_REC_STACK_COPY;
			pbp_count(PBP_CNT_COPIES_DROPPED);
		}
		err = bpf_ringbuf_output(ring, &scratch->out, len, wakeup);
	}
	if (err != 0)
		pbp_count(PBP_CNT_LOST);
	else if (wakeup == BPF_RB_FORCE_WAKEUP)
		pbp_count(PBP_CNT_WAKEUPS);
}

/* A walk that stopped for want of a table (or of a mapping): its stack, copied for userspace to unwind once the
 * table exists (NULL: none). The normal path pays only the test. */
static __always_inline struct pbp_stack_copy_buf *pbp_stack_copy_for(struct pbp_cpu_scratch *scratch,
								     struct task_struct *task)
{
	struct pbp_stack_copy_buf *copy;

	__u8 stop = scratch->out.rec.native_stop;

	/* NO_MAPPING too: a library loaded since userspace last read the maps (dlopen). */
	if (!stack_copies || (stop != UNWIND_STOP_NO_TABLE && stop != UNWIND_STOP_NO_MAPPING))
		return NULL;
	copy = pbp_copy_stack(scratch, task);
	if (copy)
		scratch->out.rec.flags |= PBP_REC_STACK_COPY;
	return copy;
}

/* Sends the sample's record, with a stack copy where its native walk wants one; with
 * time_samples, what the copy and its larger record cost is counted apart. */
static __always_inline void pbp_send_sample(struct pbp_cpu_scratch *scratch, struct task_struct *task)
{
	__u64 start_ns = time_samples ? bpf_ktime_get_ns() : 0;
	struct pbp_stack_copy_buf *copy = pbp_stack_copy_for(scratch, task);

	pbp_send(scratch, copy);
	if (copy && time_samples)
		pbp_count_add(PBP_CNT_COPY_NS, bpf_ktime_get_ns() - start_ns);
}

/* The record's header for a sample of tgid/tid, nothing walked yet. */
static __always_inline struct pbp_record *pbp_begin_record(struct pbp_cpu_scratch *scratch, __u64 time_ns,
							   __u32 tgid, __u32 tid, __u32 cpu, __u32 flags)
{
	struct pbp_record *rec = &scratch->out.rec;

	/* The previous record's frames stay for the next walk (bpf/frame_walk.h) but for those it
	 * did not keep: its native pcs and kernel stack went in after the ones it kept. */
	if (scratch->hot.kept_frames > rec->py_frame_count)
		scratch->hot.kept_frames = rec->py_frame_count;
	rec->time_ns = time_ns;
	rec->tstate_addr = 0;
	rec->pid = tgid;
	rec->tid = tid;
	rec->cpu = cpu;
	rec->flags = flags;
	rec->py_frame_count = 0;
	rec->kernel_frame_count = 0;
	rec->interp_id = 0;
	rec->error = PBP_ERR_NONE;
	rec->native_stop = UNWIND_STOP_NOT_WALKED;
	rec->native_frame_count = 0;
	rec->task_state = 0;
	rec->reserved = 0;
	rec->weight = 1;
	rec->user_ip = 0;
	rec->running_task = 0;
	rec->blocked_ns = 0; /* and rss_delta: one union */
	scratch->walk.new_code = 0;
	scratch->new_task = 0;
	scratch->has_task_name = 0;
	scratch->task_coro_code = 0;
	scratch->walk.shim_count = 0;
	return rec;
}

/* One sample of a target thread, the current task: its record, walked and sent, standing for
 * weight ticks. */
static __always_inline void pbp_sample_target(struct bpf_perf_event_data *ctx, const struct py_proc_config *config,
					      __u64 pid_tgid, __u64 now_ns, __u32 weight)
{
	__u32 zero = 0;
	struct pbp_cpu_scratch *scratch = bpf_map_lookup_elem(&cpu_scratch, &zero);
	struct pbp_record *rec;
	bool user_mode;

	if (!scratch)
		return;
	pbp_count(PBP_CNT_SAMPLES);
	user_mode = pbp_sampled_user_mode(ctx);
	rec = pbp_begin_record(scratch, now_ns, pid_tgid >> 32, (__u32)pid_tgid, bpf_get_smp_processor_id(),
			       user_mode ? PBP_REC_USER_MODE : 0);
	rec->weight = (__u16)weight;
	rec->user_ip = user_mode ? PT_REGS_IP(&ctx->regs) : 0;
	if (memory_deltas)
		rec->rss_delta = pbp_rss_delta(pid_tgid, page_bytes);

	if (config->flags & PY_PROC_PENDING ? gil_only || exceptions_only : !pbp_fill_python(config, scratch))
		return;
	if (native_stacks)
		pbp_walk_native(ctx, scratch, user_mode);
	/* An interrupted user-mode thread has no kernel stack to report. */
	if (kernel_stacks && !user_mode)
		rec->kernel_frame_count = pbp_fill_kernel_stack(ctx, NULL, scratch, 0);
	pbp_send_sample(scratch, NULL);
}

SEC("perf_event")
int pbp_sample(struct bpf_perf_event_data *ctx)
{
	bool timed = time_samples || overhead_budget;
	__u64 start_ns = timed ? bpf_ktime_get_ns() : 0;
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	const struct py_proc_config *config = bpf_map_lookup_elem(&proc_configs, &tgid);
	struct pbp_budget_usage *usage = config && overhead_budget ? pbp_budget_usage_of(tgid) : NULL;
	__u32 weight = usage ? pbp_budget_admit(usage, tgid) : 1;
	__u32 tid = (__u32)pid_tgid;

	/* A thread's first sample is taken whatever the stride, so that a short thread of a
	 * throttled process is still in the profile: it stands for its own tick only (its
	 * stride's kept sample then counts that tick twice, once per thread start). */
	if (usage && !weight && !bpf_map_lookup_elem(&tstate_cache, &tid))
		weight = 1;
	if (config && weight) {
		pbp_sample_target(ctx, config, pid_tgid, timed ? start_ns : bpf_ktime_get_ns(), weight);
		if (usage)
			pbp_budget_charge(usage, bpf_ktime_get_ns() - start_ns);
	} else if (usage) {
		pbp_budget_charge_skip(usage, bpf_ktime_get_ns() - start_ns);
	}
	if (time_samples)
		pbp_count_add(config ? PBP_CNT_TARGET_NS : PBP_CNT_OTHER_NS, bpf_ktime_get_ns() - start_ns);
	return 0;
}

/*
 * Wall mode: userspace runs this iterator over the targets' tasks at every
 * interval (one pass: bpf_iter_create, read to the end, close), and each
 * thread of a target gives one record, running or not. A thread not in
 * TASK_RUNNING is off the CPU (PBP_REC_OFF_CPU: the same line as Austin's and
 * CPython's "R" state): its kernel stack is where it waits. Sleepable, so
 * that the target's memory can be read although it is not the current task
 * (bpf_copy_from_user_task). The perf event program is not attached in wall
 * mode, so the per-CPU scratch is this program's alone.
 */

static __always_inline void pbp_read_task_moment(struct task_struct *task, struct pbp_task_moment *moment)
{
	moment->state = BPF_CORE_READ(task, __state);
	moment->on_cpu = BPF_CORE_READ(task, on_cpu);
	moment->switches = BPF_CORE_READ(task, nvcsw) + BPF_CORE_READ(task, nivcsw);
}

static __always_inline bool pbp_same_moment(const struct pbp_task_moment *a, const struct pbp_task_moment *b)
{
	return a->state == b->state && a->on_cpu == b->on_cpu && a->switches == b->switches;
}

/* include/linux/sched.h's task_state_index() and fs/proc/array.c's letters, for a live task. */
static __always_inline __u8 pbp_task_state_letter(__u32 state)
{
	if ((state & 0x0402u) == 0x0402u) /* TASK_IDLE: TASK_UNINTERRUPTIBLE | TASK_NOLOAD */
		return 'I';
	if (state & 0x0001u)
		return 'S';
	if (state & 0x0002u)
		return 'D';
	if (state & 0x0004u)
		return 'T';
	if (state & 0x0008u)
		return 't';
	if (state & 0x0040u)
		return 'P';
	return state == PBP_TASK_RUNNING ? 'R' : 'S';
}

/* The functions by which the kernel returns to user space, after an interrupt or a system call,
 * across kernel versions. A runnable thread switched out in one of them was preempted on its way
 * back to user code: it was running user code, not waiting in the kernel, and the path is the
 * interrupt that preempted it (often the profiler's own wakeup). */
static const char pbp_return_to_user_fns[][40] = {
	"irqentry_exit_to_user_mode",
	"exit_to_user_mode_loop",
	"syscall_exit_to_user_mode",
	"exit_to_user_mode_prepare",
	"syscall_exit_to_user_mode_work",
	"irqentry_exit_to_user_mode_prepare",
	"prepare_exit_to_usermode",
	"exit_to_usermode_loop",
	"syscall_return_slowpath",
};
#define PBP_RETURN_TO_USER_FNS (sizeof(pbp_return_to_user_fns) / sizeof(pbp_return_to_user_fns[0]))

/* Whether the kernel address pc lies in one of pbp_return_to_user_fns: named by the kernel's own
 * lookup (a few microseconds) the first time only. */
static __always_inline bool pbp_returning_to_user(__u64 pc)
{
	static const char name_format[] = "%ps";
	__u8 *known = bpf_map_lookup_elem(&return_to_user_pcs, &pc);
	char name[48];
	__u8 verdict = 0;

	if (known)
		return *known;
	if (bpf_snprintf(name, sizeof(name), name_format, &pc, sizeof(pc)) < 0)
		return false;
	for (__u32 i = 0; i < PBP_RETURN_TO_USER_FNS; i++) {
		if (bpf_strncmp(name, sizeof(name), pbp_return_to_user_fns[i]) == 0) {
			verdict = 1;
			break;
		}
	}
	bpf_map_update_elem(&return_to_user_pcs, &pc, &verdict, BPF_ANY);
	return verdict;
}

/* How often the kernel stack is taken again when the thread moved while it was read. */
#define PBP_STACK_MOMENT_TRIES 3

/* The thread's kernel stack and its state, both of one moment: a thread that woke or slept while
 * its stack was read is read again (the stack of the last try is kept in any case). A runnable
 * thread preempted on its way back to user space was running user code: no kernel frames. */
static __always_inline void pbp_wall_kernel_moment(struct task_struct *task, struct pbp_cpu_scratch *scratch)
{
	struct pbp_record *rec = &scratch->out.rec;
	struct pbp_task_moment before, after;
	__u32 frames = 0, first = 2 * (__u32)rec->py_frame_count + rec->native_frame_count;

	pbp_read_task_moment(task, &after);
	for (int i = 0; i < PBP_STACK_MOMENT_TRIES; i++) {
		before = after;
		if (kernel_stacks)
			frames = pbp_fill_kernel_stack(NULL, task, scratch, 0);
		pbp_read_task_moment(task, &after);
		if (pbp_same_moment(&before, &after))
			break;
	}
	rec->flags &= ~(PBP_REC_OFF_CPU | PBP_REC_ON_A_CPU);
	if (after.state != PBP_TASK_RUNNING)
		rec->flags |= PBP_REC_OFF_CPU;
	else if (after.on_cpu)
		rec->flags |= PBP_REC_ON_A_CPU;
	rec->task_state = pbp_task_state_letter(after.state);
	/* A thread on a CPU right now has no saved kernel stack of this moment: what is read is the
	 * one it left when last switched out. If that was the way back to user space, it went back
	 * to user code when it ran again, and that old interrupt is no frame of this moment either. */
	if (frames && !(rec->flags & PBP_REC_OFF_CPU) && first < PBP_SAMPLE_WORDS &&
	    pbp_returning_to_user(scratch->out.words[first])) {
		frames = 0;
		if (!(rec->flags & PBP_REC_ON_A_CPU))
			rec->flags |= PBP_REC_USER_MODE;
	}
	rec->kernel_frame_count = frames;
}

/*
 * A thread that runs while another CPU reads its memory changes its frames under the walk: a
 * frame returned from can be reused by the next call before the walk reaches it, and the walk
 * then joins the callers of one moment to the callees of another (a stack the thread never
 * had). Such a thread's stack is read again until a read gives the same frames as one before it
 * (the leaf's instruction aside, which a running thread moves on), PBP_STACK_READS at most.
 */
#define PBP_WALK_FLAGS (PBP_REC_PY_TRUNCATED | PBP_REC_READ_FAULT | PBP_REC_NO_FRAME | PBP_REC_ASYNC_TASK)

/* What the reads of one thread's stack share on the stack (bpf_loop's context must be there):
 * kept small, as a read's walk is three calls deep; the rest is in saved_walk. */
struct pbp_reread_ctx {
	const struct py_proc_config *config;
	struct task_struct *task;
};

/* This CPU's record and saved read, looked up where a callback needs them (an inlined array
 * lookup: cheaper than the stack room pointers would take). */
static __always_inline bool pbp_reread_buffers(struct pbp_cpu_scratch **scratch, struct pbp_saved_walk **saved)
{
	__u32 zero = 0;

	*scratch = bpf_map_lookup_elem(&cpu_scratch, &zero);
	*saved = bpf_map_lookup_elem(&saved_walk, &zero);
	return *scratch && *saved;
}

static long pbp_save_frame_step(__u32 index, void *opaque)
{
	struct pbp_cpu_scratch *scratch;
	struct pbp_saved_walk *saved;

	(void)opaque;
	if (!pbp_reread_buffers(&scratch, &saved))
		return 1;
	saved->py[index & (PBP_MAX_PY_FRAMES - 1)] = scratch->out.py[index & (PBP_MAX_PY_FRAMES - 1)];
	return 0;
}

static long pbp_hash_frame_step(__u32 index, void *opaque)
{
	struct pbp_cpu_scratch *scratch;
	struct pbp_saved_walk *saved;
	const struct pbp_py_frame *frame;
	__u64 hash;

	(void)opaque;
	if (!pbp_reread_buffers(&scratch, &saved))
		return 1;
	frame = &scratch->out.py[index & (PBP_MAX_PY_FRAMES - 1)];
	hash = (saved->hash ^ frame->code_addr) * 0x100000001b3ull;
	hash = (hash ^ frame->checksum) * 0x100000001b3ull;
	if (index != 0)
		hash = (hash ^ frame->instr_offset) * 0x100000001b3ull;
	saved->hash = hash;
	return 0;
}

/* A hash of the read in the record, never 0: equal for two reads that gave the same frames. */
static __always_inline __u64 pbp_read_hash(struct pbp_reread_ctx *ctx, struct pbp_cpu_scratch *scratch,
					   struct pbp_saved_walk *saved)
{
	struct pbp_record *rec = &scratch->out.rec;

	(void)ctx;
	if (rec->py_frame_count > PBP_MAX_PY_FRAMES)
		return 0;
	saved->hash = 0xcbf29ce484222325ull ^ (rec->flags & PBP_WALK_FLAGS) ^ ((__u64)rec->py_frame_count << 32);
	bpf_loop(rec->py_frame_count, pbp_hash_frame_step, NULL, 0);
	return saved->hash | 1;
}

static long pbp_agree_step(__u32 k, void *opaque)
{
	struct pbp_cpu_scratch *scratch;
	struct pbp_saved_walk *saved;
	const struct pbp_py_frame *a, *b;
	__u32 i, j;

	(void)opaque;
	if (!pbp_reread_buffers(&scratch, &saved))
		return 1;
	i = saved->from_leaf ? k : saved->saved_count - 1 - k;
	j = saved->from_leaf ? k : saved->now_count - 1 - k;
	a = &saved->py[i & (PBP_MAX_PY_FRAMES - 1)];
	b = &scratch->out.py[j & (PBP_MAX_PY_FRAMES - 1)];
	if (a->code_addr != b->code_addr || a->checksum != b->checksum ||
	    (i != 0 && j != 0 && a->instr_offset != b->instr_offset))
		return 1;
	saved->agreed = k + 1;
	return 0;
}

/* Moves the agreed root-side frames (the last `agreed` of now_count) to the record's start.
 * Each stays a pair of the last read's (code address, checksum): the next walk may still take
 * them by index (pbp_begin_record cuts the hot epoch's kept_frames to the record's count). */
static long pbp_keep_root_step(__u32 index, void *opaque)
{
	struct pbp_cpu_scratch *scratch;
	struct pbp_saved_walk *saved;

	(void)opaque;
	if (!pbp_reread_buffers(&scratch, &saved))
		return 1;
	scratch->out.py[index & (PBP_MAX_PY_FRAMES - 1)] =
		scratch->out.py[(saved->now_count - saved->agreed + index) & (PBP_MAX_PY_FRAMES - 1)];
	return 0;
}

/* How many frames the previous read and the record's agree on, from the root (none if both were
 * cut at the root, where only whole reads compare). */
static __always_inline __u32 pbp_reads_agreed(struct pbp_cpu_scratch *scratch, struct pbp_saved_walk *saved)
{
	__u32 shorter;

	saved->now_count = scratch->out.rec.py_frame_count;
	shorter = saved->saved_count < saved->now_count ? saved->saved_count : saved->now_count;
	saved->from_leaf = (saved->saved_flags & scratch->out.rec.flags & PBP_REC_PY_TRUNCATED) != 0;
	saved->agreed = 0;
	if (shorter > PBP_MAX_PY_FRAMES)
		return 0;
	bpf_loop(shorter, pbp_agree_step, NULL, 0);
	return saved->from_leaf ? 0 : saved->agreed;
}

/*
 * One read of the thread's stack into the record (the one before it kept for comparison). Stops
 * the loop once the stack is known: the first read if the thread stayed off the CPUs through it,
 * else a read that gave the frames of one before it; or once one cannot be compared.
 */
static long pbp_stack_read_step(__u32 read, void *opaque)
{
	struct pbp_reread_ctx *ctx = opaque;
	struct pbp_cpu_scratch *scratch;
	struct pbp_saved_walk *saved;
	struct pbp_record *rec;

	if (!pbp_reread_buffers(&scratch, &saved))
		return 1;
	rec = &scratch->out.rec;
	saved->new_code = scratch->walk.new_code;
	saved->saved_count = rec->py_frame_count;
	if (saved->saved_count > PBP_MAX_PY_FRAMES || read >= PBP_STACK_READS)
		return 1;
	if (read > 0) {
		bpf_loop(saved->saved_count, pbp_save_frame_step, NULL, 0);
		pbp_count(PBP_CNT_STACK_REREADS);
	}
	saved->saved_flags = rec->flags;
	rec->flags &= ~PBP_WALK_FLAGS;
	scratch->task_coro_code = 0;
	/* 3.11-3.13: the walk leaves its outermost coroutine there (3.14+ read the task before) */
	if (ctx->config->flags & PY_PROC_CORO_FROM_FRAMES)
		rec->running_task = 0;
	rec->py_frame_count = pbp_walk_frames(ctx->config, scratch, rec->tstate_addr, ctx->task);
	rec->flags |= scratch->walk.flags;
	/* a code object an earlier read met is still owed the consumer's early read */
	scratch->walk.new_code |= saved->new_code;
	if (read == 0) {
		pbp_read_task_moment(ctx->task, &saved->after);
		if (!saved->before.on_cpu && pbp_same_moment(&saved->before, &saved->after)) {
			saved->settled = 1;
			saved->stayed_put = 1;
			return 1;
		}
	}
	/* Keeps the mask that clang would drop after the test above, for the verifier. */
	barrier_var(read);
	saved->hash = pbp_read_hash(ctx, scratch, saved);
	saved->hashes[read & (PBP_STACK_READS - 1)] = saved->hash;
	/* The same frames as a read before: the stack of a moment, read twice. (Only the read just
	 * before would take a thread whose leaf moves every few microseconds many more reads;
	 * a read the thread tore the same way twice is rarer than its tearing once.) */
	for (__u32 earlier = 0; earlier < read && earlier < PBP_STACK_READS; earlier++) {
		if (saved->hashes[earlier] == saved->hash) {
			saved->settled = 1;
			return 1;
		}
	}
	return 0;
}

/*
 * The thread's Python stack into the record, as one moment had it. A thread that ran while it
 * was read (it was on a CPU, or woke or slept meanwhile: before is its moment as the first read
 * began) is read again. Returns whether the thread stayed put through the first read.
 */
static __always_inline bool pbp_read_settled_python_stack(const struct py_proc_config *config,
							  struct pbp_cpu_scratch *scratch, struct task_struct *task,
							  struct pbp_saved_walk *saved)
{
	struct pbp_record *rec = &scratch->out.rec;
	struct pbp_reread_ctx ctx = { .config = config, .task = task };
	__u32 agreed;

	saved->settled = 0;
	saved->stayed_put = 0;
	/* The running task is read before the frames, as pbp_read_python_stack does; 3.11-3.13
	 * find it from the outermost coroutine of the frames that are kept. */
	pbp_fill_running_task(config, scratch, task);
	bpf_loop(PBP_STACK_READS, pbp_stack_read_step, &ctx, 0);
	if (saved->settled) {
		pbp_find_current_task(config, scratch, task);
		return saved->stayed_put;
	}
	/* Never the same twice: only the frames the last two reads agree on from the root are known. */
	pbp_count(PBP_CNT_STACK_CHANGING);
	agreed = pbp_reads_agreed(scratch, saved);
	if (agreed > saved->now_count)
		agreed = 0;
	saved->agreed = agreed;
	bpf_loop(agreed, pbp_keep_root_step, NULL, 0);
	rec->py_frame_count = agreed;
	rec->flags = (rec->flags & ~(PBP_REC_PY_TRUNCATED | PBP_REC_ASYNC_TASK)) | PBP_REC_PY_CHANGING;
	rec->running_task = 0;
	scratch->has_task_name = 0;
	return false;
}

/* One wall-mode record of a target's thread, running or not. */
/* A wall-mode thread's state but its stack (pbp_fill_thread), in a callback of its own: its
 * stack then does not add to that of the Python stack's reads, three calls deep. */
struct pbp_wall_thread {
	const struct py_proc_config *config;
	struct task_struct *task;
	enum pbp_thread_fill fill;
};

static long pbp_wall_thread_step(__u32 index, void *opaque)
{
	struct pbp_wall_thread *thread = opaque;
	struct pbp_cpu_scratch *scratch;
	__u32 zero = 0;

	(void)index;
	thread->fill = PBP_THREAD_UNWANTED;
	scratch = bpf_map_lookup_elem(&cpu_scratch, &zero);
	if (scratch)
		thread->fill = pbp_fill_thread(thread->config, scratch, thread->task);
	return 1;
}

static __always_inline void pbp_wall_target(struct task_struct *task, const struct py_proc_config *config)
{
	struct pbp_wall_thread thread;
	struct pbp_cpu_scratch *scratch;
	__u32 zero = 0;
	/* the thread's moment as its reads begin: kept off the stack, which its walks fill */
	struct pbp_saved_walk *saved = bpf_map_lookup_elem(&saved_walk, &zero);
	struct pbp_task_moment *before;
	enum pbp_thread_fill fill;
	bool stayed_put;

	scratch = bpf_map_lookup_elem(&cpu_scratch, &zero);
	if (!scratch || !saved)
		return;
	before = &saved->before;
	pbp_count(PBP_CNT_SAMPLES);
	pbp_read_task_moment(task, before);
	pbp_begin_record(scratch, wall_pass_ns, task->tgid, task->pid, BPF_CORE_READ(task, thread_info.cpu),
			 before->state != PBP_TASK_RUNNING ? PBP_REC_OFF_CPU : 0);
	if (config->flags & PY_PROC_PENDING) {
		if (gil_only)
			return;
		stayed_put = !before->on_cpu;
	} else {
		thread.config = config;
		thread.task = task;
		bpf_loop(1, pbp_wall_thread_step, &thread, 0);
		fill = thread.fill;
		if (fill == PBP_THREAD_UNWANTED)
			return;
		stayed_put = fill == PBP_THREAD_NO_STATE ? !before->on_cpu
							 : pbp_read_settled_python_stack(config, scratch, task, saved);
		pbp_count_walk(&scratch->out.rec);
	}
	/* A thread that ran meanwhile has no saved user registers worth unwinding from. */
	if (native_stacks && stayed_put)
		pbp_walk_native_of(NULL, task, scratch, false);
	pbp_wall_kernel_moment(task, scratch);
	pbp_send_sample(scratch, task);
}

SEC("iter.s/task")
int pbp_wall(struct bpf_iter__task *ctx)
{
	__u64 start_ns = time_samples ? bpf_ktime_get_ns() : 0;
	struct task_struct *task = ctx->task;
	const struct py_proc_config *config;
	__u32 tgid;

	if (!task)
		return 0;
	tgid = task->tgid;
	config = bpf_map_lookup_elem(&proc_configs, &tgid);
	if (!task->mm || task->exit_state)
		config = NULL;
	if (config)
		pbp_wall_target(task, config);
	if (time_samples)
		pbp_count_add(config ? PBP_CNT_TARGET_NS : PBP_CNT_OTHER_NS, bpf_ktime_get_ns() - start_ns);
	return 0;
}

/*
 * Names kernel addresses for userspace with the kernel's own symbol lookup: modules and BPF
 * programs loaded at any time included, and no read of all of /proc/kallsyms (120k lines, some
 * 50 ms of a start-up) for the few hundred addresses a profile holds. A task iterator over the
 * profiler's own process, printing for its first thread only: kernels that refuse an iterator
 * over a map's elements (EPERM on this project's VMs) take task iterators, which wall mode
 * needs anyway.
 */
struct pbp_ksym_print {
	struct seq_file *seq;
};

static long pbp_ksym_print_step(__u32 slot, void *opaque)
{
	struct pbp_ksym_print *print = opaque;
	__u64 *address = bpf_map_lookup_elem(&ksym_addrs, &slot);

	if (address && *address)
		BPF_SEQ_PRINTF(print->seq, "%llx %ps\n", *address, (void *)*address);
	return 0;
}

SEC("iter/task")
int pbp_ksym_names(struct bpf_iter__task *ctx)
{
	struct pbp_ksym_print print = { .seq = ctx->meta->seq };

	if (!ctx->task || ctx->meta->seq_num != 0)
		return 0;
	bpf_loop(PBP_KSYM_BATCH, pbp_ksym_print_step, &print, 0);
	return 0;
}

static __always_inline void pbp_send_proc_event(__u32 type, __u32 pid, __u32 parent_pid)
{
	struct pbp_proc_event *event = bpf_ringbuf_reserve(&proc_events, sizeof(*event), 0);

	if (!event) {
		pbp_count(PBP_CNT_PROC_EVENTS_LOST);
		return;
	}
	event->type = type;
	event->pid = pid;
	event->parent_pid = parent_pid;
	event->reserved = 0;
	bpf_get_current_comm(event->comm, sizeof(event->comm));
	bpf_ringbuf_submit(event, 0);
}

/* BPF_PROG hands each program its raw ctx as well as the typed arguments it unpacks from it. */
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wunused-parameter"

SEC("tp_btf/sched_process_exec")
int BPF_PROG(pbp_exec, struct task_struct *task)
{
	__u32 tgid = task->tgid;
	struct py_proc_config *config = bpf_map_lookup_elem(&proc_configs, &tgid);

	/* A new image: the old addresses describe nothing in it until userspace looks again. */
	if (config) {
		config->flags |= PY_PROC_PENDING;
		__sync_fetch_and_add(&pbp_code_generation, 1);
	}
	if (watch_exec || config)
		pbp_send_proc_event(PBP_PROC_EXEC, tgid, 0);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(pbp_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 parent_tgid = parent->tgid, child_tgid = child->tgid;
	const struct py_proc_config *config;

	/* New processes only: a new thread shares its process's config already. */
	if (!follow_forks || child->pid != child->tgid || child_tgid == parent_tgid)
		return 0;
	config = bpf_map_lookup_elem(&proc_configs, &parent_tgid);
	if (!config)
		return 0;
	/* The child's memory is a copy of its parent's, so the same addresses describe it,
	 * and it is sampled from its first instruction: it has not run yet. */
	bpf_map_update_elem(&proc_configs, &child_tgid, config, BPF_NOEXIST);
	pbp_send_proc_event(PBP_PROC_FORK, child_tgid, parent_tgid);
	return 0;
}

/*
 * --event off-cpu: at sched_switch, a target thread that leaves the CPU to wait (not runnable:
 * asleep, blocked on a lock or I/O; a preempted thread is still runnable and is not counted) has
 * its stacks taken then, while its stack is the one it blocks in and it is still the current
 * task (its memory is the current mm); the record waits in off_cpu_blocks and is sent when the
 * thread switches back in, weighed by the nanoseconds between. One record per block: userspace
 * never pairs halves, and the record never outlives the code objects it names, as they are alive
 * in the blocked frames. The thread cannot run elsewhere before this program has returned (the
 * scheduler waits for prev to be off its CPU), so a block's two halves never overlap.
 */

/* Sched_switch's prev_state for a task leaving for good: include/linux/sched.h's TASK_DEAD. */
#define PBP_TASK_DEAD 0x0080u
/* include/linux/sched.h's PF_EXITING: set before sched_process_exit drops the thread's block. */
#define PBP_PF_EXITING 0x00000004u
/* PF_IO_WORKER | PF_KTHREAD: a process's io_uring workers share its tgid and memory, not its stacks. */
#define PBP_PF_KTHREAD 0x00200010u

/* The kernel stack of a switch-out starts in this program and in the tracepoint's caller
 * (bpf_trace_run4), always: not sent. The thread's own stack starts at __schedule, after them
 * and at times after __traceiter_sched_switch too (userspace leaves that out). */
#define PBP_OFF_CPU_SKIP_FRAMES 2

/* The walked record into the thread's slot of off_cpu_blocks: the whole value the first time,
 * the record's length after. reserved notes a new code object or task while it waits (cleared
 * before it is sent: the wire's reserved stays zero). */
static __always_inline void pbp_park_block(struct pbp_cpu_scratch *scratch, __u32 tid)
{
	struct pbp_sample_buf *parked = bpf_map_lookup_elem(&off_cpu_blocks, &tid);
	__u64 len;

	pbp_attach_task_name(scratch);
	len = pbp_record_len(&scratch->out.rec);
	scratch->out.rec.reserved = scratch->walk.new_code || scratch->new_task;
	if (!parked) {
		if (bpf_map_update_elem(&off_cpu_blocks, &tid, &scratch->out, BPF_NOEXIST) != 0)
			pbp_count(PBP_CNT_LOST);
		return;
	}
	if (len < sizeof(struct pbp_record) || bpf_probe_read_kernel(parked, len, &scratch->out) != 0) {
		parked->rec.time_ns = 0;
		pbp_count(PBP_CNT_LOST);
	}
}

/* prev, the current task, leaves the CPU to wait: its stacks now. */
static __always_inline bool pbp_off_cpu_begin(void *ctx, struct task_struct *prev, __u32 prev_state, __u64 now_ns)
{
	__u32 tgid = prev->tgid, tid = prev->pid, zero = 0;
	const struct py_proc_config *config = bpf_map_lookup_elem(&proc_configs, &tgid);
	struct pbp_cpu_scratch *scratch;
	struct pbp_record *rec;

	if (!config || !prev->mm || (prev->flags & PBP_PF_EXITING) || (prev_state & PBP_TASK_DEAD))
		return false;
	scratch = bpf_map_lookup_elem(&cpu_scratch, &zero);
	if (!scratch)
		return true;
	pbp_count(PBP_CNT_SAMPLES);
	rec = pbp_begin_record(scratch, now_ns, tgid, tid, bpf_get_smp_processor_id(), PBP_REC_OFF_CPU);
	rec->task_state = pbp_task_state_letter(prev_state);
	if (!(config->flags & PY_PROC_PENDING))
		pbp_fill_python(config, scratch);
	if (native_stacks)
		pbp_walk_native_of(NULL, NULL, scratch, false);
	if (kernel_stacks)
		rec->kernel_frame_count = pbp_fill_kernel_stack(ctx, NULL, scratch, PBP_OFF_CPU_SKIP_FRAMES);
	pbp_park_block(scratch, tid);
	return true;
}

/* A parked record, its weight set, into the ring; its slot is free after. */
static __always_inline void pbp_send_parked(struct pbp_sample_buf *parked)
{
	__u64 len, wakeup = BPF_RB_NO_WAKEUP, wakeup_at = wakeup_bytes;
	__u32 zero = 0;
	void *ring = bpf_map_lookup_elem(&events, &zero);

	if (parked->rec.reserved)
		wakeup = BPF_RB_FORCE_WAKEUP;
	parked->rec.reserved = 0;
	len = pbp_record_len(&parked->rec);
	if (ring && wakeup_at && bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA) >= wakeup_at)
		wakeup = BPF_RB_FORCE_WAKEUP;
	if (!ring || len < sizeof(struct pbp_record) || bpf_ringbuf_output(ring, parked, len, wakeup) != 0)
		pbp_count(PBP_CNT_LOST);
	else if (wakeup == BPF_RB_FORCE_WAKEUP)
		pbp_count(PBP_CNT_WAKEUPS);
	parked->rec.time_ns = 0;
}

/* next comes back on a CPU: its block's record, if it has one waiting, goes out with its length. */
static __always_inline bool pbp_off_cpu_end(struct task_struct *next, __u64 now_ns)
{
	__u32 tid = next->pid;
	struct pbp_sample_buf *parked = bpf_map_lookup_elem(&off_cpu_blocks, &tid);
	__u64 since_ns;

	if (!parked || !parked->rec.time_ns)
		return false;
	since_ns = parked->rec.time_ns;
	if (now_ns - since_ns < off_cpu_min_ns) {
		parked->rec.time_ns = 0;
		return true;
	}
	parked->rec.blocked_ns = now_ns - since_ns;
	pbp_send_parked(parked);
	return true;
}

/* prev_state: the kernel's argument since 5.18 (prev->__state may have been woken meanwhile). */
SEC("tp_btf/sched_switch")
int BPF_PROG(pbp_off_cpu, bool preempt, struct task_struct *prev, struct task_struct *next, unsigned int prev_state)
{
	__u64 now_ns = bpf_ktime_get_ns();
	bool target = false;

	if (!preempt && prev_state != PBP_TASK_RUNNING)
		target = pbp_off_cpu_begin(ctx, prev, prev_state, now_ns);
	target |= pbp_off_cpu_end(next, now_ns);
	if (time_samples)
		pbp_count_add(target ? PBP_CNT_TARGET_NS : PBP_CNT_OTHER_NS, bpf_ktime_get_ns() - now_ns);
	return 0;
}

/*
 * --event syscall:NAME[,NAME...]: each call of a target thread to a named system call, its stacks
 * taken at entry (the caller's Python and native stacks; the kernel's, the syscall entry path).
 * Counted, the record goes at entry. Weighed in bytes or nanoseconds, it waits in off_cpu_blocks
 * (off-cpu and syscalls exclude each other; a thread is in one call at a time) until the call
 * returns: a call that returns no bytes is not sent. Every call of the host runs the entry
 * program (and the exit one when weighed): the call's number is tested first, the target map
 * only for a wanted call.
 *
 * --event block-io: each block I/O (bio) queued while a target thread is the current task, its
 * stacks then, weighed in its bytes. The kernel queues the writes of O_DIRECT and of fsync in
 * the caller's context; writeback of dirty pages, journal commits and read-ahead done by kernel
 * threads are theirs, not the target's.
 */

/* Like a switch-out's, a tracepoint's kernel stack starts in this program and bpf_trace_runN. */
#define PBP_TRACEPOINT_SKIP_FRAMES 2

/* A gap of 1 to 2N-1 occurrences, N on average: a fixed gap would fall in step with a loop
 * (a gap of 10 on a loop of 4 calls takes only 2 of them), a random one cannot. */
static __always_inline __u64 pbp_period_gap(void)
{
	__u64 random = ((__u64)bpf_get_prandom_u32() << 32) | bpf_get_prandom_u32();

	return 1 + random % (2 * tracepoint_period - 1);
}

/* Whether this occurrence of a target's event is a sample: with a period, this CPU's countdown
 * (per CPU: no lookup by thread, and nothing to drop at a thread's exit) reaches 0. */
static __always_inline bool pbp_period_takes(void)
{
	__u32 zero = 0;
	__u64 *left;

	if (tracepoint_period <= 1)
		return true;
	left = bpf_map_lookup_elem(&period_countdown, &zero);
	if (!left)
		return true;
	if (*left == 0)
		*left = pbp_period_gap();
	if (--*left > 0)
		return false;
	*left = pbp_period_gap();
	return true;
}

/* arch/x86/include/asm/thread_info.h's TS_COMPAT: the current call is a compat (i386) one, set at
 * its entry and cleared only on the way back to user space, so both tracepoints see it. */
#define PBP_TS_COMPAT 0x0002u

/* Whether the current task's call id is wanted: by x86_64's numbers, or by i386's for a compat
 * call (write is 1 in one table and 4, x86_64's stat, in the other). The task is read only when
 * the number is in either bitmap, so every other call of the host pays two bit tests. */
static __always_inline bool pbp_syscall_wanted(long id)
{
	bool native, ia32;

	if (id < 0 || id >= PBP_SYSCALL_MAX)
		return false;
	native = (syscall_mask[(__u32)id / 64] >> ((__u32)id % 64)) & 1;
	ia32 = (syscall_mask_ia32[(__u32)id / 64] >> ((__u32)id % 64)) & 1;
	if (native == ia32)
		return native;
	return (bpf_get_current_task_btf()->thread_info.status & PBP_TS_COMPAT) ? ia32 : native;
}

/* The current task's record, a target thread's, walked (weight: its event_weight): the scratch
 * holding it, or NULL. */
static __always_inline struct pbp_cpu_scratch *pbp_event_record(void *ctx, const struct py_proc_config *config,
								__u64 pid_tgid, __u64 now_ns, __u64 weight)
{
	__u32 zero = 0;
	struct pbp_cpu_scratch *scratch = bpf_map_lookup_elem(&cpu_scratch, &zero);
	struct pbp_record *rec;

	if (!scratch)
		return NULL;
	pbp_count(PBP_CNT_SAMPLES);
	rec = pbp_begin_record(scratch, now_ns, pid_tgid >> 32, (__u32)pid_tgid, bpf_get_smp_processor_id(), 0);
	rec->event_weight = weight;
	if (!(config->flags & PY_PROC_PENDING))
		pbp_fill_python(config, scratch);
	if (native_stacks)
		pbp_walk_native_of(NULL, NULL, scratch, false);
	if (kernel_stacks)
		rec->kernel_frame_count = pbp_fill_kernel_stack(ctx, NULL, scratch, PBP_TRACEPOINT_SKIP_FRAMES);
	return scratch;
}

/* The config of the current task's process if it is a target's thread with user memory (not
 * exiting, not one of its kernel workers), else NULL. */
static __always_inline const struct py_proc_config *pbp_current_target(__u64 pid_tgid)
{
	__u32 tgid = pid_tgid >> 32;
	const struct py_proc_config *config = bpf_map_lookup_elem(&proc_configs, &tgid);
	struct task_struct *task;

	if (!config)
		return NULL;
	task = bpf_get_current_task_btf();
	if (!task->mm || (task->flags & (PBP_PF_EXITING | PBP_PF_KTHREAD)))
		return NULL;
	return config;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(pbp_syscall_enter, struct pt_regs *regs, long id)
{
	__u64 start_ns = time_samples ? bpf_ktime_get_ns() : 0, pid_tgid;
	const struct py_proc_config *config = NULL;
	struct pbp_cpu_scratch *scratch;

	if (pbp_syscall_wanted(id)) {
		pid_tgid = bpf_get_current_pid_tgid();
		config = pbp_current_target(pid_tgid);
	}
	if (config && pbp_period_takes()) {
		scratch = pbp_event_record(ctx, config, pid_tgid, time_samples ? start_ns : bpf_ktime_get_ns(), 1);
		if (scratch && syscall_weight == PBP_SYSCALL_COUNT)
			pbp_send_sample(scratch, NULL);
		else if (scratch)
			pbp_park_block(scratch, (__u32)pid_tgid);
	}
	if (time_samples)
		pbp_count_add(config ? PBP_CNT_TARGET_NS : PBP_CNT_OTHER_NS, bpf_ktime_get_ns() - start_ns);
	return 0;
}

/* A parked call's weight at its return: its bytes or its nanoseconds (0: not sent). */
static __always_inline __u64 pbp_syscall_weight(const struct pbp_sample_buf *parked, long ret, __u64 now_ns)
{
	if (syscall_weight == PBP_SYSCALL_BYTES)
		return ret > 0 ? (__u64)ret : 0;
	return now_ns > parked->rec.time_ns ? now_ns - parked->rec.time_ns : 1;
}

/* Loaded only when a call is weighed: its record, parked at entry, goes out now. */
SEC("tp_btf/sys_exit")
int BPF_PROG(pbp_syscall_exit, struct pt_regs *regs, long ret)
{
	__u64 now_ns = bpf_ktime_get_ns(), weight;
	struct pbp_sample_buf *parked = NULL;
	__u32 tid;

	if (pbp_syscall_wanted(regs->orig_ax)) {
		tid = (__u32)bpf_get_current_pid_tgid();
		parked = bpf_map_lookup_elem(&off_cpu_blocks, &tid);
	}
	if (parked && parked->rec.time_ns) {
		weight = pbp_syscall_weight(parked, ret, now_ns);
		parked->rec.event_weight = weight;
		if (weight)
			pbp_send_parked(parked);
		parked->rec.time_ns = 0;
	} else {
		parked = NULL;
	}
	if (time_samples)
		pbp_count_add(parked ? PBP_CNT_TARGET_NS : PBP_CNT_OTHER_NS, bpf_ktime_get_ns() - now_ns);
	return 0;
}

SEC("tp_btf/block_bio_queue")
int BPF_PROG(pbp_block_io, struct bio *bio)
{
	__u64 start_ns = bpf_ktime_get_ns(), pid_tgid = bpf_get_current_pid_tgid();
	const struct py_proc_config *config = pbp_current_target(pid_tgid);
	__u32 bytes = BPF_CORE_READ(bio, bi_iter.bi_size);
	struct pbp_cpu_scratch *scratch;

	/* A flush carries no data: nothing to weigh. */
	if (config && bytes && pbp_period_takes()) {
		scratch = pbp_event_record(ctx, config, pid_tgid, start_ns, bytes);
		if (scratch)
			pbp_send_sample(scratch, NULL);
	}
	if (time_samples)
		pbp_count_add(config ? PBP_CNT_TARGET_NS : PBP_CNT_OTHER_NS, bpf_ktime_get_ns() - start_ns);
	return 0;
}

/* Only the first argument: later kernels appended group_dead. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(pbp_exit, struct task_struct *task)
{
	__u32 tgid = task->tgid, tid = task->pid;

	/* Its thread id will be reused, and so will its fsbase (pthread reuses the stacks of
	 * threads that ended), while its freed thread state still says thread_id == fsbase:
	 * a cached entry would give the next thread the dead one's. */
	bpf_map_delete_elem(&tstate_cache, &tid);
	bpf_map_delete_elem(&off_cpu_blocks, &tid);
	if (task->pid != task->tgid)
		return 0;
	/* Dropped here, not only when userspace reads the notice: a notice lost to a full ring,
	 * or a fork userspace never heard of, would keep the entries (and a reused pid would be
	 * sampled with them). */
	if (bpf_map_lookup_elem(&proc_configs, &tgid)) {
		pbp_send_proc_event(PBP_PROC_EXIT, tgid, 0);
		bpf_map_delete_elem(&proc_configs, &tgid);
		__sync_fetch_and_add(&pbp_code_generation, 1);
	}
	bpf_map_delete_elem(&unwind_procs, &tgid);
	pbp_budget_forget(tgid);
	return 0;
}

#pragma clang diagnostic pop
