// SPDX-License-Identifier: MIT
/* Gated profiling runs (gated_run.h). */
#include "gated_run.h"

#include "formats/format_registry.h"
#include "profile/profile.h"

#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* What the test waits for before letting a workload start: this many samples of wait_for_go say
 * that its thread is sampled and named. */
#define WAIT_SAMPLES_MIN 20
/* Safety nets only (a hung run fails rather than hangs): nothing is measured against them. */
#define STARTUP_LIMIT_S 300
#define RUN_LIMIT_S 900

size_t gated_run_waiting_samples(const char *path, pid_t pid)
{
	struct pf_reader *reader = NULL;
	struct pf_sample sample;
	char err[512];
	size_t count = 0;

	if (access(path, R_OK) != 0 || format_registry_open_reader(&reader, path, err, sizeof(err)))
		return 0;
	while (pf_reader_next_sample(reader, &sample) == 1)
		count += sample.pid == (uint32_t)pid && test_has_python_frame(&sample, "wait_for_go");
	pf_reader_close(reader);
	return count;
}

/* The workload's line of truth, into line. */
static void read_truth(int fd, char *line, size_t len)
{
	struct pollfd ready = { .fd = fd, .events = POLLIN };
	ssize_t got;

	if (poll(&ready, 1, RUN_LIMIT_S * 1000) != 1)
		fail_msg("the workload did not finish within %d s", RUN_LIMIT_S);
	got = read(fd, line, len - 1);
	line[got > 0 ? got : 0] = 0;
}

static pid_t start_profiler(const struct gated_run *run, pid_t target, const char *mojo, const char *log)
{
	char pid_text[16], limit[16], *argv[48];
	size_t argc = 0, max = sizeof(argv) / sizeof(argv[0]);

	snprintf(pid_text, sizeof(pid_text), "%d", (int)target);
	snprintf(limit, sizeof(limit), "%d", RUN_LIMIT_S);
	argv[argc++] = (char *)pybpfprof_binary();
	argv[argc++] = "-q";
	for (size_t i = 0; run->options[i] && argc + 1 < max; i++)
		argv[argc++] = (char *)run->options[i];
	if (!run->whole_host) {
		argv[argc++] = "-p";
		argv[argc++] = pid_text;
	}
	argv[argc++] = "-d";
	argv[argc++] = limit;
	argv[argc++] = "-o";
	argv[argc++] = (char *)mojo;
	for (size_t i = 0; run->outputs && run->outputs[i] && argc + 3 < max; i++) {
		argv[argc++] = "-o";
		argv[argc++] = (char *)run->outputs[i];
	}
	argv[argc] = NULL;
	return test_spawn(argv, NULL, log);
}

static void fail_with_log(const struct test_python *python, const char *log, const char *what)
{
	size_t len = 0;
	char *text = (char *)read_whole_file(log, &len);

	fail_msg("%s: %s: %.2000s", python->label, what, text ? text : "");
}

pid_t gated_run(const struct test_python *python, const struct gated_run *run, char *truth, size_t truth_len)
{
	char mojo[PATH_MAX], log[PATH_MAX];
	struct test_target target;
	pid_t profiler;
	int status;

	FORMAT(mojo, "%s/m.mojo", run->dir);
	FORMAT(log, "%s/pybpfprof.log", run->dir);
	unlink(mojo);
	target.pid = test_start_ready_script(python, run->script, run->args, &target.out_fd);
	profiler = start_profiler(run, target.pid, mojo, log);
	assert_true(profiler > 0);
	for (int waited = 0; gated_run_waiting_samples(mojo, target.pid) < WAIT_SAMPLES_MIN; waited++) {
		int profiler_status = 0;
		pid_t ended = waitpid(profiler, &profiler_status, WNOHANG);

		if (ended == profiler || waited >= STARTUP_LIMIT_S * 10) {
			test_stop_target(&target);
			if (ended != profiler) {
				kill(profiler, SIGTERM);
				test_wait_status(profiler);
			}
			fail_with_log(python, log, ended == profiler ? "the profiler ended before wait_for_go was sampled"
								      : "no samples of wait_for_go in time");
		}
		usleep(100 * 1000);
	}
	assert_int_equal(kill(target.pid, SIGUSR1), 0);
	read_truth(target.out_fd, truth, truth_len);
	assert_int_equal(test_wait_status(target.pid), 0);
	close(target.out_fd);
	/* attached, the profiler ends with its target; on the whole host, as a user ends it */
	if (run->whole_host)
		kill(profiler, SIGINT);
	status = test_wait_status(profiler);
	if (status != 0)
		fail_with_log(python, log, "pybpfprof did not exit 0");
	return target.pid;
}
