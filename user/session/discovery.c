// SPDX-License-Identifier: MIT
/*
 * Discovery off the thread that drains the ring: whether a new process runs CPython (its maps
 * read, each executable file it maps asked of the parser worker, up to a second per new file)
 * and whether a 3.14+ target has mapped its _asyncio extension since. A process controls how
 * long both take (thousands of mappings, files the worker chews on), so they run on a thread of
 * their own: the drain queues a lookup and goes on; each loop tick applies the answers (the
 * target's state changes on the main thread only). The lookups use the targets' runtime_files
 * cache, which from the thread's start is this thread's alone.
 *
 * The queue is bounded (DISCOVERY_QUEUE_MAX): a target that finds it full is looked at again
 * later, as a pending target is. The thread takes the users' lookups in turn (the oldest of the
 * user served least recently): one user starting processes that are slow to look at (thousands
 * of mappings, files the worker chews on) delays another user's new processes by one lookup,
 * not by all of its own. While a process is not found, BPF does not walk its Python
 * frames (a whole-host run does not sample it at all): nothing waits for an answer but the
 * process itself.
 */
#include "session/session_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/clock.h"
#include "util/thread.h"

/* Lookups queued or answered and not yet applied, at most; each some 5 KiB. */
#define DISCOVERY_QUEUE_MAX 256
/* A target that found the queue full is looked at again this much later. */
#define DISCOVERY_FULL_RETRY_MS 100
/* Users whose last turn is remembered; one not among them has had none lately. */
#define DISCOVERY_USERS_REMEMBERED 16

enum discovery_kind { DISCOVERY_RUNTIME, DISCOVERY_ASYNCIO };

struct discovery_job {
	struct discovery_job *next;
	uint64_t id;
	enum discovery_kind kind;
	pid_t pid;
	uid_t uid;       /* the process's owner when it was queued: whose turn it takes */
	uint64_t queued_us, done_us;
	/* DISCOVERY_RUNTIME: what was found; DISCOVERY_ASYNCIO: found.python is the target's
	 * description on the way in, with its asyncio offsets on the way out (found.err). */
	struct target_discovery found;
};

struct discovery {
	const struct target_set *targets;
	int wake_fd;                      /* the loop's (session.h's wake_fd), or -1 */
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stop;                        /* under lock */
	struct discovery_job *todo_head, **todo_tail; /* under lock */
	struct discovery_job *done_head, **done_tail; /* under lock */
	size_t jobs;                      /* queued, being read or answered: the main thread's count */
	uint64_t next_id;
	struct discovery_stats stats;     /* the main thread's, but busy_us (under lock) */
	uint64_t busy_us;
	/* the thread's: the users served lately, and when (its count of lookups) */
	struct { uid_t uid; uint64_t turn; } served[DISCOVERY_USERS_REMEMBERED];
	uint64_t turns;
};

/* When uid was last served (0: not lately). */
static uint64_t last_turn(const struct discovery *discovery, uid_t uid)
{
	for (size_t i = 0; i < DISCOVERY_USERS_REMEMBERED; i++)
		if (discovery->served[i].turn && discovery->served[i].uid == uid)
			return discovery->served[i].turn;
	return 0;
}

static void note_turn(struct discovery *discovery, uid_t uid)
{
	size_t slot = 0;

	for (size_t i = 0; i < DISCOVERY_USERS_REMEMBERED; i++) {
		if (discovery->served[i].turn && discovery->served[i].uid == uid) {
			slot = i;
			break;
		}
		if (discovery->served[i].turn < discovery->served[slot].turn)
			slot = i;
	}
	discovery->served[slot].uid = uid;
	discovery->served[slot].turn = ++discovery->turns;
}

/* Takes the next lookup off the queue (under lock): the oldest of the user served least
 * recently. A bounded scan: the queue holds DISCOVERY_QUEUE_MAX at most. */
static struct discovery_job *take_next(struct discovery *discovery)
{
	struct discovery_job **best = NULL, *job;
	uint64_t best_turn = UINT64_MAX;

	for (struct discovery_job **link = &discovery->todo_head; *link; link = &(*link)->next) {
		uint64_t turn = last_turn(discovery, (*link)->uid);

		if (turn < best_turn) {
			best = link;
			best_turn = turn;
			if (!turn)
				break;
		}
	}
	job = *best;
	*best = job->next;
	if (!discovery->todo_head)
		discovery->todo_tail = &discovery->todo_head;
	else if (discovery->todo_tail == &job->next)
		discovery->todo_tail = best;
	note_turn(discovery, job->uid);
	return job;
}

static void read_job(struct discovery *discovery, struct discovery_job *job)
{
	if (job->kind == DISCOVERY_RUNTIME) {
		target_set_discover_read(discovery->targets, job->pid, &job->found);
		return;
	}
	job->found.err = py_discover_asyncio(discovery->targets->runtime_files, &job->found.python);
}

static void *discovery_run(void *opaque)
{
	struct discovery *discovery = opaque;

	/* A process is not sampled until it is found: this work ran raised on the draining thread
	 * before it moved here, and a busy host would otherwise leave new processes unfound for
	 * seconds. It costs the same CPU; only its latency drops. */
	pthread_setname_np(pthread_self(), THREAD_NAME_DISCOVERY);
	thread_raise_for_draining();

	pthread_mutex_lock(&discovery->lock);
	for (;;) {
		struct discovery_job *job;
		uint64_t start_us;

		while (!discovery->stop && !discovery->todo_head)
			pthread_cond_wait(&discovery->wake, &discovery->lock);
		if (discovery->stop)
			break;
		job = take_next(discovery);
		pthread_mutex_unlock(&discovery->lock);
		start_us = clock_monotonic_us();
		read_job(discovery, job);
		job->done_us = clock_monotonic_us();
		pthread_mutex_lock(&discovery->lock);
		discovery->busy_us += job->done_us - start_us;
		job->next = NULL;
		*discovery->done_tail = job;
		discovery->done_tail = &job->next;
		session_wake(discovery->wake_fd);
	}
	pthread_mutex_unlock(&discovery->lock);
	return NULL;
}

int discovery_open(struct session *session)
{
	struct discovery *discovery = calloc(1, sizeof(*discovery));
	int err;

	if (!discovery)
		return -ENOMEM;
	discovery->targets = &session->targets;
	discovery->wake_fd = session->wake_fd;
	discovery->todo_tail = &discovery->todo_head;
	discovery->done_tail = &discovery->done_head;
	pthread_mutex_init(&discovery->lock, NULL);
	pthread_cond_init(&discovery->wake, NULL);
	err = thread_start_without_signals(&discovery->thread, discovery_run, discovery);
	if (err) {
		pthread_cond_destroy(&discovery->wake);
		pthread_mutex_destroy(&discovery->lock);
		free(discovery);
		return err;
	}
	discovery->started = true;
	session->discovery = discovery;
	return 0;
}

static void free_jobs(struct discovery_job *job)
{
	while (job) {
		struct discovery_job *next = job->next;

		free(job);
		job = next;
	}
}

void discovery_close(struct session *session)
{
	struct discovery *discovery = session->discovery;

	if (!discovery)
		return;
	/* The lookup being read is waited for (bounded: the parser worker's time per file). */
	pthread_mutex_lock(&discovery->lock);
	discovery->stop = true;
	pthread_cond_signal(&discovery->wake);
	pthread_mutex_unlock(&discovery->lock);
	pthread_join(discovery->thread, NULL);
	session->discovery_stats = discovery->stats;
	session->discovery_stats.busy_us = discovery->busy_us;
	free_jobs(discovery->todo_head);
	free_jobs(discovery->done_head);
	pthread_cond_destroy(&discovery->wake);
	pthread_mutex_destroy(&discovery->lock);
	free(discovery);
	session->discovery = NULL;
}

/* A new job for target, queued: its id, or 0 when the queue is full (counted). */
static uint64_t queue(struct session *session, const struct target *target, enum discovery_kind kind)
{
	struct discovery *discovery = session->discovery;
	struct discovery_job *job;
	char path[32];
	struct stat owner;

	if (discovery->jobs >= DISCOVERY_QUEUE_MAX || !(job = malloc(sizeof(*job)))) {
		discovery->stats.deferred++;
		return 0;
	}
	memset(job, 0, sizeof(*job));
	job->id = ++discovery->next_id;
	job->kind = kind;
	job->pid = target->pid;
	/* a process gone already costs its lookup one failed read: any turn will do */
	snprintf(path, sizeof(path), "/proc/%d", (int)target->pid);
	job->uid = stat(path, &owner) == 0 ? owner.st_uid : 0;
	job->queued_us = clock_monotonic_us();
	if (kind == DISCOVERY_ASYNCIO)
		job->found.python = target->python;
	discovery->jobs++;
	if (discovery->jobs > discovery->stats.peak_queued)
		discovery->stats.peak_queued = discovery->jobs;
	discovery->stats.asked[kind]++;
	pthread_mutex_lock(&discovery->lock);
	*discovery->todo_tail = job;
	discovery->todo_tail = &job->next;
	pthread_cond_signal(&discovery->wake);
	pthread_mutex_unlock(&discovery->lock);
	return job->id;
}

bool discovery_request_runtime(struct session *session, struct target *target)
{
	uint64_t id;

	if (target->discovery_job)
		return true;
	id = queue(session, target, DISCOVERY_RUNTIME);
	if (!id) {
		target->next_attempt_ms = clock_monotonic_ms() + DISCOVERY_FULL_RETRY_MS;
		return false;
	}
	target->discovery_job = id;
	return true;
}

void discovery_request_asyncio(struct session *session, struct target *target)
{
	if (!target->asyncio_job)
		target->asyncio_job = queue(session, target, DISCOVERY_ASYNCIO);
}

/* The answers so far, taken off the thread's list. */
static struct discovery_job *take_done(struct discovery *discovery)
{
	struct discovery_job *done;

	pthread_mutex_lock(&discovery->lock);
	done = discovery->done_head;
	discovery->done_head = NULL;
	discovery->done_tail = &discovery->done_head;
	pthread_mutex_unlock(&discovery->lock);
	return done;
}

/* The asyncio offsets found for a target still running what they were found in. */
static void apply_asyncio(struct session *session, struct target *target, const struct discovery_job *job)
{
	target->asyncio_job = 0;
	if (job->found.err || target->state != TARGET_READY)
		return;
	/* what the search adds (py_discover.c), not the rest of a config changed since */
	target->python.asyncio = job->found.python.asyncio;
	target->python.config.tstate_running_task = job->found.python.config.tstate_running_task;
	target->python.config.flags |= job->found.python.config.flags & PY_PROC_HAS_ASYNCIO;
	(void)bpf_sampler_add_target(session->sampler, target->pid, &target->python.config);
}

void discovery_poll(struct session *session)
{
	struct discovery *discovery = session->discovery;
	struct discovery_job *job;

	if (!discovery || !discovery->jobs)
		return;
	job = take_done(discovery);
	while (job) {
		struct discovery_job *next = job->next;
		struct target *target = target_set_find(&session->targets, job->pid);
		uint64_t latency_us = job->done_us - job->queued_us;

		discovery->jobs--;
		discovery->stats.answered++;
		if (latency_us > discovery->stats.max_latency_us)
			discovery->stats.max_latency_us = latency_us;
		if (job->kind == DISCOVERY_ASYNCIO && target && target->asyncio_job == job->id)
			apply_asyncio(session, target, job);
		else if (job->kind == DISCOVERY_RUNTIME && target && target->discovery_job == job->id)
			process_events_discovered(session, target, &job->found);
		else
			discovery->stats.stale++;
		free(job);
		job = next;
	}
}

bool discovery_waiting(const struct session *session)
{
	return session->discovery && session->discovery->jobs;
}

size_t discovery_held_bytes(const struct session *session)
{
	return session->discovery ? session->discovery->jobs * sizeof(struct discovery_job) : 0;
}

void discovery_stats(const struct session *session, struct discovery_stats *stats)
{
	if (!session->discovery) {
		*stats = session->discovery_stats;
		return;
	}
	*stats = session->discovery->stats;
	pthread_mutex_lock(&session->discovery->lock);
	stats->busy_us = session->discovery->busy_us;
	pthread_mutex_unlock(&session->discovery->lock);
}
