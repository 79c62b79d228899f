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

#include "target/debug_file.h"
#include "target/elf_file.h"
#include "target/elf_symbols.h"
#include "target/proc_maps.h"
#include "target/unwind_table.h"
#include "target/vdso.h"
#include "util/array.h"
#include "util/clock.h"
#include "util/errbuf.h"
#include "util/intern.h"

/* libstdc++'s demangler (the Itanium C++ ABI's): C++ extensions' names read as their source. */
char *__cxa_demangle(const char *mangled_name, char *output_buffer, size_t *length, int *status);

/* Processes whose maps are kept; beyond this the oldest is dropped (and read again if needed). */
#define SYMBOLIZE_NATIVE_MAX_PIDS 64
/*
 * A miss (an address in no known mapping: a library loaded since) re-reads the maps: the first
 * SYMBOLIZE_NATIVE_REREAD_BURST at once, so that the pcs of a library a program has just loaded
 * (an import) are named from its first sample; past them at most every SYMBOLIZE_NATIVE_REREAD_MS,
 * as code in no file (a JIT's) misses on every sample. Each interval unused earns one back.
 */
#define SYMBOLIZE_NATIVE_REREAD_MS 100
#define SYMBOLIZE_NATIVE_REREAD_BURST 8
/* Files whose symbols are kept, each with its ELF open. */
#define SYMBOLIZE_NATIVE_MAX_FILES 256
/* What checking debug files (a debuglink's CRC32 reads the file whole) and expanding
 * MiniDebugInfo may read over a run, all files together: each file has its own bounds, this
 * one stops a target that maps many files pointing at large ones (real ones cost a few MiB). */
#define SYMBOLIZE_NATIVE_DEBUG_BYTES ((uint64_t)2 << 30)

struct pid_maps {
	pid_t pid;
	struct proc_maps maps;
	uint64_t reread_due_ms; /* when a re-read is due with the burst spent; earlier ones spend it */
	uint64_t used;       /* for eviction: the symbolizer's clock when last used */
	bool exe_known;      /* the main executable's identity, from /proc/PID/exe */
	uint64_t exe_inode;
	uint32_t exe_dev_major, exe_dev_minor;
};

/* One mapped file: its symbols, and its ELF for the load bias of each mapping. */
struct mapped_file {
	char *path;          /* as the target sees it: the frame's file */
	char *bracket_name;  /* "[libfoo.so.1]", the name of an address no symbol covers */
	uint64_t inode;
	uint32_t dev_major, dev_minor; /* with the inode and path: which file (its debug data too) */
	struct elf_file elf;
	bool elf_open;
	struct elf_symbols symbols; /* its own, its debug file's or its MiniDebugInfo's */
	const char **display_names; /* by function: demangled, or the name itself; NULL: not yet */
	/* Where the functions begin (its FDEs), read at the first pc no symbol covers. */
	struct unwind_function_range *function_ranges;
	size_t function_range_count;
	bool function_ranges_read;
};

struct symbolize_native {
	struct pid_maps pids[SYMBOLIZE_NATIVE_MAX_PIDS];
	size_t pid_count;
	struct mapped_file *files[SYMBOLIZE_NATIVE_MAX_FILES];
	size_t file_count;
	uint64_t clock;
	const char *debug_dir; /* where debug files are looked for (target/debug_file.h) */
	uint64_t debug_bytes_left; /* of SYMBOLIZE_NATIVE_DEBUG_BYTES */
	struct intern_table offset_names; /* "[libfoo.so.1+0x1234]", and paths of files past the table */
};

struct symbolize_native *symbolize_native_new(void)
{
	struct symbolize_native *symbolizer = calloc(1, sizeof(struct symbolize_native));

	if (symbolizer) {
		intern_init(&symbolizer->offset_names);
		symbolizer->debug_dir = DEBUG_FILE_DIR;
		symbolizer->debug_bytes_left = SYMBOLIZE_NATIVE_DEBUG_BYTES;
	}
	return symbolizer;
}

void symbolize_native_set_debug_dir(struct symbolize_native *symbolizer, const char *debug_dir)
{
	symbolizer->debug_dir = debug_dir;
}

static void mapped_file_free(struct mapped_file *file)
{
	if (!file)
		return;
	if (file->elf_open)
		elf_file_close(&file->elf);
	for (size_t i = 0; file->display_names && i < file->symbols.count; i++)
		if (file->display_names[i] != file->symbols.functions[i].name)
			free((char *)file->display_names[i]);
	free(file->display_names);
	free(file->function_ranges);
	elf_symbols_free(&file->symbols);
	free(file->path);
	free(file->bracket_name);
	free(file);
}

void symbolize_native_free(struct symbolize_native *symbolizer)
{
	if (!symbolizer)
		return;
	for (size_t i = 0; i < symbolizer->pid_count; i++)
		proc_maps_free(&symbolizer->pids[i].maps);
	for (size_t i = 0; i < symbolizer->file_count; i++)
		mapped_file_free(symbolizer->files[i]);
	intern_free(&symbolizer->offset_names);
	free(symbolizer);
}

void symbolize_native_forget_pid(struct symbolize_native *symbolizer, pid_t pid)
{
	for (size_t i = 0; i < symbolizer->pid_count; i++) {
		if (symbolizer->pids[i].pid != pid)
			continue;
		proc_maps_free(&symbolizer->pids[i].maps);
		symbolizer->pids[i] = symbolizer->pids[--symbolizer->pid_count];
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

static struct pid_maps *maps_of(struct symbolize_native *symbolizer, pid_t pid)
{
	struct pid_maps *slot;

	for (size_t i = 0; i < symbolizer->pid_count; i++)
		if (symbolizer->pids[i].pid == pid)
			return &symbolizer->pids[i];
	if (symbolizer->pid_count == SYMBOLIZE_NATIVE_MAX_PIDS) {
		size_t oldest = 0;

		for (size_t i = 1; i < symbolizer->pid_count; i++)
			if (symbolizer->pids[i].used < symbolizer->pids[oldest].used)
				oldest = i;
		proc_maps_free(&symbolizer->pids[oldest].maps);
		symbolizer->pids[oldest] = symbolizer->pids[--symbolizer->pid_count];
	}
	slot = &symbolizer->pids[symbolizer->pid_count];
	*slot = (struct pid_maps){ .pid = pid };
	/* Unreadable maps (the process has exited: its last samples drain after it) are kept
	 * as empty, so that they are tried again at the re-read pace, not once per sample. */
	if (proc_maps_read(pid, &slot->maps) < 0)
		slot->maps = (struct proc_maps){ 0 };
	read_exe_identity(slot);
	slot->reread_due_ms = clock_monotonic_ms();
	symbolizer->pid_count++;
	return slot;
}

static const struct proc_map *mapping_at(const struct proc_maps *maps, uint64_t ip)
{
	const struct proc_map *map = array_last_at_or_below_u64(maps->maps, maps->count, sizeof(*maps->maps),
								offsetof(struct proc_map, start), ip);

	return map && ip < map->end ? map : NULL;
}

static const struct elf_function *function_at(const struct mapped_file *file, uint64_t addr)
{
	const struct elf_function *function = array_last_at_or_below_u64(
		file->symbols.functions, file->symbols.count, sizeof(*file->symbols.functions),
		offsetof(struct elf_function, addr), addr);

	/* The last function starting at or below addr, if it extends over addr. */
	return function && addr - function->addr < function->size ? function : NULL;
}

/* The vDSO is read from our own copy of its image: it has no file (target/vdso.h). */
static int open_file_of_map(struct elf_file *elf, pid_t pid, const struct proc_map *map)
{
	char path[64];
	int fd;

	if (!vdso_is_map_name(map->path))
		return elf_file_open_map(elf, pid, map);
	fd = vdso_image_fd();
	if (fd < 0)
		return fd;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	return elf_file_open(elf, path);
}

/* The file's functions, its debug file's looked up in pid's root (the vDSO has none: it has no path). */
static int read_symbols(struct symbolize_native *symbolizer, struct mapped_file *file, pid_t pid,
			const struct proc_map *map)
{
	struct debug_file_place place = { .pid = pid, .path_in_target = map->path,
					  .debug_dir = symbolizer->debug_dir };

	return elf_symbols_read(&file->symbols, &file->elf, vdso_is_map_name(map->path) ? NULL : &place,
				&symbolizer->debug_bytes_left);
}

static struct mapped_file *file_of(struct symbolize_native *symbolizer, pid_t pid, const struct proc_map *map)
{
	struct mapped_file *file;
	size_t name_len;

	for (size_t i = 0; i < symbolizer->file_count; i++) {
		file = symbolizer->files[i];
		if (file->inode == map->inode && file->dev_major == map->dev_major && file->dev_minor == map->dev_minor &&
		    strcmp(file->path, map->path) == 0)
			return file;
	}
	if (symbolizer->file_count == SYMBOLIZE_NATIVE_MAX_FILES)
		return NULL;
	file = calloc(1, sizeof(*file));
	if (!file)
		return NULL;
	name_len = strlen(proc_maps_basename(map->path)) + 3;
	file->path = strdup(map->path);
	file->bracket_name = malloc(name_len);
	file->inode = map->inode;
	file->dev_major = map->dev_major;
	file->dev_minor = map->dev_minor;
	if (!file->path || !file->bracket_name) {
		mapped_file_free(file);
		return NULL;
	}
	snprintf(file->bracket_name, name_len, "[%s]", proc_maps_basename(map->path));
	/* A file we cannot open or that has no symbols is still named by its brackets. */
	file->elf_open = open_file_of_map(&file->elf, pid, map) == 0;
	if (file->elf_open && read_symbols(symbolizer, file, pid, map) < 0) {
		mapped_file_free(file);
		return NULL;
	}
	symbolizer->files[symbolizer->file_count++] = file;
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

	maps->used = ++symbolizer->clock;
	map = mapping_at(&maps->maps, ip);
	/* Also on failure a re-read is counted: an exited process's maps are not read on every sample. */
	if (!map && may_reread(maps, clock_monotonic_ms())) {
		struct proc_maps fresh;

		if (proc_maps_read(pid, &fresh) == 0) {
			proc_maps_free(&maps->maps);
			maps->maps = fresh;
			read_exe_identity(maps);
			map = mapping_at(&maps->maps, ip);
		}
	}
	*maps_out = maps;
	return map && (map->path[0] == '/' || vdso_is_map_name(map->path)) ? map : NULL;
}

/* The function's name as a reader knows it: C++ names demangled, once per function. */
static const char *display_name(struct mapped_file *file, const struct elf_function *function)
{
	size_t index = (size_t)(function - file->symbols.functions);
	char *demangled;
	int status = -1;

	if (!file->display_names) {
		file->display_names = calloc(file->symbols.count, sizeof(*file->display_names));
		if (!file->display_names)
			return function->name;
	}
	if (file->display_names[index])
		return file->display_names[index];
	demangled = strncmp(function->name, "_Z", 2) == 0 ? __cxa_demangle(function->name, NULL, NULL, &status)
							   : NULL;
	if (status != 0 || !demangled) {
		free(demangled);
		demangled = NULL;
	}
	file->display_names[index] = demangled ? demangled : function->name;
	return file->display_names[index];
}

/* The link-time address of pc in file, mapped at map; false when the file's ELF is unknown. */
static bool link_address(const struct mapped_file *file, const struct proc_map *map, uint64_t pc, uint64_t *addr)
{
	uint64_t bias;

	if (!file->elf_open || elf_file_load_bias(&file->elf, map->start, map->offset, &bias))
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

/* The FDE of file that holds link-time addr, NULL if none (or the file has no .eh_frame). */
static const struct unwind_function_range *function_range_at(struct mapped_file *file, uint64_t addr)
{
	const struct unwind_function_range *range;
	struct errbuf ignored;

	if (!file->function_ranges_read) {
		/* Read once: a file without usable CFI keeps its pcs named one by one. */
		file->function_ranges_read = true;
		if (unwind_table_function_starts(file->elf.fd, &file->function_ranges, &file->function_range_count,
						 &ignored) < 0) {
			file->function_ranges = NULL;
			file->function_range_count = 0;
		}
	}
	range = array_last_at_or_below_u64(file->function_ranges, file->function_range_count,
					   sizeof(*file->function_ranges),
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

	if (!map || proc_map_is_file(map, skip))
		return 0;
	file = file_of(symbolizer, pid, map);
	if (!file)
		return -ENOMEM;
	function = function_of(file, map, ip);
	*frame = pf_frame_unlocated(PF_FRAME_NATIVE, file->path,
				    function ? display_name(file, function) : file->bracket_name);
	return 1;
}

static bool is_main_executable(const struct pid_maps *maps, const struct proc_map *map)
{
	return maps->exe_known && map->inode == maps->exe_inode && map->dev_major == maps->exe_dev_major &&
	       map->dev_minor == maps->exe_dev_minor;
}

/* A string kept as long as the symbolizer; NULL: -ENOMEM. */
static const char *interned(struct symbolize_native *symbolizer, const char *text)
{
	int64_t id = intern_add(&symbolizer->offset_names, text, strlen(text) + 1, NULL);

	return id < 0 ? NULL : intern_key(&symbolizer->offset_names, (uint32_t)id, NULL);
}

/*
 * "[libfoo.so.1+0x1234]", for a pc no symbol covers: the file offset of the start of the
 * function that holds it (its FDE), so that every pc of one unnamed function (a stripped
 * library's static function) has one name; the pc's own file offset where no FDE covers it.
 * addr: the pc's link-time address in file, NULL when unknown.
 */
static const char *offset_name(struct symbolize_native *symbolizer, struct mapped_file *file,
			       const struct proc_map *map, uint64_t ip, const uint64_t *addr)
{
	const struct unwind_function_range *range = addr ? function_range_at(file, *addr) : NULL;
	uint64_t offset = ip - map->start + map->offset;
	char text[320];

	/* A function lies in one segment: its start is as far before the pc in the file as in memory. */
	if (range)
		offset -= *addr - range->start;
	snprintf(text, sizeof(text), "[%s+0x%" PRIx64 "]", proc_maps_basename(map->path), offset);
	return interned(symbolizer, text);
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
	/* Past SYMBOLIZE_NATIVE_MAX_FILES files, a file's pcs are named by their offsets. */
	file = file_of(symbolizer, pid, map);
	addr_known = file && link_address(file, map, pc, &addr);
	function = addr_known ? function_at(file, addr) : NULL;
	out->symbol = function ? display_name(file, function) : NULL;
	name = out->symbol ? out->symbol : offset_name(symbolizer, file, map, pc, addr_known ? &addr : NULL);
	path = file ? file->path : interned(symbolizer, map->path);
	if (!name || !path)
		return -ENOMEM;
	out->frame = pf_frame_unlocated(PF_FRAME_NATIVE, path, name);
	out->in_interpreter = proc_map_is_file(map, interpreter) || is_main_executable(maps, map);
	return 1;
}
