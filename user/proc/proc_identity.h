/* SPDX-License-Identifier: MIT */
/*
 * Who a process is beyond its host pid: its pid inside its own pid namespace
 * (a container's PID 1 is some other pid on the host) and its cgroup, which
 * names the container (or the service) it runs in.
 */
#ifndef PYBPFPROF_PROC_IDENTITY_H
#define PYBPFPROF_PROC_IDENTITY_H

#include <stddef.h>
#include <sys/types.h>

#define PROC_IDENTITY_CGROUP_MAX 512

/* The kernel's own bound on a task's command name (TASK_COMM_LEN). */
#define PROC_IDENTITY_NAME_MAX 16

struct proc_identity {
	pid_t ns_pid;        /* the pid its own (innermost) pid namespace gives it; the host pid outside any */
	unsigned ns_depth;   /* pid namespaces it is nested in below ours (0: ours) */
	char comm[PROC_IDENTITY_NAME_MAX];     /* its command name (/proc/PID/comm); "" unknown */
	char cgroup[PROC_IDENTITY_CGROUP_MAX]; /* the cgroup v2 path ("/system.slice/x.service"); when that
						* is the root, a deeper v1 path (name=systemd's first); "" unknown */
};

/* Up to len - 1 bytes of /proc/PID/name, NUL-terminated; the length, or a negative errno
 * (-ESRCH once pid is gone). */
ssize_t proc_identity_read_file(pid_t pid, const char *name, char *out, size_t len);
/* From /proc/PID/status (NSpid), /proc/PID/comm and /proc/PID/cgroup, each read bounded. 0 or -ESRCH; a field
 * that cannot be read is left as outside any namespace, or "". */
int proc_identity_read(pid_t pid, struct proc_identity *out);
/* A thread's command name from /proc/PID/task/TID/comm into out ("" if gone). */
void proc_identity_thread_name(pid_t pid, pid_t tid, char out[PROC_IDENTITY_NAME_MAX]);
/* The container's cgroup path from the text of /proc/PID/cgroup, cut to fit out ("" if none). */
void proc_identity_parse_cgroup(const char *text, char *out, size_t out_len);

#endif
