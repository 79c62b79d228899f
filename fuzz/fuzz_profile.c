// SPDX-License-Identifier: MIT
#include "fuzz.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "formats/flamegraph.h"
#include "formats/format_registry.h"
#include "profile/profile.h"

/* Reads every byte a sample points to, so that the sanitizers check what a reader hands out. */
static size_t sample_bytes(const struct pf_sample *sample)
{
	size_t bytes = 0;

	for (size_t i = 0; i < sample->frame_count; i++) {
		const struct pf_frame *frame = &sample->frames[i];

		bytes += strlen(frame->file) + strlen(frame->name) + (size_t)frame->kind;
	}
	return bytes + (size_t)pf_sample_weight(sample);
}

static size_t metadata_bytes(const struct pf_reader *reader)
{
	size_t bytes = 0;

	for (size_t i = 0; i < pf_reader_metadata_count(reader); i++) {
		const char *key, *value;

		pf_reader_metadata_at(reader, i, &key, &value);
		bytes += strlen(key) + strlen(value);
	}
	return bytes;
}

/* The writers that take what a reader hands out and keep it in their own tables (pstats,
 * gecko, jsonl): each gets every sample and metadata line the reader gives, into /dev/null. */
static const char *const fed_writers[] = { "pstats", "gecko-gz", "jsonl" };

struct fed_writer {
	void *state;
	const struct pf_writer_ops *ops;
};

static void feed_open(struct fed_writer *writers, int fd)
{
	struct pf_writer_options options = PF_WRITER_OPTIONS_DEFAULT;

	for (size_t i = 0; i < sizeof(fed_writers) / sizeof(fed_writers[0]); i++) {
		const struct pf_format *format = format_registry_find_name(fed_writers[i]);

		if (format->writer_create(fd, &options, &writers[i].state, &writers[i].ops))
			writers[i].ops = NULL;
	}
}

static void feed_sample(struct fed_writer *writers, const struct pf_sample *sample)
{
	for (size_t i = 0; i < sizeof(fed_writers) / sizeof(fed_writers[0]); i++)
		if (writers[i].ops)
			writers[i].ops->add_sample(writers[i].state, sample);
}

static void feed_close(struct fed_writer *writers, const struct pf_reader *reader)
{
	for (size_t i = 0; i < sizeof(fed_writers) / sizeof(fed_writers[0]); i++) {
		if (!writers[i].ops)
			continue;
		for (size_t m = 0; m < pf_reader_metadata_count(reader); m++) {
			const char *key, *value;

			pf_reader_metadata_at(reader, m, &key, &value);
			writers[i].ops->set_metadata(writers[i].state, key, value);
		}
		writers[i].ops->finish(writers[i].state);
		writers[i].ops->destroy(writers[i].state);
	}
}

static void read_samples(const struct pf_format *format, int fd)
{
	struct fed_writer writers[sizeof(fed_writers) / sizeof(fed_writers[0])] = { 0 };
	struct pf_reader *reader;
	struct pf_sample sample;
	char path[64], error[256];
	int more, sink;

	if (pf_reader_open(&reader, fuzz_input_path(fd, path, sizeof(path)), format, error,
			   sizeof(error)))
		return;
	sink = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (sink >= 0)
		feed_open(writers, sink);
	while ((more = pf_reader_next_sample(reader, &sample)) > 0) {
		fuzz_input_sink += sample_bytes(&sample);
		feed_sample(writers, &sample);
	}
	fuzz_input_sink += metadata_bytes(reader);
	if (more < 0)
		fuzz_input_sink += strlen(pf_reader_error(reader));
	feed_close(writers, reader);
	if (sink >= 0)
		close(sink);
	pf_reader_close(reader);
}

/* Every sample of the file into one side of `diff`'s flame graph: true if all went in. */
static bool diff_side(const struct pf_format *format, int fd, const struct pf_writer_ops *ops, void *state,
		      const char *side)
{
	struct pf_reader *reader;
	struct pf_sample sample;
	char path[64], error[256];
	int more = 0;

	if (ops->set_metadata(state, FLAMEGRAPH_DIFF_SIDE, side) ||
	    pf_reader_open(&reader, fuzz_input_path(fd, path, sizeof(path)), format, error, sizeof(error)))
		return false;
	while ((more = pf_reader_next_sample(reader, &sample)) > 0 && !ops->add_sample(state, &sample))
		;
	pf_reader_close(reader);
	return more == 0;
}

/* `pybpfprof diff` on the file against itself: what a reader hands out, drawn in both sides
 * of the differential flame graph (written to /dev/null). */
static void diff_against_itself(const struct pf_format *format, int fd)
{
	const struct pf_writer_ops *ops;
	void *state;
	int out = open("/dev/null", O_WRONLY | O_CLOEXEC);

	if (out < 0)
		return;
	if (flamegraph_diff_writer_create(out, NULL, &state, &ops) == 0) {
		if (diff_side(format, fd, ops, state, "base") && diff_side(format, fd, ops, state, "new"))
			ops->finish(state);
		ops->destroy(state);
	}
	close(out);
}

/* `pybpfprof annotate` of every file and line, as text and as the page (to /dev/null); no
 * source is at hand (a root that does not exist), so only the profile's bytes are in play. */
static void annotate(int fd)
{
	char path[64];
	FILE *out = fopen("/dev/null", "w");

	if (!out)
		return;
	fuzz_input_path(fd, path, sizeof(path));
	annotate_to_stream(path, "/nonexistent/pybpfprof-fuzz", false, out);
	annotate_to_stream(path, "/nonexistent/pybpfprof-fuzz", true, out);
	fclose(out);
}

static void dump_events(const struct pf_format *format, int fd)
{
	char error[256];
	FILE *out;

	if (!format->dump || lseek(fd, 0, SEEK_SET) < 0)
		return;
	out = fopen("/dev/null", "w");
	if (!out)
		return;
	format->dump(fd, out, error, sizeof(error));
	fclose(out);
}

int fuzz_profile_read(const char *format_name, const uint8_t *data, size_t size)
{
	const struct pf_format *format = format_registry_find_name(format_name);
	int fd;

	if (!format)
		return 0;
	fd = fuzz_input_memfd(data, size);
	if (fd < 0)
		return 0;
	read_samples(format, fd);
	diff_against_itself(format, fd);
	annotate(fd);
	dump_events(format, fd);
	close(fd);
	return 0;
}
