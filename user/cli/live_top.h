/* SPDX-License-Identifier: MIT */
/* The live `pybpfprof top`: a session shown in the terminal instead of written to files. */
#ifndef PYBPFPROF_LIVE_TOP_H
#define PYBPFPROF_LIVE_TOP_H

#include "session/session.h"

/* Runs the session with the live view until the user quits (q), the run ends, or Ctrl-C;
 * scope says what is profiled. The process exit status. */
int live_top_run(struct session_options *options, const char *scope);

#endif
