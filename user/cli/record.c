// SPDX-License-Identifier: MIT
/*
 * The profiler's command line (argp, as bcc's libbpf-tools do):
 *   pybpfprof -p PID[,PID...] -o out.mojo       attach until Ctrl-C / exit
 *   pybpfprof -o out.bin -- python3 app.py      launch and profile
 *   pybpfprof -o all.mojo                       every Python process on the host
 */
#include "cli/commands.h"
#include "cli/options.h"
#include "formats/format_registry.h"
#include "session/session.h"
#include "util/exit_status.h"
#include "util/version.h"

#include <argp.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The rate without -F or -i. A wall or gil pass reads every thread of the targets: at 1 kHz six
 * threads cost some 12% of a core, and 100 Hz says the same of where time goes. */
#define CPU_DEFAULT_HZ 1000
#define WALL_DEFAULT_HZ 100

const char *argp_program_version = "pybpfprof " PYBPFPROF_VERSION;

static const char doc[] =
	"pybpfprof: sample CPython stacks (Python, native C and kernel frames) with eBPF.\n"
	"\n"
	"USAGE: pybpfprof [OPTIONS] -p PID[,PID...]\n"
	"       pybpfprof [OPTIONS] -- COMMAND [ARGS...]\n"
	"       pybpfprof [OPTIONS]                 (every Python process on the host)\n"
	"       pybpfprof dump [--samples] FILE\n"
	"       pybpfprof convert IN -o OUT [-f FORMAT]\n"
	"       pybpfprof top [-n N] [--by-state] FILE\n"
	"       pybpfprof top [-p PID | -- COMMAND]  (live, redrawn every second)\n"
	"       pybpfprof diff BASE NEW [-o diff.svg] [--fail-if 'FUNC>+5%']\n"
	"       pybpfprof stacks [--json] PID      (every thread's stack now, once)\n"
	"\n"
	"EXAMPLES:\n"
	"    sudo pybpfprof -p 4242 -o app.mojo            # until Ctrl-C or exit\n"
	"    sudo pybpfprof -p 4242,4243 -d 30 -o app.bin  # two processes, 30 s, Tachyon\n"
	"    sudo pybpfprof -F 1000 -o run.mojo -- python3 app.py --flag\n"
	"    sudo pybpfprof --mode wall -p 4242 -o wall.mojo  # every thread, running or not, 100 Hz\n"
	"    sudo pybpfprof --mode gil -p 4242 -o gil.bin  # only the thread holding the GIL\n"
	"    sudo pybpfprof --event page-faults -p 4242 -o pf.svg  # first touches"
	"\v"
	"A command to launch goes after --. With neither -p nor a command, every Python\n"
	"process on the host is sampled, including later ones, until Ctrl-C or -d.\n"
	"\n"
	"EXIT STATUS:\n"
	"    0    success\n"
	"    1    the profiler failed while running\n"
	"    2    diff --fail-if: a function's share changed past its limit\n"
	"    64   usage: an unknown command or option, a bad value\n"
	"    66   target: no such process, not a supported Python, an unreadable profile\n"
	"    69   this machine cannot profile: not root, no BPF or BTF\n"
	"    74   output: a file could not be created or written\n"
	"    75   --push delivered no window: every push failed\n"
	"    126, 127  the command could not be executed, or was not found\n"
	"    otherwise, with a command: its own exit status (128+N if signal N ended it)";

enum {
	OPT_NO_KERNEL = 0x100,
	OPT_BPF_STATS,
	OPT_RINGBUF,
	OPT_NO_NATIVE,
	OPT_NATIVE,
	OPT_MODE,
	OPT_PUSH,
	OPT_WINDOW,
	OPT_APP,
	OPT_LABEL,
	OPT_ASYNC_PLUMBING,
	OPT_ASYNC_MODE,
	OPT_MAX_OVERHEAD,
	OPT_TARGET_BUDGET,
	OPT_EVENT,
	OPT_EVENT_PERIOD,
	OPT_OPCODES,
};

static const struct argp_option record_options[] = {
	{ "help", 'h', NULL, 0, "Give this help list", -1 },
	{ "pid", 'p', "PID[,PID...]", 0, "Profile these processes (repeatable)", 0 },
	/* -o and -f end with the format registry's lists (record_help_filter). */
	{ "output", 'o', "FILE", 0, "Write here (repeatable, a file named twice written once; default pybpfprof.mojo); the format from the extension:", 0 },
	{ "format", 'f', "FORMAT", 0, "The format, whatever the extension:", 0 },
	{ "frequency", 'F', "HZ", 0, "Samples per second per CPU (1000, 1k, 100Hz; default 1000); wall and gil modes: passes per second (default 100)", 0 },
	{ "interval", 'i', "INTERVAL", 0, "Sampling interval as Austin takes it: 1ms, 100us, 0.5ms, or microseconds", 0 },
	{ "duration", 'd', "SECONDS", 0, "Stop after this long (3.5, 2s, 500ms, 5m)", 0 },
	{ "mode", OPT_MODE, "MODE", 0, "cpu: threads running when the clock ticks (the default); wall: every thread at every interval, running or waiting (waits carry their kernel stack); gil: the thread holding the GIL at every interval, running or not; memory: threads running when the clock ticks, each weighing its process's resident memory change since its previous tick (bytes: + grown, - released); exception: threads running when the clock ticks while raising an exception or handling one (3.7-3.12)", 0 },
	{ "event", OPT_EVENT, "NAME[:PERIOD]", 0, OPTIONS_EVENT_HELP, 0 },
	{ "event-period", OPT_EVENT_PERIOD, "N", 0, OPTIONS_EVENT_PERIOD_HELP, 0 },
	{ "children", 'C', NULL, 0, "With -p: also profile their descendants, running or forked later (a launched command's are always followed)", 0 },
	{ "no-kernel", OPT_NO_KERNEL, NULL, 0, "Do not record kernel stacks", 0 },
	{ "native", OPT_NATIVE, "all", OPTION_ARG_OPTIONAL, "Native (C) frames in place in the Python stacks (the default); =all also keeps the interpreter's own call machinery and startup frames", 0 },
	{ "no-native", OPT_NO_NATIVE, NULL, 0, "No native frames: no C stack walk, not even the function a sample landed in", 0 },
	{ "async-plumbing", OPT_ASYNC_PLUMBING, NULL, 0, "asyncio (3.11+): keep the event loop's frames (run_forever, _run_once, Handle._run, ...) above the <task NAME> chain of a running task", 0 },
	{ "async-mode", OPT_ASYNC_MODE, "MODE", 0, "asyncio (3.11+), wall mode: running (the default): threads only, a running task's stack under its task chain; all: also every waiting task, a sample of where it waits at every interval", 0 },
	{ "opcodes", OPT_OPCODES, NULL, 0, "Python 3.11+: also record each Python frame's instruction, specialised or not (LOAD_ATTR_INSTANCE_VALUE, BINARY_OP), for annotate (Tachyon keeps it; ignored before 3.11)", 0 },
	{ "compression", 'c', "LEVEL", 0, "Tachyon zstd level 1-22 or 'none' (default 5)", 0 },
	{ "quiet", 'q', NULL, 0, "No status line or summary", 0 },
	{ "verbose", 'v', NULL, 0, "The summary's internals too: native walks, unwind tables, budgets, processes that ran no Python", 0 },
	{ "bpf-stats", OPT_BPF_STATS, NULL, 0, "Report BPF run time per sample at the end", 0 },
	{ "max-overhead", OPT_MAX_OVERHEAD, "PCT", 0, "Each process's BPF stack walks take at most PCT% of one CPU: a process over it is sampled less, its samples weighted (cpu mode; default 2 on the whole host and with --push, off otherwise; 0: off)", 0 },
	{ "push", OPT_PUSH, "URL", 0, "Continuous mode: push each window as pprof to a Pyroscope-compatible server (URL/ingest); never blocks sampling", 0 },
	{ "window", OPT_WINDOW, "SECONDS", 0, "Cut the run into windows (10, 10s, 5m): with --push each is pushed (default 10 s); without, each -o file is written per window (run-0001.mojo, ...)", 0 },
	{ "app", OPT_APP, "NAME", 0, "With --push: the application name (default pybpfprof)", 0 },
	{ "label", OPT_LABEL, "KEY=VALUE", 0, "With --push: a label of every window (repeatable)", 0 },
	{ "target-budget", OPT_TARGET_BUDGET, "MIB", 0, "The most the profiled processes can make it hold (their code objects, line tables and names, task chains, resolved stacks, native symbol tables, process mappings, output tables; default 64): past it the least recently used go", 0 },
	{ "ringbuf-mb", OPT_RINGBUF, "MB", OPTION_HIDDEN, "Ring buffer size", 0 },
	{ 0 },
};

struct record_args {
	struct session_options session;
	const char *format_name;
	bool frequency_set;
	bool interval_set;
	struct options_event_seen event_seen;
};

static int parse_uint(const char *text, unsigned long long max, unsigned long long *value)
{
	return options_parse_count(text, 0, max, value);
}

static int parse_pids(struct record_args *args, const char *list, struct argp_state *state)
{
	const char *bad;
	int bad_len;
	int err = options_parse_pid_list(list, args->session.pids, &args->session.pid_count, SESSION_MAX_PIDS,
					 &bad, &bad_len);

	if (err == -E2BIG)
		options_usage_error(state, "at most %d processes", SESSION_MAX_PIDS);
	if (err)
		options_usage_error(state, "invalid PID '%.*s'", bad_len, bad);
	return 0;
}

/* An application name or a label as Pyroscope's name syntax takes them (no '{', ',', '}', '='
 * inside, one '=' in a label). */
static bool valid_push_text(const char *text, bool label)
{
	const char *equals = strchr(text, '=');

	if (!*text || (label && (!equals || equals == text || !equals[1] || strchr(equals + 1, '='))) ||
	    (!label && equals))
		return false;
	for (const char *c = text; *c; c++)
		if (!isalnum((unsigned char)*c) && !strchr("._-", *c) && !(label && *c == '='))
			return false;
	return true;
}

static error_t parse_option(int key, char *arg, struct argp_state *state)
{
	struct record_args *args = state->input;
	struct session_options *session = &args->session;
	unsigned long long number;
	double interval_us = 0;
	char *end;

	switch (key) {
	case 'p':
		return parse_pids(args, arg, state);
	case 'o':
		if (session->output_count == SESSION_MAX_OUTPUTS)
			options_usage_error(state, "at most %d outputs", SESSION_MAX_OUTPUTS);
		session->outputs[session->output_count++].path = arg;
		break;
	case 'f':
		args->format_name = arg;
		break;
	case 'F':
		if (options_parse_rate_hz(arg, OPTIONS_MAX_FREQUENCY_HZ, &session->frequency_hz))
			options_usage_error(state, "invalid frequency '%s' (1-%d Hz)", arg, OPTIONS_MAX_FREQUENCY_HZ);
		args->frequency_set = true;
		break;
	case 'i':
		if (options_parse_interval_us(arg, &interval_us) || interval_us < 10 || interval_us > 1e6)
			options_usage_error(state, "invalid interval '%s' (e.g. 1ms, 100us; from 10us to 1s)", arg);
		session->frequency_hz = (unsigned)llround(1e6 / interval_us);
		args->interval_set = true;
		break;
	case 'd':
		if (options_parse_seconds(arg, &session->duration_s))
			options_usage_error(state, "invalid duration '%s' (seconds)", arg);
		break;
	case 'c':
		if (options_parse_compression(arg, &session->compression_level))
			options_usage_error(state, "invalid compression '%s' (1-22 or none)", arg);
		break;
	case 'q':
		session->quiet = true;
		break;
	case 'v':
		session->verbose = true;
		break;
	case 'C':
		session->children = true;
		break;
	case OPT_NO_KERNEL:
		session->kernel_stacks = false;
		break;
	case OPT_NO_NATIVE:
		session->native_frames = false;
		session->native_stacks = false;
		session->native_keep_all = false;
		break;
	case OPT_NATIVE:
		if (arg && strcmp(arg, "all") != 0)
			options_usage_error(state, "invalid --native '%s' (give nothing, or =all)", arg);
		session->native_frames = true;
		session->native_stacks = true;
		session->native_keep_all = arg != NULL;
		break;
	case OPT_OPCODES:
		session->opcodes = true;
		break;
	case OPT_ASYNC_PLUMBING:
		session->async_plumbing = true;
		break;
	case OPT_ASYNC_MODE:
		if (strcmp(arg, "running") == 0)
			session->async_all = false;
		else if (strcmp(arg, "all") == 0)
			session->async_all = true;
		else
			options_usage_error(state, "invalid --async-mode '%s' (running or all)", arg);
		break;
	case OPT_MODE:
		if (options_parse_mode(arg, &session->mode))
			options_usage_error(state, "invalid --mode '%s' (%s)", arg, options_mode_names());
		break;
	case OPT_PUSH:
		session->push_url = arg;
		break;
	case OPT_WINDOW:
		if (options_parse_seconds(arg, &session->window_s) || !(session->window_s >= 1))
			options_usage_error(state, "invalid window '%s' (10, 10s or 5m; at least 1 s)", arg);
		break;
	case OPT_APP:
		if (!valid_push_text(arg, false))
			options_usage_error(state, "invalid application name '%s' (letters, digits, '.', '-', '_')", arg);
		session->push_app = arg;
		break;
	case OPT_LABEL:
		if (!valid_push_text(arg, true))
			options_usage_error(state, "invalid label '%s' (KEY=VALUE: letters, digits, '.', '-', '_')", arg);
		if (session->push_label_count == SESSION_MAX_PUSH_LABELS)
			options_usage_error(state, "at most %d labels", SESSION_MAX_PUSH_LABELS);
		session->push_labels[session->push_label_count++] = arg;
		break;
	case OPT_BPF_STATS:
		session->bpf_stats = true;
		break;
	case OPT_MAX_OVERHEAD:
		session->max_overhead_pct = strtod(arg, &end);
		if (end != arg && strcmp(end, "%") == 0)
			end++;
		if (end == arg || *end || !(session->max_overhead_pct >= 0) || session->max_overhead_pct > 100)
			options_usage_error(state, "invalid --max-overhead '%s' (a percent of one CPU, 0-100; 0: off)", arg);
		session->max_overhead_given = true;
		break;
	case OPT_EVENT:
		return options_parse_event(arg, session, &args->event_seen, state);
	case OPT_EVENT_PERIOD:
		return options_parse_event_period(arg, session, &args->event_seen, state);
	case OPT_TARGET_BUDGET:
		if (parse_uint(arg, 1 << 20, &number) || number == 0)
			options_usage_error(state, "invalid target budget '%s' MiB (1-%d)", arg, 1 << 20);
		session->target_budget_bytes = (uint64_t)number << 20;
		break;
	case OPT_RINGBUF:
		if (parse_uint(arg, 1024, &number) || number == 0)
			options_usage_error(state, "invalid ring buffer size '%s' MB", arg);
		session->ringbuf_bytes = (size_t)number << 20;
		break;
	case 'h':
		argp_state_help(state, stdout, ARGP_HELP_STD_HELP);
		break;
	case ARGP_KEY_ARG:
		/* A command comes only after "--" (record_main splits it off): a word here is a
		 * mistake, and guessing would let its options pass for ours (-c, -o). */
		options_usage_error(state, "unexpected '%s': to profile a command, put it after -- "
				  "(pybpfprof -o out.mojo -- %s ...)", arg, arg);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* -o's and -f's help end with the registry's extensions and names (options_format_help). */
static char *record_help_filter(int key, const char *text, void *input)
{
	(void)input;
	return options_format_help(key, text, false);
}

/* Refused before anything starts: an output path that is a link, a FIFO, a device or a directory. */
static int check_outputs(const struct session_options *session)
{
	for (size_t i = 0; i < session->output_count; i++) {
		char reason[512];
		int err = pf_output_check(session->outputs[i].path, reason, sizeof(reason));

		if (err) {
			fprintf(stderr, "pybpfprof: %s\n", reason);
			return err;
		}
	}
	return 0;
}

/* An output named twice would be the same samples in the same format written twice over: once. */
static void drop_repeated_outputs(struct session_options *session)
{
	size_t kept = 0;

	for (size_t i = 0; i < session->output_count; i++) {
		const char *path = session->outputs[i].path;
		size_t earlier = 0;

		while (earlier < kept && !options_same_output(session->outputs[earlier].path, path))
			earlier++;
		if (earlier < kept)
			options_warn_repeated_output("pybpfprof", path, session->outputs[earlier].path);
		else
			session->outputs[kept++] = session->outputs[i];
	}
	session->output_count = kept;
}

static int resolve_formats(struct record_args *args)
{
	struct session_options *session = &args->session;
	const struct pf_format *forced = NULL;
	char names[256];

	if (args->format_name) {
		forced = options_format_named(args->format_name, "pybpfprof");
		if (!forced)
			return -EINVAL;
	}
	drop_repeated_outputs(session);
	/* Pushing windows is an output of its own: no file unless one is asked for. */
	if (session->output_count == 0 && !(session->push_url && !forced))
		session->outputs[session->output_count++].path =
			(forced ? forced : format_registry_find_name("mojo"))->default_file;
	for (size_t i = 0; i < session->output_count; i++) {
		struct session_output *output = &session->outputs[i];

		output->format = forced ? forced : format_registry_find_path(output->path);
		if (!output->format) {
			fprintf(stderr, "pybpfprof: cannot tell the format of '%s' from its extension (use %s or -f FORMAT)\n",
				output->path, format_registry_extensions(names, sizeof(names), false));
			return -EINVAL;
		}
	}
	return check_outputs(session);
}

/* Only Tachyon has a field for a frame's instruction: --opcodes without one records nothing
 * that lasts, which the run says before it starts. */
static void warn_opcodes_unkept(const struct session_options *session)
{
	const struct pf_format *tachyon = format_registry_find_name("tachyon");

	if (!session->opcodes || session->quiet)
		return;
	for (size_t i = 0; i < session->output_count; i++)
		if (session->outputs[i].format == tachyon)
			return;
	fprintf(stderr, "pybpfprof: warning: --opcodes: only a Tachyon file (-o NAME.bin) keeps the instructions, "
			"and none is written\n");
}

/* Where the command to launch starts: after the first "--", or argc if there is none. */
static int command_start(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") == 0)
			return i + 1;
	return argc;
}

int record_main(int argc, char **argv)
{
	static const struct argp argp = {
		.options = record_options,
		.parser = parse_option,
		.doc = doc,
		.help_filter = record_help_filter,
	};
	struct record_args args = {
		.session = {
			.kernel_stacks = true,
			.native_frames = true,
			.native_stacks = true,
			.compression_level = PF_COMPRESSION_LEVEL_DEFAULT,
		},
	};
	int command = command_start(argc, argv);
	const char *clash;
	int err;

	argp_err_exit_status = EXIT_STATUS_USAGE;
	/* argp and getopt name the program by argv[0] in their messages: ours say "pybpfprof:". */
	argv[0] = (char *)"pybpfprof";
	if (command < argc)
		args.session.command = &argv[command];
	else if (command == argc && strcmp(argv[argc - 1], "--") == 0) {
		fprintf(stderr, "pybpfprof: -- is not followed by a command to profile\n");
		return EXIT_STATUS_USAGE;
	}
	if (options_refuse_misspelled(record_options, command < argc ? command - 1 : argc, argv, argv[0], true))
		return EXIT_STATUS_USAGE;
	/* argp sees the options only: the command's own are not ours. */
	/* In order: a stray word stops the parse before the options after it are taken for ours. */
	err = argp_parse(&argp, command < argc ? command - 1 : argc, argv, ARGP_IN_ORDER, NULL, &args);
	if (err)
		return EXIT_STATUS_USAGE;
	if (args.frequency_set && args.interval_set) {
		fprintf(stderr, "pybpfprof: -F and -i both set the rate: give one\n");
		return EXIT_STATUS_USAGE;
	}
	args.event_seen.rate_given = args.frequency_set || args.interval_set;
	clash = options_event_clash(&args.session, &args.event_seen);
	if (clash) {
		fprintf(stderr, "pybpfprof: %s\n", clash);
		return EXIT_STATUS_USAGE;
	}
	if (!args.frequency_set && !args.interval_set)
		args.session.frequency_hz = session_mode_on_ticks(args.session.mode) ? CPU_DEFAULT_HZ : WALL_DEFAULT_HZ;
	if (args.session.pid_count && args.session.command) {
		fprintf(stderr, "pybpfprof: give either -p PID or a command to launch, not both\n");
		return EXIT_STATUS_USAGE;
	}
	if (!args.session.push_url && (args.session.push_app || args.session.push_label_count)) {
		fprintf(stderr, "pybpfprof: --app and --label go with --push URL\n");
		return EXIT_STATUS_USAGE;
	}
	if (args.session.async_all && args.session.mode != SESSION_MODE_WALL) {
		fprintf(stderr, "pybpfprof: --async-mode all goes with --mode wall (a waiting task is sampled where it waits)\n");
		return EXIT_STATUS_USAGE;
	}
	if (args.session.push_url && args.session.window_s == 0)
		args.session.window_s = 10;
	err = resolve_formats(&args);
	if (err)
		return err == -EINVAL ? EXIT_STATUS_USAGE : EXIT_STATUS_OUTPUT;
	warn_opcodes_unkept(&args.session);
	return session_run(&args.session);
}
