/* SPDX-License-Identifier: MIT */
/*
 * The queue a helper thread takes its work from: the unwind table builds (unwind/unwind_cache.c),
 * the chunk updates of the unwind maps (unwind/unwind_maps.c) and the native symbol loads
 * (symbolize/native_symbol_loader.c). Items are the callers' own structures, linked through a
 * struct work_item inside them, so a push never allocates and never fails for memory.
 *
 * The caller's mutex guards the queue: it guards the caller's state beside it (counts, results),
 * and every function here but init and destroy runs with it held. The helper waits in
 * work_queue_wait until an item is queued or the queue is closed; a closed queue hands out no
 * more work (the items left are the caller's to free, by work_queue_pop).
 */
#ifndef PYBPFPROF_WORK_QUEUE_H
#define PYBPFPROF_WORK_QUEUE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct work_item {
	struct work_item *next;
};

struct work_queue {
	struct work_item *head, *tail; /* oldest first */
	size_t length;
	size_t limit;      /* the most it holds; 0: no bound of its own (the caller bounds it) */
	uint64_t refused;  /* pushes turned away at the limit */
	bool closed;
	pthread_cond_t ready; /* an item queued, or the queue closed */
};

/* The structure of type holding the work_item at item in its member; NULL for NULL. */
#define WORK_QUEUE_ENTRY(item, type, member) \
	((item) ? (type *)(void *)((char *)(item) - offsetof(type, member)) : (type *)NULL)

void work_queue_init(struct work_queue *queue, size_t limit);
/* The queue must be empty (or its items freed elsewhere) and no thread waiting. */
void work_queue_destroy(struct work_queue *queue);
/* Queues item last and wakes the helper: 0, or -EAGAIN at the limit (counted, not queued). */
int work_queue_push(struct work_queue *queue, struct work_item *item);
/* Takes the oldest item out; NULL when empty. */
struct work_item *work_queue_pop(struct work_queue *queue);
/* The oldest item, left queued (NULL when empty), and the one after item; for a walk. */
struct work_item *work_queue_first(const struct work_queue *queue);
struct work_item *work_queue_next(const struct work_item *item);
/*
 * The item a caller's order puts first: the oldest, replaced by each later one that
 * prefer(later, best) says goes before it. Left queued; NULL when empty.
 */
struct work_item *work_queue_find_best(const struct work_queue *queue,
				       bool (*prefer)(const struct work_item *item, const struct work_item *best));
/* Takes item out wherever it is; false if it is not queued. */
bool work_queue_remove(struct work_queue *queue, struct work_item *item);
size_t work_queue_length(const struct work_queue *queue);
bool work_queue_full(const struct work_queue *queue);
/* Hands out no more work and wakes the helper. */
void work_queue_close(struct work_queue *queue);
/* The helper's wait, lock held: until an item is queued (true) or the queue is closed (false,
 * even with items left). */
bool work_queue_wait(struct work_queue *queue, pthread_mutex_t *lock);

#endif
