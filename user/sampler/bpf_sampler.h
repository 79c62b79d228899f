/* SPDX-License-Identifier: MIT */
/*
 * The BPF sampler: loads bpf/pyperf.bpf.c (in a child that hands back the
 * maps and programs: sampler/bpf_loader.h), opens one cpu-clock perf event
 * per possible CPU that is present, and hands back the ring-buffer records
 * of target processes plus exec/fork/exit notices. In wall mode no perf
 * event: a thread of its own runs the task iterator over the targets at
 * every interval, and every thread of every target gives a record.
 */
#ifndef PYBPFPROF_BPF_SAMPLER_H
#define PYBPFPROF_BPF_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "budget_usage.h"
#include "proc_event.h"
#include "sampler/kernel_names.h"
#include "sampler/perf_events.h"
#include "sampler/syscall_names.h"
#include "py_proc_config.h"
#include "sample_record.h"
#include "unwind_table.h"

struct unwind_maps;

struct bpf_sampler_options {
	unsigned frequency_hz;  /* samples per second per CPU */
	bool kernel_stacks;     /* record kernel stacks of samples taken in the kernel */
	bool watch_exec;        /* report every exec on the system, not only targets' */
	bool follow_forks;      /* a process forked by a target becomes a target (PBP_PROC_FORK) */
	size_t ringbuf_bytes;   /* 0 = from the rate and CPUs (bpf_sampler_ring_bytes); rounded up to a power of two */
	bool native_stacks;     /* unwind user-space native frames (needs tables: unwind/unwind_maps.h) */
	size_t unwind_rows;     /* capacity of the rows map; 0 = UNWIND_ROWS_DEFAULT */
	bool wall;              /* wall mode: every target thread at every 1/frequency_hz, running or not */
	bool gil_only;          /* only threads holding the GIL give samples (gil mode) */
	/* Memory mode: every sample carries its process's resident memory change since the
	 * thread's previous sample (pbp_record.rss_delta). */
	bool memory_deltas;
	/* Exception mode: only threads raising or handling an exception give samples. */
	bool exceptions_only;
	bool time_samples;      /* BPF times each target sample (PBP_CNT_TARGET_NS): --bpf-stats */
	/* --max-overhead (cpu mode): BPF accounts each target's ticks and time, and keeps one tick
	 * in the stride bpf_sampler_set_budget_stride gives it (bpf/overhead_accounts.h). */
	bool overhead_budget;
	/* Wall mode: iterate only these processes' threads (one iterator each); none: every task
	 * of the host, each looked up in the target map (a target set that changes: -C, a
	 * launched command, the whole host). */
	const pid_t *wall_pids;
	size_t wall_pid_count;
	/* Wall mode without the pass thread: a pass runs only when bpf_sampler_wall_pass() asks
	 * (a one-shot picture of the threads: `pybpfprof stacks`). */
	bool wall_on_demand;
	/* cpu mode: sample on this kernel event, one in event_period occurrences, instead of the
	 * cpu-clock at frequency_hz (which then only sizes the ring: records per second per CPU).
	 * NULL: the cpu-clock. */
	const struct perf_event_spec *event;
	uint64_t event_period;
	/* event syscall: the calls traced and what one weighs (sampler/syscall_names.h). */
	const struct syscall_filter *syscalls;
};

/* Wall mode: what the pass thread did. */
struct bpf_sampler_wall_stats {
	uint64_t passes;        /* iterator passes run */
	uint64_t late_passes;   /* passes skipped because the previous one ended after their time */
	uint64_t pass_errors;   /* iterator reads that failed */
};

struct bpf_sampler;

/* Return 0 to go on, a negative errno to stop consume() (which then returns it). */
typedef int (*bpf_sampler_record_fn)(void *ctx, const struct pbp_record *record, size_t size);
typedef void (*bpf_sampler_proc_fn)(void *ctx, const struct pbp_proc_event *event);

/*
 * Checks privileges (root, or CAP_BPF+CAP_PERFMON), kernel BTF and the
 * kernel's maximum sample rate first and says which is missing; then loads
 * the programs and attaches them. Sampling starts at once, but only
 * targets added with bpf_sampler_add_target() produce records.
 */
int bpf_sampler_open(struct bpf_sampler **out, const struct bpf_sampler_options *options,
		     char *errbuf, size_t errlen);
/* Starts (or updates) sampling tgid; config NULL = pending: kernel stacks only, no Python frames.
 * -EINVAL if the frame layout does not fit the BPF frame copy (frame_read_size <= PBP_FRAME_MAX_READ). */
int bpf_sampler_add_target(struct bpf_sampler *sampler, pid_t tgid, const struct py_proc_config *config);
int bpf_sampler_remove_target(struct bpf_sampler *sampler, pid_t tgid);
/* BPF drops a target's entries when its leader exits; this sweeps what that missed (an exit
 * before the entry was made, a kernel without the tracepoint's guarantees): at most every
 * BPF_SAMPLER_RECONCILE_MS, the entries of the target and unwinding maps whose process is gone
 * are deleted. Returns how many were deleted now. */
#define BPF_SAMPLER_RECONCILE_MS 5000
size_t bpf_sampler_reconcile_targets(struct bpf_sampler *sampler, uint64_t now_ms);
/* --max-overhead: tgid's account so far, summed over CPUs (all zero before its first tick).
 * 0, or a negative errno. */
int bpf_sampler_budget_usage(struct bpf_sampler *sampler, pid_t tgid, struct pbp_budget_usage *usage);
/* The note BPF saved of the code object at code_addr of tgid with that checksum (bpf/maps.h,
 * code_notes). 0, -ENOENT (none, or pushed out), or a negative errno. */
int bpf_sampler_code_note(struct bpf_sampler *sampler, pid_t tgid, uint64_t code_addr, uint32_t checksum,
			  struct pbp_code_note *note);
/* From now on BPF walks one in stride of tgid's ticks, each record weighing stride (1: every
 * tick; at most PBP_BUDGET_MAX_STRIDE). 0, or a negative errno. */
int bpf_sampler_set_budget_stride(struct bpf_sampler *sampler, pid_t tgid, uint32_t stride);
/* Processes in the target map now (one walk of its keys). */
size_t bpf_sampler_target_count(struct bpf_sampler *sampler);
/* Entries deleted by bpf_sampler_reconcile_targets over the run. */
uint64_t bpf_sampler_reconciled_count(const struct bpf_sampler *sampler);
/* The record ring's size, chosen from the rate and the number of CPUs (or given) at open. */
size_t bpf_sampler_ring_bytes(const struct bpf_sampler *sampler);
/* What loading the programs cost in the child that did it (sampler/bpf_loader.h). */
struct bpf_sampler_loader_cost {
	long peak_kib;   /* its peak resident memory */
	double cpu_s;    /* its user + system CPU */
};
void bpf_sampler_loader_cost(const struct bpf_sampler *sampler, struct bpf_sampler_loader_cost *cost);
/* Drains both ring buffers without blocking, until they are empty or, once the coarse clock
 * (clock_coarse_ms) reaches until_ms (0: never), after the record being handled then; returns the
 * number of records consumed or -errno. on_proc may be NULL. */
int bpf_sampler_consume(struct bpf_sampler *sampler, uint64_t until_ms, bpf_sampler_record_fn on_record,
			bpf_sampler_proc_fn on_proc, void *ctx);
/* How many consume() calls stopped at their until_ms: the consumer fell behind. The record ring
 * comes first in each call, so one stopped leaves the process events for a later call (lost
 * ones, if the overload lasts, are counted and their processes swept, bpf_sampler_reconcile_targets). */
uint64_t bpf_sampler_consumes_cut(const struct bpf_sampler *sampler);
/* Blocks up to timeout_ms until a proc event arrives or the record buffer fills past its
 * wakeup mark; returns > 0 if there is something to consume, 0 on timeout, -errno. */
int bpf_sampler_wait(struct bpf_sampler *sampler, int timeout_ms);
/* The same, woken also when the eventfd wake_fd (-1: none) is written to (it is then read, so
 * that it waits again). */
int bpf_sampler_wait_or_wake(struct bpf_sampler *sampler, int wake_fd, int timeout_ms);
/* Each counter (enum pbp_counter) summed over CPUs. */
int bpf_sampler_counters(struct bpf_sampler *sampler, uint64_t totals[PBP_CNT_MAX]);
/* Failed reads of target memory per site (enum pbp_error), summed over CPUs. */
int bpf_sampler_error_counts(struct bpf_sampler *sampler, uint64_t totals[PBP_ERR_COUNT]);
/* A short name for an enum pbp_error ("data_stack", "gil", ...), NULL if code is not one. */
const char *bpf_sampler_error_name(unsigned code);
/* Native unwinding's maps (unwind/unwind_maps.h): the sampler's, freed with it. */
struct unwind_maps *bpf_sampler_unwind_maps(struct bpf_sampler *sampler);
/* Native walks per stop cause (enum unwind_stop), summed over CPUs; counted only with native_stacks. */
int bpf_sampler_unwind_stop_counts(struct bpf_sampler *sampler, uint64_t totals[UNWIND_STOP_COUNT]);
/* A short name for an enum unwind_stop ("root", "no_cfi", ...; usable as a metadata key), NULL if none. */
const char *bpf_sampler_unwind_stop_name(unsigned cause);
/* Kernel addresses to names from now on (sampler/kernel_names.h); the sampler must have been
 * opened with kernel_stacks (else -ENOTSUP). */
int bpf_sampler_open_kernel_names(struct bpf_sampler *sampler);
/* Names up to PBP_KSYM_BATCH kernel addresses (kernel_names_lookup); -ENOTCONN before
 * bpf_sampler_open_kernel_names. */
int bpf_sampler_name_kernel_addresses(struct bpf_sampler *sampler, const uint64_t *addresses, size_t count,
				      kernel_name_fn found, void *context);
/* Turns on the kernel's BPF run-time accounting for as long as the sampler is open. */
int bpf_sampler_enable_stats(struct bpf_sampler *sampler);
/* Wall mode: one pass of the iterators now, on the caller's thread; its records are in the ring
 * buffer when it returns. 0, or the first iterator's -errno (the others still ran). */
int bpf_sampler_wall_pass(struct bpf_sampler *sampler);
/* Wall mode: the pass thread writes 1 to eventfd after each pass (-1: not), so that its records
 * are drained at once rather than at the consumer's next tick. */
void bpf_sampler_wake_after_passes(struct bpf_sampler *sampler, int eventfd);
/* Wall mode: the pass thread's counts (all zero in cpu mode). */
void bpf_sampler_wall_stats(struct bpf_sampler *sampler, struct bpf_sampler_wall_stats *stats);
/* Total BPF run time and runs of the sample program, the iterator's in wall mode (zero unless stats
 * are enabled). */
int bpf_sampler_prog_stats(struct bpf_sampler *sampler, uint64_t *run_time_ns, uint64_t *run_count);
void bpf_sampler_close(struct bpf_sampler *sampler);

#endif
