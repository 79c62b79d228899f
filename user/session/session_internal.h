/* SPDX-License-Identifier: MIT */
/*
 * What the three parts of a run share: session.c (setup, the main loop,
 * teardown), process_events.c (targets found, forked, exec'd, ended) and
 * report.c (the output files' samples and metadata, the status line, the
 * summary). Private to user/session/.
 */
#ifndef PYBPFPROF_SESSION_INTERNAL_H
#define PYBPFPROF_SESSION_INTERNAL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sample_record.h"
#include "sampler/bpf_sampler.h"
#include "session/overhead_budget.h"
#include "push/push_client.h"
#include "session/session.h"
#include "session/threads_seen.h"
#include "symbolize/sample_resolve.h"
#include "proc/launch.h"
#include "python/py_thread_name.h"
#include "python/target_set.h"
#include "unwind/unwind_cache.h"
#include "unwind/file_table.h"
#include "util/errbuf.h"
#include "util/intern.h"

/* How often the output files are flushed (and the status line redrawn). */
#define FLUSH_EVERY_MS 1000

struct native_stacks;
struct stacks_print;
struct discovery;

/* Lookups done off the draining thread (discovery.c), for the -v summary. */
struct discovery_stats {
	uint64_t asked[2];        /* runtimes, asyncio modules */
	uint64_t answered;
	uint64_t stale;           /* answers for a process that exec'd, ended or was forgotten meanwhile */
	uint64_t deferred;        /* lookups put off, the queue full */
	uint64_t peak_queued;
	uint64_t max_latency_us;  /* from the ask to the answer, at most */
	uint64_t busy_us;         /* the thread's time reading */
};

struct container_counts {
	uint64_t processes;
	uint64_t samples;
};

struct session {
	const struct session_options *options;
	/* One budget for what the targets make us hold (util/target_budget.h): the code objects'
	 * line tables and native symbol tables charge it and are evicted by it; the output
	 * tables and the records held for a drain are counted in it as they are. */
	struct target_budget *budget;
	int outputs_budget_store, pending_budget_store, verdicts_budget_store;
	uint64_t budget_freed_at_trim, budget_trim_ms; /* the last heap trim for what it freed */
	struct bpf_sampler *sampler;
	struct native_stacks *native; /* NULL: native stacks off */
	struct late_unwind *late;     /* held samples (late_unwind.c), NULL until the first */
	struct stacks_print *stacks;  /* SESSION_MODE_STACKS: the pass's threads, else NULL */
	struct discovery *discovery;  /* discovery.c's thread, once sampling may begin; NULL before */
	/* An eventfd the threads that work for the loop (discovery, maps reads) write to when an
	 * answer is ready: the loop wakes for it as for records (-1: none). */
	int wake_fd;
	struct discovery_stats discovery_stats; /* its counts, once it is closed */
	struct target_set targets;
	struct sample_resolver resolver;
	struct pf_writer *writers[SESSION_MAX_OUTPUTS];
	size_t writer_count;
	struct launch launch;
	bool launched;
	bool viewer_quit;            /* the live view's user quit (q): a command it launched ends with it */
	bool system_wide;
	bool python_version_written;
	bool exceptions_unknown_said;  /* --mode exception met a version whose exception state is not known */
	bool opcodes_unknown_said;   /* --opcodes: the warning about a target before 3.11 was given */
	uint64_t opcodes_refreshed_ms; /* --opcodes: when frames' instructions were last read again */
	/* --max-overhead, when on (overhead_on): every target's stride and what it did. */
	bool overhead_on;
	struct overhead_budget overhead;
	struct windows *windows;     /* continuous mode (--push), or NULL */
	uint64_t stop_us;            /* when sampling ended (before the last pushes); 0 while it runs */
	/* File windows (--window without --push): the window's number (from 1; 0: no windows),
	 * its start, and its outputs' paths. */
	unsigned window_index;
	uint64_t window_start_us;
	uint64_t window_first_sample; /* samples_written when the window began */
	char window_paths[SESSION_MAX_OUTPUTS][PATH_MAX];
	struct push_client_stats push_stats; /* how the pushes went, once windows are closed */
	/* -p without -C: the named processes' CPU ticks, and their descendants', at the start;
	 * the end tells whether their CPU was mostly in the children left out. */
	uint64_t named_ticks_start;
	uint64_t descendant_ticks_start;
	struct threads_seen threads; /* the live processes' threads seen: names, Python or not */
	uint64_t other_samples;      /* samples of processes not running Python (a launcher's shells) */
	/* The targets' cgroups (containers) by number, with their processes and samples. */
	struct intern_table containers;
	struct container_counts *container_counts;
	size_t container_capacity;
	uint64_t samples_written;
	/* The loop's drains of the ring: records, time (each drain's, summed), and the longest. */
	uint64_t drained_records, drain_us, longest_drain_us, longest_drain_records;
	uint64_t begin_us;           /* when the run began, before set-up */
	uint64_t first_sample_us;    /* when its first sample was written (0: none yet) */
	uint64_t start_ms;
	uint64_t start_us;
	double setup_cpu_s;          /* our CPU time before sampling started (BPF load, kallsyms) */
	int write_error;
	size_t write_error_writer;   /* the output that had it */
	struct errbuf write_error_text;
	/* Records of the drain in progress, kept to be resolved and written once it ends. */
	uint8_t *pending_records;
	size_t pending_used;
	size_t pending_capacity;
};

/* ---- process_events.c ---- */

/* Hands a target whose runtime was found to BPF; a target BPF refuses is gone. */
void process_events_target_ready(struct session *session, struct target *target);
/* A READY 3.14+ target that imported asyncio after its discovery: once its _asyncio extension
 * is mapped, BPF records its running tasks too. Paced by record time (TARGET_ASYNCIO_LOOK_*). */
void process_events_check_asyncio(struct session *session, struct target *target, uint64_t now_ns);
/* A READY 3.11-3.13 target running coroutines whose _asyncio._current_tasks BPF does not know
 * yet: looked for as 3.14's extension is (TARGET_ASYNCIO_LOOK_FIRST_NS doubling up to
 * TARGET_ASYNCIO_LOOK_LAST_NS); once found, its config is stored again with it. */
void process_events_find_current_tasks(struct session *session, struct target *target, uint64_t now_ns);
/* The sampler's callback for fork, exec and exit notices. */
void process_events_on_proc_event(void *ctx, const struct pbp_proc_event *event);
/* Another discovery attempt for every pending target whose time has come. */
void process_events_retry_pending(struct session *session, uint64_t now_ms);
int process_events_wait_budget_ms(const struct session *session, int tick_ms, uint64_t now_ms);
/* Targets that exited without a notice (their exit was missed, or not watched) end. */
void process_events_check_liveness(struct session *session);
void process_events_scan(struct session *session);
int process_events_discover_named_pids(struct session *session);
/* -C: adds the named pids' running descendants as targets; how many were found. */
size_t process_events_add_descendants(struct session *session);
/* -p without -C: notes the named pids' CPU and their descendants'; at the end, hints at -C
 * when the descendants used more of it. */
void process_events_note_children_cpu(struct session *session);
void process_events_hint_children(struct session *session);
bool process_events_all_ended(struct session *session);

/* A runtime lookup of target (asked with discovery_request_runtime) came back: its new state. */
void process_events_discovered(struct session *session, struct target *target, const struct target_discovery *found);

/* ---- discovery.c: runtimes and asyncio modules found on a thread of their own ---- */

/* Starts the thread; from then on it alone uses the targets' runtime_files. 0 or -errno. */
int discovery_open(struct session *session);
/* Stops it (the lookup being read is finished first); unanswered lookups are dropped. */
void discovery_close(struct session *session);
/* Queues a runtime lookup of target unless one is on its way: false when the queue was full
 * (target->next_attempt_ms then says when to ask again). */
bool discovery_request_runtime(struct session *session, struct target *target);
/* Queues a search of a READY 3.14+ target's mappings for its _asyncio extension. */
void discovery_request_asyncio(struct session *session, struct target *target);
/* Applies the answers that came back since the last call. */
void discovery_poll(struct session *session);
/* Whether lookups are on their way: the loop then ticks fast, to apply them soon. */
bool discovery_waiting(const struct session *session);
size_t discovery_held_bytes(const struct session *session);
void discovery_stats(const struct session *session, struct discovery_stats *stats);

/* ---- native_stacks.c: the unwind tables of the targets, kept in BPF ---- */

/* With native stacks on: the table cache, sized to the sampler's rows map. 0 or -ENOMEM. */
int native_stacks_open(struct session *session);
void native_stacks_close(struct session *session);
/* Tables built since the last call go to BPF, with the mappings of the processes that use them. */
void native_stacks_poll(struct session *session);
/* Whether a table is still being built: the loop then ticks fast, to place it soon. */
bool native_stacks_building(struct session *session);
/* The tables of a command's files (its executable and the libraries it names), queued before it
 * is launched: how many files were queued. */
size_t native_stacks_prebuild_command(struct session *session, char *const argv[]);
/* A target is ready (found, forked, exec'd and found again): load its files' tables, then its mappings. */
void native_stacks_attach(struct session *session, pid_t pid);
/* A target exited or exec'd: BPF forgets its mappings, then its tables lose a reference. */
void native_stacks_detach(struct session *session, pid_t pid);
/* A walk that stopped for want of a mapping or a table may mean a library loaded since (dlopen). */
void native_stacks_on_record(struct session *session, const struct pbp_record *record, size_t size);
/* Summary line and file metadata of the tables (rows, files, build time, failures). */
void native_stacks_stats(const struct session *session, struct unwind_cache_stats *stats);
uint64_t native_stacks_refreshes(const struct session *session);
/* From now on the targets' maps are read on a thread of their own (the loop that drains the ring
 * asks and goes on): before, native_stacks_attach reads them at once. 0 or -errno. */
int native_stacks_read_in_background(struct session *session);
/* The reads of maps off the draining thread, for the -v summary. */
/* Reads of one process asked per second, at most (a burst of as many, then one every 1000/N ms:
 * util/pace.h): past them a read is put off (asked again by
 * the process's later samples). A process that maps 20,000 files costs some 7 ms a read; whatever
 * asks for its reads (exec's, walks stopping in files never read), it gets no more than these. */
#define NATIVE_MAPS_READS_PER_PID_PER_S 5
struct native_maps_stats {
	uint64_t asked;        /* reads asked of the thread */
	uint64_t merged;       /* asks a read already on its way served */
	uint64_t applied;      /* reads done and taken */
	uint64_t cancelled;    /* of those, for a process that exited or exec'd meanwhile */
	uint64_t put_off;      /* asks refused, MAPS_READS_MAX on their way */
	uint64_t paced;        /* asks refused, past a process's reads a second */
	uint64_t patched;      /* mappings given to BPF anew for a table placed, without a read */
	uint64_t peak_asked;   /* the most on their way at once */
	uint64_t asked_now;
	uint64_t max_wait_us;  /* from an ask to its answer taken, at most */
	uint64_t busy_us;      /* the thread's time reading */
};
void native_stacks_maps_stats(const struct session *session, struct native_maps_stats *stats);
/* What the reads on their way hold (the descriptors they hold are bounded apart). */
size_t native_stacks_held_bytes(const struct session *session);
/* unwind/stack_copy_unwind.h's stack_unwind_table_fn for pid: the rows of the file mapped at pc as
 * BPF has them (valid until the next call), or why there are none (STACK_UNWIND_WAIT: building,
 * and now wanted first; or a pc in no mapping of a maps read older than the sample, at sample_ns). */
int native_stacks_table_at(struct session *session, pid_t pid, uint64_t pc, uint64_t sample_ns,
			   const struct unwind_table **table, uint64_t *bias);
/* Unmaps the rows native_stacks_table_at mapped: BPF alone needs them between late walks. */
void native_stacks_unmap_tables(struct session *session);
/* How many times native_stacks_table_at said to wait for a read of maps on its way (a walk that
 * moved it waited for one). */
uint64_t native_stacks_read_waits(const struct session *session);

/* ---- late_unwind.c: samples whose native walk waits for a table (PBP_REC_STACK_COPY) ---- */

/* Samples unwound late, and samples that lost their native frames, by cause. */
enum late_unwind_loss {
	LATE_LOST_IN_TIME = 0,  /* the table was not built in time (the wait's bound, or the run's end) */
	LATE_LOST_NO_TABLE,     /* the file has no table: refused, bad, too big, no room */
	LATE_LOST_COPY_SHORT,   /* the stack copy ended before the walk did */
	LATE_LOST_BUDGET,       /* the held samples' byte budget was full */
	LATE_LOST_GONE,         /* the process exited before its table was built */
	LATE_LOST_BAD_COPY,     /* the record's copy did not hold together */
	LATE_LOST_NO_FILE,      /* the pc lies in no file mapping, read after the sample (JIT code) */
	LATE_LOST_MAPS_UNREAD,  /* its process's maps were still being read off the draining thread */
	LATE_LOST_COUNT,
};

struct late_unwind_stats {
	uint64_t held;          /* samples that came with a stack copy */
	uint64_t unwound;       /* ... whose walk went on from it with the file's table */
	uint64_t held_for_names; /* samples held for their files' symbols (not yet read) */
	uint64_t names_missed;  /* ... of which went before the symbols came (frames named by offset) */
	uint64_t waited_for_maps; /* ... that waited for a read of their process's maps (native_stacks.c) */
	uint64_t lost[LATE_LOST_COUNT];
	uint64_t held_now;      /* samples in the queue now (with those behind them) */
	uint64_t peak_bytes;    /* the most the queue held at once */
	uint64_t unwind_ns;     /* time spent unwinding copies */
	/* Of the unwound ones' copies, the bytes the walk read: summed, and the most. */
	uint64_t copy_used_sum, copy_used_max;
};

struct late_unwind;
/*
 * The record goes through the queue when it carries a stack copy, when a file of its native
 * frames still waits for its symbols, or when others wait before it
 * (the records leave in the order they came, so each thread's time stamps only grow): true
 * when it was queued, written later by late_unwind_flush.
 */
bool late_unwind_hold(struct session *session, const struct pbp_record *record, size_t size);
/* Writes the queue's records, oldest first, up to the first whose table is still being built
 * (and not waited for longer than LATE_UNWIND_WAIT_MS). */
void late_unwind_flush(struct session *session);
/* pid exits or exec's: its held samples (and those before them) are written now, unwound with the
 * tables placed so far. */
void late_unwind_settle_pid(struct session *session, pid_t pid);
/* A window ends: every record held goes now, with the tables and names there are, into the
 * window it was sampled in (a wait for them may be longer than a window). */
void late_unwind_flush_now(struct session *session);
/* The run's end: the tables still building get a bounded wait, then every record is written. */
void late_unwind_finish(struct session *session);
void late_unwind_stats(const struct session *session, struct late_unwind_stats *stats);
/* Bytes the queue holds now (records and their stack copies), for the target budget. */
size_t late_unwind_held_bytes(const struct session *session);
void late_unwind_free(struct session *session);
const char *late_unwind_loss_name(enum late_unwind_loss loss);

/* ---- session.c ---- */

/* Wakes the loop (a thread's answer is ready): writes to wake_fd, unless it is -1. */
void session_wake(int wake_fd);

/* Resolves the record and writes its sample to the outputs (or the stacks listing). */
void session_write_record(struct session *session, const struct pbp_record *record, size_t size);

/* ---- report.c ---- */

/* One line on stderr, "pybpfprof: " first. */
__attribute__((format(printf, 1, 2))) void report_error(const char *format, ...);
int report_open_writers(struct session *session);
void report_abort_writers(struct session *session);
/* Writes the sample to every output, with its thread's name (read when first seen). */
void report_write_sample(struct session *session, struct pf_sample *sample);
/* The thread's name (report.c says from where), read when first seen; NULL if unknown. */
const char *report_thread_name(struct session *session, const struct pf_sample *sample,
			       const struct py_target *python, uint64_t tstate_addr);
/* Makes every output readable on disk so far; the first failure stops sampling. */
void report_flush_writers(struct session *session);
/* A sample of target, counted for its container. */
void report_count_container_sample(struct session *session, const struct target *target);
/* A target ready for the first time: its namespace pid and cgroup into the metadata
 * ("process.PID"), and its container counted. Waits for the writers to be open. */
void report_process(struct session *session, struct target *target);
void report_start_metadata(struct session *session);
/* The first target's Python version, written into the metadata once. */
void report_python_version(struct session *session, const struct target *target);
void report_status(struct session *session, uint64_t now_ms, bool final);
/* One line at the start of a whole-host run: what it samples and until when. */
void report_scope(const struct session *session);
/* Our own CPU time so far (user + system), without the launched command's. */
double report_cpu_seconds(void);
/* This process's resident high-water mark (VmHWM), KiB. */
long report_peak_resident_kib(void);
/* End metadata, closing the files, the summary; the process exit status (0 or 1). */
/* File windows: ends the outputs of this window and opens the next window's. The exit status
 * class of a failure (EXIT_STATUS_OUTPUT), or EXIT_STATUS_OK. */
int report_next_file_window(struct session *session, const uint64_t counters[PBP_CNT_MAX]);
/* Closes the outputs and prints the summary: EXIT_STATUS_OK, or _OUTPUT if a file could not be written. */
int report_finish(struct session *session, uint64_t counters[PBP_CNT_MAX]);

#endif
