// SPDX-License-Identifier: MIT
#include "elf/vdso.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "proc/proc_maps.h"

static int image_fd = -1;

/* The length of our own vDSO mapping: from /proc/self/maps, as the ELF does not say it. */
static int own_vdso_size(uint64_t base, size_t *size)
{
	struct proc_maps maps;
	int err = proc_maps_read(getpid(), &maps);

	if (err)
		return err;
	err = -ENOENT;
	for (size_t i = 0; i < maps.count; i++) {
		if (maps.maps[i].start == base && vdso_is_map_name(maps.maps[i].path)) {
			*size = (size_t)(maps.maps[i].end - maps.maps[i].start);
			err = 0;
			break;
		}
	}
	proc_maps_free(&maps);
	return err;
}

int vdso_image_fd(void)
{
	uint64_t base = getauxval(AT_SYSINFO_EHDR);
	size_t size = 0;
	int fd, err;

	if (image_fd >= 0)
		return image_fd;
	if (!base)
		return -ENOENT;
	err = own_vdso_size(base, &size);
	if (err)
		return err;
	fd = memfd_create("pybpfprof-vdso", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (write(fd, (const void *)(uintptr_t)base, size) != (ssize_t)size ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
		err = errno ? -errno : -EIO;
		close(fd);
		return err;
	}
	image_fd = fd;
	return fd;
}

bool vdso_is_map_name(const char *path)
{
	return strcmp(path, VDSO_MAP_NAME) == 0;
}
