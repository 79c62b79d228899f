// SPDX-License-Identifier: MIT
#include "symbolize/sample_resolve.h"

#include "symbolize/ksyms.h"
#include "symbolize/symbolize_native.h"
#include "symbolize/symbolize_py.h"
#include "unwind_table.h"
#include "util/array.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sample_resolve_init(struct sample_resolver *resolver, const struct ksyms *kernel, uint64_t period_us)
{
	memset(resolver, 0, sizeof(*resolver));
	resolver->python = symbolize_py_cache_new();
	if (!resolver->python)
		return -ENOMEM;
	resolver->kernel = kernel;
	resolver->period_us = period_us;
	intern_init(&resolver->kernel_names);
	hash_index_init(&resolver->native_pc_index);
	intern_init(&resolver->kernel_addresses);
	intern_init(&resolver->native_addresses);
	return 0;
}

void sample_resolve_free(struct sample_resolver *resolver)
{
	symbolize_py_cache_free(resolver->python);
	intern_free(&resolver->kernel_names);
	hash_index_free(&resolver->native_pc_index);
	free(resolver->native_pcs);
	resolver->native_pcs = NULL;
	resolver->native_pc_count = resolver->native_pc_capacity = 0;
	intern_free(&resolver->kernel_addresses);
	intern_free(&resolver->native_addresses);
	free(resolver->kernel_name_of);
	resolver->kernel_name_of = NULL;
	resolver->python = NULL;
}

/* Kernel symbol text, interned so the frame's name outlives this sample. */
static const char *name_kernel_address(struct sample_resolver *resolver, uint64_t address)
{
	const char *module = NULL, *symbol = NULL;
	uint64_t offset = 0;
	char text[512];
	int64_t id;

	if (resolver->kernel)
		symbol = ksyms_resolve(resolver->kernel, address, &offset, &module);
	if (symbol && module && *module)
		snprintf(text, sizeof(text), "%s [%s]", symbol, module);
	else if (symbol)
		snprintf(text, sizeof(text), "%s", symbol);
	else
		snprintf(text, sizeof(text), "0x%" PRIx64, address);
	id = intern_add(&resolver->kernel_names, text, strlen(text), NULL);
	if (id < 0)
		return "<kernel>";
	return intern_key(&resolver->kernel_names, (uint32_t)id, NULL);
}

/* The same few kernel addresses recur in every sample: name each once. */
static const char *kernel_frame_name(struct sample_resolver *resolver, uint64_t address)
{
	size_t known = intern_count(&resolver->kernel_addresses);
	bool is_new;
	int64_t id;

	/* Room for one more name first, so an address is never known without its name. */
	if (ARRAY_RESERVE(resolver->kernel_name_of, resolver->kernel_name_capacity, known + 1))
		return "<kernel>";
	id = intern_add(&resolver->kernel_addresses, &address, sizeof(address), &is_new);
	if (id < 0)
		return "<kernel>";
	if (is_new)
		resolver->kernel_name_of[id] = name_kernel_address(resolver, address);
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

/* The role of an interpreter frame: from BPF's mark where it can find activations, else by name. */
static enum native_role interpreter_role(const struct py_target *python, const char *symbol, bool marked_eval)
{
	enum native_role role = stack_merge_role_of_name(symbol, python->major);

	if (!activations_found_by_bpf(python))
		return role;
	if (marked_eval)
		return NATIVE_ROLE_EVAL;
	/* An activation BPF did not mark holds no Python frame (a shim it could not pass). */
	return role == NATIVE_ROLE_EVAL ? NATIVE_ROLE_CALL_MACHINERY : role;
}

/* Cached native pcs past this are forgotten at once: a whole host names far fewer per run. */
#define NATIVE_PC_CACHE_MAX (1u << 16)

struct native_pc_key {
	uint64_t pc_word;
	uint32_t pid;
	bool caller;
};

static uint64_t native_pc_hash(const struct native_pc_key *key)
{
	return hash_combine(hash_combine(key->pc_word, key->pid), key->caller);
}

static bool native_pc_matches(const void *context, uint32_t position, const void *opaque)
{
	const struct sample_resolver *resolver = context;
	const struct native_pc_key *key = opaque;
	const struct native_pc_entry *entry = &resolver->native_pcs[position];

	return entry->pc_word == key->pc_word && entry->pid == key->pid && entry->caller == key->caller;
}

void sample_resolve_forget_native(struct sample_resolver *resolver)
{
	hash_index_clear(&resolver->native_pc_index);
	resolver->native_pc_count = 0;
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
		.pc_word = key->pc_word, .pid = key->pid, .caller = key->caller, .role = role, .frame = *frame,
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
	int err = symbolize_native_lookup(resolver->native, (pid_t)key->pid, python ? python->runtime_path : NULL,
					  pc, &found);

	if (err < 0)
		return err;
	if (err == 0) {
		*frame = unmapped_native_frame(resolver, raw_pc);
		*role = marked_eval && python ? NATIVE_ROLE_EVAL : NATIVE_ROLE_FOREIGN;
	} else {
		*frame = found.frame;
		if (python && (found.in_interpreter || marked_eval))
			*role = interpreter_role(python, found.symbol, marked_eval);
		else
			*role = NATIVE_ROLE_FOREIGN;
	}
	/* A pc in no mapping may be in one the next time the maps are read (a library
	 * loaded since): only what was found is kept. */
	if (err > 0)
		remember_native_pc(resolver, key, frame, *role);
	return 0;
}

/* Names native pcs (leaf first) and gives each its role in the merge. 0 or -ENOMEM. */
static int resolve_native_frames(struct sample_resolver *resolver, const struct pbp_record *record,
				 const uint64_t *pcs, const struct py_target *python)
{
	for (size_t i = 0; i < record->native_frame_count; i++) {
		struct native_pc_key key = { .pc_word = pcs[i], .pid = record->pid, .caller = i != 0 };
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

/* Python and native frames merged, root first, from frames[count]; returns the new count. */
static size_t merge_mixed_stack(struct sample_resolver *resolver, const struct pbp_record *record,
				const struct pbp_py_frame *py_frames, const uint64_t *pcs,
				const struct py_target *python, size_t count, bool *incomplete)
{
	struct merge_input input = {
		.python_count = record->py_frame_count,
		.python_entry = resolver->python_entry,
		.native_count = record->native_frame_count,
		.native_role = resolver->native_role,
		.keep_all = resolver->native_keep_all,
		.native_truncated = record->native_stop != UNWIND_STOP_ROOT,
	};
	size_t step_count = 0;

	for (size_t i = 0; i < record->py_frame_count; i++) {
		python_frame(resolver, (pid_t)record->pid, python, &py_frames[i], &resolver->python_frames[i],
			     incomplete);
		resolver->python_entry[i] = is_entry_frame(python, &py_frames[i]);
	}
	if (resolve_native_frames(resolver, record, pcs, python) < 0) {
		/* Out of memory naming them: the Python frames alone, as without native stacks. */
		for (size_t i = record->py_frame_count; i-- > 0;)
			resolver->frames[count++] = resolver->python_frames[i];
		return count;
	}
	/* Disagreeing stacks are kept whole (both, the native ones on top) and counted. */
	if (stack_merge(&input, resolver->steps, &step_count) == -EPROTO)
		resolver->merge_failures++;
	for (size_t i = step_count; i-- > 0;) {
		const struct merge_step *step = &resolver->steps[i];

		resolver->frames[count++] = step->source == MERGE_PYTHON ? resolver->python_frames[step->index]
									 : resolver->native_frames[step->index];
	}
	return count;
}

void sample_resolve_prefetch(struct sample_resolver *resolver, const struct pbp_record *record, size_t size,
			     const struct py_target *python)
{
	const struct pbp_py_frame *py_frames = (const void *)(record + 1);
	struct pf_frame frame;

	if (!python || size < sizeof(*record) || record->py_frame_count > PBP_MAX_PY_FRAMES ||
	    size < sizeof(*record) + (size_t)record->py_frame_count * sizeof(*py_frames))
		return;
	for (size_t i = 0; i < record->py_frame_count; i++)
		resolve_python_code(resolver, (pid_t)record->pid, python, &py_frames[i], &frame);
}

int sample_resolve_record(struct sample_resolver *resolver, const struct pbp_record *record, size_t size,
			  const struct py_target *python, struct pf_sample *sample)
{
	const struct pbp_py_frame *py_frames = (const void *)(record + 1);
	const uint64_t *native_pcs, *kernel_ips;
	size_t needed = sizeof(*record), count = 0, first_python;
	bool incomplete = (record->flags & (PBP_REC_PY_TRUNCATED | PBP_REC_READ_FAULT)) != 0;
	bool mixed;

	if (size < needed || record->py_frame_count > PBP_MAX_PY_FRAMES ||
	    record->native_frame_count > UNWIND_MAX_FRAMES || record->kernel_frame_count > PBP_MAX_KERNEL_FRAMES)
		return -EINVAL;
	needed += (size_t)record->py_frame_count * sizeof(*py_frames) +
		  (size_t)record->native_frame_count * sizeof(uint64_t) +
		  (size_t)record->kernel_frame_count * sizeof(uint64_t);
	if (size < needed)
		return -EINVAL;
	native_pcs = (const uint64_t *)(py_frames + record->py_frame_count);
	kernel_ips = native_pcs + record->native_frame_count;
	mixed = resolver->native_stacks && resolver->native && record->native_frame_count > 0;
	/* A walk that reached the root recorded at least the leaf: a ROOT with no pc is a record
	 * of a BPF program that does not walk (its stop field left zero). */
	if (resolver->native_stacks && record->native_stop < UNWIND_STOP_COUNT &&
	    (record->native_frame_count > 0 || record->native_stop != UNWIND_STOP_ROOT))
		resolver->native_walks[record->native_stop]++;

	/* Slot 0 is kept for the invalid marker; filled in once we know. */
	first_python = 1;
	count = first_python;
	if (mixed) {
		count = merge_mixed_stack(resolver, record, py_frames, native_pcs, python, count, &incomplete);
	} else {
		/* The record is leaf first; the model is root first. */
		for (size_t i = record->py_frame_count; i-- > 0;)
			python_frame(resolver, (pid_t)record->pid, python, &py_frames[i],
				     &resolver->frames[count++], &incomplete);
		/* A sample that landed in native code outside the interpreter (an extension, libc)
		 * says where; inside the interpreter the Python frames already do. */
		if (record->user_ip && resolver->native && python &&
		    symbolize_native_resolve(resolver->native, (pid_t)record->pid, python->runtime_path,
					     record->user_ip, &resolver->frames[count]) > 0)
			count++;
	}
	for (size_t i = record->kernel_frame_count; i-- > 0;) {
		struct pf_frame *frame = &resolver->frames[count++];

		*frame = pf_frame_unlocated(PF_FRAME_KERNEL, "",
					    kernel_frame_name(resolver, kernel_ips[i]));
	}
	resolver->frames[0] = pf_frame_unlocated(PF_FRAME_INVALID, "", "");
	*sample = (struct pf_sample){
		.pid = record->pid,
		.iid = record->interp_id,
		.tid = record->tid,
		.timestamp_us = record->time_ns / 1000,
		.status = status_of(record),
		.metrics = PF_METRIC_TIME,
		.time_us = resolver->period_us,
		.frame_count = incomplete ? count : count - first_python,
		.frames = incomplete ? resolver->frames : resolver->frames + first_python,
	};
	return 0;
}
