// SPDX-License-Identifier: MIT
#include "util/fd_write.h"

#include "util/sudo_user.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
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

int fd_open_output(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	struct stat st;
	uid_t uid;
	gid_t gid;

	if (fd >= 0) {
		if (sudo_user_ids(&uid, &gid) && fchown(fd, uid, gid)) {
			int err = -errno;

			close(fd);
			unlink(path);
			return err;
		}
		return fd;
	}
	if (errno != EEXIST)
		return -errno;
	fd = open(path, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || ftruncate(fd, 0)) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

