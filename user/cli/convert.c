// SPDX-License-Identifier: MIT
/*
 * `pybpfprof convert IN -o OUT [-f FORMAT]`: any format to any other through
 * the profile model. The output appears only when complete (atomic writer).
 *
 * MOJO has time metrics but no timestamps, Tachyon timestamps but no
 * metrics: a sample without a timestamp gets its thread's running sum of
 * time metrics, and Tachyon's reader gives back each thread's delta as the
 * metric, so MOJO -> Tachyon -> MOJO keeps every metric.
 */
#include "cli/commands.h"
#include "cli/options.h"
#include "formats/format_registry.h"
#include "profile/profile.h"
#include "util/exit_status.h"
#include "util/array.h"
#include "util/intern.h"

#include <argp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct thread_clock {
	struct intern_table threads; /* (pid, tid) -> id */
	uint64_t *now_us;            /* by id */
	size_t count;                /* ids with a clock */
	size_t capacity;
};

struct thread_key {
	uint64_t pid;
	uint64_t tid;
};

static int thread_clock_advance(struct thread_clock *clock, const struct pf_sample *sample,
				uint64_t base_us, uint64_t step_us, uint64_t *timestamp)
{
	struct thread_key key = { sample->pid, sample->tid };
	int64_t id = intern_add(&clock->threads, &key, sizeof(key), NULL);

	if (id < 0)
		return (int)id;
	if (array_reserve((void **)&clock->now_us, &clock->capacity, (size_t)id + 1,
			  sizeof(*clock->now_us), 64))
		return -ENOMEM;
	while (clock->count <= (size_t)id)
		clock->now_us[clock->count++] = 0;
	if (clock->now_us[id] == 0)
		clock->now_us[id] = base_us;
	clock->now_us[id] += step_us;
	*timestamp = clock->now_us[id];
	return 0;
}

static int copy_new_metadata(struct pf_reader *reader, struct pf_writer *writer, size_t *copied)
{
	size_t count = pf_reader_metadata_count(reader);

	for (; *copied < count; (*copied)++) {
		const char *key, *value;
		int err;

		pf_reader_metadata_at(reader, *copied, &key, &value);
		err = pf_writer_set_metadata(writer, key, value);
		if (err)
			return err;
	}
	return 0;
}

static uint64_t interval_of(struct pf_reader *reader)
{
	const char *interval = pf_reader_metadata(reader, "interval");
	unsigned long long value = interval ? strtoull(interval, NULL, 10) : 0;

	return value ? value : 1000;
}

/* Streams every sample; returns 0 or negative errno with *stage telling which side failed. */
static int copy_samples(struct pf_reader *reader, struct pf_writer *writer, const char **stage)
{
	struct thread_clock clock = { 0 };
	size_t metadata_copied = 0;
	bool started = false;
	uint64_t interval_us = 0, base_us = 0;
	struct pf_sample sample;
	int got, err = 0;

	intern_init(&clock.threads);
	while ((got = pf_reader_next_sample(reader, &sample)) > 0) {
		if (!started) {
			const char *start = pf_reader_metadata(reader, "start_time_us");

			interval_us = interval_of(reader);
			/* Derived timestamps count from the source's start (a MOJO file we wrote
			 * from Tachyon keeps it), else from 0: the writer's base is the same. */
			if (start)
				base_us = strtoull(start, NULL, 10);
			else if (!pf_reader_format(reader)->timestamps)
				err = pf_writer_set_metadata(writer, "start_time_us", "0");
			started = true;
		}
		if (!err)
			err = copy_new_metadata(reader, writer, &metadata_copied);
		if (!err && sample.timestamp_us == 0) {
			uint64_t step = sample.metrics & PF_METRIC_TIME ? sample.time_us : interval_us;

			err = thread_clock_advance(&clock, &sample, base_us, step, &sample.timestamp_us);
		}
		if (!err)
			err = pf_writer_add_sample(writer, &sample);
		if (err) {
			*stage = "write";
			break;
		}
	}
	if (!err && got < 0) {
		*stage = "read";
		err = got;
	}
	if (!err)
		err = copy_new_metadata(reader, writer, &metadata_copied);
	intern_free(&clock.threads);
	free(clock.now_us);
	return err;
}

static const struct argp_option convert_options[] = {
	OPTIONS_HELP,
	/* -o and -f end with the format registry's lists (convert_help_filter). */
	{ "output", 'o', "OUT", 0, "The file to write (written whole, or not at all); the format from its extension:", 0 },
	{ "format", 'f', "FORMAT", 0, "The output format, whatever the extension:", 0 },
	{ "compression", 'c', "LEVEL", 0, "Tachyon zstd level 1-22, or 'none' (default 5)", 0 },
	{ 0 },
};

static const char convert_doc[] =
	"Write a profile (MOJO, Tachyon or collapsed stacks) in any format pybpfprof writes."
	"\v"
	"Exit status: 0; 64 a usage error; 66 IN missing or not a valid profile; "
	"74 OUT could not be written.";

struct convert_args {
	const char *input;
	const char *output;
	const struct pf_format *format;
	struct pf_writer_options writer;
	bool usage_error; /* said, in the caller's words */
};

/* One OUT: a second -o naming it again is harmless, another file would never be written. */
static error_t take_output(struct convert_args *args, const char *path)
{
	if (args->output && !options_same_output(args->output, path)) {
		fprintf(stderr, "pybpfprof: convert: -o given twice (%s, %s): convert writes one file\n",
			args->output, path);
		return EINVAL;
	}
	if (args->output)
		options_warn_repeated_output("pybpfprof convert", path, args->output);
	args->output = path;
	return 0;
}

static error_t parse_convert_option(int key, char *arg, struct argp_state *state)
{
	struct convert_args *args = state->input;

	switch (key) {
	case 'o':
		return take_output(args, arg);
	case 'f':
		args->format = options_format_named(arg, "pybpfprof convert");
		return args->format ? 0 : EINVAL;
	case 'c':
		if (options_parse_compression(arg, &args->writer.compression_level)) {
			fprintf(stderr, "pybpfprof: convert: bad compression '%s' (1-22 or none)\n", arg);
			return EINVAL;
		}
		break;
	case 'h':
		argp_state_help(state, stdout, ARGP_HELP_STD_HELP);
		break;
	case ARGP_KEY_ARG:
		if (args->input)
			args->usage_error = true;
		args->input = arg;
		break;
	case ARGP_KEY_END:
		if (!args->input || !args->output)
			args->usage_error = true;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* -o's and -f's help end with the registry's extensions and names (options_format_help). */
static char *convert_help_filter(int key, const char *text, void *input)
{
	(void)input;
	return options_format_help(key, text, true);
}

static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

int convert_main(int argc, char **argv)
{
	static const struct argp argp = {
		.options = convert_options,
		.parser = parse_convert_option,
		.args_doc = "IN",
		.doc = convert_doc,
		.help_filter = convert_help_filter,
	};
	struct convert_args args = { .writer = PF_WRITER_OPTIONS_DEFAULT };
	struct pf_writer_options writer_options;
	const struct pf_format *out_format;
	const char *output, *input, *stage = "read";
	struct pf_reader *reader;
	struct pf_writer *writer;
	char err_text[512], names[256];
	int err;

	argp_err_exit_status = EXIT_STATUS_USAGE;
	argv[0] = (char *)"pybpfprof convert";
	if (options_refuse_misspelled(convert_options, argc, argv, argv[0], false) ||
	    argp_parse(&argp, argc, argv, 0, NULL, &args))
		return EXIT_STATUS_USAGE;
	if (args.usage_error) {
		fprintf(stderr, "pybpfprof: convert: expected IN and -o OUT (try 'pybpfprof convert --help')\n");
		return EXIT_STATUS_USAGE;
	}
	input = args.input;
	output = args.output;
	out_format = args.format;
	writer_options = args.writer;
	if (!out_format)
		out_format = format_registry_find_path(output);
	if (!out_format) {
		fprintf(stderr, "pybpfprof: convert: cannot tell the format of '%s' from its extension (use -f %s)\n",
			output, format_registry_names(names, sizeof(names), "|", "|"));
		return EXIT_STATUS_USAGE;
	}
	if (same_file(input, output)) {
		fprintf(stderr, "pybpfprof: convert: %s: input and output are the same file\n", input);
		return EXIT_STATUS_USAGE;
	}
	if (pf_output_check(output, err_text, sizeof(err_text))) {
		fprintf(stderr, "pybpfprof: convert: %s\n", err_text);
		return EXIT_STATUS_OUTPUT;
	}
	err = format_registry_open_reader(&reader, input, err_text, sizeof(err_text));
	if (err) {
		cli_error_print("convert", input, err_text);
		return EXIT_STATUS_TARGET;
	}
	err = pf_writer_open(&writer, output, out_format, &writer_options);
	if (err) {
		fprintf(stderr, "pybpfprof: convert: %s: cannot write: %s\n", output, strerror(-err));
		pf_reader_close(reader);
		return EXIT_STATUS_OUTPUT;
	}
	err = copy_samples(reader, writer, &stage);
	if (err) {
		if (strcmp(stage, "read") == 0)
			cli_error_print("convert", input, pf_reader_error(reader));
		else
			cli_error_print("convert", output, pf_writer_error(writer));
		pf_writer_abort(writer);
		pf_reader_close(reader);
		return strcmp(stage, "read") == 0 ? EXIT_STATUS_TARGET : EXIT_STATUS_OUTPUT;
	}
	pf_reader_close(reader);
	err = pf_writer_close(writer);
	if (err) {
		fprintf(stderr, "pybpfprof: convert: %s: %s\n", output, strerror(-err));
		return EXIT_STATUS_OUTPUT;
	}
	return EXIT_STATUS_OK;
}
