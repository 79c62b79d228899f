// SPDX-License-Identifier: MIT
/* `pybpfprof top` live in a real terminal (tmux), read as a user sees it (tests/lib/live_top_pane.c). */
#ifndef PYBPFPROF_TESTS_LIVE_TOP_PANE_H
#define PYBPFPROF_TESTS_LIVE_TOP_PANE_H

#include "testlib.h"

#include <stdbool.h>
#include <stddef.h>

/* Whether tmux is there to run a live view in. */
bool live_top_tmux_present(void);
/* Runs the shell command line in a new detached tmux session of 160x30 named after this test process
 * and a tag (session, of size len); fails the test if tmux cannot start it. */
void live_top_start(char *session, size_t len, const char *tag, const char *command);
/* The pane's text as a user sees it now. */
void live_top_capture(const char *session, char *pane, size_t len);
/* Ends the session (and its command with it), if one was started; session is emptied. */
void live_top_kill(char *session);
/* Sends the keys (tmux send-keys' words) to the session. */
void live_top_send_keys(const char *session, const char *keys);
/* The rows of the functions view on a pane, after its column titles; NULL if there is none. */
const char *live_top_rows(const char *pane);
/* Whether the pane's first row holds text (a function's label up to its file). */
bool live_top_first_row_is(const char *pane, const char *text);

#endif
