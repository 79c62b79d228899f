// SPDX-License-Identifier: MIT
/*
 * `pybpfprof record`'s refusals (root): a bad pid, a process that is not Python or
 * runs an unsupported version, an unwritable output, an unknown format, a command
 * not found, no root, a kernel without BTF: each one line naming the cause, and the
 * exit status of its class.
 */
#include "testlib.h"

#include "formats/format_registry.h"
#include "profile/profile.h"
#include "worker/unwind_build.h"
#include "util/array.h"
#include "util/exit_status.h"

#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stddef.h>

#include <math.h>
#include <pwd.h>
#include <sys/prctl.h>
#include <sys/stat.h>

#define WORKLOAD "workload.py"
#define MAX_PYTHONS 32

static struct test_python pythons[MAX_PYTHONS];
static size_t python_count;

static const struct test_python *find_python(const char *label)
{
	return test_python_find(pythons, python_count, label);
}

static void script_path(char *out, size_t len, const char *name)
{
	if ((size_t)snprintf(out, len, "%s/tests/scripts/%s", test_source_dir(), name) >= len)
		fail_msg("path too long");
}

/* ---- what one workload profile must show ---- */

struct workload_findings {
	size_t samples;
	size_t heavy, light;
	size_t heavy_wrong_place, light_wrong_place;
	size_t recursion_samples, recursion_whole;
	size_t deep_samples, deep_cut_and_marked;
	uint64_t worker_tid[4];
	size_t worker_samples[4];
	size_t worker_tid_conflicts;
	size_t read_samples, read_with_kernel_read_path, read_kernel_before_python;
};

/* ---- attach, exit status, signals ---- */

struct running_python {
	pid_t pid;
};

/* A Python spinning in the split phase for a while; returns once it runs. */
static void start_spinner(struct running_python *target, const char *phases)
{
	const struct test_python *python = find_python("3.12");
	char command[1200], script[PATH_MAX];
	char *argv[32];

	if (!python)
		python = &pythons[0];
	assert_true(python_count > 0);
	script_path(script, sizeof(script), WORKLOAD);
	FORMAT(command, "%s %s %s", python->command, script, phases);
	split_command(command, argv, 32);
	target->pid = test_spawn(argv, NULL, NULL);
	assert_true(target->pid > 0);
	/* Long enough for the interpreter to be up; discovery retries if it isn't quite. */
	usleep(300 * 1000);
}

static void stop_spinner(struct running_python *target)
{
	kill(target->pid, SIGKILL);
	test_wait_status(target->pid);
}

struct native_findings {
	size_t loop_samples;    /* samples under compress_loop */
	size_t in_libz;         /* ... whose leaf is a native frame in libz */
	size_t native_frames;   /* native frames anywhere */
};

/* What a mixed-stack profile of native_work.py shows. */
struct mixed_findings {
	size_t loop_samples;        /* samples under compress_loop */
	size_t native_above_loop;   /* ... with a native frame above (leafward of) compress_loop */
	size_t libz_leaf;           /* ... whose leaf is in libz */
	size_t python_root;         /* samples whose root frame is a Python frame */
	size_t samples;
	double root_share;          /* native_root_share: walks that reached the root */
	unsigned long walks;        /* native_walks */
	unsigned long merge_failures;
};

/* ---- native stacks as a user reads them: one script, one interpreter, one profile ---- */

/* One recorded run of a script: its profile, the profiler's summary and the native-walk metadata. */
struct native_run {
	char path[PATH_MAX];
	char summary[8192];     /* the profiler's stderr */
	int status;
	size_t samples;
	unsigned long walks;
	double root_share;
	unsigned long merge_failures;
	unsigned long ring_bytes; /* the record ring's size at the end */
	char stops[256];        /* "no_mapping=3,deleted_file=5" */
};

typedef void (*sample_visit)(void *findings, const struct pf_sample *sample);

/* A'. A recursion deeper than the Python frames a sample keeps (the workload's 1500 levels): the
 * walk is cut at the root, and the native frames that ran below the cut (the interpreter's start-up:
 * _start ... Py_RunMain ... run_eval_code_obj) go with it, never above the Python leaf. */
struct deep_cut_findings {
	size_t deep_samples;     /* samples whose Python leaf is bottom_deep */
	size_t marked_at_root;   /* ... with the cut marker at the root */
	size_t startup_frames;   /* ... holding a frame of the interpreter's start-up */
	size_t native_below_leaf; /* ... with a native frame below (rootward of) the Python leaf */
	char example[256];       /* the first such frame, for the message */
};

/* b. ctypes qsort with a Python comparator: Python -> libffi -> qsort -> Python. */
struct qsort_findings {
	size_t compare_samples;  /* samples in the comparator */
	size_t whole_chain;      /* ... whose stack holds caller, ffi_call, qsort, comparator in that order */
};

/* c. sorted() with a Python key: the interpreter's C sort between the caller and the key. */
struct sorted_findings {
	size_t key_samples;      /* samples in the key function */
	size_t sort_between;     /* ... with builtin_sorted / list_sort_impl between the caller and the key */
	size_t only_native_between; /* ... with the caller below the key and nothing but native frames between */
	size_t calls_between;    /* ... with the interpreter's call machinery (PyObject_Vectorcall, ...) between */
};

/* d. Reading /dev/zero: kernel frames on libc's read on the Python frame, in one stack. */
struct read_findings {
	size_t reader_samples;
	size_t whole_chain; /* Python reader, then libc's read, then the kernel's read path */
};

/* e. Code the unwinder cannot follow: the walk says why, the Python and kernel frames stay. */
struct odd_findings {
	const char *spinner;     /* the Python function that runs the odd code */
	size_t spin_samples;     /* samples with that function */
	size_t with_kernel;      /* ... and kernel frames above it */
};

/* g. A stripped library whose static function is named only by its MiniDebugInfo (as Fedora ships). */
struct minidebuginfo_findings {
	size_t in_library;   /* samples whose leaf is in the library */
	size_t named;        /* ... named hidden_loop */
	char other[128];     /* the first other name such a leaf had, for the message */
};

/* f. numpy: its own C/C++ code and the BLAS above the Python function that called them. */
struct numpy_findings {
	size_t matmul_samples, matmul_with_numpy_and_blas;
	size_t sort_samples, sort_with_numpy;
	char matmul_example[512], sort_example[512];
};

/* h. A busy host: two CPU-bound processes beside the target, which gets a third of a CPU. */
/* A hog ends by itself this long after it starts, whatever becomes of the test. */

struct zlib_chain_findings {
	const char *caller;   /* the Python function that calls zlib.compress */
	size_t zlib_samples;  /* samples under caller whose leaf is in libz, below deflate */
	size_t whole_chain;   /* ... with deflate between caller and the leaf */
};

/* The -v summary's late-unwinding line: copies BPF sent, received, unwound late, lost native frames. */
struct late_counts {
	unsigned long copies, received, unwound, lost;
};

/* Each thread's time stamps as a file holds them: how many went back. */
struct thread_clock {
	uint64_t keys[64][2]; /* pid, tid */
	uint64_t last_us[64];
	size_t count;
	size_t samples, went_back;
};

/* g. An independent unwinder: perf's DWARF call graphs of the zlib workload show the same heavy paths. */

#define PATHS_MAX 512
#define NAMES_MAX 256

/* Call paths (root to leaf, ";"-joined) and how many samples each. */
struct path_counts {
	char paths[PATHS_MAX][320];
	size_t counts[PATHS_MAX];
	size_t count, total;
	size_t cut; /* samples with comparable frames, none of them deflate */
};

struct name_set {
	char names[NAMES_MAX][128];
	size_t count;
};

/* The functions of one file, for naming perf's "[unknown]" frames as pybpfprof names them. */
struct file_functions {
	char path[PATH_MAX];
	struct unwind_function_range *ranges;
	size_t count;
	uint64_t text_addr, text_offset; /* the executable segment: link-time address and file offset */
};

/* One sample's comparable frames root to leaf: names[] (pointers into the caller's storage). */
struct frame_names {
	const char *names[128];
	size_t count;
};

typedef void (*stack_visit)(void *context, const struct frame_names *stack);

/* Where a stack goes: into the name set (first pass), or as a path of the names both tools saw. */
struct path_pass {
	struct name_set *seen;        /* first pass: every comparable name */
	const struct name_set *both;  /* second pass: only these names make the path */
	struct path_counts *paths;
};

/* ---- launch: the command gets the invoking user's identity, none of our capabilities ---- */

/* ---- bad input: one clear line, non-zero exit, no output file ---- */

/* expected_status: the class of the failure (util/exit_status.h), what a script would test. */
static void expect_clean_failure(char *const argv[], const char *output, const char *needle, int expected_status)
{
	char err[4096];
	int status;
	size_t lines = 0;

	unlink(output);
	status = run_capture(argv, err, sizeof(err));
	for (const char *c = err; *c; c++)
		lines += *c == '\n';
	print_message("%s -> exit %d: %s", argv[1], status, err);
	assert_int_equal(status, expected_status);
	assert_int_equal(lines, 1);
	assert_non_null(strstr(err, "pybpfprof"));
	if (!strstr(err, needle))
		fail_msg("expected '%s' in: %s", needle, err);
	assert_false(file_exists(output));
}

static pid_t dead_pid(void)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	test_wait_status(pid);
	return pid;
}

static void bad_pid(void **state)
{
	char out[PATH_MAX], pid_text[16];
	char *argv[] = { (char *)pybpfprof_binary(), "-p", pid_text, "-o", out, NULL };

	(void)state;
	FORMAT(out, "%s/bad-pid.mojo", test_tmpdir());
	FORMAT(pid_text, "%d", (int)dead_pid());
	expect_clean_failure(argv, out, "no such process", EXIT_STATUS_TARGET);
}

static void not_python(void **state)
{
	char out[PATH_MAX], pid_text[16];
	char *argv[] = { (char *)pybpfprof_binary(), "-p", pid_text, "-o", out, NULL };
	char *sleeper[] = { "sleep", "30", NULL };
	pid_t pid = test_spawn(sleeper, NULL, NULL);

	(void)state;
	usleep(100 * 1000);
	FORMAT(out, "%s/not-python.mojo", test_tmpdir());
	FORMAT(pid_text, "%d", (int)pid);
	expect_clean_failure(argv, out, "not a Python process", EXIT_STATUS_TARGET);
	kill(pid, SIGKILL);
	test_wait_status(pid);
}

/*
 * A CPython we have no offsets for: a program that loads a library named
 * libpython3.5m.so carrying 3.5's version string, as a real 3.5 would.
 */
static void unsupported_version(void **state)
{
	char dir[PATH_MAX], build[PATH_MAX * 3], out[PATH_MAX], pid_text[16], program[PATH_MAX];
	char *argv[] = { (char *)pybpfprof_binary(), "-p", pid_text, "-o", out, NULL };
	char *runner[] = { program, NULL };
	pid_t pid;

	(void)state;
	FORMAT(dir, "%s/fake35", test_tmpdir());
	mkdir(dir, 0755);
	FORMAT(build,
		 "printf 'const char version[] = \"3.5.10 (default, Jan  1 2020, 00:00:00) \\\\n[GCC 12]\";\\n"
		 "static void *interp_head; void *head(void) { return &interp_head; }\\n' > %s/lib.c && "
		 "cc -shared -fPIC -o %s/libpython3.5m.so.1.0 %s/lib.c && "
		 "printf '#include <unistd.h>\\nvoid *head(void); int main(void) { head(); for (;;) pause(); }\\n' > %s/main.c && "
		 "cc -o %s/python3.5 %s/main.c -L%s -l:libpython3.5m.so.1.0 -Wl,-rpath,%s",
		 dir, dir, dir, dir, dir, dir, dir, dir);
	assert_int_equal(system(build), 0);
	FORMAT(program, "%s/python3.5", dir);
	pid = test_spawn(runner, NULL, NULL);
	usleep(200 * 1000);
	FORMAT(out, "%s/unsupported.mojo", test_tmpdir());
	FORMAT(pid_text, "%d", (int)pid);
	expect_clean_failure(argv, out, "3.5", EXIT_STATUS_TARGET);
	kill(pid, SIGKILL);
	test_wait_status(pid);
}

static void unwritable_output(void **state)
{
	struct running_python target;
	char pid_text[16];
	char *argv[] = { (char *)pybpfprof_binary(), "-p", pid_text, "-o",
			 "/nonexistent-dir/out.mojo", NULL };

	(void)state;
	/* Alive for as long as a loaded machine may take to load the BPF program (~1 s a phase). */
	start_spinner(&target, "split split split split split split split split");
	FORMAT(pid_text, "%d", (int)target.pid);
	expect_clean_failure(argv, "/nonexistent-dir/out.mojo", "cannot write", EXIT_STATUS_OUTPUT);
	stop_spinner(&target);
}

static void unknown_format(void **state)
{
	char out[PATH_MAX], out_ext[PATH_MAX];
	char *by_flag[] = { (char *)pybpfprof_binary(), "-p", "1", "-f", "yaml", "-o", out, NULL };
	char *by_extension[] = { (char *)pybpfprof_binary(), "-p", "1", "-o", out_ext, NULL };

	(void)state;
	FORMAT(out, "%s/unknown.mojo", test_tmpdir());
	FORMAT(out_ext, "%s/unknown.yaml", test_tmpdir());
	expect_clean_failure(by_flag, out, "unknown format", EXIT_STATUS_USAGE);
	expect_clean_failure(by_extension, out_ext, "cannot tell the format", EXIT_STATUS_USAGE);
}

static void command_not_found(void **state)
{
	char out[PATH_MAX];
	char *argv[] = { (char *)pybpfprof_binary(), "-o", out, "--", "/no/such/python", NULL };

	(void)state;
	FORMAT(out, "%s/notfound.mojo", test_tmpdir());
	expect_clean_failure(argv, out, "cannot run '/no/such/python'", EXIT_STATUS_NOT_FOUND);
}

static void not_root(void **state)
{
	char out[PATH_MAX];
	char *argv[] = { "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
			 "--inh-caps=-all", (char *)pybpfprof_binary(), "-p", "1", "-o", out, NULL };
	char err[4096];
	int status;

	(void)state;
	/* nobody must be able to write where the output goes: the failure is about privilege. */
	FORMAT(out, "/tmp/pybpfprof-notroot-%d.mojo", (int)getpid());
	unlink(out);
	status = run_capture(argv, err, sizeof(err));
	print_message("as nobody -> exit %d: %s", status, err);
	assert_int_equal(status, EXIT_STATUS_UNAVAILABLE);
	assert_non_null(strchr(err, '\n'));
	assert_string_equal(strchr(err, '\n'), "\n"); /* one line */
	assert_non_null(strstr(err, "pybpfprof"));
	assert_true(strstr(err, "root") || strstr(err, "CAP_BPF"));
	assert_false(file_exists(out));
}

/* A kernel without BTF, as the profiler sees it: /sys/kernel/btf hidden in a private mount namespace. */
static void kernel_without_btf(void **state)
{
	char out[PATH_MAX], script[PATH_MAX * 2];
	char *argv[] = { "unshare", "--mount", "--propagation", "private", "sh", "-c", script, NULL };

	(void)state;
	FORMAT(out, "%s/no-btf.mojo", test_tmpdir());
	FORMAT(script, "mount -t tmpfs none /sys/kernel/btf && exec %s -p 1 -o %s",
	       pybpfprof_binary(), out);
	expect_clean_failure(argv, out, "no BTF", EXIT_STATUS_UNAVAILABLE);
}

int main(void)
{
	struct CMUnitTest tests[64];
	size_t count = 0;

	/* TEST_FILTER=forked_* runs the matching tests only (these take minutes in all). */
	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	python_count = test_pythons(pythons, MAX_PYTHONS);
	tests[count++] = (struct CMUnitTest)cmocka_unit_test(bad_pid);
	tests[count++] = (struct CMUnitTest)cmocka_unit_test(not_python);
	tests[count++] = (struct CMUnitTest)cmocka_unit_test(unsupported_version);
	tests[count++] = (struct CMUnitTest)cmocka_unit_test(unwritable_output);
	tests[count++] = (struct CMUnitTest)cmocka_unit_test(unknown_format);
	tests[count++] = (struct CMUnitTest)cmocka_unit_test(command_not_found);
	tests[count++] = (struct CMUnitTest)cmocka_unit_test(not_root);
	tests[count++] = (struct CMUnitTest)cmocka_unit_test(kernel_without_btf);
	return _cmocka_run_group_tests("record_errors", tests, count, NULL, NULL);
}
