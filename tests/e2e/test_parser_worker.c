// SPDX-License-Identifier: MIT
/*
 * The parser worker (user/parser/, doc/security.md) as an attacker would meet it: its
 * identity, capabilities, file system, memory limit and seccomp filter seen from outside
 * (/proc/PID/...), a worker that crashes, bloats or never answers costing one request and
 * no more, root checking what comes back, and a debug link to /dev/ptmx planted by nobody.
 */
#include "testlib.h"
#include "inflation_bomb.h"

#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "parser/parser_client.h"
#include "parser/parser_protocol.h"
#include "symbolize/symbolize_native.h"

/* A file the worker can read: the libz this test links (deflateInit2_ is in its .dynsym). */
static int libz_fd(void)
{
	Dl_info info;
	int fd;

	assert_true(dladdr((void *)(uintptr_t)deflateInit2_, &info) != 0);
	fd = open(info.dli_fname, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	return fd;
}

static struct parser_client *new_client(uint64_t memory_bytes, unsigned timeout_ms, bool selftest)
{
	struct parser_client_options options = { .memory_bytes = memory_bytes, .timeout_ms = timeout_ms,
						  .selftest = selftest };
	struct parser_client *client;

	assert_int_equal(parser_client_new(&options, &client), 0);
	return client;
}

/* Asks for libz's symbols and checks the answer names deflateInit2_. */
static void check_reads_libz(struct parser_client *client)
{
	struct parser_symbols symbols;
	void *payload;
	size_t len;
	bool named = false;
	int fd = libz_fd();

	assert_int_equal(parser_client_request(client, PARSER_REQUEST_FILE_SYMBOLS, fd, 0, 16 << 20, &payload, &len), 0);
	close(fd);
	assert_int_equal(parser_symbols_check(payload, len, &symbols), 0);
	assert_true(symbols.head->segment_count > 0);
	for (uint32_t i = 0; i < symbols.head->function_count; i++)
		named |= strcmp(symbols.names + symbols.functions[i].name_offset, "deflateInit2_") == 0;
	assert_true(named);
	free(payload);
}

/* One line of /proc/PID/status ("Uid:"), its value after the tab, into out. */
static void status_field(pid_t pid, const char *field, char *out, size_t len)
{
	char text[8192];
	const char *line;

	assert_true(proc_identity_read_file(pid, "status", text, sizeof(text)) > 0);
	line = strstr(text, field);
	if (!line)
		fail_msg("no %s in /proc/%d/status", field, (int)pid);
	line += strlen(field);
	line += strspn(line, " \t");
	snprintf(out, len, "%.*s", (int)strcspn(line, "\n"), line);
}

/* Whether a process other than pid has uid among its ids (or the uid has an account). */
static bool uid_shared(pid_t pid, uid_t uid)
{
	DIR *proc = opendir("/proc");
	struct dirent *entry;
	bool shared = getpwuid(uid) != NULL;
	char ids[128], expected[64];

	assert_non_null(proc);
	snprintf(expected, sizeof(expected), "%u\t%u\t%u\t%u", uid, uid, uid, uid);
	while (!shared && (entry = readdir(proc))) {
		pid_t other = (pid_t)atoi(entry->d_name);
		char path[64];
		struct stat info;

		if (other <= 0 || other == pid)
			continue;
		snprintf(path, sizeof(path), "/proc/%d", (int)other);
		if (!stat(path, &info) && (info.st_uid == uid || info.st_gid == uid))
			shared = true;
	}
	closedir(proc);
	status_field(pid, "Uid:", ids, sizeof(ids));
	assert_string_equal(ids, expected);
	status_field(pid, "Gid:", ids, sizeof(ids));
	assert_string_equal(ids, expected);
	return shared;
}

/* Names in the worker's root directory besides . and .. */
static int root_entries(pid_t pid)
{
	char path[64];
	DIR *root;
	struct dirent *entry;
	int count = 0;

	snprintf(path, sizeof(path), "/proc/%d/root/", (int)pid);
	root = opendir(path);
	assert_non_null(root);
	while ((entry = readdir(root)))
		count += strcmp(entry->d_name, ".") != 0 && strcmp(entry->d_name, "..") != 0;
	closedir(root);
	return count;
}

/* The worker as /proc shows it: its own uid, no capability at all, seccomp filtering, no new
 * privileges, an empty root, the address space limit root gave it. */
static void test_worker_is_sandboxed(void **state)
{
	struct parser_client *client = new_client(200 << 20, 0, false);
	char value[128], path[64], limits[4096];
	pid_t pid;
	uid_t uid;
	int fd;
	ssize_t got;

	(void)state;
	assert_int_equal(parser_client_prepare(client), 0);
	pid = parser_client_worker_pid(client);
	uid = parser_client_worker_uid(client);
	assert_true(pid > 0);
	print_message("worker %d runs as uid %u\n", (int)pid, (unsigned)uid);
	assert_true(uid != 0 && uid != 65534);
	assert_false(uid_shared(pid, uid));
	status_field(pid, "Groups:", value, sizeof(value));
	assert_string_equal(value, "");
	for (size_t i = 0; i < 5; i++) {
		static const char *const sets[] = { "CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:" };

		status_field(pid, sets[i], value, sizeof(value));
		assert_string_equal(value, "0000000000000000");
	}
	status_field(pid, "NoNewPrivs:", value, sizeof(value));
	assert_string_equal(value, "1");
	status_field(pid, "Seccomp:", value, sizeof(value));
	assert_string_equal(value, "2");
	assert_int_equal(root_entries(pid), 0);
	snprintf(path, sizeof(path), "/proc/%d/limits", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	got = read(fd, limits, sizeof(limits) - 1);
	close(fd);
	assert_true(got > 0);
	limits[got] = 0;
	assert_non_null(strstr(limits, "Max address space         209715200            209715200"));
	/* and it still does its job */
	check_reads_libz(client);
	parser_client_free(client);
}


/* A file that crashes a --selftest worker when it is among a batch's (parser_protocol.h). */
static int crash_file_fd(const char *path)
{
	unsigned char header[PARSER_SELFTEST_FILE_OFFSET] = { 0x7f, 'E', 'L', 'F', ELFCLASS64, ELFDATA2LSB, EV_CURRENT };
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, header, sizeof(header)), (ssize_t)sizeof(header));
	assert_int_equal(write(fd, PARSER_SELFTEST_FILE_CRASH, strlen(PARSER_SELFTEST_FILE_CRASH)),
			 (ssize_t)strlen(PARSER_SELFTEST_FILE_CRASH));
	return fd;
}

/* Each answer of a batch is a verdict of its own: libz's, the same every time. */
static void check_libz_verdicts(const struct parser_file_answer *answers, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		assert_int_equal(answers[i].status, 0);
		assert_int_equal(answers[i].len, sizeof(struct parser_py_runtime));
		assert_memory_equal(answers[i].payload, answers[0].payload, sizeof(struct parser_py_runtime));
	}
}

/*
 * A batch of files in one request: each answered on its own, in order; a worker that dies on
 * the second file costs that file (-ECHILD) and leaves the ones after it unasked, and a fresh
 * worker answers them when asked again.
 */
static void test_batch_death_costs_one_file(void **state)
{
	struct parser_client *client = new_client(0, 0, true);
	struct parser_file_answer answers[4];
	struct parser_client_stats stats;
	char path[PATH_MAX];
	size_t answered = 0;
	int fds[4];

	(void)state;
	FORMAT(path, "%s/crash.%d.so", test_tmpdir(), (int)getpid());
	fds[0] = libz_fd();
	fds[1] = crash_file_fd(path);
	fds[2] = libz_fd();
	fds[3] = libz_fd();
	assert_int_equal(parser_client_request_each(client, PARSER_REQUEST_PY_RUNTIMES, fds, 4,
						    sizeof(struct parser_py_runtime), answers, &answered),
			 0);
	assert_int_equal(answered, 2);
	check_libz_verdicts(answers, 1);
	assert_int_equal(answers[1].status, -ECHILD);
	assert_int_equal(parser_client_request_each(client, PARSER_REQUEST_PY_RUNTIMES, fds + 2, 2,
						    sizeof(struct parser_py_runtime), &answers[2], &answered),
			 0);
	assert_int_equal(answered, 2);
	check_libz_verdicts(answers + 2, 2);
	assert_memory_equal(answers[2].payload, answers[0].payload, sizeof(struct parser_py_runtime));
	parser_client_stats(client, &stats);
	assert_int_equal(stats.requests, 2);
	assert_int_equal(stats.lost_files, 1);
	assert_int_equal(stats.worker_starts, 2);
	for (int i = 0; i < 4; i++) {
		free(answers[i].payload);
		close(fds[i]);
	}
	unlink(path);
	parser_client_free(client);
}

/* A worker that crashes on a request costs that request; the next file gets a fresh worker. */
static void test_crash_costs_one_request(void **state)
{
	struct parser_client *client = new_client(0, 0, true);
	struct parser_client_stats stats;
	void *payload;
	size_t len;
	pid_t first;

	(void)state;
	check_reads_libz(client);
	first = parser_client_worker_pid(client);
	assert_int_equal(parser_client_request(client, PARSER_REQUEST_SELFTEST_CRASH, -1, 0, 4096, &payload, &len),
			 -ECHILD);
	assert_int_equal(parser_client_worker_pid(client), 0);
	check_reads_libz(client);
	assert_int_not_equal(parser_client_worker_pid(client), first);
	parser_client_stats(client, &stats);
	assert_int_equal(stats.lost_files, 1);
	assert_int_equal(stats.worker_starts, 2);
	parser_client_free(client);
}

/* A request that allocates without end stops at the worker's limit, not at the host's memory. */
static void test_bloat_stops_at_the_memory_limit(void **state)
{
	struct parser_client *client = new_client(96 << 20, 0, true);
	struct parser_client_stats stats;
	void *payload;
	size_t len;

	(void)state;
	assert_int_equal(parser_client_request(client, PARSER_REQUEST_SELFTEST_BLOAT, -1, 0, 4096, &payload, &len),
			 -ENOMEM);
	check_reads_libz(client);
	parser_client_stats(client, &stats);
	assert_int_equal(stats.out_of_memory, 1);
	assert_int_equal(stats.worker_starts, 2);
	parser_client_free(client);
}

/* A request that never ends is cut at the time budget; the next file gets a fresh worker. */
static void test_overrun_is_cut(void **state)
{
	struct parser_client *client = new_client(0, 300, true);
	struct parser_client_stats stats;
	void *payload;
	size_t len;

	(void)state;
	assert_int_equal(parser_client_request(client, PARSER_REQUEST_SELFTEST_SPIN, -1, 0, 4096, &payload, &len),
			 -ECHILD);
	parser_client_free(client);
	/* a fresh client: the 300 ms budget above is no budget for a cold libz on a loaded host */
	client = new_client(0, 0, true);
	check_reads_libz(client);
	parser_client_free(client);
	(void)stats;
}

/* In production the test kinds do nothing: the worker refuses them and carries on. */
static void test_selftest_kinds_refused_in_production(void **state)
{
	struct parser_client *client = new_client(0, 0, false);
	void *payload;
	size_t len;
	pid_t pid;

	(void)state;
	assert_int_equal(parser_client_prepare(client), 0);
	pid = parser_client_worker_pid(client);
	assert_int_equal(parser_client_request(client, PARSER_REQUEST_SELFTEST_CRASH, -1, 0, 4096, &payload, &len),
			 -EINVAL);
	assert_int_equal(parser_client_worker_pid(client), pid);
	check_reads_libz(client);
	parser_client_free(client);
}

/* An answer past the budget root set is refused by the worker (and would be by root). */
static void test_answer_past_its_budget(void **state)
{
	struct parser_client *client = new_client(0, 0, false);
	void *payload;
	size_t len;
	int fd = libz_fd();

	(void)state;
	assert_int_equal(parser_client_request(client, PARSER_REQUEST_FILE_SYMBOLS, fd, 0, 1024, &payload, &len),
			 -E2BIG);
	close(fd);
	check_reads_libz(client);
	parser_client_free(client);
}

/* What a worker that lies might send: root refuses it whole. */
static void test_lying_answers_refused(void **state)
{
	struct {
		struct parser_symbols_head head;
		struct parser_function functions[2];
		char names[8];
	} answer;
	struct parser_symbols symbols;

	(void)state;
	memset(&answer, 0, sizeof(answer));
	answer.head.function_count = 2;
	answer.head.names_len = 8;
	memcpy(answer.names, "one\0two", 8);
	answer.functions[0] = (struct parser_function){ .addr = 0x1000, .size = 16, .name_offset = 0 };
	answer.functions[1] = (struct parser_function){ .addr = 0x2000, .size = 16, .name_offset = 4 };
	assert_int_equal(parser_symbols_check(&answer, sizeof(answer), &symbols), 0);
	assert_string_equal(symbols.names + symbols.functions[1].name_offset, "two");
	/* a length that does not add up */
	assert_int_equal(parser_symbols_check(&answer, sizeof(answer) - 1, &symbols), -EBADMSG);
	/* a name outside the names */
	answer.functions[1].name_offset = 8;
	assert_int_equal(parser_symbols_check(&answer, sizeof(answer), &symbols), -EBADMSG);
	answer.functions[1].name_offset = 4;
	/* names not ending in NUL */
	answer.names[7] = 'x';
	assert_int_equal(parser_symbols_check(&answer, sizeof(answer), &symbols), -EBADMSG);
	answer.names[7] = 0;
	/* functions out of order */
	answer.functions[1].addr = 0x10;
	assert_int_equal(parser_symbols_check(&answer, sizeof(answer), &symbols), -EBADMSG);
	answer.functions[1].addr = 0x2000;
	/* a count that overflows what is there */
	answer.head.function_count = UINT32_MAX;
	assert_int_equal(parser_symbols_check(&answer, sizeof(answer), &symbols), -EBADMSG);
	answer.head.function_count = 2;
	/* a debuglink with a directory */
	answer.head.has_debuglink = 1;
	snprintf(answer.head.debuglink, sizeof(answer.head.debuglink), "../etc/shadow");
	assert_int_equal(parser_symbols_check(&answer, sizeof(answer), &symbols), -EBADMSG);
	answer.head.has_debuglink = 0;
	answer.head.debuglink[0] = 0;
	answer.head.build_id_len = PARSER_MAX_BUILD_ID + 1;
	assert_int_equal(parser_symbols_check(&answer, sizeof(answer), &symbols), -EBADMSG);
}

/* The controlling terminal of this process (field 7 of /proc/self/stat): 0 for none. */
static long own_tty(void)
{
	char text[1024];
	const char *after_name;
	long tty = -1;
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	ssize_t got = fd >= 0 ? read(fd, text, sizeof(text) - 1) : -1;

	if (fd >= 0)
		close(fd);
	if (got <= 0)
		return -1;
	text[got] = 0;
	after_name = strrchr(text, ')');
	if (!after_name || sscanf(after_name + 1, " %*c %*d %*d %*d %ld", &tty) != 1)
		return -1;
	return tty;
}

/* What the session leader below found, as its exit status. */
enum leader_findings {
	LEADER_NO_TTY = 1,     /* it still has no controlling terminal */
	LEADER_LIBZ_NAMED = 2, /* another file's symbols still resolve */
	LEADER_LIB_NAMED = 4,  /* and the planted library's exported function */
};

/*
 * As a profiler run as a service (a session leader with no terminal) maps nobody's library,
 * whose debuglink names a file beside it that is a symlink to a terminal, and names pcs in it
 * and in libz. The findings as an exit status.
 */
static int symbolize_as_session_leader(const char *library, const char *debug_dir)
{
	struct symbolize_native *symbolizer;
	struct symbolize_native_frame found;
	void *handle, *exported;
	int findings = 0;

	if (setsid() < 0)
		return 0x80;
	handle = dlopen(library, RTLD_NOW);
	exported = handle ? dlsym(handle, "call_hidden") : NULL;
	symbolizer = symbolize_native_new();
	if (!exported || !symbolizer)
		return 0x40;
	symbolize_native_set_debug_dir(symbolizer, debug_dir);
	if (symbolize_native_lookup(symbolizer, getpid(), NULL, (uint64_t)(uintptr_t)exported + 1, &found) == 1 &&
	    found.symbol && strcmp(found.symbol, "call_hidden") == 0)
		findings |= LEADER_LIB_NAMED;
	if (symbolize_native_lookup(symbolizer, getpid(), NULL, (uint64_t)(uintptr_t)deflateInit2_ + 1, &found) == 1 &&
	    found.symbol && strcmp(found.symbol, "deflateInit2_") == 0)
		findings |= LEADER_LIBZ_NAMED;
	if (own_tty() == 0)
		findings |= LEADER_NO_TTY;
	symbolize_native_free(symbolizer);
	return findings;
}

/* A pty pair that nobody opened and holds: its pid, and its terminal's path (/dev/pts/N). */
static FILE *nobody_pty(pid_t *pid, char *tty, size_t len)
{
	FILE *holder = popen("exec setpriv --reuid=nobody --regid=nogroup --clear-groups /usr/bin/python3 -c '"
			     "import os, pty, time; master, slave = pty.openpty(); "
			     "print(os.getpid(), os.ttyname(slave), flush=True); time.sleep(120)'",
			     "r");
	int got;

	assert_non_null(holder);
	got = fscanf(holder, "%d %63s", pid, tty);
	assert_int_equal(got, 2);
	assert_true(len > strlen(tty));
	assert_non_null(strstr(tty, "/dev/pts/"));
	return holder;
}

/*
 * nobody plants a stripped library whose .gnu_debuglink names "lib.debug", and beside it a
 * lib.debug that is a symlink to the terminal of a pty nobody holds (and .debug/lib.debug, one
 * to /dev/ptmx). Root, a session leader without a terminal as a service is, must open neither
 * (the terminal would become its controlling terminal: nobody could then stop the run with a
 * hangup), and still names the symbols of every file.
 */
static void test_debuglink_to_a_terminal_is_not_opened(void **state)
{
	char dir[64], library[128], debug_dir[128], command[1024], tty[64];
	pid_t child, holder_pid;
	FILE *holder = nobody_pty(&holder_pid, tty, sizeof(tty));
	int status;

	(void)state;
	test_make_sticky_dir(dir, sizeof(dir));
	FORMAT(library, "%s/lib.so", dir);
	FORMAT(debug_dir, "%s/no-debug-tree", dir);
	FORMAT(command,
	       "set -e; cd %s; printf 'static int hidden(int n) { return n * 3; }\\n"
	       "int call_hidden(int n) { return hidden(n) + 1; }\\n' > hidden.c; "
	       "cc -shared -fPIC -O1 -o lib.so hidden.c; objcopy --only-keep-debug lib.so lib.debug; "
	       "strip -s lib.so; objcopy --add-gnu-debuglink=lib.debug lib.so; rm lib.debug; "
	       "ln -s %s lib.debug; mkdir .debug; ln -s /dev/ptmx .debug/lib.debug",
	       dir, tty);
	assert_int_equal(test_run_as_nobody(command), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0)
		_exit(symbolize_as_session_leader(library, debug_dir));
	assert_int_equal(waitpid(child, &status, 0), child);
	kill(holder_pid, SIGKILL);
	pclose(holder);
	assert_true(WIFEXITED(status));
	print_message("session leader: %s a terminal (%s planted); libz %s, the library %s\n",
		      WEXITSTATUS(status) & LEADER_NO_TTY ? "still without" : "took", tty,
		      WEXITSTATUS(status) & LEADER_LIBZ_NAMED ? "named" : "unnamed",
		      WEXITSTATUS(status) & LEADER_LIB_NAMED ? "named" : "unnamed");
	assert_int_equal(WEXITSTATUS(status), LEADER_NO_TTY | LEADER_LIBZ_NAMED | LEADER_LIB_NAMED);
	FORMAT(command, "rm -rf %s", dir);
	assert_int_equal(system(command), 0);
}

/* A process's controlling terminal (field 7 of /proc/PID/stat), -1 when it is gone. */
static long tty_of(pid_t pid)
{
	char path[64], text[1024];
	const char *after_name;
	long tty = -1;
	ssize_t got;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	got = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (got <= 0)
		return -1;
	text[got] = 0;
	after_name = strrchr(text, ')');
	if (!after_name || sscanf(after_name + 1, " %*c %*d %*d %*d %ld", &tty) != 1)
		return -1;
	return tty;
}

/* Samples of path whose leaf is a native frame named name. */
static size_t samples_with_leaf(const char *path, const char *name)
{
	struct pf_reader *reader = test_open_profile(path);
	struct pf_sample sample;
	size_t count = 0;

	while (pf_reader_next_sample(reader, &sample) == 1) {
		const struct pf_frame *leaf = sample.frame_count ? &sample.frames[sample.frame_count - 1] : NULL;

		count += leaf && leaf->kind == PF_FRAME_NATIVE && strcmp(leaf->name, name) == 0;
	}
	pf_reader_close(reader);
	return count;
}

/*
 * The same attack on the profiler itself, run as a service is: started with setsid, no
 * terminal, stdio on files. nobody's Python spins in the planted library; the profiler must
 * never acquire a controlling terminal, and must name the library's exported function.
 */
static void test_profiler_as_a_service_takes_no_terminal(void **state)
{
	char dir[64], command[2048], tty[64], profile[128], log[128], pid_text[16];
	char *argv[] = { (char *)pybpfprof_binary(), "-F", "197", "-d", "3", "-p", pid_text, "-o", profile, NULL };
	pid_t holder_pid, profiler, target;
	FILE *holder = nobody_pty(&holder_pid, tty, sizeof(tty)), *spinner;
	long worst_tty = 0;
	size_t named;
	int status;

	(void)state;
	test_make_sticky_dir(dir, sizeof(dir));
	FORMAT(profile, "%s/out.mojo", dir);
	FORMAT(log, "%s/profiler.log", dir);
	FORMAT(command,
	       "set -e; cd %s; printf 'int call_hidden(long n) { volatile long s = 0; "
	       "for (long i = 0; i < n; i++) s += i * i; return (int)s; }\\n' > spin.c; "
	       "cc -shared -fPIC -O1 -o lib.so spin.c; objcopy --only-keep-debug lib.so lib.debug; "
	       "strip -s lib.so; objcopy --add-gnu-debuglink=lib.debug lib.so; rm lib.debug; "
	       "ln -s %s lib.debug; mkdir .debug; ln -s /dev/ptmx .debug/lib.debug",
	       dir, tty);
	assert_int_equal(test_run_as_nobody(command), 0);
	FORMAT(command,
	       "exec setpriv --reuid=nobody --regid=nogroup --clear-groups /usr/bin/python3 -c '"
	       "import ctypes, os, sys; lib = ctypes.CDLL(\"%s/lib.so\"); print(os.getpid(), flush=True)\n"
	       "while True: lib.call_hidden(10000000)'",
	       dir);
	spinner = test_popen_ready(command, &target);
	FORMAT(pid_text, "%d", (int)target);
	profiler = fork();
	assert_true(profiler >= 0);
	if (profiler == 0) {
		int out = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		int in = open("/dev/null", O_RDONLY | O_CLOEXEC);

		if (setsid() < 0 || out < 0 || in < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
			_exit(127);
		execv(argv[0], argv);
		_exit(127);
	}
	/* its terminal, as often as the run lets us look */
	while (waitpid(profiler, &status, WNOHANG) == 0) {
		long tty_now = tty_of(profiler);

		if (tty_now > 0)
			worst_tty = tty_now;
		usleep(20000);
	}
	kill(target, SIGKILL);
	pclose(spinner);
	kill(holder_pid, SIGKILL);
	pclose(holder);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	named = samples_with_leaf(profile, "call_hidden");
	print_message("profiler's terminal: %ld (%s planted); %zu samples named call_hidden\n", worst_tty, tty,
		      named);
	assert_int_equal(worst_tty, 0);
	assert_true(named > 0);
	FORMAT(command, "rm -rf %s", dir);
	assert_int_equal(system(command), 0);
}

/* This process's peak resident memory (VmHWM), in KiB. */
static long peak_rss_kib(void)
{
	char value[64];

	status_field(getpid(), "VmHWM:", value, sizeof(value));
	return atol(value);
}

/* After a bomb: the next file (libz) is named by its function, and root's peak memory grew less
 * than 100 MiB since before (KiB). */
static void next_file_named_and_root_unharmed(struct symbolize_native *symbolizer, long before)
{
	struct symbolize_native_frame found;
	long after;

	assert_int_equal(symbolize_native_lookup(symbolizer, getpid(), NULL,
						 (uint64_t)(uintptr_t)deflateInit2_ + 1, &found), 1);
	assert_non_null(found.symbol);
	assert_string_equal(found.symbol, "deflateInit2_");
	after = peak_rss_kib();
	print_message("peak RSS %ld KiB before, %ld KiB after\n", before, after);
	assert_true(after - before < 100 << 10);
}

/* An ELF whose .symtab claims 300 MiB (a sparse file, a few KiB on disk): reading it asks for
 * that much memory. */
static void write_symtab_bomb(const char *path)
{
	static const char section_names[] = "\0.symtab\0.strtab\0.shstrtab";
	struct {
		Elf64_Ehdr header;
		Elf64_Shdr sections[4];
		char names[sizeof(section_names)];
	} image;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	assert_true(fd >= 0);
	memset(&image, 0, sizeof(image));
	memcpy(image.header.e_ident, ELFMAG, SELFMAG);
	image.header.e_ident[EI_CLASS] = ELFCLASS64;
	image.header.e_ident[EI_DATA] = ELFDATA2LSB;
	image.header.e_ident[EI_VERSION] = EV_CURRENT;
	image.header.e_type = ET_DYN;
	image.header.e_machine = EM_X86_64;
	image.header.e_version = EV_CURRENT;
	image.header.e_ehsize = sizeof(Elf64_Ehdr);
	image.header.e_shoff = offsetof(__typeof__(image), sections);
	image.header.e_shentsize = sizeof(Elf64_Shdr);
	image.header.e_shnum = 4;
	image.header.e_shstrndx = 3;
	image.sections[1] = (Elf64_Shdr){ .sh_name = 1, .sh_type = SHT_SYMTAB, .sh_offset = 1 << 20,
					  .sh_size = (Elf64_Xword)300 << 20, .sh_link = 2, .sh_entsize = 24 };
	image.sections[2] = (Elf64_Shdr){ .sh_name = 9, .sh_type = SHT_STRTAB, .sh_offset = 4096, .sh_size = 16 };
	image.sections[3] = (Elf64_Shdr){ .sh_name = 17, .sh_type = SHT_STRTAB,
					  .sh_offset = offsetof(__typeof__(image), names),
					  .sh_size = sizeof(section_names) };
	memcpy(image.names, section_names, sizeof(section_names));
	assert_int_equal(write(fd, &image, sizeof(image)), (ssize_t)sizeof(image));
	assert_int_equal(ftruncate(fd, ((off_t)301 << 20) + 4096), 0);
	close(fd);
}

/* A file that asks its reader for 300 MiB costs root nothing: the worker hits its own limit,
 * and the file's pcs are named by the file, and the next file's by their functions. */
static void test_symbol_table_bomb_stays_in_the_worker(void **state)
{
	char dir[64], path[128], command[256];
	struct symbolize_native *symbolizer = symbolize_native_new();
	struct symbolize_native_frame found;
	long before;
	void *mapped;
	int fd;

	(void)state;
	test_make_sticky_dir(dir, sizeof(dir));
	FORMAT(path, "%s/bomb.so", dir);
	write_symtab_bomb(path);
	assert_int_equal(chown(path, 65534, 65534), 0);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	mapped = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	assert_true(mapped != MAP_FAILED);
	close(fd);
	before = peak_rss_kib();
	assert_int_equal(symbolize_native_lookup(symbolizer, getpid(), NULL, (uint64_t)(uintptr_t)mapped + 16, &found), 1);
	assert_null(found.symbol);
	assert_non_null(strstr(found.frame.file, "/bomb.so"));
	next_file_named_and_root_unharmed(symbolizer, before);
	symbolize_native_free(symbolizer);
	munmap(mapped, 4096);
	FORMAT(command, "rm -rf %s", dir);
	assert_int_equal(system(command), 0);
}

/* A C++ name of levels templates, each the last one twice (B<B<A, A>, B<A, A>>, ...): 300 bytes
 * that read as 2^levels times more. */
static void write_demangling_bomb_name(char *name, size_t size, int levels)
{
	int used = snprintf(name, size, "_Z1fI1A1BIS0_S0_E");

	for (int level = 0; level < levels; level++) {
		char id[8], digits[8];
		int value = level + 2, count = 0;

		/* substitution ids are base 36 */
		do {
			int digit = value % 36;

			digits[count++] = (char)(digit < 10 ? '0' + digit : 'A' + digit - 10);
			value /= 36;
		} while (value);
		for (int i = 0; i < count; i++)
			id[i] = digits[count - 1 - i];
		id[count] = 0;
		used += snprintf(name + used, size - (size_t)used, "S1_IS%s_S%s_E", id, id);
	}
	snprintf(name + used, size - (size_t)used, "EvT_");
}

/* A library (nobody's) whose one function's C++ name reads as 1.7 GB: the worker demangles it
 * under its own limits, root's memory stays where it was, and the next file is named. */
static void test_demangling_bomb_stays_in_the_worker(void **state)
{
	char dir[64], source[128], library[128], command[512], bomb_name[512];
	struct symbolize_native *symbolizer = symbolize_native_new();
	struct symbolize_native_frame found;
	long before;
	void *handle, *bomb;
	FILE *out;

	(void)state;
	test_make_sticky_dir(dir, sizeof(dir));
	FORMAT(source, "%s/bomb.c", dir);
	FORMAT(library, "%s/libbomb.so", dir);
	write_demangling_bomb_name(bomb_name, sizeof(bomb_name), 26);
	out = fopen(source, "w");
	assert_non_null(out);
	fprintf(out, "void bomb(void) __asm__(\"%s\");\nvoid bomb(void) { }\n", bomb_name);
	fclose(out);
	FORMAT(command, "cc -shared -fPIC -O0 -o %s %s", library, source);
	assert_int_equal(system(command), 0);
	assert_int_equal(chown(library, 65534, 65534), 0);
	handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(handle);
	bomb = dlsym(handle, bomb_name);
	assert_non_null(bomb);
	before = peak_rss_kib();
	assert_int_equal(symbolize_native_lookup(symbolizer, getpid(), NULL, (uint64_t)(uintptr_t)bomb, &found), 1);
	/* by its file (the worker died on it) or as mangled (the demangler gave up), never expanded */
	print_message("the bomb's frame: %.80s in %s\n", found.frame.name, found.frame.file);
	assert_true(strlen(found.frame.name) <= strlen(bomb_name) + 64);
	next_file_named_and_root_unharmed(symbolizer, before);
	symbolize_native_free(symbolizer);
	dlclose(handle);
	FORMAT(command, "rm -rf %s", dir);
	assert_int_equal(system(command), 0);
}

/* Whether a sample has a native frame in a file whose path holds name. */
static bool has_native_frame_in(const struct pf_sample *sample, const void *name)
{
	for (size_t f = 0; f < sample->frame_count; f++) {
		const char *file = sample->frames[f].file;

		if (sample->frames[f].kind == PF_FRAME_NATIVE && file && strstr(file, name))
			return true;
	}
	return false;
}

/* Samples of path with a native frame in a file whose path holds name. */
static size_t samples_in_file(const char *path, const char *name)
{
	return test_count_samples(path, has_native_frame_in, name);
}

/*
 * nobody's Python maps a file whose DWARF inflates to 600 MiB for whoever builds its unwind
 * table, and compresses in libz. The profiler's parser worker pays for the file (it hits its
 * memory limit, the file gets no table); the profiler's own peak memory stays that of a run,
 * and the same run still unwinds through libz and libpython.
 */
static void test_unwind_bomb_costs_one_file_in_a_run(void **state)
{
	char dir[64], bomb[128], command[1024], profile[128], log[128], pid_text[16], summary[8192];
	char *argv[] = { (char *)pybpfprof_binary(), "-v", "-F", "197", "-d", "4", "-p", pid_text, "-o", profile, NULL };
	long peak_kib;
	pid_t target;
	size_t in_libz, got;
	FILE *python;
	int status, fd;

	(void)state;
	if (access("/usr/bin/python3", X_OK))
		skip();
	test_make_sticky_dir(dir, sizeof(dir));
	FORMAT(bomb, "%s/bomb.so", dir);
	FORMAT(profile, "%s/out.mojo", dir);
	FORMAT(log, "%s/profiler.log", dir);
	write_inflation_bomb(bomb);
	assert_int_equal(chown(bomb, 65534, 65534), 0);
	FORMAT(command,
	       "exec setpriv --reuid=nobody --regid=nogroup --clear-groups /usr/bin/python3 -c '"
	       "import mmap, os, zlib\n"
	       "f = open(\"%s\", \"rb\"); m = mmap.mmap(f.fileno(), 8192, prot=mmap.PROT_READ | mmap.PROT_EXEC)\n"
	       "print(os.getpid(), flush=True)\n"
	       "while True: zlib.compress(os.urandom(1 << 16), 9)'",
	       bomb);
	python = test_popen_ready(command, &target);
	FORMAT(pid_text, "%d", (int)target);
	status = test_run_watching_peak_rss(argv, log, &peak_kib);
	kill(target, SIGKILL);
	pclose(python);
	fd = open(log, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	got = (size_t)read(fd, summary, sizeof(summary) - 1);
	close(fd);
	summary[got < sizeof(summary) ? got : 0] = 0;
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	in_libz = samples_in_file(profile, "libz.so");
	print_message("profiler's peak RSS %ld KiB; %zu samples through libz; %s\n", peak_kib, in_libz,
		      strstr(summary, "pybpfprof: unwind tables:") ? strstr(summary, "pybpfprof: unwind tables:") : summary);
	/* what a run holds, far from the 600 MiB the file asks of its reader */
	assert_true(peak_kib > 0 && peak_kib < 150 << 10);
	assert_true(in_libz > 0);
	assert_non_null(strstr(summary, "no table: "));
	FORMAT(command, "rm -rf %s", dir);
	assert_int_equal(system(command), 0);
}

/* The private bytes of the worker's heap ([heap] in /proc/PID/smaps), KiB; -1 if unreadable. */
static long heap_private_kib(pid_t pid)
{
	char path[64], line[512];
	bool in_heap = false;
	long kib = -1, value;
	FILE *smaps;

	FORMAT(path, "/proc/%d/smaps", (int)pid);
	smaps = fopen(path, "r");
	if (!smaps)
		return -1;
	while (fgets(line, sizeof(line), smaps)) {
		unsigned long start, end;

		/* a mapping's line ("start-end perms ... [heap]"), then its fields */
		if (sscanf(line, "%lx-%lx ", &start, &end) == 2)
			in_heap = strstr(line, "[heap]") != NULL;
		else if (in_heap && sscanf(line, "Private_Dirty: %ld kB", &value) == 1)
			kib = value;
	}
	fclose(smaps);
	return kib;
}

/* A worker keeps its heap across a burst of files (no page faults each time), and gives it
 * back once no request has come for a moment: an idle worker holds little. */
static void test_idle_worker_gives_its_heap_back(void **state)
{
	struct parser_client *client = new_client(256 << 20, 10000, false);
	long busy_kib, idle_kib = -1;
	void *payload;
	size_t len;
	pid_t pid;
	int fd;

	(void)state;
	/* libc's unwind rows: a table of some 28,000 rows built on the worker's heap */
	fd = open("/lib/x86_64-linux-gnu/libc.so.6", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(parser_client_request(client, PARSER_REQUEST_UNWIND_ROWS, fd, 0, 64 << 20, &payload, &len), 0);
	close(fd);
	free(payload);
	pid = parser_client_worker_pid(client);
	assert_true(pid > 0);
	busy_kib = heap_private_kib(pid);
	/* given back within a second of idling; waited for as long as a loaded machine needs */
	for (int tries = 0; tries < 600; tries++) {
		idle_kib = heap_private_kib(pid);
		if (idle_kib >= 0 && idle_kib < busy_kib / 2)
			break;
		usleep(50 * 1000);
	}
	print_message("worker heap, private: %ld KiB after the table, %ld KiB idle\n", busy_kib, idle_kib);
	assert_true(busy_kib >= 512);
	assert_true(idle_kib >= 0 && idle_kib < busy_kib / 2);
	/* and it still answers */
	check_reads_libz(client);
	parser_client_free(client);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_worker_is_sandboxed),
		cmocka_unit_test(test_crash_costs_one_request),
		cmocka_unit_test(test_batch_death_costs_one_file),
		cmocka_unit_test(test_bloat_stops_at_the_memory_limit),
		cmocka_unit_test(test_overrun_is_cut),
		cmocka_unit_test(test_selftest_kinds_refused_in_production),
		cmocka_unit_test(test_answer_past_its_budget),
		cmocka_unit_test(test_lying_answers_refused),
		cmocka_unit_test(test_debuglink_to_a_terminal_is_not_opened),
		cmocka_unit_test(test_symbol_table_bomb_stays_in_the_worker),
		cmocka_unit_test(test_demangling_bomb_stays_in_the_worker),
		cmocka_unit_test(test_unwind_bomb_costs_one_file_in_a_run),
		cmocka_unit_test(test_profiler_as_a_service_takes_no_terminal),
		cmocka_unit_test(test_idle_worker_gives_its_heap_back),
	};

	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	if (geteuid() != 0) {
		print_message("the parser worker is started by root: skipped\n");
		return 0;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
