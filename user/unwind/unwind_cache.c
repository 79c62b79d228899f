// SPDX-License-Identifier: MIT
#include "unwind/unwind_cache.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "parser/parser_client.h"
#include "elf/elf_file.h"
#include "proc/proc_maps.h"
#include "unwind/unwind_chunks.h"
#include "unwind/file_table.h"
#include "elf/vdso.h"
#include "util/array.h"
#include "util/target_budget.h"
#include "util/clock.h"
#include "util/thread.h"
#include "util/work_queue.h"

/*
 * Files handed to the builder thread and not yet placed: each holds a duplicated
 * descriptor until built and its rows until placed. A process mapping thousands of
 * distinct files would otherwise make the profiler hold thousands of descriptors
 * (past RLIMIT_NOFILE, failing every other open) and tables. A file found when the
 * queue is full is deferred: no entry is made, its mapping leaves the process's
 * known ranges, and a walk that stops in it re-reads the maps (at most every
 * UNWIND_CACHE_REFRESH_MS), queueing it then. A host's processes share most files:
 * a normal start queues a few dozen at once.
 */
#define UNWIND_BUILD_QUEUE_MAX 64
/* Past a full queue, files of a process read again because its samples wait for them (their
 * walks stopped there: unwind_cache_map_proc_for_walk) still get this many: a host whose other
 * processes fill the queue with files no sample needs would otherwise defer them read after read.
 * Each process takes from them once, UNWIND_BUILD_QUEUE_WANTED_EACH at most: on a host of
 * hundreds of processes whose walks all wait, those re-read every UNWIND_CACHE_REFRESH_MS would
 * otherwise keep the room full of their files, and a process started since would find it full
 * read after read. */
#define UNWIND_BUILD_QUEUE_WANTED 32
#define UNWIND_BUILD_QUEUE_WANTED_EACH 8

/* Program headers read to find a mapping's load bias; real files have about a dozen. */
#define UNWIND_CACHE_MAX_PHDRS 64

/* One distinct file: its table's place in BPF, or why it has none. */
struct cached_file {
	struct unwind_file_id id;
	bool building;        /* its table is being built in the background (no table yet) */
	bool failed;          /* no table, ever: failure says why */
	uint8_t failure;      /* enum unwind_cache_failure */
	uint32_t table_id;
	struct unwind_table_ref ref;
	size_t refs;          /* processes mapping the file */
	uint64_t idle_since;  /* placed but mapped by no process since this tick (0: in use) */
	uint64_t verdict_idle_since; /* failed and mapped by no process since this tick (0: mapped) */
};

struct address_range {
	uint64_t start, end;
};

/* An executable mapping whose file has (or will have) a table: where a stopped walk's pc lies. */
struct mapped_file {
	uint64_t start, end;
	struct cached_file *file; /* NULL: deferred (the build queue was full), queued by a later read */
	uint64_t bias;  /* file pc = runtime pc - bias */
	bool waited;    /* a walk of the process waited for the file: it has had its turn */
};

struct cached_proc {
	pid_t pid;
	uint64_t turns; /* distinct files its walks have waited for: its next file's turn */
	bool took_wanted_room; /* files of its were queued past a full queue (once per process) */
	struct cached_file **files; /* distinct files with a table, one reference each */
	size_t file_count;
	struct mapped_file *mapped; /* the mappings of files, in maps order */
	size_t mapped_count;
	struct address_range *ranges; /* the executable mappings of the last read, ascending */
	size_t range_count;
	uint64_t read_ms;
	/* what BPF was given at the last read: a table placed since is patched in, not read again */
	struct unwind_mapping *bpf_mappings;
	size_t bpf_count;
	bool bpf_stale; /* patched since BPF was given them (unwind_cache_poll lists it) */
	uint64_t charged; /* bytes charged to the target budget for it */
};

/* One file's table built on the builder thread: it touches nothing else of the cache. */
struct build_job {
	struct work_item queued;  /* in the builder's queue */
	struct build_job *next;   /* in its list of jobs built */
	struct cached_file *file;
	uint64_t turn;   /* the least turn a waiting process gave it; UINT64_MAX: none waits */
	uint64_t asked;  /* when its turn was first given (the cache's want clock) */
	int fd;
	int err;
	struct unwind_table table;
	uint64_t build_us;
};

/*
 * Building a libpython's table takes tens of milliseconds: on the thread that
 * drains the ring buffer, the code objects of an import would be freed before
 * they are read. Files are built on this thread; the cache places them when
 * the caller polls. A file is the slice of work: between two, the builder takes
 * a file walks stopped in for want of its table (the files of the processes
 * being sampled), else the oldest. Among those, by turns: each process's first
 * waited-for file has turn 1, its second turn 2, and so on, and the builder takes
 * the least turn, then the file asked for first. A host's processes thus take
 * turns: a process started on a host of hundreds whose walks all wait gets its
 * first files after the others' files of the same round, not after all of theirs
 * (the most-waited-for file first let a busy process's files always go first).
 * A file shared by many processes (libc, libpython) is built once, in the
 * earliest turn any of them gave it.
 */
struct builder {
	pthread_t thread;
	bool started;
	struct parser_client *parser; /* the cache's: this thread's alone once it runs */
	pthread_mutex_t lock;
	struct parser_client_stats parser_stats; /* the worker's, as of the last build (under the lock) */
	struct work_queue todo; /* in order; bounded by the cache (builds_pending, builder_full) */
	struct build_job *done, *done_tail;      /* in the order they were built */
};

struct unwind_cache {
	size_t row_capacity;
	struct unwind_chunks *chunks; /* where the tables lie */
	/* The parser worker that builds the tables (parser/parser_client.h): the builder thread's
	 * once it runs, the caller's before. */
	struct parser_client *parser;
	struct builder builder;
	struct unwind_cache_ops ops;
	struct cached_file **files;
	size_t file_count, file_capacity;
	struct cached_proc *procs;
	size_t proc_count, proc_capacity;
	bool table_used[UNWIND_MAX_TABLES];
	size_t tables_built;
	size_t rows_used, files_placed;
	size_t peak_rows_used, peak_files;
	size_t idle_files;    /* placed tables no process maps: kept until their room is needed */
	size_t idle_reused;   /* times an idle table served a new process instead of a rebuild */
	size_t idle_evicted;  /* idle tables given up for a new file's room */
	size_t idle_rows;     /* slots the idle tables hold */
	size_t idle_limit;    /* the most they may */
	size_t idle_dropped;  /* idle tables given up past the limit */
	uint64_t idle_dropped_rows;
	size_t builds_pending; /* jobs queued and not yet placed (each a descriptor until built) */
	size_t builds_deferred; /* files met while the queue was full, left for a later read */
	size_t builds_cancelled; /* queued files every process mapping them left before their build */
	size_t builds_yielded;   /* queued files deferred again for an earlier turn's */
	bool reading_for_walk;  /* the read in progress is for a stopped walk's pc: the wanted slots */
	bool reader_took_wanted_room; /* ... of a process that had its share of those slots */
	size_t wanted_room_taken;     /* files the read in progress queued past a full queue */
	uint64_t reader_turn;         /* the turn its next waited-for file would have */
	struct cached_proc *reading;  /* what the read in progress has found so far */
	uint64_t want_clock;    /* orders the turns given to queued files */
	uint64_t idle_clock;  /* orders idle tables, oldest first */
	size_t stale_procs;        /* processes whose bpf_stale is set */
	size_t idle_verdicts;      /* failed files no process maps: kept so as not to read them again */
	size_t verdicts_forgotten; /* of those, the oldest given up past UNWIND_CACHE_IDLE_VERDICTS */
	size_t failures[UNWIND_FAIL_COUNT];
	uint64_t build_us;
	struct target_budget *budget; /* NULL: none */
	int budget_store;
	uint64_t charged; /* what its processes hold of the budget */
	size_t procs_refused;
};

int unwind_cache_new(struct unwind_cache **out, size_t row_capacity, const struct unwind_cache_ops *ops)
{
	struct unwind_cache *cache = calloc(1, sizeof(*cache));
	struct unwind_chunk_ops chunk_ops = { 0 };

	if (!cache)
		return -ENOMEM;
	cache->row_capacity = row_capacity;
	cache->idle_limit = UNWIND_CACHE_IDLE_ROWS;
	if (ops) {
		cache->ops = *ops;
		chunk_ops = (struct unwind_chunk_ops){ .ctx = ops->ctx, .add_chunk = ops->add_chunk,
						       .remove_chunk = ops->remove_chunk };
	}
	if (unwind_chunks_new(&cache->chunks, row_capacity, &chunk_ops)) {
		free(cache);
		return -ENOMEM;
	}
	if (parser_client_new(&(struct parser_client_options){ 0 }, &cache->parser)) {
		unwind_chunks_free(cache->chunks);
		free(cache);
		return -ENOMEM;
	}
	*out = cache;
	return 0;
}

int unwind_cache_set_target_budget(struct unwind_cache *cache, struct target_budget *budget)
{
	int store = target_budget_register(budget, "process mappings", NULL, NULL, NULL);

	if (store < 0)
		return store;
	cache->budget = budget;
	cache->budget_store = store;
	return 0;
}

/* What a process's read makes the cache hold: its slot and arrays. */
static uint64_t cached_proc_bytes(const struct cached_proc *proc)
{
	return sizeof(*proc) + proc->file_count * sizeof(*proc->files) + proc->mapped_count * sizeof(*proc->mapped) +
	       proc->range_count * sizeof(*proc->ranges) + proc->bpf_count * sizeof(*proc->bpf_mappings);
}

/* next is to replace old (NULL: new): the bytes it adds charged, those it frees released. 0, or
 * -ENOSPC when the budget refuses them (counted). */
static int charge_proc(struct unwind_cache *cache, const struct cached_proc *old, struct cached_proc *next)
{
	uint64_t before = old ? old->charged : 0;

	next->charged = cached_proc_bytes(next);
	if (!cache->budget)
		return 0;
	if (next->charged <= before) {
		target_budget_release(cache->budget, cache->budget_store, before - next->charged);
		cache->charged -= before - next->charged;
		return 0;
	}
	/* past its share the read is refused before the budget would evict the others' objects for it */
	if (cache->charged + (next->charged - before) > target_budget_limit(cache->budget) / 100 *
								  UNWIND_CACHE_BUDGET_SHARE_PERCENT)
		target_budget_refuse(cache->budget, cache->budget_store);
	else if (target_budget_charge(cache->budget, cache->budget_store, next->charged - before) == 0) {
		cache->charged += next->charged - before;
		return 0;
	}
	cache->procs_refused++;
	return -ENOSPC;
}

static void cached_proc_free(struct cached_proc *proc)
{
	free(proc->files);
	free(proc->ranges);
	free(proc->mapped);
	free(proc->bpf_mappings);
	proc->files = NULL;
	proc->ranges = NULL;
	proc->mapped = NULL;
	proc->bpf_mappings = NULL;
}

static void build_job_free(struct build_job *job)
{
	if (job->fd >= 0)
		close(job->fd);
	unwind_table_free(&job->table);
	free(job);
}

static void build_jobs_free(struct build_job *job)
{
	while (job) {
		struct build_job *next = job->next;

		build_job_free(job);
		job = next;
	}
}

static struct build_job *job_of(const struct work_item *item)
{
	return WORK_QUEUE_ENTRY(item, struct build_job, queued);
}

/* Whether job a goes before job b: the lesser turn, then the one asked for first (jobs no walk
 * waits for keep the queue's order). */
static bool goes_before(const struct build_job *a, const struct build_job *b)
{
	if (a->turn != b->turn)
		return a->turn < b->turn;
	return a->turn != UINT64_MAX && a->asked < b->asked;
}

static bool builds_sooner(const struct work_item *item, const struct work_item *best)
{
	return goes_before(job_of(item), job_of(best));
}

/* Takes the queued job of the least turn; the first asked for among equals. Under the lock. */
static struct build_job *take_next_turn(struct builder *builder)
{
	struct work_item *best = work_queue_find_best(&builder->todo, builds_sooner);

	work_queue_remove(&builder->todo, best);
	return job_of(best);
}

static void *builder_run(void *opaque)
{
	struct builder *builder = opaque;

	/* At the profiler's own priority: at nice 10, two CPU-bound processes beside the target
	 * delayed the first table by seconds, and every walk meanwhile lost its native frames.
	 * The drain thread is a thread of its own, so a build never delays a drain; the
	 * scheduler shares the CPUs between them. */
	/* the worker starts while the first files are being found */
	parser_client_prepare(builder->parser);
	pthread_mutex_lock(&builder->lock);
	for (;;) {
		struct build_job *job;
		struct errbuf error;
		uint64_t started_us;

		if (!work_queue_wait(&builder->todo, &builder->lock))
			break;
		job = take_next_turn(builder);
		pthread_mutex_unlock(&builder->lock);
		started_us = clock_monotonic_us();
		job->err = unwind_table_from_worker(builder->parser, job->fd, &job->table, &error);
		job->build_us = clock_monotonic_us() - started_us;
		close(job->fd);
		job->fd = -1;
		pthread_mutex_lock(&builder->lock);
		parser_client_stats(builder->parser, &builder->parser_stats);
		job->next = NULL;
		if (builder->done_tail)
			builder->done_tail->next = job;
		else
			builder->done = job;
		builder->done_tail = job;
	}
	pthread_mutex_unlock(&builder->lock);
	return NULL;
}

int unwind_cache_build_in_background(struct unwind_cache *cache)
{
	struct builder *builder = &cache->builder;
	int err;

	if (builder->started)
		return 0;
	pthread_mutex_init(&builder->lock, NULL);
	work_queue_init(&builder->todo, 0);
	builder->parser = cache->parser;
	parser_client_stats(cache->parser, &builder->parser_stats);
	err = thread_start_without_signals(&builder->thread, builder_run, builder);
	if (err) {
		work_queue_destroy(&builder->todo);
		pthread_mutex_destroy(&builder->lock);
		return err;
	}
	builder->started = true;
	return 0;
}

static void builder_stop(struct builder *builder)
{
	if (!builder->started)
		return;
	pthread_mutex_lock(&builder->lock);
	work_queue_close(&builder->todo);
	pthread_mutex_unlock(&builder->lock);
	pthread_join(builder->thread, NULL);
	for (struct work_item *item; (item = work_queue_pop(&builder->todo));)
		build_job_free(job_of(item));
	build_jobs_free(builder->done);
	work_queue_destroy(&builder->todo);
	pthread_mutex_destroy(&builder->lock);
	builder->started = false;
}

void unwind_cache_free(struct unwind_cache *cache)
{
	if (!cache)
		return;
	builder_stop(&cache->builder);
	for (size_t i = 0; i < cache->proc_count; i++)
		cached_proc_free(&cache->procs[i]);
	for (size_t i = 0; i < cache->file_count; i++)
		free(cache->files[i]);
	free(cache->procs);
	free(cache->files);
	unwind_chunks_free(cache->chunks);
	parser_client_free(cache->parser);
	free(cache);
}

int unwind_cache_set_parser_options(struct unwind_cache *cache, const struct parser_client_options *options)
{
	struct parser_client *client;

	if (cache->builder.started || parser_client_new(options, &client))
		return -ENOMEM;
	parser_client_free(cache->parser);
	cache->parser = client;
	return 0;
}

void unwind_cache_set_idle_limit(struct unwind_cache *cache, size_t rows)
{
	cache->idle_limit = rows;
}

const char *unwind_cache_failure_name(enum unwind_cache_failure failure)
{
	static const char *const names[UNWIND_FAIL_COUNT] = {
		[UNWIND_FAIL_OPEN] = "open",       [UNWIND_FAIL_NOT_ELF] = "not_elf",
		[UNWIND_FAIL_NO_CFI] = "no_cfi",   [UNWIND_FAIL_TOO_BIG] = "too_big",
		[UNWIND_FAIL_NO_ROOM] = "no_room", [UNWIND_FAIL_UPLOAD] = "upload",
		[UNWIND_FAIL_OTHER] = "other",     [UNWIND_FAIL_WORKER] = "worker",
	};

	return (unsigned)failure < UNWIND_FAIL_COUNT ? names[failure] : "?";
}

static struct cached_proc *proc_of(const struct unwind_cache *cache, pid_t pid)
{
	for (size_t i = 0; i < cache->proc_count; i++)
		if (cache->procs[i].pid == pid)
			return &cache->procs[i];
	return NULL;
}

bool unwind_cache_knows_proc(const struct unwind_cache *cache, pid_t pid)
{
	return proc_of(cache, pid) != NULL;
}

/* ---- the rows map and the table ids ---- */

/* Slots of the rows map the table occupies: rows and page index. */
static uint32_t ref_slots(const struct unwind_table_ref *ref)
{
	return unwind_table_slots(ref->row_count, ref->page_count);
}

static int allocate_table_id(struct unwind_cache *cache, uint32_t *table_id)
{
	for (uint32_t id = 0; id < UNWIND_MAX_TABLES; id++) {
		if (!cache->table_used[id]) {
			cache->table_used[id] = true;
			*table_id = id;
			return 0;
		}
	}
	return -ENOSPC;
}

/* Rows in a chunk and a table id for a table of slots rows: 0, -ENOSPC (no room: an idle
 * table may make some), or another negative errno. */
static int reserve_place(struct unwind_cache *cache, uint32_t slots, struct unwind_table_ref *ref,
			 uint32_t *table_id)
{
	int err = unwind_chunks_allocate(cache->chunks, slots, &ref->chunk, &ref->first_row);

	if (err)
		return err;
	err = allocate_table_id(cache, table_id);
	if (err)
		unwind_chunks_release(cache->chunks, ref->chunk, ref->first_row);
	return err;
}

/* ---- one file ---- */

static struct cached_file *file_with_id(const struct unwind_cache *cache, const struct unwind_file_id *id)
{
	for (size_t i = 0; i < cache->file_count; i++) {
		const struct unwind_file_id *known = &cache->files[i]->id;

		if (known->kind == id->kind && known->len == id->len && memcmp(known->bytes, id->bytes, id->len) == 0)
			return cache->files[i];
	}
	return NULL;
}

static enum unwind_cache_failure failure_of_build_error(int err)
{
	switch (err) {
	case -ENODATA:
		return UNWIND_FAIL_NO_CFI;
	case -E2BIG:
		return UNWIND_FAIL_TOO_BIG;
	case -ENOEXEC:
		return UNWIND_FAIL_NOT_ELF;
	case -ECHILD:
	case -ENOSYS:
		return UNWIND_FAIL_WORKER;
	default:
		return UNWIND_FAIL_OTHER;
	}
}

/* A file is remembered as failed once: it is never built again. */
static void mark_failed(struct unwind_cache *cache, struct cached_file *file, enum unwind_cache_failure failure)
{
	file->failed = true;
	file->failure = (uint8_t)failure;
	file->ref = (struct unwind_table_ref){ 0 };
	cache->failures[failure]++;
}

/* Gives up the idle table that has been idle longest; false if there is none. */
static bool evict_oldest_idle(struct unwind_cache *cache)
{
	size_t oldest = SIZE_MAX;
	struct cached_file *file;

	for (size_t i = 0; i < cache->file_count; i++) {
		const struct cached_file *candidate = cache->files[i];

		if (candidate->idle_since &&
		    (oldest == SIZE_MAX || candidate->idle_since < cache->files[oldest]->idle_since))
			oldest = i;
	}
	if (oldest == SIZE_MAX)
		return false;
	file = cache->files[oldest];
	if (cache->ops.release_table)
		cache->ops.release_table(cache->ops.ctx, file->table_id);
	cache->table_used[file->table_id] = false;
	unwind_chunks_release(cache->chunks, file->ref.chunk, file->ref.first_row);
	cache->rows_used -= ref_slots(&file->ref);
	cache->idle_rows -= ref_slots(&file->ref);
	cache->files_placed--;
	cache->idle_files--;
	free(file);
	cache->files[oldest] = cache->files[--cache->file_count];
	return true;
}

/*
 * Failed files no process maps are remembered, so that a library mapped again is not read
 * again, but not for ever: a host (or an attacker) mapping new files all day would otherwise
 * grow the list, and every lookup's walk over it, without end. Past the limit the oldest go,
 * down to three quarters of it, so each scan serves many.
 */
static void trim_idle_verdicts(struct unwind_cache *cache)
{
	if (cache->idle_verdicts <= UNWIND_CACHE_IDLE_VERDICTS)
		return;
	while (cache->idle_verdicts > UNWIND_CACHE_IDLE_VERDICTS / 4 * 3) {
		size_t oldest = SIZE_MAX;

		for (size_t i = 0; i < cache->file_count; i++) {
			const struct cached_file *candidate = cache->files[i];

			if (candidate->verdict_idle_since &&
			    (oldest == SIZE_MAX ||
			     candidate->verdict_idle_since < cache->files[oldest]->verdict_idle_since))
				oldest = i;
		}
		if (oldest == SIZE_MAX)
			break;
		free(cache->files[oldest]);
		cache->files[oldest] = cache->files[--cache->file_count];
		cache->idle_verdicts--;
		cache->verdicts_forgotten++;
	}
}

/* Idle tables past the limit go, longest idle first: what no target maps costs a bounded share. */
static void trim_idle(struct unwind_cache *cache)
{
	while (cache->idle_rows > cache->idle_limit) {
		size_t before = cache->idle_rows;

		if (!evict_oldest_idle(cache))
			break;
		cache->idle_dropped++;
		cache->idle_dropped_rows += before - cache->idle_rows;
	}
}

/* Why a table found no place: NO_ROOM for want of room, else what refused it. */
static enum unwind_cache_failure failure_of_place_error(int err)
{
	switch (err) {
	case -ENOSPC:
		return UNWIND_FAIL_NO_ROOM;
	case -ENOMEM:
		return UNWIND_FAIL_OTHER;
	default:
		return UNWIND_FAIL_UPLOAD;
	}
}

/* Gives the file's built rows a place and an id, and uploads them. */
static void place_table(struct unwind_cache *cache, struct cached_file *file, const struct unwind_table *table)
{
	struct unwind_table_ref ref = { .row_count = (uint32_t)table->count,
					.page_base = table->page_base,
					.page_count = (uint32_t)table->page_count };
	uint32_t table_id = 0;
	int err;

	while ((err = reserve_place(cache, ref_slots(&ref), &ref, &table_id)) == -ENOSPC) {
		if (!evict_oldest_idle(cache))
			break;
		cache->idle_evicted++;
	}
	if (err) {
		mark_failed(cache, file, failure_of_place_error(err));
		return;
	}
	file->table_id = table_id;
	file->ref = ref;
	err = cache->ops.upload_table ? cache->ops.upload_table(cache->ops.ctx, table_id, &file->ref, table->rows,
								table->pages)
				      : 0;
	if (err) {
		cache->table_used[table_id] = false;
		unwind_chunks_release(cache->chunks, ref.chunk, ref.first_row);
		mark_failed(cache, file, UNWIND_FAIL_UPLOAD);
		return;
	}
	cache->tables_built++;
	cache->rows_used += ref_slots(&file->ref);
	cache->files_placed++;
	if (cache->rows_used > cache->peak_rows_used)
		cache->peak_rows_used = cache->rows_used;
	if (cache->files_placed > cache->peak_files)
		cache->peak_files = cache->files_placed;
}

/* A queued file taken out of the queue: the cache knows it no more. */
static void forget_file(struct unwind_cache *cache, struct cached_file *file)
{
	for (size_t i = 0; i < cache->file_count; i++)
		if (cache->files[i] == file) {
			cache->files[i] = cache->files[--cache->file_count];
			break;
		}
	free(file);
}

/* Hands the file open at fd to the builder thread (which takes a descriptor of its own). */
static int queue_build(struct unwind_cache *cache, struct cached_file *file, int fd)
{
	struct builder *builder = &cache->builder;
	struct build_job *job = calloc(1, sizeof(*job));

	if (!job)
		return -ENOMEM;
	job->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (job->fd < 0) {
		free(job);
		return -errno;
	}
	job->file = file;
	job->turn = UINT64_MAX;
	file->building = true;
	cache->builds_pending++;
	pthread_mutex_lock(&builder->lock);
	work_queue_push(&builder->todo, &job->queued); /* no limit of its own: cannot fail */
	pthread_mutex_unlock(&builder->lock);
	return 0;
}

/* The builder thread holds as many files as it may: a new one waits for a later read. */
static bool builder_full(const struct unwind_cache *cache)
{
	bool wanted_room = cache->reading_for_walk && !cache->reader_took_wanted_room &&
			   cache->wanted_room_taken < UNWIND_BUILD_QUEUE_WANTED_EACH;
	size_t room = UNWIND_BUILD_QUEUE_MAX + (wanted_room ? UNWIND_BUILD_QUEUE_WANTED : 0);

	return cache->builder.started && cache->builds_pending >= room;
}

/* A deferred mapping is no longer known: a walk stopping in it asks for a re-read. */
static void forget_range(struct cached_proc *next, uint64_t start)
{
	for (size_t i = 0; i < next->range_count; i++)
		if (next->ranges[i].start == start) {
			memmove(&next->ranges[i], &next->ranges[i + 1], (next->range_count - i - 1) * sizeof(*next->ranges));
			next->range_count--;
			return;
		}
}

/* The process no longer holds the file: its mappings of it are deferred, unknown to the ranges
 * (a walk stopping there reads the maps again, which queues it anew). */
static void proc_defer_file(struct cached_proc *proc, struct cached_file *file)
{
	for (size_t i = 0; i < proc->mapped_count; i++) {
		if (proc->mapped[i].file != file)
			continue;
		proc->mapped[i].file = NULL;
		proc->mapped[i].waited = false;
		forget_range(proc, proc->mapped[i].start);
	}
	for (size_t i = 0; i < proc->file_count; i++)
		if (proc->files[i] == file) {
			proc->files[i] = proc->files[--proc->file_count];
			file->refs--;
			break;
		}
}

/* Whether item leaves the queue before worst for a reader: a later turn, or the same asked for
 * later; and a job no walk waits for, the last queued of them. */
static bool builds_later(const struct work_item *item, const struct work_item *worst)
{
	return goes_before(job_of(worst), job_of(item)) || job_of(item)->turn == UINT64_MAX;
}

/*
 * The queue is full and a read for a stopped walk brings a file: the queued file of the latest
 * turn (one no walk waits for first), if later than the reader's, leaves the queue for it and
 * is deferred for every process mapping it. Turns order the queue's room as they order the
 * builder: a process started on a host whose every process waits gets its files queued in its
 * first turns, not only when one of hundreds of re-reads happens to find a free slot.
 */
static bool yield_to_reader(struct unwind_cache *cache)
{
	struct builder *builder = &cache->builder;
	struct build_job *job;

	if (!cache->reading_for_walk)
		return false;
	pthread_mutex_lock(&builder->lock);
	job = job_of(work_queue_find_best(&builder->todo, builds_later));
	if (job && job->turn > cache->reader_turn)
		work_queue_remove(&builder->todo, &job->queued);
	else
		job = NULL;
	pthread_mutex_unlock(&builder->lock);
	if (!job)
		return false;
	for (size_t i = 0; i < cache->proc_count; i++)
		proc_defer_file(&cache->procs[i], job->file);
	if (cache->reading)
		proc_defer_file(cache->reading, job->file);
	forget_file(cache, job->file);
	build_job_free(job);
	cache->builds_pending--;
	cache->builds_yielded++;
	cache->builds_deferred++;
	return true;
}

/* The cached entry of the file open at fd, built (or found failed) now if it is new, or queued
 * for the builder thread when there is one; NULL: -ENOMEM, or deferred (*deferred set). */
static struct cached_file *file_for(struct unwind_cache *cache, int fd, const struct unwind_file_id *id,
				    bool *deferred)
{
	struct cached_file *file = file_with_id(cache, id);
	struct unwind_table table = { 0 };
	struct errbuf error;
	uint64_t started_us;
	int err;

	*deferred = false;
	if (file)
		return file;
	if (builder_full(cache) && !yield_to_reader(cache)) {
		cache->builds_deferred++;
		*deferred = true;
		return NULL;
	}
	if (ARRAY_RESERVE(cache->files, cache->file_capacity, cache->file_count + 1))
		return NULL;
	file = calloc(1, sizeof(*file));
	if (!file)
		return NULL;
	file->id = *id;
	file->table_id = UNWIND_TABLE_NONE;
	if (cache->builder.started) {
		if (cache->builds_pending >= UNWIND_BUILD_QUEUE_MAX)
			cache->wanted_room_taken++;
		cache->files[cache->file_count++] = file;
		if (queue_build(cache, file, fd) != 0)
			mark_failed(cache, file, UNWIND_FAIL_OTHER);
		return file;
	}
	started_us = clock_monotonic_us();
	err = unwind_table_from_worker(cache->parser, fd, &table, &error);
	cache->build_us += clock_monotonic_us() - started_us;
	if (err)
		mark_failed(cache, file, failure_of_build_error(err));
	else
		place_table(cache, file, &table);
	/* BPF holds the rows now: no copy is kept. */
	unwind_table_free(&table);
	cache->files[cache->file_count++] = file;
	return file;
}

/*
 * Every process that mapped a queued file is gone before its build began: the build would be
 * for no one. On a host starting short-lived processes faster than their files can be built,
 * those builds would otherwise fill the builder's time and queue, and the files of the processes
 * still running would wait behind them. The file is forgotten: a later process mapping it
 * queues it again.
 */
static void cancel_build(struct unwind_cache *cache, struct cached_file *file)
{
	struct builder *builder = &cache->builder;
	struct build_job *job = NULL;

	pthread_mutex_lock(&builder->lock);
	for (struct work_item *item = work_queue_first(&builder->todo); item; item = work_queue_next(item)) {
		if (job_of(item)->file != file)
			continue;
		job = job_of(item);
		work_queue_remove(&builder->todo, item);
		break;
	}
	pthread_mutex_unlock(&builder->lock);
	if (!job)
		return; /* being built: finish_build keeps it, idle */
	build_job_free(job);
	cache->builds_pending--;
	cache->builds_cancelled++;
	forget_file(cache, file);
}

/*
 * No process maps the file any more: its table stays where it is, idle, until a
 * new file needs the room (evict_oldest_idle). Keeping costs its rows in a chunk
 * (a fraction of a MiB for a libpython), while a rebuild costs 30-130 ms of CPU: a
 * host starting short-lived Pythons all day would otherwise rebuild the same
 * libpython and libc for each of them.
 */
static void release_file(struct unwind_cache *cache, struct cached_file *file)
{
	if (--file->refs)
		return;
	if (file->failed) {
		file->verdict_idle_since = ++cache->idle_clock;
		cache->idle_verdicts++;
		/* file itself may go: the callers are done with it */
		trim_idle_verdicts(cache);
		return;
	}
	if (file->building) {
		cancel_build(cache, file);
		return;
	}
	file->idle_since = ++cache->idle_clock;
	cache->idle_files++;
	cache->idle_rows += ref_slots(&file->ref);
	/* file itself may go (when it alone is past the limit): the callers are done with it */
	trim_idle(cache);
}

/* ---- one mapping ---- */

/*
 * The file behind a mapping, opened as the symbolizer opens it (elf_file_map_fd: map_files
 * first as O_PATH, reopened O_NOCTTY and non-blocking only once it is the regular file, device
 * and inode the maps line names: never a FIFO, a tty or a device), to be passed to the worker.
 */
static int open_mapped_file(pid_t pid, const struct proc_map *map)
{
	int fd;

	/* The vDSO has no file: every process maps the same image as ours. */
	if (vdso_is_map_name(map->path)) {
		fd = vdso_image_fd();
		if (fd < 0)
			return fd;
		fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
		return fd < 0 ? -errno : fd;
	}
	return elf_file_map_fd(pid, map);
}

static bool read_exact(int fd, void *buffer, size_t len, uint64_t offset)
{
	return pread(fd, buffer, len, (off_t)offset) == (ssize_t)len;
}

/* Runtime minus link-time address, from the PT_LOAD that holds the mapping's file offset. */
static int load_bias(int fd, const struct proc_map *map, uint64_t *bias)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t page_mask = ~((uint64_t)(page > 0 ? page : 4096) - 1);
	Elf64_Ehdr header;

	if (!read_exact(fd, &header, sizeof(header), 0) || memcmp(header.e_ident, ELFMAG, SELFMAG) ||
	    header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_machine != EM_X86_64 ||
	    header.e_phentsize != sizeof(Elf64_Phdr) || header.e_phnum > UNWIND_CACHE_MAX_PHDRS)
		return -ENOEXEC;
	for (unsigned i = 0; i < header.e_phnum; i++) {
		Elf64_Phdr phdr;
		uint64_t segment_offset, segment_vaddr;

		if (!read_exact(fd, &phdr, sizeof(phdr), header.e_phoff + (uint64_t)i * sizeof(phdr)))
			return -ENOEXEC;
		if (phdr.p_type != PT_LOAD)
			continue;
		/* The kernel maps each PT_LOAD from a page-aligned offset to a page-aligned address. */
		segment_offset = phdr.p_offset & page_mask;
		segment_vaddr = phdr.p_vaddr & page_mask;
		if (map->offset < segment_offset || map->offset >= phdr.p_offset + phdr.p_filesz)
			continue;
		*bias = map->start - (segment_vaddr + (map->offset - segment_offset));
		return 0;
	}
	return -ENOEXEC;
}

static bool is_unwindable(const struct proc_map *map)
{
	return map->perms[2] == 'x' && (map->path[0] == '/' || vdso_is_map_name(map->path));
}

/* What one executable mapping is, read without the cache: its file's id and load bias, and the
 * file open (the first mapping of each file holds it, at most UNWIND_PREPARED_FDS_MAX files). */
static void prepare_one(pid_t pid, const struct proc_map *map, struct unwind_prepared_proc *prepared)
{
	struct unwind_prepared_map *entry = &prepared->maps[prepared->count++];
	int fd;

	*entry = (struct unwind_prepared_map){ .start = map->start, .end = map->end, .fd = -1 };
	if (map->deleted) {
		entry->state = UNWIND_PREPARED_DELETED;
		return;
	}
	/* a file met before in this read: its descriptor serves (the bias is the mapping's own) */
	for (size_t i = 0; i + 1 < prepared->count; i++) {
		const struct unwind_prepared_map *earlier = &prepared->maps[i];

		if (earlier->fd < 0 || earlier->inode != map->inode || earlier->dev_major != map->dev_major ||
		    earlier->dev_minor != map->dev_minor)
			continue;
		entry->inode = map->inode;
		entry->dev_major = map->dev_major;
		entry->dev_minor = map->dev_minor;
		entry->id = earlier->id;
		entry->fd = earlier->fd;
		entry->state = load_bias(earlier->fd, map, &entry->bias) ? UNWIND_PREPARED_NOT_ELF : UNWIND_PREPARED_FILE;
		return;
	}
	fd = open_mapped_file(pid, map);
	if (fd < 0) {
		entry->state = UNWIND_PREPARED_OPEN_FAILED;
		return;
	}
	if (load_bias(fd, map, &entry->bias) || unwind_table_file_id(fd, &entry->id)) {
		entry->state = UNWIND_PREPARED_NOT_ELF;
		close(fd);
		return;
	}
	entry->state = UNWIND_PREPARED_FILE;
	if (prepared->fd_count >= UNWIND_PREPARED_FDS_MAX) {
		close(fd); /* a new file of it is deferred: a later read opens it */
		return;
	}
	entry->fd = prepared->fds[prepared->fd_count++] = fd;
	entry->inode = map->inode;
	entry->dev_major = map->dev_major;
	entry->dev_minor = map->dev_minor;
}

/* The mapping's table, and its file (NULL when it has none: *mapping says why; *deferred when
 * it is left for a later read). */
static int map_one(struct unwind_cache *cache, const struct unwind_prepared_map *prepared,
		   struct unwind_mapping *mapping, struct cached_file **file_out, bool *deferred)
{
	struct cached_file *file;

	*mapping = (struct unwind_mapping){ .start = prepared->start, .end = prepared->end,
					    .table_id = UNWIND_TABLE_NONE, .stop_cause = UNWIND_STOP_NO_TABLE };
	*file_out = NULL;
	*deferred = false;
	switch (prepared->state) {
	case UNWIND_PREPARED_DELETED:
		mapping->stop_cause = UNWIND_STOP_DELETED_FILE;
		return 0;
	case UNWIND_PREPARED_OPEN_FAILED:
		cache->failures[UNWIND_FAIL_OPEN]++;
		return 0;
	case UNWIND_PREPARED_NOT_ELF:
		cache->failures[UNWIND_FAIL_NOT_ELF]++;
		return 0;
	default:
		break;
	}
	mapping->bias = prepared->bias;
	if (prepared->fd < 0 && !file_with_id(cache, &prepared->id)) {
		cache->builds_deferred++;
		*deferred = true;
		return 0;
	}
	file = file_for(cache, prepared->fd, &prepared->id, deferred);
	if (!file)
		return *deferred ? 0 : -ENOMEM;
	if (file->building)
		*file_out = file; /* no table yet: its walks stop with NO_TABLE until it is placed */
	else if (!file->failed) {
		mapping->table_id = file->table_id;
		*file_out = file;
	}
	return 0;
}

static bool holds_file(struct cached_file *const *files, size_t count, const struct cached_file *file)
{
	for (size_t i = 0; i < count; i++)
		if (files[i] == file)
			return true;
	return false;
}

/* The executable mappings, file or anonymous (JIT code): a pc outside them all is new code. */
static int executable_ranges(const struct proc_maps *maps, struct address_range **ranges, size_t *count)
{
	*count = 0;
	*ranges = malloc((maps->count ? maps->count : 1) * sizeof(**ranges));
	if (!*ranges)
		return -ENOMEM;
	for (size_t i = 0; i < maps->count; i++)
		if (maps->maps[i].perms[2] == 'x')
			(*ranges)[(*count)++] = (struct address_range){ maps->maps[i].start, maps->maps[i].end };
	return 0;
}

void unwind_prepared_proc_free(struct unwind_prepared_proc *prepared)
{
	for (size_t i = 0; i < prepared->fd_count; i++)
		close(prepared->fds[i]);
	free(prepared->maps);
	free(prepared->ranges);
	proc_maps_free(&prepared->named);
	*prepared = (struct unwind_prepared_proc){ .pid = prepared->pid };
}

/* maps keeps only what may name a pc: executable mappings of a file or of the vDSO. */
static void keep_named(struct proc_maps *maps)
{
	size_t kept = 0;

	for (size_t i = 0; i < maps->count; i++) {
		struct proc_map *map = &maps->maps[i];

		if (map->perms[2] == 'x' && (map->path[0] == '/' || vdso_is_map_name(map->path)))
			maps->maps[kept++] = *map;
		else
			free(map->path);
	}
	maps->count = kept;
}

int unwind_cache_prepare_proc(pid_t pid, struct unwind_prepared_proc *prepared)
{
	struct proc_maps maps;
	int err;

	*prepared = (struct unwind_prepared_proc){ .pid = pid, .read_ms = clock_monotonic_ms() };
	err = proc_maps_read(pid, &maps);
	if (err)
		return err;
	err = executable_ranges(&maps, &prepared->ranges, &prepared->range_count);
	if (!err && !(prepared->maps = calloc(UNWIND_MAX_MAPPINGS, sizeof(*prepared->maps))))
		err = -ENOMEM;
	for (size_t i = 0; !err && i < maps.count && prepared->count < UNWIND_MAX_MAPPINGS; i++)
		if (is_unwindable(&maps.maps[i]))
			prepare_one(pid, &maps.maps[i], prepared);
	keep_named(&maps);
	prepared->named = maps;
	if (err)
		unwind_prepared_proc_free(prepared);
	return err;
}

/* Fills proc and next (the files it references, each taking one reference). */
static int map_all(struct unwind_cache *cache, const struct unwind_prepared_proc *prepared, struct unwind_proc *proc,
		   struct cached_proc *next)
{
	size_t file_capacity = 0, mapped_capacity = 0;

	proc->count = 0;
	proc->reserved = 0;
	for (size_t i = 0; i < prepared->count && proc->count < UNWIND_MAX_MAPPINGS; i++) {
		const struct unwind_prepared_map *map = &prepared->maps[i];
		struct cached_file *file;
		bool deferred;
		int err;

		err = map_one(cache, map, &proc->mappings[proc->count], &file, &deferred);
		if (err)
			return err;
		proc->count++;
		if (deferred)
			forget_range(next, map->start);
		if (!file && !deferred)
			continue;
		if (ARRAY_RESERVE(next->mapped, mapped_capacity, next->mapped_count + 1))
			return -ENOMEM;
		if (!file) {
			/* known as deferred: a held sample waits for the read that queues it */
			next->mapped[next->mapped_count++] = (struct mapped_file){ .start = map->start, .end = map->end };
			continue;
		}
		next->mapped[next->mapped_count++] = (struct mapped_file){ map->start, map->end, file,
									   proc->mappings[proc->count - 1].bias, false };
		if (holds_file(next->files, next->file_count, file))
			continue;
		if (ARRAY_RESERVE(next->files, file_capacity, next->file_count + 1))
			return -ENOMEM;
		if (file->verdict_idle_since) {
			file->verdict_idle_since = 0;
			cache->idle_verdicts--;
		}
		if (file->idle_since) {
			file->idle_since = 0;
			cache->idle_files--;
			cache->idle_rows -= ref_slots(&file->ref);
			cache->idle_reused++;
		}
		file->refs++;
		next->files[next->file_count++] = file;
	}
	return 0;
}

/* A re-read keeps the turns the process's walks took: a file waited for before is not given a
 * later turn, nor the process a later round, for being read again. */
static void keep_turns(const struct cached_proc *old, struct cached_proc *next)
{
	next->turns = old->turns;
	next->took_wanted_room = old->took_wanted_room;
	for (size_t i = 0; i < next->mapped_count; i++)
		for (size_t j = 0; j < old->mapped_count && !next->mapped[i].waited; j++)
			next->mapped[i].waited = old->mapped[j].waited && old->mapped[j].file == next->mapped[i].file &&
						 old->mapped[j].start == next->mapped[i].start;
}

static int map_prepared(struct unwind_cache *cache, const struct unwind_prepared_proc *prepared,
			struct unwind_proc *proc)
{
	pid_t pid = prepared->pid;
	struct cached_proc next = { .pid = pid }, *slot;
	int err = 0;

	next.ranges = malloc((prepared->range_count ? prepared->range_count : 1) * sizeof(*next.ranges));
	if (!next.ranges)
		return -ENOMEM;
	memcpy(next.ranges, prepared->ranges, prepared->range_count * sizeof(*next.ranges));
	next.range_count = prepared->range_count;
	cache->reading = &next;
	err = map_all(cache, prepared, proc, &next);
	cache->reading = NULL;
	if (!err && !(next.bpf_mappings = malloc((proc->count ? proc->count : 1) * sizeof(*next.bpf_mappings))))
		err = -ENOMEM;
	if (!err) {
		memcpy(next.bpf_mappings, proc->mappings, proc->count * sizeof(*next.bpf_mappings));
		next.bpf_count = proc->count;
	}
	if (!err && !proc_of(cache, pid) &&
	    ARRAY_RESERVE(cache->procs, cache->proc_capacity, cache->proc_count + 1))
		err = -ENOMEM;
	if (!err)
		err = charge_proc(cache, proc_of(cache, pid), &next);
	if (err) {
		for (size_t i = 0; i < next.file_count; i++)
			release_file(cache, next.files[i]);
		cached_proc_free(&next);
		return err;
	}
	next.read_ms = prepared->read_ms;
	/* The new references are taken before the old ones go: a file the process
	 * still maps keeps its table. */
	slot = proc_of(cache, pid);
	if (slot) {
		keep_turns(slot, &next);
		/* the read's mappings go to BPF whole: the patch is in them */
		if (slot->bpf_stale)
			cache->stale_procs--;
		for (size_t i = 0; i < slot->file_count; i++)
			release_file(cache, slot->files[i]);
		cached_proc_free(slot);
	} else {
		slot = &cache->procs[cache->proc_count++];
	}
	*slot = next;
	return 0;
}

int unwind_cache_map_proc(struct unwind_cache *cache, pid_t pid, struct unwind_proc *proc)
{
	struct unwind_prepared_proc prepared;
	int err = unwind_cache_prepare_proc(pid, &prepared);

	if (err)
		return err;
	err = map_prepared(cache, &prepared, proc);
	unwind_prepared_proc_free(&prepared);
	return err;
}

int unwind_cache_map_prepared(struct unwind_cache *cache, const struct unwind_prepared_proc *prepared, bool for_walk,
			      struct unwind_proc *proc)
{
	struct cached_proc *slot;
	int err;

	if (!for_walk)
		return map_prepared(cache, prepared, proc);
	slot = proc_of(cache, prepared->pid);
	cache->reading_for_walk = true;
	cache->reader_took_wanted_room = slot && slot->took_wanted_room;
	cache->wanted_room_taken = 0;
	cache->reader_turn = (slot ? slot->turns : 0) + 1;
	err = map_prepared(cache, prepared, proc);
	cache->reading_for_walk = false;
	slot = proc_of(cache, prepared->pid);
	if (slot && cache->wanted_room_taken)
		slot->took_wanted_room = true;
	return err;
}

int unwind_cache_map_proc_for_walk(struct unwind_cache *cache, pid_t pid, struct unwind_proc *proc)
{
	struct unwind_prepared_proc prepared;
	int err = unwind_cache_prepare_proc(pid, &prepared);

	if (err)
		return err;
	err = unwind_cache_map_prepared(cache, &prepared, true, proc);
	unwind_prepared_proc_free(&prepared);
	return err;
}

static bool proc_holds_file(const struct cached_proc *proc, const struct cached_file *file)
{
	return holds_file(proc->files, proc->file_count, file);
}

/* file's table is placed (or failed): the mappings of it that BPF was given say so now. */
static void patch_table_id(struct cached_proc *proc, const struct cached_file *file)
{
	for (size_t i = 0; i < proc->mapped_count; i++) {
		if (proc->mapped[i].file != file)
			continue;
		for (size_t j = 0; j < proc->bpf_count; j++)
			if (proc->bpf_mappings[j].start == proc->mapped[i].start)
				proc->bpf_mappings[j].table_id = file->failed ? UNWIND_TABLE_NONE : file->table_id;
	}
}

/* Places one finished table; the processes that map its file have theirs patched. */
static void finish_build(struct unwind_cache *cache, struct build_job *job)
{
	struct cached_file *file = job->file;

	file->building = false;
	cache->build_us += job->build_us;
	if (job->err)
		mark_failed(cache, file, failure_of_build_error(job->err));
	else
		place_table(cache, file, &job->table);
	if (file->refs == 0) {
		/* every process that mapped it is gone: the table waits, idle, for the next one */
		file->refs = 1;
		release_file(cache, file);
		return;
	}
	for (size_t i = 0; i < cache->proc_count; i++) {
		struct cached_proc *proc = &cache->procs[i];

		if (!proc_holds_file(proc, file))
			continue;
		patch_table_id(proc, file);
		if (!proc->bpf_stale)
			cache->stale_procs++;
		proc->bpf_stale = true;
	}
}

/* Up to capacity processes whose patched mappings BPF has not been given, now taken as given. */
static size_t take_stale(struct unwind_cache *cache, pid_t *pids, size_t capacity)
{
	size_t count = 0;

	for (size_t i = 0; i < cache->proc_count && cache->stale_procs && count < capacity; i++) {
		if (!cache->procs[i].bpf_stale)
			continue;
		cache->procs[i].bpf_stale = false;
		cache->stale_procs--;
		pids[count++] = cache->procs[i].pid;
	}
	return count;
}

size_t unwind_cache_poll(struct unwind_cache *cache, pid_t *pids, size_t capacity)
{
	struct builder *builder = &cache->builder;
	struct build_job *done;
	bool queue_empty, had_done;

	if (!builder->started)
		return 0;
	pthread_mutex_lock(&builder->lock);
	done = builder->done;
	had_done = done != NULL;
	builder->done = builder->done_tail = NULL;
	queue_empty = !work_queue_length(&builder->todo);
	pthread_mutex_unlock(&builder->lock);
	while (done) {
		struct build_job *next = done->next;

		finish_build(cache, done);
		build_job_free(done);
		cache->builds_pending--;
		done = next;
	}
	/* The worker's answers (the rows kept in them until placed: some 550 KiB for a libpython)
	 * are free now but may stay resident in the builder thread's malloc arena (glibc raises its
	 * mmap threshold past freed large blocks) unless handed back; once the queue is empty,
	 * hand it back. */
	if (had_done && queue_empty)
		malloc_trim(0);
	return take_stale(cache, pids, capacity);
}

void unwind_cache_want_pc(struct unwind_cache *cache, pid_t pid, uint64_t pc)
{
	struct cached_proc *slot = proc_of(cache, pid);
	struct builder *builder = &cache->builder;
	struct mapped_file *mapped = NULL;
	uint64_t turn = UINT64_MAX;

	if (!slot || !builder->started)
		return;
	for (size_t i = 0; i < slot->mapped_count && !mapped; i++)
		if (pc >= slot->mapped[i].start && pc < slot->mapped[i].end)
			mapped = &slot->mapped[i];
	if (!mapped || !mapped->file || !mapped->file->building)
		return;
	/* The process's next turn, once per file it waits for. */
	if (!mapped->waited) {
		mapped->waited = true;
		turn = ++slot->turns;
	}
	pthread_mutex_lock(&builder->lock);
	for (struct work_item *item = work_queue_first(&builder->todo); item; item = work_queue_next(item)) {
		struct build_job *job = job_of(item);

		if (job->file != mapped->file)
			continue;
		if (turn < job->turn) {
			job->turn = turn;
			job->asked = ++cache->want_clock;
		}
		break;
	}
	pthread_mutex_unlock(&builder->lock);
}

int unwind_cache_prebuild_file(struct unwind_cache *cache, int fd)
{
	struct unwind_file_id id;
	struct cached_file *file;
	bool deferred;

	if (unwind_table_file_id(fd, &id))
		return -ENOEXEC;
	if (file_with_id(cache, &id))
		return 0;
	file = file_for(cache, fd, &id, &deferred);
	if (!file)
		return deferred ? 0 : -ENOMEM;
	/* Built here (no builder thread): it waits, idle, for the process that will map it. */
	if (!file->building && !file->failed && file->refs == 0 && !file->idle_since) {
		file->refs = 1;
		release_file(cache, file);
	}
	return 0;
}

bool unwind_cache_building(struct unwind_cache *cache)
{
	struct builder *builder = &cache->builder;
	bool busy;

	if (!builder->started)
		return false;
	pthread_mutex_lock(&builder->lock);
	busy = work_queue_length(&builder->todo) || builder->done != NULL;
	pthread_mutex_unlock(&builder->lock);
	for (size_t i = 0; !busy && i < cache->file_count; i++)
		busy = cache->files[i]->building;
	return busy;
}

void unwind_cache_forget_proc(struct unwind_cache *cache, pid_t pid)
{
	struct cached_proc *slot = proc_of(cache, pid);

	if (!slot)
		return;
	for (size_t i = 0; i < slot->file_count; i++)
		release_file(cache, slot->files[i]);
	if (slot->bpf_stale)
		cache->stale_procs--;
	if (cache->budget) {
		target_budget_release(cache->budget, cache->budget_store, slot->charged);
		cache->charged -= slot->charged;
	}
	cached_proc_free(slot);
	*slot = cache->procs[--cache->proc_count];
}

static bool in_ranges(const struct address_range *ranges, size_t count, uint64_t pc)
{
	size_t low = 0, high = count;

	while (low < high) {
		size_t mid = low + (high - low) / 2;

		if (pc < ranges[mid].start)
			high = mid;
		else if (pc >= ranges[mid].end)
			low = mid + 1;
		else
			return true;
	}
	return false;
}

int unwind_cache_proc_mappings(const struct unwind_cache *cache, pid_t pid, struct unwind_proc *proc)
{
	const struct cached_proc *slot = proc_of(cache, pid);

	if (!slot)
		return -ESRCH;
	proc->count = (uint32_t)slot->bpf_count;
	proc->reserved = 0;
	memcpy(proc->mappings, slot->bpf_mappings, slot->bpf_count * sizeof(*proc->mappings));
	return 0;
}

uint64_t unwind_cache_read_ms(const struct unwind_cache *cache, pid_t pid)
{
	const struct cached_proc *proc = proc_of(cache, pid);

	return proc ? proc->read_ms : 0;
}

enum unwind_cache_pc unwind_cache_table_at(const struct unwind_cache *cache, pid_t pid, uint64_t pc,
					   struct unwind_table_ref *ref, uint64_t *bias)
{
	const struct cached_proc *proc = proc_of(cache, pid);

	if (!proc)
		return UNWIND_PC_UNKNOWN_PROC;
	for (size_t i = 0; i < proc->mapped_count; i++) {
		const struct mapped_file *mapped = &proc->mapped[i];

		if (pc < mapped->start || pc >= mapped->end)
			continue;
		if (!mapped->file)
			return UNWIND_PC_DEFERRED;
		if (mapped->file->building)
			return UNWIND_PC_BUILDING;
		if (mapped->file->failed)
			return UNWIND_PC_NO_TABLE;
		*ref = mapped->file->ref;
		*bias = mapped->bias;
		return UNWIND_PC_TABLE;
	}
	return in_ranges(proc->ranges, proc->range_count, pc) ? UNWIND_PC_NO_TABLE : UNWIND_PC_NO_MAPPING;
}

bool unwind_cache_refresh_refused(const struct unwind_cache *cache, pid_t pid)
{
	const struct cached_proc *slot = proc_of(cache, pid);

	return slot && slot->mapped_count > UNWIND_CACHE_REFRESH_MAX_MAPPINGS;
}

bool unwind_cache_should_refresh(const struct unwind_cache *cache, pid_t pid, uint64_t pc, uint64_t now_ms)
{
	const struct cached_proc *slot = proc_of(cache, pid);

	/* A process mapping thousands of files (an attacker's 20,000 tiny ELFs) is not read again
	 * for its walks: each read runs on the draining thread and costs in proportion. */
	if (!slot || !pc || slot->mapped_count > UNWIND_CACHE_REFRESH_MAX_MAPPINGS)
		return false;
	return !in_ranges(slot->ranges, slot->range_count, pc) && now_ms - slot->read_ms >= UNWIND_CACHE_REFRESH_MS;
}

void unwind_cache_stats(struct unwind_cache *cache, struct unwind_cache_stats *stats)
{
	*stats = (struct unwind_cache_stats){
		.row_capacity = cache->row_capacity,
		.processes = cache->proc_count,
		.tables_built = cache->tables_built,
		.build_us = cache->build_us,
		.peak_rows_used = cache->peak_rows_used,
		.peak_files = cache->peak_files,
		.idle_files = cache->idle_files,
		.idle_verdicts = cache->idle_verdicts,
		.verdicts_forgotten = cache->verdicts_forgotten,
		.procs_refused = cache->procs_refused,
		.idle_reused = cache->idle_reused,
		.idle_evicted = cache->idle_evicted,
		.idle_rows = cache->idle_rows,
		.idle_dropped = cache->idle_dropped,
		.idle_dropped_rows = cache->idle_dropped_rows,
		.builds_deferred = cache->builds_deferred,
		.builds_cancelled = cache->builds_cancelled,
		.builds_yielded = cache->builds_yielded,
		.chunks = unwind_chunks_count(cache->chunks),
		.chunk_rows = unwind_chunks_rows_held(cache->chunks),
		.peak_chunk_rows = unwind_chunks_peak_rows_held(cache->chunks),
	};
	memcpy(stats->failures, cache->failures, sizeof(stats->failures));
	if (cache->builder.started) {
		pthread_mutex_lock(&cache->builder.lock);
		stats->parser = cache->builder.parser_stats;
		pthread_mutex_unlock(&cache->builder.lock);
	} else {
		parser_client_stats(cache->parser, &stats->parser);
	}
	for (size_t i = 0; i < cache->file_count; i++) {
		if (cache->files[i]->failed) {
			stats->failed_files++;
			continue;
		}
		stats->files++;
		stats->rows_used += ref_slots(&cache->files[i]->ref);
	}
}
