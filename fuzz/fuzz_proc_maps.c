// SPDX-License-Identifier: MIT
/*
 * /proc/PID/maps text: a target names its mappings' files (any bytes but '\n' and NUL in a
 * path it creates, " (deleted)" included), and proc_maps_read parses them with this.
 */
#include "fuzz.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "proc/proc_maps.h"

int fuzz_proc_maps_run(const uint8_t *data, size_t size)
{
	struct proc_maps maps = { 0 };
	FILE *stream;
	int fd = fuzz_input_memfd(data, size);

	if (fd < 0)
		return 0;
	stream = fdopen(fd, "r");
	if (!stream) {
		close(fd);
		return 0;
	}
	if (!proc_maps_parse(stream, &maps)) {
		for (size_t i = 0; i < maps.count; i++) {
			const struct proc_map *first = proc_maps_first_of(&maps, maps.maps[i].path);

			fuzz_input_sink += strlen(proc_maps_basename(maps.maps[i].path)) + strlen(maps.maps[i].perms);
			fuzz_input_sink += first ? first->offset : 0;
		}
		proc_maps_free(&maps);
	}
	fclose(stream);
	return 0;
}
