// SPDX-License-Identifier: MIT
#include "symbolize/async_tasks.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sample_record.h"
#include "symbolize/symbolize_py.h"
#include "python/py_thread_name.h"
#include "proc/target_mem.h"
#include "util/intern.h"
#include "util/hash.h"
#include "util/target_budget.h"

/* Py_TPFLAGS_LONG_SUBCLASS / Py_TPFLAGS_UNICODE_SUBCLASS (every 3.x). */
#define TPFLAGS_LONG_SUBCLASS (1ull << 24)
#define TPFLAGS_UNICODE_SUBCLASS (1ull << 28)
/* 3.12+ ints: lv_tag holds the digit count above its three low bits (sign and flags). */
#define LONG_DIGIT_COUNT(tag) ((tag) >> 3)
#define LONG_DIGIT_BITS 30
/* A _PyStackRef's tag bits (3.14+): the object is the rest. */
#define STACKREF_TAG_BITS 3ull
/* Set slots looked at for an awaiting task: gather and TaskGroup add one task. */
#define AWAITED_BY_SLOTS 64
/* The generator and its embedded frame, up to the last field read. */
#define GEN_READ_MAX 512u

/* What a task object holds that its chain depends on. */
struct task_fields {
	uint64_t name, awaited_by, coro;
	uint8_t is_task, awaited_by_is_set;
	uint64_t callbacks; /* from_callbacks: the list of more done callbacks (awaited_by: the first) */
};

/* A coroutine of a suspended chain, where it was read: while each stays where it is, so does
 * the chain (a coroutine suspended at one await awaits one object; a coroutine freed and its
 * address taken by another, of other code, is somewhere else). */
struct coroutine_level {
	uint64_t gen, instr;
	int8_t state;
};

struct chain_slot {
	uint32_t pid;
	uint64_t task;
	struct task_fields fields;  /* as the chain was read */
	uint64_t read_ns;           /* the record time it was read for */
	struct coroutine_level *levels;   /* a pending task's own coroutines, as read (in chain's allocation) */
	size_t level_count;
	uint64_t used;              /* the table's clock when last looked up */
	struct async_chain *chain;  /* malloc'd, its frames with it */
	size_t chain_bytes;         /* its allocation, as charged to the target budget */
};

/* A code object's checksum as read, trusted for ASYNC_TASKS_REFRESH_NS (a freed code object's
 * address taken by another in that time would name its frames after the first). */
struct checksum_slot {
	uint32_t pid, checksum;
	uint64_t code, read_ns;
};
#define CHECKSUM_SLOTS 4096

/*
 * 3.11-3.13: a coroutine BPF saw running, and the task found stepping it (in the _asyncio
 * module's _current_tasks while the coroutine ran). A coroutine is one task's for its life:
 * kept while the task still holds it (one read).
 */
struct coro_slot {
	uint32_t pid;
	uint64_t coro, task;
};
#define CORO_SLOTS 4096

/* 3.11-3.13: the type of the tasks a process ran (learned from one in _current_tasks), that
 * a task found through a callback must have. */
struct loop_slot {
	uint32_t pid;
	uint64_t task_type;
	/* where its tasks are listed: the set (a WeakSet's `data`) of all tasks, and 3.12+'s set of
	 * eager ones (tasks themselves), looked for again after TASK_SETS_LOOK_NS while not found */
	uint64_t all_tasks, eager_tasks, sets_looked_ns;
	bool sets_looked;
};
#define LOOP_SLOTS 256
/* Entries of a dict scanned for a key (sys.modules of a large application holds thousands). */
#define DICT_SCAN_MAX 8192u
/* Loops running a task at once in one process (one per thread). */
#define CURRENT_TASKS_MAX 64u
/* Done callbacks of a task looked at for one awaiting it, and the depth of the search through
 * gather's callback (its closure's future, that future's callbacks). */
#define CALLBACKS_MAX 8u
#define CLOSURE_CELLS_MAX 8u
#define CALLBACK_DEPTH 2

/* 3.11-3.13: the tasks of one event loop as listed from its process's sets of tasks, kept
 * TASK_LIST_REFRESH_NS: every thread's record of a pass shares one read, but the next pass
 * reads it again (a request's task may live a few milliseconds: kept longer, the tasks made
 * since would be missed, and the list would favour old tasks). */
struct task_list {
	uint32_t pid;
	uint64_t loop, listed_ns;
	size_t count;
	uint64_t tasks[ASYNC_TASKS_TREE_MAX];
};
#define TASK_LISTS 4
#define TASK_LIST_REFRESH_NS (1000ull * 1000)
#define TASK_SETS_LOOK_NS (1000ull * 1000 * 1000)
/* Set slots read at once while listing tasks. */
#define SET_CHUNK 256u

/* A type's tp_flags, read once per (process, type): a name BPF copied says its type only. */
struct type_flags_slot {
	uint32_t pid;
	uint64_t type, flags;
};
#define TYPE_FLAGS_SLOTS 64

/* The chain of a task known only by the name BPF copied (async_tasks_named_chain): one frame. */
struct named_slot {
	const char *name; /* interned "<task NAME>" */
	uint64_t coro_code;
	struct async_chain *chain;
};
#define NAMED_SLOTS 1024

struct async_tasks {
	struct checksum_slot checksums[CHECKSUM_SLOTS];
	struct type_flags_slot type_flags[TYPE_FLAGS_SLOTS];
	struct named_slot named[NAMED_SLOTS];
	struct task_list lists[TASK_LISTS];
	struct coro_slot coros[CORO_SLOTS];
	struct loop_slot loops[LOOP_SLOTS];
	uint64_t now_ns;            /* the record time of the call under way */
	struct chain_slot *slots;   /* [ASYNC_TASKS_SLOTS], by (pid, task): running tasks' chains */
	struct chain_slot *pending; /* [ASYNC_TASKS_SLOTS] likewise: pending tasks' stacks */
	struct intern_table names;  /* "<task NAME>" */
	struct target_budget *budget; /* NULL: none; else the chains are charged to it */
	int budget_store;
	uint64_t last_chain_id;
	uint64_t clock;             /* ticks at every slot lookup */
	unsigned reads_left;        /* of the call under way (ASYNC_TASKS_READS_PER_CALL) */
	struct pf_frame frames[ASYNC_TASKS_MAX_FRAMES]; /* a chain being read */
	struct coroutine_level levels[ASYNC_TASKS_MAX_COROUTINES]; /* a pending task's coroutines being read */
};

/* A read of target memory charged to the call under way: -E2BIG once its budget is spent. */
static int charged_read(struct async_tasks *tasks, pid_t pid, uint64_t addr, void *buffer, size_t len)
{
	if (tasks->reads_left == 0)
		return -E2BIG;
	tasks->reads_left--;
	return target_mem_read(pid, addr, buffer, len);
}

static int charged_u64(struct async_tasks *tasks, pid_t pid, uint64_t addr, uint64_t *value)
{
	return charged_read(tasks, pid, addr, value, sizeof(*value));
}

/* A public call starts with a fresh budget of reads, at the record time now_ns. */
static void begin_call(struct async_tasks *tasks, uint64_t now_ns)
{
	tasks->reads_left = ASYNC_TASKS_READS_PER_CALL;
	tasks->now_ns = now_ns;
}

struct async_tasks *async_tasks_new(void)
{
	struct async_tasks *tasks = calloc(1, sizeof(*tasks));

	if (!tasks)
		return NULL;
	tasks->slots = calloc(ASYNC_TASKS_SLOTS, sizeof(*tasks->slots));
	tasks->pending = calloc(ASYNC_TASKS_SLOTS, sizeof(*tasks->pending));
	if (!tasks->slots || !tasks->pending) {
		free(tasks->slots);
		free(tasks->pending);
		free(tasks);
		return NULL;
	}
	intern_init(&tasks->names);
	return tasks;
}

void async_tasks_free(struct async_tasks *tasks)
{
	if (!tasks)
		return;
	for (size_t i = 0; i < ASYNC_TASKS_SLOTS; i++) {
		free(tasks->slots[i].chain);
		free(tasks->pending[i].chain);
	}
	for (size_t i = 0; i < NAMED_SLOTS; i++)
		free(tasks->named[i].chain);
	free(tasks->slots);
	free(tasks->pending);
	intern_free(&tasks->names);
	free(tasks);
}

static uint64_t u64_at(const uint8_t *object, uint32_t offset)
{
	uint64_t value;

	memcpy(&value, object + offset, sizeof(value));
	return value;
}

static struct loop_slot *loop_of(struct async_tasks *tasks, pid_t pid)
{
	return &tasks->loops[hash_combine((uint64_t)(uint32_t)pid, 0) % LOOP_SLOTS];
}

/* Whether the object at addr is of type wanted or of a type derived from it. */
static bool of_type(struct async_tasks *tasks, pid_t pid, const struct py_asyncio_layout *layout, uint64_t addr,
		    uint64_t wanted)
{
	uint64_t type = 0, base = 0;

	if (!wanted || !addr || charged_u64(tasks, pid, addr + layout->ob_type, &type))
		return false;
	if (type == wanted)
		return true;
	return !charged_u64(tasks, pid, type + layout->callbacks.tp_base, &base) && base == wanted;
}

/* 3.11-3.13: a task has no is_task flag; one is of the type of the tasks its process ran. */
static int old_task_fields(struct async_tasks *tasks, pid_t pid, const struct py_asyncio_layout *layout,
			   uint64_t addr, const uint8_t *object, struct task_fields *out)
{
	const struct loop_slot *loop = loop_of(tasks, pid);
	uint64_t type = u64_at(object, layout->ob_type);

	*out = (struct task_fields){
		.name = u64_at(object, layout->task_name),
		.awaited_by = u64_at(object, layout->callbacks.task_callback0),
		.callbacks = u64_at(object, layout->callbacks.task_callbacks),
		.coro = u64_at(object, layout->task_coro),
		.is_task = 1,
	};
	if (out->coro == 0 || loop->pid != (uint32_t)pid || !loop->task_type)
		return -ENOENT;
	if (type != loop->task_type && !of_type(tasks, pid, layout, addr, loop->task_type))
		return -ENOENT;
	return 0;
}

static int read_task(struct async_tasks *tasks, pid_t pid, const struct py_asyncio_layout *layout, uint64_t addr,
		     struct task_fields *out)
{
	uint8_t object[4096];
	int err;

	if (addr == 0 || layout->task_size > sizeof(object))
		return -ENOENT;
	err = charged_read(tasks, pid, addr, object, layout->task_size);
	if (err)
		return err;
	if (layout->from_callbacks)
		return old_task_fields(tasks, pid, layout, addr, object, out);
	*out = (struct task_fields){
		.name = u64_at(object, layout->task_name),
		.awaited_by = u64_at(object, layout->task_awaited_by),
		.coro = u64_at(object, layout->task_coro),
		.is_task = object[layout->task_is_task],
		.awaited_by_is_set = object[layout->task_awaited_by_is_set],
	};
	if (out->is_task != 1 || out->awaited_by_is_set > 1 || out->coro == 0)
		return -ENOENT;
	return 0;
}

static int read_type_flags(struct async_tasks *tasks, pid_t pid, const struct py_asyncio_layout *layout,
			   uint64_t object, uint64_t *type, uint64_t *flags)
{
	int err = charged_u64(tasks, pid, object + layout->ob_type, type);

	if (!err)
		err = charged_u64(tasks, pid, *type + layout->tp_flags, flags);
	return err;
}

int async_tasks_set_budget(struct async_tasks *tasks, struct target_budget *budget)
{
	int store = target_budget_register(budget, "task chains", NULL, NULL, NULL);

	if (store < 0)
		return store;
	tasks->budget = budget;
	tasks->budget_store = store;
	return 0;
}

/* The slot's chain goes (its bytes leave the budget); the slot keeps its place in the LRU. */
static void drop_chain(struct async_tasks *tasks, struct chain_slot *slot)
{
	if (tasks->budget && slot->chain_bytes)
		target_budget_release(tasks->budget, tasks->budget_store, slot->chain_bytes);
	free(slot->chain);
	*slot = (struct chain_slot){ .chain = NULL, .used = slot->used };
}

static int compare_u64(const void *left, const void *right)
{
	uint64_t a = *(const uint64_t *)left, b = *(const uint64_t *)right;

	return a < b ? -1 : a > b;
}

/* The least recently used half of the chains kept goes (read again when next sampled). */
static void drop_older_chains(struct async_tasks *tasks)
{
	uint64_t used[2 * ASYNC_TASKS_SLOTS], median, freed = 0;
	size_t count = 0;

	for (size_t i = 0; i < ASYNC_TASKS_SLOTS; i++) {
		if (tasks->slots[i].chain)
			used[count++] = tasks->slots[i].used;
		if (tasks->pending[i].chain)
			used[count++] = tasks->pending[i].used;
	}
	if (!count)
		return;
	qsort(used, count, sizeof(used[0]), compare_u64);
	median = used[count / 2];
	for (size_t i = 0; i < ASYNC_TASKS_SLOTS; i++) {
		struct chain_slot *both[2] = { &tasks->slots[i], &tasks->pending[i] };

		for (int j = 0; j < 2; j++)
			if (both[j]->chain && both[j]->used <= median) {
				freed += both[j]->chain_bytes;
				drop_chain(tasks, both[j]);
			}
	}
	target_budget_note_eviction(tasks->budget, tasks->budget_store, freed);
}

void async_tasks_forget_chains(struct async_tasks *tasks)
{
	for (size_t i = 0; i < ASYNC_TASKS_SLOTS; i++) {
		if (tasks->slots[i].chain)
			drop_chain(tasks, &tasks->slots[i]);
		if (tasks->pending[i].chain)
			drop_chain(tasks, &tasks->pending[i]);
	}
}

/*
 * bytes for a chain, charged to the target budget. Chains are dropped by this table alone,
 * never for another store's bytes (a chain returned stays valid until the next call): refused,
 * the least recently used half of them goes and the charge is tried once more; refused again
 * (the budget is full of what cannot be evicted), NULL with -ENOSPC: that chain is not kept.
 */
static struct async_chain *alloc_chain(struct async_tasks *tasks, size_t bytes, int *err)
{
	struct async_chain *chain;

	if (tasks->budget && target_budget_charge(tasks->budget, tasks->budget_store, bytes)) {
		drop_older_chains(tasks);
		if (target_budget_charge(tasks->budget, tasks->budget_store, bytes)) {
			*err = -ENOSPC;
			return NULL;
		}
	}
	chain = malloc(bytes);
	if (!chain) {
		if (tasks->budget)
			target_budget_release(tasks->budget, tasks->budget_store, bytes);
		*err = -ENOMEM;
	}
	return chain;
}

/* "<task NAME>" interned, or the budget's placeholder; NULL when memory is short. */
static const char *intern_task_name(struct async_tasks *tasks, const char *name, size_t len)
{
	char text[ASYNC_TASKS_NAME_CHARS * 4 + 16];
	int n = snprintf(text, sizeof(text), "<task %.*s>", (int)len, name);
	int64_t id;

	if (n < 0)
		return NULL;
	if ((size_t)n >= sizeof(text))
		n = (int)sizeof(text) - 1;
	if (tasks->names.bytes + (size_t)n > ASYNC_TASKS_MAX_NAME_BYTES && intern_find(&tasks->names, text, (size_t)n + 1) < 0)
		return ASYNC_TASKS_NAME_OVER_BUDGET;
	id = intern_add(&tasks->names, text, (size_t)n + 1, NULL);
	return id < 0 ? NULL : intern_key(&tasks->names, (uint32_t)id, NULL);
}

/* A task's name: a str, or an int n for the "Task-n" CPython names it lazily. */
static const char *task_name(struct async_tasks *tasks, const struct py_target *target, uint64_t name)
{
	const struct py_asyncio_layout *layout = &target->asyncio;
	uint64_t type = 0, flags = 0, tag = 0, digits[2] = { 0, 0 };
	char *text = NULL, number[32];
	const char *interned = NULL;
	size_t len = 0;

	if (name == 0 || read_type_flags(tasks, target->pid, layout, name, &type, &flags))
		return intern_task_name(tasks, "?", 1);
	if ((flags & TPFLAGS_UNICODE_SUBCLASS) && tasks->reads_left > 2) {
		/* the str's header and its text */
		tasks->reads_left -= 2;
		if (symbolize_py_read_str(target->pid, &target->config.off, name, ASYNC_TASKS_NAME_CHARS, &text, &len))
			return intern_task_name(tasks, "?", 1);
		interned = intern_task_name(tasks, text, strnlen(text, len));
		free(text);
		return interned;
	}
	if ((flags & TPFLAGS_LONG_SUBCLASS) && !charged_u64(tasks, target->pid, name + layout->long_lv_tag, &tag) &&
	    layout->long_size_is_count)
		tag <<= 3; /* 3.11: ob_size counts the digits (a task's number is positive) */
	if ((flags & TPFLAGS_LONG_SUBCLASS) && LONG_DIGIT_COUNT(tag) <= 2 &&
	    !charged_read(tasks, target->pid, name + layout->long_ob_digit, digits, 4 * LONG_DIGIT_COUNT(tag))) {
		uint64_t low = digits[0] & 0xffffffffu, high = digits[0] >> 32;

		snprintf(number, sizeof(number), "Task-%" PRIu64, low | high << LONG_DIGIT_BITS);
		return intern_task_name(tasks, number, strlen(number));
	}
	return intern_task_name(tasks, "?", 1);
}

/* The tp_flags of a type of pid's (kept: a name's type is str or int, whose types outlive it). */
static int type_flags_of(struct async_tasks *tasks, const struct py_target *target, uint64_t type, uint64_t *flags)
{
	struct type_flags_slot *slot =
		&tasks->type_flags[hash_combine(type, (uint64_t)(uint32_t)target->pid) % TYPE_FLAGS_SLOTS];
	int err;

	if (slot->pid == (uint32_t)target->pid && slot->type == type) {
		*flags = slot->flags;
		return 0;
	}
	err = charged_u64(tasks, target->pid, type + target->asyncio.tp_flags, flags);
	if (!err)
		*slot = (struct type_flags_slot){ .pid = (uint32_t)target->pid, .type = type, .flags = *flags };
	return err;
}

/* A compact ASCII str's text in a copy of its object: its length (cut at the copy's end, *cut
 * then set), or -1 if the copy holds no such str. */
static int64_t copied_ascii(const struct py_offsets *off, const uint8_t *bytes, size_t copied, const char **text,
			    bool *cut)
{
	uint32_t state;
	int64_t length;
	uint32_t data = off->unicode_ascii_data;

	if (off->string_kind != PY_STRING_UNICODE || off->unicode_state + sizeof(state) > copied ||
	    off->unicode_length + sizeof(length) > copied || data == PY_OFF_NONE || data > copied)
		return -1;
	memcpy(&state, bytes + off->unicode_state, sizeof(state));
	memcpy(&length, bytes + off->unicode_length, sizeof(length));
	if (length < 0 || !(state & PY_UNICODE_ASCII_BIT) || !(state & PY_UNICODE_COMPACT_BIT))
		return -1;
	*cut = (uint64_t)length > copied - data;
	*text = (const char *)bytes + data;
	return *cut ? (int64_t)(copied - data) : length;
}

const char *async_tasks_copied_name(struct async_tasks *tasks, const struct py_target *target,
				    const struct pbp_task_name *copy)
{
	const struct py_asyncio_layout *layout = &target->asyncio;
	size_t copied = copy->copied < PBP_TASK_NAME_BYTES ? copy->copied : PBP_TASK_NAME_BYTES;
	uint64_t type, flags = 0, tag, digits;
	const char *text = NULL;
	char number[64];
	bool cut = false;
	int64_t len;

	if (!layout->known || !copy->name_addr || layout->ob_type + sizeof(type) > copied)
		return NULL;
	begin_call(tasks, tasks->now_ns);
	type = u64_at(copy->bytes, layout->ob_type);
	if (!type || type_flags_of(tasks, target, type, &flags))
		return NULL;
	if (flags & TPFLAGS_UNICODE_SUBCLASS) {
		len = copied_ascii(&target->config.off, copy->bytes, copied, &text, &cut);
		if (len < 0 || memchr(text, 0, (size_t)len))
			return NULL;
		if (!cut)
			return intern_task_name(tasks, text, (size_t)len);
		/* a longer name, cut where the copy ends: marked so, never taken for another */
		snprintf(number, sizeof(number), "%.*s...", (int)(len < 48 ? len : 48), text);
		return intern_task_name(tasks, number, strlen(number));
	}
	if (!(flags & TPFLAGS_LONG_SUBCLASS) || layout->long_lv_tag + sizeof(tag) > copied)
		return NULL;
	tag = u64_at(copy->bytes, layout->long_lv_tag);
	if (layout->long_size_is_count)
		tag <<= 3; /* 3.11: ob_size counts the digits (a task's number is positive) */
	if (LONG_DIGIT_COUNT(tag) > 2 || layout->long_ob_digit + sizeof(digits) > copied)
		return NULL;
	digits = u64_at(copy->bytes, layout->long_ob_digit);
	if (LONG_DIGIT_COUNT(tag) < 2)
		digits &= LONG_DIGIT_COUNT(tag) ? 0xffffffffu : 0;
	snprintf(number, sizeof(number), "Task-%" PRIu64, (digits & 0xffffffffu) | (digits >> 32) << LONG_DIGIT_BITS);
	return intern_task_name(tasks, number, strlen(number));
}

int async_tasks_named_chain(struct async_tasks *tasks, const char *name, uint64_t coro_code,
			    const struct async_chain **out)
{
	struct named_slot *slot =
		&tasks->named[hash_combine((uint64_t)(uintptr_t)name, coro_code) % NAMED_SLOTS];
	struct async_chain *chain;

	if (!slot->chain || slot->name != name || slot->coro_code != coro_code) {
		chain = malloc(sizeof(*chain) + sizeof(chain->frames[0]));
		if (!chain)
			return -ENOMEM;
		free(slot->chain);
		chain->chain_id = ++tasks->last_chain_id;
		chain->coro_code = coro_code;
		chain->stack_id = 0;
		chain->frame_count = 1;
		chain->frames[0] = pf_frame_unlocated(PF_FRAME_PYTHON, ASYNC_TASKS_FRAME_FILE, name);
		*slot = (struct named_slot){ .name = name, .coro_code = coro_code, .chain = chain };
	}
	*out = slot->chain;
	return 0;
}

const char *async_tasks_unknown_name(struct async_tasks *tasks)
{
	return intern_task_name(tasks, "?", 1);
}

/* A coroutine as read: its frame's code and instruction, and what it awaits. */
struct coroutine {
	uint64_t type;
	int8_t state;       /* gi_frame_state */
	bool suspended;     /* created, or suspended (not running, not finished) */
	uint64_t code, instr, awaited;
};

static int read_coroutine_at(struct async_tasks *tasks, pid_t pid, const struct py_asyncio_layout *layout,
			     uint64_t gen, bool with_awaited, struct coroutine *out)
{
	uint8_t object[GEN_READ_MAX];
	uint32_t frame = layout->gen_iframe;
	uint32_t end = frame + layout->frame_stackpointer + 8;
	uint64_t stackpointer;
	int err;

	if (frame + layout->frame_executable + 8 > end)
		end = frame + layout->frame_executable + 8;
	if (frame + layout->frame_instr_ptr + 8 > end)
		end = frame + layout->frame_instr_ptr + 8;
	if (layout->gen_frame_state + 1 > end)
		end = layout->gen_frame_state + 1;
	if (end > sizeof(object) || layout->ob_type + 8 > end)
		return -EINVAL;
	err = charged_read(tasks, pid, gen, object, end);
	if (err)
		return err;
	*out = (struct coroutine){
		.type = u64_at(object, layout->ob_type),
		.state = (int8_t)object[layout->gen_frame_state],
		.code = u64_at(object, frame + layout->frame_executable) & layout->code_ptr_mask,
		.instr = u64_at(object, frame + layout->frame_instr_ptr),
	};
	stackpointer = u64_at(object, frame + layout->frame_stackpointer);
	if (layout->stacktop_is_index) {
		int32_t top;

		memcpy(&top, object + frame + layout->frame_stackpointer, sizeof(top));
		stackpointer = top > 0 && top < 4096 ? gen + frame + layout->frame_localsplus + 8u * (uint32_t)top : 0;
	}
	out->suspended = out->state == layout->state_created ||
			 (out->state >= layout->state_yield_from_low - 1 && out->state <= layout->state_yield_from_high);
	/* Suspended in an await: the awaited object is near the top of the frame's stack. */
	if (with_awaited && out->state >= layout->state_yield_from_low && out->state <= layout->state_yield_from_high &&
	    stackpointer >= gen + frame + 8u * layout->awaited_slot &&
	    charged_u64(tasks, pid, stackpointer - 8u * layout->awaited_slot, &out->awaited) == 0)
		out->awaited &= ~STACKREF_TAG_BITS;
	return 0;
}

static int read_coroutine(struct async_tasks *tasks, pid_t pid, const struct py_asyncio_layout *layout, uint64_t gen,
			  struct coroutine *out)
{
	return read_coroutine_at(tasks, pid, layout, gen, true, out);
}

static bool recent(uint64_t then_ns, uint64_t now_ns)
{
	return now_ns >= then_ns ? now_ns - then_ns < ASYNC_TASKS_REFRESH_NS : then_ns - now_ns < ASYNC_TASKS_REFRESH_NS;
}

/* The checksum of a live code object (three reads), kept a while: every waiting task's frames
 * are named again whenever it moves. */
static int code_checksum(struct async_tasks *tasks, const struct py_target *target, uint64_t code, uint32_t *checksum)
{
	struct checksum_slot *slot = &tasks->checksums[hash_combine(code, (uint64_t)(uint32_t)target->pid) % CHECKSUM_SLOTS];
	int err;

	if (slot->code == code && slot->pid == (uint32_t)target->pid && recent(slot->read_ns, tasks->now_ns)) {
		*checksum = slot->checksum;
		return 0;
	}
	if (tasks->reads_left < 3)
		return -E2BIG;
	/* the code object and its two strings */
	tasks->reads_left -= 3;
	err = symbolize_py_code_checksum(target->pid, &target->config.off, code, checksum);
	if (!err)
		*slot = (struct checksum_slot){ .pid = (uint32_t)target->pid, .checksum = *checksum, .code = code,
						.read_ns = tasks->now_ns };
	return err;
}

/* A coroutine frame named through the code-object cache; false if it cannot be. */
static bool coroutine_frame(struct async_tasks *tasks, struct symbolize_py_cache *python, const struct py_target *target,
			    const struct coroutine *coroutine, struct pf_frame *frame)
{
	uint32_t checksum;

	if (coroutine->code == 0 || coroutine->instr < coroutine->code || coroutine->instr - coroutine->code > UINT32_MAX / 2 ||
	    code_checksum(tasks, target, coroutine->code, &checksum))
		return false;
	return symbolize_py_resolve(python, target->pid, &target->config, coroutine->code, checksum,
				    (uint32_t)(coroutine->instr - coroutine->code), frame) == 0;
}

/* Where a suspended task is: its coroutine, then each coroutine it awaits (same type), root first. */
static size_t suspended_frames_to(struct async_tasks *tasks, struct symbolize_py_cache *python,
				  const struct py_target *target, uint64_t coro, struct pf_frame *frames, size_t room,
				  struct coroutine_level *levels, size_t *level_count)
{
	struct coroutine coroutine;
	uint64_t type = 0;
	size_t count = 0;

	for (size_t depth = 0; depth < ASYNC_TASKS_MAX_COROUTINES && count < room && coro; depth++) {
		if (read_coroutine(tasks, target->pid, &target->asyncio, coro, &coroutine) || !coroutine.suspended ||
		    (type && coroutine.type != type))
			break;
		if (levels)
			levels[(*level_count)++] = (struct coroutine_level){ .gen = coro, .instr = coroutine.instr,
								       .state = coroutine.state };
		type = coroutine.type;
		if (coroutine_frame(tasks, python, target, &coroutine, &frames[count]))
			count++;
		coro = coroutine.awaited;
	}
	return count;
}

static size_t suspended_frames(struct async_tasks *tasks, struct symbolize_py_cache *python,
			       const struct py_target *target, uint64_t coro, struct pf_frame *frames, size_t room)
{
	return suspended_frames_to(tasks, python, target, coro, frames, room, NULL, NULL);
}

/* The task a done callback wakes: a task's wakeup (a builtin bound to it), a TaskGroup's
 * _on_task_done (its _parent_task), or gather's _done_callback (the gathering future it closes
 * over, whose own callbacks wake the task awaiting it); 0 if none. */
static uint64_t task_of_callbacks(struct async_tasks *tasks, const struct py_target *target, uint64_t first,
				  uint64_t more, int depth);

/* The name of the builtin a task's step binds to it as its future's done callback
 * (TaskWakeupDef in 3.11-3.13's Modules/_asynciomodule.c). */
#define TASK_WAKEUP_NAME "task_wakeup"

/* Whether callback is a builtin named TASK_WAKEUP_NAME (three reads). */
static bool is_task_wakeup(struct async_tasks *tasks, pid_t pid, const struct py_asyncio_callbacks *c,
			   uint64_t callback)
{
	uint64_t method_def = 0, name = 0;
	char text[sizeof(TASK_WAKEUP_NAME)];

	return !charged_u64(tasks, pid, callback + c->cfunction_ml, &method_def) && method_def &&
	       !charged_u64(tasks, pid, method_def + c->methoddef_name, &name) && name &&
	       !charged_read(tasks, pid, name, text, sizeof(text)) && !memcmp(text, TASK_WAKEUP_NAME, sizeof(text));
}

static uint64_t task_of_callback(struct async_tasks *tasks, const struct py_target *target, uint64_t callback,
				 int depth)
{
	const struct py_asyncio_layout *layout = &target->asyncio;
	const struct py_asyncio_callbacks *c = &layout->callbacks;
	uint64_t task_type = loop_of(tasks, target->pid)->task_type, future_type = 0, bound = 0, closure = 0, size = 0;
	uint64_t cells[CLOSURE_CELLS_MAX];

	if (!callback || !task_type)
		return 0;
	if (!charged_u64(tasks, target->pid, callback + c->cfunction_self, &bound) &&
	    of_type(tasks, target->pid, layout, bound, task_type) && is_task_wakeup(tasks, target->pid, c, callback))
		return bound;
	if (!charged_u64(tasks, target->pid, callback + c->method_self, &bound) && bound && tasks->reads_left > 16) {
		uint64_t parent = py_instance_attribute(target, bound, "_parent_task");

		/* the attribute's few reads: its type's keys and the instance's values */
		tasks->reads_left -= 16;
		if (parent && of_type(tasks, target->pid, layout, parent, task_type))
			return parent;
	}
	if (depth >= CALLBACK_DEPTH || charged_u64(tasks, target->pid, task_type + c->tp_base, &future_type) ||
	    charged_u64(tasks, target->pid, callback + c->function_closure, &closure) || !closure ||
	    charged_u64(tasks, target->pid, closure + c->var_size, &size) || size == 0 || size > CLOSURE_CELLS_MAX ||
	    charged_read(tasks, target->pid, closure + c->tuple_item, cells, size * 8))
		return 0;
	for (size_t i = 0; i < size; i++) {
		uint64_t future = 0, first = 0, more = 0, task;

		if (!cells[i] || charged_u64(tasks, target->pid, cells[i] + c->cell_ref, &future) ||
		    !of_type(tasks, target->pid, layout, future, future_type) ||
		    charged_u64(tasks, target->pid, future + c->task_callback0, &first) ||
		    charged_u64(tasks, target->pid, future + c->task_callbacks, &more))
			continue;
		task = task_of_callbacks(tasks, target, first, more, depth + 1);
		if (task)
			return task;
	}
	return 0;
}

/* Whether out[count] holds task. */
static bool task_among(const uint64_t *out, size_t count, uint64_t task)
{
	for (size_t i = 0; i < count; i++)
		if (out[i] == task)
			return true;
	return false;
}

/* The tasks woken by a future's callbacks, in the order they were added (first, then the list
 * more's (callback, context) pairs), each once, into out[max]; their count. */
static size_t tasks_of_callbacks(struct async_tasks *tasks, const struct py_target *target, uint64_t first,
				 uint64_t more, int depth, uint64_t *out, size_t max)
{
	const struct py_asyncio_callbacks *c = &target->asyncio.callbacks;
	uint64_t task = task_of_callback(tasks, target, first, depth), size = 0, items = 0, pairs[CALLBACKS_MAX];
	size_t count = 0;

	if (task && max)
		out[count++] = task;
	if (count >= max || !more || charged_u64(tasks, target->pid, more + c->var_size, &size) ||
	    charged_u64(tasks, target->pid, more + c->list_item, &items) || !items)
		return count;
	size = size > CALLBACKS_MAX ? CALLBACKS_MAX : size;
	if (charged_read(tasks, target->pid, items, pairs, size * 8))
		return count;
	for (size_t i = 0; i < size && count < max; i++) {
		uint64_t callback = 0;

		if (pairs[i] && !charged_u64(tasks, target->pid, pairs[i] + c->tuple_item, &callback) &&
		    (task = task_of_callback(tasks, target, callback, depth)) && !task_among(out, count, task))
			out[count++] = task;
	}
	return count;
}

/* The first task woken by a future's callbacks, 0 if none. */
static uint64_t task_of_callbacks(struct async_tasks *tasks, const struct py_target *target, uint64_t first,
				  uint64_t more, int depth)
{
	uint64_t task = 0;

	tasks_of_callbacks(tasks, target, first, more, depth, &task, 1);
	return task;
}

/*
 * The tasks awaiting the task whose fields these are, into out[max]; their count. A task awaited
 * by several (a task shared by two gathers, `await t` in two tasks) has each: 3.14+ in the order
 * of its awaited_by set's table (of addresses, not of time), 3.11-3.13 in the order they began
 * to wait (its done callbacks'). The first is the one a sample's chain goes up through.
 */
static size_t awaiting_tasks(struct async_tasks *tasks, const struct py_target *target,
			     const struct task_fields *fields, uint64_t *out, size_t max)
{
	const struct py_asyncio_layout *layout = &target->asyncio;
	uint64_t mask = 0, table = 0, slots[2 * AWAITED_BY_SLOTS];
	struct task_fields candidate;
	size_t count = 0, slot_count;

	if (max == 0)
		return 0;
	if (layout->from_callbacks)
		return tasks_of_callbacks(tasks, target, fields->awaited_by, fields->callbacks, 0, out, max);
	if (!fields->awaited_by_is_set) {
		out[0] = fields->awaited_by;
		return fields->awaited_by ? 1 : 0;
	}
	if (charged_u64(tasks, target->pid, fields->awaited_by + layout->set_mask, &mask) ||
	    charged_u64(tasks, target->pid, fields->awaited_by + layout->set_table, &table) || table == 0)
		return 0;
	slot_count = mask >= AWAITED_BY_SLOTS - 1 ? AWAITED_BY_SLOTS : (size_t)mask + 1;
	if (charged_read(tasks, target->pid, table, slots, slot_count * 16))
		return 0;
	/* A slot holds a key and its hash; a removed key leaves a dummy that is no task. */
	for (size_t i = 0; i < slot_count && count < max; i++)
		if (slots[2 * i] && !task_among(out, count, slots[2 * i]) &&
		    read_task(tasks, target->pid, layout, slots[2 * i], &candidate) == 0)
			out[count++] = slots[2 * i];
	return count;
}

/* The task a sample's chain goes up through from the task whose fields these are, 0 if none. */
static uint64_t awaiting_task(struct async_tasks *tasks, const struct py_target *target,
			      const struct task_fields *fields)
{
	uint64_t task = 0;

	awaiting_tasks(tasks, target, fields, &task, 1);
	return task;
}

/* Reads the chain of task (fields read already) into frames (room ASYNC_TASKS_MAX_FRAMES); the count. */
static size_t read_chain(struct async_tasks *tasks, struct symbolize_py_cache *python, const struct py_target *target,
			 uint64_t task, const struct task_fields *fields, struct pf_frame *frames)
{
	struct pf_frame scratch[ASYNC_TASKS_MAX_COROUTINES];
	uint64_t seen[ASYNC_TASKS_MAX_DEPTH];
	struct task_fields current = *fields;
	/* built leaf side first from the end of frames, then moved to its start */
	size_t at = ASYNC_TASKS_MAX_FRAMES, depth = 0;

	for (;;) {
		const char *name = task_name(tasks, target, current.name);
		bool cycle = false;
		size_t count;

		if (!name || at == 0)
			break;
		frames[--at] = pf_frame_unlocated(PF_FRAME_PYTHON, ASYNC_TASKS_FRAME_FILE, name);
		seen[depth++] = task;
		task = awaiting_task(tasks, target, &current);
		if (depth >= ASYNC_TASKS_MAX_DEPTH || task == 0 || read_task(tasks, target->pid, &target->asyncio, task, &current))
			break;
		/* an awaited_by cycle (hostile, or a bug) ends the chain where it closes */
		for (size_t i = 0; i < depth; i++)
			cycle |= seen[i] == task;
		if (cycle)
			break;
		count = suspended_frames(tasks, python, target, current.coro, scratch,
					 at > ASYNC_TASKS_MAX_COROUTINES ? ASYNC_TASKS_MAX_COROUTINES : at);
		at -= count;
		memcpy(&frames[at], scratch, count * sizeof(*scratch));
	}
	memmove(frames, &frames[at], (ASYNC_TASKS_MAX_FRAMES - at) * sizeof(*frames));
	return ASYNC_TASKS_MAX_FRAMES - at;
}

/* Ways of a set of slots: a loop's tasks share the table without evicting each other. */
#define SLOT_WAYS 8
_Static_assert(ASYNC_TASKS_SLOTS % SLOT_WAYS == 0, "whole sets of slots");

/* The slot of (pid, task) in table: its own, else an empty one or the least recently used of its set. */
static struct chain_slot *slot_in(struct async_tasks *tasks, struct chain_slot *table, pid_t pid, uint64_t task)
{
	struct chain_slot *set = &table[hash_combine(task, (uint64_t)(uint32_t)pid) % (ASYNC_TASKS_SLOTS / SLOT_WAYS) *
					SLOT_WAYS];
	struct chain_slot *chosen = NULL;

	for (size_t i = 0; i < SLOT_WAYS && !chosen; i++)
		if (set[i].chain && set[i].pid == (uint32_t)pid && set[i].task == task)
			chosen = &set[i];
	for (size_t i = 0; i < SLOT_WAYS && !chosen; i++)
		if (!set[i].chain)
			chosen = &set[i];
	if (!chosen) {
		chosen = &set[0];
		for (size_t i = 1; i < SLOT_WAYS; i++)
			if (set[i].used < chosen->used)
				chosen = &set[i];
	}
	chosen->used = ++tasks->clock;
	return chosen;
}

static struct chain_slot *slot_of(struct async_tasks *tasks, pid_t pid, uint64_t task)
{
	return slot_in(tasks, tasks->slots, pid, task);
}

static bool same_fields(const struct task_fields *a, const struct task_fields *b)
{
	return a->name == b->name && a->awaited_by == b->awaited_by && a->coro == b->coro &&
	       a->awaited_by_is_set == b->awaited_by_is_set;
}

/* Reads the chain of task (its fields read) into its slot; 0 or an error (the slot then empty). */
static int build_chain(struct async_tasks *tasks, struct symbolize_py_cache *python, const struct py_target *target,
		       struct chain_slot *slot, uint64_t task, const struct task_fields *fields, uint64_t now_ns)
{
	struct coroutine coroutine;
	struct async_chain *chain;
	size_t count, bytes;
	int err = read_coroutine(tasks, target->pid, &target->asyncio, fields->coro, &coroutine);

	drop_chain(tasks, slot);
	if (err)
		return err;
	count = read_chain(tasks, python, target, task, fields, tasks->frames);
	bytes = sizeof(*chain) + count * sizeof(chain->frames[0]);
	chain = alloc_chain(tasks, bytes, &err);
	if (!chain)
		return err;
	chain->chain_id = ++tasks->last_chain_id;
	chain->coro_code = coroutine.code;
	chain->stack_id = 0;
	chain->frame_count = count;
	memcpy(chain->frames, tasks->frames, count * sizeof(chain->frames[0]));
	*slot = (struct chain_slot){ .pid = (uint32_t)target->pid, .task = task, .fields = *fields, .read_ns = now_ns,
				     .chain = chain, .chain_bytes = bytes, .used = slot->used };
	return 0;
}

static bool fresh(const struct chain_slot *slot, uint64_t now_ns)
{
	return recent(slot->read_ns, now_ns);
}

/* A public call's start: its read allowance renewed, then the task's own fields read
 * (-ENOENT where the target's asyncio layout is unknown). */
static int begin_read(struct async_tasks *tasks, const struct py_target *target, uint64_t task_addr,
		      uint64_t now_ns, struct task_fields *fields)
{
	if (!target->asyncio.known)
		return -ENOENT;
	begin_call(tasks, now_ns);
	return read_task(tasks, target->pid, &target->asyncio, task_addr, fields);
}

int async_tasks_read(struct async_tasks *tasks, struct symbolize_py_cache *python, const struct py_target *target,
		     uint64_t task_addr, uint64_t now_ns)
{
	struct chain_slot *slot = slot_of(tasks, target->pid, task_addr);
	struct task_fields fields;
	int err;

	err = begin_read(tasks, target, task_addr, now_ns, &fields);
	if (err)
		return err;
	if (slot->chain && slot->pid == (uint32_t)target->pid && slot->task == task_addr &&
	    same_fields(&slot->fields, &fields) && fresh(slot, now_ns))
		return 0;
	return build_chain(tasks, python, target, slot, task_addr, &fields, now_ns);
}

/*
 * A pending task's stack into its slot: the chain of tasks awaiting it, as kept for a running
 * task (read again when the task's fields changed or a second passed), then its own coroutines.
 */
static int build_pending(struct async_tasks *tasks, struct symbolize_py_cache *python, const struct py_target *target,
			 struct chain_slot *slot, uint64_t task, const struct task_fields *fields, uint64_t now_ns)
{
	struct chain_slot *awaiting = slot_of(tasks, target->pid, task);
	struct async_chain *chain;
	size_t count, own, level_count = 0, bytes;
	int err = 0;

	if (!awaiting->chain || awaiting->pid != (uint32_t)target->pid || awaiting->task != task ||
	    !same_fields(&awaiting->fields, fields) || !fresh(awaiting, now_ns))
		err = build_chain(tasks, python, target, awaiting, task, fields, now_ns);
	drop_chain(tasks, slot);
	if (err)
		return err;
	count = awaiting->chain->frame_count;
	memcpy(tasks->frames, awaiting->chain->frames, count * sizeof(tasks->frames[0]));
	own = suspended_frames_to(tasks, python, target, fields->coro, tasks->frames + count, ASYNC_TASKS_MAX_FRAMES - count,
				  tasks->levels, &level_count);
	/* done, or running after all: suspended nowhere */
	if (own == 0)
		return -ENOENT;
	count += own;
	/* the coroutines as read follow the frames, in one allocation */
	bytes = sizeof(*chain) + count * sizeof(chain->frames[0]) + level_count * sizeof(tasks->levels[0]);
	chain = alloc_chain(tasks, bytes, &err);
	if (!chain)
		return err;
	chain->chain_id = ++tasks->last_chain_id;
	chain->coro_code = 0;
	chain->stack_id = 0;
	chain->frame_count = count;
	memcpy(chain->frames, tasks->frames, count * sizeof(chain->frames[0]));
	*slot = (struct chain_slot){ .pid = (uint32_t)target->pid, .task = task, .fields = *fields, .read_ns = now_ns,
				     .levels = (struct coroutine_level *)(chain->frames + count), .level_count = level_count,
				     .chain = chain, .chain_bytes = bytes, .used = slot->used };
	memcpy(slot->levels, tasks->levels, level_count * sizeof(tasks->levels[0]));
	return 0;
}

/*
 * Whether a pending task's coroutines are each where they were read. The innermost alone is not
 * enough: a helper returning and the next one awaiting the same function (asyncio.sleep) can
 * leave a new innermost coroutine at the freed one's address and instruction.
 */
static bool coroutines_stayed(struct async_tasks *tasks, const struct py_target *target,
			      const struct chain_slot *slot)
{
	struct coroutine coroutine;

	for (size_t i = 0; i < slot->level_count; i++)
		if (read_coroutine_at(tasks, target->pid, &target->asyncio, slot->levels[i].gen, false, &coroutine) ||
		    coroutine.instr != slot->levels[i].instr || coroutine.state != slot->levels[i].state)
			return false;
	return slot->level_count > 0;
}

int async_tasks_pending(struct async_tasks *tasks, struct symbolize_py_cache *python, const struct py_target *target,
			uint64_t task_addr, uint64_t now_ns, struct async_chain **out)
{
	struct chain_slot *slot = slot_in(tasks, tasks->pending, target->pid, task_addr);
	struct task_fields fields;
	int err;

	if (!target->asyncio.known)
		return -ENOENT;
	begin_call(tasks, now_ns);
	/* Kept while each of its coroutines is where it was: the task's own coroutine, which it
	 * holds for its life, then each one the one before awaits (its name and the tasks awaiting
	 * it are read again at least every second). One read a coroutine. */
	if (slot->chain && slot->pid == (uint32_t)target->pid && slot->task == task_addr && fresh(slot, now_ns) &&
	    coroutines_stayed(tasks, target, slot)) {
		*out = slot->chain;
		return 0;
	}
	err = read_task(tasks, target->pid, &target->asyncio, task_addr, &fields);
	if (!err)
		err = build_pending(tasks, python, target, slot, task_addr, &fields, now_ns);
	if (err)
		return err;
	*out = slot->chain;
	return 0;
}

int async_tasks_chain(struct async_tasks *tasks, struct symbolize_py_cache *python, const struct py_target *target,
		      uint64_t task_addr, uint64_t now_ns, const struct async_chain **out)
{
	struct chain_slot *slot = slot_of(tasks, target->pid, task_addr);
	int err = 0;

	if (!slot->chain || slot->pid != (uint32_t)target->pid || slot->task != task_addr || !fresh(slot, now_ns))
		err = async_tasks_read(tasks, python, target, task_addr, now_ns);
	if (err)
		return err;
	*out = slot->chain;
	return 0;
}

int async_tasks_read_node(struct async_tasks *tasks, struct symbolize_py_cache *python,
			  const struct py_target *target, uint64_t task_addr, uint64_t now_ns, struct async_task_node *node)
{
	struct task_fields fields;
	int err;

	err = begin_read(tasks, target, task_addr, now_ns, &fields);
	if (err)
		return err;
	node->address = task_addr;
	node->name = task_name(tasks, target, fields.name);
	if (!node->name)
		return -ENOMEM;
	node->awaiter_count = awaiting_tasks(tasks, target, &fields, node->awaiters, ASYNC_TASKS_AWAITERS_MAX);
	node->awaited_by = node->awaiter_count ? node->awaiters[0] : 0;
	node->frame_count = suspended_frames(tasks, python, target, fields.coro, node->frames, ASYNC_TASKS_MAX_COROUTINES);
	return 0;
}

static struct loop_slot *loop_of_target(struct async_tasks *tasks, const struct py_target *target);
static size_t old_tasks_of_thread(struct async_tasks *tasks, const struct py_target *target, uint64_t tstate,
				  uint64_t now_ns, uint64_t *out, size_t max);

size_t async_tasks_of_thread(struct async_tasks *tasks, const struct py_target *target, uint64_t tstate,
			     uint64_t now_ns, uint64_t *out, size_t max)
{
	const struct py_asyncio_layout *layout = &target->asyncio;
	uint64_t head = tstate + layout->tstate_tasks_head, node = 0;
	size_t count = 0;

	if (layout->known && layout->from_callbacks && tstate)
		return old_tasks_of_thread(tasks, target, tstate, now_ns, out, max);
	if (!layout->known || layout->from_callbacks || tstate == 0 || target_mem_read_u64(target->pid, head, &node))
		return 0;
	/* struct llist_node { next, prev }: the list ends back at its head */
	for (size_t step = 0; step < ASYNC_TASKS_TREE_MAX && count < max && node && node != head; step++) {
		out[count++] = node - layout->task_node;
		if (target_mem_read_u64(target->pid, node, &node))
			break;
	}
	return count;
}

/* PyASCIIObject.state's compact and ascii bits: the text follows the header. */
#define UNICODE_COMPACT_ASCII 0x60u

/* Whether the str at addr is text (ASCII, shorter than 32 characters): one read. */
static bool str_is(pid_t pid, const struct py_offsets *off, uint64_t addr, const char *text)
{
	uint8_t object[256];
	size_t len = strlen(text);
	int64_t length;
	uint32_t state;

	if (!addr || off->string_kind != PY_STRING_UNICODE || len >= 32 || off->unicode_ascii_data + 32 > sizeof(object) ||
	    target_mem_read(pid, addr, object, off->unicode_ascii_data + len))
		return false;
	memcpy(&length, object + off->unicode_length, sizeof(length));
	memcpy(&state, object + off->unicode_state, sizeof(state));
	return length == (int64_t)len && (state & UNICODE_COMPACT_ASCII) == UNICODE_COMPACT_ASCII && !memcmp(object + off->unicode_ascii_data, text, len);
}

/* The value of the str key `key` in the dict at dict (a combined table, 3.11-3.13), 0 if none;
 * at most max_entries entries, in chunks. */
static uint64_t dict_lookup_within(const struct py_target *target, uint64_t dict, const char *key,
				   int64_t max_entries)
{
	const struct py_asyncio_callbacks *c = &target->asyncio.callbacks;
	uint64_t keys = 0, values = 0, entries[3 * 64];
	uint8_t header[64];
	int64_t count;
	size_t width, at;

	if (!dict || target_mem_read_u64(target->pid, dict + c->dict_keys, &keys) || !keys ||
	    target_mem_read_u64(target->pid, dict + c->dict_values, &values) || values ||
	    c->keys_nentries + 8 > sizeof(header) || target_mem_read(target->pid, keys, header, c->keys_nentries + 8))
		return 0;
	memcpy(&count, header + c->keys_nentries, sizeof(count));
	if (header[c->keys_log2_index_bytes] > 20 || count <= 0)
		return 0;
	count = count > max_entries ? max_entries : count;
	/* DICT_KEYS_GENERAL: {hash, key, value}; the str-keyed kinds: {key, value} */
	width = header[c->keys_kind] == 0 ? 3 : 2;
	at = keys + c->keys_indices + (1ull << header[c->keys_log2_index_bytes]);
	for (int64_t first = 0; first < count; first += 64) {
		size_t chunk = count - first < 64 ? (size_t)(count - first) : 64;

		if (target_mem_read(target->pid, at + (uint64_t)first * width * 8, entries, chunk * width * 8))
			return 0;
		for (size_t i = 0; i < chunk; i++) {
			const uint64_t *entry = &entries[i * width + (width - 2)];

			if (entry[0] && entry[1] && str_is(target->pid, &target->config.off, entry[0], key))
				return entry[1];
		}
	}
	return 0;
}

/* dict_lookup_within DICT_SCAN_MAX entries: for the module dicts, looked at once per process. */
static uint64_t dict_lookup(const struct py_target *target, uint64_t dict, const char *key)
{
	return dict_lookup_within(target, dict, key, DICT_SCAN_MAX);
}

/* The dict of the _asyncio module of target's main interpreter, 0 while it has none: a dict
 * scan of DICT_SCAN_MAX entries (sys.modules), a read per key and chunk. */
static uint64_t asyncio_module_dict(const struct py_target *target)
{
	const struct py_asyncio_callbacks *c = &target->asyncio.callbacks;
	uint64_t interp = 0, modules = 0, module, dict = 0;

	if (target_mem_read_u64(target->pid, target->config.interp_head_addr, &interp) || !interp ||
	    target_mem_read_u64(target->pid, interp + c->interp_modules, &modules))
		return 0;
	module = dict_lookup(target, modules, "_asyncio");
	if (!module || target_mem_read_u64(target->pid, module + c->module_dict, &dict))
		return 0;
	return dict;
}

/* _asyncio._current_tasks, 0 while there is none: at most two dict scans. */
static uint64_t find_current_tasks(const struct py_target *target)
{
	return dict_lookup(target, asyncio_module_dict(target), "_current_tasks");
}

/* The loop slot of target, taken over if another process had it. */
static struct loop_slot *loop_of_target(struct async_tasks *tasks, const struct py_target *target)
{
	struct loop_slot *loop = loop_of(tasks, target->pid);

	if (loop->pid != (uint32_t)target->pid)
		*loop = (struct loop_slot){ .pid = (uint32_t)target->pid };
	return loop;
}

/* The task of _current_tasks (by loop: a few) stepping coro, 0 if none. */
static uint64_t current_task_of(struct async_tasks *tasks, const struct py_target *target, struct loop_slot *loop,
				uint64_t coro)
{
	uint64_t current_tasks = target->config.current_tasks_addr;
	const struct py_asyncio_layout *layout = &target->asyncio;
	const struct py_asyncio_callbacks *c = &layout->callbacks;
	uint64_t keys = 0, entries[3 * CURRENT_TASKS_MAX];
	uint8_t header[64];
	int64_t count;

	if (!current_tasks || charged_u64(tasks, target->pid, current_tasks + c->dict_keys, &keys) || !keys ||
	    c->keys_nentries + 8 > sizeof(header) || charged_read(tasks, target->pid, keys, header, c->keys_nentries + 8))
		return 0;
	memcpy(&count, header + c->keys_nentries, sizeof(count));
	/* keyed by loop objects: {hash, key, value} entries */
	if (header[c->keys_kind] != 0 || header[c->keys_log2_index_bytes] > 20 || count <= 0)
		return 0;
	count = count > CURRENT_TASKS_MAX ? CURRENT_TASKS_MAX : count;
	if (charged_read(tasks, target->pid, keys + c->keys_indices + (1ull << header[c->keys_log2_index_bytes]),
			 entries, (size_t)count * 24))
		return 0;
	for (int64_t i = 0; i < count; i++) {
		uint64_t task = entries[3 * i + 2], its_coro = 0, type = 0;

		if (!entries[3 * i + 1] || !task || charged_u64(tasks, target->pid, task + layout->task_coro, &its_coro) ||
		    its_coro != coro || charged_u64(tasks, target->pid, task + layout->ob_type, &type))
			continue;
		loop->task_type = type;
		return task;
	}
	return 0;
}

uint64_t async_tasks_find_current_tasks(const struct py_target *target)
{
	if (!target->asyncio.known || !target->asyncio.from_callbacks)
		return 0;
	return find_current_tasks(target);
}

void async_tasks_note_task(struct async_tasks *tasks, const struct py_target *target, uint64_t task, uint64_t now_ns)
{
	struct loop_slot *loop = loop_of_target(tasks, target);
	uint64_t type = 0;

	if (loop->task_type || !task)
		return;
	begin_call(tasks, now_ns);
	if (!charged_u64(tasks, target->pid, task + target->asyncio.ob_type, &type))
		loop->task_type = type;
}

uint64_t async_tasks_task_of_coroutine(struct async_tasks *tasks, const struct py_target *target, uint64_t coro,
				       uint64_t now_ns)
{
	struct coro_slot *slot = &tasks->coros[hash_combine(coro, (uint64_t)(uint32_t)target->pid) % CORO_SLOTS];
	struct loop_slot *loop;
	uint64_t its_coro = 0, task;

	if (!target->asyncio.known || !target->asyncio.from_callbacks || !coro)
		return 0;
	begin_call(tasks, now_ns);
	if (slot->pid == (uint32_t)target->pid && slot->coro == coro &&
	    !charged_u64(tasks, target->pid, slot->task + target->asyncio.task_coro, &its_coro) && its_coro == coro)
		return slot->task;
	loop = loop_of_target(tasks, target);
	task = current_task_of(tasks, target, loop, coro);
	if (task)
		*slot = (struct coro_slot){ .pid = (uint32_t)target->pid, .coro = coro, .task = task };
	return task;
}

/* The key under which 3.11-3.12 keep a thread's running loop in its thread-state dict, and the
 * entries of that dict looked at for it: it is read at every pass, and the key is set as the
 * thread's first loop starts (a thread that made hundreds of threading.local values before
 * lists no task). */
#define RUNNING_LOOP_KEY "__asyncio_running_event_loop__"
#define THREAD_DICT_SCAN_MAX 256

/* The event loop the thread whose thread state is at tstate runs, 0 if none (3.11-3.13). */
static uint64_t running_loop_of(const struct py_target *target, uint64_t tstate)
{
	const struct py_asyncio_callbacks *c = &target->asyncio.callbacks;
	uint64_t loop = 0, dict = 0;

	if (c->tstate_running_loop >= 0)
		return target_mem_read_u64(target->pid, tstate + (uint32_t)c->tstate_running_loop, &loop) ? 0 : loop;
	if (target_mem_read_u64(target->pid, tstate + c->tstate_dict, &dict) || !dict)
		return 0;
	loop = dict_lookup_within(target, dict, RUNNING_LOOP_KEY, THREAD_DICT_SCAN_MAX);
	/* 3.11 keeps it in a holder (with the pid that set it) */
	if (loop && c->holder_loop >= 0 && target_mem_read_u64(target->pid, loop + (uint32_t)c->holder_loop, &loop))
		return 0;
	return loop;
}

/* Finds the process's sets of tasks (and the Task type, if no running task gave it yet) in the
 * _asyncio module, at most once per TASK_SETS_LOOK_NS until found. */
static void find_task_sets(const struct py_target *target, struct loop_slot *loop, uint64_t now_ns)
{
	uint64_t dict, weak_set;

	if (loop->all_tasks || (loop->sets_looked && now_ns - loop->sets_looked_ns < TASK_SETS_LOOK_NS))
		return;
	loop->sets_looked = true;
	loop->sets_looked_ns = now_ns;
	dict = asyncio_module_dict(target);
	if (!dict)
		return;
	/* 3.11: _all_tasks; 3.12, 3.13: _scheduled_tasks, and eager tasks until they first wait */
	weak_set = dict_lookup(target, dict, target->minor <= 11 ? "_all_tasks" : "_scheduled_tasks");
	loop->all_tasks = weak_set ? py_instance_attribute(target, weak_set, "data") : 0;
	loop->eager_tasks = target->minor <= 11 ? 0 : dict_lookup(target, dict, "_eager_tasks");
	if (!loop->task_type)
		loop->task_type = dict_lookup(target, dict, "Task");
}

/* Appends to list the tasks of set (its keys weak references to them when weak) whose loop is
 * list->loop: at most ASYNC_TASKS_TREE_MAX slots of the set's table are looked at. */
static void list_tasks_of_set(const struct py_target *target, uint64_t set, bool weak, struct task_list *list)
{
	const struct py_asyncio_layout *layout = &target->asyncio;
	uint64_t mask = 0, table = 0, slots[2 * SET_CHUNK];
	size_t count;

	if (!set || target_mem_read_u64(target->pid, set + layout->set_mask, &mask) ||
	    target_mem_read_u64(target->pid, set + layout->set_table, &table) || !table)
		return;
	count = mask >= ASYNC_TASKS_TREE_MAX - 1 ? ASYNC_TASKS_TREE_MAX : (size_t)mask + 1;
	for (size_t first = 0; first < count && list->count < ASYNC_TASKS_TREE_MAX; first += SET_CHUNK) {
		size_t chunk = count - first < SET_CHUNK ? count - first : SET_CHUNK;

		if (target_mem_read(target->pid, table + 16 * first, slots, chunk * 16))
			return;
		/* a slot holds a key and its hash; a removed key leaves a dummy, whose "loop" is no
		 * loop of the target's (read_task checks each task's type later) */
		for (size_t i = 0; i < chunk && list->count < ASYNC_TASKS_TREE_MAX; i++) {
			uint64_t task = slots[2 * i], its_loop = 0;

			if (task && weak && target_mem_read_u64(target->pid, task + layout->callbacks.weakref_object, &task))
				continue;
			if (task && !target_mem_read_u64(target->pid, task + layout->callbacks.task_loop, &its_loop) &&
			    its_loop == list->loop)
				list->tasks[list->count++] = task;
		}
	}
}

/* The kept list of (pid, loop), or the least recently listed one, emptied for it. */
static struct task_list *task_list_of(struct async_tasks *tasks, pid_t pid, uint64_t loop, uint64_t now_ns,
				      bool *fresh_list)
{
	struct task_list *oldest = &tasks->lists[0];

	for (size_t i = 0; i < TASK_LISTS; i++) {
		struct task_list *list = &tasks->lists[i];

		if (list->pid == (uint32_t)pid && list->loop == loop) {
			/* a record older than the listing shares it (records of a tick come in any order) */
			*fresh_list = now_ns <= list->listed_ns ? list->listed_ns - now_ns < TASK_LIST_REFRESH_NS
								: now_ns - list->listed_ns < TASK_LIST_REFRESH_NS;
			if (!*fresh_list) {
				list->count = 0;
				list->listed_ns = now_ns;
			}
			return list;
		}
		if (list->listed_ns < oldest->listed_ns)
			oldest = list;
	}
	*fresh_list = false;
	*oldest = (struct task_list){ .pid = (uint32_t)pid, .loop = loop, .listed_ns = now_ns };
	return oldest;
}

/*
 * 3.11-3.13 list tasks per process only (the sets of all tasks): those of a thread are the ones
 * whose loop is the loop it runs.
 */
static size_t old_tasks_of_thread(struct async_tasks *tasks, const struct py_target *target, uint64_t tstate,
				  uint64_t now_ns, uint64_t *out, size_t max)
{
	struct loop_slot *slot = loop_of_target(tasks, target);
	uint64_t loop = running_loop_of(target, tstate);
	struct task_list *list;
	bool fresh_list;

	if (!loop)
		return 0;
	list = task_list_of(tasks, target->pid, loop, now_ns, &fresh_list);
	if (!fresh_list) {
		find_task_sets(target, slot, now_ns);
		list_tasks_of_set(target, slot->all_tasks, true, list);
		list_tasks_of_set(target, slot->eager_tasks, false, list);
	}
	if (list->count < max)
		max = list->count;
	memcpy(out, list->tasks, max * sizeof(*out));
	return max;
}
