// SPDX-License-Identifier: MIT
/*
 * `pybpfprof stacks PID`: every thread of a running process once, running or
 * waiting, with its Python, native and kernel frames (py-spy's `dump`). One
 * pass of the wall-mode task iterator: the target is only read, never
 * stopped, so a hung process can be looked at.
 */
#include "cli/commands.h"
#include "cli/options.h"
#include "session/session.h"
#include "util/exit_status.h"
#include "util/text_quote.h"

#include <argp.h>
#include <stdio.h>

enum {
	OPT_JSON = 0x100,
	OPT_NO_NATIVE,
	OPT_NO_KERNEL,
};

/* Only resolving a sample uses the rate (the time it stands for): one pass stands for itself. */
#define STACKS_NOMINAL_HZ 100

static const struct argp_option stacks_options[] = {
	OPTIONS_HELP,
	{ "json", OPT_JSON, NULL, 0, "One JSON document: pid, python, threads[{tid, name, state, frames}]", 0 },
	{ "no-native", OPT_NO_NATIVE, NULL, 0, "No native (C) frames", 0 },
	{ "no-kernel", OPT_NO_KERNEL, NULL, 0, "No kernel frames", 0 },
	{ 0 },
};

static const char stacks_doc[] =
	"Print every thread of a running Python process once, running or waiting, with its "
	"Python, native and kernel frames, leaf first. The process is read, never stopped."
	"\v"
	"Exit status: 0; 64 a usage error; 66 no such process or not a supported Python; "
	"69 this machine cannot profile (not root, no BPF or BTF); 1 the read failed.";

struct stacks_args {
	struct session_options *session;
	const char *pid; /* as given */
};

static error_t parse_stacks_option(int key, char *arg, struct argp_state *state)
{
	struct stacks_args *args = state->input;
	struct session_options *session = args->session;

	switch (key) {
	case OPT_JSON:
		session->stacks_json = true;
		break;
	case OPT_NO_NATIVE:
		session->native_frames = false;
		session->native_stacks = false;
		break;
	case OPT_NO_KERNEL:
		session->kernel_stacks = false;
		break;
	case 'h':
		argp_state_help(state, stdout, ARGP_HELP_STD_HELP);
		break;
	case ARGP_KEY_ARG:
		if (args->pid)
			options_usage_error(state, "expected exactly one PID");
		args->pid = arg;
		break;
	case ARGP_KEY_END:
		if (!args->pid)
			options_usage_error(state, "expected exactly one PID");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

int stacks_main(int argc, char **argv)
{
	static const struct argp argp = {
		.options = stacks_options,
		.parser = parse_stacks_option,
		.args_doc = "PID",
		.doc = stacks_doc,
	};
	struct session_options session = {
		.pid_count = 1,
		.frequency_hz = STACKS_NOMINAL_HZ,
		.mode = SESSION_MODE_STACKS,
		.kernel_stacks = true,
		.native_frames = true,
		.native_stacks = true,
		.quiet = true,
	};
	struct stacks_args args = { .session = &session };

	argp_err_exit_status = EXIT_STATUS_USAGE;
	argv[0] = (char *)"pybpfprof stacks";
	if (options_refuse_misspelled(stacks_options, argc, argv, argv[0], false) ||
	    argp_parse(&argp, argc, argv, 0, NULL, &args))
		return EXIT_STATUS_USAGE;
	/* A word from the command line may hold anything: escaped. */
	if (options_parse_pid(args.pid, &session.pids[0])) {
		fputs("pybpfprof: stacks: not a process id: '", stderr);
		fput_escaped(stderr, args.pid);
		fputs("'\n", stderr);
		return EXIT_STATUS_USAGE;
	}
	return session_run(&session);
}
