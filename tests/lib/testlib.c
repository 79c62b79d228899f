// SPDX-License-Identifier: MIT
/* The shared test helpers of testlib.h, compiled once and linked into every test. */
#include "testlib.h"

#include <ftw.h>

#include "parser/parser_client.h"

const char *testdata_dir(void)
{
	const char *dir = getenv("PYBPFPROF_TESTDATA");

	return dir && *dir ? dir : "tests/data";
}

void testdata_path(char *out, size_t len, const char *relative)
{
	snprintf(out, len, "%s/%s", testdata_dir(), relative);
}

static char tmpdir_path[64];
static pid_t tmpdir_owner;

static int remove_entry(const char *path, const struct stat *info, int type, struct FTW *walk)
{
	(void)info;
	(void)walk;
	return (type == FTW_DP ? rmdir(path) : unlink(path)) == 0 || errno == ENOENT ? 0 : -1;
}

/* At the test binary's exit: its scratch directory goes when every test passed, and stays for
 * a look (its path on stderr) when one failed. A forked child that exits leaves it alone; a
 * file system a test left mounted in it is not entered (its mount point stays). */
static void remove_tmpdir(int status, void *unused)
{
	(void)unused;
	if (getpid() != tmpdir_owner)
		return;
	if (status != 0) {
		fprintf(stderr, "test scratch directory kept: %s\n", tmpdir_path);
		return;
	}
	if (nftw(tmpdir_path, remove_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) != 0)
		fprintf(stderr, "test scratch directory %s: not all removed: %s\n", tmpdir_path, strerror(errno));
}

const char *test_tmpdir(void)
{
	if (!tmpdir_path[0]) {
		snprintf(tmpdir_path, sizeof(tmpdir_path), "/tmp/pybpfprof-test.XXXXXX");
		if (!mkdtemp(tmpdir_path))
			abort();
		tmpdir_owner = getpid();
		on_exit(remove_tmpdir, NULL);
	}
	return tmpdir_path;
}

uint8_t *read_whole_file(const char *path, size_t *len)
{
	FILE *file = fopen(path, "rb");
	uint8_t *data = NULL;
	long size;

	if (!file)
		return NULL;
	if (fseek(file, 0, SEEK_END) == 0 && (size = ftell(file)) >= 0 && fseek(file, 0, SEEK_SET) == 0) {
		data = malloc((size_t)size + 1);
		if (data && fread(data, 1, (size_t)size, file) != (size_t)size) {
			free(data);
			data = NULL;
		}
		if (data) {
			data[size] = 0;
			*len = (size_t)size;
		}
	}
	fclose(file);
	return data;
}

int write_whole_file(const char *path, const void *data, size_t len)
{
	FILE *file = fopen(path, "wb");
	int ok;

	if (!file)
		return -1;
	ok = fwrite(data, 1, len, file) == len;
	return fclose(file) == 0 && ok ? 0 : -1;
}

struct proc_file_id test_file_holding(uint64_t addr)
{
	struct proc_file_id file = { 0 };
	struct proc_maps maps;

	assert_int_equal(proc_maps_read(getpid(), &maps), 0);
	for (size_t i = 0; i < maps.count; i++)
		if (addr >= maps.maps[i].start && addr < maps.maps[i].end)
			file = (struct proc_file_id){ maps.maps[i].inode, maps.maps[i].dev_major, maps.maps[i].dev_minor };
	proc_maps_free(&maps);
	return file;
}

const char *test_source_dir(void)
{
	static char dir[PATH_MAX];
	const char *env = getenv("PYBPFPROF_SRCDIR");

	if (env && *env)
		return env;
	if (dir[0])
		return dir;
	if (realpath("/proc/self/exe", dir)) {
		for (int depth = 0; depth < 5; depth++) {
			char probe[PATH_MAX + 64];
			char *slash = strrchr(dir, '/');

			if (!slash || slash == dir)
				break;
			*slash = 0;
			snprintf(probe, sizeof(probe), "%s/tests/pythons/list-pythons.sh", dir);
			if (access(probe, R_OK) == 0)
				return dir;
		}
	}
	snprintf(dir, sizeof(dir), ".");
	return dir;
}

const char *test_pyenv_versions(void)
{
	static char dir[PATH_MAX];
	char command[PATH_MAX + 64];
	FILE *helper;

	if (dir[0])
		return dir;
	snprintf(command, sizeof(command), "%s/tools/pyenv-versions.sh", test_source_dir());
	helper = popen(command, "r");
	if (!helper || !fgets(dir, sizeof(dir), helper))
		fail_msg("%s printed no folder", command);
	pclose(helper);
	dir[strcspn(dir, "\n")] = 0;
	return dir;
}

size_t test_pythons(struct test_python *out, size_t max)
{
	char command[PATH_MAX + 64], line[2048];
	size_t count = 0;
	FILE *list;

	snprintf(command, sizeof(command), "%s/tests/pythons/list-pythons.sh 2>/dev/null",
		 test_source_dir());
	list = popen(command, "r");
	if (!list)
		return 0;
	while (count < max && fgets(line, sizeof(line), list)) {
		char *fields[4], *save = NULL, *field = strtok_r(line, "\t\n", &save);
		int n = 0;

		for (; field && n < 4; field = strtok_r(NULL, "\t\n", &save))
			fields[n++] = field;
		if (n != 4)
			continue;
		snprintf(out[count].label, sizeof(out[count].label), "%s", fields[0]);
		snprintf(out[count].version, sizeof(out[count].version), "%s", fields[1]);
		snprintf(out[count].kind, sizeof(out[count].kind), "%s", fields[2]);
		snprintf(out[count].command, sizeof(out[count].command), "%s", fields[3]);
		count++;
	}
	pclose(list);
	return count;
}

const struct test_python *test_python_find(const struct test_python *list, size_t count, const char *label)
{
	for (size_t i = 0; i < count; i++)
		if (strcmp(list[i].label, label) == 0)
			return &list[i];
	return NULL;
}

int split_command(char *command, char **argv, int max)
{
	char *save = NULL;
	int argc = 0;

	for (char *word = strtok_r(command, " ", &save); word && argc < max - 1;
	     word = strtok_r(NULL, " ", &save))
		argv[argc++] = word;
	argv[argc] = NULL;
	return argc;
}

pid_t test_spawn(char *const argv[], int *out_fd, const char *err_path)
{
	int out_pipe[2] = { -1, -1 };
	pid_t pid;

	if (out_fd && pipe(out_pipe) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		if (out_fd) {
			dup2(out_pipe[1], 1);
			close(out_pipe[0]);
			close(out_pipe[1]);
		}
		if (err_path) {
			int err_fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

			if (err_fd >= 0)
				dup2(err_fd, 2);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	if (out_fd) {
		close(out_pipe[1]);
		*out_fd = out_pipe[0];
	}
	return pid;
}

uint64_t test_cpu_ms(pid_t pid)
{
	char path[64], text[1024];
	unsigned long long utime = 0, stime = 0;
	const char *fields;
	FILE *stat;
	size_t got;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	stat = fopen(path, "r");
	if (!stat)
		fail_msg("%s: %s", path, strerror(errno));
	got = fread(text, 1, sizeof(text) - 1, stat);
	fclose(stat);
	text[got] = 0;
	/* after the command's name: state, then fields 4 to 13, then utime and stime */
	fields = strrchr(text, ')');
	if (!fields || sscanf(fields + 1, " %*c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu %llu", &utime,
			      &stime) != 2)
		fail_msg("%s: no CPU times in '%s'", path, text);
	return (utime + stime) * 1000u / (unsigned long long)sysconf(_SC_CLK_TCK);
}

long test_peak_rss_kib(pid_t pid)
{
	char text[8192];
	const char *line;

	if (proc_identity_read_file(pid, "status", text, sizeof(text)) <= 0)
		return 0;
	line = strstr(text, "VmHWM:");
	return line ? atol(line + strlen("VmHWM:")) : 0;
}

uint64_t test_cpu_wait_ns(pid_t pid)
{
	char text[256];
	unsigned long long run_ns, wait_ns;

	if (proc_identity_read_file(pid, "schedstat", text, sizeof(text)) <= 0 ||
	    sscanf(text, "%llu %llu", &run_ns, &wait_ns) != 2)
		return 0;
	return wait_ns;
}

int test_run_watching(char *const argv[], const char *log, struct test_run_watch *watch)
{
	struct timespec start, now;
	uint64_t wait_ns = 0;
	pid_t pid;
	int status;

	clock_gettime(CLOCK_MONOTONIC, &start);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int out = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		if (out < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
			_exit(127);
		execv(argv[0], argv);
		_exit(127);
	}
	watch->peak_kib = 0;
	while (waitpid(pid, &status, WNOHANG) == 0) {
		long peak = test_peak_rss_kib(pid);
		uint64_t waited = test_cpu_wait_ns(pid);

		if (peak > watch->peak_kib)
			watch->peak_kib = peak;
		if (waited > wait_ns)
			wait_ns = waited;
		usleep(20000);
	}
	clock_gettime(CLOCK_MONOTONIC, &now);
	watch->wall_ms = (uint64_t)((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000);
	watch->cpu_wait_share = (double)wait_ns / ((double)watch->wall_ms * 1e6 + 1.0);
	return status;
}

int test_run_watching_peak_rss(char *const argv[], const char *log, long *peak_kib)
{
	struct test_run_watch watch;
	int status = test_run_watching(argv, log, &watch);

	*peak_kib = watch.peak_kib;
	return status;
}

FILE *test_popen_ready(const char *command, pid_t *pid)
{
	FILE *process = popen(command, "r");

	assert_non_null(process);
	assert_int_equal(fscanf(process, "%d", pid), 1);
	return process;
}

int test_wait_status(pid_t pid)
{
	int status = 0;

	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int run_capture(char *const argv[], char *err, size_t errlen)
{
	char err_path[PATH_MAX];
	size_t len = 0;
	uint8_t *text;
	int status;
	pid_t pid;

	snprintf(err_path, sizeof(err_path), "%s/stderr.%d", test_tmpdir(), (int)getpid());
	pid = test_spawn(argv, NULL, err_path);
	status = pid > 0 ? test_wait_status(pid) : 127;
	text = read_whole_file(err_path, &len);
	snprintf(err, errlen, "%s", text ? (char *)text : "");
	free(text);
	unlink(err_path);
	return status;
}

int run_capture_both(char *const argv[], char *out, size_t outlen, char *err, size_t errlen)
{
	char err_path[PATH_MAX];
	size_t used = 0, len = 0;
	uint8_t *text;
	ssize_t got;
	int out_fd, status;
	pid_t pid;

	snprintf(err_path, sizeof(err_path), "%s/both.%d", test_tmpdir(), (int)getpid());
	pid = test_spawn(argv, &out_fd, err_path);
	if (pid <= 0)
		return 127;
	while (used + 1 < outlen && (got = read(out_fd, out + used, outlen - 1 - used)) > 0)
		used += (size_t)got;
	out[used] = 0;
	close(out_fd);
	status = test_wait_status(pid);
	text = read_whole_file(err_path, &len);
	snprintf(err, errlen, "%s", text ? (char *)text : "");
	free(text);
	unlink(err_path);
	return status;
}

void run_output(char *const argv[], char *out, size_t len)
{
	size_t used = 0;
	ssize_t got;
	int out_fd;
	pid_t pid = test_spawn(argv, &out_fd, NULL);

	while (used + 1 < len && (got = read(out_fd, out + used, len - 1 - used)) > 0)
		used += (size_t)got;
	out[used] = 0;
	close(out_fd);
	assert_int_equal(test_wait_status(pid), 0);
}

int run_limited(const char *limit, char *const argv[], char *err, size_t errlen)
{
	char *limited[16] = { "prlimit", (char *)limit };
	char err_path[PATH_MAX];
	size_t len = 0, count = 2;
	uint8_t *text;
	int status;
	pid_t pid;

	for (size_t i = 0; argv[i] && count + 1 < 16; i++)
		limited[count++] = argv[i];
	limited[count] = NULL;
	snprintf(err_path, sizeof(err_path), "%s/limited.%d", test_tmpdir(), (int)getpid());
	pid = fork();
	if (pid == 0) {
		int null_fd = open("/dev/null", O_WRONLY);
		int err_fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		dup2(null_fd, 1);
		dup2(err_fd, 2);
		execvp(limited[0], limited);
		_exit(127);
	}
	status = pid > 0 ? test_wait_status(pid) : 127;
	text = read_whole_file(err_path, &len);
	snprintf(err, errlen, "%s", text ? (char *)text : "");
	free(text);
	unlink(err_path);
	return status;
}

pid_t test_fork_as_nobody(int (*prepare)(const void *arg), const void *arg)
{
	int ready[2];
	char byte = 0;
	pid_t pid;

	assert_int_equal(pipe(ready), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(ready[0]);
		if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534) ||
		    prctl(PR_SET_PDEATHSIG, SIGKILL))
			_exit(120);
		if (prepare && prepare(arg))
			_exit(121);
		if (write(ready[1], &byte, 1) != 1)
			_exit(122);
		for (;;)
			pause();
	}
	close(ready[1]);
	assert_int_equal(read(ready[0], &byte, 1), 1);
	close(ready[0]);
	return pid;
}

int test_map_library_copies(const void *arg)
{
	const struct test_library_copies *copies = arg;

	for (size_t i = copies->first; i < copies->first + copies->count; i++) {
		char path[PATH_MAX + 32];
		int fd;

		snprintf(path, sizeof(path), "%s/lib%zu.so", copies->dir, i);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0) == MAP_FAILED)
			return -1;
		close(fd);
	}
	return 0;
}

void test_make_sticky_dir(char *dir, size_t len)
{
	snprintf(dir, len, "/tmp/pybpfprof-attack.XXXXXX");
	assert_non_null(mkdtemp(dir));
	assert_int_equal(chmod(dir, 01777), 0);
}

int test_run_as_nobody(const char *command)
{
	char *argv[] = { "setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
			 "sh", "-c", (char *)command, NULL };
	char err[1024];
	int status = run_capture(argv, err, sizeof(err));

	if (status)
		print_message("as nobody: %s: %s\n", command, err);
	return status;
}

const char *pybpfprof_binary(void)
{
	static char path[PATH_MAX + 16];

	snprintf(path, sizeof(path), "%s/pybpfprof", test_source_dir());
	return path;
}

/* The files a test symbolizes are read by the parser worker, which is the pybpfprof binary
 * under test (a test binary is not one): set before any test runs. */
__attribute__((constructor)) static void test_parser_worker_is_pybpfprof(void)
{
	parser_client_set_default_executable(pybpfprof_binary());
}

/* TEST_FILTER=GLOB runs only the matching tests of any test binary (cmocka's filter). */
__attribute__((constructor)) static void test_filter_from_environment(void)
{
	const char *filter = getenv("TEST_FILTER");

	if (filter && *filter)
		cmocka_set_test_filter(filter);
}

bool file_exists(const char *path)
{
	return access(path, F_OK) == 0;
}

long cpython_replay_samples(const char *tachyon_path, char *err, size_t errlen)
{
	char inside[128], copy[PATH_MAX + 128], command[PATH_MAX * 2];
	uint8_t *data;
	size_t len = 0;
	long replayed = -2;
	FILE *output;

	if (access(SID_CHROOT "/usr/bin/python3.15", X_OK) != 0)
		return -1;
	snprintf(inside, sizeof(inside), "/tmp/pybpfprof-replay-%d.bin", (int)getpid());
	snprintf(copy, sizeof(copy), "%s%s", SID_CHROOT, inside);
	data = read_whole_file(tachyon_path, &len);
	if (!data || write_whole_file(copy, data, len) != 0) {
		free(data);
		snprintf(err, errlen, "cannot copy %s into the chroot", tachyon_path);
		return -2;
	}
	free(data);
	snprintf(command, sizeof(command),
		 "chroot %s python3.15 -m profiling.sampling replay --collapsed -o /tmp/replay.out %s 2>&1",
		 SID_CHROOT, inside);
	output = popen(command, "r");
	err[0] = 0;
	if (output) {
		char line[4096];
		size_t used = 0;

		while (fgets(line, sizeof(line), output)) {
			const char *found = strstr(line, "Replayed ");

			if (found)
				replayed = strtol(found + 9, NULL, 10);
			if (used < errlen)
				used += (size_t)snprintf(err + used, errlen - used, "%s", line);
		}
		if (pclose(output) != 0)
			replayed = -2;
	}
	unlink(copy);
	return replayed;
}

void assert_cpython_accepts(const char *tachyon, size_t samples)
{
	char err[8192];
	long replayed = cpython_replay_samples(tachyon, err, sizeof(err));

	if (replayed == -1) {
		print_message("CPython 3.15 replay not checked: the sid chroot is absent\n");
		return;
	}
	if (replayed != (long)samples)
		fail_msg("python3.15 replay of %s: %ld of %zu samples: %s", tachyon, replayed, samples, err);
}

pid_t test_start_ready_script_line(const struct test_python *python, const char *script, const char *args,
	int *out_fd, char *ready_line, size_t len)
{
	char command[1400], *argv[32];
	struct pollfd ready;
	ssize_t got;
	pid_t pid;

	assert_true(len > 1);
	FORMAT(command, "%s %s/tests/scripts/%s %s", python->command, test_source_dir(), script, args);
	split_command(command, argv, 32);
	pid = test_spawn(argv, out_fd, NULL);
	assert_true(pid > 0);
	ready = (struct pollfd){ .fd = *out_fd, .events = POLLIN };
	if (poll(&ready, 1, 20000) != 1)
		fail_msg("%s: the script did not start", python->label);
	got = read(*out_fd, ready_line, len - 1);
	ready_line[got > 0 ? got : 0] = 0;
	if (strncmp(ready_line, "ready", 5) != 0)
		fail_msg("%s: the script said '%s'", python->label, ready_line);
	return pid;
}

pid_t test_start_ready_script(const struct test_python *python, const char *script, const char *args,
	int *out_fd)
{
	char line[64];

	return test_start_ready_script_line(python, script, args, out_fd, line, sizeof(line));
}

bool test_python_command(const char *label, char *command, size_t len)
{
	struct test_python found[32];
	size_t count = test_pythons(found, 32);

	for (size_t i = 0; i < count; i++)
		if (strcmp(found[i].label, label) == 0)
			return (size_t)snprintf(command, len, "%s", found[i].command) < len;
	return false;
}

void test_record_pid(const char *label, const char *mode, const char *rate, pid_t pid, const char *seconds,
	const char *mojo, const char *tachyon)
{
	char pid_text[16], err[4096];
	char *argv[] = { (char *)pybpfprof_binary(), "-q", "--mode", (char *)mode, "-F", (char *)rate, "-p", pid_text,
			 "-d", (char *)seconds, "-o", (char *)mojo, "-o", (char *)tachyon, NULL };
	int status;

	snprintf(pid_text, sizeof(pid_text), "%d", (int)pid);
	status = run_capture(argv, err, sizeof(err));
	if (status != 0)
		fail_msg("%s: pybpfprof --mode %s exited %d: %s", label, mode, status, err);
}

int test_run_per_python(const char *group, const char *const *labels, size_t label_count,
	const struct test_per_python *kinds, size_t kind_count)
{
	static char names[TEST_PER_PYTHON_MAX][64];
	static struct CMUnitTest tests[TEST_PER_PYTHON_MAX];
	size_t count = 0;

	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	if (geteuid() != 0) {
		print_message("%s: needs root (real BPF), skipped\n", group);
		return 0;
	}
	for (size_t i = 0; i < label_count; i++)
		for (size_t k = 0; k < kind_count && count < TEST_PER_PYTHON_MAX; k++, count++) {
			snprintf(names[count], sizeof(names[count]), "%s%s", kinds[k].prefix, labels[i]);
			tests[count] = (struct CMUnitTest){ .name = names[count], .test_func = kinds[k].run,
							    .initial_state = (void *)labels[i] };
		}
	return _cmocka_run_group_tests(group, tests, count, NULL, NULL);
}

const struct test_python *test_wanted_python(void **state, const struct test_python *list, size_t count)
{
	const char *label = *state;
	const struct test_python *python = test_python_find(list, count, label);

	if (!python) {
		print_message("%s: interpreter absent, skipped\n", label);
		skip();
	}
	return python;
}

struct pf_reader *test_open_profile(const char *path)
{
	struct pf_reader *reader = NULL;
	char err[512];

	if (format_registry_open_reader(&reader, path, err, sizeof(err)))
		fail_msg("%s: %s", path, err);
	return reader;
}

size_t test_count_samples(const char *path, bool (*match)(const struct pf_sample *, const void *),
					const void *arg)
{
	struct pf_reader *reader = test_open_profile(path);
	struct pf_sample sample;
	size_t count = 0;

	while (pf_reader_next_sample(reader, &sample) == 1)
		count += match(&sample, arg);
	pf_reader_close(reader);
	return count;
}

void test_profile_metadata(const char *path, const char *key, char *out, size_t len)
{
	struct pf_reader *reader = test_open_profile(path);
	struct pf_sample sample;
	const char *value;

	while (pf_reader_next_sample(reader, &sample) == 1)
		;
	value = pf_reader_metadata(reader, key);
	snprintf(out, len, "%s", value ? value : "");
	pf_reader_close(reader);
}

bool test_file_holds(const char *path, const char *text)
{
	size_t len = 0;
	uint8_t *data = read_whole_file(path, &len);
	bool found = data && memmem(data, len, text, strlen(text)) != NULL;

	free(data);
	return found;
}

void test_assert_pprof_sample_types(const char *path, const char *types)
{
	char *argv[] = { "go", "tool", "pprof", "-raw", (char *)path, NULL };
	static char out[1 << 16];
	char err[4096];
	int status = run_capture_both(argv, out, sizeof(out), err, sizeof(err));

	if (status != 0)
		fail_msg("go tool pprof -raw %s exited %d: %s", path, status, err);
	if (!strstr(out, types))
		fail_msg("%s: pprof sample types are not '%s':\n%.600s", path, types, out);
}

void test_assert_top_ranks(const char *path, const char *heading, const char *function)
{
	char *argv[] = { (char *)pybpfprof_binary(), "top", "-n", "1000", (char *)path, NULL };
	static char out[1 << 16];
	char err[4096];

	assert_int_equal(run_capture_both(argv, out, sizeof(out), err, sizeof(err)), 0);
	if (!strstr(out, heading) || !strstr(out, function))
		fail_msg("pybpfprof top %s: expected '%s' and '%s' in:\n%.1500s", path, heading, function, out);
}

void test_stop_target(struct test_target *target)
{
	kill(target->pid, SIGKILL);
	test_wait_status(target->pid);
	close(target->out_fd);
}

bool test_has_python_frame(const struct pf_sample *sample, const char *name)
{
	for (size_t i = 0; i < sample->frame_count; i++)
		if (sample->frames[i].kind == PF_FRAME_PYTHON && strcmp(sample->frames[i].name, name) == 0)
			return true;
	return false;
}

int run_shell(const char *command, char *out, size_t len)
{
	char line[PATH_MAX + 8192];
	FILE *pipe;
	size_t used = 0;
	int status;

	snprintf(line, sizeof(line), "cd '%s' && %s 2>&1", test_source_dir(), command);
	pipe = popen(line, "r");
	assert_non_null(pipe);
	while (used + 1 < len && fgets(out + used, (int)(len - used), pipe))
		used += strlen(out + used);
	out[used] = 0;
	status = pclose(pipe);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

int run_pybpfprof_capture(char *out, size_t outlen, char *err, size_t errlen, const char *first, ...)
{
	char *argv[32] = { (char *)pybpfprof_binary() };
	int argc = 1;
	va_list args;

	va_start(args, first);
	for (const char *arg = first; arg && argc < 31; arg = va_arg(args, const char *))
		argv[argc++] = (char *)arg;
	va_end(args);
	argv[argc] = NULL;
	return run_capture_both(argv, out, outlen, err, errlen);
}
