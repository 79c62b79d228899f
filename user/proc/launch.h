/* SPDX-License-Identifier: MIT */
/*
 * Launch mode: start a command that waits at a gate until the profiler has
 * made it a target, so that no sample is lost from its first instruction.
 * When started through sudo, the command runs as the invoking user (their
 * groups, HOME, USER and LOGNAME, as `sudo -u` gives them); it never inherits
 * the profiler's capabilities (ambient and inheritable sets cleared).
 */
#ifndef PYBPFPROF_LAUNCH_H
#define PYBPFPROF_LAUNCH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct launch {
	pid_t pid;      /* the child, stopped at the gate until launch_start() */
	int gate_fd;    /* write end: a go byte lets the child exec; EOF alone cancels it */
	int error_fd;   /* read end: the child reports a failed exec here (close-on-exec) */
	bool reaped;
	int wait_status;
};

/* Fork the child for argv (argv[0] looked up in PATH). 0 or negative errno; err_text has one line. */
int launch_prepare(struct launch *launch, char *const argv[], char *err_text, size_t err_len);
/* Open the gate and wait for the exec to succeed or fail. */
int launch_start(struct launch *launch, char *const argv[], char *err_text, size_t err_len);
/* Kill a child that never got past the gate (setup failed after prepare). */
void launch_cancel(struct launch *launch);
/* Non-blocking: true once the child has exited (and was reaped). */
bool launch_poll_exit(struct launch *launch);
/* Block until the child exits. */
void launch_wait(struct launch *launch);
/* Shell-style exit status: the code, or 128 + signal. */
int launch_exit_code(const struct launch *launch);

#endif
