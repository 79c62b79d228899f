// SPDX-License-Identifier: MIT
/*
 * MOJO stream decoder: raw events (ids, varints, strings) over a refilled
 * buffer. The sample reader (mojo_reader.c) and the dump (mojo_dump.c) sit on it.
 */
#include "formats/mojo/mojo.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/varint.h"
#include "util/array.h"
#include "util/errbuf.h"

#define STREAM_INITIAL_CAPACITY (64u * 1024u)
/* One event (a string, in practice) larger than this is corrupt data, not a profile. */
#define STREAM_MAX_EVENT (64u * 1024u * 1024u)

/* 1 if bytes were added, 0 at the end of the file, negative errno. */
static int stream_fill(struct mojo_stream *stream)
{
	ssize_t got;

	if (stream->pos > 0) {
		memmove(stream->buf, stream->buf + stream->pos, stream->len - stream->pos);
		stream->base += stream->pos;
		stream->len -= stream->pos;
		stream->pos = 0;
	}
	if (stream->len == stream->capacity) {
		if (stream->capacity * 2 > STREAM_MAX_EVENT)
			return errbuf_format(stream->error, sizeof(stream->error), -EFBIG,
					     "event at byte %llu is larger than %u bytes",
					     (unsigned long long)stream->base, STREAM_MAX_EVENT);
		if (array_reserve((void **)&stream->buf, &stream->capacity, stream->len + 1, 1,
				  STREAM_INITIAL_CAPACITY))
			return errbuf_format(stream->error, sizeof(stream->error), -ENOMEM,
					     "out of memory reading byte %llu",
					     (unsigned long long)stream->base);
	}
	do
		got = read(stream->fd, stream->buf + stream->len, stream->capacity - stream->len);
	while (got < 0 && errno == EINTR);
	if (got < 0)
		return errbuf_format(stream->error, sizeof(stream->error), -errno,
				     "read error at byte %llu: %s",
				     (unsigned long long)(stream->base + stream->len), strerror(errno));
	if (got == 0) {
		stream->eof = 1;
		return 0;
	}
	stream->len += (size_t)got;
	return 1;
}

/* A varint that has not ended within what is available may just be cut off. */
static bool varint_may_continue(const uint8_t *in, size_t len)
{
	size_t i;

	if (len >= VARINT_MAX_BYTES)
		return false;
	for (i = 0; i < len; i++)
		if (!(in[i] & 0x80))
			return false;
	return true;
}

enum field_result { FIELD_NEED_MORE = 0, FIELD_BAD = -1 };

/*
 * Field layouts: i signed varint, u unsigned varint (TIME), k reference key,
 * s string. Keys are unsigned: Austin writes some frame keys as 64-bit
 * values (all ones, for example), beyond what a signed field holds.
 */
static const char *event_layout(enum mojo_event_id id, int version)
{
	switch (id) {
	case MOJO_METADATA: return "ss";
	case MOJO_STACK: return version >= 3 ? "iis" : "is";
	case MOJO_FRAME: return version >= 2 ? "kkkiiii" : "kkki";
	case MOJO_FRAME_REF: return "k";
	case MOJO_FRAME_KERNEL: return "s";
	case MOJO_METRIC_TIME: return "u";
	case MOJO_METRIC_MEMORY: return "i";
	case MOJO_STRING: return "ks";
	case MOJO_STRING_REF: return "k";
	default: return "";
	}
}

/*
 * Decode the event at in[0..len): bytes consumed, FIELD_NEED_MORE if the
 * data ends inside it, FIELD_BAD with *why set if it cannot be valid.
 */
static long decode_event(const uint8_t *in, size_t len, int version, struct mojo_raw_event *event,
			 const char **why)
{
	const char *layout;
	size_t at = 1;

	if (len == 0)
		return FIELD_NEED_MORE;
	if (in[0] == MOJO_RESERVED || in[0] >= MOJO_EVENT_COUNT) {
		*why = "unknown event id";
		return FIELD_BAD;
	}
	event->id = in[0];
	event->int_count = 0;
	event->str_count = 0;
	event->time = 0;
	for (layout = event_layout(event->id, version); *layout; layout++) {
		size_t used;

		if (*layout == 's') {
			const uint8_t *nul = memchr(in + at, 0, len - at);

			if (!nul)
				return FIELD_NEED_MORE;
			event->strs[event->str_count++] = (const char *)(in + at);
			at = (size_t)(nul - in) + 1;
			continue;
		}
		if (*layout == 'u') {
			used = varint_mojo_unsigned_decode(in + at, len - at, &event->time);
		} else if (*layout == 'k') {
			uint64_t key;

			used = varint_mojo_unsigned_decode(in + at, len - at, &key);
			event->ints[event->int_count++] = (int64_t)key;
		} else {
			used = varint_mojo_decode(in + at, len - at, &event->ints[event->int_count++]);
		}
		if (!used) {
			if (varint_may_continue(in + at, len - at))
				return FIELD_NEED_MORE;
			*why = *layout == 'u' ? "bad unsigned varint"
			       : *layout == 'k' ? "bad key varint" : "bad varint";
			return FIELD_BAD;
		}
		at += used;
	}
	return (long)at;
}

uint64_t mojo_stream_offset(const struct mojo_stream *stream)
{
	return stream->base + stream->pos;
}

int mojo_stream_next(struct mojo_stream *stream, struct mojo_raw_event *event)
{
	for (;;) {
		const char *why = NULL;
		long used;
		int filled;

		if (stream->pos == stream->len && stream->eof)
			return 0;
		used = decode_event(stream->buf + stream->pos, stream->len - stream->pos,
				    stream->version, event, &why);
		if (used > 0) {
			event->offset = mojo_stream_offset(stream);
			stream->pos += (size_t)used;
			return 1;
		}
		if (used == FIELD_BAD) {
			uint8_t id = stream->buf[stream->pos];

			if (id == MOJO_RESERVED || id >= MOJO_EVENT_COUNT)
				return errbuf_format(stream->error, sizeof(stream->error), -EBADMSG,
						     "unknown event id %u at byte %llu",
						     stream->buf[stream->pos],
						     (unsigned long long)mojo_stream_offset(stream));
			return errbuf_format(stream->error, sizeof(stream->error), -EBADMSG,
					     "%s in %s event at byte %llu", why,
					     mojo_stream_event_name(event->id),
					     (unsigned long long)mojo_stream_offset(stream));
		}
		if (stream->eof)
			return errbuf_format(stream->error, sizeof(stream->error), -EBADMSG,
					     "truncated at byte %llu",
					     (unsigned long long)(stream->base + stream->len));
		filled = stream_fill(stream);
		if (filled < 0)
			return filled;
	}
}

int mojo_stream_peek_id(struct mojo_stream *stream, int *id)
{
	while (stream->pos == stream->len) {
		int filled;

		if (stream->eof)
			return 0;
		filled = stream_fill(stream);
		if (filled < 0)
			return filled;
	}
	*id = stream->buf[stream->pos];
	return 1;
}

int mojo_stream_open(struct mojo_stream *stream, int fd)
{
	int64_t version;
	size_t used = 0;

	memset(stream, 0, sizeof(*stream));
	stream->fd = fd;
	stream->capacity = STREAM_INITIAL_CAPACITY;
	stream->buf = malloc(stream->capacity);
	if (!stream->buf)
		return errbuf_format(stream->error, sizeof(stream->error), -ENOMEM,
				     "out of memory");
	/* The header is a few bytes: keep filling until it decodes or the file ends. */
	while (!stream->eof) {
		if (stream->len >= 3 && memcmp(stream->buf, MOJO_MAGIC, 3) != 0)
			break;
		if (stream->len > 3 &&
		    (used = varint_mojo_decode(stream->buf + 3, stream->len - 3, &version)) != 0)
			break;
		if (stream->len > 3 + VARINT_MAX_BYTES)
			break;
		int filled = stream_fill(stream);
		if (filled < 0)
			return filled;
	}
	if (stream->len < 3 && stream->eof)
		return errbuf_format(stream->error, sizeof(stream->error), -EBADMSG,
				     "not a MOJO file: truncated at byte %zu",
				     stream->len);
	if (memcmp(stream->buf, MOJO_MAGIC, 3) != 0)
		return errbuf_format(stream->error, sizeof(stream->error), -EBADMSG,
				     "not a MOJO file (no MOJ magic at byte 0)");
	if (!used) {
		if (stream->eof && varint_may_continue(stream->buf + 3, stream->len - 3))
			return errbuf_format(stream->error, sizeof(stream->error), -EBADMSG,
					     "truncated at byte %zu", stream->len);
		return errbuf_format(stream->error, sizeof(stream->error), -EBADMSG,
				     "bad version varint at byte 3");
	}
	if (version < 1 || version > MOJO_VERSION)
		return errbuf_format(stream->error, sizeof(stream->error), -ENOTSUP,
				     "unsupported MOJO version %lld (supported: 1-%d)",
				     (long long)version, MOJO_VERSION);
	stream->version = (int)version;
	stream->pos = 3 + used;
	return 0;
}

void mojo_stream_close(struct mojo_stream *stream)
{
	free(stream->buf);
	stream->buf = NULL;
}

const char *mojo_stream_event_name(enum mojo_event_id id)
{
	static const char *const names[MOJO_EVENT_COUNT] = {
		[MOJO_RESERVED] = "RESERVED",	  [MOJO_METADATA] = "METADATA",
		[MOJO_STACK] = "STACK",		  [MOJO_FRAME] = "FRAME",
		[MOJO_FRAME_INVALID] = "FRAME_INVALID", [MOJO_FRAME_REF] = "FRAME_REF",
		[MOJO_FRAME_KERNEL] = "FRAME_KERNEL", [MOJO_GC] = "GC",
		[MOJO_IDLE] = "IDLE",		  [MOJO_METRIC_TIME] = "TIME",
		[MOJO_METRIC_MEMORY] = "MEMORY",  [MOJO_STRING] = "STRING",
		[MOJO_STRING_REF] = "STRING_REF",
	};

	return (unsigned)id < MOJO_EVENT_COUNT ? names[id] : "unknown";
}
