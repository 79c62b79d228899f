// SPDX-License-Identifier: MIT
/*
 * MOJO sample reader (the pf_reader backend): the strict sample assembly of
 * Austin's reference decoder, turning the stream decoder's events
 * (mojo_stream.c) into profile-model samples.
 */
#include "formats/mojo/mojo.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "util/array.h"
#include "util/errbuf.h"
#include "util/intern.h"

/* Deeper than any real stack; stops a corrupt file from growing one sample without end. */
#define MAX_SAMPLE_FRAMES (1u << 20)

/* ---- samples ---- */

enum sample_mode { MODE_TIME, MODE_MEMORY, MODE_FULL };

struct metadata_pair {
	char *key, *value;
};

struct frame_list {
	struct pf_frame *items;
	size_t count, capacity;
};

struct mojo_reader {
	struct mojo_stream stream;
	struct intern_table values;       /* string contents: stable storage */
	struct intern_table string_slots; /* (pid, key) -> index in string_values */
	const char **string_values;
	size_t string_values_capacity;
	struct intern_table frame_slots;  /* (pid, key) -> index in frame_defs */
	struct pf_frame *frame_defs;
	size_t frame_defs_capacity;

	struct metadata_pair *metadata;
	size_t metadata_count, metadata_capacity;
	struct intern_table thread_slots; /* (pid, tid) -> index in thread_names */
	const char **thread_names;        /* stored in values */
	size_t thread_names_capacity;
	enum sample_mode mode;
	/* A cpu-mode file pybpfprof wrote, and its interval: a sample's time is then a whole number
	 * of intervals, the ticks it stands for (more than one where --max-overhead thinned). */
	bool ours, cpu_mode;
	/* An --event file (its "event" metadata): its TIME metric holds the event's counts, in the
	 * event_unit metadata's unit (occurrences, nanoseconds), not microseconds. */
	bool event_counts;
	uint64_t interval_us;

	bool seen_stack;  /* definitions need a pid */
	bool in_sample;
	bool yielded;     /* the current sample was handed out: clear it next call */
	bool done;
	int failure;
	uint32_t pid, iid;
	uint64_t tid;
	bool invalid, gc, idle, has_time, has_memory;
	uint64_t time_us;
	int64_t memory;
	struct frame_list user, kernel, out;
	char error[200];
};

static int reader_fail(struct mojo_reader *reader, int err, uint64_t offset, const char *what)
{
	return errbuf_format(reader->error, sizeof(reader->error), err, "%s at byte %llu", what,
			     (unsigned long long)offset);
}

static int frame_list_push(struct frame_list *list, const struct pf_frame *frame)
{
	if (array_reserve((void **)&list->items, &list->capacity, list->count + 1,
			  sizeof(*list->items), 64))
		return -ENOMEM;
	list->items[list->count++] = *frame;
	return 0;
}

/* A stable NUL-terminated copy of text, shared by every use of the same text. */
static const char *store_value(struct mojo_reader *reader, const char *text)
{
	int64_t id = intern_add(&reader->values, text, strlen(text) + 1, NULL);

	return id < 0 ? NULL : intern_key(&reader->values, (uint32_t)id, NULL);
}

struct scoped_key {
	uint32_t pid;
	uint32_t pad;
	int64_t key;
};

static int64_t scoped_slot(struct intern_table *table, uint32_t pid, int64_t key, bool add)
{
	struct scoped_key scoped = { .pid = pid, .key = key };

	return add ? intern_add(table, &scoped, sizeof(scoped), NULL)
		   : intern_find(table, &scoped, sizeof(scoped));
}

static bool parse_hex_tid(const char *text, uint64_t *tid);

struct thread_key {
	uint64_t pid, tid;
};

/* A MOJO_THREAD_NAME_KEY line: 1 when kept as the thread's name, 0 when key is not one, -ENOMEM. */
static int add_thread_name(struct mojo_reader *reader, const char *key, const char *value)
{
	struct thread_key thread = { 0 };
	const char *name, *rest = key + strlen(MOJO_THREAD_NAME_KEY);
	char *end;
	int64_t slot;

	if (strncmp(key, MOJO_THREAD_NAME_KEY, strlen(MOJO_THREAD_NAME_KEY)) != 0 || *rest < '0' || *rest > '9')
		return 0;
	errno = 0;
	thread.pid = strtoull(rest, &end, 10);
	if (errno || *end != ':' || thread.pid > UINT32_MAX || !parse_hex_tid(end + 1, &thread.tid))
		return 0;
	name = store_value(reader, value);
	slot = intern_add(&reader->thread_slots, &thread, sizeof(thread), NULL);
	if (!name || slot < 0 ||
	    array_reserve((void **)&reader->thread_names, &reader->thread_names_capacity, (size_t)slot + 1,
			  sizeof(*reader->thread_names), 64))
		return -ENOMEM;
	reader->thread_names[slot] = name;
	return 1;
}

/* The name a MOJO_THREAD_NAME_KEY line gave the thread, NULL if none. */
static const char *thread_name(const struct mojo_reader *reader, uint32_t pid, uint64_t tid)
{
	struct thread_key thread = { pid, tid };
	int64_t slot = intern_find(&reader->thread_slots, &thread, sizeof(thread));

	return slot < 0 ? NULL : reader->thread_names[slot];
}

static int add_metadata(struct mojo_reader *reader, const char *key, const char *value)
{
	char *key_copy, *value_copy;
	int named = add_thread_name(reader, key, value);

	/* Samples carry it: a writer the file is converted to writes it again. */
	if (named)
		return named < 0 ? named : 0;

	if (ARRAY_RESERVE(reader->metadata, reader->metadata_capacity, reader->metadata_count + 1))
		return -ENOMEM;
	key_copy = strdup(key);
	value_copy = strdup(value);
	if (!key_copy || !value_copy) {
		free(key_copy);
		free(value_copy);
		return -ENOMEM;
	}
	reader->metadata[reader->metadata_count++] = (struct metadata_pair){ key_copy, value_copy };
	if (strcmp(key, "mode") == 0)
		reader->mode = strcmp(value, "full") == 0     ? MODE_FULL
			       : strcmp(value, "memory") == 0 ? MODE_MEMORY
							      : MODE_TIME;
	if (strcmp(key, "mode") == 0)
		reader->cpu_mode = strcmp(value, "cpu") == 0;
	else if (strcmp(key, "pybpfprof") == 0)
		reader->ours = true;
	else if (strcmp(key, "interval") == 0)
		reader->interval_us = strtoull(value, NULL, 10);
	else if (strcmp(key, "event") == 0)
		reader->event_counts = true;
	return 0;
}

/* The ticks a sample of time_us stands for: 1, or a thinned sample's stride (see above). */
static uint32_t samples_of(const struct mojo_reader *reader, uint64_t time_us)
{
	uint64_t ticks;

	if (!reader->ours || !reader->cpu_mode || !reader->interval_us || time_us % reader->interval_us)
		return 1;
	ticks = time_us / reader->interval_us;
	return ticks >= 1 && ticks <= UINT32_MAX ? (uint32_t)ticks : 1;
}

static bool parse_hex_tid(const char *text, uint64_t *tid)
{
	uint64_t value = 0;
	size_t i;

	if (!*text || strlen(text) > 16)
		return false;
	for (i = 0; text[i]; i++) {
		char c = text[i];
		unsigned digit;

		if (c >= '0' && c <= '9')
			digit = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			digit = (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			digit = (unsigned)(c - 'A' + 10);
		else
			return false;
		value = value << 4 | digit;
	}
	*tid = value;
	return true;
}

static void clear_sample(struct mojo_reader *reader)
{
	reader->in_sample = false;
	reader->invalid = reader->gc = reader->idle = false;
	reader->has_time = reader->has_memory = false;
	reader->time_us = 0;
	reader->memory = 0;
	reader->user.count = reader->kernel.count = 0;
}

static int start_sample(struct mojo_reader *reader, const struct mojo_raw_event *event)
{
	int64_t pid = event->ints[0];
	int64_t iid = event->int_count > 1 ? event->ints[1] : 0;

	if (pid < 0 || pid > UINT32_MAX)
		return reader_fail(reader, -EBADMSG, event->offset, "bad pid in STACK");
	if (iid < 0 || iid > UINT32_MAX)
		return reader_fail(reader, -EBADMSG, event->offset, "bad interpreter id in STACK");
	if (!parse_hex_tid(event->strs[0], &reader->tid))
		return reader_fail(reader, -EBADMSG, event->offset,
				   "thread id in STACK is not a hexadecimal number");
	clear_sample(reader);
	reader->pid = (uint32_t)pid;
	reader->iid = (uint32_t)iid;
	reader->in_sample = true;
	reader->seen_stack = true;
	return 0;
}

static int define_string(struct mojo_reader *reader, const struct mojo_raw_event *event)
{
	const char *value;
	int64_t slot;

	value = store_value(reader, event->strs[0]);
	slot = scoped_slot(&reader->string_slots, reader->pid, event->ints[0], true);
	if (!value || slot < 0 ||
	    array_reserve((void **)&reader->string_values, &reader->string_values_capacity,
			  (size_t)slot + 1, sizeof(*reader->string_values), 256))
		return reader_fail(reader, -ENOMEM, event->offset, "out of memory");
	reader->string_values[slot] = value;
	return 0;
}

static const char *lookup_string(struct mojo_reader *reader, int64_t key)
{
	int64_t slot;

	/* Austin's reference decoder never looks this key up. */
	if (key == MOJO_STRING_KEY_UNKNOWN)
		return "<unknown>";
	slot = scoped_slot(&reader->string_slots, reader->pid, key, false);
	return slot < 0 ? NULL : reader->string_values[slot];
}

/* MOJO stores 0 for unknown and 1-based columns; the model -1 and 0-based. */
static int32_t line_from_mojo(int64_t value)
{
	return value <= 0 || value > INT32_MAX ? -1 : (int32_t)value;
}

static int32_t column_from_mojo(int64_t value)
{
	return value <= 0 || value > INT32_MAX ? -1 : (int32_t)(value - 1);
}

static int define_frame(struct mojo_reader *reader, const struct mojo_raw_event *event)
{
	const char *file = lookup_string(reader, event->ints[1]);
	const char *name = lookup_string(reader, event->ints[2]);
	enum pf_frame_kind kind;
	struct pf_frame frame;
	int64_t slot;

	if (!file || !name)
		return reader_fail(reader, -EBADMSG, event->offset,
				   "FRAME names an undefined string");
	/* The prefix only stood for the kind the format cannot hold. */
	kind = pf_native_file_strip(&file) ? PF_FRAME_NATIVE : PF_FRAME_PYTHON;
	frame = pf_frame_unlocated(kind, file, name);
	frame.line = line_from_mojo(event->ints[3]);
	frame.end_line = event->int_count > 4 ? line_from_mojo(event->ints[4]) : -1;
	frame.column = event->int_count > 5 ? column_from_mojo(event->ints[5]) : -1;
	frame.end_column = event->int_count > 6 ? column_from_mojo(event->ints[6]) : -1;
	slot = scoped_slot(&reader->frame_slots, reader->pid, event->ints[0], true);
	if (slot < 0 || array_reserve((void **)&reader->frame_defs, &reader->frame_defs_capacity,
				      (size_t)slot + 1, sizeof(*reader->frame_defs), 256))
		return reader_fail(reader, -ENOMEM, event->offset, "out of memory");
	reader->frame_defs[slot] = frame;
	return 0;
}

static int add_frame(struct mojo_reader *reader, struct frame_list *list,
		     const struct pf_frame *frame, uint64_t offset)
{
	if (reader->user.count + reader->kernel.count >= MAX_SAMPLE_FRAMES)
		return reader_fail(reader, -EBADMSG, offset, "stack deeper than 1048576 frames");
	if (frame_list_push(list, frame))
		return reader_fail(reader, -ENOMEM, offset, "out of memory");
	return 0;
}

static int reference_frame(struct mojo_reader *reader, const struct mojo_raw_event *event)
{
	int64_t slot = scoped_slot(&reader->frame_slots, reader->pid, event->ints[0], false);

	if (slot < 0)
		return reader_fail(reader, -EBADMSG, event->offset,
				   "FRAME_REF to a frame not defined for this pid");
	return add_frame(reader, &reader->user, &reader->frame_defs[slot], event->offset);
}

static int kernel_frame(struct mojo_reader *reader, const struct mojo_raw_event *event)
{
	struct pf_frame frame = pf_frame_unlocated(PF_FRAME_KERNEL, "",
						   store_value(reader, event->strs[0]));

	if (!frame.name)
		return reader_fail(reader, -ENOMEM, event->offset, "out of memory");
	return add_frame(reader, &reader->kernel, &frame, event->offset);
}

static int time_metric(struct mojo_reader *reader, const struct mojo_raw_event *event)
{
	if (reader->has_time || (reader->has_memory && reader->mode != MODE_FULL))
		return reader_fail(reader, -EBADMSG, event->offset, "two metrics in one sample");
	if (reader->has_memory)
		return reader_fail(reader, -EBADMSG, event->offset, "TIME after MEMORY");
	reader->has_time = true;
	reader->time_us = event->time;
	return 0;
}

static int memory_metric(struct mojo_reader *reader, const struct mojo_raw_event *event)
{
	if (reader->has_memory || (reader->has_time && reader->mode != MODE_FULL))
		return reader_fail(reader, -EBADMSG, event->offset, "two metrics in one sample");
	reader->has_memory = true;
	reader->memory = event->ints[0];
	return 0;
}

static int idle_event(struct mojo_reader *reader, const struct mojo_raw_event *event)
{
	/* Full mode only, between TIME and MEMORY. */
	if (reader->mode != MODE_FULL || !reader->has_time || reader->has_memory || reader->idle)
		return reader_fail(reader, -EBADMSG, event->offset, "IDLE outside its slot");
	reader->idle = true;
	return 0;
}

static int apply_sample_event(struct mojo_reader *reader, const struct mojo_raw_event *event)
{
	switch (event->id) {
	case MOJO_FRAME_INVALID:
		reader->invalid = true;
		return 0;
	case MOJO_FRAME_REF:
		return reference_frame(reader, event);
	case MOJO_FRAME_KERNEL:
		return kernel_frame(reader, event);
	case MOJO_GC:
		if (reader->has_time || reader->has_memory)
			return reader_fail(reader, -EBADMSG, event->offset, "GC after the metric");
		reader->gc = true;
		return 0;
	case MOJO_IDLE:
		return idle_event(reader, event);
	case MOJO_METRIC_TIME:
		return time_metric(reader, event);
	case MOJO_METRIC_MEMORY:
		return memory_metric(reader, event);
	default:
		return reader_fail(reader, -EBADMSG, event->offset, "unexpected event");
	}
}

static int apply_event(struct mojo_reader *reader, const struct mojo_raw_event *event)
{
	char what[64];

	switch (event->id) {
	case MOJO_METADATA:
		if (add_metadata(reader, event->strs[0], event->strs[1]))
			return reader_fail(reader, -ENOMEM, event->offset, "out of memory");
		return 0;
	case MOJO_STACK:
		return start_sample(reader, event);
	default:
		break;
	}
	if (!reader->seen_stack) {
		snprintf(what, sizeof(what), "%s before the first STACK", mojo_stream_event_name(event->id));
		return reader_fail(reader, -EBADMSG, event->offset, what);
	}
	switch (event->id) {
	case MOJO_STRING:
		return define_string(reader, event);
	case MOJO_FRAME:
		return define_frame(reader, event);
	case MOJO_STRING_REF:
		if (!lookup_string(reader, event->ints[0]))
			return reader_fail(reader, -EBADMSG, event->offset,
					   "STRING_REF to an undefined string");
		return 0;
	default:
		break;
	}
	if (!reader->in_sample) {
		snprintf(what, sizeof(what), "%s outside a sample (after METADATA)",
			 mojo_stream_event_name(event->id));
		return reader_fail(reader, -EBADMSG, event->offset, what);
	}
	return apply_sample_event(reader, event);
}

static bool metrics_complete(const struct mojo_reader *reader)
{
	switch (reader->mode) {
	case MODE_FULL: return reader->has_time && reader->has_memory;
	case MODE_MEMORY: return reader->has_memory;
	default: return reader->has_time;
	}
}

static int yield_sample(struct mojo_reader *reader, struct pf_sample *sample)
{
	const struct pf_frame invalid = pf_frame_unlocated(PF_FRAME_INVALID, "", "");
	const struct frame_list *frames = &reader->user;
	size_t i;

	/* Only a mark or kernel frames need a joined list: a copy would double a deep stack. */
	if (reader->invalid || reader->kernel.count) {
		reader->out.count = 0;
		if (reader->invalid && frame_list_push(&reader->out, &invalid))
			return -ENOMEM;
		for (i = 0; i < reader->user.count; i++)
			if (frame_list_push(&reader->out, &reader->user.items[i]))
				return -ENOMEM;
		for (i = 0; i < reader->kernel.count; i++)
			if (frame_list_push(&reader->out, &reader->kernel.items[i]))
				return -ENOMEM;
		frames = &reader->out;
	}
	memset(sample, 0, sizeof(*sample));
	sample->pid = reader->pid;
	sample->iid = reader->iid;
	sample->tid = reader->tid;
	sample->thread_name = thread_name(reader, reader->pid, reader->tid);
	sample->status = (reader->gc ? PF_STATUS_GC : 0) | (reader->idle ? PF_STATUS_IDLE : 0);
	sample->metrics = (reader->has_time ? PF_METRIC_TIME : 0) |
			  (reader->has_memory ? PF_METRIC_MEMORY : 0);
	sample->time_us = reader->time_us;
	sample->samples = samples_of(reader, reader->time_us);
	if (reader->ours && reader->event_counts && reader->has_time) {
		sample->metrics = (sample->metrics & ~PF_METRIC_TIME) | PF_METRIC_COUNT;
		sample->count = reader->time_us;
		sample->time_us = 0;
		sample->samples = 1;
	}
	sample->memory = reader->memory;
	sample->frame_count = frames->count;
	sample->frames = frames->items;
	reader->yielded = true;
	return 1;
}

static int fail_from_stream(struct mojo_reader *reader, int err)
{
	return errbuf_format(reader->error, sizeof(reader->error), err, "%s", reader->stream.error);
}

static int read_until_sample(struct mojo_reader *reader, struct pf_sample *sample)
{
	/* Each pass consumes at least one event or returns: bounded by the file. */
	for (;;) {
		struct mojo_raw_event event;
		int id, got, err;

		got = mojo_stream_peek_id(&reader->stream, &id);
		if (got < 0)
			return fail_from_stream(reader, got);
		if (got == 0) {
			reader->done = true;
			if (!reader->in_sample)
				return 0;
			/* A cut between a sample's events leaves it without its metrics. */
			if (!metrics_complete(reader))
				return reader_fail(reader, -EBADMSG,
						   mojo_stream_offset(&reader->stream), "truncated");
			return yield_sample(reader, sample);
		}
		if (reader->in_sample && (id == MOJO_STACK || id == MOJO_METADATA))
			return yield_sample(reader, sample);
		got = mojo_stream_next(&reader->stream, &event);
		if (got < 0)
			return fail_from_stream(reader, got);
		if (got == 0)
			continue;
		err = apply_event(reader, &event);
		if (err)
			return err;
	}
}

static int reader_next_sample(void *state, struct pf_sample *sample)
{
	struct mojo_reader *reader = state;
	int result;

	if (reader->failure)
		return reader->failure;
	if (reader->yielded) {
		reader->yielded = false;
		clear_sample(reader);
	}
	if (reader->done)
		return 0;
	result = read_until_sample(reader, sample);
	if (result < 0) {
		reader->failure = result;
		if (result == -ENOMEM && !reader->error[0])
			errbuf_format(reader->error, sizeof(reader->error), result, "out of memory");
	}
	return result;
}

static size_t reader_metadata_count(const void *state)
{
	const struct mojo_reader *reader = state;

	return reader->metadata_count;
}

static void reader_metadata_at(const void *state, size_t index, const char **key,
			       const char **value)
{
	const struct mojo_reader *reader = state;

	*key = index < reader->metadata_count ? reader->metadata[index].key : NULL;
	*value = index < reader->metadata_count ? reader->metadata[index].value : NULL;
}

static const char *reader_error(const void *state)
{
	const struct mojo_reader *reader = state;

	return reader->error;
}

static void reader_destroy(void *state)
{
	struct mojo_reader *reader = state;
	size_t i;

	if (!reader)
		return;
	mojo_stream_close(&reader->stream);
	intern_free(&reader->values);
	intern_free(&reader->string_slots);
	intern_free(&reader->frame_slots);
	intern_free(&reader->thread_slots);
	free(reader->thread_names);
	free(reader->string_values);
	free(reader->frame_defs);
	for (i = 0; i < reader->metadata_count; i++) {
		free(reader->metadata[i].key);
		free(reader->metadata[i].value);
	}
	free(reader->metadata);
	free(reader->user.items);
	free(reader->kernel.items);
	free(reader->out.items);
	free(reader);
}

static const struct pf_reader_ops mojo_reader_ops = {
	.next_sample = reader_next_sample,
	.metadata_count = reader_metadata_count,
	.metadata_at = reader_metadata_at,
	.error = reader_error,
	.destroy = reader_destroy,
};

int mojo_reader_create(int fd, void **state, const struct pf_reader_ops **ops, char *errbuf,
		       size_t errlen)
{
	struct mojo_reader *reader = calloc(1, sizeof(*reader));
	int err;

	if (!reader)
		return errbuf_format(errbuf, errlen, -ENOMEM, "out of memory");
	intern_init(&reader->values);
	intern_init(&reader->string_slots);
	intern_init(&reader->frame_slots);
	intern_init(&reader->thread_slots);
	err = mojo_stream_open(&reader->stream, fd);
	if (err) {
		errbuf_format(errbuf, errlen, err, "%s", reader->stream.error);
		reader_destroy(reader);
		return err;
	}
	*state = reader;
	*ops = &mojo_reader_ops;
	return 0;
}
