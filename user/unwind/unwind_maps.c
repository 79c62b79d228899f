// SPDX-License-Identifier: MIT
#include "unwind/unwind_maps.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "util/array.h"
#include "util/thread.h"
#include "util/work_queue.h"

/* A chunk put into the outer map or taken out of it, by the update thread. */
struct chunk_update {
	struct work_item queued;
	uint32_t chunk;
	bool insert;
	int fd;          /* the chunk's map; a removal closes it once it is out */
};

/* A table set while its chunk's update was not done: BPF is pointed at it after. */
struct deferred_table {
	uint32_t table_id;
	struct unwind_table_ref ref;
};

/* A table's pages mapped for reading (unwind_maps_table_rows). */
struct table_view {
	uint32_t chunk, first_row, slots; /* slots 0: none */
	void *mapping;
	size_t bytes;
	const struct unwind_row *rows;    /* the table's first row, inside mapping */
	uint64_t used;                    /* when last handed out (the views' clock) */
};

struct unwind_maps {
	int rows_fd, tables_fd, procs_fd;
	/* The caller's thread only: the chunks held. Only BPF reads them all the time, so they are not
	 * kept mapped here (each would stay resident in the profiler, 1 MiB or more): a table's pages
	 * are mapped to write it, and to read it while late walks need it. */
	int chunk_fds[UNWIND_MAX_CHUNKS];
	uint32_t chunk_rows[UNWIND_MAX_CHUNKS]; /* each chunk's size; 0: none */
	size_t rows_held;          /* the chunks' sizes summed */
	size_t row_capacity;       /* the most they may sum to */
	struct table_view views[UNWIND_MAPS_VIEWS];
	uint64_t view_clock;
	uint32_t generation;       /* of the table placed last (struct unwind_table_ref) */
	/* Shared with the update thread, under lock. */
	pthread_mutex_t lock;
	pthread_cond_t settled;
	struct work_queue updates; /* bounded by the caller: UNWIND_MAPS_MAX_UNFINISHED */
	uint32_t updates_unfinished[UNWIND_MAX_CHUNKS]; /* per chunk: asked for, not done */
	size_t unfinished;                              /* all chunks' */
	struct deferred_table *deferred;
	size_t deferred_count, deferred_capacity;
	int error;                 /* the first failed update's since unwind_maps_take_error */
	pthread_t thread;
	bool thread_started;
};

static void unmap_view(struct table_view *view)
{
	if (view->slots)
		munmap(view->mapping, view->bytes);
	*view = (struct table_view){ 0 };
}

static void unmap_views_in(struct unwind_maps *maps, uint32_t chunk)
{
	for (size_t i = 0; i < UNWIND_MAPS_VIEWS; i++)
		if (maps->views[i].slots && maps->views[i].chunk == chunk)
			unmap_view(&maps->views[i]);
}

int unwind_maps_new(struct unwind_maps **out, int rows_fd, int tables_fd, int procs_fd, size_t row_capacity)
{
	struct unwind_maps *maps = calloc(1, sizeof(*maps));

	if (!maps)
		return -ENOMEM;
	maps->rows_fd = rows_fd;
	maps->tables_fd = tables_fd;
	maps->procs_fd = procs_fd;
	maps->row_capacity = row_capacity;
	for (size_t i = 0; i < UNWIND_MAX_CHUNKS; i++)
		maps->chunk_fds[i] = -1;
	pthread_mutex_init(&maps->lock, NULL);
	work_queue_init(&maps->updates, 0);
	pthread_cond_init(&maps->settled, NULL);
	*out = maps;
	return 0;
}

static void record_error(struct unwind_maps *maps, int err)
{
	if (err && !maps->error)
		maps->error = err;
}

/* Points BPF at the deferred tables whose chunk BPF now sees (lock held). */
static void publish_deferred_tables(struct unwind_maps *maps)
{
	size_t kept = 0;

	for (size_t i = 0; i < maps->deferred_count; i++) {
		struct deferred_table *table = &maps->deferred[i];

		if (maps->updates_unfinished[table->ref.chunk]) {
			maps->deferred[kept++] = *table;
			continue;
		}
		if (bpf_map_update_elem(maps->tables_fd, &table->table_id, &table->ref, BPF_ANY))
			record_error(maps, -errno);
	}
	maps->deferred_count = kept;
}

/* The slow part, without the lock: the kernel waits for a grace period. */
static int apply_update(struct unwind_maps *maps, const struct chunk_update *update)
{
	int err = 0;

	if (update->insert) {
		if (bpf_map_update_elem(maps->rows_fd, &update->chunk, &update->fd, BPF_ANY))
			err = -errno;
		return err;
	}
	/* A program still walking the chunk keeps its map until it returns (the outer map's RCU). */
	if (bpf_map_delete_elem(maps->rows_fd, &update->chunk) && errno != ENOENT)
		err = -errno;
	close(update->fd);
	return err;
}

static struct chunk_update *update_of(struct work_item *item)
{
	return WORK_QUEUE_ENTRY(item, struct chunk_update, queued);
}

static void *run_updates(void *arg)
{
	struct unwind_maps *maps = arg;

	pthread_mutex_lock(&maps->lock);
	for (;;) {
		struct chunk_update *update;
		int err;

		if (!work_queue_wait(&maps->updates, &maps->lock))
			break;
		update = update_of(work_queue_pop(&maps->updates));
		pthread_mutex_unlock(&maps->lock);
		err = apply_update(maps, update);
		pthread_mutex_lock(&maps->lock);
		record_error(maps, err);
		maps->updates_unfinished[update->chunk]--;
		maps->unfinished--;
		publish_deferred_tables(maps);
		free(update);
		if (!maps->unfinished)
			pthread_cond_broadcast(&maps->settled);
	}
	pthread_mutex_unlock(&maps->lock);
	return NULL;
}

static int start_thread(struct unwind_maps *maps)
{
	int err;

	if (maps->thread_started)
		return 0;
	err = thread_start_without_signals(&maps->thread, run_updates, maps);
	if (err)
		return err;
	maps->thread_started = true;
	return 0;
}

/*
 * Updates waiting for the thread. Which files need tables is the targets' to choose, and a
 * chunk taken out keeps its memory (up to 4 MiB) until its update is done: past this many,
 * the caller waits for the queue to drain rather than let it, and that memory, grow.
 */
#define UNWIND_MAPS_MAX_UNFINISHED 8

/* Hands the update to the thread, which frees it. */
static int queue_update(struct unwind_maps *maps, struct chunk_update *update)
{
	int err = start_thread(maps);

	if (err)
		return err;
	pthread_mutex_lock(&maps->lock);
	while (maps->unfinished >= UNWIND_MAPS_MAX_UNFINISHED)
		pthread_cond_wait(&maps->settled, &maps->lock);
	work_queue_push(&maps->updates, &update->queued); /* no limit of its own: cannot fail */
	maps->updates_unfinished[update->chunk]++;
	maps->unfinished++;
	pthread_mutex_unlock(&maps->lock);
	return 0;
}

void unwind_maps_free(struct unwind_maps *maps)
{
	struct work_item *item;

	if (!maps)
		return;
	if (maps->thread_started) {
		pthread_mutex_lock(&maps->lock);
		work_queue_close(&maps->updates);
		pthread_mutex_unlock(&maps->lock);
		pthread_join(maps->thread, NULL);
	}
	/* Updates not started: the outer map goes with the programs, only the memory is left. */
	while ((item = work_queue_pop(&maps->updates))) {
		struct chunk_update *update = update_of(item);

		if (!update->insert)
			close(update->fd);
		free(update);
	}
	unwind_maps_unmap_tables(maps);
	for (size_t i = 0; i < UNWIND_MAX_CHUNKS; i++)
		if (maps->chunk_fds[i] >= 0)
			close(maps->chunk_fds[i]);
	free(maps->deferred);
	pthread_cond_destroy(&maps->settled);
	work_queue_destroy(&maps->updates);
	pthread_mutex_destroy(&maps->lock);
	free(maps);
}

size_t unwind_maps_row_capacity(const struct unwind_maps *maps)
{
	return maps->row_capacity;
}

int unwind_maps_add_chunk(struct unwind_maps *maps, uint32_t chunk, uint32_t rows)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_MMAPABLE | BPF_F_INNER_MAP);
	struct chunk_update *update;
	int fd, err;

	if (chunk >= UNWIND_MAX_CHUNKS || rows == 0 || rows > UNWIND_CHUNK_MAX_ROWS)
		return -ERANGE;
	if (maps->chunk_rows[chunk])
		return -EEXIST;
	if (rows > maps->row_capacity - maps->rows_held)
		return -ENOSPC;
	update = calloc(1, sizeof(*update));
	if (!update)
		return -ENOMEM;
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "pbp_unwind_rows", sizeof(uint32_t), sizeof(struct unwind_row), rows,
			    &opts);
	if (fd < 0) {
		err = -errno;
		free(update);
		return err;
	}
	*update = (struct chunk_update){ .chunk = chunk, .insert = true, .fd = fd };
	err = queue_update(maps, update);
	if (err) {
		close(fd);
		free(update);
		return err;
	}
	maps->chunk_fds[chunk] = fd;
	maps->chunk_rows[chunk] = rows;
	maps->rows_held += rows;
	return 0;
}

void unwind_maps_remove_chunk(struct unwind_maps *maps, uint32_t chunk)
{
	struct chunk_update taken, *update;

	if (chunk >= UNWIND_MAX_CHUNKS || !maps->chunk_rows[chunk])
		return;
	unmap_views_in(maps, chunk);
	taken = (struct chunk_update){ .chunk = chunk, .fd = maps->chunk_fds[chunk] };
	update = malloc(sizeof(*update));
	if (update) {
		*update = taken;
		if (queue_update(maps, update)) {
			free(update);
			update = NULL;
		}
	}
	if (!update) {
		/* Nothing to hand it to: taken out here, after the updates asked for before. */
		unwind_maps_settle(maps);
		apply_update(maps, &taken);
	}
	maps->chunk_fds[chunk] = -1;
	maps->rows_held -= maps->chunk_rows[chunk];
	maps->chunk_rows[chunk] = 0;
}

/* Whether ref's range (its rows and its page index) lies inside its chunk, which exists. */
static bool range_fits(const struct unwind_maps *maps, const struct unwind_table_ref *ref)
{
	uint64_t slots = (uint64_t)ref->row_count + ((uint64_t)ref->page_count + 1) / 2;
	uint32_t rows;

	if (ref->row_count == 0)
		return true; /* an empty slot: nothing to hold */
	if (ref->chunk >= UNWIND_MAX_CHUNKS)
		return false;
	rows = maps->chunk_rows[ref->chunk];
	return ref->first_row <= rows && slots <= rows - ref->first_row;
}

/* Maps the pages of chunk that hold slots rows from first_row (inside the chunk): the mapping
 * (*mapping, *bytes, for munmap) and where the first row lies in it; NULL with errno set. */
static struct unwind_row *map_rows(const struct unwind_maps *maps, uint32_t chunk, uint32_t first_row,
				   uint32_t slots, int prot, void **mapping, size_t *bytes)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t start = (size_t)first_row * sizeof(struct unwind_row);
	size_t end = start + (size_t)slots * sizeof(struct unwind_row);
	size_t offset = start - start % page;

	*bytes = (end - offset + page - 1) / page * page;
	*mapping = mmap(NULL, *bytes, prot, MAP_SHARED, maps->chunk_fds[chunk], (off_t)offset);
	if (*mapping == MAP_FAILED)
		return NULL;
	return (struct unwind_row *)((char *)*mapping + (start - offset));
}

int unwind_maps_write_table(struct unwind_maps *maps, const struct unwind_table_ref *ref,
			    const struct unwind_row *rows, const uint32_t *pages)
{
	struct unwind_row *place;
	void *mapping;
	size_t bytes;

	if (ref->row_count == 0 || !range_fits(maps, ref) || !maps->chunk_rows[ref->chunk] ||
	    (ref->page_count && !pages))
		return -ERANGE;
	place = map_rows(maps, ref->chunk, ref->first_row, unwind_table_slots(ref->row_count, ref->page_count),
			 PROT_READ | PROT_WRITE, &mapping, &bytes);
	if (!place)
		return -errno;
	memcpy(place, rows, ref->row_count * sizeof(*rows));
	if (ref->page_count)
		memcpy(place + ref->row_count, pages, ref->page_count * sizeof(*pages));
	munmap(mapping, bytes);
	return 0;
}

static bool view_holds(const struct table_view *view, const struct unwind_table_ref *ref, uint32_t slots)
{
	return view->slots == slots && view->chunk == ref->chunk && view->first_row == ref->first_row;
}

/* The view to map a new table into: an empty one, else the least recently handed out. */
static struct table_view *view_to_reuse(struct unwind_maps *maps)
{
	struct table_view *reuse = &maps->views[0];

	for (size_t i = 1; i < UNWIND_MAPS_VIEWS && reuse->slots; i++)
		if (!maps->views[i].slots || maps->views[i].used < reuse->used)
			reuse = &maps->views[i];
	return reuse;
}

const struct unwind_row *unwind_maps_table_rows(struct unwind_maps *maps, const struct unwind_table_ref *ref)
{
	uint32_t slots = unwind_table_slots(ref->row_count, ref->page_count);
	struct table_view *view;
	struct unwind_row *rows;
	void *mapping;
	size_t bytes;

	if (ref->row_count == 0 || !range_fits(maps, ref) || !maps->chunk_rows[ref->chunk])
		return NULL;
	for (size_t i = 0; i < UNWIND_MAPS_VIEWS; i++) {
		if (view_holds(&maps->views[i], ref, slots)) {
			maps->views[i].used = ++maps->view_clock;
			return maps->views[i].rows;
		}
	}
	rows = map_rows(maps, ref->chunk, ref->first_row, slots, PROT_READ, &mapping, &bytes);
	if (!rows)
		return NULL;
	view = view_to_reuse(maps);
	unmap_view(view);
	*view = (struct table_view){ .chunk = ref->chunk, .first_row = ref->first_row, .slots = slots,
				     .mapping = mapping, .bytes = bytes, .rows = rows, .used = ++maps->view_clock };
	return rows;
}

void unwind_maps_unmap_tables(struct unwind_maps *maps)
{
	for (size_t i = 0; i < UNWIND_MAPS_VIEWS; i++)
		unmap_view(&maps->views[i]);
}

size_t unwind_maps_chunk_count(const struct unwind_maps *maps)
{
	size_t count = 0;

	for (size_t i = 0; i < UNWIND_MAX_CHUNKS; i++)
		count += maps->chunk_rows[i] != 0;
	return count;
}

size_t unwind_maps_chunk_bytes(const struct unwind_maps *maps)
{
	return maps->rows_held * sizeof(struct unwind_row);
}

/* Forgets a deferred setting of table_id (lock held): a later one replaces it. */
static void drop_deferred_table(struct unwind_maps *maps, uint32_t table_id)
{
	for (size_t i = 0; i < maps->deferred_count; i++) {
		if (maps->deferred[i].table_id == table_id) {
			maps->deferred[i] = maps->deferred[--maps->deferred_count];
			return;
		}
	}
}

int unwind_maps_set_table(struct unwind_maps *maps, uint32_t table_id, const struct unwind_table_ref *ref)
{
	struct unwind_table_ref placed = *ref;
	int err = 0;

	if (table_id >= UNWIND_MAX_TABLES || !range_fits(maps, ref))
		return -ERANGE;
	/* 0 is never a placed table's: a cache entry left zero matches none. */
	if (placed.row_count) {
		if (++maps->generation == 0)
			++maps->generation;
		placed.generation = maps->generation;
	}
	pthread_mutex_lock(&maps->lock);
	drop_deferred_table(maps, table_id);
	if (placed.row_count && maps->updates_unfinished[placed.chunk]) {
		if (ARRAY_RESERVE(maps->deferred, maps->deferred_capacity, maps->deferred_count + 1))
			err = -ENOMEM;
		else
			maps->deferred[maps->deferred_count++] = (struct deferred_table){ table_id, placed };
	} else if (bpf_map_update_elem(maps->tables_fd, &table_id, &placed, BPF_ANY)) {
		err = -errno;
	}
	pthread_mutex_unlock(&maps->lock);
	return err;
}

int unwind_maps_set_proc(struct unwind_maps *maps, pid_t tgid, const struct unwind_proc *proc)
{
	uint32_t key = (uint32_t)tgid;

	if (proc->count > UNWIND_MAX_MAPPINGS)
		return -E2BIG;
	if (bpf_map_update_elem(maps->procs_fd, &key, proc, BPF_ANY))
		return -errno;
	return 0;
}

int unwind_maps_forget_proc(struct unwind_maps *maps, pid_t tgid)
{
	uint32_t key = (uint32_t)tgid;

	if (bpf_map_delete_elem(maps->procs_fd, &key) && errno != ENOENT)
		return -errno;
	return 0;
}

bool unwind_maps_updating(struct unwind_maps *maps)
{
	bool updating;

	pthread_mutex_lock(&maps->lock);
	updating = maps->unfinished != 0;
	pthread_mutex_unlock(&maps->lock);
	return updating;
}

void unwind_maps_settle(struct unwind_maps *maps)
{
	pthread_mutex_lock(&maps->lock);
	while (maps->unfinished)
		pthread_cond_wait(&maps->settled, &maps->lock);
	pthread_mutex_unlock(&maps->lock);
}

int unwind_maps_take_error(struct unwind_maps *maps)
{
	int err;

	pthread_mutex_lock(&maps->lock);
	err = maps->error;
	maps->error = 0;
	pthread_mutex_unlock(&maps->lock);
	return err;
}
