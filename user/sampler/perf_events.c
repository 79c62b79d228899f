// SPDX-License-Identifier: MIT
#include "sampler/perf_events.h"

#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>

/*
 * Periods as `perf record -c` users pick them: every major fault and every scheduling event
 * (rare, each one telling), one in 16 page faults (64 KiB of 4 KiB pages: a fresh 200 MB buffer
 * still gives 3200 samples without flooding the ring), and hardware counts at a few hundred
 * to a few thousand samples per second of a busy CPU. off-cpu is no perf event (a tracepoint on
 * the scheduler): every block is sent, whatever its length, unless a minimum is given.
 */
static const struct perf_event_spec events[] = {
	{ "page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, 16, true, false },
	{ "minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN, 16, true, false },
	{ "major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ, 1, true, false },
	{ "context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, 1, false, false },
	{ "cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS, 1, false, false },
	{ "alignment-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS, 1, false, false },
	{ "emulation-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_EMULATION_FAULTS, 1, false, false },
	{ "off-cpu", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY, 0, false, true },
	{ .name = "syscall", .type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_DUMMY },
	{ .name = "block-io", .type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_DUMMY },
	{ "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 10000000, false, false },
	{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, 10000000, false, false },
	{ "cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES, 100000, false, false },
	{ "cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, 10000, false, false },
	{ "branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, 1000000, false, false },
	{ "branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, 10000, false, false },
	{ "bus-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES, 1000000, false, false },
	{ "ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES, 10000000, false, false },
	{ "stalled-cycles-frontend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND, 10000000, false, false },
	{ "stalled-cycles-backend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND, 10000000, false, false },
};

/* perf's other spellings of the same events. */
static const struct {
	const char *alias, *name;
} aliases[] = {
	{ "faults", "page-faults" },
	{ "cs", "context-switches" },
	{ "migrations", "cpu-migrations" },
	{ "cpu-cycles", "cycles" },
	{ "branch-instructions", "branches" },
	{ "idle-cycles-frontend", "stalled-cycles-frontend" },
	{ "idle-cycles-backend", "stalled-cycles-backend" },
};

#define COUNT_OF(array) (sizeof(array) / sizeof((array)[0]))

const struct perf_event_spec *perf_event_find(const char *name)
{
	for (size_t i = 0; i < COUNT_OF(aliases); i++)
		if (strcmp(name, aliases[i].alias) == 0)
			name = aliases[i].name;
	for (size_t i = 0; i < COUNT_OF(events); i++)
		if (strcmp(name, events[i].name) == 0)
			return &events[i];
	return NULL;
}

const char *perf_event_names(char *buffer, size_t size)
{
	size_t len = 0;

	if (size)
		buffer[0] = 0;
	for (size_t i = 0; i < COUNT_OF(events) && len < size; i++) {
		int n = snprintf(buffer + len, size - len, "%s%s", i ? ", " : "", events[i].name);

		if (n < 0)
			break;
		len += (size_t)n;
	}
	return buffer;
}

bool perf_event_is_hardware(const struct perf_event_spec *spec)
{
	return spec->type == PERF_TYPE_HARDWARE;
}

bool perf_event_is_syscalls(const struct perf_event_spec *spec)
{
	return strcmp(spec->name, "syscall") == 0;
}

bool perf_event_is_block_io(const struct perf_event_spec *spec)
{
	return strcmp(spec->name, "block-io") == 0;
}

bool perf_event_is_tracepoint(const struct perf_event_spec *spec)
{
	return spec->off_cpu || perf_event_is_syscalls(spec) || perf_event_is_block_io(spec);
}

const char *perf_event_unit_name(enum perf_event_unit unit)
{
	return unit == PERF_EVENT_BYTES ? "bytes" : unit == PERF_EVENT_NANOSECONDS ? "nanoseconds" : "count";
}
