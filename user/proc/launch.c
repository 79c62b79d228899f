// SPDX-License-Identifier: MIT
#include "proc/launch.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/errbuf.h"
#include "util/sudo_user.h"
#include "util/thread.h"

/*
 * The profiler's capabilities stay with it: an ambient or inheritable set
 * would hand CAP_BPF, CAP_PERFMON and the rest to the command (and to what it
 * runs), whoever it runs as.
 */
static int drop_inheritable_capabilities(void)
{
	struct __user_cap_header_struct header = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return -errno;
	if (syscall(SYS_capget, &header, data) < 0)
		return -errno;
	for (size_t i = 0; i < _LINUX_CAPABILITY_U32S_3; i++)
		data[i].inheritable = 0;
	if (syscall(SYS_capset, &header, data) < 0)
		return -errno;
	return 0;
}

/* HOME, USER and LOGNAME of the account, as `sudo -u` sets them; an id without an
 * account gets its number for a name and / for a home, never root's. */
static int set_user_environment(const struct passwd *account, uid_t uid)
{
	char number[24];
	const char *name = account ? account->pw_name : number;

	snprintf(number, sizeof(number), "%u", (unsigned)uid);
	if (setenv("HOME", account ? account->pw_dir : "/", 1) < 0 || setenv("USER", name, 1) < 0 ||
	    setenv("LOGNAME", name, 1) < 0)
		return -errno;
	return 0;
}

/*
 * Under sudo the command should run as the user who typed it, not as root:
 * their files, their groups, their home, no root-owned outputs.
 */
static int drop_to_sudo_user(void)
{
	const struct passwd *account;
	uid_t uid;
	gid_t gid;

	if (getuid() != 0 || !sudo_user_ids(&uid, &gid))
		return 0;
	account = getpwuid(uid);
	if (account ? initgroups(account->pw_name, gid) < 0 : setgroups(1, &gid) < 0)
		return -errno;
	if (setgid(gid) < 0 || setuid(uid) < 0)
		return -errno;
	return set_user_environment(account, uid);
}

/* Under sudo, but SUDO_UID or SUDO_GID missing, unreadable or root: drop_to_sudo_user keeps root. */
static bool runs_as_root_under_sudo(void)
{
	uid_t uid;
	gid_t gid;

	return getuid() == 0 && sudo_user_present() && !sudo_user_ids(&uid, &gid);
}

static void report_and_exit(int error_fd, int err)
{
	ssize_t wrote = write(error_fd, &err, sizeof(err));

	(void)wrote;
	_exit(127);
}

/* The byte launch_start() writes to open the gate; anything else, or EOF, means "don't run". */
#define GATE_GO 'g'

/*
 * Waits at the gate; true only if the profiler said go. EOF is not go: a
 * profiler that died (killed, OOM) closes the pipe too, and the command must
 * not then run unprofiled, as the user, with nobody watching.
 */
static bool gate_opened(int gate_read, pid_t profiler)
{
	char byte;
	ssize_t got;

	/* Dies with the profiler; a profiler already dead before this was set left us reparented. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != profiler)
		return false;
	do {
		got = read(gate_read, &byte, 1);
	} while (got < 0 && errno == EINTR);
	close(gate_read);
	return got == 1 && byte == GATE_GO;
}

static void run_child(int gate_read, int error_write, pid_t profiler, char *const argv[])
{
	int err;

	if (!gate_opened(gate_read, profiler))
		_exit(127);
	prctl(PR_SET_PDEATHSIG, 0);
	err = drop_inheritable_capabilities();
	if (!err)
		err = drop_to_sudo_user();
	if (err)
		report_and_exit(error_write, err);
	/* Default dispositions for the command, whatever the profiler did. */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	execvp(argv[0], argv);
	report_and_exit(error_write, -errno);
}

int launch_prepare(struct launch *launch, char *const argv[], char *err_text, size_t err_len)
{
	int gate[2], error_pipe[2];
	pid_t profiler = getpid();
	int err;

	memset(launch, 0, sizeof(*launch));
	launch->gate_fd = launch->error_fd = -1;
	if (pipe2(gate, O_CLOEXEC) < 0 || pipe2(error_pipe, O_CLOEXEC) < 0) {
		err = -errno;
		return errbuf_format(err_text, err_len, err, "cannot create pipes: %s", strerror(-err));
	}
	launch->pid = fork();
	if (launch->pid < 0) {
		err = -errno;
		close(gate[0]), close(gate[1]), close(error_pipe[0]), close(error_pipe[1]);
		return errbuf_format(err_text, err_len, err, "cannot fork: %s", strerror(-err));
	}
	if (launch->pid == 0) {
		thread_restore_ordinary_priority();
		close(gate[1]);
		close(error_pipe[0]);
		run_child(gate[0], error_pipe[1], profiler, argv);
	}
	close(gate[0]);
	close(error_pipe[1]);
	launch->gate_fd = gate[1];
	launch->error_fd = error_pipe[0];
	return 0;
}

int launch_start(struct launch *launch, char *const argv[], char *err_text, size_t err_len)
{
	int child_err = 0;
	ssize_t got;

	do {
		got = write(launch->gate_fd, &(char){ GATE_GO }, 1);
	} while (got < 0 && errno == EINTR);
	close(launch->gate_fd);
	launch->gate_fd = -1;
	/* EOF means exec succeeded (the pipe closed on exec); 4 bytes mean it failed. */
	do {
		got = read(launch->error_fd, &child_err, sizeof(child_err));
	} while (got < 0 && errno == EINTR);
	close(launch->error_fd);
	launch->error_fd = -1;
	if (got == (ssize_t)sizeof(child_err) && child_err < 0) {
		launch_wait(launch);
		return errbuf_format(err_text, err_len, child_err, "cannot run '%s': %s", argv[0],
				     strerror(-child_err));
	}
	/* Said once the command really runs (the child decided from the same environment). */
	if (runs_as_root_under_sudo())
		fputs("pybpfprof: warning: SUDO_UID or SUDO_GID is missing or root: the command runs as root\n",
		      stderr);
	return 0;
}

void launch_cancel(struct launch *launch)
{
	if (launch->pid <= 0 || launch->reaped)
		return;
	if (launch->gate_fd >= 0) {
		/* EOF, without the go byte: the child gives up without running. */
		close(launch->gate_fd);
		launch->gate_fd = -1;
	}
	if (launch->error_fd >= 0) {
		close(launch->error_fd);
		launch->error_fd = -1;
	}
	launch_wait(launch);
}

bool launch_poll_exit(struct launch *launch)
{
	pid_t got;

	if (launch->reaped)
		return true;
	got = waitpid(launch->pid, &launch->wait_status, WNOHANG);
	if (got == launch->pid || (got < 0 && errno == ECHILD))
		launch->reaped = true;
	return launch->reaped;
}

void launch_wait(struct launch *launch)
{
	while (!launch->reaped) {
		pid_t got = waitpid(launch->pid, &launch->wait_status, 0);

		if (got == launch->pid || (got < 0 && errno != EINTR))
			launch->reaped = true;
	}
}

int launch_exit_code(const struct launch *launch)
{
	if (WIFEXITED(launch->wait_status))
		return WEXITSTATUS(launch->wait_status);
	if (WIFSIGNALED(launch->wait_status))
		return 128 + WTERMSIG(launch->wait_status);
	return 1;
}
