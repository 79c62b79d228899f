// SPDX-License-Identifier: MIT
#include "target/target_set.h"

#include <errno.h>
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
	intern_init(&set->index);
}

void target_set_free(struct target_set *set)
{
	intern_free(&set->index);
	free(set->items);
	memset(set, 0, sizeof(*set));
}

struct target *target_set_find(const struct target_set *set, pid_t pid)
{
	int64_t position = intern_find(&set->index, &pid, sizeof(pid));

	return position < 0 ? NULL : &set->items[position];
}

struct target *target_set_add(struct target_set *set, pid_t pid, enum target_origin origin)
{
	struct target *target = target_set_find(set, pid);
	bool is_new;
	int64_t position;

	if (target)
		return target;
	if (ARRAY_RESERVE(set->items, set->capacity, set->count + 1))
		return NULL;
	position = intern_add(&set->index, &pid, sizeof(pid), &is_new);
	if (position < 0 || (size_t)position != set->count)
		return NULL;
	target = &set->items[set->count++];
	memset(target, 0, sizeof(*target));
	target->pid = pid;
	target->origin = origin;
	target->state = TARGET_PENDING;
	target->start_ticks = target_set_start_ticks(pid);
	target->pending_since_ms = clock_monotonic_ms();
	return target;
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

int target_set_discover(struct target *target, uint64_t now_ms)
{
	uint64_t limit = target->origin == TARGET_FROM_SCAN ? PENDING_LIMIT_SCAN_MS
							   : PENDING_LIMIT_EXPLICIT_MS;
	int err;

	err = py_discover_runtime(target->pid, &target->python, target->last_error.text,
			  sizeof(target->last_error.text));
	if (err == 0) {
		target->state = TARGET_READY;
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
