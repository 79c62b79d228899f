/* SPDX-License-Identifier: MIT */
/*
 * Shared by the cmocka tests (tests/lib/testlib.c, linked into every one): where the reference
 * data and the checkout are, file helpers, and for the end-to-end tests the interpreters, child
 * processes and the pybpfprof binary.
 */
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
const char *testdata_dir(void);

void testdata_path(char *out, size_t len, const char *relative);

/* A fresh scratch directory for one test binary: removed at its exit if every test passed. */
const char *test_tmpdir(void);

/* Whole file into a malloc'd buffer (NUL-terminated); NULL if unreadable. */
uint8_t *read_whole_file(const char *path, size_t *len);

int write_whole_file(const char *path, const void *data, size_t len);

/* The file that this process's mapping holding addr maps, as /proc/self/maps tells it
 * (inode 0 if none does). */
struct proc_file_id test_file_holding(uint64_t addr);

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
const char *test_source_dir(void);

/* pyenv's versions folder, as tools/pyenv-versions.sh (which every script asks) names it:
 * $PYENV_ROOT/versions, else /root/.pyenv/versions. */
const char *test_pyenv_versions(void);

struct test_python {
	char label[32];    /* "3.12", "3.11-static", "3.14" */
	char version[32];  /* "3.12.1" */
	char kind[16];     /* pyenv, static, chroot */
	char command[1024]; /* what runs a script: append the script path */
};

/* The interpreters tests/pythons/list-pythons.sh finds on this machine. */
size_t test_pythons(struct test_python *out, size_t max);

/* The interpreter labelled `label` in list (as test_pythons filled it), NULL if absent. */
const struct test_python *test_python_find(const struct test_python *list, size_t count, const char *label);

/* Split a command line on spaces into argv (no quoting: our commands have none). */
int split_command(char *command, char **argv, int max);

/* Start argv with stdout on a pipe (if out_fd) and stderr into a file (if err_path). */
pid_t test_spawn(char *const argv[], int *out_fd, const char *err_path);

/*
 * The CPU time process pid has had so far (all its threads, user and system), in ms; fails the test
 * if it cannot be read. A cpu-mode profile holds about this times the rate in samples, however busy
 * the machine: tests that count samples of a running process compare with it, not with wall time.
 */
uint64_t test_cpu_ms(pid_t pid);

/* The peak resident memory (VmHWM, KiB) of pid, 0 when it is gone. */
long test_peak_rss_kib(pid_t pid);

/* How long pid's main thread has waited for a CPU so far (schedstat's run delay), ns; 0 unknown. */
uint64_t test_cpu_wait_ns(pid_t pid);

/* What a watched run did: its peak resident memory (VmHWM, KiB), and the share of its wall time
 * its main thread (a profiler's draining thread) spent waiting for a CPU. */
struct test_run_watch {
	long peak_kib;
	double cpu_wait_share;
	uint64_t wall_ms; /* from its start to its end */
};

/* Runs argv to its end, its output into the file log, watching it (above); its wait status. */
int test_run_watching(char *const argv[], const char *log, struct test_run_watch *watch);

int test_run_watching_peak_rss(char *const argv[], const char *log, long *peak_kib);

/* The shell command started with its output piped to us; it prints its pid once ready, read into
 * *pid. The pipe, for pclose. */
FILE *test_popen_ready(const char *command, pid_t *pid);

/* Shell-style status of a child: exit code, or 128 + signal. */
int test_wait_status(pid_t pid);

/* Runs argv to the end; its stderr lands in err (NUL-terminated). */
int run_capture(char *const argv[], char *err, size_t errlen);

/* Runs argv; its stdout into out, its stderr into err; returns the exit status. */
int run_capture_both(char *const argv[], char *out, size_t outlen, char *err, size_t errlen);

/* Runs a shell command from the checkout, its stdout and stderr into out (NUL-terminated, cut at
 * len); returns its exit status (fails the test if it did not exit). */
int run_shell(const char *command, char *out, size_t len);

/* Runs pybpfprof with the arguments from first on (NULL-ended, at most 30); its stdout into out,
 * its stderr into err; returns the exit status. */
int run_pybpfprof_capture(char *out, size_t outlen, char *err, size_t errlen, const char *first, ...);

/* Runs argv; its stdout into out (NUL-terminated, cut at len); fails the test unless it exits 0. */
void run_output(char *const argv[], char *out, size_t len);

/*
 * Runs `prlimit LIMIT ARGV...` (e.g. LIMIT "--as=67108864": a ceiling on its address space)
 * with stdout discarded; its stderr lands in err. The shell-style exit status.
 */
int run_limited(const char *limit, char *const argv[], char *err, size_t errlen);

/* The pybpfprof binary under test. */
/*
 * A fork of this process as nobody (uid and gid 65534, no groups) that dies with this one, runs
 * prepare(arg) when given, says it is ready and waits to be killed: its pid, once it is ready.
 * A prepare that fails (non-zero) ends the child before it is ready, failing the test. The
 * parent-death signal is set after the ids change, which would clear it.
 */
pid_t test_fork_as_nobody(int (*prepare)(const void *arg), const void *arg);

/* Copies of a library: dir/libN.so for N from first, count of them. */
struct test_library_copies {
	const char *dir;
	size_t first, count;
};

/* A test_fork_as_nobody prepare: maps each of the test_library_copies arg executable; 0 or -1. */
int test_map_library_copies(const void *arg);

/* A world-writable sticky directory, as /tmp is, for nobody to plant names in. */
void test_make_sticky_dir(char *dir, size_t len);

/* What nobody can do: run a shell command as uid and gid 65534 without groups; its status. */
int test_run_as_nobody(const char *command);

/* The pybpfprof binary under test (also the parser worker every test's symbolizing starts). */
const char *pybpfprof_binary(void);

bool file_exists(const char *path);

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

/*
 * CPython 3.15's own reader (`python3.15 -m profiling.sampling replay`) in
 * the sid chroot of tests/pythons/provision-sid.sh. Returns the number of
 * samples it replayed from a Tachyon file, or -1 if the chroot is absent;
 * -2 (with its output in err) if it refused the file.
 */
long cpython_replay_samples(const char *tachyon_path, char *err, size_t errlen);

/* The reference reader, where the sid chroot has it, must replay every sample of a Tachyon file. */
void assert_cpython_accepts(const char *tachyon, size_t samples);

/*
 * Runs tests/scripts/SCRIPT ARGS with `python` (its stdout piped to *out_fd) and returns its
 * pid once the script's first line says "ready" (its threads all run), that line in ready_line
 * (what the script reports after the word); fails the test if it does not within 20 s.
 */
pid_t test_start_ready_script_line(const struct test_python *python, const char *script, const char *args, int *out_fd, char *ready_line, size_t len);

/* test_start_ready_script_line, for a script that says only "ready". */
pid_t test_start_ready_script(const struct test_python *python, const char *script, const char *args, int *out_fd);

/* The command that runs interpreter `label` (as test_pythons lists it); false if absent. */
bool test_python_command(const char *label, char *command, size_t len);

/* pybpfprof --mode MODE -F RATE -p PID for seconds, into a MOJO and a Tachyon file; fails the test
 * (naming label) if it does not exit 0. */
void test_record_pid(const char *label, const char *mode, const char *rate, pid_t pid, const char *seconds, const char *mojo, const char *tachyon);

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
int test_run_per_python(const char *group, const char *const *labels, size_t label_count, const struct test_per_python *kinds, size_t kind_count);

/* The interpreter a per-interpreter test's state (its label) names, from list; skips the test,
 * saying so, when that interpreter is absent. */
const struct test_python *test_wanted_python(void **state, const struct test_python *list, size_t count);

/* A profile file opened with the project's readers; fails the test, naming the file, if it cannot be. */
struct pf_reader *test_open_profile(const char *path);

/* How many samples of the profile at path match(sample, arg). */
size_t test_count_samples(const char *path, bool (*match)(const struct pf_sample *, const void *), const void *arg);

/* The metadata value of key in the profile at path ("" if none), into out. */
void test_profile_metadata(const char *path, const char *key, char *out, size_t len);

/* Whether the file at path holds text anywhere. */
bool test_file_holds(const char *path, const char *text);

/* `go tool pprof -raw` of the file: its sample types line holds types (e.g. "page-faults/count space/bytes"). */
void test_assert_pprof_sample_types(const char *path, const char *types);

/* `pybpfprof top` of the file: the heading says what its weights count, and the function ranks
 * (among as many as the file has: the kernel frames of its stack may weigh as much and come first). */
void test_assert_top_ranks(const char *path, const char *heading, const char *function);

/* A script started by a test, with the pipe it reports on. */
struct test_target {
	pid_t pid;
	int out_fd;
};

void test_stop_target(struct test_target *target);

/* Whether a sample holds a Python frame of that function. */
bool test_has_python_frame(const struct pf_sample *sample, const char *name);

#endif
