/* SPDX-License-Identifier: MIT */
/* Helper threads that leave signals (Ctrl-C, SIGTERM) to the main loop. */
#ifndef PYBPFPROF_THREAD_H
#define PYBPFPROF_THREAD_H

#include <pthread.h>

/* pthread_create with every signal blocked in the new thread: 0 or a negative errno. */
int thread_start_without_signals(pthread_t *thread, void *(*run)(void *), void *arg);

#endif
