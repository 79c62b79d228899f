/* SPDX-License-Identifier: MIT */
/*
 * One ring-buffer record to one profile sample: Python frames through the
 * code-object cache, native frames through the ELF symbols of their files
 * (merged with the Python frames: symbolize/stack_merge.h), kernel frames
 * through kallsyms, flags to status bits.
 * A frame that cannot be named is kept as "<unresolved>" and the sample is
 * marked invalid at its root — never dropped silently.
 */
#ifndef PYBPFPROF_SAMPLE_RESOLVE_H
#define PYBPFPROF_SAMPLE_RESOLVE_H

#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"
#include "sample_record.h"
#include "symbolize/async_tasks.h"
#include "symbolize/stack_merge.h"
#include "unwind_table.h"
#include "python/py_discover.h"
#include "util/hash.h"
#include "util/intern.h"
#include "util/memo_cache.h"

struct symbolize_py_cache;
struct symbolize_native;
struct async_tasks;
struct async_chain;

/* Names up to PBP_KSYM_BATCH kernel addresses: found(found_context, address, name) for each that
 * has a name ("symbol" or "symbol [module]"). 0 or -errno. */
typedef int (*sample_kernel_namer_fn)(void *context, const uint64_t *addresses, size_t count,
				      void (*found)(void *found_context, uint64_t address, const char *name),
				      void *found_context);

struct native_pc_entry {
	uint64_t pc_word;  /* as the record has it: the pc and its PBP_NATIVE_PC_EVAL mark */
	uint32_t pid;
	uint8_t caller;    /* named at pc - 1 (a return address) */
	uint8_t python;    /* its role given knowing the process's interpreter (else: before discovery) */
	uint8_t role;      /* enum native_role */
	struct pf_frame frame;
};

/*
 * Resolved stacks kept for the records that repeat them (most do: a loop samples the same
 * stack again and again), so that a record seen before costs a hash and a comparison of its
 * raw frames instead of a lookup per frame. Bounded: past these the least used go (under a
 * target budget, sample_resolve_set_budget, its least recently used go sooner when the budget
 * is full).
 */
/* The frame that ends the stack of a thread that ran while it was read, and whose reads never
 * agreed (PBP_REC_PY_CHANGING): the frames before it are the part they agreed on, from the root. */
#define SAMPLE_RESOLVE_CHANGING_FILE "<sampler>"
#define SAMPLE_RESOLVE_CHANGING_NAME "<stack changed while read>"
#define SAMPLE_RESOLVE_STACKS_MAX 8192
#define SAMPLE_RESOLVE_STACKS_MAX_BYTES ((size_t)16 << 20)
/* Under a target budget, the share of its limit (percent) the resolved stacks may hold (the
 * known Python stacks a quarter of that): stacks of a thousand frames each new would otherwise
 * crowd out the code objects that every record needs, read again and again. */
#define SAMPLE_RESOLVE_STACKS_BUDGET_SHARE_PERCENT 25
/* The part of a stack's key built beside the record's frames: a head and the native frames as named
 * (sample_resolve.c). */
#define SAMPLE_RESOLVE_STACK_KEY_MAX (16 + UNWIND_MAX_FRAMES * 40)

struct sample_resolver {
	struct symbolize_py_cache *python;
	sample_kernel_namer_fn kernel_namer; /* NULL: kernel frames are shown by address */
	void *kernel_namer_context;
	uint64_t kernel_namer_errors;  /* batches the namer failed: their addresses shown as such */
	struct symbolize_native *native;      /* NULL: no native frames at all */
	bool native_stacks;            /* records carry native stacks: merge them with the Python frames */
	bool native_keep_all;          /* keep the interpreter's own frames too (--native=all) */
	/* A sample of a running asyncio task keeps the event loop's frames above its tasks
	 * (--async-plumbing); by default the task chain replaces them. */
	bool async_plumbing;
	struct async_tasks *tasks;     /* task chains (symbolize/async_tasks.h) */
	uint64_t task_chain_errors;    /* records of a running task whose chain could not be read (most: the
					* task ended before its record was drained) */
	uint64_t task_samples;         /* samples put under their task chain */
	/* Records whose running task's chain read at the drain was of another task (its address
	 * taken since by a task of another name); and records named by the name BPF copied alone
	 * (their chain unread or another's), or "<task ?>" (no name copied either). */
	uint64_t task_chains_reused;
	uint64_t task_names_copied;
	uint64_t task_names_unknown;
	uint64_t period_us;            /* the time one sample stands for */
	/* Sampling on a kernel event (--event): the occurrences one sample stands for (0: the clock,
	 * samples carry time; a weighed call or block I/O stands for this many like it), and the
	 * bytes one occurrence weighs (0: counted, not weighed). */
	uint64_t event_period;
	uint64_t event_bytes;
	/* --event off-cpu: a sample is one block, its count the nanoseconds blocked (the record's
	 * blocked_ns); syscall:...:latency, a call, its count the call's nanoseconds (event_weight). */
	bool event_blocked_ns;
	/* --event block-io, syscall:...:bytes: a sample is one occurrence weighing its record's
	 * event_weight in bytes. */
	bool event_weight_bytes;
	/* Memory mode: a sample weighs its record's rss_delta in bytes, not time. */
	bool memory_deltas;
	struct intern_table kernel_names; /* "symbol [module]" / "0x..." strings, kept for the run */
	struct intern_table kernel_addresses; /* address -> position in kernel_name_of */
	const char **kernel_name_of;          /* by address id: its name in kernel_names */
	size_t kernel_name_capacity;
	struct pf_frame frames[1 + PBP_MAX_PY_FRAMES + 1 + UNWIND_MAX_FRAMES + 1 + PBP_MAX_KERNEL_FRAMES +
			       ASYNC_TASKS_MAX_FRAMES];
	/* A mixed stack's parts, leaf first, before they are merged into frames. */
	struct pf_frame python_frames[PBP_MAX_PY_FRAMES];
	bool python_entry[PBP_MAX_PY_FRAMES];
	struct pf_frame native_frames[UNWIND_MAX_FRAMES];
	uint8_t native_role[UNWIND_MAX_FRAMES];
	struct merge_step steps[PBP_MAX_PY_FRAMES + UNWIND_MAX_FRAMES];
	struct intern_table native_addresses; /* "0x..." names of pcs in no file mapping */
	/* Native pcs already named, with their role: the same few recur in every sample. */
	struct hash_index native_pc_index;    /* hash of (pid, pc word, caller) -> entry */
	struct native_pc_entry *native_pcs;
	size_t native_pc_count, native_pc_capacity;
	uint64_t unresolved_frames;    /* Python frames written as <unresolved> */
	uint64_t native_walks[UNWIND_STOP_COUNT]; /* records of native stacks, by why the walk stopped */
	uint64_t merge_failures;       /* mixed stacks whose activations and Python frames disagreed */
	/* Stacks resolved before, by key (what their frames depend on): resolved frames and stack id. */
	struct memo_cache stacks;
	/* Python frames whose code objects are all in the cache: prefetch has nothing to read. */
	struct memo_cache python_stacks;
	uint64_t stacks_generation;    /* symbolize_py_generation the kept stacks were resolved under */
	_Alignas(8) uint8_t stack_key[SAMPLE_RESOLVE_STACK_KEY_MAX]; /* one record's key, but for its raw frames */
	uint64_t stack_hits, stack_misses; /* records answered from stacks, and the others */
	struct pf_frame native_leaf;   /* without native stacks: where a sample in native code landed */
};

int sample_resolve_init(struct sample_resolver *resolver, sample_kernel_namer_fn kernel_namer,
			void *kernel_namer_context, uint64_t period_us);
void sample_resolve_free(struct sample_resolver *resolver);
struct target_budget;
/* The stacks kept (resolved stacks, and the Python stacks known to be read) are charged to budget,
 * two stores whose least recently used entries it may evict (util/memo_cache.h); before the first
 * record. 0 or -ENOSPC (no store left). */
int sample_resolve_set_budget(struct sample_resolver *resolver, struct target_budget *budget);
/* Records that had a native walk (any stop cause but NOT_WALKED). */
uint64_t sample_resolve_native_walk_count(const struct sample_resolver *resolver);
/*
 * Reads the code objects of the record's Python frames into the cache now, and
 * nothing else: short-lived code (a module body during its import) is read while
 * it lives, even when resolving the whole sample has to wait.
 */
void sample_resolve_prefetch(struct sample_resolver *resolver, const struct pbp_record *record, size_t size,
			     const struct py_target *python);
/* A process exec'd or exited: what its native pcs meant no longer holds. */
void sample_resolve_forget_native(struct sample_resolver *resolver);
/* The native names were compacted (symbolize_native_compact_names): the named pcs and kept stacks
 * that point at them go. */
void sample_resolve_forget_names(struct sample_resolver *resolver);
/*
 * python: the target's runtime description, or NULL while it is pending
 * (then only kernel frames are expected). Returns 0, -EINVAL for a malformed
 * record, -ENOMEM. *sample points into the resolver until the next call.
 * A stack resolved whole (every frame named) is kept and gets a stack_id
 * (struct pf_sample): a record with the same raw frames gets it back as long as
 * nothing it depends on was forgotten (symbolize_py_generation); the frames are
 * the same as resolving it again would give.
 */

int sample_resolve_record(struct sample_resolver *resolver, const struct pbp_record *record, size_t size,
			  const struct py_target *python, struct pf_sample *sample);

#endif
