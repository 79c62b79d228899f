// SPDX-License-Identifier: MIT
#include "util/thread.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/resource.h>

/* The nice the profiler was started with, once a thread has been raised above it. */
static atomic_bool priority_raised;
static atomic_int ordinary_nice;

bool thread_raise_for_draining(void)
{
	int nice_now, raised;

	errno = 0;
	nice_now = getpriority(PRIO_PROCESS, 0); /* Linux: the calling thread's nice */
	if (nice_now == -1 && errno != 0)
		return false;
	raised = nice_now - THREAD_DRAIN_NICE_STEP < -20 ? -20 : nice_now - THREAD_DRAIN_NICE_STEP;
	if (raised == nice_now)
		return false;
	atomic_store(&ordinary_nice, nice_now);
	if (setpriority(PRIO_PROCESS, 0, raised) != 0)
		return false;
	atomic_store(&priority_raised, true);
	return true;
}

void thread_restore_ordinary_priority(void)
{
	if (atomic_load(&priority_raised))
		setpriority(PRIO_PROCESS, 0, atomic_load(&ordinary_nice));
}

struct thread_start {
	void *(*run)(void *);
	void *arg;
};

/* A new thread inherits its creator's nice: helpers never run at the drainer's. */
static void *thread_begin(void *opaque)
{
	struct thread_start start = *(struct thread_start *)opaque;

	free(opaque);
	thread_restore_ordinary_priority();
	return start.run(start.arg);
}

int thread_start_without_signals(pthread_t *thread, void *(*run)(void *), void *arg)
{
	struct thread_start *start = malloc(sizeof(*start));
	sigset_t all, old;
	int err;

	if (!start)
		return -ENOMEM;
	start->run = run;
	start->arg = arg;
	/* A thread inherits its creator's mask: block everything just for the creation. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(thread, NULL, thread_begin, start);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err)
		free(start);
	return -err;
}
