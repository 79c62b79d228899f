/* SPDX-License-Identifier: MIT */
/*
 * Finding CPython in a running process: which mapped ELF holds the runtime,
 * which version it is, and the per-process config BPF needs to walk its stacks.
 */
#ifndef PYBPFPROF_PY_DISCOVER_H
#define PYBPFPROF_PY_DISCOVER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proc/proc_maps.h"
#include "python/py_offsets.h"

struct py_target {
	pid_t pid;
	struct proc_file_id runtime_file; /* the ELF holding _PyRuntime / interp_head */
	unsigned major, minor, micro;
	struct py_proc_config config;  /* ready to store in the BPF proc_configs map */
	/* How its asyncio tasks are read: 3.14+ once the _asyncio module's offsets are found
	 * (built into the runtime, or its extension mapped: py_discover_asyncio); 3.11-3.13 from
	 * the generated table at discovery (from_callbacks) */
	struct py_asyncio_layout asyncio;
	/* The evaluation function's code in the target's memory, [eval_start, eval_end), from the
	 * runtime file's symbols as discovery read them (both 0: not known). A native frame there
	 * is an activation whether or not the file's full symbol table has been read since. */
	uint64_t eval_start, eval_end;
};

struct py_runtime_file_cache;

/* 0, or: -ESRCH (no such process), -ENOEXEC (not a Python process), -ENOTSUP (version without
 * offsets), -EAGAIN (libpython/runtime not mapped or not initialised yet: retry soon). err_text gets one
 * line of context without the program name, e.g.
 * "pid 4242: not a Python process (no mapped file holds the CPython runtime; searched /usr/bin/bash, ...)"
 * "pid 4242: CPython 3.5.10 is not supported (offsets are known for 2.7 and 3.6-3.12; 3.13+ are read from the target)"
 * Other negative errnos (-EACCES, -EFAULT, -ENOMEM) come with their context too. */
int py_discover_runtime(pid_t pid, struct py_target *target, char *err_text, size_t err_len);
/* The same, the verdicts on the files pid maps remembered in cache (python/py_runtime_file.h):
 * every executable file mapping is asked whether it holds the runtime, whatever its name. */
int py_discover_runtime_cached(struct py_runtime_file_cache *cache, pid_t pid, struct py_target *target,
			       char *err_text, size_t err_len);

/*
 * A 3.14+ target whose asyncio offsets are not known yet (its _asyncio extension was not
 * mapped at discovery): looks for the extension among its mappings now. 0 when they became
 * known (target->asyncio and the config's PY_PROC_HAS_ASYNCIO set: store the config again),
 * -ENOENT while the module is not mapped, or the lookup's error.
 */
int py_discover_asyncio(struct py_runtime_file_cache *cache, struct py_target *target);

#endif
