// SPDX-License-Identifier: MIT
#include "util/thread.h"

#include <signal.h>

int thread_start_without_signals(pthread_t *thread, void *(*run)(void *), void *arg)
{
	sigset_t all, old;
	int err;

	/* A thread inherits its creator's mask: block everything just for the creation. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(thread, NULL, run, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return -err;
}
