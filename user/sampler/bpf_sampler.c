// SPDX-License-Identifier: MIT
#include "sampler/bpf_sampler.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <time.h>
#include <sys/mman.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "pyperf.skel.h"
#include "sampler/bpf_loader.h"
#include "unwind/unwind_maps.h"
#include "util/array.h"
#include "util/clock.h"
#include "util/errbuf.h"
#include "util/thread.h"


struct bpf_sampler {
	/* The maps and programs, loaded by a child (sampler/bpf_loader.h): used by descriptor. */
	struct bpf_loaded loaded;
	struct pyperf_bpf__bss *bss;      /* the programs' .bss, mapped */
	size_t ring_bytes;                /* the record ring's size: from the rate, grown from the records seen */
	int ring_fd;                      /* the record ring BPF writes to (in `events`) */
	/* The ring it replaced: still drained until no BPF program can be writing to it. */
	int retiring_ring_fd;
	uint64_t retiring_since_ms;
	/* Handing BPF a grown ring (an array-of-maps update) waits for an RCU grace period, 10-16 ms
	 * on this project's VM: done on a thread of its own, so that the drain goes on reading new
	 * code objects meanwhile (a module body lives as long as its import). */
	pthread_t publisher;
	atomic_int publish_state;         /* enum ring_publish */
	_Atomic uint64_t published_ms;
	bool ring_grows;                  /* cpu mode with no size asked for: the ring follows the records */
	size_t ring_bytes_before_grow;    /* the retiring ring's size, while the grown one is published */
	unsigned frequency_hz;            /* records per second per CPU the ring is sized for (ring_rate_hz) */
	uint64_t record_bytes_x16;        /* a running mean of the records' sizes (x16) */
	uint64_t records_seen;
	struct ring_buffer *rings;        /* records + proc events, one epoll set */
	/* BPF links, by descriptor: -1 where none. */
	int *perf_links;                  /* one per possible CPU, -1 where absent */
	int perf_count;
	int exec_link;
	int exit_link;
	int fork_link;
	int off_cpu_link;                 /* --event off-cpu: the sched_switch program */
	/* --event syscall:...: the sys_enter program (and sys_exit's, a call weighed);
	 * --event block-io: block_bio_queue's */
	int event_links[2];
	struct kernel_names *kernel_names; /* NULL until bpf_sampler_open_kernel_names */
	int stats_fd;
	struct unwind_maps *unwind_maps;  /* native unwinding's maps (unwind/unwind_maps.h) */
	size_t unwind_row_capacity;   /* the most rows they may hold: a whole number of default chunks */
	/* The callbacks of the consume() call in progress. */
	bpf_sampler_record_fn on_record;
	bpf_sampler_proc_fn on_proc;
	void *callback_ctx;
	int callback_error;
	/* The consume() call in progress stops after the record that ends past this (coarse clock,
	 * ms; 0: no end), so that a consumer slower than the samples still gets back to its loop. */
	uint64_t consume_until_ms;
	bool consume_cut;                 /* it did */
	uint64_t consumed_now;            /* its records so far */
	uint64_t consumes_cut;            /* how many consume() calls were cut, over the run */
	uint64_t next_reconcile_ms;
	uint64_t reconciled;              /* map entries of gone processes deleted */
	/* Wall mode: the iterator links (one per -p process, or one over every task) and the
	 * thread that runs a pass over them at every interval. */
	int *wall_links;
	size_t wall_link_count;
	uint64_t wall_interval_ns;
	pthread_t wall_thread;
	bool wall_thread_started;
	atomic_bool wall_stop;
	_Atomic uint64_t wall_passes, wall_late_passes, wall_pass_errors;
	_Atomic int wall_wake_fd;   /* written after each pass (bpf_sampler_wake_after_passes), or -1 */
};

static int map_fd(const struct bpf_sampler *sampler, enum bpf_loader_map map)
{
	return sampler->loaded.map_fds[map];
}

static int prog_fd(const struct bpf_sampler *sampler, enum bpf_loader_prog prog)
{
	return sampler->loaded.prog_fds[prog];
}

static void close_link(int *link)
{
	if (*link >= 0)
		close(*link);
	*link = -1;
}

static int read_sysctl_u64(const char *path, uint64_t *value)
{
	FILE *file = fopen(path, "r");
	int ok;

	if (!file)
		return -errno;
	ok = fscanf(file, "%" SCNu64, value) == 1;
	fclose(file);
	return ok ? 0 : -EINVAL;
}

static int effective_caps(uint64_t *caps)
{
	FILE *file = fopen("/proc/self/status", "r");
	char line[256];
	int found = 0;

	if (!file)
		return -errno;
	while (fgets(line, sizeof(line), file))
		if (sscanf(line, "CapEff: %" SCNx64, caps) == 1) {
			found = 1;
			break;
		}
	fclose(file);
	return found ? 0 : -ENOENT;
}

static int check_privileges(char *errbuf, size_t errlen)
{
	uint64_t caps = 0;
	uint64_t bpf_perfmon = (1ull << CAP_BPF) | (1ull << CAP_PERFMON);

	if (geteuid() == 0)
		return 0;
	if (effective_caps(&caps) == 0 &&
	    ((caps & bpf_perfmon) == bpf_perfmon || (caps & (1ull << CAP_SYS_ADMIN))))
		return 0;
	return errbuf_format(errbuf, errlen, -EPERM, "not permitted: run as root or with CAP_BPF and CAP_PERFMON");
}

static int check_kernel(const struct bpf_sampler_options *options, char *errbuf, size_t errlen)
{
	uint64_t max_rate = 0;

	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0)
		return errbuf_format(errbuf, errlen, -ENOTSUP,
				     "kernel has no BTF (/sys/kernel/btf/vmlinux missing): needs CONFIG_DEBUG_INFO_BTF");
	if (options->frequency_hz == 0)
		return errbuf_format(errbuf, errlen, -EINVAL, "sampling frequency must be at least 1 Hz");
	if (read_sysctl_u64("/proc/sys/kernel/perf_event_max_sample_rate", &max_rate) == 0 &&
	    options->frequency_hz > max_rate)
		return errbuf_format(errbuf, errlen, -EINVAL,
				     "frequency %u Hz is above kernel.perf_event_max_sample_rate (%" PRIu64 ")",
				     options->frequency_hz, max_rate);
	return 0;
}

static size_t round_up_pow2(size_t bytes)
{
	size_t size = 4096;

	while (size < bytes && size < ((size_t)1 << 30))
		size <<= 1;
	return size;
}

/* The event each CPU samples on: the cpu-clock at frequency_hz, or options->event every
 * event_period occurrences. */
static struct perf_event_attr sample_event_attr(const struct bpf_sampler_options *options)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.freq = 1,
		.sample_freq = options->frequency_hz,
	};

	if (options->event) {
		attr.type = options->event->type;
		attr.config = options->event->config;
		attr.freq = 0;
		attr.sample_period = options->event_period ? options->event_period : options->event->default_period;
	}
	return attr;
}

static int open_sample_event(int cpu, struct perf_event_attr *attr)
{
	long fd = syscall(__NR_perf_event_open, attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);

	return fd < 0 ? -errno : (int)fd;
}

/* What a failed perf_event_open of the sample event means, in one line. */
static int sample_event_error(const struct bpf_sampler_options *options, const struct perf_event_attr *attr,
			      int cpu, int err, char *errbuf, size_t errlen)
{
	if (!options->event)
		return errbuf_format(errbuf, errlen, err, "perf_event_open(cpu-clock, cpu %d, %u Hz): %s", cpu,
				     options->frequency_hz, strerror(-err));
	/* The kernel's answer where no PMU counts the event (a VM without one, a CPU without the counter). */
	if (perf_event_is_hardware(options->event) && (err == -ENOENT || err == -EOPNOTSUPP || err == -ENODEV))
		return errbuf_format(errbuf, errlen, -EOPNOTSUPP,
				     "hardware event %s: this machine has no PMU counting it (perf_event_open: %s); "
				     "software events (page-faults, context-switches, ...) still work",
				     options->event->name, strerror(-err));
	return errbuf_format(errbuf, errlen, err, "perf_event_open(%s, cpu %d, period %llu): %s", options->event->name,
			     cpu, (unsigned long long)attr->sample_period, strerror(-err));
}

/* One sample event per possible CPU: one that is not present (ENODEV) runs nothing
 * to sample and is skipped; any other failure is an error. */
static int attach_perf_events(struct bpf_sampler *sampler, const struct bpf_sampler_options *options, char *errbuf,
			      size_t errlen)
{
	struct perf_event_attr attr = sample_event_attr(options);
	int cpus = libbpf_num_possible_cpus();
	int opened = 0;

	if (cpus < 0)
		return errbuf_format(errbuf, errlen, cpus, "counting the possible CPUs: %s", strerror(-cpus));
	sampler->perf_links = calloc((size_t)cpus, sizeof(*sampler->perf_links));
	if (!sampler->perf_links)
		return errbuf_format(errbuf, errlen, -ENOMEM, "out of memory");
	for (int cpu = 0; cpu < cpus; cpu++)
		sampler->perf_links[cpu] = -1;
	sampler->perf_count = cpus;
	for (int cpu = 0; cpu < cpus; cpu++) {
		int fd = open_sample_event(cpu, &attr), err;

		/* A hardware event without a PMU also says ENODEV: the not-present CPU's answer. */
		if (fd == -ENODEV && (!options->event || !perf_event_is_hardware(options->event) || opened))
			continue;
		if (fd < 0)
			return sample_event_error(options, &attr, cpu, fd, errbuf, errlen);
		opened++;
		/* The link holds the perf event: closing the link ends it. */
		sampler->perf_links[cpu] = bpf_link_create(prog_fd(sampler, LOADER_PROG_SAMPLE), fd, BPF_PERF_EVENT, NULL);
		err = sampler->perf_links[cpu] < 0 ? -errno : 0;
		close(fd);
		if (err)
			return errbuf_format(errbuf, errlen, err, "attaching the sampler to cpu %d: %s", cpu, strerror(-err));
	}
	return 0;
}

/* Attaches a tp_btf program (its tracepoint was chosen at load). */
static int attach_tracepoint(struct bpf_sampler *sampler, enum bpf_loader_prog prog, const char *name,
			     int *link, char *errbuf, size_t errlen)
{
	int err;

	*link = bpf_raw_tracepoint_open(NULL, prog_fd(sampler, prog));
	if (*link >= 0)
		return 0;
	err = -errno;
	return errbuf_format(errbuf, errlen, err, "attaching %s: %s", name, strerror(-err));
}

/* One iterator link over pid's threads, or over every task of the host (pid 0). */
static int attach_task_iterator(struct bpf_sampler *sampler, pid_t pid)
{
	union bpf_iter_link_info link_info = { .task = { .pid = (__u32)pid } };
	DECLARE_LIBBPF_OPTS(bpf_link_create_opts, opts, .iter_info = &link_info, .iter_info_len = sizeof(link_info));
	DECLARE_LIBBPF_OPTS(bpf_link_create_opts, every_task);

	return bpf_link_create(prog_fd(sampler, LOADER_PROG_WALL), 0, BPF_TRACE_ITER, pid ? &opts : &every_task);
}

/* Runs the iterator of link to its end: the program sends its records to the ring buffer and
 * writes nothing to the file itself. */
static int run_iterator(int link)
{
	char discard[64];
	int fd = bpf_iter_create(link), err = 0;
	ssize_t got;

	if (fd < 0)
		return -errno;
	while ((got = read(fd, discard, sizeof(discard))) > 0)
		;
	if (got < 0)
		err = -errno;
	close(fd);
	return err;
}

static struct timespec timespec_of_ns(uint64_t ns)
{
	return (struct timespec){ .tv_sec = (time_t)(ns / 1000000000u), .tv_nsec = (long)(ns % 1000000000u) };
}

/* One pass: every link's iterator, the samples stamped with the pass's start. Returns the
 * first iterator's error, or 0. */
static int run_wall_pass(struct bpf_sampler *sampler, uint64_t pass_ns)
{
	int first_err = 0;

	sampler->bss->wall_pass_ns = pass_ns;
	for (size_t i = 0; i < sampler->wall_link_count; i++) {
		int err = run_iterator(sampler->wall_links[i]);

		if (err < 0) {
			atomic_fetch_add(&sampler->wall_pass_errors, 1);
			if (!first_err)
				first_err = err;
		}
	}
	atomic_fetch_add(&sampler->wall_passes, 1);
	return first_err;
}

/* The consumer's eventfd told of a pass's records, if it asked (a full counter wakes it already). */
static void wake_after_pass(struct bpf_sampler *sampler)
{
	uint64_t one = 1;
	int fd = atomic_load(&sampler->wall_wake_fd);

	if (fd >= 0 && write(fd, &one, sizeof(one)) < 0)
		return;
}

void bpf_sampler_wake_after_passes(struct bpf_sampler *sampler, int eventfd)
{
	atomic_store(&sampler->wall_wake_fd, eventfd);
}

/*
 * The pass thread: sleeps to absolute times (no drift), with the smallest timer slack
 * (the default 50 µs would be added to every wakeup), at the lowest real-time priority:
 * on a busy host an ordinary thread waits for a CPU for tens of milliseconds, and the
 * intervals it misses are samples lost (a pass is short: ~20 µs a thread). A pass that
 * ends after the next one's time skips the passes it overran rather than running them
 * back to back.
 */
static void *wall_pass_thread(void *opaque)
{
	struct bpf_sampler *sampler = opaque;
	uint64_t interval = sampler->wall_interval_ns, next = clock_monotonic_ns() + interval;
	struct sched_param lowest_realtime = { .sched_priority = 1 };

	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	/* Without CAP_SYS_NICE it stays an ordinary thread: the passes then follow the host's load. */
	pthread_setschedparam(pthread_self(), SCHED_FIFO, &lowest_realtime);
	while (!atomic_load(&sampler->wall_stop)) {
		struct timespec at = timespec_of_ns(next);
		uint64_t now;

		if (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL) != 0)
			continue;
		if (atomic_load(&sampler->wall_stop))
			break;
		run_wall_pass(sampler, clock_monotonic_ns());
		wake_after_pass(sampler);
		next += interval;
		now = clock_monotonic_ns();
		if (now >= next) {
			uint64_t missed = (now - next) / interval + 1;

			atomic_fetch_add(&sampler->wall_late_passes, missed);
			next += missed * interval;
		}
	}
	return NULL;
}

/* Signals stay with the main thread: the pass thread is created with all of them blocked. */
static int start_wall_thread(struct bpf_sampler *sampler)
{
	int err = thread_start_without_signals(&sampler->wall_thread, wall_pass_thread, sampler);

	if (err)
		return err;
	sampler->wall_thread_started = true;
	return 0;
}

static int start_wall(struct bpf_sampler *sampler, const struct bpf_sampler_options *options, char *errbuf,
		      size_t errlen)
{
	size_t count = options->wall_pid_count ? options->wall_pid_count : 1;
	int err;

	sampler->wall_links = calloc(count, sizeof(*sampler->wall_links));
	if (!sampler->wall_links)
		return errbuf_format(errbuf, errlen, -ENOMEM, "out of memory");
	for (size_t i = 0; i < count; i++) {
		pid_t pid = options->wall_pid_count ? options->wall_pids[i] : 0;

		sampler->wall_links[i] = attach_task_iterator(sampler, pid);
		if (sampler->wall_links[i] < 0) {
			err = -errno;
			return errbuf_format(errbuf, errlen, err, "attaching the wall-mode task iterator: %s",
					     strerror(-err));
		}
		sampler->wall_link_count++;
	}
	sampler->wall_interval_ns = 1000000000u / options->frequency_hz;
	if (options->wall_on_demand)
		return 0;
	err = start_wall_thread(sampler);
	if (err)
		return errbuf_format(errbuf, errlen, err, "starting the wall-mode thread: %s", strerror(-err));
	return 0;
}

static void stop_wall(struct bpf_sampler *sampler)
{
	if (sampler->wall_thread_started) {
		atomic_store(&sampler->wall_stop, true);
		pthread_join(sampler->wall_thread, NULL);
		sampler->wall_thread_started = false;
	}
	for (size_t i = 0; i < sampler->wall_link_count; i++)
		close_link(&sampler->wall_links[i]);
	free(sampler->wall_links);
	sampler->wall_links = NULL;
	sampler->wall_link_count = 0;
}

int bpf_sampler_wall_pass(struct bpf_sampler *sampler)
{
	if (!sampler->wall_links)
		return -EINVAL;
	return run_wall_pass(sampler, clock_monotonic_ns());
}

void bpf_sampler_wall_stats(struct bpf_sampler *sampler, struct bpf_sampler_wall_stats *stats)
{
	stats->passes = atomic_load(&sampler->wall_passes);
	stats->late_passes = atomic_load(&sampler->wall_late_passes);
	stats->pass_errors = atomic_load(&sampler->wall_pass_errors);
}

/*
 * Each record weighs 1/16 of the mean: a deep phase after a shallow start shows within a few dozen.
 * A record with a stack copy does not: copies come in bursts while a new process's tables build
 * (on a whole host, at any moment of the run), up to 16 KiB each, and BPF drops them, not the
 * samples, when the ring is filling; counted, one burst grew the ring for good at whatever
 * moment it came (2 -> 4 MiB, mapped twice, halfway through the soak).
 */
static void note_record_size(struct bpf_sampler *sampler, const void *data, size_t size)
{
	uint64_t scaled = (uint64_t)(size + BPF_RINGBUF_HDR_SZ) * 16;

	if (size >= sizeof(struct pbp_record) && (((const struct pbp_record *)data)->flags & PBP_REC_STACK_COPY))
		return;
	if (sampler->records_seen++ == 0)
		sampler->record_bytes_x16 = scaled;
	else
		sampler->record_bytes_x16 = sampler->record_bytes_x16 - sampler->record_bytes_x16 / 16 + scaled / 16;
}

static int on_ring_record(void *ctx, void *data, size_t size)
{
	struct bpf_sampler *sampler = ctx;
	int err;

	note_record_size(sampler, data, size);
	if (size < sizeof(struct pbp_record) || !sampler->on_record)
		return 0;
	err = sampler->on_record(sampler->callback_ctx, data, size);
	sampler->consumed_now++;
	if (err < 0) {
		sampler->callback_error = err;
		return err;
	}
	/* A negative return stops libbpf's consume after this record, which it has consumed. */
	if (sampler->consume_until_ms && clock_coarse_ms() >= sampler->consume_until_ms) {
		sampler->consume_cut = true;
		return -ETIME;
	}
	return 0;
}

static int on_ring_proc_event(void *ctx, void *data, size_t size)
{
	struct bpf_sampler *sampler = ctx;

	if (size >= sizeof(struct pbp_proc_event) && sampler->on_proc)
		sampler->on_proc(sampler->callback_ctx, data);
	return 0;
}

/* The rows budget: the rows asked for, in whole default chunks, at most UNWIND_MAX_CHUNKS of them.
 * No chunk is created yet: the caller adds them as tables need room (unwind_maps_add_chunk). */
static void size_unwind_rows(struct bpf_sampler *sampler, const struct bpf_sampler_options *options)
{
	size_t rows = options->unwind_rows ? options->unwind_rows : UNWIND_ROWS_DEFAULT;
	size_t chunks = (rows + UNWIND_CHUNK_ROWS - 1) / UNWIND_CHUNK_ROWS;

	if (chunks > UNWIND_MAX_CHUNKS)
		chunks = UNWIND_MAX_CHUNKS;
	sampler->unwind_row_capacity = options->native_stacks ? chunks * UNWIND_CHUNK_ROWS : 0;
}

/*
 * The record ring's size, from the rate: the consumer maps the ring twice (so that a record
 * that wraps reads as one), and every page of it is resident, so its size is most of the
 * profiler's memory. In cpu mode it holds RING_HOLD_MS (two of the consumer's slow ticks) of
 * records from every possible CPU at the rate: RING_RECORD_BYTES (a 64-frame Python stack
 * with native and kernel frames) at first, then the mean size of the records seen, as soon as
 * that asks for more (deep stacks: a 900-frame record is some 15 KiB, and a ring sized for
 * 2 KiB ones lost 8% of them at 1 kHz beside two busy processes). BPF wakes the consumer when
 * a quarter is full. Wall and gil modes write one record per thread of every target per pass,
 * however many CPUs, so they keep the default.
 */
#define RING_RECORD_BYTES 2048u
#define RING_HOLD_MS 100u
/* --event: no clock paces the samples, and an event comes in bursts (a buffer's page faults, a
 * storm of switches): the ring holds RING_HOLD_MS of them at this rate per CPU. */
#define RING_EVENT_HZ 10000u
#define RING_MIN_BYTES (1u << 20)
#define RING_MAX_BYTES (64u << 20)
/* RING_MIN_BYTES: with a 512 KiB ring, 900-frame stacks at 1 kHz lost 18 samples in one of six
 * launched runs (the first drain, which reads every new code object, took longer than the ring
 * holds); a 1 MiB ring lost none. */
/* Records seen before their mean sizes the ring. */
#define RING_GROW_MIN_RECORDS 32u
/* A replaced ring is drained this long after BPF got its successor: no program that looked it up
 * before then is still running (a perf-event program runs microseconds). */
#define RING_RETIRE_MS 100u

/* --event off-cpu: the scheduler's tracepoint, not a perf event, gives the records. */
static bool sampler_off_cpu(const struct bpf_sampler_options *options)
{
	return options->event && options->event->off_cpu;
}

/* --event syscall:... (sampler/syscall_names.h). */
static bool sampler_syscalls(const struct bpf_sampler_options *options)
{
	return options->event && perf_event_is_syscalls(options->event) && options->syscalls;
}

static bool sampler_block_io(const struct bpf_sampler_options *options)
{
	return options->event && perf_event_is_block_io(options->event);
}

/* Whether the sys_exit program runs: a call weighed by its bytes or its length. */
static bool sampler_syscall_exits(const struct bpf_sampler_options *options)
{
	return sampler_syscalls(options) && options->syscalls->weight != PBP_SYSCALL_COUNT;
}

/* The tracepoint programs of syscall and block-io events, attached in this order (-1: none). */
static void event_programs(const struct bpf_sampler_options *options, int programs[2])
{
	programs[0] = sampler_syscalls(options)	  ? LOADER_PROG_SYSCALL_ENTER
		      : sampler_block_io(options) ? LOADER_PROG_BLOCK_IO
						  : -1;
	programs[1] = sampler_syscall_exits(options) ? LOADER_PROG_SYSCALL_EXIT : -1;
}

static int attach_event_programs(struct bpf_sampler *sampler, const struct bpf_sampler_options *options,
				 char *errbuf, size_t errlen)
{
	static const char *const names[LOADER_PROG_COUNT] = {
		[LOADER_PROG_SYSCALL_ENTER] = "pbp_syscall_enter",
		[LOADER_PROG_SYSCALL_EXIT] = "pbp_syscall_exit",
		[LOADER_PROG_BLOCK_IO] = "pbp_block_io",
	};
	int programs[2];
	int err = 0;

	event_programs(options, programs);
	for (size_t i = 0; i < 2 && !err; i++)
		if (programs[i] >= 0)
			err = attach_tracepoint(sampler, programs[i], names[programs[i]], &sampler->event_links[i],
						errbuf, errlen);
	return err;
}

/* The records per second per CPU the ring is sized for. */
static unsigned ring_rate_hz(const struct bpf_sampler_options *options)
{
	return options->event ? RING_EVENT_HZ : options->frequency_hz;
}

static size_t ring_bytes_for_records(unsigned frequency_hz, uint64_t record_bytes)
{
	int cpus = libbpf_num_possible_cpus();
	uint64_t bytes;

	if (cpus <= 0)
		return PBP_RINGBUF_DEFAULT_BYTES;
	bytes = (uint64_t)frequency_hz * (uint64_t)cpus * record_bytes * RING_HOLD_MS / 1000;
	if (bytes < RING_MIN_BYTES)
		bytes = RING_MIN_BYTES;
	if (bytes > RING_MAX_BYTES)
		bytes = RING_MAX_BYTES;
	return round_up_pow2((size_t)bytes);
}

static size_t ring_bytes_for(const struct bpf_sampler_options *options)
{
	if (options->ringbuf_bytes)
		return round_up_pow2(options->ringbuf_bytes);
	if (options->wall)
		return PBP_RINGBUF_DEFAULT_BYTES;
	return ring_bytes_for_records(ring_rate_hz(options), RING_RECORD_BYTES);
}

/* A record ring of bytes (not yet where BPF writes): its fd, or a negative errno. */
static int create_ring(size_t bytes)
{
	int fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "pbp_records", 0, 0, (uint32_t)bytes, NULL);

	return fd < 0 ? -errno : fd;
}

/* Makes the ring the one BPF writes its records to (and wakes the consumer at a quarter of). */
static int publish_ring(struct bpf_sampler *sampler, int fd, size_t bytes)
{
	uint32_t zero = 0;

	if (bpf_map_update_elem(map_fd(sampler, LOADER_MAP_EVENTS), &zero, &fd, BPF_ANY))
		return -errno;
	/* The threshold after the ring: the smaller one's, a moment longer, only wakes the consumer sooner. */
	sampler->bss->wakeup_bytes = bytes / 4;
	return 0;
}

/* What the loader loads for these options: each mode only the programs it runs. */
static struct bpf_load_spec load_spec(const struct bpf_sampler_options *options)
{
	bool off_cpu = sampler_off_cpu(options);
	bool tracepoint = options->event && perf_event_is_tracepoint(options->event);
	struct bpf_load_spec spec = {
		.kernel_stacks = options->kernel_stacks,
		.watch_exec = options->watch_exec,
		.follow_forks = options->follow_forks,
		.native_stacks = options->native_stacks,
		.gil_only = options->gil_only,
		.memory_deltas = options->memory_deltas,
		.exceptions_only = options->exceptions_only,
		.time_samples = options->time_samples,
		.overhead_budget = options->overhead_budget && !options->wall && !tracepoint,
		.off_cpu_min_ns = off_cpu ? options->event_period * 1000 : 0,
		.tracepoint_period = tracepoint && !off_cpu && options->event_period ? options->event_period : 1,
		.syscalls = sampler_syscalls(options) ? options->syscalls : NULL,
	};

	spec.load[LOADER_PROG_SAMPLE] = !options->wall && !tracepoint;
	spec.load[LOADER_PROG_EXEC] = true;
	spec.load[LOADER_PROG_EXIT] = true;
	spec.load[LOADER_PROG_FORK] = true;
	spec.load[LOADER_PROG_OFF_CPU] = off_cpu;
	spec.load[LOADER_PROG_SYSCALL_ENTER] = sampler_syscalls(options);
	spec.load[LOADER_PROG_SYSCALL_EXIT] = sampler_syscall_exits(options);
	spec.load[LOADER_PROG_BLOCK_IO] = sampler_block_io(options);
	spec.load[LOADER_PROG_WALL] = options->wall;
	spec.load[LOADER_PROG_KSYM_NAMES] = options->kernel_stacks;
	return spec;
}

static int load_programs(struct bpf_sampler *sampler, const struct bpf_sampler_options *options,
			 char *errbuf, size_t errlen)
{
	struct bpf_load_spec spec = load_spec(options);
	size_t ring_bytes = ring_bytes_for(options);
	int err;

	size_unwind_rows(sampler, options);
	err = bpf_loader_load(&spec, &sampler->loaded, errbuf, errlen);
	if (err)
		return err;
	sampler->bss = bpf_loader_map_bss(&sampler->loaded);
	if (!sampler->bss) {
		err = -errno;
		return errbuf_format(errbuf, errlen, err, "mapping the BPF programs' .bss: %s", strerror(-err));
	}
	sampler->ring_fd = create_ring(ring_bytes);
	err = sampler->ring_fd < 0 ? sampler->ring_fd : publish_ring(sampler, sampler->ring_fd, ring_bytes);
	if (err)
		return errbuf_format(errbuf, errlen, err, "creating a ring buffer of %zu bytes: %s", ring_bytes,
				     strerror(-err));
	sampler->ring_bytes = ring_bytes;
	sampler->ring_grows = !options->wall && !options->ringbuf_bytes;
	sampler->frequency_hz = ring_rate_hz(options);
	return 0;
}

static int open_rings(struct bpf_sampler *sampler, char *errbuf, size_t errlen)
{
	int err;

	sampler->rings = ring_buffer__new(sampler->ring_fd, on_ring_record, sampler, NULL);
	if (!sampler->rings) {
		err = -errno;
		return errbuf_format(errbuf, errlen, err, "opening the record ring buffer: %s", strerror(-err));
	}
	err = ring_buffer__add(sampler->rings, map_fd(sampler, LOADER_MAP_PROC_EVENTS), on_ring_proc_event, sampler);
	if (err)
		return errbuf_format(errbuf, errlen, err, "opening the process-event ring buffer: %s", strerror(-err));
	return 0;
}

int bpf_sampler_open(struct bpf_sampler **out, const struct bpf_sampler_options *options, char *errbuf,
		     size_t errlen)
{
	struct bpf_sampler *sampler;
	int err;

	*out = NULL;
	err = check_privileges(errbuf, errlen);
	if (err)
		return err;
	err = check_kernel(options, errbuf, errlen);
	if (err)
		return err;
	sampler = calloc(1, sizeof(*sampler));
	if (!sampler)
		return errbuf_format(errbuf, errlen, -ENOMEM, "out of memory");
	sampler->stats_fd = -1;
	sampler->ring_fd = -1;
	sampler->retiring_ring_fd = -1;
	sampler->exec_link = sampler->exit_link = sampler->fork_link = sampler->off_cpu_link = -1;
	sampler->event_links[0] = sampler->event_links[1] = -1;
	atomic_store(&sampler->wall_wake_fd, -1);
	err = load_programs(sampler, options, errbuf, errlen);
	if (!err && unwind_maps_new(&sampler->unwind_maps, map_fd(sampler, LOADER_MAP_UNWIND_ROWS),
				    map_fd(sampler, LOADER_MAP_UNWIND_TABLES), map_fd(sampler, LOADER_MAP_UNWIND_PROCS),
				    sampler->unwind_row_capacity))
		err = errbuf_format(errbuf, errlen, -ENOMEM, "out of memory");
	if (!err)
		err = open_rings(sampler, errbuf, errlen);
	if (!err)
		err = attach_tracepoint(sampler, LOADER_PROG_EXEC, "pbp_exec", &sampler->exec_link, errbuf, errlen);
	if (!err)
		err = attach_tracepoint(sampler, LOADER_PROG_EXIT, "pbp_exit", &sampler->exit_link, errbuf, errlen);
	if (!err && options->follow_forks)
		err = attach_tracepoint(sampler, LOADER_PROG_FORK, "pbp_fork", &sampler->fork_link, errbuf, errlen);
	if (!err && options->wall)
		err = start_wall(sampler, options, errbuf, errlen);
	else if (!err && sampler_off_cpu(options))
		err = attach_tracepoint(sampler, LOADER_PROG_OFF_CPU, "pbp_off_cpu", &sampler->off_cpu_link, errbuf,
					errlen);
	else if (!err && (sampler_syscalls(options) || sampler_block_io(options)))
		err = attach_event_programs(sampler, options, errbuf, errlen);
	else if (!err)
		err = attach_perf_events(sampler, options, errbuf, errlen);
	if (err) {
		bpf_sampler_close(sampler);
		return err;
	}
	*out = sampler;
	return 0;
}

/* The identity fields BPF copies from each code object in one read of at most PBP_CODE_SPAN_MAX bytes. */
static bool code_identity_fits(const struct py_offsets *off)
{
	const uint32_t fields[] = { off->code_argcount, off->code_firstlineno, off->code_filename,
				    py_code_shown_name(off) };
	uint32_t low = UINT32_MAX, high = 0;

	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		if (fields[i] == PY_OFF_NONE)
			return false;
		low = fields[i] < low ? fields[i] : low;
		high = fields[i] > high ? fields[i] : high;
	}
	return high - low + sizeof(uint64_t) <= PBP_CODE_SPAN_MAX;
}

/* BPF reads frame fields from a copy of frame_read_size (<= PBP_FRAME_MAX_READ) bytes with masked offsets:
 * an offset outside the copy would read the wrong bytes, so refuse it here. */
static bool frame_layout_fits(const struct py_offsets *off)
{
	uint32_t size = off->frame_read_size;

	return size > 0 && size <= PBP_FRAME_MAX_READ && off->frame_previous + 8 <= size && off->frame_code + 8 <= size &&
	       off->frame_lasti + (off->lasti_kind == PY_LASTI_PTR ? 8u : 4u) <= size &&
	       (off->frame_owner == PY_OFF_NONE || off->frame_owner < size) &&
	       (off->frame_is_entry == PY_OFF_NONE || off->frame_is_entry < size) && code_identity_fits(off);
}

int bpf_sampler_add_target(struct bpf_sampler *sampler, pid_t tgid, const struct py_proc_config *config)
{
	struct py_proc_config pending = { .flags = PY_PROC_PENDING };
	uint32_t key = (uint32_t)tgid;

	if (config && !(config->flags & PY_PROC_PENDING) && !frame_layout_fits(&config->off))
		return -EINVAL;
	if (bpf_map_update_elem(map_fd(sampler, LOADER_MAP_PROC_CONFIGS), &key, config ? config : &pending, BPF_ANY))
		return -errno;
	return 0;
}

int bpf_sampler_remove_target(struct bpf_sampler *sampler, pid_t tgid)
{
	uint32_t key = (uint32_t)tgid;

	if (bpf_map_delete_elem(map_fd(sampler, LOADER_MAP_PROC_CONFIGS), &key))
		return -errno;
	/* Absent unless the budget is on and the target was sampled or throttled. */
	(void)bpf_map_delete_elem(map_fd(sampler, LOADER_MAP_BUDGET_USAGE), &key);
	(void)bpf_map_delete_elem(map_fd(sampler, LOADER_MAP_BUDGET_STRIDES), &key);
	return 0;
}

/* *values = room for one value_size value per possible CPU, as a per-CPU map lookup fills
 * it; returns the number of CPUs. */
static int alloc_per_cpu(size_t value_size, void **values)
{
	int cpus = libbpf_num_possible_cpus();

	if (cpus <= 0)
		return cpus < 0 ? cpus : -EINVAL;
	*values = calloc((size_t)cpus, value_size);
	return *values ? cpus : -ENOMEM;
}

int bpf_sampler_budget_usage(struct bpf_sampler *sampler, pid_t tgid, struct pbp_budget_usage *usage)
{
	uint32_t key = (uint32_t)tgid;
	struct pbp_budget_usage *per_cpu;
	int cpus, err = 0;

	*usage = (struct pbp_budget_usage){ 0 };
	cpus = alloc_per_cpu(sizeof(*per_cpu), (void **)&per_cpu);
	if (cpus < 0)
		return cpus;
	if (bpf_map_lookup_elem(map_fd(sampler, LOADER_MAP_BUDGET_USAGE), &key, per_cpu)) {
		err = errno == ENOENT ? 0 : -errno;
	} else {
		for (int cpu = 0; cpu < cpus; cpu++) {
			usage->ticks += per_cpu[cpu].ticks;
			usage->kept += per_cpu[cpu].kept;
			usage->spent_ns += per_cpu[cpu].spent_ns;
			usage->skipped_ns += per_cpu[cpu].skipped_ns;
		}
	}
	free(per_cpu);
	return err;
}

int bpf_sampler_code_note(struct bpf_sampler *sampler, pid_t tgid, uint64_t code_addr, uint32_t checksum,
			  struct pbp_code_note *note)
{
	struct pbp_code_note_key key = { .code_addr = code_addr, .tgid = (uint32_t)tgid, .checksum = checksum };

	if (bpf_map_lookup_elem(map_fd(sampler, LOADER_MAP_CODE_NOTES), &key, note))
		return -errno;
	return 0;
}

int bpf_sampler_set_budget_stride(struct bpf_sampler *sampler, pid_t tgid, uint32_t stride)
{
	uint32_t key = (uint32_t)tgid;

	if (stride > PBP_BUDGET_MAX_STRIDE)
		stride = PBP_BUDGET_MAX_STRIDE;
	if (stride <= 1) {
		if (bpf_map_delete_elem(map_fd(sampler, LOADER_MAP_BUDGET_STRIDES), &key) && errno != ENOENT)
			return -errno;
		return 0;
	}
	if (bpf_map_update_elem(map_fd(sampler, LOADER_MAP_BUDGET_STRIDES), &key, &stride, BPF_ANY))
		return -errno;
	return 0;
}

static bool process_exists(uint32_t tgid)
{
	return kill((pid_t)tgid, 0) == 0 || errno != ESRCH;
}

/* Deletes the entries of map whose key is a process that no longer exists. */
static size_t drop_gone_processes(const struct bpf_sampler *sampler, enum bpf_loader_map map)
{
	size_t capacity = sampler->loaded.map_entries[map], gone_count = 0, deleted = 0;
	uint32_t *gone = malloc(capacity * sizeof(*gone));
	uint32_t key, next;
	int fd = map_fd(sampler, map), err = bpf_map_get_next_key(fd, NULL, &next);

	if (!gone)
		return 0;
	/* Collected first: deleting while walking could restart the walk. */
	while (!err && gone_count < capacity) {
		key = next;
		if (!process_exists(key))
			gone[gone_count++] = key;
		err = bpf_map_get_next_key(fd, &key, &next);
	}
	for (size_t i = 0; i < gone_count; i++)
		deleted += bpf_map_delete_elem(fd, &gone[i]) == 0;
	free(gone);
	return deleted;
}

size_t bpf_sampler_reconcile_targets(struct bpf_sampler *sampler, uint64_t now_ms)
{
	size_t deleted;

	if (now_ms < sampler->next_reconcile_ms)
		return 0;
	sampler->next_reconcile_ms = now_ms + BPF_SAMPLER_RECONCILE_MS;
	deleted = drop_gone_processes(sampler, LOADER_MAP_PROC_CONFIGS) +
		  drop_gone_processes(sampler, LOADER_MAP_UNWIND_PROCS) +
		  drop_gone_processes(sampler, LOADER_MAP_BUDGET_USAGE) +
		  drop_gone_processes(sampler, LOADER_MAP_BUDGET_STRIDES);
	sampler->reconciled += deleted;
	return deleted;
}

size_t bpf_sampler_target_count(struct bpf_sampler *sampler)
{
	size_t count = 0, capacity = sampler->loaded.map_entries[LOADER_MAP_PROC_CONFIGS];
	uint32_t key, next;
	int fd = map_fd(sampler, LOADER_MAP_PROC_CONFIGS), err = bpf_map_get_next_key(fd, NULL, &next);

	while (!err && count < capacity) {
		count++;
		key = next;
		err = bpf_map_get_next_key(fd, &key, &next);
	}
	return count;
}

uint64_t bpf_sampler_reconciled_count(const struct bpf_sampler *sampler)
{
	return sampler->reconciled;
}

size_t bpf_sampler_ring_bytes(const struct bpf_sampler *sampler)
{
	return sampler->ring_bytes;
}

void bpf_sampler_loader_cost(const struct bpf_sampler *sampler, struct bpf_sampler_loader_cost *cost)
{
	cost->peak_kib = sampler->loaded.loader_peak_kib;
	cost->cpu_s = sampler->loaded.loader_cpu_s;
}

struct unwind_maps *bpf_sampler_unwind_maps(struct bpf_sampler *sampler)
{
	return sampler->unwind_maps;
}

enum ring_publish { RING_PUBLISH_IDLE, RING_PUBLISH_RUNNING, RING_PUBLISH_DONE, RING_PUBLISH_FAILED };

static void *publish_ring_run(void *opaque)
{
	struct bpf_sampler *sampler = opaque;
	int ok = publish_ring(sampler, sampler->ring_fd, sampler->ring_bytes) == 0;

	atomic_store(&sampler->published_ms, clock_monotonic_ms());
	atomic_store(&sampler->publish_state, ok ? RING_PUBLISH_DONE : RING_PUBLISH_FAILED);
	return NULL;
}

/* The publisher's end, waited for: its state then (RING_PUBLISH_IDLE if none ran). */
static int publish_join(struct bpf_sampler *sampler)
{
	int state = atomic_load(&sampler->publish_state);

	if (state != RING_PUBLISH_IDLE)
		pthread_join(sampler->publisher, NULL);
	atomic_store(&sampler->publish_state, RING_PUBLISH_IDLE);
	return state;
}

/* The grown ring's publication failed: BPF still writes to the old one, which stays the ring;
 * the new one, added, stays polled, empty, until the rings are rebuilt. */
static void publish_failed(struct bpf_sampler *sampler, size_t old_bytes)
{
	close(sampler->ring_fd);
	sampler->ring_fd = sampler->retiring_ring_fd;
	sampler->ring_bytes = old_bytes;
	sampler->retiring_ring_fd = -1;
	sampler->ring_grows = false;
}

/*
 * Once records larger than the ring was sized for keep coming, a larger ring takes over: BPF
 * writes to it from the next record, the consumer drains both until the old one can no longer
 * be written to. Nothing is lost on the way; failing, the ring stays as it was.
 */
static void grow_ring(struct bpf_sampler *sampler)
{
	size_t wanted, old_bytes = sampler->ring_bytes;
	int fd;

	if (!sampler->ring_grows || sampler->retiring_ring_fd >= 0 || sampler->records_seen < RING_GROW_MIN_RECORDS)
		return;
	wanted = ring_bytes_for_records(sampler->frequency_hz, sampler->record_bytes_x16 / 16);
	if (wanted <= sampler->ring_bytes)
		return;
	fd = create_ring(wanted);
	if (fd < 0)
		return;
	if (ring_buffer__add(sampler->rings, fd, on_ring_record, sampler)) {
		sampler->ring_grows = false;
		close(fd);
		return;
	}
	sampler->retiring_ring_fd = sampler->ring_fd;
	sampler->ring_fd = fd;
	sampler->ring_bytes = wanted;
	atomic_store(&sampler->publish_state, RING_PUBLISH_RUNNING);
	if (thread_start_without_signals(&sampler->publisher, publish_ring_run, sampler)) {
		atomic_store(&sampler->publish_state, RING_PUBLISH_IDLE);
		if (publish_ring(sampler, fd, wanted)) {
			publish_failed(sampler, old_bytes);
			return;
		}
		sampler->retiring_since_ms = clock_monotonic_ms();
		return;
	}
	sampler->retiring_since_ms = UINT64_MAX; /* set once BPF has the new ring */
	sampler->ring_bytes_before_grow = old_bytes;
}

/* The replaced ring, drained for the last time, is unmapped and freed: the rings are built anew
 * around the current one. Failing, both stay polled and this is tried again. */
static void retire_ring(struct bpf_sampler *sampler)
{
	struct ring_buffer *rings;

	if (sampler->retiring_ring_fd < 0)
		return;
	switch (atomic_load(&sampler->publish_state)) {
	case RING_PUBLISH_RUNNING:
		return;
	case RING_PUBLISH_DONE:
		sampler->retiring_since_ms = atomic_load(&sampler->published_ms);
		publish_join(sampler);
		break;
	case RING_PUBLISH_FAILED:
		publish_join(sampler);
		publish_failed(sampler, sampler->ring_bytes_before_grow);
		return;
	default:
		break;
	}
	if (clock_monotonic_ms() - sampler->retiring_since_ms < RING_RETIRE_MS)
		return;
	/* Cut short, the old ring may still hold records: it is retired at a later drain. */
	ring_buffer__consume(sampler->rings);
	if (sampler->consume_cut)
		return;
	rings = ring_buffer__new(sampler->ring_fd, on_ring_record, sampler, NULL);
	if (!rings)
		return;
	if (ring_buffer__add(rings, map_fd(sampler, LOADER_MAP_PROC_EVENTS), on_ring_proc_event, sampler)) {
		ring_buffer__free(rings);
		return;
	}
	ring_buffer__free(sampler->rings);
	sampler->rings = rings;
	close(sampler->retiring_ring_fd);
	sampler->retiring_ring_fd = -1;
}

int bpf_sampler_consume(struct bpf_sampler *sampler, uint64_t until_ms, bpf_sampler_record_fn on_record,
			bpf_sampler_proc_fn on_proc, void *ctx)
{
	int consumed;

	sampler->on_record = on_record;
	sampler->on_proc = on_proc;
	sampler->callback_ctx = ctx;
	sampler->callback_error = 0;
	sampler->consume_until_ms = until_ms;
	sampler->consume_cut = false;
	sampler->consumed_now = 0;
	consumed = ring_buffer__consume(sampler->rings);
	if (!sampler->consume_cut && consumed >= 0 && !sampler->callback_error) {
		retire_ring(sampler);
		grow_ring(sampler);
	}
	sampler->consumes_cut += sampler->consume_cut;
	sampler->on_record = NULL;
	sampler->on_proc = NULL;
	sampler->callback_ctx = NULL;
	sampler->consume_until_ms = 0;
	if (sampler->callback_error)
		return sampler->callback_error;
	return sampler->consumed_now > INT_MAX ? INT_MAX : (int)sampler->consumed_now;
}

uint64_t bpf_sampler_consumes_cut(const struct bpf_sampler *sampler)
{
	return sampler->consumes_cut;
}

int bpf_sampler_wait(struct bpf_sampler *sampler, int timeout_ms)
{
	struct epoll_event event;
	int ready = epoll_wait(ring_buffer__epoll_fd(sampler->rings), &event, 1, timeout_ms);

	if (ready < 0)
		return errno == EINTR ? 0 : -errno;
	return ready;
}

int bpf_sampler_wait_or_wake(struct bpf_sampler *sampler, int wake_fd, int timeout_ms)
{
	struct pollfd fds[2] = { { .fd = ring_buffer__epoll_fd(sampler->rings), .events = POLLIN },
				 { .fd = wake_fd, .events = POLLIN } };
	int ready;

	if (wake_fd < 0)
		return bpf_sampler_wait(sampler, timeout_ms);
	ready = poll(fds, 2, timeout_ms);
	if (ready < 0)
		return errno == EINTR ? 0 : -errno;
	if (fds[1].revents & POLLIN) {
		uint64_t count;

		if (read(wake_fd, &count, sizeof(count)) < 0 && errno != EAGAIN)
			return -errno;
	}
	return ready;
}

/* totals[key] = the per-CPU values of map[key] summed, for every key below count. */
static int sum_per_cpu(int map, uint32_t count, uint64_t *totals)
{
	uint64_t *per_cpu;
	int cpus, err = 0;

	cpus = alloc_per_cpu(sizeof(*per_cpu), (void **)&per_cpu);
	if (cpus < 0)
		return cpus;
	for (uint32_t key = 0; key < count; key++) {
		totals[key] = 0;
		if (bpf_map_lookup_elem(map, &key, per_cpu)) {
			err = -errno;
			break;
		}
		for (int cpu = 0; cpu < cpus; cpu++)
			totals[key] += per_cpu[cpu];
	}
	free(per_cpu);
	return err;
}

int bpf_sampler_counters(struct bpf_sampler *sampler, uint64_t totals[PBP_CNT_MAX])
{
	return sum_per_cpu(map_fd(sampler, LOADER_MAP_COUNTERS), PBP_CNT_MAX, totals);
}

int bpf_sampler_error_counts(struct bpf_sampler *sampler, uint64_t totals[PBP_ERR_COUNT])
{
	return sum_per_cpu(map_fd(sampler, LOADER_MAP_READ_ERRORS), PBP_ERR_COUNT, totals);
}

#define ERROR_NAME(name, value, text) [PBP_ERR_##name] = text,
static const char *const error_names[] = { PBP_ERROR_LIST(ERROR_NAME) };
#undef ERROR_NAME
_Static_assert(ARRAY_SIZE(error_names) == PBP_ERR_COUNT, "a name for every enum pbp_error");

const char *bpf_sampler_error_name(unsigned code)
{
	return code < ARRAY_SIZE(error_names) ? error_names[code] : NULL;
}

int bpf_sampler_unwind_stop_counts(struct bpf_sampler *sampler, uint64_t totals[UNWIND_STOP_COUNT])
{
	return sum_per_cpu(map_fd(sampler, LOADER_MAP_UNWIND_STOPS), UNWIND_STOP_COUNT, totals);
}

static const char *const unwind_stop_names[] = {
	[UNWIND_STOP_ROOT] = "root",
	[UNWIND_STOP_NO_MAPPING] = "no_mapping",
	[UNWIND_STOP_NO_TABLE] = "no_table",
	[UNWIND_STOP_NO_CFI] = "no_cfi",
	[UNWIND_STOP_UNSUPPORTED] = "unsupported",
	[UNWIND_STOP_READ_FAULT] = "read_fault",
	[UNWIND_STOP_MAX_FRAMES] = "max_frames",
	[UNWIND_STOP_BAD_FRAME] = "bad_frame",
	[UNWIND_STOP_DELETED_FILE] = "deleted_file",
	[UNWIND_STOP_NOT_WALKED] = "not_walked",
};
_Static_assert(ARRAY_SIZE(unwind_stop_names) == UNWIND_STOP_COUNT, "a name for every enum unwind_stop");

const char *bpf_sampler_unwind_stop_name(unsigned cause)
{
	return cause < ARRAY_SIZE(unwind_stop_names) ? unwind_stop_names[cause] : NULL;
}

int bpf_sampler_enable_stats(struct bpf_sampler *sampler)
{
	if (sampler->stats_fd >= 0)
		return 0;
	sampler->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	return sampler->stats_fd < 0 ? -errno : 0;
}

/* The program an event's occurrence runs first: block_bio_queue's or sys_enter's. */
static int event_entry_program(const struct bpf_sampler *sampler)
{
	return prog_fd(sampler, LOADER_PROG_BLOCK_IO) >= 0 ? prog_fd(sampler, LOADER_PROG_BLOCK_IO)
							    : prog_fd(sampler, LOADER_PROG_SYSCALL_ENTER);
}

int bpf_sampler_prog_stats(struct bpf_sampler *sampler, uint64_t *run_time_ns, uint64_t *run_count)
{
	struct bpf_prog_info info;
	uint32_t info_len = sizeof(info);

	memset(&info, 0, sizeof(info));
	int prog = sampler->wall_links		 ? prog_fd(sampler, LOADER_PROG_WALL)
		   : sampler->off_cpu_link >= 0	 ? prog_fd(sampler, LOADER_PROG_OFF_CPU)
		   : sampler->event_links[0] >= 0 ? event_entry_program(sampler)
						  : prog_fd(sampler, LOADER_PROG_SAMPLE);

	if (bpf_obj_get_info_by_fd(prog, &info, &info_len))
		return -errno;
	*run_time_ns = info.run_time_ns;
	*run_count = info.run_cnt;
	/* A call weighed runs the exit program too: its time is the call's, not a run of its own. */
	if (sampler->event_links[1] >= 0) {
		memset(&info, 0, sizeof(info));
		info_len = sizeof(info);
		if (bpf_obj_get_info_by_fd(prog_fd(sampler, LOADER_PROG_SYSCALL_EXIT), &info, &info_len))
			return -errno;
		*run_time_ns += info.run_time_ns;
	}
	return 0;
}

int bpf_sampler_open_kernel_names(struct bpf_sampler *sampler)
{
	if (sampler->kernel_names)
		return 0;
	if (prog_fd(sampler, LOADER_PROG_KSYM_NAMES) < 0)
		return -ENOTSUP;
	return kernel_names_open(&sampler->kernel_names, prog_fd(sampler, LOADER_PROG_KSYM_NAMES),
				 map_fd(sampler, LOADER_MAP_KSYM_ADDRS));
}

int bpf_sampler_name_kernel_addresses(struct bpf_sampler *sampler, const uint64_t *addresses, size_t count,
				      kernel_name_fn found, void *context)
{
	if (!sampler->kernel_names)
		return -ENOTCONN;
	return kernel_names_lookup(sampler->kernel_names, addresses, count, found, context);
}

void bpf_sampler_close(struct bpf_sampler *sampler)
{
	if (!sampler)
		return;
	stop_wall(sampler);
	unwind_maps_free(sampler->unwind_maps);
	for (int cpu = 0; cpu < sampler->perf_count; cpu++)
		close_link(&sampler->perf_links[cpu]);
	free(sampler->perf_links);
	close_link(&sampler->exec_link);
	close_link(&sampler->exit_link);
	close_link(&sampler->fork_link);
	close_link(&sampler->off_cpu_link);
	for (size_t i = 0; i < sizeof(sampler->event_links) / sizeof(sampler->event_links[0]); i++)
		close_link(&sampler->event_links[i]);
	kernel_names_close(sampler->kernel_names);
	/* the publisher uses the events map, the .bss and the ring's descriptor */
	publish_join(sampler);
	ring_buffer__free(sampler->rings);
	if (sampler->ring_fd >= 0)
		close(sampler->ring_fd);
	if (sampler->retiring_ring_fd >= 0)
		close(sampler->retiring_ring_fd);
	if (sampler->stats_fd >= 0)
		close(sampler->stats_fd);
	bpf_loader_unmap_bss(sampler->bss);
	bpf_loaded_close(&sampler->loaded);
	free(sampler);
}
