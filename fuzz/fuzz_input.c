// SPDX-License-Identifier: MIT
#include "fuzz.h"

#include <errno.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

volatile size_t fuzz_input_sink;

int fuzz_input_memfd(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz-input", MFD_CLOEXEC);
	size_t done = 0;

	if (fd < 0)
		return -errno;
	while (done < size) {
		ssize_t wrote = write(fd, data + done, size - done);

		if (wrote < 0 && errno == EINTR)
			continue;
		if (wrote <= 0) {
			int err = wrote < 0 ? -errno : -EIO;

			close(fd);
			return err;
		}
		done += (size_t)wrote;
	}
	if (lseek(fd, 0, SEEK_SET) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

const char *fuzz_input_path(int fd, char *buffer, size_t size)
{
	snprintf(buffer, size, "/proc/self/fd/%d", fd);
	return buffer;
}
