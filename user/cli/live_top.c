// SPDX-License-Identifier: MIT
/*
 * `pybpfprof top -p PID` / `top -- COMMAND` / `top` (the whole host): the
 * hottest functions of a running profile, redrawn every second in the
 * terminal (ncurses), like py-spy top. Percentages are of the last second,
 * times since the start; views by function, process and thread; the keys
 * are on screen. The profiling itself is a session like `record`'s, with
 * this file as its view instead of output files.
 */
#include "cli/commands.h"
#include "cli/live_top.h"
#include "profile/profile.h"
#include "session/session.h"
#include "util/array.h"
#include "util/clock.h"
#include "util/exit_status.h"
#include "util/intern.h"
#include "util/text_quote.h"

#include <curses.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REDRAW_EVERY_MS 1000
#define LABEL_MAX 512

enum view_kind { VIEW_FUNCTIONS, VIEW_PROCESSES, VIEW_THREADS };
enum sort_key { SORT_OWN_RECENT, SORT_TOTAL_RECENT, SORT_OWN_ALL, SORT_TOTAL_ALL };

/* One row of a view: a function, a process or a thread. */
struct row_counts {
	uint64_t own_recent;   /* weight in the last second (functions: as the leaf) */
	uint64_t total_recent; /* functions: anywhere in the stack; others: the same as own */
	uint64_t own_all;
	uint64_t total_all;
	uint64_t idle_all;     /* threads: samples that found it waiting */
	uint64_t last_sample;  /* the sample that last added to total: once per stack */
};

struct row_table {
	struct intern_table labels;
	struct row_counts *counts;
	size_t count;
	size_t capacity;
};

struct live_top {
	struct row_table tables[3];
	uint64_t samples;
	uint64_t recent_weight;
	uint64_t all_weight;
	uint64_t started_ms;
	uint64_t drawn_ms;
	enum view_kind view;
	enum sort_key sort;
	bool paused;
	bool quit;
	bool on_screen;      /* curses started (at the first tick: setup errors print plainly) */
	const char *scope;   /* what is profiled, for the header */
	unsigned rate_hz;
	const char *mode;
};

static int64_t row_of(struct row_table *table, const char *label, size_t len)
{
	int64_t id = intern_add(&table->labels, label, len, NULL);

	if (id < 0)
		return id;
	if (ARRAY_RESERVE(table->counts, table->capacity, (size_t)id + 1))
		return -ENOMEM;
	while (table->count <= (size_t)id)
		table->counts[table->count++] = (struct row_counts){ .last_sample = UINT64_MAX };
	return id;
}

static size_t frame_label(const struct pf_frame *frame, char *out, size_t len)
{
	int used;

	switch (frame->kind) {
	case PF_FRAME_KERNEL:
		used = snprintf(out, len, "%s [kernel]", frame->name);
		break;
	case PF_FRAME_INVALID:
		used = snprintf(out, len, "[truncated stack]");
		break;
	default:
		used = *frame->file ? snprintf(out, len, "%s (%s)", frame->name, frame->file)
				    : snprintf(out, len, "%s", frame->name);
		break;
	}
	return used < 0 ? 0 : (size_t)used < len ? (size_t)used : len - 1;
}

static void add_weight(struct row_counts *counts, uint64_t weight, bool own, bool total, uint64_t sample)
{
	if (own) {
		counts->own_recent += weight;
		counts->own_all += weight;
	}
	if (total && counts->last_sample != sample) {
		counts->last_sample = sample;
		counts->total_recent += weight;
		counts->total_all += weight;
	}
}

static void live_top_add_sample(void *ctx, const struct pf_sample *sample)
{
	struct live_top *top = ctx;
	int64_t signed_weight = pf_sample_weight(sample);
	uint64_t weight = signed_weight > 0 ? (uint64_t)signed_weight : 0;
	char label[LABEL_MAX];
	int64_t id;
	int len;

	top->samples++;
	top->recent_weight += weight;
	top->all_weight += weight;
	for (size_t i = 0; i < sample->frame_count; i++) {
		size_t label_len = frame_label(&sample->frames[i], label, sizeof(label));

		id = row_of(&top->tables[VIEW_FUNCTIONS], label, label_len);
		if (id >= 0)
			add_weight(&top->tables[VIEW_FUNCTIONS].counts[id], weight, i + 1 == sample->frame_count, true,
				   top->samples);
	}
	len = snprintf(label, sizeof(label), "%" PRIu32 " %s", sample->pid,
		       sample->process_name ? sample->process_name : "");
	id = row_of(&top->tables[VIEW_PROCESSES], label, (size_t)len < sizeof(label) ? (size_t)len : sizeof(label) - 1);
	if (id >= 0)
		add_weight(&top->tables[VIEW_PROCESSES].counts[id], weight, true, true, top->samples);
	len = snprintf(label, sizeof(label), "%" PRIu32 "/%" PRIu64 " %s", sample->pid, sample->tid,
		       sample->thread_name ? sample->thread_name : "");
	id = row_of(&top->tables[VIEW_THREADS], label, (size_t)len < sizeof(label) ? (size_t)len : sizeof(label) - 1);
	if (id >= 0) {
		add_weight(&top->tables[VIEW_THREADS].counts[id], weight, true, true, top->samples);
		if (sample->status & PF_STATUS_IDLE)
			top->tables[VIEW_THREADS].counts[id].idle_all++;
	}
}

static uint64_t sort_value(const struct row_counts *counts, enum sort_key sort)
{
	switch (sort) {
	case SORT_TOTAL_RECENT:
		return counts->total_recent;
	case SORT_OWN_ALL:
		return counts->own_all;
	case SORT_TOTAL_ALL:
		return counts->total_all;
	default:
		return counts->own_recent;
	}
}

static const struct row_table *sorting_table;
static enum sort_key sorting_key;

static int compare_rows(const void *a, const void *b)
{
	uint64_t left = sort_value(&sorting_table->counts[*(const uint32_t *)a], sorting_key);
	uint64_t right = sort_value(&sorting_table->counts[*(const uint32_t *)b], sorting_key);

	return left < right ? 1 : left > right ? -1 : 0;
}

static double share(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* A label from the target, made safe for the terminal and cut to width. */
static void put_label(int y, int x, const char *label, int width)
{
	char safe[LABEL_MAX * 4];

	if (width <= 0)
		return;
	text_escaped(safe, sizeof(safe), label);
	mvaddnstr(y, x, safe, width);
}

static void draw_header(const struct live_top *top, uint64_t now_ms)
{
	static const char *const view_names[] = { "functions", "processes", "threads" };
	static const char *const sort_names[] = { "own %", "total %", "own time", "total time" };
	double seconds = (double)(now_ms - top->started_ms) / 1000.0;

	attron(A_BOLD);
	mvprintw(0, 0, "pybpfprof top  %s", top->scope);
	attroff(A_BOLD);
	mvprintw(1, 0, "%.1f s  %" PRIu64 " samples  %u Hz %s  view: %s  sorted by %s%s", seconds, top->samples,
		 top->rate_hz, top->mode, view_names[top->view], sort_names[top->sort], top->paused ? "  PAUSED" : "");
	attron(A_REVERSE);
	mvprintw(2, 0, "keys: q quit  1 own%%  2 total%%  3 own time  4 total time  f functions  p processes  "
		       "t threads  space pause");
	attroff(A_REVERSE);
}

static void draw_rows(struct live_top *top)
{
	const struct row_table *table = &top->tables[top->view];
	uint32_t *order = malloc((table->count ? table->count : 1) * sizeof(*order));
	int rows = LINES - 5, width = COLS;

	if (!order)
		return;
	for (size_t i = 0; i < table->count; i++)
		order[i] = (uint32_t)i;
	sorting_table = table;
	sorting_key = top->sort;
	qsort(order, table->count, sizeof(*order), compare_rows);
	attron(A_BOLD);
	mvprintw(4, 0, "%7s %7s %10s %10s  %s", "%Own", "%Total", "OwnTime", "TotalTime",
		 top->view == VIEW_FUNCTIONS ? "Function (file)" : top->view == VIEW_PROCESSES ? "Process" : "Thread");
	attroff(A_BOLD);
	for (int r = 0; r < rows && (size_t)r < table->count; r++) {
		const struct row_counts *counts = &table->counts[order[r]];
		const char *label = intern_key(&table->labels, order[r], NULL);

		mvprintw(5 + r, 0, "%6.1f%% %6.1f%% %9.2fs %9.2fs  ", share(counts->own_recent, top->recent_weight),
			 share(counts->total_recent, top->recent_weight), (double)counts->own_all / 1e6,
			 (double)counts->total_all / 1e6);
		put_label(5 + r, 43, label, width - 43);
		if (top->view == VIEW_THREADS && counts->own_all)
			printw("  idle %.0f%%", share(counts->idle_all * 1000000u / top->rate_hz, counts->own_all));
	}
	free(order);
}

/* Starts a new "last second": the recent counters restart. */
static void restart_recent(struct live_top *top)
{
	for (int v = 0; v < 3; v++)
		for (size_t i = 0; i < top->tables[v].count; i++) {
			top->tables[v].counts[i].own_recent = 0;
			top->tables[v].counts[i].total_recent = 0;
		}
	top->recent_weight = 0;
}

static void draw(struct live_top *top, uint64_t now_ms)
{
	erase();
	draw_header(top, now_ms);
	draw_rows(top);
	refresh();
}

static bool handle_key(struct live_top *top, int key)
{
	switch (key) {
	case 'q':
	case 'Q':
		top->quit = true;
		return true;
	case '1':
	case '2':
	case '3':
	case '4':
		top->sort = (enum sort_key)(key - '1');
		return true;
	case 'f':
		top->view = VIEW_FUNCTIONS;
		return true;
	case 'p':
		top->view = VIEW_PROCESSES;
		return true;
	case 't':
		top->view = VIEW_THREADS;
		return true;
	case ' ':
		top->paused = !top->paused;
		return true;
	default:
		return false;
	}
}

static bool live_top_tick(void *ctx, uint64_t now_ms)
{
	struct live_top *top = ctx;
	bool redraw = false;
	int key;

	if (!top->on_screen) {
		initscr();
		cbreak();
		noecho();
		nodelay(stdscr, TRUE);
		keypad(stdscr, TRUE);
		curs_set(0);
		top->on_screen = true;
		top->started_ms = now_ms;
		top->drawn_ms = now_ms;
		draw(top, now_ms);
	}
	while ((key = getch()) != ERR)
		redraw |= handle_key(top, key);
	if (top->quit)
		return true;
	if (now_ms - top->drawn_ms >= REDRAW_EVERY_MS) {
		if (!top->paused) {
			draw(top, now_ms);
			restart_recent(top);
		}
		top->drawn_ms = now_ms;
	} else if (redraw) {
		draw(top, now_ms);
	}
	return false;
}

int live_top_run(struct session_options *options, const char *scope)
{
	struct live_top top = { .scope = scope, .rate_hz = options->frequency_hz,
				.mode = session_mode_name(options->mode) };
	struct session_view view = { .ctx = &top, .add_sample = live_top_add_sample, .tick = live_top_tick };
	int status;

	if (!isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO)) {
		fprintf(stderr, "pybpfprof: top: the live view needs a terminal (pybpfprof top FILE reads a file)\n");
		return EXIT_STATUS_USAGE;
	}
	for (int v = 0; v < 3; v++)
		intern_init(&top.tables[v].labels);
	options->view = &view;
	options->quiet = true;
	status = session_run(options);
	/* The terminal as it was, whatever ended the run. */
	if (top.on_screen)
		endwin();
	for (int v = 0; v < 3; v++) {
		intern_free(&top.tables[v].labels);
		free(top.tables[v].counts);
	}
	return status;
}
