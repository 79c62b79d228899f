/* SPDX-License-Identifier: MIT */
/* The memory mappings of a process, as /proc/PID/maps lists them. */
#ifndef PYBPFPROF_PROC_MAPS_H
#define PYBPFPROF_PROC_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct proc_map {
	uint64_t start;
	uint64_t end;
	uint64_t offset;      /* file offset of start */
	uint64_t inode;
	uint32_t dev_major;   /* the file's device, as stat's major() and minor() of st_dev */
	uint32_t dev_minor;
	char perms[5];        /* "r-xp" */
	bool deleted;         /* the name ended in " (deleted)": the file was unlinked or replaced */
	char *path;           /* file name as the target sees it ("" for anonymous, " (deleted)" removed) */
};

/* A mapped file as the kernel tells it apart: its device and inode (inode 0: none). */
struct proc_file_id {
	uint64_t inode;
	uint32_t dev_major, dev_minor;
};

struct proc_maps {
	struct proc_map *maps; /* in the kernel's order: ascending start */
	size_t count;
};

/* Every mapping of pid: 0, -ESRCH (no such process), -ENOMEM, -EIO (unparsable line). */
int proc_maps_read(pid_t pid, struct proc_maps *out);
/* The same from an open maps-format stream (for tests and saved maps). */
int proc_maps_parse(FILE *stream, struct proc_maps *out);
void proc_maps_free(struct proc_maps *maps);

/* The lowest mapping of the file at path, or NULL: where the ELF's first page is. */
const struct proc_map *proc_maps_first_of(const struct proc_maps *maps, const char *path);
/* Whether map maps the file file names (never when file is NULL or names none). */
bool proc_map_is_file(const struct proc_map *map, const struct proc_file_id *file);
/* The file name part of a path ("libc.so.6" for "/usr/lib/x86_64-linux-gnu/libc.so.6"). */
const char *proc_maps_basename(const char *path);

#endif
