// SPDX-License-Identifier: MIT
/*
 * A profiler that gets no CPU while its target runs still names what ran: on a busy host the
 * thread that drains the ring may be late by more than a module body lives (its code object is
 * freed as soon as its import ends, and its memory taken by the next module's). Here the
 * profiler is made as late as a host can make it: once it samples the script, every one of its
 * threads is moved to the script's CPU under SCHED_IDLE, so it runs only when the script
 * sleeps, after all twenty imports (then it is given back its CPUs and ended). Every module
 * body must still be named, from the note BPF saved of it when it first met it (bpf/maps.h,
 * code_notes).
 */
#include "gated_run.h"
#include "record_run.h"

#include "formats/format_registry.h"
#include "profile/profile.h"

#include <dirent.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>

#define MAX_PYTHONS 32
/* Safety nets only (a hung run fails rather than hangs): nothing is measured against them. */
#define STARTUP_LIMIT_S 300
#define RUN_LIMIT_S 600

static const char *const labels[] = {
	"2.7", "3.6", "3.7", "3.8", "3.9", "3.10", "3.11", "3.12", "3.13", "3.14", "3.15",
};

static struct test_python pythons[MAX_PYTHONS];
static size_t python_count;

/* The first CPU this test may run on. */
static int first_cpu(void)
{
	cpu_set_t allowed;

	assert_int_equal(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &allowed))
			return cpu;
	fail_msg("no CPU allowed");
	return -1;
}

static void pin(pid_t tid, int cpu)
{
	cpu_set_t one;

	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	assert_int_equal(sched_setaffinity(tid, sizeof(one), &one), 0);
}

/* Every thread of pid onto the CPUs given under policy (threads it makes later inherit both). */
static void schedule_threads(pid_t pid, const cpu_set_t *cpus, int policy)
{
	struct sched_param none = { 0 };
	char path[64];
	struct dirent *entry;
	size_t threads = 0;
	DIR *tasks;

	FORMAT(path, "/proc/%d/task", (int)pid);
	tasks = opendir(path);
	assert_non_null(tasks);
	while ((entry = readdir(tasks))) {
		pid_t tid = (pid_t)atoi(entry->d_name);

		/* a thread that ended meanwhile is no matter */
		if (tid > 0 && sched_setaffinity(tid, sizeof(*cpus), cpus) == 0 &&
		    sched_setscheduler(tid, policy, &none) == 0)
			threads++;
	}
	closedir(tasks);
	assert_true(threads > 0);
}

/* The profiler runs only when the script's CPU has nothing else to run. */
static void starve(pid_t pid, int cpu)
{
	cpu_set_t one;

	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	schedule_threads(pid, &one, SCHED_IDLE);
}

/* As it was started: what it has left to do does not wait on a busy CPU. */
static void feed(pid_t pid)
{
	cpu_set_t allowed;

	assert_int_equal(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
	schedule_threads(pid, &allowed, SCHED_OTHER);
}

/* Waits for the script's line (bounded). */
static void read_line(int fd, const char *label, char *line, size_t len)
{
	struct pollfd ready = { .fd = fd, .events = POLLIN };
	ssize_t got;

	if (poll(&ready, 1, RUN_LIMIT_S * 1000) != 1)
		fail_msg("%s: the script did not import within %d s", label, RUN_LIMIT_S);
	got = read(fd, line, len - 1);
	line[got > 0 ? got : 0] = 0;
}

static void module_bodies_named_by_a_starved_profiler(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	char mojo[PATH_MAX], log[PATH_MAX], pid_text[16], limit[16], line[64];
	struct module_bodies found;
	struct test_target target;
	int cpu = first_cpu();
	pid_t profiler;

	if (!python)
		return;
	FORMAT(mojo, "%s/late-%s.mojo", test_tmpdir(), python->label);
	FORMAT(log, "%s/late-%s.log", test_tmpdir(), python->label);
	unlink(mojo);
	target.pid = test_start_ready_script(python, "import_modules.py", "gated", &target.out_fd);
	pin(target.pid, cpu);
	FORMAT(pid_text, "%d", (int)target.pid);
	FORMAT(limit, "%d", RUN_LIMIT_S);
	{
		char *argv[] = { (char *)pybpfprof_binary(), "-v", "-p", pid_text, "-d", limit, "-o", mojo, NULL };

		profiler = test_spawn(argv, NULL, log);
	}
	assert_true(profiler > 0);
	for (int waited = 0; gated_run_waiting_samples(mojo, target.pid) == 0; waited++) {
		if (waitpid(profiler, NULL, WNOHANG) == profiler || waited >= STARTUP_LIMIT_S * 10) {
			test_stop_target(&target);
			fail_msg("%s: no samples of wait_for_go", python->label);
		}
		usleep(100 * 1000);
	}
	starve(profiler, cpu);
	assert_int_equal(kill(target.pid, SIGUSR1), 0);
	read_line(target.out_fd, python->label, line, sizeof(line));
	assert_true(strncmp(line, "imported", 8) == 0);
	/* the imports are over, every body freed: the profiler gets the CPU back and ends while the
	 * script sleeps (its strings still there to read) */
	feed(profiler);
	assert_int_equal(kill(profiler, SIGINT), 0);
	assert_int_equal(test_wait_status(profiler), 0);
	test_stop_target(&target);

	count_module_bodies(mojo, (uint32_t)target.pid, python->label, &found);
	{
		size_t len = 0;
		char *text = (char *)read_whole_file(log, &len);
		const char *counts = text ? strstr(text, "counts: ") : NULL;

		if (counts)
			print_message("%s: %.*s\n", python->label, (int)strcspn(counts, "\n"), counts);
		free(text);
	}
	/* Some 8 samples a body: each body is in the profile, and none of its frames is unnamed. */
	assert_int_equal(found.named, MODULE_BODIES);
	assert_true(found.unresolved_samples * 20 <= found.samples);
}

int main(void)
{
	static const struct test_per_python kinds[] = {
		{ "module_bodies_named_by_a_starved_profiler_", module_bodies_named_by_a_starved_profiler },
	};

	python_count = test_pythons(pythons, MAX_PYTHONS);
	return test_run_per_python("test_late_drain", labels, sizeof(labels) / sizeof(labels[0]), kinds,
				   sizeof(kinds) / sizeof(kinds[0]));
}
