// SPDX-License-Identifier: MIT
/* Children of the discovery tests (tests/lib/child_procs.c). */
#ifndef PYBPFPROF_TESTS_CHILD_PROCS_H
#define PYBPFPROF_TESTS_CHILD_PROCS_H

#include "testlib.h"

#include <sys/types.h>

/* Kills and reaps every child spawn started. */
void kill_children(void);
/* Runs argv[0] (a path) with its stdout on a pipe, whose read end goes to *stdout_fd; -1 when it cannot. */
pid_t spawn(char *const argv[], int *stdout_fd);
/* A child started otherwise, for kill_children to reap. */
void add_child(pid_t pid);
void sleep_ms(long ms);

#endif
