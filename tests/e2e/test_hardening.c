// SPDX-License-Identifier: MIT
/*
 * Hostile targets: what a local user can do to the files and memory a root
 * profiler reads. A file truncated after we opened it, a deleted mapped
 * library replaced by a FIFO or by a symlink to a file only root may read.
 * The attacker runs as nobody, as it would on a shared host.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>

#include "testlib.h"

#include "elf/elf_file.h"
#include "proc/proc_maps.h"
#include "python/py_discover.h"

#define NOBODY_ID 65534
/* The attacks must not make us wait: a hang is cut by an alarm at ALARM_S. */
#define ALARM_S 5
#define PROMPT_MS 2000

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void copy_file(const char *from, const char *to, mode_t mode)
{
	size_t len;
	uint8_t *data = read_whole_file(from, &len);
	int fd = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	assert_non_null(data);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
	free(data);
	assert_int_equal(chmod(to, mode), 0);
}

/* ---------------------------------------------------------------- a file truncated under us */

static void truncated_file_does_not_crash(void **state)
{
	char path[256];
	struct elf_file file;
	struct elf_function *functions = NULL;
	char *names = NULL;
	size_t count = 0, len = 0;
	const void *data;
	uint64_t addr, size, bias;

	(void)state;
	snprintf(path, sizeof(path), "%s/truncated.so", test_tmpdir());
	copy_file("/proc/self/exe", path, 0644);
	assert_int_equal(elf_file_open(&file, path), 0);
	/* The owner of the file cuts it right after we opened it. */
	assert_int_equal(truncate(path, 4096), 0);
	/* Whatever these answer, they answer: a mapped file would raise SIGBUS here. */
	if (elf_file_functions(&file, &functions, &count, &names) == 0) {
		free(functions);
		free(names);
	}
	elf_file_symbol(&file, "main", &addr, &size);
	elf_file_section_data(&file, ".rodata", &data, &len);
	elf_file_section(&file, ".text", &addr, &size);
	elf_file_load_bias(&file, 0x400000, 0, &bias);
	elf_file_close(&file);
}

/* ---------------------------------------------------------------- one name shared by every symbol */

/* ---------------------------------------------------------------- a mapped library replaced */

enum replacement { REPLACE_WITH_FIFO, REPLACE_WITH_SYMLINK };

struct attacker {
	pid_t pid;
	char dir[256];
	char library[300]; /* the path it mapped, now something else */
};

/* Dies with the test (a failed assertion skips stop_attacker) and keeps none of its outputs open. */
static void become_nobody(void)
{
	int null = open("/dev/null", O_WRONLY);

	if (null < 0 || dup2(null, STDOUT_FILENO) < 0 || dup2(null, STDERR_FILENO) < 0)
		_exit(119);
	if (setgroups(0, NULL) || setresgid(NOBODY_ID, NOBODY_ID, NOBODY_ID) ||
	    setresuid(NOBODY_ID, NOBODY_ID, NOBODY_ID) || prctl(PR_SET_PDEATHSIG, SIGKILL))
		_exit(120);
}

/* As nobody: map library, then put a FIFO or a symlink to link_target at its path. */
static void attack(const char *library, enum replacement replacement, const char *link_target, int ready_fd)
{
	int fd;
	void *mapping;

	become_nobody();
	fd = open(library, O_RDONLY);
	mapping = fd >= 0 ? mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
	if (mapping == MAP_FAILED || unlink(library))
		_exit(121);
	if (replacement == REPLACE_WITH_FIFO ? mkfifo(library, 0666) : symlink(link_target, library))
		_exit(122);
	if (write(ready_fd, "r", 1) != 1)
		_exit(123);
	pause();
	_exit(0);
}

static void start_attacker(struct attacker *attacker, const char *name, enum replacement replacement,
			   const char *link_target)
{
	int ready[2];
	char byte;

	snprintf(attacker->dir, sizeof(attacker->dir), "%s/%s", test_tmpdir(), name);
	assert_int_equal(mkdir(attacker->dir, 0755), 0);
	assert_int_equal(chown(attacker->dir, NOBODY_ID, NOBODY_ID), 0);
	/* the test directory is root's 0700: let nobody reach its own directory */
	assert_int_equal(chmod(test_tmpdir(), 0711), 0);
	snprintf(attacker->library, sizeof(attacker->library), "%s/libpython3.99.so", attacker->dir);
	copy_file("/proc/self/exe", attacker->library, 0644);
	assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
	attacker->pid = fork();
	assert_true(attacker->pid >= 0);
	if (attacker->pid == 0)
		attack(attacker->library, replacement, link_target, ready[1]);
	close(ready[1]);
	assert_int_equal(read(ready[0], &byte, 1), 1);
	close(ready[0]);
}

static void stop_attacker(struct attacker *attacker)
{
	kill(attacker->pid, SIGKILL);
	waitpid(attacker->pid, NULL, 0);
}

static const struct proc_map *mapping_of(const struct proc_maps *maps, const char *path)
{
	for (size_t i = 0; i < maps->count; i++)
		if (!strcmp(maps->maps[i].path, path))
			return &maps->maps[i];
	return NULL;
}

static void on_alarm(int signo)
{
	(void)signo;
}

/* Each open that blocks is cut by the alarm (no SA_RESTART) instead of hanging the test. */
static void arm_alarm(unsigned seconds)
{
	struct sigaction action = { .sa_handler = on_alarm };
	struct itimerval every = { .it_interval = { .tv_sec = seconds }, .it_value = { .tv_sec = seconds } };

	sigemptyset(&action.sa_mask);
	sigaction(SIGALRM, &action, NULL);
	setitimer(ITIMER_REAL, &every, NULL);
}

/* Every way we open the file of a mapping, each prompt; how long they took in all. */
static uint64_t open_every_way(pid_t pid, const struct proc_map *map)
{
	struct py_target target;
	struct elf_file file;
	char error[512];
	uint64_t start = now_ms();

	arm_alarm(ALARM_S);
	py_discover_runtime(pid, &target, error, sizeof(error));
	if (elf_file_open_map(&file, pid, map) == 0)
		elf_file_close(&file);
	if (elf_file_open_mapped(&file, pid, map->path, map->start, map->end, map->inode) == 0)
		elf_file_close(&file);
	/* where map_files cannot be used: by path, which must not be the FIFO or the link */
	assert_int_not_equal(elf_file_open_in(&file, pid, map->path), 0);
	arm_alarm(0);
	return now_ms() - start;
}

/* A deleted library replaced by a FIFO nobody writes to: nothing waits on it. */
static void fifo_at_a_mapped_path_does_not_block(void **state)
{
	struct attacker attacker;
	struct proc_maps maps;
	const struct proc_map *map;

	(void)state;
	start_attacker(&attacker, "fifo", REPLACE_WITH_FIFO, NULL);
	assert_int_equal(proc_maps_read(attacker.pid, &maps), 0);
	map = mapping_of(&maps, attacker.library);
	assert_non_null(map);
	assert_true(map->deleted);
	assert_true(open_every_way(attacker.pid, map) < PROMPT_MS);
	proc_maps_free(&maps);
	stop_attacker(&attacker);
}

/* The same FIFO with something in it: not a byte is read from it. */
static void fifo_at_a_mapped_path_is_not_read(void **state)
{
	static const char marker[] = "attacker's bytes";
	struct attacker attacker;
	struct proc_maps maps;
	const struct proc_map *map;
	char back[sizeof(marker)] = "";
	int fifo;

	(void)state;
	start_attacker(&attacker, "fifo_data", REPLACE_WITH_FIFO, NULL);
	fifo = open(attacker.library, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	assert_true(fifo >= 0);
	assert_int_equal(write(fifo, marker, sizeof(marker)), (ssize_t)sizeof(marker));
	assert_int_equal(proc_maps_read(attacker.pid, &maps), 0);
	map = mapping_of(&maps, attacker.library);
	assert_non_null(map);
	assert_true(open_every_way(attacker.pid, map) < PROMPT_MS);
	assert_int_equal(read(fifo, back, sizeof(back)), (ssize_t)sizeof(marker));
	assert_string_equal(back, marker);
	close(fifo);
	proc_maps_free(&maps);
	stop_attacker(&attacker);
}

/* A symlink from the mapped path to a file only root may read: never opened. */
static void symlink_at_a_mapped_path_is_not_followed(void **state)
{
	char secret_dir[256], secret[300];
	struct attacker attacker;
	struct proc_maps maps;
	const struct proc_map *map;
	struct inotify_event event;
	int watch;

	(void)state;
	snprintf(secret_dir, sizeof(secret_dir), "%s/root_only", test_tmpdir());
	assert_int_equal(mkdir(secret_dir, 0700), 0);
	snprintf(secret, sizeof(secret), "%s/secret.so", secret_dir);
	copy_file("/proc/self/exe", secret, 0600);
	start_attacker(&attacker, "symlink", REPLACE_WITH_SYMLINK, secret);
	watch = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	assert_true(watch >= 0);
	assert_true(inotify_add_watch(watch, secret, IN_OPEN) >= 0);
	assert_int_equal(proc_maps_read(attacker.pid, &maps), 0);
	map = mapping_of(&maps, attacker.library);
	assert_non_null(map);
	assert_true(open_every_way(attacker.pid, map) < PROMPT_MS);
	assert_int_equal(read(watch, &event, sizeof(event)), -1);
	assert_int_equal(errno, EAGAIN);
	close(watch);
	proc_maps_free(&maps);
	stop_attacker(&attacker);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(truncated_file_does_not_crash),
		cmocka_unit_test(fifo_at_a_mapped_path_does_not_block),
		cmocka_unit_test(fifo_at_a_mapped_path_is_not_read),
		cmocka_unit_test(symlink_at_a_mapped_path_is_not_followed),
	};

	if (geteuid() != 0) {
		fprintf(stderr, "test_hardening: needs root (the attacker runs as nobody)\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
