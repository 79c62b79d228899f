// SPDX-License-Identifier: MIT
#include "proc/proc_identity.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* /proc/PID/status is about 1.5 KiB; a cgroup line is a path. Past these we stop reading. */
#define STATUS_MAX_BYTES 8192
#define CGROUP_MAX_BYTES 4096

ssize_t proc_identity_read_file(pid_t pid, const char *name, char *out, size_t len)
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

/* The path of one line of /proc/PID/cgroup ("N:controllers:/path"), its length in *len; NULL if malformed. */
static const char *line_path(const char *line, size_t *len)
{
	const char *end = line + strcspn(line, "\n");
	const char *path = memchr(line, ':', (size_t)(end - line));

	path = path ? memchr(path + 1, ':', (size_t)(end - path - 1)) : NULL;
	if (!path)
		return NULL;
	path++;
	*len = (size_t)(end - path);
	return path;
}

static bool is_root(const char *path, size_t len)
{
	return len == 0 || (len == 1 && path[0] == '/');
}

/*
 * The cgroup v2 path ("0::/path"), unless it is the root while a v1 hierarchy places the
 * process deeper, as Docker does on a hybrid host: then the name=systemd hierarchy's path,
 * else the first deeper v1 path.
 */
void proc_identity_parse_cgroup(const char *text, char *out, size_t out_len)
{
	const char *unified = NULL, *systemd = NULL, *other = NULL;
	size_t unified_len = 0, systemd_len = 0, other_len = 0;
	const char *chosen;
	size_t chosen_len;

	for (const char *line = text, *next; *line; line = *next ? next + 1 : next) {
		size_t len;
		const char *path = line_path(line, &len);

		next = line + strcspn(line, "\n");
		if (!path)
			continue;
		if (!strncmp(line, "0::", 3)) {
			unified = path;
			unified_len = len;
		} else if (!is_root(path, len) && strstr(line, ":name=systemd:") == strchr(line, ':') && !systemd) {
			systemd = path;
			systemd_len = len;
		} else if (!is_root(path, len) && !other) {
			other = path;
			other_len = len;
		}
	}
	chosen = unified, chosen_len = unified_len;
	if (!unified || is_root(unified, unified_len)) {
		if (systemd)
			chosen = systemd, chosen_len = systemd_len;
		else if (other)
			chosen = other, chosen_len = other_len;
	}
	out[0] = 0;
	if (!chosen || !out_len)
		return;
	if (chosen_len >= out_len)
		chosen_len = out_len - 1;
	memcpy(out, chosen, chosen_len);
	out[chosen_len] = 0;
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
	len = proc_identity_read_file(pid, "status", text + 1, STATUS_MAX_BYTES);
	if (len == -ESRCH) {
		free(text);
		return -ESRCH;
	}
	if (len > 0)
		parse_ns_pid(text, pid, out);
	if (proc_identity_read_file(pid, "comm", out->comm, sizeof(out->comm)) > 0)
		out->comm[strcspn(out->comm, "\n")] = 0;
	if (proc_identity_read_file(pid, "cgroup", text, CGROUP_MAX_BYTES) > 0)
		proc_identity_parse_cgroup(text, out->cgroup, sizeof(out->cgroup));
	free(text);
	return 0;
}

void proc_identity_thread_name(pid_t pid, pid_t tid, char out[PROC_IDENTITY_NAME_MAX])
{
	char name[48];

	snprintf(name, sizeof(name), "task/%d/comm", (int)tid);
	if (proc_identity_read_file(pid, name, out, PROC_IDENTITY_NAME_MAX) <= 0)
		out[0] = 0;
	out[strcspn(out, "\n")] = 0;
}
