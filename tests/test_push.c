// SPDX-License-Identifier: MIT
/*
 * Continuous mode as a fleet uses it: --push sends each window as pprof to a
 * Pyroscope-compatible ingest endpoint (a loopback stand-in here,
 * tests/scripts/push_server.py), and `go tool pprof` reads every window; with
 * the endpoint down, sampling goes on, the file output is whole, and the
 * summary counts the failed pushes. Real BPF.
 */
#include "testlib.h"

#include "util/exit_status.h"

#include <signal.h>
#include <sys/stat.h>

static char out_text[1 << 16], err_text[1 << 14];

static const struct test_python *pick_python(struct test_python *pythons, size_t count)
{
	for (size_t i = 0; i < count; i++)
		if (strcmp(pythons[i].label, "3.12") == 0)
			return &pythons[i];
	return count ? &pythons[0] : NULL;
}

/* A CPU-bound script that runs for about seconds. */
static void write_workload(const char *path, double seconds)
{
	char text[512];

	snprintf(text, sizeof(text),
		 "import time\n"
		 "def push_spin():\n"
		 "    t = time.time()\n"
		 "    while time.time() - t < %g: pass\n"
		 "push_spin()\n",
		 seconds);
	assert_int_equal(write_whole_file(path, text, strlen(text)), 0);
}

/* Starts the stand-in endpoint; its port. */
static int start_server(const char *dir, pid_t *pid)
{
	char script[PATH_MAX + 64], port_text[16] = "";
	char *argv[] = { "/usr/bin/python3", script, (char *)dir, NULL };
	int out_fd;
	ssize_t got;

	snprintf(script, sizeof(script), "%s/tests/scripts/push_server.py", test_source_dir());
	*pid = test_spawn(argv, &out_fd, NULL);
	assert_true(*pid > 0);
	got = read(out_fd, port_text, sizeof(port_text) - 1);
	close(out_fd);
	assert_true(got > 0);
	return atoi(port_text);
}

static void stop_server(pid_t pid)
{
	kill(pid, SIGKILL);
	test_wait_status(pid);
}

static int run_pushing(const struct test_python *python, const char *url, const char *output, const char *script)
{
	char command[PATH_MAX * 4];
	char *argv[32];

	snprintf(command, sizeof(command),
		 "%s -v --push %s --window 1 --app fleet-test --label env=ci -o %s -F 200 -- %s %s", pybpfprof_binary(),
		 url, output, python->command, script);
	split_command(command, argv, 32);
	return run_capture_both(argv, out_text, sizeof(out_text), err_text, sizeof(err_text));
}

static void windows_arrive_as_pprof(void **state)
{
	struct test_python pythons[16];
	const struct test_python *python = pick_python(pythons, test_pythons(pythons, 16));
	char dir[PATH_MAX], script[PATH_MAX], output[PATH_MAX], url[64], path[PATH_MAX + 32];
	pid_t server;
	int windows = 0;

	(void)state;
	assert_non_null(python);
	snprintf(dir, sizeof(dir), "%s/ingest", test_tmpdir());
	mkdir(dir, 0755);
	snprintf(script, sizeof(script), "%s/push_work.py", test_tmpdir());
	snprintf(output, sizeof(output), "%s/push.mojo", test_tmpdir());
	write_workload(script, 3.6);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", start_server(dir, &server));
	assert_int_equal(run_pushing(python, url, output, script), 0);
	stop_server(server);
	print_message("%s", err_text);
	for (int n = 1; n < 100; n++) {
		char *argv[] = { "go", "tool", "pprof", "-top", path, NULL };
		uint8_t *query;
		size_t len;

		snprintf(path, sizeof(path), "%s/%d.query", dir, n);
		query = read_whole_file(path, &len);
		if (!query)
			break;
		/* the application, its mode and labels, the window's bounds, the format */
		assert_non_null(strstr((char *)query, "name=fleet-test.cpu%7Bhost%3D"));
		assert_non_null(strstr((char *)query, "env%3Dci%7D"));
		assert_non_null(strstr((char *)query, "&from="));
		assert_non_null(strstr((char *)query, "&format=pprof"));
		free(query);
		snprintf(path, sizeof(path), "%s/%d.pb.gz", dir, n);
		if (access("/usr/bin/go", X_OK) == 0) {
			assert_int_equal(run_capture_both(argv, out_text, sizeof(out_text), err_text, sizeof(err_text)),
					 0);
			assert_non_null(strstr(out_text, "Type: cpu"));
			if (n == 2) {
				print_message("window 2:\n%.400s\n", out_text);
				assert_non_null(strstr(out_text, "push_spin"));
			}
		}
		windows++;
	}
	print_message("%d windows arrived\n", windows);
	assert_true(windows >= 3);
	assert_true(file_exists(output));
}

static void endpoint_down_never_stops_sampling(void **state)
{
	struct test_python pythons[16];
	const struct test_python *python = pick_python(pythons, test_pythons(pythons, 16));
	char script[PATH_MAX], output[PATH_MAX];
	char *top[] = { (char *)pybpfprof_binary(), "top", output, NULL };
	const char *failed;

	(void)state;
	assert_non_null(python);
	snprintf(script, sizeof(script), "%s/push_down.py", test_tmpdir());
	snprintf(output, sizeof(output), "%s/push-down.mojo", test_tmpdir());
	write_workload(script, 2.5);
	/* Port 1 on loopback: nothing listens, every push is refused; a run that delivered
	 * nothing fails, so that whatever supervises it notices. */
	assert_int_equal(run_pushing(python, "http://127.0.0.1:1", output, script), EXIT_STATUS_PUSH);
	print_message("%s", err_text);
	/* one warning for the whole streak of failures, and the count in the summary */
	failed = strstr(err_text, "push to http://127.0.0.1:1 failed");
	assert_non_null(failed);
	assert_null(strstr(failed + 1, "push to http://127.0.0.1:1 failed"));
	assert_non_null(strstr(err_text, "pybpfprof: --push: none of the "));
	assert_non_null(strstr(err_text, "pybpfprof: push: 0 of "));
	assert_null(strstr(err_text, " 0 failed pushes"));
	/* sampling went on: the file holds the workload */
	assert_int_equal(run_capture_both(top, out_text, sizeof(out_text), err_text, sizeof(err_text)),
			 EXIT_STATUS_OK);
	assert_non_null(strstr(out_text, "push_spin"));
}

/* --window without --push: each output written per window, numbered, each a whole profile. */
static void file_windows(void **state)
{
	struct test_python pythons[16];
	const struct test_python *python = pick_python(pythons, test_pythons(pythons, 16));
	char script[PATH_MAX], output[PATH_MAX], path[PATH_MAX + 16], command[PATH_MAX * 4];
	char *argv[32], *top[] = { (char *)pybpfprof_binary(), "top", path, NULL };
	int windows = 0;

	(void)state;
	assert_non_null(python);
	snprintf(script, sizeof(script), "%s/window_work.py", test_tmpdir());
	snprintf(output, sizeof(output), "%s/windowed.mojo", test_tmpdir());
	write_workload(script, 3.6);
	snprintf(command, sizeof(command), "%s -q --window 1s -o %s -F 200 -- %s %s", pybpfprof_binary(), output,
		 python->command, script);
	split_command(command, argv, 32);
	assert_int_equal(run_capture_both(argv, out_text, sizeof(out_text), err_text, sizeof(err_text)), 0);
	assert_false(file_exists(output));
	for (int n = 1; n < 100; n++) {
		snprintf(path, sizeof(path), "%s/windowed-%04d.mojo", test_tmpdir(), n);
		if (!file_exists(path))
			break;
		assert_int_equal(run_capture_both(top, out_text, sizeof(out_text), err_text, sizeof(err_text)),
				 EXIT_STATUS_OK);
		/* every full window holds the busy function; the last may be the interpreter's exit */
		if (n <= 2)
			assert_non_null(strstr(out_text, "push_spin"));
		windows++;
	}
	print_message("%d window files\n", windows);
	assert_true(windows >= 3);
}

static void push_options_need_push(void **state)
{
	char *argv[] = { (char *)pybpfprof_binary(), "--app", "x", "-p", "1", NULL };
	char *bad_label[] = { (char *)pybpfprof_binary(), "--push", "http://127.0.0.1:1", "--label", "a{b}=c", "-p",
			      "1", NULL };

	(void)state;
	assert_int_equal(run_capture_both(argv, out_text, sizeof(out_text), err_text, sizeof(err_text)),
			 EXIT_STATUS_USAGE);
	assert_non_null(strstr(err_text, "go with --push URL"));
	assert_int_equal(run_capture_both(bad_label, out_text, sizeof(out_text), err_text, sizeof(err_text)),
			 EXIT_STATUS_USAGE);
	assert_non_null(strstr(err_text, "invalid label"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(windows_arrive_as_pprof),
		cmocka_unit_test(endpoint_down_never_stops_sampling),
		cmocka_unit_test(file_windows),
		cmocka_unit_test(push_options_need_push),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
