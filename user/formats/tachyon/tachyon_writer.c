// SPDX-License-Identifier: MIT
/*
 * Tachyon writer. Samples are delta-encoded per (tid, iid) thread and
 * streamed (through zstd when asked) right behind the 64-byte header; the
 * string and frame tables, stats block, footer and header go out at each
 * checkpoint and at finish. After the first checkpoint the file on disk
 * stays valid: new compressed bytes wait in memory until the next one.
 */
#include "formats/tachyon/tachyon.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "formats/known_stacks.h"
#include "formats/varint.h"
#include "profile/profile.h"
#include "util/array.h"
#include "util/errbuf.h"
#include "util/fd_write.h"

#define STAGE_SIZE     (64u * 1024u)       /* raw record bytes gathered before compressing */
#define HELD_LIMIT     (32u * 1024u * 1024u) /* held compressed bytes before a self checkpoint */
#define RECORD_BYTES   (13u + 3u * VARINT_MAX_BYTES + 1u + TACHYON_MAX_DEPTH * VARINT_MAX_BYTES)
#define FRAME_KEY_MAX  (2u * VARINT_MAX_BYTES + 4u * VARINT_MAX_BYTES + 1u)
/* Frame ids of stacks written before, at most. */
#define KNOWN_STACKS_MAX_BYTES ((size_t)4 << 20)
/* What the string and frame tables may hold by default (pf_writer_options.tables_max_bytes):
 * a Tachyon file has one of each for the whole run, written at its end, so an entry cannot go
 * when its process exits; past the bound a new frame is written as TABLES_FULL_NAME. */
#define TABLES_MAX_BYTES_DEFAULT ((size_t)32 << 20)
#define TABLES_FULL_NAME "<frames past the output tables' budget>"

struct writer_thread {
	uint64_t tid;
	uint32_t iid;
	uint32_t pid;
	bool restart;  /* its process exited and its stack went: the next record is a full one */
	uint64_t last_ts;
	uint32_t depth;
	/* The last stack written, frame ids innermost first: sized to the deepest one yet, as a
	 * whole-host run keeps every thread it has seen (thousands of short ones). */
	uint32_t *stack;
	size_t stack_capacity;
	uint8_t *repeat;                   /* pending REPEAT pairs: (delta varint, status) */
	size_t repeat_len;
	size_t repeat_capacity;
	uint64_t repeat_count;
};

struct tachyon_writer {
	int fd;
	int level;
	struct intern_table strings;
	struct intern_table frames; /* key = the frame's table entry bytes */
	struct intern_table thread_ids;
	struct writer_thread **threads;
	size_t thread_capacity;

	ZSTD_CCtx *cctx;
	uint8_t *stage;
	size_t stage_len;
	uint8_t *zout;
	size_t zout_size;
	bool frame_open;    /* zstd has been fed since the last frame end */
	bool any_frame;     /* a zstd frame has been written */

	uint64_t data_end;  /* file offset where the next sample bytes belong */
	bool checkpointed;
	uint8_t *held;      /* compressed bytes not yet on disk (after a checkpoint) */
	size_t held_len;
	size_t held_capacity;
	uint64_t file_end;  /* size of the file after the last checkpoint */

	uint8_t python[3];
	uint64_t interval_us;
	uint32_t config;
	bool has_opcodes; /* a frame carried one: the header says so (TACHYON_FEATURE_OPCODES) */
	uint64_t start_time_us;
	bool started;
	double duration_us;
	bool has_duration;
	double error_rate;
	bool has_error_rate;
	double lost_samples;
	bool has_lost_samples;

	size_t tables_max_bytes;  /* strings and frames, past which new frames are tables_full_id */
	int64_t tables_full_id;   /* the frame that stands for them, -1 until needed */
	uint64_t frames_past_budget;

	uint64_t sample_count;
	uint32_t stack[TACHYON_MAX_DEPTH];
	struct known_stacks known_stacks; /* a stack's frame ids, innermost first (the tables only grow) */
	char error[256];
};

static int pwrite_all(struct tachyon_writer *w, const void *data, size_t len, uint64_t offset)
{
	int err = fd_pwrite_all(w->fd, data, len, offset);

	if (err)
		return errbuf_format(w->error, sizeof(w->error), err,
				     "write at byte %" PRIu64 " failed: %s", offset,
				     strerror(-err));
	return 0;
}

/* Compressed (or raw, without compression) sample bytes go to disk until the first checkpoint. */
static int sink(struct tachyon_writer *w, const uint8_t *data, size_t len)
{
	int err;

	if (!len)
		return 0;
	if (!w->checkpointed) {
		err = pwrite_all(w, data, len, w->data_end);
		if (!err)
			w->data_end += len;
		return err;
	}
	if (array_reserve((void **)&w->held, &w->held_capacity, w->held_len + len, 1, 256))
		return errbuf_format(w->error, sizeof(w->error), -ENOMEM,
				     "out of memory holding %zu bytes of samples",
				     w->held_len + len);
	memcpy(w->held + w->held_len, data, len);
	w->held_len += len;
	return 0;
}

static int compress_stage(struct tachyon_writer *w, ZSTD_EndDirective mode)
{
	ZSTD_inBuffer input = { w->stage, w->stage_len, 0 };
	size_t remaining;
	int err;

	do {
		ZSTD_outBuffer output = { w->zout, w->zout_size, 0 };

		remaining = ZSTD_compressStream2(w->cctx, &output, &input, mode);
		if (ZSTD_isError(remaining))
			return errbuf_format(w->error, sizeof(w->error), -EIO,
					     "zstd compression failed: %s",
					     ZSTD_getErrorName(remaining));
		err = sink(w, w->zout, output.pos);
		if (err)
			return err;
	} while (mode == ZSTD_e_end ? remaining != 0 : input.pos < input.size);
	return 0;
}

static int flush_stage(struct tachyon_writer *w, bool end_frame)
{
	int err = 0;

	if (!w->cctx) {
		err = sink(w, w->stage, w->stage_len);
	} else {
		/*
		 * Data always goes in with e_continue and the frame is ended
		 * separately: zstd then tunes for a stream of unknown size,
		 * as with CPython's writer, which compresses better here.
		 */
		if (w->stage_len)
			err = compress_stage(w, ZSTD_e_continue);
		w->stage_len = 0;
		if (!err && end_frame && w->frame_open) {
			err = compress_stage(w, ZSTD_e_end);
			w->frame_open = false;
			w->any_frame = true;
		}
	}
	if (!err)
		w->stage_len = 0;
	return err;
}

static int emit(struct tachyon_writer *w, const uint8_t *data, size_t len)
{
	int err;

	if (w->stage_len + len > STAGE_SIZE) {
		err = flush_stage(w, false);
		if (err)
			return err;
	}
	while (len > STAGE_SIZE) {
		/* A big REPEAT group: hand it over in stage-sized pieces. */
		memcpy(w->stage, data, STAGE_SIZE);
		w->stage_len = STAGE_SIZE;
		data += STAGE_SIZE;
		len -= STAGE_SIZE;
		err = flush_stage(w, false);
		if (err)
			return err;
	}
	memcpy(w->stage + w->stage_len, data, len);
	w->stage_len += len;
	if (w->cctx)
		w->frame_open = true;
	return 0;
}

static size_t put_thread_head(uint8_t *out, const struct writer_thread *t, uint8_t encoding)
{
	memcpy(out, &t->tid, 8);
	memcpy(out + 8, &t->iid, 4);
	out[12] = encoding;
	return 13;
}

static int flush_repeat(struct tachyon_writer *w, struct writer_thread *t)
{
	uint8_t head[13 + VARINT_MAX_BYTES];
	size_t n;
	int err;

	if (!t->repeat_count)
		return 0;
	n = put_thread_head(head, t, TACHYON_ENC_REPEAT);
	n += varint_leb128_encode(t->repeat_count, head + n);
	err = emit(w, head, n);
	if (!err)
		err = emit(w, t->repeat, t->repeat_len);
	t->repeat_len = 0;
	t->repeat_count = 0;
	return err;
}

static int flush_all_repeats(struct tachyon_writer *w)
{
	for (size_t i = 0; i < intern_count(&w->thread_ids); i++) {
		int err = flush_repeat(w, w->threads[i]);

		if (err)
			return err;
	}
	return 0;
}

static size_t leb128_size(uint64_t value)
{
	size_t n = 1;

	while (value >= 0x80) {
		value >>= 7;
		n++;
	}
	return n;
}

static size_t frames_size(const uint32_t *ids, uint32_t count)
{
	size_t size = 0;

	for (uint32_t i = 0; i < count; i++)
		size += leb128_size(ids[i]);
	return size;
}

/* Frames shared at the bottom (root side) of the previous and the new stack. */
static uint32_t common_suffix(const struct writer_thread *t, const uint32_t *stack, uint32_t depth)
{
	uint32_t shared = 0;

	while (shared < t->depth && shared < depth &&
	       t->stack[t->depth - 1 - shared] == stack[depth - 1 - shared])
		shared++;
	return shared;
}

/* CPython 3.15's choice, which zstd has seen most of; the caller improves on it. */
static uint8_t cpython_encoding(uint32_t prev_depth, uint32_t shared, uint32_t depth)
{
	if (shared == 0)
		return TACHYON_ENC_FULL;
	if (shared == prev_depth && depth > prev_depth)
		return TACHYON_ENC_SUFFIX;
	return shared < depth / 2 ? TACHYON_ENC_FULL : TACHYON_ENC_POP_PUSH;
}

/*
 * CPython's encoding unless another one is strictly smaller: never larger
 * than CPython's records, and identical to them when nothing is gained, so
 * the compressor sees the same regular patterns.
 */
static int write_stack_record(struct tachyon_writer *w, struct writer_thread *t, bool first,
			      uint64_t delta, uint8_t status, const uint32_t *stack, uint32_t depth)
{
	uint8_t record[RECORD_BYTES];
	uint32_t shared = first ? 0 : common_suffix(t, stack, depth);
	uint32_t fresh = depth - shared;
	size_t fresh_size = frames_size(stack, fresh);
	size_t sizes[4];
	uint8_t encoding = first ? TACHYON_ENC_FULL : cpython_encoding(t->depth, shared, depth);
	size_t n;

	sizes[TACHYON_ENC_FULL] = leb128_size(depth) + frames_size(stack, depth);
	sizes[TACHYON_ENC_SUFFIX] = leb128_size(shared) + leb128_size(fresh) + fresh_size;
	sizes[TACHYON_ENC_POP_PUSH] = leb128_size(t->depth - shared) + leb128_size(fresh) + fresh_size;
	for (uint8_t e = TACHYON_ENC_FULL; !first && e <= TACHYON_ENC_POP_PUSH; e++)
		if (sizes[e] < sizes[encoding])
			encoding = e;
	n = put_thread_head(record, t, encoding);
	n += varint_leb128_encode(delta, record + n);
	record[n++] = status;
	if (encoding == TACHYON_ENC_FULL) {
		fresh = depth;
		n += varint_leb128_encode(depth, record + n);
	} else {
		n += varint_leb128_encode(encoding == TACHYON_ENC_SUFFIX ? shared : t->depth - shared,
				   record + n);
		n += varint_leb128_encode(fresh, record + n);
	}
	for (uint32_t i = 0; i < fresh; i++)
		n += varint_leb128_encode(stack[i], record + n);
	return emit(w, record, n);
}

static int add_repeat(struct tachyon_writer *w, struct writer_thread *t, uint64_t delta,
		      uint8_t status)
{
	if (array_reserve((void **)&t->repeat, &t->repeat_capacity,
			  t->repeat_len + VARINT_MAX_BYTES + 1, 1, 256))
		return errbuf_format(w->error, sizeof(w->error), -ENOMEM,
				     "out of memory for a REPEAT group");
	t->repeat_len += varint_leb128_encode(delta, t->repeat + t->repeat_len);
	t->repeat[t->repeat_len++] = status;
	t->repeat_count++;
	return t->repeat_len >= TACHYON_REPEAT_FLUSH ? flush_repeat(w, t) : 0;
}

static int64_t intern_string(struct tachyon_writer *w, const char *text)
{
	bool is_new;
	int64_t id = intern_add(&w->strings, text, strlen(text), &is_new);

	if (id < 0)
		return errbuf_format(w->error, sizeof(w->error), (int)id,
				     "out of memory interning strings");
	if (id > UINT32_MAX)
		return errbuf_format(w->error, sizeof(w->error), -EOVERFLOW,
				     "more than 2^32 distinct strings");
	return id;
}

static bool tables_full(const struct tachyon_writer *w)
{
	return intern_held_bytes(&w->strings) + intern_held_bytes(&w->frames) > w->tables_max_bytes;
}

/* The one frame every frame new past the tables' bound is written as (interned past it). */
static int64_t frame_past_budget(struct tachyon_writer *w)
{
	uint8_t key[FRAME_KEY_MAX];
	int64_t file_id, name_id;
	bool is_new;
	size_t n = 0;

	w->frames_past_budget++;
	if (w->tables_full_id >= 0)
		return w->tables_full_id;
	file_id = intern_string(w, TACHYON_MARKER_FILE);
	name_id = file_id < 0 ? file_id : intern_string(w, TABLES_FULL_NAME);
	if (name_id < 0)
		return name_id;
	n += varint_leb128_encode((uint64_t)file_id, key + n);
	n += varint_leb128_encode((uint64_t)name_id, key + n);
	n += varint_zigzag_encode(-1, key + n);
	n += varint_zigzag_encode(0, key + n);
	n += varint_zigzag_encode(-1, key + n);
	n += varint_zigzag_encode(0, key + n);
	key[n++] = TACHYON_OPCODE_NONE;
	w->tables_full_id = intern_add(&w->frames, key, n, &is_new);
	if (w->tables_full_id < 0)
		return errbuf_format(w->error, sizeof(w->error), (int)w->tables_full_id,
				     "out of memory interning frames");
	return w->tables_full_id;
}

static int64_t intern_frame(struct tachyon_writer *w, const struct pf_frame *frame)
{
	char native_file[PATH_MAX + sizeof(PF_NATIVE_FILE_PREFIX)];
	/* A file without a frame kind: the prefix tells readers (ours) a native frame. */
	const char *file = pf_native_file_stored(frame, native_file, sizeof(native_file));
	const char *name = frame->name ? frame->name : "";
	int32_t line = frame->line, end_line = frame->end_line;
	int32_t column = frame->column, end_column = frame->end_column;
	uint8_t opcode = frame->opcode >= 0 && frame->opcode < 255 ? (uint8_t)frame->opcode
								   : TACHYON_OPCODE_NONE;
	uint8_t key[FRAME_KEY_MAX];
	int64_t file_id, name_id, id;
	size_t n = 0;
	bool is_new;

	if (frame->kind == PF_FRAME_KERNEL || frame->kind == PF_FRAME_INVALID) {
		file = frame->kind == PF_FRAME_KERNEL ? TACHYON_KERNEL_FILE : TACHYON_MARKER_FILE;
		name = frame->kind == PF_FRAME_KERNEL ? name : TACHYON_TRUNCATED_NAME;
		line = end_line = column = end_column = -1;
		opcode = TACHYON_OPCODE_NONE;
	}
	if (line < 0)
		line = -1;
	if (column < 0)
		column = -1;
	if (tables_full(w)) {
		file_id = intern_find(&w->strings, file, strlen(file));
		name_id = intern_find(&w->strings, name, strlen(name));
		if (file_id < 0 || name_id < 0)
			return frame_past_budget(w);
	} else {
		file_id = intern_string(w, file);
		if (file_id < 0)
			return file_id;
		name_id = intern_string(w, name);
		if (name_id < 0)
			return name_id;
	}
	n += varint_leb128_encode((uint64_t)file_id, key + n);
	n += varint_leb128_encode((uint64_t)name_id, key + n);
	n += varint_zigzag_encode(line, key + n);
	n += varint_zigzag_encode(line == -1 || end_line < 0 ? 0 : (int64_t)end_line - line,
				  key + n);
	n += varint_zigzag_encode(column, key + n);
	n += varint_zigzag_encode(column == -1 || end_column < 0 ? 0 : (int64_t)end_column - column,
			   key + n);
	key[n++] = opcode;
	/* CPython's readers show opcodes only from a file that says it has them */
	w->has_opcodes |= opcode != TACHYON_OPCODE_NONE;
	if (tables_full(w)) {
		id = intern_find(&w->frames, key, n);
		return id >= 0 ? id : frame_past_budget(w);
	}
	id = intern_add(&w->frames, key, n, &is_new);
	if (id < 0)
		return errbuf_format(w->error, sizeof(w->error), (int)id,
				     "out of memory interning frames");
	if (id > UINT32_MAX)
		return errbuf_format(w->error, sizeof(w->error), -EOVERFLOW,
				     "more than 2^32 distinct frames");
	return id;
}

static int find_thread(struct tachyon_writer *w, uint64_t tid, uint32_t iid, uint32_t pid,
		       struct writer_thread **thread, bool *first)
{
	uint8_t key[12];
	int64_t id;

	memcpy(key, &tid, 8);
	memcpy(key + 8, &iid, 4);
	if (array_reserve((void **)&w->threads, &w->thread_capacity,
			  intern_count(&w->thread_ids) + 1, sizeof(*w->threads), 8))
		return errbuf_format(w->error, sizeof(w->error), -ENOMEM,
				     "out of memory for threads");
	id = intern_add(&w->thread_ids, key, sizeof(key), first);
	if (id < 0)
		return errbuf_format(w->error, sizeof(w->error), (int)id,
				     "out of memory for threads");
	if (id >= UINT32_MAX)
		return errbuf_format(w->error, sizeof(w->error), -EOVERFLOW, "too many threads");
	if (*first) {
		/* Set before anything can fail so destroy() frees only real pointers. */
		w->threads[id] = calloc(1, sizeof(**w->threads));
		if (!w->threads[id])
			return errbuf_format(w->error, sizeof(w->error), -ENOMEM,
					     "out of memory for threads");
		w->threads[id]->tid = tid;
		w->threads[id]->iid = iid;
		w->threads[id]->pid = pid;
		w->threads[id]->last_ts = w->start_time_us;
	}
	*thread = w->threads[id];
	return 0;
}

static bool same_stack(const struct writer_thread *t, const uint32_t *stack, uint32_t depth)
{
	return t->depth == depth && (depth == 0 || !memcmp(t->stack, stack, depth * sizeof(*stack)));
}

static int checkpoint(struct tachyon_writer *w);

/* Tachyon has no GC status bit: CPython marks a sample taken while its GC runs with a "~" "<GC>"
 * leaf frame. A sample read from such a file has that frame already. */
static bool needs_gc_frame(const struct pf_sample *sample)
{
	const struct pf_frame *leaf = sample->frame_count ? &sample->frames[sample->frame_count - 1] : NULL;

	if (!(sample->status & PF_STATUS_GC))
		return false;
	return !leaf || strcmp(leaf->file, TACHYON_MARKER_FILE) || strcmp(leaf->name, TACHYON_GC_NAME);
}

/* The frame ids of a stack written before, or NULL. */
static const uint32_t *known_ids(struct tachyon_writer *w, uint64_t stack_id, uint32_t count)
{
	size_t len = 0;
	const uint32_t *ids = known_stacks_find(&w->known_stacks, stack_id, 0, &len);

	return ids && len == count * sizeof(*ids) ? ids : NULL;
}

/* Keeps a stack's frame ids for its next samples (nothing is kept when memory is short). */
static void remember_ids(struct tachyon_writer *w, uint64_t stack_id, const uint32_t *ids, uint32_t count)
{
	uint32_t *kept = known_stacks_put(&w->known_stacks, stack_id, 0, count * sizeof(*ids));

	if (kept)
		memcpy(kept, ids, count * sizeof(*ids));
}

/* ids[count]: the frame ids of the sample's innermost count frames, innermost first, interned
 * (CPython keeps the innermost 256). A stack written before has them already. */
static int intern_stack(struct tachyon_writer *w, const struct pf_sample *sample, uint32_t *ids, uint32_t count)
{
	const uint32_t *known = known_ids(w, sample->stack_id, count);

	if (known) {
		memcpy(ids, known, count * sizeof(*ids));
		return 0;
	}
	for (uint32_t i = 0; i < count; i++) {
		int64_t id = intern_frame(w, &sample->frames[sample->frame_count - 1 - i]);

		if (id < 0)
			return (int)id;
		ids[i] = (uint32_t)id;
	}
	remember_ids(w, sample->stack_id, ids, count);
	return 0;
}

static int writer_add_sample(void *state, const struct pf_sample *sample)
{
	struct tachyon_writer *w = state;
	uint32_t extra = needs_gc_frame(sample) ? 1 : 0;
	uint32_t depth = sample->frame_count + extra > TACHYON_MAX_DEPTH ? TACHYON_MAX_DEPTH
									 : (uint32_t)sample->frame_count + extra;
	uint8_t status = (uint8_t)(sample->status & PF_STATUS_TACHYON_MASK);
	struct writer_thread *t = NULL;
	uint64_t delta;
	bool first = false;
	int err;

	if (!w->started) {
		w->start_time_us = sample->timestamp_us;
		w->started = true;
	}
	if (extra) {
		struct pf_frame gc = pf_frame_unlocated(PF_FRAME_PYTHON, TACHYON_MARKER_FILE, TACHYON_GC_NAME);
		int64_t id = intern_frame(w, &gc);

		if (id < 0)
			return (int)id;
		w->stack[0] = (uint32_t)id;
	}
	err = intern_stack(w, sample, w->stack + extra, depth - extra);
	if (err)
		return err;
	err = find_thread(w, sample->tid, sample->iid, sample->pid, &t, &first);
	if (err)
		return err;
	/* (a tid reused by another process, or a late sample of a forgotten thread) */
	t->pid = sample->pid;
	first |= t->restart;
	t->restart = false;
	delta = sample->timestamp_us > t->last_ts ? sample->timestamp_us - t->last_ts : 0;
	/* What the reader will reconstruct, so later deltas add up. */
	t->last_ts += delta;
	if (!first && same_stack(t, w->stack, depth)) {
		err = add_repeat(w, t, delta, status);
	} else {
		/* Room for the stack first: a record written whose stack is not kept would spoil the
		 * thread's next delta. */
		if (ARRAY_RESERVE(t->stack, t->stack_capacity, depth))
			return errbuf_format(w->error, sizeof(w->error), -ENOMEM, "out of memory for a thread's stack");
		err = flush_repeat(w, t);
		if (!err)
			err = write_stack_record(w, t, first, delta, status, w->stack, depth);
		if (!err) {
			if (depth)
				memcpy(t->stack, w->stack, depth * sizeof(*w->stack));
			t->depth = depth;
		}
	}
	/* A thinned target's sample stands for several: the same stack again, at the same time. */
	for (uint32_t more = 1; !err && more < sample->samples; more++)
		err = add_repeat(w, t, 0, status);
	if (err)
		return err;
	w->sample_count += sample->samples ? sample->samples : 1;
	if (w->held_len > HELD_LIMIT)
		return checkpoint(w);
	return 0;
}

/*
 * The process exited: its threads' last stacks and pending repeats go (the repeats written
 * first). A thread keeps its id and timestamp, which the reader keeps too: if the tid comes
 * back its next record is a full one, its times still adding up. The tables stay (samples
 * written refer to them); tables_max_bytes bounds them.
 */
static int writer_forget_pid(void *state, uint32_t pid)
{
	struct tachyon_writer *w = state;

	for (size_t i = 0; i < intern_count(&w->thread_ids); i++) {
		struct writer_thread *t = w->threads[i];
		int err;

		if (t->pid != pid || t->restart)
			continue;
		err = flush_repeat(w, t);
		if (err)
			return err;
		free(t->stack);
		free(t->repeat);
		t->stack = NULL;
		t->repeat = NULL;
		t->stack_capacity = t->repeat_capacity = 0;
		t->depth = 0;
		t->restart = true;
	}
	return 0;
}

/* Buffered sequential pwrite for the tables; measure_only counts the bytes, writes nothing. */
struct table_out {
	struct tachyon_writer *w;
	uint64_t offset;
	uint8_t buf[64 * 1024];
	size_t len;
	int err;
	bool measure_only;
};

static void out_flush(struct table_out *out)
{
	if (!out->measure_only && !out->err && out->len)
		out->err = pwrite_all(out->w, out->buf, out->len, out->offset);
	out->offset += out->len;
	out->len = 0;
}

static void out_put(struct table_out *out, const void *data, size_t len)
{
	const uint8_t *p = data;

	while (len && !out->err) {
		size_t room = sizeof(out->buf) - out->len;
		size_t take = len < room ? len : room;

		memcpy(out->buf + out->len, p, take);
		out->len += take;
		p += take;
		len -= take;
		if (out->len == sizeof(out->buf))
			out_flush(out);
	}
}

static void out_u32(struct table_out *out, uint32_t value)
{
	out_put(out, &value, sizeof(value));
}

static void out_u64(struct table_out *out, uint64_t value)
{
	out_put(out, &value, sizeof(value));
}

static void out_double(struct table_out *out, double value)
{
	out_put(out, &value, sizeof(value));
}

static void write_strings(struct table_out *out, const struct intern_table *strings)
{
	for (size_t i = 0; i < intern_count(strings); i++) {
		uint8_t len_bytes[VARINT_MAX_BYTES];
		size_t len;
		const void *text = intern_key(strings, (uint32_t)i, &len);

		out_put(out, len_bytes, varint_leb128_encode(len, len_bytes));
		out_put(out, text, len);
	}
}

static void write_frames(struct table_out *out, const struct intern_table *frames)
{
	for (size_t i = 0; i < intern_count(frames); i++) {
		size_t len;
		const void *entry = intern_key(frames, (uint32_t)i, &len);

		out_put(out, entry, len);
	}
}

static void write_stats(struct table_out *out, const struct tachyon_writer *w)
{
	double duration_sec = w->duration_us / 1e6;
	uint32_t present = (w->has_error_rate ? TACHYON_STATS_HAS_ERROR_RATE : 0) |
			   (w->has_lost_samples ? TACHYON_STATS_HAS_MISSED : 0);

	out_double(out, duration_sec);
	out_double(out, duration_sec > 0 ? (double)w->sample_count / duration_sec : 0);
	out_double(out, w->has_error_rate ? w->error_rate : 0);
	out_double(out, w->has_lost_samples ? w->lost_samples : 0);
	out_u32(out, present);
	out_u32(out, 0);
	out_put(out, TACHYON_STATS_MAGIC, 8);
	out_u32(out, TACHYON_STATS_VERSION);
	out_u32(out, TACHYON_STATS_SIZE);
}

static void put_u32(uint8_t *at, uint32_t value)
{
	memcpy(at, &value, sizeof(value));
}

static void put_u64(uint8_t *at, uint64_t value)
{
	memcpy(at, &value, sizeof(value));
}

static int write_header(struct tachyon_writer *w, uint64_t string_offset, uint64_t frame_offset)
{
	uint8_t header[TACHYON_HEADER_SIZE] = { 0 };

	put_u32(header + TACHYON_OFF_MAGIC, TACHYON_MAGIC);
	put_u32(header + TACHYON_OFF_VERSION, TACHYON_VERSION);
	memcpy(header + TACHYON_OFF_PYTHON, w->python, 3);
	put_u64(header + TACHYON_OFF_START, w->start_time_us);
	put_u64(header + TACHYON_OFF_INTERVAL, w->interval_us);
	put_u64(header + TACHYON_OFF_SAMPLES, w->sample_count);
	put_u32(header + TACHYON_OFF_THREADS, (uint32_t)intern_count(&w->thread_ids));
	put_u64(header + TACHYON_OFF_STRINGS, string_offset);
	put_u64(header + TACHYON_OFF_FRAMES, frame_offset);
	put_u32(header + TACHYON_OFF_COMPRESSION,
		w->cctx ? TACHYON_COMPRESSION_ZSTD : TACHYON_COMPRESSION_NONE);
	put_u32(header + TACHYON_OFF_CONFIG,
		w->has_opcodes ? w->config | TACHYON_CONFIG_FEATURES_FLAG |
					 TACHYON_FEATURE_OPCODES << TACHYON_CONFIG_FEATURES_SHIFT
			       : w->config);
	return pwrite_all(w, header, sizeof(header), 0);
}

/* The string and frame tables, the stats and the footer from out->offset; the frame table's offset. */
static uint64_t write_tables(struct table_out *out, const struct tachyon_writer *w)
{
	uint64_t frame_offset;

	write_strings(out, &w->strings);
	out_flush(out);
	frame_offset = out->offset;
	write_frames(out, &w->frames);
	if (w->has_duration)
		write_stats(out, w);
	out_u32(out, (uint32_t)intern_count(&w->strings));
	out_u32(out, (uint32_t)intern_count(&w->frames));
	/* The file size: this field's offset in the footer onwards is what remains. */
	out_u64(out, out->offset + out->len + TACHYON_FOOTER_SIZE - TACHYON_FOOTER_OFF_FILE_SIZE);
	out_put(out, (uint8_t[TACHYON_FOOTER_SIZE - TACHYON_FOOTER_OFF_RESERVED]){ 0 },
		TACHYON_FOOTER_SIZE - TACHYON_FOOTER_OFF_RESERVED);
	out_flush(out);
	return frame_offset;
}

/*
 * A checkpoint writes the held samples over the previous tables: once the file is
 * valid, the disk space for the whole new end (held samples, tables, footer) is taken
 * first, so that a full disk fails the checkpoint before it touches the file and the
 * previous checkpoint stays readable. A file system that cannot reserve goes on as before.
 */
static int reserve_checkpoint(struct tachyon_writer *w, struct table_out *out)
{
	uint64_t end;

	if (!w->checkpointed)
		return 0;
	out->measure_only = true;
	out->offset = w->data_end + w->held_len;
	write_tables(out, w);
	end = out->offset;
	out->measure_only = false;
	if (end > w->file_end && fallocate(w->fd, FALLOC_FL_KEEP_SIZE, (off_t)w->file_end,
					   (off_t)(end - w->file_end)) < 0 &&
	    errno != EOPNOTSUPP && errno != ENOSYS)
		return errbuf_format(w->error, sizeof(w->error), -errno,
				     "no room for %" PRIu64 " more bytes: %s (the file keeps the samples of its last checkpoint)",
				     end - w->file_end, strerror(errno));
	return 0;
}

/* Make the file on disk complete; sampling may continue afterwards. */
static int checkpoint(struct tachyon_writer *w)
{
	struct table_out *out;
	uint64_t frame_offset, end;
	int err = flush_all_repeats(w);

	/* Without any frame the reader would see no data; CPython always writes one. */
	if (!err && w->cctx && !w->any_frame)
		w->frame_open = true;
	if (!err)
		err = flush_stage(w, true);
	if (err)
		return err;
	out = calloc(1, sizeof(*out));
	if (!out)
		return errbuf_format(w->error, sizeof(w->error), -ENOMEM,
				     "out of memory writing the tables");
	out->w = w;
	err = reserve_checkpoint(w, out);
	if (!err && w->held_len)
		err = pwrite_all(w, w->held, w->held_len, w->data_end);
	if (err) {
		free(out);
		return err;
	}
	w->data_end += w->held_len;
	w->held_len = 0;
	w->checkpointed = true;

	out->offset = w->data_end;
	frame_offset = write_tables(out, w);
	err = out->err;
	end = out->offset;
	free(out);
	if (!err)
		err = write_header(w, w->data_end, frame_offset);
	/* Earlier checkpoints never end later than this one, but a reused fd might. */
	if (!err && w->file_end > end && ftruncate(w->fd, (off_t)end) < 0)
		err = errbuf_format(w->error, sizeof(w->error), -errno,
				    "cannot truncate the file: %s", strerror(errno));
	if (!err)
		w->file_end = end;
	return err;
}

static int writer_flush(void *state)
{
	return checkpoint(state);
}

static int writer_finish(void *state)
{
	return checkpoint(state);
}

static int parse_u64(const char *text, uint64_t *value)
{
	char *end;

	errno = 0;
	*value = strtoull(text, &end, 10);
	return errno || end == text || *end || *text == '-' ? -EINVAL : 0;
}

static int parse_double(const char *text, double *value)
{
	char *end;

	errno = 0;
	*value = strtod(text, &end);
	return errno || end == text || *end || !isfinite(*value) ? -EINVAL : 0;
}

static int parse_python(struct tachyon_writer *w, const char *text)
{
	unsigned long parts[3] = { 0, 0, 0 };
	const char *p = text;

	for (int i = 0; i < 3 && *p; i++) {
		char *end;

		if (*p < '0' || *p > '9')
			return -EINVAL;
		parts[i] = strtoul(p, &end, 10);
		if (parts[i] > 255)
			return -EINVAL;
		p = end;
		if (*p == '.')
			p++;
		else
			break;
	}
	for (int i = 0; i < 3; i++)
		w->python[i] = (uint8_t)parts[i];
	return 0;
}

static uint32_t mode_bits(const char *text)
{
	for (uint32_t i = 0; i < TACHYON_MODE_COUNT; i++)
		if (!strcmp(text, tachyon_mode_names[i]))
			return i + 1;
	return 0;
}

static uint32_t feature_bits(const char *text)
{
	uint32_t bits = 0;

	for (size_t i = 0; i < TACHYON_FEATURE_COUNT; i++) {
		const char *name = tachyon_feature_names[i];
		size_t len = strlen(name);
		const char *at = text;

		while ((at = strstr(at, name))) {
			if ((at == text || at[-1] == ',') && (at[len] == 0 || at[len] == ','))
				bits |= 1u << i;
			at += len;
		}
	}
	return bits;
}

/* Deltas already written are relative to the first start time. */
static void set_start_time(struct tachyon_writer *w, uint64_t start_time_us)
{
	if (w->started)
		return;
	w->start_time_us = start_time_us;
	w->started = true;
}

static void set_mode(struct tachyon_writer *w, const char *mode)
{
	w->config = (w->config & ~TACHYON_CONFIG_MODE_MASK) | mode_bits(mode);
}

static int writer_set_run_info(void *state, const struct pf_run_info *info)
{
	struct tachyon_writer *w = state;

	w->interval_us = info->interval_us;
	/* Tachyon has a gil mode of its own, which Austin's "mode" cannot say */
	set_mode(w, info->own_mode && mode_bits(info->own_mode) ? info->own_mode : info->mode);
	set_start_time(w, info->start_time_us);
	return 0;
}

static int writer_set_python_version(void *state, const struct pf_python_version *version)
{
	struct tachyon_writer *w = state;

	w->python[0] = version->major;
	w->python[1] = version->minor;
	w->python[2] = version->micro;
	return 0;
}

static int writer_set_run_totals(void *state, const struct pf_run_totals *totals)
{
	struct tachyon_writer *w = state;

	w->duration_us = (double)totals->duration_us;
	w->has_duration = true;
	w->lost_samples = (double)totals->lost_samples;
	w->has_lost_samples = true;
	if (totals->samples) {
		w->error_rate = pf_run_totals_error_rate(totals);
		w->has_error_rate = true;
	}
	return 0;
}

/* Metadata as text: what a converted file carried (a recording sets the typed run info). */
static int writer_set_metadata(void *state, const char *key, const char *value)
{
	struct tachyon_writer *w = state;
	uint64_t number;
	int err = 0;

	if (!strcmp(key, "python")) {
		err = parse_python(w, value);
	} else if (!strcmp(key, "interval")) {
		err = parse_u64(value, &w->interval_us);
	} else if (!strcmp(key, "mode") || (!strcmp(key, "pybpfprof_mode") && mode_bits(value))) {
		set_mode(w, value);
	} else if (!strcmp(key, "features")) {
		w->config = (w->config & TACHYON_CONFIG_MODE_MASK) | TACHYON_CONFIG_FEATURES_FLAG |
			    feature_bits(value) << TACHYON_CONFIG_FEATURES_SHIFT;
	} else if (!strcmp(key, "start_time_us")) {
		err = parse_u64(value, &number);
		if (!err)
			set_start_time(w, number);
	} else if (!strcmp(key, "duration")) {
		err = parse_double(value, &w->duration_us);
		w->has_duration = !err && w->duration_us >= 0;
	} else if (!strcmp(key, "error_rate")) {
		err = parse_double(value, &w->error_rate);
		w->has_error_rate = !err && w->error_rate >= 0;
	} else if (!strcmp(key, "lost_samples")) {
		err = parse_double(value, &w->lost_samples);
		w->has_lost_samples = !err;
	}
	if (err)
		return errbuf_format(w->error, sizeof(w->error), err,
				     "bad value for metadata %s: \"%s\"", key, value);
	return 0;
}

static void writer_destroy(void *state)
{
	struct tachyon_writer *w = state;

	if (!w)
		return;
	for (size_t i = 0; i < intern_count(&w->thread_ids); i++) {
		if (w->threads[i]) {
			free(w->threads[i]->repeat);
			free(w->threads[i]->stack);
		}
		free(w->threads[i]);
	}
	free(w->threads);
	intern_free(&w->thread_ids);
	intern_free(&w->strings);
	intern_free(&w->frames);
	known_stacks_free(&w->known_stacks);
	ZSTD_freeCCtx(w->cctx);
	free(w->stage);
	free(w->zout);
	free(w->held);
	free(w);
}

static const char *writer_error(const void *state)
{
	return ((const struct tachyon_writer *)state)->error;
}

/*
 * What the file's tables hold: a Tachyon file has one string and one frame table for the whole
 * run, written at its end, so every distinct frame of every process seen stays until then.
 */
static size_t writer_held_bytes(const void *state)
{
	const struct tachyon_writer *w = state;
	size_t bytes = intern_held_bytes(&w->strings) + intern_held_bytes(&w->frames) +
		       intern_held_bytes(&w->thread_ids) + w->thread_capacity * sizeof(*w->threads) +
		       known_stacks_held_bytes(&w->known_stacks);

	for (size_t i = 0; i < intern_count(&w->thread_ids); i++)
		if (w->threads[i])
			bytes += sizeof(*w->threads[i]) + w->threads[i]->stack_capacity * sizeof(uint32_t) +
				 w->threads[i]->repeat_capacity;
	return bytes;
}

static uint64_t writer_frames_past_budget(const void *state)
{
	return ((const struct tachyon_writer *)state)->frames_past_budget;
}

static const struct pf_writer_ops tachyon_writer_ops = {
	.held_bytes = writer_held_bytes,
	.forget_pid = writer_forget_pid,
	.frames_past_budget = writer_frames_past_budget,
	.set_metadata = writer_set_metadata,
	.set_run_info = writer_set_run_info,
	.set_python_version = writer_set_python_version,
	.set_run_totals = writer_set_run_totals,
	.add_sample = writer_add_sample,
	.flush = writer_flush,
	.finish = writer_finish,
	.destroy = writer_destroy,
	.error = writer_error,
};

static int setup_compression(struct tachyon_writer *w)
{
	size_t ret;

	w->cctx = ZSTD_createCCtx();
	w->zout_size = ZSTD_CStreamOutSize();
	w->zout = malloc(w->zout_size);
	if (!w->cctx || !w->zout)
		return -ENOMEM;
	ret = ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, w->level);
	return ZSTD_isError(ret) ? -EINVAL : 0;
}

int tachyon_writer_create(int fd, const struct pf_writer_options *options, void **state,
			  const struct pf_writer_ops **ops)
{
	struct tachyon_writer *w = calloc(1, sizeof(*w));
	static const uint8_t zeros[TACHYON_HEADER_SIZE];
	int err = 0;

	if (!w)
		return -ENOMEM;
	intern_init(&w->strings);
	intern_init(&w->frames);
	intern_init(&w->thread_ids);
	known_stacks_init(&w->known_stacks, KNOWN_STACKS_MAX_BYTES);
	w->fd = fd;
	w->level = options ? options->compression_level : PF_COMPRESSION_LEVEL_DEFAULT;
	w->tables_max_bytes = options && options->tables_max_bytes ? options->tables_max_bytes
								   : TABLES_MAX_BYTES_DEFAULT;
	w->tables_full_id = -1;
	if (w->level < 0 || w->level > ZSTD_maxCLevel()) {
		writer_destroy(w);
		return -EINVAL;
	}
	w->stage = malloc(STAGE_SIZE);
	if (!w->stage)
		err = -ENOMEM;
	if (!err && w->level > 0)
		err = setup_compression(w);
	/* The header is a placeholder until the first checkpoint. */
	if (!err)
		err = pwrite_all(w, zeros, sizeof(zeros), 0);
	if (err) {
		writer_destroy(w);
		return err;
	}
	w->data_end = TACHYON_HEADER_SIZE;
	*state = w;
	*ops = &tachyon_writer_ops;
	return 0;
}
