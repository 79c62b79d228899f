// SPDX-License-Identifier: MIT
#include "parser/parser_client.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/clock.h"

/* The worker's uid and gid are drawn from here: above what distributions hand out to users
 * and to /etc/subuid ranges (100000 + 65536 n), below the 32-bit ids that mean "none". */
#define WORKER_UID_FIRST 0x50000000u
#define WORKER_UID_SPAN 0x20000000u
#define WORKER_UID_TRIES 16
/* /proc/PID/status is about 1.5 KiB; its Uid: and Gid: lines come early. */
#define STATUS_MAX_BYTES 4096
/* The socket's buffers, each way: a symbol table (libpython's: about 300 KiB) crosses in one
 * or two wake-ups rather than in a dozen of the default's. */
#define SOCKET_BUFFER_BYTES (4 << 20)

static const char *default_executable;

struct parser_client {
	struct parser_client_options options;
	pid_t pid;     /* the worker, 0: none */
	int socket;    /* root's end, -1: none */
	uid_t uid;     /* the worker's uid and gid, 0: not chosen yet */
	uint32_t next_id;
	unsigned failed_starts; /* in a row */
	struct parser_client_stats stats;
};

void parser_client_set_default_executable(const char *path)
{
	default_executable = path;
}

int parser_client_new(const struct parser_client_options *options, struct parser_client **out)
{
	struct parser_client *client = calloc(1, sizeof(*client));

	if (!client)
		return -ENOMEM;
	client->options = *options;
	if (!client->options.memory_bytes)
		client->options.memory_bytes = PARSER_CLIENT_DEFAULT_MEMORY;
	if (!client->options.timeout_ms)
		client->options.timeout_ms = PARSER_CLIENT_DEFAULT_TIMEOUT_MS;
	client->socket = -1;
	*out = client;
	return 0;
}

static void stop_worker(struct parser_client *client)
{
	int status;

	if (client->socket >= 0)
		close(client->socket);
	client->socket = -1;
	if (client->pid > 0) {
		kill(client->pid, SIGKILL);
		while (waitpid(client->pid, &status, 0) < 0 && errno == EINTR)
			;
	}
	client->pid = 0;
}

void parser_client_free(struct parser_client *client)
{
	if (!client)
		return;
	stop_worker(client);
	free(client);
}

pid_t parser_client_worker_pid(const struct parser_client *client)
{
	return client->pid;
}

uid_t parser_client_worker_uid(const struct parser_client *client)
{
	return client->uid;
}

void parser_client_stats(const struct parser_client *client, struct parser_client_stats *out)
{
	*out = client->stats;
}

/* Whether "Uid:" or "Gid:" of one /proc/PID/status names id (real, effective, saved or fs). */
static bool status_names_id(const char *status, const char *field, unsigned long id)
{
	const char *line = strstr(status, field);

	if (!line)
		return false;
	line += strlen(field);
	for (int i = 0; i < 4; i++) {
		char *end;
		unsigned long value = strtoul(line, &end, 10);

		if (end == line)
			return false;
		if (value == id)
			return true;
		line = end;
	}
	return false;
}

/* Whether a running process has id as a uid or gid. Bounded by the processes there are. */
static bool process_uses_id(unsigned long id)
{
	DIR *proc = opendir("/proc");
	struct dirent *entry;
	bool used = false;
	char path[64], status[STATUS_MAX_BYTES + 1];

	if (!proc)
		return true;
	while (!used && (entry = readdir(proc))) {
		ssize_t got;
		int fd;

		if (!isdigit((unsigned char)entry->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%.20s/status", entry->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		got = read(fd, status, STATUS_MAX_BYTES);
		close(fd);
		if (got <= 0)
			continue;
		status[got] = 0;
		used = status_names_id(status, "\nUid:", id) || status_names_id(status, "\nGid:", id);
	}
	closedir(proc);
	return used;
}

/* Whether a line "name:first:count" of /etc/subuid or /etc/subgid hands out id. */
static bool subordinate_ids_hold(const char *path, unsigned long id)
{
	FILE *file = fopen(path, "re");
	char line[512];
	bool held = false;

	if (!file)
		return false;
	while (!held && fgets(line, sizeof(line), file)) {
		unsigned long first, count;
		char *colon = strchr(line, ':');

		if (colon && sscanf(colon + 1, "%lu:%lu", &first, &count) == 2)
			held = id >= first && id - first < count;
	}
	fclose(file);
	return held;
}

static bool id_is_free(unsigned long id)
{
	struct passwd user, *user_found = NULL;
	struct group group, *group_found = NULL;
	char buf[4096];

	if (getpwuid_r((uid_t)id, &user, buf, sizeof(buf), &user_found) || user_found)
		return false;
	if (getgrgid_r((gid_t)id, &group, buf, sizeof(buf), &group_found) || group_found)
		return false;
	return !subordinate_ids_hold("/etc/subuid", id) && !subordinate_ids_hold("/etc/subgid", id) &&
	       !process_uses_id(id);
}

/* A uid (and the same gid) no account, no user namespace range and no process has: a process
 * that shared it could ptrace the worker and answer for it. 0 or -EAGAIN. */
static int choose_uid(uid_t *uid)
{
	for (int i = 0; i < WORKER_UID_TRIES; i++) {
		uint32_t random;

		if (getrandom(&random, sizeof(random), 0) != sizeof(random))
			return -errno;
		*uid = (uid_t)(WORKER_UID_FIRST + random % WORKER_UID_SPAN);
		if (id_is_free(*uid))
			return 0;
	}
	return -EAGAIN;
}

/* Reads at least len bytes from the worker, at most capacity, before deadline_ms, into buf;
 * *got: how many. 0, -ETIMEDOUT, -EPIPE (it closed). */
static int read_at_least(int fd, void *buf, size_t len, size_t capacity, uint64_t deadline_ms, size_t *got_out)
{
	size_t got = 0;

	while (got < len) {
		uint64_t now = clock_monotonic_ms();
		struct pollfd wait = { .fd = fd, .events = POLLIN };
		ssize_t n;
		int ready;

		if (now >= deadline_ms)
			return -ETIMEDOUT;
		ready = poll(&wait, 1, (int)(deadline_ms - now));
		if (ready < 0 && errno == EINTR)
			continue;
		if (ready < 0)
			return -errno;
		if (!ready)
			return -ETIMEDOUT;
		n = read(fd, (char *)buf + got, capacity - got);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return -EPIPE;
		got += (size_t)n;
	}
	*got_out = got;
	return 0;
}

/* Reads len bytes from the worker before deadline_ms; 0, -ETIMEDOUT, -EPIPE (it closed). */
static int read_all(int fd, void *buf, size_t len, uint64_t deadline_ms)
{
	size_t got;

	return read_at_least(fd, buf, len, len, deadline_ms, &got);
}

static int spawn_worker(struct parser_client *client, int worker_end)
{
	const char *executable = client->options.executable ? client->options.executable : default_executable;
	char uid_text[16], memory_text[24];
	char *argv[] = { "pybpfprof", PARSER_WORKER_COMMAND, "--uid", uid_text, "--memory-mib", memory_text,
			 client->options.selftest ? "--selftest" : NULL, NULL };
	char *envp[] = { NULL };
	posix_spawn_file_actions_t actions;
	posix_spawnattr_t attributes;
	sigset_t none, all;
	int err;

	if (!executable)
		return -ENOSYS;
	snprintf(uid_text, sizeof(uid_text), "%u", (unsigned)client->uid);
	snprintf(memory_text, sizeof(memory_text), "%" PRIu64, client->options.memory_bytes >> 20);
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawn_file_actions_init(&actions);
	posix_spawnattr_init(&attributes);
	/* Nothing of ours but its socket: no terminal (its own session), our stdio is /dev/null to
	 * it, default signal handling, no environment. */
	posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_adddup2(&actions, worker_end, PARSER_WORKER_SOCKET_FD);
	posix_spawnattr_setsigmask(&attributes, &none);
	posix_spawnattr_setsigdefault(&attributes, &all);
	posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSID);
	err = posix_spawn(&client->pid, executable, &actions, &attributes, argv, envp);
	posix_spawn_file_actions_destroy(&actions);
	posix_spawnattr_destroy(&attributes);
	if (err)
		client->pid = 0;
	return -err;
}

/* A worker, sandboxed (it says so once it is) and waiting. 0, or a negative errno. */
static int start_worker(struct parser_client *client)
{
	struct parser_reply_head ready;
	int ends[2], err;

	if (!client->uid) {
		err = choose_uid(&client->uid);
		if (err)
			return err;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends))
		return -errno;
	/* best effort: the default buffers only cost wake-ups */
	setsockopt(ends[0], SOL_SOCKET, SO_RCVBUF, &(int){ SOCKET_BUFFER_BYTES }, sizeof(int));
	setsockopt(ends[1], SOL_SOCKET, SO_SNDBUF, &(int){ SOCKET_BUFFER_BYTES }, sizeof(int));
	err = spawn_worker(client, ends[1]);
	close(ends[1]);
	if (err) {
		close(ends[0]);
		return err;
	}
	client->socket = ends[0];
	client->stats.worker_starts++;
	/* a start is not a file: a client with a short budget per request still waits as long
	 * as any for its worker to be ready */
	err = read_all(client->socket, &ready, sizeof(ready), clock_monotonic_ms() + PARSER_CLIENT_START_TIMEOUT_MS);
	if (!err && (ready.magic != PARSER_PROTOCOL_MAGIC || ready.status || ready.length))
		err = -EPROTO;
	if (err)
		stop_worker(client);
	return err;
}

static int send_request_files(struct parser_client *client, const struct parser_request *request, const int *fds,
			      size_t count)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * PARSER_MAX_BATCH_FILES)];
		struct cmsghdr align;
	} control;
	struct iovec part = { (void *)request, sizeof(*request) };
	struct msghdr message = { .msg_iov = &part, .msg_iovlen = 1 };
	ssize_t sent;

	if (count > PARSER_MAX_BATCH_FILES)
		return -EINVAL;
	if (count) {
		struct cmsghdr *cmsg;

		memset(&control, 0, sizeof(control));
		message.msg_control = control.buf;
		message.msg_controllen = CMSG_SPACE(sizeof(int) * count);
		cmsg = CMSG_FIRSTHDR(&message);
		cmsg->cmsg_level = SOL_SOCKET;
		cmsg->cmsg_type = SCM_RIGHTS;
		cmsg->cmsg_len = CMSG_LEN(sizeof(int) * count);
		memcpy(CMSG_DATA(cmsg), fds, sizeof(int) * count);
	}
	/* a request is small: the worker's socket buffer takes it whole, or the worker is gone */
	do
		sent = sendmsg(client->socket, &message, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (sent < 0 && errno == EINTR);
	return sent == (ssize_t)sizeof(*request) ? 0 : -EPIPE;
}

static int send_request(struct parser_client *client, const struct parser_request *request, int fd)
{
	return send_request_files(client, request, &fd, fd >= 0 ? 1 : 0);
}

/* The worker failed this request (died, overran, said nonsense): it is replaced. */
static int lose_worker(struct parser_client *client, int why)
{
	int status = 0;
	pid_t pid = client->pid;

	client->stats.lost_files++;
	if (why == -ETIMEDOUT)
		client->stats.timeouts++;
	if (client->socket >= 0)
		close(client->socket);
	client->socket = -1;
	if (pid > 0) {
		kill(pid, SIGKILL);
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		/* the worker's own status for "out of memory" (worker/parser_worker.c) */
		if (why != -ETIMEDOUT && WIFEXITED(status) && WEXITSTATUS(status) == 71)
			client->stats.out_of_memory++;
	}
	client->pid = 0;
	return -ECHILD;
}

void parser_client_distrust(struct parser_client *client)
{
	lose_worker(client, -EPROTO);
}

/* A reply this small (a verdict, a list of names) comes with its head in one read: the worker
 * sends both in one message, and a second poll and read would wait for nothing. */
#define SMALL_REPLY_BYTES 1024

static int read_reply(struct parser_client *client, uint32_t id, uint32_t reply_budget, void **payload, size_t *len)
{
	uint64_t deadline = clock_monotonic_ms() + client->options.timeout_ms;
	struct parser_reply_head head;
	union {
		struct parser_reply_head head;
		uint8_t bytes[sizeof(struct parser_reply_head) + SMALL_REPLY_BYTES];
	} first;
	size_t got = 0, early;
	void *body;
	/* (beyond the head, never more than the budget: what follows it is not this reply's) */
	int err = read_at_least(client->socket, &first, sizeof(head),
				sizeof(head) + (reply_budget < SMALL_REPLY_BYTES ? reply_budget : SMALL_REPLY_BYTES),
				deadline, &got);

	if (err)
		return lose_worker(client, err);
	head = first.head;
	early = got - sizeof(head);
	if (head.magic != PARSER_PROTOCOL_MAGIC || head.id != id || head.length > reply_budget ||
	    (head.status && head.length) || head.status > 0 || head.status < -4095 || early > head.length)
		return lose_worker(client, -EPROTO);
	if (head.status) {
		if (head.status == -ENOMEM) {
			/* it exits after this answer: reaped now, replaced at the next request */
			client->stats.out_of_memory++;
			stop_worker(client);
		}
		return head.status;
	}
	body = malloc(head.length ? head.length : 1);
	if (!body)
		return -ENOMEM;
	memcpy(body, first.bytes + sizeof(head), early);
	err = read_all(client->socket, (uint8_t *)body + early, head.length - early, deadline);
	if (err) {
		free(body);
		return lose_worker(client, err);
	}
	*payload = body;
	*len = head.length;
	return 0;
}

int parser_client_prepare(struct parser_client *client)
{
	if (client->pid)
		return 0;
	if (client->failed_starts >= PARSER_CLIENT_MAX_START_FAILURES)
		return -ENOSYS;
	if (start_worker(client)) {
		client->failed_starts++;
		client->stats.start_failures++;
		return -ENOSYS;
	}
	client->failed_starts = 0;
	return 0;
}

int parser_client_request(struct parser_client *client, enum parser_request_kind kind, int fd, uint64_t arg,
			  uint32_t reply_budget, void **payload, size_t *len)
{
	struct parser_request request = { .magic = PARSER_PROTOCOL_MAGIC, .kind = kind, .arg = arg,
					  .reply_budget = reply_budget };
	int err;

	*payload = NULL;
	*len = 0;
	err = parser_client_prepare(client);
	if (err)
		return err;
	client->stats.requests++;
	request.id = ++client->next_id;
	if (send_request(client, &request, fd))
		return lose_worker(client, -EPIPE);
	return read_reply(client, request.id, reply_budget, payload, len);
}

/* The replies to a request about several files, as they come: up to a reply (head and the
 * largest payload) per file unread, so that one read takes all that have arrived. */
struct reply_stream {
	uint8_t *bytes;
	size_t capacity, have, used;
};

/* The next reply's head and payload in the stream, read before deadline_ms as need be:
 * 0, or the worker's failure (-ETIMEDOUT, -EPIPE, -EPROTO). */
static int next_reply(struct parser_client *client, struct reply_stream *stream, uint32_t id, uint32_t reply_budget,
		      uint64_t deadline_ms, struct parser_file_answer *answer, bool *out_of_memory)
{
	struct parser_reply_head head;
	size_t got;
	int err;

	if (stream->have - stream->used < sizeof(head)) {
		err = read_at_least(client->socket, stream->bytes + stream->have,
				    sizeof(head) - (stream->have - stream->used), stream->capacity - stream->have,
				    deadline_ms, &got);
		if (err)
			return err;
		stream->have += got;
	}
	memcpy(&head, stream->bytes + stream->used, sizeof(head));
	if (head.magic != PARSER_PROTOCOL_MAGIC || head.id != id || head.length > reply_budget ||
	    (head.status && head.length) || head.status > 0 || head.status < -4095 ||
	    stream->used + sizeof(head) + head.length > stream->capacity)
		return -EPROTO;
	stream->used += sizeof(head);
	if (stream->have - stream->used < head.length) {
		err = read_at_least(client->socket, stream->bytes + stream->have,
				    head.length - (stream->have - stream->used), stream->capacity - stream->have,
				    deadline_ms, &got);
		if (err)
			return err;
		stream->have += got;
	}
	*out_of_memory = head.status == -ENOMEM;
	answer->status = head.status;
	answer->len = head.length;
	answer->payload = NULL;
	if (!head.status) {
		answer->payload = malloc(head.length ? head.length : 1);
		if (!answer->payload)
			answer->status = -ENOMEM;
		else
			memcpy(answer->payload, stream->bytes + stream->used, head.length);
	}
	stream->used += head.length;
	return 0;
}

int parser_client_request_each(struct parser_client *client, enum parser_request_kind kind, const int *fds,
			       size_t count, uint32_t reply_budget, struct parser_file_answer *answers,
			       size_t *answered)
{
	struct parser_request request = { .magic = PARSER_PROTOCOL_MAGIC, .kind = kind, .arg = count,
					  .reply_budget = reply_budget };
	struct reply_stream stream = { 0 };
	int err;

	*answered = 0;
	if (!count || count > PARSER_MAX_BATCH_FILES || reply_budget > SMALL_REPLY_BYTES)
		return -EINVAL;
	err = parser_client_prepare(client);
	if (err)
		return err;
	stream.capacity = count * (sizeof(struct parser_reply_head) + reply_budget);
	stream.bytes = malloc(stream.capacity);
	if (!stream.bytes)
		return -ENOMEM;
	client->stats.requests++;
	request.id = client->next_id + 1;
	client->next_id += (uint32_t)count;
	err = send_request_files(client, &request, fds, count) ? -EPIPE : 0;
	while (!err && *answered < count) {
		bool out_of_memory = false;

		/* each file has the time one request has, from the answer before it */
		err = next_reply(client, &stream, request.id + (uint32_t)*answered, reply_budget,
				 clock_monotonic_ms() + client->options.timeout_ms, &answers[*answered], &out_of_memory);
		if (err)
			break;
		++*answered;
		if (out_of_memory) {
			/* it exits after this answer: reaped now, the rest asked of the next worker */
			client->stats.out_of_memory++;
			stop_worker(client);
			break;
		}
	}
	if (err) {
		/* the file being answered is the one it died on, overran or garbled */
		answers[*answered] = (struct parser_file_answer){ .status = lose_worker(client, err) };
		++*answered;
	}
	free(stream.bytes);
	return 0;
}
