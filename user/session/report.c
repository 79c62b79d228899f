// SPDX-License-Identifier: MIT
/* The run as the user sees it: the output files' samples and metadata, the status line, the summary. */
#include "session/session_internal.h"
#include "session/windows.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "unwind/unwind_maps.h"
#include "symbolize/symbolize_native.h"
#include "symbolize/symbolize_py.h"
#include "util/array.h"
#include "sampler/perf_events.h"
#include "util/clock.h"
#include "util/exit_status.h"
#include "util/target_budget.h"
#include "util/text_quote.h"
#include "util/version.h"

/* The message carries target-controlled text (paths from a target's maps, names): its
 * control bytes are shown escaped, never acted on by the terminal. */
void report_error(const char *format, ...)
{
	va_list args;
	char *message;
	int len;

	va_start(args, format);
	len = vasprintf(&message, format, args);
	va_end(args);
	fputs("pybpfprof: ", stderr);
	fput_escaped(stderr, len >= 0 ? message : format);
	fputc('\n', stderr);
	if (len >= 0)
		free(message);
}

/*
 * Where output i goes: its path, or in file windows (--window without --push) the
 * path with the window's number before the extension ("run.mojo" -> "run-0001.mojo",
 * "run.pb.gz" -> "run-0001.pb.gz"). A path too long for that keeps its own name.
 */
static const char *output_path(struct session *session, size_t i)
{
	const struct session_output *output = &session->options->outputs[i];
	const char *base = strrchr(output->path, '/') ? strrchr(output->path, '/') + 1 : output->path;
	size_t base_len = strlen(base), cut = strlen(output->path);

	if (!session->window_index)
		return output->path;
	for (size_t e = 0; e < PF_FORMAT_MAX_NAMES && output->format->extensions[e]; e++) {
		size_t len = strlen(output->format->extensions[e]);

		if (base_len > len + 1 && base[base_len - len - 1] == '.' &&
		    strcasecmp(base + base_len - len, output->format->extensions[e]) == 0) {
			cut = strlen(output->path) - len - 1;
			break;
		}
	}
	if ((size_t)snprintf(session->window_paths[i], sizeof(session->window_paths[i]), "%.*s-%04u%s", (int)cut,
			     output->path, session->window_index, output->path + cut) >= sizeof(session->window_paths[i]))
		return output->path;
	return session->window_paths[i];
}

/* The first write error is kept for the end of the run; sampling stops at it. */
static void note_write_error(struct session *session, size_t writer, int err)
{
	if (!err || session->write_error)
		return;
	session->write_error = err;
	session->write_error_writer = writer;
	errbuf_set(&session->write_error_text, err, "%s: %s", output_path(session, writer),
		   pf_writer_error(session->writers[writer]));
}

static void set_metadata_all(struct session *session, const char *key, const char *value)
{
	for (size_t i = 0; i < session->writer_count; i++)
		note_write_error(session, i, pf_writer_set_metadata(session->writers[i], key, value));
}

static void set_metadata_u64(struct session *session, const char *key, uint64_t value)
{
	char text[32];

	snprintf(text, sizeof(text), "%" PRIu64, value);
	set_metadata_all(session, key, text);
}

void report_flush_writers(struct session *session)
{
	for (size_t i = 0; i < session->writer_count; i++)
		note_write_error(session, i, pf_writer_flush(session->writers[i]));
}

/*
 * The thread's name, read when the thread is first seen: threading's name from the target
 * where python and tstate_addr say where to look and the version is one it can read, else
 * the OS thread's name from /proc (threading's name too from 3.14 on). NULL if unknown.
 */
const char *report_thread_name(struct session *session, const struct pf_sample *sample,
			       const struct py_target *python, uint64_t tstate_addr)
{
	struct thread_seen *thread = threads_seen_find(&session->threads, sample->pid, sample->tid);

	/* A record that arrives after its process was forgotten would make a slot that nothing
	 * forgets again (threads_seen.h): its thread goes unnamed. Only a new slot needs the
	 * check, so a thread's later samples skip it. */
	if (!thread) {
		if (!target_set_find(&session->targets, (pid_t)sample->pid))
			return NULL;
		thread = threads_seen_get(&session->threads, sample->pid, sample->tid);
		if (!thread)
			return NULL;
	}
	if (!thread->named) {
		if (!python || !tstate_addr || py_thread_name_read(python, tstate_addr, thread->name, PY_THREAD_NAME_MAX))
			proc_identity_thread_name((pid_t)sample->pid, (pid_t)sample->tid, thread->name);
		thread->named = true;
	}
	return thread->name[0] ? thread->name : NULL;
}

void report_write_sample(struct session *session, struct pf_sample *sample)
{
	if (!sample->thread_name)
		sample->thread_name = report_thread_name(session, sample, NULL, 0);
	for (size_t i = 0; i < session->writer_count; i++)
		note_write_error(session, i, pf_writer_add_sample(session->writers[i], sample));
	if (session->windows)
		windows_add_sample(session->windows, sample);
	if (session->options->view)
		session->options->view->add_sample(session->options->view->ctx, sample);
	if (session->samples_written++ == 0)
		session->first_sample_us = clock_monotonic_us();
}

/* The number of a cgroup path among the session's containers (a new one counted from 0); -1 on ENOMEM. */
static int32_t container_number(struct session *session, const char *cgroup)
{
	int64_t id = intern_add(&session->containers, cgroup, strlen(cgroup), NULL);
	size_t counted = session->container_capacity;

	if (id < 0 || id >= INT32_MAX ||
	    ARRAY_RESERVE(session->container_counts, session->container_capacity, (size_t)id + 1))
		return -1;
	for (size_t i = counted; i < session->container_capacity; i++)
		session->container_counts[i] = (struct container_counts){ 0 };
	return (int32_t)id;
}

void report_count_container_sample(struct session *session, const struct target *target)
{
	if (target->container >= 0)
		session->container_counts[target->container].samples++;
}

void report_process(struct session *session, struct target *target)
{
	const struct proc_identity *identity = &target->identity;
	char key[32], value[64 + PROC_IDENTITY_CGROUP_MAX];

	if (target->container >= 0 || !session->writer_count)
		return;
	target->container = container_number(session, identity->cgroup);
	if (target->container >= 0)
		session->container_counts[target->container].processes++;
	snprintf(key, sizeof(key), "process.%d", (int)target->pid);
	snprintf(value, sizeof(value), "ns_pid=%d ns_depth=%u cgroup=%s", (int)identity->ns_pid,
		 identity->ns_depth, identity->cgroup);
	set_metadata_all(session, key, value);
}

int report_open_writers(struct session *session)
{
	struct pf_writer_options options = PF_WRITER_OPTIONS_DEFAULT;

	options.compression_level = session->options->compression_level;
	options.flush_interval_ms = FLUSH_EVERY_MS;
	options.private_file = session->system_wide; /* every user's paths and function names */
	/* a Tachyon file's tables stay for the run: half the target budget at most */
	options.tables_max_bytes = (session->options->target_budget_bytes ? session->options->target_budget_bytes
									  : TARGET_BUDGET_DEFAULT_BYTES) / 2;
	if (session->options->window_s > 0 && !session->options->push_url && !session->window_index)
		session->window_index = 1;
	for (size_t i = 0; i < session->options->output_count; i++) {
		const struct session_output *output = &session->options->outputs[i];
		const char *path = output_path(session, i);
		int err = pf_writer_open(&session->writers[i], path, output->format, &options);

		if (err) {
			report_error("cannot write %s: %s", path, strerror(-err));
			return err;
		}
		session->writer_count++;
	}
	return 0;
}

void report_abort_writers(struct session *session)
{
	for (size_t i = 0; i < session->writer_count; i++)
		pf_writer_abort(session->writers[i]);
	session->writer_count = 0;
}

/* What the samples of an --event run count: the event, one sample's occurrences, and the unit of
 * the weight (bytes: page size times the occurrences; count: the occurrences; nanoseconds: the
 * time off-cpu's blocks lasted). */
static void report_event_metadata(struct session *session)
{
	const struct session_options *options = session->options;
	char text[32];

	set_metadata_all(session, "event", session_event_name(options));
	snprintf(text, sizeof(text), "%" PRIu64, session->resolver.event_period);
	set_metadata_all(session, "event_period", text);
	set_metadata_all(session, "event_unit", perf_event_unit_name(session_event_unit(options)));
	if (options->event->page_sized) {
		snprintf(text, sizeof(text), "%" PRIu64, session->resolver.event_bytes);
		set_metadata_all(session, "page_size", text);
	}
}

void report_start_metadata(struct session *session)
{
	const struct session_options *options = session->options;
	uint64_t period_us = 1000000 / options->frequency_hz;
	/* Austin's memory mode is the one whose metric is bytes: a fault event's; counted events
	 * carry their counts in cpu mode's metric. */
	bool event_bytes = options->event && session_event_unit(options) == PERF_EVENT_BYTES;
	struct pf_run_info info = {
		.interval_us = period_us ? period_us : 1,
		.mode = event_bytes ? "memory" : session_mode_name(options->mode),
		/* Austin has no gil mode: its samples are wall samples of one thread at a time. */
		.own_mode = options->mode == SESSION_MODE_GIL	    ? "gil"
			    : options->mode == SESSION_MODE_EXCEPTION ? "exception"
								      : NULL,
		.multiprocess = options->pid_count > 1 || session->system_wide || options->command ||
				options->children,
		.frequency_hz = options->frequency_hz,
		.start_time_us = session->window_start_us ? session->window_start_us : session->start_us,
	};

	set_metadata_all(session, "austin", "3.7.0");
	for (size_t i = 0; i < session->writer_count; i++)
		note_write_error(session, i, pf_writer_set_run_info(session->writers[i], &info));
	set_metadata_all(session, "pybpfprof", PYBPFPROF_VERSION);
	if (options->event)
		report_event_metadata(session);
}

void report_python_version(struct session *session, const struct target *target)
{
	struct pf_python_version version = { target->python.major, target->python.minor,
					     target->python.micro };

	if (session->python_version_written)
		return;
	for (size_t i = 0; i < session->writer_count; i++)
		note_write_error(session, i, pf_writer_set_python_version(session->writers[i], &version));
	session->python_version_written = true;
}

static size_t live_processes(const struct session *session)
{
	size_t count = 0;

	for (size_t i = 0; i < session->targets.count; i++)
		count += session->targets.items[i].state == TARGET_READY;
	return count;
}

/* When sampling ended: the last pushes after it are not sampling time. */
static uint64_t sampling_end_us(const struct session *session)
{
	return session->stop_us ? session->stop_us : clock_monotonic_us();
}

static const char *plural(uint64_t count, const char *suffix)
{
	return count == 1 ? "" : suffix;
}

/* The live targets that -p named (the rest are their descendants). */
static size_t live_named_processes(const struct session *session)
{
	size_t count = 0;

	for (size_t i = 0; i < session->targets.count; i++)
		for (size_t p = 0; p < session->options->pid_count; p++)
			count += session->targets.items[i].state == TARGET_READY &&
				 session->targets.items[i].pid == session->options->pids[p];
	return count;
}

/* The end of the status line: what is sampled, and until when. */
static void print_scope(const struct session *session, uint64_t now_ms)
{
	const struct session_options *options = session->options;
	size_t live = live_processes(session);

	if (session->system_wide) {
		size_t seen = target_set_sampled_count(&session->targets);

		fprintf(stderr, "  every Python process on this host: %zu now, %zu sampled so far", live, seen);
	} else {
		fprintf(stderr, "  %zu process%s", live, plural(live, "es"));
		if (options->children)
			fprintf(stderr, " (%zu descendant%s)", live - live_named_processes(session),
				plural(live - live_named_processes(session), "s"));
	}
	fprintf(stderr, "  %" PRIu64 " thread%s", session->threads.python_threads,
		plural(session->threads.python_threads, "s"));
	if (options->duration_s > 0) {
		double left = options->duration_s - (double)(now_ms - session->start_ms) / 1000.0;

		fprintf(stderr, "  %.0f s left", left > 0 ? ceil(left) : 0);
	}
	if (session->system_wide || options->pid_count)
		fputs("  Ctrl-C to stop", stderr);
}

/* Seconds from the start of the run (or of its window) to a CLOCK_MONOTONIC time. */
static double run_seconds_at(const struct session *session, uint64_t at_us)
{
	uint64_t start_us = session->window_start_us ? session->window_start_us : session->start_us;

	return at_us > start_us ? (double)(at_us - start_us) / 1e6 : 0.0;
}

/* The status line's word on --max-overhead: the targets sampled below the rate now. */
static void print_throttled_now(const struct session *session)
{
	const struct overhead_budget *budget = &session->overhead;

	if (!session->overhead_on || !budget->throttled_now)
		return;
	if (budget->throttled_now > 1) {
		fprintf(stderr, "  %zu processes throttled (--max-overhead)", budget->throttled_now);
		return;
	}
	for (size_t i = 0; i < budget->count; i++)
		if (budget->targets[i].stride > 1 && session->options->event)
			/* An event's rate is the process's own: the stride is what is known. */
			fprintf(stderr, "  pid %d throttled to 1 sample in %u (--max-overhead)", (int)budget->targets[i].pid,
				budget->targets[i].stride);
		else if (budget->targets[i].stride > 1)
			fprintf(stderr, "  pid %d throttled to %.0f/s (--max-overhead)", (int)budget->targets[i].pid,
				overhead_budget_rate_hz(budget, &budget->targets[i]));
}

void report_status(struct session *session, uint64_t now_ms, bool final)
{
	uint64_t counters[PBP_CNT_MAX] = { 0 };
	double seconds = (double)(now_ms - session->start_ms) / 1000.0;

	bpf_sampler_counters(session->sampler, counters);
	fprintf(stderr, "\r\033[Kpybpfprof: %.1f s  %" PRIu64 " sample%s (%.0f/s)  %" PRIu64 " lost", seconds,
		session->samples_written, plural(session->samples_written, "s"),
		seconds > 0 ? (double)session->samples_written / seconds : 0.0, counters[PBP_CNT_LOST]);
	print_throttled_now(session);
	if (!final)
		print_scope(session, now_ms);
	fputs(final ? "\n" : "", stderr);
	fflush(stderr);
}

void report_scope(const struct session *session)
{
	const struct session_options *options = session->options;

	if (options->quiet || !session->system_wide)
		return;
	/* A bare `pybpfprof` must not look like it hangs: say what it does and how it ends. */
	if (options->duration_s > 0)
		fprintf(stderr, "pybpfprof: sampling every Python process on this host for %g s\n", options->duration_s);
	else
		fprintf(stderr, "pybpfprof: sampling every Python process on this host until Ctrl-C\n");
}

long report_peak_resident_kib(void)
{
	struct rusage usage;

	return getrusage(RUSAGE_SELF, &usage) == 0 ? usage.ru_maxrss : 0;
}

double report_cpu_seconds(void)
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

/*
 * The non-zero counts[i] as "name<separator>count" joined by joiner ("no_cfi=3,read_fault=1",
 * "data_stack 3, gil 1"; "" if none), leaving out the indexes in skip (a bit each).
 */
static void format_counts(const uint64_t *counts, unsigned count, const char *(*name)(unsigned),
			  uint64_t skip, const char *separator, const char *joiner, char *out, size_t len)
{
	size_t used = 0;

	out[0] = 0;
	for (unsigned i = 0; i < count && used < len; i++) {
		if ((skip >> i & 1) || !counts[i] || !name(i))
			continue;
		used += (size_t)snprintf(out + used, len - used, "%s%s%s%" PRIu64, used ? joiner : "",
					 name(i), separator, counts[i]);
	}
}

/* What a walk that reached the root, or was never made, says about stops: nothing. */
#define NOT_A_STOP (1ull << UNWIND_STOP_ROOT | 1ull << UNWIND_STOP_NOT_WALKED)

/* Stop causes of the native walks that did not reach the root, "no_cfi=3,read_fault=1" ("" if none). */
static void format_stops(const struct sample_resolver *resolver, const char *separator, char *out, size_t len)
{
	format_counts(resolver->native_walks, UNWIND_STOP_COUNT, bpf_sampler_unwind_stop_name, NOT_A_STOP,
		      separator, ",", out, len);
}

static const char *failure_name(unsigned failure)
{
	return unwind_cache_failure_name(failure);
}

/* Files without a table by cause, "no_cfi=1,no_room=2" ("" if none). */
static void format_failures(const struct unwind_cache_stats *stats, const char *separator, char *out, size_t len)
{
	uint64_t failures[UNWIND_FAIL_COUNT];

	for (unsigned failure = 0; failure < UNWIND_FAIL_COUNT; failure++)
		failures[failure] = stats->failures[failure];
	format_counts(failures, UNWIND_FAIL_COUNT, failure_name, 0, separator, ",", out, len);
}

/* BPF's failed reads of target memory by site, "data_stack=3,gil=1" ("" if none or unreadable). */
static void format_read_errors(struct bpf_sampler *sampler, const char *separator, const char *joiner,
			       char *out, size_t len)
{
	uint64_t errors[PBP_ERR_COUNT] = { 0 };

	out[0] = 0;
	if (bpf_sampler_error_counts(sampler, errors) == 0)
		format_counts(errors, PBP_ERR_COUNT, bpf_sampler_error_name, 1ull << PBP_ERR_NONE,
			      separator, joiner, out, len);
}

/*
 * BPF's own count of native walks by stop cause: every target sample it walked, also
 * those lost in the ring buffer or dropped by userspace, which the resolver never saw.
 * The number of walks, 0 if unreadable.
 */
static uint64_t bpf_native_walks(struct bpf_sampler *sampler, uint64_t stops[UNWIND_STOP_COUNT])
{
	uint64_t walks = 0;

	memset(stops, 0, UNWIND_STOP_COUNT * sizeof(*stops));
	if (bpf_sampler_unwind_stop_counts(sampler, stops) != 0)
		return 0;
	for (unsigned stop = 0; stop < UNWIND_STOP_COUNT; stop++)
		if (stop != UNWIND_STOP_NOT_WALKED)
			walks += stops[stop];
	return walks;
}

static double root_share(const struct sample_resolver *resolver)
{
	uint64_t walks = sample_resolve_native_walk_count(resolver);

	return walks ? (double)resolver->native_walks[UNWIND_STOP_ROOT] / (double)walks : 0.0;
}

static void write_native_metadata(struct session *session)
{
	const struct sample_resolver *resolver = &session->resolver;
	uint64_t bpf_stops[UNWIND_STOP_COUNT];
	struct unwind_cache_stats stats;
	char text[512];

	if (!session->native)
		return;
	native_stacks_stats(session, &stats);
	set_metadata_u64(session, "native_walks", sample_resolve_native_walk_count(resolver));
	snprintf(text, sizeof(text), "%.6f", root_share(resolver));
	set_metadata_all(session, "native_root_share", text);
	format_stops(resolver, "=", text, sizeof(text));
	set_metadata_all(session, "native_stops", text);
	set_metadata_u64(session, "native_merge_failures", resolver->merge_failures);
	snprintf(text, sizeof(text), "%zu/%zu", stats.peak_rows_used, stats.row_capacity);
	set_metadata_all(session, "unwind_rows", text);
	set_metadata_u64(session, "unwind_files", stats.tables_built);
	set_metadata_u64(session, "unwind_peak_files", stats.peak_files);
	set_metadata_u64(session, "unwind_build_ms", stats.build_us / 1000);
	format_failures(&stats, "=", text, sizeof(text));
	set_metadata_all(session, "unwind_failures", text);
	set_metadata_u64(session, "bpf_native_walks", bpf_native_walks(session->sampler, bpf_stops));
	format_counts(bpf_stops, UNWIND_STOP_COUNT, bpf_sampler_unwind_stop_name, NOT_A_STOP, "=", ",",
		      text, sizeof(text));
	set_metadata_all(session, "bpf_native_stops", text);
}

/* The parser worker that builds the tables, and the idle tables' bound. */
static void print_unwind_worker_summary(const struct unwind_cache_stats *stats)
{
	char idle[32], dropped[32];

	format_size((uint64_t)stats->idle_rows * sizeof(struct unwind_row), idle, sizeof(idle));
	format_size(stats->idle_dropped_rows * sizeof(struct unwind_row), dropped, sizeof(dropped));
	fprintf(stderr, "pybpfprof: unwind tables: %" PRIu64 " files read by the parser worker, %" PRIu64
			" lost to a worker that died, overran or lied (%" PRIu64 " overran), %" PRIu64
			" past its memory, %" PRIu64 " worker start%s%s; "
			"%zu idle (%s), %zu dropped past the idle limit (%s); %zu files without a table remembered, "
			"%zu forgotten past %zu\n",
		stats->parser.requests, stats->parser.lost_files, stats->parser.timeouts,
		stats->parser.out_of_memory, stats->parser.worker_starts, stats->parser.worker_starts == 1 ? "" : "s",
		stats->parser.start_failures ? " (some failed to start)" : "", stats->idle_files, idle,
		stats->idle_dropped, dropped, stats->idle_verdicts, stats->verdicts_forgotten, UNWIND_CACHE_IDLE_VERDICTS);
}

static void print_native_summary(const struct session *session)
{
	const struct sample_resolver *resolver = &session->resolver;
	uint64_t walks = sample_resolve_native_walk_count(resolver), bpf_stops[UNWIND_STOP_COUNT], bpf_walks;
	const struct unwind_maps *maps = bpf_sampler_unwind_maps(session->sampler);
	size_t chunks = unwind_maps_chunk_count(maps);
	struct unwind_cache_stats stats;
	char stops[512], bpf_stop_text[512], failures[512], size[32], held[32];

	if (!session->native)
		return;
	native_stacks_stats(session, &stats);
	format_stops(resolver, " ", stops, sizeof(stops));
	format_failures(&stats, " ", failures, sizeof(failures));
	format_size((uint64_t)stats.peak_rows_used * sizeof(struct unwind_row), size, sizeof(size));
	fprintf(stderr, "pybpfprof: native: %" PRIu64 " walks, %.1f%% reached the root%s%s%s; %" PRIu64
			" merges disagreed",
		walks, 100.0 * root_share(resolver), stops[0] ? " (stops: " : "",
		stops, stops[0] ? ")" : "", resolver->merge_failures);
	/* BPF's counts also hold the samples lost or dropped before they were resolved. */
	bpf_walks = bpf_native_walks(session->sampler, bpf_stops);
	format_counts(bpf_stops, UNWIND_STOP_COUNT, bpf_sampler_unwind_stop_name, NOT_A_STOP, " ", ",",
		      bpf_stop_text, sizeof(bpf_stop_text));
	if (bpf_walks != walks || strcmp(bpf_stop_text, stops) != 0)
		fprintf(stderr, "; BPF: %" PRIu64 " walks%s%s%s", bpf_walks, bpf_stop_text[0] ? " (stops: " : "",
			bpf_stop_text, bpf_stop_text[0] ? ")" : "");
	fputc('\n', stderr);
	format_size(unwind_maps_chunk_bytes(maps), held, sizeof(held));
	fprintf(stderr, "pybpfprof: unwind tables: %zu files (%zu at once), at most %zu/%zu rows (%s) in %zu chunk%s (%s), "
			"built in %.2f s, %zu reused by a later process, %zu given up for room, %" PRIu64 " maps re-read%s%s\n",
		stats.tables_built, stats.peak_files, stats.peak_rows_used, stats.row_capacity, size,
		chunks, chunks == 1 ? "" : "s", held,
		(double)stats.build_us / 1e6, stats.idle_reused, stats.idle_evicted,
		native_stacks_refreshes(session), failures[0] ? "; no table: " : "", failures);
	if (stats.builds_deferred)
		fprintf(stderr, "pybpfprof: unwind tables: %zu new files left for a later maps read "
				"(the build queue was full; %zu of them taken out for an earlier turn's)\n",
			stats.builds_deferred, stats.builds_yielded);
	if (stats.procs_refused)
		fprintf(stderr, "pybpfprof: unwind tables: %zu maps reads refused by the target budget "
				"(process mappings; the process's native walks stop there)\n",
			stats.procs_refused);
	if (stats.builds_cancelled)
		fprintf(stderr, "pybpfprof: unwind tables: %zu queued files not built, every process mapping them "
				"gone first\n",
			stats.builds_cancelled);
	print_unwind_worker_summary(&stats);
}

/* Samples whose native walk waited for a table (session/late_unwind.c): how many were unwound late
 * from their stack copies, and the ones that lost native frames, by cause. */
static uint64_t late_lost_total(const struct late_unwind_stats *late)
{
	uint64_t total = 0;

	for (unsigned i = 0; i < LATE_LOST_COUNT; i++)
		total += late->lost[i];
	return total;
}

static void format_late_losses(const struct late_unwind_stats *late, char *out, size_t len)
{
	size_t used = 0;

	out[0] = '\0';
	for (unsigned i = 0; i < LATE_LOST_COUNT && used < len; i++) {
		int wrote;

		if (!late->lost[i])
			continue;
		wrote = snprintf(out + used, len - used, "%s%s %" PRIu64, used ? ", " : "",
				 late_unwind_loss_name((enum late_unwind_loss)i), late->lost[i]);
		if (wrote < 0)
			break;
		used += (size_t)wrote;
	}
}

static void print_late_summary(const struct session *session, const uint64_t counters[PBP_CNT_MAX])
{
	struct late_unwind_stats late;
	char losses[512], peak[32];

	if (!session->native)
		return;
	late_unwind_stats(session, &late);
	format_late_losses(&late, losses, sizeof(losses));
	format_size(late.peak_bytes, peak, sizeof(peak));
	if (late.held_for_names)
		fprintf(stderr, "pybpfprof: late naming: %" PRIu64 " samples held for their files' symbols, %" PRIu64
				" of them written before the symbols came (frames named by offset)\n",
			late.held_for_names, late.names_missed);
	if (counters[PBP_CNT_COPIES_DROPPED])
		fprintf(stderr, "pybpfprof: late unwinding: %" PRIu64 " stack copies dropped, the ring buffer filling: their "
				"samples lost native frames\n",
			counters[PBP_CNT_COPIES_DROPPED]);
	fprintf(stderr, "pybpfprof: late unwinding: %" PRIu64 " stack copies from BPF, %" PRIu64 " received; %" PRIu64
			" samples unwound late (%.1f us each), %" PRIu64 " waited for a maps read, %" PRIu64
			" lost native frames%s%s%s; at most %s held; "
			"copies read to %.1f KiB on average, %.1f KiB at most (of %u)\n",
		counters[PBP_CNT_STACK_COPIES], late.held, late.unwound,
		late.held ? (double)late.unwind_ns / 1e3 / (double)late.held : 0.0, late.waited_for_maps,
		late_lost_total(&late),
		losses[0] ? " (" : "", losses, losses[0] ? ")" : "", peak,
		late.unwound ? (double)late.copy_used_sum / 1024.0 / (double)late.unwound : 0.0,
		(double)late.copy_used_max / 1024.0, PBP_STACK_COPY_BYTES / 1024u);
}

/* The parser worker's run (user/parser/): files read, files lost to it, and why. */
static void print_parser_summary(const struct session *session)
{
	struct symbolize_native_stats stats;
	char held[32], names[32];

	if (!session->resolver.native)
		return;
	symbolize_native_stats(session->resolver.native, &stats);
	if (!stats.worker_starts && !stats.worker_start_failures)
		return;
	format_size(stats.symbol_bytes, held, sizeof(held));
	format_size(stats.name_table_bytes, names, sizeof(names));
	fprintf(stderr, "pybpfprof: parser worker: %" PRIu64 " files read, %" PRIu64 " bad (%" PRIu64
			" lost to a worker that died, %" PRIu64 " overran, %" PRIu64 " past its memory); %" PRIu64
			" worker start%s%s; symbol tables %s, %" PRIu64 " dropped for room; names %s, %" PRIu64
			" past their budget, compacted %" PRIu64 " times; %" PRIu64
			" debug file candidates refused (not a regular file); maps: %" PRIu64 " reads asked of the maps thread, %"
			PRIu64 " taken from it, %" PRIu64 " read on the draining thread\n",
		stats.files_loaded, stats.files_bad, stats.worker_lost_files - stats.worker_timeouts,
		stats.worker_timeouts, stats.worker_out_of_memory, stats.worker_starts,
		stats.worker_starts == 1 ? "" : "s", stats.worker_start_failures ? " (some failed)" : "", held,
		stats.tables_evicted, names, stats.names_over_budget, stats.name_compactions,
		stats.debug_candidates_refused, stats.maps_asked, stats.maps_adopted, stats.maps_read_here);
}

/* Wall mode: the iterator passes run, and those skipped because the one before overran. */
/* asyncio: how many samples read as their task chain, the running tasks whose chain could not be
 * read (most ended before their record was drained), and by cause those put under the name BPF
 * copied at the sample alone: the chain unread or another task's (its address taken since),
 * and "<task ?>" (no name copied either). */
static void write_asyncio_metadata(struct session *session)
{
	const struct sample_resolver *resolver = &session->resolver;

	if (!resolver->task_samples && !resolver->task_chain_errors)
		return;
	set_metadata_u64(session, "asyncio_task_samples", resolver->task_samples);
	set_metadata_u64(session, "asyncio_chains_unread", resolver->task_chain_errors);
	set_metadata_u64(session, "asyncio_chains_of_another_task", resolver->task_chains_reused);
	set_metadata_u64(session, "asyncio_tasks_named_at_sample", resolver->task_names_copied);
	set_metadata_u64(session, "asyncio_task_names_unknown", resolver->task_names_unknown);
}

static void print_asyncio_summary(const struct session *session)
{
	const struct sample_resolver *resolver = &session->resolver;

	if (!resolver->task_samples && !resolver->task_chain_errors)
		return;
	fprintf(stderr, "pybpfprof: asyncio: %" PRIu64 " samples under their task chain, %" PRIu64
			" running tasks' chains unread (ended before their record was drained, or unreadable), %" PRIu64
			" read as another task's (its address taken since); %" PRIu64
			" of these named by the name copied at the sample alone, %" PRIu64 " as <task ?> (no name copied)\n",
		resolver->task_samples, resolver->task_chain_errors, resolver->task_chains_reused,
		resolver->task_names_copied, resolver->task_names_unknown);
}

static void write_wall_metadata(struct session *session)
{
	struct bpf_sampler_wall_stats stats;

	if (session_mode_on_ticks(session->options->mode))
		return;
	bpf_sampler_wall_stats(session->sampler, &stats);
	set_metadata_u64(session, "wall_passes", stats.passes);
	set_metadata_u64(session, "wall_late_passes", stats.late_passes);
}

/* Continuous mode: how many windows reached the endpoint, and what failed. */
static void print_push_summary(const struct session *session)
{
	const struct push_client_stats *stats = &session->push_stats;

	if (!session->options->push_url)
		return;
	fprintf(stderr,
		"pybpfprof: push: %" PRIu64 " of %" PRIu64 " windows delivered, %" PRIu64 " failed pushes, %" PRIu64
		" windows dropped\n",
		stats->delivered, stats->submitted, stats->failed_attempts, stats->dropped);
}

static void print_wall_summary(const struct session *session)
{
	struct bpf_sampler_wall_stats stats;

	if (session_mode_on_ticks(session->options->mode))
		return;
	bpf_sampler_wall_stats(session->sampler, &stats);
	fprintf(stderr, "pybpfprof: wall: %" PRIu64 " passes, %" PRIu64 " skipped (the one before overran), %" PRIu64
			" failed reads\n",
		stats.passes, stats.late_passes, stats.pass_errors);
}

/* One target's throttling, as the metadata and the summary tell it: when, the rate it had last
 * and the lowest, and why. */
static void describe_throttling(const struct session *session, const struct overhead_budget_target *target,
				char *out, size_t len)
{
	const struct overhead_budget *budget = &session->overhead;
	char until[64] = "";

	if (target->stride > 1 && target->ended_us)
		snprintf(until, sizeof(until), " until it ended at %.1f s", run_seconds_at(session, target->ended_us));
	else if (target->stride == 1)
		snprintf(until, sizeof(until), " to %.1f s", run_seconds_at(session, target->released_us));
	if (session->options->event) {
		/* An event's rate is the process's own: the strides are what is known. */
		snprintf(out, len,
			 "from %.1f s%s: 1 sample in %u %s, 1 in %u at the least; a walk took %.1f us, a skipped tick "
			 "%.2f us: every sample walked, %.1f%% of its CPU time (or of one CPU, if more)",
			 run_seconds_at(session, target->throttled_us), until, target->stride,
			 target->ended_us ? "at its end" : session->stop_us ? "at the end" : "now", target->max_stride,
			 target->walk_us, target->skip_us, 100.0 * target->unthrottled_share);
		return;
	}
	snprintf(out, len,
		 "from %.1f s%s: %.0f samples/s (1 tick in %u) %s, %.0f/s at the least (1 in %u); a walk took %.1f us, "
		 "a skipped tick %.2f us: every tick walked, %.1f%% of its CPU time (or of one CPU, if more)",
		 run_seconds_at(session, target->throttled_us), until, overhead_budget_rate_hz(budget, target),
		 target->stride, target->ended_us ? "at its end" : session->stop_us ? "at the end" : "now",
		 (double)budget->frequency_hz / (double)target->max_stride, target->max_stride, target->walk_us,
		 target->skip_us, 100.0 * target->unthrottled_share);
}

/* --max-overhead into the metadata: the budget, and every target it throttled ("throttled.PID"). */
static void write_budget_metadata(struct session *session)
{
	const struct overhead_budget *budget = &session->overhead;
	char value[256];

	if (!session->overhead_on)
		return;
	snprintf(value, sizeof(value), "%g%% of a CPU per process", 100.0 * budget->share);
	set_metadata_all(session, "max_overhead", value);
	set_metadata_u64(session, "throttled_processes", overhead_budget_throttled_count(budget) + budget->forgotten);
	for (size_t i = 0; i < budget->count; i++) {
		const struct overhead_budget_target *target = &budget->targets[i];
		char key[32];

		if (!target->throttled_us)
			continue;
		snprintf(key, sizeof(key), "throttled.%d", (int)target->pid);
		describe_throttling(session, target, value, sizeof(value));
		set_metadata_all(session, key, value);
	}
}

static void write_end_metadata(struct session *session, uint64_t counters[PBP_CNT_MAX])
{
	struct pf_run_totals totals = {
		.duration_us = sampling_end_us(session) - (session->window_start_us ? session->window_start_us : session->start_us),
		.samples = session->samples_written - session->window_first_sample,
		.lost_samples = counters[PBP_CNT_LOST],
		.truncated_stacks = counters[PBP_CNT_TRUNCATED],
		.read_faults = counters[PBP_CNT_READ_FAULTS],
		.unresolved_frames = session->resolver.unresolved_frames,
	};

	char read_errors[512];

	for (size_t i = 0; i < session->writer_count; i++)
		note_write_error(session, i, pf_writer_set_run_totals(session->writers[i], &totals));
	format_read_errors(session->sampler, "=", ",", read_errors, sizeof(read_errors));
	set_metadata_all(session, "bpf_read_errors", read_errors);
	set_metadata_u64(session, "proc_events_lost", counters[PBP_CNT_PROC_EVENTS_LOST]);
	set_metadata_u64(session, "ring_buffer_bytes", bpf_sampler_ring_bytes(session->sampler));
	write_native_metadata(session);
	write_wall_metadata(session);
	write_asyncio_metadata(session);
	write_budget_metadata(session);
}

/* What the outputs hold for the processes they have not forgotten (MOJO's definitions). */
static size_t outputs_held_bytes(const struct session *session)
{
	size_t bytes = 0;

	for (size_t i = 0; i < session->writer_count; i++)
		bytes += pf_writer_held_bytes(session->writers[i]);
	return bytes;
}

/* What the budgets and the clean-ups did, when they did anything: a long or hostile run's account. */
static void print_budget_summary(const struct session *session, const uint64_t counters[PBP_CNT_MAX],
				 size_t outputs_held)
{
	struct symbolize_py_stats python;
	uint64_t swept = bpf_sampler_reconciled_count(session->sampler);

	uint64_t frames_past_budget = 0;

	for (size_t i = 0; i < session->writer_count; i++)
		frames_past_budget += pf_writer_frames_past_budget(session->writers[i]);
	symbolize_py_cache_stats(session->resolver.python, &python);
	if (!counters[PBP_CNT_PROC_EVENTS_LOST] && !swept && !session->targets.forgotten && !python.evicted &&
	    !python.lines_over_budget && !python.names_over_budget && !frames_past_budget)
		return;
	fprintf(stderr, "pybpfprof: budgets: %" PRIu64 " process notices lost, %" PRIu64 " stale BPF entries swept, "
			"%" PRIu64 " exited processes forgotten; code objects: %" PRIu64 " evicted, %" PRIu64
			" line tables and %" PRIu64 " names over budget, names compacted %" PRIu64
			" times; output tables: %zu KB held, %" PRIu64 " frames written past their bound\n",
		counters[PBP_CNT_PROC_EVENTS_LOST], swept, session->targets.forgotten, python.evicted,
		python.lines_over_budget, python.names_over_budget, python.name_compactions, (outputs_held + 1023) / 1024,
		frames_past_budget);
}

/* -v: the one budget of what targets make us hold (util/target_budget.h), store by store. */
static void print_target_budget_summary(const struct session *session)
{
	struct target_budget_store_stats stores[TARGET_BUDGET_MAX_STORES];
	int count;
	char held[32], limit[32], peak[32];

	if (!session->budget)
		return;
	count = target_budget_stats(session->budget, stores);
	format_size(target_budget_held(session->budget), held, sizeof(held));
	format_size(target_budget_limit(session->budget), limit, sizeof(limit));
	format_size(target_budget_peak(session->budget), peak, sizeof(peak));
	fprintf(stderr, "pybpfprof: target budget: %s held of %s (peak %s)", held, limit, peak);
	for (int i = 0; i < count; i++) {
		format_size(stores[i].held, held, sizeof(held));
		format_size(stores[i].peak, peak, sizeof(peak));
		fprintf(stderr, "%s %s %s (peak %s), %" PRIu64 " evictions, %" PRIu64 " refused%s", i ? ";" : ":",
			stores[i].name, held, peak, stores[i].evictions, stores[i].refusals,
			stores[i].fixed ? ", a fixed cap outside the limit" : "");
	}
	fputc('\n', stderr);
}

/* Containers shown in the summary, the busiest first. */
#define SUMMARY_CONTAINERS 10

/* Whole-host runs across containers: processes and samples per cgroup, when there are several. */
static void print_container_summary(const struct session *session)
{
	size_t count = intern_count(&session->containers), shown = 0;
	bool *listed;

	if (count < 2 || !(listed = calloc(count, sizeof(*listed))))
		return;
	fprintf(stderr, "pybpfprof: by container (cgroup):\n");
	for (; shown < count && shown < SUMMARY_CONTAINERS; shown++) {
		size_t busiest = count, len = 0;
		char path[PROC_IDENTITY_CGROUP_MAX];
		const char *cgroup;

		const struct container_counts *counts = session->container_counts;

		for (size_t i = 0; i < count; i++)
			if (!listed[i] && (busiest == count || counts[i].samples > counts[busiest].samples))
				busiest = i;
		listed[busiest] = true;
		cgroup = intern_key(&session->containers, (uint32_t)busiest, &len);
		fprintf(stderr, "pybpfprof:   %" PRIu64 " samples from %" PRIu64 " process%s in ", counts[busiest].samples,
			counts[busiest].processes, counts[busiest].processes == 1 ? "" : "es");
		snprintf(path, sizeof(path), "%.*s", (int)len, cgroup);
		/* the path is the target's to choose: shown escaped */
		fput_escaped(stderr, len ? path : "(unknown)");
		fputc('\n', stderr);
	}
	if (shown < count)
		fprintf(stderr, "pybpfprof:   ... and %zu more\n", count - shown);
	free(listed);
}

/* What finding the runtimes cost on a whole host: each distinct file is read once. */
static void print_discovery_summary(const struct session *session)
{
	struct py_runtime_file_stats stats;

	if (!session->system_wide)
		return;
	py_runtime_file_cache_stats(session->targets.runtime_files, &stats);
	fprintf(stderr, "pybpfprof: discovery: %" PRIu64 " files examined (%" PRIu64 " with a Python runtime) for %"
			PRIu64 " mappings in %" PRIu64 " requests to the parser worker; %" PRIu64 " verdicts evicted; %"
			PRIu64 " files bad (the parser worker died on them or overran); %" PRIu64
			" left unread (past a process's share)\n",
		stats.examined, stats.runtimes, stats.lookups, stats.requests, stats.evicted, stats.bad, stats.skipped);
}

/* What the loop that drains the ring spent per record, and what it handed to discovery's thread
 * (session/discovery.c) instead of reading it itself. */
static void print_drain_summary(const struct session *session)
{
	struct discovery_stats found;

	discovery_stats(session, &found);
	fprintf(stderr, "pybpfprof: drain: %" PRIu64 " records, %.1f us each on average; the longest drain %.1f ms"
			" (%" PRIu64 " records)\n",
		session->drained_records,
		session->drained_records ? (double)session->drain_us / (double)session->drained_records : 0.0,
		(double)session->longest_drain_us / 1e3, session->longest_drain_records);
	if (bpf_sampler_consumes_cut(session->sampler))
		fprintf(stderr, "pybpfprof: drain: %" PRIu64 " drains stopped at their time limit, the samples coming faster"
				" than they were resolved (what the ring could not hold is counted lost)\n",
			bpf_sampler_consumes_cut(session->sampler));
	if (session->native) {
		struct native_maps_stats maps;

		native_stacks_maps_stats(session, &maps);
		fprintf(stderr, "pybpfprof: maps thread: %" PRIu64 " reads asked (%" PRIu64 " more served by one on its way), %"
				PRIu64 " applied (%" PRIu64 " for processes changed since), %" PRIu64 " put off, %" PRIu64
				" put off past %d reads a second of one process, at most %" PRIu64
				" on their way; %.2f s reading, %.1f ms from ask to answer at most; %" PRIu64
				" processes given new tables without a read\n",
			maps.asked, maps.merged, maps.applied, maps.cancelled, maps.put_off, maps.paced,
			NATIVE_MAPS_READS_PER_PID_PER_S, maps.peak_asked, (double)maps.busy_us / 1e6,
			(double)maps.max_wait_us / 1e3, maps.patched);
	}
	if (!found.asked[0] && !found.asked[1])
		return;
	fprintf(stderr, "pybpfprof: discovery thread: %" PRIu64 " runtime and %" PRIu64 " asyncio lookups, %" PRIu64
			" answered (%" PRIu64 " for processes changed since), %" PRIu64 " put off (queue full), at most %"
			PRIu64 " queued; %.2f s reading, %.1f ms from ask to answer at most\n",
		found.asked[0], found.asked[1], found.answered, found.stale, found.deferred, found.peak_queued,
		(double)found.busy_us / 1e6, (double)found.max_latency_us / 1e3);
}

/* The kernel's run time of the sample program over every run, then BPF's own timing of the
 * target samples and of the runs that found none (ticks on other processes, other tasks). */
static void print_bpf_cost(uint64_t run_ns, uint64_t runs, const uint64_t counters[PBP_CNT_MAX])
{
	uint64_t samples = counters[PBP_CNT_SAMPLES];
	uint64_t other_runs = runs > samples ? runs - samples : 0;
	uint64_t copies = counters[PBP_CNT_STACK_COPIES];

	fprintf(stderr, "pybpfprof: bpf: %" PRIu64 " runs, %.0f ns per run; %" PRIu64 " other runs, %.0f ns each; %" PRIu64
			" target samples, %" PRIu64 " wakeups, %.0f ns per target sample\n",
		runs, runs ? (double)run_ns / (double)runs : 0.0, other_runs,
		other_runs ? (double)counters[PBP_CNT_OTHER_NS] / (double)other_runs : 0.0, samples,
		counters[PBP_CNT_WAKEUPS], samples ? (double)counters[PBP_CNT_TARGET_NS] / (double)samples : 0.0);
	if (copies)
		fprintf(stderr, "pybpfprof: bpf: %" PRIu64 " stack copies, %.0f ns each (the copy and its record)\n", copies,
			(double)counters[PBP_CNT_COPY_NS] / (double)copies);
}

/* What was sampled, by default: the samples, the Python processes and threads, the samples lost. */
static void print_totals(const struct session *session, const uint64_t counters[PBP_CNT_MAX], double seconds)
{
	size_t processes = target_set_python_count(&session->targets);
	uint64_t threads = session->threads.python_threads;

	fprintf(stderr, "pybpfprof: %" PRIu64 " samples in %.1f s from %zu Python process%s, %" PRIu64 " thread%s; %" PRIu64
			" lost\n",
		session->samples_written, seconds, processes, plural(processes, "es"), threads, plural(threads, "s"),
		counters[PBP_CNT_LOST]);
}

/* Appends "; " and an item to a line of problems (cut short if it runs out of room). */
static void add_problem(char *line, size_t size, const char *format, ...)
{
	size_t used = strlen(line);
	va_list args;

	if (used + 2 >= size)
		return;
	if (used) {
		memcpy(line + used, "; ", 3);
		used += 2;
	}
	va_start(args, format);
	vsnprintf(line + used, size - used, format, args);
	va_end(args);
}

/* A few frames at start-up (code objects not yet whole) are no problem; past this share of the samples they are. */
#define UNRESOLVED_PROBLEM_PER_SAMPLES 100

/*
 * One line, by default, on whatever made the profile less than whole, each with what to do
 * about it where there is something; nothing when all went well. The counts' details (the
 * causes of native walks that stopped short, the budgets) are -v's.
 */
static void print_problems(struct session *session, const uint64_t counters[PBP_CNT_MAX])
{
	const struct push_client_stats *push = &session->push_stats;
	uint64_t unresolved = session->resolver.unresolved_frames, read_errors[PBP_ERR_COUNT] = { 0 }, failed_reads = 0;
	struct late_unwind_stats late;
	char line[1024] = "";

	if (counters[PBP_CNT_LOST])
		add_problem(line, sizeof(line), "%" PRIu64 " sample%s lost, the ring buffer full (a lower -F loses none)",
			    counters[PBP_CNT_LOST], plural(counters[PBP_CNT_LOST], "s"));
	/* Drains cut short: the samples came faster than they were resolved. What the ring then
	 * dropped is counted lost above; what it still held when the run ended is not in the file. */
	if (bpf_sampler_consumes_cut(session->sampler))
		add_problem(line, sizeof(line),
			    "resolving fell behind the samples (%" PRIu64 " drain%s stopped at their time limit; the last "
			    "samples may be missing)",
			    bpf_sampler_consumes_cut(session->sampler), plural(bpf_sampler_consumes_cut(session->sampler), "s"));
	if (counters[PBP_CNT_TRUNCATED])
		add_problem(line, sizeof(line), "%" PRIu64 " stack%s cut at the root side (too deep)",
			    counters[PBP_CNT_TRUNCATED], plural(counters[PBP_CNT_TRUNCATED], "s"));
	if (counters[PBP_CNT_STACK_CHANGING])
		add_problem(line, sizeof(line),
			    "%" PRIu64 " stack%s of running threads changed under every read (leaf side shown as %s)",
			    counters[PBP_CNT_STACK_CHANGING], plural(counters[PBP_CNT_STACK_CHANGING], "s"),
			    SAMPLE_RESOLVE_CHANGING_NAME);
	if (unresolved && unresolved * UNRESOLVED_PROBLEM_PER_SAMPLES >= session->samples_written)
		add_problem(line, sizeof(line), "%" PRIu64 " Python frame%s unresolved", unresolved, plural(unresolved, "s"));
	if (bpf_sampler_error_counts(session->sampler, read_errors) == 0)
		for (unsigned i = 0; i < PBP_ERR_COUNT; i++)
			failed_reads += i == PBP_ERR_NONE ? 0 : read_errors[i];
	if (failed_reads)
		add_problem(line, sizeof(line), "%" PRIu64 " failed read%s of target memory", failed_reads,
			    plural(failed_reads, "s"));
	if (session->resolver.kernel_namer_errors)
		add_problem(line, sizeof(line), "%" PRIu64 " kernel frame%s named by address",
			    session->resolver.kernel_namer_errors, plural(session->resolver.kernel_namer_errors, "s"));
	if (session->resolver.merge_failures)
		add_problem(line, sizeof(line), "%" PRIu64 " stack%s whose native and Python frames disagreed",
			    session->resolver.merge_failures, plural(session->resolver.merge_failures, "s"));
	if (session->resolver.native) {
		struct symbolize_native_stats parsed;

		symbolize_native_stats(session->resolver.native, &parsed);
		if (parsed.files_bad)
			add_problem(line, sizeof(line), "%" PRIu64 " file%s left unnamed by the parser worker",
				    parsed.files_bad, plural(parsed.files_bad, "s"));
	}
	late_unwind_stats(session, &late);
	if (late_lost_total(&late) + counters[PBP_CNT_COPIES_DROPPED]) {
		uint64_t lost = late_lost_total(&late) + counters[PBP_CNT_COPIES_DROPPED];
		char losses[512];

		format_late_losses(&late, losses, sizeof(losses));
		add_problem(line, sizeof(line), "%" PRIu64 " sample%s lost native frames waiting for a table (%s%s%s)", lost,
			    plural(lost, "s"), losses, counters[PBP_CNT_COPIES_DROPPED] && losses[0] ? ", " : "",
			    counters[PBP_CNT_COPIES_DROPPED] ? "stack copy dropped, ring filling" : "");
	}
	if (counters[PBP_CNT_PROC_EVENTS_LOST])
		add_problem(line, sizeof(line), "%" PRIu64 " process notice%s lost", counters[PBP_CNT_PROC_EVENTS_LOST],
			    plural(counters[PBP_CNT_PROC_EVENTS_LOST], "s"));
	/* A push that delivered nothing is an error of its own (report_finish). */
	if (session->options->push_url && push->delivered && push->delivered < push->submitted)
		add_problem(line, sizeof(line), "%" PRIu64 " of %" PRIu64 " windows pushed", push->delivered,
			    push->submitted);
	if (line[0])
		fprintf(stderr, "pybpfprof: problems: %s (-v: details)\n", line);
}

/* A path as a shell reads it: as it is when it holds nothing special, else single-quoted. */
static void print_shell_word(const char *path)
{
	char shown[PATH_MAX + 64];

	text_escaped(shown, sizeof(shown), path);
	if (shown[0] && strspn(shown, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./+-,:=@%") ==
				strlen(shown)) {
		fputs(shown, stderr);
		return;
	}
	fputc('\'', stderr);
	for (const char *c = shown; *c; c++) {
		if (*c == '\'')
			fputs("'\\''", stderr);
		else
			fputc(*c, stderr);
	}
	fputc('\'', stderr);
}

/* How a file of this format is opened: the command before its path, and after it. */
static void open_command(const char *format, const char **before, const char **after)
{
	*after = "";
	if (strcmp(format, "svg") == 0) {
		*before = "open ";
		*after = " in a browser";
	} else if (strcmp(format, "pprof") == 0) {
		*before = "go tool pprof -http=: ";
	} else if (strcmp(format, "speedscope") == 0) {
		*before = "drop ";
		*after = " on https://www.speedscope.app";
	} else {
		*before = "pybpfprof top "; /* MOJO, Tachyon, collapsed: ours to read */
	}
}

/* The last line, by default: how to open what was written (the last window's files, in windows). */
static void print_next(struct session *session)
{
	const struct session_options *options = session->options;

	if (!options->output_count || session->write_error || !session->samples_written)
		return;
	fputs("pybpfprof: next:", stderr);
	for (size_t i = 0; i < options->output_count; i++) {
		const char *before, *after;

		open_command(options->outputs[i].format->name, &before, &after);
		fprintf(stderr, "%s %s", i ? ";" : "", before);
		print_shell_word(output_path(session, i));
		fputs(after, stderr);
	}
	fputc('\n', stderr);
}

/*
 * -v: the processes sampled while they ran no Python (a launcher's shells: a pyenv shim runs
 * dozens), apart from the Python ones the totals count: their samples, processes (main
 * threads seen) and names.
 */
static void print_other_processes(const struct session *session)
{
	struct threads_seen_name names[THREADS_SEEN_OTHER_NAMES];
	size_t name_count;
	bool more;
	uint64_t processes;

	if (!session->other_samples)
		return;
	processes = threads_seen_other_processes(&session->threads, names, &name_count, &more);
	fprintf(stderr, "pybpfprof: also %" PRIu64 " sample%s of %" PRIu64 " process%s running no Python",
		session->other_samples, plural(session->other_samples, "s"), processes, plural(processes, "es"));
	for (size_t i = 0; i < name_count; i++) {
		fputs(i ? ", " : " (", stderr);
		fput_escaped(stderr, names[i].name); /* the target's to choose */
		fprintf(stderr, " x%" PRIu64, names[i].processes);
	}
	fputs(!name_count ? "\n" : more ? ", ...)\n" : ")\n", stderr);
}

/* -v: every count of the run, zeros included, and why samples were lost. */
static void print_counts(const struct session *session, const uint64_t counters[PBP_CNT_MAX])
{
	struct symbolize_py_stats python;
	char read_errors[512];

	symbolize_py_cache_stats(session->resolver.python, &python);
	format_read_errors(session->sampler, " ", ", ", read_errors, sizeof(read_errors));
	fprintf(stderr, "pybpfprof: counts: %" PRIu64 " lost; %" PRIu64 " truncated stacks; %" PRIu64
			" unresolved frames; %" PRIu64 " code objects gone before they were read, named from"
			" BPF's notes (lines unknown)%s%s\n",
		counters[PBP_CNT_LOST], counters[PBP_CNT_TRUNCATED], session->resolver.unresolved_frames, python.noted,
		read_errors[0] ? "; failed reads: " : "", read_errors);
	if (counters[PBP_CNT_STACK_REREADS])
		fprintf(stderr, "pybpfprof: %" PRIu64 " Python stack%s read again, their thread running meanwhile; %" PRIu64
				" never read the same twice\n",
			counters[PBP_CNT_STACK_REREADS], plural(counters[PBP_CNT_STACK_REREADS], "s"),
			counters[PBP_CNT_STACK_CHANGING]);
	if (counters[PBP_CNT_LOST])
		fprintf(stderr, "pybpfprof: the %zu KiB ring buffer was full %" PRIu64 " time%s: a lower -F, or fewer "
				"targets, loses none\n",
			bpf_sampler_ring_bytes(session->sampler) >> 10, counters[PBP_CNT_LOST],
			counters[PBP_CNT_LOST] == 1 ? "" : "s");
	if (session->resolver.kernel_namer_errors)
		fprintf(stderr, "pybpfprof: %" PRIu64 " lookups of kernel symbols failed: their frames show addresses\n",
			session->resolver.kernel_namer_errors);
}

/* --bpf-stats: what the profiler itself cost. */
static void print_costs(const struct session *session, const uint64_t counters[PBP_CNT_MAX], double seconds)
{
	uint64_t run_ns = 0, runs = 0;
	double sampling_cpu_s = report_cpu_seconds() - session->setup_cpu_s;
	struct bpf_sampler_loader_cost loader;

	bpf_sampler_prog_stats(session->sampler, &run_ns, &runs);
	bpf_sampler_loader_cost(session->sampler, &loader);
	print_bpf_cost(run_ns, runs, counters);
	/* starting includes the loader child's CPU: the load was ours before it moved there */
	fprintf(stderr, "pybpfprof: cpu: %.3f s user+sys while sampling (%.2f%% of a core), %.3f s to start\n",
		sampling_cpu_s, seconds > 0 ? 100.0 * sampling_cpu_s / seconds : 0.0,
		session->setup_cpu_s + loader.cpu_s);
	fprintf(stderr, "pybpfprof: memory: peak resident %.1f MiB; the BPF loader (a child, ended before sampling) "
			"%.1f MiB, %.3f s cpu\n",
		(double)report_peak_resident_kib() / 1024.0, (double)loader.peak_kib / 1024.0, loader.cpu_s);
	fprintf(stderr, "pybpfprof: ring buffer: %zu KiB\n", bpf_sampler_ring_bytes(session->sampler) >> 10);
	if (session->first_sample_us)
		fprintf(stderr, "pybpfprof: first sample written %.1f ms after the start\n",
			(double)(session->first_sample_us - session->begin_us) / 1000.0);
}

/*
 * After the "wrote" lines: by default the totals, one line on what went wrong (if anything)
 * and how to open the files; with -v or --bpf-stats every internal count before the last.
 */
/* Throttled processes the summary names; the metadata has them all. */
#define SUMMARY_THROTTLED 10

/* --max-overhead, by default: which processes it throttled, when, and to what rate. */
static void print_budget_throttling(const struct session *session)
{
	const struct overhead_budget *budget = &session->overhead;
	size_t throttled = overhead_budget_throttled_count(budget) + budget->forgotten, shown = 0;
	char line[256];

	if (session->overhead_on && budget->set_errors)
		fprintf(stderr, "pybpfprof: --max-overhead: %" PRIu64 " stride%s not taken by BPF (those processes kept "
				"their rate)\n",
			budget->set_errors, plural(budget->set_errors, "s"));
	if (!session->overhead_on || !throttled)
		return;
	fprintf(stderr, "pybpfprof: --max-overhead %g%%: %zu process%s throttled (its samples weigh the ticks skipped, so "
			"shares and totals hold):\n",
		100.0 * budget->share, throttled, plural(throttled, "es"));
	for (size_t i = 0; i < budget->count && shown < SUMMARY_THROTTLED; i++) {
		const struct overhead_budget_target *target = &budget->targets[i];

		if (!target->throttled_us)
			continue;
		describe_throttling(session, target, line, sizeof(line));
		fprintf(stderr, "pybpfprof:   pid %d (", (int)target->pid);
		fput_escaped(stderr, target->name[0] ? target->name : "?"); /* the target's to choose */
		fprintf(stderr, ") %s\n", line);
		shown++;
	}
	if (shown < throttled)
		fprintf(stderr, "pybpfprof:   ... and %zu more (the file's metadata names all but the %" PRIu64
				" that ended earliest)\n",
			throttled - shown, budget->forgotten);
}

static void print_summary(struct session *session, uint64_t counters[PBP_CNT_MAX], size_t outputs_held)
{
	double seconds = (double)(sampling_end_us(session) - session->start_us) / 1e6;

	print_totals(session, counters, seconds);
	print_budget_throttling(session);
	print_problems(session, counters);
	if (session->options->verbose || session->options->bpf_stats) {
		print_counts(session, counters);
		print_other_processes(session);
		print_native_summary(session);
		print_late_summary(session, counters);
		print_parser_summary(session);
		print_wall_summary(session);
		print_asyncio_summary(session);
		print_container_summary(session);
		print_discovery_summary(session);
		print_drain_summary(session);
		print_push_summary(session);
		print_budget_summary(session, counters, outputs_held);
		print_target_budget_summary(session);
	}
	if (session->options->bpf_stats)
		print_costs(session, counters, seconds);
	print_next(session);
}

/* Ends every output: its closing metadata, then close (rename into place). */
static int close_writers(struct session *session, uint64_t counters[PBP_CNT_MAX])
{
	int status = EXIT_STATUS_OK;

	write_end_metadata(session, counters);
	for (size_t i = 0; i < session->writer_count; i++) {
		const char *path = output_path(session, i);
		int err = pf_writer_close(session->writers[i]);
		struct stat info;
		char size[32];

		/* Some formats are written whole at close: measure the file, not the stream. */
		format_size(stat(path, &info) == 0 ? (uint64_t)info.st_size : 0, size, sizeof(size));
		/* A writer that failed during the run fails again here: its error is said once, below. */
		if (err && !(session->write_error && i == session->write_error_writer)) {
			report_error("%s: cannot finish the file: %s", path, strerror(-err));
			status = EXIT_STATUS_OUTPUT;
		} else if (err) {
			status = EXIT_STATUS_OUTPUT;
		} else if (!session->options->quiet) {
			fprintf(stderr, "pybpfprof: wrote %s (%s)\n", path, size);
		}
	}
	session->writer_count = 0;
	return status;
}

int report_next_file_window(struct session *session, const uint64_t counters[PBP_CNT_MAX])
{
	uint64_t copy[PBP_CNT_MAX];
	int status, err;

	memcpy(copy, counters, sizeof(copy));
	session->stop_us = clock_monotonic_us();
	status = close_writers(session, copy);
	session->stop_us = 0;
	session->window_index++;
	session->window_start_us = clock_monotonic_us();
	session->window_first_sample = session->samples_written;
	err = report_open_writers(session);
	if (err)
		return EXIT_STATUS_OUTPUT;
	report_start_metadata(session);
	session->python_version_written = false;
	for (size_t i = 0; i < session->targets.count; i++)
		if (session->targets.items[i].state == TARGET_READY) {
			report_python_version(session, &session->targets.items[i]);
			break;
		}
	return status;
}

/* A continuous run that delivered nothing failed, even if it sampled well: a supervisor must notice. */
static int push_status(const struct session *session)
{
	const struct push_client_stats *stats = &session->push_stats;

	if (!session->options->push_url || !stats->submitted || stats->delivered)
		return EXIT_STATUS_OK;
	report_error("--push: none of the %" PRIu64 " windows reached %s", stats->submitted, session->options->push_url);
	return EXIT_STATUS_PUSH;
}

int report_finish(struct session *session, uint64_t counters[PBP_CNT_MAX])
{
	/* Taken before the outputs close and free what they hold. */
	size_t outputs_held = outputs_held_bytes(session);
	int status = close_writers(session, counters);

	if (!session->options->quiet)
		print_summary(session, counters, outputs_held);
	if (session->write_error) {
		report_error("%s", session->write_error_text.text);
		status = EXIT_STATUS_OUTPUT;
	}
	if (status == EXIT_STATUS_OK)
		status = push_status(session);
	return status;
}
