/* SPDX-License-Identifier: MIT */
/*
 * The symbols of mapped files, read off the caller's thread: a helper thread opens each file
 * (and its debug file candidates, elf/debug_file.h) as root, safely (elf/elf_file.h:
 * a regular file, the mapping's device and inode, never a tty, a FIFO or a device), and has
 * the parser worker (parser/parser_client.h) read it; what comes back is checked and kept as
 * a compact table: load segments, function ranges and their names. A file whose worker dies
 * or overruns is bad for the run; the caller does not ask again.
 */
#ifndef PYBPFPROF_NATIVE_SYMBOL_LOADER_H
#define PYBPFPROF_NATIVE_SYMBOL_LOADER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "parser/parser_client.h"
#include "elf/elf_file.h"
#include "elf/elf_symbols.h"
#include "proc/proc_maps.h"
#include "unwind/file_table.h"
#include "util/work_queue.h"

/* Jobs waiting for the helper thread; past it a file waits for a later lookup. */
#define NATIVE_SYMBOL_LOADER_MAX_QUEUED 256

/* What one file's job found. */
struct native_symbols {
	struct elf_load_segment segments[ELF_FILE_MAX_LOAD_SEGMENTS];
	size_t segment_count;       /* 0: the file's ELF is unknown (no load bias) */
	struct elf_symbols symbols; /* its own, its debug file's or its MiniDebugInfo's */
	/* A file without .symtab: where its functions begin and end by its .eh_frame (static
	 * functions have no symbol but an FDE), sorted by start; NULL: none */
	struct unwind_function_range *function_ranges;
	size_t function_range_count;
};

struct native_symbol_job {
	void *owner;          /* the caller's */
	pid_t pid;            /* whose mapping */
	struct proc_map map;  /* the mapping (path owned by the job) */
	bool vdso;            /* our own copy of the vDSO's image, not the map */
	const char *debug_dir;
	/* filled by the helper: 0 (symbols, perhaps none), -ENOENT (no such file or no ELF),
	 * -ECHILD (the worker died or overran on it: bad for the run), -E2BIG / -ENOMEM (past a
	 * budget, or the worker's memory), -ENOSYS (no worker) */
	int status;
	struct native_symbols result;
	struct work_item queued;          /* in the loader's queue */
	struct native_symbol_job *next;   /* in a list of jobs done */
};

struct native_symbol_loader_stats {
	struct parser_client_stats parser;
	uint64_t files_loaded;
	uint64_t files_bad;        /* lost by the worker (-ECHILD) or past a budget */
	uint64_t candidates_lost;  /* debug file candidates the worker died on (skipped) */
	uint64_t candidates_refused; /* debug file candidates there but not opened: not a regular
				      * file (a FIFO, a device), a link where none may be, too big */
};

struct native_symbol_loader_options {
	struct parser_client_options parser;
	uint32_t reply_bytes;      /* one answer's budget: a file with more symbols is past it */
	uint64_t debug_bytes;      /* what debuglink checks and MiniDebugInfo may read over the run */
};

struct native_symbol_loader;

int native_symbol_loader_new(const struct native_symbol_loader_options *options,
			     struct native_symbol_loader **out);
/* Stops the helper (after the job it is on) and frees every job. */
void native_symbol_loader_free(struct native_symbol_loader *loader);
/* Starts the helper now (else at the first job), which starts the worker: the first files
 * then do not wait for it. 0 or a negative errno. */
int native_symbol_loader_start(struct native_symbol_loader *loader);
/* Queues job (taken over); -EAGAIN when NATIVE_SYMBOL_LOADER_MAX_QUEUED wait (the job is not
 * taken), -ENOMEM, or the helper's start error. */
int native_symbol_loader_submit(struct native_symbol_loader *loader, struct native_symbol_job *job);
/* The jobs done since the last call (a list through next; the caller frees each with
 * native_symbol_job_free), NULL if none; waits until deadline_ms (clock_monotonic_ms) for one. */
struct native_symbol_job *native_symbol_loader_take_done(struct native_symbol_loader *loader, uint64_t deadline_ms);
void native_symbol_job_free(struct native_symbol_job *job);
void native_symbol_loader_stats(struct native_symbol_loader *loader, struct native_symbol_loader_stats *out);
/* The worker's pid now (0: none), for the tests that look at it from outside. */
pid_t native_symbol_loader_worker_pid(struct native_symbol_loader *loader);

#endif
