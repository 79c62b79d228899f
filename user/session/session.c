// SPDX-License-Identifier: MIT
#include "session/session.h"

#include "sampler/bpf_sampler.h"
#include "symbolize/ksyms.h"
#include "symbolize/sample_resolve.h"
#include "symbolize/symbolize_native.h"
#include "symbolize/symbolize_py.h"
#include "target/launch.h"
#include "target/target_set.h"
#include "util/clock.h"
#include "util/intern.h"
#include "util/version.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/*
 * How often the ring buffer is drained. Fast while samples bring new code
 * objects (imports, exec'd code: they may be freed within milliseconds and
 * must be read while they live); slow once everything is cached, because each
 * wakeup costs far more than the records it drains at 1 kHz.
 */
#define TICK_FAST_MS 10
#define TICK_SLOW_MS 50
#define FLUSH_EVERY_MS 1000
#define LIVENESS_EVERY_MS 200
#define STARTUP_DISCOVERY_MS 2000

struct session {
	const struct session_options *options;
	struct bpf_sampler *sampler;
	struct ksyms *ksyms;
	struct target_set targets;
	struct sample_resolver resolver;
	struct pf_writer *writers[SESSION_MAX_OUTPUTS];
	size_t writer_count;
	struct launch launch;
	bool launched;
	bool system_wide;
	bool python_version_written;
	struct intern_table threads; /* (pid, tid) pairs seen */
	uint64_t samples_written;
	uint64_t start_ms;
	uint64_t start_us;
	double setup_cpu_s;          /* our CPU time before sampling started (BPF load, kallsyms) */
	int write_error;
	char write_error_text[512];
};

static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int signo)
{
	stop_signal = signo;
}

static void report(const char *format, ...)
{
	va_list args;

	va_start(args, format);
	fputs("pybpfprof: ", stderr);
	vfprintf(stderr, format, args);
	fputc('\n', stderr);
	va_end(args);
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

/* ---- output ---- */

static void set_metadata_all(struct session *session, const char *key, const char *value)
{
	for (size_t i = 0; i < session->writer_count; i++) {
		int err = pf_writer_set_metadata(session->writers[i], key, value);

		if (err && !session->write_error) {
			session->write_error = err;
			snprintf(session->write_error_text, sizeof(session->write_error_text), "%s: %s",
				 session->options->outputs[i].path, pf_writer_error(session->writers[i]));
		}
	}
}

static void set_metadata_u64(struct session *session, const char *key, uint64_t value)
{
	char text[32];

	snprintf(text, sizeof(text), "%" PRIu64, value);
	set_metadata_all(session, key, text);
}

static void write_sample(struct session *session, const struct pf_sample *sample)
{
	struct { uint64_t pid, tid; } thread = { sample->pid, sample->tid };

	for (size_t i = 0; i < session->writer_count; i++) {
		int err = pf_writer_add_sample(session->writers[i], sample);

		if (err && !session->write_error) {
			session->write_error = err;
			snprintf(session->write_error_text, sizeof(session->write_error_text), "%s: %s",
				 session->options->outputs[i].path, pf_writer_error(session->writers[i]));
		}
	}
	intern_add(&session->threads, &thread, sizeof(thread), NULL);
	session->samples_written++;
}

static int open_writers(struct session *session)
{
	struct pf_writer_options options = PF_WRITER_OPTIONS_DEFAULT;

	options.compression_level = session->options->compression_level;
	options.flush_interval_ms = FLUSH_EVERY_MS;
	for (size_t i = 0; i < session->options->output_count; i++) {
		const struct session_output *output = &session->options->outputs[i];
		int err = pf_writer_open(&session->writers[i], output->path, output->format, &options);

		if (err) {
			report("cannot write %s: %s", output->path, strerror(-err));
			return err;
		}
		session->writer_count++;
	}
	return 0;
}

static void abort_writers(struct session *session)
{
	for (size_t i = 0; i < session->writer_count; i++)
		pf_writer_abort(session->writers[i]);
	session->writer_count = 0;
}

static void write_start_metadata(struct session *session)
{
	const struct session_options *options = session->options;
	uint64_t period_us = 1000000 / options->frequency_hz;

	set_metadata_all(session, "austin", "3.7.0");
	set_metadata_u64(session, "interval", period_us ? period_us : 1);
	set_metadata_all(session, "mode", "cpu");
	if (options->pid_count > 1 || session->system_wide || options->command || options->children)
		set_metadata_all(session, "multiprocess", "on");
	set_metadata_all(session, "pybpfprof", PYBPFPROF_VERSION);
	set_metadata_u64(session, "frequency", options->frequency_hz);
	set_metadata_u64(session, "start_time_us", session->start_us);
}

static void note_python_version(struct session *session, const struct target *target)
{
	char version[32];

	if (session->python_version_written)
		return;
	snprintf(version, sizeof(version), "%u.%u.%u", target->python.major, target->python.minor,
		 target->python.micro);
	set_metadata_all(session, "python", version);
	session->python_version_written = true;
}

/* ---- targets ---- */

static void target_became_ready(struct session *session, struct target *target)
{
	int err = bpf_sampler_add_target(session->sampler, target->pid, &target->python.config);

	if (err) {
		report("pid %d: cannot start sampling: %s", (int)target->pid, strerror(-err));
		target->state = TARGET_GONE;
		return;
	}
	note_python_version(session, target);
}

static void target_ended(struct session *session, struct target *target)
{
	if (target->state == TARGET_GONE)
		return;
	target->state = TARGET_GONE;
	bpf_sampler_remove_target(session->sampler, target->pid);
}

static void try_discover(struct session *session, struct target *target, uint64_t now_ms)
{
	int err = target_set_discover(target, now_ms);

	if (err == 0) {
		target_became_ready(session, target);
		return;
	}
	if (err == -EAGAIN)
		return;
	/* A process the user named, or the launched command: tell them why it is not profiled. */
	if (target->origin != TARGET_FROM_SCAN && err != -ESRCH && !session->options->quiet)
		report("%s", target->last_error.text);
	bpf_sampler_remove_target(session->sampler, target->pid);
}

static void retry_pending(struct session *session, uint64_t now_ms)
{
	for (size_t i = 0; i < session->targets.count; i++) {
		struct target *target = &session->targets.items[i];

		if (target->state == TARGET_PENDING && now_ms >= target->next_attempt_ms)
			try_discover(session, target, now_ms);
	}
}

/* How long the loop may sleep: no later than the next discovery attempt of a pending target,
 * since every moment a launched Python runs undiscovered is lost to its profile. */
static int wait_budget_ms(const struct session *session, int tick_ms, uint64_t now_ms)
{
	uint64_t budget = (uint64_t)tick_ms;

	for (size_t i = 0; i < session->targets.count; i++) {
		const struct target *target = &session->targets.items[i];

		if (target->state != TARGET_PENDING)
			continue;
		if (target->next_attempt_ms <= now_ms)
			return 0;
		if (target->next_attempt_ms - now_ms < budget)
			budget = target->next_attempt_ms - now_ms;
	}
	return (int)budget;
}

static void check_liveness(struct session *session)
{
	for (size_t i = 0; i < session->targets.count; i++) {
		struct target *target = &session->targets.items[i];

		if (target->state != TARGET_GONE && !target_set_alive(target))
			target_ended(session, target);
	}
}

/* A new process, or a target that exec'd: start over with what it runs now. */
static void on_exec(struct session *session, pid_t pid)
{
	struct target *target = target_set_find(&session->targets, pid);
	enum target_origin origin;
	bool known = false;

	if (target) {
		if (target->state == TARGET_GONE && !session->system_wide)
			return;
		symbolize_py_forget_pid(session->resolver.python, pid);
		if (session->resolver.native)
			symbolize_native_forget_pid(session->resolver.native, pid);
		origin = target->origin;
		known = true;
	} else if (session->system_wide) {
		origin = TARGET_FROM_SCAN;
	} else if (session->launched && target_set_descends_from(pid, session->launch.pid)) {
		origin = TARGET_FROM_LAUNCH;
	} else {
		return;
	}
	target = target_set_add(&session->targets, pid, origin);
	if (!target)
		return;
	target->state = TARGET_PENDING;
	target->start_ticks = target_set_start_ticks(pid);
	target->pending_since_ms = clock_monotonic_ms();
	target->next_attempt_ms = 0;
	/* Launched processes are sampled (kernel stacks) while their runtime is being found; a
	 * known target is marked pending here too, since a fork notice handled just before this
	 * exec notice may have given BPF the old image's description again. */
	if (origin == TARGET_FROM_LAUNCH || known)
		bpf_sampler_add_target(session->sampler, pid, NULL);
	try_discover(session, target, clock_monotonic_ms());
}

/* A target forked: BPF already samples the child with the parent's description. */
static void on_fork(struct session *session, pid_t pid, pid_t parent_pid)
{
	struct target *parent = target_set_find(&session->targets, parent_pid);
	struct py_target python;
	enum target_origin origin;
	enum target_state state;
	struct target *child;

	if (!parent || parent->state == TARGET_GONE) {
		bpf_sampler_remove_target(session->sampler, pid);
		return;
	}
	/* Copy before adding: adding may move the parent in memory. */
	python = parent->python;
	origin = parent->origin;
	state = parent->state;
	child = target_set_add(&session->targets, pid, origin);
	if (!child)
		return;
	child->python = python;
	child->python.pid = pid;
	child->state = state;
	child->start_ticks = target_set_start_ticks(pid);
	child->pending_since_ms = clock_monotonic_ms();
	child->next_attempt_ms = 0;
	/* The parent may have become ready after the fork: BPF then copied its pending entry,
	 * and nothing else would ever tell BPF that the child is ready too. */
	if (state == TARGET_READY)
		target_became_ready(session, child);
}

static void on_proc_event(void *ctx, const struct pbp_proc_event *event)
{
	struct session *session = ctx;
	struct target *target;

	switch (event->type) {
	case PBP_PROC_FORK:
		on_fork(session, (pid_t)event->pid, (pid_t)event->parent_pid);
		break;
	case PBP_PROC_EXEC:
		on_exec(session, (pid_t)event->pid);
		break;
	case PBP_PROC_EXIT:
		target = target_set_find(&session->targets, (pid_t)event->pid);
		if (target)
			target_ended(session, target);
		break;
	default:
		break;
	}
}

static int on_record(void *ctx, const struct pbp_record *record, size_t size)
{
	struct session *session = ctx;
	struct target *target = target_set_find(&session->targets, (pid_t)record->pid);
	const struct py_target *python = NULL;
	struct pf_sample sample;

	/* A gone target keeps its description: its late samples resolve from the cache. */
	if (target && (target->state == TARGET_READY ||
		       (target->state == TARGET_GONE && target->python.pid == target->pid)))
		python = &target->python;
	if (sample_resolve(&session->resolver, record, size, python, &sample))
		return 0;
	if (target)
		target->samples++;
	write_sample(session, &sample);
	return 0;
}

/* System-wide mode starts with every Python process already running. */
static void scan_processes(struct session *session)
{
	DIR *proc = opendir("/proc");
	struct dirent *entry;
	pid_t self = getpid();

	if (!proc)
		return;
	while ((entry = readdir(proc))) {
		char *end;
		long pid = strtol(entry->d_name, &end, 10);
		struct target *target;

		if (*end || pid <= 0 || pid == self)
			continue;
		target = target_set_add(&session->targets, (pid_t)pid, TARGET_FROM_SCAN);
		if (target)
			try_discover(session, target, clock_monotonic_ms());
	}
	closedir(proc);
}

/* -p PID: each must be a Python process we can profile, before anything starts. */
static int discover_named_pids(struct session *session)
{
	const struct session_options *options = session->options;

	for (size_t i = 0; i < options->pid_count; i++) {
		struct target *target = target_set_add(&session->targets, options->pids[i],
						       TARGET_FROM_PID);
		uint64_t deadline = clock_monotonic_ms() + STARTUP_DISCOVERY_MS;
		int err;

		if (!target)
			return -ENOMEM;
		for (;;) {
			err = target_set_discover(target, clock_monotonic_ms());
			if (err != -EAGAIN || clock_monotonic_ms() >= deadline)
				break;
			usleep(5000);
		}
		if (err == -ESRCH) {
			report("pid %d: no such process", (int)options->pids[i]);
			return err;
		}
		if (err) {
			report("%s", target->last_error.text[0] ? target->last_error.text
							      : strerror(-err));
			return err;
		}
	}
	return 0;
}

/* ---- the run ---- */

static size_t live_processes(const struct session *session)
{
	size_t count = 0;

	for (size_t i = 0; i < session->targets.count; i++)
		count += session->targets.items[i].state == TARGET_READY;
	return count;
}

static bool every_target_ended(struct session *session)
{
	if (session->launched)
		return launch_poll_exit(&session->launch);
	if (session->system_wide)
		return false;
	for (size_t i = 0; i < session->targets.count; i++)
		if (session->targets.items[i].origin == TARGET_FROM_PID &&
		    session->targets.items[i].state != TARGET_GONE)
			return false;
	return true;
}

static void show_status(struct session *session, uint64_t now_ms, bool final)
{
	uint64_t counters[PBP_CNT_MAX] = { 0 };
	double seconds = (double)(now_ms - session->start_ms) / 1000.0;

	bpf_sampler_counters(session->sampler, counters);
	fprintf(stderr, "\r\033[Kpybpfprof: %.1f s  %" PRIu64 " samples (%.0f/s)  %" PRIu64
			" lost  %zu processes  %zu threads%s",
		seconds, session->samples_written,
		seconds > 0 ? (double)session->samples_written / seconds : 0.0,
		counters[PBP_CNT_LOST], live_processes(session), intern_count(&session->threads),
		final ? "\n" : "");
	fflush(stderr);
}

static double own_cpu_seconds(void)
{
	struct rusage usage;

	/* RUSAGE_SELF leaves out the launched command. */
	if (getrusage(RUSAGE_SELF, &usage) != 0)
		return 0;
	return (double)(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
	       (double)(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

static void format_size(uint64_t bytes, char *out, size_t len)
{
	if (bytes >= 1 << 20)
		snprintf(out, len, "%.1f MiB", (double)bytes / (1 << 20));
	else if (bytes >= 1 << 10)
		snprintf(out, len, "%.1f KiB", (double)bytes / (1 << 10));
	else
		snprintf(out, len, "%" PRIu64 " B", bytes);
}

static void write_end_metadata(struct session *session, uint64_t counters[PBP_CNT_MAX])
{
	uint64_t duration_us = clock_monotonic_us() - session->start_us;
	uint64_t errors = counters[PBP_CNT_READ_FAULTS] + session->resolver.unresolved_frames;
	char text[64];

	set_metadata_u64(session, "duration", duration_us);
	set_metadata_u64(session, "samples", session->samples_written);
	set_metadata_u64(session, "lost_samples", counters[PBP_CNT_LOST]);
	set_metadata_u64(session, "truncated_stacks", counters[PBP_CNT_TRUNCATED]);
	set_metadata_u64(session, "read_faults", counters[PBP_CNT_READ_FAULTS]);
	set_metadata_u64(session, "unresolved_frames", session->resolver.unresolved_frames);
	snprintf(text, sizeof(text), "%" PRIu64 "/%" PRIu64, errors, session->samples_written);
	set_metadata_all(session, "errors", text);
	snprintf(text, sizeof(text), "%" PRIu64 "/%" PRIu64, counters[PBP_CNT_LOST],
		 counters[PBP_CNT_LOST] + session->samples_written);
	set_metadata_all(session, "saturation", text);
	if (session->samples_written) {
		snprintf(text, sizeof(text), "%.6f", (double)errors / (double)session->samples_written);
		set_metadata_all(session, "error_rate", text);
	}
}

static void print_summary(struct session *session, uint64_t counters[PBP_CNT_MAX])
{
	double seconds = (double)(clock_monotonic_ms() - session->start_ms) / 1000.0;
	size_t processes = 0;

	for (size_t i = 0; i < session->targets.count; i++)
		processes += session->targets.items[i].samples > 0;
	fprintf(stderr, "pybpfprof: %" PRIu64 " samples in %.1f s from %zu process%s, %zu thread%s; %" PRIu64
			" lost; %" PRIu64 " truncated stacks; %" PRIu64 " unresolved frames\n",
		session->samples_written, seconds, processes, processes == 1 ? "" : "es",
		intern_count(&session->threads), intern_count(&session->threads) == 1 ? "" : "s",
		counters[PBP_CNT_LOST], counters[PBP_CNT_TRUNCATED],
		session->resolver.unresolved_frames);
	if (session->options->bpf_stats) {
		uint64_t run_ns = 0, runs = 0;
		double sampling_cpu_s = own_cpu_seconds() - session->setup_cpu_s;

		bpf_sampler_prog_stats(session->sampler, &run_ns, &runs);
		/* Ticks on other processes cost little and would halve the average: charge every
		 * run's time to the samples of targets too. */
		fprintf(stderr, "pybpfprof: bpf: %" PRIu64 " runs, %.0f ns per run; %" PRIu64
				" target samples, %" PRIu64 " wakeups, %.0f ns per target sample\n", runs,
			runs ? (double)run_ns / (double)runs : 0.0, counters[PBP_CNT_SAMPLES],
			counters[PBP_CNT_WAKEUPS],
			counters[PBP_CNT_SAMPLES] ? (double)run_ns / (double)counters[PBP_CNT_SAMPLES] : 0.0);
		fprintf(stderr, "pybpfprof: cpu: %.3f s user+sys while sampling (%.2f%% of a core), %.3f s to start\n",
			sampling_cpu_s, seconds > 0 ? 100.0 * sampling_cpu_s / seconds : 0.0,
			session->setup_cpu_s);
	}
}

static int finish(struct session *session)
{
	uint64_t counters[PBP_CNT_MAX] = { 0 };
	int status = 0;

	bpf_sampler_consume(session->sampler, on_record, on_proc_event, session);
	bpf_sampler_counters(session->sampler, counters);
	write_end_metadata(session, counters);
	for (size_t i = 0; i < session->writer_count; i++) {
		const char *path = session->options->outputs[i].path;
		int err = pf_writer_close(session->writers[i]);
		struct stat info;
		char size[32];

		/* Some formats are written whole at close: measure the file, not the stream. */
		format_size(stat(path, &info) == 0 ? (uint64_t)info.st_size : 0, size, sizeof(size));
		if (err) {
			report("%s: cannot finish the file: %s", path, strerror(-err));
			status = 1;
		} else if (!session->options->quiet) {
			fprintf(stderr, "pybpfprof: wrote %s (%s)\n", path, size);
		}
	}
	session->writer_count = 0;
	if (!session->options->quiet)
		print_summary(session, counters);
	if (session->write_error) {
		report("%s", session->write_error_text);
		status = 1;
	}
	return status;
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

	while (!session->write_error) {
		struct symbolize_py_stats before, after;
		uint64_t now;

		bpf_sampler_wait(session->sampler, wait_budget_ms(session, tick_ms, clock_monotonic_ms()));
		symbolize_py_cache_stats(session->resolver.python, &before);
		bpf_sampler_consume(session->sampler, on_record, on_proc_event, session);
		symbolize_py_cache_stats(session->resolver.python, &after);
		tick_ms = after.misses != before.misses ? TICK_FAST_MS : TICK_SLOW_MS;
		now = clock_monotonic_ms();
		retry_pending(session, now);
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
			check_liveness(session);
			next_liveness = now + LIVENESS_EVERY_MS;
			if (every_target_ended(session))
				break;
		}
		if (now >= next_flush) {
			for (size_t i = 0; i < session->writer_count; i++)
				pf_writer_flush(session->writers[i]);
			if (show)
				show_status(session, now, false);
			next_flush = now + FLUSH_EVERY_MS;
		}
	}
	if (show)
		show_status(session, clock_monotonic_ms(), true);
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
	};
	char err_text[512] = "";
	int err = bpf_sampler_open(&session->sampler, &sampler_options, err_text, sizeof(err_text));

	if (err) {
		report("%s", err_text[0] ? err_text : strerror(-err));
		return err;
	}
	if (options->bpf_stats && bpf_sampler_enable_stats(session->sampler) && !options->quiet)
		report("warning: BPF run-time statistics are not available");
	return 0;
}

static void load_kernel_symbols(struct session *session)
{
	char err_text[512] = "";

	if (!session->options->kernel_stacks)
		return;
	if (ksyms_load(&session->ksyms, err_text, sizeof(err_text)) && !session->options->quiet)
		report("warning: kernel frames will show addresses: %s", err_text);
}

static void release(struct session *session)
{
	abort_writers(session);
	if (session->sampler)
		bpf_sampler_close(session->sampler);
	symbolize_native_free(session->resolver.native);
	session->resolver.native = NULL;
	sample_resolver_free(&session->resolver);
	ksyms_free(session->ksyms);
	target_set_free(&session->targets);
	intern_free(&session->threads);
}

static int start_launch(struct session *session)
{
	char err_text[512];
	struct target *target;
	int err = launch_prepare(&session->launch, session->options->command, err_text,
				 sizeof(err_text));

	if (err) {
		report("%s", err_text);
		return err;
	}
	session->launched = true;
	target = target_set_add(&session->targets, session->launch.pid, TARGET_FROM_LAUNCH);
	if (!target)
		return -ENOMEM;
	/* Sampled from its first instruction: kernel stacks until Python is found in it. */
	return bpf_sampler_add_target(session->sampler, session->launch.pid, NULL);
}

int session_run(const struct session_options *options)
{
	struct session session = { .options = options };
	char err_text[512];
	int status, err;

	target_set_init(&session.targets);
	intern_init(&session.threads);
	session.system_wide = options->pid_count == 0 && !options->command;
	/* Privileges and BTF first: a run that cannot sample should say only that. */
	err = open_sampler(&session);
	if (!err)
		load_kernel_symbols(&session);
	if (!err)
		err = sample_resolver_init(&session.resolver, session.ksyms,
					   1000000 / options->frequency_hz);
	if (!err && options->native_frames) {
		session.resolver.native = symbolize_native_new();
		if (!session.resolver.native)
			err = -ENOMEM;
	}
	if (!err)
		err = discover_named_pids(&session);
	for (size_t i = 0; !err && i < session.targets.count; i++)
		target_became_ready(&session, &session.targets.items[i]);
	if (!err && options->command)
		err = start_launch(&session);
	if (!err)
		err = open_writers(&session);
	if (err) {
		if (session.launched)
			launch_cancel(&session.launch);
		release(&session);
		return 1;
	}
	session.python_version_written = false;
	session.start_ms = clock_monotonic_ms();
	session.start_us = clock_monotonic_us();
	session.setup_cpu_s = own_cpu_seconds();
	write_start_metadata(&session);
	for (size_t i = 0; i < session.targets.count; i++)
		if (session.targets.items[i].state == TARGET_READY) {
			session.python_version_written = false;
			note_python_version(&session, &session.targets.items[i]);
			break;
		}
	install_signal_handlers();
	if (session.launched && launch_start(&session.launch, options->command, err_text,
					     sizeof(err_text))) {
		report("%s", err_text);
		release(&session);
		return 127;
	}
	if (session.system_wide)
		scan_processes(&session);
	run_loop(&session);
	status = finish(&session);
	if (session.launched) {
		launch_wait(&session.launch);
		if (status == 0)
			status = launch_exit_code(&session.launch);
	}
	release(&session);
	return status;
}
