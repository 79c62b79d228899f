// SPDX-License-Identifier: MIT
/*
 * `pybpfprof top FILE`: the functions that took the time, by own (self)
 * time and by total (inclusive) time, from any format we read.
 */
#include "cli/commands.h"
#include "cli/live_top.h"
#include "cli/options.h"
#include "cli/top_states.h"
#include "formats/format_registry.h"
#include "profile/profile.h"
#include "sampler/perf_events.h"
#include "util/exit_status.h"
#include "util/array.h"
#include "util/intern.h"
#include "util/text_quote.h"

#include <argp.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct function_weight {
	uint64_t self;
	uint64_t total;
	/* A memory profile's frees (its negative weights), in bytes, apart: where memory was released. */
	uint64_t released_self;
	uint64_t released_total;
	uint64_t last_sample; /* sample number that last added to total: count a function once per stack */
};

struct function_weights {
	struct intern_table names;           /* "name (file)" or "name [kernel]" -> id */
	struct function_weight *by_function; /* by id */
	size_t function_count;
	size_t function_capacity;
	uint64_t grand_total;
	uint64_t grand_released;
	uint64_t samples;
};

static int weights_reserve(struct function_weights *weights, size_t id)
{
	if (ARRAY_RESERVE(weights->by_function, weights->function_capacity, id + 1))
		return -ENOMEM;
	while (weights->function_count <= id)
		weights->by_function[weights->function_count++] =
			(struct function_weight){ .last_sample = UINT64_MAX };
	return 0;
}

static int64_t function_id(struct function_weights *weights, const struct pf_frame *frame)
{
	char label[1024];
	int len = pf_frame_function_label(frame, label, sizeof(label));

	if (len < 0)
		return len;
	return intern_add(&weights->names, label, (size_t)len, NULL);
}

/* Frees (negative) take nothing: a memory profile ranks where bytes were allocated, and its
 * releases apart. */
static uint64_t sample_weight(const struct pf_sample *sample)
{
	int64_t signed_weight = pf_sample_weight(sample);

	return signed_weight > 0 ? (uint64_t)signed_weight : 0;
}

static uint64_t sample_released(const struct pf_sample *sample)
{
	int64_t signed_weight = pf_sample_weight(sample);

	return signed_weight < 0 ? -(uint64_t)signed_weight : 0;
}

static int add_sample(struct function_weights *weights, const struct pf_sample *sample)
{
	uint64_t weight = sample_weight(sample), released = sample_released(sample);

	for (size_t i = 0; i < sample->frame_count; i++) {
		int64_t id = function_id(weights, &sample->frames[i]);
		struct function_weight *function;

		if (id < 0 || weights_reserve(weights, (size_t)id))
			return -ENOMEM;
		function = &weights->by_function[id];
		if (function->last_sample != weights->samples) {
			function->total += weight;
			function->released_total += released;
			function->last_sample = weights->samples;
		}
		if (i + 1 == sample->frame_count) {
			function->self += weight;
			function->released_self += released;
		}
	}
	weights->grand_total += weight;
	weights->grand_released += released;
	weights->samples++;
	return 0;
}

enum ranking { RANK_SELF, RANK_TOTAL, RANK_RELEASED_SELF, RANK_RELEASED_TOTAL };

static const struct function_weight *sort_functions;
static const struct intern_table *sort_names;
static enum ranking sort_ranking;

static uint64_t ranked_weight(const struct function_weight *function, enum ranking ranking)
{
	switch (ranking) {
	case RANK_SELF:
		return function->self;
	case RANK_TOTAL:
		return function->total;
	case RANK_RELEASED_SELF:
		return function->released_self;
	default:
		return function->released_total;
	}
}

/* The weight the ranking falls back on for a tie: the other of own and total. */
static enum ranking tie_ranking(enum ranking ranking)
{
	switch (ranking) {
	case RANK_SELF:
		return RANK_TOTAL;
	case RANK_TOTAL:
		return RANK_SELF;
	case RANK_RELEASED_SELF:
		return RANK_RELEASED_TOTAL;
	default:
		return RANK_RELEASED_SELF;
	}
}

/* Heaviest first; ties by the other weight, then by name: the same profile read from any format
 * (whose readers meet the functions in different orders) ranks the same. */
static int compare_ids(const void *a, const void *b)
{
	uint32_t ida = *(const uint32_t *)a, idb = *(const uint32_t *)b;
	enum ranking rankings[2] = { sort_ranking, tie_ranking(sort_ranking) };

	for (size_t i = 0; i < 2; i++) {
		uint64_t wa = ranked_weight(&sort_functions[ida], rankings[i]);
		uint64_t wb = ranked_weight(&sort_functions[idb], rankings[i]);

		if (wa != wb)
			return wa < wb ? 1 : -1;
	}
	size_t la, lb;
	const void *na = intern_key(sort_names, ida, &la), *nb = intern_key(sort_names, idb, &lb);
	int order = memcmp(na, nb, la < lb ? la : lb);

	return order ? order : la < lb ? -1 : la > lb ? 1 : 0;
}

static void print_ranking(const struct function_weights *weights, const char *title,
			  enum ranking ranking, size_t limit)
{
	size_t count = intern_count(&weights->names);
	uint32_t *ids = malloc(count * sizeof(*ids));
	bool released = ranking == RANK_RELEASED_SELF || ranking == RANK_RELEASED_TOTAL;
	uint64_t whole = released ? weights->grand_released : weights->grand_total;

	if (!ids)
		return;
	for (size_t i = 0; i < count; i++)
		ids[i] = (uint32_t)i;
	sort_functions = weights->by_function;
	sort_names = &weights->names;
	sort_ranking = ranking;
	qsort(ids, count, sizeof(*ids), compare_ids);
	printf("%s\n", title);
	for (size_t i = 0; i < count && i < limit; i++) {
		uint64_t weight = ranked_weight(&weights->by_function[ids[i]], ranking);

		if (weight == 0)
			break;
		/* Names come from the target (or the file): nothing in them may drive the terminal. */
		printf("  %6.2f%%  ", 100.0 * (double)weight / (double)whole);
		fput_escaped(stdout, (const char *)intern_key(&weights->names, ids[i], NULL));
		putchar('\n');
	}
	free(ids);
}

/* What a file's samples measure, by its mode: the rankings' headings. */
struct rank_headings {
	const char *own, *total;
};

static struct rank_headings headings_of(const char *mode)
{
	if (!mode)
		return (struct rank_headings){ "own share (the leaf function):", "total share (with callees):" };
	if (!strcmp(mode, "cpu"))
		return (struct rank_headings){ "own time (where the CPU was):", "total time (with callees):" };
	if (!strcmp(mode, "wall"))
		return (struct rank_headings){ "own wall time (where the threads were, running or waiting):",
					       "total wall time (with callees):" };
	if (!strcmp(mode, "gil"))
		return (struct rank_headings){ "own time holding the GIL (where the GIL's holder was):",
					       "total time holding the GIL (with callees):" };
	if (!strcmp(mode, "exception"))
		return (struct rank_headings){ "own time raising or handling exceptions (where the CPU was):",
					       "total time raising or handling exceptions (with callees):" };
	if (!strcmp(mode, "memory"))
		return (struct rank_headings){ "own memory growth (where bytes were allocated):",
					       "total memory (with callees):" };
	return (struct rank_headings){ "own time (where the threads were, running or waiting):",
				       "total time (with callees):" };
}

/* An --event file's headings: what its weights count. Only the names this build knows are shown
 * (the metadata is the file's to fill, and a terminal is no place for its bytes). A syscall
 * file's weight is its unit's (event_unit: NULL where it does not say). */
static struct rank_headings event_headings(const struct perf_event_spec *event, const char *unit, char *own,
					   char *total, size_t len)
{
	bool syscalls = perf_event_is_syscalls(event);

	if (syscalls && unit && !strcmp(unit, "bytes"))
		snprintf(own, len, "own syscall bytes (where the calls were made):");
	else if (syscalls && unit && !strcmp(unit, "nanoseconds"))
		snprintf(own, len, "own syscall time, in ns (where the calls were made):");
	else if (syscalls)
		snprintf(own, len, "own syscalls (where the calls were made):");
	else if (perf_event_is_block_io(event))
		snprintf(own, len, "own block-io bytes (where the I/O was issued):");
	else if (event->page_sized)
		snprintf(own, len, "own %s, in bytes (where memory was first touched):", event->name);
	else if (event->off_cpu)
		snprintf(own, len, "own %s time, in ns (where threads blocked):", event->name);
	else
		snprintf(own, len, "own %s (where they happened):", event->name);
	snprintf(total, len, "total %s (with callees):", event->name);
	return (struct rank_headings){ own, total };
}

/* What the file holds, then the rankings. A collapsed file's samples are its distinct stacks. */
static void print_report(const struct function_weights *weights, const char *path, const struct pf_format *format,
			 const char *mode, const struct perf_event_spec *event, const char *unit_name, size_t limit)
{
	const char *unit = format->aggregated ? "distinct stack" : "sample";
	const char *plural = weights->samples == 1 ? "" : "s";
	char own[96], total[96];
	struct rank_headings headings = event ? event_headings(event, unit_name, own, total, sizeof(own))
					      : headings_of(mode);

	fput_escaped(stdout, path);
	if (weights->samples == 0)
		printf(": no %ss\n", unit);
	else if (weights->grand_total == 0 && weights->grand_released == 0)
		printf(": %" PRIu64 " %s%s, all of weight 0\n", weights->samples, unit, plural);
	else {
		printf(": %" PRIu64 " %s%s (%s", weights->samples, unit, plural, format->name);
		if (mode)
			printf(", %s mode", mode);
		printf(")\n");
		/* An event's weights add up to what the event measured: the calls, the bytes, the time. */
		if (event && unit_name && !strcmp(unit_name, "bytes"))
			printf("%" PRIu64 " bytes in all\n", weights->grand_total);
		else if (event && unit_name && !strcmp(unit_name, "nanoseconds"))
			printf("%.6f s in all\n", (double)weights->grand_total / 1e9);
		else if (event && unit_name && !strcmp(unit_name, "count"))
			printf("%" PRIu64 " %s in all\n", weights->grand_total,
			       perf_event_is_syscalls(event) ? "calls" : "events");
		print_ranking(weights, headings.own, RANK_SELF, limit);
		print_ranking(weights, headings.total, RANK_TOTAL, limit);
		if (weights->grand_released) {
			print_ranking(weights, "own memory released (where resident memory shrank):",
				      RANK_RELEASED_SELF, limit);
			print_ranking(weights, "total memory released (with callees):", RANK_RELEASED_TOTAL, limit);
		}
	}
}

/* The file's mode: MOJO says gil as wall with our own key. NULL where it does not say, or says
 * something no heading knows (a file is the writer's to fill). */
static const char *file_mode(const struct pf_reader *reader)
{
	static const char *const known[] = { "cpu", "wall", "gil", "memory", "full", "exception" };
	const char *mode = pf_reader_metadata(reader, "pybpfprof_mode");

	if (!mode)
		mode = pf_reader_metadata(reader, "mode");
	for (size_t i = 0; mode && i < sizeof(known) / sizeof(known[0]); i++)
		if (!strcmp(mode, known[i]))
			return known[i];
	return NULL;
}

/* The event an --event file was sampled on, NULL if none (or one this build does not know):
 * "syscall:write,read" is the syscall event. */
static const struct perf_event_spec *file_event(const struct pf_reader *reader)
{
	const char *name = pf_reader_metadata(reader, "event");
	char kind[32];

	if (!name)
		return NULL;
	snprintf(kind, sizeof(kind), "%.*s", (int)strcspn(name, ":"), name);
	return perf_event_find(kind);
}

/* What the live view's header says is profiled. */
static void live_scope(const struct session_options *session, char *out, size_t len)
{
	size_t used = 0;

	if (session->command) {
		snprintf(out, len, "command: ");
		used = strlen(out);
		for (char **word = session->command; *word && used + 1 < len; word++)
			used += (size_t)snprintf(out + used, len - used, "%s ", *word);
	} else if (session->pid_count) {
		used = (size_t)snprintf(out, len, "pid");
		for (size_t i = 0; i < session->pid_count && used + 1 < len; i++)
			used += (size_t)snprintf(out + used, len - used, "%s%d", i ? "," : " ", (int)session->pids[i]);
	} else {
		snprintf(out, len, "every Python process on this host");
	}
}

static int top_file(const char *path, size_t limit, bool by_state)
{
	struct function_weights weights = { 0 };
	struct top_states states;
	struct pf_reader *reader;
	struct pf_sample sample;
	char err[512];
	int got;

	if (format_registry_open_reader(&reader, path, err, sizeof(err))) {
		cli_error_print("top", path, err);
		return EXIT_STATUS_TARGET;
	}
	intern_init(&weights.names);
	top_states_init(&states);
	while ((got = pf_reader_next_sample(reader, &sample)) > 0)
		if (add_sample(&weights, &sample) ||
		    (by_state && top_states_add(&states, &sample, sample_weight(&sample)))) {
			got = -ENOMEM;
			break;
		}
	if (got < 0)
		cli_error_print("top", path, got == -ENOMEM ? "out of memory" : pf_reader_error(reader));
	else
		print_report(&weights, path, pf_reader_format(reader), file_mode(reader), file_event(reader),
			     pf_reader_metadata(reader, "event_unit"), limit);
	if (got >= 0 && by_state) {
		struct top_state_sources sources;

		top_state_sources_of(&sources, pf_reader_format(reader)->name, file_mode(reader));
		top_states_print(&states, &sources, stdout);
	}
	top_states_free(&states);
	pf_reader_close(reader);
	intern_free(&weights.names);
	free(weights.by_function);
	return got < 0 ? EXIT_STATUS_TARGET : EXIT_STATUS_OK;
}

enum { OPT_MODE = 0x100, OPT_NO_NATIVE, OPT_NO_KERNEL, OPT_EVENT, OPT_EVENT_PERIOD };

static const struct argp_option top_options[] = {
	OPTIONS_HELP,
	{ NULL, 0, NULL, OPTION_DOC, "Of a file:", 1 },
	{ "lines", 'n', "N", 0, "The first N functions (default 10)", 1 },
	{ "by-state", 's', NULL, 0, "Then the time by thread state (on CPU, idle, GIL, GC), overall and per thread", 1 },
	{ NULL, 0, NULL, OPTION_DOC, "Live:", 2 },
	{ "pid", 'p', "PID[,PID...]", 0, "The processes to show", 2 },
	{ "frequency", 'F', "HZ", 0, "Samples per second (100, 1k, 500Hz; default 100)", 2 },
	{ "duration", 'd', "SECONDS", 0, "Stop after this long (3.5, 2s, 500ms, 5m)", 2 },
	{ "mode", OPT_MODE, "MODE", 0, "cpu, wall, gil, memory or exception", 2 },
	{ "event", OPT_EVENT, "NAME[:PERIOD]", 0, OPTIONS_EVENT_HELP, 2 },
	{ "event-period", OPT_EVENT_PERIOD, "N", 0, OPTIONS_EVENT_PERIOD_HELP, 2 },
	{ "no-native", OPT_NO_NATIVE, NULL, 0, "No native (C) frames", 2 },
	{ "no-kernel", OPT_NO_KERNEL, NULL, 0, "No kernel frames", 2 },
	{ 0 },
};

static const char top_doc[] =
	"The functions with the most time in a profile file, or live, redrawn every second.\n"
	"  pybpfprof top [-n N] [--by-state] FILE   of a file\n"
	"  pybpfprof top [OPTIONS] -p PID[,PID...]  live\n"
	"  pybpfprof top [OPTIONS] -- COMMAND       launch and show it live\n"
	"  pybpfprof top [OPTIONS]                  live, every Python process\n"
	"  pybpfprof top --event off-cpu -p PID     live, by blocked time"
	"\v"
	"Live keys: q quit, 1-4 sort (own %, total %, own time, total time), f/p/t functions, "
	"processes, threads, space pause; --mode memory: 5-6 sort by own, total release.\n"
	"Exit status: 0; 64 a usage error; 66 FILE missing or not a valid profile, or no such "
	"process; 69 cannot profile here (not root).";

struct top_args {
	struct session_options session;
	size_t limit;
	bool by_state;
	const char *file;
	bool extra_words; /* more than one FILE */
	struct options_event_seen event_seen;
};

static error_t parse_top_option(int key, char *arg, struct argp_state *state)
{
	struct top_args *args = state->input;
	struct session_options *session = &args->session;
	unsigned long long lines;
	const char *bad;
	int bad_len, err;

	switch (key) {
	case 'n':
		if (options_parse_count(arg, 1, SIZE_MAX, &lines))
			options_usage_error(state, "invalid -n '%s' (a number of lines, 1 or more)", arg);
		args->limit = (size_t)lines;
		break;
	case 'p':
		err = options_parse_pid_list(arg, session->pids, &session->pid_count, SESSION_MAX_PIDS, &bad, &bad_len);
		if (err == -E2BIG)
			options_usage_error(state, "at most %d processes", SESSION_MAX_PIDS);
		if (err)
			options_usage_error(state, "invalid PID '%.*s'", bad_len, bad);
		break;
	case 'F':
		if (options_parse_rate_hz(arg, OPTIONS_MAX_FREQUENCY_HZ, &session->frequency_hz))
			options_usage_error(state, "invalid frequency '%s' (1-%d Hz)", arg, OPTIONS_MAX_FREQUENCY_HZ);
		args->event_seen.rate_given = true;
		break;
	case 'd':
		if (options_parse_seconds(arg, &session->duration_s))
			options_usage_error(state, "invalid duration '%s' (seconds)", arg);
		break;
	case OPT_MODE:
		if (options_parse_mode(arg, &session->mode))
			options_usage_error(state, "invalid --mode '%s' (%s)", arg, options_mode_names());
		break;
	case OPT_EVENT:
		return options_parse_event(arg, session, &args->event_seen, state);
	case OPT_EVENT_PERIOD:
		return options_parse_event_period(arg, session, &args->event_seen, state);
	case OPT_NO_NATIVE:
		session->native_frames = session->native_stacks = false;
		break;
	case OPT_NO_KERNEL:
		session->kernel_stacks = false;
		break;
	case 's':
		args->by_state = true;
		break;
	case 'h':
		argp_state_help(state, stdout, ARGP_HELP_STD_HELP);
		break;
	case ARGP_KEY_ARG:
		args->extra_words |= args->file != NULL;
		args->file = arg;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

int top_main(int argc, char **argv)
{
	static const struct argp argp = {
		.options = top_options,
		.parser = parse_top_option,
		.args_doc = "[FILE]",
		.doc = top_doc,
	};
	struct top_args args = {
		.session = { .frequency_hz = 100, .kernel_stacks = true, .native_frames = true, .native_stacks = true },
		.limit = 10,
	};
	struct session_options *session = &args.session;
	char scope[512];
	const char *clash;
	int options_end = argc;

	/* A command to launch follows "--": its own options are not ours. */
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") == 0) {
			options_end = i;
			break;
		}
	argp_err_exit_status = EXIT_STATUS_USAGE;
	argv[0] = (char *)"pybpfprof top";
	if (options_refuse_misspelled(top_options, options_end, argv, argv[0], false) ||
	    argp_parse(&argp, options_end, argv, 0, NULL, &args))
		return EXIT_STATUS_USAGE;
	if (options_end < argc) {
		if (options_end + 1 == argc) {
			fprintf(stderr, "pybpfprof: top: -- is not followed by a command\n");
			return EXIT_STATUS_USAGE;
		}
		session->command = &argv[options_end + 1];
	}
	if (args.file && !args.extra_words && !session->command && !session->pid_count)
		return top_file(args.file, args.limit, args.by_state);
	if (args.file || (session->command && session->pid_count)) {
		fprintf(stderr, "pybpfprof: top: give one FILE, or -p PID, or -- COMMAND, or nothing for the whole host "
				"(try 'pybpfprof top --help')\n");
		return EXIT_STATUS_USAGE;
	}
	clash = options_event_clash(session, &args.event_seen);
	if (clash) {
		fprintf(stderr, "pybpfprof: top: %s\n", clash);
		return EXIT_STATUS_USAGE;
	}
	live_scope(session, scope, sizeof(scope));
	return live_top_run(session, scope);
}
