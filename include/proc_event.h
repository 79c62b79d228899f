/* SPDX-License-Identifier: MIT */
/*
 * Process lifecycle events sent by bpf/pyperf.bpf.c on the small
 * `proc_events` ring buffer: an exec (so userspace can discover a Python
 * process that starts later, or re-discover a launched child once it has
 * exec'd python) and the exit of a target's thread-group leader.
 */
#ifndef PYBPFPROF_PROC_EVENT_H
#define PYBPFPROF_PROC_EVENT_H

#ifndef __bpf__
#include <linux/types.h>
#endif

#define PBP_COMM_LEN 16

enum pbp_proc_event_type {
	PBP_PROC_EXEC = 1, /* pid has just exec'd comm */
	PBP_PROC_EXIT = 2, /* the leader of target pid has exited */
	PBP_PROC_FORK = 3, /* target parent_pid forked pid, which now has the parent's config */
};

struct pbp_proc_event {
	__u32 type;       /* enum pbp_proc_event_type */
	__u32 pid;        /* host tgid */
	__u32 parent_pid; /* PBP_PROC_FORK: the forking target's tgid */
	__u32 reserved;
	char comm[PBP_COMM_LEN];
};

#define PBP_PROC_EVENT_LAYOUT "struct pbp_proc_event: layout shared by BPF and userspace"
_Static_assert(sizeof(struct pbp_proc_event) == 32, PBP_PROC_EVENT_LAYOUT);
_Static_assert(__builtin_offsetof(struct pbp_proc_event, type) == 0, PBP_PROC_EVENT_LAYOUT);
_Static_assert(__builtin_offsetof(struct pbp_proc_event, pid) == 4, PBP_PROC_EVENT_LAYOUT);
_Static_assert(__builtin_offsetof(struct pbp_proc_event, parent_pid) == 8, PBP_PROC_EVENT_LAYOUT);
_Static_assert(__builtin_offsetof(struct pbp_proc_event, comm) == 16, PBP_PROC_EVENT_LAYOUT);

#endif
