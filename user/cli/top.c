// SPDX-License-Identifier: MIT
/*
 * `pybpfprof top FILE`: the functions that took the time, by own (self)
 * time and by total (inclusive) time, from any format we read.
 */
#include "cli/commands.h"
#include "cli/top_states.h"
#include "formats/format_registry.h"
#include "profile/profile.h"
#include "util/exit_status.h"
#include "util/array.h"
#include "util/intern.h"
#include "util/text_quote.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct function_weight {
	uint64_t self;
	uint64_t total;
	uint64_t last_sample; /* sample number that last added to total: count a function once per stack */
};

struct function_weights {
	struct intern_table names;           /* "name (file)" or "name [kernel]" -> id */
	struct function_weight *by_function; /* by id */
	size_t function_count;
	size_t function_capacity;
	uint64_t grand_total;
	uint64_t samples;
};

static int weights_reserve(struct function_weights *weights, size_t id)
{
	if (ARRAY_RESERVE(weights->by_function, weights->function_capacity, id + 1))
		return -ENOMEM;
	while (weights->function_count <= id)
		weights->by_function[weights->function_count++] =
			(struct function_weight){ .last_sample = UINT64_MAX };
	return 0;
}

static int64_t function_id(struct function_weights *weights, const struct pf_frame *frame)
{
	char label[1024];
	int len;

	switch (frame->kind) {
	case PF_FRAME_KERNEL:
		len = snprintf(label, sizeof(label), "%s [kernel]", frame->name);
		break;
	case PF_FRAME_INVALID:
		len = snprintf(label, sizeof(label), "[truncated stack]");
		break;
	default:
		/* Collapsed files name native frames without their file. */
		if (frame->file && frame->file[0])
			len = snprintf(label, sizeof(label), "%s (%s)", frame->name, frame->file);
		else
			len = snprintf(label, sizeof(label), "%s", frame->name);
		break;
	}
	if (len < 0)
		return -EINVAL;
	if ((size_t)len >= sizeof(label))
		len = sizeof(label) - 1;
	return intern_add(&weights->names, label, (size_t)len, NULL);
}

/* Frees (negative) take nothing: a memory profile ranks where bytes were allocated. */
static uint64_t sample_weight(const struct pf_sample *sample)
{
	int64_t signed_weight = pf_sample_weight(sample);

	return signed_weight > 0 ? (uint64_t)signed_weight : 0;
}

static int add_sample(struct function_weights *weights, const struct pf_sample *sample)
{
	uint64_t weight = sample_weight(sample);

	for (size_t i = 0; i < sample->frame_count; i++) {
		int64_t id = function_id(weights, &sample->frames[i]);
		struct function_weight *function;

		if (id < 0 || weights_reserve(weights, (size_t)id))
			return -ENOMEM;
		function = &weights->by_function[id];
		if (function->last_sample != weights->samples) {
			function->total += weight;
			function->last_sample = weights->samples;
		}
		if (i + 1 == sample->frame_count)
			function->self += weight;
	}
	weights->grand_total += weight;
	weights->samples++;
	return 0;
}

enum ranking { RANK_SELF, RANK_TOTAL };

static const struct function_weight *sort_functions;
static enum ranking sort_ranking;

static uint64_t ranked_weight(const struct function_weight *function, enum ranking ranking)
{
	return ranking == RANK_SELF ? function->self : function->total;
}

static int compare_ids(const void *a, const void *b)
{
	uint64_t wa = ranked_weight(&sort_functions[*(const uint32_t *)a], sort_ranking);
	uint64_t wb = ranked_weight(&sort_functions[*(const uint32_t *)b], sort_ranking);

	return wa < wb ? 1 : wa > wb ? -1 : 0;
}

static void print_ranking(const struct function_weights *weights, const char *title,
			  enum ranking ranking, size_t limit)
{
	size_t count = intern_count(&weights->names);
	uint32_t *ids = malloc(count * sizeof(*ids));

	if (!ids)
		return;
	for (size_t i = 0; i < count; i++)
		ids[i] = (uint32_t)i;
	sort_functions = weights->by_function;
	sort_ranking = ranking;
	qsort(ids, count, sizeof(*ids), compare_ids);
	printf("%s\n", title);
	for (size_t i = 0; i < count && i < limit; i++) {
		uint64_t weight = ranked_weight(&weights->by_function[ids[i]], ranking);

		if (weight == 0)
			break;
		/* Names come from the target (or the file): nothing in them may drive the terminal. */
		printf("  %6.2f%%  ", 100.0 * (double)weight / (double)weights->grand_total);
		fput_escaped(stdout, (const char *)intern_key(&weights->names, ids[i], NULL));
		putchar('\n');
	}
	free(ids);
}

static int parse_limit(const char *text, size_t *limit)
{
	char *end;
	unsigned long value;

	errno = 0;
	value = strtoul(text, &end, 10);
	if (errno || end == text || *end || value == 0 || text[0] == '-')
		return -EINVAL;
	*limit = value;
	return 0;
}

/* What the file holds, then the rankings. A collapsed file's samples are its distinct stacks. */
static void print_report(const struct function_weights *weights, const char *path, const struct pf_format *format,
			 size_t limit)
{
	const char *unit = format->aggregated ? "distinct stack" : "sample";
	const char *plural = weights->samples == 1 ? "" : "s";

	fput_escaped(stdout, path);
	if (weights->samples == 0)
		printf(": no %ss\n", unit);
	else if (weights->grand_total == 0)
		printf(": %" PRIu64 " %s%s, all of weight 0 (frees only)\n", weights->samples, unit, plural);
	else {
		printf(": %" PRIu64 " %s%s (%s)\n", weights->samples, unit, plural, format->name);
		print_ranking(weights, "own time (where the CPU was):", RANK_SELF, limit);
		print_ranking(weights, "total time (with callees):", RANK_TOTAL, limit);
	}
}

int top_main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "lines", required_argument, NULL, 'n' },
		{ "by-state", no_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct function_weights weights = { 0 };
	struct top_states states;
	bool by_state = false;
	struct pf_reader *reader;
	struct pf_sample sample;
	size_t limit = 10;
	char err[512];
	int opt, got;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "n:sh", options, NULL)) != -1) {
		switch (opt) {
		case 'n':
			if (parse_limit(optarg, &limit)) {
				fprintf(stderr, "pybpfprof: top: invalid -n '%s' (a number of lines, 1 or more)\n", optarg);
				return EXIT_STATUS_USAGE;
			}
			break;
		case 's':
			by_state = true;
			break;
		case 'h':
			puts("Usage: pybpfprof top [-n N] [--by-state] FILE\nThe functions with the most own and total time.\n"
			     "  -s, --by-state  then the time by thread state (on CPU, idle, GIL, GC), overall and per thread\n"
			     "Exit status: 0; 64 a usage error; 66 FILE missing or not a valid profile.");
			return 0;
		default:
			return EXIT_STATUS_USAGE;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "pybpfprof: top: expected exactly one FILE (try 'pybpfprof top --help')\n");
		return EXIT_STATUS_USAGE;
	}
	if (format_registry_open_reader(&reader, argv[optind], err, sizeof(err))) {
		cli_error_print("top", argv[optind], err);
		return EXIT_STATUS_TARGET;
	}
	intern_init(&weights.names);
	top_states_init(&states);
	while ((got = pf_reader_next_sample(reader, &sample)) > 0)
		if (add_sample(&weights, &sample) ||
		    (by_state && top_states_add(&states, &sample, sample_weight(&sample)))) {
			got = -ENOMEM;
			break;
		}
	if (got < 0)
		cli_error_print("top", argv[optind],
				got == -ENOMEM ? "out of memory" : pf_reader_error(reader));
	else
		print_report(&weights, argv[optind], pf_reader_format(reader), limit);
	if (got >= 0 && by_state)
		top_states_print(&states, stdout);
	top_states_free(&states);
	pf_reader_close(reader);
	intern_free(&weights.names);
	free(weights.by_function);
	return got < 0 ? EXIT_STATUS_TARGET : EXIT_STATUS_OK;
}
