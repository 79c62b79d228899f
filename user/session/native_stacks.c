// SPDX-License-Identifier: MIT
/*
 * The targets' native-unwinding tables in BPF (include/unwind_table.h): the
 * cache (unwind/unwind_cache.h) builds one table per file, this uploads it
 * into the sampler's maps (unwind/unwind_maps.h) before the mappings of a
 * process that use it, and keeps each ready target's mappings current: when it
 * becomes ready, when it exec's or exits, and when a walk stops at a pc in a
 * library loaded since.
 *
 * Once sampling runs, a process's maps are read on a thread of their own (maps_reader): the
 * read opens every file the process maps and reads its headers, which a process with thousands
 * of mappings (or files that are slow to open) makes as long as it likes, and the loop that
 * drains the ring must not wait for it. The loop asks for a read and goes on; the answer is put
 * into the cache and BPF when the loop polls. A held sample whose process is being read waits
 * for the answer (STACK_UNWIND_WAIT), within late_unwind.c's bounds.
 */
#include "session/session_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unwind/unwind_maps.h"
#include "symbolize/symbolize_native.h"
#include "proc/launch_files.h"
#include "unwind/stack_copy_unwind.h"
#include "elf/vdso.h"
#include "util/array.h"
#include "util/clock.h"
#include "util/pace.h"
#include "util/thread.h"

/* Reads asked and not yet applied, at most (each some 3 KiB, with up to UNWIND_PREPARED_FDS_MAX
 * descriptors once read): past it a read is put off (a held sample then waits in vain). */
#define MAPS_READS_MAX 1024
/* Reads done and not yet applied, at most: the thread waits for the loop past it, which bounds
 * the descriptors held to this many reads' (and the one being read). */
#define MAPS_READS_DONE_MAX 2
/* Processes whose reads are counted: a pid's count shares its slot with pids of the same hash
 * (a collision only puts a read off sooner). */
#define MAPS_READ_PACE_SLOTS 1024

/* One read of a process's maps, asked by the loop, read by the thread. */
struct maps_read {
	struct maps_read *next;   /* the thread's list it is on (under the reader's lock) */
	pid_t pid;
	/* the loop's alone (the thread reads neither) */
	bool for_walk;            /* asked for a stopped walk (unwind_cache_map_proc_for_walk) */
	bool cancelled;           /* the process exited or exec'd since: the answer is not its own */
	/* the thread's until it is done */
	int err;
	uint64_t asked_us, done_us;
	struct unwind_prepared_proc prepared;
};

struct maps_reader {
	pthread_t thread;
	int wake_fd;              /* the loop's (session.h's wake_fd), or -1 */
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t wake;      /* a read asked, a done read taken, or stop */
	bool stop;
	struct maps_read *todo_head, **todo_tail; /* under lock */
	struct maps_read *done_head, **done_tail; /* under lock */
	size_t done_count;                        /* under lock */
	uint64_t busy_us;                         /* under lock */
	/* the loop's: every read asked and not yet applied, in the order asked */
	struct maps_read **asked;
	size_t asked_count, asked_capacity;
};

/* The reads asked of one process, paced (util/pace.h). */
struct maps_read_pace {
	pid_t pid;
	struct pace pace;
};

struct native_stacks {
	struct unwind_cache *cache;
	struct unwind_maps *maps;
	struct unwind_proc proc;   /* the one being written (8 KiB: not on the stack) */
	uint64_t refreshes;        /* maps read again for a walk that stopped at an unknown pc */
	bool upload_error_reported;
	struct unwind_table view;  /* the rows native_stacks_table_at last handed out */
	struct maps_reader reader;
	struct native_maps_stats maps_stats;
	uint64_t read_waits;       /* walks native_stacks_table_at told to wait for a read on its way */
	struct maps_read_pace pace[MAPS_READ_PACE_SLOTS];
};

static int upload_table(void *ctx, uint32_t table_id, const struct unwind_table_ref *ref,
			const struct unwind_row *rows, const uint32_t *pages)
{
	struct native_stacks *native = ctx;
	int err = unwind_maps_write_table(native->maps, ref, rows, pages);

	/* The rows first: BPF follows a table id only once it points at them. */
	if (!err)
		err = unwind_maps_set_table(native->maps, table_id, ref);
	return err;
}

static void release_table(void *ctx, uint32_t table_id)
{
	struct native_stacks *native = ctx;
	const struct unwind_table_ref empty = { 0 };

	unwind_maps_set_table(native->maps, table_id, &empty);
}

static int add_chunk(void *ctx, uint32_t chunk, uint32_t rows)
{
	struct native_stacks *native = ctx;

	return unwind_maps_add_chunk(native->maps, chunk, rows);
}

static void remove_chunk(void *ctx, uint32_t chunk)
{
	struct native_stacks *native = ctx;

	unwind_maps_remove_chunk(native->maps, chunk);
}

static void *maps_reader_run(void *opaque)
{
	struct maps_reader *reader = opaque;

	/* as discovery's thread (session/discovery.c): held samples wait for these reads */
	pthread_setname_np(pthread_self(), THREAD_NAME_MAPS);
	thread_raise_for_draining();

	pthread_mutex_lock(&reader->lock);
	for (;;) {
		struct maps_read *read;
		uint64_t start_us;

		while (!reader->stop && (!reader->todo_head || reader->done_count >= MAPS_READS_DONE_MAX))
			pthread_cond_wait(&reader->wake, &reader->lock);
		if (reader->stop)
			break;
		read = reader->todo_head;
		reader->todo_head = read->next;
		if (!reader->todo_head)
			reader->todo_tail = &reader->todo_head;
		pthread_mutex_unlock(&reader->lock);
		start_us = clock_monotonic_us();
		read->err = unwind_cache_prepare_proc(read->pid, &read->prepared);
		read->done_us = clock_monotonic_us();
		pthread_mutex_lock(&reader->lock);
		reader->busy_us += read->done_us - start_us;
		read->next = NULL;
		*reader->done_tail = read;
		reader->done_tail = &read->next;
		reader->done_count++;
		session_wake(reader->wake_fd);
	}
	pthread_mutex_unlock(&reader->lock);
	return NULL;
}

static void maps_read_free(struct maps_read *read)
{
	unwind_prepared_proc_free(&read->prepared);
	free(read);
}

static bool ask_read(struct native_stacks *native, pid_t pid, bool for_walk, bool paced);

/* The symbolizer's maps source (symbolize_native_set_maps_source): its reads are this thread's,
 * paced as a sample's. */
static int ask_read_for_names(void *context, pid_t pid)
{
	struct session *session = context;

	return ask_read(session->native, pid, false, true) ? 1 : 0;
}

int native_stacks_read_in_background(struct session *session)
{
	struct native_stacks *native = session->native;
	struct maps_reader *reader;
	int err;

	if (!native || native->reader.started)
		return 0;
	reader = &native->reader;
	reader->wake_fd = session->wake_fd;
	reader->todo_tail = &reader->todo_head;
	reader->done_tail = &reader->done_head;
	pthread_mutex_init(&reader->lock, NULL);
	pthread_cond_init(&reader->wake, NULL);
	/* the vDSO's image is made once, before two threads could both make it */
	(void)vdso_image_fd();
	err = thread_start_without_signals(&reader->thread, maps_reader_run, reader);
	if (err) {
		pthread_cond_destroy(&reader->wake);
		pthread_mutex_destroy(&reader->lock);
		return err;
	}
	reader->started = true;
	/* the symbolizer names pcs on the draining thread: it reads no maps there either */
	if (session->resolver.native)
		symbolize_native_set_maps_source(session->resolver.native, ask_read_for_names, session);
	return 0;
}

static void maps_reader_stop(struct native_stacks *native)
{
	struct maps_reader *reader = &native->reader;

	if (!reader->started)
		return;
	pthread_mutex_lock(&reader->lock);
	reader->stop = true;
	pthread_cond_signal(&reader->wake);
	pthread_mutex_unlock(&reader->lock);
	pthread_join(reader->thread, NULL);
	/* every read not applied is on asked, whichever list it was on */
	for (size_t i = 0; i < reader->asked_count; i++)
		maps_read_free(reader->asked[i]);
	free(reader->asked);
	pthread_cond_destroy(&reader->wake);
	pthread_mutex_destroy(&reader->lock);
	reader->started = false;
}

/* The read of pid asked and not applied (nor cancelled), or NULL. */
static struct maps_read *read_asked(const struct native_stacks *native, pid_t pid)
{
	for (size_t i = native->reader.asked_count; i > 0; i--) {
		struct maps_read *read = native->reader.asked[i - 1];

		if (read->pid == pid && !read->cancelled)
			return read;
	}
	return NULL;
}

/* Whether pid may have one more read now (counted if so): a burst of a second's reads, then
 * one every 1000 / NATIVE_MAPS_READS_PER_PID_PER_S ms. A burst spent while a process loads its
 * libraries (each dlopen a new file its samples stop in) would otherwise leave it unread for the
 * rest of that second, and a run shorter than that without the library it then runs in. */
static bool read_within_pace(struct native_stacks *native, pid_t pid, uint64_t now_ms)
{
	struct maps_read_pace *slot = &native->pace[(uint32_t)pid * 2654435761u % MAPS_READ_PACE_SLOTS];

	/* pids of the same slot share its pace: a collision puts reads off, never adds any */
	slot->pid = pid;
	return pace_take(&slot->pace, now_ms, NATIVE_MAPS_READS_PER_PID_PER_S, 1000 / NATIVE_MAPS_READS_PER_PID_PER_S);
}

/* Asks the thread to read pid's maps (a read already asked serves); false when it could not.
 * paced: asked by a sample (not by the process's start or exec), within the process's reads a second. */
static bool ask_read(struct native_stacks *native, pid_t pid, bool for_walk, bool paced)
{
	struct maps_reader *reader = &native->reader;
	struct maps_read *read = read_asked(native, pid);

	if (read) {
		/* A read asked for a walk gets the walk's room; one being read is read as asked. */
		read->for_walk |= for_walk;
		native->maps_stats.merged++;
		return true;
	}
	if (paced && !read_within_pace(native, pid, clock_monotonic_ms())) {
		native->maps_stats.paced++;
		return false;
	}
	if (reader->asked_count >= MAPS_READS_MAX ||
	    ARRAY_RESERVE(reader->asked, reader->asked_capacity, reader->asked_count + 1) ||
	    !(read = calloc(1, sizeof(*read)))) {
		native->maps_stats.put_off++;
		return false;
	}
	read->pid = pid;
	read->for_walk = for_walk;
	read->asked_us = clock_monotonic_us();
	read->prepared.pid = pid;
	reader->asked[reader->asked_count++] = read;
	if (reader->asked_count > native->maps_stats.peak_asked)
		native->maps_stats.peak_asked = reader->asked_count;
	native->maps_stats.asked++;
	pthread_mutex_lock(&reader->lock);
	*reader->todo_tail = read;
	reader->todo_tail = &read->next;
	pthread_cond_signal(&reader->wake);
	pthread_mutex_unlock(&reader->lock);
	return true;
}

/* pid exited or exec'd: a read of it asked before describes what is gone. */
static void cancel_reads(struct native_stacks *native, pid_t pid)
{
	for (size_t i = 0; i < native->reader.asked_count; i++)
		if (native->reader.asked[i]->pid == pid && !native->reader.asked[i]->cancelled) {
			native->reader.asked[i]->cancelled = true;
			native->maps_stats.cancelled++;
		}
}

static void forget_asked(struct maps_reader *reader, const struct maps_read *read)
{
	for (size_t i = 0; i < reader->asked_count; i++)
		if (reader->asked[i] == read) {
			memmove(&reader->asked[i], &reader->asked[i + 1], (reader->asked_count - i - 1) * sizeof(*reader->asked));
			reader->asked_count--;
			return;
		}
}

int native_stacks_open(struct session *session)
{
	struct native_stacks *native = calloc(1, sizeof(*native));
	struct unwind_cache_ops ops = { .ctx = native, .upload_table = upload_table,
					.release_table = release_table, .add_chunk = add_chunk,
					.remove_chunk = remove_chunk };
	int err;

	if (!native)
		return -ENOMEM;
	native->maps = bpf_sampler_unwind_maps(session->sampler);
	err = unwind_cache_new(&native->cache, unwind_maps_row_capacity(native->maps), &ops);
	if (!err && session->budget) {
		err = unwind_cache_set_target_budget(native->cache, session->budget);
		if (err)
			unwind_cache_free(native->cache);
	}
	if (!err) {
		err = unwind_cache_build_in_background(native->cache);
		if (err)
			unwind_cache_free(native->cache);
	}
	if (err) {
		free(native);
		return err;
	}
	session->native = native;
	return 0;
}

void native_stacks_close(struct session *session)
{
	if (!session->native)
		return;
	maps_reader_stop(session->native);
	unwind_cache_free(session->native->cache);
	free(session->native);
	session->native = NULL;
}

/* The first failure to give BPF a process's mappings or a table is said, once: the samples
 * keep their Python frames (their native walks stop short). */
static void report_upload_error(struct session *session, const char *what, int err)
{
	struct native_stacks *native = session->native;

	if (native->upload_error_reported || session->options->quiet)
		return;
	report_error("warning: %s: no native stacks: %s", what, strerror(-err));
	native->upload_error_reported = true;
}

/* A read's outcome: a process gone meanwhile is not news, nor one the target budget refused
 * (the summary counts those); anything else is said once, and its samples keep their Python
 * frames (their native walks stop with NO_MAPPING). */
static void attached(struct session *session, pid_t pid, int err)
{
	char what[64];

	if (!err || err == -ESRCH || err == -ENOSPC)
		return;
	snprintf(what, sizeof(what), "pid %d", (int)pid);
	report_upload_error(session, what, err);
}

/* for_walk: read again for a walk that stopped where the last read knew no table (paced, as
 * ask_read's). With the reader thread running, the read is asked of it (applied by
 * native_stacks_poll). */
static void attach(struct session *session, pid_t pid, bool for_walk)
{
	struct native_stacks *native = session->native;
	int err;

	if (!native)
		return;
	if (native->reader.started) {
		ask_read(native, pid, for_walk, for_walk);
		return;
	}
	err = for_walk ? unwind_cache_map_proc_for_walk(native->cache, pid, &native->proc)
		       : unwind_cache_map_proc(native->cache, pid, &native->proc);
	if (!err)
		err = unwind_maps_set_proc(native->maps, pid, &native->proc);
	attached(session, pid, err);
}

/* The reads done since the last call, into the cache and BPF, in the order they were asked. */
static void apply_reads(struct session *session)
{
	struct native_stacks *native = session->native;
	struct maps_reader *reader = &native->reader;
	struct maps_read *read;

	if (!reader->started || !reader->asked_count)
		return;
	pthread_mutex_lock(&reader->lock);
	read = reader->done_head;
	reader->done_head = NULL;
	reader->done_tail = &reader->done_head;
	reader->done_count = 0;
	pthread_cond_signal(&reader->wake);
	pthread_mutex_unlock(&reader->lock);
	while (read) {
		struct maps_read *next = read->next;
		uint64_t waited_us = clock_monotonic_us() - read->asked_us;
		int err = read->err;

		forget_asked(reader, read);
		native->maps_stats.applied++;
		if (waited_us > native->maps_stats.max_wait_us)
			native->maps_stats.max_wait_us = waited_us;
		if (read->cancelled) {
			if (session->resolver.native)
				symbolize_native_maps_unread(session->resolver.native, read->pid);
			maps_read_free(read);
			read = next;
			continue;
		}
		/* (a failed read gives none: the names wait no longer) */
		if (session->resolver.native)
			symbolize_native_adopt_maps(session->resolver.native, read->pid, &read->prepared.named);
		if (!err)
			err = unwind_cache_map_prepared(native->cache, &read->prepared, read->for_walk, &native->proc);
		if (!err)
			err = unwind_maps_set_proc(native->maps, read->pid, &native->proc);
		attached(session, read->pid, err);
		maps_read_free(read);
		read = next;
	}
}

void native_stacks_attach(struct session *session, pid_t pid)
{
	attach(session, pid, false);
}

void native_stacks_poll(struct session *session)
{
	struct native_stacks *native = session->native;
	pid_t pids[64];
	size_t count;
	int err;

	if (!native)
		return;
	err = unwind_maps_take_error(native->maps);
	if (err)
		report_upload_error(session, "a table's chunk could not be put into BPF", err);
	apply_reads(session);
	/* A table finished on the builder thread is placed; the processes mapping it get it, from
	 * their last read: reading maps again for each table would make a process that maps
	 * thousands of files (each build freeing room for the next of its files) read its maps
	 * thousands of times. */
	do {
		count = unwind_cache_poll(native->cache, pids, sizeof(pids) / sizeof(pids[0]));
		for (size_t i = 0; i < count; i++) {
			err = unwind_cache_proc_mappings(native->cache, pids[i], &native->proc);
			if (!err)
				err = unwind_maps_set_proc(native->maps, pids[i], &native->proc);
			native->maps_stats.patched++;
			attached(session, pids[i], err);
		}
	} while (count == sizeof(pids) / sizeof(pids[0]));
}

size_t native_stacks_prebuild_command(struct session *session, char *const argv[])
{
	static char paths[LAUNCH_FILES_MAX][PATH_MAX];
	size_t count, queued = 0;

	if (!session->native)
		return 0;
	count = launch_files_find(argv, paths, LAUNCH_FILES_MAX);
	for (size_t i = 0; i < count; i++) {
		/* The user's own command, about to run: its files are opened by the paths found for it. */
		int fd = open(paths[i], O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		struct stat info;

		if (fd < 0)
			continue;
		if (fstat(fd, &info) == 0 && S_ISREG(info.st_mode))
			queued += unwind_cache_prebuild_file(session->native->cache, fd) == 0;
		close(fd);
	}
	return queued;
}

bool native_stacks_building(struct session *session)
{
	return session->native &&
	       (unwind_cache_building(session->native->cache) || unwind_maps_updating(session->native->maps) ||
		session->native->reader.asked_count);
}

void native_stacks_detach(struct session *session, pid_t pid)
{
	struct native_stacks *native = session->native;

	if (!native)
		return;
	cancel_reads(native, pid);
	if (!unwind_cache_knows_proc(native->cache, pid))
		return;
	/* Its held samples are unwound while its mappings are still known. */
	late_unwind_settle_pid(session, pid);
	/* The names its pcs were given belong to the image that is gone. */
	sample_resolve_forget_native(&session->resolver);
	unwind_maps_forget_proc(native->maps, pid);
	unwind_cache_forget_proc(native->cache, pid);
}

/* The pc the walk could not go past: the last one it recorded (BPF records a pc before it looks
 * for its mapping), else where the sample landed. */
static uint64_t stopping_pc(const struct pbp_record *record, size_t size)
{
	const uint64_t *pcs = (const uint64_t *)((const struct pbp_py_frame *)(record + 1) + record->py_frame_count);
	size_t needed = sizeof(*record) + (size_t)record->py_frame_count * sizeof(struct pbp_py_frame) +
			(size_t)record->native_frame_count * sizeof(uint64_t);

	if (record->native_frame_count == 0 || size < needed)
		return record->user_ip;
	return pcs[record->native_frame_count - 1] & ~PBP_NATIVE_PC_EVAL;
}

void native_stacks_on_record(struct session *session, const struct pbp_record *record, size_t size)
{
	struct native_stacks *native = session->native;
	uint64_t pc, now_ms;

	if (!native || size < sizeof(*record) ||
	    (record->native_stop != UNWIND_STOP_NO_MAPPING && record->native_stop != UNWIND_STOP_NO_TABLE))
		return;
	pc = stopping_pc(record, size);
	/* The files samples stop in are the ones to build first. */
	if (record->native_stop == UNWIND_STOP_NO_TABLE)
		unwind_cache_want_pc(native->cache, (pid_t)record->pid, pc);
	/* a read on its way answers this walk too */
	if (native->reader.started && read_asked(native, (pid_t)record->pid))
		return;
	/* A target whose first read was put off (MAPS_READS_MAX on their way) is asked for again by
	 * its samples: nothing else would (the cache re-reads only the processes it knows). */
	if (native->reader.started && !unwind_cache_knows_proc(native->cache, (pid_t)record->pid)) {
		ask_read(native, (pid_t)record->pid, false, true);
		return;
	}
	now_ms = clock_monotonic_ms();
	/* The leaf too: a walk that stopped before recording anything says only where it landed. */
	if (!unwind_cache_should_refresh(native->cache, (pid_t)record->pid, pc, now_ms) &&
	    !unwind_cache_should_refresh(native->cache, (pid_t)record->pid, record->user_ip, now_ms))
		return;
	native->refreshes++;
	attach(session, (pid_t)record->pid, true);
}

int native_stacks_table_at(struct session *session, pid_t pid, uint64_t pc, uint64_t sample_ns,
			   const struct unwind_table **table, uint64_t *bias)
{
	struct native_stacks *native = session->native;
	struct unwind_table_ref ref;
	const struct unwind_row *rows;
	bool reading;

	if (!native)
		return UNWIND_STOP_NOT_WALKED;
	reading = native->reader.started && read_asked(native, pid);
	switch (unwind_cache_table_at(native->cache, pid, pc, &ref, bias)) {
	case UNWIND_PC_TABLE:
		break;
	case UNWIND_PC_BUILDING:
		/* The files held samples wait for are built first, as those BPF's walks stop in. */
		unwind_cache_want_pc(native->cache, pid, pc);
		return STACK_UNWIND_WAIT;
	case UNWIND_PC_NO_MAPPING:
		/* Maps read before the sample may not hold a library loaded since: read again (at most
		 * every UNWIND_CACHE_REFRESH_MS), and the sample waits for that read. */
		if (unwind_cache_read_ms(native->cache, pid) * 1000000u > sample_ns)
			return UNWIND_STOP_NO_MAPPING;
		/* fall through */
	case UNWIND_PC_DEFERRED:
		/* a read on its way may bring the mapping: the sample waits for it */
		if (reading) {
			native->read_waits++;
			return STACK_UNWIND_WAIT;
		}
		/* no read will come for it: the sample goes now, its native frames cut there */
		if (unwind_cache_refresh_refused(native->cache, pid))
			return UNWIND_STOP_NO_TABLE;
		if (unwind_cache_should_refresh(native->cache, pid, pc, clock_monotonic_ms())) {
			native->refreshes++;
			attach(session, pid, true);
		}
		return STACK_UNWIND_WAIT;
	case UNWIND_PC_UNKNOWN_PROC:
		/* its first read (the process just found) is on its way */
		if (!reading)
			return UNWIND_STOP_NO_TABLE;
		native->read_waits++;
		return STACK_UNWIND_WAIT;
	default:
		return UNWIND_STOP_NO_TABLE;
	}
	rows = unwind_maps_table_rows(native->maps, &ref);
	if (!rows)
		return UNWIND_STOP_NO_TABLE;
	native->view = (struct unwind_table){ .rows = (struct unwind_row *)rows, .count = ref.row_count };
	if (ref.page_count) {
		native->view.pages = (uint32_t *)(rows + ref.row_count);
		native->view.page_count = ref.page_count;
		native->view.page_base = ref.page_base;
	}
	*table = &native->view;
	return 0;
}

void native_stacks_unmap_tables(struct session *session)
{
	if (session->native)
		unwind_maps_unmap_tables(session->native->maps);
}

void native_stacks_stats(const struct session *session, struct unwind_cache_stats *stats)
{
	if (session->native)
		unwind_cache_stats(session->native->cache, stats);
	else
		*stats = (struct unwind_cache_stats){ 0 };
}

uint64_t native_stacks_refreshes(const struct session *session)
{
	return session->native ? session->native->refreshes : 0;
}

uint64_t native_stacks_read_waits(const struct session *session)
{
	return session->native ? session->native->read_waits : 0;
}

void native_stacks_maps_stats(const struct session *session, struct native_maps_stats *stats)
{
	struct maps_reader *reader;

	*stats = (struct native_maps_stats){ 0 };
	if (!session->native)
		return;
	reader = &session->native->reader;
	*stats = session->native->maps_stats;
	if (!reader->started)
		return;
	pthread_mutex_lock(&reader->lock);
	stats->busy_us = reader->busy_us;
	pthread_mutex_unlock(&reader->lock);
	stats->asked_now = reader->asked_count;
}

size_t native_stacks_held_bytes(const struct session *session)
{
	return session->native ? session->native->reader.asked_count * sizeof(struct maps_read) : 0;
}
