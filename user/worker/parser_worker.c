// SPDX-License-Identifier: MIT
#include "worker/parser_worker.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <gelf.h>
#include <libelf.h>
#include <linux/capability.h>
#include <malloc.h>
#include <seccomp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "parser/parser_protocol.h"
#include "elf/debug_file.h"
#include "elf/elf_file.h"
#include "elf/minidebuginfo.h"
#include "python/py_runtime_file.h"
#include "util/clock.h"
#include "worker/unwind_build.h"

/* Exit statuses: what root's summary may tell apart from a crash. */
#define WORKER_EXIT_DONE 0           /* root closed the socket */
#define WORKER_EXIT_SETUP 70         /* the sandbox could not be set up: nothing was read */
#define WORKER_EXIT_OUT_OF_MEMORY 71 /* a request ran out of memory: a fresh worker takes the next */

/* Descriptors: 0-2 (/dev/null), the socket, the files of the request; a few to spare. */
#define WORKER_MAX_FILES (16 + PARSER_MAX_BATCH_FILES)

struct worker_options {
	uid_t uid;
	uint64_t memory_bytes;
	bool selftest;
};

static int parse_options(int argc, char **argv, struct worker_options *options)
{
	*options = (struct worker_options){ 0 };
	for (int i = 2; i < argc; i++) {
		char *end;

		if (strcmp(argv[i], "--selftest") == 0) {
			options->selftest = true;
		} else if (strcmp(argv[i], "--uid") == 0 && i + 1 < argc) {
			unsigned long value = strtoul(argv[++i], &end, 10);

			if (*end || !value || value >= UINT32_MAX)
				return -EINVAL;
			options->uid = (uid_t)value;
		} else if (strcmp(argv[i], "--memory-mib") == 0 && i + 1 < argc) {
			unsigned long value = strtoul(argv[++i], &end, 10);

			if (*end || value < 16 || value > (1ul << 20))
				return -EINVAL;
			options->memory_bytes = (uint64_t)value << 20;
		} else {
			return -EINVAL;
		}
	}
	return options->uid && options->memory_bytes ? 0 : -EINVAL;
}

static int set_limit(int resource, uint64_t value)
{
	struct rlimit limit = { .rlim_cur = value, .rlim_max = value };

	return setrlimit(resource, &limit) ? -errno : 0;
}

/* Its root becomes an empty directory that no longer exists: nothing can be created in it,
 * and no path leads anywhere. Made in /run (root's) where there is one, else in /tmp. */
static int enter_empty_root(void)
{
	static const char *const templates[] = { "/run/pybpfprof-parser.XXXXXX", "/tmp/pybpfprof-parser.XXXXXX" };
	char dir[64];
	bool made = false;

	for (size_t i = 0; i < sizeof(templates) / sizeof(templates[0]) && !made; i++) {
		snprintf(dir, sizeof(dir), "%s", templates[i]);
		made = mkdtemp(dir) != NULL;
	}
	if (!made || chdir(dir))
		return -errno;
	if (rmdir(dir) || chroot(".") || chdir("/"))
		return -errno;
	return 0;
}

/* Every capability out of the bounding set (until the kernel knows no more), then root's
 * identity for options->uid, which leaves permitted and effective empty; inheritable too. */
static int drop_privileges(const struct worker_options *options)
{
	struct __user_cap_header_struct header = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = { { 0 } };
	gid_t gid = (gid_t)options->uid;

	for (int cap = 0; cap < 64; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) && errno == EINVAL)
			break;
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) && errno != EINVAL)
		return -errno;
	if (setgroups(0, NULL) || setresgid(gid, gid, gid) || setresuid(options->uid, options->uid, options->uid))
		return -errno;
	if (syscall(SYS_capset, &header, data))
		return -errno;
	/* A process of the same uid could ptrace it: none exists, and it is not dumpable either. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0))
		return -errno;
	/* Cleared by the change of identity: set after it. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) || getppid() == 1)
		return -ECHILD;
	return 0;
}

/* What the worker may do once it reads a request; anything else kills it. */
static int install_seccomp(void)
{
	scmp_filter_ctx filter = seccomp_init(SCMP_ACT_KILL_PROCESS);
	static const int plain[] = {
		SCMP_SYS(read),	  SCMP_SYS(pread64),	   SCMP_SYS(lseek),	 SCMP_SYS(fstat),
		SCMP_SYS(munmap), SCMP_SYS(mremap),	   SCMP_SYS(brk),	 SCMP_SYS(madvise),
		SCMP_SYS(close),  SCMP_SYS(clock_gettime), SCMP_SYS(exit),	 SCMP_SYS(exit_group),
		SCMP_SYS(rt_sigreturn),
		/* glibc's qsort sizes its buffer by the machine's memory (what any user may read) */
		SCMP_SYS(sysinfo),
	};
	int err = filter ? 0 : -ENOMEM;

	for (size_t i = 0; !err && i < sizeof(plain) / sizeof(plain[0]); i++)
		err = seccomp_rule_add(filter, SCMP_ACT_ALLOW, plain[i], 0);
	/* glibc's fstat is fstatat(fd, "", AT_EMPTY_PATH): a descriptor, never a path */
	if (!err)
		err = seccomp_rule_add(filter, SCMP_ACT_ALLOW, SCMP_SYS(newfstatat), 1,
				       SCMP_A3(SCMP_CMP_EQ, AT_EMPTY_PATH, 0));
	/* memory, never executable */
	if (!err)
		err = seccomp_rule_add(filter, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1,
				       SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	if (!err)
		err = seccomp_rule_add(filter, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), 1,
				       SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	/* libelf asks how a descriptor was opened: F_GETFL and F_GETFD only, nothing that changes one */
	if (!err)
		err = seccomp_rule_add(filter, SCMP_ACT_ALLOW, SCMP_SYS(fcntl), 1, SCMP_A1(SCMP_CMP_EQ, F_GETFL, 0));
	if (!err)
		err = seccomp_rule_add(filter, SCMP_ACT_ALLOW, SCMP_SYS(fcntl), 1, SCMP_A1(SCMP_CMP_EQ, F_GETFD, 0));
	/* libdw asks where a file with DWARF lies (readlink of /proc/self/fd/N, to find split DWARF
	 * beside it): the worker has no file system to answer from, and says so */
	if (!err)
		err = seccomp_rule_add(filter, SCMP_ACT_ERRNO(ENOENT), SCMP_SYS(readlink), 0);
	if (!err)
		err = seccomp_rule_add(filter, SCMP_ACT_ERRNO(ENOENT), SCMP_SYS(readlinkat), 0);
	/* requests and answers on its socket only */
	if (!err)
		err = seccomp_rule_add(filter, SCMP_ACT_ALLOW, SCMP_SYS(recvmsg), 1,
				       SCMP_A0(SCMP_CMP_EQ, PARSER_WORKER_SOCKET_FD, 0));
	if (!err)
		err = seccomp_rule_add(filter, SCMP_ACT_ALLOW, SCMP_SYS(sendmsg), 1,
				       SCMP_A0(SCMP_CMP_EQ, PARSER_WORKER_SOCKET_FD, 0));
	/* the wait for the next request: timed while the heap is still to be given back */
	if (!err)
		err = seccomp_rule_add(filter, SCMP_ACT_ALLOW, SCMP_SYS(setsockopt), 3,
				       SCMP_A0(SCMP_CMP_EQ, PARSER_WORKER_SOCKET_FD, 0),
				       SCMP_A1(SCMP_CMP_EQ, SOL_SOCKET, 0), SCMP_A2(SCMP_CMP_EQ, SO_RCVTIMEO, 0));
	if (!err && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		err = -errno;
	if (!err)
		err = seccomp_load(filter);
	if (filter)
		seccomp_release(filter);
	return err;
}

static int enter_sandbox(const struct worker_options *options)
{
	int type = 0;
	socklen_t len = sizeof(type);
	int err;

	/* ps and top tell it from the profiler */
	prctl(PR_SET_NAME, "pybpfprof-parse", 0, 0, 0);
	/* Whatever root left open (it opens everything close-on-exec, but a library may not). */
	if (syscall(SYS_close_range, PARSER_WORKER_SOCKET_FD + 1, ~0u, 0))
		return -errno;
	if (getsockopt(PARSER_WORKER_SOCKET_FD, SOL_SOCKET, SO_TYPE, &type, &len) || type != SOCK_STREAM)
		return -EBADF;
	if (set_limit(RLIMIT_CORE, 0) || set_limit(RLIMIT_FSIZE, 0) || set_limit(RLIMIT_NOFILE, WORKER_MAX_FILES))
		return -errno;
	err = enter_empty_root();
	if (!err)
		err = drop_privileges(options);
	if (err)
		return err;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	if (set_limit(RLIMIT_AS, options->memory_bytes))
		return -errno;
	return install_seccomp();
}

/* All of parts, or false (root is gone, or its socket shut). */
static bool send_all(struct iovec *parts, size_t count)
{
	struct msghdr message = { .msg_iov = parts, .msg_iovlen = count };

	while (message.msg_iovlen && !message.msg_iov->iov_len) {
		message.msg_iov++;
		message.msg_iovlen--;
	}
	while (message.msg_iovlen) {
		ssize_t sent = sendmsg(PARSER_WORKER_SOCKET_FD, &message, MSG_NOSIGNAL);

		if (sent < 0 && errno == EINTR)
			continue;
		if (sent <= 0)
			return false;
		while (message.msg_iovlen && (size_t)sent >= message.msg_iov->iov_len) {
			sent -= (ssize_t)message.msg_iov->iov_len;
			message.msg_iov++;
			message.msg_iovlen--;
		}
		if (message.msg_iovlen) {
			message.msg_iov->iov_base = (char *)message.msg_iov->iov_base + sent;
			message.msg_iov->iov_len -= (size_t)sent;
		}
	}
	return true;
}

/* The reply head, then the payload in two parts (a table's head and its rows, sent where they
 * lie: no copy); nothing but the head when status is an error. */
static bool answer_parts(uint32_t id, int status, const void *first, size_t first_len, const void *second,
			 size_t second_len)
{
	struct parser_reply_head head = { .magic = PARSER_PROTOCOL_MAGIC, .id = id, .status = status,
					  .length = status ? 0 : (uint32_t)(first_len + second_len) };
	struct iovec parts[3] = { { &head, sizeof(head) },
				  { (void *)first, status ? 0 : first_len },
				  { (void *)second, status ? 0 : second_len } };

	return send_all(parts, 3);
}

static bool answer(uint32_t id, int status, const void *payload, size_t len)
{
	return answer_parts(id, status, payload, len, NULL, 0);
}

enum received {
	RECEIVED_REQUEST,
	RECEIVED_NOTHING, /* the wait timed out (arm_idle_wait) */
	RECEIVED_END,     /* EOF, or a malformed message */
};

/* How long the worker waits for a request before it counts as idle. */
#define IDLE_AFTER_MS 1000

/* The wait for the next request ends after IDLE_AFTER_MS (armed), or never. */
static void arm_idle_wait(bool armed)
{
	struct timeval wait = { .tv_sec = armed ? IDLE_AFTER_MS / 1000 : 0,
				.tv_usec = armed ? IDLE_AFTER_MS % 1000 * 1000 : 0 };

	/* best effort: unarmed, the heap is only given back later */
	setsockopt(PARSER_WORKER_SOCKET_FD, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof(wait));
}

/* One request and the descriptors sent with it (at most PARSER_MAX_BATCH_FILES; *count of them
 * into fds); the end at EOF or on a malformed message (what came is closed). */
static enum received receive_request(struct parser_request *request, int *fds, size_t *count)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * PARSER_MAX_BATCH_FILES)];
		struct cmsghdr align;
	} control;
	struct iovec part = { request, sizeof(*request) };
	struct msghdr message = { .msg_iov = &part, .msg_iovlen = 1, .msg_control = control.buf,
				  .msg_controllen = sizeof(control.buf) };
	struct cmsghdr *cmsg;
	ssize_t got;

	*count = 0;
	do
		got = recvmsg(PARSER_WORKER_SOCKET_FD, &message, MSG_WAITALL | MSG_CMSG_CLOEXEC);
	while (got < 0 && errno == EINTR);
	if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return RECEIVED_NOTHING;
	cmsg = got > 0 ? CMSG_FIRSTHDR(&message) : NULL;
	if (cmsg && cmsg->cmsg_level == SOL_SOCKET && cmsg->cmsg_type == SCM_RIGHTS &&
	    cmsg->cmsg_len >= CMSG_LEN(sizeof(int))) {
		*count = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		memcpy(fds, CMSG_DATA(cmsg), *count * sizeof(int));
	}
	if (got == (ssize_t)sizeof(*request) && request->magic == PARSER_PROTOCOL_MAGIC &&
	    !(message.msg_flags & MSG_CTRUNC))
		return RECEIVED_REQUEST;
	for (size_t i = 0; i < *count; i++)
		close(fds[i]);
	*count = 0;
	return RECEIVED_END;
}

/* The payload being built: the head filled by the kind, then build_symbols_payload. */
struct symbols_answer {
	struct parser_symbols_head head;
	struct elf_load_segment segments[PARSER_MAX_SEGMENTS];
	size_t segment_count;
	struct elf_function *functions;
	size_t function_count;
};

/*
 * C++ names as their source reads them (libstdc++'s demangler, the Itanium C++ ABI's), made
 * here: a mangled name is the target's, and a 300-byte one can expand to gigabytes (each back
 * reference doubling what came before), which costs this worker its memory limit or its time
 * and the file its names, never root. A longer result than this keeps the mangled name.
 */
#define WORKER_DEMANGLED_MAX 4096
/* Demangling a file's names stops after this long (ms; the rest stay mangled): a few us a name,
 * a C++ library of a million names would otherwise overrun the request's time budget, and lose
 * all its names. Looked at every WORKER_DEMANGLE_CLOCK_EVERY names. */
#define WORKER_DEMANGLE_MS 1000
#define WORKER_DEMANGLE_CLOCK_EVERY 256
char *__cxa_demangle(const char *mangled_name, char *output_buffer, size_t *length, int *status);

/* The functions' names as shown, by function: a demangled copy, or NULL for the name itself. */
struct shown_names {
	char **demangled;
};

static void shown_names_free(struct shown_names *shown, size_t count)
{
	if (!shown->demangled)
		return;
	for (size_t i = 0; i < count; i++)
		if (!i || shown->demangled[i] != shown->demangled[i - 1])
			free(shown->demangled[i]);
	free(shown->demangled);
	shown->demangled = NULL;
}

/* Each _Z name demangled (neighbours sharing a name share its result); 0 or -ENOMEM. A name the
 * demangler refuses, or that reads longer than WORKER_DEMANGLED_MAX, stays as it is. */
static int demangle_functions(const struct elf_function *functions, size_t count, struct shown_names *shown)
{
	uint64_t stop_ms = clock_monotonic_ms() + WORKER_DEMANGLE_MS;

	shown->demangled = calloc(count ? count : 1, sizeof(*shown->demangled));
	if (!shown->demangled)
		return -ENOMEM;
	for (size_t i = 0; i < count; i++) {
		char *demangled;
		int status = -1;

		if (i % WORKER_DEMANGLE_CLOCK_EVERY == 0 && clock_monotonic_ms() > stop_ms)
			break;
		if (i && functions[i].name == functions[i - 1].name) {
			shown->demangled[i] = shown->demangled[i - 1];
			continue;
		}
		if (strncmp(functions[i].name, "_Z", 2) != 0)
			continue;
		demangled = __cxa_demangle(functions[i].name, NULL, NULL, &status);
		if (status == 0 && demangled && strlen(demangled) <= WORKER_DEMANGLED_MAX)
			shown->demangled[i] = demangled;
		else
			free(demangled);
	}
	return 0;
}

static const char *shown_name(const struct elf_function *functions, const struct shown_names *shown, size_t i)
{
	return shown && shown->demangled && shown->demangled[i] ? shown->demangled[i] : functions[i].name;
}

/* Bytes of the names the functions use, each once where neighbours share a name. */
static uint64_t names_bytes(const struct elf_function *functions, size_t count, const struct shown_names *shown)
{
	uint64_t total = 0;

	for (size_t i = 0; i < count; i++)
		if (!i || functions[i].name != functions[i - 1].name)
			total += strlen(shown_name(functions, shown, i)) + 1;
	return total;
}

/* The answer laid out as parser_protocol.h says, its names as shown (NULL: as the file has them),
 * at most budget bytes. 0, -E2BIG, -ENOMEM. */
static int build_symbols_payload(struct symbols_answer *answer, const struct shown_names *shown, uint32_t budget,
				 char **out, size_t *out_len)
{
	uint64_t names_len = names_bytes(answer->functions, answer->function_count, shown);
	uint64_t total = sizeof(answer->head) + answer->segment_count * sizeof(struct parser_segment) +
			 (uint64_t)answer->function_count * sizeof(struct parser_function) + names_len;
	struct parser_segment *segments;
	struct parser_function *functions;
	char *names, *payload;
	uint32_t name_at = 0;

	if (total > budget)
		return -E2BIG;
	payload = malloc(total);
	if (!payload)
		return -ENOMEM;
	answer->head.segment_count = (uint32_t)answer->segment_count;
	answer->head.function_count = (uint32_t)answer->function_count;
	answer->head.names_len = (uint32_t)names_len;
	memcpy(payload, &answer->head, sizeof(answer->head));
	segments = (struct parser_segment *)(payload + sizeof(answer->head));
	for (size_t i = 0; i < answer->segment_count; i++)
		segments[i] = (struct parser_segment){ answer->segments[i].vaddr, answer->segments[i].offset,
						       answer->segments[i].filesz };
	functions = (struct parser_function *)(segments + answer->segment_count);
	names = (char *)(functions + answer->function_count);
	for (size_t i = 0; i < answer->function_count; i++) {
		const struct elf_function *function = &answer->functions[i];

		if (i && function->name == answer->functions[i - 1].name) {
			functions[i] = functions[i - 1];
		} else {
			const char *name = shown_name(answer->functions, shown, i);
			size_t len = strlen(name) + 1;

			memcpy(names + name_at, name, len);
			functions[i] = (struct parser_function){ .name_offset = name_at };
			name_at += (uint32_t)len;
		}
		functions[i].addr = function->addr;
		functions[i].size = function->size;
	}
	*out = payload;
	*out_len = (size_t)total;
	return 0;
}

/* The answer with its C++ names demangled; where those do not fit the budget (they read
 * longer), with the names as the file has them. */
static int build_shown_symbols_payload(struct symbols_answer *answer, uint32_t budget, char **out, size_t *out_len)
{
	struct shown_names shown = { NULL };
	int err = demangle_functions(answer->functions, answer->function_count, &shown);

	if (!err)
		err = build_symbols_payload(answer, &shown, budget, out, out_len);
	shown_names_free(&shown, answer->function_count);
	if (err == -E2BIG)
		err = build_symbols_payload(answer, NULL, budget, out, out_len);
	return err;
}

/* The functions of elf into answer (none is no error: a file may have no symbol table). */
static int read_functions(const struct elf_file *elf, struct symbols_answer *answer, char **names)
{
	int err = elf_file_functions(elf, &answer->functions, &answer->function_count, names);

	if (err == -ENOENT) {
		answer->functions = NULL;
		answer->function_count = 0;
		*names = NULL;
		return 0;
	}
	return err;
}

static void note_identity(const struct elf_file *elf, struct symbols_answer *answer)
{
	struct debug_identity identity;

	if (debug_file_identity(elf, &identity))
		return;
	answer->head.build_id_len = (uint8_t)identity.build_id_len;
	memcpy(answer->head.build_id, identity.build_id, identity.build_id_len);
	if (identity.has_link) {
		answer->head.has_debuglink = 1;
		answer->head.debuglink_crc = identity.link_crc;
		snprintf(answer->head.debuglink, sizeof(answer->head.debuglink), "%s", identity.link_name);
	}
}

static int file_symbols(const struct parser_request *request, struct elf_file *elf, struct symbols_answer *answer,
			char **names)
{
	answer->segment_count = elf_file_load_segments(elf, answer->segments, PARSER_MAX_SEGMENTS);
	answer->head.has_symtab = elf_file_has_symtab(elf);
	note_identity(elf, answer);
	(void)request;
	return read_functions(elf, answer, names);
}

static int debug_symbols(const struct parser_request *request, struct elf_file *elf, struct symbols_answer *answer,
			 char **names)
{
	struct stat info;

	note_identity(elf, answer);
	answer->head.has_symtab = elf_file_has_symtab(elf);
	if (!fstat(elf->fd, &info) && (uint64_t)info.st_size <= request->arg &&
	    !debug_file_crc32(elf->fd, (uint64_t)info.st_size, &answer->head.crc))
		answer->head.crc_known = 1;
	/* Only a .symtab adds to what the file's own .dynsym says. */
	return answer->head.has_symtab ? read_functions(elf, answer, names) : 0;
}

static int minidebuginfo_symbols(const struct parser_request *request, struct elf_file *elf,
				 struct symbols_answer *answer, char **names, struct elf_file *inner)
{
	uint64_t bytes_left = request->arg;
	int err = minidebuginfo_open(elf, &bytes_left, inner);

	/* what it expanded counts against root's budget, also when it failed: answered */
	answer->head.expanded_bytes = request->arg - bytes_left;
	if (err)
		return err == -ENOMEM ? err : 0;
	return read_functions(inner, answer, names);
}

/* What root may never ask in production: a crash, a runaway allocation, a request that never
 * ends, for the tests. */
static int selftest(const struct parser_request *request)
{
	volatile uint64_t spins = 0;

	if (request->kind == PARSER_REQUEST_SELFTEST_CRASH)
		*(volatile int *)(uintptr_t)request->arg = 1;
	if (request->kind == PARSER_REQUEST_SELFTEST_SPIN)
		for (;;)
			spins++;
	if (request->kind != PARSER_REQUEST_SELFTEST_BLOAT)
		return -EINVAL;
	for (;;) {
		char *chunk = malloc(16 << 20);

		if (!chunk)
			return -ENOMEM;
		memset(chunk, 1, 16 << 20);
	}
}

/* Whether fd's file holds a CPython runtime: a file that is no 64-bit ELF, or too large, is
 * answered as unread, not as an error (root remembers the verdict). */
static int py_runtime(const struct parser_request *request, int fd)
{
	struct parser_py_runtime wire;
	struct py_runtime_file verdict;
	struct elf_file elf;
	int err = elf_file_open_fd(&elf, fd, "");

	memset(&verdict, 0, sizeof(verdict));
	if (err == -ENOEXEC || err == -EFBIG) {
		verdict.unread = err;
		err = 0;
	} else if (!err) {
		py_runtime_file_examine(&elf, &verdict);
		elf_file_close(&elf);
	}
	if (!err && request->reply_budget < sizeof(wire))
		err = -E2BIG;
	if (!err)
		py_runtime_file_to_wire(&verdict, &wire);
	answer(request->id, err, err ? NULL : &wire, err ? 0 : sizeof(wire));
	return err;
}

/* With --selftest, a file marked to crash the worker or exhaust its memory does (parser_protocol.h):
 * -ENOMEM then, else 0. */
static int selftest_file(int fd, const struct worker_options *options)
{
	struct parser_request request = { .kind = 0 };
	char mark[sizeof(PARSER_SELFTEST_FILE_CRASH)] = { 0 };

	if (!options->selftest ||
	    pread(fd, mark, sizeof(mark) - 1, PARSER_SELFTEST_FILE_OFFSET) != (ssize_t)sizeof(mark) - 1)
		return 0;
	if (!strcmp(mark, PARSER_SELFTEST_FILE_CRASH))
		request.kind = PARSER_REQUEST_SELFTEST_CRASH;
	else if (!strcmp(mark, PARSER_SELFTEST_FILE_BLOAT))
		request.kind = PARSER_REQUEST_SELFTEST_BLOAT;
	return request.kind ? selftest(&request) : 0;
}

/* Each file of a PARSER_REQUEST_PY_RUNTIMES on its own, one reply each (ids from the request's);
 * -ENOMEM when one ran out of memory (the worker then exits: the rest are asked again). */
static int py_runtimes(const struct parser_request *request, int *fds, size_t count,
		       const struct worker_options *options)
{
	struct parser_request one = *request;
	int err = 0;
	size_t i;

	if (request->arg != count || !count) {
		for (i = 0; i < count; i++)
			close(fds[i]);
		answer(request->id, -EBADF, NULL, 0);
		return -EBADF;
	}
	for (i = 0; i < count && err != -ENOMEM; i++) {
		one.id = request->id + (uint32_t)i;
		err = selftest_file(fds[i], options);
		if (err) {
			close(fds[i]);
			answer(one.id, err, NULL, 0);
		} else {
			err = py_runtime(&one, fds[i]);
		}
	}
	for (; i < count; i++)
		close(fds[i]);
	return err == -ENOMEM ? err : 0;
}

/* The file's compact unwind table (worker/unwind_build.h): its head, then its rows as BPF loads
 * them. Root checks each and builds the page index itself (unwind/file_table.h). */
static int unwind_rows(const struct parser_request *request, int fd)
{
	struct parser_unwind_head head = { 0 };
	struct unwind_table table;
	struct errbuf error;
	int err = unwind_table_build_rows(fd, &table, &error);
	size_t bytes = table.count * sizeof(*table.rows);

	if (!err && sizeof(head) + bytes > request->reply_budget)
		err = -E2BIG;
	head.row_count = (uint32_t)table.count;
	head.source = table.source;
	answer_parts(request->id, err, &head, sizeof(head), table.rows, bytes);
	unwind_table_free(&table);
	return err;
}

/* Where the file's functions begin and end by its .eh_frame (worker/unwind_build.h). */
static int function_ranges(const struct parser_request *request, int fd)
{
	struct parser_unwind_head head = { 0 };
	struct unwind_function_range *ranges = NULL;
	struct parser_function_range *wire = NULL;
	struct errbuf error;
	size_t count = 0;
	int err = unwind_table_function_starts(fd, &ranges, &count, &error);

	if (!err && sizeof(head) + count * sizeof(*wire) > request->reply_budget)
		err = -E2BIG;
	if (!err && count) {
		wire = calloc(count, sizeof(*wire));
		err = wire ? 0 : -ENOMEM;
	}
	for (size_t i = 0; !err && i < count; i++)
		wire[i] = (struct parser_function_range){ ranges[i].start, ranges[i].end };
	head.row_count = (uint32_t)count;
	answer_parts(request->id, err, &head, sizeof(head), wire, count * sizeof(*wire));
	free(wire);
	free(ranges);
	return err;
}

/* A dynamic section read at most: real ones have a few dozen 16-byte entries. */
#define DYNAMIC_SECTION_MAX_BYTES ((uint64_t)64 << 10)

/* Appends string and its NUL to the names being built (at most budget bytes in all). */
static int add_name(char **names, size_t *len, size_t budget, const char *string)
{
	size_t string_len = string ? strnlen(string, PATH_MAX) : 0;
	char *grown;

	if (string_len >= PATH_MAX)
		return -ENAMETOOLONG;
	if (*len + string_len + 1 > budget)
		return -E2BIG;
	grown = realloc(*names, *len + string_len + 1);
	if (!grown)
		return -ENOMEM;
	memcpy(grown + *len, string ? string : "", string_len);
	grown[*len + string_len] = 0;
	*names = grown;
	*len += string_len + 1;
	return 0;
}

/* The file's first SHT_DYNAMIC section and its data, if within DYNAMIC_SECTION_MAX_BYTES. */
static Elf_Data *dynamic_section(Elf *elf, GElf_Shdr *header)
{
	Elf_Scn *section = NULL;

	while ((section = elf_nextscn(elf, section)) != NULL)
		if (gelf_getshdr(section, header) && header->sh_type == SHT_DYNAMIC)
			break;
	if (!section || header->sh_entsize != sizeof(GElf_Dyn) || header->sh_size > DYNAMIC_SECTION_MAX_BYTES)
		return NULL;
	return elf_getdata(section, NULL);
}

/* The libraries an executable names and where it says to look (PARSER_REQUEST_DYNAMIC_NAMES). */
static int dynamic_names(const struct parser_request *request, int fd)
{
	struct parser_dynamic_head head = { 0 };
	const char *rpath = NULL, *runpath = NULL;
	size_t budget = request->reply_budget > sizeof(head) ? request->reply_budget - sizeof(head) : 0;
	char *names = NULL;
	size_t names_len = 0, entries = 0;
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	Elf_Data *data = NULL;
	GElf_Shdr header;
	GElf_Dyn entry;
	int err = 0;

	if (elf && elf_kind(elf) == ELF_K_ELF)
		data = dynamic_section(elf, &header);
	if (data)
		entries = header.sh_size / sizeof(GElf_Dyn);
	for (size_t i = 0; i < entries && gelf_getdyn(data, (int)i, &entry); i++) {
		if (entry.d_tag == DT_RPATH)
			rpath = elf_strptr(elf, header.sh_link, entry.d_un.d_val);
		else if (entry.d_tag == DT_RUNPATH)
			runpath = elf_strptr(elf, header.sh_link, entry.d_un.d_val);
	}
	err = add_name(&names, &names_len, budget, rpath);
	if (!err)
		err = add_name(&names, &names_len, budget, runpath);
	for (size_t i = 0; !err && i < entries && head.needed_count < PARSER_MAX_NEEDED &&
			   gelf_getdyn(data, (int)i, &entry); i++) {
		const char *name = entry.d_tag == DT_NEEDED ? elf_strptr(elf, header.sh_link, entry.d_un.d_val) : NULL;

		if (!name || !name[0] || strnlen(name, PATH_MAX) >= PATH_MAX)
			continue;
		err = add_name(&names, &names_len, budget, name);
		head.needed_count += !err;
	}
	if (elf)
		elf_end(elf);
	head.names_len = (uint32_t)names_len;
	answer_parts(request->id, err, &head, sizeof(head), names, names_len);
	free(names);
	return err;
}

/* One request about fds (count of them, taken over); the status answered. */
static int serve(const struct parser_request *request, int *fds, size_t count, const struct worker_options *options)
{
	int fd = count == 1 ? fds[0] : -1;
	struct symbols_answer symbols = { .head = { .build_id_len = 0 } };
	struct elf_file elf, inner = { .fd = -1 };
	char *names = NULL, *payload = NULL;
	size_t payload_len = 0;
	int err;

	if (request->kind == PARSER_REQUEST_PY_RUNTIMES)
		return py_runtimes(request, fds, count, options);
	if (count > 1) {
		for (size_t i = 0; i < count; i++)
			close(fds[i]);
		answer(request->id, -EBADF, NULL, 0);
		return -EBADF;
	}
	if (request->kind >= PARSER_REQUEST_SELFTEST_CRASH) {
		if (fd >= 0)
			close(fd);
		err = options->selftest ? selftest(request) : -EINVAL;
		answer(request->id, err, NULL, 0);
		return err;
	}
	if (fd < 0) {
		answer(request->id, -EBADF, NULL, 0);
		return -EBADF;
	}
	if (request->kind == PARSER_REQUEST_PY_RUNTIME)
		return py_runtime(request, fd);
	if (request->kind == PARSER_REQUEST_DYNAMIC_NAMES) {
		err = dynamic_names(request, fd);
		close(fd);
		return err;
	}
	if (request->kind == PARSER_REQUEST_UNWIND_ROWS || request->kind == PARSER_REQUEST_FUNCTION_RANGES) {
		err = request->kind == PARSER_REQUEST_UNWIND_ROWS ? unwind_rows(request, fd)
								  : function_ranges(request, fd);
		close(fd);
		return err;
	}
	err = elf_file_open_fd(&elf, fd, "");
	if (!err) {
		if (request->kind == PARSER_REQUEST_FILE_SYMBOLS)
			err = file_symbols(request, &elf, &symbols, &names);
		else if (request->kind == PARSER_REQUEST_DEBUG_SYMBOLS)
			err = debug_symbols(request, &elf, &symbols, &names);
		else if (request->kind == PARSER_REQUEST_MINIDEBUGINFO)
			err = minidebuginfo_symbols(request, &elf, &symbols, &names, &inner);
		else
			err = -EINVAL;
		if (!err)
			err = build_shown_symbols_payload(&symbols, request->reply_budget, &payload, &payload_len);
		if (inner.elf)
			elf_file_close(&inner);
		elf_file_close(&elf);
	}
	answer(request->id, err, payload, payload_len);
	free(payload);
	free(symbols.functions);
	free(names);
	return err;
}

int parser_worker_main(int argc, char **argv)
{
	struct worker_options options;
	struct parser_request request;
	int fds[PARSER_MAX_BATCH_FILES];
	bool heap_to_give_back = false;
	size_t count;

	if (parse_options(argc, argv, &options) || enter_sandbox(&options))
		return WORKER_EXIT_SETUP;
	/* One file's tables (some hundreds of KiB each) come and go per request: kept on the heap,
	 * not mapped and unmapped (page faults every time), and not given back between requests;
	 * given back once none came for IDLE_AFTER_MS, so that an idle worker holds little. Root
	 * asks one file at a time, so "none waiting" would trim after every file (tables 10% more
	 * CPU, bench/parser_cost.c). */
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, 64 << 20);
	/* ready: root sends no descriptor before this */
	if (!answer(0, 0, NULL, 0))
		return WORKER_EXIT_DONE;
	for (;;) {
		enum received received = receive_request(&request, fds, &count);

		if (received == RECEIVED_END)
			return WORKER_EXIT_DONE;
		if (received == RECEIVED_NOTHING) {
			malloc_trim(0);
			heap_to_give_back = false;
			arm_idle_wait(false);
			continue;
		}
		if (!heap_to_give_back) {
			heap_to_give_back = true;
			arm_idle_wait(true);
		}
		/* A library that ran out of memory may have left its state half-freed: the next
		 * file gets a fresh worker. */
		if (serve(&request, fds, count, &options) == -ENOMEM)
			return WORKER_EXIT_OUT_OF_MEMORY;
	}
}
