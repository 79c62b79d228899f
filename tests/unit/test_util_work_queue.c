// SPDX-License-Identifier: MIT
/* util/work_queue: the queue the three helper threads take their work from. Order, the limit
 * and its count, a caller's priority, removal from anywhere, and the helper's wait ending on
 * work or on close. */
#include "testlib.h"

#include "util/work_queue.h"

#include <errno.h>
#include <pthread.h>

struct job {
	int id;
	int rank; /* the order a caller may put first: the least */
	struct work_item item;
};

static int id_of(struct work_item *item)
{
	struct job *job = WORK_QUEUE_ENTRY(item, struct job, item);

	return job ? job->id : -1;
}

static void make_jobs(struct job *jobs, int count)
{
	for (int i = 0; i < count; i++)
		jobs[i] = (struct job){ .id = i, .rank = i };
}

static void items_come_out_oldest_first(void **state)
{
	struct work_queue queue;
	struct job jobs[4];

	(void)state;
	make_jobs(jobs, 4);
	work_queue_init(&queue, 0);
	assert_null(work_queue_pop(&queue));
	for (int i = 0; i < 4; i++)
		assert_int_equal(work_queue_push(&queue, &jobs[i].item), 0);
	assert_int_equal(work_queue_length(&queue), 4);
	for (int i = 0; i < 4; i++)
		assert_int_equal(id_of(work_queue_pop(&queue)), i);
	assert_null(work_queue_pop(&queue));
	assert_int_equal(work_queue_length(&queue), 0);
	/* emptied, it queues again from its head */
	assert_int_equal(work_queue_push(&queue, &jobs[2].item), 0);
	assert_int_equal(id_of(work_queue_pop(&queue)), 2);
	work_queue_destroy(&queue);
}

static void pushes_past_the_limit_are_refused_and_counted(void **state)
{
	struct work_queue queue;
	struct job jobs[5];

	(void)state;
	make_jobs(jobs, 5);
	work_queue_init(&queue, 3);
	for (int i = 0; i < 3; i++)
		assert_int_equal(work_queue_push(&queue, &jobs[i].item), 0);
	assert_true(work_queue_full(&queue));
	assert_int_equal(work_queue_push(&queue, &jobs[3].item), -EAGAIN);
	assert_int_equal(work_queue_push(&queue, &jobs[4].item), -EAGAIN);
	assert_int_equal(queue.refused, 2);
	assert_int_equal(work_queue_length(&queue), 3);
	/* a refused item was not linked: the queue holds the first three only */
	assert_int_equal(id_of(work_queue_pop(&queue)), 0);
	assert_false(work_queue_full(&queue));
	assert_int_equal(work_queue_push(&queue, &jobs[3].item), 0);
	for (int expected = 1; expected <= 3; expected++)
		assert_int_equal(id_of(work_queue_pop(&queue)), expected);
	assert_null(work_queue_pop(&queue));
	work_queue_destroy(&queue);
}

static bool lesser_rank(const struct work_item *item, const struct work_item *best)
{
	return WORK_QUEUE_ENTRY(item, const struct job, item)->rank < WORK_QUEUE_ENTRY(best, const struct job, item)->rank;
}

static void the_callers_order_picks_the_best_and_ties_keep_the_oldest(void **state)
{
	struct work_queue queue;
	struct job jobs[5];
	static const int ranks[5] = { 7, 3, 9, 3, 5 };

	(void)state;
	make_jobs(jobs, 5);
	work_queue_init(&queue, 0);
	assert_null(work_queue_find_best(&queue, lesser_rank));
	for (int i = 0; i < 5; i++) {
		jobs[i].rank = ranks[i];
		assert_int_equal(work_queue_push(&queue, &jobs[i].item), 0);
	}
	/* rank 3 twice: the older (1) goes first, then the other (3), then 5, 7, 9 */
	static const int expected[5] = { 1, 3, 4, 0, 2 };
	for (int i = 0; i < 5; i++) {
		struct work_item *best = work_queue_find_best(&queue, lesser_rank);

		assert_int_equal(id_of(best), expected[i]);
		assert_true(work_queue_remove(&queue, best));
	}
	assert_int_equal(work_queue_length(&queue), 0);
	work_queue_destroy(&queue);
}

static void an_item_leaves_from_anywhere_and_the_tail_follows(void **state)
{
	struct work_queue queue;
	struct job jobs[4], stranger = { .id = 99 };
	int seen = 0;

	(void)state;
	make_jobs(jobs, 4);
	work_queue_init(&queue, 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(work_queue_push(&queue, &jobs[i].item), 0);
	assert_false(work_queue_remove(&queue, &stranger.item));
	assert_true(work_queue_remove(&queue, &jobs[1].item)); /* the middle */
	assert_true(work_queue_remove(&queue, &jobs[3].item)); /* the tail */
	assert_false(work_queue_remove(&queue, &jobs[3].item));
	assert_int_equal(work_queue_length(&queue), 2);
	/* a push after the tail left links after the new tail, not the removed one */
	assert_int_equal(work_queue_push(&queue, &jobs[3].item), 0);
	static const int expected[3] = { 0, 2, 3 };
	for (struct work_item *item = work_queue_first(&queue); item; item = work_queue_next(item))
		assert_int_equal(id_of(item), expected[seen++]);
	assert_int_equal(seen, 3);
	assert_true(work_queue_remove(&queue, &jobs[0].item)); /* the head */
	assert_int_equal(id_of(work_queue_pop(&queue)), 2);
	assert_int_equal(id_of(work_queue_pop(&queue)), 3);
	assert_null(work_queue_pop(&queue));
	work_queue_destroy(&queue);
}

struct helper {
	pthread_mutex_t lock;
	struct work_queue queue;
	int taken[8];
	int taken_count;
};

/* A helper thread as the three are written: wait, take, work without the lock, until closed. */
static void *helper_run(void *opaque)
{
	struct helper *helper = opaque;

	pthread_mutex_lock(&helper->lock);
	while (work_queue_wait(&helper->queue, &helper->lock))
		helper->taken[helper->taken_count++] = id_of(work_queue_pop(&helper->queue));
	pthread_mutex_unlock(&helper->lock);
	return NULL;
}

static void the_helper_wakes_for_work_and_stops_when_closed(void **state)
{
	struct helper helper = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct job jobs[4];
	pthread_t thread;
	bool drained = false;

	(void)state;
	make_jobs(jobs, 4);
	work_queue_init(&helper.queue, 0);
	assert_int_equal(pthread_create(&thread, NULL, helper_run, &helper), 0);
	for (int i = 0; i < 3; i++) {
		pthread_mutex_lock(&helper.lock);
		assert_int_equal(work_queue_push(&helper.queue, &jobs[i].item), 0);
		pthread_mutex_unlock(&helper.lock);
	}
	/* the helper takes all three, whenever it runs */
	while (!drained) {
		pthread_mutex_lock(&helper.lock);
		drained = helper.taken_count == 3;
		pthread_mutex_unlock(&helper.lock);
		if (!drained)
			sched_yield();
	}
	pthread_mutex_lock(&helper.lock);
	work_queue_close(&helper.queue);
	/* closed: work queued now is left for the caller to free, never handed out */
	assert_int_equal(work_queue_push(&helper.queue, &jobs[3].item), 0);
	pthread_mutex_unlock(&helper.lock);
	assert_int_equal(pthread_join(thread, NULL), 0);
	assert_int_equal(helper.taken_count, 3);
	for (int i = 0; i < 3; i++)
		assert_int_equal(helper.taken[i], i);
	assert_false(work_queue_wait(&helper.queue, &helper.lock));
	assert_int_equal(id_of(work_queue_pop(&helper.queue)), 3);
	work_queue_destroy(&helper.queue);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(items_come_out_oldest_first),
		cmocka_unit_test(pushes_past_the_limit_are_refused_and_counted),
		cmocka_unit_test(the_callers_order_picks_the_best_and_ties_keep_the_oldest),
		cmocka_unit_test(an_item_leaves_from_anywhere_and_the_tail_follows),
		cmocka_unit_test(the_helper_wakes_for_work_and_stops_when_closed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
