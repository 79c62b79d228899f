/* SPDX-License-Identifier: MIT */
/*
 * Helper threads that leave signals (Ctrl-C, SIGTERM) to the main loop, and the draining
 * thread's priority: only the thread that reads the ring, and the two that do what it did
 * before for new processes (discovery, maps reads: named THREAD_NAME_*), run above the
 * profiler's own nice.
 */
#ifndef PYBPFPROF_THREAD_H
#define PYBPFPROF_THREAD_H

#include <pthread.h>
#include <stdbool.h>

/*
 * pthread_create with every signal blocked in the new thread, at the profiler's ordinary
 * priority even when its creator runs raised: 0 or a negative errno.
 */
int thread_start_without_signals(pthread_t *thread, void *(*run)(void *), void *arg);

/*
 * The calling thread (the one that drains the ring and reads code objects before their
 * processes exit) runs THREAD_DRAIN_NICE_STEP nice levels above the profiler's own.
 * Without CAP_SYS_NICE it stays where it is. True when raised.
 */
#define THREAD_DRAIN_NICE_STEP 10
/* The raised helpers' names (/proc/PID/task/TID/comm). */
#define THREAD_NAME_DISCOVERY "pbp-discovery"
#define THREAD_NAME_MAPS "pbp-maps"
bool thread_raise_for_draining(void);

/* The calling thread (or a child forked from a raised thread) back at the ordinary nice. */
void thread_restore_ordinary_priority(void);

#endif
