/* SPDX-License-Identifier: MIT */
/*
 * Finding the sampled thread's PyThreadState: PyThreadState.thread_id is
 * pthread_self(), which on x86-64 is the thread's fsbase. A tid -> tstate
 * LRU cache answers most samples after one read that revalidates the entry;
 * otherwise a bounded walk of the interpreters' thread lists.
 *
 * A thread that runs code in a subinterpreter has one thread state per
 * interpreter it entered, all with its thread_id: the one it is in is the
 * one whose _status.bound_gilstate is set (3.12+, PY_TSTATE_BOUND_GILSTATE).
 * CPython moves that bit when the thread attaches a thread state of another
 * interpreter and keeps it while the thread releases the GIL (sleep, I/O),
 * whereas _status.active and 3.13's state drop on every release: the bit
 * names the interpreter even of an idle thread, in wall mode. The check
 * costs no extra read: the cached entry is revalidated with one read of
 * _status through thread_id (at most PBP_TSTATE_SPAN_MAX bytes) instead of
 * thread_id alone, so single-interpreter processes pay what they did. Before
 * 3.12 (no such bit; subinterpreters there share one GIL and the issue is
 * not addressed) the first thread state with the thread's id wins.
 */
#ifndef PYBPFPROF_BPF_THREAD_STATE_H
#define PYBPFPROF_BPF_THREAD_STATE_H

#include "maps.h"
#include <bpf/bpf_core_read.h>

#define PBP_MAX_INTERPRETERS 8
#define PBP_MAX_TSTATES_PER_INTERP 256
#define PBP_TSTATE_WALK_STEPS (PBP_MAX_INTERPRETERS * (PBP_MAX_TSTATES_PER_INTERP + 1) + 1)
/* A thread with no thread state is walked for again only after this long. */
/*
 * A thread with no thread state is walked for again after PBP_RETRY_FIRST_NS, then twice as
 * long each time up to PBP_RETRY_LAST_NS: a new Python thread is sampled before CPython binds
 * its thread state, and one that lives 40 ms must not wait 50 ms; a thread that never runs
 * Python (a native worker) costs a walk every PBP_RETRY_LAST_NS.
 */
#define PBP_RETRY_FIRST_NS (1ull * 1000 * 1000)
#define PBP_RETRY_LAST_NS (50ull * 1000 * 1000)

struct pbp_tstate_walk_ctx {
	const struct py_proc_config *config;
	struct pbp_tstate_walk *state;
	struct pbp_record *rec;
	struct task_struct *task;  /* the sampled thread, NULL: the current task (pbp_read_target) */
};

/* The u64 at addr, or 0 (a failed read is counted at site, an enum pbp_error). */
static __always_inline __u64 pbp_read_u64(struct pbp_record *rec, __u64 addr, __u32 site,
					   struct task_struct *task)
{
	__u64 value = 0;

	if (pbp_read_target(&value, sizeof(value), addr, task) != 0) {
		pbp_read_failed(rec, site);
		return 0;
	}
	return value;
}

/* The sampled thread's fsbase (NULL: the current task's), saved in thread.fsbase at its last switch:
 * a thread sets it once, when it starts. */
static __always_inline __u64 pbp_task_fsbase(struct task_struct *task)
{
	if (!task)
		task = bpf_get_current_task_btf();
	return BPF_CORE_READ(task, thread.fsbase);
}

/* How a thread state found by its thread_id stands to the thread. */
enum pbp_tstate_standing {
	PBP_TSTATE_OTHER = 0,   /* not the thread's (freed, reused, another thread's) or unreadable */
	PBP_TSTATE_IDLE = 1,    /* the thread's, but not the one it is in: it runs in another interpreter */
	PBP_TSTATE_CURRENT = 2, /* the thread's, the one it is in (or the version cannot tell) */
};

/* _status's distance before thread_id where one read covers both, else 0 (no _status: every
 * thread state of the thread counts as current). */
static __always_inline __u32 pbp_status_distance(const struct py_offsets *off)
{
	if (off->tstate_status == 0 || off->tstate_status >= off->tstate_thread_id ||
	    off->tstate_thread_id - off->tstate_status >= PBP_TSTATE_SPAN_MAX)
		return 0;
	return off->tstate_thread_id - off->tstate_status;
}

/* Whether tstate, one of the thread's (its thread_id matched), is the one it is in. */
static __always_inline bool pbp_tstate_bound(const struct py_proc_config *config, struct pbp_record *rec,
					     __u64 tstate, struct task_struct *task)
{
	__u32 status = 0;

	if (pbp_status_distance(&config->off) == 0)
		return true;
	if (pbp_read_target(&status, sizeof(status), tstate + config->off.tstate_status, task) != 0) {
		pbp_read_failed(rec, PBP_ERR_TSTATE_STATUS);
		return false;
	}
	return (status & PY_TSTATE_BOUND_GILSTATE) != 0;
}

/* The cached thread state's standing, in one read: thread_id alone, or _status through thread_id. */
static __always_inline enum pbp_tstate_standing pbp_cached_tstate_standing(const struct py_proc_config *config,
									   struct pbp_tstate_walk *state,
									   struct pbp_record *rec, __u64 tstate,
									   __u64 fsbase, struct task_struct *task)
{
	__u32 distance = pbp_status_distance(&config->off);
	__u32 status;

	/* the mask is what bounds the read for the verifier: keep the compiler from dropping it */
	barrier_var(distance);
	distance &= PBP_TSTATE_SPAN_MAX - 1;
	if (distance == 0)
		return pbp_read_u64(rec, tstate + config->off.tstate_thread_id, PBP_ERR_TSTATE_CACHED, task) == fsbase
			       ? PBP_TSTATE_CURRENT : PBP_TSTATE_OTHER;
	if (pbp_read_target(state->span, distance + sizeof(__u64), tstate + config->off.tstate_status, task) != 0) {
		pbp_read_failed(rec, PBP_ERR_TSTATE_CACHED);
		return PBP_TSTATE_OTHER;
	}
	if (*(__u64 *)(state->span + distance) != fsbase)
		return PBP_TSTATE_OTHER;
	status = *(__u32 *)state->span;
	return (status & PY_TSTATE_BOUND_GILSTATE) ? PBP_TSTATE_CURRENT : PBP_TSTATE_IDLE;
}

static long pbp_tstate_walk_step(__u32 index, void *opaque)
{
	struct pbp_tstate_walk_ctx *ctx = opaque;
	const struct py_offsets *off = &ctx->config->off;
	struct pbp_tstate_walk *state = ctx->state;
	__u64 tstate = state->tstate_addr;

	(void)index;
	if (tstate == 0) {
		state->interps_seen += 1;
		if (state->interps_seen >= PBP_MAX_INTERPRETERS || state->interp_addr == 0)
			return 1;
		state->interp_addr = pbp_read_u64(ctx->rec, state->interp_addr + off->interp_next,
						  PBP_ERR_INTERP_NEXT, ctx->task);
		if (state->interp_addr == 0)
			return 1;
		state->tstate_addr = pbp_read_u64(ctx->rec, state->interp_addr + off->interp_threads_head,
						  PBP_ERR_INTERP_THREADS, ctx->task);
		state->tstates_seen = 0;
		return 0;
	}
	if (pbp_read_u64(ctx->rec, tstate + off->tstate_thread_id, PBP_ERR_TSTATE_THREAD_ID, ctx->task) == state->fsbase) {
		bool current = pbp_tstate_bound(ctx->config, ctx->rec, tstate, ctx->task);

		/* the first of the thread's own stands in until the current one is found */
		if (current || state->found_addr == 0) {
			state->found_addr = tstate;
			state->found_interp = state->interp_addr;
			state->found_current = current;
		}
		if (current)
			return 1;
	}
	state->tstates_seen += 1;
	state->tstate_addr = state->tstates_seen >= PBP_MAX_TSTATES_PER_INTERP
				     ? 0 : pbp_read_u64(ctx->rec, tstate + off->tstate_next, PBP_ERR_TSTATE_NEXT, ctx->task);
	return 0;
}

static __always_inline __u64 pbp_walk_for_tstate(const struct py_proc_config *config,
						 struct pbp_tstate_walk *state, struct pbp_record *rec,
						 __u64 fsbase, struct task_struct *task)
{
	struct pbp_tstate_walk_ctx ctx = { .config = config, .state = state, .rec = rec, .task = task };

	state->fsbase = fsbase;
	state->found_addr = 0;
	state->found_interp = 0;
	state->found_current = 0;
	state->interps_seen = 0;
	state->tstates_seen = 0;
	state->interp_addr = pbp_read_u64(rec, config->interp_head_addr, PBP_ERR_INTERP_HEAD, task);
	if (state->interp_addr == 0)
		return 0;
	state->tstate_addr = pbp_read_u64(rec, state->interp_addr + config->off.interp_threads_head,
					  PBP_ERR_INTERP_THREADS, task);
	bpf_loop(PBP_TSTATE_WALK_STEPS, pbp_tstate_walk_step, &ctx, 0);
	return state->found_addr;
}

/* Its interpreter's id, read once per walk (it is cached with the thread state). */
static __always_inline __u64 pbp_read_interp_id(const struct py_proc_config *config,
						struct pbp_record *rec, __u64 interp, struct task_struct *task)
{
	if (interp == 0 || config->off.interp_id == PY_OFF_NONE)
		return 0;
	return pbp_read_u64(rec, interp + config->off.interp_id, PBP_ERR_INTERP_ID, task);
}

/*
 * The sampled thread's (rec->tid; task, NULL: the current one) PyThreadState address, or 0 if
 * it has none; sets rec->interp_id. A thread none of whose thread states is current (one being
 * created or deleted as it enters or leaves an interpreter) stays in the cached one while that
 * is still its own.
 */
static __always_inline __u64 pbp_find_tstate(const struct py_proc_config *config,
					     struct pbp_tstate_walk *state, struct pbp_record *rec,
					     struct task_struct *task)
{
	__u32 tid = rec->tid;
	__u64 now_ns = rec->time_ns;
	__u64 fsbase = pbp_task_fsbase(task);
	struct pbp_tstate_cache_entry *cached = bpf_map_lookup_elem(&tstate_cache, &tid);
	struct pbp_tstate_cache_entry fresh = { .checked_ns = now_ns };
	struct pbp_tstate_cache_entry kept = {};
	enum pbp_tstate_standing standing = PBP_TSTATE_OTHER;

	if (fsbase == 0)
		return 0;
	if (cached) {
		kept = *cached;
		if (kept.tstate_addr == 0) {
			if (now_ns - kept.checked_ns < kept.retry_ns)
				return 0;
		} else {
			standing = pbp_cached_tstate_standing(config, state, rec, kept.tstate_addr, fsbase, task);
			if (standing == PBP_TSTATE_CURRENT) {
				rec->interp_id = (__u32)kept.interp_id;
				return kept.tstate_addr;
			}
		}
	}
	fresh.tstate_addr = pbp_walk_for_tstate(config, state, rec, fsbase, task);
	if (!state->found_current && standing == PBP_TSTATE_IDLE) {
		rec->interp_id = (__u32)kept.interp_id;
		return kept.tstate_addr;
	}
	fresh.interp_id = fresh.tstate_addr ? pbp_read_interp_id(config, rec, state->found_interp, task) : 0;
	if (fresh.tstate_addr == 0)
		fresh.retry_ns = cached && kept.tstate_addr == 0 && kept.retry_ns < PBP_RETRY_LAST_NS / 2
					 ? 2 * kept.retry_ns
				 : cached && kept.tstate_addr == 0 ? PBP_RETRY_LAST_NS
								   : PBP_RETRY_FIRST_NS;
	bpf_map_update_elem(&tstate_cache, &tid, &fresh, BPF_ANY);
	rec->interp_id = (__u32)fresh.interp_id;
	return fresh.tstate_addr;
}

/* A thread that does not hold the GIL may be waiting for it, where the version says so (3.15+). */
static __always_inline void pbp_fill_gil_request(const struct py_proc_config *config, struct pbp_record *rec,
						 struct task_struct *task)
{
	__s32 requested = 0;

	if (!(config->flags & PY_PROC_HAS_GIL_REQUEST) || (rec->flags & PBP_REC_HAS_GIL))
		return;
	if (pbp_read_target(&requested, sizeof(requested), rec->tstate_addr + config->tstate_gil_requested,
			    task) != 0) {
		pbp_read_failed(rec, PBP_ERR_GIL_REQUESTED);
		return;
	}
	if (requested)
		rec->flags |= PBP_REC_GIL_REQUESTED;
}

/*
 * The name of the task the record runs, copied now (two reads): many tasks (a request's) end
 * within milliseconds, before userspace drains the record, and a task that ended cannot be read
 * then, or reads as another one that took its address. The copy is bounded by its page: a name
 * object at a mapping's end still gives its first bytes.
 */
static __always_inline void pbp_copy_task_name(const struct py_proc_config *config, struct pbp_cpu_scratch *scratch,
					       __u64 running_task, struct task_struct *task)
{
	struct pbp_task_name *copy = &scratch->task_name;
	__u64 name = 0, to_page_end;
	__u32 len = PBP_TASK_NAME_BYTES;

	if (!config->task_name || !running_task ||
	    pbp_read_target(&name, sizeof(name), running_task + config->task_name, task) != 0)
		return;
	copy->name_addr = name;
	copy->copied = 0;
	copy->reserved = 0;
	scratch->has_task_name = 1;
	if (!name)
		return;
	to_page_end = 4096 - (name & PBP_PAGE_MASK);
	if (pbp_read_target(copy->bytes, PBP_TASK_NAME_BYTES, name, task) != 0) {
		if (to_page_end >= PBP_TASK_NAME_BYTES)
			return;
		len = (__u32)to_page_end;
		if (len == 0 || len > PBP_TASK_NAME_BYTES ||
		    pbp_read_target(copy->bytes, len & (PBP_TASK_NAME_BYTES * 2 - 1), name, task) != 0)
			return;
	}
	copy->copied = len;
}

/*
 * The asyncio Task the thread runs now (3.14+ keep it in the thread state): one read, so that
 * userspace can put the sample under the task's name and the tasks awaiting it. Userspace reads
 * that chain while the task lives (many live for milliseconds): a task this CPU had not sent
 * last wakes the consumer as a new code object does (pbp_send).
 */
static __always_inline void pbp_fill_running_task(const struct py_proc_config *config, struct pbp_cpu_scratch *scratch,
						  struct task_struct *task)
{
	struct pbp_record *rec = &scratch->out.rec;

	if (!(config->flags & PY_PROC_HAS_ASYNCIO))
		return;
	rec->running_task = pbp_read_u64(rec, rec->tstate_addr + config->tstate_running_task, PBP_ERR_RUNNING_TASK,
					 task);
	pbp_copy_task_name(config, scratch, rec->running_task, task);
	if (rec->running_task && rec->running_task != scratch->last_running_task) {
		scratch->last_running_task = rec->running_task;
		scratch->new_task = 1;
	}
}

/*
 * 3.11-3.13 keep no running task in the thread state: the walk left the outermost coroutine in
 * running_task, and the task stepping it is the one of _current_tasks (an entry per running
 * loop) whose task_coro it is. At most 3 + 2 * PY_CURRENT_TASKS_SCAN reads, for a thread
 * running a coroutine of a target that imported asyncio. A task this CPU had not sent last
 * wakes the consumer.
 */
static __always_inline void pbp_find_current_task(const struct py_proc_config *config,
						  struct pbp_cpu_scratch *scratch, struct task_struct *task)
{
	struct pbp_record *rec = &scratch->out.rec;
	__u64 coro = rec->running_task, keys, count, entries;
	__u8 log2_index_bytes = 0;

	if (!(config->flags & PY_PROC_CORO_FROM_FRAMES) || !coro)
		return;
	if (config->current_tasks_addr &&
	    (keys = pbp_read_u64(rec, config->current_tasks_addr + config->dict_keys, PBP_ERR_RUNNING_TASK, task)) &&
	    pbp_read_target(&log2_index_bytes, 1, keys + config->keys_log2_index_bytes, task) == 0 &&
	    log2_index_bytes < 32) {
		count = pbp_read_u64(rec, keys + config->keys_nentries, PBP_ERR_RUNNING_TASK, task);
		entries = keys + config->keys_indices + (1ull << log2_index_bytes);
		for (__u32 i = 0; i < PY_CURRENT_TASKS_SCAN && i < count; i++) {
			/* {hash, key, value}: a removed entry's value is NULL */
			__u64 candidate = pbp_read_u64(rec, entries + 24 * i + 16, PBP_ERR_RUNNING_TASK, task);

			if (candidate &&
			    pbp_read_u64(rec, candidate + config->task_coro, PBP_ERR_RUNNING_TASK, task) == coro) {
				rec->running_task = candidate;
				rec->flags |= PBP_REC_ASYNC_TASK;
				pbp_copy_task_name(config, scratch, candidate, task);
				break;
			}
		}
	}
	/* a plain generator's (of a program without asyncio) wakes no one */
	if ((rec->flags & PBP_REC_ASYNC_TASK) && rec->running_task != scratch->last_running_task) {
		scratch->last_running_task = rec->running_task;
		scratch->new_task = 1;
	}
}

/*
 * The GC runs in the thread that holds the GIL, so the interpreter's collecting flag marks that
 * thread's sample only (or any thread's where the holder is not known). After pbp_fill_gil: a
 * thread that does not hold the GIL costs no read.
 */
/* Whether the thread is raising an exception (one propagates: the thread state's raised one is
 * set) or handling one (its topmost exception stack item holds an exception, not NULL or None).
 * A failed read is taken as no exception: the sample is not kept. */
static __always_inline bool pbp_thread_has_exception(const struct py_proc_config *config, __u64 tstate_addr,
						     struct task_struct *task)
{
	const struct py_offsets *off = &config->off;
	__u64 raised = 0, item = tstate_addr, value = 0, type = 0, type_flags = 0;

	if (off->exc_item_value == PY_OFF_NONE || off->type_flags == PY_OFF_NONE)
		return false;
	if (off->tstate_raised != PY_OFF_NONE &&
	    pbp_read_target(&raised, sizeof(raised), tstate_addr + off->tstate_raised, task) == 0 && raised)
		return true;
	if (off->tstate_exc_info != PY_OFF_NONE &&
	    (pbp_read_target(&item, sizeof(item), tstate_addr + off->tstate_exc_info, task) != 0 || !item))
		return false;
	if (pbp_read_target(&value, sizeof(value), item + off->exc_item_value, task) != 0 || !value)
		return false;
	if (pbp_read_target(&type, sizeof(type), value + PY_OBJECT_TYPE, task) != 0 || !type)
		return false;
	if (pbp_read_target(&type_flags, sizeof(type_flags), type + off->type_flags, task) != 0)
		return false;
	return (type_flags & off->exc_handled_flag) != 0;
}

static __always_inline void pbp_fill_gc(const struct py_proc_config *config, struct pbp_record *rec,
					struct task_struct *task)
{
	__s32 collecting = 0;

	if (!(config->flags & PY_PROC_HAS_GC_FLAG))
		return;
	if ((config->flags & PY_PROC_HAS_GIL_HOLDER) && !(rec->flags & PBP_REC_HAS_GIL))
		return;
	if (pbp_read_target(&collecting, sizeof(collecting), config->gc_collecting_addr, task) != 0) {
		pbp_read_failed(rec, PBP_ERR_GC);
		return;
	}
	if (collecting)
		rec->flags |= PBP_REC_GC;
}

#endif
