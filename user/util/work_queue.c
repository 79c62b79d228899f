// SPDX-License-Identifier: MIT
#include "util/work_queue.h"

#include <errno.h>

void work_queue_init(struct work_queue *queue, size_t limit)
{
	*queue = (struct work_queue){ .limit = limit };
	pthread_cond_init(&queue->ready, NULL);
}

void work_queue_destroy(struct work_queue *queue)
{
	pthread_cond_destroy(&queue->ready);
	queue->head = queue->tail = NULL;
	queue->length = 0;
}

bool work_queue_full(const struct work_queue *queue)
{
	return queue->limit && queue->length >= queue->limit;
}

int work_queue_push(struct work_queue *queue, struct work_item *item)
{
	if (work_queue_full(queue)) {
		queue->refused++;
		return -EAGAIN;
	}
	item->next = NULL;
	if (queue->tail)
		queue->tail->next = item;
	else
		queue->head = item;
	queue->tail = item;
	queue->length++;
	pthread_cond_signal(&queue->ready);
	return 0;
}

struct work_item *work_queue_pop(struct work_queue *queue)
{
	struct work_item *item = queue->head;

	if (item)
		work_queue_remove(queue, item);
	return item;
}

struct work_item *work_queue_first(const struct work_queue *queue)
{
	return queue->head;
}

struct work_item *work_queue_next(const struct work_item *item)
{
	return item->next;
}

struct work_item *work_queue_find_best(const struct work_queue *queue,
				       bool (*prefer)(const struct work_item *item, const struct work_item *best))
{
	struct work_item *best = queue->head;

	for (struct work_item *item = best ? best->next : NULL; item; item = item->next)
		if (prefer(item, best))
			best = item;
	return best;
}

bool work_queue_remove(struct work_queue *queue, struct work_item *item)
{
	struct work_item *before = NULL;

	for (struct work_item **link = &queue->head; *link; before = *link, link = &(*link)->next) {
		if (*link != item)
			continue;
		*link = item->next;
		if (queue->tail == item)
			queue->tail = before;
		item->next = NULL;
		queue->length--;
		return true;
	}
	return false;
}

size_t work_queue_length(const struct work_queue *queue)
{
	return queue->length;
}

void work_queue_close(struct work_queue *queue)
{
	queue->closed = true;
	pthread_cond_broadcast(&queue->ready);
}

bool work_queue_wait(struct work_queue *queue, pthread_mutex_t *lock)
{
	while (!queue->head && !queue->closed)
		pthread_cond_wait(&queue->ready, lock);
	return !queue->closed;
}
