// SPDX-License-Identifier: MIT
/*
 * Text dump of a Tachyon file, one line per record, for debugging writers
 * and comparing files with diff:
 *   pybpfprof-dump format=tachyon version=1
 *   Header key=value ...
 *   Full|Suffix|PopPush|Repeat at=<offset in decompressed sample data> ...
 *   String ... / Frame ... / Stats ... / Footer ...
 */
#include "formats/tachyon/tachyon.h"
#include "util/errbuf.h"
#include "util/text_quote.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static void print_header(FILE *out, const struct tachyon_file *file)
{
	const struct tachyon_header *h = tachyon_file_header(file);
	uint32_t mode = h->config & TACHYON_CONFIG_MODE_MASK;
	bool host_little = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;
	bool file_little = host_little != tachyon_file_swapped(file);

	fprintf(out,
		"Header magic=0x%08" PRIx32 " byte_order=%s version=%" PRIu32 " python=%u.%u.%u"
		" start_time_us=%" PRIu64 " interval_us=%" PRIu64 " sample_count=%" PRIu64
		" thread_count=%" PRIu32 " string_table_offset=%" PRIu64
		" frame_table_offset=%" PRIu64 " compression=%" PRIu32 " config=0x%08" PRIx32
		" mode=%s features=0x%" PRIx32 "\n",
		h->magic, file_little ? "little" : "big", h->version, h->python[0], h->python[1],
		h->python[2], h->start_time_us, h->interval_us, h->sample_count, h->thread_count,
		h->string_table_offset, h->frame_table_offset, h->compression, h->config,
		mode >= 1 && mode <= 5 ? tachyon_mode_names[mode - 1] : "unknown",
		h->config >> TACHYON_CONFIG_FEATURES_SHIFT);
}

static void print_frame_list(FILE *out, const uint32_t *frames, uint32_t count)
{
	fputc('[', out);
	for (uint32_t i = 0; i < count; i++)
		fprintf(out, "%s%" PRIu32, i ? "," : "", frames[i]);
	fputc(']', out);
}

static void print_stack_record(FILE *out, const struct tachyon_event *ev)
{
	static const char *const names[] = { "Full", "Suffix", "PopPush" };

	fprintf(out, "%s at=%" PRIu64 " tid=%" PRIu64 " iid=%" PRIu32 " delta=%" PRIu64
		" status=0x%02x ", names[ev->kind], ev->at, ev->tid, ev->iid, ev->delta, ev->status);
	if (ev->kind == TACHYON_EV_FULL) {
		fprintf(out, "depth=%" PRIu32 " frames=", ev->new_count);
	} else {
		fprintf(out, "%s=%" PRIu64 " %s=", ev->kind == TACHYON_EV_SUFFIX ? "shared" : "pop",
			ev->count, ev->kind == TACHYON_EV_SUFFIX ? "new" : "push");
	}
	print_frame_list(out, ev->new_frames, ev->new_count);
	fputc('\n', out);
}

/* Records until the end of the sample data; REPEAT groups span several events. */
static int print_records(FILE *out, struct tachyon_file *file, char *err, size_t errlen)
{
	struct tachyon_event ev;
	uint64_t repeat_left = 0, repeat_done = 0;
	int ret;

	while ((ret = tachyon_file_next(file, &ev, err, errlen)) > 0) {
		if (ev.kind == TACHYON_EV_REPEAT) {
			fprintf(out, "Repeat at=%" PRIu64 " tid=%" PRIu64 " iid=%" PRIu32
				" count=%" PRIu64 " samples=[", ev.at, ev.tid, ev.iid, ev.count);
			repeat_left = ev.count;
			repeat_done = 0;
		} else if (ev.kind == TACHYON_EV_REPEAT_ITEM) {
			fprintf(out, "%s(%" PRIu64 ",0x%02x)", repeat_done ? "," : "", ev.delta,
				ev.status);
			repeat_left--;
			repeat_done++;
		} else {
			print_stack_record(out, &ev);
			continue;
		}
		if (!repeat_left)
			fputs("]\n", out);
	}
	if (repeat_left)
		fputs("]\n", out); /* keep the dump line-oriented even when the group broke off */
	return ret;
}

static void print_tables(FILE *out, const struct tachyon_file *file)
{
	const struct tachyon_footer *footer = tachyon_file_footer(file);
	const struct tachyon_stats *stats = tachyon_file_stats(file);

	for (uint32_t i = 0; i < footer->string_count; i++) {
		size_t len;
		const char *text = tachyon_file_string(file, i, &len);

		fprintf(out, "String index=%" PRIu32 " value=", i);
		fput_quoted(out, text, len);
		fputc('\n', out);
	}
	for (uint32_t i = 0; i < footer->frame_count; i++) {
		const struct tachyon_frame_entry *f = tachyon_file_frame(file, i);

		fprintf(out,
			"Frame index=%" PRIu32 " file=%" PRIu32 " func=%" PRIu32 " line=%" PRId32
			" end_line=%" PRId32 " column=%" PRId32 " end_column=%" PRId32 " opcode=%u\n",
			i, f->file, f->func, f->line, f->end_line, f->column, f->end_column, f->opcode);
	}
	if (stats)
		fprintf(out,
			"Stats duration_sec=%.17g sample_rate=%.17g error_rate=%.17g"
			" missed_samples=%.17g present=0x%" PRIx32 "\n",
			stats->duration_sec, stats->sample_rate, stats->error_rate,
			stats->missed_samples, stats->present);
	fprintf(out, "Footer string_count=%" PRIu32 " frame_count=%" PRIu32 " file_size=%" PRIu64 "\n",
		footer->string_count, footer->frame_count, footer->file_size);
}

int tachyon_dump(int fd, FILE *out, char *err, size_t errlen)
{
	struct tachyon_file *file = NULL;
	int ret;

	if (errlen)
		err[0] = 0;
	ret = tachyon_file_open(fd, &file, err, errlen);
	fprintf(out, "pybpfprof-dump format=tachyon version=1\n");
	if (file)
		print_header(out, file);
	if (!ret)
		ret = print_records(out, file, err, errlen);
	if (!ret)
		print_tables(out, file);
	tachyon_file_close(file);
	if (!ret && ferror(out))
		return errbuf_format(err, errlen, -EIO, "cannot write the dump: %s", strerror(EIO));
	return ret;
}
