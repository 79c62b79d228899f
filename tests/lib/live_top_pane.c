// SPDX-License-Identifier: MIT
/* The live view's terminal for tests: tmux runs it, capture-pane reads it (live_top_pane.h). */
#include "live_top_pane.h"

#include <string.h>
#include <unistd.h>

static char tmux_out[16384];
static char tmux_err[4096];

static int run_tmux(char *const argv[])
{
	return run_capture_both(argv, tmux_out, sizeof(tmux_out), tmux_err, sizeof(tmux_err));
}

bool live_top_tmux_present(void)
{
	return access("/usr/bin/tmux", X_OK) == 0;
}

void live_top_start(char *session, size_t len, const char *tag, const char *command)
{
	snprintf(session, len, "pybpfprof-%s-%d", tag, (int)getpid());
	{
		char *argv[] = { "tmux", "new-session", "-d", "-s", session, "-x", "160", "-y", "30",
				 (char *)command, NULL };

		if (run_tmux(argv) != 0)
			fail_msg("tmux new-session: %s", tmux_err);
	}
}

void live_top_capture(const char *session, char *pane, size_t len)
{
	char *argv[] = { "tmux", "capture-pane", "-p", "-t", (char *)session, NULL };

	assert_int_equal(run_capture_both(argv, pane, len, tmux_err, sizeof(tmux_err)), 0);
}

void live_top_kill(char *session)
{
	char *argv[] = { "tmux", "kill-session", "-t", session, NULL };

	if (session[0])
		run_tmux(argv);
	session[0] = 0;
}

void live_top_send_keys(const char *session, const char *keys)
{
	char *argv[] = { "tmux", "send-keys", "-t", (char *)session, (char *)keys, NULL };

	assert_int_equal(run_tmux(argv), 0);
}

const char *live_top_rows(const char *pane)
{
	const char *titles = strstr(pane, "Function (file:line)");

	return titles && strchr(titles, '\n') ? strchr(titles, '\n') + 1 : NULL;
}

bool live_top_first_row_is(const char *pane, const char *text)
{
	const char *row = live_top_rows(pane), *found = row ? strstr(row, text) : NULL;

	return found && (!strchr(row, '\n') || found < strchr(row, '\n'));
}
