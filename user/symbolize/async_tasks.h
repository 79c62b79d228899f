/* SPDX-License-Identifier: MIT */
/*
 * The asyncio tasks above a sample: BPF records the Task its thread was running (3.14+ keep it
 * in the thread state); from it, the chain of tasks awaiting one another is read out of the
 * target (each task's awaited_by), and for each awaiting task where it is suspended (its
 * coroutine and the coroutines it awaits, down to the one awaiting the next task). A sample
 * then reads root to leaf as "<task OUTER>", its coroutine frames, ..., "<task RUNNING>", and
 * the running coroutine's own frames from the sample.
 *
 * 3.11-3.13 keep neither: BPF finds the running task in the _asyncio module's _current_tasks
 * (or records the coroutine it steps, whose task is looked up here), and the task awaiting
 * one is the one its done callbacks wake (async_tasks_task_of_coroutine). Their tasks are
 * listed per process (async_tasks_of_thread).
 *
 * Target memory is hostile: every chain is bounded (tasks, coroutines, frames, name length),
 * an awaited_by cycle ends the chain, and each call costs at most ASYNC_TASKS_READS_PER_CALL
 * reads.
 * Chains are read as records arrive (async_tasks_read, while the task still runs: many live
 * for milliseconds) and kept per (process, task) in a table of ASYNC_TASKS_SLOTS: a record of
 * a task whose name, coroutine and awaited_by are those of its kept chain, read less than
 * ASYNC_TASKS_REFRESH_NS before, costs one read (the task object); a parent's suspension
 * point is read again at least that often.
 */
#ifndef PYBPFPROF_ASYNC_TASKS_H
#define PYBPFPROF_ASYNC_TASKS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "profile/profile.h"
#include "python/py_discover.h"

struct symbolize_py_cache;

/* Tasks followed up one chain (a deeper one keeps its innermost tasks). */
#define ASYNC_TASKS_MAX_DEPTH 32
/* Coroutines followed down from a suspended task (await b() inside a: b's frame, ...). */
#define ASYNC_TASKS_MAX_COROUTINES 64
/* Frames of one chain: task frames and their coroutines' frames together. */
#define ASYNC_TASKS_MAX_FRAMES 256
/*
 * Reads of target memory one call may make (a chain read, a waiting task's stack, a task of a
 * tree), whatever the target holds: a hostile one (a set of 64 dummies, 64 coroutines per task)
 * ends its chain there. The code objects read to name frames are symbolize_py's (cached, and
 * budgeted there).
 */
#define ASYNC_TASKS_READS_PER_CALL 512
/* A task's name is cut to this many characters. */
#define ASYNC_TASKS_NAME_CHARS 256
/* Task names of every target together; past it new names read as ASYNC_TASKS_NAME_OVER_BUDGET. */
#define ASYNC_TASKS_MAX_NAME_BYTES ((size_t)8 << 20)
#define ASYNC_TASKS_NAME_OVER_BUDGET "<task>"
/* Chains kept (one per slot, a new task taking its slot's): at most this many times
 * ASYNC_TASKS_MAX_FRAMES frames. */
#define ASYNC_TASKS_SLOTS 1024
/* How long a chain is trusted for a task whose own fields have not changed. */
#define ASYNC_TASKS_REFRESH_NS (1000ull * 1000 * 1000)
/* The file of a task's frame ("<task NAME>", kind PF_FRAME_PYTHON, no line). */
#define ASYNC_TASKS_FRAME_FILE "<asyncio>"

/* One task and what awaits it. */
struct async_chain {
	uint64_t chain_id;      /* differs for every chain built (never 0): what stacks are kept by */
	uint64_t coro_code;     /* the task's own coroutine's code object: where its frames start */
	uint64_t stack_id;      /* a pending task's stack: its pf_sample.stack_id (0: none yet) */
	size_t frame_count;
	struct pf_frame frames[]; /* root first: the outermost awaiting task ... "<task TASK>" */
};

/* Tasks listed as awaiting one task of a tree (a longer list is cut). */
#define ASYNC_TASKS_AWAITERS_MAX 8

/* One suspended task of a tree (async_tasks_tree). */
struct async_task_node {
	uint64_t address;
	uint64_t awaited_by;    /* the task a sample's chain goes up through: awaiters[0], 0 if none */
	uint64_t awaiters[ASYNC_TASKS_AWAITERS_MAX]; /* every task awaiting it (a shared one: several) */
	size_t awaiter_count;
	const char *name;       /* "<task NAME>" as frames show it */
	size_t frame_count;     /* where it is suspended, root first */
	struct pf_frame frames[ASYNC_TASKS_MAX_COROUTINES];
};

struct async_tasks;

struct async_tasks *async_tasks_new(void);
void async_tasks_free(struct async_tasks *tasks);
struct target_budget;
/* The chains kept are charged to budget (util/target_budget.h, outliving the table's use) as
 * store "task chains"; past it the least recently used half goes, and a chain that still does
 * not fit is not kept (read again when next sampled). Before the first read. 0 or -ENOSPC. */
int async_tasks_set_budget(struct async_tasks *tasks, struct target_budget *budget);
/* Every chain read from a task goes (read again when next sampled): its frames' names are
 * the code-object cache's, and about to go (symbolize_py_compact_names). */
void async_tasks_forget_chains(struct async_tasks *tasks);

/*
 * Reads the chain of the task at task_addr in target (its asyncio layout known), sampled at
 * now_ns, unless the one kept is still good. 0, or -ENOENT (not a task of this layout, or one
 * that finished), a read error, -ENOMEM. python names the coroutines' frames.
 */
int async_tasks_read(struct async_tasks *tasks, struct symbolize_py_cache *python, const struct py_target *target,
		     uint64_t task_addr, uint64_t now_ns);
/*
 * The chain of that task: the one kept when read for a time less than ASYNC_TASKS_REFRESH_NS
 * from now_ns (the record was prefetched), else read now. *out valid until the next call.
 * Errors as async_tasks_read.
 */
int async_tasks_chain(struct async_tasks *tasks, struct symbolize_py_cache *python, const struct py_target *target,
		      uint64_t task_addr, uint64_t now_ns, const struct async_chain **out);

struct pbp_task_name;
/*
 * The name BPF copied of a record's running task at its sample (include/sample_record.h,
 * PBP_REC_TASK_NAME) as its frame shows it, "<task NAME>" (a compact ASCII str, cut at the
 * copy's end with "...", or the int of a lazy "Task-n"); NULL if the copy holds none of those.
 * At most one read (the name's type's flags, kept per type).
 */
const char *async_tasks_copied_name(struct async_tasks *tasks, const struct py_target *target,
				    const struct pbp_task_name *copy);
/*
 * The chain of a task known by its frame's name alone (name as async_tasks_copied_name gives it,
 * or async_tasks_unknown_name): that frame, above the coroutine frame of coro_code. For a task
 * that ended before its record was drained: the tasks that awaited it are not known. Kept per
 * (name, coro_code), *out valid until the next call. 0 or -ENOMEM.
 */
int async_tasks_named_chain(struct async_tasks *tasks, const char *name, uint64_t coro_code,
			    const struct async_chain **out);
/* "<task ?>": a task whose name could not be known. */
const char *async_tasks_unknown_name(struct async_tasks *tasks);

/*
 * Wall mode: every task of a thread that is not running is a sample of where it is suspended,
 * at most this many per thread and pass (a longer list is cut).
 */
#define ASYNC_TASKS_PENDING_MAX 256

/*
 * The stack of a task that is not running, root first: the tasks awaiting it and where each is
 * suspended, "<task NAME>", then its own coroutines down to the one that awaits (a future, a
 * sleep, I/O). Kept per (pid, task) while each of its own coroutines stays where it was (one
 * read each), at most ASYNC_TASKS_REFRESH_NS.
 * *out valid until the next call (its stack_id the caller's to set). Errors as async_tasks_read.
 */
int async_tasks_pending(struct async_tasks *tasks, struct symbolize_py_cache *python, const struct py_target *target,
			uint64_t task_addr, uint64_t now_ns, struct async_chain **out);

/* Tasks listed per thread for a tree (a longer list, or one that does not end, is cut). */
#define ASYNC_TASKS_TREE_MAX 4096

/*
 * The tasks of the thread whose thread state is at tstate (3.14+ link each task into the list of
 * the thread that made it), into out[max] by address; their count. The list is walked at most
 * ASYNC_TASKS_TREE_MAX steps and stops at a node that cannot be read.
 * 3.11-3.13 list a process's tasks only (the _asyncio module's sets of them): a thread's are
 * those whose loop is the one it runs, at most ASYNC_TASKS_TREE_MAX slots of each set looked
 * at, the list read at a record's time now_ns kept for 1 ms of record time (the records of
 * one pass share it).
 */
size_t async_tasks_of_thread(struct async_tasks *tasks, const struct py_target *target, uint64_t tstate,
			     uint64_t now_ns, uint64_t *out, size_t max);

/*
 * One task read at now_ns (a record's time) for a tree: its name, the task awaiting it and
 * where it is suspended. 0, or as async_tasks_chain.
 */
int async_tasks_read_node(struct async_tasks *tasks, struct symbolize_py_cache *python,
			  const struct py_target *target, uint64_t task_addr, uint64_t now_ns, struct async_task_node *node);

/*
 * 3.11-3.13 (the layout's from_callbacks): the task stepping the coroutine at coro (what BPF
 * records there as running_task), 0 if none is known. Found in the _asyncio module's
 * _current_tasks while the coroutine runs, then kept while the task still holds it (one read).
 * There the task awaiting one is found through its done callbacks: a task's wakeup, a
 * TaskGroup's (its _parent_task), gather's (the future it closes over, which wakes its task).
 */
uint64_t async_tasks_task_of_coroutine(struct async_tasks *tasks, const struct py_target *target, uint64_t coro,
				       uint64_t now_ns);
/*
 * 3.11-3.13: the address of target's _asyncio._current_tasks, where BPF (and, until BPF has
 * it, async_tasks_task_of_coroutine) finds running tasks: py_proc_config.current_tasks_addr.
 * 0 while asyncio is not imported. Looked for through sys.modules: at most a few thousand
 * reads, the caller's to space out.
 */
uint64_t async_tasks_find_current_tasks(const struct py_target *target);
/* 3.11-3.13: a task BPF found in _current_tasks, whose type is then that of target's tasks. */
void async_tasks_note_task(struct async_tasks *tasks, const struct py_target *target, uint64_t task, uint64_t now_ns);

#endif
