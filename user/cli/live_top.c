// SPDX-License-Identifier: MIT
/*
 * `pybpfprof top -p PID` / `top -- COMMAND` / `top` (the whole host): the
 * hottest functions of a running profile, redrawn every second in the
 * terminal (ncurses), like py-spy top. Percentages are of the last few
 * seconds, each second weighing less as it ages (a share over one second at
 * 100 Hz moves in steps too coarse to rank by), times since the start; views
 * by function and line, process and thread; the keys are on screen. The
 * profiling itself is a session like `record`'s, with this file as its view
 * instead of output files.
 */
#include "cli/commands.h"
#include "cli/live_top.h"
#include "cli/options.h"
#include "profile/profile.h"
#include "sampler/perf_events.h"
#include "session/session.h"
#include "util/array.h"
#include "util/clock.h"
#include "util/exit_status.h"
#include "util/intern.h"
#include "util/text_quote.h"

#include <curses.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REDRAW_EVERY_MS 1000
#define LABEL_MAX 512
/* Each second's weight in the shares drops by this much a second: a second ago counts 0.71, two
 * seconds ago 0.5 (about the last 3.4 s in all), so the order follows a change within seconds and
 * does not jump with every sample. */
#define RECENT_DECAY_PER_SECOND 0.70710678

enum view_kind { VIEW_FUNCTIONS, VIEW_PROCESSES, VIEW_THREADS };
/* The freed keys are memory mode's only: what a row released since the start. */
enum sort_key { SORT_OWN_RECENT, SORT_TOTAL_RECENT, SORT_OWN_ALL, SORT_TOTAL_ALL, SORT_OWN_FREED, SORT_TOTAL_FREED };

/* A weight over the last few seconds: this second's, added to the earlier ones decayed. */
struct recent_weight {
	uint64_t this_second;
	double recent; /* up to the last redraw */
};

/* One row of a view: a function at a line, a process or a thread. */
struct row_counts {
	struct recent_weight own_recent;   /* functions: as the leaf */
	struct recent_weight total_recent; /* functions: anywhere in the stack; others: the same as own */
	uint64_t own_all;
	uint64_t total_all;
	uint64_t idle_all;     /* threads: samples that found it waiting */
	/* memory mode: the bytes released (samples of negative weight) since the start, as the leaf
	 * and anywhere in the stack */
	uint64_t freed_own_all;
	uint64_t freed_total_all;
	uint64_t last_sample;  /* the sample that last added to total: once per stack */
};

struct row_table {
	struct intern_table labels;
	struct row_counts *counts;
	size_t count;
	size_t capacity;
};

/* What the weights are and how the time columns show them: a sample's weight (pf_sample_weight) in
 * microseconds (the clock's modes), bytes (memory mode, a bytes event) or an event's unit; the
 * columns in hundredths of their unit (seconds, megabytes, thousands). */
struct weight_unit {
	const char *own_title, *total_title;
	double per_hundredth; /* weight per hundredth of what the column shows */
	char suffix;
};

static const struct weight_unit clock_unit = { "OwnTime", "TotalTime", 1e4, 's' };
static const struct weight_unit growth_unit = { "OwnGrowth", "TotGrowth", 1e4, 'M' };
static const struct weight_unit event_units[] = {
	[PERF_EVENT_COUNT] = { "OwnCount", "TotCount", 10, 'k' },
	[PERF_EVENT_BYTES] = { "OwnBytes", "TotBytes", 1e4, 'M' },
	[PERF_EVENT_NANOSECONDS] = { "OwnTime", "TotalTime", 1e7, 's' },
};

struct live_top {
	struct row_table tables[3];
	uint64_t samples;
	struct recent_weight recent_weight;
	/* The header's states: samples whose GIL the sampler could read, those holding it; samples
	 * that found their thread running (wall and gil modes, where a waiting thread is sampled). */
	struct recent_weight gil_known_weight;
	struct recent_weight gil_held_weight;
	struct recent_weight active_weight;
	bool waiting_sampled;
	uint64_t all_weight;
	uint64_t freed_all; /* memory mode: bytes released since the start */
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
	/* --event: the event's name and its weights' unit ("nanoseconds"), for the header; NULL
	 * when sampling on the clock */
	const char *event;
	const char *event_unit;
	const struct weight_unit *unit;
	bool memory; /* --mode memory: releases in columns of their own, and keys to rank by them */
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

/*
 * A file as short as it stays clear: a library by its file name (libc.so.6), a module of the
 * standard library or of site-packages by its import path (importlib/_bootstrap.py,
 * numpy/core/fromnumeric.py); the program's own files as they are.
 */
static const char *short_file(const struct pf_frame *frame)
{
	static const char *const package_dirs[] = { "/site-packages/", "/dist-packages/" };
	const char *file = frame->file, *found, *after = NULL;

	if (frame->kind == PF_FRAME_NATIVE) {
		found = strrchr(file, '/');
		return found ? found + 1 : file;
	}
	for (size_t i = 0; i < sizeof(package_dirs) / sizeof(package_dirs[0]); i++)
		for (found = strstr(file, package_dirs[i]); found; found = strstr(found + 1, package_dirs[i]))
			after = found + strlen(package_dirs[i]);
	if (after)
		return after;
	/* the standard library: .../lib/pythonX.Y/ (.../lib/python2.7/ too) */
	for (found = strstr(file, "/lib/python"); found; found = strstr(found + 1, "/lib/python")) {
		const char *rest = found + strlen("/lib/python"), *slash = strchr(rest, '/');

		if (slash && slash > rest && strspn(rest, "0123456789.t") == (size_t)(slash - rest))
			after = slash + 1;
	}
	return after && *after ? after : file;
}

/* A function's row: its name, where (file:line for Python, the library for native code). A Python
 * function has a row per line, as py-spy's top has. */
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
		if (!*frame->file)
			used = snprintf(out, len, "%s", frame->name);
		else if (frame->kind == PF_FRAME_PYTHON && frame->line > 0)
			used = snprintf(out, len, "%s (%s:%" PRId32 ")", frame->name, short_file(frame), frame->line);
		else
			used = snprintf(out, len, "%s (%s)", frame->name, short_file(frame));
		break;
	}
	return used < 0 ? 0 : (size_t)used < len ? (size_t)used : len - 1;
}

/* A sample's weight (growth, in memory mode) and release (memory mode's negative weights) to a row. */
static void add_weight(struct row_counts *counts, uint64_t weight, uint64_t freed, bool own, bool total,
		       uint64_t sample)
{
	if (own) {
		counts->own_recent.this_second += weight;
		counts->own_all += weight;
		counts->freed_own_all += freed;
	}
	if (total && counts->last_sample != sample) {
		counts->last_sample = sample;
		counts->total_recent.this_second += weight;
		counts->total_all += weight;
		counts->freed_total_all += freed;
	}
}

static void live_top_add_sample(void *ctx, const struct pf_sample *sample)
{
	struct live_top *top = ctx;
	int64_t signed_weight = pf_sample_weight(sample);
	uint64_t weight = signed_weight > 0 ? (uint64_t)signed_weight : 0;
	uint64_t freed = signed_weight < 0 ? -(uint64_t)signed_weight : 0;
	char label[LABEL_MAX];
	int64_t id;
	int len;

	top->samples++;
	top->recent_weight.this_second += weight;
	top->all_weight += weight;
	top->freed_all += freed;
	if (sample->status & PF_STATUS_GIL_KNOWN) {
		top->gil_known_weight.this_second += weight;
		if (sample->status & PF_STATUS_HAS_GIL)
			top->gil_held_weight.this_second += weight;
	}
	if (!(sample->status & PF_STATUS_IDLE))
		top->active_weight.this_second += weight;
	for (size_t i = 0; i < sample->frame_count; i++) {
		size_t label_len = frame_label(&sample->frames[i], label, sizeof(label));

		id = row_of(&top->tables[VIEW_FUNCTIONS], label, label_len);
		if (id >= 0)
			add_weight(&top->tables[VIEW_FUNCTIONS].counts[id], weight, freed,
				   i + 1 == sample->frame_count, true, top->samples);
	}
	len = snprintf(label, sizeof(label), "%" PRIu32 " %s", sample->pid,
		       sample->process_name ? sample->process_name : "");
	id = row_of(&top->tables[VIEW_PROCESSES], label, (size_t)len < sizeof(label) ? (size_t)len : sizeof(label) - 1);
	if (id >= 0)
		add_weight(&top->tables[VIEW_PROCESSES].counts[id], weight, freed, true, true, top->samples);
	len = snprintf(label, sizeof(label), "%" PRIu32 "/%" PRIu64 " %s", sample->pid, sample->tid,
		       sample->thread_name ? sample->thread_name : "");
	id = row_of(&top->tables[VIEW_THREADS], label, (size_t)len < sizeof(label) ? (size_t)len : sizeof(label) - 1);
	if (id >= 0) {
		add_weight(&top->tables[VIEW_THREADS].counts[id], weight, freed, true, true, top->samples);
		if (sample->status & PF_STATUS_IDLE)
			top->tables[VIEW_THREADS].counts[id].idle_all++;
	}
}

static double share(double part, double whole)
{
	return whole > 0 ? 100.0 * part / whole : 0.0;
}

/* A row's value for a sort key as the screen shows it, in tenths of a percent or hundredths of the
 * unit (a second, a megabyte): rows sort by what they show, so rows that look equal are equal and
 * go by the next key. */
static int64_t shown_value(const struct row_counts *counts, enum sort_key sort, double recent_weight,
			   const struct weight_unit *unit)
{
	switch (sort) {
	case SORT_TOTAL_RECENT:
		return llround(10.0 * share(counts->total_recent.recent, recent_weight));
	case SORT_OWN_ALL:
		return llround((double)counts->own_all / unit->per_hundredth);
	case SORT_TOTAL_ALL:
		return llround((double)counts->total_all / unit->per_hundredth);
	case SORT_OWN_FREED:
		return llround((double)counts->freed_own_all / unit->per_hundredth);
	case SORT_TOTAL_FREED:
		return llround((double)counts->freed_total_all / unit->per_hundredth);
	default:
		return llround(10.0 * share(counts->own_recent.recent, recent_weight));
	}
}

/* Own time ties go by total time and the other way round, over the same span. */
static enum sort_key tie_key(enum sort_key sort)
{
	static const enum sort_key ties[] = { [SORT_OWN_RECENT] = SORT_TOTAL_RECENT,
					      [SORT_TOTAL_RECENT] = SORT_OWN_RECENT,
					      [SORT_OWN_ALL] = SORT_TOTAL_ALL,
					      [SORT_TOTAL_ALL] = SORT_OWN_ALL,
					      [SORT_OWN_FREED] = SORT_TOTAL_FREED,
					      [SORT_TOTAL_FREED] = SORT_OWN_FREED };

	return ties[sort];
}

static const struct row_table *sorting_table;
static enum sort_key sorting_key;
static double sorting_recent_weight;
static const struct weight_unit *sorting_unit;

/* Descending by the key, then by its tie key; then by label, so that equal rows keep their places. */
static int compare_rows(const void *a, const void *b)
{
	uint32_t left_id = *(const uint32_t *)a, right_id = *(const uint32_t *)b;
	const struct row_counts *left = &sorting_table->counts[left_id], *right = &sorting_table->counts[right_id];
	enum sort_key keys[] = { sorting_key, tie_key(sorting_key) };

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		int64_t left_value = shown_value(left, keys[i], sorting_recent_weight, sorting_unit);
		int64_t right_value = shown_value(right, keys[i], sorting_recent_weight, sorting_unit);

		if (left_value != right_value)
			return left_value < right_value ? 1 : -1;
	}
	return strcmp(intern_key(&sorting_table->labels, left_id, NULL),
		      intern_key(&sorting_table->labels, right_id, NULL));
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
	static const char *const event_sort_names[] = { "own %", "total %", "own weight", "total weight" };
	static const char *const memory_sort_names[] = { "own %", "total %", "own growth",
							 "total growth", "own freed", "total freed" };
	double seconds = (double)(now_ms - top->started_ms) / 1000.0;

	attron(A_BOLD);
	mvprintw(0, 0, "pybpfprof top  %s", top->scope);
	attroff(A_BOLD);
	/* an event's samples come as it happens, at no rate: the header says what they weigh */
	if (top->event)
		mvprintw(1, 0, "%.1f s  %" PRIu64 " samples  event %s, weighed in %s  view: %s  sorted by %s%s",
			 seconds, top->samples, top->event, top->event_unit, view_names[top->view],
			 event_sort_names[top->sort], top->paused ? "  PAUSED" : "");
	else
		mvprintw(1, 0, "%.1f s  %" PRIu64 " samples  %u Hz %s  view: %s  sorted by %s%s", seconds,
			 top->samples, top->rate_hz, top->mode, view_names[top->view],
			 (top->memory ? memory_sort_names : sort_names)[top->sort], top->paused ? "  PAUSED" : "");
	/* memory: both totals since the start, in the columns' megabytes */
	if (top->memory)
		printw("  grown %.2fM released %.2fM", (double)top->all_weight / 1e6, (double)top->freed_all / 1e6);
	/* Of the last seconds, as the rows; each only where the samples say it (a process whose GIL
	 * could not be read is not in the GIL's share; cpu mode samples running threads only). */
	if (top->gil_known_weight.recent > 0)
		printw("  GIL %.1f%%", share(top->gil_held_weight.recent, top->gil_known_weight.recent));
	if (top->waiting_sampled && top->recent_weight.recent > 0)
		printw("  active %.1f%%", share(top->active_weight.recent, top->recent_weight.recent));
	attron(A_REVERSE);
	if (top->memory)
		mvprintw(2, 0, "keys: q quit  1 own%%  2 total%%  3 own growth  4 total growth  5 own freed  "
			       "6 total freed  f functions  p processes  t threads  space pause");
	else
		mvprintw(2, 0, "keys: q quit  1 own%%  2 total%%  3 own time  4 total time  f functions  p processes  "
			       "t threads  space pause");
	attroff(A_REVERSE);
}

static void draw_rows(struct live_top *top)
{
	const struct row_table *table = &top->tables[top->view];
	uint32_t *order = malloc((table->count ? table->count : 1) * sizeof(*order));
	int rows = LINES - 5, width = COLS, label_x = top->memory ? 61 : 39;
	double recent_weight = top->recent_weight.recent;
	const struct weight_unit *unit = top->unit;

	if (!order)
		return;
	for (size_t i = 0; i < table->count; i++)
		order[i] = (uint32_t)i;
	sorting_table = table;
	sorting_key = top->sort;
	sorting_recent_weight = recent_weight;
	sorting_unit = unit;
	qsort(order, table->count, sizeof(*order), compare_rows);
	attron(A_BOLD);
	mvprintw(4, 0, "%7s %7s %10s %10s  ", "%Own", "%Total", unit->own_title, unit->total_title);
	if (top->memory)
		printw("%10s %10s ", "OwnFreed", "TotFreed");
	if (top->view == VIEW_FUNCTIONS)
		printw("Function (file:line)");
	else
		printw("%s", top->view == VIEW_PROCESSES ? "Process" : "Thread");
	attroff(A_BOLD);
	for (int r = 0; r < rows && (size_t)r < table->count; r++) {
		const struct row_counts *counts = &table->counts[order[r]];
		const char *label = intern_key(&table->labels, order[r], NULL);

		mvprintw(5 + r, 0, "%6.1f%% %6.1f%% %9.2f%c %9.2f%c  ",
			 (double)shown_value(counts, SORT_OWN_RECENT, recent_weight, unit) / 10.0,
			 (double)shown_value(counts, SORT_TOTAL_RECENT, recent_weight, unit) / 10.0,
			 (double)shown_value(counts, SORT_OWN_ALL, recent_weight, unit) / 100.0, unit->suffix,
			 (double)shown_value(counts, SORT_TOTAL_ALL, recent_weight, unit) / 100.0, unit->suffix);
		if (top->memory)
			printw("%9.2f%c %9.2f%c ", (double)shown_value(counts, SORT_OWN_FREED, recent_weight, unit) / 100.0,
			       unit->suffix, (double)shown_value(counts, SORT_TOTAL_FREED, recent_weight, unit) / 100.0,
			       unit->suffix);
		/* under its title: the columns before it are 39 wide (61 with memory's releases) */
		put_label(5 + r, label_x, label, width - label_x);
		/* idle: of the clock's ticks, in microseconds as they are; an event's samples are neither
		 * (an off-cpu block is a waiting thread by nature) */
		if (top->view == VIEW_THREADS && !top->event && counts->own_all)
			printw("  idle %.0f%%",
			       share((double)counts->idle_all * 1e6 / top->rate_hz, (double)counts->own_all));
	}
	free(order);
}

static void fold_second(struct recent_weight *weight)
{
	weight->recent = weight->recent * RECENT_DECAY_PER_SECOND + (double)weight->this_second;
	weight->this_second = 0;
}

/* A second has passed: its weights join the recent ones, which age by a second. */
static void fold_recent(struct live_top *top)
{
	for (int v = 0; v < 3; v++)
		for (size_t i = 0; i < top->tables[v].count; i++) {
			fold_second(&top->tables[v].counts[i].own_recent);
			fold_second(&top->tables[v].counts[i].total_recent);
		}
	fold_second(&top->recent_weight);
	fold_second(&top->gil_known_weight);
	fold_second(&top->gil_held_weight);
	fold_second(&top->active_weight);
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
	case '5':
	case '6':
		/* what was released: memory mode's only */
		if (top->memory)
			top->sort = (enum sort_key)(key - '1');
		return top->memory;
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
		/* paused, the shares go on aging unseen: they are current again when it resumes */
		fold_recent(top);
		if (!top->paused)
			draw(top, now_ms);
		top->drawn_ms = now_ms;
	} else if (redraw) {
		draw(top, now_ms);
	}
	return false;
}

int live_top_run(struct session_options *options, const char *scope)
{
	struct live_top top = { .scope = scope, .rate_hz = options->frequency_hz,
				.mode = options_mode_name(options->mode),
				.waiting_sampled = !session_mode_on_ticks(options->mode),
				.unit = options->mode == SESSION_MODE_MEMORY ? &growth_unit : &clock_unit,
				.memory = options->mode == SESSION_MODE_MEMORY && !options->event };
	struct session_view view = { .ctx = &top, .add_sample = live_top_add_sample, .tick = live_top_tick };
	int status;

	if (!isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO)) {
		fprintf(stderr, "pybpfprof: top: the live view needs a terminal (pybpfprof top FILE reads a file)\n");
		return EXIT_STATUS_USAGE;
	}
	if (options->event) {
		enum perf_event_unit unit = session_event_unit(options);

		top.event = session_event_name(options);
		top.event_unit = perf_event_unit_name(unit);
		top.unit = &event_units[unit];
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
