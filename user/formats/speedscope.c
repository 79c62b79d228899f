// SPDX-License-Identifier: MIT
/*
 * speedscope's file format (https://www.speedscope.app/file-format-schema.json;
 * a copy is in tests/data/speedscope/): the frames once, in "shared", then one
 * "sampled" profile per thread, its samples in time order, root first. A run
 * of samples with the same stack is one entry with their summed weight, so a
 * thread that stays in one place costs one entry, not one per sample.
 * Weights are microseconds when samples carry time, bytes when they carry
 * only memory, else sample counts. Written whole at finish.
 */
#include "formats/speedscope.h"

#include "formats/stack_table.h"
#include "util/array.h"
#include "util/errbuf.h"
#include "util/fd_write.h"
#include "util/intern.h"
#include "util/text_quote.h"
#include "util/version.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A thread's name as profiles carry it (a comm or a Python thread name), cut to this. */
#define SPEEDSCOPE_THREAD_NAME_MAX 64

struct speedscope_run {
	uint32_t stack;
	int64_t weight;
};

struct speedscope_thread {
	uint32_t pid;
	uint64_t tid;
	char name[SPEEDSCOPE_THREAD_NAME_MAX]; /* the thread's name when a sample gave one, "" else */
	struct speedscope_run *runs;
	size_t run_count;
	size_t run_capacity;
	int64_t total;
};

struct speedscope_writer {
	int fd;
	struct stack_table stacks;
	struct intern_table thread_ids;   /* (pid, tid) -> index in threads */
	struct speedscope_thread *threads;
	size_t threads_capacity;
	uint32_t metrics_seen;            /* PF_METRIC_* of any sample: picks the unit */
	bool counts_ns;                   /* the counts are nanoseconds (event_unit: --event off-cpu) */
	char error[256];
};

struct thread_key {
	uint32_t pid;
	uint32_t padding;
	uint64_t tid;
};

static struct speedscope_thread *thread_of(struct speedscope_writer *writer, const struct pf_sample *sample)
{
	struct thread_key key = { .pid = sample->pid, .tid = sample->tid };
	bool is_new = false;
	int64_t index = intern_add(&writer->thread_ids, &key, sizeof(key), &is_new);

	if (index < 0)
		return NULL;
	if (is_new) {
		if (ARRAY_RESERVE(writer->threads, writer->threads_capacity, (size_t)index + 1))
			return NULL;
		writer->threads[index] = (struct speedscope_thread){ .pid = sample->pid, .tid = sample->tid };
	}
	if (!writer->threads[index].name[0] && sample->thread_name)
		snprintf(writer->threads[index].name, sizeof(writer->threads[index].name), "%s", sample->thread_name);
	return &writer->threads[index];
}

static int speedscope_add_sample(void *state, const struct pf_sample *sample)
{
	struct speedscope_writer *writer = state;
	struct speedscope_thread *thread = thread_of(writer, sample);
	int64_t stack = stack_table_add(&writer->stacks, sample);
	int64_t weight = pf_sample_weight(sample);

	if (!thread)
		return -ENOMEM;
	if (stack < 0)
		return (int)stack;
	writer->metrics_seen |= sample->metrics;
	thread->total += weight;
	if (thread->run_count && thread->runs[thread->run_count - 1].stack == (uint32_t)stack) {
		thread->runs[thread->run_count - 1].weight += weight;
		return 0;
	}
	if (ARRAY_RESERVE(thread->runs, thread->run_capacity, thread->run_count + 1))
		return -ENOMEM;
	thread->runs[thread->run_count++] = (struct speedscope_run){ .stack = (uint32_t)stack, .weight = weight };
	return 0;
}

static const char *unit_of(const struct speedscope_writer *writer)
{
	if (writer->metrics_seen & PF_METRIC_TIME)
		return "microseconds";
	if (writer->metrics_seen & PF_METRIC_MEMORY)
		return "bytes";
	return writer->counts_ns ? "nanoseconds" : "none";
}

static void write_frame(FILE *out, const struct stack_frame *frame)
{
	fputs("{\"name\":", out);
	fput_json_string(out, *frame->name ? frame->name : "[unknown]");
	switch (frame->kind) {
	case PF_FRAME_KERNEL:
		fputs(",\"file\":\"[kernel]\"", out);
		break;
	case PF_FRAME_NATIVE:
		if (*frame->file) {
			fputs(",\"file\":", out);
			fput_json_string(out, frame->file);
		}
		break;
	default:
		if (*frame->file) {
			fputs(",\"file\":", out);
			fput_json_string(out, frame->file);
		}
		if (frame->line > 0)
			fprintf(out, ",\"line\":%" PRId32, frame->line);
		break;
	}
	fputc('}', out);
}

static void write_thread(const struct speedscope_writer *writer, FILE *out, const struct speedscope_thread *thread)
{
	char name[SPEEDSCOPE_THREAD_NAME_MAX + 64];

	/* The thread's own name first: it is what speedscope's profile list shows. */
	if (thread->name[0])
		snprintf(name, sizeof(name), "%s (pid %" PRIu32 " thread %" PRIu64 ")", thread->name, thread->pid,
			 thread->tid);
	else
		snprintf(name, sizeof(name), "pid %" PRIu32 " thread %" PRIu64, thread->pid, thread->tid);
	fputs("{\"type\":\"sampled\",\"name\":", out);
	fput_json_string(out, name);
	fprintf(out, ",\"unit\":\"%s\",\"startValue\":0,\"endValue\":%" PRId64 ",\"samples\":[",
		unit_of(writer), thread->total);
	for (size_t i = 0; i < thread->run_count; i++) {
		size_t depth;
		const void *stack = stack_table_stack(&writer->stacks, thread->runs[i].stack, &depth);

		fputs(i ? ",[" : "[", out);
		for (size_t f = 0; f < depth; f++)
			fprintf(out, f ? ",%" PRIu32 : "%" PRIu32, stack_table_frame_at(stack, f));
		fputc(']', out);
	}
	fputs("],\"weights\":[", out);
	for (size_t i = 0; i < thread->run_count; i++)
		fprintf(out, i ? ",%" PRId64 : "%" PRId64, thread->runs[i].weight);
	fputs("]}", out);
}

static int write_document(const struct speedscope_writer *writer, FILE *out)
{
	size_t thread_count = intern_count(&writer->thread_ids);

	fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",", out);
	fputs("\"exporter\":\"pybpfprof " PYBPFPROF_VERSION "\",\"name\":\"pybpfprof\",", out);
	fputs("\"activeProfileIndex\":0,\"shared\":{\"frames\":[", out);
	for (size_t id = 0; id < stack_table_frame_count(&writer->stacks); id++) {
		struct stack_frame frame;

		stack_table_frame(&writer->stacks, (uint32_t)id, &frame);
		if (id)
			fputc(',', out);
		write_frame(out, &frame);
	}
	fputs("]},\"profiles\":[", out);
	for (size_t i = 0; i < thread_count; i++) {
		if (i)
			fputc(',', out);
		write_thread(writer, out, &writer->threads[i]);
	}
	fputs("]}\n", out);
	return ferror(out) ? -ENOMEM : 0;
}

static int speedscope_finish(void *state)
{
	struct speedscope_writer *writer = state;
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	int err;

	if (!out)
		return -ENOMEM;
	err = write_document(writer, out);
	if (fclose(out) != 0 && !err)
		err = -ENOMEM;
	if (!err)
		err = fd_write_all(writer->fd, text, len, NULL);
	free(text);
	if (err)
		return errbuf_format(writer->error, sizeof(writer->error), err, "write failed: %s", strerror(-err));
	return 0;
}

static int speedscope_set_metadata(void *state, const char *key, const char *value)
{
	struct speedscope_writer *writer = state;

	/* the format has a name and an exporter, nothing else: only the unit is kept */
	if (strcmp(key, "event_unit") == 0)
		writer->counts_ns = strcmp(value, "nanoseconds") == 0;
	return 0;
}

static int speedscope_flush(void *state)
{
	(void)state;
	return 0; /* written whole at finish */
}

static void speedscope_destroy(void *state)
{
	struct speedscope_writer *writer = state;

	for (size_t i = 0; i < intern_count(&writer->thread_ids); i++)
		free(writer->threads[i].runs);
	free(writer->threads);
	intern_free(&writer->thread_ids);
	stack_table_free(&writer->stacks);
	free(writer);
}

static const char *speedscope_error(const void *state)
{
	return ((const struct speedscope_writer *)state)->error;
}

static const struct pf_writer_ops speedscope_writer_ops = {
	.set_metadata = speedscope_set_metadata,
	.add_sample = speedscope_add_sample,
	.flush = speedscope_flush,
	.finish = speedscope_finish,
	.destroy = speedscope_destroy,
	.error = speedscope_error,
};

int speedscope_writer_create(int fd, const struct pf_writer_options *options, void **state,
			     const struct pf_writer_ops **ops)
{
	struct speedscope_writer *writer = calloc(1, sizeof(*writer));

	(void)options;
	if (!writer)
		return -ENOMEM;
	writer->fd = fd;
	stack_table_init(&writer->stacks);
	intern_init(&writer->thread_ids);
	*state = writer;
	*ops = &speedscope_writer_ops;
	return 0;
}
