// SPDX-License-Identifier: MIT
#include "session/threads_seen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/array.h"

/* Slots a chunk holds: chunks are never moved, so a slot's name stays put while it is used. */
#define THREADS_SEEN_CHUNK 256u
#define NO_SLOT UINT32_MAX

struct thread_key {
	uint64_t pid, tid;
};

static struct thread_seen *slot_at(const struct threads_seen *seen, uint32_t slot)
{
	return &seen->chunks[slot / THREADS_SEEN_CHUNK][slot % THREADS_SEEN_CHUNK];
}

static uint64_t thread_hash(uint64_t pid, uint64_t tid)
{
	return hash_combine(hash_mix64(pid), tid);
}

static bool slot_is_thread(const void *context, uint32_t slot, const void *key)
{
	const struct thread_seen *thread = slot_at(context, slot);
	const struct thread_key *wanted = key;

	return thread->pid == wanted->pid && thread->tid == wanted->tid;
}

static bool slot_is_of_pid(const void *context, uint32_t slot, const void *key)
{
	return slot_at(context, slot)->pid == *(const uint64_t *)key;
}

void threads_seen_init(struct threads_seen *seen)
{
	*seen = (struct threads_seen){ .free_slot = NO_SLOT };
	hash_index_init(&seen->by_thread);
	hash_index_init(&seen->by_pid);
}

void threads_seen_free(struct threads_seen *seen)
{
	for (size_t i = 0; i < seen->chunk_count; i++)
		free(seen->chunks[i]);
	free(seen->chunks);
	hash_index_free(&seen->by_thread);
	hash_index_free(&seen->by_pid);
	threads_seen_init(seen);
}

/* A free slot (a new chunk when none is left): its number, or NO_SLOT on ENOMEM. */
static uint32_t take_slot(struct threads_seen *seen)
{
	uint32_t slot = seen->free_slot;
	struct thread_seen *chunk;

	if (slot != NO_SLOT) {
		seen->free_slot = slot_at(seen, slot)->next;
		return slot;
	}
	if (seen->slot_count % THREADS_SEEN_CHUNK == 0) {
		if (seen->slot_count >= NO_SLOT - THREADS_SEEN_CHUNK ||
		    ARRAY_RESERVE(seen->chunks, seen->chunk_capacity, seen->chunk_count + 1))
			return NO_SLOT;
		chunk = malloc(THREADS_SEEN_CHUNK * sizeof(*chunk));
		if (!chunk)
			return NO_SLOT;
		seen->chunks[seen->chunk_count++] = chunk;
	}
	return seen->slot_count++;
}

static void give_back_slot(struct threads_seen *seen, uint32_t slot)
{
	slot_at(seen, slot)->used = false;
	slot_at(seen, slot)->next = seen->free_slot;
	seen->free_slot = slot;
}

struct thread_seen *threads_seen_find(const struct threads_seen *seen, uint64_t pid, uint64_t tid)
{
	struct thread_key key = { pid, tid };
	int64_t found = hash_index_find(&seen->by_thread, thread_hash(pid, tid), slot_is_thread, seen, &key);

	return found < 0 ? NULL : slot_at(seen, (uint32_t)found);
}

struct thread_seen *threads_seen_get(struct threads_seen *seen, uint64_t pid, uint64_t tid)
{
	uint64_t hash = thread_hash(pid, tid), pid_hash = hash_mix64(pid);
	struct thread_seen *thread = threads_seen_find(seen, pid, tid);
	int64_t first;
	uint32_t slot;

	if (thread)
		return thread;
	slot = take_slot(seen);
	if (slot == NO_SLOT)
		return NULL;
	thread = slot_at(seen, slot);
	*thread = (struct thread_seen){ .pid = pid, .tid = tid, .next = NO_SLOT, .used = true };
	if (hash_index_insert(&seen->by_thread, hash, slot) < 0) {
		give_back_slot(seen, slot);
		return NULL;
	}
	/* Chained after its process's first thread, or first itself. */
	first = hash_index_find(&seen->by_pid, pid_hash, slot_is_of_pid, seen, &pid);
	if (first >= 0) {
		thread->next = slot_at(seen, (uint32_t)first)->next;
		slot_at(seen, (uint32_t)first)->next = slot;
	} else if (hash_index_insert(&seen->by_pid, pid_hash, slot) < 0) {
		hash_index_remove(&seen->by_thread, hash, slot);
		give_back_slot(seen, slot);
		return NULL;
	}
	seen->live++;
	return thread;
}

void threads_seen_mark_python(struct threads_seen *seen, struct thread_seen *thread)
{
	if (!thread->python) {
		thread->python = true;
		seen->python_threads++;
	}
}

/* Counts a process that ran no Python under its name (kept while there is room). */
static void count_other_name(struct threads_seen_name *names, size_t *count, bool *more, const char *name,
			     uint64_t processes)
{
	for (size_t i = 0; i < *count; i++)
		if (strcmp(names[i].name, name) == 0) {
			names[i].processes += processes;
			return;
		}
	if (*count == THREADS_SEEN_OTHER_NAMES) {
		*more = true;
		return;
	}
	snprintf(names[*count].name, sizeof(names[*count].name), "%s", name);
	names[(*count)++].processes = processes;
}

static bool ran_no_python(const struct thread_seen *thread)
{
	return thread->pid == thread->tid && !thread->python;
}

void threads_seen_forget_pid(struct threads_seen *seen, uint64_t pid)
{
	uint64_t pid_hash = hash_mix64(pid);
	int64_t first = hash_index_find(&seen->by_pid, pid_hash, slot_is_of_pid, seen, &pid);
	uint32_t slot, next;

	if (first < 0)
		return;
	hash_index_remove(&seen->by_pid, pid_hash, (uint32_t)first);
	for (slot = (uint32_t)first; slot != NO_SLOT; slot = next) {
		struct thread_seen *thread = slot_at(seen, slot);

		next = thread->next;
		if (ran_no_python(thread)) {
			seen->other_processes++;
			count_other_name(seen->other_names, &seen->other_name_count, &seen->other_names_more,
					 thread->name[0] ? thread->name : "?", 1);
		}
		hash_index_remove(&seen->by_thread, thread_hash(thread->pid, thread->tid), slot);
		give_back_slot(seen, slot);
		seen->live--;
	}
}

uint64_t threads_seen_other_processes(const struct threads_seen *seen,
				      struct threads_seen_name names[THREADS_SEEN_OTHER_NAMES], size_t *name_count,
				      bool *more)
{
	uint64_t processes = seen->other_processes;

	*name_count = seen->other_name_count;
	memcpy(names, seen->other_names, sizeof(seen->other_names));
	*more = seen->other_names_more;
	/* in the order of their slots: mostly the order they were met */
	for (uint32_t slot = 0; slot < seen->slot_count; slot++) {
		const struct thread_seen *thread = slot_at(seen, slot);

		if (!thread->used || !ran_no_python(thread))
			continue;
		processes++;
		count_other_name(names, name_count, more, thread->name[0] ? thread->name : "?", 1);
	}
	return processes;
}

size_t threads_seen_held_bytes(const struct threads_seen *seen)
{
	return seen->chunk_count * THREADS_SEEN_CHUNK * sizeof(struct thread_seen) +
	       seen->chunk_capacity * sizeof(*seen->chunks) +
	       (seen->by_thread.capacity + seen->by_pid.capacity) * sizeof(struct hash_slot);
}
