// SPDX-License-Identifier: MIT
#include "target/proc_identity.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* /proc/PID/status is about 1.5 KiB; a cgroup line is a path. Past these we stop reading. */
#define STATUS_MAX_BYTES 8192
#define CGROUP_MAX_BYTES 4096

/* Up to len - 1 bytes of a /proc file, NUL-terminated; the length, or a negative errno. */
static ssize_t read_proc_file(pid_t pid, const char *name, char *out, size_t len)
{
	char path[64];
	size_t used = 0;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	while (used < len - 1) {
		ssize_t got = read(fd, out + used, len - 1 - used);

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		used += (size_t)got;
	}
	close(fd);
	out[used] = 0;
	return (ssize_t)used;
}

/* "NSpid:\t4242\t7\t1": the host's view first, the innermost namespace's last. */
static void parse_ns_pid(const char *status, pid_t pid, struct proc_identity *out)
{
	const char *line = strstr(status, "\nNSpid:");
	const char *at;

	out->ns_pid = pid;
	out->ns_depth = 0;
	if (!line)
		return;
	at = line + strlen("\nNSpid:");
	for (unsigned level = 0; *at && *at != '\n'; level++) {
		char *end;
		long value = strtol(at, &end, 10);

		if (end == at || value <= 0)
			break;
		out->ns_pid = (pid_t)value;
		out->ns_depth = level;
		at = end;
	}
}

/* The "0::/path" line of cgroup v2, else the path of the first line ("N:controllers:/path"). */
static void parse_cgroup(const char *text, struct proc_identity *out)
{
	const char *line = !strncmp(text, "0::", 3) ? text : strstr(text, "\n0::");
	const char *path;
	size_t len;

	if (line && *line == '\n')
		line++;
	if (!line)
		line = text;
	path = strchr(line, ':');
	path = path ? strchr(path + 1, ':') : NULL;
	if (!path)
		return;
	path++;
	len = strcspn(path, "\n");
	if (len >= sizeof(out->cgroup))
		len = sizeof(out->cgroup) - 1;
	memcpy(out->cgroup, path, len);
	out->cgroup[len] = 0;
}

int proc_identity_read(pid_t pid, struct proc_identity *out)
{
	char *text = malloc(STATUS_MAX_BYTES + 1);
	ssize_t len;

	memset(out, 0, sizeof(*out));
	out->ns_pid = pid;
	if (!text)
		return -ENOMEM;
	text[0] = '\n';
	len = read_proc_file(pid, "status", text + 1, STATUS_MAX_BYTES);
	if (len == -ESRCH) {
		free(text);
		return -ESRCH;
	}
	if (len > 0)
		parse_ns_pid(text, pid, out);
	if (read_proc_file(pid, "cgroup", text, CGROUP_MAX_BYTES) > 0)
		parse_cgroup(text, out);
	free(text);
	return 0;
}
