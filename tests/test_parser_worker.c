// SPDX-License-Identifier: MIT
/*
 * The parser worker (user/parser/, doc/security.md) as an attacker would meet it: its
 * identity, capabilities, file system, memory limit and seccomp filter seen from outside
 * (/proc/PID/...), a worker that crashes, bloats or never answers costing one request and
 * no more, root checking what comes back, and a debug link to /dev/ptmx planted by nobody.
 */
#include "testlib.h"

#include <dirent.h>
#include <dlfcn.h>
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
	char path[64], text[8192];
	const char *line;
	int fd;
	ssize_t got;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	got = read(fd, text, sizeof(text) - 1);
	close(fd);
	assert_true(got > 0);
	text[got] = 0;
	line = strstr(text, field);
	if (!line)
		fail_msg("no %s in %s", field, path);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_worker_is_sandboxed),
		cmocka_unit_test(test_crash_costs_one_request),
		cmocka_unit_test(test_bloat_stops_at_the_memory_limit),
		cmocka_unit_test(test_overrun_is_cut),
		cmocka_unit_test(test_selftest_kinds_refused_in_production),
		cmocka_unit_test(test_answer_past_its_budget),
		cmocka_unit_test(test_lying_answers_refused),
	};

	if (geteuid() != 0) {
		print_message("the parser worker is started by root: skipped\n");
		return 0;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
