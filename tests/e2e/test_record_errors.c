// SPDX-License-Identifier: MIT
/*
 * `pybpfprof record`'s refusals (root): a bad pid, a process that is not Python or
 * runs an unsupported version, an unwritable output, an unknown format, a command
 * not found, no root, a kernel without BTF: each one line naming the cause, and the
 * exit status of its class.
 */
#include "record_run.h"

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

#define MAX_PYTHONS 32

static struct test_python pythons[MAX_PYTHONS];
static size_t python_count;

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
	start_spinner(&target, pythons, python_count, "split split split split split split split split");
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
