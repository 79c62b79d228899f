// SPDX-License-Identifier: MIT
/*
 * Samples whose native walk stopped for want of a table still being built (or of a mapping, a
 * library loaded since the maps were read): BPF sent a copy of the stack with them
 * (include/sample_record.h, PBP_REC_STACK_COPY). Each waits here until its file's table is
 * placed, is unwound from the copy with the rows BPF would have used
 * (unwind/stack_copy_unwind.h), and is then written as any BPF-unwound sample.
 *
 * Samples whose native frames lie in a file whose symbols the parser worker is still reading
 * (a process's first moments: the interpreter's own file among them) wait here too, under the
 * same bounds: named now, their frames would read [file+0x...] for good, and the interpreter's
 * unnamed frames would keep its Python frames from being merged in place.
 *
 * One queue, in the order the records came: once a record waits, every later one waits behind
 * it, so the outputs see each thread's samples (and their time stamps) in order and their time
 * deltas never go back. The wait is bounded: by LATE_UNWIND_WAIT_MS per record, by
 * LATE_UNWIND_MAX_BYTES for the whole queue (the oldest record then goes as it is), by its
 * process's exit or exec (its records, and only its, go before the event), and by the end of the run (a last,
 * bounded chance for the tables being built). A record that goes without its table keeps the
 * native frames BPF found and says why in the summary.
 */
#include "session/session_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbolize/symbolize_native.h"
#include "unwind/stack_copy_unwind.h"
#include "util/array.h"
#include "util/clock.h"

/* The most a record waits for its table; a table takes tens of milliseconds at the profiler's
 * priority, seconds only on a host too busy to give the profiler a CPU. */
#define LATE_UNWIND_WAIT_MS 3000u
/* The queue's bytes at most: 2000 stack copies. */
#define LATE_UNWIND_MAX_BYTES (32u << 20)
/* The run's end: how long the tables being built are waited for. */
#define LATE_UNWIND_FINAL_WAIT_MS 2000u
#define LATE_UNWIND_POLL_US 5000u

/* The largest record a late unwind writes: the full sections and a task name, no copy. */
#define LATE_RECORD_MAX \
	(sizeof(struct pbp_record) + PBP_MAX_PY_FRAMES * sizeof(struct pbp_py_frame) + \
	 (UNWIND_MAX_FRAMES + PBP_MAX_KERNEL_FRAMES) * sizeof(uint64_t) + sizeof(struct pbp_task_name))

struct late_entry {
	uint64_t queued_ms;
	size_t size;
	bool waiting;  /* carries a copy not yet unwound */
	bool waiting_names; /* a file of its pcs waits for its symbols */
	bool waited_for_maps; /* it waited for a read of its process's maps (counted once) */
	uint64_t record[]; /* size bytes: 8-byte aligned, as the ring hands them out */
};

static struct pbp_record *record_of(struct late_entry *entry)
{
	return (struct pbp_record *)(void *)entry->record;
}

struct late_unwind {
	struct late_entry **entries; /* [head, count): the queue, oldest first */
	size_t head, count, capacity;
	size_t bytes;
	uint64_t scratch[LATE_RECORD_MAX / sizeof(uint64_t)]; /* the record being rewritten */
	struct late_unwind_stats stats;
};

static const char *const loss_names[LATE_LOST_COUNT] = {
	[LATE_LOST_IN_TIME] = "no table in time", [LATE_LOST_NO_TABLE] = "file without a table",
	[LATE_LOST_COPY_SHORT] = "stack copy too short", [LATE_LOST_BUDGET] = "held samples' budget full",
	[LATE_LOST_GONE] = "process gone first", [LATE_LOST_BAD_COPY] = "bad stack copy",
	[LATE_LOST_NO_FILE] = "code in no file", [LATE_LOST_MAPS_UNREAD] = "maps not read in time",
};

const char *late_unwind_loss_name(enum late_unwind_loss loss)
{
	return loss < LATE_LOST_COUNT ? loss_names[loss] : "?";
}

/* The record's sections before the copy (its task name last): its length, or 0 when they do
 * not fit in size. */
static size_t sections_len(const struct pbp_record *record, size_t size)
{
	size_t len;

	if (size < sizeof(*record))
		return 0;
	len = sizeof(*record) + (size_t)record->py_frame_count * sizeof(struct pbp_py_frame) +
	      ((size_t)record->native_frame_count + record->kernel_frame_count) * sizeof(uint64_t);
	if (record->flags & PBP_REC_TASK_NAME)
		len += sizeof(struct pbp_task_name);
	if (len > size || record->py_frame_count > PBP_MAX_PY_FRAMES ||
	    record->native_frame_count > UNWIND_MAX_FRAMES || record->kernel_frame_count > PBP_MAX_KERNEL_FRAMES)
		return 0;
	return len;
}

/* The copy a record carries, checked against its size: 0 or -EINVAL. */
static int copy_of(const struct pbp_record *record, size_t size, struct stack_copy_view *view, uint64_t *bp)
{
	size_t len = sections_len(record, size);
	struct pbp_stack_copy head;
	const uint8_t *at = (const uint8_t *)record + len;

	if (!len || size - len < sizeof(head) || record->native_frame_count == 0)
		return -EINVAL;
	memcpy(&head, at, sizeof(head));
	if (head.shim_count > PBP_MAX_SHIM_COPY || head.copy_len > PBP_STACK_COPY_BYTES ||
	    size - len - sizeof(head) < head.shim_count * sizeof(uint64_t) + (size_t)head.copy_len)
		return -EINVAL;
	*view = (struct stack_copy_view){
		.sp = head.sp,
		.shims = (const uint64_t *)(at + sizeof(head)), /* 8-byte aligned: the header is 24 bytes */
		.shim_count = head.shim_count,
		.bytes = at + sizeof(head) + head.shim_count * sizeof(uint64_t),
		.len = head.copy_len,
	};
	*bp = head.bp;
	return 0;
}

/* The user pcs of a record (its leaf, its native frames): how many, at most max. */
static size_t record_pcs(const struct pbp_record *record, size_t size, uint64_t *pcs, size_t max)
{
	size_t len = sections_len(record, size), count = 0;
	const uint8_t *at = (const uint8_t *)record + sizeof(*record) +
			    (size_t)record->py_frame_count * sizeof(struct pbp_py_frame);

	if (!len)
		return 0;
	if (record->user_ip && count < max)
		pcs[count++] = record->user_ip;
	for (size_t i = 0; i < record->native_frame_count && count < max; i++) {
		uint64_t pc;

		memcpy(&pc, at + i * sizeof(pc), sizeof(pc));
		pcs[count++] = pc & ~PBP_NATIVE_PC_EVAL;
	}
	return count;
}

/*
 * Whether the record's native frames would be named by offsets if written now: a file of its
 * pcs still waits for its symbols. Its stack would then show unnamed frames for good, and the
 * interpreter's own unnamed ones keep its Python frames from being merged in place.
 */
static bool names_pending(struct session *session, const struct pbp_record *record, size_t size)
{
	uint64_t pcs[UNWIND_MAX_FRAMES + 1];
	size_t count;

	/* (a walk that stopped at once still has its leaf named) */
	if (!session->resolver.native || size < sizeof(*record) || (record->native_frame_count == 0 && !record->user_ip))
		return false;
	count = record_pcs(record, size, pcs, ARRAY_SIZE(pcs));
	return count && symbolize_native_names_pending(session->resolver.native, (pid_t)record->pid, pcs, count);
}

/* The record as BPF would have sent it with these native frames and this stop, into the
 * scratch: its size. */
static size_t rewrite(struct late_unwind *late, const struct pbp_record *record, const uint64_t *pcs, size_t count,
		      uint8_t stop)
{
	uint8_t *out = (uint8_t *)late->scratch;
	struct pbp_record *head = (struct pbp_record *)out;
	size_t py_len = (size_t)record->py_frame_count * sizeof(struct pbp_py_frame);
	const uint64_t *kernel = (const uint64_t *)((const uint8_t *)(record + 1) + py_len) + record->native_frame_count;
	size_t at = sizeof(*record) + py_len;

	memcpy(out, record, at);
	memcpy(out + at, pcs, count * sizeof(uint64_t));
	at += count * sizeof(uint64_t);
	memcpy(out + at, kernel, (size_t)record->kernel_frame_count * sizeof(uint64_t));
	at += (size_t)record->kernel_frame_count * sizeof(uint64_t);
	if (record->flags & PBP_REC_TASK_NAME) {
		memcpy(out + at, kernel + record->kernel_frame_count, sizeof(struct pbp_task_name));
		at += sizeof(struct pbp_task_name);
	}
	head->flags &= ~PBP_REC_STACK_COPY;
	head->native_frame_count = (uint16_t)count;
	head->native_stop = stop;
	return at;
}

struct table_lookup {
	struct session *session;
	pid_t pid;
	uint64_t sample_ns;
};

static int table_at(void *ctx, uint64_t pc, const struct unwind_table **table, uint64_t *bias)
{
	struct table_lookup *lookup = ctx;

	return native_stacks_table_at(lookup->session, lookup->pid, pc, lookup->sample_ns, table, bias);
}

/* The entry's record is now size bytes (its memory is not given back until it goes). */
static void set_size(struct late_unwind *late, struct late_entry *entry, size_t size)
{
	late->bytes = late->bytes - entry->size + size;
	entry->size = size;
}

/* Sets the entry's record to what it is without its copy: BPF's frames, counted as lost. */
static void strip(struct late_unwind *late, struct late_entry *entry, enum late_unwind_loss loss)
{
	const struct pbp_record *record = (const struct pbp_record *)entry->record;
	size_t len = sections_len(record, entry->size);

	late->stats.lost[loss]++;
	entry->waiting = false;
	/* 0 when nothing of it holds together: not written */
	if (len)
		record_of(entry)->flags &= ~PBP_REC_STACK_COPY;
	set_size(late, entry, len);
}

/* Moves the rewritten record from the scratch into the entry (which may grow). 0 or -ENOMEM. */
static int take_rewritten(struct late_unwind *late, struct late_entry **slot, size_t size)
{
	struct late_entry *entry = *slot;

	if (size > entry->size) {
		struct late_entry *grown = realloc(entry, sizeof(*entry) + size);

		if (!grown)
			return -ENOMEM;
		*slot = entry = grown;
	}
	memcpy(entry->record, late->scratch, size);
	set_size(late, entry, size);
	entry->waiting = false;
	return 0;
}

/*
 * Unwinds the entry's copy if its tables allow; otherwise, with give_up (a cause), lets it go
 * with BPF's frames, else leaves it waiting.
 */
static void resolve(struct session *session, struct late_entry **slot, int give_up)
{
	struct late_unwind *late = session->late;
	struct late_entry *entry = *slot;
	const struct pbp_record *record = (const struct pbp_record *)entry->record;
	struct table_lookup lookup = { session, (pid_t)record->pid, record->time_ns };
	uint64_t pcs[UNWIND_MAX_FRAMES], bp, start_ns = clock_monotonic_ns(), read_waits;
	struct stack_copy_view copy;
	size_t count, used = 0;
	int stop;

	if (copy_of(record, entry->size, &copy, &bp) != 0) {
		strip(late, entry, LATE_LOST_BAD_COPY);
		return;
	}
	copy.used = &used;
	count = record->native_frame_count;
	memcpy(pcs, (const uint8_t *)(record + 1) + (size_t)record->py_frame_count * sizeof(struct pbp_py_frame),
	       count * sizeof(uint64_t));
	read_waits = native_stacks_read_waits(session);
	stop = stack_copy_unwind(&copy, bp, table_at, &lookup, pcs, &count, UNWIND_MAX_FRAMES);
	/* the unwinding that counts: the last try, not the ones that found a table still building */
	if (stop != STACK_UNWIND_WAIT || give_up >= 0)
		late->stats.unwind_ns += clock_monotonic_ns() - start_ns;
	if (stop == STACK_UNWIND_WAIT && native_stacks_read_waits(session) != read_waits) {
		if (!entry->waited_for_maps)
			late->stats.waited_for_maps++;
		entry->waited_for_maps = true;
		/* what it lacks is the read, not a table */
		if (give_up == LATE_LOST_IN_TIME)
			give_up = LATE_LOST_MAPS_UNREAD;
	}
	if (stop == STACK_UNWIND_WAIT && count == record->native_frame_count) {
		/* Its first table is not there yet. */
		if (give_up >= 0)
			strip(late, entry, (enum late_unwind_loss)give_up);
		return;
	}
	if (stop == STACK_UNWIND_WAIT && give_up < 0)
		return; /* a caller's file still building: the rest waits for it */
	if (stop == UNWIND_STOP_NO_TABLE && count == record->native_frame_count) {
		strip(late, entry, LATE_LOST_NO_TABLE);
		return;
	}
	if (stop == UNWIND_STOP_NO_MAPPING && count == record->native_frame_count) {
		/* code in no file (JIT), or a file gone: BPF's frames were all there were */
		strip(late, entry, LATE_LOST_NO_FILE);
		return;
	}
	if (stop == STACK_UNWIND_PAST_COPY)
		late->stats.lost[LATE_LOST_COPY_SHORT]++;
	else if (stop == STACK_UNWIND_WAIT)
		late->stats.lost[give_up]++;
	else
		late->stats.unwound++;
	if (stop != STACK_UNWIND_PAST_COPY && stop != STACK_UNWIND_WAIT) {
		late->stats.copy_used_sum += used;
		if (used > late->stats.copy_used_max)
			late->stats.copy_used_max = used;
	}
	if (stop >= UNWIND_STOP_COUNT)
		stop = stop == STACK_UNWIND_PAST_COPY ? UNWIND_STOP_READ_FAULT : UNWIND_STOP_NO_TABLE;
	if (take_rewritten(late, slot, rewrite(late, record, pcs, count, (uint8_t)stop)) != 0)
		strip(late, *slot, LATE_LOST_BUDGET);
	else if (give_up < 0)
		(*slot)->waiting_names = names_pending(session, record_of(*slot), (*slot)->size);
}

/* Whether the entry may go as far as its names go: they are known, or it waited long enough
 * (give_up >= 0: it goes now). Those that go with names still missing are counted. */
static bool names_settled(struct session *session, struct late_entry *entry, int give_up, uint64_t now_ms)
{
	struct late_unwind *late = session->late;

	if (!names_pending(session, record_of(entry), entry->size)) {
		entry->waiting_names = false;
		return true;
	}
	if (give_up < 0 && now_ms - entry->queued_ms < LATE_UNWIND_WAIT_MS)
		return false;
	late->stats.names_missed++;
	entry->waiting_names = false;
	return true;
}

/* Writes the entry at slot i (which the caller then drops from the queue): unwound if its
 * tables are there, else as BPF sent it (give_up says why). */
static void write_entry(struct session *session, size_t i, enum late_unwind_loss give_up)
{
	struct late_unwind *late = session->late;
	struct late_entry *entry;

	if (late->entries[i]->waiting)
		resolve(session, &late->entries[i], give_up);
	entry = late->entries[i];
	late->stats.names_missed += entry->waiting_names;
	late->bytes -= sizeof(*entry) + entry->size;
	if (entry->size)
		session_write_record(session, (const struct pbp_record *)entry->record, entry->size);
	free(entry);
	late->entries[i] = NULL;
}

/* Lets the oldest record go: unwound if its tables are there, else as BPF sent it (give_up says
 * why, for one still waiting). */
static void pop_one(struct session *session, enum late_unwind_loss give_up)
{
	struct late_unwind *late = session->late;

	write_entry(session, late->head++, give_up);
	if (late->head == late->count)
		late->head = late->count = 0;
}

/* Writes the records at the head that are ready; give_up: the cause a waiting head goes with
 * (-1: it waits, unless it waited LATE_UNWIND_WAIT_MS). */
static void flush_with(struct session *session, int give_up)
{
	struct late_unwind *late = session->late;
	uint64_t now_ms = clock_monotonic_ms();

	if (!late)
		return;
	while (late->head < late->count) {
		struct late_entry **slot = &late->entries[late->head];

		if ((*slot)->waiting) {
			int cause = give_up;

			if (cause < 0 && now_ms - (*slot)->queued_ms >= LATE_UNWIND_WAIT_MS)
				cause = LATE_LOST_IN_TIME;
			resolve(session, slot, cause);
			if ((*slot)->waiting)
				break;
		}
		if ((*slot)->waiting_names && !names_settled(session, *slot, give_up, now_ms))
			break;
		pop_one(session, LATE_LOST_IN_TIME); /* ready: neither waits */
	}
	late->stats.held_now = late->count - late->head;
	native_stacks_unmap_tables(session);
}

void late_unwind_flush(struct session *session)
{
	flush_with(session, -1);
}

static int late_open(struct session *session)
{
	if (session->late)
		return 0;
	session->late = calloc(1, sizeof(*session->late));
	return session->late ? 0 : -ENOMEM;
}

/* A held record is named when it leaves, perhaps after its process exited: the mappings of its
 * pcs are read now, while they can be (a library loaded since the last read, most of all). */
static void note_record_pcs(struct session *session, const struct pbp_record *record, size_t size)
{
	uint64_t pcs[UNWIND_MAX_FRAMES + 1];
	size_t count;

	if (!session->resolver.native)
		return;
	count = record_pcs(record, size, pcs, ARRAY_SIZE(pcs));
	for (size_t i = 0; i < count; i++)
		symbolize_native_note_pc(session->resolver.native, (pid_t)record->pid, pcs[i]);
}

bool late_unwind_hold(struct session *session, const struct pbp_record *record, size_t size)
{
	bool has_copy = size >= sizeof(*record) && (record->flags & PBP_REC_STACK_COPY);
	struct late_unwind *late = session->late;
	bool queue_empty = !late || late->head == late->count;
	bool wants_names = !has_copy && names_pending(session, record, size);
	struct late_entry *entry;

	if (!has_copy && !wants_names && queue_empty)
		return false;
	if (late_open(session))
		return false;
	late = session->late;
	if (has_copy)
		late->stats.held++;
	if (wants_names)
		late->stats.held_for_names++;
	/* Room first: the oldest go as they are. */
	while (late->head < late->count && late->bytes + sizeof(*entry) + size > LATE_UNWIND_MAX_BYTES)
		pop_one(session, LATE_LOST_BUDGET);
	if (late->head > 0 && late->count == late->capacity) {
		memmove(late->entries, late->entries + late->head, (late->count - late->head) * sizeof(*late->entries));
		late->count -= late->head;
		late->head = 0;
	}
	entry = malloc(sizeof(*entry) + size);
	if (!entry || ARRAY_RESERVE(late->entries, late->capacity, late->count + 1)) {
		free(entry);
		if (has_copy)
			late->stats.lost[LATE_LOST_BUDGET]++;
		return false; /* written now, as BPF sent it (its copy is not read) */
	}
	entry->queued_ms = clock_monotonic_ms();
	entry->size = size;
	entry->waiting = has_copy;
	entry->waiting_names = wants_names;
	entry->waited_for_maps = false;
	memcpy(entry->record, record, size);
	note_record_pcs(session, record, size);
	late->entries[late->count++] = entry;
	late->bytes += sizeof(*entry) + size;
	if (late->bytes > late->stats.peak_bytes)
		late->stats.peak_bytes = late->bytes;
	late_unwind_flush(session);
	return true;
}

/* The queue's index after the last record of pid (late->head if it has none). */
static size_t end_of_pid(const struct late_unwind *late, pid_t pid)
{
	for (size_t i = late->count; i > late->head; i--)
		if (record_of(late->entries[i - 1])->pid == (uint32_t)pid)
			return i;
	return late->head;
}

/* Whether the oldest record waits for names (its files' symbols on their way). */
static bool head_waits_for_names(const struct late_unwind *late)
{
	return late->head < late->count && late->entries[late->head]->waiting_names;
}

/* Polls the tables being built and the symbols being read until no record waits for them, or
 * bound_ms passed. */
static void wait_for_tables(struct session *session, uint64_t bound_ms)
{
	uint64_t deadline = clock_monotonic_ms() + bound_ms;
	struct late_unwind *late = session->late;

	while ((native_stacks_building(session) || head_waits_for_names(late)) && clock_monotonic_ms() < deadline) {
		late_unwind_flush(session);
		if (late->head == late->count)
			return;
		usleep(LATE_UNWIND_POLL_US);
		native_stacks_poll(session);
	}
}

/*
 * What pid's records mean changes at its exit or exec (its image, its mappings): they go now, with
 * the tables placed so far. No wait here: this runs in the drain, and a host where processes come
 * and go would stall it. Those of pid still waiting lose their native frames. Other processes'
 * records keep their places and their wait: the order that matters is each thread's, and on a
 * busy host some process exits every few milliseconds, which would cut every wait short.
 */
void late_unwind_settle_pid(struct session *session, pid_t pid)
{
	struct late_unwind *late = session->late;
	size_t end, kept;

	if (!late || (end = end_of_pid(late, pid)) == late->head)
		return;
	native_stacks_poll(session);
	kept = late->head;
	for (size_t i = late->head; i < late->count; i++) {
		if (i < end && record_of(late->entries[i])->pid == (uint32_t)pid)
			write_entry(session, i, LATE_LOST_GONE);
		else
			late->entries[kept++] = late->entries[i];
	}
	late->count = kept;
	if (late->head == late->count)
		late->head = late->count = 0;
	late->stats.held_now = late->count - late->head;
}

void late_unwind_flush_now(struct session *session)
{
	if (!session->late || session->late->head == session->late->count)
		return;
	native_stacks_poll(session);
	flush_with(session, LATE_LOST_IN_TIME);
}

void late_unwind_finish(struct session *session)
{
	if (!session->late)
		return;
	native_stacks_poll(session);
	if (session->late->head < session->late->count)
		wait_for_tables(session, LATE_UNWIND_FINAL_WAIT_MS);
	flush_with(session, LATE_LOST_IN_TIME);
}

void late_unwind_stats(const struct session *session, struct late_unwind_stats *stats)
{
	if (session->late)
		*stats = session->late->stats;
	else
		*stats = (struct late_unwind_stats){ 0 };
}

void late_unwind_free(struct session *session)
{
	struct late_unwind *late = session->late;

	if (!late)
		return;
	for (size_t i = late->head; i < late->count; i++)
		free(late->entries[i]);
	free(late->entries);
	free(late);
	session->late = NULL;
}

size_t late_unwind_held_bytes(const struct session *session)
{
	return session->late ? session->late->bytes : 0;
}
