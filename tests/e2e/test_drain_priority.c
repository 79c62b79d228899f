// SPDX-License-Identifier: MIT
/*
 * Only the thread that drains the ring runs above the profiler's nice, with the two threads
 * that do for it what it did itself before (discovery, maps reads): its other helper threads
 * and the command it launches keep the nice the profiler was started with (a launched
 * command that inherited a raised nice would take CPU from the rest of the host).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "testlib.h"
#include "util/thread.h"


/* The nice of thread tid of pid (field 19 of its stat), or INT_MIN when it is gone. */
static int thread_nice(pid_t pid, const char *tid)
{
	char path[128], text[1024] = "";
	int nice = INT_MIN;
	FILE *stat;

	FORMAT(path, "/proc/%d/task/%s/stat", (int)pid, tid);
	stat = fopen(path, "r"); /* a /proc file's size reads 0: read_whole_file does not fit */
	if (!stat)
		return INT_MIN;
	if (!fgets(text, sizeof(text), stat))
		text[0] = 0;
	fclose(stat);
	{
		char *after_name = strrchr(text, ')');
		int field = 2;

		for (char *at = after_name; at && *at; at++)
			if (*at == ' ' && ++field == 19) {
				nice = atoi(at + 1);
				break;
			}
	}
	return nice;
}

/* Whether thread tid of pid is named name. */
static bool thread_named(pid_t pid, const char *tid, const char *name)
{
	char path[128], comm[64] = "";
	FILE *file;

	FORMAT(path, "/proc/%d/task/%s/comm", (int)pid, tid);
	file = fopen(path, "r");
	if (!file)
		return false;
	if (!fgets(comm, sizeof(comm), file))
		comm[0] = 0;
	fclose(file);
	comm[strcspn(comm, "\n")] = 0;
	return strcmp(comm, name) == 0;
}

/* Waits (bounded) for the main thread to be raised; then every other thread's nice. */
static void check_profiler_threads(pid_t profiler, int ordinary)
{
	char main_tid[16];
	int main_nice = INT_MIN;
	size_t others = 0;
	DIR *tasks;

	FORMAT(main_tid, "%d", (int)profiler);
	for (int tries = 0; tries < 600; tries++) {
		main_nice = thread_nice(profiler, main_tid);
		if (main_nice == ordinary - THREAD_DRAIN_NICE_STEP)
			break;
		usleep(50 * 1000);
	}
	assert_int_equal(main_nice, ordinary - THREAD_DRAIN_NICE_STEP);
	{
		char path[64];

		FORMAT(path, "/proc/%d/task", (int)profiler);
		tasks = opendir(path);
	}
	assert_non_null(tasks);
	for (struct dirent *task; (task = readdir(tasks));) {
		int nice;

		if (task->d_name[0] == '.' || strcmp(task->d_name, main_tid) == 0)
			continue;
		nice = thread_nice(profiler, task->d_name);
		if (nice == INT_MIN)
			continue;
		print_message("profiler thread %s: nice %d\n", task->d_name, nice);
		if (thread_named(profiler, task->d_name, THREAD_NAME_DISCOVERY) ||
		    thread_named(profiler, task->d_name, THREAD_NAME_MAPS))
			continue; /* raised as they start: not judged */
		assert_int_equal(nice, ordinary);
		others++;
	}
	closedir(tasks);
	assert_true(others >= 1); /* the unwind tables' builder, at least */
}

static void only_the_drainer_is_raised(void **state)
{
	struct test_python pythons[16];
	size_t count = test_pythons(pythons, 16);
	const struct test_python *python = test_python_find(pythons, count, "3.12");
	char out[PATH_MAX], nice_path[PATH_MAX], program[PATH_MAX + 256], err[4096];
	char *argv[16];
	int argc = 0, status;
	uint8_t *child_nice;
	pid_t profiler;

	(void)state;
	if (!python)
		skip();
	FORMAT(out, "%s/drain.mojo", test_tmpdir());
	FORMAT(nice_path, "%s/child-nice", test_tmpdir());
	/* The command writes its own nice, then runs until the profiler has been looked at. */
	FORMAT(program,
	       "import os, time\n"
	       "open('%s', 'w').write(str(os.nice(0)))\n"
	       "end = time.monotonic() + 3\n"
	       "while time.monotonic() < end: sum(range(1000))\n",
	       nice_path);
	argv[argc++] = (char *)pybpfprof_binary();
	argv[argc++] = "-q";
	argv[argc++] = "-o";
	argv[argc++] = out;
	argv[argc++] = "--";
	argv[argc++] = (char *)python->command;
	argv[argc++] = "-c";
	argv[argc++] = program;
	argv[argc] = NULL;
	{
		char err_path[PATH_MAX];

		FORMAT(err_path, "%s/drain.err", test_tmpdir());
		profiler = test_spawn(argv, NULL, err_path);
		assert_true(profiler > 0);
		check_profiler_threads(profiler, 0);
		status = test_wait_status(profiler);
		{
			size_t len = 0;
			uint8_t *text = read_whole_file(err_path, &len);

			snprintf(err, sizeof(err), "%s", text ? (char *)text : "");
			free(text);
		}
	}
	if (status != 0)
		fail_msg("pybpfprof: exit %d: %s", status, err);
	child_nice = read_whole_file(nice_path, &(size_t){ 0 });
	assert_non_null(child_nice);
	assert_string_equal((char *)child_nice, "0");
	free(child_nice);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(only_the_drainer_is_raised),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
