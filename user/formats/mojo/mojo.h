/* SPDX-License-Identifier: MIT */
/*
 * MOJO v3 (Austin's binary format): event ids, the constants our writer and
 * reader agree on, the raw event decoder (mojo_stream.c) shared by the reader
 * and the dump, and the backends' constructors.
 */
#ifndef PYBPFPROF_MOJO_H
#define PYBPFPROF_MOJO_H

#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"

enum mojo_event_id {
	MOJO_RESERVED = 0,
	MOJO_METADATA = 1,
	MOJO_STACK = 2,
	MOJO_FRAME = 3,
	MOJO_FRAME_INVALID = 4,
	MOJO_FRAME_REF = 5,
	MOJO_FRAME_KERNEL = 6,
	MOJO_GC = 7,
	MOJO_IDLE = 8,
	MOJO_METRIC_TIME = 9,
	MOJO_METRIC_MEMORY = 10,
	MOJO_STRING = 11,
	MOJO_STRING_REF = 12,
	MOJO_EVENT_COUNT = 13,
};

#define MOJO_MAGIC "MOJ"
#define MOJO_VERSION 3

/*
 * austin-python resolves string key 1 to "<unknown>" without looking it up
 * (and its writer reserves 0 for ""), so our string keys start at 2.
 */
#define MOJO_STRING_KEY_UNKNOWN 1
#define MOJO_FIRST_STRING_KEY 2
#define MOJO_FIRST_FRAME_KEY 1
/* Austin's readers expect references to fit in 4 varint bytes. */
#define MOJO_KEY_LIMIT (1u << 27)

#define MOJO_NATIVE_PREFIX PF_NATIVE_FILE_PREFIX
/* The tool version Austin's readers key their format choice on. */
#define MOJO_AUSTIN_COMPAT_VERSION "3.7.0"

/*
 * A thread's name: the metadata line "thread_name:PID:TID" = NAME, TID as the stack events
 * write it (hex), before the thread's first sample; NAME escaped text, at most
 * MOJO_THREAD_NAME_MAX - 1 bytes. Our reader gives it to the thread's samples.
 */
#define MOJO_THREAD_NAME_KEY "thread_name:"
#define MOJO_THREAD_NAME_MAX 128

/* One decoded event; strings point into the stream's buffer until the next call. */
struct mojo_raw_event {
	enum mojo_event_id id;
	uint64_t offset;     /* of the event id byte */
	int64_t ints[7];     /* in field order (keys: uint64_t bit patterns); TIME's value is in time */
	size_t int_count;
	uint64_t time;
	const char *strs[2]; /* NUL-terminated */
	size_t str_count;
};

struct mojo_stream {
	int fd;
	uint8_t *buf;
	size_t capacity, pos, len;
	uint64_t base; /* file offset of buf[0] */
	int eof;
	int version;
	char error[160];
};

/* Reads and checks the header. Negative errno with stream->error set on failure. */
int mojo_stream_open(struct mojo_stream *stream, int fd);
/* 1 and *event filled, 0 at a clean end, negative errno with stream->error set. */
int mojo_stream_next(struct mojo_stream *stream, struct mojo_raw_event *event);
/* The next event id without consuming it: 1 and *id, 0 at the end, negative errno. */
int mojo_stream_peek_id(struct mojo_stream *stream, int *id);
void mojo_stream_close(struct mojo_stream *stream);
uint64_t mojo_stream_offset(const struct mojo_stream *stream);

const char *mojo_stream_event_name(enum mojo_event_id id);

/*
 * Write one line per event of the MOJO file on fd to out (see the dump
 * format in the header line). 0, or negative errno with a one-line reason
 * in err after printing everything that decoded.
 */
pf_dump_fn mojo_dump;

/* The backends behind the "mojo" format descriptor (formats/format_registry.c). */
pf_writer_create_fn mojo_writer_create;
pf_reader_create_fn mojo_reader_create;

#endif
