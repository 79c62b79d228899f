// SPDX-License-Identifier: MIT
/*
 * What `pybpfprof record` writes and as whom (real BPF, root): a failed or killed
 * run keeps the older outputs, a planted symlink or a FIFO is refused, under sudo
 * the outputs and the launched command belong to the sudo user, and a whole-host
 * profile is readable by root alone.
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

/* ---- outputs: nothing replaced before there is something to keep, nothing followed ---- */

static bool file_has(const char *path, const char *content)
{
	size_t len = 0;
	uint8_t *data = read_whole_file(path, &len);
	bool same = data && len == strlen(content) && memcmp(data, content, len) == 0;

	free(data);
	return same;
}

/* No "NAME.partial-*" left beside path. */
static void assert_no_partial_files(const char *path)
{
	char command[PATH_MAX + 64];

	FORMAT(command, "! ls %s.partial-* >/dev/null 2>&1", path);
	assert_int_equal(system(command), 0);
}

/* A run that fails to start keeps the previous profiles byte for byte. */
static void failed_run_keeps_old_outputs(void **state)
{
	char mojo[PATH_MAX], tachyon[PATH_MAX], err[4096];
	char *argv[] = { (char *)pybpfprof_binary(), "-q", "-o", mojo, "-o", tachyon, "--",
			 "/nonexistent", NULL };

	(void)state;
	FORMAT(mojo, "%s/keep.mojo", test_tmpdir());
	FORMAT(tachyon, "%s/keep.bin", test_tmpdir());
	assert_int_equal(write_whole_file(mojo, "old mojo", 8), 0);
	assert_int_equal(write_whole_file(tachyon, "old tachyon", 11), 0);
	assert_int_equal(run_capture(argv, err, sizeof(err)), 127);
	assert_true(file_has(mojo, "old mojo"));
	assert_true(file_has(tachyon, "old tachyon"));
	assert_no_partial_files(mojo);
	assert_no_partial_files(tachyon);
}

/* nobody links the output name to a root-only file: root's run must not write through it. */
static void planted_symlink_is_refused(void **state)
{
	char dir[64], secret[PATH_MAX], out[PATH_MAX], plant[PATH_MAX * 3], err[4096], link[PATH_MAX];
	char *argv[] = { (char *)pybpfprof_binary(), "-q", "-o", out, "--", "true", NULL };
	struct stat info;
	ssize_t len;
	int status;

	(void)state;
	test_make_sticky_dir(dir, sizeof(dir));
	FORMAT(secret, "%s/secret", test_tmpdir());
	assert_int_equal(write_whole_file(secret, "root only", 9), 0);
	assert_int_equal(chmod(secret, 0600), 0);
	FORMAT(out, "%s/out.mojo", dir);
	FORMAT(plant, "ln -s %s %s", secret, out);
	assert_int_equal(test_run_as_nobody(plant), 0);
	status = run_capture(argv, err, sizeof(err));
	print_message("output a planted link -> exit %d: %s", status, err);
	assert_true(status != 0);
	assert_non_null(strstr(err, "symbolic link"));
	assert_true(file_has(secret, "root only"));
	assert_int_equal(stat(secret, &info), 0);
	assert_int_equal(info.st_mode & 07777, 0600);
	assert_int_equal(info.st_uid, 0);
	assert_int_equal(lstat(out, &info), 0);
	assert_true(S_ISLNK(info.st_mode));
	len = readlink(out, link, sizeof(link) - 1);
	assert_true(len > 0);
	link[len] = 0;
	assert_string_equal(link, secret);
	unlink(out);
	rmdir(dir);
}

/* A FIFO at the output path: refused at once (a writer would block forever on it). */
static void fifo_output_is_refused(void **state)
{
	char out[PATH_MAX], err[4096];
	char *argv[] = { "timeout", "20", (char *)pybpfprof_binary(), "-q", "-o", out, "--", "true", NULL };
	struct stat info;
	int status;

	(void)state;
	FORMAT(out, "%s/fifo.mojo", test_tmpdir());
	unlink(out);
	assert_int_equal(mkfifo(out, 0666), 0);
	status = run_capture(argv, err, sizeof(err));
	print_message("output a FIFO -> exit %d: %s", status, err);
	assert_true(status != 0 && status != 124);
	assert_non_null(strstr(err, "FIFO"));
	assert_int_equal(lstat(out, &info), 0);
	assert_true(S_ISFIFO(info.st_mode));
	unlink(out);
}

/* SIGKILL: the older aggregates (written whole at the end) stay, the MOJO file reads. */
static void killed_run_keeps_older_files(void **state)
{
	struct running_python target;
	char pid_text[16], mojo[PATH_MAX], collapsed[PATH_MAX], svg[PATH_MAX], err[512];
	char *argv[] = { (char *)pybpfprof_binary(), "-q", "-p", pid_text, "-o", mojo,
			 "-o", collapsed, "-o", svg, NULL };
	pid_t profiler;
	uint64_t cpu_before, cpu_ms;

	(void)state;
	FORMAT(mojo, "%s/older.mojo", test_tmpdir());
	FORMAT(collapsed, "%s/older.collapsed", test_tmpdir());
	FORMAT(svg, "%s/older.svg", test_tmpdir());
	assert_int_equal(write_whole_file(mojo, "old", 3), 0);
	assert_int_equal(write_whole_file(collapsed, "main;old 1\n", 11), 0);
	assert_int_equal(write_whole_file(svg, "<svg/>\n", 7), 0);
	start_spinner(&target, pythons, python_count, "split split split");
	FORMAT(pid_text, "%d", (int)target.pid);
	profiler = test_spawn(argv, NULL, NULL);
	wait_for_heavy_samples(mojo);
	cpu_before = test_cpu_ms(target.pid);
	usleep(3500 * 1000);
	kill(profiler, SIGKILL);
	test_wait_status(profiler);
	cpu_ms = test_cpu_ms(target.pid) - cpu_before;
	stop_spinner(&target);
	assert_true(file_has(collapsed, "main;old 1\n"));
	assert_true(file_has(svg, "<svg/>\n"));
	/* what was flushed (each second): the run but its last second */
	assert_heavy_for_cpu("killed, older files kept", count_samples_of(mojo, 0, "heavy", err, sizeof(err)),
			     cpu_ms * 5 / 7, 4);
}

static mode_t current_umask(void)
{
	mode_t mask = umask(0);

	umask(mask);
	return mask;
}

/* Under sudo the profile is the invoking user's; its mode follows the umask. */
static void sudo_user_owns_outputs(void **state)
{
	char out[PATH_MAX], err[4096];
	char *argv[] = { "env", "SUDO_UID=65534", "SUDO_GID=65534", "SUDO_USER=nobody",
			 (char *)pybpfprof_binary(), "-q", "-o", out, "--", "true", NULL };
	struct stat info;

	(void)state;
	FORMAT(out, "%s/sudo.mojo", test_tmpdir());
	unlink(out);
	assert_int_equal(run_capture(argv, err, sizeof(err)), 0);
	assert_int_equal(stat(out, &info), 0);
	assert_int_equal(info.st_uid, 65534);
	assert_int_equal(info.st_gid, 65534);
	assert_int_equal(info.st_mode & 07777, 0644 & ~current_umask());
}

/* A whole-host profile names every user's files and functions: only its owner reads it. */
static void whole_host_profile_is_private(void **state)
{
	char out[PATH_MAX], err[4096];
	char *argv[] = { (char *)pybpfprof_binary(), "-q", "-d", "1", "-o", out, NULL };
	struct stat info;

	(void)state;
	FORMAT(out, "%s/host.mojo", test_tmpdir());
	unlink(out);
	assert_int_equal(run_capture(argv, err, sizeof(err)), 0);
	assert_int_equal(stat(out, &info), 0);
	assert_int_equal(info.st_mode & 07777, 0600);
}

/* ---- launch: the command gets the invoking user's identity, none of our capabilities ---- */

/* The launched command's view of itself: capability sets, uid, home. */
#define SHOW_IDENTITY "grep -E '^(CapInh|CapAmb|Uid):' /proc/self/status; echo HOME=$HOME USER=$USER"

static void launched_command_is_the_sudo_user(void **state)
{
	char out[PATH_MAX], seen[4096], err[4096], home[PATH_MAX + 8];
	char *argv[] = { "env", "SUDO_UID=65534", "SUDO_GID=65534", "HOME=/root", "USER=root",
			 "setpriv", "--inh-caps=+bpf,+perfmon", "--ambient-caps=+bpf,+perfmon",
			 (char *)pybpfprof_binary(), "-q", "-o", out, "--", "sh", "-c",
			 SHOW_IDENTITY, NULL };
	const struct passwd *nobody = getpwuid(65534);
	int status;

	(void)state;
	assert_non_null(nobody);
	FORMAT(out, "%s/launch-user.mojo", test_tmpdir());
	FORMAT(home, "HOME=%s USER=%s", nobody->pw_dir, nobody->pw_name);
	status = run_capture_both(argv, seen, sizeof(seen), err, sizeof(err));
	print_message("launched as the sudo user -> exit %d: %s%s", status, seen, err);
	assert_int_equal(status, 0);
	assert_non_null(strstr(seen, "CapInh:\t0000000000000000"));
	assert_non_null(strstr(seen, "CapAmb:\t0000000000000000"));
	assert_non_null(strstr(seen, "Uid:\t65534\t65534"));
	assert_non_null(strstr(seen, home));
}

/* SUDO_UID=0: the command runs as root, and the user is told so; our capabilities still stay. */
static void launched_command_as_root_says_so(void **state)
{
	char out[PATH_MAX], seen[4096], err[4096];
	char *argv[] = { "env", "SUDO_UID=0", "SUDO_GID=0", "setpriv", "--inh-caps=+bpf,+perfmon",
			 "--ambient-caps=+bpf,+perfmon", (char *)pybpfprof_binary(), "-q", "-o",
			 out, "--", "sh", "-c", SHOW_IDENTITY, NULL };
	int status;

	(void)state;
	FORMAT(out, "%s/launch-root.mojo", test_tmpdir());
	status = run_capture_both(argv, seen, sizeof(seen), err, sizeof(err));
	print_message("launched under sudo as root -> exit %d: %s%s", status, seen, err);
	assert_int_equal(status, 0);
	assert_non_null(strstr(seen, "CapInh:\t0000000000000000"));
	assert_non_null(strstr(seen, "CapAmb:\t0000000000000000"));
	assert_non_null(strstr(err, "runs as root"));
}

int main(void)
{
	struct CMUnitTest tests[64];
	size_t count = 0;

	/* TEST_FILTER=forked_* runs the matching tests only (these take minutes in all). */
	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	python_count = test_pythons(pythons, MAX_PYTHONS);
	tests[count++] = (struct CMUnitTest)cmocka_unit_test(failed_run_keeps_old_outputs);
	tests[count++] = (struct CMUnitTest)cmocka_unit_test(planted_symlink_is_refused);
	tests[count++] = (struct CMUnitTest)cmocka_unit_test(fifo_output_is_refused);
	tests[count++] = (struct CMUnitTest)cmocka_unit_test(killed_run_keeps_older_files);
	tests[count++] = (struct CMUnitTest)cmocka_unit_test(sudo_user_owns_outputs);
	tests[count++] = (struct CMUnitTest)cmocka_unit_test(whole_host_profile_is_private);
	tests[count++] = (struct CMUnitTest)cmocka_unit_test(launched_command_is_the_sudo_user);
	tests[count++] = (struct CMUnitTest)cmocka_unit_test(launched_command_as_root_says_so);
	return _cmocka_run_group_tests("record_outputs", tests, count, NULL, NULL);
}
