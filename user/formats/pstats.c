// SPDX-License-Identifier: MIT
/*
 * The file Python's pstats.Stats loads (and snakeviz, gprof2dot): a marshalled
 * dict {(file, line, function): (cc, nc, tt, ct, callers)}, callers being
 * {(caller key): (cc, nc, tt, ct)}. A sampler has no calls to count, so the
 * counts are samples, as CPython 3.15's own sampler writes them: cc the
 * samples the function was the leaf of, nc those it was on the stack of
 * (once per stack, as `top` counts a recursive function). tt and ct are
 * seconds: a sample's time metric, else the run's interval per sample.
 *
 * A function is what `top` ranks: a Python frame's file and name (its line is
 * the function's first line where known, else 0); a native frame is
 * ("~", 0, "<name>") like cProfile's built-ins, or "<name (library)>" when its
 * library is known, a kernel frame ("~", 0, "<name [kernel]>"), so that
 * pstats prints them as `top` does. CPython 3.15 marks its files with a
 * ("__sampled__",) key; Python 3.14's pstats and older fail on it, so it is
 * left out.
 *
 * Only marshal's version 2 types are written (dict, tuple, int, long, binary
 * float, unicode string), which every marshal from Python 2.5 on reads.
 * Memory grows with distinct functions and caller edges, not samples.
 */
#include "formats/pstats.h"

#include "util/array.h"
#include "util/errbuf.h"
#include "util/fd_write.h"
#include "util/intern.h"
#include "util/text_quote.h"

#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a function or a caller edge adds up. */
struct pstats_tally {
	uint64_t leaf_samples;  /* cc: the samples it was the leaf of */
	uint64_t stack_samples; /* nc: the samples it was on the stack of, once each */
	uint64_t self_us;       /* tt */
	uint64_t total_us;      /* ct */
	uint64_t last_sample;   /* the sample number that last added to the stack figures */
};

struct pstats_function {
	struct pstats_tally tally;
	int32_t function_line;
};

struct pstats_edge {
	uint32_t caller;
	uint32_t callee;
};

struct pstats_writer {
	int fd;
	struct intern_table functions;  /* kind byte, file, NUL, name -> id */
	struct pstats_function *by_function;
	size_t function_capacity;
	struct intern_table edges;      /* struct pstats_edge -> id */
	struct pstats_tally *by_edge;
	size_t edge_capacity;
	uint32_t *frame_ids;            /* one sample's function ids, root first */
	size_t frame_ids_capacity;
	char *key;                      /* one function's key */
	size_t key_capacity;
	uint64_t samples;
	uint64_t interval_us;           /* a sample's time when it carries none */
	char error[256];
};

static enum pf_frame_kind key_kind(const char *key)
{
	return (enum pf_frame_kind)key[0];
}

/* A function's key: its kind, file (none for a kernel frame) and name, as `top` tells functions apart. */
static int64_t function_id(struct pstats_writer *writer, const struct pf_frame *frame)
{
	const char *file = frame->kind == PF_FRAME_KERNEL ? "" : frame->file;
	size_t file_len = strlen(file), name_len = strlen(frame->name), len = 1 + file_len + 1 + name_len;
	bool is_new = false;
	int64_t id;

	if (array_reserve((void **)&writer->key, &writer->key_capacity, len, 1, 256))
		return -ENOMEM;
	writer->key[0] = (char)(frame->kind == PF_FRAME_INVALID ? PF_FRAME_NATIVE : frame->kind);
	memcpy(writer->key + 1, file, file_len);
	writer->key[1 + file_len] = 0;
	memcpy(writer->key + 2 + file_len, frame->name, name_len);
	id = intern_add(&writer->functions, writer->key, len, &is_new);
	if (id < 0)
		return id;
	if (is_new) {
		if (ARRAY_RESERVE(writer->by_function, writer->function_capacity, (size_t)id + 1))
			return -ENOMEM;
		writer->by_function[id] = (struct pstats_function){ .tally.last_sample = UINT64_MAX };
	}
	if (!writer->by_function[id].function_line && frame->kind == PF_FRAME_PYTHON &&
	    frame->function_line > 0)
		writer->by_function[id].function_line = frame->function_line;
	return id;
}

static struct pstats_tally *edge_tally(struct pstats_writer *writer, uint32_t caller, uint32_t callee)
{
	struct pstats_edge edge = { caller, callee };
	bool is_new = false;
	int64_t id = intern_add(&writer->edges, &edge, sizeof(edge), &is_new);

	if (id < 0)
		return NULL;
	if (is_new) {
		if (ARRAY_RESERVE(writer->by_edge, writer->edge_capacity, (size_t)id + 1))
			return NULL;
		writer->by_edge[id] = (struct pstats_tally){ .last_sample = UINT64_MAX };
	}
	return &writer->by_edge[id];
}

/* Adds one sample to a tally: its stack figures once per sample, its leaf figures when leaf. */
static void tally_add(struct pstats_tally *tally, uint64_t sample, uint64_t count, uint64_t time_us,
		      bool leaf)
{
	if (tally->last_sample != sample) {
		tally->stack_samples += count;
		tally->total_us += time_us;
		tally->last_sample = sample;
	}
	if (leaf) {
		tally->leaf_samples += count;
		tally->self_us += time_us;
	}
}

static int pstats_add_sample(void *state, const struct pf_sample *sample)
{
	struct pstats_writer *writer = state;
	uint64_t count = sample->samples > 1 ? sample->samples : 1;
	uint64_t time_us = sample->metrics & PF_METRIC_TIME ? sample->time_us : writer->interval_us * count;
	size_t depth = sample->frame_count;

	if (ARRAY_RESERVE(writer->frame_ids, writer->frame_ids_capacity, depth + 1))
		return -ENOMEM;
	for (size_t i = 0; i < depth; i++) {
		int64_t id = function_id(writer, &sample->frames[i]);

		if (id < 0)
			return (int)id;
		writer->frame_ids[i] = (uint32_t)id;
	}
	for (size_t i = 0; i < depth; i++) {
		bool leaf = i + 1 == depth;

		tally_add(&writer->by_function[writer->frame_ids[i]].tally, writer->samples, count, time_us, leaf);
		if (i) {
			struct pstats_tally *edge = edge_tally(writer, writer->frame_ids[i - 1], writer->frame_ids[i]);

			if (!edge)
				return -ENOMEM;
			tally_add(edge, writer->samples, count, time_us, leaf);
		}
	}
	writer->samples++;
	return 0;
}

/* marshal's type codes (Python/marshal.c) */
#define MARSHAL_NULL '0'
#define MARSHAL_INT 'i'
#define MARSHAL_LONG 'l'
#define MARSHAL_BINARY_FLOAT 'g'
#define MARSHAL_UNICODE 'u'
#define MARSHAL_TUPLE '('
#define MARSHAL_DICT '{'

static void put_int32(FILE *out, int32_t value)
{
	uint32_t le = htole32((uint32_t)value);

	fwrite(&le, sizeof(le), 1, out);
}

/* An unsigned count: an int while it fits, else a long (15-bit digits, least significant first). */
static void put_count(FILE *out, uint64_t value)
{
	uint16_t digits[5];
	int32_t count = 0;

	if (value <= INT32_MAX) {
		fputc(MARSHAL_INT, out);
		put_int32(out, (int32_t)value);
		return;
	}
	for (; value; value >>= 15)
		digits[count++] = (uint16_t)(value & 0x7fff);
	fputc(MARSHAL_LONG, out);
	put_int32(out, count);
	for (int32_t i = 0; i < count; i++) {
		uint16_t le = htole16(digits[i]);

		fwrite(&le, sizeof(le), 1, out);
	}
}

static void put_seconds(FILE *out, uint64_t microseconds)
{
	double seconds = (double)microseconds / 1e6;
	uint64_t bits;

	memcpy(&bits, &seconds, sizeof(bits));
	bits = htole64(bits);
	fputc(MARSHAL_BINARY_FLOAT, out);
	fwrite(&bits, sizeof(bits), 1, out);
}

/* Bytes of text as marshal gets them: a byte that is not well-formed UTF-8 becomes U+FFFD
 * (marshal decodes strictly); written when out is given. */
static size_t put_utf8(FILE *out, const char *text)
{
	const unsigned char *at = (const unsigned char *)text;
	size_t len = 0;

	while (*at) {
		size_t span = utf8_well_formed_length(at);

		if (out && span)
			fwrite(at, 1, span, out);
		else if (out)
			fputs("\xef\xbf\xbd", out);
		len += span ? span : 3;
		at += span ? span : 1;
	}
	return len;
}

/* A str of the parts, NULL-terminated. */
static void put_parts(FILE *out, const char *const *parts)
{
	size_t len = 0;

	for (size_t p = 0; parts[p]; p++)
		len += put_utf8(NULL, parts[p]);
	fputc(MARSHAL_UNICODE, out);
	put_int32(out, (int32_t)len);
	for (size_t p = 0; parts[p]; p++)
		put_utf8(out, parts[p]);
}

static void put_string(FILE *out, const char *text, const char *prefix, const char *suffix)
{
	const char *const parts[] = { prefix, text, suffix, NULL };

	put_parts(out, parts);
}

static void put_tuple_head(FILE *out, int32_t count)
{
	fputc(MARSHAL_TUPLE, out);
	put_int32(out, count);
}

static void put_function_key(FILE *out, const struct pstats_writer *writer, uint32_t id)
{
	const char *key = intern_key(&writer->functions, id, NULL);
	const char *file = key + 1, *name = file + strlen(file) + 1;

	put_tuple_head(out, 3);
	switch (key_kind(key)) {
	case PF_FRAME_PYTHON:
		put_string(out, file, "", "");
		put_count(out, (uint64_t)writer->by_function[id].function_line);
		put_string(out, name, "", "");
		break;
	case PF_FRAME_KERNEL:
		put_string(out, "~", "", "");
		put_count(out, 0);
		put_string(out, name, "<", " [kernel]>");
		break;
	default:
		put_string(out, "~", "", "");
		put_count(out, 0);
		if (*file) {
			/* "<memcpy (/usr/lib/libc.so.6)>": two libraries' functions of one name stay two */
			const char *const parts[] = { "<", name, " (", file, ")>", NULL };

			put_parts(out, parts);
		} else {
			put_string(out, name, "<", ">");
		}
		break;
	}
}

static void put_tally(FILE *out, const struct pstats_tally *tally)
{
	put_count(out, tally->leaf_samples);
	put_count(out, tally->stack_samples);
	put_seconds(out, tally->self_us);
	put_seconds(out, tally->total_us);
}

static const struct pstats_edge *sort_edges;

static int compare_by_callee(const void *a, const void *b)
{
	const struct pstats_edge *ea = &sort_edges[*(const uint32_t *)a];
	const struct pstats_edge *eb = &sort_edges[*(const uint32_t *)b];

	if (ea->callee != eb->callee)
		return ea->callee < eb->callee ? -1 : 1;
	return ea->caller < eb->caller ? -1 : ea->caller > eb->caller;
}

static const struct pstats_edge *edge_at(const struct pstats_writer *writer, uint32_t id)
{
	return intern_key(&writer->edges, id, NULL);
}

static int write_document(const struct pstats_writer *writer, FILE *out)
{
	size_t edge_count = intern_count(&writer->edges), next = 0;
	struct pstats_edge *edges = malloc((edge_count ? edge_count : 1) * sizeof(*edges));
	uint32_t *order = malloc((edge_count ? edge_count : 1) * sizeof(*order));

	if (!edges || !order) {
		free(edges);
		free(order);
		return -ENOMEM;
	}
	for (size_t i = 0; i < edge_count; i++) {
		memcpy(&edges[i], edge_at(writer, (uint32_t)i), sizeof(edges[i]));
		order[i] = (uint32_t)i;
	}
	sort_edges = edges;
	qsort(order, edge_count, sizeof(*order), compare_by_callee);
	fputc(MARSHAL_DICT, out);
	for (uint32_t id = 0; id < intern_count(&writer->functions); id++) {
		put_function_key(out, writer, id);
		put_tuple_head(out, 5);
		put_tally(out, &writer->by_function[id].tally);
		fputc(MARSHAL_DICT, out);
		for (; next < edge_count && edges[order[next]].callee == id; next++) {
			put_function_key(out, writer, edges[order[next]].caller);
			put_tuple_head(out, 4);
			put_tally(out, &writer->by_edge[order[next]]);
		}
		fputc(MARSHAL_NULL, out);
	}
	fputc(MARSHAL_NULL, out);
	free(edges);
	free(order);
	return ferror(out) ? -ENOMEM : 0;
}

static int pstats_finish(void *state)
{
	struct pstats_writer *writer = state;
	char *data = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&data, &len);
	int err;

	if (!out)
		return errbuf_format(writer->error, sizeof(writer->error), -ENOMEM, "out of memory");
	err = write_document(writer, out);
	if (fclose(out) != 0 && !err)
		err = -ENOMEM;
	if (!err)
		err = fd_write_all(writer->fd, data, len, NULL);
	free(data);
	if (err)
		return errbuf_format(writer->error, sizeof(writer->error), err, "write failed: %s", strerror(-err));
	return 0;
}

static int pstats_set_metadata(void *state, const char *key, const char *value)
{
	struct pstats_writer *writer = state;

	/* A sample without a time metric stands for one interval. */
	if (strcmp(key, "interval") == 0) {
		unsigned long long interval = strtoull(value, NULL, 10);

		if (interval)
			writer->interval_us = interval;
	}
	return 0;
}

static int pstats_flush(void *state)
{
	(void)state;
	return 0; /* written whole at finish */
}

static void pstats_destroy(void *state)
{
	struct pstats_writer *writer = state;

	intern_free(&writer->functions);
	intern_free(&writer->edges);
	free(writer->by_function);
	free(writer->by_edge);
	free(writer->frame_ids);
	free(writer->key);
	free(writer);
}

/* Counted in the target budget's output tables: a target's functions and calls grow them. */
static size_t pstats_held_bytes(const void *state)
{
	const struct pstats_writer *writer = state;

	return intern_held_bytes(&writer->functions) + intern_held_bytes(&writer->edges) +
	       writer->function_capacity * sizeof(*writer->by_function) +
	       writer->edge_capacity * sizeof(*writer->by_edge) +
	       writer->frame_ids_capacity * sizeof(*writer->frame_ids) + writer->key_capacity;
}

static const char *pstats_error(const void *state)
{
	return ((const struct pstats_writer *)state)->error;
}

static const struct pf_writer_ops pstats_writer_ops = {
	.set_metadata = pstats_set_metadata,
	.add_sample = pstats_add_sample,
	.flush = pstats_flush,
	.finish = pstats_finish,
	.held_bytes = pstats_held_bytes,
	.destroy = pstats_destroy,
	.error = pstats_error,
};

int pstats_writer_create(int fd, const struct pf_writer_options *options, void **state,
			 const struct pf_writer_ops **ops)
{
	struct pstats_writer *writer = calloc(1, sizeof(*writer));

	(void)options;
	if (!writer)
		return -ENOMEM;
	writer->fd = fd;
	writer->interval_us = 1000;
	intern_init(&writer->functions);
	intern_init(&writer->edges);
	*state = writer;
	*ops = &pstats_writer_ops;
	return 0;
}
