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

/* Starts a script that spins in push_spin for ever; its pid once it runs push_spin (*out_fd: its
 * stdout, for the caller to close). Attached to then, every window of a run lies within the work,
 * however long the interpreter took to start (on a cold or busy machine, more than a window). */
static pid_t start_spinning(const struct test_python *python, const char *script, int *out_fd)
{
	static const char spin_text[] = "import sys\n"
					"def push_spin():\n"
					"    while True: pass\n"
					"sys.stdout.write('ready\\n')\n"
					"sys.stdout.flush()\n"
					"push_spin()\n";
	char command[PATH_MAX * 2], ready[16] = "", *argv[32];
	struct pollfd started;
	pid_t spin;

	assert_int_equal(write_whole_file(script, spin_text, sizeof(spin_text) - 1), 0);
	snprintf(command, sizeof(command), "%s %s", python->command, script);
	split_command(command, argv, 32);
	spin = test_spawn(argv, out_fd, NULL);
	assert_true(spin > 0);
	started = (struct pollfd){ .fd = *out_fd, .events = POLLIN };
	if (poll(&started, 1, 20000) != 1 || read(*out_fd, ready, sizeof(ready) - 1) <= 0 ||
	    strncmp(ready, "ready", 5) != 0) {
		kill(spin, SIGKILL);
		fail_msg("%s: the workload did not start", python->label);
	}
	return spin;
}

static void stop_spinning(pid_t spin, int out_fd)
{
	kill(spin, SIGKILL);
	test_wait_status(spin);
	close(out_fd);
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

/* target: what to profile, as the command line's end ("-- python3 x.py", "-p 42 -d 3.5"). */
static int run_pushing(const char *url, const char *output, const char *target)
{
	char command[PATH_MAX * 4];
	char *argv[32];

	snprintf(command, sizeof(command), "%s -v --push %s --window 1 --app fleet-test --label env=ci -o %s -F 200 %s",
		 pybpfprof_binary(), url, output, target);
	split_command(command, argv, 32);
	return run_capture_both(argv, out_text, sizeof(out_text), err_text, sizeof(err_text));
}

static void windows_arrive_as_pprof(void **state)
{
	struct test_python pythons[16];
	const struct test_python *python = pick_python(pythons, test_pythons(pythons, 16));
	char dir[PATH_MAX], script[PATH_MAX], output[PATH_MAX], url[64], path[PATH_MAX + 32], target[64];
	pid_t server, spin;
	int windows = 0, spin_out;

	(void)state;
	assert_non_null(python);
	snprintf(dir, sizeof(dir), "%s/ingest", test_tmpdir());
	mkdir(dir, 0755);
	snprintf(script, sizeof(script), "%s/push_work.py", test_tmpdir());
	snprintf(output, sizeof(output), "%s/push.mojo", test_tmpdir());
	spin = start_spinning(python, script, &spin_out);
	snprintf(target, sizeof(target), "-p %d -d 3.5", (int)spin);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", start_server(dir, &server));
	assert_int_equal(run_pushing(url, output, target), 0);
	stop_spinning(spin, spin_out);
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
			/* every window lies within the work: each holds it */
			if (!strstr(out_text, "push_spin"))
				fail_msg("window %d has no push_spin:\n%.600s", n, out_text);
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
	char script[PATH_MAX], output[PATH_MAX], command[PATH_MAX * 3];
	char *top[] = { (char *)pybpfprof_binary(), "top", output, NULL };
	const char *failed;

	(void)state;
	assert_non_null(python);
	snprintf(script, sizeof(script), "%s/push_down.py", test_tmpdir());
	snprintf(output, sizeof(output), "%s/push-down.mojo", test_tmpdir());
	write_workload(script, 2.5);
	snprintf(command, sizeof(command), "-- %s %s", python->command, script);
	/* Port 1 on loopback: nothing listens, every push is refused; a run that delivered
	 * nothing fails, so that whatever supervises it notices. */
	assert_int_equal(run_pushing("http://127.0.0.1:1", output, command), EXIT_STATUS_PUSH);
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

/* --window without --push: each output written per window, numbered, each a whole profile of its
 * window; every window holds the work it lies within. */
static void file_windows(void **state)
{
	struct test_python pythons[16];
	const struct test_python *python = pick_python(pythons, test_pythons(pythons, 16));
	char script[PATH_MAX], output[PATH_MAX], path[PATH_MAX + 16], command[PATH_MAX * 4];
	char *argv[32], *top[] = { (char *)pybpfprof_binary(), "top", path, NULL };
	char duration[32];
	unsigned long long durations_us[100] = { 0 };
	int windows = 0, spin_out;
	pid_t spin;

	(void)state;
	assert_non_null(python);
	snprintf(script, sizeof(script), "%s/window_work.py", test_tmpdir());
	snprintf(output, sizeof(output), "%s/windowed.mojo", test_tmpdir());
	spin = start_spinning(python, script, &spin_out);
	snprintf(command, sizeof(command), "%s -q --window 1s -d 3.5 -o %s -F 200 -p %d", pybpfprof_binary(), output,
		 (int)spin);
	split_command(command, argv, 32);
	assert_int_equal(run_capture_both(argv, out_text, sizeof(out_text), err_text, sizeof(err_text)), 0);
	stop_spinning(spin, spin_out);
	assert_false(file_exists(output));
	for (int n = 1; n < 100; n++) {
		snprintf(path, sizeof(path), "%s/windowed-%04d.mojo", test_tmpdir(), n);
		if (!file_exists(path))
			break;
		assert_int_equal(run_capture_both(top, out_text, sizeof(out_text), err_text, sizeof(err_text)),
				 EXIT_STATUS_OK);
		/* every window, the last (half) one too */
		if (!strstr(out_text, "push_spin"))
			fail_msg("window %d has no push_spin:\n%s", n, out_text);
		test_profile_metadata(path, "duration", duration, sizeof(duration));
		durations_us[windows++] = strtoull(duration, NULL, 10);
	}
	print_message("%d window files, the first lasting %llu us\n", windows, durations_us[0]);
	/* 3.5 s in 1 s windows: three whole ones and the rest */
	assert_true(windows >= 3);
	assert_true(windows <= 4);
	/* each but the last lasted its second (MOJO's duration is in microseconds) */
	for (int n = 0; n + 1 < windows; n++)
		if (durations_us[n] < 1000000)
			fail_msg("window %d lasted %llu us of its 1 s", n + 1, durations_us[n]);
}

/* Starts the hostile endpoint as nobody, answering every push with status; its port. */
static int start_hostile_server(int status, pid_t *pid)
{
	char script[PATH_MAX + 64], status_text[16], port_text[16] = "";
	char *argv[] = { "setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "/usr/bin/python3",
			 script, status_text, NULL };
	int out_fd;
	ssize_t got;

	snprintf(script, sizeof(script), "%s/tests/scripts/push_hostile_server.py", test_source_dir());
	snprintf(status_text, sizeof(status_text), "%d", status);
	*pid = test_spawn(argv, &out_fd, NULL);
	assert_true(*pid > 0);
	got = read(out_fd, port_text, sizeof(port_text) - 1);
	close(out_fd);
	assert_true(got > 0);
	return atoi(port_text);
}

/* An endpoint answering with escape sequences and 60 MB: nothing of it reaches the terminal raw,
 * a 2xx still counts as delivered, and a failure names the status with the reply's start escaped. */
static void hostile_replies_stay_off_the_terminal(void **state)
{
	struct test_python pythons[16];
	const struct test_python *python = pick_python(pythons, test_pythons(pythons, 16));
	char script[PATH_MAX], output[PATH_MAX], command[PATH_MAX * 3], url[64];
	static const int statuses[] = { 200, 500 };

	(void)state;
	assert_non_null(python);
	snprintf(script, sizeof(script), "%s/push_hostile.py", test_tmpdir());
	snprintf(output, sizeof(output), "%s/push-hostile.mojo", test_tmpdir());
	write_workload(script, 2.5);
	snprintf(command, sizeof(command), "-- %s %s", python->command, script);
	for (size_t i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++) {
		pid_t server;
		int status;

		snprintf(url, sizeof(url), "http://127.0.0.1:%d", start_hostile_server(statuses[i], &server));
		status = run_pushing(url, output, command);
		stop_server(server);
		print_message("status %d: exit %d, %zu bytes of stdout\n%s", statuses[i], status, strlen(out_text),
			      err_text);
		assert_null(strchr(out_text, '\x1b'));
		assert_null(strstr(out_text, "AAAA"));
		assert_null(strchr(err_text, '\x1b'));
		assert_null(strchr(err_text, '\x07'));
		assert_null(strstr(err_text, "\xe2\x80\xae"));
		if (statuses[i] == 200) {
			assert_int_equal(status, 0);
			assert_null(strstr(err_text, "push: 0 of "));
		} else {
			assert_int_equal(status, EXIT_STATUS_PUSH);
			assert_non_null(strstr(err_text, "HTTP status 500 (\"\\x1b]0;owned\\x07\\x1b[2J\\u202eevil"));
		}
	}
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
		cmocka_unit_test(hostile_replies_stay_off_the_terminal),
	};

	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
