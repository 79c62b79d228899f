/* SPDX-License-Identifier: MIT */
/*
 * The kernel events a run can sample on besides the cpu-clock (--event NAME[:PERIOD]): perf's
 * names for the generic software and hardware events, each with the period perf users expect
 * and what one occurrence weighs (a page for the fault events, one count for the others).
 */
#ifndef PYBPFPROF_PERF_EVENTS_H
#define PYBPFPROF_PERF_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct perf_event_spec {
	const char *name;        /* perf's name: "page-faults", "cycles", ... */
	uint32_t type;           /* PERF_TYPE_SOFTWARE or PERF_TYPE_HARDWARE */
	uint64_t config;         /* PERF_COUNT_SW_* / PERF_COUNT_HW_* */
	uint64_t default_period; /* one sample every this many occurrences */
	bool page_sized;         /* each occurrence is a page first touched: weighed in bytes */
	/* Not a perf event: the scheduler's switches (bpf/pyperf.bpf.c's pbp_off_cpu), one sample per
	 * block of a thread, weighed in the nanoseconds it was blocked; its PERIOD is the shortest
	 * block sent, in microseconds (0: every block). */
	bool off_cpu;
};

/* What one sample of an event weighs: the occurrences it stands for, bytes (page faults, a
 * block I/O, a call's bytes), or nanoseconds (off-cpu's blocks, a call's length). */
enum perf_event_unit { PERF_EVENT_COUNT, PERF_EVENT_BYTES, PERF_EVENT_NANOSECONDS };

/* The largest period taken: a sample's events (its period times its stride) stay far from
 * overflowing the profile's 64-bit counts. */
#define PERF_EVENT_MAX_PERIOD (1ull << 40)

/* The event named name (perf's names and aliases: "faults", "cs", "migrations", ...), or NULL. */
const struct perf_event_spec *perf_event_find(const char *name);
/* "page-faults, major-faults, ..., branch-misses": every canonical name, for messages. */
const char *perf_event_names(char *buffer, size_t size);
/* The shortest block --event off-cpu:MIN_US takes. */
#define PERF_EVENT_MAX_OFF_CPU_US 60000000ull
/* Whether the event needs a hardware performance monitoring unit. */
bool perf_event_is_hardware(const struct perf_event_spec *spec);
/* Not perf events but tracepoints (bpf/pyperf.bpf.c): syscall:NAME,... (the calls of
 * sampler/syscall_names.h's filter, one sample each) and block-io (each block I/O a target
 * thread queues, weighed in its bytes). Neither takes a period. */
bool perf_event_is_syscalls(const struct perf_event_spec *spec);
bool perf_event_is_block_io(const struct perf_event_spec *spec);
/* off-cpu, syscalls or block-io: one sample per occurrence, no perf event opened. */
bool perf_event_is_tracepoint(const struct perf_event_spec *spec);
/* "count", "bytes", "nanoseconds": the profiles' event_unit. */
const char *perf_event_unit_name(enum perf_event_unit unit);

#endif
