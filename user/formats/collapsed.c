// SPDX-License-Identifier: MIT
/*
 * Collapsed ("folded") stacks, the input of flamegraph.pl, speedscope and
 * inferno: one line per distinct stack, frames root first joined by ';',
 * then a space and the stack's weight. Python frames are file:function:line,
 * kernel frames symbol_[k], native frames function_[n] (flamegraph.pl colours
 * by those suffixes). The weight is microseconds when samples carry time,
 * bytes when they carry only memory (below 0 where a memory mode's stack released more than it
 * grew), else a sample count.
 */
#include "formats/collapsed.h"
#include "formats/known_stacks.h"
#include "profile/profile.h"
#include "util/array.h"
#include "util/errbuf.h"
#include "util/fd_write.h"
#include "util/intern.h"
#include "util/text_quote.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct collapsed_writer {
	int fd;
	struct intern_table stacks; /* stack text -> id */
	int64_t *weights;           /* by stack id */
	size_t weights_count;       /* stack ids with a weight */
	size_t weights_capacity;
	char *line;                 /* scratch for building one stack's text */
	size_t line_capacity;
	struct known_stacks known;  /* stack_id -> its id here: its text is not built again */
	char error[256];
};

static int line_reserve(struct collapsed_writer *writer, size_t needed)
{
	return array_reserve((void **)&writer->line, &writer->line_capacity, needed, 1, 1024);
}

/* The most one byte of a name grows when escaped ("\\x1b"). */
#define ESCAPED_BYTES_MAX 4

/*
 * A name as collapsed text: ';' separates frames and a newline ends the stack, so neither may
 * appear inside a frame; and the file is read in terminals and review tools, so control bytes,
 * bytes that are not UTF-8 and bidirectional controls are shown as escapes (util/text_quote.h).
 * out has room for ESCAPED_BYTES_MAX bytes per byte of text.
 */
static size_t append_clean(char *out, const char *text)
{
	size_t n = strlen(text_escaped(out, strlen(text) * ESCAPED_BYTES_MAX + 1, text));

	for (size_t i = 0; i < n; i++)
		if (out[i] == ';')
			out[i] = '_';
	return n;
}

static size_t frame_text_bound(const struct pf_frame *frame)
{
	return (strlen(frame->file) + strlen(frame->name)) * ESCAPED_BYTES_MAX + 32;
}

static size_t append_frame(char *out, const struct pf_frame *frame)
{
	size_t n = 0;

	switch (frame->kind) {
	case PF_FRAME_KERNEL:
		n += append_clean(out + n, frame->name);
		memcpy(out + n, "_[k]", 4);
		return n + 4;
	case PF_FRAME_NATIVE:
		n += append_clean(out + n, *frame->name ? frame->name : frame->file);
		memcpy(out + n, "_[n]", 4);
		return n + 4;
	case PF_FRAME_INVALID:
		memcpy(out, "[truncated]", 11);
		return 11;
	default:
		n += append_clean(out + n, frame->file);
		out[n++] = ':';
		n += append_clean(out + n, frame->name);
		n += (size_t)sprintf(out + n, ":%" PRId32, frame->line > 0 ? frame->line : 0);
		return n;
	}
}

/* The id of the sample's stack text, adding it if new. */
static int64_t stack_text_id(struct collapsed_writer *writer, const struct pf_sample *sample)
{
	size_t bound = 1, len = 0;

	for (size_t i = 0; i < sample->frame_count; i++)
		bound += frame_text_bound(&sample->frames[i]) + 1;
	if (line_reserve(writer, bound))
		return -ENOMEM;
	for (size_t i = 0; i < sample->frame_count; i++) {
		if (i)
			writer->line[len++] = ';';
		len += append_frame(writer->line + len, &sample->frames[i]);
	}
	if (len == 0) {
		/* A stack with no frames still took time: give it a name flame graphs can show. */
		memcpy(writer->line, "[no frames]", 11);
		len = 11;
	}
	return intern_add(&writer->stacks, writer->line, len, NULL);
}

static int collapsed_add_sample(void *state, const struct pf_sample *sample)
{
	struct collapsed_writer *writer = state;
	uint32_t known_id;
	int64_t id;

	if (known_stacks_find_id(&writer->known, sample->stack_id, &known_id)) {
		id = known_id;
	} else {
		id = stack_text_id(writer, sample);
		if (id < 0)
			return (int)id;
		known_stacks_put_id(&writer->known, sample->stack_id, (uint32_t)id);
	}
	if (ARRAY_RESERVE(writer->weights, writer->weights_capacity, (size_t)id + 1))
		return -ENOMEM;
	while (writer->weights_count <= (size_t)id)
		writer->weights[writer->weights_count++] = 0;
	writer->weights[id] += pf_sample_weight(sample);
	return 0;
}

static int collapsed_set_metadata(void *state, const char *key, const char *value)
{
	(void)state, (void)key, (void)value;
	return 0; /* the format has no place for metadata */
}

static int collapsed_flush(void *state)
{
	(void)state;
	return 0; /* aggregated: written whole at finish */
}

static int write_all(struct collapsed_writer *writer, const char *data, size_t len)
{
	int err = fd_write_all(writer->fd, data, len, NULL);

	if (err)
		return errbuf_format(writer->error, sizeof(writer->error), err, "write failed: %s",
				     strerror(-err));
	return 0;
}

static int collapsed_finish(void *state)
{
	struct collapsed_writer *writer = state;
	char *buffer = NULL;
	size_t buffer_len = 0;
	FILE *out = open_memstream(&buffer, &buffer_len);
	int err = 0;

	if (!out)
		return -ENOMEM;
	for (size_t id = 0; id < intern_count(&writer->stacks); id++) {
		size_t len;
		const char *stack = intern_key(&writer->stacks, (uint32_t)id, &len);

		fprintf(out, "%.*s %" PRId64 "\n", (int)len, stack, writer->weights[id]);
		/* Write in pieces so a large profile doesn't double its memory. */
		if (ftell(out) > (1 << 20)) {
			fflush(out);
			err = write_all(writer, buffer, buffer_len);
			rewind(out);
			if (err)
				break;
		}
	}
	if (fflush(out) == 0 && !err)
		err = write_all(writer, buffer, (size_t)ftell(out));
	fclose(out);
	free(buffer);
	return err;
}

static void collapsed_destroy(void *state)
{
	struct collapsed_writer *writer = state;

	intern_free(&writer->stacks);
	known_stacks_free(&writer->known);
	free(writer->weights);
	free(writer->line);
	free(writer);
}

static const char *collapsed_error(const void *state)
{
	return ((const struct collapsed_writer *)state)->error;
}

static const struct pf_writer_ops collapsed_writer_ops = {
	.set_metadata = collapsed_set_metadata,
	.add_sample = collapsed_add_sample,
	.flush = collapsed_flush,
	.finish = collapsed_finish,
	.destroy = collapsed_destroy,
	.error = collapsed_error,
};

int collapsed_writer_create(int fd, const struct pf_writer_options *options, void **state,
			    const struct pf_writer_ops **ops)
{
	struct collapsed_writer *writer = calloc(1, sizeof(*writer));

	(void)options;
	if (!writer)
		return -ENOMEM;
	writer->fd = fd;
	intern_init(&writer->stacks);
	known_stacks_init(&writer->known, KNOWN_STACKS_ID_BYTES);
	*state = writer;
	*ops = &collapsed_writer_ops;
	return 0;
}

/* ---- reader: one weighted sample per line ---- */

#define COLLAPSED_MAX_FRAMES 4096
/* The longest line read: room for COLLAPSED_MAX_FRAMES frames of long paths and names, and the
 * reader's whole memory with it (getline would grow to the file's size on a file without
 * newlines, gigabytes for a sparse one). */
#define COLLAPSED_MAX_LINE (4u << 20)

struct collapsed_reader {
	FILE *in;
	char *line;
	size_t line_capacity;
	uint64_t line_number;
	struct pf_frame frames[COLLAPSED_MAX_FRAMES];
	char error[256];
};

static bool ends_with(const char *text, size_t len, const char *suffix)
{
	size_t suffix_len = strlen(suffix);

	return len >= suffix_len && memcmp(text + len - suffix_len, suffix, suffix_len) == 0;
}

/* Parses one frame in place (text is NUL-terminated and may be modified). */
static void parse_frame(char *text, struct pf_frame *frame)
{
	size_t len = strlen(text);
	char *last_colon, *name_colon;

	*frame = pf_frame_unlocated(PF_FRAME_PYTHON, "", text);
	if (ends_with(text, len, "_[k]") || ends_with(text, len, "_[n]")) {
		frame->kind = text[len - 2] == 'k' ? PF_FRAME_KERNEL : PF_FRAME_NATIVE;
		text[len - 4] = 0;
		return;
	}
	if (strcmp(text, "[truncated]") == 0) {
		frame->kind = PF_FRAME_INVALID;
		frame->name = "";
		return;
	}
	last_colon = strrchr(text, ':');
	if (!last_colon)
		return;
	*last_colon = 0;
	name_colon = strrchr(text, ':');
	if (!name_colon) {
		*last_colon = ':';
		return;
	}
	*name_colon = 0;
	frame->file = text;
	frame->name = name_colon + 1;
	frame->line = atoi(last_colon + 1);
	if (frame->line <= 0)
		frame->line = -1;
	frame->end_line = frame->line;
}

/* The next line into reader->line, without its newline: 1, 0 at the end, or a negative errno. */
static int read_line(struct collapsed_reader *reader, size_t *len_out)
{
	size_t len = 0;
	int c;

	reader->line_number++;
	while ((c = getc_unlocked(reader->in)) != EOF && c != '\n') {
		if (c == 0)
			return errbuf_format(reader->error, sizeof(reader->error), -EINVAL,
					     "line %" PRIu64 ": a NUL byte: not collapsed stacks", reader->line_number);
		if (len + 1 >= COLLAPSED_MAX_LINE)
			return errbuf_format(reader->error, sizeof(reader->error), -E2BIG,
					     "line %" PRIu64 ": longer than %u MiB", reader->line_number,
					     COLLAPSED_MAX_LINE >> 20);
		if (array_reserve((void **)&reader->line, &reader->line_capacity, len + 2, 1, 1024))
			return -ENOMEM;
		reader->line[len++] = (char)c;
	}
	if (ferror(reader->in))
		return errbuf_format(reader->error, sizeof(reader->error), -EIO, "line %" PRIu64 ": %s",
				     reader->line_number, strerror(errno));
	if (c == EOF && len == 0)
		return 0;
	if (array_reserve((void **)&reader->line, &reader->line_capacity, len + 1, 1, 1024))
		return -ENOMEM;
	while (len > 0 && reader->line[len - 1] == '\r')
		len--;
	reader->line[len] = 0;
	*len_out = len;
	return 1;
}

static int collapsed_next_sample(void *state, struct pf_sample *sample)
{
	struct collapsed_reader *reader = state;
	size_t len;
	char *space, *end, *frame_text, *saveptr = NULL;
	long long weight;
	size_t count = 0;
	int got;

	do {
		got = read_line(reader, &len);
		if (got <= 0)
			return got;
	} while (len == 0);
	space = strrchr(reader->line, ' ');
	if (!space || space == reader->line)
		return errbuf_format(reader->error, sizeof(reader->error), -EINVAL,
				     "line %" PRIu64 ": expected 'frame;frame;... weight'", reader->line_number);
	*space = 0;
	errno = 0;
	weight = strtoll(space + 1, &end, 10);
	if (errno || *end || end == space + 1 || weight == LLONG_MIN)
		return errbuf_format(reader->error, sizeof(reader->error), -EINVAL,
				     "line %" PRIu64 ": bad weight '%s'", reader->line_number, space + 1);
	for (frame_text = strtok_r(reader->line, ";", &saveptr); frame_text;
	     frame_text = strtok_r(NULL, ";", &saveptr)) {
		if (count == COLLAPSED_MAX_FRAMES)
			return errbuf_format(reader->error, sizeof(reader->error), -E2BIG,
					     "line %" PRIu64 ": more than %d frames", reader->line_number,
					     COLLAPSED_MAX_FRAMES);
		parse_frame(frame_text, &reader->frames[count++]);
	}
	*sample = (struct pf_sample){ .metrics = PF_METRIC_TIME, .time_us = (uint64_t)weight,
				      .frame_count = count, .frames = reader->frames };
	/* Only a memory profile's weights go below 0 (bytes released: --mode memory). */
	if (weight < 0)
		*sample = (struct pf_sample){ .metrics = PF_METRIC_MEMORY, .memory = weight,
					      .frame_count = count, .frames = reader->frames };
	return 1;
}

static size_t collapsed_metadata_count(const void *state)
{
	(void)state;
	return 0;
}

static void collapsed_metadata_at(const void *state, size_t index, const char **key,
				  const char **value)
{
	(void)state, (void)index;
	*key = *value = "";
}

static const char *collapsed_reader_error(const void *state)
{
	return ((const struct collapsed_reader *)state)->error;
}

static void collapsed_reader_destroy(void *state)
{
	struct collapsed_reader *reader = state;

	if (reader->in)
		fclose(reader->in);
	free(reader->line);
	free(reader);
}

static const struct pf_reader_ops collapsed_reader_ops = {
	.next_sample = collapsed_next_sample,
	.metadata_count = collapsed_metadata_count,
	.metadata_at = collapsed_metadata_at,
	.error = collapsed_reader_error,
	.destroy = collapsed_reader_destroy,
};

int collapsed_reader_create(int fd, void **state, const struct pf_reader_ops **ops, char *errbuf,
			    size_t errlen)
{
	struct collapsed_reader *reader = calloc(1, sizeof(*reader));
	int own_fd;

	if (!reader)
		return -ENOMEM;
	/* fdopen would take the borrowed fd: give it a duplicate. */
	own_fd = dup(fd);
	reader->in = own_fd >= 0 ? fdopen(own_fd, "r") : NULL;
	if (!reader->in) {
		int err = -errno;

		if (own_fd >= 0)
			close(own_fd);
		free(reader);
		return errbuf_format(errbuf, errlen, err, "cannot read: %s", strerror(-err));
	}
	*state = reader;
	*ops = &collapsed_reader_ops;
	return 0;
}
