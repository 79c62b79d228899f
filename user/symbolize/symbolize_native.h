/* SPDX-License-Identifier: MIT */
/*
 * Names a user-space address of a target: which file it is in (from
 * /proc/PID/maps) and which function (from that file's ELF symbols, and for a
 * stripped file those of its debug file or its MiniDebugInfo; C++ names
 * demangled). The files are read by the unprivileged parser worker, off the
 * caller's thread (native_symbol_loader.h); root keeps each file's compact
 * table, all of them within a byte budget (least recently used dropped). It serves the native leaf
 * frame of a sample that landed outside the interpreter (a C extension, libc,
 * libz) and every frame of a mixed stack, the interpreter's own included.
 */
#ifndef PYBPFPROF_SYMBOLIZE_NATIVE_H
#define PYBPFPROF_SYMBOLIZE_NATIVE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "parser/parser_client.h"
#include "profile/profile.h"
#include "proc/proc_maps.h"

/* What the files' symbol tables may hold in root, all together; and one file's (a file with
 * more is left unnamed: libpython's is about 1 MiB, a large C++ library's tens). */
#define SYMBOLIZE_NATIVE_SYMBOL_BYTES ((uint64_t)64 << 20)
#define SYMBOLIZE_NATIVE_FILE_SYMBOL_BYTES ((uint32_t)32 << 20)
/* What the names handed out may hold (function names, offset names, file paths): they are kept
 * until the table is compacted (symbolize_native_compact_names), so past it a new name reads as
 * its file's bracket name ("[libfoo.so]"), or SYMBOLIZE_NATIVE_NAME_OVER_BUDGET; charged to the
 * target budget too. */
#define SYMBOLIZE_NATIVE_NAME_BYTES ((uint64_t)8 << 20)
/* The names are not compacted below this (the Python names' threshold, symbolize_py.h). */
#define SYMBOLIZE_NATIVE_COMPACT_MIN_BYTES ((uint64_t)256 << 10)
#define SYMBOLIZE_NATIVE_NAME_OVER_BUDGET "[name over budget]"
#define SYMBOLIZE_NATIVE_PATH_OVER_BUDGET "<path over budget>"

struct symbolize_native;

struct symbolize_native_stats {
	uint64_t files_loaded;          /* files whose symbols the worker read */
	uint64_t files_bad;             /* files lost by the worker or past a budget: unnamed for the run */
	uint64_t worker_starts;
	uint64_t worker_lost_files;     /* requests the worker died on or overran */
	uint64_t worker_timeouts;       /* of which: overran the time budget */
	uint64_t worker_out_of_memory;  /* requests past the worker's memory limit */
	uint64_t worker_start_failures;
	uint64_t symbol_bytes;          /* what the tables hold now */
	uint64_t tables_evicted;        /* tables dropped for the budget */
	uint64_t debug_candidates_refused; /* debug file candidates not opened (native_symbol_loader.h) */
	uint64_t maps_asked;            /* reads of maps asked of the maps source */
	uint64_t maps_adopted;          /* reads of maps taken from it */
	uint64_t maps_read_here;        /* maps the symbolizer read itself (on its caller's thread) */
	uint64_t names_over_budget;     /* new names given a stand-in past the names' budget */
	uint64_t name_table_bytes;      /* what the names hold now: keys, key index, hash slots */
	uint64_t name_compactions;      /* symbolize_native_compact_names that built a new table */
};

struct symbolize_native *symbolize_native_new(void);
void symbolize_native_free(struct symbolize_native *symbolizer);
/* Where separate debug files are looked for instead of /usr/lib/debug (a test's tree); kept, not copied. */
void symbolize_native_set_debug_dir(struct symbolize_native *symbolizer, const char *debug_dir);
/* How long a lookup may wait for a new file's symbols (default 5 s, for one-shot users; the
 * loop that drains samples: 0, its pcs named by offset until the symbols are in). */
void symbolize_native_set_wait_ms(struct symbolize_native *symbolizer, unsigned wait_ms);
/* The symbol tables' byte budgets (SYMBOLIZE_NATIVE_SYMBOL_BYTES, ..._FILE_SYMBOL_BYTES); before the first lookup. */
void symbolize_native_set_budgets(struct symbolize_native *symbolizer, uint64_t symbol_bytes,
				  uint32_t file_symbol_bytes);
/* The names' byte budget (SYMBOLIZE_NATIVE_NAME_BYTES); before the first lookup. */
void symbolize_native_set_name_budget(struct symbolize_native *symbolizer, uint64_t name_bytes);
struct target_budget;
/* The symbol tables are charged to budget too (util/target_budget.h, outliving the
 * symbolizer's use), and stamped with its clock; before the first lookup. 0 or -ENOSPC. */
int symbolize_native_set_target_budget(struct symbolize_native *symbolizer, struct target_budget *budget);
/*
 * Where pids' maps come from: ask(context, pid) asks for a read of pid's maps (> 0: asked, the
 * maps to come through symbolize_native_adopt_maps; 0: not now; < 0: no one reads them, read
 * here). Without it (the default), the symbolizer reads /proc/PID/maps itself; with it, never:
 * a process mapping thousands of files makes each read long, and the caller's thread may be
 * one that must not wait. A pc of a pid whose maps are asked for is unnamed meanwhile, and
 * symbolize_native_names_pending says so.
 */
typedef int (*symbolize_native_ask_maps_fn)(void *context, pid_t pid);
void symbolize_native_set_maps_source(struct symbolize_native *symbolizer, symbolize_native_ask_maps_fn ask,
				      void *context);
/* pid's maps, read (only the executable mappings of files and the vDSO are needed), taken
 * (*maps emptied): they replace what was known of pid. */
void symbolize_native_adopt_maps(struct symbolize_native *symbolizer, pid_t pid, struct proc_maps *maps);
/* The read asked of pid's maps will not come (the process changed meanwhile). */
void symbolize_native_maps_unread(struct symbolize_native *symbolizer, pid_t pid);
/* The parser worker's options (parser_client.h); before the first lookup. */
void symbolize_native_set_parser(struct symbolize_native *symbolizer, const struct parser_client_options *options);
/* Starts the parser worker now rather than at the first file (after the setters above):
 * a recording's first samples then wait for no worker's start. 0 or a negative errno. */
int symbolize_native_prepare(struct symbolize_native *symbolizer);
void symbolize_native_stats(struct symbolize_native *symbolizer, struct symbolize_native_stats *out);
/* The parser worker's pid now, 0 if none runs (tests look at it from outside). */
pid_t symbolize_native_worker_pid(struct symbolize_native *symbolizer);
/* The process is gone, or exec'd: its mappings no longer hold. */
void symbolize_native_forget_pid(struct symbolize_native *symbolizer, pid_t pid);
/*
 * 1 with *frame filled (kind native; name the function, or "[libfoo.so.1]" when no symbol
 * covers ip; file the mapped file as the target sees it), 0 when ip is in the file skip (the
 * interpreter itself, which the Python frames already describe; NULL: none) or outside every file
 * mapping (anonymous memory, [vdso]) or in a process whose maps cannot be read (they are
 * read again at most every 100 ms), -ENOMEM.
 * The frame's strings live until symbolize_native_compact_names builds a new table.
 */
int symbolize_native_resolve(struct symbolize_native *symbolizer, pid_t pid, const struct proc_file_id *skip,
			     uint64_t ip, struct pf_frame *frame);

/*
 * The mapping that holds pc is known from now on (pid's maps read again if need be) and its
 * file's symbols asked for: a record named later, perhaps once pid has exited and its maps
 * can no longer be read, is then named as it would have been now.
 */
void symbolize_native_note_pc(struct symbolize_native *symbolizer, pid_t pid, uint64_t pc);

/*
 * Whether a file that holds one of pid's pcs still waits for its symbols (asked for now if it
 * was not): its frames would be named by their offsets if named now. Costs no lookup while
 * every file seen so far is named.
 */
bool symbolize_native_names_pending(struct symbolize_native *symbolizer, pid_t pid, const uint64_t *pcs,
				    size_t count);
/* One pc of a native stack, named. */
struct symbolize_native_frame {
	struct pf_frame frame; /* kind native; file as the target sees it */
	const char *symbol;    /* the function (demangled), NULL when no symbol covers the pc */
	bool in_interpreter;   /* in the interpreter's file or in the process's main executable */
	bool provisional;      /* the file's symbols are not known yet: a later lookup may name it */
};

/*
 * Names any pc of pid, the interpreter's own included. 1 with *out filled (a pc
 * no symbol covers is named "[libfoo.so.1+0x1234]": the file's basename and the
 * pc's file offset), 0 outside every file mapping, -ENOMEM. interpreter
 * (NULL: none) is the file that holds the runtime (libpython, or the python
 * executable of a static build). The strings live until symbolize_native_compact_names builds
 * a new table.
 */
int symbolize_native_lookup(struct symbolize_native *symbolizer, pid_t pid, const struct proc_file_id *interpreter,
			    uint64_t pc, struct symbolize_native_frame *out);

/*
 * Drops the names no known file uses (those of files evicted or of processes gone, offset names)
 * once the table holds twice what it held after its last compaction (and at least
 * SYMBOLIZE_NATIVE_COMPACT_MIN_BYTES): a whole host keeps meeting files of new names. Every
 * name handed out before is then gone: the caller drops what holds them before the next lookup
 * (the resolver's kept stacks and named pcs: sample_resolve_forget_names). 1 when a new table was
 * built, 0 when not needed, -ENOMEM (nothing changed).
 */
int symbolize_native_compact_names(struct symbolize_native *symbolizer);

#endif
