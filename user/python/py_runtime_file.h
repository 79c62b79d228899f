/* SPDX-License-Identifier: MIT */
/*
 * Which mapped files hold a CPython runtime, whatever they are named: a file
 * holds one when it defines _PyRuntime or Py_Version (3.11+), has the
 * .PyRuntime section (stripped 3.10+), or defines interp_head (2.7, 3.6); a
 * file that imports CPython's API (Py*, _Py*) without holding the runtime is a
 * client of it (a python binary or an application linking libpython, whose
 * loader has not mapped the library yet).
 *
 * Each distinct file is examined once per run, by the parser worker (root opens
 * the file and passes the descriptor; doc/security.md): its verdict is
 * remembered by (device, inode, size, modification time), so a host's thousands
 * of non-Python processes cost one stat and one lookup per executable mapping.
 * A file the worker dies on is remembered without its modification time: a
 * `touch` does not have it read again.
 */
#ifndef PYBPFPROF_PY_RUNTIME_FILE_H
#define PYBPFPROF_PY_RUNTIME_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "elf/elf_file.h"
#include "proc/proc_maps.h"

/* Distinct files remembered at once; the oldest verdict goes first beyond this. */
#define PY_RUNTIME_FILE_CACHE_DEFAULT 8192

enum py_runtime_verdict {
	PY_RUNTIME_NONE,   /* nothing of CPython */
	PY_RUNTIME_CLIENT, /* imports CPython's API, holds no runtime */
	PY_RUNTIME_HERE,   /* holds the runtime */
};

/* What the runtime ELF provides, as link-time addresses. */
struct py_runtime_symbols {
	bool has_runtime, has_interp_head, has_py_version, has_static_gil, has_current_tstate, has_gc_collecting;
	uint64_t runtime;          /* _PyRuntime (or the .PyRuntime section) */
	uint64_t interp_head;      /* 2.7 / 3.6: static PyInterpreterState *interp_head */
	uint64_t py_version;       /* 3.11+: const unsigned long Py_Version */
	uint64_t gil_last_holder;  /* 3.6: static gil state */
	uint64_t gil_locked;
	uint64_t current_tstate;   /* 2.7: _PyThreadState_Current */
	uint64_t gc_collecting;    /* 2.7 / 3.6: gcmodule.c's static collecting */
	/* 3.12: the static _Py_next_func_version (in .symtab only), the counter every new code
	 * object's co_version is taken from (py_proc_config.code_stamp_addr) */
	bool has_code_counter;
	uint64_t code_counter;
	/* The evaluation function's code, [eval_function, + eval_function_size): what makes a
	 * native frame an activation up to 3.11 (symbolize/stack_merge.h), known without the
	 * file's full symbol table (.dynsym exports it). Sized within PY_EVAL_FUNCTION_MAX_BYTES. */
	bool has_eval_function;
	uint64_t eval_function;
	uint64_t eval_function_size;
};

/* The largest evaluation function believed: CPython's is 20-60 KiB, a debug build's a few
 * hundred; a file claiming more names no range. */
#define PY_EVAL_FUNCTION_MAX_BYTES ((uint64_t)4 << 20)

/*
 * The words of CPython's _Py_AsyncioModuleDebugOffsets (3.14+, the ".AsyncioDebug" section of
 * the file holding the _asyncio module: the runtime where it is built in, else its extension):
 * task object (size, task_name, task_awaited_by, task_is_task, task_awaited_by_is_set,
 * task_coro, task_node), interpreter state (size, asyncio_tasks_head), thread state (size,
 * asyncio_running_loop, asyncio_running_task, asyncio_tasks_head).
 */
#define PY_ASYNCIO_DEBUG_WORDS 13u
#define PY_ASYNCIO_DEBUG_SECTION ".AsyncioDebug"

struct py_runtime_file {
	enum py_runtime_verdict verdict;
	bool has_asyncio_debug;          /* any verdict: the file carries the _asyncio module's offsets */
	uint64_t asyncio_debug[PY_ASYNCIO_DEBUG_WORDS];
	struct py_runtime_symbols sym;   /* with PY_RUNTIME_HERE */
	/* The version the file itself names (its SONAME, its PY_VERSION string), never its path:
	 * what tells 2.7 and 3.6-3.10 apart (3.11+ have Py_Version). 0.0: unknown. */
	unsigned major, minor, micro;
	bool has_micro;
	int unread;  /* -ENOEXEC (no 64-bit ELF) or -EFBIG (the file, or one of the tables read,
		      * too large): not read, PY_RUNTIME_NONE;
		      * -ECHILD: the parser worker died on it or overran its time (a bad file) */
};

/* The largest symbol table, string table, dynamic section or .rodata a file may have for its
 * verdict to be read (the largest a test machine has, a libpython's .symtab, is 2.8 MB). */
#define PY_RUNTIME_FILE_MAX_TABLE_BYTES ((uint64_t)32 << 20)

/* The verdict on an open ELF file (what the parser worker runs: root never reads a target's
 * file itself). */
void py_runtime_file_examine(const struct elf_file *elf, struct py_runtime_file *out);

/* A verdict as the worker sends it (parser_protocol.h), and back, checked: 0 or -EBADMSG. */
struct parser_py_runtime;
void py_runtime_file_to_wire(const struct py_runtime_file *file, struct parser_py_runtime *wire);
int py_runtime_file_from_wire(const struct parser_py_runtime *wire, struct py_runtime_file *file);

/*
 * The time the worker has for one file. Discovery runs where records are drained, so it is
 * short: a libpython takes some 20 ms; a file that takes longer is bad for the run.
 */
#define PY_RUNTIME_FILE_TIMEOUT_MS 1000

struct py_runtime_file_cache;

struct py_runtime_file_stats {
	uint64_t lookups;   /* mappings asked about */
	uint64_t examined;  /* files opened and read (each distinct file once, unless evicted) */
	uint64_t runtimes;  /* ... of which held a runtime */
	uint64_t evicted;   /* verdicts dropped to stay within the capacity */
	uint64_t bad;       /* ... files the parser worker died on or overran its time on */
	uint64_t skipped;   /* mappings left unread: past a process's share of one discovery */
	uint64_t requests;  /* round trips to the parser worker (a batch of files is one) */
	size_t files;       /* verdicts held now */
	size_t capacity;
};

/* A discovery left count mappings unread (python/py_discover.c); cache may be NULL. */
void py_runtime_file_cache_count_skipped(struct py_runtime_file_cache *cache, size_t count);
/* 0 or -ENOMEM. */
int py_runtime_file_cache_new(struct py_runtime_file_cache **out, size_t capacity);
/* The time the worker has for one file (PY_RUNTIME_FILE_TIMEOUT_MS by default): a new worker
 * starts at the next file. 0 or -ENOMEM. */
int py_runtime_file_cache_set_timeout(struct py_runtime_file_cache *cache, unsigned timeout_ms);
/* The cache's parser worker as options say (its memory, time, tests' --selftest). 0 or -ENOMEM. */
struct parser_client_options;
int py_runtime_file_cache_set_worker(struct py_runtime_file_cache *cache, const struct parser_client_options *options);
/* Starts the cache's parser worker now if none runs (else the first file waits for it). */
void py_runtime_file_cache_prepare(struct py_runtime_file_cache *cache);
void py_runtime_file_cache_free(struct py_runtime_file_cache *cache);
/*
 * The verdict on the file behind map (an executable mapping of pid), remembered or examined
 * (opened through /proc/PID/map_files as elf_file_open_map does). cache may be NULL: examined
 * every time. 0, or why the file could not be opened (elf_file_open_map's errors; a file
 * that is no 64-bit ELF or is too large is a remembered PY_RUNTIME_NONE with out->unread set).
 */
int py_runtime_file_lookup(struct py_runtime_file_cache *cache, pid_t pid, const struct proc_map *map,
			   struct py_runtime_file *out);
/*
 * Has the verdicts on the files behind maps (count executable mappings of pid) that the cache
 * does not know yet read at once, at most max_reads files: one request to the parser worker
 * for up to PARSER_MAX_BATCH_FILES files (a round trip each costs more than a small file's
 * verdict), each file judged on its own, a file the worker dies on bad and the files after it
 * asked again. The lookups that follow find them known; a file that could not be opened or
 * judged is left to its lookup, which says why. The files read (0 without a cache).
 */
size_t py_runtime_file_prefetch(struct py_runtime_file_cache *cache, pid_t pid, const struct proc_map *const *maps,
				size_t count, size_t max_reads);
void py_runtime_file_cache_stats(const struct py_runtime_file_cache *cache, struct py_runtime_file_stats *stats);
/* The bytes the verdicts and their index take (at most the capacity's: 8192 entries of 264
 * bytes and an index of 16384 slots of 16, 2.4 MiB), as last published by the thread that
 * uses the cache: safe to read from any thread, for the target budget's summary. 0 for NULL. */
uint64_t py_runtime_file_cache_held_bytes(const struct py_runtime_file_cache *cache);

#endif
