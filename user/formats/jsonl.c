// SPDX-License-Identifier: MIT
/*
 * JSON lines for scripts: one object a sample, in the order the samples came,
 * its frames root first. The field names are a contract (doc/formats.md): a
 * field is added, never renamed; a value the source does not know is left out
 * rather than guessed. Lines are held in memory and written at each flush, so
 * a flushed file is whole lines only.
 */
#include "formats/jsonl.h"

#include "util/errbuf.h"
#include "util/fd_write.h"
#include "util/text_quote.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Lines held before they are written without waiting for a flush: what a converted file costs. */
#define JSONL_PENDING_MAX (1u << 20)

struct jsonl_writer {
	int fd;
	FILE *pending;      /* lines not yet written, into text */
	char *text;
	size_t len;
	char error[256];
};

/* The documented name of a cut stack's marker is "truncated". */
static const char *kind_name(enum pf_frame_kind kind)
{
	return kind == PF_FRAME_INVALID ? "truncated" : pf_frame_kind_name(kind);
}

static void write_frame(FILE *out, const struct pf_frame *frame)
{
	fprintf(out, "{\"kind\":\"%s\",\"name\":", kind_name(frame->kind));
	fput_json_string(out, frame->name);
	if (*frame->file) {
		fputs(",\"file\":", out);
		fput_json_string(out, frame->file);
	}
	if (frame->line > 0)
		fprintf(out, ",\"line\":%" PRId32, frame->line);
	fputc('}', out);
}

static void write_states(FILE *out, uint32_t status)
{
	bool first = true;

	fputs(",\"state\":[", out);
	for (uint32_t bit = 1; bit && bit <= status; bit <<= 1) {
		const char *name = status & bit ? pf_status_name(bit) : NULL;

		if (!name)
			continue;
		fprintf(out, first ? "\"%s\"" : ",\"%s\"", name);
		first = false;
	}
	fputc(']', out);
}

static void write_sample(FILE *out, const struct pf_sample *sample)
{
	fprintf(out, "{\"time_us\":%" PRIu64 ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu64
		",\"interpreter\":%" PRIu32, sample->timestamp_us, sample->pid, sample->tid, sample->iid);
	if (sample->process_name) {
		fputs(",\"process\":", out);
		fput_json_string(out, sample->process_name);
	}
	if (sample->thread_name) {
		fputs(",\"thread\":", out);
		fput_json_string(out, sample->thread_name);
	}
	write_states(out, sample->status);
	if (sample->task_state)
		fprintf(out, ",\"task_state\":\"%c\",\"on_a_cpu\":%s",
			(sample->task_state >= 'A' && sample->task_state <= 'Z') ? sample->task_state : '?',
			sample->on_a_cpu ? "true" : "false");
	fprintf(out, ",\"weight\":%" PRId64 ",\"samples\":%" PRIu32, pf_sample_weight(sample),
		sample->samples > 1 ? sample->samples : 1);
	if (sample->metrics & PF_METRIC_TIME)
		fprintf(out, ",\"duration_us\":%" PRIu64, sample->time_us);
	if (sample->metrics & PF_METRIC_MEMORY)
		fprintf(out, ",\"memory_bytes\":%" PRId64, sample->memory);
	fputs(",\"frames\":[", out);
	for (size_t i = 0; i < sample->frame_count; i++) {
		if (i)
			fputc(',', out);
		write_frame(out, &sample->frames[i]);
	}
	fputs("]}\n", out);
}

static int open_pending(struct jsonl_writer *writer)
{
	writer->text = NULL;
	writer->len = 0;
	writer->pending = open_memstream(&writer->text, &writer->len);
	return writer->pending ? 0 : -ENOMEM;
}

/* Writes the lines held so far and starts a new buffer. */
static int jsonl_flush(void *state)
{
	struct jsonl_writer *writer = state;
	int err = fclose(writer->pending) ? -ENOMEM : 0;

	writer->pending = NULL;
	if (!err)
		err = fd_write_all(writer->fd, writer->text, writer->len, NULL);
	free(writer->text);
	if (!err)
		err = open_pending(writer);
	if (err)
		return errbuf_format(writer->error, sizeof(writer->error), err, "write failed: %s",
				     strerror(-err));
	return 0;
}

static int jsonl_add_sample(void *state, const struct pf_sample *sample)
{
	struct jsonl_writer *writer = state;

	write_sample(writer->pending, sample);
	if (ferror(writer->pending) || fflush(writer->pending))
		return -ENOMEM;
	return writer->len >= JSONL_PENDING_MAX ? jsonl_flush(writer) : 0;
}

static int jsonl_set_metadata(void *state, const char *key, const char *value)
{
	(void)state, (void)key, (void)value;
	return 0; /* lines are samples only: the run's metadata is in the formats that keep it */
}

static void jsonl_destroy(void *state)
{
	struct jsonl_writer *writer = state;

	if (writer->pending)
		fclose(writer->pending);
	free(writer->text);
	free(writer);
}

/* The lines not yet written (at most JSONL_PENDING_MAX and one line): counted in the budget. */
static size_t jsonl_held_bytes(const void *state)
{
	return ((const struct jsonl_writer *)state)->len;
}

static const char *jsonl_error(const void *state)
{
	return ((const struct jsonl_writer *)state)->error;
}

static const struct pf_writer_ops jsonl_writer_ops = {
	.set_metadata = jsonl_set_metadata,
	.add_sample = jsonl_add_sample,
	.flush = jsonl_flush,
	.finish = jsonl_flush,
	.held_bytes = jsonl_held_bytes,
	.destroy = jsonl_destroy,
	.error = jsonl_error,
};

int jsonl_writer_create(int fd, const struct pf_writer_options *options, void **state,
			const struct pf_writer_ops **ops)
{
	struct jsonl_writer *writer = calloc(1, sizeof(*writer));

	(void)options;
	if (!writer)
		return -ENOMEM;
	writer->fd = fd;
	if (open_pending(writer)) {
		free(writer);
		return -ENOMEM;
	}
	*state = writer;
	*ops = &jsonl_writer_ops;
	return 0;
}
