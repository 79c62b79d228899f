// SPDX-License-Identifier: MIT
#include "util/fd_write.h"

#include <errno.h>
#include <sys/types.h>
#include <unistd.h>

int fd_write_all(int fd, const void *data, size_t len, size_t *written)
{
	const uint8_t *next = data;
	size_t done = 0;
	int err = 0;

	while (done < len) {
		ssize_t wrote = write(fd, next + done, len - done);

		if (wrote < 0 && errno == EINTR)
			continue;
		if (wrote <= 0) {
			err = wrote < 0 ? -errno : -EIO;
			break;
		}
		done += (size_t)wrote;
	}
	if (written)
		*written = done;
	return err;
}

int fd_pwrite_all(int fd, const void *data, size_t len, uint64_t offset)
{
	const uint8_t *next = data;

	while (len) {
		ssize_t wrote = pwrite(fd, next, len, (off_t)offset);

		if (wrote < 0 && errno == EINTR)
			continue;
		if (wrote <= 0)
			return wrote < 0 ? -errno : -EIO;
		next += wrote;
		len -= (size_t)wrote;
		offset += (uint64_t)wrote;
	}
	return 0;
}
