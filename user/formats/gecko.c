// SPDX-License-Identifier: MIT
/*
 * The Firefox Profiler's processed profile format (firefox-devtools/profiler,
 * src/types/profile.js; docs-developer/processed-profile-format.md), version 57
 * of its processed format as CPython 3.15's sampler writes it: the profiler
 * upgrades older versions as it loads them. One thread on the timeline per
 * (pid, tid), named by its thread and process names where the samples carry
 * them; each thread has its own stack, frame and function tables, the strings
 * are shared. Frames are in the categories Python, Native and Kernel; the
 * states a sample records (waiting for the GIL, a GC running, idle, off CPU in
 * wall mode) become interval markers spanning their runs of samples.
 *
 * Times are milliseconds from the earliest sample. Samples are kept (16 bytes
 * each) and the document written whole at finish: a timeline is every sample.
 */
#include "formats/gecko.h"

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
#include <zlib.h>

/* The processed format's version this writer follows (and meta.version, the Gecko format's). */
#define GECKO_PROCESSED_VERSION 57
#define GECKO_FORMAT_VERSION 32
/* A thread's or process's name as the samples carry it, cut to this. */
#define GECKO_NAME_MAX 64

enum gecko_category {
	CATEGORY_OTHER,
	CATEGORY_PYTHON,
	CATEGORY_NATIVE,
	CATEGORY_KERNEL,
	CATEGORY_GC,
	CATEGORY_GIL,
	CATEGORY_IDLE,
};

static const char *const category_json[] = {
	"{\"name\":\"Other\",\"color\":\"grey\",\"subcategories\":[\"Other\"]}",
	"{\"name\":\"Python\",\"color\":\"yellow\",\"subcategories\":[\"Other\"]}",
	"{\"name\":\"Native\",\"color\":\"blue\",\"subcategories\":[\"Other\"]}",
	"{\"name\":\"Kernel\",\"color\":\"orange\",\"subcategories\":[\"Other\"]}",
	"{\"name\":\"GC\",\"color\":\"red\",\"subcategories\":[\"Other\"]}",
	"{\"name\":\"GIL\",\"color\":\"green\",\"subcategories\":[\"Other\"]}",
	"{\"name\":\"Idle\",\"color\":\"transparent\",\"subcategories\":[\"Other\"]}",
};

/* The states that become markers: a run of samples in one is one marker. */
enum gecko_state { STATE_GIL_WAIT, STATE_GC, STATE_IDLE, STATE_OFF_CPU, STATE_COUNT };

static const struct {
	const char *name;
	enum gecko_category category;
} state_markers[STATE_COUNT] = {
	[STATE_GIL_WAIT] = { "Waiting for GIL", CATEGORY_GIL },
	[STATE_GC] = { "GC Collecting", CATEGORY_GC },
	[STATE_IDLE] = { "Idle", CATEGORY_IDLE },
	[STATE_OFF_CPU] = { "Off CPU", CATEGORY_IDLE },
};

static bool in_state(const struct pf_sample *sample, enum gecko_state state)
{
	switch (state) {
	case STATE_GIL_WAIT:
		return sample->status & PF_STATUS_GIL_REQUESTED;
	case STATE_GC:
		return sample->status & PF_STATUS_GC;
	case STATE_IDLE:
		return sample->status & PF_STATUS_IDLE;
	default: /* only a live wall-mode sample knows whether its thread was on a CPU */
		return sample->task_state && !sample->on_a_cpu;
	}
}

/* Stack ids are below this: the top bits of a sample's word hold its states. */
#define GECKO_STACK_LIMIT (1u << 28)

struct gecko_sample {
	uint64_t time_us;
	uint32_t stack : 28;
	uint32_t states : 4; /* 1 << enum gecko_state */
	uint32_t weight;
};

struct gecko_marker {
	uint64_t start_us, end_us;
	enum gecko_state state;
};

struct gecko_func {
	uint32_t name;     /* string index */
	int64_t file;      /* string index, -1 none */
	int32_t line;      /* the function's first line, 0 unknown */
	enum gecko_category category;
};

struct gecko_frame_key {
	uint32_t func;
	int32_t line;
};

struct gecko_stack_key {
	int64_t prefix; /* -1: a root */
	uint32_t frame;
	uint32_t padding;
};

struct gecko_thread {
	uint32_t pid;
	uint64_t tid;
	bool main_thread;
	char name[GECKO_NAME_MAX];
	char process_name[GECKO_NAME_MAX];
	struct intern_table funcs;  /* kind byte, file, NUL, name -> func index */
	struct gecko_func *func_list;
	size_t func_capacity;
	struct intern_table frames; /* struct gecko_frame_key -> frame index */
	struct intern_table stacks; /* struct gecko_stack_key -> stack index */
	struct gecko_sample *samples;
	size_t sample_count, sample_capacity;
	struct gecko_marker *markers;
	size_t marker_count, marker_capacity;
	uint64_t clock_us;      /* the last sample's time, as it came */
	uint64_t last_span_us;  /* how long that sample stands for */
	uint64_t end_us;        /* when the latest sample ends */
};

struct gecko_writer {
	int fd;
	bool gzip;
	struct intern_table strings;    /* shared.stringArray */
	struct intern_table thread_ids; /* (pid, tid) -> index in threads */
	struct gecko_thread *threads;
	size_t threads_capacity;
	uint64_t interval_us;
	uint64_t earliest_us;           /* UINT64_MAX until a sample */
	bool weighted;                  /* some sample stands for several */
	char *key;
	size_t key_capacity;
	char error[256];
};

struct thread_key {
	uint32_t pid;
	uint32_t padding;
	uint64_t tid;
};

static int64_t string_index(struct gecko_writer *writer, const char *text)
{
	return intern_add(&writer->strings, text, strlen(text), NULL);
}

static struct gecko_thread *thread_of(struct gecko_writer *writer, const struct pf_sample *sample)
{
	struct thread_key key = { .pid = sample->pid, .tid = sample->tid };
	bool is_new = false;
	int64_t index = intern_add(&writer->thread_ids, &key, sizeof(key), &is_new);
	struct gecko_thread *thread;

	if (index < 0)
		return NULL;
	if (is_new) {
		if (ARRAY_RESERVE(writer->threads, writer->threads_capacity, (size_t)index + 1))
			return NULL;
		thread = &writer->threads[index];
		*thread = (struct gecko_thread){ .pid = sample->pid, .tid = sample->tid };
		intern_init(&thread->funcs);
		intern_init(&thread->frames);
		intern_init(&thread->stacks);
	}
	thread = &writer->threads[index];
	if (!thread->name[0] && sample->thread_name)
		snprintf(thread->name, sizeof(thread->name), "%s", sample->thread_name);
	if (!thread->process_name[0] && sample->process_name)
		snprintf(thread->process_name, sizeof(thread->process_name), "%s", sample->process_name);
	if (sample->status & PF_STATUS_MAIN_THREAD || sample->tid == sample->pid)
		thread->main_thread = true;
	return thread;
}

static enum gecko_category category_of(enum pf_frame_kind kind)
{
	switch (kind) {
	case PF_FRAME_PYTHON:
		return CATEGORY_PYTHON;
	case PF_FRAME_NATIVE:
		return CATEGORY_NATIVE;
	case PF_FRAME_KERNEL:
		return CATEGORY_KERNEL;
	default:
		return CATEGORY_OTHER;
	}
}

static int64_t func_index(struct gecko_writer *writer, struct gecko_thread *thread,
			  const struct pf_frame *frame)
{
	size_t file_len = strlen(frame->file), name_len = strlen(frame->name);
	size_t len = 1 + file_len + 1 + name_len;
	bool is_new = false;
	int64_t index, name, file = -1;

	if (array_reserve((void **)&writer->key, &writer->key_capacity, len, 1, 256))
		return -ENOMEM;
	writer->key[0] = (char)frame->kind;
	memcpy(writer->key + 1, frame->file, file_len);
	writer->key[1 + file_len] = 0;
	memcpy(writer->key + 2 + file_len, frame->name, name_len);
	index = intern_add(&thread->funcs, writer->key, len, &is_new);
	if (index < 0 || !is_new)
		return index;
	if (ARRAY_RESERVE(thread->func_list, thread->func_capacity, (size_t)index + 1))
		return -ENOMEM;
	name = string_index(writer, *frame->name ? frame->name : "[unknown]");
	if (*frame->file && frame->kind != PF_FRAME_KERNEL)
		file = string_index(writer, frame->file);
	if (name < 0 || file < -1)
		return -ENOMEM;
	thread->func_list[index] = (struct gecko_func){
		.name = (uint32_t)name, .file = file, .category = category_of(frame->kind),
		.line = frame->kind == PF_FRAME_PYTHON && frame->function_line > 0 ? frame->function_line : 0,
	};
	return index;
}

/* The thread's stack index of the sample's frames (a node per prefix), -1 for an empty stack. */
static int64_t stack_index(struct gecko_writer *writer, struct gecko_thread *thread,
			   const struct pf_sample *sample)
{
	int64_t prefix = -1;

	for (size_t i = 0; i < sample->frame_count; i++) {
		const struct pf_frame *frame = &sample->frames[i];
		int64_t func = func_index(writer, thread, frame), frame_index;
		struct gecko_frame_key frame_key;
		struct gecko_stack_key stack_key;

		if (func < 0)
			return func;
		frame_key = (struct gecko_frame_key){ .func = (uint32_t)func,
						      .line = frame->kind == PF_FRAME_PYTHON ? frame->line : 0 };
		frame_index = intern_add(&thread->frames, &frame_key, sizeof(frame_key), NULL);
		if (frame_index < 0)
			return frame_index;
		stack_key = (struct gecko_stack_key){ .prefix = prefix, .frame = (uint32_t)frame_index };
		prefix = intern_add(&thread->stacks, &stack_key, sizeof(stack_key), NULL);
		if (prefix < 0)
			return prefix;
	}
	return prefix;
}

static unsigned states_of(const struct pf_sample *sample)
{
	unsigned states = 0;

	for (int s = 0; s < STATE_COUNT; s++)
		if (in_state(sample, (enum gecko_state)s))
			states |= 1u << s;
	return states;
}

static int add_marker(struct gecko_thread *thread, enum gecko_state state, uint64_t start_us, uint64_t end_us)
{
	if (ARRAY_RESERVE(thread->markers, thread->marker_capacity, thread->marker_count + 1))
		return -ENOMEM;
	thread->markers[thread->marker_count++] =
		(struct gecko_marker){ .start_us = start_us, .end_us = end_us, .state = state };
	return 0;
}

/* A run of samples in a state is a marker from its first sample to the next sample out of
 * it, or to the end of the thread's last sample. Samples in time order. */
static int add_state_markers(struct gecko_thread *thread)
{
	for (int s = 0; s < STATE_COUNT; s++) {
		uint64_t start_us = UINT64_MAX;

		for (size_t i = 0; i < thread->sample_count; i++) {
			const struct gecko_sample *sample = &thread->samples[i];
			bool now = sample->states & (1u << s);

			if (now && start_us == UINT64_MAX) {
				start_us = sample->time_us;
			} else if (!now && start_us != UINT64_MAX) {
				if (add_marker(thread, (enum gecko_state)s, start_us, sample->time_us))
					return -ENOMEM;
				start_us = UINT64_MAX;
			}
		}
		if (start_us != UINT64_MAX && add_marker(thread, (enum gecko_state)s, start_us, thread->end_us))
			return -ENOMEM;
	}
	return 0;
}

static int by_time(const void *a, const void *b)
{
	const struct gecko_sample *sa = a, *sb = b;

	return sa->time_us < sb->time_us ? -1 : sa->time_us > sb->time_us;
}

static int gecko_add_sample(void *state, const struct pf_sample *sample)
{
	struct gecko_writer *writer = state;
	struct gecko_thread *thread = thread_of(writer, sample);
	uint32_t count = sample->samples > 1 ? sample->samples : 1;
	uint64_t span_us = sample->metrics & PF_METRIC_TIME ? sample->time_us : writer->interval_us * count;
	uint64_t time_us;
	int64_t stack;

	if (!thread)
		return -ENOMEM;
	stack = stack_index(writer, thread, sample);
	if (stack < 0)
		return stack == -1 ? 0 : (int)stack; /* a sample without frames has nothing to show */
	if (stack >= GECKO_STACK_LIMIT)
		return errbuf_format(writer->error, sizeof(writer->error), -EOVERFLOW,
				     "thread %" PRIu64 " has more than %u distinct stacks", thread->tid,
				     GECKO_STACK_LIMIT);
	/* A source without timestamps: the thread's samples follow each other by their spans. */
	time_us = sample->timestamp_us ? sample->timestamp_us : thread->clock_us + thread->last_span_us;
	if (ARRAY_RESERVE(thread->samples, thread->sample_capacity, thread->sample_count + 1))
		return -ENOMEM;
	thread->samples[thread->sample_count++] = (struct gecko_sample){
		.time_us = time_us, .stack = (uint32_t)stack, .states = states_of(sample) & 0xf, .weight = count };
	writer->weighted |= count > 1;
	if (time_us < writer->earliest_us)
		writer->earliest_us = time_us;
	thread->clock_us = time_us;
	thread->last_span_us = span_us;
	if (time_us + span_us > thread->end_us)
		thread->end_us = time_us + span_us;
	return 0;
}

static double ms_of(const struct gecko_writer *writer, uint64_t time_us)
{
	return (double)(time_us - writer->earliest_us) / 1000.0;
}

static void write_int_or_null(FILE *out, bool first, int64_t value, bool is_null)
{
	if (!first)
		fputc(',', out);
	if (is_null)
		fputs("null", out);
	else
		fprintf(out, "%" PRId64, value);
}

static void write_stack_table(FILE *out, const struct gecko_thread *thread)
{
	size_t count = intern_count(&thread->stacks);
	struct gecko_stack_key key;

	fputs("\"stackTable\":{\"frame\":[", out);
	for (size_t i = 0; i < count; i++) {
		memcpy(&key, intern_key(&thread->stacks, (uint32_t)i, NULL), sizeof(key));
		write_int_or_null(out, i == 0, key.frame, false);
	}
	fputs("],\"prefix\":[", out);
	for (size_t i = 0; i < count; i++) {
		memcpy(&key, intern_key(&thread->stacks, (uint32_t)i, NULL), sizeof(key));
		write_int_or_null(out, i == 0, key.prefix, key.prefix < 0);
	}
	fputs("],\"category\":[", out);
	for (size_t i = 0; i < count; i++) {
		struct gecko_frame_key frame;

		memcpy(&key, intern_key(&thread->stacks, (uint32_t)i, NULL), sizeof(key));
		memcpy(&frame, intern_key(&thread->frames, key.frame, NULL), sizeof(frame));
		write_int_or_null(out, i == 0, thread->func_list[frame.func].category, false);
	}
	fputs("],\"subcategory\":[", out);
	for (size_t i = 0; i < count; i++)
		fputs(i ? ",0" : "0", out);
	fprintf(out, "],\"length\":%zu}", count);
}

/* A column of count copies of text. */
static void write_repeated(FILE *out, const char *name, const char *text, size_t count)
{
	fprintf(out, ",\"%s\":[", name);
	for (size_t i = 0; i < count; i++) {
		if (i)
			fputc(',', out);
		fputs(text, out);
	}
	fputc(']', out);
}

static void write_frame_table(FILE *out, const struct gecko_thread *thread)
{
	size_t count = intern_count(&thread->frames);
	struct gecko_frame_key key;

	fputs("\"frameTable\":{\"func\":[", out);
	for (size_t i = 0; i < count; i++) {
		memcpy(&key, intern_key(&thread->frames, (uint32_t)i, NULL), sizeof(key));
		write_int_or_null(out, i == 0, key.func, false);
	}
	fputs("],\"line\":[", out);
	for (size_t i = 0; i < count; i++) {
		memcpy(&key, intern_key(&thread->frames, (uint32_t)i, NULL), sizeof(key));
		write_int_or_null(out, i == 0, key.line, key.line <= 0);
	}
	fputs("],\"category\":[", out);
	for (size_t i = 0; i < count; i++) {
		memcpy(&key, intern_key(&thread->frames, (uint32_t)i, NULL), sizeof(key));
		write_int_or_null(out, i == 0, thread->func_list[key.func].category, false);
	}
	fputc(']', out);
	write_repeated(out, "subcategory", "0", count);
	write_repeated(out, "address", "-1", count);
	write_repeated(out, "inlineDepth", "0", count);
	write_repeated(out, "nativeSymbol", "null", count);
	write_repeated(out, "innerWindowID", "null", count);
	write_repeated(out, "implementation", "null", count);
	write_repeated(out, "column", "null", count);
	write_repeated(out, "optimizations", "null", count);
	fprintf(out, ",\"length\":%zu}", count);
}

static void write_func_table(FILE *out, const struct gecko_thread *thread)
{
	size_t count = intern_count(&thread->funcs);

	fputs("\"funcTable\":{\"name\":[", out);
	for (size_t i = 0; i < count; i++)
		write_int_or_null(out, i == 0, thread->func_list[i].name, false);
	fputs("],\"isJS\":[", out);
	for (size_t i = 0; i < count; i++)
		fprintf(out, "%s%s", i ? "," : "", thread->func_list[i].category == CATEGORY_PYTHON ? "true" : "false");
	fputs("],\"fileName\":[", out);
	for (size_t i = 0; i < count; i++)
		write_int_or_null(out, i == 0, thread->func_list[i].file, thread->func_list[i].file < 0);
	fputs("],\"lineNumber\":[", out);
	for (size_t i = 0; i < count; i++)
		write_int_or_null(out, i == 0, thread->func_list[i].line, thread->func_list[i].line <= 0);
	fputc(']', out);
	write_repeated(out, "relevantForJS", "false", count);
	write_repeated(out, "resource", "-1", count);
	write_repeated(out, "columnNumber", "null", count);
	fprintf(out, ",\"length\":%zu}", count);
}

static void write_samples(FILE *out, const struct gecko_writer *writer, const struct gecko_thread *thread)
{
	size_t count = thread->sample_count;

	fputs("\"samples\":{\"stack\":[", out);
	for (size_t i = 0; i < count; i++)
		write_int_or_null(out, i == 0, thread->samples[i].stack, false);
	fputs("],\"time\":[", out);
	for (size_t i = 0; i < count; i++)
		fprintf(out, "%s%.3f", i ? "," : "", ms_of(writer, thread->samples[i].time_us));
	fputs("],\"weight\":", out);
	if (writer->weighted) {
		fputc('[', out);
		for (size_t i = 0; i < count; i++)
			write_int_or_null(out, i == 0, thread->samples[i].weight, false);
		fputc(']', out);
	} else {
		fputs("null", out);
	}
	fprintf(out, ",\"weightType\":\"samples\",\"length\":%zu}", count);
}

static void write_markers(FILE *out, const struct gecko_writer *writer, const struct gecko_thread *thread,
			  const int64_t *state_names)
{
	size_t count = thread->marker_count;

	fputs("\"markers\":{\"name\":[", out);
	for (size_t i = 0; i < count; i++)
		write_int_or_null(out, i == 0, state_names[thread->markers[i].state], false);
	fputs("],\"startTime\":[", out);
	for (size_t i = 0; i < count; i++)
		fprintf(out, "%s%.3f", i ? "," : "", ms_of(writer, thread->markers[i].start_us));
	fputs("],\"endTime\":[", out);
	for (size_t i = 0; i < count; i++)
		fprintf(out, "%s%.3f", i ? "," : "", ms_of(writer, thread->markers[i].end_us));
	fputs("],\"category\":[", out);
	for (size_t i = 0; i < count; i++)
		write_int_or_null(out, i == 0, state_markers[thread->markers[i].state].category, false);
	fputc(']', out);
	write_repeated(out, "phase", "1", count); /* an interval */
	write_repeated(out, "data", "null", count);
	fprintf(out, ",\"length\":%zu}", count);
}

static void write_thread(FILE *out, const struct gecko_writer *writer, const struct gecko_thread *thread,
			 const int64_t *state_names)
{
	char fallback[64];

	fputs("{\"name\":", out);
	snprintf(fallback, sizeof(fallback), "Thread %" PRIu64, thread->tid);
	fput_json_string(out, thread->name[0] ? thread->name : fallback);
	fputs(",\"processName\":", out);
	if (thread->pid)
		snprintf(fallback, sizeof(fallback), "pid %" PRIu32, thread->pid);
	else /* Tachyon keeps no pid */
		snprintf(fallback, sizeof(fallback), "Python");
	fput_json_string(out, thread->process_name[0] ? thread->process_name : fallback);
	fprintf(out, ",\"pid\":\"%" PRIu32 "\",\"tid\":%" PRIu64 ",\"isMainThread\":%s", thread->pid, thread->tid,
		thread->main_thread ? "true" : "false");
	fputs(",\"processType\":\"default\",\"processStartupTime\":0,\"processShutdownTime\":null"
	      ",\"registerTime\":0,\"unregisterTime\":null,\"pausedRanges\":[],", out);
	write_samples(out, writer, thread);
	fputc(',', out);
	write_markers(out, writer, thread, state_names);
	fputc(',', out);
	write_stack_table(out, thread);
	fputc(',', out);
	write_frame_table(out, thread);
	fputc(',', out);
	write_func_table(out, thread);
	fputs(",\"resourceTable\":{\"lib\":[],\"name\":[],\"host\":[],\"type\":[],\"length\":0}"
	      ",\"nativeSymbols\":{\"libIndex\":[],\"address\":[],\"name\":[],\"functionSize\":[],\"length\":0}}", out);
}

static void write_meta(FILE *out, const struct gecko_writer *writer)
{
	fprintf(out, "\"meta\":{\"version\":%d,\"preprocessedProfileVersion\":%d,\"interval\":%.3f,"
		"\"startTime\":0,\"processType\":0,\"product\":\"pybpfprof\",\"importedFrom\":\"pybpfprof "
		PYBPFPROF_VERSION "\",\"stackwalk\":1,\"symbolicated\":true,\"platform\":\"Linux\",\"toolkit\":\"\","
		"\"appBuildID\":\"\",\"misc\":\"\",\"oscpu\":\"\",\"abi\":\"\",\"markerSchema\":[],"
		"\"extensions\":{\"id\":[],\"name\":[],\"baseURL\":[],\"length\":0},\"categories\":[",
		GECKO_FORMAT_VERSION, GECKO_PROCESSED_VERSION, (double)writer->interval_us / 1000.0);
	for (size_t i = 0; i < ARRAY_SIZE(category_json); i++)
		fprintf(out, "%s%s", i ? "," : "", category_json[i]);
	fputs("]}", out);
}

static int write_document(struct gecko_writer *writer, FILE *out)
{
	size_t thread_count = intern_count(&writer->thread_ids);
	int64_t state_names[STATE_COUNT];

	for (int s = 0; s < STATE_COUNT; s++) {
		state_names[s] = string_index(writer, state_markers[s].name);
		if (state_names[s] < 0)
			return -ENOMEM;
	}
	/* A thread's samples may come out of time order (records held for late unwinding, a
	 * file's): the timeline and the markers go by time. */
	for (size_t i = 0; i < thread_count; i++) {
		struct gecko_thread *thread = &writer->threads[i];

		if (thread->sample_count > 1)
			qsort(thread->samples, thread->sample_count, sizeof(*thread->samples), by_time);
		thread->marker_count = 0;
		if (add_state_markers(thread))
			return -ENOMEM;
	}
	if (writer->earliest_us == UINT64_MAX)
		writer->earliest_us = 0;
	fputc('{', out);
	write_meta(out, writer);
	fputs(",\"libs\":[],\"pages\":[],\"counters\":[],\"threads\":[", out);
	for (size_t i = 0; i < thread_count; i++) {
		if (i)
			fputc(',', out);
		write_thread(out, writer, &writer->threads[i], state_names);
	}
	fputs("],\"shared\":{\"stringArray\":[", out);
	for (size_t i = 0; i < intern_count(&writer->strings); i++) {
		size_t len;
		const char *text = intern_key(&writer->strings, (uint32_t)i, &len);
		char *copy = strndup(text, len);

		if (!copy)
			return -ENOMEM;
		if (i)
			fputc(',', out);
		fput_json_string(out, copy);
		free(copy);
	}
	fputs("]}}\n", out);
	return ferror(out) ? -ENOMEM : 0;
}

/* The document gzipped as a .gz file (zlib's gzip wrapper), into *out. */
static int gzip_document(const char *text, size_t len, uint8_t **out, size_t *out_len)
{
	z_stream stream = { 0 };
	uLong bound;
	int status;

	if (deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	bound = deflateBound(&stream, (uLong)len) + 32;
	*out = malloc(bound);
	if (!*out) {
		deflateEnd(&stream);
		return -ENOMEM;
	}
	stream.next_in = (Bytef *)text;
	stream.avail_in = (uInt)len;
	stream.next_out = *out;
	stream.avail_out = (uInt)bound;
	status = deflate(&stream, Z_FINISH);
	*out_len = stream.total_out;
	deflateEnd(&stream);
	if (status != Z_STREAM_END) {
		free(*out);
		*out = NULL;
		return -ENOMEM;
	}
	return 0;
}

static int write_out(struct gecko_writer *writer, const char *text, size_t len)
{
	uint8_t *packed;
	size_t packed_len;
	int err;

	if (!writer->gzip)
		return fd_write_all(writer->fd, text, len, NULL);
	if (len > UINT32_MAX)
		return -EFBIG; /* one deflate call takes at most 4 GiB */
	err = gzip_document(text, len, &packed, &packed_len);
	if (!err)
		err = fd_write_all(writer->fd, packed, packed_len, NULL);
	free(packed);
	return err;
}

static int gecko_finish(void *state)
{
	struct gecko_writer *writer = state;
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	int err;

	if (!out)
		return errbuf_format(writer->error, sizeof(writer->error), -ENOMEM, "out of memory");
	err = write_document(writer, out);
	if (fclose(out) != 0 && !err)
		err = -ENOMEM;
	if (!err)
		err = write_out(writer, text, len);
	free(text);
	if (err)
		return errbuf_format(writer->error, sizeof(writer->error), err, "write failed: %s", strerror(-err));
	return 0;
}

static int gecko_set_metadata(void *state, const char *key, const char *value)
{
	struct gecko_writer *writer = state;

	if (strcmp(key, "interval") == 0) {
		unsigned long long interval = strtoull(value, NULL, 10);

		if (interval)
			writer->interval_us = interval;
	}
	return 0;
}

static int gecko_flush(void *state)
{
	(void)state;
	return 0; /* written whole at finish */
}

static void gecko_destroy(void *state)
{
	struct gecko_writer *writer = state;

	for (size_t i = 0; i < intern_count(&writer->thread_ids); i++) {
		struct gecko_thread *thread = &writer->threads[i];

		intern_free(&thread->funcs);
		intern_free(&thread->frames);
		intern_free(&thread->stacks);
		free(thread->func_list);
		free(thread->samples);
		free(thread->markers);
	}
	free(writer->threads);
	intern_free(&writer->thread_ids);
	intern_free(&writer->strings);
	free(writer->key);
	free(writer);
}

/* Counted in the target budget's output tables: a target's names and stacks grow the tables. */
static size_t gecko_held_bytes(const void *state)
{
	const struct gecko_writer *writer = state;
	size_t bytes = intern_held_bytes(&writer->strings) + intern_held_bytes(&writer->thread_ids) +
		       writer->threads_capacity * sizeof(*writer->threads) + writer->key_capacity;

	for (size_t i = 0; i < intern_count(&writer->thread_ids); i++) {
		const struct gecko_thread *thread = &writer->threads[i];

		bytes += intern_held_bytes(&thread->funcs) + intern_held_bytes(&thread->frames) +
			 intern_held_bytes(&thread->stacks) + thread->func_capacity * sizeof(*thread->func_list) +
			 thread->sample_capacity * sizeof(*thread->samples) +
			 thread->marker_capacity * sizeof(*thread->markers);
	}
	return bytes;
}

static const char *gecko_error(const void *state)
{
	return ((const struct gecko_writer *)state)->error;
}

static const struct pf_writer_ops gecko_writer_ops = {
	.set_metadata = gecko_set_metadata,
	.add_sample = gecko_add_sample,
	.flush = gecko_flush,
	.finish = gecko_finish,
	.held_bytes = gecko_held_bytes,
	.destroy = gecko_destroy,
	.error = gecko_error,
};

static int create(int fd, bool gzip, void **state, const struct pf_writer_ops **ops)
{
	struct gecko_writer *writer = calloc(1, sizeof(*writer));

	if (!writer)
		return -ENOMEM;
	writer->fd = fd;
	writer->gzip = gzip;
	writer->interval_us = 1000;
	writer->earliest_us = UINT64_MAX;
	intern_init(&writer->strings);
	intern_init(&writer->thread_ids);
	*state = writer;
	*ops = &gecko_writer_ops;
	return 0;
}

int gecko_writer_create(int fd, const struct pf_writer_options *options, void **state,
			const struct pf_writer_ops **ops)
{
	(void)options;
	return create(fd, false, state, ops);
}

int gecko_gz_writer_create(int fd, const struct pf_writer_options *options, void **state,
			   const struct pf_writer_ops **ops)
{
	(void)options;
	return create(fd, true, state, ops);
}
