/* SPDX-License-Identifier: MIT */
/*
 * The processes being profiled: how each became a target, whether its
 * CPython runtime has been found yet, and when it ended. Discovery is
 * retried while a freshly exec'd interpreter is still mapping libpython.
 */
#ifndef PYBPFPROF_TARGET_SET_H
#define PYBPFPROF_TARGET_SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proc/proc_identity.h"
#include "python/py_discover.h"
#include "python/py_runtime_file.h"
#include "util/errbuf.h"
#include "util/hash.h"

enum target_origin {
	TARGET_FROM_PID,    /* -p PID: errors are the user's to see */
	TARGET_FROM_LAUNCH, /* the launched command or a descendant of it */
	TARGET_FROM_SCAN,   /* system-wide: any Python process, quietly skipped if not */
};

enum target_state {
	TARGET_PENDING,      /* runtime not found yet: retry soon */
	TARGET_WAITING_EXEC, /* not Python now (a shell, a wrapper): look again when it exec's */
	TARGET_READY,
	TARGET_GONE,
};

struct target {
	pid_t pid;
	enum target_origin origin;
	enum target_state state;
	unsigned long long start_ticks; /* /proc/PID/stat starttime: tells a reused pid */
	struct py_target python;        /* valid when READY */
	bool ran_python;                /* it has been READY since its last exec: a gone target's late
					 * samples resolve with python only then */
	struct proc_identity identity;  /* namespace pid and cgroup, read when it became READY */
	int32_t container;              /* the session's number for identity.cgroup; -1: not counted yet */
	uint64_t pending_since_ms;
	uint64_t next_attempt_ms;
	struct errbuf last_error;       /* why discovery failed, for the user */
	uint64_t samples;
	uint64_t python_samples;        /* ... of which while it ran Python (READY): not a launcher's shell */
	uint64_t exited_ms;             /* when a sweep first found it gone (0: not yet) */
	unsigned late_looks;            /* looks left at a process not Python yet (TARGET_SET_LATE_LOOKS) */
	uint64_t asyncio_looked_ns;     /* a record's time when its maps were last searched for _asyncio */
	uint64_t asyncio_look_ns;       /* and how long until the next search (doubles) */
	/* Lookups asked of another thread and not answered yet (0: none); an answer to another
	 * number (asked before an exec, or of a process since forgotten) is not this one's. */
	uint64_t discovery_job;
	uint64_t asyncio_job;
};

/* A 3.14+ target whose _asyncio extension was not mapped is looked at again after the first of
 * these, twice as long each time up to the last: an application imports asyncio as it starts,
 * and a process that never does costs one read of its maps every few seconds. */
#define TARGET_ASYNCIO_LOOK_FIRST_NS (50ull * 1000 * 1000)
#define TARGET_ASYNCIO_LOOK_LAST_NS (5000ull * 1000 * 1000)

/*
 * A process that has just exec'd something that is not Python may load libpython later with
 * dlopen (a PyInstaller bundle's bootloader, a uWSGI plugin): whole-host discovery looks at
 * it again this long after its exec, then stops (each look: one read of its maps, and one
 * cached verdict per executable mapping).
 */
#define TARGET_SET_LATE_LOOKS 2
#define TARGET_SET_LATE_LOOK_MS(look) ((look) == 0 ? 200u : 1000u)

struct target_set {
	struct target *items;
	size_t count;
	size_t capacity;
	struct hash_index index;   /* pid -> position in items */
	uint64_t next_sweep_ms;
	uint64_t forgotten;        /* exited targets dropped over the run */
	uint64_t forgotten_sampled; /* ... of which had samples */
	uint64_t forgotten_python;  /* ... of which had samples while running Python */
	struct py_runtime_file_cache *runtime_files; /* verdicts on mapped files (NULL: none kept); not owned */
};

/* Gone targets are checked for an exit this often, and forgotten this long after it. */
#define TARGET_SET_SWEEP_MS 2000
#define TARGET_SET_FORGET_AFTER_MS 1000

void target_set_init(struct target_set *set);
void target_set_free(struct target_set *set);
/* Adds pid (or returns the existing entry for it). NULL on ENOMEM. */
struct target *target_set_add(struct target_set *set, pid_t pid, enum target_origin origin);
struct target *target_set_find(const struct target_set *set, pid_t pid);

/*
 * One discovery attempt at now_ms, with the set's runtime_files cache. Returns 0 when the
 * target became READY (its identity read too), -EAGAIN while it should stay pending
 * (next_attempt_ms says when), or the error that ends it (last_error says why).
 */
int target_set_discover(const struct target_set *set, struct target *target, uint64_t now_ms);

/* target_set_discover in two halves, for a thread that reads while another owns the set: what
 * discovery found of pid (with the set's runtime_files cache: the one thread that uses it),
 * then the target's new state from it, as target_set_discover returns. */
struct target_discovery {
	int err;
	struct py_target python;
	struct proc_identity identity;
	struct errbuf error;
};
void target_set_discover_read(const struct target_set *set, pid_t pid, struct target_discovery *found);
int target_set_discover_apply(struct target *target, const struct target_discovery *found, uint64_t now_ms);
/*
 * A long whole-host run sees countless processes come and go: forget those that ended. At most
 * every TARGET_SET_SWEEP_MS, each GONE target (not one named with -p) whose process has exited
 * is marked, and one marked at least TARGET_SET_FORGET_AFTER_MS ago (its last records drained
 * since: the loop drains them every tick) is handed to forget (which drops what others keep
 * for the pid) and removed; the others keep their order. Returns how many were removed.
 */
typedef void (*target_set_forget_fn)(void *ctx, const struct target *target);
size_t target_set_forget_exited(struct target_set *set, uint64_t now_ms, target_set_forget_fn forget, void *ctx);
/* Processes that had samples, the forgotten ones included (for the summary). */
size_t target_set_sampled_count(const struct target_set *set);
/* Of those, the processes sampled while they ran Python (a launcher's shells are not). */
size_t target_set_python_count(const struct target_set *set);
/* Whether pid still runs the process we started with. */
bool target_set_alive(const struct target *target);
/* Start time of pid from /proc/PID/stat, 0 if gone. */
unsigned long long target_set_start_ticks(pid_t pid);
/* Whether pid descends from ancestor (bounded walk up the parent chain). */
bool target_set_descends_from(pid_t pid, pid_t ancestor);

#endif
