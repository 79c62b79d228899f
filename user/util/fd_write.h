/* SPDX-License-Identifier: MIT */
/* Writing a whole buffer to a file descriptor: short writes and EINTR retried. */
#ifndef PYBPFPROF_FD_WRITE_H
#define PYBPFPROF_FD_WRITE_H

#include <stddef.h>
#include <stdint.h>

/* 0, or negative errno (-EIO if the kernel made no progress). *written: bytes that did land. */
int fd_write_all(int fd, const void *data, size_t len, size_t *written);
int fd_pwrite_all(int fd, const void *data, size_t len, uint64_t offset);

/*
 * Opens a text output (a table, a page) for writing: a new file (under sudo given to the
 * invoking user, as the profile writers do), or an existing regular file emptied, never
 * through a symbolic link. Its descriptor, or negative errno.
 */
int fd_open_output(const char *path);

#endif
