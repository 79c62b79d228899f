// SPDX-License-Identifier: MIT
/*
 * `pybpfprof stacks PID`: every thread of a running process once, running or
 * waiting, with its Python, native and kernel frames (py-spy's `dump`). One
 * pass of the wall-mode task iterator: the target is only read, never
 * stopped, so a hung process can be looked at.
 */
#include "cli/commands.h"
#include "session/session.h"
#include "util/exit_status.h"
#include "util/text_quote.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	OPT_JSON = 0x100,
	OPT_NO_NATIVE,
	OPT_NO_KERNEL,
};

/* Only resolving a sample uses the rate (the time it stands for): one pass stands for itself. */
#define STACKS_NOMINAL_HZ 100

static void stacks_usage(FILE *out)
{
	fputs("Usage: pybpfprof stacks [--json] [--no-native] [--no-kernel] PID\n"
	      "Print every thread of a running Python process once, running or waiting, with its\n"
	      "Python, native and kernel frames, leaf first. The process is read, never stopped.\n"
	      "  --json        one JSON document: pid, python, threads[{tid, name, state, frames}]\n"
	      "  --no-native   no native (C) frames\n"
	      "  --no-kernel   no kernel frames\n"
	      "Exit status: 0; 64 a usage error; 66 no such process or not a supported Python;\n"
	      "69 this machine cannot profile (not root, no BPF or BTF); 1 the read failed.\n",
	      out);
}

static int parse_pid(const char *text, pid_t *pid)
{
	char *end;
	long value;

	errno = 0;
	value = strtol(text, &end, 10);
	if (errno || *end || end == text || value <= 0 || value > INT_MAX)
		return -EINVAL;
	*pid = (pid_t)value;
	return 0;
}

int stacks_main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ "no-native", no_argument, NULL, OPT_NO_NATIVE },
		{ "no-kernel", no_argument, NULL, OPT_NO_KERNEL },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
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
	int opt;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		switch (opt) {
		case OPT_JSON:
			session.stacks_json = true;
			break;
		case OPT_NO_NATIVE:
			session.native_frames = false;
			session.native_stacks = false;
			break;
		case OPT_NO_KERNEL:
			session.kernel_stacks = false;
			break;
		case 'h':
			stacks_usage(stdout);
			return EXIT_STATUS_OK;
		default:
			stacks_usage(stderr);
			return EXIT_STATUS_USAGE;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "pybpfprof: stacks: expected exactly one PID (try 'pybpfprof stacks --help')\n");
		return EXIT_STATUS_USAGE;
	}
	if (parse_pid(argv[optind], &session.pids[0])) {
		fputs("pybpfprof: stacks: not a process id: '", stderr);
		fput_escaped(stderr, argv[optind]);
		fputs("'\n", stderr);
		return EXIT_STATUS_USAGE;
	}
	return session_run(&session);
}
