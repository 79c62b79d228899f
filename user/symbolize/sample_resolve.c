// SPDX-License-Identifier: MIT
#include "symbolize/sample_resolve.h"

#include "symbolize/symbolize_native.h"
#include "symbolize/symbolize_py.h"
#include "unwind_table.h"
#include "util/array.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sample_resolve_init(struct sample_resolver *resolver, sample_kernel_namer_fn kernel_namer,
			void *kernel_namer_context, uint64_t period_us)
{
	memset(resolver, 0, sizeof(*resolver));
	resolver->python = symbolize_py_cache_new();
	resolver->tasks = async_tasks_new();
	if (!resolver->python || !resolver->tasks) {
		symbolize_py_cache_free(resolver->python);
		async_tasks_free(resolver->tasks);
		return -ENOMEM;
	}
	resolver->kernel_namer = kernel_namer;
	resolver->kernel_namer_context = kernel_namer_context;
	resolver->period_us = period_us;
	intern_init(&resolver->kernel_names);
	hash_index_init(&resolver->native_pc_index);
	intern_init(&resolver->kernel_addresses);
	intern_init(&resolver->native_addresses);
	memo_cache_init(&resolver->stacks, SAMPLE_RESOLVE_STACKS_MAX, SAMPLE_RESOLVE_STACKS_MAX_BYTES);
	memo_cache_init(&resolver->python_stacks, SAMPLE_RESOLVE_STACKS_MAX, SAMPLE_RESOLVE_STACKS_MAX_BYTES / 4);
	return 0;
}

void sample_resolve_free(struct sample_resolver *resolver)
{
	symbolize_py_cache_free(resolver->python);
	async_tasks_free(resolver->tasks);
	resolver->tasks = NULL;
	intern_free(&resolver->kernel_names);
	hash_index_free(&resolver->native_pc_index);
	free(resolver->native_pcs);
	resolver->native_pcs = NULL;
	resolver->native_pc_count = resolver->native_pc_capacity = 0;
	intern_free(&resolver->kernel_addresses);
	intern_free(&resolver->native_addresses);
	free(resolver->kernel_name_of);
	resolver->kernel_name_of = NULL;
	memo_cache_free(&resolver->stacks);
	memo_cache_free(&resolver->python_stacks);
	resolver->python = NULL;
}

int sample_resolve_set_budget(struct sample_resolver *resolver, struct target_budget *budget)
{
	int err = memo_cache_set_budget(&resolver->stacks, budget, "resolved stacks",
					SAMPLE_RESOLVE_STACKS_BUDGET_SHARE_PERCENT);

	return err ? err
		   : memo_cache_set_budget(&resolver->python_stacks, budget, "known python stacks",
					   SAMPLE_RESOLVE_STACKS_BUDGET_SHARE_PERCENT / 4);
}

/* Kernel symbol text, interned so the frame's name outlives this sample; NULL when out of memory. */
static const char *intern_kernel_name(struct sample_resolver *resolver, const char *text)
{
	int64_t id = intern_add(&resolver->kernel_names, text, strlen(text), NULL);

	return id < 0 ? NULL : intern_key(&resolver->kernel_names, (uint32_t)id, NULL);
}

/* The namer's answer for one address of the batch asked for. */
static void kernel_name_found(void *context, uint64_t address, const char *name)
{
	struct sample_resolver *resolver = context;
	int64_t id = intern_find(&resolver->kernel_addresses, &address, sizeof(address));

	if (id >= 0 && !resolver->kernel_name_of[id])
		resolver->kernel_name_of[id] = intern_kernel_name(resolver, name);
}

/*
 * The same few kernel addresses recur in every sample: each is named once, when a record
 * first holds it, with the record's other new addresses in one batch (one pass of the
 * kernel's lookup costs about 20 us, however few it names). An address the kernel has no
 * symbol for is shown by its value.
 */
static void name_new_kernel_addresses(struct sample_resolver *resolver, const uint64_t *ips, size_t count)
{
	uint64_t batch[PBP_KSYM_BATCH];
	size_t wanted = 0;
	char text[24];

	for (size_t i = 0; i < count && wanted < PBP_KSYM_BATCH; i++) {
		size_t known = intern_count(&resolver->kernel_addresses);
		bool is_new;
		int64_t id;

		/* Room for one more name first, so an address is never known without its slot. */
		if (ARRAY_RESERVE(resolver->kernel_name_of, resolver->kernel_name_capacity, known + 1))
			break;
		id = intern_add(&resolver->kernel_addresses, &ips[i], sizeof(ips[i]), &is_new);
		if (id < 0)
			break;
		if (!is_new)
			continue;
		resolver->kernel_name_of[id] = NULL;
		batch[wanted++] = ips[i];
	}
	if (wanted && resolver->kernel_namer &&
	    resolver->kernel_namer(resolver->kernel_namer_context, batch, wanted, kernel_name_found, resolver))
		resolver->kernel_namer_errors++;
	for (size_t i = 0; i < wanted; i++) {
		int64_t id = intern_find(&resolver->kernel_addresses, &batch[i], sizeof(batch[i]));

		if (id < 0 || resolver->kernel_name_of[id])
			continue;
		snprintf(text, sizeof(text), "0x%" PRIx64, batch[i]);
		resolver->kernel_name_of[id] = intern_kernel_name(resolver, text);
	}
}

/* A kernel address named by name_new_kernel_addresses. */
static const char *kernel_frame_name(struct sample_resolver *resolver, uint64_t address)
{
	int64_t id = intern_find(&resolver->kernel_addresses, &address, sizeof(address));

	if (id < 0 || !resolver->kernel_name_of[id])
		return "<kernel>"; /* out of memory */
	return resolver->kernel_name_of[id];
}

/* The frame of a raw Python frame through the code-object cache; 0, or why it cannot be named. */
static int resolve_python_code(struct sample_resolver *resolver, pid_t pid, const struct py_target *python,
			       const struct pbp_py_frame *raw, struct pf_frame *frame)
{
	uint32_t instr_offset = raw->instr_offset;

	if (!python)
		return -ENOENT;
	/* Entry marks (PBP_PY_FRAME_ENTRY) only ride on 3.11+ offsets, which are never
	 * negative; up to 3.10 a negative f_lasti (a frame not started) stays as it is. */
	if (python->config.off.lasti_kind == PY_LASTI_PTR)
		instr_offset &= PBP_PY_FRAME_OFFSET_MASK;
	return symbolize_py_resolve(resolver->python, pid, &python->config, raw->code_addr, raw->checksum,
				    instr_offset, frame);
}

static void python_frame(struct sample_resolver *resolver, pid_t pid,
			 const struct py_target *python, const struct pbp_py_frame *raw,
			 struct pf_frame *frame, bool *incomplete)
{
	int err = resolve_python_code(resolver, pid, python, raw, frame);

	if (err == 0)
		return;
	resolver->unresolved_frames++;
	*frame = pf_frame_unlocated(PF_FRAME_PYTHON, "<unknown>", "<unresolved>");
	*incomplete = true;
}

static uint32_t status_of(const struct pbp_record *record)
{
	/* cpu-clock only fires on a running task; a wall-mode record says whether its thread was
	 * runnable (on CPU, as CPython's sampler sets it) or waiting (idle, as Austin calls it). */
	uint32_t status = record->flags & PBP_REC_OFF_CPU ? PF_STATUS_IDLE : PF_STATUS_ON_CPU;

	if (record->flags & PBP_REC_HAS_GIL)
		status |= PF_STATUS_HAS_GIL;
	if (record->flags & PBP_REC_GIL_REQUESTED)
		status |= PF_STATUS_GIL_REQUESTED;
	if (record->flags & PBP_REC_GC)
		status |= PF_STATUS_GC;
	if (record->flags & PBP_REC_EXCEPTION)
		status |= PF_STATUS_HAS_EXCEPTION;
	if (record->tid == record->pid)
		status |= PF_STATUS_MAIN_THREAD;
	if (record->flags & PBP_REC_NO_TSTATE)
		status |= PF_STATUS_UNKNOWN;
	return status;
}

uint64_t sample_resolve_native_walk_count(const struct sample_resolver *resolver)
{
	uint64_t walks = 0;

	for (size_t i = 0; i < UNWIND_STOP_COUNT; i++)
		if (i != UNWIND_STOP_NOT_WALKED)
			walks += resolver->native_walks[i];
	return walks;
}

/* Whether a Python frame ended its activation of the eval function: marked by BPF from 3.11,
 * every frame before (each ran in its own activation). */
static bool is_entry_frame(const struct py_target *python, const struct pbp_py_frame *raw)
{
	if (python && (python->major > 3 || (python->major == 3 && python->minor >= 11)))
		return (raw->instr_offset & PBP_PY_FRAME_ENTRY) != 0;
	return true;
}

/* A pc in no file mapping (JIT code, anonymous memory): its address, interned. */
static struct pf_frame unmapped_native_frame(struct sample_resolver *resolver, uint64_t pc)
{
	char text[32];
	int64_t id;

	snprintf(text, sizeof(text), "0x%" PRIx64, pc);
	id = intern_add(&resolver->native_addresses, text, strlen(text) + 1, NULL);
	return pf_frame_unlocated(PF_FRAME_NATIVE, "",
				  id < 0 ? "<native>" : intern_key(&resolver->native_addresses, (uint32_t)id, NULL));
}

/* 3.12+ has C-stack shims: BPF finds the eval activations by address (PBP_NATIVE_PC_EVAL). */
static bool activations_found_by_bpf(const struct py_target *python)
{
	return python && (python->major > 3 || (python->major == 3 && python->minor >= 12));
}

/* Whether pc lies in the evaluation function's code as discovery located it: an activation
 * known before (or without) the file's symbol table, which names it only once read. */
static bool in_eval_function(const struct py_target *python, uint64_t pc)
{
	return python && pc >= python->eval_start && pc < python->eval_end;
}

/* The role of an interpreter frame: from BPF's mark where it can find activations, else by
 * the evaluation function's address, else by name. */
static enum native_role interpreter_role(const struct py_target *python, uint64_t pc, const char *symbol,
					 bool marked_eval)
{
	enum native_role role = in_eval_function(python, pc) ? NATIVE_ROLE_EVAL
							      : stack_merge_role_of_name(symbol, python->major);

	if (!activations_found_by_bpf(python))
		return role;
	if (marked_eval)
		return NATIVE_ROLE_EVAL;
	/* An activation BPF did not mark: one with no Python frame yet, or one whose shim lay past
	 * the frames the walk kept. */
	return role == NATIVE_ROLE_EVAL ? NATIVE_ROLE_EVAL_UNMARKED : role;
}

/* Cached native pcs past this are forgotten at once: a whole host names far fewer per run. */
#define NATIVE_PC_CACHE_MAX (1u << 16)

/* A pc's role depends on whether its process's interpreter is known: a process sampled before
 * discovery finished has its pcs resolved without one, all foreign, and with one afterwards. */
struct native_pc_key {
	uint64_t pc_word;
	uint32_t pid;
	bool caller;
	bool python;
};

static uint64_t native_pc_hash(const struct native_pc_key *key)
{
	return hash_combine(hash_combine(key->pc_word, key->pid), (uint64_t)key->caller | (uint64_t)key->python << 1);
}

static bool native_pc_matches(const void *context, uint32_t position, const void *opaque)
{
	const struct sample_resolver *resolver = context;
	const struct native_pc_key *key = opaque;
	const struct native_pc_entry *entry = &resolver->native_pcs[position];

	return entry->pc_word == key->pc_word && entry->pid == key->pid && entry->caller == key->caller &&
	       entry->python == key->python;
}

void sample_resolve_forget_native(struct sample_resolver *resolver)
{
	hash_index_clear(&resolver->native_pc_index);
	resolver->native_pc_count = 0;
}

void sample_resolve_forget_names(struct sample_resolver *resolver)
{
	sample_resolve_forget_native(resolver);
	memo_cache_clear(&resolver->stacks);
	/* The same stacks get new ids from here (drop_stale_stacks). */
	pf_stack_ids_die();
}

/* Keeps a named pc for the next samples (nothing happens when memory is short). */
static void remember_native_pc(struct sample_resolver *resolver, const struct native_pc_key *key,
			       const struct pf_frame *frame, uint8_t role)
{
	if (resolver->native_pc_count >= NATIVE_PC_CACHE_MAX)
		sample_resolve_forget_native(resolver);
	if (ARRAY_RESERVE(resolver->native_pcs, resolver->native_pc_capacity, resolver->native_pc_count + 1) ||
	    hash_index_insert(&resolver->native_pc_index, native_pc_hash(key), (uint32_t)resolver->native_pc_count))
		return;
	resolver->native_pcs[resolver->native_pc_count++] = (struct native_pc_entry){
		.pc_word = key->pc_word, .pid = key->pid, .caller = key->caller, .python = key->python, .role = role,
		.frame = *frame,
	};
}

/* Names one native pc and gives it its role in the merge (and remembers both). 0 or -ENOMEM. */
static int resolve_native_pc(struct sample_resolver *resolver, const struct py_target *python,
			     const struct native_pc_key *key, struct pf_frame *frame, uint8_t *role)
{
	bool marked_eval = (key->pc_word & PBP_NATIVE_PC_EVAL) != 0;
	uint64_t raw_pc = key->pc_word & ~PBP_NATIVE_PC_EVAL;
	/* A caller's pc is its return address: the call is the instruction before. */
	uint64_t pc = key->caller ? raw_pc - 1 : raw_pc;
	struct symbolize_native_frame found;
	int err = symbolize_native_lookup(resolver->native, (pid_t)key->pid, python ? &python->runtime_file : NULL,
					  pc, &found);

	if (err < 0)
		return err;
	if (err == 0) {
		/* (a mapping not read yet: the evaluation function's address still tells) */
		*frame = unmapped_native_frame(resolver, raw_pc);
		if (python && marked_eval)
			*role = NATIVE_ROLE_EVAL;
		else if (in_eval_function(python, pc))
			*role = interpreter_role(python, pc, NULL, false);
		else
			*role = NATIVE_ROLE_FOREIGN;
	} else {
		*frame = found.frame;
		if (python && (found.in_interpreter || marked_eval || in_eval_function(python, pc)))
			*role = interpreter_role(python, pc, found.symbol, marked_eval);
		else
			*role = NATIVE_ROLE_FOREIGN;
	}
	/* A pc in no mapping may be in one the next time the maps are read (a library
	 * loaded since), and a pc of a file whose symbols are on their way has a better
	 * name coming: only what was found for good is kept. */
	if (err > 0 && !found.provisional)
		remember_native_pc(resolver, key, frame, *role);
	return 0;
}

/* Names native pcs (leaf first) and gives each its role in the merge. 0 or -ENOMEM. */
static int resolve_native_frames(struct sample_resolver *resolver, const struct pbp_record *record,
				 const uint64_t *pcs, const struct py_target *python)
{
	for (size_t i = 0; i < record->native_frame_count; i++) {
		struct native_pc_key key = { .pc_word = pcs[i], .pid = record->pid, .caller = i != 0,
					     .python = python != NULL };
		int err;
		int64_t known = hash_index_find(&resolver->native_pc_index, native_pc_hash(&key), native_pc_matches,
						resolver, &key);

		if (known >= 0) {
			resolver->native_frames[i] = resolver->native_pcs[known].frame;
			resolver->native_role[i] = resolver->native_pcs[known].role;
			continue;
		}
		err = resolve_native_pc(resolver, python, &key, &resolver->native_frames[i], &resolver->native_role[i]);
		if (err)
			return err;
	}
	return 0;
}

/* Python and native frames merged, root first, from frames[count]; returns the new count.
 * natives_named: resolve_native_frames named the native frames (else: the Python frames alone). */
static size_t merge_mixed_stack(struct sample_resolver *resolver, const struct pbp_record *record,
				const struct pbp_py_frame *py_frames, bool natives_named,
				const struct py_target *python, size_t count, bool *incomplete,
				size_t python_index, size_t *python_at)
{
	struct merge_input input = {
		.python_count = record->py_frame_count,
		.python_entry = resolver->python_entry,
		.native_count = record->native_frame_count,
		.native_role = resolver->native_role,
		.keep_all = resolver->native_keep_all,
		.native_truncated = record->native_stop != UNWIND_STOP_ROOT,
		.python_cut = (record->flags & (PBP_REC_PY_TRUNCATED | PBP_REC_READ_FAULT)) != 0,
	};
	size_t step_count = 0;

	for (size_t i = 0; i < record->py_frame_count; i++) {
		python_frame(resolver, (pid_t)record->pid, python, &py_frames[i], &resolver->python_frames[i],
			     incomplete);
		resolver->python_entry[i] = is_entry_frame(python, &py_frames[i]);
	}
	if (!natives_named) {
		/* Out of memory naming them: the Python frames alone, as without native stacks. */
		for (size_t i = record->py_frame_count; i-- > 0;) {
			if (i == python_index)
				*python_at = count;
			resolver->frames[count++] = resolver->python_frames[i];
		}
		return count;
	}
	/* Disagreeing stacks are kept whole (both, the native ones on top) and counted. */
	if (stack_merge(&input, resolver->steps, &step_count) == -EPROTO)
		resolver->merge_failures++;
	for (size_t i = step_count; i-- > 0;) {
		const struct merge_step *step = &resolver->steps[i];

		if (step->source == MERGE_PYTHON && step->index == python_index)
			*python_at = count;
		resolver->frames[count++] = step->source == MERGE_PYTHON ? resolver->python_frames[step->index]
									 : resolver->native_frames[step->index];
	}
	return count;
}

/* --- stacks resolved before --- */

/*
 * A stack's key: what its resolved frames depend on besides the symbolizers' caches (which
 * only grow while symbolize_py_generation stays). A head, the record's raw Python frames, its
 * native frames as named (raw pcs differ from sample to sample where the names do not), and its
 * kernel addresses: the record's parts are not copied to be looked up.
 */
struct stack_key_head {
	uint32_t pid;
	uint16_t py_count, native_count, kernel_count;
	uint8_t native_stop;
	uint8_t invalid_flags;              /* the record's flags that mark its stack cut */
	uint8_t python_major, python_minor; /* 0: no runtime yet */
	uint8_t lasti_kind;
	uint8_t shape;                      /* STACK_KEY_* */
};
#define STACK_KEY_MIXED    0x1u
#define STACK_KEY_KEEP_ALL 0x2u
#define STACK_KEY_LEAF     0x4u /* without native stacks: a native leaf frame */
#define STACK_KEY_PLUMBING 0x8u /* a task chain's event loop frames kept */
#define STACK_KEY_CHANGING 0x10u /* the thread's reads never agreed: a marker after the agreed frames */
_Static_assert(sizeof(struct stack_key_head) == 16, "a key's head has no padding");

/* One named native frame as keys hold it (every byte set: compared as bytes). */
struct native_key {
	const char *file, *name;
	int32_t line, end_line, column, end_column, function_line;
	int16_t opcode;
	uint8_t kind, role;
};
_Static_assert(sizeof(struct native_key) == 40, "a native frame's key has no padding");
_Static_assert(SAMPLE_RESOLVE_STACK_KEY_MAX >= sizeof(struct stack_key_head) +
		       UNWIND_MAX_FRAMES * sizeof(struct native_key),
	       "room for the head and the native frames");

/* A stack's key in its parts: the head and native frames in resolver->stack_key, the rest in the record. */
enum { KEY_HEAD, KEY_PYTHON, KEY_NATIVE, KEY_KERNEL, KEY_TASKS, KEY_PARTS };

/* What a kept stack holds: the sample's frames (the invalid marker included). */
struct kept_stack {
	uint64_t stack_id;
	size_t frame_count;
	bool merge_failed;
	struct pf_frame frames[];
};

static struct native_key native_key_of(const struct pf_frame *frame, uint8_t role)
{
	return (struct native_key){ .file = frame->file, .name = frame->name, .line = frame->line,
				    .end_line = frame->end_line, .column = frame->column,
				    .end_column = frame->end_column, .function_line = frame->function_line,
				    .opcode = frame->opcode, .kind = (uint8_t)frame->kind, .role = role };
}

/* The record's key in parts[KEY_PARTS]. */
static void build_stack_key(struct sample_resolver *resolver, const struct pbp_record *record,
			    const struct py_target *python, bool mixed, bool leaf, const struct async_chain *chain,
			    struct memo_key_part *parts)
{
	static const uint64_t no_chain;
	const struct pbp_py_frame *py_frames = (const void *)(record + 1);
	const uint64_t *kernel_ips = (const uint64_t *)(py_frames + record->py_frame_count) + record->native_frame_count;
	struct stack_key_head head = {
		.pid = record->pid,
		.py_count = record->py_frame_count,
		.native_count = mixed ? record->native_frame_count : 0,
		.kernel_count = record->kernel_frame_count,
		.native_stop = mixed ? record->native_stop : 0,
		.invalid_flags = (uint8_t)(record->flags & (PBP_REC_PY_TRUNCATED | PBP_REC_READ_FAULT)),
		.python_major = python ? (uint8_t)python->major : 0,
		.python_minor = python ? (uint8_t)python->minor : 0,
		.lasti_kind = python ? (uint8_t)python->config.off.lasti_kind : 0,
		.shape = (uint8_t)((mixed ? STACK_KEY_MIXED : 0) | (resolver->native_keep_all ? STACK_KEY_KEEP_ALL : 0) |
				   (leaf ? STACK_KEY_LEAF : 0) | (resolver->async_plumbing ? STACK_KEY_PLUMBING : 0) |
				   ((record->flags & PBP_REC_PY_CHANGING) ? STACK_KEY_CHANGING : 0)),
	};
	struct native_key *natives = (struct native_key *)(resolver->stack_key + sizeof(head));
	size_t native_count = 0;

	memcpy(resolver->stack_key, &head, sizeof(head));
	for (size_t i = 0; mixed && i < record->native_frame_count; i++)
		natives[native_count++] = native_key_of(&resolver->native_frames[i], resolver->native_role[i]);
	if (leaf)
		natives[native_count++] = native_key_of(&resolver->native_leaf, 0);
	parts[KEY_HEAD] = (struct memo_key_part){ resolver->stack_key, sizeof(head) };
	parts[KEY_PYTHON] = (struct memo_key_part){ py_frames, record->py_frame_count * sizeof(*py_frames) };
	parts[KEY_NATIVE] = (struct memo_key_part){ natives, native_count * sizeof(*natives) };
	parts[KEY_KERNEL] = (struct memo_key_part){ kernel_ips, record->kernel_frame_count * sizeof(*kernel_ips) };
	parts[KEY_TASKS] = (struct memo_key_part){ chain ? &chain->chain_id : &no_chain, sizeof(no_chain) };
}

/*
 * A code object dropped since the kept stacks were resolved may name their frames otherwise now.
 * A stack answered from here does not mark its code objects used in symbolize_py: past a target's
 * budget a repeated stack's objects may be among those evicted; the generation then changes and
 * they are read again, naming the same frames as long as the objects live.
 */
static void drop_stale_stacks(struct sample_resolver *resolver)
{
	uint64_t generation = symbolize_py_generation(resolver->python);

	if (generation == resolver->stacks_generation)
		return;
	memo_cache_clear(&resolver->stacks);
	memo_cache_clear(&resolver->python_stacks);
	resolver->stacks_generation = generation;
	/* The same stacks get new ids from here: what writers keep by the old ones is dead weight. */
	pf_stack_ids_die();
}

/* Whether every code object of the record's Python frames is in the cache (seen so); or else, with
 * remember, that it is now. */
static bool python_stack_known(struct sample_resolver *resolver, const struct pbp_record *record, bool remember)
{
	uint32_t pid = record->pid;
	const struct memo_key_part parts[] = {
		{ &pid, sizeof(pid) },
		{ record + 1, (size_t)record->py_frame_count * sizeof(struct pbp_py_frame) },
	};
	uint64_t hash = memo_cache_hash_parts(parts, ARRAY_SIZE(parts));
	size_t found_len;

	if (memo_cache_find_parts(&resolver->python_stacks, hash, parts, ARRAY_SIZE(parts), &found_len))
		return true;
	if (remember)
		(void)memo_cache_put_parts(&resolver->python_stacks, hash, parts, ARRAY_SIZE(parts), 0);
	return false;
}

/* The asyncio task the record's thread was running, 0 if none: the record's own (3.14+, and
 * 3.11-3.13 where BPF found it), or the task stepping the coroutine it names (3.11-3.13). */
static uint64_t record_task(struct sample_resolver *resolver, const struct pbp_record *record,
			    const struct py_target *python)
{
	if (!record->running_task || !python || !python->asyncio.known || !resolver->tasks)
		return 0;
	if (!python->asyncio.from_callbacks)
		return record->running_task;
	if (record->flags & PBP_REC_ASYNC_TASK) {
		async_tasks_note_task(resolver->tasks, python, record->running_task, record->time_ns);
		return record->running_task;
	}
	return async_tasks_task_of_coroutine(resolver->tasks, python, record->running_task, record->time_ns);
}

void sample_resolve_prefetch(struct sample_resolver *resolver, const struct pbp_record *record, size_t size,
			     const struct py_target *python)
{
	const struct pbp_py_frame *py_frames = (const void *)(record + 1);
	struct pf_frame frame;
	bool all_read = true;

	if (!python || size < sizeof(*record) || record->py_frame_count > PBP_MAX_PY_FRAMES ||
	    size < sizeof(*record) + (size_t)record->py_frame_count * sizeof(*py_frames))
		return;
	drop_stale_stacks(resolver);
	/* The task may finish within milliseconds: its chain is read while it runs (a task gone
	 * already may still have its chain from an earlier record: counted when resolved). */
	if (record_task(resolver, record, python))
		(void)async_tasks_read(resolver->tasks, resolver->python, python, record_task(resolver, record, python),
				       record->time_ns);
	if (python_stack_known(resolver, record, false))
		return;
	for (size_t i = 0; i < record->py_frame_count; i++)
		all_read &= resolve_python_code(resolver, (pid_t)record->pid, python, &py_frames[i], &frame) == 0;
	if (all_read)
		python_stack_known(resolver, record, true);
}

static void fill_sample(const struct sample_resolver *resolver, const struct pbp_record *record,
			const struct pf_frame *frames, size_t frame_count, uint64_t stack_id, struct pf_sample *sample)
{
	*sample = (struct pf_sample){
		.pid = record->pid,
		.iid = record->interp_id,
		.tid = record->tid,
		.timestamp_us = record->time_ns / 1000,
		.status = status_of(record),
		.metrics = PF_METRIC_TIME,
		.time_us = resolver->period_us * (record->weight ? record->weight : 1),
		.samples = record->weight ? record->weight : 1,
		.frame_count = frame_count,
		.frames = frames,
		.stack_id = stack_id,
		.task_state = (char)record->task_state,
		.on_a_cpu = (record->flags & PBP_REC_ON_A_CPU) != 0,
	};
	if (resolver->event_period) {
		sample->count = resolver->event_period *
				(resolver->event_blocked_ns ? record->blocked_ns : sample->samples);
		sample->metrics = PF_METRIC_COUNT;
		sample->time_us = 0;
		if (resolver->event_bytes) {
			sample->metrics |= PF_METRIC_MEMORY;
			sample->memory = (int64_t)(sample->count * resolver->event_bytes);
		}
		if (resolver->event_weight_bytes) {
			uint64_t bytes = record->event_weight > INT64_MAX / resolver->event_period
						 ? INT64_MAX
						 : record->event_weight * resolver->event_period;

			sample->metrics |= PF_METRIC_MEMORY;
			sample->memory = (int64_t)bytes;
		}
	}
	if (resolver->memory_deltas) {
		sample->metrics = PF_METRIC_MEMORY;
		sample->memory = record->rss_delta;
	}
}

/* Keeps a stack resolved whole for the records that repeat it; its stack id, 0 if not kept. */
static uint64_t keep_stack(struct sample_resolver *resolver, uint64_t hash, const struct memo_key_part *parts,
			   const struct pf_frame *frames, size_t frame_count, bool merge_failed)
{
	struct kept_stack *kept = memo_cache_put_parts(&resolver->stacks, hash, parts, KEY_PARTS,
						       sizeof(*kept) + frame_count * sizeof(*frames));

	if (!kept)
		return 0;
	kept->stack_id = pf_stack_id_new();
	kept->frame_count = frame_count;
	kept->merge_failed = merge_failed;
	memcpy(kept->frames, frames, frame_count * sizeof(*frames));
	return kept->stack_id;
}

/* The native frames a record's stack is built from, named: the mixed stack's, or the leaf
 * where a sample without one landed. false when they could not be named (memory is short). */
static bool name_native_frames(struct sample_resolver *resolver, const struct pbp_record *record,
			       const struct py_target *python, bool mixed, bool *leaf)
{
	const uint64_t *native_pcs = (const uint64_t *)((const struct pbp_py_frame *)(record + 1) +
							record->py_frame_count);

	*leaf = false;
	if (mixed)
		return resolve_native_frames(resolver, record, native_pcs, python) == 0;
	/* A sample that landed in native code outside the interpreter (an extension, libc)
	 * says where; inside the interpreter the Python frames already do. */
	*leaf = record->user_ip && resolver->native && python &&
		symbolize_native_resolve(resolver->native, (pid_t)record->pid, &python->runtime_file, record->user_ip,
					 &resolver->native_leaf) > 0;
	return true;
}

/*
 * Where the running task's frames start among the record's Python frames (leaf first): the
 * outermost frame of its coroutine's code, the event loop's frames lying above it.
 * SIZE_MAX when the record has no task chain or its coroutine is not in the stack (the walk
 * was cut, or the task is between steps).
 */
static size_t task_root_index(const struct pbp_record *record, const struct async_chain *chain)
{
	const struct pbp_py_frame *py_frames = (const void *)(record + 1);

	if (!chain || !chain->coro_code)
		return SIZE_MAX;
	for (size_t i = record->py_frame_count; i-- > 0;)
		if (py_frames[i].code_addr == chain->coro_code)
			return i;
	return SIZE_MAX;
}

/* The chain's frames right above frames[at], in place of the frames above it (the event loop's,
 * Python and native) unless they are kept; the new count. */
static size_t insert_task_chain(struct sample_resolver *resolver, const struct async_chain *chain, size_t at,
				size_t count)
{
	size_t kept_above = resolver->async_plumbing ? at : 1;

	memmove(&resolver->frames[kept_above + chain->frame_count], &resolver->frames[at],
		(count - at) * sizeof(resolver->frames[0]));
	memcpy(&resolver->frames[kept_above], chain->frames, chain->frame_count * sizeof(chain->frames[0]));
	return kept_above + chain->frame_count + (count - at);
}

/* An off-cpu record's kernel stack is taken inside the sched_switch tracepoint: its leaf frames
 * may be the tracepoint's plumbing (how many the kernel shows varies with where the unwinder
 * starts), not the thread's wait. How many leaf frames to leave out. */
static size_t tracepoint_frames(struct sample_resolver *resolver, const struct pbp_record *record,
				const uint64_t *kernel_ips)
{
	static const char *const plumbing[] = { "bpf_prog_", "bpf_trace_run", "__bpf_trace_", "__traceiter_" };
	size_t skipped = 0;

	if (!record->blocked_ns)
		return 0;
	for (; skipped < record->kernel_frame_count; skipped++) {
		const char *name = kernel_frame_name(resolver, kernel_ips[skipped]);
		bool tracing = false;

		for (size_t k = 0; name && k < sizeof(plumbing) / sizeof(plumbing[0]); k++)
			tracing |= strncmp(name, plumbing[k], strlen(plumbing[k])) == 0;
		if (!tracing)
			break;
	}
	return skipped;
}

/* The record's stack resolved into resolver->frames from frames[1] (frames[0] the invalid marker); its
 * frame count with the marker. incomplete: set when a frame could not be named. */
static size_t resolve_frames(struct sample_resolver *resolver, const struct pbp_record *record,
			     const struct py_target *python, bool mixed, bool natives_named, bool leaf,
			     const struct async_chain *chain, bool *incomplete)
{
	const struct pbp_py_frame *py_frames = (const void *)(record + 1);
	const uint64_t *kernel_ips = (const uint64_t *)(py_frames + record->py_frame_count) + record->native_frame_count;
	size_t count = 1, task_index = task_root_index(record, chain), task_at = 0, plumbing;

	if (mixed) {
		count = merge_mixed_stack(resolver, record, py_frames, natives_named, python, count, incomplete,
					  task_index, &task_at);
	} else {
		/* The record is leaf first; the model is root first. */
		for (size_t i = record->py_frame_count; i-- > 0;) {
			if (i == task_index)
				task_at = count;
			python_frame(resolver, (pid_t)record->pid, python, &py_frames[i],
				     &resolver->frames[count++], incomplete);
		}
		/* the frames two reads agreed on are the root side: where the thread ran is unknown */
		if (record->flags & PBP_REC_PY_CHANGING)
			resolver->frames[count++] = pf_frame_unlocated(PF_FRAME_PYTHON, SAMPLE_RESOLVE_CHANGING_FILE,
								       SAMPLE_RESOLVE_CHANGING_NAME);
		if (leaf)
			resolver->frames[count++] = resolver->native_leaf;
	}
	if (task_at) {
		count = insert_task_chain(resolver, chain, task_at, count);
		resolver->task_samples++;
	}
	name_new_kernel_addresses(resolver, kernel_ips, record->kernel_frame_count);
	plumbing = tracepoint_frames(resolver, record, kernel_ips);
	for (size_t i = record->kernel_frame_count; i-- > plumbing;) {
		struct pf_frame *frame = &resolver->frames[count++];

		*frame = pf_frame_unlocated(PF_FRAME_KERNEL, "",
					    kernel_frame_name(resolver, kernel_ips[i]));
	}
	resolver->frames[0] = pf_frame_unlocated(PF_FRAME_INVALID, "", "");
	return count;
}

/* The name BPF copied of the record's running task (PBP_REC_TASK_NAME), NULL if it has none. */
static const struct pbp_task_name *copied_task_name(const struct pbp_record *record, size_t size)
{
	size_t at = sizeof(*record) + (size_t)record->py_frame_count * sizeof(struct pbp_py_frame) +
		    ((size_t)record->native_frame_count + record->kernel_frame_count) * sizeof(uint64_t);

	if (!(record->flags & PBP_REC_TASK_NAME) || size < at + sizeof(struct pbp_task_name))
		return NULL;
	return (const struct pbp_task_name *)((const uint8_t *)record + at);
}

/* Whether a chain read at the drain is of the task named copied at the sample (a name cut at
 * the copy's end, "<task TEXT...>", names every task whose name starts with TEXT). */
static bool chain_named(const struct async_chain *chain, const char *copied)
{
	const char *read = chain->frame_count ? chain->frames[chain->frame_count - 1].name : NULL;
	size_t len = strlen(copied);

	if (!read)
		return false;
	if (len > 4 && strcmp(copied + len - 4, "...>") == 0)
		return strncmp(read, copied, len - 4) == 0;
	return strcmp(read, copied) == 0;
}

/*
 * The chain of tasks of the record's running task, NULL if none (or nothing of it is known).
 * The chain is read from the target at the drain; the task's name BPF copied at the sample
 * checks it: a task that ended since (its chain unread), or whose address another task took
 * (a chain of another name), is its name alone, "<task ?>" where BPF could not copy it.
 */
static const struct async_chain *task_chain(struct sample_resolver *resolver, const struct pbp_record *record,
					    size_t size, const struct py_target *python)
{
	const struct async_chain *chain = NULL;
	const struct pbp_task_name *copy = copied_task_name(record, size);
	uint64_t task = record_task(resolver, record, python);
	const char *copied;
	int err;

	if (!task)
		return NULL;
	err = async_tasks_chain(resolver->tasks, resolver->python, python, task, record->time_ns, &chain);
	if (err)
		resolver->task_chain_errors++;
	if (!copy)
		return err ? NULL : chain;
	copied = async_tasks_copied_name(resolver->tasks, python, copy);
	if (!err && (!copied || chain_named(chain, copied)))
		return chain;
	if (!err)
		resolver->task_chains_reused++;
	if (!copied) {
		copied = async_tasks_unknown_name(resolver->tasks);
		resolver->task_names_unknown++;
	} else {
		resolver->task_names_copied++;
	}
	if (!copied || async_tasks_named_chain(resolver->tasks, copied, copy->coro_code, &chain))
		return NULL;
	return chain;
}

int sample_resolve_record(struct sample_resolver *resolver, const struct pbp_record *record, size_t size,
			  const struct py_target *python, struct pf_sample *sample)
{
	const struct pbp_py_frame *py_frames = (const void *)(record + 1);
	/* frames[0] is the invalid marker, the stack's frames start at first_python */
	size_t needed = sizeof(*record), count, first_python = 1;
	bool incomplete = (record->flags & (PBP_REC_PY_TRUNCATED | PBP_REC_READ_FAULT)) != 0;
	bool mixed, natives_named, leaf;
	uint64_t unresolved_before = resolver->unresolved_frames, merge_failures_before = resolver->merge_failures;
	uint64_t hash, stack_id = 0;
	const struct kept_stack *kept;
	const struct async_chain *chain;
	struct memo_key_part key[KEY_PARTS];
	size_t kept_len;

	if (size < needed || record->py_frame_count > PBP_MAX_PY_FRAMES ||
	    record->native_frame_count > UNWIND_MAX_FRAMES || record->kernel_frame_count > PBP_MAX_KERNEL_FRAMES)
		return -EINVAL;
	needed += (size_t)record->py_frame_count * sizeof(*py_frames) +
		  (size_t)record->native_frame_count * sizeof(uint64_t) +
		  (size_t)record->kernel_frame_count * sizeof(uint64_t);
	if (size < needed)
		return -EINVAL;
	mixed = resolver->native_stacks && resolver->native && record->native_frame_count > 0;
	/* A walk that reached the root recorded at least the leaf: a ROOT with no pc is a record
	 * of a BPF program that does not walk (its stop field left zero). */
	if (resolver->native_stacks && record->native_stop < UNWIND_STOP_COUNT &&
	    (record->native_frame_count > 0 || record->native_stop != UNWIND_STOP_ROOT))
		resolver->native_walks[record->native_stop]++;

	/* Native frames are named for every record (by pc they differ where their names do not);
	 * the Python frames and the merge come from the stack kept for the same key. */
	natives_named = name_native_frames(resolver, record, python, mixed, &leaf);
	drop_stale_stacks(resolver);
	chain = task_chain(resolver, record, size, python);
	build_stack_key(resolver, record, python, mixed, leaf, chain, key);
	hash = memo_cache_hash_parts(key, KEY_PARTS);
	kept = natives_named ? memo_cache_find_parts(&resolver->stacks, hash, key, KEY_PARTS, &kept_len) : NULL;
	if (kept) {
		resolver->stack_hits++;
		resolver->merge_failures += kept->merge_failed;
		fill_sample(resolver, record, kept->frames, kept->frame_count, kept->stack_id, sample);
		return 0;
	}
	resolver->stack_misses++;
	count = resolve_frames(resolver, record, python, mixed, natives_named, leaf, chain, &incomplete);
	/* A frame that could not be named may be named next time: only whole stacks are kept. */
	if (natives_named && resolver->unresolved_frames == unresolved_before) {
		if (record->py_frame_count)
			python_stack_known(resolver, record, true);
		stack_id = keep_stack(resolver, hash, key, incomplete ? resolver->frames : resolver->frames + first_python,
				      incomplete ? count : count - first_python,
				      resolver->merge_failures != merge_failures_before);
	}
	fill_sample(resolver, record, incomplete ? resolver->frames : resolver->frames + first_python,
		    incomplete ? count : count - first_python, stack_id, sample);
	return 0;
}
