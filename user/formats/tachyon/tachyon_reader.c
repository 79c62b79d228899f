// SPDX-License-Identifier: MIT
/*
 * Tachyon reader backend: profile-model samples and metadata from the file
 * decoder's events (tachyon_file.c).
 */
#include "formats/tachyon/tachyon.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "util/errbuf.h"

struct tachyon_reader {
	struct tachyon_file *file;
	struct pf_frame *frame_cache; /* model frame per frame-table entry */
	struct pf_frame sample_frames[TACHYON_MAX_DEPTH];
	char *meta_keys[16];
	char *meta_values[16];
	size_t meta_count;
	char error[256];
};

static int add_metadata(struct tachyon_reader *reader, const char *key, const char *value)
{
	if (reader->meta_count == sizeof(reader->meta_keys) / sizeof(reader->meta_keys[0]))
		return -ENOSPC;
	reader->meta_keys[reader->meta_count] = strdup(key);
	reader->meta_values[reader->meta_count] = strdup(value);
	if (!reader->meta_keys[reader->meta_count] || !reader->meta_values[reader->meta_count]) {
		free(reader->meta_keys[reader->meta_count]);
		free(reader->meta_values[reader->meta_count]);
		return -ENOMEM;
	}
	reader->meta_count++;
	return 0;
}

static int add_metadata_u64(struct tachyon_reader *reader, const char *key, uint64_t value)
{
	char text[24];

	snprintf(text, sizeof(text), "%" PRIu64, value);
	return add_metadata(reader, key, text);
}

static int add_metadata_double(struct tachyon_reader *reader, const char *key, double value)
{
	char text[40];

	snprintf(text, sizeof(text), "%.17g", value);
	return add_metadata(reader, key, text);
}

static void features_text(uint32_t config, char *out, size_t len)
{
	uint32_t features = config >> TACHYON_CONFIG_FEATURES_SHIFT;
	size_t used = 0;

	out[0] = 0;
	for (size_t i = 0; i < TACHYON_FEATURE_COUNT; i++) {
		if (features & (1u << i) && used < len)
			used += (size_t)snprintf(out + used, len - used, "%s%s", used ? "," : "",
						 tachyon_feature_names[i]);
	}
}

static int collect_metadata(struct tachyon_reader *reader)
{
	const struct tachyon_header *h = tachyon_file_header(reader->file);
	const struct tachyon_stats *stats = tachyon_file_stats(reader->file);
	uint32_t mode = h->config & TACHYON_CONFIG_MODE_MASK;
	char text[96];
	int err;

	snprintf(text, sizeof(text), "%u.%u.%u", h->python[0], h->python[1], h->python[2]);
	err = add_metadata(reader, "python", text);
	if (!err)
		err = add_metadata_u64(reader, "interval", h->interval_us);
	if (!err && mode)
		err = add_metadata(reader, "mode", tachyon_mode_names[mode - 1]);
	if (!err && (h->config & TACHYON_CONFIG_FEATURES_FLAG)) {
		features_text(h->config, text, sizeof(text));
		err = add_metadata(reader, "features", text);
	}
	if (!err)
		err = add_metadata_u64(reader, "start_time_us", h->start_time_us);
	if (!err)
		err = add_metadata(reader, "compression",
				   h->compression == TACHYON_COMPRESSION_ZSTD ? "zstd" : "none");
	if (!err)
		err = add_metadata_u64(reader, "samples", h->sample_count);
	if (!err)
		err = add_metadata_u64(reader, "threads", h->thread_count);
	if (err || !stats)
		return err;
	err = add_metadata_u64(reader, "duration", (uint64_t)llround(stats->duration_sec * 1e6));
	if (!err)
		err = add_metadata_double(reader, "sample_rate", stats->sample_rate);
	if (!err && (stats->present & TACHYON_STATS_HAS_ERROR_RATE))
		err = add_metadata_double(reader, "error_rate", stats->error_rate);
	if (!err && (stats->present & TACHYON_STATS_HAS_MISSED))
		err = add_metadata_u64(reader, "lost_samples",
				       stats->missed_samples > 0 ? (uint64_t)llround(stats->missed_samples) : 0);
	return err;
}

static enum pf_frame_kind frame_kind(const char *file, const char *name)
{
	if (!strcmp(file, TACHYON_KERNEL_FILE))
		return PF_FRAME_KERNEL;
	if (!strcmp(file, TACHYON_MARKER_FILE) && !strcmp(name, TACHYON_TRUNCATED_NAME))
		return PF_FRAME_INVALID;
	return PF_FRAME_PYTHON;
}

static int build_frame_cache(struct tachyon_reader *reader)
{
	uint32_t count = tachyon_file_footer(reader->file)->frame_count;

	reader->frame_cache = calloc(count ? count : 1, sizeof(*reader->frame_cache));
	if (!reader->frame_cache)
		return -ENOMEM;
	for (uint32_t i = 0; i < count; i++) {
		const struct tachyon_frame_entry *entry = tachyon_file_frame(reader->file, i);
		struct pf_frame *frame = &reader->frame_cache[i];

		frame->file = tachyon_file_string(reader->file, entry->file, NULL);
		frame->name = tachyon_file_string(reader->file, entry->func, NULL);
		/* The prefix only stood for the kind the format cannot hold. CPython's own "~"
		 * "<native>" marker stays as it is, so that it is written back the same. */
		if (pf_native_file_strip(&frame->file))
			frame->kind = PF_FRAME_NATIVE;
		else
			frame->kind = frame_kind(frame->file, frame->name);
		frame->line = entry->line;
		frame->end_line = entry->end_line;
		frame->column = entry->column;
		frame->end_column = entry->end_column;
		frame->opcode = entry->opcode == TACHYON_OPCODE_NONE ? -1 : entry->opcode;
	}
	return 0;
}

/* CPython's mode numbers (the config word holds mode + 1). */
#define TACHYON_MODE_WALL 0

/*
 * What one sample stands for. Sampling only running threads (cpu, gil, ...),
 * one interval, as CPython's replay counts it: the time since the thread's
 * previous sample would charge a thread sampled rarely (asleep in a cpu-mode
 * profile) with all the time in between. In wall mode (and in a file that
 * does not say) every thread is sampled at every interval, so that time is
 * the sample's own, as Austin's wall time is. A file without an interval
 * falls back to it too.
 */
static uint64_t sample_time_us(const struct tachyon_reader *reader, const struct tachyon_event *ev)
{
	const struct tachyon_header *header = tachyon_file_header(reader->file);
	uint32_t mode_plus_one = header->config & TACHYON_CONFIG_MODE_MASK;

	if (mode_plus_one == 0 || mode_plus_one - 1 == TACHYON_MODE_WALL || header->interval_us == 0)
		return ev->delta;
	return header->interval_us;
}

static int reader_next_sample(void *state, struct pf_sample *sample)
{
	struct tachyon_reader *reader = state;
	struct tachyon_event ev;
	int ret;

	do {
		ret = tachyon_file_next(reader->file, &ev, reader->error, sizeof(reader->error));
		if (ret <= 0)
			return ret;
	} while (ev.kind == TACHYON_EV_REPEAT);
	memset(sample, 0, sizeof(*sample));
	sample->iid = ev.iid;
	sample->tid = ev.tid;
	sample->timestamp_us = ev.thread->timestamp_us;
	sample->status = ev.status;
	sample->metrics = PF_METRIC_TIME;
	sample->time_us = sample_time_us(reader, &ev);
	sample->frame_count = ev.thread->depth;
	for (uint32_t i = 0; i < ev.thread->depth; i++)
		reader->sample_frames[ev.thread->depth - 1 - i] =
			reader->frame_cache[ev.thread->stack[i]];
	sample->frames = reader->sample_frames;
	return 1;
}

static size_t reader_metadata_count(const void *state)
{
	return ((const struct tachyon_reader *)state)->meta_count;
}

static void reader_metadata_at(const void *state, size_t index, const char **key,
			       const char **value)
{
	const struct tachyon_reader *reader = state;

	*key = index < reader->meta_count ? reader->meta_keys[index] : NULL;
	*value = index < reader->meta_count ? reader->meta_values[index] : NULL;
}

static const char *reader_error(const void *state)
{
	return ((const struct tachyon_reader *)state)->error;
}

static void reader_destroy(void *state)
{
	struct tachyon_reader *reader = state;

	if (!reader)
		return;
	tachyon_file_close(reader->file);
	free(reader->frame_cache);
	for (size_t i = 0; i < reader->meta_count; i++) {
		free(reader->meta_keys[i]);
		free(reader->meta_values[i]);
	}
	free(reader);
}

static const struct pf_reader_ops tachyon_reader_ops = {
	.next_sample = reader_next_sample,
	.metadata_count = reader_metadata_count,
	.metadata_at = reader_metadata_at,
	.error = reader_error,
	.destroy = reader_destroy,
};

int tachyon_reader_create(int fd, void **state, const struct pf_reader_ops **ops, char *errbuf,
			  size_t errlen)
{
	struct tachyon_reader *reader = calloc(1, sizeof(*reader));
	int err;

	if (!reader)
		return errbuf_format(errbuf, errlen, -ENOMEM, "out of memory");
	err = tachyon_file_open(fd, &reader->file, errbuf, errlen);
	if (!err && (err = build_frame_cache(reader)))
		errbuf_format(errbuf, errlen, err, "out of memory for the frame table");
	if (!err && (err = collect_metadata(reader)))
		errbuf_format(errbuf, errlen, err, "out of memory for metadata");
	if (err) {
		reader_destroy(reader);
		return err;
	}
	*state = reader;
	*ops = &tachyon_reader_ops;
	return 0;
}
