// SPDX-License-Identifier: MIT
/*
 * A line per MOJO event, for eyes and diffs: the event name, then key=value
 * arguments, the first always at=<byte offset>. Structure only: references
 * are shown as keys, not resolved.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "formats/mojo/mojo.h"
#include "util/errbuf.h"
#include "util/text_quote.h"

static const char *dump_name(enum mojo_event_id id)
{
	switch (id) {
	case MOJO_METADATA: return "Metadata";
	case MOJO_STACK: return "Stack";
	case MOJO_FRAME: return "Frame";
	case MOJO_FRAME_INVALID: return "FrameInvalid";
	case MOJO_FRAME_REF: return "FrameRef";
	case MOJO_FRAME_KERNEL: return "KernelFrame";
	case MOJO_GC: return "GC";
	case MOJO_IDLE: return "Idle";
	case MOJO_METRIC_TIME: return "Time";
	case MOJO_METRIC_MEMORY: return "Memory";
	case MOJO_STRING: return "String";
	case MOJO_STRING_REF: return "StringRef";
	default: return "Unknown";
	}
}

static void print_args(FILE *out, const struct mojo_raw_event *event)
{
	static const char *const frame_args[] = { "key", "file", "scope", "line", "line_end",
						  "column", "column_end" };
	size_t i;

	switch (event->id) {
	case MOJO_METADATA:
		fputs(" key=", out);
		fput_quoted_cstr(out, event->strs[0]);
		fputs(" value=", out);
		fput_quoted_cstr(out, event->strs[1]);
		break;
	case MOJO_STACK:
		fprintf(out, " pid=%lld iid=%lld tid=", (long long)event->ints[0],
			event->int_count > 1 ? (long long)event->ints[1] : 0LL);
		fput_quoted_cstr(out, event->strs[0]);
		break;
	case MOJO_STRING:
		fprintf(out, " key=%llu value=", (unsigned long long)event->ints[0]);
		fput_quoted_cstr(out, event->strs[0]);
		break;
	case MOJO_FRAME:
		/* The first three are keys, unsigned. */
		for (i = 0; i < event->int_count; i++) {
			if (i < 3)
				fprintf(out, " %s=%llu", frame_args[i],
					(unsigned long long)event->ints[i]);
			else
				fprintf(out, " %s=%lld", frame_args[i], (long long)event->ints[i]);
		}
		break;
	case MOJO_FRAME_REF:
	case MOJO_STRING_REF:
		fprintf(out, " key=%llu", (unsigned long long)event->ints[0]);
		break;
	case MOJO_FRAME_KERNEL:
		fputs(" symbol=", out);
		fput_quoted_cstr(out, event->strs[0]);
		break;
	case MOJO_METRIC_TIME:
		fprintf(out, " value=%llu", (unsigned long long)event->time);
		break;
	case MOJO_METRIC_MEMORY:
		fprintf(out, " value=%lld", (long long)event->ints[0]);
		break;
	default:
		break;
	}
}

int mojo_dump(int fd, FILE *out, char *err, size_t errlen)
{
	struct mojo_stream stream;
	struct mojo_raw_event event;
	int result = mojo_stream_open(&stream, fd);

	if (result == 0) {
		fprintf(out, "pybpfprof-dump format=mojo version=%d\n", stream.version);
		/* Each pass consumes an event: bounded by the file. */
		while ((result = mojo_stream_next(&stream, &event)) > 0) {
			fprintf(out, "%s at=%llu", dump_name(event.id),
				(unsigned long long)event.offset);
			print_args(out, &event);
			fputc('\n', out);
		}
	}
	if (result < 0)
		errbuf_format(err, errlen, result, "%s", stream.error);
	mojo_stream_close(&stream);
	if (result == 0 && ferror(out))
		return errbuf_format(err, errlen, -EIO, "cannot write the dump: %s", strerror(EIO));
	return result < 0 ? result : 0;
}
