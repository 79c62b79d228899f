// SPDX-License-Identifier: MIT
#include "proc/proc_maps.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "util/array.h"

/* A process with more mappings than this is malformed input, not a target. */
#define PROC_MAPS_MAX_LINES (1u << 20)
#define DELETED_SUFFIX " (deleted)"

static int parse_line(char *line, struct proc_map *map)
{
	char perms[8] = "";
	unsigned dev_major, dev_minor;
	int path_at = -1;
	char *path;
	size_t len;

	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 " %n", &map->start,
		   &map->end, perms, &map->offset, &dev_major, &dev_minor, &map->inode, &path_at) < 7 ||
	    path_at < 0)
		return -EIO;
	map->dev_major = dev_major;
	map->dev_minor = dev_minor;
	memcpy(map->perms, perms, sizeof(map->perms) - 1);
	map->perms[sizeof(map->perms) - 1] = 0;

	path = line + path_at;
	len = strcspn(path, "\n");
	path[len] = 0;
	/* the file was replaced on disk (an upgrade): the name still says which ELF it was */
	if (len >= strlen(DELETED_SUFFIX) && !strcmp(path + len - strlen(DELETED_SUFFIX), DELETED_SUFFIX)) {
		path[len - strlen(DELETED_SUFFIX)] = 0;
		map->deleted = true;
	}
	map->path = strdup(path);
	return map->path ? 0 : -ENOMEM;
}

static int append_map(struct proc_maps *out, size_t *capacity, const struct proc_map *map)
{
	if (ARRAY_RESERVE(out->maps, *capacity, out->count + 1))
		return -ENOMEM;
	out->maps[out->count++] = *map;
	return 0;
}

int proc_maps_parse(FILE *stream, struct proc_maps *out)
{
	char *line = NULL;
	size_t line_capacity = 0, capacity = 0;
	unsigned lines = 0;
	int err = 0;

	out->maps = NULL;
	out->count = 0;
	while (getline(&line, &line_capacity, stream) > 0) {
		struct proc_map map = { 0 };

		if (++lines > PROC_MAPS_MAX_LINES) {
			err = -E2BIG;
			break;
		}
		err = parse_line(line, &map);
		if (!err) {
			err = append_map(out, &capacity, &map);
			if (err)
				free(map.path);
		}
		if (err)
			break;
	}
	free(line);
	if (!err && ferror(stream))
		err = -EIO;
	if (err)
		proc_maps_free(out);
	return err;
}

int proc_maps_read(pid_t pid, struct proc_maps *out)
{
	char path[64];
	FILE *stream;
	int err;

	out->maps = NULL;
	out->count = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	stream = fopen(path, "re");
	if (!stream)
		return errno == ENOENT ? -ESRCH : -errno;
	err = proc_maps_parse(stream, out);
	fclose(stream);
	return err;
}

void proc_maps_free(struct proc_maps *maps)
{
	for (size_t i = 0; i < maps->count; i++)
		free(maps->maps[i].path);
	free(maps->maps);
	maps->maps = NULL;
	maps->count = 0;
}

const struct proc_map *proc_maps_first_of(const struct proc_maps *maps, const char *path)
{
	const struct proc_map *first = NULL;

	for (size_t i = 0; i < maps->count; i++) {
		const struct proc_map *map = &maps->maps[i];

		if (strcmp(map->path, path))
			continue;
		if (!first || map->start < first->start)
			first = map;
	}
	return first;
}

const char *proc_maps_basename(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

bool proc_map_is_file(const struct proc_map *map, const struct proc_file_id *file)
{
	return file && file->inode != 0 && map->inode == file->inode && map->dev_major == file->dev_major &&
	       map->dev_minor == file->dev_minor;
}
