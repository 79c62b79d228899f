// SPDX-License-Identifier: MIT
/*
 * Live `pybpfprof top` with an event or a mode (real BPF, root), in a real terminal (tmux), as a
 * user reads it (tests/scripts/live_top_work.py):
 *  - --event off-cpu -p PID: the header says the event and its unit (nanoseconds), the columns
 *    are blocked time, and the rows go by it: long_sleep (6 ms a round) above short_sleep (2 ms).
 *  - --mode exception -- COMMAND: parse_a (raising 3 times as often) above parse_b.
 *  - --mode memory -- COMMAND: grow_a maps and touches 32 MB a round, free_b unmaps it; the
 *    header says the bytes grown and released; sorted by own growth (3), grow_a's rows come first
 *    and hold the growth; sorted by own freed (5), free_b's come first and hold the release (each
 *    at least 80% of the header's, after 10 rounds or more, read from a paused screen).
 * The order is waited for (a slow start or a loaded host only takes longer), then checked on the
 * screen read; q ends the view with status 0.
 */
#include "live_top_pane.h"
#include "testlib.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define MAX_PYTHONS 32
/* Safety net only (a view that never shows the order fails rather than hangs). */
#define SHOW_LIMIT_S 90

static struct test_python pythons[MAX_PYTHONS];
static size_t python_count;
static char tmux_session[64];

static int kill_tmux_session(void **state)
{
	(void)state;
	live_top_kill(tmux_session);
	return 0;
}

/* The n-th row (from 0) of the functions view: its own share, and whether it holds text. */
static bool row_holds(const char *pane, int n, const char *text, double *own)
{
	const char *row = live_top_rows(pane), *end;

	for (int i = 0; row && i < n; i++)
		row = strchr(row, '\n') ? strchr(row, '\n') + 1 : NULL;
	if (!row)
		return false;
	end = strchr(row, '\n');
	if (own && sscanf(row, "%lf%%", own) != 1)
		return false;
	return strstr(row, text) && (!end || strstr(row, text) < end);
}

/* Waits until the view's first two rows are first and second, the first's own share above the
 * second's (a tie is ordered by name, not ranked), and the pane holds every other of texts; returns
 * the pane then, failing with it past the limit. */
static void wait_for_order(const char *first, const char *second, const char *const *texts, size_t count, char *pane,
			   size_t len)
{
	for (int tries = 0;; tries++) {
		double own_first = 0, own_second = 0;
		bool all = true;

		usleep(500 * 1000);
		live_top_capture(tmux_session, pane, len);
		for (size_t i = 0; i < count; i++)
			all &= strstr(pane, texts[i]) != NULL;
		if (tries >= 5 && all && row_holds(pane, 0, first, &own_first) && row_holds(pane, 1, second, &own_second) &&
		    own_first > own_second)
			return;
		if (tries >= SHOW_LIMIT_S * 2)
			fail_msg("no %s above %s in %d s:\n%s", first, second, SHOW_LIMIT_S, pane);
	}
}

/* q ends the view, the command it ran reports status 0. */
static void quit_view(char *pane, size_t len)
{
	live_top_send_keys(tmux_session, "q");
	for (int tries = 0; tries < 300 && !strstr(pane, "EXITED"); tries++) {
		usleep(100 * 1000);
		live_top_capture(tmux_session, pane, len);
	}
	print_message("after q:\n%s\n", pane);
	assert_non_null(strstr(pane, "EXITED 0"));
}

static void off_cpu_ranks_blocked_time(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	static const char *const texts[] = { "event off-cpu, weighed in nanoseconds", "OwnTime", "TotalTime" };
	char command[PATH_MAX * 2], pane[8192];
	struct test_target target;
	double own_long = 0, own_short = 0;

	if (!live_top_tmux_present())
		skip();
	target.pid = test_start_ready_script(python, "live_top_work.py", "sleeps", &target.out_fd);
	/* no native or kernel frames: each row's own time is its Python function's */
	FORMAT(command, "sh -c '%s top --no-native --no-kernel --event off-cpu -p %d; echo EXITED $?; sleep 60'",
	       pybpfprof_binary(), (int)target.pid);
	live_top_start(tmux_session, sizeof(tmux_session), "top-offcpu", command);
	wait_for_order("long_sleep (", "short_sleep (", texts, sizeof(texts) / sizeof(texts[0]), pane, sizeof(pane));
	print_message("%s\n", pane);
	assert_true(row_holds(pane, 0, "long_sleep (", &own_long));
	assert_true(row_holds(pane, 1, "short_sleep (", &own_short));
	assert_true(own_long > own_short);
	quit_view(pane, sizeof(pane));
	test_stop_target(&target);
}

static void exception_mode_ranks_raisers(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	static const char *const texts[] = { "Hz exception", "OwnTime" };
	char command[PATH_MAX * 3], pane[8192];
	double own_a = 0, own_b = 0;

	if (!live_top_tmux_present())
		skip();
	FORMAT(command, "sh -c '%s top --no-native --no-kernel --mode exception -F 200 -- %s %s/tests/scripts/%s "
			"exceptions; echo EXITED $?; sleep 60'",
	       pybpfprof_binary(), python->command, test_source_dir(), "live_top_work.py");
	live_top_start(tmux_session, sizeof(tmux_session), "top-exception", command);
	wait_for_order("parse_a (", "parse_b (", texts, sizeof(texts) / sizeof(texts[0]), pane, sizeof(pane));
	print_message("%s\n", pane);
	assert_true(row_holds(pane, 0, "parse_a (", &own_a));
	assert_true(row_holds(pane, 1, "parse_b (", &own_b));
	assert_true(own_a > own_b);
	quit_view(pane, sizeof(pane));
}

/* Memory mode's totals on a pane: the header's, and those of the rows whose label holds a text. */
struct memory_pane {
	double grown, released;       /* the header's, in MB */
	double grown_in, released_in; /* the rows', own, in MB */
};

static bool read_memory_pane(const char *pane, const char *text, struct memory_pane *read)
{
	const char *header = strstr(pane, "  grown "), *row = live_top_rows(pane);

	*read = (struct memory_pane){ 0 };
	if (!header || sscanf(header, "  grown %lfM released %lfM", &read->grown, &read->released) != 2 || !row)
		return false;
	for (; *row; row = strchr(row, '\n') ? strchr(row, '\n') + 1 : "") {
		const char *end = strchr(row, '\n'), *found = strstr(row, text);
		double own_share, total_share, own_grown, total_grown, own_released, total_released;

		if (!found || (end && found > end))
			continue;
		if (sscanf(row, "%lf%% %lf%% %lfM %lfM %lfM %lfM", &own_share, &total_share, &own_grown, &total_grown,
			   &own_released, &total_released) != 6)
			return false;
		read->grown_in += own_grown;
		read->released_in += own_released;
	}
	return true;
}

/* Sends a key to the paused view and waits for the screen it draws: the header holds shown (the
 * sort it names), and two reads in a row agree (a screen read whole, not while it is redrawn). */
static void paused_screen_after(const char *key, const char *shown, char *pane, size_t len)
{
	char again[8192];

	live_top_send_keys(tmux_session, key);
	live_top_capture(tmux_session, again, sizeof(again));
	for (int tries = 0;; tries++) {
		usleep(300 * 1000);
		live_top_capture(tmux_session, pane, len);
		if (strstr(pane, "PAUSED") && strstr(pane, shown) && !strcmp(pane, again))
			return;
		snprintf(again, sizeof(again), "%s", pane);
		if (tries >= SHOW_LIMIT_S * 3)
			fail_msg("no steady screen sorted by %s in %d s:\n%s", shown, SHOW_LIMIT_S, pane);
	}
}

static void memory_mode_ranks_growth_and_release(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	char command[PATH_MAX * 3], pane[8192];
	struct memory_pane grow_a = { 0 }, free_b = { 0 };

	if (!live_top_tmux_present())
		skip();
	FORMAT(command, "sh -c '%s top --no-native --no-kernel --mode memory -F 250 -- %s %s/tests/scripts/%s "
			"memory; echo EXITED $?; sleep 60'",
	       pybpfprof_binary(), python->command, test_source_dir(), "live_top_work.py");
	live_top_start(tmux_session, sizeof(tmux_session), "top-memory", command);
	/* 10 rounds of 32 MB released at least (what the interpreter grew by at start is a few MB beside
	 * them): a slow start or a loaded host only takes longer */
	for (int tries = 0;; tries++) {
		usleep(500 * 1000);
		live_top_capture(tmux_session, pane, sizeof(pane));
		if (read_memory_pane(pane, "free_b (", &free_b) && free_b.released >= 320.0)
			break;
		if (tries >= SHOW_LIMIT_S * 2)
			fail_msg("no 320 MB released in %d s:\n%s", SHOW_LIMIT_S, pane);
	}
	/* paused, the screen stays as drawn while it is read; each sort key redraws it */
	live_top_send_keys(tmux_session, "Space");
	paused_screen_after("3", "sorted by own growth", pane, sizeof(pane));
	print_message("%s\n", pane);
	assert_non_null(strstr(pane, "OwnFreed"));
	assert_true(live_top_first_row_is(pane, "grow_a ("));
	assert_true(read_memory_pane(pane, "grow_a (", &grow_a));
	assert_true(grow_a.grown_in >= 0.8 * grow_a.grown);
	assert_true(grow_a.released_in <= 0.2 * grow_a.released);
	paused_screen_after("5", "sorted by own freed", pane, sizeof(pane));
	print_message("%s\n", pane);
	assert_true(live_top_first_row_is(pane, "free_b ("));
	assert_true(read_memory_pane(pane, "free_b (", &free_b));
	assert_true(free_b.released_in >= 0.8 * free_b.released);
	assert_true(free_b.grown_in <= 0.2 * free_b.grown);
	quit_view(pane, sizeof(pane));
}

int main(void)
{
	/* each with its tmux session ended after it, whatever its outcome */
	const struct CMUnitTest tests[] = {
		{ "off_cpu_ranks_blocked_time_3.12", off_cpu_ranks_blocked_time, NULL, kill_tmux_session, (void *)"3.12" },
		{ "exception_mode_ranks_raisers_3.12", exception_mode_ranks_raisers, NULL, kill_tmux_session,
		  (void *)"3.12" },
		{ "memory_mode_ranks_growth_and_release_3.12", memory_mode_ranks_growth_and_release, NULL,
		  kill_tmux_session, (void *)"3.12" },
	};

	python_count = test_pythons(pythons, MAX_PYTHONS);
	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	if (geteuid() != 0) {
		print_message("test_live_top_events: needs root (real BPF), skipped\n");
		return 0;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
