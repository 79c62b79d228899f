// SPDX-License-Identifier: MIT
/*
 * The sample path: on every cpu-clock tick that lands in a target process,
 * one ring-buffer record with the thread's Python stack (leaf first) and
 * kernel stack. Plus exec/exit notices on a second, low-rate ring buffer.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "frame_walk.h"
#include "maps.h"
#include "native_walk.h"
#include "thread_state.h"

char LICENSE[] SEC("license") = "GPL";

const volatile bool kernel_stacks = true;
const volatile bool watch_exec = false;
const volatile bool follow_forks = false;
/* Unwind the user-space native stack from the unwind_* maps. */
const volatile bool native_stacks = false;
/* Wake the consumer once this much is waiting (0: never; it consumes on a timer). */
const volatile __u64 wakeup_bytes = 0;

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
					 struct pbp_record *rec)
{
	__u64 holder_addr = config->gil_holder_addr, locked_addr = config->gil_locked_addr;
	__u64 low = holder_addr < locked_addr ? holder_addr : locked_addr;
	__u64 distance = (holder_addr < locked_addr ? locked_addr : holder_addr) - low;
	__u64 holder = 0;
	__s32 locked = 0;

	if (!(config->flags & PY_PROC_HAS_GIL_HOLDER))
		return;
	if (distance < PBP_GIL_SPAN_MAX) {
		if (bpf_probe_read_user(scratch->gil_buf, distance + sizeof(__u64), (const void *)low) != 0) {
			pbp_read_failed(rec, PBP_ERR_GIL);
			return;
		}
		locked = *(__s32 *)(scratch->gil_buf + ((locked_addr - low) & (PBP_GIL_SPAN_MAX - 1)));
		holder = *(__u64 *)(scratch->gil_buf + ((holder_addr - low) & (PBP_GIL_SPAN_MAX - 1)));
	} else if (bpf_probe_read_user(&locked, sizeof(locked), (const void *)locked_addr) != 0 ||
		   bpf_probe_read_user(&holder, sizeof(holder), (const void *)holder_addr) != 0) {
		pbp_read_failed(rec, PBP_ERR_GIL);
		return;
	}
	if (locked && holder == rec->tstate_addr)
		rec->flags |= PBP_REC_HAS_GIL;
}

static __always_inline void pbp_fill_python(const struct py_proc_config *config,
					    struct pbp_cpu_scratch *scratch)
{
	struct pbp_record *rec = &scratch->out.rec;
	__u64 tstate_addr = pbp_find_tstate(config, &scratch->tswalk, rec);

	if (tstate_addr == 0) {
		rec->flags |= PBP_REC_NO_TSTATE;
		pbp_count(PBP_CNT_NO_TSTATE);
		return;
	}
	rec->tstate_addr = tstate_addr;
	pbp_fill_gil(config, scratch, rec);
	rec->py_frame_count = pbp_walk_frames(config, scratch, tstate_addr);
	rec->flags |= scratch->walk.flags;
	if (scratch->walk.flags & PBP_REC_READ_FAULT)
		pbp_count(PBP_CNT_READ_FAULTS);
	if (scratch->walk.flags & PBP_REC_PY_TRUNCATED)
		pbp_count(PBP_CNT_TRUNCATED);
}

/* The kernel stack goes right after the Python frames and the native pcs. */
static __always_inline __u32 pbp_fill_kernel_stack(struct bpf_perf_event_data *ctx,
						   struct pbp_cpu_scratch *scratch)
{
	__u32 first = 2 * (__u32)scratch->out.rec.py_frame_count + scratch->out.rec.native_frame_count;
	long bytes;

	if (first > PBP_SAMPLE_WORDS - PBP_MAX_KERNEL_FRAMES)
		return 0;
	bytes = bpf_get_stack(ctx, &scratch->out.words[first], PBP_MAX_KERNEL_FRAMES * sizeof(__u64), 0);
	return bytes > 0 ? (__u32)bytes / sizeof(__u64) : 0;
}

static __always_inline void pbp_send(struct pbp_cpu_scratch *scratch)
{
	struct pbp_record *rec = &scratch->out.rec;
	__u64 len = sizeof(*rec) + (__u64)rec->py_frame_count * sizeof(struct pbp_py_frame) +
		    ((__u64)rec->native_frame_count + rec->kernel_frame_count) * sizeof(__u64);
	__u64 wakeup = BPF_RB_NO_WAKEUP;

	if (len > sizeof(scratch->out))
		len = sizeof(scratch->out);
	if (wakeup_bytes && bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes)
		wakeup = BPF_RB_FORCE_WAKEUP;
	/* New code objects are read by the consumer before they can be freed. A wakeup costs
	 * more than a sample: none while the last one from this CPU is still unanswered (the
	 * consumer has not moved since), as that consumer will see this record too. */
	if (scratch->walk.new_code) {
		__u64 consumer_mark = bpf_ringbuf_query(&events, BPF_RB_CONS_POS) + 1;

		if (consumer_mark != scratch->wakeup_consumer_mark) {
			wakeup = BPF_RB_FORCE_WAKEUP;
			scratch->wakeup_consumer_mark = consumer_mark;
		}
	}
	if (bpf_ringbuf_output(&events, &scratch->out, len, wakeup) != 0)
		pbp_count(PBP_CNT_LOST);
	else if (wakeup == BPF_RB_FORCE_WAKEUP)
		pbp_count(PBP_CNT_WAKEUPS);
}

SEC("perf_event")
int pbp_sample(struct bpf_perf_event_data *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	__u32 zero = 0;
	const struct py_proc_config *config = bpf_map_lookup_elem(&proc_configs, &tgid);
	struct pbp_cpu_scratch *scratch;
	struct pbp_record *rec;
	bool user_mode;

	if (!config)
		return 0;
	scratch = bpf_map_lookup_elem(&cpu_scratch, &zero);
	if (!scratch)
		return 0;
	pbp_count(PBP_CNT_SAMPLES);
	user_mode = pbp_sampled_user_mode(ctx);
	rec = &scratch->out.rec;
	rec->time_ns = bpf_ktime_get_ns();
	rec->tstate_addr = 0;
	rec->pid = tgid;
	rec->tid = (__u32)pid_tgid;
	rec->cpu = bpf_get_smp_processor_id();
	rec->flags = user_mode ? PBP_REC_USER_MODE : 0;
	rec->py_frame_count = 0;
	rec->kernel_frame_count = 0;
	rec->interp_id = 0;
	rec->error = PBP_ERR_NONE;
	rec->native_stop = UNWIND_STOP_NOT_WALKED;
	rec->native_frame_count = 0;
	__builtin_memset(rec->reserved, 0, sizeof(rec->reserved));
	rec->user_ip = user_mode ? PT_REGS_IP(&ctx->regs) : 0;
	scratch->walk.new_code = 0;
	scratch->walk.shim_count = 0;

	if (!(config->flags & PY_PROC_PENDING))
		pbp_fill_python(config, scratch);
	if (native_stacks)
		pbp_walk_native(ctx, scratch, user_mode);
	/* An interrupted user-mode thread has no kernel stack to report. */
	if (kernel_stacks && !user_mode)
		rec->kernel_frame_count = pbp_fill_kernel_stack(ctx, scratch);
	pbp_send(scratch);
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
	if (config)
		config->flags |= PY_PROC_PENDING;
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

/* Only the first argument: later kernels appended group_dead. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(pbp_exit, struct task_struct *task)
{
	__u32 tgid = task->tgid;

	if (task->pid != task->tgid)
		return 0;
	/* Dropped here, not only when userspace reads the notice: a notice lost to a full ring,
	 * or a fork userspace never heard of, would keep the entries (and a reused pid would be
	 * sampled with them). */
	if (bpf_map_lookup_elem(&proc_configs, &tgid)) {
		pbp_send_proc_event(PBP_PROC_EXIT, tgid, 0);
		bpf_map_delete_elem(&proc_configs, &tgid);
	}
	bpf_map_delete_elem(&unwind_procs, &tgid);
	return 0;
}

#pragma clang diagnostic pop
