// SPDX-License-Identifier: MIT
#include "sampler/bpf_loader.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "pyperf.skel.h"
#include "util/errbuf.h"
#include "util/heap_warm.h"

/* The heap loading fills at its peak (libbpf's two copies of the kernel's BTF, the BPF objects'
 * user pages), warmed in one go before it starts (util/heap_warm.c). 12 MiB: loading took as few
 * page faults after it as after 16 MiB (800, against 3,200 unwarmed). It is the loader child's
 * heap: the profiler's own peak does not see it. */
#define LOAD_HEAP_BYTES (12u << 20)

#define LOADER_FD_COUNT (LOADER_MAP_COUNT + LOADER_PROG_COUNT)

/* The child's one message: its answer, then the descriptors of what it loaded in order (the
 * maps, then each program loaded). */
struct loader_reply {
	int32_t err;                            /* 0, or the negative errno loading failed with */
	uint32_t map_entries[LOADER_MAP_COUNT];
	uint8_t prog_loaded[LOADER_PROG_COUNT];
	char message[ERRBUF_SIZE];              /* err's one line */
};

/* libbpf's last warning, kept for the error message instead of printed. */
static char last_libbpf_message[1024];

static int keep_libbpf_message(enum libbpf_print_level level, const char *format, va_list args)
{
	if (getenv("PYBPFPROF_LIBBPF_DEBUG"))
		return vfprintf(stderr, format, args);
	if (level != LIBBPF_DEBUG)
		vsnprintf(last_libbpf_message, sizeof(last_libbpf_message), format, args);
	return 0;
}

static void set_read_only_data(struct pyperf_bpf *skel, const struct bpf_load_spec *spec)
{
	skel->rodata->kernel_stacks = spec->kernel_stacks;
	skel->rodata->watch_exec = spec->watch_exec;
	skel->rodata->follow_forks = spec->follow_forks;
	skel->rodata->native_stacks = spec->native_stacks;
	skel->rodata->stack_copies = spec->native_stacks;
	skel->rodata->gil_only = spec->gil_only;
	skel->rodata->memory_deltas = spec->memory_deltas;
	skel->rodata->exceptions_only = spec->exceptions_only;
	skel->rodata->page_bytes = (uint64_t)sysconf(_SC_PAGESIZE);
	skel->rodata->time_samples = spec->time_samples;
	skel->rodata->overhead_budget = spec->overhead_budget;
	skel->rodata->off_cpu_min_ns = spec->off_cpu_min_ns;
	skel->rodata->tracepoint_period = spec->tracepoint_period ? spec->tracepoint_period : 1;
	if (spec->syscalls) {
		memcpy((void *)skel->rodata->syscall_mask, spec->syscalls->mask, sizeof(spec->syscalls->mask));
		memcpy((void *)skel->rodata->syscall_mask_ia32, spec->syscalls->mask_ia32,
		       sizeof(spec->syscalls->mask_ia32));
		skel->rodata->syscall_weight = spec->syscalls->weight;
	}
}

static void skeleton_maps(struct pyperf_bpf *skel, struct bpf_map *maps[LOADER_MAP_COUNT])
{
	maps[LOADER_MAP_EVENTS] = skel->maps.events;
	maps[LOADER_MAP_PROC_CONFIGS] = skel->maps.proc_configs;
	maps[LOADER_MAP_BUDGET_USAGE] = skel->maps.budget_usage;
	maps[LOADER_MAP_BUDGET_STRIDES] = skel->maps.budget_strides;
	maps[LOADER_MAP_UNWIND_PROCS] = skel->maps.unwind_procs;
	maps[LOADER_MAP_UNWIND_ROWS] = skel->maps.unwind_rows;
	maps[LOADER_MAP_UNWIND_TABLES] = skel->maps.unwind_tables;
	maps[LOADER_MAP_PROC_EVENTS] = skel->maps.proc_events;
	maps[LOADER_MAP_COUNTERS] = skel->maps.counters;
	maps[LOADER_MAP_READ_ERRORS] = skel->maps.read_errors;
	maps[LOADER_MAP_UNWIND_STOPS] = skel->maps.unwind_stops;
	maps[LOADER_MAP_KSYM_ADDRS] = skel->maps.ksym_addrs;
	maps[LOADER_MAP_CODE_NOTES] = skel->maps.code_notes;
	maps[LOADER_MAP_BSS] = skel->maps.bss;
}

static void skeleton_programs(struct pyperf_bpf *skel, struct bpf_program *progs[LOADER_PROG_COUNT])
{
	progs[LOADER_PROG_SAMPLE] = skel->progs.pbp_sample;
	progs[LOADER_PROG_EXEC] = skel->progs.pbp_exec;
	progs[LOADER_PROG_EXIT] = skel->progs.pbp_exit;
	progs[LOADER_PROG_FORK] = skel->progs.pbp_fork;
	progs[LOADER_PROG_OFF_CPU] = skel->progs.pbp_off_cpu;
	progs[LOADER_PROG_SYSCALL_ENTER] = skel->progs.pbp_syscall_enter;
	progs[LOADER_PROG_SYSCALL_EXIT] = skel->progs.pbp_syscall_exit;
	progs[LOADER_PROG_BLOCK_IO] = skel->progs.pbp_block_io;
	progs[LOADER_PROG_WALL] = skel->progs.pbp_wall;
	progs[LOADER_PROG_KSYM_NAMES] = skel->progs.pbp_ksym_names;
}

static int send_reply(int sock, const struct loader_reply *reply, const int *fds, size_t fd_count)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * LOADER_FD_COUNT)];
		struct cmsghdr align;
	} control;
	struct iovec part = { (void *)reply, sizeof(*reply) };
	struct msghdr message = { .msg_iov = &part, .msg_iovlen = 1 };

	if (fd_count) {
		struct cmsghdr *cmsg;

		memset(&control, 0, sizeof(control));
		message.msg_control = control.buf;
		message.msg_controllen = CMSG_SPACE(sizeof(int) * fd_count);
		cmsg = CMSG_FIRSTHDR(&message);
		cmsg->cmsg_level = SOL_SOCKET;
		cmsg->cmsg_type = SCM_RIGHTS;
		cmsg->cmsg_len = CMSG_LEN(sizeof(int) * fd_count);
		memcpy(CMSG_DATA(cmsg), fds, sizeof(int) * fd_count);
	}
	return sendmsg(sock, &message, MSG_NOSIGNAL) == (ssize_t)sizeof(*reply) ? 0 : -errno;
}

/* Opens the object and loads the programs spec asks for into *skel (destroyed on failure);
 * their handles in progs. 0 or a negative errno, libbpf's last message in last_libbpf_message. */
static int open_and_load(const struct bpf_load_spec *spec, struct pyperf_bpf **skel,
			 struct bpf_program *progs[LOADER_PROG_COUNT])
{
	int err;

	*skel = pyperf_bpf__open();
	if (!*skel)
		return errno ? -errno : -EINVAL;
	set_read_only_data(*skel, spec);
	skeleton_programs(*skel, progs);
	/* Each mode loads only the programs it runs: verifying the others would only cost time. */
	for (size_t i = 0; i < LOADER_PROG_COUNT; i++)
		bpf_program__set_autoload(progs[i], spec->load[i]);
	err = pyperf_bpf__load(*skel);
	if (err) {
		pyperf_bpf__destroy(*skel);
		*skel = NULL;
	}
	return err;
}

/* The child's work: load, answer on sock. Its exit status is 0 once the answer is sent. */
static int load_and_send(const struct bpf_load_spec *spec, int sock)
{
	struct loader_reply reply = { 0 };
	struct bpf_map *maps[LOADER_MAP_COUNT];
	struct bpf_program *progs[LOADER_PROG_COUNT];
	int fds[LOADER_FD_COUNT];
	size_t fd_count = 0;
	struct bpf_load_spec without_names = *spec;
	struct pyperf_bpf *skel;
	int err;

	heap_warm(LOAD_HEAP_BYTES);
	err = open_and_load(spec, &skel, progs);
	if (err && spec->load[LOADER_PROG_KSYM_NAMES]) {
		/* Kernel frames can go by address: a kernel that refuses only the namer still samples. */
		without_names.load[LOADER_PROG_KSYM_NAMES] = false;
		if (open_and_load(&without_names, &skel, progs) == 0) {
			spec = &without_names;
			err = 0;
		}
	}
	if (err) {
		reply.err = errbuf_format(reply.message, sizeof(reply.message), err, "loading the BPF programs: %s (%s)",
					  strerror(-err), last_libbpf_message);
		return send_reply(sock, &reply, NULL, 0);
	}
	skeleton_maps(skel, maps);
	for (size_t i = 0; i < LOADER_MAP_COUNT; i++) {
		reply.map_entries[i] = bpf_map__max_entries(maps[i]);
		fds[fd_count++] = bpf_map__fd(maps[i]);
	}
	for (size_t i = 0; i < LOADER_PROG_COUNT; i++)
		if (spec->load[i]) {
			reply.prog_loaded[i] = 1;
			fds[fd_count++] = bpf_program__fd(progs[i]);
		}
	/* Not destroyed: the process ends now, and the kernel keeps what the profiler holds. */
	return send_reply(sock, &reply, fds, fd_count);
}

static void run_child(const struct bpf_load_spec *spec, int sock)
{
	/* The profiler's handlers are not ours: a ^C or the profiler's end ends the load. */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	_exit(load_and_send(spec, sock) ? 1 : 0);
}

/* Takes the reply's descriptors into loaded: the maps in order, then each program loaded. */
static int take_descriptors(const struct loader_reply *reply, const int *fds, size_t fd_count,
			    struct bpf_loaded *loaded)
{
	size_t next = 0;

	for (size_t i = 0; i < LOADER_MAP_COUNT; i++) {
		if (next >= fd_count)
			return -EPROTO;
		loaded->map_fds[i] = fds[next++];
		loaded->map_entries[i] = reply->map_entries[i];
	}
	for (size_t i = 0; i < LOADER_PROG_COUNT; i++)
		if (reply->prog_loaded[i]) {
			if (next >= fd_count)
				return -EPROTO;
			loaded->prog_fds[i] = fds[next++];
		}
	return next == fd_count ? 0 : -EPROTO;
}

/* The child's one message: 0 with *reply and the descriptors in fds (*fd_count of them), -EPIPE
 * if it ended without one, or a negative errno. */
static int receive_reply(int sock, struct loader_reply *reply, int *fds, size_t *fd_count)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * LOADER_FD_COUNT)];
		struct cmsghdr align;
	} control;
	struct iovec part = { reply, sizeof(*reply) };
	struct msghdr message = { .msg_iov = &part, .msg_iovlen = 1, .msg_control = control.buf,
				  .msg_controllen = sizeof(control.buf) };
	ssize_t got;

	*fd_count = 0;
	do
		got = recvmsg(sock, &message, MSG_CMSG_CLOEXEC);
	while (got < 0 && errno == EINTR);
	if (got < 0)
		return -errno;
	for (struct cmsghdr *cmsg = CMSG_FIRSTHDR(&message); cmsg; cmsg = CMSG_NXTHDR(&message, cmsg))
		if (cmsg->cmsg_level == SOL_SOCKET && cmsg->cmsg_type == SCM_RIGHTS) {
			size_t count = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);

			memcpy(fds + *fd_count, CMSG_DATA(cmsg), count * sizeof(int));
			*fd_count += count;
		}
	if (got == 0)
		return -EPIPE;
	if ((size_t)got != sizeof(*reply) || (message.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
		return -EPROTO;
	reply->message[sizeof(reply->message) - 1] = '\0';
	return 0;
}

/* How the child ended, in words, for a load that got no answer. */
static int ended_error(pid_t pid, int status, char *errbuf, size_t errlen)
{
	if (WIFSIGNALED(status))
		return errbuf_format(errbuf, errlen, -ECHILD,
				     "the BPF loader (pid %d) was killed by signal %d (%s) before handing over the programs",
				     (int)pid, WTERMSIG(status), strsignal(WTERMSIG(status)));
	return errbuf_format(errbuf, errlen, -ECHILD,
			     "the BPF loader (pid %d) exited with status %d before handing over the programs", (int)pid,
			     WEXITSTATUS(status));
}

/* Waits for the child, noting its peak memory and CPU. */
static int reap(pid_t pid, int *status, struct bpf_loaded *loaded)
{
	struct rusage usage;
	pid_t got;

	do
		got = wait4(pid, status, 0, &usage);
	while (got < 0 && errno == EINTR);
	if (got < 0)
		return -errno;
	loaded->loader_peak_kib = usage.ru_maxrss;
	loaded->loader_cpu_s = (double)usage.ru_utime.tv_sec + (double)usage.ru_stime.tv_sec +
			       ((double)usage.ru_utime.tv_usec + (double)usage.ru_stime.tv_usec) / 1e6;
	return 0;
}

static void init_loaded(struct bpf_loaded *loaded)
{
	memset(loaded, 0, sizeof(*loaded));
	for (size_t i = 0; i < LOADER_MAP_COUNT; i++)
		loaded->map_fds[i] = -1;
	for (size_t i = 0; i < LOADER_PROG_COUNT; i++)
		loaded->prog_fds[i] = -1;
}

int bpf_loader_load(const struct bpf_load_spec *spec, struct bpf_loaded *loaded, char *errbuf, size_t errlen)
{
	struct loader_reply reply;
	int ends[2], fds[LOADER_FD_COUNT], status = 0, err, reap_err;
	size_t fd_count = 0;
	pid_t pid;

	init_loaded(loaded);
	libbpf_set_print(keep_libbpf_message);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends))
		return errbuf_format(errbuf, errlen, -errno, "a socket for the BPF loader: %s", strerror(errno));
	fflush(NULL); /* nothing buffered is written twice */
	pid = fork();
	if (pid < 0) {
		err = -errno;
		close(ends[0]);
		close(ends[1]);
		return errbuf_format(errbuf, errlen, err, "starting the BPF loader: %s", strerror(-err));
	}
	if (pid == 0) {
		close(ends[0]);
		run_child(spec, ends[1]);
	}
	close(ends[1]);
	err = receive_reply(ends[0], &reply, fds, &fd_count);
	close(ends[0]);
	reap_err = reap(pid, &status, loaded);
	if (!err && !reply.err)
		err = take_descriptors(&reply, fds, fd_count, loaded);
	if (err || reply.err) {
		for (size_t i = 0; i < fd_count; i++)
			close(fds[i]);
		init_loaded(loaded);
	}
	if (err == -EPIPE && !reap_err)
		return ended_error(pid, status, errbuf, errlen);
	if (err)
		return errbuf_format(errbuf, errlen, err, "receiving the BPF programs from their loader: %s",
				     strerror(-err));
	if (reply.err)
		return errbuf_format(errbuf, errlen, reply.err < 0 ? reply.err : -EINVAL, "%s", reply.message);
	return 0;
}

void bpf_loaded_close(struct bpf_loaded *loaded)
{
	for (size_t i = 0; i < LOADER_MAP_COUNT; i++) {
		if (loaded->map_fds[i] >= 0)
			close(loaded->map_fds[i]);
		loaded->map_fds[i] = -1;
	}
	for (size_t i = 0; i < LOADER_PROG_COUNT; i++) {
		if (loaded->prog_fds[i] >= 0)
			close(loaded->prog_fds[i]);
		loaded->prog_fds[i] = -1;
	}
}

static size_t bss_bytes(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (sizeof(struct pyperf_bpf__bss) + page - 1) / page * page;
}

void *bpf_loader_map_bss(const struct bpf_loaded *loaded)
{
	void *bss = mmap(NULL, bss_bytes(), PROT_READ | PROT_WRITE, MAP_SHARED, loaded->map_fds[LOADER_MAP_BSS], 0);

	return bss == MAP_FAILED ? NULL : bss;
}

void bpf_loader_unmap_bss(void *bss)
{
	if (bss)
		munmap(bss, bss_bytes());
}
