// SPDX-License-Identifier: MIT
#include "symbolize/symbolize_native.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target/elf_file.h"
#include "target/proc_maps.h"
#include "util/clock.h"

/* Processes whose maps are kept; beyond this the oldest is dropped (and read again if needed). */
#define SYMBOLIZE_NATIVE_MAX_PIDS 64
/* A miss (an address in no known mapping: a library loaded since) re-reads the maps, at most this often. */
#define SYMBOLIZE_NATIVE_REREAD_MS 100
/* Files whose symbols are kept, each with its ELF open. */
#define SYMBOLIZE_NATIVE_MAX_FILES 256

struct pid_maps {
	pid_t pid;
	struct proc_maps maps;
	uint64_t read_ms;
	uint64_t used;       /* for eviction: the symbolizer's clock when last used */
};

/* One mapped file: its symbols, and its ELF for the load bias of each mapping. */
struct mapped_file {
	char *path;          /* as the target sees it: the frame's file */
	char *bracket_name;  /* "[libfoo.so.1]", the name of an address no symbol covers */
	uint64_t inode;
	struct elf_file elf;
	bool elf_open;
	struct elf_function *functions;
	size_t function_count;
	char *names;
};

struct symbolize_native {
	struct pid_maps pids[SYMBOLIZE_NATIVE_MAX_PIDS];
	size_t pid_count;
	struct mapped_file *files[SYMBOLIZE_NATIVE_MAX_FILES];
	size_t file_count;
	uint64_t clock;
};

struct symbolize_native *symbolize_native_new(void)
{
	return calloc(1, sizeof(struct symbolize_native));
}

static void mapped_file_free(struct mapped_file *file)
{
	if (!file)
		return;
	if (file->elf_open)
		elf_file_close(&file->elf);
	free(file->functions);
	free(file->names);
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
	slot->read_ms = clock_monotonic_ms();
	symbolizer->pid_count++;
	return slot;
}

static const struct proc_map *mapping_at(const struct proc_maps *maps, uint64_t ip)
{
	size_t low = 0, high = maps->count;

	while (low < high) {
		size_t mid = low + (high - low) / 2;

		if (ip < maps->maps[mid].start)
			high = mid;
		else if (ip >= maps->maps[mid].end)
			low = mid + 1;
		else
			return &maps->maps[mid];
	}
	return NULL;
}

static const struct elf_function *function_at(const struct mapped_file *file, uint64_t addr)
{
	size_t low = 0, high = file->function_count;

	/* The last function starting at or below addr, if it extends over addr. */
	while (low < high) {
		size_t mid = low + (high - low) / 2;

		if (file->functions[mid].addr <= addr)
			low = mid + 1;
		else
			high = mid;
	}
	if (low == 0)
		return NULL;
	if (addr - file->functions[low - 1].addr < file->functions[low - 1].size)
		return &file->functions[low - 1];
	return NULL;
}

static struct mapped_file *file_of(struct symbolize_native *symbolizer, pid_t pid, const struct proc_map *map)
{
	struct mapped_file *file;
	size_t name_len;

	for (size_t i = 0; i < symbolizer->file_count; i++) {
		file = symbolizer->files[i];
		if (file->inode == map->inode && strcmp(file->path, map->path) == 0)
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
	if (!file->path || !file->bracket_name) {
		mapped_file_free(file);
		return NULL;
	}
	snprintf(file->bracket_name, name_len, "[%s]", proc_maps_basename(map->path));
	/* A file we cannot open or that has no symbols is still named by its brackets. */
	file->elf_open = elf_file_open_mapped(&file->elf, pid, map->path, map->start, map->end, map->inode) == 0;
	if (file->elf_open &&
	    elf_file_functions(&file->elf, &file->functions, &file->function_count, &file->names) < 0) {
		file->functions = NULL;
		file->function_count = 0;
	}
	symbolizer->files[symbolizer->file_count++] = file;
	return file;
}

int symbolize_native_resolve(struct symbolize_native *symbolizer, pid_t pid, const char *skip_path, uint64_t ip,
		      struct pf_frame *frame)
{
	struct pid_maps *maps = maps_of(symbolizer, pid);
	const struct proc_map *map;
	const struct elf_function *function = NULL;
	struct mapped_file *file;
	uint64_t bias;

	maps->used = ++symbolizer->clock;
	map = mapping_at(&maps->maps, ip);
	if (!map && clock_monotonic_ms() - maps->read_ms >= SYMBOLIZE_NATIVE_REREAD_MS) {
		/* Also on failure: the next attempt waits as long again. */
		maps->read_ms = clock_monotonic_ms();
		struct proc_maps fresh;

		if (proc_maps_read(pid, &fresh) == 0) {
			proc_maps_free(&maps->maps);
			maps->maps = fresh;
			map = mapping_at(&maps->maps, ip);
		}
	}
	if (!map || map->path[0] != '/' || (skip_path && strcmp(map->path, skip_path) == 0))
		return 0;
	file = file_of(symbolizer, pid, map);
	if (!file)
		return -ENOMEM;
	if (file->elf_open && elf_file_load_bias(&file->elf, map->start, map->offset, &bias) == 0)
		function = function_at(file, ip - bias);
	*frame = pf_frame_unlocated(PF_FRAME_NATIVE, file->path,
				    function ? function->name : file->bracket_name);
	return 1;
}
