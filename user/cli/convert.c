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
#include "formats/format_registry.h"
#include "profile/profile.h"
#include "util/exit_status.h"
#include "util/array.h"
#include "util/intern.h"

#include <errno.h>
#include <getopt.h>
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

static void convert_usage(FILE *out)
{
	char names[256], extensions[256];

	fprintf(out,
		"Usage: pybpfprof convert IN -o OUT [-f %s] [-c LEVEL|none]\n"
		"Convert a profile read from MOJO, Tachyon or collapsed stacks to any format.\n"
		"  -o, --output OUT        the file to write (written whole, or not at all)\n"
		"  -f, --format FORMAT     output format (default: from OUT's extension:\n"
		"                          %s)\n"
		"  -c, --compression L     Tachyon zstd level 1-%d, or 'none' (default %d)\n"
		"Exit status: 0; 64 a usage error; 66 IN missing or not a valid profile;\n"
		"74 OUT could not be written.\n",
		format_registry_names(names, sizeof(names), "|", "|"),
		format_registry_extensions(extensions, sizeof(extensions), true),
		PF_COMPRESSION_LEVEL_MAX, PF_COMPRESSION_LEVEL_DEFAULT);
}

static int parse_compression(const char *text, int *level)
{
	char *end;
	long value;

	if (strcmp(text, "none") == 0) {
		*level = 0;
		return 0;
	}
	value = strtol(text, &end, 10);
	if (*end || value < 1 || value > PF_COMPRESSION_LEVEL_MAX)
		return -EINVAL;
	*level = (int)value;
	return 0;
}

static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

int convert_main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, 'f' },
		{ "compression", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct pf_writer_options writer_options = PF_WRITER_OPTIONS_DEFAULT;
	const struct pf_format *out_format = NULL;
	const char *output = NULL, *input, *stage = "read";
	struct pf_reader *reader;
	struct pf_writer *writer;
	char err_text[512], names[256];
	int opt, err;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "o:f:c:h", options, NULL)) != -1) {
		switch (opt) {
		case 'o':
			output = optarg;
			break;
		case 'f':
			out_format = format_registry_find_name(optarg);
			if (!out_format) {
				fprintf(stderr, "pybpfprof: convert: unknown format '%s' (use %s)\n",
					optarg, format_registry_names(names, sizeof(names), ", ", " or "));
				return EXIT_STATUS_USAGE;
			}
			break;
		case 'c':
			if (parse_compression(optarg, &writer_options.compression_level)) {
				fprintf(stderr, "pybpfprof: convert: bad compression '%s' (1-22 or none)\n",
					optarg);
				return EXIT_STATUS_USAGE;
			}
			break;
		case 'h':
			convert_usage(stdout);
			return 0;
		default:
			convert_usage(stderr);
			return EXIT_STATUS_USAGE;
		}
	}
	if (optind != argc - 1 || !output) {
		fprintf(stderr, "pybpfprof: convert: expected IN and -o OUT (try 'pybpfprof convert --help')\n");
		return EXIT_STATUS_USAGE;
	}
	input = argv[optind];
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
