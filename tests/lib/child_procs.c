// SPDX-License-Identifier: MIT
/*
 * Children of the discovery tests (tests/unit/test_python_discover.c,
 * tests/e2e/test_discover_live_interpreters.c): started with their stdout on a pipe,
 * killed and reaped together.
 */
#include "child_procs.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Every child spawn started and kill_children has not reaped yet. */
static pid_t children[64];
static size_t child_count;

void kill_children(void)
{
	for (size_t i = 0; i < child_count; i++) {
		kill(children[i], SIGKILL);
		waitpid(children[i], NULL, 0);
	}
	child_count = 0;
}

pid_t spawn(char *const argv[], int *stdout_fd)
{
	int pipe_fds[2];
	pid_t pid;

	if (pipe2(pipe_fds, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(pipe_fds[1], STDOUT_FILENO);
		execv(argv[0], argv);
		_exit(127);
	}
	close(pipe_fds[1]);
	if (pid < 0) {
		close(pipe_fds[0]);
		return -1;
	}
	children[child_count++] = pid;
	*stdout_fd = pipe_fds[0];
	return pid;
}

void add_child(pid_t pid)
{
	children[child_count++] = pid;
}

void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}
