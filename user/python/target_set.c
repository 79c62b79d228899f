// SPDX-License-Identifier: MIT
#include "python/target_set.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/array.h"
#include "util/clock.h"

/* A freshly exec'd interpreter maps libpython within milliseconds: retry soon, then back off. */
#define RETRY_FIRST_MS 2
#define RETRY_MAX_MS 100
/* How long a pending target may take to show its runtime before we give up on it. */
#define PENDING_LIMIT_SCAN_MS 3000
#define PENDING_LIMIT_EXPLICIT_MS 30000
#define PARENT_CHAIN_LIMIT 64

void target_set_init(struct target_set *set)
{
	memset(set, 0, sizeof(*set));
	hash_index_init(&set->index);
}

void target_set_free(struct target_set *set)
{
	hash_index_free(&set->index);
	free(set->items);
	memset(set, 0, sizeof(*set));
}

static uint64_t pid_hash(pid_t pid)
{
	return hash_mix64((uint64_t)(uint32_t)pid);
}

static bool holds_pid(const void *context, uint32_t position, const void *wanted)
{
	return ((const struct target_set *)context)->items[position].pid == *(const pid_t *)wanted;
}

struct target *target_set_find(const struct target_set *set, pid_t pid)
{
	int64_t position = hash_index_find(&set->index, pid_hash(pid), holds_pid, set, &pid);

	return position < 0 ? NULL : &set->items[position];
}

struct target *target_set_add(struct target_set *set, pid_t pid, enum target_origin origin)
{
	struct target *target = target_set_find(set, pid);

	if (target)
		return target;
	if (ARRAY_RESERVE(set->items, set->capacity, set->count + 1) ||
	    hash_index_insert(&set->index, pid_hash(pid), (uint32_t)set->count))
		return NULL;
	target = &set->items[set->count++];
	memset(target, 0, sizeof(*target));
	target->pid = pid;
	target->origin = origin;
	target->state = TARGET_PENDING;
	target->container = -1;
	target->start_ticks = target_set_start_ticks(pid);
	target->pending_since_ms = clock_monotonic_ms();
	return target;
}

/* A gone target whose process has exited, long enough ago; marks the newly exited. */
static bool ready_to_forget(struct target *target, uint64_t now_ms)
{
	if (target->state != TARGET_GONE || target->origin == TARGET_FROM_PID)
		return false;
	if (!target->exited_ms) {
		if (!target_set_alive(target))
			target->exited_ms = now_ms ? now_ms : 1;
		return false;
	}
	return now_ms - target->exited_ms >= TARGET_SET_FORGET_AFTER_MS;
}

size_t target_set_forget_exited(struct target_set *set, uint64_t now_ms, target_set_forget_fn forget, void *ctx)
{
	size_t kept = 0, removed;

	if (now_ms < set->next_sweep_ms)
		return 0;
	set->next_sweep_ms = now_ms + TARGET_SET_SWEEP_MS;
	for (size_t i = 0; i < set->count; i++) {
		struct target *target = &set->items[i];

		if (ready_to_forget(target, now_ms)) {
			if (forget)
				forget(ctx, target);
			set->forgotten++;
			set->forgotten_sampled += target->samples > 0;
			set->forgotten_python += target->python_samples > 0;
			continue;
		}
		if (kept != i)
			set->items[kept] = *target;
		kept++;
	}
	removed = set->count - kept;
	if (!removed)
		return 0;
	set->count = kept;
	/* Rebuilt at its size, which held them all: no allocation, nothing can fail half-way. */
	hash_index_clear(&set->index);
	for (size_t i = 0; i < set->count; i++)
		hash_index_insert(&set->index, pid_hash(set->items[i].pid), (uint32_t)i);
	return removed;
}

size_t target_set_sampled_count(const struct target_set *set)
{
	size_t count = (size_t)set->forgotten_sampled;

	for (size_t i = 0; i < set->count; i++)
		count += set->items[i].samples > 0;
	return count;
}

size_t target_set_python_count(const struct target_set *set)
{
	size_t count = (size_t)set->forgotten_python;

	for (size_t i = 0; i < set->count; i++)
		count += set->items[i].python_samples > 0;
	return count;
}

/* Field 22 of /proc/PID/stat; the command name (field 2) may hold spaces and parentheses. */
static int read_stat_fields(pid_t pid, pid_t *parent, unsigned long long *start_ticks)
{
	char path[64], line[1024];
	unsigned long long ticks = 0;
	int ppid = 0;
	char *after_comm;
	FILE *file;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	file = fopen(path, "re");
	if (!file)
		return -errno;
	if (!fgets(line, sizeof(line), file)) {
		fclose(file);
		return -EIO;
	}
	fclose(file);
	after_comm = strrchr(line, ')');
	if (!after_comm ||
	    sscanf(after_comm + 2, "%*c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
		   &ppid, &ticks) != 2)
		return -EIO;
	if (parent)
		*parent = ppid;
	if (start_ticks)
		*start_ticks = ticks;
	return 0;
}

unsigned long long target_set_start_ticks(pid_t pid)
{
	unsigned long long ticks = 0;

	return read_stat_fields(pid, NULL, &ticks) == 0 ? ticks : 0;
}

bool target_set_descends_from(pid_t pid, pid_t ancestor)
{
	for (int depth = 0; depth < PARENT_CHAIN_LIMIT && pid > 1; depth++) {
		pid_t parent;

		if (read_stat_fields(pid, &parent, NULL))
			return false;
		if (parent == ancestor)
			return true;
		pid = parent;
	}
	return false;
}

bool target_set_alive(const struct target *target)
{
	unsigned long long ticks = target_set_start_ticks(target->pid);

	return ticks != 0 && ticks == target->start_ticks;
}

static uint64_t next_delay_ms(const struct target *target, uint64_t now_ms)
{
	uint64_t waited = now_ms - target->pending_since_ms;
	uint64_t delay = RETRY_FIRST_MS + waited / 4;

	return delay > RETRY_MAX_MS ? RETRY_MAX_MS : delay;
}

void target_set_discover_read(const struct target_set *set, pid_t pid, struct target_discovery *found)
{
	found->err = py_discover_runtime_cached(set->runtime_files, pid, &found->python, found->error.text,
						sizeof(found->error.text));
	if (found->err == 0)
		found->err = proc_identity_read(pid, &found->identity);
}

int target_set_discover_apply(struct target *target, const struct target_discovery *found, uint64_t now_ms)
{
	uint64_t limit = target->origin == TARGET_FROM_SCAN ? PENDING_LIMIT_SCAN_MS
							   : PENDING_LIMIT_EXPLICIT_MS;
	int err = found->err;

	target->python = found->python;
	target->last_error = found->error;
	if (err == 0) {
		target->identity = found->identity;
		target->state = TARGET_READY;
		target->ran_python = true;
		return 0;
	}
	if (err == -ESRCH) {
		target->state = TARGET_GONE;
		return err;
	}
	/* A launched command may be a wrapper that execs Python later, or starts it as a child. */
	if (err == -ENOEXEC && target->origin == TARGET_FROM_LAUNCH) {
		target->state = TARGET_WAITING_EXEC;
		return -EAGAIN;
	}
	if (err == -ENOEXEC && target->late_looks) {
		target->state = TARGET_PENDING;
		target->next_attempt_ms = now_ms + TARGET_SET_LATE_LOOK_MS(TARGET_SET_LATE_LOOKS - target->late_looks);
		target->late_looks--;
		return -EAGAIN;
	}
	if (err == -EAGAIN && now_ms - target->pending_since_ms < limit) {
		target->state = TARGET_PENDING;
		target->next_attempt_ms = now_ms + next_delay_ms(target, now_ms);
		return -EAGAIN;
	}
	if (err == -EAGAIN)
		errbuf_set(&target->last_error, err, "pid %d: the Python runtime did not appear within %llu s",
			   (int)target->pid, (unsigned long long)(limit / 1000));
	target->state = TARGET_GONE;
	return err;
}

int target_set_discover(const struct target_set *set, struct target *target, uint64_t now_ms)
{
	struct target_discovery found;

	target_set_discover_read(set, target->pid, &found);
	return target_set_discover_apply(target, &found, now_ms);
}
