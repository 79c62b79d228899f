/* SPDX-License-Identifier: MIT */
/*
 * One profiling run: the targets (-p pids, a launched command, or every
 * Python process), the BPF sampler, the output files, signals, the status
 * line, and how the run ends — always with complete, valid output files.
 */
#ifndef PYBPFPROF_SESSION_H
#define PYBPFPROF_SESSION_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#include "profile/profile.h"
#include "sampler/perf_events.h"
#include "sampler/syscall_names.h"

#define SESSION_MAX_OUTPUTS 8
#define SESSION_MAX_PIDS 64

struct session_output {
	const char *path;
	const struct pf_format *format;
};

#define SESSION_MAX_PUSH_LABELS 16

struct pf_sample;
struct perf_event_spec;

/* A live view of the run (pybpfprof top): given every sample as it is written, and a
 * tick at every turn of the loop; tick returns true when the viewer wants to stop. */
struct session_view {
	void *ctx;
	void (*add_sample)(void *ctx, const struct pf_sample *sample);
	bool (*tick)(void *ctx, uint64_t now_ms);
};

/* What a sample is: a tick of a running thread (cpu), every thread at every interval (wall), or the
 * thread holding the GIL at every interval (gil: the wall iterator, keeping only GIL holders). */
enum session_mode {
	SESSION_MODE_CPU = 0,
	SESSION_MODE_WALL = 1,
	/* `pybpfprof stacks`: one wall pass over the one -p process's threads, printed on stdout
	 * (session/stacks_print.h) instead of written to files. */
	SESSION_MODE_STACKS = 2,
	SESSION_MODE_GIL = 3,
	/* A tick of a running thread, as cpu mode, weighing its process's resident memory change
	 * since the thread's previous tick (bytes, + grown, - released) instead of time. */
	SESSION_MODE_MEMORY = 4,
	/* A tick of a running thread, as cpu mode, kept only while the thread raises an exception
	 * or handles one. */
	SESSION_MODE_EXCEPTION = 5,
};

struct session_options {
	pid_t pids[SESSION_MAX_PIDS];
	size_t pid_count;
	char **command;            /* NULL-terminated argv of the command to launch, or NULL */
	unsigned frequency_hz;
	enum session_mode mode;
	/* cpu mode: sample on this kernel event (sampler/perf_events.h) every event_period occurrences
	 * (0: its default) instead of the cpu-clock; NULL: the cpu-clock. */
	const struct perf_event_spec *event;
	uint64_t event_period;
	struct syscall_filter syscalls; /* --event syscall:NAME,...: the calls and what one weighs */
	double duration_s;         /* 0: until Ctrl-C, SIGTERM, or every target has exited */
	bool kernel_stacks;
	bool native_frames;      /* name the native function of samples outside the interpreter */
	bool native_stacks;      /* walk native stacks in BPF and merge them with the Python frames */
	bool async_plumbing;     /* keep the event loop's frames above a running task's chain */
	bool opcodes;            /* 3.11+: each Python frame's instruction (pf_frame.opcode) */
	bool async_all;          /* wall mode: every waiting asyncio task is a sample too (--async-mode all) */
	bool native_keep_all;    /* with native_stacks: keep the interpreter's own C frames too */
	bool children;             /* -p: also profile processes the targets fork */
	bool quiet;
	bool verbose;              /* the summary's internals too: tables, merges, budgets, other processes */
	bool bpf_stats;            /* report BPF run time per sample at the end */
	/* --max-overhead: each target's BPF walks take at most this percent of one CPU (cpu mode;
	 * session/overhead_budget.h), 0 none. Not given: OVERHEAD_BUDGET_DEFAULT_PCT on the whole
	 * host and with --push, none for -p and a launched command. */
	double max_overhead_pct;
	bool max_overhead_given;
	bool stacks_json;          /* SESSION_MODE_STACKS: one JSON document instead of text */
	int compression_level;     /* Tachyon zstd level, 0 = none */
	size_t ringbuf_bytes;      /* 0 = the sampler's default */
	uint64_t target_budget_bytes; /* what targets can make us hold (util/target_budget.h); 0: its default */
	struct session_output outputs[SESSION_MAX_OUTPUTS];
	size_t output_count;
	/* Continuous mode: each window of window_s seconds pushed as pprof to push_url. */
	const char *push_url;      /* NULL: no push */
	const char *push_app;      /* the application name (NULL: "pybpfprof") */
	const char *push_labels[SESSION_MAX_PUSH_LABELS]; /* "key=value" */
	size_t push_label_count;
	double window_s;
	const struct session_view *view; /* NULL: none */
};

/* Austin's name for the mode: "cpu" (exception mode's samples are cpu ticks), "memory", "wall"
 * (a stack dump samples as wall does, gil mode is the wall sampler kept to GIL holders). */
const char *session_mode_name(enum session_mode mode);
/* An --event run's event as profiles name it ("page-faults", "syscall:write,read") and what
 * its samples weigh. */
const char *session_event_name(const struct session_options *options);
enum perf_event_unit session_event_unit(const struct session_options *options);
/* The occurrences one sample of the run's event stands for: the period given or the event's
 * default; 1 for off-cpu (its number is the shortest block) and for syscalls and block I/O
 * given none (every occurrence a sample). */
uint64_t session_event_period(const struct session_options *options);
/* Whether the mode samples on the perf events (the cpu-clock or --event), not the wall iterator. */
bool session_mode_on_ticks(enum session_mode mode);

/* Runs to the end; returns the process exit status (util/exit_status.h: the launched
 * command's own, in launch mode, unless the profiler failed). */
int session_run(const struct session_options *options);

#endif
