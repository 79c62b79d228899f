/* SPDX-License-Identifier: MIT */
/*
 * A Python thread's name as threading gave it (Thread.name), read from the target: the
 * thread's outermost frame is Thread._bootstrap, whose first local is the Thread, whose
 * `_name` attribute is the name. 3.14+ also give it to the OS thread (its comm).
 */
#ifndef PYBPFPROF_PY_THREAD_NAME_H
#define PYBPFPROF_PY_THREAD_NAME_H

#include <stddef.h>
#include <stdint.h>

#include "python/py_discover.h"

/* Longest name kept, NUL included: longer ones are cut. */
#define PY_THREAD_NAME_MAX 64

/*
 * The name of the thread whose PyThreadState is at tstate_addr into out (NUL-terminated, cut to
 * size; ASCII names only). 0, or negative errno: -ENOTSUP for a version it cannot read (not
 * 2.7 or 3.6-3.13), -ENOENT for a thread threading did not start (its root frame is not
 * Thread._bootstrap) or a Thread whose name it cannot find, -EFAULT/-ESRCH from the reads.
 * At most PY_THREAD_NAME_FRAMES frames are walked and PY_THREAD_NAME_SLOTS attribute slots
 * scanned, each read checked: a few hundred reads at worst (a thread deeper than that keeps its
 * comm), made once per thread, so a target cannot hold up the loop that drains the samples.
 */
#define PY_THREAD_NAME_FRAMES 256
#define PY_THREAD_NAME_SLOTS 256
int py_thread_name_read(const struct py_target *python, uint64_t tstate_addr, char *out, size_t size);

/*
 * 3.11-3.13: the attribute `key` (ASCII, under 16 characters) of a heap type's instance whose
 * attributes are still in its inline values, read the way the Thread's name is; 0 if not found
 * (another version, a dict of its own, a failed read). Bounded as above.
 */
uint64_t py_instance_attribute(const struct py_target *python, uint64_t object, const char *key);

#endif
