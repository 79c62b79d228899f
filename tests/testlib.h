/* SPDX-License-Identifier: MIT */
/* Shared by the cmocka tests: where the reference data lives, small file helpers. */
#ifndef PYBPFPROF_TESTLIB_H
#define PYBPFPROF_TESTLIB_H

#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "formats/format_registry.h"
#include "profile/profile.h"
#include "proc/proc_identity.h"
#include "proc/proc_maps.h"

/* The reference files (tests/data/README.md): $PYBPFPROF_TESTDATA, else tests/data of this checkout. */
static inline const char *testdata_dir(void)
{
	const char *dir = getenv("PYBPFPROF_TESTDATA");

	return dir && *dir ? dir : "tests/data";
}

static inline void testdata_path(char *out, size_t len, const char *relative)
{
	snprintf(out, len, "%s/%s", testdata_dir(), relative);
}

/* A fresh scratch directory for one test binary (removed by the OS's tmp cleaning). */
static inline const char *test_tmpdir(void)
{
	static char dir[64];

	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/pybpfprof-test.XXXXXX");
		if (!mkdtemp(dir))
			abort();
	}
	return dir;
}

/* Whole file into a malloc'd buffer (NUL-terminated); NULL if unreadable. */
static inline uint8_t *read_whole_file(const char *path, size_t *len)
{
	FILE *file = fopen(path, "rb");
	uint8_t *data = NULL;
	long size;

	if (!file)
		return NULL;
	if (fseek(file, 0, SEEK_END) == 0 && (size = ftell(file)) >= 0 && fseek(file, 0, SEEK_SET) == 0) {
		data = malloc((size_t)size + 1);
		if (data && fread(data, 1, (size_t)size, file) != (size_t)size) {
			free(data);
			data = NULL;
		}
		if (data) {
			data[size] = 0;
			*len = (size_t)size;
		}
	}
	fclose(file);
	return data;
}

static inline int write_whole_file(const char *path, const void *data, size_t len)
{
	FILE *file = fopen(path, "wb");
	int ok;

	if (!file)
		return -1;
	ok = fwrite(data, 1, len, file) == len;
	return fclose(file) == 0 && ok ? 0 : -1;
}



/* The file that this process's mapping holding addr maps, as /proc/self/maps tells it
 * (inode 0 if none does). */
static inline struct proc_file_id test_file_holding(uint64_t addr)
{
	struct proc_file_id file = { 0 };
	struct proc_maps maps;

	assert_int_equal(proc_maps_read(getpid(), &maps), 0);
	for (size_t i = 0; i < maps.count; i++)
		if (addr >= maps.maps[i].start && addr < maps.maps[i].end)
			file = (struct proc_file_id){ maps.maps[i].inode, maps.maps[i].dev_major, maps.maps[i].dev_minor };
	proc_maps_free(&maps);
	return file;
}

#endif

/* ---- for tests that run real interpreters and the pybpfprof binary ---- */

/* snprintf into an array, failing the test rather than silently cutting a path. */
#define FORMAT(buffer, ...)                                                              \
	do {                                                                             \
		if ((size_t)snprintf((buffer), sizeof(buffer), __VA_ARGS__) >= sizeof(buffer)) \
			fail_msg("text too long for %s", #buffer);                       \
	} while (0)

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <sys/stat.h>

/* The checkout: $PYBPFPROF_SRCDIR, else found upwards from the test binary. */
static inline const char *test_source_dir(void)
{
	static char dir[PATH_MAX];
	const char *env = getenv("PYBPFPROF_SRCDIR");

	if (env && *env)
		return env;
	if (dir[0])
		return dir;
	if (realpath("/proc/self/exe", dir)) {
		for (int depth = 0; depth < 5; depth++) {
			char probe[PATH_MAX + 64];
			char *slash = strrchr(dir, '/');

			if (!slash || slash == dir)
				break;
			*slash = 0;
			snprintf(probe, sizeof(probe), "%s/tests/pythons/list-pythons.sh", dir);
			if (access(probe, R_OK) == 0)
				return dir;
		}
	}
	snprintf(dir, sizeof(dir), ".");
	return dir;
}

struct test_python {
	char label[32];    /* "3.12", "3.11-static", "3.14" */
	char version[32];  /* "3.12.1" */
	char kind[16];     /* pyenv, static, chroot */
	char command[1024]; /* what runs a script: append the script path */
};

/* The interpreters tests/pythons/list-pythons.sh finds on this machine. */
static inline size_t test_pythons(struct test_python *out, size_t max)
{
	char command[PATH_MAX + 64], line[2048];
	size_t count = 0;
	FILE *list;

	snprintf(command, sizeof(command), "%s/tests/pythons/list-pythons.sh 2>/dev/null",
		 test_source_dir());
	list = popen(command, "r");
	if (!list)
		return 0;
	while (count < max && fgets(line, sizeof(line), list)) {
		char *fields[4], *save = NULL, *field = strtok_r(line, "\t\n", &save);
		int n = 0;

		for (; field && n < 4; field = strtok_r(NULL, "\t\n", &save))
			fields[n++] = field;
		if (n != 4)
			continue;
		snprintf(out[count].label, sizeof(out[count].label), "%s", fields[0]);
		snprintf(out[count].version, sizeof(out[count].version), "%s", fields[1]);
		snprintf(out[count].kind, sizeof(out[count].kind), "%s", fields[2]);
		snprintf(out[count].command, sizeof(out[count].command), "%s", fields[3]);
		count++;
	}
	pclose(list);
	return count;
}

/* The interpreter labelled `label` in list (as test_pythons filled it), NULL if absent. */
static inline const struct test_python *test_python_find(const struct test_python *list, size_t count,
							 const char *label)
{
	for (size_t i = 0; i < count; i++)
		if (strcmp(list[i].label, label) == 0)
			return &list[i];
	return NULL;
}

/* Split a command line on spaces into argv (no quoting: our commands have none). */
static inline int split_command(char *command, char **argv, int max)
{
	char *save = NULL;
	int argc = 0;

	for (char *word = strtok_r(command, " ", &save); word && argc < max - 1;
	     word = strtok_r(NULL, " ", &save))
		argv[argc++] = word;
	argv[argc] = NULL;
	return argc;
}

/* Start argv with stdout on a pipe (if out_fd) and stderr into a file (if err_path). */
static inline pid_t test_spawn(char *const argv[], int *out_fd, const char *err_path)
{
	int out_pipe[2] = { -1, -1 };
	pid_t pid;

	if (out_fd && pipe(out_pipe) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		if (out_fd) {
			dup2(out_pipe[1], 1);
			close(out_pipe[0]);
			close(out_pipe[1]);
		}
		if (err_path) {
			int err_fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

			if (err_fd >= 0)
				dup2(err_fd, 2);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	if (out_fd) {
		close(out_pipe[1]);
		*out_fd = out_pipe[0];
	}
	return pid;
}

/*
 * The CPU time process pid has had so far (all its threads, user and system), in ms; fails the test
 * if it cannot be read. A cpu-mode profile holds about this times the rate in samples, however busy
 * the machine: tests that count samples of a running process compare with it, not with wall time.
 */
static inline uint64_t test_cpu_ms(pid_t pid)
{
	char path[64], text[1024];
	unsigned long long utime = 0, stime = 0;
	const char *fields;
	FILE *stat;
	size_t got;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	stat = fopen(path, "r");
	if (!stat)
		fail_msg("%s: %s", path, strerror(errno));
	got = fread(text, 1, sizeof(text) - 1, stat);
	fclose(stat);
	text[got] = 0;
	/* after the command's name: state, then fields 4 to 13, then utime and stime */
	fields = strrchr(text, ')');
	if (!fields || sscanf(fields + 1, " %*c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu %llu", &utime,
			      &stime) != 2)
		fail_msg("%s: no CPU times in '%s'", path, text);
	return (utime + stime) * 1000u / (unsigned long long)sysconf(_SC_CLK_TCK);
}

/* The peak resident memory (VmHWM, KiB) of pid, 0 when it is gone. */
static inline long test_peak_rss_kib(pid_t pid)
{
	char text[8192];
	const char *line;

	if (proc_identity_read_file(pid, "status", text, sizeof(text)) <= 0)
		return 0;
	line = strstr(text, "VmHWM:");
	return line ? atol(line + strlen("VmHWM:")) : 0;
}

/* How long pid's main thread has waited for a CPU so far (schedstat's run delay), ns; 0 unknown. */
static inline uint64_t test_cpu_wait_ns(pid_t pid)
{
	char text[256];
	unsigned long long run_ns, wait_ns;

	if (proc_identity_read_file(pid, "schedstat", text, sizeof(text)) <= 0 ||
	    sscanf(text, "%llu %llu", &run_ns, &wait_ns) != 2)
		return 0;
	return wait_ns;
}

/* What a watched run did: its peak resident memory (VmHWM, KiB), and the share of its wall time
 * its main thread (a profiler's draining thread) spent waiting for a CPU. */
struct test_run_watch {
	long peak_kib;
	double cpu_wait_share;
	uint64_t wall_ms; /* from its start to its end */
};

/* Runs argv to its end, its output into the file log, watching it (above); its wait status. */
static inline int test_run_watching(char *const argv[], const char *log, struct test_run_watch *watch)
{
	struct timespec start, now;
	uint64_t wait_ns = 0;
	pid_t pid;
	int status;

	clock_gettime(CLOCK_MONOTONIC, &start);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int out = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		if (out < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
			_exit(127);
		execv(argv[0], argv);
		_exit(127);
	}
	watch->peak_kib = 0;
	while (waitpid(pid, &status, WNOHANG) == 0) {
		long peak = test_peak_rss_kib(pid);
		uint64_t waited = test_cpu_wait_ns(pid);

		if (peak > watch->peak_kib)
			watch->peak_kib = peak;
		if (waited > wait_ns)
			wait_ns = waited;
		usleep(20000);
	}
	clock_gettime(CLOCK_MONOTONIC, &now);
	watch->wall_ms = (uint64_t)((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000);
	watch->cpu_wait_share = (double)wait_ns / ((double)watch->wall_ms * 1e6 + 1.0);
	return status;
}

static inline int test_run_watching_peak_rss(char *const argv[], const char *log, long *peak_kib)
{
	struct test_run_watch watch;
	int status = test_run_watching(argv, log, &watch);

	*peak_kib = watch.peak_kib;
	return status;
}

/* The shell command started with its output piped to us; it prints its pid once ready, read into
 * *pid. The pipe, for pclose. */
static inline FILE *test_popen_ready(const char *command, pid_t *pid)
{
	FILE *process = popen(command, "r");

	assert_non_null(process);
	assert_int_equal(fscanf(process, "%d", pid), 1);
	return process;
}

/* Shell-style status of a child: exit code, or 128 + signal. */
static inline int test_wait_status(pid_t pid)
{
	int status = 0;

	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Runs argv to the end; its stderr lands in err (NUL-terminated). */
static inline int run_capture(char *const argv[], char *err, size_t errlen)
{
	char err_path[PATH_MAX];
	size_t len = 0;
	uint8_t *text;
	int status;
	pid_t pid;

	snprintf(err_path, sizeof(err_path), "%s/stderr.%d", test_tmpdir(), (int)getpid());
	pid = test_spawn(argv, NULL, err_path);
	status = pid > 0 ? test_wait_status(pid) : 127;
	text = read_whole_file(err_path, &len);
	snprintf(err, errlen, "%s", text ? (char *)text : "");
	free(text);
	unlink(err_path);
	return status;
}

/* Runs argv; its stdout into out, its stderr into err; returns the exit status. */
static inline int run_capture_both(char *const argv[], char *out, size_t outlen, char *err, size_t errlen)
{
	char err_path[PATH_MAX];
	size_t used = 0, len = 0;
	uint8_t *text;
	ssize_t got;
	int out_fd, status;
	pid_t pid;

	snprintf(err_path, sizeof(err_path), "%s/both.%d", test_tmpdir(), (int)getpid());
	pid = test_spawn(argv, &out_fd, err_path);
	if (pid <= 0)
		return 127;
	while (used + 1 < outlen && (got = read(out_fd, out + used, outlen - 1 - used)) > 0)
		used += (size_t)got;
	out[used] = 0;
	close(out_fd);
	status = test_wait_status(pid);
	text = read_whole_file(err_path, &len);
	snprintf(err, errlen, "%s", text ? (char *)text : "");
	free(text);
	unlink(err_path);
	return status;
}

/*
 * Runs `prlimit LIMIT ARGV...` (e.g. LIMIT "--as=67108864": a ceiling on its address space)
 * with stdout discarded; its stderr lands in err. The shell-style exit status.
 */
static inline int run_limited(const char *limit, char *const argv[], char *err, size_t errlen)
{
	char *limited[16] = { "prlimit", (char *)limit };
	char err_path[PATH_MAX];
	size_t len = 0, count = 2;
	uint8_t *text;
	int status;
	pid_t pid;

	for (size_t i = 0; argv[i] && count + 1 < 16; i++)
		limited[count++] = argv[i];
	limited[count] = NULL;
	snprintf(err_path, sizeof(err_path), "%s/limited.%d", test_tmpdir(), (int)getpid());
	pid = fork();
	if (pid == 0) {
		int null_fd = open("/dev/null", O_WRONLY);
		int err_fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		dup2(null_fd, 1);
		dup2(err_fd, 2);
		execvp(limited[0], limited);
		_exit(127);
	}
	status = pid > 0 ? test_wait_status(pid) : 127;
	text = read_whole_file(err_path, &len);
	snprintf(err, errlen, "%s", text ? (char *)text : "");
	free(text);
	unlink(err_path);
	return status;
}

/* The pybpfprof binary under test. */
/*
 * A fork of this process as nobody (uid and gid 65534, no groups) that dies with this one, runs
 * prepare(arg) when given, says it is ready and waits to be killed: its pid, once it is ready.
 * A prepare that fails (non-zero) ends the child before it is ready, failing the test. The
 * parent-death signal is set after the ids change, which would clear it.
 */
static inline pid_t test_fork_as_nobody(int (*prepare)(const void *arg), const void *arg)
{
	int ready[2];
	char byte = 0;
	pid_t pid;

	assert_int_equal(pipe(ready), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(ready[0]);
		if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534) ||
		    prctl(PR_SET_PDEATHSIG, SIGKILL))
			_exit(120);
		if (prepare && prepare(arg))
			_exit(121);
		if (write(ready[1], &byte, 1) != 1)
			_exit(122);
		for (;;)
			pause();
	}
	close(ready[1]);
	assert_int_equal(read(ready[0], &byte, 1), 1);
	close(ready[0]);
	return pid;
}

/* Copies of a library: dir/libN.so for N from first, count of them. */
struct test_library_copies {
	const char *dir;
	size_t first, count;
};

/* A test_fork_as_nobody prepare: maps each of the test_library_copies arg executable; 0 or -1. */
static inline int test_map_library_copies(const void *arg)
{
	const struct test_library_copies *copies = arg;

	for (size_t i = copies->first; i < copies->first + copies->count; i++) {
		char path[PATH_MAX + 32];
		int fd;

		snprintf(path, sizeof(path), "%s/lib%zu.so", copies->dir, i);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0) == MAP_FAILED)
			return -1;
		close(fd);
	}
	return 0;
}

/* A world-writable sticky directory, as /tmp is, for nobody to plant names in. */
static inline void test_make_sticky_dir(char *dir, size_t len)
{
	snprintf(dir, len, "/tmp/pybpfprof-attack.XXXXXX");
	assert_non_null(mkdtemp(dir));
	assert_int_equal(chmod(dir, 01777), 0);
}

/* What nobody can do: run a shell command as uid and gid 65534 without groups; its status. */
static inline int test_run_as_nobody(const char *command)
{
	char *argv[] = { "setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
			 "sh", "-c", (char *)command, NULL };
	char err[1024];
	int status = run_capture(argv, err, sizeof(err));

	if (status)
		print_message("as nobody: %s: %s\n", command, err);
	return status;
}

static inline const char *pybpfprof_binary(void)
{
	static char path[PATH_MAX + 16];

	snprintf(path, sizeof(path), "%s/pybpfprof", test_source_dir());
	return path;
}

#include "parser/parser_client.h"

/* The files a test symbolizes are read by the parser worker, which is the pybpfprof binary
 * under test (a test binary is not one): set before any test runs. */
__attribute__((constructor)) static void test_parser_worker_is_pybpfprof(void)
{
	parser_client_set_default_executable(pybpfprof_binary());
}

static inline bool file_exists(const char *path)
{
	return access(path, F_OK) == 0;
}

/*
 * CPython 3.15's own reader (`python3.15 -m profiling.sampling replay`) in
 * the sid chroot of tests/pythons/provision-sid.sh. Returns the number of
 * samples it replayed from a Tachyon file, or -1 if the chroot is absent;
 * -2 (with its output in err) if it refused the file.
 */
/* A function of the test executable named like one of the interpreter's (the main executable counts
 * as the interpreter when native frames are named), for synthetic native stacks. */
static volatile int test_interpreter_sink __attribute__((unused));
#define INTERPRETER_FUNCTION(name)                                    \
	__attribute__((noinline, used)) void name(void);             \
	__attribute__((noinline, used)) void name(void)              \
	{                                                            \
		for (int i = 0; i < 8; i++)                          \
			test_interpreter_sink += i * __LINE__;       \
	}

#define SID_CHROOT "/var/cache/pybpfprof/sid"

static inline long cpython_replay_samples(const char *tachyon_path, char *err, size_t errlen)
{
	char inside[128], copy[PATH_MAX + 128], command[PATH_MAX * 2];
	uint8_t *data;
	size_t len = 0;
	long replayed = -2;
	FILE *output;

	if (access(SID_CHROOT "/usr/bin/python3.15", X_OK) != 0)
		return -1;
	snprintf(inside, sizeof(inside), "/tmp/pybpfprof-replay-%d.bin", (int)getpid());
	snprintf(copy, sizeof(copy), "%s%s", SID_CHROOT, inside);
	data = read_whole_file(tachyon_path, &len);
	if (!data || write_whole_file(copy, data, len) != 0) {
		free(data);
		snprintf(err, errlen, "cannot copy %s into the chroot", tachyon_path);
		return -2;
	}
	free(data);
	snprintf(command, sizeof(command),
		 "chroot %s python3.15 -m profiling.sampling replay --collapsed -o /tmp/replay.out %s 2>&1",
		 SID_CHROOT, inside);
	output = popen(command, "r");
	err[0] = 0;
	if (output) {
		char line[4096];
		size_t used = 0;

		while (fgets(line, sizeof(line), output)) {
			const char *found = strstr(line, "Replayed ");

			if (found)
				replayed = strtol(found + 9, NULL, 10);
			if (used < errlen)
				used += (size_t)snprintf(err + used, errlen - used, "%s", line);
		}
		if (pclose(output) != 0)
			replayed = -2;
	}
	unlink(copy);
	return replayed;
}

/* The reference reader, where the sid chroot has it, must replay every sample of a Tachyon file. */
static inline void assert_cpython_accepts(const char *tachyon, size_t samples)
{
	char err[8192];
	long replayed = cpython_replay_samples(tachyon, err, sizeof(err));

	if (replayed == -1) {
		print_message("CPython 3.15 replay not checked: the sid chroot is absent\n");
		return;
	}
	if (replayed != (long)samples)
		fail_msg("python3.15 replay of %s: %ld of %zu samples: %s", tachyon, replayed, samples, err);
}

/*
 * Runs tests/scripts/SCRIPT ARGS with `python` (its stdout piped to *out_fd) and returns its
 * pid once the script's first line says "ready" (its threads all run), that line in ready_line
 * (what the script reports after the word); fails the test if it does not within 20 s.
 */
static inline pid_t test_start_ready_script_line(const struct test_python *python, const char *script,
						 const char *args, int *out_fd, char *ready_line, size_t len)
{
	char command[1400], *argv[32];
	struct pollfd ready;
	ssize_t got;
	pid_t pid;

	assert_true(len > 1);
	FORMAT(command, "%s %s/tests/scripts/%s %s", python->command, test_source_dir(), script, args);
	split_command(command, argv, 32);
	pid = test_spawn(argv, out_fd, NULL);
	assert_true(pid > 0);
	ready = (struct pollfd){ .fd = *out_fd, .events = POLLIN };
	if (poll(&ready, 1, 20000) != 1)
		fail_msg("%s: the script did not start", python->label);
	got = read(*out_fd, ready_line, len - 1);
	ready_line[got > 0 ? got : 0] = 0;
	if (strncmp(ready_line, "ready", 5) != 0)
		fail_msg("%s: the script said '%s'", python->label, ready_line);
	return pid;
}

/* test_start_ready_script_line, for a script that says only "ready". */
static inline pid_t test_start_ready_script(const struct test_python *python, const char *script,
					    const char *args, int *out_fd)
{
	char line[64];

	return test_start_ready_script_line(python, script, args, out_fd, line, sizeof(line));
}

/* The command that runs interpreter `label` (as test_pythons lists it); false if absent. */
static inline bool test_python_command(const char *label, char *command, size_t len)
{
	struct test_python found[32];
	size_t count = test_pythons(found, 32);

	for (size_t i = 0; i < count; i++)
		if (strcmp(found[i].label, label) == 0)
			return (size_t)snprintf(command, len, "%s", found[i].command) < len;
	return false;
}

/* pybpfprof --mode MODE -F RATE -p PID for seconds, into a MOJO and a Tachyon file; fails the test
 * (naming label) if it does not exit 0. */
static inline void test_record_pid(const char *label, const char *mode, const char *rate, pid_t pid,
				   const char *seconds, const char *mojo, const char *tachyon)
{
	char pid_text[16], err[4096];
	char *argv[] = { (char *)pybpfprof_binary(), "-q", "--mode", (char *)mode, "-F", (char *)rate, "-p", pid_text,
			 "-d", (char *)seconds, "-o", (char *)mojo, "-o", (char *)tachyon, NULL };
	int status;

	snprintf(pid_text, sizeof(pid_text), "%d", (int)pid);
	status = run_capture(argv, err, sizeof(err));
	if (status != 0)
		fail_msg("%s: pybpfprof --mode %s exited %d: %s", label, mode, status, err);
}

/* One test of a per-interpreter suite: its name's prefix and its function. */
struct test_per_python {
	const char *prefix;             /* "wall_threads_" gives "wall_threads_3.12" */
	CMUnitTestFunction run;         /* gets the interpreter's label as its state */
};

#define TEST_PER_PYTHON_MAX 64

/*
 * Runs every kind of test on every label, named prefix + label, in label order: the
 * suites of real-BPF tests over interpreters (TEST_FILTER picks some). Needs root.
 */
static inline int test_run_per_python(const char *group, const char *const *labels, size_t label_count,
				      const struct test_per_python *kinds, size_t kind_count)
{
	static char names[TEST_PER_PYTHON_MAX][64];
	static struct CMUnitTest tests[TEST_PER_PYTHON_MAX];
	size_t count = 0;

	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	if (geteuid() != 0) {
		print_message("%s: needs root (real BPF), skipped\n", group);
		return 0;
	}
	for (size_t i = 0; i < label_count; i++)
		for (size_t k = 0; k < kind_count && count < TEST_PER_PYTHON_MAX; k++, count++) {
			snprintf(names[count], sizeof(names[count]), "%s%s", kinds[k].prefix, labels[i]);
			tests[count] = (struct CMUnitTest){ .name = names[count], .test_func = kinds[k].run,
							    .initial_state = (void *)labels[i] };
		}
	return _cmocka_run_group_tests(group, tests, count, NULL, NULL);
}

/* The interpreter a per-interpreter test's state (its label) names, from list; skips the test,
 * saying so, when that interpreter is absent. */
static inline const struct test_python *test_wanted_python(void **state, const struct test_python *list,
							   size_t count)
{
	const char *label = *state;
	const struct test_python *python = test_python_find(list, count, label);

	if (!python) {
		print_message("%s: interpreter absent, skipped\n", label);
		skip();
	}
	return python;
}

/* A profile file opened with the project's readers; fails the test, naming the file, if it cannot be. */
static inline struct pf_reader *test_open_profile(const char *path)
{
	struct pf_reader *reader = NULL;
	char err[512];

	if (format_registry_open_reader(&reader, path, err, sizeof(err)))
		fail_msg("%s: %s", path, err);
	return reader;
}

/* How many samples of the profile at path match(sample, arg). */
static inline size_t test_count_samples(const char *path, bool (*match)(const struct pf_sample *, const void *),
					const void *arg)
{
	struct pf_reader *reader = test_open_profile(path);
	struct pf_sample sample;
	size_t count = 0;

	while (pf_reader_next_sample(reader, &sample) == 1)
		count += match(&sample, arg);
	pf_reader_close(reader);
	return count;
}

/* The metadata value of key in the profile at path ("" if none), into out. */
static inline void test_profile_metadata(const char *path, const char *key, char *out, size_t len)
{
	struct pf_reader *reader = test_open_profile(path);
	struct pf_sample sample;
	const char *value;

	while (pf_reader_next_sample(reader, &sample) == 1)
		;
	value = pf_reader_metadata(reader, key);
	snprintf(out, len, "%s", value ? value : "");
	pf_reader_close(reader);
}

/* Whether the file at path holds text anywhere. */
static inline bool test_file_holds(const char *path, const char *text)
{
	size_t len = 0;
	uint8_t *data = read_whole_file(path, &len);
	bool found = data && memmem(data, len, text, strlen(text)) != NULL;

	free(data);
	return found;
}

/* `go tool pprof -raw` of the file: its sample types line holds types (e.g. "page-faults/count space/bytes"). */
static inline void test_assert_pprof_sample_types(const char *path, const char *types)
{
	char *argv[] = { "go", "tool", "pprof", "-raw", (char *)path, NULL };
	static char out[1 << 16];
	char err[4096];
	int status = run_capture_both(argv, out, sizeof(out), err, sizeof(err));

	if (status != 0)
		fail_msg("go tool pprof -raw %s exited %d: %s", path, status, err);
	if (!strstr(out, types))
		fail_msg("%s: pprof sample types are not '%s':\n%.600s", path, types, out);
}

/* `pybpfprof top` of the file: the heading says what its weights count, and the function ranks
 * (among as many as the file has: the kernel frames of its stack may weigh as much and come first). */
static inline void test_assert_top_ranks(const char *path, const char *heading, const char *function)
{
	char *argv[] = { (char *)pybpfprof_binary(), "top", "-n", "1000", (char *)path, NULL };
	static char out[1 << 16];
	char err[4096];

	assert_int_equal(run_capture_both(argv, out, sizeof(out), err, sizeof(err)), 0);
	if (!strstr(out, heading) || !strstr(out, function))
		fail_msg("pybpfprof top %s: expected '%s' and '%s' in:\n%.1500s", path, heading, function, out);
}

/* A script started by a test, with the pipe it reports on. */
struct test_target {
	pid_t pid;
	int out_fd;
};

static inline void test_stop_target(struct test_target *target)
{
	kill(target->pid, SIGKILL);
	test_wait_status(target->pid);
	close(target->out_fd);
}

/* Whether a sample holds a Python frame of that function. */
static inline bool test_has_python_frame(const struct pf_sample *sample, const char *name)
{
	for (size_t i = 0; i < sample->frame_count; i++)
		if (sample->frames[i].kind == PF_FRAME_PYTHON && strcmp(sample->frames[i].name, name) == 0)
			return true;
	return false;
}
