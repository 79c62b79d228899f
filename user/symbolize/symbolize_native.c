// SPDX-License-Identifier: MIT
#include "symbolize/symbolize_native.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "symbolize/native_symbol_loader.h"
#include "elf/debug_file.h"
#include "elf/elf_file.h"
#include "elf/elf_symbols.h"
#include "proc/proc_maps.h"
#include "unwind/file_table.h"
#include "elf/vdso.h"
#include "util/array.h"
#include "util/clock.h"
#include "util/errbuf.h"
#include "util/intern.h"
#include "util/target_budget.h"

/* Processes whose maps are kept; beyond this the oldest is dropped (and read again if needed). */
#define SYMBOLIZE_NATIVE_MAX_PIDS 64
/* Mappings kept, all processes together (some 100 bytes each): a process may map 65,000 files,
 * and maps read for processes not being named are only kept below this. */
#define SYMBOLIZE_NATIVE_MAX_HELD_MAPPINGS ((size_t)1 << 16)
/*
 * A miss (an address in no known mapping: a library loaded since) re-reads the maps: the first
 * SYMBOLIZE_NATIVE_REREAD_BURST at once, so that the pcs of a library a program has just loaded
 * (an import) are named from its first sample; past them at most every SYMBOLIZE_NATIVE_REREAD_MS,
 * as code in no file (a JIT's) misses on every sample. Each interval unused earns one back.
 */
#define SYMBOLIZE_NATIVE_REREAD_MS 100
#define SYMBOLIZE_NATIVE_REREAD_BURST 8
/* Files known (their symbols, or that they have none), the least recently used dropped past it. */
#define SYMBOLIZE_NATIVE_MAX_FILES 1024
/* What checking debug files (a debuglink's CRC32 reads the file whole) and expanding
 * MiniDebugInfo may read over a run, all files together: each file has its own bounds, this
 * one stops a target that maps many files pointing at large ones (real ones cost a few MiB). */
#define SYMBOLIZE_NATIVE_DEBUG_BYTES ((uint64_t)2 << 30)
/* How long a lookup waits for a new file's symbols by default (one-shot users: `stacks`, tests);
 * the recording loop waits for none (symbolize_native_set_wait_ms). */
#define SYMBOLIZE_NATIVE_DEFAULT_WAIT_MS 5000

struct pid_maps {
	pid_t pid;
	struct proc_maps maps;
	bool awaited;        /* with a maps source: a read is asked and not yet adopted */
	uint64_t reread_due_ms; /* when a re-read is due with the burst spent; earlier ones spend it */
	uint64_t used;       /* for eviction: the symbolizer's clock when last used */
	bool exe_known;      /* the main executable's identity, from /proc/PID/exe */
	uint64_t exe_inode;
	uint32_t exe_dev_major, exe_dev_minor;
};

/* Twice the files at most: probes stay short. */
#define FILE_INDEX_SLOTS (2 * SYMBOLIZE_NATIVE_MAX_FILES)

enum mapped_file_state {
	FILE_UNQUEUED, /* its job could not be queued yet (the queue is full): tried at the next lookup */
	FILE_PENDING,  /* the loader has its job */
	FILE_READY,    /* symbols (perhaps none) known */
	FILE_BAD,      /* lost by the worker or past a budget: no symbols for the run */
};

/* One mapped file: its load segments and symbols, as the parser worker read them. */
struct mapped_file {
	char *path;               /* as the target sees it */
	const char *frame_path;   /* interned: outlives the file's eviction */
	const char *bracket_name; /* interned "[libfoo.so.1]", the name of an address no symbol covers */
	uint64_t inode;
	uint32_t dev_major, dev_minor; /* with the inode and path: which file (its debug data too) */
	enum mapped_file_state state;
	struct native_symbols loaded;
	const char **display_names; /* by function, its name interned (C++ names come demangled); NULL: not yet */
	size_t display_count;       /* display_names' length: the functions when it was made */
	uint64_t bytes;             /* what its table holds, of the symbol budget */
	uint64_t used;              /* the symbolizer's clock when last used */
};

struct symbolize_native {
	struct pid_maps pids[SYMBOLIZE_NATIVE_MAX_PIDS];
	size_t pid_count;
	size_t held_mappings; /* in pids' maps */
	struct mapped_file *files[SYMBOLIZE_NATIVE_MAX_FILES];
	size_t file_count;
	/* files by identity, open addressing: every pc of every sample finds its file here */
	struct mapped_file *file_index[FILE_INDEX_SLOTS];
	uint64_t own_clock;
	uint64_t *clock;       /* own_clock, or the target budget's (its eviction compares stores) */
	struct target_budget *budget; /* NULL: none; else the tables are charged to it */
	int budget_store;
	/* files the budget's eviction leaves alone: the one a lookup is waiting for, the one
	 * being installed */
	const struct mapped_file *in_lookup, *installing;
	const char *debug_dir; /* where debug files are looked for (elf/debug_file.h) */
	struct native_symbol_loader_options loader_options;
	struct native_symbol_loader *loader; /* started at the first file */
	unsigned wait_ms;            /* the most one lookup waits for a file's symbols */
	uint64_t symbol_bytes;  /* what the files' tables hold */
	uint64_t symbol_budget; /* past it, the least recently used tables are dropped */
	uint64_t tables_evicted;
	struct intern_table offset_names; /* every string a frame points to: names, paths */
	uint64_t name_budget;   /* what offset_names may hold */
	uint64_t names_compacted_bytes; /* what offset_names held after its last compaction */
	uint64_t name_compactions;
	int names_store;        /* the target budget's store of offset_names */
	uint64_t names_over_budget;
	const char *name_over_budget, *path_over_budget; /* the stand-ins, interned first */
	/* NULL: maps are read here; else asked of it, and adopted (symbolize_native_adopt_maps) */
	symbolize_native_ask_maps_fn ask_maps;
	void *ask_maps_context;
	uint64_t maps_asked, maps_adopted, maps_read_here;
};

static int intern_stand_ins(struct symbolize_native *symbolizer);

struct symbolize_native *symbolize_native_new(void)
{
	struct symbolize_native *symbolizer = calloc(1, sizeof(struct symbolize_native));

	if (symbolizer) {
		intern_init(&symbolizer->offset_names);
		symbolizer->name_budget = SYMBOLIZE_NATIVE_NAME_BYTES;
		symbolizer->debug_dir = DEBUG_FILE_DIR;
		symbolizer->wait_ms = SYMBOLIZE_NATIVE_DEFAULT_WAIT_MS;
		symbolizer->symbol_budget = SYMBOLIZE_NATIVE_SYMBOL_BYTES;
		symbolizer->clock = &symbolizer->own_clock;
		symbolizer->loader_options = (struct native_symbol_loader_options){
			.reply_bytes = SYMBOLIZE_NATIVE_FILE_SYMBOL_BYTES,
			.debug_bytes = SYMBOLIZE_NATIVE_DEBUG_BYTES,
		};
		if (intern_stand_ins(symbolizer)) {
			intern_free(&symbolizer->offset_names);
			free(symbolizer);
			return NULL;
		}
	}
	return symbolizer;
}

void symbolize_native_set_debug_dir(struct symbolize_native *symbolizer, const char *debug_dir)
{
	symbolizer->debug_dir = debug_dir;
}

void symbolize_native_set_wait_ms(struct symbolize_native *symbolizer, unsigned wait_ms)
{
	symbolizer->wait_ms = wait_ms;
}

void symbolize_native_set_budgets(struct symbolize_native *symbolizer, uint64_t symbol_bytes,
				  uint32_t file_symbol_bytes)
{
	symbolizer->symbol_budget = symbol_bytes;
	symbolizer->loader_options.reply_bytes = file_symbol_bytes;
}

void symbolize_native_set_name_budget(struct symbolize_native *symbolizer, uint64_t name_bytes)
{
	symbolizer->name_budget = name_bytes;
}

void symbolize_native_set_maps_source(struct symbolize_native *symbolizer, symbolize_native_ask_maps_fn ask,
				      void *context)
{
	symbolizer->ask_maps = ask;
	symbolizer->ask_maps_context = context;
}

void symbolize_native_set_parser(struct symbolize_native *symbolizer, const struct parser_client_options *options)
{
	symbolizer->loader_options.parser = *options;
}

static void mapped_file_free(struct mapped_file *file)
{
	if (!file)
		return;
	free(file->display_names);
	free(file->loaded.function_ranges);
	elf_symbols_free(&file->loaded.symbols);
	free(file->path);
	free(file);
}

void symbolize_native_free(struct symbolize_native *symbolizer)
{
	if (!symbolizer)
		return;
	/* first: its jobs point at the files */
	native_symbol_loader_free(symbolizer->loader);
	for (size_t i = 0; i < symbolizer->pid_count; i++)
		proc_maps_free(&symbolizer->pids[i].maps);
	for (size_t i = 0; i < symbolizer->file_count; i++)
		mapped_file_free(symbolizer->files[i]);
	intern_free(&symbolizer->offset_names);
	free(symbolizer);
}

void symbolize_native_stats(struct symbolize_native *symbolizer, struct symbolize_native_stats *out)
{
	struct native_symbol_loader_stats loaded = { .files_loaded = 0 };

	if (symbolizer->loader)
		native_symbol_loader_stats(symbolizer->loader, &loaded);
	*out = (struct symbolize_native_stats){
		.files_loaded = loaded.files_loaded,
		.files_bad = loaded.files_bad,
		.worker_starts = loaded.parser.worker_starts,
		.worker_lost_files = loaded.parser.lost_files,
		.worker_timeouts = loaded.parser.timeouts,
		.debug_candidates_refused = loaded.candidates_refused,
		.worker_out_of_memory = loaded.parser.out_of_memory,
		.worker_start_failures = loaded.parser.start_failures,
		.symbol_bytes = symbolizer->symbol_bytes,
		.tables_evicted = symbolizer->tables_evicted,
		.maps_asked = symbolizer->maps_asked,
		.maps_adopted = symbolizer->maps_adopted,
		.maps_read_here = symbolizer->maps_read_here,
		.names_over_budget = symbolizer->names_over_budget,
		.name_table_bytes = intern_held_bytes(&symbolizer->offset_names),
		.name_compactions = symbolizer->name_compactions,
	};
}

int symbolize_native_prepare(struct symbolize_native *symbolizer)
{
	int err = 0;

	if (!symbolizer->loader)
		err = native_symbol_loader_new(&symbolizer->loader_options, &symbolizer->loader);
	return err ? err : native_symbol_loader_start(symbolizer->loader);
}

pid_t symbolize_native_worker_pid(struct symbolize_native *symbolizer)
{
	return symbolizer->loader ? native_symbol_loader_worker_pid(symbolizer->loader) : 0;
}

static void drop_slot(struct symbolize_native *symbolizer, size_t index)
{
	symbolizer->held_mappings -= symbolizer->pids[index].maps.count;
	proc_maps_free(&symbolizer->pids[index].maps);
	symbolizer->pids[index] = symbolizer->pids[--symbolizer->pid_count];
}

/* The least recently used slot but pid's, or -1. */
static ssize_t least_recent_slot(const struct symbolize_native *symbolizer, pid_t keep)
{
	ssize_t oldest = -1;

	for (size_t i = 0; i < symbolizer->pid_count; i++)
		if (symbolizer->pids[i].pid != keep &&
		    (oldest < 0 || symbolizer->pids[i].used < symbolizer->pids[oldest].used))
			oldest = (ssize_t)i;
	return oldest;
}

/* slot's maps are now maps (taken); past the bound on mappings kept the least recently used
 * other processes' go. slot's place may change: pid's slot, found again. */
static struct pid_maps *set_maps(struct symbolize_native *symbolizer, struct pid_maps *slot, struct proc_maps *maps)
{
	pid_t pid = slot->pid;
	ssize_t oldest;

	symbolizer->held_mappings -= slot->maps.count;
	proc_maps_free(&slot->maps);
	slot->maps = *maps;
	*maps = (struct proc_maps){ 0 };
	symbolizer->held_mappings += slot->maps.count;
	while (symbolizer->held_mappings > SYMBOLIZE_NATIVE_MAX_HELD_MAPPINGS &&
	       (oldest = least_recent_slot(symbolizer, pid)) >= 0)
		drop_slot(symbolizer, (size_t)oldest);
	for (size_t i = 0; i < symbolizer->pid_count; i++)
		if (symbolizer->pids[i].pid == pid)
			return &symbolizer->pids[i];
	return NULL; /* not reached: pid's slot is never dropped here */
}

void symbolize_native_forget_pid(struct symbolize_native *symbolizer, pid_t pid)
{
	for (size_t i = 0; i < symbolizer->pid_count; i++) {
		if (symbolizer->pids[i].pid != pid)
			continue;
		drop_slot(symbolizer, i);
		return;
	}
}

static void read_exe_identity(struct pid_maps *slot)
{
	char path[64];
	struct stat info;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)slot->pid);
	slot->exe_known = stat(path, &info) == 0;
	if (!slot->exe_known)
		return;
	slot->exe_inode = (uint64_t)info.st_ino;
	slot->exe_dev_major = major(info.st_dev);
	slot->exe_dev_minor = minor(info.st_dev);
}

/* pid's slot, made (the least recently used one dropped past SYMBOLIZE_NATIVE_MAX_PIDS) with
 * no maps if it had none; *made says whether it was. */
static struct pid_maps *slot_of(struct symbolize_native *symbolizer, pid_t pid, bool *made)
{
	struct pid_maps *slot;

	*made = false;
	for (size_t i = 0; i < symbolizer->pid_count; i++)
		if (symbolizer->pids[i].pid == pid)
			return &symbolizer->pids[i];
	if (symbolizer->pid_count == SYMBOLIZE_NATIVE_MAX_PIDS)
		drop_slot(symbolizer, (size_t)least_recent_slot(symbolizer, 0));
	slot = &symbolizer->pids[symbolizer->pid_count++];
	*slot = (struct pid_maps){ .pid = pid, .reread_due_ms = clock_monotonic_ms() };
	*made = true;
	return slot;
}

/* A read of slot's maps asked of the maps source: > 0 asked, 0 not now, < 0 no source (read
 * them here). */
static int ask_maps(struct symbolize_native *symbolizer, struct pid_maps *slot)
{
	int asked = symbolizer->ask_maps ? symbolizer->ask_maps(symbolizer->ask_maps_context, slot->pid) : -1;

	if (asked > 0) {
		slot->awaited = true;
		symbolizer->maps_asked++;
	}
	return asked;
}

static struct pid_maps *maps_of(struct symbolize_native *symbolizer, pid_t pid)
{
	bool made;
	struct pid_maps *slot = slot_of(symbolizer, pid, &made);

	if (!made || ask_maps(symbolizer, slot) >= 0)
		return slot;
	/* Unreadable maps (the process has exited: its last samples drain after it) are kept
	 * as empty, so that they are tried again at the re-read pace, not once per sample. */
	struct proc_maps read;

	symbolizer->maps_read_here++;
	if (proc_maps_read(pid, &read) < 0)
		read = (struct proc_maps){ 0 };
	slot = set_maps(symbolizer, slot, &read);
	read_exe_identity(slot);
	return slot;
}

void symbolize_native_adopt_maps(struct symbolize_native *symbolizer, pid_t pid, struct proc_maps *maps)
{
	struct pid_maps *slot = NULL;
	bool made;

	for (size_t i = 0; i < symbolizer->pid_count && !slot; i++)
		if (symbolizer->pids[i].pid == pid)
			slot = &symbolizer->pids[i];
	/* Maps of a process not being named take a free slot and room, never those in use:
	 * every process's read coming here would otherwise evict the processes being named,
	 * whose maps would be asked for again, and so on. */
	if (!slot && (symbolizer->pid_count == SYMBOLIZE_NATIVE_MAX_PIDS ||
		      symbolizer->held_mappings + maps->count > SYMBOLIZE_NATIVE_MAX_HELD_MAPPINGS)) {
		proc_maps_free(maps);
		return;
	}
	if (!slot)
		slot = slot_of(symbolizer, pid, &made);
	slot = set_maps(symbolizer, slot, maps);
	slot->awaited = false;
	slot->used = ++*symbolizer->clock;
	read_exe_identity(slot);
	symbolizer->maps_adopted++;
}

void symbolize_native_maps_unread(struct symbolize_native *symbolizer, pid_t pid)
{
	for (size_t i = 0; i < symbolizer->pid_count; i++)
		if (symbolizer->pids[i].pid == pid)
			symbolizer->pids[i].awaited = false;
}

static const struct proc_map *mapping_at(const struct proc_maps *maps, uint64_t ip)
{
	const struct proc_map *map = array_last_at_or_below_u64(maps->maps, maps->count, sizeof(*maps->maps),
								offsetof(struct proc_map, start), ip);

	return map && ip < map->end ? map : NULL;
}

static const struct elf_function *function_at(const struct mapped_file *file, uint64_t addr)
{
	const struct elf_symbols *symbols = &file->loaded.symbols;
	const struct elf_function *function = array_last_at_or_below_u64(
		symbols->functions, symbols->count, sizeof(*symbols->functions), offsetof(struct elf_function, addr),
		addr);

	/* The last function starting at or below addr, if it extends over addr. */
	return function && addr - function->addr < function->size ? function : NULL;
}

/* A string kept until the names are compacted (symbolize_native_compact_names); NULL: -ENOMEM. */
static const char *interned(struct symbolize_native *symbolizer, const char *text)
{
	int64_t id = intern_add(&symbolizer->offset_names, text, strlen(text) + 1, NULL);

	return id < 0 ? NULL : intern_key(&symbolizer->offset_names, (uint32_t)id, NULL);
}

/* The stand-ins for names past the budget, interned before any name (and not charged: a few
 * bytes, before a budget is attached); -ENOMEM. */
static int intern_stand_ins(struct symbolize_native *symbolizer)
{
	symbolizer->name_over_budget = interned(symbolizer, SYMBOLIZE_NATIVE_NAME_OVER_BUDGET);
	symbolizer->path_over_budget = interned(symbolizer, SYMBOLIZE_NATIVE_PATH_OVER_BUDGET);
	return symbolizer->name_over_budget && symbolizer->path_over_budget ? 0 : -ENOMEM;
}

/*
 * text as a string kept until the names are compacted, or stand_in when it is new and past the
 * names' budget: a target can make root meet any number of distinct names (its files' paths,
 * their symbols), and those of the files it keeps mapped are never dropped. NULL: -ENOMEM.
 */
static const char *name_within_budget(struct symbolize_native *symbolizer, const char *text, const char *stand_in)
{
	size_t len = strlen(text) + 1;
	int64_t id = intern_find(&symbolizer->offset_names, text, len);
	size_t growth;
	const char *name;

	if (id >= 0)
		return intern_key(&symbolizer->offset_names, (uint32_t)id, NULL);
	growth = intern_add_growth(&symbolizer->offset_names, len);
	if (intern_held_bytes(&symbolizer->offset_names) + growth > symbolizer->name_budget) {
		if (symbolizer->budget)
			target_budget_refuse(symbolizer->budget, symbolizer->names_store);
		symbolizer->names_over_budget++;
		return stand_in;
	}
	if (symbolizer->budget && target_budget_charge(symbolizer->budget, symbolizer->names_store, growth)) {
		symbolizer->names_over_budget++;
		return stand_in;
	}
	name = interned(symbolizer, text);
	if (!name && symbolizer->budget)
		target_budget_release(symbolizer->budget, symbolizer->names_store, growth);
	return name;
}

static size_t file_index_slot(uint64_t inode, uint32_t dev_major, uint32_t dev_minor)
{
	uint64_t key = inode * 0x9e3779b97f4a7c15ull ^ ((uint64_t)dev_major << 32 | dev_minor);

	return (size_t)(key ^ key >> 29) & (FILE_INDEX_SLOTS - 1);
}

static void file_index_add(struct symbolize_native *symbolizer, struct mapped_file *file)
{
	size_t slot = file_index_slot(file->inode, file->dev_major, file->dev_minor);

	while (symbolizer->file_index[slot])
		slot = (slot + 1) & (FILE_INDEX_SLOTS - 1);
	symbolizer->file_index[slot] = file;
}

/* A file gone: the index is laid again (rare: an eviction, or every slot of files taken). */
static void file_index_rebuild(struct symbolize_native *symbolizer)
{
	memset(symbolizer->file_index, 0, sizeof(symbolizer->file_index));
	for (size_t i = 0; i < symbolizer->file_count; i++)
		file_index_add(symbolizer, symbolizer->files[i]);
}

static struct mapped_file *file_index_find(const struct symbolize_native *symbolizer, const struct proc_map *map)
{
	size_t slot = file_index_slot(map->inode, map->dev_major, map->dev_minor);

	/* at least half the slots are empty: the probe ends */
	for (struct mapped_file *known; (known = symbolizer->file_index[slot]);
	     slot = (slot + 1) & (FILE_INDEX_SLOTS - 1))
		if (known->inode == map->inode && known->dev_major == map->dev_major &&
		    known->dev_minor == map->dev_minor && strcmp(known->path, map->path) == 0)
			return known;
	return NULL;
}

static bool file_waits_for_symbols(const struct mapped_file *file)
{
	return file->state == FILE_PENDING || file->state == FILE_UNQUEUED;
}

static void remove_file(struct symbolize_native *symbolizer, size_t index)
{
	struct mapped_file *file = symbolizer->files[index];

	if (symbolizer->budget && file->bytes)
		target_budget_release(symbolizer->budget, symbolizer->budget_store, file->bytes);
	symbolizer->symbol_bytes -= file->bytes;
	mapped_file_free(file);
	symbolizer->files[index] = symbolizer->files[--symbolizer->file_count];
	file_index_rebuild(symbolizer);
}

/* The least recently used file that may go (its job not in flight, not keep; with_table: one
 * that holds symbols), -1 if none. */
static ssize_t least_recent_file(const struct symbolize_native *symbolizer, const struct mapped_file *keep,
				 bool with_table)
{
	ssize_t oldest = -1;

	for (size_t i = 0; i < symbolizer->file_count; i++) {
		const struct mapped_file *file = symbolizer->files[i];

		if (file == keep || file->state == FILE_PENDING || (with_table && !file->bytes) ||
		    file == symbolizer->in_lookup || file == symbolizer->installing)
			continue;
		if (oldest < 0 || file->used < symbolizer->files[oldest]->used)
			oldest = (ssize_t)i;
	}
	return oldest;
}

/* Tables past the budget go, least recently used first (read again if their file is seen again). */
static void evict_over_budget(struct symbolize_native *symbolizer, const struct mapped_file *keep)
{
	while (symbolizer->symbol_bytes > symbolizer->symbol_budget) {
		ssize_t oldest = least_recent_file(symbolizer, keep, true);

		if (oldest < 0)
			return;
		remove_file(symbolizer, (size_t)oldest);
		symbolizer->tables_evicted++;
	}
}

/* The target budget's view of the tables (util/target_budget.h): the last use of the least
 * recently used file holding one. */
static uint64_t oldest_table(void *context)
{
	const struct symbolize_native *symbolizer = context;
	ssize_t oldest = least_recent_file(symbolizer, NULL, true);

	return oldest < 0 ? UINT64_MAX : symbolizer->files[oldest]->used;
}

/* The least recently used tables go (read again if their file is seen again), until bytes
 * are freed or the next was used since older_than. */
static uint64_t evict_tables(void *context, uint64_t bytes, uint64_t older_than)
{
	struct symbolize_native *symbolizer = context;
	uint64_t freed = 0;

	while (freed < bytes) {
		ssize_t oldest = least_recent_file(symbolizer, NULL, true);
		struct mapped_file *file;

		if (oldest < 0 || (freed && symbolizer->files[oldest]->used >= older_than))
			break;
		file = symbolizer->files[oldest];
		freed += file->bytes;
		symbolizer->symbol_bytes -= file->bytes;
		file->bytes = 0; /* the budget releases them */
		remove_file(symbolizer, (size_t)oldest);
		symbolizer->tables_evicted++;
	}
	return freed;
}

int symbolize_native_set_target_budget(struct symbolize_native *symbolizer, struct target_budget *budget)
{
	int store = target_budget_register(budget, "symbol tables", oldest_table, evict_tables, symbolizer);
	int names = store < 0 ? store : target_budget_register(budget, "native names", NULL, NULL, NULL);

	if (names < 0)
		return names;
	symbolizer->budget = budget;
	symbolizer->budget_store = store;
	symbolizer->names_store = names;
	symbolizer->clock = target_budget_clock(budget);
	/* the stand-ins, and any name met before */
	target_budget_set_held(budget, names, intern_held_bytes(&symbolizer->offset_names));
	return 0;
}

/* Whether the target budget takes file's table (always, without one). */
static bool charge_table(struct symbolize_native *symbolizer, const struct mapped_file *file)
{
	bool taken;

	if (!symbolizer->budget)
		return true;
	symbolizer->installing = file;
	taken = target_budget_charge(symbolizer->budget, symbolizer->budget_store, file->bytes) == 0;
	symbolizer->installing = NULL;
	return taken;
}

/* What a table holds: its functions, their display names' slots, their names. */
static uint64_t table_bytes(const struct elf_symbols *symbols)
{
	uint64_t bytes = symbols->count * (sizeof(*symbols->functions) + sizeof(const char *));

	for (size_t i = 0; i < symbols->count; i++)
		bytes += strlen(symbols->functions[i].name) + 1;
	return bytes;
}

/* A job's result into its file; a table past the whole budget alone is remembered as bad. */
static void install(struct symbolize_native *symbolizer, struct native_symbol_job *job)
{
	struct mapped_file *file = job->owner;

	file->state = job->status == 0 || job->status == -ENOENT || job->status == -ENOSYS ? FILE_READY : FILE_BAD;
	if (file->state == FILE_READY) {
		file->loaded = job->result;
		job->result.symbols = (struct elf_symbols){ 0 };
		job->result.function_ranges = NULL;
		file->bytes = table_bytes(&file->loaded.symbols) +
			      file->loaded.function_range_count * sizeof(*file->loaded.function_ranges);
		/* past a budget, remembered as bad: not read again for the run */
		if (file->bytes > symbolizer->symbol_budget || !charge_table(symbolizer, file)) {
			elf_symbols_free(&file->loaded.symbols);
			free(file->loaded.function_ranges);
			file->loaded.function_ranges = NULL;
			file->loaded.function_range_count = 0;
			file->bytes = 0;
			file->state = FILE_BAD;
		}
		symbolizer->symbol_bytes += file->bytes;
	}
	native_symbol_job_free(job);
	evict_over_budget(symbolizer, file);
}

/* Installs what the loader has done, waiting for it until deadline_ms. */
static void collect_done(struct symbolize_native *symbolizer, uint64_t deadline_ms)
{
	struct native_symbol_job *job;

	if (!symbolizer->loader)
		return;
	job = native_symbol_loader_take_done(symbolizer->loader, deadline_ms);
	while (job) {
		struct native_symbol_job *next = job->next;

		install(symbolizer, job);
		job = next;
	}
}

/* Hands the file's job to the loader (started at the first); the file stays unqueued if it cannot. */
static void queue_file(struct symbolize_native *symbolizer, struct mapped_file *file, pid_t pid,
		       const struct proc_map *map)
{
	struct native_symbol_job *job;

	if (!symbolizer->loader && native_symbol_loader_new(&symbolizer->loader_options, &symbolizer->loader))
		return;
	/* our copy of the vDSO is made here, once, not raced for by the loader's thread */
	if (vdso_is_map_name(map->path) && vdso_image_fd() < 0) {
		file->state = FILE_READY; /* nothing to read: named by its brackets */
		return;
	}
	job = calloc(1, sizeof(*job));
	if (!job)
		return;
	*job = (struct native_symbol_job){ .owner = file, .pid = pid, .map = *map, .vdso = vdso_is_map_name(map->path),
					   .debug_dir = symbolizer->debug_dir };
	job->map.path = strdup(map->path);
	if (!job->map.path || native_symbol_loader_submit(symbolizer->loader, job)) {
		native_symbol_job_free(job);
		return;
	}
	file->state = FILE_PENDING;
}

/* Installs what is done; waits (at most the symbolizer's wait) for a pending file's symbols. */
static void wait_for(struct symbolize_native *symbolizer, const struct mapped_file *file)
{
	uint64_t deadline = clock_monotonic_ms() + symbolizer->wait_ms;

	collect_done(symbolizer, 0);
	while (file->state == FILE_PENDING && clock_monotonic_ms() < deadline)
		collect_done(symbolizer, deadline);
}

/* "[basename]", the name of a file's pcs no symbol names, within the names' budget (else its
 * stand-in); NULL: -ENOMEM. */
static const char *bracket_name_of(struct symbolize_native *symbolizer, const char *path)
{
	size_t name_len = strlen(proc_maps_basename(path)) + 3;
	char *bracket = malloc(name_len);
	const char *name;

	if (!bracket)
		return NULL;
	snprintf(bracket, name_len, "[%s]", proc_maps_basename(path));
	name = name_within_budget(symbolizer, bracket, symbolizer->name_over_budget);
	free(bracket);
	return name;
}

static struct mapped_file *new_file(struct symbolize_native *symbolizer, const struct proc_map *map)
{
	struct mapped_file *file = calloc(1, sizeof(*file));

	if (!file)
		return NULL;
	file->path = strdup(map->path);
	file->inode = map->inode;
	file->dev_major = map->dev_major;
	file->dev_minor = map->dev_minor;
	file->frame_path = file->path ? name_within_budget(symbolizer, file->path, symbolizer->path_over_budget) : NULL;
	file->bracket_name = file->path ? bracket_name_of(symbolizer, file->path) : NULL;
	if (!file->frame_path || !file->bracket_name) {
		mapped_file_free(file);
		return NULL;
	}
	return file;
}

/* The file map names, its symbols asked for at its first sight (and waited for, as long as the
 * symbolizer waits); NULL: -ENOMEM, or every known file is waiting for its symbols. */
static struct mapped_file *file_of(struct symbolize_native *symbolizer, pid_t pid, const struct proc_map *map)
{
	struct mapped_file *file = file_index_find(symbolizer, map);

	if (!file) {
		if (symbolizer->file_count == SYMBOLIZE_NATIVE_MAX_FILES) {
			ssize_t oldest = least_recent_file(symbolizer, NULL, false);

			if (oldest < 0)
				return NULL;
			remove_file(symbolizer, (size_t)oldest);
		}
		file = new_file(symbolizer, map);
		if (!file)
			return NULL;
		symbolizer->files[symbolizer->file_count++] = file;
		file_index_add(symbolizer, file);
	}
	file->used = ++*symbolizer->clock;
	if (file->state == FILE_UNQUEUED)
		queue_file(symbolizer, file, pid, map);
	if (file->state == FILE_PENDING) {
		symbolizer->in_lookup = file;
		wait_for(symbolizer, file);
		symbolizer->in_lookup = NULL;
	}
	return file;
}

/* Whether a miss may re-read maps now (counted if so): a burst, then one per interval. */
static bool may_reread(struct pid_maps *maps, uint64_t now_ms)
{
	uint64_t burst_ms = (uint64_t)SYMBOLIZE_NATIVE_REREAD_BURST * SYMBOLIZE_NATIVE_REREAD_MS;

	if (maps->reread_due_ms > now_ms + burst_ms)
		return false;
	maps->reread_due_ms = (maps->reread_due_ms > now_ms ? maps->reread_due_ms : now_ms) + SYMBOLIZE_NATIVE_REREAD_MS;
	return true;
}

/* The mapping of pid that holds ip, its maps read again (at a bounded pace) for an unknown ip. */
static const struct proc_map *mapping_of(struct symbolize_native *symbolizer, pid_t pid, uint64_t ip,
					 struct pid_maps **maps_out)
{
	struct pid_maps *maps = maps_of(symbolizer, pid);
	const struct proc_map *map;

	maps->used = ++*symbolizer->clock;
	map = mapping_at(&maps->maps, ip);
	/* Also on failure a re-read is counted: an exited process's maps are not read on every sample. */
	if (!map && !maps->awaited && may_reread(maps, clock_monotonic_ms())) {
		struct proc_maps fresh;

		if (ask_maps(symbolizer, maps) >= 0) {
			*maps_out = maps;
			return NULL;
		}

		symbolizer->maps_read_here++;
		if (proc_maps_read(pid, &fresh) == 0) {
			maps = set_maps(symbolizer, maps, &fresh);
			read_exe_identity(maps);
			map = mapping_at(&maps->maps, ip);
		}
	}
	*maps_out = maps;
	return map && (map->path[0] == '/' || vdso_is_map_name(map->path)) ? map : NULL;
}

/* The function's name as a reader knows it (C++ names come demangled from the parser worker,
 * worker/parser_worker.c), interned once per function. */
static const char *display_name(struct symbolize_native *symbolizer, struct mapped_file *file,
				const struct elf_function *function)
{
	size_t index = (size_t)(function - file->loaded.symbols.functions);

	if (!file->display_names) {
		file->display_names = calloc(file->loaded.symbols.count, sizeof(*file->display_names));
		if (!file->display_names)
			return name_within_budget(symbolizer, function->name, file->bracket_name);
		file->display_count = file->loaded.symbols.count;
	}
	if (!file->display_names[index])
		file->display_names[index] = name_within_budget(symbolizer, function->name, file->bracket_name);
	return file->display_names[index];
}

/* The link-time address of pc in file, mapped at map; false when the file's ELF is unknown. */
static bool link_address(const struct mapped_file *file, const struct proc_map *map, uint64_t pc, uint64_t *addr)
{
	uint64_t bias;

	if (file->state != FILE_READY ||
	    elf_load_bias(file->loaded.segments, file->loaded.segment_count, map->start, map->offset, &bias))
		return false;
	*addr = pc - bias;
	return true;
}

/* The function of file that covers ip, NULL if none. */
static const struct elf_function *function_of(const struct mapped_file *file, const struct proc_map *map, uint64_t ip)
{
	uint64_t addr;

	return link_address(file, map, ip, &addr) ? function_at(file, addr) : NULL;
}

/* The FDE of file that holds link-time addr, NULL if none (or the file has no .eh_frame, or its
 * symbols are not read yet). */
static const struct unwind_function_range *function_range_at(const struct mapped_file *file, uint64_t addr)
{
	const struct unwind_function_range *range;

	if (file->state != FILE_READY)
		return NULL;
	range = array_last_at_or_below_u64(file->loaded.function_ranges, file->loaded.function_range_count,
					   sizeof(*file->loaded.function_ranges),
					   offsetof(struct unwind_function_range, start), addr);
	return range && addr < range->end ? range : NULL;
}

int symbolize_native_resolve(struct symbolize_native *symbolizer, pid_t pid, const struct proc_file_id *skip,
			     uint64_t ip, struct pf_frame *frame)
{
	struct pid_maps *maps;
	const struct proc_map *map = mapping_of(symbolizer, pid, ip, &maps);
	const struct elf_function *function;
	struct mapped_file *file;
	const char *name;

	if (!map || proc_map_is_file(map, skip))
		return 0;
	file = file_of(symbolizer, pid, map);
	if (!file)
		return -ENOMEM;
	function = function_of(file, map, ip);
	name = function ? display_name(symbolizer, file, function) : file->bracket_name;
	if (!name)
		return -ENOMEM;
	*frame = pf_frame_unlocated(PF_FRAME_NATIVE, file->frame_path, name);
	return 1;
}

static bool is_main_executable(const struct pid_maps *maps, const struct proc_map *map)
{
	return maps->exe_known && map->inode == maps->exe_inode && map->dev_major == maps->exe_dev_major &&
	       map->dev_minor == maps->exe_dev_minor;
}

/*
 * "[libfoo.so.1+0x1234]", for a pc no symbol covers: the file offset of the start of the
 * function that holds it (its FDE), so that every pc of one unnamed function (a stripped
 * library's static function) has one name; the pc's own file offset where no FDE covers it.
 * addr: the pc's link-time address in file, NULL when unknown.
 */
static const char *offset_name(struct symbolize_native *symbolizer, const struct mapped_file *file,
			       const struct proc_map *map, uint64_t ip, const uint64_t *addr)
{
	const struct unwind_function_range *range = addr ? function_range_at(file, *addr) : NULL;
	uint64_t offset = ip - map->start + map->offset;
	char text[320];

	/* A function lies in one segment: its start is as far before the pc in the file as in memory. */
	if (range)
		offset -= *addr - range->start;
	snprintf(text, sizeof(text), "[%s+0x%" PRIx64 "]", proc_maps_basename(map->path), offset);
	return name_within_budget(symbolizer, text, file ? file->bracket_name : symbolizer->name_over_budget);
}

void symbolize_native_note_pc(struct symbolize_native *symbolizer, pid_t pid, uint64_t pc)
{
	struct pid_maps *maps;
	const struct proc_map *map = mapping_of(symbolizer, pid, pc, &maps);

	if (map)
		(void)file_of(symbolizer, pid, map);
}

bool symbolize_native_names_pending(struct symbolize_native *symbolizer, pid_t pid, const uint64_t *pcs,
				    size_t count)
{
	collect_done(symbolizer, 0);
	for (size_t i = 0; i < count; i++) {
		struct pid_maps *maps;
		const struct proc_map *map = mapping_of(symbolizer, pid, pcs[i], &maps);
		const struct mapped_file *file = map ? file_of(symbolizer, pid, map) : NULL;

		/* the mapping may come with the maps on their way */
		if ((!map && maps->awaited) || (file && file_waits_for_symbols(file)))
			return true;
	}
	return false;
}

int symbolize_native_lookup(struct symbolize_native *symbolizer, pid_t pid, const struct proc_file_id *interpreter,
			    uint64_t pc, struct symbolize_native_frame *out)
{
	struct pid_maps *maps;
	const struct proc_map *map = mapping_of(symbolizer, pid, pc, &maps);
	const struct elf_function *function;
	struct mapped_file *file;
	const char *name, *path;
	uint64_t addr;
	bool addr_known;

	if (!map)
		return 0;
	/* A file whose symbols are on their way (or past a full table of such) has its pcs named
	 * by their offsets for now: provisional names, which callers do not keep. */
	file = file_of(symbolizer, pid, map);
	addr_known = file && link_address(file, map, pc, &addr);
	function = addr_known ? function_at(file, addr) : NULL;
	out->symbol = function ? display_name(symbolizer, file, function) : NULL;
	out->provisional = !file || file_waits_for_symbols(file);
	name = out->symbol ? out->symbol : offset_name(symbolizer, file, map, pc, addr_known ? &addr : NULL);
	path = file ? file->frame_path : name_within_budget(symbolizer, map->path, symbolizer->path_over_budget);
	if (!name || !path)
		return -ENOMEM;
	out->frame = pf_frame_unlocated(PF_FRAME_NATIVE, path, name);
	out->in_interpreter = proc_map_is_file(map, interpreter) || is_main_executable(maps, map);
	return 1;
}

/* Kept files whose path or [name] stood in past the budget are named within the room a
 * compaction made (their functions' names, reset by it, follow at their next pcs). */
static void name_stand_in_files(struct symbolize_native *symbolizer)
{
	for (size_t i = 0; i < symbolizer->file_count; i++) {
		struct mapped_file *file = symbolizer->files[i];
		const char *name;

		if (file->path && file->frame_path == symbolizer->path_over_budget) {
			name = name_within_budget(symbolizer, file->path, symbolizer->path_over_budget);
			if (name)
				file->frame_path = name;
		}
		if (file->path && file->bracket_name == symbolizer->name_over_budget) {
			name = bracket_name_of(symbolizer, file->path);
			if (name)
				file->bracket_name = name;
		}
	}
}

/* The stand-ins and every name a known file uses, into fresh: 0 or -ENOMEM. */
static int intern_names_in_use(const struct symbolize_native *symbolizer, struct intern_table *fresh)
{
	if (intern_add_string(fresh, symbolizer->name_over_budget) ||
	    intern_add_string(fresh, symbolizer->path_over_budget))
		return -ENOMEM;
	for (size_t i = 0; i < symbolizer->file_count; i++) {
		const struct mapped_file *file = symbolizer->files[i];

		if (intern_add_string(fresh, file->frame_path) || intern_add_string(fresh, file->bracket_name))
			return -ENOMEM;
		for (size_t j = 0; file->display_names && j < file->display_count; j++)
			if (intern_add_string(fresh, file->display_names[j]))
				return -ENOMEM;
	}
	return 0;
}

int symbolize_native_compact_names(struct symbolize_native *symbolizer)
{
	size_t held = intern_held_bytes(&symbolizer->offset_names);
	struct intern_table fresh;
	int err;

	if (!intern_compaction_due(held, SYMBOLIZE_NATIVE_COMPACT_MIN_BYTES, symbolizer->names_compacted_bytes))
		return 0;
	/* Every name is copied before any pointer moves to the new table: a failed copy leaves all
	 * of them where they were. */
	intern_init(&fresh);
	err = intern_names_in_use(symbolizer, &fresh);
	if (err) {
		intern_free(&fresh);
		return err;
	}
	symbolizer->name_over_budget = intern_string_in(&fresh, symbolizer->name_over_budget);
	symbolizer->path_over_budget = intern_string_in(&fresh, symbolizer->path_over_budget);
	for (size_t i = 0; i < symbolizer->file_count; i++) {
		struct mapped_file *file = symbolizer->files[i];
		const char *stand_in = file->bracket_name;

		file->frame_path = intern_string_in(&fresh, file->frame_path);
		file->bracket_name = intern_string_in(&fresh, file->bracket_name);
		/* A function that stood in as its file's [name] (past the budget) is named again
		 * at its next pc, within the room this compaction made. */
		for (size_t j = 0; file->display_names && j < file->display_count; j++)
			file->display_names[j] = file->display_names[j] == stand_in
							 ? NULL
							 : intern_string_in(&fresh, file->display_names[j]);
	}
	intern_free(&symbolizer->offset_names);
	symbolizer->offset_names = fresh;
	if (symbolizer->budget)
		target_budget_set_held(symbolizer->budget, symbolizer->names_store,
				       intern_held_bytes(&symbolizer->offset_names));
	name_stand_in_files(symbolizer);
	symbolizer->names_compacted_bytes = intern_held_bytes(&symbolizer->offset_names);
	symbolizer->name_compactions++;
	return 1;
}
