// SPDX-License-Identifier: MIT
/* The lifecycle of a run: setup, the main loop, teardown. */
#include "session/session_internal.h"
#include "session/windows.h"

#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "session/stacks_print.h"
#include "symbolize/async_tasks.h"
#include "symbolize/symbolize_native.h"
#include "symbolize/symbolize_py.h"
#include "util/array.h"
#include "sampler/perf_events.h"
#include "util/clock.h"
#include "util/exit_status.h"
#include "util/thread.h"
#include "util/target_budget.h"

/*
 * How often the ring buffer is drained. Fast while samples bring new code
 * objects (imports, exec'd code: they may be freed within milliseconds and
 * must be read while they live); slow once everything is cached, because each
 * wakeup costs far more than the records it drains at 1 kHz.
 */
#define TICK_FAST_MS 10
#define TICK_SLOW_MS 50
/*
 * A drain ends after this long even with records left: a consumer slower than the samples (a
 * whole host whose users show a deep stack never seen before at every sample, and whose code
 * objects the target budget does not let it keep) otherwise never returned to its loop, and the
 * run outlived its -d and its Ctrl-C. What the ring cannot hold meanwhile BPF drops, counted.
 * The last drain of a run or a window gets longer, to take what was sampled before its end;
 * `stacks`' one pass, which nothing follows, is drained whole.
 */
#define DRAIN_SLICE_MS 100
#define DRAIN_LAST_MS 1000
/* A launched command gets this long to end on SIGINT when the live view quits. */
#define VIEW_QUIT_GRACE_MS 2000
#define LIVENESS_EVERY_MS 200
/* Records kept per drain before they are written; past it, what is kept is written mid-drain
 * (nothing is lost: only the code objects of later records wait a little). Its pages stay
 * resident, so it is small: about a tick of 32-frame samples at 20 kHz on 2 CPUs. */
#define PENDING_RECORDS_MAX_BYTES (2u << 20)
/* A drain that used less than an eighth of a buffer larger than this gives the buffer back: one
 * burst (the ring full at start-up, while tables are built) would otherwise keep 2 MiB resident
 * for the rest of a 1 kHz run, which uses some 100 KiB a drain. */
#define PENDING_RECORDS_KEEP_BYTES (256u << 10)
/* `stacks`: how long the pass waits for the target's native unwind tables (built in the
 * background; a large libpython takes about a second) before it runs without the missing ones. */
#define STACKS_TABLES_WAIT_MS 2000
/* How long sampling of named processes, or a launched command, waits for their unwind tables:
 * built at once they take a second or two of a busy host, after which every sample keeps its
 * native frames; past the bound sampling starts anyway and the tables come as they are built. */
#define SAMPLING_TABLES_WAIT_MS 10000

static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int signo)
{
	stop_signal = signo;
}

static void install_signal_handlers(void)
{
	struct sigaction action = { .sa_handler = on_stop_signal };

	sigemptyset(&action.sa_mask);
	sigaction(SIGINT, &action, NULL);
	sigaction(SIGTERM, &action, NULL);
	sigaction(SIGHUP, &action, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* A gone target keeps its description: its late samples resolve from the cache. */
static const struct py_target *python_of_record(struct session *session, const struct pbp_record *record,
						struct target **target_out)
{
	struct target *target = target_set_find(&session->targets, (pid_t)record->pid);

	*target_out = target;
	if (target && (target->state == TARGET_READY ||
		       (target->state == TARGET_GONE && target->ran_python)))
		return &target->python;
	return NULL;
}

/* Which processes and threads ran Python, for the summary: a launcher's shells (a pyenv shim)
 * are sampled too, but are not what the user profiles. */
static void count_python_sample(struct session *session, const struct pbp_record *record, struct target *target,
				bool ran_python)
{
	struct thread_seen *thread;

	if (!ran_python) {
		session->other_samples++;
		return;
	}
	if (target)
		target->python_samples++;
	thread = threads_seen_get(&session->threads, record->pid, record->tid);
	if (thread)
		threads_seen_mark_python(&session->threads, thread);
}

/* The task the record's thread ran, 0 if none: 3.11-3.13's BPF may give its coroutine. */
static uint64_t running_task_of(struct session *session, const struct py_target *python,
				const struct pbp_record *record)
{
	if (!python->asyncio.from_callbacks || !record->running_task || (record->flags & PBP_REC_ASYNC_TASK))
		return record->running_task;
	return async_tasks_task_of_coroutine(session->resolver.tasks, python, record->running_task, record->time_ns);
}

/* `stacks`: the asyncio tasks of the sampled thread's event loop, for its tree. 0 or -ENOMEM. */
static int add_thread_tasks(struct session *session, const struct py_target *python, const struct pbp_record *record)
{
	static uint64_t addresses[ASYNC_TASKS_TREE_MAX];
	static struct async_task_node node;
	size_t count = async_tasks_of_thread(session->resolver.tasks, python, record->tstate_addr, record->time_ns,
					     addresses, ASYNC_TASKS_TREE_MAX);
	uint64_t running = running_task_of(session, python, record);
	int err = 0;

	for (size_t i = 0; i < count && !err; i++) {
		if (async_tasks_read_node(session->resolver.tasks, session->resolver.python, python, addresses[i],
					  record->time_ns, &node))
			continue;
		err = stacks_print_add_task(session->stacks, record->tid, node.address, node.awaiters, node.awaiter_count,
					    node.name, node.frames, node.frame_count, node.address == running);
	}
	return err;
}

/*
 * Wall mode: each task of the sampled thread's event loop that is not running is a sample of
 * its own, of where it is suspended (its stack rooted in the tasks awaiting it), marked idle,
 * of the thread that runs its loop.
 */
static void write_pending_tasks(struct session *session, const struct py_target *python,
				const struct pbp_record *record, const struct pf_sample *thread_sample)
{
	static uint64_t addresses[ASYNC_TASKS_PENDING_MAX];
	size_t count = async_tasks_of_thread(session->resolver.tasks, python, record->tstate_addr, record->time_ns,
					     addresses, ASYNC_TASKS_PENDING_MAX);
	uint64_t running = running_task_of(session, python, record);

	for (size_t i = 0; i < count; i++) {
		struct async_chain *chain;
		struct pf_sample task = *thread_sample;

		if (addresses[i] == running ||
		    async_tasks_pending(session->resolver.tasks, session->resolver.python, python, addresses[i],
					record->time_ns, &chain))
			continue;
		/* the same stack again while the task waits where it did: writers reuse its encoding */
		if (!chain->stack_id)
			chain->stack_id = pf_stack_id_new();
		task.frames = chain->frames;
		task.frame_count = chain->frame_count;
		task.stack_id = chain->stack_id;
		task.status = (thread_sample->status & (PF_STATUS_MAIN_THREAD | PF_STATUS_GIL_KNOWN)) | PF_STATUS_IDLE;
		task.task_state = 0;
		task.on_a_cpu = false;
		report_write_sample(session, &task);
	}
}

void session_write_record(struct session *session, const struct pbp_record *record, size_t size)
{
	struct target *target;
	const struct py_target *python = python_of_record(session, record, &target);
	struct pf_sample sample;

	if (target && python && record->running_task == 0)
		process_events_check_asyncio(session, target, record->time_ns);
	if (sample_resolve_record(&session->resolver, record, size, python, &sample))
		return;
	count_python_sample(session, record, target, python != NULL);
	if (target) {
		target->samples++;
		report_count_container_sample(session, target);
		sample.process_name = target->identity.comm[0] ? target->identity.comm : NULL;
		if (python && (python->config.flags & PY_PROC_HAS_GIL_HOLDER))
			sample.status |= PF_STATUS_GIL_KNOWN;
		sample.container = target->identity.cgroup[0] ? target->identity.cgroup : NULL;
	}
	sample.thread_name = report_thread_name(session, &sample, python, record->tstate_addr);
	if (session->stacks) {
		int err = stacks_print_add(session->stacks, &sample);

		if (!err && python && python->asyncio.known)
			err = add_thread_tasks(session, python, record);

		if (err && !session->write_error)
			session->write_error = err;
		return;
	}
	report_write_sample(session, &sample);
	if (session->options->mode == SESSION_MODE_WALL && session->options->async_all && python &&
	    python->asyncio.known && record->tstate_addr)
		write_pending_tasks(session, python, record, &sample);
}

void session_wake(int wake_fd)
{
	uint64_t one = 1;

	/* a full counter already wakes it */
	if (wake_fd >= 0 && write(wake_fd, &one, sizeof(one)) < 0)
		return;
}

static void resolve_and_write(struct session *session, const struct pbp_record *record, size_t size)
{
	native_stacks_on_record(session, record, size);
	if (!late_unwind_hold(session, record, size))
		session_write_record(session, record, size);
}

/* Resolves and writes the records kept during the drain, in their order. */
static void write_pending_records(struct session *session)
{
	size_t offset = 0;

	while (offset < session->pending_used) {
		size_t size;

		memcpy(&size, session->pending_records + offset, sizeof(size));
		offset += sizeof(size);
		resolve_and_write(session, (const struct pbp_record *)(session->pending_records + offset), size);
		offset += (size + 7) & ~(size_t)7;
	}
	if (session->pending_capacity > PENDING_RECORDS_KEEP_BYTES &&
	    session->pending_used < session->pending_capacity / 8) {
		free(session->pending_records);
		session->pending_records = NULL;
		session->pending_capacity = 0;
	}
	session->pending_used = 0;
}

/* What the budget freed goes back to the kernel past this much, at most once a second: freed
 * line tables (up to 1 MiB each) and symbol tables otherwise stay resident as holes in the
 * heap, which new ones of other sizes do not fill, and the RSS grows with the churn. */
#define TRIM_AFTER_FREED_BYTES ((uint64_t)4 << 20)
#define TRIM_INTERVAL_MS 1000

/* What the outputs and the held records take now, into the budget: the caches make room. */
static void count_held_in_budget(struct session *session, uint64_t now_ms)
{
	uint64_t outputs = 0, freed;

	for (size_t i = 0; i < session->writer_count; i++)
		outputs += pf_writer_held_bytes(session->writers[i]);
	target_budget_set_held(session->budget, session->outputs_budget_store, outputs);
	target_budget_set_held(session->budget, session->pending_budget_store,
			       session->pending_capacity + late_unwind_held_bytes(session) + discovery_held_bytes(session) +
				       native_stacks_held_bytes(session) + threads_seen_held_bytes(&session->threads));
	/* discovery's thread keeps them under their fixed cap, outside the limit, and publishes
	 * what they take */
	target_budget_set_fixed(session->budget, session->verdicts_budget_store,
				py_runtime_file_cache_held_bytes(session->targets.runtime_files));
	freed = target_budget_freed_total(session->budget);
	if (freed - session->budget_freed_at_trim >= TRIM_AFTER_FREED_BYTES &&
	    now_ms - session->budget_trim_ms >= TRIM_INTERVAL_MS) {
		malloc_trim(0);
		session->budget_freed_at_trim = freed;
		session->budget_trim_ms = now_ms;
	}
}

/* --opcodes: how often, and how many, frames' instructions are read again (an instruction first
 * seen on its code's first run specialises on its second); each read is one byte. */
#define OPCODE_REFRESH_MS 250
#define OPCODE_REFRESH_READS 1024

static void refresh_opcodes(struct session *session, uint64_t now_ms)
{
	if (!session->options->opcodes || now_ms - session->opcodes_refreshed_ms < OPCODE_REFRESH_MS)
		return;
	session->opcodes_refreshed_ms = now_ms;
	symbolize_py_refresh_opcodes(session->resolver.python, OPCODE_REFRESH_READS);
}

/* Keeps a copy of the record (size first, 8-byte aligned); false when the budget is spent. */
static bool keep_record(struct session *session, const struct pbp_record *record, size_t size)
{
	size_t needed = sizeof(size) + ((size + 7) & ~(size_t)7);

	if (session->pending_used + needed > PENDING_RECORDS_MAX_BYTES ||
	    array_reserve((void **)&session->pending_records, &session->pending_capacity,
			  session->pending_used + needed, 1, 64 * 1024))
		return false;
	memcpy(session->pending_records + session->pending_used, &size, sizeof(size));
	memcpy(session->pending_records + session->pending_used + sizeof(size), record, size);
	session->pending_used += needed;
	return true;
}

/*
 * During a drain only the code objects are read (they may be freed within
 * milliseconds: a module body during its import); naming native frames can open
 * a file and building unwind tables takes milliseconds, so the whole resolution
 * waits for the end of the drain.
 */
static int on_record(void *ctx, const struct pbp_record *record, size_t size)
{
	struct session *session = ctx;
	struct target *target;
	const struct py_target *python;

	session->drained_records++;
	python = python_of_record(session, record, &target);
	/* before the prefetch: it looks up the task stepping the record's coroutine while it may
	 * still run, which needs _current_tasks */
	if (target && python && record->running_task && !(record->flags & PBP_REC_ASYNC_TASK))
		process_events_find_current_tasks(session, target, record->time_ns);
	sample_resolve_prefetch(&session->resolver, record, size, python);
	if (!keep_record(session, record, size)) {
		write_pending_records(session);
		resolve_and_write(session, record, size);
	}
	return 0;
}

/* Exec and exit change what a target's records mean: the records before them go first. */
static void on_proc_event(void *ctx, const struct pbp_proc_event *event)
{
	struct session *session = ctx;

	write_pending_records(session);
	if (event->type == PBP_PROC_EXEC || event->type == PBP_PROC_EXIT)
		late_unwind_settle_pid(session, (pid_t)event->pid);
	process_events_on_proc_event(ctx, event);
}

/* The records in the ring, until it is empty or for slice_ms (0: until it is empty). */
static void drain(struct session *session, unsigned slice_ms)
{
	uint64_t start_us = clock_monotonic_us(), records = session->drained_records, took_us;

	bpf_sampler_consume(session->sampler, slice_ms ? clock_coarse_ms() + slice_ms : 0, on_record, on_proc_event,
			    session);
	write_pending_records(session);
	late_unwind_flush(session);
	took_us = clock_monotonic_us() - start_us;
	session->drain_us += took_us;
	if (took_us > session->longest_drain_us) {
		session->longest_drain_us = took_us;
		session->longest_drain_records = session->drained_records - records;
	}
}

static int finish(struct session *session)
{
	uint64_t counters[PBP_CNT_MAX] = { 0 };

	drain(session, DRAIN_LAST_MS);
	/* The counts of the run, before the held samples' last wait (sampling goes on meanwhile:
	 * what BPF sends then is not the run's). */
	bpf_sampler_counters(session->sampler, counters);
	session->stop_us = clock_monotonic_us();
	/* the summary reads the runtime files' counts, which the thread no longer changes */
	discovery_close(session);
	late_unwind_finish(session);
	if (session->windows) {
		windows_close(session->windows, &session->push_stats);
		session->windows = NULL;
	}
	return report_finish(session, counters);
}

/* --max-overhead: every target that can run Python gets its stride from its last cost. */
static void keep_overhead_budget(struct session *session, uint64_t now_ms)
{
	if (!session->overhead_on || !overhead_budget_look_begin(&session->overhead, now_ms * 1000))
		return;
	for (size_t i = 0; i < session->targets.count; i++) {
		const struct target *target = &session->targets.items[i];

		if (target->state == TARGET_READY)
			overhead_budget_look_at(&session->overhead, session->sampler, target->pid,
						target->identity.comm[0] ? target->identity.comm : NULL, target->samples,
						now_ms * 1000);
	}
	overhead_budget_look_end(&session->overhead, now_ms * 1000);
}

/*
 * Whether the file window in progress (--window without --push) has lasted its length. In
 * microseconds on both sides: the loop's time in milliseconds is truncated, and read within
 * the millisecond a window began it lies before that start, which unsigned arithmetic took for
 * a window long over (windows of a few microseconds, cut one after another).
 */
static bool file_window_due(const struct session *session, uint64_t now_us)
{
	return session->window_index && now_us >= session->window_start_us &&
	       now_us - session->window_start_us >= (uint64_t)(session->options->window_s * 1e6);
}

static void run_loop(struct session *session)
{
	const struct session_options *options = session->options;
	uint64_t next_flush = session->start_ms + FLUSH_EVERY_MS;
	uint64_t next_liveness = session->start_ms + LIVENESS_EVERY_MS;
	uint64_t deadline = options->duration_s > 0
				    ? session->start_ms + (uint64_t)(options->duration_s * 1000.0)
				    : UINT64_MAX;
	bool show = !options->quiet && isatty(STDERR_FILENO);
	int forwarded = 0;
	int tick_ms = TICK_FAST_MS;
	uint64_t view_quit_ms = 0;

	/*
	 * A code object is read while its process lives: on a busy host an ordinary thread
	 * waits tens of milliseconds for a CPU, long enough for short processes to exit
	 * unnamed. The profiler's CPU is the same either way; only its latency drops.
	 */
	thread_raise_for_draining();
	while (!session->write_error) {
		struct symbolize_py_stats before, after;
		uint64_t now;

		bpf_sampler_wait_or_wake(session->sampler, session->wake_fd,
					 process_events_wait_budget_ms(session, tick_ms, clock_monotonic_ms()));
		symbolize_py_cache_stats(session->resolver.python, &before);
		drain(session, DRAIN_SLICE_MS);
		native_stacks_poll(session);
		late_unwind_flush(session);
		discovery_poll(session);
		count_held_in_budget(session, clock_monotonic_ms());
		refresh_opcodes(session, clock_monotonic_ms());
		symbolize_py_cache_stats(session->resolver.python, &after);
		tick_ms = after.misses != before.misses || native_stacks_building(session) || discovery_waiting(session)
				  ? TICK_FAST_MS
				  : TICK_SLOW_MS;
		now = clock_monotonic_ms();
		process_events_retry_pending(session, now);
		keep_overhead_budget(session, now);
		if (stop_signal) {
			/* Ctrl-C reached the launched command through the terminal; SIGTERM did not. */
			if (session->launched && stop_signal != SIGINT && forwarded != stop_signal) {
				kill(session->launch.pid, stop_signal);
				forwarded = stop_signal;
			}
			if (!session->launched || launch_poll_exit(&session->launch))
				break;
			if (now >= deadline)
				break;
		}
		if (now >= deadline)
			break;
		/* Exits are rare: look for them a few times a second, not every tick. */
		if (now >= next_liveness) {
			process_events_check_liveness(session);
			next_liveness = now + LIVENESS_EVERY_MS;
			if (process_events_all_ended(session))
				break;
		}
		if (session->windows && windows_due(session->windows, now)) {
			late_unwind_flush_now(session);
			windows_tick(session->windows, now);
		}
		if (file_window_due(session, clock_monotonic_us())) {
			uint64_t counters[PBP_CNT_MAX] = { 0 };

			bpf_sampler_counters(session->sampler, counters);
			drain(session, DRAIN_LAST_MS);
			late_unwind_flush_now(session);
			if (report_next_file_window(session, counters) != EXIT_STATUS_OK && !session->write_error)
				session->write_error = errbuf_set(&session->write_error_text, -EIO,
								  "a window's files could not be written");
		}
		if (options->view && !view_quit_ms && options->view->tick(options->view->ctx, now)) {
			/* The viewer quit: a command it launched ends with it, as with Ctrl-C. */
			session->viewer_quit = true;
			if (!session->launched)
				break;
			kill(session->launch.pid, SIGINT);
			view_quit_ms = now;
		}
		if (view_quit_ms) {
			if (launch_poll_exit(&session->launch))
				break;
			if (now - view_quit_ms >= VIEW_QUIT_GRACE_MS)
				kill(session->launch.pid, SIGKILL);
		}
		if (now >= next_flush) {
			report_flush_writers(session);
			if (show)
				report_status(session, now, false);
			next_flush = now + FLUSH_EVERY_MS;
		}
	}
	if (show)
		report_status(session, clock_monotonic_ms(), true);
}

static int open_sampler(struct session *session)
{
	const struct session_options *options = session->options;
	struct bpf_sampler_options sampler_options = {
		.frequency_hz = options->frequency_hz,
		.kernel_stacks = options->kernel_stacks,
		.watch_exec = session->system_wide || options->command != NULL,
		/* Launched commands and the whole host include children; -p only with -C. */
		.follow_forks = session->system_wide || options->command != NULL || options->children,
		.ringbuf_bytes = options->ringbuf_bytes,
		.native_stacks = options->native_stacks,
		.unwind_rows = session->system_wide ? UNWIND_ROWS_DEFAULT : UNWIND_ROWS_TARGETED,
		.wall = !session_mode_on_ticks(options->mode),
		.wall_on_demand = options->mode == SESSION_MODE_STACKS,
		.gil_only = options->mode == SESSION_MODE_GIL,
		.memory_deltas = options->mode == SESSION_MODE_MEMORY,
		.exceptions_only = options->mode == SESSION_MODE_EXCEPTION,
		.time_samples = options->bpf_stats,
		.overhead_budget = session->overhead_on,
		/* A fixed set of processes gets an iterator each; a set that grows, one over every task. */
		.wall_pids = options->pids,
		.wall_pid_count = options->command || options->children ? 0 : options->pid_count,
		.event = options->event,
		.event_period = options->event_period,
		.syscalls = &options->syscalls,
	};
	struct errbuf error = { "" };
	int err = bpf_sampler_open(&session->sampler, &sampler_options, error.text, sizeof(error.text));

	if (err) {
		report_error("%s", error.text[0] ? error.text : strerror(-err));
		return err;
	}
	if (options->bpf_stats && bpf_sampler_enable_stats(session->sampler) && !options->quiet)
		report_error("warning: BPF run-time statistics are not available");
	return 0;
}

/* The resolver's kernel namer: the sampler asks the kernel (sampler/kernel_names.h). */
static int name_kernel_addresses(void *context, const uint64_t *addresses, size_t count,
				 void (*found)(void *found_context, uint64_t address, const char *name),
				 void *found_context)
{
	return bpf_sampler_name_kernel_addresses(context, addresses, count, found, found_context);
}

/* The Python cache's notes: BPF's, of code objects freed before they were read (bpf/maps.h). */
static int code_note_of(void *context, pid_t pid, uint64_t code_addr, uint32_t checksum, struct pbp_code_note *note)
{
	return bpf_sampler_code_note(context, pid, code_addr, checksum, note);
}

/* Kernel frames by name when the sampler can ask the kernel for them, else by address. */
static bool open_kernel_names(struct session *session)
{
	int err;

	if (!session->options->kernel_stacks)
		return false;
	err = bpf_sampler_open_kernel_names(session->sampler);
	if (err && !session->options->quiet)
		report_error("warning: kernel frames will show addresses: the kernel's symbol lookup: %s",
			     strerror(-err));
	return !err;
}

static void release(struct session *session)
{
	if (session->windows) {
		windows_close(session->windows, &session->push_stats);
		session->windows = NULL;
	}
	report_abort_writers(session);
	discovery_close(session);
	if (session->sampler)
		bpf_sampler_close(session->sampler);
	late_unwind_free(session);
	native_stacks_close(session);
	stacks_print_free(session->stacks);
	session->stacks = NULL;
	symbolize_native_free(session->resolver.native);
	session->resolver.native = NULL;
	sample_resolve_free(&session->resolver);
	py_runtime_file_cache_free(session->targets.runtime_files);
	target_set_free(&session->targets);
	threads_seen_free(&session->threads);
	overhead_budget_free(&session->overhead);
	intern_free(&session->containers);
	free(session->container_counts);
	free(session->pending_records);
	session->pending_records = NULL;
	target_budget_free(session->budget);
	session->budget = NULL;
	if (session->wake_fd >= 0)
		close(session->wake_fd);
	session->wake_fd = -1;
}

/* The targets' native unwind tables in BPF, for as long as they take up to bound_ms: whether all are. */
static bool wait_for_unwind_tables(struct session *session, uint64_t bound_ms)
{
	uint64_t deadline = clock_monotonic_ms() + bound_ms;

	for (;;) {
		native_stacks_poll(session);
		if (!native_stacks_building(session))
			return true;
		if (clock_monotonic_ms() >= deadline)
			return false;
		usleep(5000);
	}
}

/* Sampling starts with the tables of the files queued so far in BPF (up to the bound), saying so on
 * the status line while it waits: a sample taken before would lose its native frames. */
static void wait_for_tables_before_sampling(struct session *session)
{
	bool show = !session->options->quiet && isatty(STDERR_FILENO);
	bool ready;

	if (!native_stacks_building(session))
		return;
	if (show) {
		fputs("\r\033[Kpybpfprof: building unwind tables: sampling starts when they are ready", stderr);
		fflush(stderr);
	}
	ready = wait_for_unwind_tables(session, SAMPLING_TABLES_WAIT_MS);
	if (show)
		fputs("\r\033[K", stderr);
	if (!ready && !session->options->quiet)
		report_error("warning: unwind tables still building after %d s: sampling starts; native frames "
			     "come as the tables do", SAMPLING_TABLES_WAIT_MS / 1000);
}

/* The named processes' tables before they are sampled (their maps are read again once ready). */
static void build_named_tables(struct session *session)
{
	if (session->options->mode == SESSION_MODE_STACKS)
		return;
	for (size_t i = 0; i < session->targets.count; i++)
		native_stacks_attach(session, session->targets.items[i].pid);
	wait_for_tables_before_sampling(session);
}

static int start_launch(struct session *session)
{
	struct errbuf error;
	struct target *target;
	int err = launch_prepare(&session->launch, session->options->command, error.text,
				 sizeof(error.text));

	if (err) {
		report_error("%s", error.text);
		return err;
	}
	session->launched = true;
	target = target_set_add(&session->targets, session->launch.pid, TARGET_FROM_LAUNCH);
	if (!target)
		return -ENOMEM;
	/* Sampled from its first instruction: kernel stacks until Python is found in it. */
	return bpf_sampler_add_target(session->sampler, session->launch.pid, NULL);
}

/*
 * Everything before sampling starts, in the order that makes a failure's
 * message the useful one (privileges and BTF first: a run that cannot sample
 * should say only that). On failure *failed_status is the class that failed.
 */
/* The target budget and its stores that are not a cache's own (those register themselves). */
static int open_budget(struct session *session)
{
	int err = target_budget_new(session->options->target_budget_bytes, &session->budget);

	if (!err)
		err = symbolize_py_cache_set_budget(session->resolver.python, session->budget);
	if (!err)
		err = async_tasks_set_budget(session->resolver.tasks, session->budget);
	if (!err)
		err = sample_resolve_set_budget(&session->resolver, session->budget);
	if (!err)
		err = session->outputs_budget_store = target_budget_register(session->budget, "output tables", NULL,
									     NULL, NULL);
	if (err >= 0)
		err = session->pending_budget_store = target_budget_register(session->budget, "records held", NULL,
									     NULL, NULL);
	if (err >= 0)
		err = session->verdicts_budget_store = target_budget_register(session->budget, "file verdicts", NULL,
									      NULL, NULL);
	return err < 0 ? err : 0;
}

static int set_up(struct session *session, int *failed_status)
{
	const struct session_options *options = session->options;
	int err;

	*failed_status = EXIT_STATUS_UNAVAILABLE;
	err = open_sampler(session);
	if (err)
		return err;
	*failed_status = EXIT_STATUS_FAILED;
	err = sample_resolve_init(&session->resolver, open_kernel_names(session) ? name_kernel_addresses : NULL,
				  session->sampler, 1000000 / options->frequency_hz);
	if (!err && options->event) {
		bool tracepoint = perf_event_is_tracepoint(options->event);
		enum perf_event_unit unit = session_event_unit(options);

		session->resolver.event_period = session_event_period(options);
		session->resolver.event_blocked_ns = tracepoint && unit == PERF_EVENT_NANOSECONDS;
		session->resolver.event_weight_bytes = tracepoint && unit == PERF_EVENT_BYTES;
		session->resolver.event_bytes = options->event->page_sized ? (uint64_t)sysconf(_SC_PAGESIZE) : 0;
	}
	session->resolver.memory_deltas = options->mode == SESSION_MODE_MEMORY;
	if (!err)
		err = open_budget(session);
	if (!err && (options->native_frames || options->native_stacks)) {
		session->resolver.native = symbolize_native_new();
		err = session->resolver.native
			      ? symbolize_native_set_target_budget(session->resolver.native, session->budget)
			      : -ENOMEM;
		/* the loop that drains the ring never waits for a file: its pcs are named by offset
		 * until the parser worker has read it (some ms, the worker being up from the start);
		 * a one-shot `stacks` waits for the names */
		if (!err && options->mode != SESSION_MODE_STACKS)
			symbolize_native_set_wait_ms(session->resolver.native, 0);
		/* the worker starts while BPF loads; without one, native frames go unnamed */
		if (session->resolver.native)
			symbolize_native_prepare(session->resolver.native);
	}
	session->resolver.async_plumbing = options->async_plumbing;
	symbolize_py_cache_set_opcodes(session->resolver.python, options->opcodes);
	symbolize_py_cache_set_notes(session->resolver.python, code_note_of, session->sampler);
	if (!err && options->native_stacks) {
		session->resolver.native_stacks = true;
		session->resolver.native_keep_all = options->native_keep_all;
		err = native_stacks_open(session);
	}
	if (!err && py_runtime_file_cache_new(&session->targets.runtime_files, PY_RUNTIME_FILE_CACHE_DEFAULT)) {
		report_error("out of memory");
		err = -ENOMEM;
	}
	/* its worker starts now, not when the loop that drains records meets the first process */
	if (!err)
		py_runtime_file_cache_prepare(session->targets.runtime_files);
	if (err)
		return err;
	*failed_status = EXIT_STATUS_TARGET;
	err = process_events_discover_named_pids(session);
	if (err)
		return err;
	/* From here on a new process is looked at off the loop that drains the ring. */
	if (options->mode != SESSION_MODE_STACKS) {
		*failed_status = EXIT_STATUS_FAILED;
		/* without it the loop finds the answers at its next tick */
		session->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		/* Waiting tasks are read when their loop thread's record is drained: read at the
		 * pass's end, not up to a tick later, their stacks are those of the pass's moment
		 * unless their loop ran them in between (doc/modes.md). */
		if (options->mode == SESSION_MODE_WALL && options->async_all)
			bpf_sampler_wake_after_passes(session->sampler, session->wake_fd);
		err = discovery_open(session);
		if (err) {
			report_error("starting the discovery thread: %s", strerror(-err));
			return err;
		}
		*failed_status = EXIT_STATUS_TARGET;
	}
	build_named_tables(session);
	for (size_t i = 0; i < session->targets.count; i++)
		process_events_target_ready(session, &session->targets.items[i]);
	if (options->children)
		process_events_add_descendants(session);
	*failed_status = EXIT_STATUS_FAILED;
	if (options->command) {
		err = start_launch(session);
		if (err)
			return err;
		/* Its first instruction runs with its executable's and libraries' tables in BPF. */
		if (native_stacks_prebuild_command(session, options->command))
			wait_for_tables_before_sampling(session);
	}
	*failed_status = EXIT_STATUS_OUTPUT;
	err = report_open_writers(session);
	if (!err && options->push_url) {
		*failed_status = EXIT_STATUS_USAGE;
		err = windows_open(session);
	}
	/* What set-up freed (the stores loading grew by doubling) would otherwise stay resident
	 * for the whole run. */
	malloc_trim(0);
	return err;
}

const char *session_mode_name(enum session_mode mode)
{
	/* A stack dump is one pass of the wall sampler, gil mode the wall sampler kept to GIL holders. */
	return mode == SESSION_MODE_CPU || mode == SESSION_MODE_EXCEPTION ? "cpu"
	       : mode == SESSION_MODE_MEMORY				  ? "memory"
									  : "wall";
}

const char *session_event_name(const struct session_options *options)
{
	return perf_event_is_syscalls(options->event) ? options->syscalls.text : options->event->name;
}

enum perf_event_unit session_event_unit(const struct session_options *options)
{
	const struct perf_event_spec *event = options->event;

	if (event->page_sized || perf_event_is_block_io(event) ||
	    (perf_event_is_syscalls(event) && options->syscalls.weight == PBP_SYSCALL_BYTES))
		return PERF_EVENT_BYTES;
	if (event->off_cpu || (perf_event_is_syscalls(event) && options->syscalls.weight == PBP_SYSCALL_LATENCY))
		return PERF_EVENT_NANOSECONDS;
	return PERF_EVENT_COUNT;
}

uint64_t session_event_period(const struct session_options *options)
{
	if (options->event->off_cpu)
		return 1;
	if (options->event_period)
		return options->event_period;
	return perf_event_is_tracepoint(options->event) ? 1 : options->event->default_period;
}

bool session_mode_on_ticks(enum session_mode mode)
{
	return mode == SESSION_MODE_CPU || mode == SESSION_MODE_MEMORY || mode == SESSION_MODE_EXCEPTION;
}


/*
 * `stacks`: one pass of the iterator over the named process's threads, every record
 * resolved as a recording resolves it, then printed. The target pays only the reads:
 * it is never stopped, so a hung (or SIGSTOPped) process shows as it is.
 */
static int run_stacks(struct session *session)
{
	const struct target *target = &session->targets.items[0];
	struct pf_python_version version = { target->python.major, target->python.minor, target->python.micro };
	pid_t pid = target->pid;
	int err;

	if (target->state != TARGET_READY)
		return EXIT_STATUS_TARGET;
	err = stacks_print_new(&session->stacks, pid, &version);
	if (err) {
		report_error("%s", strerror(-err));
		return EXIT_STATUS_FAILED;
	}
	wait_for_unwind_tables(session, STACKS_TABLES_WAIT_MS);
	err = bpf_sampler_wall_pass(session->sampler);
	if (err) {
		report_error("pid %d: reading its threads: %s", (int)pid, strerror(-err));
		return EXIT_STATUS_FAILED;
	}
	/* every thread's record, however long: nothing is sampled after the pass */
	drain(session, 0);
	late_unwind_finish(session);
	if (session->write_error) {
		report_error("%s", strerror(-session->write_error));
		return EXIT_STATUS_FAILED;
	}
	if (stacks_print_thread_count(session->stacks) == 0) {
		report_error("pid %d: no thread was read (the process has exited?)", (int)pid);
		return EXIT_STATUS_TARGET;
	}
	if (stacks_print_write(session->stacks, stdout, session->options->stacks_json)) {
		report_error("writing the stacks: %s", strerror(EIO));
		return EXIT_STATUS_OUTPUT;
	}
	return EXIT_STATUS_OK;
}

/* -p without -C: a master whose work is in its children would show an idle profile. */
/* --max-overhead as given, else on where the run samples processes nobody chose one by one (the
 * whole host, a --push service): cpu mode only, the wall iterator's passes being paced apart. */
static void start_overhead_budget(struct session *session)
{
	const struct session_options *options = session->options;
	double percent = options->max_overhead_given			   ? options->max_overhead_pct
			 : session->system_wide || options->push_url ? OVERHEAD_BUDGET_DEFAULT_PCT
								      : 0;

	session->overhead_on = percent > 0 && session_mode_on_ticks(options->mode);
	if (options->max_overhead_given && percent > 0 && !session->overhead_on && !options->quiet)
		report_error("warning: --max-overhead applies to cpu mode only (%s mode's passes are paced by -F)",
			     options->mode == SESSION_MODE_GIL ? "gil" : "wall");
	/* An event's rate is the target's own: no clock rate bounds it from below. */
	overhead_budget_init(&session->overhead, session->overhead_on ? percent : 0,
			     options->event ? 1 : options->frequency_hz);
}

static bool wants_children_hint(const struct session *session)
{
	const struct session_options *options = session->options;

	return options->pid_count && !options->children && !options->command && !options->quiet;
}

int session_run(const struct session_options *options)
{
	struct session session = { .options = options, .begin_us = clock_monotonic_us(), .wake_fd = -1 };
	struct errbuf error;
	int status, err;

	target_set_init(&session.targets);
	threads_seen_init(&session.threads);
	intern_init(&session.containers);
	session.system_wide = options->pid_count == 0 && !options->command;
	start_overhead_budget(&session);
	if (set_up(&session, &status)) {
		if (session.launched)
			launch_cancel(&session.launch);
		release(&session);
		return status;
	}
	if (options->mode == SESSION_MODE_STACKS) {
		status = run_stacks(&session);
		release(&session);
		return status;
	}
	session.python_version_written = false;
	session.start_ms = clock_monotonic_ms();
	session.start_us = clock_monotonic_us();
	session.window_start_us = session.window_index ? session.start_us : 0;
	session.setup_cpu_s = report_cpu_seconds();
	report_start_metadata(&session);
	for (size_t i = 0; i < session.targets.count; i++)
		if (session.targets.items[i].state == TARGET_READY)
			report_process(&session, &session.targets.items[i]);
	for (size_t i = 0; i < session.targets.count; i++)
		if (session.targets.items[i].state == TARGET_READY) {
			session.python_version_written = false;
			report_python_version(&session, &session.targets.items[i]);
			break;
		}
	install_signal_handlers();
	if (session.launched) {
		err = launch_start(&session.launch, options->command, error.text, sizeof(error.text));
		if (err) {
			report_error("%s", error.text);
			release(&session);
			return err == -ENOENT ? EXIT_STATUS_NOT_FOUND : EXIT_STATUS_CANNOT_EXECUTE;
		}
	}
	report_scope(&session);
	/* From here on the loop drains the ring: the targets' maps are read off it. */
	err = native_stacks_read_in_background(&session);
	if (err && !options->quiet)
		report_error("warning: maps are read on the draining thread: %s", strerror(-err));
	if (session.system_wide)
		process_events_scan(&session);
	if (wants_children_hint(&session))
		process_events_note_children_cpu(&session);
	run_loop(&session);
	status = finish(&session);
	if (wants_children_hint(&session))
		process_events_hint_children(&session);
	if (session.launched) {
		launch_wait(&session.launch);
		/* A command the viewer's q ended did not fail: its status (130) is the profiler's doing. */
		if (status == EXIT_STATUS_OK && !session.viewer_quit)
			status = launch_exit_code(&session.launch);
	}
	release(&session);
	return status;
}
