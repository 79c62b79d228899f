/* SPDX-License-Identifier: MIT */
/*
 * pybpfprof's exit statuses: one per class of failure, whatever the command
 * (documented in `pybpfprof --help` and doc/pybpfprof.1). The numbers are the
 * BSD sysexits ones, so that scripts can tell a typo from a dead target.
 */
#ifndef PYBPFPROF_EXIT_STATUS_H
#define PYBPFPROF_EXIT_STATUS_H

enum exit_status {
	EXIT_STATUS_OK = 0,
	/* The profiler failed while running (out of memory, BPF refused a map update). */
	EXIT_STATUS_FAILED = 1,
	/* `diff --fail-if`: a function's share changed past the limit (everything else went well). */
	EXIT_STATUS_THRESHOLD = 2,
	/* The command line: an unknown command or option, a bad value, a missing argument. */
	EXIT_STATUS_USAGE = 64,
	/* What to profile or read: no such process, not a (supported) Python, a file that
	 * is missing or not a valid profile. */
	EXIT_STATUS_TARGET = 66,
	/* This machine cannot run the profiler: not root, no BPF or BTF in the kernel. */
	EXIT_STATUS_UNAVAILABLE = 69,
	/* An output could not be created or written: a refused path, a full disk. */
	EXIT_STATUS_OUTPUT = 74,
	/* --push delivered no window: every push failed (the endpoint down or refusing);
	 * sysexits' "temporary failure", as the endpoint may answer again. */
	EXIT_STATUS_PUSH = 75,
	/* A launched command that could not be executed, or was not found (as shells say). */
	EXIT_STATUS_CANNOT_EXECUTE = 126,
	EXIT_STATUS_NOT_FOUND = 127,
	/* Otherwise a launched command's own status: its exit code, or 128 + the signal
	 * that ended it (pybpfprof's own failures above still win). */
};

#endif
