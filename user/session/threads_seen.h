/* SPDX-License-Identifier: MIT */
/*
 * The threads a run has sampled, while their process lives: each one's name (read when it is
 * first seen) and whether it ran Python. A whole-host run sees thousands of short processes an
 * hour, so a process's threads go when it is forgotten (process_events.c) and only counts
 * stay: what is held follows the threads alive, not the length of the run.
 */
#ifndef PYBPFPROF_THREADS_SEEN_H
#define PYBPFPROF_THREADS_SEEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "python/py_thread_name.h"
#include "util/hash.h"

struct thread_seen {
	uint64_t pid, tid;
	uint32_t next;  /* the next slot of this process's threads (or of the free ones) */
	bool used;      /* the slot holds a thread (else it is free) */
	bool python;    /* it ran Python in a sample */
	bool named;     /* its name was looked for; "" if none was found */
	char name[PY_THREAD_NAME_MAX];
};

/* Processes whose main thread ran no Python (a launcher's shells), under one name. */
struct threads_seen_name {
	char name[PY_THREAD_NAME_MAX];
	uint64_t processes;
};

/* The names of such processes kept: the first ones met; the rest are only counted. */
#define THREADS_SEEN_OTHER_NAMES 4

struct threads_seen {
	struct thread_seen **chunks; /* slot n is chunks[n / THREADS_SEEN_CHUNK][n % ...]: never moved */
	size_t chunk_count, chunk_capacity;
	uint32_t slot_count;         /* slots made, in use or free */
	uint32_t free_slot;          /* the first free slot (chained through next) */
	struct hash_index by_thread; /* (pid, tid) -> its slot */
	struct hash_index by_pid;    /* pid -> the first slot of its threads */
	size_t live;                 /* slots in use */
	uint64_t python_threads;     /* threads that ran Python, those forgotten included */
	/* Processes forgotten whose main thread was seen and ran no Python: */
	uint64_t other_processes;
	struct threads_seen_name other_names[THREADS_SEEN_OTHER_NAMES];
	size_t other_name_count;
	bool other_names_more;       /* some had a name not kept */
};

void threads_seen_init(struct threads_seen *seen);
void threads_seen_free(struct threads_seen *seen);
/* The thread's slot if it has one, else NULL. */
struct thread_seen *threads_seen_find(const struct threads_seen *seen, uint64_t pid, uint64_t tid);
/* The thread's slot, made on first sight (not named yet, no Python); NULL on ENOMEM. It stays
 * where it is until its process is forgotten. */
struct thread_seen *threads_seen_get(struct threads_seen *seen, uint64_t pid, uint64_t tid);
/* The thread ran Python (counted once). */
void threads_seen_mark_python(struct threads_seen *seen, struct thread_seen *thread);
/* The process ended: its threads go, its main thread counted among the processes that ran
 * no Python if it was one of them. */
void threads_seen_forget_pid(struct threads_seen *seen, uint64_t pid);
/*
 * The processes whose main thread was seen and ran no Python, those forgotten and those alive:
 * their number, and in names[*name_count] (at most THREADS_SEEN_OTHER_NAMES) the first names
 * met with their counts; *more says some names were left out.
 */
uint64_t threads_seen_other_processes(const struct threads_seen *seen,
				      struct threads_seen_name names[THREADS_SEEN_OTHER_NAMES], size_t *name_count,
				      bool *more);
/* What it holds, in bytes (slots, indexes). */
size_t threads_seen_held_bytes(const struct threads_seen *seen);

#endif
