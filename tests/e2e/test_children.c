// SPDX-License-Identifier: MIT
/*
 * -C takes what is already running (real BPF, root): a multiprocessing.Pool
 * parent whose two workers are busy before the profiler attaches, attached to
 * the parent with -C. Both workers' samples are in the profile, in busy_worker,
 * on 3.12 (fork: the workers are children) and 3.15 (forkserver: grandchildren).
 * Attached without -C first, the run ends with the one-line hint that -C would
 * take the children, where the CPU went.
 */
#include "testlib.h"

#include "formats/format_registry.h"
#include "profile/profile.h"

#include <inttypes.h>

#define SCRIPT "pool_workers.py"
#define MAX_PYTHONS 32

static const char *const children_labels[] = { "3.12", "3.15" };

static struct test_python pythons[MAX_PYTHONS];
static size_t python_count;

static void existing_workers_taken(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	char mojo[PATH_MAX], pid_text[16], err[4096], line[128];
	struct test_target target;
	struct pf_reader *reader;
	struct pf_sample sample;
	uint64_t busy[2] = { 0, 0 };
	int workers[2], status, got;

	FORMAT(mojo, "%s/children-%s.mojo", test_tmpdir(), python->label);
	target.pid = test_start_ready_script_line(python, SCRIPT, "", &target.out_fd, line, sizeof(line));
	if (sscanf(line, "ready %d,%d", &workers[0], &workers[1]) != 2)
		fail_msg("%s: the script said '%s'", python->label, line);
	snprintf(pid_text, sizeof(pid_text), "%d", (int)target.pid);
	{
		char *argv[] = { (char *)pybpfprof_binary(), "-F", "100", "-p", pid_text, "-d", "2", "-o", mojo, NULL };

		status = run_capture(argv, err, sizeof(err));
		if (status != 0 || !strstr(err, "hint: ") || !strstr(err, "-C profiles the children"))
			fail_msg("%s: pybpfprof without -C exited %d without the hint: %s", python->label, status, err);
	}
	{
		char *argv[] = { (char *)pybpfprof_binary(), "-q", "-C", "-F", "100", "-p", pid_text, "-d", "2",
				 "-o", mojo, NULL };

		status = run_capture(argv, err, sizeof(err));
	}
	/* A forkserver (3.14+) ends once the parent has gone. */
	for (size_t i = 0; i < 2; i++)
		kill(workers[i], SIGKILL);
	test_stop_target(&target);
	if (status != 0)
		fail_msg("%s: pybpfprof -C exited %d: %s", python->label, status, err);

	reader = test_open_profile(mojo);
	while ((got = pf_reader_next_sample(reader, &sample)) == 1)
		for (size_t i = 0; i < 2; i++)
			if (sample.pid == (uint32_t)workers[i] && test_has_python_frame(&sample, "busy_worker"))
				busy[i]++;
	assert_int_equal(got, 0);
	pf_reader_close(reader);
	if (!busy[0] || !busy[1])
		fail_msg("%s: busy_worker samples: worker %d: %" PRIu64 ", worker %d: %" PRIu64, python->label,
			 workers[0], busy[0], workers[1], busy[1]);
}

int main(void)
{
	static const struct test_per_python kinds[] = { { "children_existing_", existing_workers_taken } };

	python_count = test_pythons(pythons, MAX_PYTHONS);
	return test_run_per_python("test_children", children_labels,
				   sizeof(children_labels) / sizeof(children_labels[0]), kinds,
				   sizeof(kinds) / sizeof(kinds[0]));
}
