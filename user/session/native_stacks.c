// SPDX-License-Identifier: MIT
/*
 * The targets' native-unwinding tables in BPF (include/unwind_table.h): the
 * cache (target/unwind_cache.h) builds one table per file, this uploads it
 * into the sampler's maps (sampler/unwind_maps.h) before the mappings of a
 * process that use it, and keeps each ready target's mappings current: when it
 * becomes ready, when it exec's or exits, and when a walk stops at a pc in a
 * library loaded since.
 */
#include "session/session_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sampler/unwind_maps.h"
#include "target/launch_files.h"
#include "target/stack_copy_unwind.h"
#include "util/clock.h"

struct native_stacks {
	struct unwind_cache *cache;
	struct unwind_maps *maps;
	struct unwind_proc proc;   /* the one being written (8 KiB: not on the stack) */
	uint64_t refreshes;        /* maps read again for a walk that stopped at an unknown pc */
	bool upload_error_reported;
	struct unwind_table view;  /* the rows native_stacks_table_at last handed out */
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

/* for_walk: read again for a walk that stopped where the last read knew no table. */
static void attach(struct session *session, pid_t pid, bool for_walk)
{
	struct native_stacks *native = session->native;
	int err;

	if (!native)
		return;
	err = for_walk ? unwind_cache_map_proc_for_walk(native->cache, pid, &native->proc)
		       : unwind_cache_map_proc(native->cache, pid, &native->proc);
	if (!err)
		err = unwind_maps_set_proc(native->maps, pid, &native->proc);
	/* A process gone meanwhile is not news; anything else is said once, and its samples keep
	 * their Python frames (their native walks stop with NO_MAPPING). */
	if (err && err != -ESRCH) {
		char what[64];

		snprintf(what, sizeof(what), "pid %d", (int)pid);
		report_upload_error(session, what, err);
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
	/* A table finished on the builder thread is placed; the processes mapping it get it. */
	do {
		count = unwind_cache_poll(native->cache, pids, sizeof(pids) / sizeof(pids[0]));
		for (size_t i = 0; i < count; i++)
			if (unwind_cache_knows_proc(native->cache, pids[i]))
				native_stacks_attach(session, pids[i]);
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
	       (unwind_cache_building(session->native->cache) || unwind_maps_updating(session->native->maps));
}

void native_stacks_detach(struct session *session, pid_t pid)
{
	struct native_stacks *native = session->native;

	if (!native || !unwind_cache_knows_proc(native->cache, pid))
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

	if (!native)
		return UNWIND_STOP_NOT_WALKED;
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
		/* no read will come for it: the sample goes now, its native frames cut there */
		if (unwind_cache_refresh_refused(native->cache, pid))
			return UNWIND_STOP_NO_TABLE;
		if (unwind_cache_should_refresh(native->cache, pid, pc, clock_monotonic_ms())) {
			native->refreshes++;
			attach(session, pid, true);
		}
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
