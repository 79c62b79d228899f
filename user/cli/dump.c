// SPDX-License-Identifier: MIT
/*
 * `pybpfprof dump FILE`: the file's own events, one per line (see
 * mojo_dump.c and tachyon_dump.c). `--samples`: the samples as any reader
 * of the profile model sees them, whatever the format.
 */
#include "cli/commands.h"
#include "cli/options.h"
#include "formats/format_registry.h"
#include "profile/profile.h"
#include "util/exit_status.h"
#include "util/text_quote.h"

#include <argp.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void print_sample(FILE *out, const struct pf_sample *sample)
{
	char states[128];

	fprintf(out, "Sample pid=%" PRIu32 " iid=%" PRIu32 " tid=%" PRIu64 " ts=%" PRIu64
		     " status=0x%" PRIx32,
		sample->pid, sample->iid, sample->tid, sample->timestamp_us, sample->status);
	if (pf_status_describe(sample->status, states, sizeof(states))[0])
		fprintf(out, " state=%s", states);
	if (sample->metrics & PF_METRIC_TIME)
		fprintf(out, " time=%" PRIu64, sample->time_us);
	if (sample->metrics & PF_METRIC_MEMORY)
		fprintf(out, " memory=%" PRId64, sample->memory);
	fprintf(out, " n=%zu\n", sample->frame_count);
	for (size_t i = 0; i < sample->frame_count; i++) {
		const struct pf_frame *frame = &sample->frames[i];

		fprintf(out, "\t%s file=", pf_frame_kind_name(frame->kind));
		fput_quoted_cstr(out, frame->file);
		fputs(" name=", out);
		fput_quoted_cstr(out, frame->name);
		fprintf(out, " line=%" PRId32 " end_line=%" PRId32 " column=%" PRId32
			     " end_column=%" PRId32 " opcode=%d\n",
			frame->line, frame->end_line, frame->column, frame->end_column,
			frame->opcode);
	}
}

static int dump_samples(const char *path, FILE *out)
{
	struct pf_reader *reader;
	struct pf_sample sample;
	char err[512];
	size_t metadata_count;
	int got;

	got = format_registry_open_reader(&reader, path, err, sizeof(err));
	if (got < 0) {
		cli_error_print("dump", path, err);
		return EXIT_STATUS_TARGET;
	}
	fprintf(out, "pybpfprof-dump format=%s samples\n", pf_reader_format(reader)->name);
	while ((got = pf_reader_next_sample(reader, &sample)) > 0)
		print_sample(out, &sample);
	/* Metadata last: MOJO writes some of it (duration, ...) after the samples. */
	metadata_count = pf_reader_metadata_count(reader);
	for (size_t i = 0; i < metadata_count; i++) {
		const char *key, *value;

		pf_reader_metadata_at(reader, i, &key, &value);
		fputs("Metadata key=", out);
		fput_quoted_cstr(out, key);
		fputs(" value=", out);
		fput_quoted_cstr(out, value);
		fputc('\n', out);
	}
	if (got < 0)
		cli_error_print("dump", path, pf_reader_error(reader));
	pf_reader_close(reader);
	return got < 0 ? EXIT_STATUS_TARGET : EXIT_STATUS_OK;
}

static int dump_events(const char *path, FILE *out)
{
	const struct pf_format *format;
	char err[512] = "";
	uint8_t head[8];
	ssize_t got;
	int fd = pf_input_open(path, err, sizeof(err));
	int result;

	if (fd < 0) {
		cli_error_print("dump", path, err);
		return EXIT_STATUS_TARGET;
	}
	got = pread(fd, head, sizeof(head), 0);
	format = format_registry_find_magic(head, got > 0 ? (size_t)got : 0);
	if (!format || !format->dump) {
		close(fd);
		/* A format without events of its own (collapsed text): show its samples. */
		format = format_registry_find_path(path);
		if (format && format->reader_create && !format->dump)
			return dump_samples(path, out);
		cli_error_print("dump", path, "unknown format (neither MOJO nor Tachyon)");
		return EXIT_STATUS_TARGET;
	}
	result = format->dump(fd, out, err, sizeof(err));
	close(fd);
	if (result < 0) {
		cli_error_print("dump", path, err[0] ? err : strerror(-result));
		return EXIT_STATUS_TARGET;
	}
	return EXIT_STATUS_OK;
}

static const struct argp_option dump_options[] = {
	OPTIONS_HELP,
	{ "samples", 's', NULL, 0, "Print the samples (frames resolved) instead of the raw events", 0 },
	{ 0 },
};

static const char dump_doc[] =
	"Print a MOJO, Tachyon or collapsed file as text, one event per line."
	"\v"
	"Exit status: 0; 64 a usage error; 66 FILE missing or not a valid profile.";

struct dump_args {
	const char *path;
	bool samples;
};

static error_t parse_dump_option(int key, char *arg, struct argp_state *state)
{
	struct dump_args *args = state->input;

	switch (key) {
	case 's':
		args->samples = true;
		break;
	case 'h':
		argp_state_help(state, stdout, ARGP_HELP_STD_HELP);
		break;
	case ARGP_KEY_ARG:
		if (args->path)
			options_usage_error(state, "expected exactly one FILE");
		args->path = arg;
		break;
	case ARGP_KEY_END:
		if (!args->path)
			options_usage_error(state, "expected exactly one FILE");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

int dump_main(int argc, char **argv)
{
	static const struct argp argp = {
		.options = dump_options,
		.parser = parse_dump_option,
		.args_doc = "FILE",
		.doc = dump_doc,
	};
	struct dump_args args = { 0 };

	argp_err_exit_status = EXIT_STATUS_USAGE;
	argv[0] = (char *)"pybpfprof dump";
	if (options_refuse_misspelled(dump_options, argc, argv, argv[0], false) ||
	    argp_parse(&argp, argc, argv, 0, NULL, &args))
		return EXIT_STATUS_USAGE;
	return args.samples ? dump_samples(args.path, stdout) : dump_events(args.path, stdout);
}
