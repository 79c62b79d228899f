// SPDX-License-Identifier: MIT
/*
 * MOJO writer: streams samples as Austin 3.7 would, but with dense per-pid
 * keys (1-2 byte references instead of Austin's 4-byte masked pointers).
 */
#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/known_stacks.h"
#include "formats/mojo/mojo.h"
#include "formats/varint.h"
#include "profile/profile.h"
#include "util/array.h"
#include "util/clock.h"
#include "util/errbuf.h"
#include "util/fd_write.h"
#include "util/hash.h"
#include "util/intern.h"
#include "util/text_quote.h"

#define WRITE_BUFFER_SIZE (64u * 1024u)
#define DEFAULT_FLUSH_INTERVAL_MS 1000u
/* Encoded references of stacks written before, at most. */
#define KNOWN_STACKS_MAX_BYTES ((size_t)8 << 20)

enum writer_mode { MODE_CPU, MODE_WALL, MODE_MEMORY, MODE_FULL };

/*
 * Definitions are scoped to a pid, so each pid has its own key space. A reader resolves a
 * reference to the latest definition of its key for the pid of the current STACK, so the
 * tables of an exited pid can go: if the pid comes back (reused, or a late sample), its
 * tables start over and every key is defined again before it is referenced.
 */
struct pid_tables {
	uint32_t pid;
	uint64_t epoch; /* new whenever the tables start (over): what was defined before is not */
	struct intern_table strings;
	struct intern_table frames;
	struct intern_table named_threads; /* tids whose name line is written */
};

struct metadata_pair {
	char *key;
	char *value;
};

/* The identity of a frame definition: two string ids and the location. */
struct frame_identity {
	uint32_t file_id;
	uint32_t name_id;
	int32_t line, end_line, column, end_column;
};

struct frame_ids {
	uint32_t file_id, name_id, frame_id;
};

struct mojo_writer {
	int fd;
	uint8_t *buf;
	size_t len, capacity;
	uint64_t written;
	/* File offsets at the end of the last complete event (sample, metadata): buffered or
	 * not, and of those known to be on disk. A failed write cuts the file back to one. */
	uint64_t complete_end;
	uint64_t complete_on_disk;
	unsigned flush_interval_ms;
	uint64_t last_flush_ms; /* clock_coarse_ms: checked once per sample */

	struct pid_tables **pids;     /* of the pids not forgotten, in no particular order */
	size_t pid_count, pid_capacity;
	struct hash_index pid_index; /* pid -> position in pids */
	struct frame_ids *scratch;
	size_t scratch_capacity;
	uint8_t *refs;                /* one sample's references, encoded */
	size_t refs_capacity;
	struct known_stacks known_stacks; /* a stack's encoded references, in an epoch of its pid's tables */
	uint64_t last_epoch;

	struct metadata_pair *pending; /* metadata set before the first sample */
	size_t pending_count, pending_capacity;
	bool started;
	enum writer_mode mode;

	int failure;
	char error[200];
};

/* Describes the failure and makes it sticky: every later call returns it. */
#define writer_fail(writer, err, ...)                                                       \
	((writer)->failure = errbuf_format((writer)->error, sizeof((writer)->error), (err), \
					   __VA_ARGS__))

/*
 * A write that failed (a full disk) may have stopped inside an event: the file is cut
 * back to the last complete one it holds, so what a reader finds there ends cleanly.
 */
static void cut_to_complete(struct mojo_writer *writer, size_t done)
{
	uint64_t on_disk = writer->written + done;
	uint64_t keep = writer->complete_end <= on_disk ? writer->complete_end : writer->complete_on_disk;

	(void)!ftruncate(writer->fd, (off_t)keep);
}

static int write_out(struct mojo_writer *writer)
{
	size_t done = 0;
	int err = fd_write_all(writer->fd, writer->buf, writer->len, &done);

	if (err) {
		cut_to_complete(writer, done);
		return writer_fail(writer, err, "write error after %llu bytes: %s",
				   (unsigned long long)(writer->written + done), strerror(-err));
	}
	writer->written += done;
	writer->complete_on_disk = writer->complete_end;
	writer->len = 0;
	writer->last_flush_ms = clock_coarse_ms();
	return 0;
}

/* Room for n more bytes: write out what is buffered, grow only for huge events. */
static int reserve(struct mojo_writer *writer, size_t n)
{
	if (writer->len + n <= writer->capacity)
		return 0;
	if (writer->len && write_out(writer))
		return writer->failure;
	if (array_reserve((void **)&writer->buf, &writer->capacity, n, 1, WRITE_BUFFER_SIZE))
		return writer_fail(writer, -ENOMEM, "out of memory");
	return 0;
}

static int put_event(struct mojo_writer *writer, enum mojo_event_id id)
{
	if (reserve(writer, 1))
		return writer->failure;
	writer->buf[writer->len++] = (uint8_t)id;
	return 0;
}

static int put_varint(struct mojo_writer *writer, int64_t value)
{
	if (reserve(writer, VARINT_MAX_BYTES))
		return writer->failure;
	writer->len += varint_mojo_encode(value, writer->buf + writer->len);
	return 0;
}

static int put_uvarint(struct mojo_writer *writer, uint64_t value)
{
	if (reserve(writer, VARINT_MAX_BYTES))
		return writer->failure;
	writer->len += varint_mojo_unsigned_encode(value, writer->buf + writer->len);
	return 0;
}

static int put_bytes(struct mojo_writer *writer, const void *bytes, size_t size)
{
	if (reserve(writer, size))
		return writer->failure;
	memcpy(writer->buf + writer->len, bytes, size);
	writer->len += size;
	return 0;
}

static int put_string(struct mojo_writer *writer, const char *text)
{
	return put_bytes(writer, text, strlen(text) + 1);
}

static int put_metadata(struct mojo_writer *writer, const char *key, const char *value)
{
	if (put_event(writer, MOJO_METADATA) || put_string(writer, key) ||
	    put_string(writer, value))
		return writer->failure;
	return 0;
}

static int parse_mode(const char *value, enum writer_mode *mode)
{
	static const char *const names[] = { "cpu", "wall", "memory", "full" };
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(value, names[i]) == 0) {
			*mode = (enum writer_mode)i;
			return 0;
		}
	}
	return -EINVAL;
}

/* The last value the caller gave for key before the first sample, or NULL. */
static const char *pending_value(const struct mojo_writer *writer, const char *key)
{
	size_t i;

	for (i = writer->pending_count; i > 0; i--)
		if (strcmp(writer->pending[i - 1].key, key) == 0)
			return writer->pending[i - 1].value;
	return NULL;
}

static void free_pending(struct mojo_writer *writer)
{
	size_t i;

	for (i = 0; i < writer->pending_count; i++) {
		free(writer->pending[i].key);
		free(writer->pending[i].value);
	}
	free(writer->pending);
	writer->pending = NULL;
	writer->pending_count = writer->pending_capacity = 0;
}

/* Everything put so far forms whole events. */
static void mark_complete(struct mojo_writer *writer)
{
	writer->complete_end = writer->written + writer->len;
}

/*
 * Austin's readers pick the format from `austin` and the metrics from
 * `mode`, so those (and `interval`, our marker) lead, whatever the caller set.
 */
static int emit_start_metadata(struct mojo_writer *writer)
{
	static const char *const required[][2] = {
		{ "austin", MOJO_AUSTIN_COMPAT_VERSION },
		{ "interval", "1000" },
		{ "mode", "cpu" },
		{ "pybpfprof", "1" },
	};
	size_t i, j;

	for (i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
		const char *value = pending_value(writer, required[i][0]);

		if (put_metadata(writer, required[i][0], value ? value : required[i][1]))
			return writer->failure;
	}
	for (i = 0; i < writer->pending_count; i++) {
		bool is_required = false;

		for (j = 0; j < sizeof(required) / sizeof(required[0]); j++)
			is_required |= strcmp(writer->pending[i].key, required[j][0]) == 0;
		if (!is_required &&
		    put_metadata(writer, writer->pending[i].key, writer->pending[i].value))
			return writer->failure;
	}
	free_pending(writer);
	writer->started = true;
	mark_complete(writer);
	return 0;
}

static int add_pending(struct mojo_writer *writer, const char *key, const char *value)
{
	struct metadata_pair pair;

	if (array_reserve((void **)&writer->pending, &writer->pending_capacity,
			  writer->pending_count + 1, sizeof(*writer->pending), 8))
		return writer_fail(writer, -ENOMEM, "out of memory");
	pair.key = strdup(key);
	pair.value = strdup(value);
	if (!pair.key || !pair.value) {
		free(pair.key);
		free(pair.value);
		return writer_fail(writer, -ENOMEM, "out of memory");
	}
	writer->pending[writer->pending_count++] = pair;
	return 0;
}

static int writer_set_metadata(void *state, const char *key, const char *value)
{
	struct mojo_writer *writer = state;

	if (writer->failure)
		return writer->failure;
	if (!key || !value || !*key)
		return errbuf_format(writer->error, sizeof(writer->error), -EINVAL,
				     "metadata needs a key and a value");
	/* Tachyon's gil mode: Austin has none, and its samples carry wall time like Austin's wall mode. */
	if (strcmp(key, "mode") == 0 && strcmp(value, "gil") == 0) {
		int err = writer_set_metadata(state, "mode", "wall");

		return err ? err : writer_set_metadata(state, "pybpfprof_mode", "gil");
	}
	if (strcmp(key, "mode") == 0) {
		enum writer_mode mode;

		if (parse_mode(value, &mode))
			return errbuf_format(writer->error, sizeof(writer->error), -EINVAL,
					     "unknown MOJO mode \"%s\" (cpu, wall, memory or full)", value);
		/* Samples already written carry the old mode's metrics. */
		if (writer->started && mode != writer->mode)
			return errbuf_format(writer->error, sizeof(writer->error), -EINVAL,
					     "the MOJO mode cannot change after the first sample");
		writer->mode = mode;
	}
	if (!writer->started)
		return add_pending(writer, key, value);
	if (put_metadata(writer, key, value))
		return writer->failure;
	mark_complete(writer);
	return 0;
}

static bool pid_matches(const void *context, uint32_t position, const void *key)
{
	const struct mojo_writer *writer = context;

	return writer->pids[position]->pid == *(const uint32_t *)key;
}

static struct pid_tables *tables_for_pid(struct mojo_writer *writer, uint32_t pid)
{
	uint64_t hash = hash_mix64(pid);
	int64_t found = hash_index_find(&writer->pid_index, hash, pid_matches, writer, &pid);
	struct pid_tables *tables;

	if (found >= 0)
		return writer->pids[found];
	if (ARRAY_RESERVE(writer->pids, writer->pid_capacity, writer->pid_count + 1))
		return NULL;
	tables = calloc(1, sizeof(*tables));
	if (!tables)
		return NULL;
	if (hash_index_insert(&writer->pid_index, hash, (uint32_t)writer->pid_count)) {
		free(tables);
		return NULL;
	}
	tables->pid = pid;
	tables->epoch = ++writer->last_epoch;
	intern_init(&tables->strings);
	intern_init(&tables->frames);
	intern_init(&tables->named_threads);
	writer->pids[writer->pid_count++] = tables;
	return tables;
}

static void free_tables(struct pid_tables *tables)
{
	intern_free(&tables->strings);
	intern_free(&tables->frames);
	intern_free(&tables->named_threads);
	free(tables);
}

/* The pid's tables go; the last pid's take their place in the array. */
static int writer_forget_pid(void *state, uint32_t pid)
{
	struct mojo_writer *writer = state;
	uint64_t hash = hash_mix64(pid);
	int64_t found = hash_index_find(&writer->pid_index, hash, pid_matches, writer, &pid);
	size_t last = writer->pid_count - 1;

	if (found < 0)
		return 0;
	hash_index_remove(&writer->pid_index, hash, (uint32_t)found);
	free_tables(writer->pids[found]);
	/* Its stacks' references are dead (their epoch's tables are gone), and the memory is not
	 * held for them: the others' stacks, mostly given new ids as the resolver forgets its
	 * stacks with the process (profile.h's pf_stack_ids_dead_below), are encoded again. */
	known_stacks_clear(&writer->known_stacks);
	if ((size_t)found != last) {
		uint64_t moved_hash = hash_mix64(writer->pids[last]->pid);

		hash_index_remove(&writer->pid_index, moved_hash, (uint32_t)last);
		writer->pids[found] = writer->pids[last];
		/* Cannot fail: an entry was just removed, so the index has room. */
		(void)!hash_index_insert(&writer->pid_index, moved_hash, (uint32_t)found);
	}
	writer->pid_count = last;
	return 0;
}

/* What the pids' tables and the known stacks hold: the part of the writer that grows with the
 * processes and stacks seen. */
static size_t writer_held_bytes(const void *state)
{
	const struct mojo_writer *writer = state;
	size_t bytes = writer->pid_capacity * sizeof(*writer->pids) +
		       writer->pid_index.capacity * sizeof(*writer->pid_index.slots) +
		       known_stacks_held_bytes(&writer->known_stacks);

	for (size_t i = 0; i < writer->pid_count; i++)
		bytes += sizeof(*writer->pids[i]) + intern_held_bytes(&writer->pids[i]->strings) +
			 intern_held_bytes(&writer->pids[i]->frames) +
			 intern_held_bytes(&writer->pids[i]->named_threads);
	return bytes;
}

static int32_t line_to_mojo(int32_t line)
{
	return line < 0 ? 0 : line;
}

static int64_t column_to_mojo(int32_t column)
{
	return column < 0 ? 0 : (int64_t)column + 1;
}

static bool is_located(const struct pf_frame *frame)
{
	return frame->kind == PF_FRAME_PYTHON || frame->kind == PF_FRAME_NATIVE;
}

/* The string's id in tables, defining it (STRING event) if new. */
static int64_t define_string(struct mojo_writer *writer, struct pid_tables *tables,
			     const char *text)
{
	bool is_new;
	int64_t id;

	text = text ? text : "";
	id = intern_add(&tables->strings, text, strlen(text), &is_new);
	if (id < 0)
		return writer_fail(writer, -ENOMEM, "out of memory");
	if (is_new && (put_event(writer, MOJO_STRING) ||
		       put_varint(writer, id + MOJO_FIRST_STRING_KEY) || put_string(writer, text)))
		return writer->failure;
	return id;
}

static int define_frame(struct mojo_writer *writer, struct pid_tables *tables,
			const struct pf_frame *frame, struct frame_ids *ids)
{
	struct frame_identity identity;
	bool is_new;
	int64_t id;

	memset(&identity, 0, sizeof(identity));
	identity.file_id = ids->file_id;
	identity.name_id = ids->name_id;
	identity.line = line_to_mojo(frame->line);
	identity.end_line = line_to_mojo(frame->end_line);
	identity.column = (int32_t)(frame->column < 0 ? -1 : frame->column);
	identity.end_column = (int32_t)(frame->end_column < 0 ? -1 : frame->end_column);
	id = intern_add(&tables->frames, &identity, sizeof(identity), &is_new);
	if (id < 0)
		return writer_fail(writer, -ENOMEM, "out of memory");
	ids->frame_id = (uint32_t)id;
	if (!is_new)
		return 0;
	if (put_event(writer, MOJO_FRAME) || put_varint(writer, id + MOJO_FIRST_FRAME_KEY) ||
	    put_varint(writer, (int64_t)ids->file_id + MOJO_FIRST_STRING_KEY) ||
	    put_varint(writer, (int64_t)ids->name_id + MOJO_FIRST_STRING_KEY) ||
	    put_varint(writer, identity.line) || put_varint(writer, identity.end_line) ||
	    put_varint(writer, column_to_mojo(frame->column)) ||
	    put_varint(writer, column_to_mojo(frame->end_column)))
		return writer->failure;
	return 0;
}

/* Keys must stay below 2^27; a pid that would pass it starts a fresh key space. */
static void keep_keys_in_range(struct mojo_writer *writer, struct pid_tables *tables, size_t frame_count)
{
	uint64_t strings_after = intern_count(&tables->strings) + 2 * (uint64_t)frame_count;
	uint64_t frames_after = intern_count(&tables->frames) + (uint64_t)frame_count;

	if (strings_after + MOJO_FIRST_STRING_KEY >= MOJO_KEY_LIMIT ||
	    frames_after + MOJO_FIRST_FRAME_KEY >= MOJO_KEY_LIMIT) {
		intern_clear(&tables->strings);
		intern_clear(&tables->frames);
		tables->epoch = ++writer->last_epoch;
	}
}

static int write_definitions(struct mojo_writer *writer, struct pid_tables *tables,
			     const struct pf_sample *sample)
{
	size_t i;

	if (ARRAY_RESERVE(writer->scratch, writer->scratch_capacity, sample->frame_count))
		return writer_fail(writer, -ENOMEM, "out of memory");
	/* Readers expect every STRING of a sample before its FRAMEs. */
	for (i = 0; i < sample->frame_count; i++) {
		char native_file[PATH_MAX + sizeof(MOJO_NATIVE_PREFIX)];
		int64_t file_id, name_id;

		if (!is_located(&sample->frames[i]))
			continue;
		/* Austin's readers know a native frame by its file string's prefix. */
		file_id = define_string(writer, tables,
					pf_native_file_stored(&sample->frames[i], native_file,
							      sizeof(native_file)));
		if (file_id < 0)
			return (int)file_id;
		name_id = define_string(writer, tables, sample->frames[i].name);
		if (name_id < 0)
			return (int)name_id;
		writer->scratch[i].file_id = (uint32_t)file_id;
		writer->scratch[i].name_id = (uint32_t)name_id;
	}
	for (i = 0; i < sample->frame_count; i++)
		if (is_located(&sample->frames[i]) &&
		    define_frame(writer, tables, &sample->frames[i], &writer->scratch[i]))
			return writer->failure;
	return 0;
}

static size_t refs_bound(const struct pf_sample *sample)
{
	size_t bound = 1;

	for (size_t i = 0; i < sample->frame_count; i++)
		bound += sample->frames[i].kind == PF_FRAME_KERNEL
				 ? 1 + strlen(sample->frames[i].name ? sample->frames[i].name : "") + 1
				 : 1 + VARINT_MAX_BYTES;
	return bound;
}

/* The sample's references into writer->refs: the invalid marker, its frames, its kernel frames. */
static int encode_refs(struct mojo_writer *writer, const struct pf_sample *sample, size_t *len)
{
	size_t used = 0;
	size_t i;

	if (ARRAY_RESERVE(writer->refs, writer->refs_capacity, refs_bound(sample)))
		return writer_fail(writer, -ENOMEM, "out of memory");
	for (i = 0; i < sample->frame_count; i++)
		if (sample->frames[i].kind == PF_FRAME_INVALID) {
			writer->refs[used++] = MOJO_FRAME_INVALID;
			break;
		}
	for (i = 0; i < sample->frame_count; i++)
		if (is_located(&sample->frames[i])) {
			writer->refs[used++] = MOJO_FRAME_REF;
			used += varint_mojo_encode((int64_t)writer->scratch[i].frame_id + MOJO_FIRST_FRAME_KEY,
						   writer->refs + used);
		}
	for (i = 0; i < sample->frame_count; i++) {
		const char *symbol = sample->frames[i].name ? sample->frames[i].name : "";
		size_t size = strlen(symbol) + 1;

		if (sample->frames[i].kind != PF_FRAME_KERNEL)
			continue;
		writer->refs[used++] = MOJO_FRAME_KERNEL;
		memcpy(writer->refs + used, symbol, size);
		used += size;
	}
	*len = used;
	return 0;
}

/* Keeps a stack's references for its next samples (nothing is kept when memory is short). */
static void remember_refs(struct mojo_writer *writer, const struct pid_tables *tables,
			  const struct pf_sample *sample, size_t len)
{
	uint8_t *kept = known_stacks_put(&writer->known_stacks, sample->stack_id, tables->epoch, len);

	if (kept)
		memcpy(kept, writer->refs, len);
}

/*
 * The sample's definitions (new strings and frames) and references. A stack written before
 * in the same tables has nothing new to define and the same references: they are copied.
 */
static int write_frames(struct mojo_writer *writer, struct pid_tables *tables, const struct pf_sample *sample)
{
	size_t len;
	const uint8_t *refs = known_stacks_find(&writer->known_stacks, sample->stack_id, tables->epoch, &len);

	if (!refs) {
		if (write_definitions(writer, tables, sample) || encode_refs(writer, sample, &len))
			return writer->failure;
		remember_refs(writer, tables, sample, len);
		refs = writer->refs;
	}
	return put_bytes(writer, refs, len);
}

static int write_metrics(struct mojo_writer *writer, const struct pf_sample *sample)
{
	bool time = writer->mode != MODE_MEMORY;
	bool memory = writer->mode == MODE_MEMORY || writer->mode == MODE_FULL;

	/* An --event's counts ride in the time metric (cpu mode): Austin has no metric of their own. */
	uint64_t time_value = !(sample->metrics & PF_METRIC_TIME) && (sample->metrics & PF_METRIC_COUNT) ? sample->count
														 : sample->time_us;

	if ((sample->status & PF_STATUS_GC) && put_event(writer, MOJO_GC))
		return writer->failure;
	if (time && (put_event(writer, MOJO_METRIC_TIME) || put_uvarint(writer, time_value)))
		return writer->failure;
	if (writer->mode == MODE_FULL && (sample->status & PF_STATUS_IDLE) &&
	    put_event(writer, MOJO_IDLE))
		return writer->failure;
	if (memory && (put_event(writer, MOJO_METRIC_MEMORY) || put_varint(writer, sample->memory)))
		return writer->failure;
	return 0;
}

/* value in lowercase hex without leading zeros (printf's PRIx64), NUL-terminated: every sample has one. */
static void format_hex(uint64_t value, char out[17])
{
	static const char digits[] = "0123456789abcdef";
	char reversed[16];
	size_t count = 0;

	do {
		reversed[count++] = digits[value & 0xf];
		value >>= 4;
	} while (value);
	for (size_t i = 0; i < count; i++)
		out[i] = reversed[count - 1 - i];
	out[count] = 0;
}

static int write_stack(struct mojo_writer *writer, const struct pf_sample *sample)
{
	char tid[17];

	format_hex(sample->tid, tid);
	if (put_event(writer, MOJO_STACK) || put_varint(writer, sample->pid) ||
	    put_varint(writer, sample->iid) || put_string(writer, tid))
		return writer->failure;
	return 0;
}

/*
 * A thread's name, once, before its first sample: a metadata line keyed by the pid and the
 * thread string its stacks carry (MOJO_THREAD_NAME_KEY), so Austin's readers, which keep any
 * metadata, still take the file. The name comes from the target: escaped, it is UTF-8 text.
 */
static int write_thread_name(struct mojo_writer *writer, struct pid_tables *tables,
			     const struct pf_sample *sample)
{
	uint64_t thread = sample->tid;
	char key[64], tid[17], value[MOJO_THREAD_NAME_MAX];
	bool is_new = false;

	if (!sample->thread_name || !sample->thread_name[0])
		return 0;
	if (intern_add(&tables->named_threads, &thread, sizeof(thread), &is_new) < 0)
		return writer_fail(writer, -ENOMEM, "out of memory");
	if (!is_new)
		return 0;
	format_hex(sample->tid, tid);
	snprintf(key, sizeof(key), MOJO_THREAD_NAME_KEY "%" PRIu32 ":%s", sample->pid, tid);
	return put_metadata(writer, key, text_escaped(value, sizeof(value), sample->thread_name)) ? writer->failure : 0;
}

static int writer_add_sample(void *state, const struct pf_sample *sample)
{
	struct mojo_writer *writer = state;
	struct pid_tables *tables;

	if (writer->failure)
		return writer->failure;
	if (!writer->started && emit_start_metadata(writer))
		return writer->failure;
	tables = tables_for_pid(writer, sample->pid);
	if (!tables)
		return writer_fail(writer, -ENOMEM, "out of memory");
	keep_keys_in_range(writer, tables, sample->frame_count);
	if (write_thread_name(writer, tables, sample) || write_stack(writer, sample) || write_frames(writer, tables, sample) || write_metrics(writer, sample))
		return writer->failure;
	mark_complete(writer);
	if (clock_coarse_ms() - writer->last_flush_ms >= writer->flush_interval_ms)
		return write_out(writer);
	return 0;
}

static int writer_flush(void *state)
{
	struct mojo_writer *writer = state;

	if (writer->failure)
		return writer->failure;
	return write_out(writer);
}

static int writer_finish(void *state)
{
	struct mojo_writer *writer = state;

	if (writer->failure)
		return writer->failure;
	if (!writer->started && emit_start_metadata(writer))
		return writer->failure;
	return write_out(writer);
}

static void writer_destroy(void *state)
{
	struct mojo_writer *writer = state;
	size_t i;

	if (!writer)
		return;
	for (i = 0; i < writer->pid_count; i++)
		free_tables(writer->pids[i]);
	free(writer->pids);
	hash_index_free(&writer->pid_index);
	free(writer->scratch);
	free(writer->refs);
	known_stacks_free(&writer->known_stacks);
	free_pending(writer);
	free(writer->buf);
	free(writer);
}

static const char *writer_error(const void *state)
{
	const struct mojo_writer *writer = state;

	return writer->error;
}

static const struct pf_writer_ops mojo_writer_ops = {
	.set_metadata = writer_set_metadata,
	.add_sample = writer_add_sample,
	.forget_pid = writer_forget_pid,
	.held_bytes = writer_held_bytes,
	.flush = writer_flush,
	.finish = writer_finish,
	.destroy = writer_destroy,
	.error = writer_error,
};

int mojo_writer_create(int fd, const struct pf_writer_options *options, void **state,
		       const struct pf_writer_ops **ops)
{
	struct mojo_writer *writer = calloc(1, sizeof(*writer));

	if (!writer)
		return -ENOMEM;
	writer->fd = fd;
	hash_index_init(&writer->pid_index);
	known_stacks_init(&writer->known_stacks, KNOWN_STACKS_MAX_BYTES);
	writer->capacity = WRITE_BUFFER_SIZE;
	writer->buf = malloc(writer->capacity);
	if (!writer->buf) {
		free(writer);
		return -ENOMEM;
	}
	writer->flush_interval_ms = options && options->flush_interval_ms
					    ? options->flush_interval_ms
					    : DEFAULT_FLUSH_INTERVAL_MS;
	writer->last_flush_ms = clock_coarse_ms();
	writer->mode = MODE_CPU;
	memcpy(writer->buf, MOJO_MAGIC, 3);
	writer->len = 3 + varint_mojo_encode(MOJO_VERSION, writer->buf + 3);
	mark_complete(writer);
	*state = writer;
	*ops = &mojo_writer_ops;
	return 0;
}
