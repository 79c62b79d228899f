// SPDX-License-Identifier: MIT
/*
 * `pybpfprof diff BASE NEW`: what changed between two profiles of any format we
 * read. Each profile is normalised by its own total weight (time, bytes or
 * samples, pf_sample_weight), so runs of different lengths or rates compare:
 * a function's share is its weight over its profile's total, and a change is
 * NEW's share minus BASE's, in percentage points. Outputs: a table of the
 * largest changes of own and total share (stdout, or -o FILE.txt), a
 * differential flame graph (-o FILE.svg, formats/flamegraph.h), and a pprof
 * pair for `go tool pprof -diff_base` (-o FILE.pb.gz: NEW there, BASE beside
 * it as FILE.base.pb.gz). --fail-if turns a growth into an exit status.
 */
#include "cli/commands.h"
#include "cli/options.h"
#include "formats/flamegraph.h"
#include "formats/format_registry.h"
#include "profile/profile.h"
#include "util/array.h"
#include "util/exit_status.h"
#include "util/fd_write.h"
#include "util/intern.h"
#include "util/sudo_user.h"
#include "util/text_quote.h"

#include <argp.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum diff_side { SIDE_BASE, SIDE_NEW, SIDE_COUNT };
static const char *const side_names[SIDE_COUNT] = { "BASE", "NEW" };

#define DIFF_MAX_OUTPUTS 8
#define DIFF_MAX_THRESHOLDS 16
#define DIFF_DEFAULT_ROWS 10

struct function_change {
	uint64_t own[SIDE_COUNT];
	uint64_t total[SIDE_COUNT];
	uint64_t last_sample[SIDE_COUNT]; /* sample number that last added to total: once per stack */
};

struct profile_totals {
	uint64_t weight;
	uint64_t samples;
	uint32_t metrics; /* PF_METRIC_* of any sample: the weight's unit */
	const struct pf_format *format;
};

struct diff_table {
	struct intern_table names;           /* function label (as `top` prints it) -> id */
	struct function_change *by_function; /* by id */
	size_t function_count;
	size_t function_capacity;
	struct profile_totals totals[SIDE_COUNT];
};

/* --fail-if FUNC>+N% (or FUNC<-N%): a limit on the change of FUNC's total share. */
struct threshold {
	const char *function;
	size_t function_len;
	bool shrink;   /* '<': fails when the change is below points */
	double points;
};

struct diff_args {
	const char *paths[SIDE_COUNT];
	size_t path_count;
	const char *outputs[DIFF_MAX_OUTPUTS];
	size_t output_count;
	struct threshold thresholds[DIFF_MAX_THRESHOLDS];
	size_t threshold_count;
	size_t rows;
};

/* What each side's samples also go to: the flame graph, the pprof pair. */
struct diff_writers {
	struct pf_writer *svg;
	const char *svg_path;
	struct pf_writer *pprof[SIDE_COUNT];
	const char *pprof_paths[SIDE_COUNT];
	char *pprof_base_path; /* allocated */
};

/* ---- the table ---- */

/* The label `top` gives the frame's function, so that the two commands name it alike. */
static int64_t function_id(struct diff_table *table, const struct pf_frame *frame)
{
	char label[1024];
	int len = pf_frame_function_label(frame, label, sizeof(label));

	if (len < 0)
		return len;
	return intern_add(&table->names, label, (size_t)len, NULL);
}

static int table_reserve(struct diff_table *table, size_t id)
{
	if (ARRAY_RESERVE(table->by_function, table->function_capacity, id + 1))
		return -ENOMEM;
	while (table->function_count <= id)
		table->by_function[table->function_count++] =
			(struct function_change){ .last_sample = { UINT64_MAX, UINT64_MAX } };
	return 0;
}

/* Frees (negative weights) take nothing, as in `top`: a memory profile ranks allocations. */
static uint64_t sample_weight(const struct pf_sample *sample)
{
	int64_t weight = pf_sample_weight(sample);

	return weight > 0 ? (uint64_t)weight : 0;
}

static int table_add(struct diff_table *table, enum diff_side side, const struct pf_sample *sample)
{
	struct profile_totals *totals = &table->totals[side];
	uint64_t weight = sample_weight(sample);

	for (size_t i = 0; i < sample->frame_count; i++) {
		int64_t id = function_id(table, &sample->frames[i]);
		struct function_change *function;

		if (id < 0 || table_reserve(table, (size_t)id))
			return -ENOMEM;
		function = &table->by_function[id];
		if (function->last_sample[side] != totals->samples) {
			function->total[side] += weight;
			function->last_sample[side] = totals->samples;
		}
		if (i + 1 == sample->frame_count)
			function->own[side] += weight;
	}
	totals->weight += weight;
	totals->samples++;
	totals->metrics |= sample->metrics;
	return 0;
}

static double share(const struct diff_table *table, enum diff_side side, uint64_t weight)
{
	return table->totals[side].weight ? 100.0 * (double)weight / (double)table->totals[side].weight : 0.0;
}

enum ranking { RANK_OWN, RANK_TOTAL };

/* The change of a function's share, in percentage points. */
static double share_change(const struct diff_table *table, uint32_t id, enum ranking ranking)
{
	const struct function_change *function = &table->by_function[id];
	const uint64_t *weights = ranking == RANK_OWN ? function->own : function->total;

	return share(table, SIDE_NEW, weights[SIDE_NEW]) - share(table, SIDE_BASE, weights[SIDE_BASE]);
}

struct ranked {
	uint32_t id;
	double change;
	const char *label;
};

/* Largest change either way first; equal ones by name, so the order is the same every run. */
static int compare_ranked(const void *a, const void *b)
{
	const struct ranked *left = a, *right = b;
	double left_size = fabs(left->change), right_size = fabs(right->change);

	if (left_size != right_size)
		return left_size > right_size ? -1 : 1;
	return strcmp(left->label, right->label);
}

/* The weight's unit and amount: "1.23 s", "4096 bytes", "37 samples". */
static void print_weight(FILE *out, const struct profile_totals *totals)
{
	if (totals->metrics & PF_METRIC_TIME && totals->weight >= 1000000)
		fprintf(out, "%.3f s", (double)totals->weight / 1e6);
	else if (totals->metrics & PF_METRIC_TIME)
		fprintf(out, "%" PRIu64 " \xc2\xb5s", totals->weight);
	else if (totals->metrics & PF_METRIC_MEMORY)
		fprintf(out, "%" PRIu64 " bytes", totals->weight);
	else
		fprintf(out, "%" PRIu64 " samples", totals->weight);
}

static void print_normalisation(FILE *out, const struct diff_table *table, const char *const paths[])
{
	for (int side = 0; side < SIDE_COUNT; side++) {
		const struct profile_totals *totals = &table->totals[side];

		fprintf(out, "%-4s ", side_names[side]);
		fput_escaped(out, paths[side]);
		fprintf(out, ": %" PRIu64 " %s%s (%s), total weight ", totals->samples,
			totals->format->aggregated ? "distinct stack" : "sample",
			totals->samples == 1 ? "" : "s", totals->format->name);
		print_weight(out, totals);
		fputc('\n', out);
	}
	fputs("normalised: each function's weight over its own profile's total weight (100%)", out);
	if (table->totals[SIDE_BASE].weight && table->totals[SIDE_NEW].weight)
		fprintf(out, "; NEW's total is %.3fx BASE's",
			(double)table->totals[SIDE_NEW].weight / (double)table->totals[SIDE_BASE].weight);
	fputs("\nchanges are NEW's share minus BASE's, in percentage points\n", out);
}

static int print_ranking(FILE *out, const struct diff_table *table, enum ranking ranking, size_t rows)
{
	size_t count = intern_count(&table->names), shown = 0;
	struct ranked *ranked = malloc((count ? count : 1) * sizeof(*ranked));

	if (!ranked)
		return -ENOMEM;
	for (uint32_t id = 0; id < count; id++)
		ranked[id] = (struct ranked){ .id = id, .change = share_change(table, id, ranking),
					      .label = intern_key(&table->names, id, NULL) };
	qsort(ranked, count, sizeof(*ranked), compare_ranked);
	fprintf(out, "\n%s\n    BASE      NEW   CHANGE  FUNCTION\n",
		ranking == RANK_OWN ? "own share (the leaf function), largest changes:"
				    : "total share (with callees), largest changes:");
	for (size_t i = 0; i < count && shown < rows; i++) {
		const struct function_change *function = &table->by_function[ranked[i].id];
		const uint64_t *weights = ranking == RANK_OWN ? function->own : function->total;

		/* Under half a hundredth of a point prints as 0: nothing to show. */
		if (fabs(ranked[i].change) < 0.005)
			break;
		fprintf(out, " %6.2f%%  %6.2f%%  %+7.2f  ", share(table, SIDE_BASE, weights[SIDE_BASE]),
			share(table, SIDE_NEW, weights[SIDE_NEW]), ranked[i].change);
		/* Names come from the files: nothing in them may drive the terminal. */
		fput_escaped(out, ranked[i].label);
		fputc('\n', out);
		shown++;
	}
	if (!shown)
		fputs("  (no change)\n", out);
	free(ranked);
	return 0;
}

/* ---- thresholds ---- */

/* FUNC matches a label that is FUNC, or whose function name is: "b" matches "b (app.py)". */
static bool label_matches(const char *label, const struct threshold *threshold)
{
	if (strncmp(label, threshold->function, threshold->function_len) != 0)
		return false;
	label += threshold->function_len;
	return !*label || !strncmp(label, " (", 2) || !strcmp(label, " [kernel]");
}

static int parse_threshold(const char *text, struct threshold *threshold)
{
	const char *op = strrchr(text, '>');
	const char *other = strrchr(text, '<');
	char *end;

	if (!op || (other && other > op))
		op = other;
	if (!op || op == text)
		return -EINVAL;
	threshold->function = text;
	threshold->function_len = (size_t)(op - text);
	threshold->shrink = *op == '<';
	errno = 0;
	threshold->points = strtod(op + 1, &end);
	if (errno || end == op + 1 || (*end && strcmp(end, "%") != 0) || !isfinite(threshold->points))
		return -EINVAL;
	return 0;
}

/* 0 when every threshold holds; else 1, each one exceeded said on stderr. */
static int check_thresholds(const struct diff_table *table, const struct diff_args *args)
{
	size_t count = intern_count(&table->names);
	int exceeded = 0;

	for (size_t t = 0; t < args->threshold_count; t++) {
		const struct threshold *threshold = &args->thresholds[t];
		bool found = false;

		for (uint32_t id = 0; id < count; id++) {
			const char *label = intern_key(&table->names, id, NULL);
			double change = share_change(table, id, RANK_TOTAL);

			if (!label_matches(label, threshold))
				continue;
			found = true;
			if (threshold->shrink ? change < threshold->points : change > threshold->points) {
				fputs("pybpfprof: diff: --fail-if: ", stderr);
				fput_escaped(stderr, label);
				fprintf(stderr, ": total share changed by %+.2f points (limit %c%+.2f)\n",
					change, threshold->shrink ? '<' : '>', threshold->points);
				exceeded = 1;
			}
		}
		if (!found) {
			fputs("pybpfprof: diff: --fail-if: no function '", stderr);
			fwrite(threshold->function, 1, threshold->function_len, stderr);
			fputs("' in either profile\n", stderr);
		}
	}
	return exceeded;
}

/* ---- outputs ---- */

/* "run.pb.gz" -> "run.base.pb.gz", "run.pprof" -> "run.base.pprof": BASE's pprof beside NEW's. */
static char *pprof_base_path(const char *path)
{
	const char *extensions[] = { ".pb.gz", ".pprof" };
	size_t len = strlen(path);
	char *out;

	for (size_t i = 0; i < sizeof(extensions) / sizeof(extensions[0]); i++) {
		size_t extension_len = strlen(extensions[i]);

		if (len > extension_len && !strcasecmp(path + len - extension_len, extensions[i])) {
			if (asprintf(&out, "%.*s.base%s", (int)(len - extension_len), path,
				     path + len - extension_len) < 0)
				return NULL;
			return out;
		}
	}
	return asprintf(&out, "%s.base", path) < 0 ? NULL : out;
}

static const struct pf_format diff_svg_format = {
	.name = "svg",
	.extensions = { "svg" },
	.writer_create = flamegraph_diff_writer_create,
};

static int open_writer(struct pf_writer **writer, const char *path, const struct pf_format *format)
{
	struct pf_writer_options options = PF_WRITER_OPTIONS_DEFAULT;
	char err[256];
	int status = pf_output_check(path, err, sizeof(err));

	if (!status)
		status = pf_writer_open(writer, path, format, &options);
	if (status) {
		snprintf(err, sizeof(err), "cannot write: %s", strerror(-status));
		cli_error_print("diff", path, err);
	}
	return status;
}

/* Sorts the -o paths into the writers by extension; EXIT_STATUS_* of a failure, or 0 and
 * *table_path the text table's (NULL: stdout). */
static int open_outputs(const struct diff_args *args, struct diff_writers *writers, const char **table_path)
{
	*table_path = NULL;
	for (size_t i = 0; i < args->output_count; i++) {
		const char *path = args->outputs[i];
		const struct pf_format *format = format_registry_find_path(path);
		size_t len = strlen(path);

		if (format && !strcmp(format->name, "svg") && !writers->svg)
			writers->svg_path = path;
		else if (format && !strcmp(format->name, "pprof") && !writers->pprof[SIDE_NEW])
			writers->pprof_paths[SIDE_NEW] = path;
		else if (len > 4 && !strcasecmp(path + len - 4, ".txt") && !*table_path)
			*table_path = path;
		else {
			cli_error_print("diff", path,
					"not an output of diff: .svg, .txt or .pb.gz, one of each");
			return EXIT_STATUS_USAGE;
		}
		if (writers->svg_path && !writers->svg &&
		    open_writer(&writers->svg, writers->svg_path, &diff_svg_format))
			return EXIT_STATUS_OUTPUT;
		if (writers->pprof_paths[SIDE_NEW] && !writers->pprof[SIDE_NEW]) {
			const struct pf_format *pprof = format_registry_find_name("pprof");

			writers->pprof_base_path = pprof_base_path(path);
			writers->pprof_paths[SIDE_BASE] = writers->pprof_base_path;
			if (!writers->pprof_base_path)
				return EXIT_STATUS_FAILED;
			if (open_writer(&writers->pprof[SIDE_NEW], path, pprof) ||
			    open_writer(&writers->pprof[SIDE_BASE], writers->pprof_base_path, pprof))
				return EXIT_STATUS_OUTPUT;
		}
	}
	return 0;
}

static void abort_outputs(struct diff_writers *writers)
{
	if (writers->svg)
		pf_writer_abort(writers->svg);
	for (int side = 0; side < SIDE_COUNT; side++)
		if (writers->pprof[side])
			pf_writer_abort(writers->pprof[side]);
	free(writers->pprof_base_path);
	*writers = (struct diff_writers){ 0 };
}

/* Closes each writer: 0, or EXIT_STATUS_OUTPUT after saying which failed. */
static int close_outputs(struct diff_writers *writers)
{
	struct pf_writer **all[] = { &writers->svg, &writers->pprof[SIDE_NEW], &writers->pprof[SIDE_BASE] };
	const char *paths[] = { writers->svg_path, writers->pprof_paths[SIDE_NEW], writers->pprof_paths[SIDE_BASE] };
	int status = 0;

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		struct pf_writer *writer = *all[i];
		char err[512];

		if (!writer)
			continue;
		*all[i] = NULL;
		if (status) {
			pf_writer_abort(writer);
			continue;
		}
		if (pf_writer_close(writer)) {
			/* pf_writer_close frees the writer with its message: say it generically. */
			snprintf(err, sizeof(err), "could not be written");
			cli_error_print("diff", paths[i], err);
			status = EXIT_STATUS_OUTPUT;
		}
	}
	free(writers->pprof_base_path);
	writers->pprof_base_path = NULL;
	return status;
}

/* The metadata a writer gets from a side: all of it for its pprof, NEW's for the graph. */
static int copy_metadata(struct pf_reader *reader, struct pf_writer *writer)
{
	for (size_t i = 0; writer && i < pf_reader_metadata_count(reader); i++) {
		const char *key, *value;
		int err;

		pf_reader_metadata_at(reader, i, &key, &value);
		err = pf_writer_set_metadata(writer, key, value);
		if (err)
			return err;
	}
	return 0;
}

static int write_sample(struct diff_writers *writers, enum diff_side side, const struct pf_sample *sample)
{
	int err = 0;

	if (writers->svg)
		err = pf_writer_add_sample(writers->svg, sample);
	if (!err && writers->pprof[side])
		err = pf_writer_add_sample(writers->pprof[side], sample);
	return err;
}

/* ---- reading ---- */

/* Reads one side into the table and the writers: 0, or the exit status after the message. */
static int read_side(struct diff_table *table, struct diff_writers *writers, enum diff_side side,
		     const char *path)
{
	struct pf_reader *reader;
	struct pf_sample sample;
	char err[512];
	int got, status = 0;

	if (format_registry_open_reader(&reader, path, err, sizeof(err))) {
		cli_error_print("diff", path, err);
		return EXIT_STATUS_TARGET;
	}
	table->totals[side].format = pf_reader_format(reader);
	if (writers->svg &&
	    pf_writer_set_metadata(writers->svg, FLAMEGRAPH_DIFF_SIDE, side == SIDE_BASE ? "base" : "new")) {
		pf_reader_close(reader);
		return EXIT_STATUS_FAILED;
	}
	while ((got = pf_reader_next_sample(reader, &sample)) > 0) {
		if (table_add(table, side, &sample)) {
			got = -ENOMEM;
			break;
		}
		if (write_sample(writers, side, &sample)) {
			status = EXIT_STATUS_OUTPUT;
			break;
		}
	}
	if (got < 0) {
		cli_error_print("diff", path, got == -ENOMEM ? "out of memory" : pf_reader_error(reader));
		status = got == -ENOMEM ? EXIT_STATUS_FAILED : EXIT_STATUS_TARGET;
	} else if (status) {
		cli_error_print("diff", path, "its samples could not be written out");
	} else if (copy_metadata(reader, writers->pprof[side]) ||
		   (side == SIDE_NEW && copy_metadata(reader, writers->svg))) {
		cli_error_print("diff", path, "its metadata could not be written out");
		status = EXIT_STATUS_OUTPUT;
	}
	pf_reader_close(reader);
	return status;
}

/* The table as text in a malloc'd buffer (*len bytes): 0 or negative errno. */
static int format_table(const struct diff_table *table, const struct diff_args *args, char **text, size_t *len)
{
	FILE *out = open_memstream(text, len);
	int err;

	if (!out)
		return -ENOMEM;
	print_normalisation(out, table, args->paths);
	err = print_ranking(out, table, RANK_TOTAL, args->rows);
	if (!err)
		err = print_ranking(out, table, RANK_OWN, args->rows);
	if (fclose(out) && !err)
		err = -ENOMEM;
	return err;
}

/* The table on stdout, or in path: 0, or the exit status after the message. */
static int write_table(const struct diff_table *table, const struct diff_args *args, const char *path)
{
	char *text = NULL, why[256];
	size_t len = 0;
	int err = format_table(table, args, &text, &len), fd = STDOUT_FILENO;

	if (err) {
		free(text);
		cli_error_print("diff", path ? path : "stdout", "out of memory");
		return EXIT_STATUS_FAILED;
	}
	if (path) {
		err = pf_output_check(path, why, sizeof(why));
		if (!err && (fd = fd_open_output(path)) < 0) {
			err = fd;
			snprintf(why, sizeof(why), "cannot write: %s", strerror(-err));
		}
	}
	if (!err && (err = fd_write_all(fd, text, len, NULL)))
		snprintf(why, sizeof(why), "write failed: %s", strerror(-err));
	if (path && fd >= 0 && close(fd) && !err) {
		err = -errno;
		snprintf(why, sizeof(why), "write failed: %s", strerror(-err));
	}
	free(text);
	if (err) {
		cli_error_print("diff", path ? path : "stdout", why);
		return EXIT_STATUS_OUTPUT;
	}
	return 0;
}

static int run_diff(const struct diff_args *args)
{
	struct diff_table table = { 0 };
	struct diff_writers writers = { 0 };
	const char *table_path;
	int status = open_outputs(args, &writers, &table_path);

	intern_init(&table.names);
	for (int side = 0; !status && side < SIDE_COUNT; side++)
		status = read_side(&table, &writers, side, args->paths[side]);
	if (status)
		abort_outputs(&writers);
	else
		status = close_outputs(&writers);
	if (!status)
		status = write_table(&table, args, table_path);
	if (!status && check_thresholds(&table, args))
		status = EXIT_STATUS_THRESHOLD;
	intern_free(&table.names);
	free(table.by_function);
	return status;
}

/* ---- command line ---- */

enum { OPT_FAIL_IF = 0x100 };

static const struct argp_option diff_options[] = {
	OPTIONS_HELP,
	{ "output", 'o', "FILE", 0, "Write here (repeatable, by extension): .svg the differential flame graph, "
				    ".txt the table (else on stdout), .pb.gz NEW's pprof (BASE's beside it as "
				    "FILE.base.pb.gz)", 0 },
	{ "lines", 'n', "N", 0, "Rows in each part of the table (default 10)", 0 },
	{ "fail-if", OPT_FAIL_IF, "FUNC>+N%", 0, "Exit 2 when FUNC's total share grew more than N points "
						 "(FUNC<-N%: shrank more); FUNC is a name (b) or a label as the "
						 "table prints it (b (app.py)); repeatable", 0 },
	{ 0 },
};

static const char diff_doc[] =
	"Compare two profiles (MOJO, Tachyon or collapsed, in any mix): each function's share of its own "
	"profile's total weight, NEW's minus BASE's, in percentage points.\n"
	"\n"
	"EXAMPLES:\n"
	"  pybpfprof diff before.mojo after.mojo           # the table on stdout\n"
	"  pybpfprof diff before.mojo after.mojo -o d.svg  # red grew, blue shrank\n"
	"  pybpfprof diff a.bin b.bin -o d.pb.gz\n"
	"  go tool pprof -top -diff_base d.base.pb.gz d.pb.gz\n"
	"  pybpfprof diff base.mojo new.mojo --fail-if 'parse>+5%'  # CI: exit 2"
	"\v"
	"EXIT STATUS:\n"
	"    0    done, every --fail-if held\n"
	"    2    a --fail-if limit was exceeded (the outputs are written)\n"
	"    64   usage\n"
	"    66   BASE or NEW missing or not a valid profile\n"
	"    74   an output could not be written";

static error_t parse_diff_option(int key, char *arg, struct argp_state *state)
{
	struct diff_args *args = state->input;
	unsigned long long rows;

	switch (key) {
	case 'o':
		/* The same file twice would be the same table or graph twice: once. */
		for (size_t i = 0; i < args->output_count; i++)
			if (options_same_output(args->outputs[i], arg)) {
				options_warn_repeated_output("pybpfprof diff", arg, args->outputs[i]);
				return 0;
			}
		if (args->output_count == DIFF_MAX_OUTPUTS)
			options_usage_error(state, "at most %d outputs", DIFF_MAX_OUTPUTS);
		args->outputs[args->output_count++] = arg;
		break;
	case 'n':
		if (options_parse_count(arg, 1, SIZE_MAX, &rows))
			options_usage_error(state, "invalid -n '%s' (a number of rows, 1 or more)", arg);
		args->rows = (size_t)rows;
		break;
	case OPT_FAIL_IF:
		if (args->threshold_count == DIFF_MAX_THRESHOLDS)
			options_usage_error(state, "at most %d --fail-if", DIFF_MAX_THRESHOLDS);
		if (parse_threshold(arg, &args->thresholds[args->threshold_count]))
			options_usage_error(state, "invalid --fail-if '%s' (e.g. 'parse>+5%%' or 'parse<-5%%')", arg);
		args->threshold_count++;
		break;
	case 'h':
		argp_state_help(state, stdout, ARGP_HELP_STD_HELP);
		break;
	case ARGP_KEY_ARG:
		if (args->path_count == SIDE_COUNT)
			options_usage_error(state, "give two profiles: BASE NEW");
		args->paths[args->path_count++] = arg;
		break;
	case ARGP_KEY_END:
		if (args->path_count != SIDE_COUNT)
			options_usage_error(state, "give two profiles: BASE NEW");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

int diff_main(int argc, char **argv)
{
	static const struct argp argp = {
		.options = diff_options,
		.parser = parse_diff_option,
		.args_doc = "BASE NEW",
		.doc = diff_doc,
	};
	struct diff_args args = { .rows = DIFF_DEFAULT_ROWS };

	argp_err_exit_status = EXIT_STATUS_USAGE;
	argv[0] = (char *)"pybpfprof diff";
	if (options_refuse_misspelled(diff_options, argc, argv, argv[0], false) ||
	    argp_parse(&argp, argc, argv, 0, NULL, &args))
		return EXIT_STATUS_USAGE;
	return run_diff(&args);
}
