// SPDX-License-Identifier: MIT
/*
 * Tachyon file decoder: validates a file the way CPython 3.15.2's reader does
 * and decodes its sample data incrementally (zstd streaming, bounded window),
 * so memory stays proportional to the tables, not to the samples. The reader
 * backend (tachyon_reader.c) and the dump (tachyon_dump.c) sit on it.
 */
#include "formats/tachyon/tachyon.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <zstd.h>

#include "formats/varint.h"
#include "profile/profile.h"
#include "util/array.h"
#include "util/errbuf.h"

const char *const tachyon_mode_names[TACHYON_MODE_COUNT] = { "wall", "cpu", "gil", "all",
								"exception" };
const char *const tachyon_feature_names[TACHYON_FEATURE_COUNT] = { "all_threads", "native", "gc",
								   "opcodes", "blocking" };

/* Decompressed bytes kept at hand: far more than the largest record of a valid file. */
#define WINDOW_SIZE (256u * 1024u)
#define RECORD_MAX  (8u * 1024u)

struct tachyon_string {
	char *text; /* NUL-terminated copy */
	size_t len;
};

struct tachyon_file {
	const uint8_t *map;
	size_t size;
	bool swap;
	struct tachyon_header header;
	struct tachyon_footer footer;
	struct tachyon_stats stats;
	bool has_stats;
	struct tachyon_string *strings;
	struct tachyon_frame_entry *frames;

	/* Sample data source. */
	const uint8_t *src;
	size_t src_len;
	size_t src_pos;
	ZSTD_DStream *dstream;
	bool src_done;
	size_t last_zstd_ret;
	uint8_t *window; /* decompressed data (or a view of the map when uncompressed) */
	size_t win_start, win_end;
	uint64_t win_offset; /* decompressed offset of window[win_start] */
	uint64_t total_out;

	/* Decoder state. */
	struct intern_table thread_ids;
	struct tachyon_thread **threads;
	size_t thread_capacity;
	struct tachyon_thread *repeat_thread;
	uint64_t repeat_left;
	uint64_t samples_seen;
	uint64_t sample_budget; /* samples decoded at most (TACHYON_SAMPLES_PER_FILE_BYTE) */
	uint64_t frames_seen;   /* the stack depths of the samples decoded */
	uint64_t frame_budget;  /* their sum at most (TACHYON_FRAMES_PER_FILE_BYTE) */
	uint32_t new_frames[TACHYON_MAX_DEPTH];
	bool finished;
};

static uint32_t load32(const struct tachyon_file *file, size_t offset)
{
	uint32_t value;

	memcpy(&value, file->map + offset, sizeof(value));
	return file->swap ? __builtin_bswap32(value) : value;
}

static uint64_t load64(const struct tachyon_file *file, size_t offset)
{
	uint64_t value;

	memcpy(&value, file->map + offset, sizeof(value));
	return file->swap ? __builtin_bswap64(value) : value;
}

static double load_double(const struct tachyon_file *file, size_t offset)
{
	uint64_t bits = load64(file, offset);
	double value;

	memcpy(&value, &bits, sizeof(value));
	return value;
}

static int parse_header(struct tachyon_file *file, char *errbuf, size_t errlen)
{
	struct tachyon_header *h = &file->header;
	uint32_t magic;

	if (file->size < TACHYON_HEADER_SIZE + TACHYON_FOOTER_SIZE)
		return errbuf_format(errbuf, errlen, -EINVAL,
				     "file too short for a Tachyon header and footer (%zu bytes)",
				     file->size);
	memcpy(&magic, file->map, sizeof(magic));
	if (magic == __builtin_bswap32(TACHYON_MAGIC))
		file->swap = true;
	else if (magic != TACHYON_MAGIC)
		return errbuf_format(errbuf, errlen, -EINVAL,
				     "bad magic at byte 0: not a Tachyon file");
	h->magic = TACHYON_MAGIC;
	h->version = load32(file, TACHYON_OFF_VERSION);
	memcpy(h->python, file->map + TACHYON_OFF_PYTHON, 3);
	h->start_time_us = load64(file, TACHYON_OFF_START);
	h->interval_us = load64(file, TACHYON_OFF_INTERVAL);
	h->sample_count = load64(file, TACHYON_OFF_SAMPLES);
	h->thread_count = load32(file, TACHYON_OFF_THREADS);
	h->string_table_offset = load64(file, TACHYON_OFF_STRINGS);
	h->frame_table_offset = load64(file, TACHYON_OFF_FRAMES);
	h->compression = load32(file, TACHYON_OFF_COMPRESSION);
	h->config = load32(file, TACHYON_OFF_CONFIG);
	return 0;
}

static int check_header(struct tachyon_file *file, char *errbuf, size_t errlen)
{
	const struct tachyon_header *h = &file->header;
	uint32_t mode = h->config & TACHYON_CONFIG_MODE_MASK;

	if (h->version != TACHYON_VERSION)
		return errbuf_format(errbuf, errlen, -EINVAL,
				     "unsupported Tachyon version %" PRIu32 " at byte 4",
				     h->version);
	if (mode > TACHYON_MODE_COUNT)
		return errbuf_format(errbuf, errlen, -EINVAL,
				     "bad profiling mode %" PRIu32 " in config word at byte 60",
				     mode);
	if (h->compression > TACHYON_COMPRESSION_ZSTD)
		return errbuf_format(errbuf, errlen, -EINVAL,
				     "unknown compression %" PRIu32 " at byte 56",
				     h->compression);
	if (h->string_table_offset < TACHYON_HEADER_SIZE ||
	    h->string_table_offset > h->frame_table_offset ||
	    h->frame_table_offset > file->size - TACHYON_FOOTER_SIZE)
		return errbuf_format(errbuf, errlen, -EINVAL,
				     "bad table offsets at byte 40 (strings %" PRIu64 ", frames %" PRIu64
				     ", file %zu bytes)",
				     h->string_table_offset, h->frame_table_offset, file->size);
	return 0;
}

/*
 * Every thread starts with a record of its own: a header claiming more threads
 * than the sample data can start is not believed (the count bounds the thread
 * state a reader keeps).
 */
static int check_thread_count(const struct tachyon_file *file, char *errbuf, size_t errlen)
{
	const struct tachyon_header *h = &file->header;
	uint64_t data_bytes = h->string_table_offset - TACHYON_HEADER_SIZE;
	uint64_t most = h->compression == TACHYON_COMPRESSION_NONE
				? data_bytes / TACHYON_MIN_FIRST_RECORD
				: data_bytes / TACHYON_MIN_COMPRESSED_THREAD;

	if (h->thread_count > most)
		return errbuf_format(errbuf, errlen, -EINVAL,
				     "header claims %" PRIu32 " threads at byte 36, but %" PRIu64
				     " bytes of sample data hold at most %" PRIu64,
				     h->thread_count, data_bytes, most);
	return 0;
}

/* floor + per_byte for every byte of the file, saturating. */
static uint64_t scaled_budget(size_t file_size, uint64_t per_byte, uint64_t floor)
{
	if (file_size > (UINT64_MAX - floor) / per_byte)
		return UINT64_MAX;
	return per_byte * file_size + floor;
}

static int parse_footer(struct tachyon_file *file, char *errbuf, size_t errlen)
{
	size_t at = file->size - TACHYON_FOOTER_SIZE;

	file->footer.string_count = load32(file, at + TACHYON_FOOTER_OFF_STRINGS);
	file->footer.frame_count = load32(file, at + TACHYON_FOOTER_OFF_FRAMES);
	file->footer.file_size = load64(file, at + TACHYON_FOOTER_OFF_FILE_SIZE);
	if (file->footer.file_size != file->size)
		return errbuf_format(errbuf, errlen, -EINVAL,
				     "footer at byte %zu says %" PRIu64 " bytes but the file has %zu (truncated?)",
				     at + TACHYON_FOOTER_OFF_FILE_SIZE, file->footer.file_size, file->size);
	return 0;
}

/* The stats block, if any, ends right before the footer with its magic, version and size. */
static int parse_stats(struct tachyon_file *file, size_t *tables_end, char *errbuf, size_t errlen)
{
	size_t footer_at = file->size - TACHYON_FOOTER_SIZE;
	size_t at = footer_at - TACHYON_STATS_SIZE;
	struct tachyon_stats *s = &file->stats;
	uint32_t version, size;

	*tables_end = footer_at;
	if (footer_at < file->header.frame_table_offset + TACHYON_STATS_SIZE ||
	    memcmp(file->map + at + TACHYON_STATS_OFF_MAGIC, TACHYON_STATS_MAGIC, 8) != 0)
		return 0;
	version = load32(file, at + TACHYON_STATS_OFF_VERSION);
	size = load32(file, at + TACHYON_STATS_OFF_SIZE);
	if (version != TACHYON_STATS_VERSION || size != TACHYON_STATS_SIZE)
		return errbuf_format(errbuf, errlen, -EINVAL,
				     "stats block at byte %zu: version %" PRIu32 ", size %" PRIu32
				     " unsupported", at, version, size);
	s->duration_sec = load_double(file, at + TACHYON_STATS_OFF_DURATION);
	s->sample_rate = load_double(file, at + TACHYON_STATS_OFF_RATE);
	s->error_rate = load_double(file, at + TACHYON_STATS_OFF_ERROR_RATE);
	s->missed_samples = load_double(file, at + TACHYON_STATS_OFF_MISSED);
	s->present = load32(file, at + TACHYON_STATS_OFF_PRESENT);
	if (!(s->duration_sec >= 0) || !(s->sample_rate >= 0) || !(s->error_rate >= 0) ||
	    isnan(s->missed_samples))
		return errbuf_format(errbuf, errlen, -EINVAL,
				     "stats block at byte %zu: negative or NaN value", at);
	file->has_stats = true;
	*tables_end = at;
	return 0;
}

static int parse_strings(struct tachyon_file *file, char *errbuf, size_t errlen)
{
	size_t pos = file->header.string_table_offset;
	size_t end = file->header.frame_table_offset;
	uint32_t count = file->footer.string_count;

	/* Every entry takes at least one byte: a bigger count cannot be honest. */
	if (count > end - pos)
		return errbuf_format(errbuf, errlen, -EINVAL,
				     "footer claims %" PRIu32 " strings in a %zu-byte table",
				     count, end - pos);
	file->strings = calloc(count ? count : 1, sizeof(*file->strings));
	if (!file->strings)
		return errbuf_format(errbuf, errlen, -ENOMEM,
				     "out of memory for %" PRIu32 " strings", count);
	for (uint32_t i = 0; i < count; i++) {
		uint64_t len;
		size_t n = varint_leb128_decode(file->map + pos, end - pos, &len);

		if (!n || len > end - pos - n)
			return errbuf_format(errbuf, errlen, -EINVAL,
					     "string %" PRIu32 " at byte %zu overruns the string table",
					     i, pos);
		pos += n;
		file->strings[i].text = malloc(len + 1);
		if (!file->strings[i].text)
			return errbuf_format(errbuf, errlen, -ENOMEM,
					     "out of memory for string %" PRIu32, i);
		memcpy(file->strings[i].text, file->map + pos, len);
		file->strings[i].text[len] = 0;
		file->strings[i].len = len;
		pos += len;
	}
	if (pos != end)
		return errbuf_format(errbuf, errlen, -EINVAL,
				     "string table ends at byte %zu, frame table starts at %zu",
				     pos, end);
	return 0;
}

static bool fits_int32(int64_t value)
{
	return value >= INT32_MIN && value <= INT32_MAX;
}

/* One frame entry at *pos; false if it is malformed. */
static bool parse_frame(const struct tachyon_file *file, size_t *pos, size_t end,
			struct tachyon_frame_entry *frame)
{
	const uint8_t *p = file->map;
	uint64_t file_idx, func_idx;
	int64_t line, end_delta, column, col_delta;
	size_t n;

	if (!(n = varint_leb128_decode(p + *pos, end - *pos, &file_idx)))
		return false;
	*pos += n;
	if (!(n = varint_leb128_decode(p + *pos, end - *pos, &func_idx)))
		return false;
	*pos += n;
	if (!(n = varint_zigzag_decode(p + *pos, end - *pos, &line)))
		return false;
	*pos += n;
	if (!(n = varint_zigzag_decode(p + *pos, end - *pos, &end_delta)))
		return false;
	*pos += n;
	if (!(n = varint_zigzag_decode(p + *pos, end - *pos, &column)))
		return false;
	*pos += n;
	if (!(n = varint_zigzag_decode(p + *pos, end - *pos, &col_delta)))
		return false;
	*pos += n;
	if (*pos >= end)
		return false;
	frame->opcode = p[(*pos)++];
	if (file_idx >= file->footer.string_count || func_idx >= file->footer.string_count)
		return false;
	if (!fits_int32(line) || !fits_int32(column) || end_delta < INT32_MIN ||
	    end_delta > INT32_MAX || col_delta < INT32_MIN || col_delta > INT32_MAX)
		return false;
	if ((line != -1 && !fits_int32(line + end_delta)) ||
	    (column != -1 && !fits_int32(column + col_delta)))
		return false;
	frame->file = (uint32_t)file_idx;
	frame->func = (uint32_t)func_idx;
	frame->line = (int32_t)line;
	frame->end_line = line == -1 ? -1 : (int32_t)(line + end_delta);
	frame->column = (int32_t)column;
	frame->end_column = column == -1 ? -1 : (int32_t)(column + col_delta);
	return true;
}

static int parse_frames(struct tachyon_file *file, size_t end, char *errbuf, size_t errlen)
{
	size_t pos = file->header.frame_table_offset;
	uint32_t count = file->footer.frame_count;

	/* An entry is at least 7 bytes. */
	if (pos > end || count > (end - pos) / 7)
		return errbuf_format(errbuf, errlen, -EINVAL,
				     "footer claims %" PRIu32 " frames in a %zu-byte table",
				     count, pos > end ? (size_t)0 : end - pos);
	file->frames = calloc(count ? count : 1, sizeof(*file->frames));
	if (!file->frames)
		return errbuf_format(errbuf, errlen, -ENOMEM,
				     "out of memory for %" PRIu32 " frames", count);
	for (uint32_t i = 0; i < count; i++) {
		size_t at = pos;

		if (!parse_frame(file, &pos, end, &file->frames[i]))
			return errbuf_format(errbuf, errlen, -EINVAL,
					     "bad frame %" PRIu32 " at byte %zu", i, at);
	}
	if (pos != end)
		return errbuf_format(errbuf, errlen, -EINVAL,
				     "frame table ends at byte %zu, expected %zu", pos, end);
	return 0;
}

static int init_source(struct tachyon_file *file, char *errbuf, size_t errlen)
{
	file->src = file->map + TACHYON_HEADER_SIZE;
	file->src_len = file->header.string_table_offset - TACHYON_HEADER_SIZE;
	if (file->header.compression == TACHYON_COMPRESSION_NONE) {
		/* The window is the map itself: nothing to copy. */
		file->window = (uint8_t *)file->src;
		file->win_end = file->src_len;
		file->src_done = true;
		return 0;
	}
	if (file->src_len == 0) {
		/* No frame at all: an empty profile. */
		file->window = (uint8_t *)file->src;
		file->src_done = true;
		return 0;
	}
	file->window = malloc(WINDOW_SIZE);
	file->dstream = ZSTD_createDStream();
	if (!file->window || !file->dstream)
		return errbuf_format(errbuf, errlen, -ENOMEM,
				     "out of memory for zstd decompression");
	ZSTD_initDStream(file->dstream);
	return 0;
}

static int map_file(int fd, struct tachyon_file *file, char *errbuf, size_t errlen)
{
	struct stat st;
	void *map;

	if (fstat(fd, &st) < 0) {
		int err = -errno;

		return errbuf_format(errbuf, errlen, err,
				     "cannot stat the file: %s", strerror(errno));
	}
	if (!S_ISREG(st.st_mode))
		return errbuf_format(errbuf, errlen, -EINVAL, "not a regular file");
	if (st.st_size < (off_t)(TACHYON_HEADER_SIZE + TACHYON_FOOTER_SIZE))
		return errbuf_format(errbuf, errlen, -EINVAL,
				     "file too short for a Tachyon header and footer (%jd bytes)",
				     (intmax_t)st.st_size);
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED) {
		int err = -errno;

		return errbuf_format(errbuf, errlen, err,
				     "cannot map the file: %s", strerror(errno));
	}
	madvise(map, (size_t)st.st_size, MADV_SEQUENTIAL);
	file->map = map;
	file->size = (size_t)st.st_size;
	return 0;
}

int tachyon_file_open(int fd, struct tachyon_file **out, char *errbuf, size_t errlen)
{
	struct tachyon_file *file = calloc(1, sizeof(*file));
	size_t tables_end;
	int err;

	*out = NULL;
	if (!file)
		return errbuf_format(errbuf, errlen, -ENOMEM, "out of memory");
	intern_init(&file->thread_ids);
	err = map_file(fd, file, errbuf, errlen);
	if (!err)
		err = parse_header(file, errbuf, errlen);
	if (err) {
		tachyon_file_close(file);
		return err;
	}
	*out = file; /* the header is known: a dump can show it even if the rest is bad */
	file->sample_budget = scaled_budget(file->size, TACHYON_SAMPLES_PER_FILE_BYTE,
					    TACHYON_SAMPLES_FLOOR);
	file->frame_budget = scaled_budget(file->size, TACHYON_FRAMES_PER_FILE_BYTE,
					   TACHYON_FRAMES_FLOOR);
	err = check_header(file, errbuf, errlen);
	if (!err)
		err = check_thread_count(file, errbuf, errlen);
	if (!err)
		err = parse_footer(file, errbuf, errlen);
	if (!err)
		err = parse_stats(file, &tables_end, errbuf, errlen);
	if (!err)
		err = parse_strings(file, errbuf, errlen);
	if (!err)
		err = parse_frames(file, tables_end, errbuf, errlen);
	if (!err)
		err = init_source(file, errbuf, errlen);
	return err;
}

void tachyon_file_close(struct tachyon_file *file)
{
	if (!file)
		return;
	if (file->strings) {
		for (uint32_t i = 0; i < file->footer.string_count; i++)
			free(file->strings[i].text);
		free(file->strings);
	}
	free(file->frames);
	ZSTD_freeDStream(file->dstream);
	if (file->window != file->src)
		free(file->window);
	for (size_t i = 0; i < intern_count(&file->thread_ids); i++)
		if (file->threads[i]) {
			free(file->threads[i]->stack);
			free(file->threads[i]);
		}
	free(file->threads);
	intern_free(&file->thread_ids);
	if (file->map)
		munmap((void *)file->map, file->size);
	free(file);
}

const struct tachyon_header *tachyon_file_header(const struct tachyon_file *file)
{
	return &file->header;
}

const struct tachyon_stats *tachyon_file_stats(const struct tachyon_file *file)
{
	return file->has_stats ? &file->stats : NULL;
}

const struct tachyon_footer *tachyon_file_footer(const struct tachyon_file *file)
{
	return &file->footer;
}

bool tachyon_file_swapped(const struct tachyon_file *file)
{
	return file->swap;
}

const char *tachyon_file_string(const struct tachyon_file *file, uint32_t index, size_t *len)
{
	if (!file->strings || index >= file->footer.string_count)
		return NULL;
	if (len)
		*len = file->strings[index].len;
	return file->strings[index].text;
}

const struct tachyon_frame_entry *tachyon_file_frame(const struct tachyon_file *file,
						     uint32_t index)
{
	if (!file->frames || index >= file->footer.frame_count)
		return NULL;
	return &file->frames[index];
}

/* Make at least want bytes available in the window, unless the data ends first. */
static int fill_window(struct tachyon_file *file, size_t want, char *errbuf, size_t errlen)
{
	while (file->win_end - file->win_start < want && !file->src_done) {
		ZSTD_outBuffer output;
		ZSTD_inBuffer input = { file->src, file->src_len, file->src_pos };
		size_t ret;

		if (file->win_start) {
			memmove(file->window, file->window + file->win_start,
				file->win_end - file->win_start);
			file->win_end -= file->win_start;
			file->win_start = 0;
		}
		output = (ZSTD_outBuffer){ file->window, WINDOW_SIZE, file->win_end };
		ret = ZSTD_decompressStream(file->dstream, &output, &input);
		if (ZSTD_isError(ret))
			return errbuf_format(errbuf, errlen, -EINVAL,
					     "zstd error near byte %zu: %s",
					     TACHYON_HEADER_SIZE + file->src_pos, ZSTD_getErrorName(ret));
		file->total_out += output.pos - file->win_end;
		if (file->total_out > TACHYON_MAX_DECOMPRESSED)
			return errbuf_format(errbuf, errlen, -EFBIG,
					     "sample data decompresses to more than 1 GiB");
		file->win_end = output.pos;
		file->src_pos = input.pos;
		file->last_zstd_ret = ret;
		/* Input all used and room left over: the decoder has nothing more to give. */
		if (input.pos == input.size && output.pos < output.size) {
			file->src_done = true;
			if (ret != 0)
				return errbuf_format(errbuf, errlen, -EINVAL,
						     "sample data ends inside a zstd frame at byte %" PRIu64,
						     file->header.string_table_offset);
		}
	}
	return 0;
}

/* Decoding cursor over the window for one record. */
struct cursor {
	const uint8_t *p;
	size_t len;
	size_t pos;
	bool bad;
};

static uint64_t take_varint(struct cursor *c)
{
	uint64_t value = 0;
	size_t n;

	if (c->bad)
		return 0;
	n = varint_leb128_decode(c->p + c->pos, c->len - c->pos, &value);
	if (!n)
		c->bad = true;
	c->pos += n;
	return value;
}

static uint64_t take_fixed(struct cursor *c, const struct tachyon_file *file, size_t size)
{
	uint64_t value = 0;

	if (c->bad || c->len - c->pos < size) {
		c->bad = true;
		return 0;
	}
	if (size == 8) {
		memcpy(&value, c->p + c->pos, 8);
		value = file->swap ? __builtin_bswap64(value) : value;
	} else if (size == 4) {
		uint32_t v32;

		memcpy(&v32, c->p + c->pos, 4);
		value = file->swap ? __builtin_bswap32(v32) : v32;
	} else {
		value = c->p[c->pos];
	}
	c->pos += size;
	return value;
}

static void describe_offset(const struct tachyon_file *file, uint64_t at, char *out, size_t len)
{
	if (file->header.compression == TACHYON_COMPRESSION_NONE)
		snprintf(out, len, "byte %" PRIu64, TACHYON_HEADER_SIZE + at);
	else
		snprintf(out, len, "decompressed sample byte %" PRIu64, at);
}

static int record_error(const struct tachyon_file *file, uint64_t at, char *errbuf, size_t errlen,
			const char *what)
{
	char where[64];

	describe_offset(file, at, where, sizeof(where));
	return errbuf_format(errbuf, errlen, -EINVAL, "%s at %s", what, where);
}

static int over_budget(const struct tachyon_file *file, uint64_t at, uint64_t budget,
		       const char *what, char *errbuf, size_t errlen)
{
	char where[64];

	describe_offset(file, at, where, sizeof(where));
	return errbuf_format(errbuf, errlen, -EFBIG,
			     "more than %" PRIu64 " %s from a %zu-byte file at %s: corrupt or crafted",
			     budget, what, file->size, where);
}

/* Whether count more samples of depth frames each stay within the decoding budget. */
static int check_budget(const struct tachyon_file *file, uint64_t count, uint32_t depth,
			uint64_t at, char *errbuf, size_t errlen)
{
	if (count > file->sample_budget - file->samples_seen)
		return over_budget(file, at, file->sample_budget, "samples", errbuf, errlen);
	if (depth && count > (file->frame_budget - file->frames_seen) / depth)
		return over_budget(file, at, file->frame_budget, "frames", errbuf, errlen);
	return 0;
}

static int find_thread(struct tachyon_file *file, uint64_t tid, uint32_t iid, bool create,
		       struct tachyon_thread **thread)
{
	uint8_t key[12];
	bool is_new;
	int64_t id;

	memcpy(key, &tid, 8);
	memcpy(key + 8, &iid, 4);
	if (!create) {
		id = intern_find(&file->thread_ids, key, sizeof(key));
		*thread = id < 0 ? NULL : file->threads[id];
		return 0;
	}
	if (intern_count(&file->thread_ids) >= file->header.thread_count &&
	    intern_find(&file->thread_ids, key, sizeof(key)) < 0)
		return -ERANGE;
	if (array_reserve((void **)&file->threads, &file->thread_capacity,
			  intern_count(&file->thread_ids) + 1, sizeof(*file->threads), 8))
		return -ENOMEM;
	id = intern_add(&file->thread_ids, key, sizeof(key), &is_new);
	if (id < 0)
		return (int)id;
	if (is_new) {
		struct tachyon_thread *fresh = calloc(1, sizeof(*fresh));

		/* Keep ids and the array in step so close() frees only real pointers. */
		file->threads[id] = fresh;
		if (!fresh)
			return -ENOMEM;
		fresh->tid = tid;
		fresh->iid = iid;
		fresh->timestamp_us = file->header.start_time_us;
	}
	*thread = file->threads[id];
	return 0;
}

static int read_frames(struct cursor *c, const struct tachyon_file *file, uint32_t *out,
		       uint64_t count)
{
	for (uint64_t i = 0; i < count; i++) {
		uint64_t index = take_varint(c);

		if (c->bad)
			return -EINVAL;
		if (index >= file->footer.frame_count)
			return -ERANGE;
		out[i] = (uint32_t)index;
	}
	return 0;
}

static int finish_stream(struct tachyon_file *file, char *errbuf, size_t errlen)
{
	file->finished = true;
	if (file->samples_seen != file->header.sample_count)
		return errbuf_format(errbuf, errlen, -EINVAL,
				     "header says %" PRIu64 " samples, the data holds %" PRIu64,
				     file->header.sample_count, file->samples_seen);
	return 0;
}

static int next_repeat_item(struct tachyon_file *file, struct tachyon_event *ev, char *errbuf,
			    size_t errlen)
{
	struct cursor c = { file->window + file->win_start, file->win_end - file->win_start, 0, false };

	int err = check_budget(file, 1, file->repeat_thread->depth, ev->at, errbuf, errlen);

	if (err)
		return err;
	ev->kind = TACHYON_EV_REPEAT_ITEM;
	ev->tid = file->repeat_thread->tid;
	ev->iid = file->repeat_thread->iid;
	ev->delta = take_varint(&c);
	ev->status = (uint8_t)take_fixed(&c, file, 1);
	if (c.bad)
		return record_error(file, ev->at, errbuf, errlen, "truncated REPEAT sample");
	file->repeat_left--;
	file->repeat_thread->timestamp_us += ev->delta;
	ev->count = 0;
	ev->new_count = 0;
	ev->new_frames = NULL;
	ev->thread = file->repeat_thread;
	file->samples_seen++;
	file->frames_seen += file->repeat_thread->depth;
	file->win_start += c.pos;
	file->win_offset += c.pos;
	return 1;
}

/* Room for depth frames (and a stack even when empty, so the copies have somewhere to go).
 * Small to start with: a file may hold many threads of one shallow sample each. */
static int reserve_stack(struct tachyon_thread *thread, size_t depth)
{
	return array_reserve((void **)&thread->stack, &thread->stack_capacity, depth ? depth : 1,
			     sizeof(*thread->stack), 4);
}

/* Apply a FULL, SUFFIX or POP_PUSH record to its thread's stack. */
static int apply_stack(struct tachyon_file *file, struct tachyon_thread *thread,
		       struct tachyon_event *ev, char *errbuf, size_t errlen)
{
	uint32_t keep, keep_from;

	if (ev->kind == TACHYON_EV_FULL) {
		if (reserve_stack(thread, ev->new_count))
			return errbuf_format(errbuf, errlen, -ENOMEM, "out of memory for a stack");
		memcpy(thread->stack, ev->new_frames, ev->new_count * sizeof(uint32_t));
		thread->depth = ev->new_count;
		return 0;
	}
	if (ev->count > thread->depth)
		return record_error(file, ev->at, errbuf, errlen,
				    ev->kind == TACHYON_EV_SUFFIX ? "SUFFIX shares more frames than the previous stack has"
								  : "POP_PUSH pops more frames than the previous stack has");
	keep = ev->kind == TACHYON_EV_SUFFIX ? (uint32_t)ev->count : thread->depth - (uint32_t)ev->count;
	keep_from = thread->depth - keep;
	if ((uint64_t)keep + ev->new_count > TACHYON_MAX_DEPTH)
		return record_error(file, ev->at, errbuf, errlen, "stack deeper than 256 frames");
	if (reserve_stack(thread, (size_t)keep + ev->new_count))
		return errbuf_format(errbuf, errlen, -ENOMEM, "out of memory for a stack");
	memmove(thread->stack + ev->new_count, thread->stack + keep_from, keep * sizeof(uint32_t));
	memcpy(thread->stack, ev->new_frames, ev->new_count * sizeof(uint32_t));
	thread->depth = keep + ev->new_count;
	return 0;
}

static int decode_record(struct tachyon_file *file, struct tachyon_event *ev, char *errbuf,
			 size_t errlen)
{
	struct cursor c = { file->window + file->win_start, file->win_end - file->win_start, 0, false };
	struct tachyon_thread *thread;
	uint64_t new_count;
	uint8_t encoding;
	int err;

	ev->tid = take_fixed(&c, file, 8);
	ev->iid = (uint32_t)take_fixed(&c, file, 4);
	encoding = (uint8_t)take_fixed(&c, file, 1);
	if (c.bad)
		return record_error(file, ev->at, errbuf, errlen, "truncated record");
	ev->new_frames = file->new_frames;
	ev->new_count = 0;
	if (encoding == TACHYON_ENC_REPEAT) {
		ev->kind = TACHYON_EV_REPEAT;
		ev->count = take_varint(&c);
		ev->delta = 0;
		ev->status = 0;
		if (c.bad)
			return record_error(file, ev->at, errbuf, errlen, "truncated REPEAT record");
		find_thread(file, ev->tid, ev->iid, false, &thread);
		if (!thread)
			return record_error(file, ev->at, errbuf, errlen,
					    "REPEAT for a thread with no previous sample");
		if (ev->count > file->header.sample_count - file->samples_seen)
			return record_error(file, ev->at, errbuf, errlen,
					    "REPEAT count exceeds the header's sample count");
		err = check_budget(file, ev->count, thread->depth, ev->at, errbuf, errlen);
		if (err)
			return err;
		file->repeat_thread = thread;
		file->repeat_left = ev->count;
		ev->thread = NULL;
		file->win_start += c.pos;
		file->win_offset += c.pos;
		return 1;
	}
	if (encoding > TACHYON_ENC_POP_PUSH) {
		char what[48];

		snprintf(what, sizeof(what), "unknown stack encoding 0x%02x", encoding);
		return record_error(file, ev->at, errbuf, errlen, what);
	}
	ev->kind = encoding == TACHYON_ENC_FULL ? TACHYON_EV_FULL
		   : encoding == TACHYON_ENC_SUFFIX ? TACHYON_EV_SUFFIX : TACHYON_EV_POP_PUSH;
	ev->delta = take_varint(&c);
	ev->status = (uint8_t)take_fixed(&c, file, 1);
	ev->count = take_varint(&c);
	new_count = encoding == TACHYON_ENC_FULL ? ev->count : take_varint(&c);
	if (c.bad)
		return record_error(file, ev->at, errbuf, errlen, "truncated record");
	if (new_count > TACHYON_MAX_DEPTH)
		return record_error(file, ev->at, errbuf, errlen, "stack deeper than 256 frames");
	err = read_frames(&c, file, file->new_frames, new_count);
	if (err == -ERANGE)
		return record_error(file, ev->at, errbuf, errlen, "frame index out of range");
	if (err)
		return record_error(file, ev->at, errbuf, errlen, "truncated frame list");
	ev->new_count = (uint32_t)new_count;
	if (file->samples_seen >= file->header.sample_count)
		return record_error(file, ev->at, errbuf, errlen,
				    "more samples than the header's sample count");
	find_thread(file, ev->tid, ev->iid, false, &thread);
	if (!thread) {
		if (ev->kind != TACHYON_EV_FULL)
			return record_error(file, ev->at, errbuf, errlen,
					    "first record of a thread is not FULL");
		err = find_thread(file, ev->tid, ev->iid, true, &thread);
		if (err == -ERANGE)
			return record_error(file, ev->at, errbuf, errlen,
					    "more threads than the header's thread count");
		if (err)
			return errbuf_format(errbuf, errlen, err, "out of memory for thread state");
	}
	err = apply_stack(file, thread, ev, errbuf, errlen);
	if (!err)
		err = check_budget(file, 1, thread->depth, ev->at, errbuf, errlen);
	if (err)
		return err;
	thread->timestamp_us += ev->delta;
	ev->thread = thread;
	file->samples_seen++;
	file->frames_seen += thread->depth;
	file->win_start += c.pos;
	file->win_offset += c.pos;
	return 1;
}

int tachyon_file_next(struct tachyon_file *file, struct tachyon_event *event, char *errbuf,
		      size_t errlen)
{
	int err;

	if (file->finished)
		return 0;
	err = fill_window(file, RECORD_MAX, errbuf, errlen);
	if (err)
		return err;
	event->at = file->win_offset;
	if (file->repeat_left)
		return next_repeat_item(file, event, errbuf, errlen);
	if (file->win_start == file->win_end)
		return finish_stream(file, errbuf, errlen);
	return decode_record(file, event, errbuf, errlen);
}
