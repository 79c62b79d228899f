/* SPDX-License-Identifier: MIT */
/*
 * `pybpfprof stacks PID`: one picture of every thread of a process (one
 * wall-mode pass) printed as py-spy's `dump` prints it, leaf first, or as one
 * JSON document. The session hands over each thread's resolved sample; the
 * thread's name and kernel state come from /proc at that moment.
 */
#ifndef PYBPFPROF_STACKS_PRINT_H
#define PYBPFPROF_STACKS_PRINT_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "profile/profile.h"

struct stacks_print;

/* 0 or -ENOMEM. */
int stacks_print_new(struct stacks_print **out, pid_t pid, const struct pf_python_version *version);
void stacks_print_free(struct stacks_print *print);
/* Keeps the sample's thread and a copy of its frames. Their strings are not copied: they
 * must live until stacks_print_write (the session's symbol caches keep them). 0 or -ENOMEM. */
int stacks_print_add(struct stacks_print *print, const struct pf_sample *sample);
size_t stacks_print_thread_count(const struct stacks_print *print);
/* Tasks awaiting one task that the tree keeps (as async_tasks lists them). */
#define STACKS_PRINT_AWAITERS_MAX 8

/*
 * An asyncio task of thread tid (its event loop's), for the tree printed after the thread:
 * name as frames show it ("<task NAME>"), the tasks awaiting it (awaiters[awaiter_count], the
 * first the one sample stacks go up through; none: a root), where it is suspended (frames,
 * root first; their strings kept as stacks_print_add's), whether it was running.
 * A task awaited by several is shown under each of them. 0 or -ENOMEM.
 */
int stacks_print_add_task(struct stacks_print *print, uint64_t tid, uint64_t address, const uint64_t *awaiters,
			  size_t awaiter_count, const char *name, const struct pf_frame *frames, size_t frame_count,
			  bool running);
/* Every thread by tid, as text or as one JSON document; 0, or -EIO if out failed. */
int stacks_print_write(struct stacks_print *print, FILE *out, bool json);

#endif
