/* SPDX-License-Identifier: MIT */
/*
 * The native-unwinding tables of every target (include/unwind_table.h): one
 * table per distinct file (build-id, else device and inode), built once and
 * shared by every process that maps it, refcounted by those processes; when
 * none maps it any more it stays idle until a new file needs its room or the
 * idle tables hold more than their limit, the longest idle first (the next
 * Python of the same build reuses it); files that cannot have one (no CFI,
 * too many rows, no room left, a parser worker that died on it) are
 * remembered so they are never built again. The rows are built by the parser
 * worker (unwind/file_table.h's unwind_table_from_worker): root reads no CFI.
 *
 * The cache places each table in a chunk of the rows map (unwind/unwind_chunks.h:
 * the capacity given at init is the most the chunks may hold) and gives it a
 * table id (< UNWIND_MAX_TABLES); the caller's ops create the chunks and upload it. For each
 * process it produces the struct unwind_proc BPF looks mappings up in. Target
 * files are opened through /proc/PID/map_files, never by a path the target
 * controls, and must be the regular file (device, inode) the maps line names.
 */
#ifndef PYBPFPROF_UNWIND_CACHE_H
#define PYBPFPROF_UNWIND_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <unwind_table.h>

#include "parser/parser_client.h"
#include "proc/proc_maps.h"
#include "unwind/file_table.h"

/* Slots of the rows map idle tables (files no process maps any more) may hold: past it the
 * longest idle goes. 4 MiB of rows: a few interpreters' libpython and libc. */
#define UNWIND_CACHE_IDLE_ROWS ((size_t)1 << 19)
/* Failed files no process maps that are remembered (so as not to be read again), oldest given up first. */
#define UNWIND_CACHE_IDLE_VERDICTS ((size_t)4096)

/* A process's maps are read again for an unknown pc at most this often. */
#define UNWIND_CACHE_REFRESH_MS 200
/* ... unless it maps more executable files than this (then it is read once per maps event). */
#define UNWIND_CACHE_REFRESH_MAX_MAPPINGS 4096

/* Why a file mapping has no table. */
enum unwind_cache_failure {
	UNWIND_FAIL_OPEN = 0,     /* map_files could not be opened, or was not the file the maps name */
	UNWIND_FAIL_NOT_ELF,      /* not a 64-bit x86-64 ELF, or no program header covers the mapping */
	UNWIND_FAIL_NO_CFI,       /* neither .eh_frame nor .debug_frame has a usable FDE */
	UNWIND_FAIL_TOO_BIG,      /* more than UNWIND_TABLE_MAX_ROWS rows, or too costly CFI */
	UNWIND_FAIL_NO_ROOM,      /* no free range of rows (the budget), or no free table id */
	UNWIND_FAIL_UPLOAD,       /* the upload was refused */
	UNWIND_FAIL_OTHER,        /* unreadable CFI, out of memory */
	UNWIND_FAIL_WORKER,       /* the parser worker died, overran, ran out of memory or lied on it,
				   * or none could be started: bad for the run */
	UNWIND_FAIL_COUNT,
};

/* What the caller does with a table: write its rows then point the table id at them. */
struct unwind_cache_ops {
	void *ctx;
	/* 0 or a negative errno (the file then has no table). */
	int (*upload_table)(void *ctx, uint32_t table_id, const struct unwind_table_ref *ref,
			    const struct unwind_row *rows, const uint32_t *pages);
	/* No process maps the table's file any more: its id and rows will be reused. */
	void (*release_table)(void *ctx, uint32_t table_id);
	/* The chunks of the rows map the tables lie in (unwind/unwind_chunks.h): a chunk is
	 * added before the first table placed in it and removed after its last is released. */
	int (*add_chunk)(void *ctx, uint32_t chunk, uint32_t rows);
	void (*remove_chunk)(void *ctx, uint32_t chunk);
};

struct unwind_cache_stats {
	size_t row_capacity;
	size_t rows_used;       /* slots of the rows map: rows and page indexes */
	size_t files;           /* files with a table now */
	size_t peak_rows_used;  /* the most rows in use at once over the run */
	size_t chunks;          /* chunks of the rows map held now */
	size_t chunk_rows;      /* their sizes summed: the rows memory held */
	size_t peak_chunk_rows; /* the most held at once over the run */
	size_t peak_files;      /* the most files with a table at once */
	size_t processes;       /* processes whose mappings are known */
	size_t tables_built;    /* tables built and uploaded, over the run */
	size_t failed_files;    /* files remembered as having no table */
	size_t idle_files;      /* of files: tables no process maps now, kept until the room is needed */
	size_t idle_reused;     /* new processes served by an idle table instead of a rebuild */
	size_t idle_evicted;    /* idle tables given up for a new file's room */
	size_t idle_rows;       /* slots the idle tables hold now (at most the idle limit) */
	size_t idle_dropped;    /* idle tables given up past the idle limit, longest idle first */
	uint64_t idle_dropped_rows; /* their slots */
	size_t idle_verdicts;       /* failed files no process maps, remembered (at most UNWIND_CACHE_IDLE_VERDICTS) */
	size_t verdicts_forgotten;  /* of those, the oldest given up past the limit */
	size_t builds_deferred; /* new files met while the build queue was full, left for a later read */
	size_t builds_cancelled; /* queued files every process mapping them left before their build */
	size_t builds_yielded;   /* of builds_deferred: queued files taken out for an earlier turn's */
	size_t failures[UNWIND_FAIL_COUNT]; /* by cause: files (mappings for OPEN) */
	size_t procs_refused;   /* maps reads the target budget refused (the process's last read stays, if any) */
	uint64_t build_us;      /* time spent building tables */
	struct parser_client_stats parser; /* the parser worker that builds them */
};

struct unwind_cache;

/* row_capacity: the rows map's size; ops may be NULL (nothing uploaded: tests). 0 or -ENOMEM. */
int unwind_cache_new(struct unwind_cache **out, size_t row_capacity, const struct unwind_cache_ops *ops);
void unwind_cache_free(struct unwind_cache *cache);
/* The parser worker that builds the tables (its memory and time per file; tests set less),
 * before the first build. 0 or -ENOMEM. */
int unwind_cache_set_parser_options(struct unwind_cache *cache, const struct parser_client_options *options);
struct target_budget;
/* The share of the target budget (percent of its limit) the processes' mappings may hold: they
 * cannot be evicted, and past it they would starve the stores that name frames. */
#define UNWIND_CACHE_BUDGET_SHARE_PERCENT 50
/* What the cache keeps per process (its mappings and executable ranges) is charged to budget as
 * the store "process mappings", which cannot be evicted: a maps read that does not fit (in the
 * budget, or in UNWIND_CACHE_BUDGET_SHARE_PERCENT of its limit) is refused (-ENOSPC, counted in
 * procs_refused; the process's last read stays). Before the first read. 0 or -ENOSPC (no store
 * left). */
int unwind_cache_set_target_budget(struct unwind_cache *cache, struct target_budget *budget);
/* The most slots idle tables may hold (UNWIND_CACHE_IDLE_ROWS unless set; tests set less). */
void unwind_cache_set_idle_limit(struct unwind_cache *cache, size_t rows);

/*
 * Reads pid's maps, builds and uploads the tables of executable files new to
 * the cache, and fills *proc. Replaces what the cache held for pid (the tables
 * only it mapped are released after the new ones are uploaded: the caller sets
 * *proc in BPF before its next call to the cache, which may reuse their ids).
 * 0, -ESRCH (gone), -ENOMEM, -ENOSPC (refused by the target budget).
 */
int unwind_cache_map_proc(struct unwind_cache *cache, pid_t pid, struct unwind_proc *proc);
/* The same, read again because a walk of pid stopped in a file it had no table for: its new files
 * may queue past a queue full of files no walk waits for (a few more, bounded). */
int unwind_cache_map_proc_for_walk(struct unwind_cache *cache, pid_t pid, struct unwind_proc *proc);
/*
 * The same in two halves, for a thread that reads while another owns the cache: what pid's
 * executable mappings are (their files opened, their ids and load biases read), touching no
 * cache (any thread); then, on the cache's thread, the cache updated from that read as
 * unwind_cache_map_proc (for_walk: _for_walk) would. A read holds the descriptors of up to
 * UNWIND_PREPARED_FDS_MAX distinct files (a new file past them is deferred, for a later read).
 */
#define UNWIND_PREPARED_FDS_MAX 64
enum unwind_prepared_state {
	UNWIND_PREPARED_FILE = 0,     /* id and bias known */
	UNWIND_PREPARED_DELETED,      /* the file was unlinked or replaced */
	UNWIND_PREPARED_OPEN_FAILED,  /* map_files could not be opened, or was not the file the maps name */
	UNWIND_PREPARED_NOT_ELF,      /* no program header covers it, or no id */
};
struct unwind_prepared_map {
	uint64_t start, end, bias;
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	struct unwind_file_id id;
	int fd;        /* the file (owned by the read's fds), or -1 */
	uint8_t state; /* enum unwind_prepared_state */
};
struct address_range;
struct unwind_prepared_proc {
	pid_t pid;
	uint64_t read_ms;  /* when the read began (clock_monotonic_ms) */
	struct unwind_prepared_map *maps; /* the unwindable mappings, UNWIND_MAX_MAPPINGS at most */
	size_t count;
	struct address_range *ranges;     /* every executable mapping */
	size_t range_count;
	int fds[UNWIND_PREPARED_FDS_MAX];
	size_t fd_count;
	/* the executable mappings of files (and the vDSO), all of them: what names a pc
	 * (symbolize/symbolize_native.h), which may take them (then empty) */
	struct proc_maps named;
};
/* 0, -ESRCH (gone), -ENOMEM; free it with unwind_prepared_proc_free in any case. */
int unwind_cache_prepare_proc(pid_t pid, struct unwind_prepared_proc *prepared);
int unwind_cache_map_prepared(struct unwind_cache *cache, const struct unwind_prepared_proc *prepared, bool for_walk,
			      struct unwind_proc *proc);
void unwind_prepared_proc_free(struct unwind_prepared_proc *prepared);
/* pid exited or exec'd (the caller removed it from BPF first): its tables lose a reference. */
void unwind_cache_forget_proc(struct unwind_cache *cache, pid_t pid);
/* Whether pid is known (unwind_cache_map_proc succeeded and it was not forgotten since). */
bool unwind_cache_knows_proc(const struct unwind_cache *cache, pid_t pid);
/* pid maps more than UNWIND_CACHE_REFRESH_MAX_MAPPINGS executable files: never read again for a walk. */
bool unwind_cache_refresh_refused(const struct unwind_cache *cache, pid_t pid);
/*
 * Whether a walk of pid that stopped at pc for want of a mapping or a table
 * calls for reading its maps again: pc lies in no executable mapping of the
 * last read (a library loaded since, maybe where other memory was then; not
 * JIT code in anonymous executable memory, which no re-read would help) and
 * that read is UNWIND_CACHE_REFRESH_MS old.
 */
bool unwind_cache_should_refresh(const struct unwind_cache *cache, pid_t pid, uint64_t pc, uint64_t now_ms);

/* What the cache holds for the file mapped at pid's pc. */
enum unwind_cache_pc {
	UNWIND_PC_TABLE = 0,     /* placed: *ref and the mapping's *bias are set */
	UNWIND_PC_BUILDING,      /* queued or being built */
	UNWIND_PC_DEFERRED,      /* met while the build queue was full: a later maps read queues it */
	UNWIND_PC_NO_TABLE,      /* an executable mapping with no table (refused, failed, deferred) */
	UNWIND_PC_NO_MAPPING,    /* in no executable mapping of the last read */
	UNWIND_PC_UNKNOWN_PROC,  /* pid is not known (gone, or forgotten) */
};
enum unwind_cache_pc unwind_cache_table_at(const struct unwind_cache *cache, pid_t pid, uint64_t pc,
					   struct unwind_table_ref *ref, uint64_t *bias);

/* pid's mappings as BPF takes them: its last read's, with the tables placed since.
 * 0, -ESRCH (not known). */
int unwind_cache_proc_mappings(const struct unwind_cache *cache, pid_t pid, struct unwind_proc *proc);
/* When pid's maps were last read (clock_monotonic_ms), 0 if it is not known. */
uint64_t unwind_cache_read_ms(const struct unwind_cache *cache, pid_t pid);

void unwind_cache_stats(struct unwind_cache *cache, struct unwind_cache_stats *stats);
/*
 * From now on new files are built on a thread of the cache's own, not in
 * unwind_cache_map_proc: their mappings say NO_TABLE until unwind_cache_poll()
 * places them. 0 or -errno.
 */
int unwind_cache_build_in_background(struct unwind_cache *cache);
/*
 * Places (uploads) the tables built since the last call; writes into pids (up
 * to capacity) the processes mapping them, whose mappings now name the tables
 * (unwind_cache_proc_mappings: no maps read) and must be set in BPF. Returns how
 * many; those past capacity are listed by the next call.
 */
size_t unwind_cache_poll(struct unwind_cache *cache, pid_t *pids, size_t capacity);
/*
 * A walk of pid stopped at pc for want of a table: the file mapped there, if its
 * table waits in the queue, is built before the files fewer walks wait for.
 */
void unwind_cache_want_pc(struct unwind_cache *cache, pid_t pid, uint64_t pc);
/*
 * The file open at fd (the caller's choice: a command about to be launched, not
 * a target's mapping) gets a table now or, with the builder thread, queued; it
 * is kept, idle, for the first process that maps the file. 0, -ENOEXEC (not an
 * ELF file), -ENOMEM.
 */
int unwind_cache_prebuild_file(struct unwind_cache *cache, int fd);
/* Whether any table is still being built or waits to be placed. */
bool unwind_cache_building(struct unwind_cache *cache);
/* "open", "not_elf", "no_cfi", "too_big", "no_room", "upload", "other", "worker". */
const char *unwind_cache_failure_name(enum unwind_cache_failure failure);

#endif
