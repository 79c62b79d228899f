// SPDX-License-Identifier: MIT
/*
 * Python services as they really run, under load (real BPF, root), with Debian's packages for
 * /usr/bin/python3.11 (`make deps` installs them): each server is started on a free loopback
 * port, driven by wrk or its broker, profiled, and stopped. What the profile says is checked
 * against what the workload measured itself (its CPU time per view, task or call, written to a
 * file: tests/scripts/services/), never against the profiler's own output.
 *
 * - gunicorn, sync workers, a Flask app, under wrk, attached to the master with -C: every
 *   worker is in the profile, >= 90% of the workers' samples are in the two views, and the
 *   views' split matches the app's own (about 3:1) within 3 points.
 * - the same recycling its workers (--max-requests): each worker forked and gone while
 *   profiled has its views' samples.
 * - uvicorn, a FastAPI app whose endpoint goes handler -> service -> query: the chain is in
 *   >= 90% of the handler's samples, as the app measured within 3 points, under the request's
 *   task frame in >= 90%, the event loop's plumbing hidden.
 * - the same on uvloop in wall mode with every waiting task: requests waiting in a 5-15 ms
 *   asyncio.sleep "database" call, then a 20-40 ms one, are under their task frame in >= 80% of
 *   their samples, in the database call in the share of wall time the app measured (10 points).
 * - uWSGI (libpython embedded through its python3 plugin, in a binary named uwsgi), found by
 *   whole-host discovery: master and workers each with their Python frames.
 * - Celery, prefork pool, Redis broker, attached to the parent with -C: the task's frames in
 *   every child that ran the task while the profile was taken.
 *
 * A sample minimum is a share of the CPU time the process had (test_cpu_ms, or the workload's
 * own count) from when the profile names it (its MOJO's metadata line, written as sampling
 * starts) to the profiler's end, so a slow or loaded machine gives fewer samples but never a
 * failure; a server is waited for by polling its port. Each server runs in a process group of
 * its own, killed at the end of its test whatever happened (the teardown), so nothing is left
 * running.
 */
#include "testlib.h"

#include "formats/format_registry.h"
#include "profile/profile.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>

#define SYSTEM_PYTHON "/usr/bin/python3.11"
#define MAX_GROUPS 8
#define MAX_WORKERS 8
#define READY_SECONDS 60
#define WRK_SECONDS 120
/* Samples at least this share of a process's CPU time (in ms, at 1000 Hz) over the profiler's
 * life: its start and end are in that span, not in the profile. */
#define MIN_SAMPLE_SHARE 0.25

/* The process groups this test started (each a server, a load generator, a broker). */
static pid_t groups[MAX_GROUPS];
static size_t group_count;

static const char *services_dir(void)
{
	static char dir[PATH_MAX + 32];

	if (!dir[0])
		snprintf(dir, sizeof(dir), "%s/tests/scripts/services", test_source_dir());
	return dir;
}

/* Skips the test, saying so, when a program it needs is not installed. */
static void need_program(const char *path)
{
	if (access(path, X_OK) != 0) {
		print_message("%s is not installed (sudo make deps), skipped\n", path);
		skip();
	}
}

static void need_module(const char *module)
{
	char command[256];

	FORMAT(command, "%s -c 'import %s' 2>/dev/null", SYSTEM_PYTHON, module);
	if (system(command) != 0) {
		print_message("python3.11 has no %s (sudo make deps), skipped\n", module);
		skip();
	}
}

/* A loopback port nothing listens on now. */
static int free_port(void)
{
	struct sockaddr_in address = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(address);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&address, sizeof(address)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&address, &len), 0);
	port = ntohs(address.sin_port);
	close(fd);
	return port;
}

/*
 * Starts argv in a process group of its own (registered for the teardown), in the services
 * directory, with env ("KEY=VALUE", NULL-terminated; may be NULL) added, its output into log.
 */
static pid_t start_group(char *const argv[], char *const env[], const char *log)
{
	pid_t pid;

	assert_true(group_count < MAX_GROUPS);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int out = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int null_fd = open("/dev/null", O_RDONLY);

		setsid();
		if (out < 0 || null_fd < 0 || chdir(services_dir()) != 0)
			_exit(126);
		dup2(null_fd, 0);
		dup2(out, 1);
		dup2(out, 2);
		/* The apps are imported from the checkout: leave no __pycache__ in it. */
		putenv("PYTHONDONTWRITEBYTECODE=1");
		for (size_t i = 0; env && env[i]; i++)
			putenv(env[i]);
		execv(argv[0], argv);
		_exit(127);
	}
	/* The child's setsid may not have run yet: make it the group's leader from here too. */
	setpgid(pid, pid);
	groups[group_count++] = pid;
	return pid;
}

/* Whether pid, a child of this test, has exited (then reaped, its status in *status). */
static bool child_exited(pid_t pid, int *status)
{
	int raw = 0;

	if (waitpid(pid, &raw, WNOHANG) != pid)
		return false;
	*status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
	return true;
}

/* Fails the test with a server's log, which says why it went. */
static void fail_with_log(const char *what, const char *log)
{
	size_t len = 0;
	uint8_t *text = read_whole_file(log, &len);
	size_t tail = len > 3000 ? len - 3000 : 0;

	fail_msg("%s; its log %s ends:\n%s", what, log, text ? (char *)text + tail : "(none)");
}

static void sleep_ms(long ms)
{
	struct timespec pause = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&pause, &pause) != 0 && errno == EINTR)
		;
}

static uint64_t monotonic_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

/* Waits until something accepts on the loopback port, while server (whose log is log) runs. */
static void wait_for_port(int port, pid_t server, const char *log)
{
	struct sockaddr_in address = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				       .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	char what[128];
	int status;

	for (int tries = 0; tries < READY_SECONDS * 10; tries++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		bool accepted;

		assert_true(fd >= 0);
		accepted = connect(fd, (struct sockaddr *)&address, sizeof(address)) == 0;
		close(fd);
		if (accepted)
			return;
		if (child_exited(server, &status)) {
			FORMAT(what, "the server exited %d before listening on port %d", status, port);
			fail_with_log(what, log);
		}
		sleep_ms(100);
	}
	FORMAT(what, "nothing listened on port %d after %d s", port, READY_SECONDS);
	fail_with_log(what, log);
}

/* The processes whose parent is pid, from /proc; how many (at most max). */
static size_t children_of(pid_t parent, pid_t *out, size_t max)
{
	DIR *proc = opendir("/proc");
	struct dirent *entry;
	size_t count = 0;

	assert_non_null(proc);
	while ((entry = readdir(proc)) && count < max) {
		char path[64], text[512], *end;
		const char *after_name;
		long pid = strtol(entry->d_name, &end, 10);
		size_t got;
		int ppid;
		FILE *stat;

		if (*end || pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
		stat = fopen(path, "r");
		if (!stat)
			continue;
		got = fread(text, 1, sizeof(text) - 1, stat);
		fclose(stat);
		text[got] = 0;
		after_name = strrchr(text, ')');
		if (after_name && sscanf(after_name + 1, " %*c %d", &ppid) == 1 && ppid == parent)
			out[count++] = (pid_t)pid;
	}
	closedir(proc);
	return count;
}

/* Waits until parent has exactly want children (a master's workers); their pids in out. */
static void wait_for_children(pid_t parent, pid_t *out, size_t want, const char *log)
{
	char what[128];
	size_t count = 0;
	int status;

	for (int tries = 0; tries < READY_SECONDS * 10; tries++) {
		count = children_of(parent, out, MAX_WORKERS);
		if (count == want)
			return;
		if (child_exited(parent, &status)) {
			FORMAT(what, "the server exited %d before its workers started", status);
			fail_with_log(what, log);
		}
		sleep_ms(100);
	}
	FORMAT(what, "%zu children of %d after %d s, not %zu", count, (int)parent, READY_SECONDS, want);
	fail_with_log(what, log);
}

static uint64_t cpu_ms_of(const pid_t *pids, size_t count)
{
	uint64_t total = 0;

	for (size_t i = 0; i < count; i++)
		total += test_cpu_ms(pids[i]);
	return total;
}

/* Stops a group's leader with sig and waits up to seconds for it (a graceful shutdown, in which
 * a workload writes its truth); then SIGKILLs whatever is left of the group. The leader's status. */
static int stop_group(pid_t leader, int sig, int seconds)
{
	int status = -1;

	kill(leader, sig);
	for (int tries = 0; tries < seconds * 10 && !child_exited(leader, &status); tries++)
		sleep_ms(100);
	kill(-leader, SIGKILL);
	if (status < 0)
		status = test_wait_status(leader);
	for (size_t i = 0; i < group_count; i++)
		if (groups[i] == leader)
			groups[i] = 0;
	return status;
}

/* Waits for a group's leader to end by itself; its status. */
static int wait_group(pid_t leader)
{
	int status = test_wait_status(leader);

	kill(-leader, SIGKILL);
	for (size_t i = 0; i < group_count; i++)
		if (groups[i] == leader)
			groups[i] = 0;
	return status;
}

/* Ends a start_wrk run as Ctrl-C does (it reports and exits 0); fails the test with its output
 * if it had failed. */
static void stop_wrk(pid_t wrk, const char *log)
{
	if (stop_group(wrk, SIGINT, 30) != 0)
		fail_with_log("wrk failed", log);
}

/* The teardown of every test: whatever a test started and did not stop is killed, its leader reaped. */
static int kill_groups(void **state)
{
	(void)state;
	for (size_t i = 0; i < group_count; i++)
		if (groups[i] > 0) {
			kill(-groups[i], SIGKILL);
			test_wait_status(groups[i]);
		}
	group_count = 0;
	return 0;
}

/* wrk against a path of the loopback port, in a group of its own, one thread, four connections;
 * for at most WRK_SECONDS, stopped by stop_wrk once the profile is taken. */
static pid_t start_wrk(int port, const char *path, const char *script, const char *log)
{
	char url[64], duration[16];
	char *argv[] = { "/usr/bin/wrk", "-t1", "-c4", "-d", duration, url, NULL, NULL, NULL };

	FORMAT(url, "http://127.0.0.1:%d%s", port, path);
	FORMAT(duration, "%ds", WRK_SECONDS);
	if (script) {
		argv[6] = "-s";
		argv[7] = (char *)script;
	}
	return start_group(argv, NULL, log);
}

/* pybpfprof at 1000 Hz in cpu mode into mojo, with extra options (NULL-terminated), started in
 * the background in a group of its own (its output into err_path), to run until stopped: its pid. */
static pid_t profile_start(const char *const extra[], const char *mojo, const char *err_path)
{
	char *argv[16] = { (char *)pybpfprof_binary(), "-q", "-F", "1000", "-o", (char *)mojo };
	size_t count = 6;

	for (size_t i = 0; extra[i] && count + 1 < 16; i++)
		argv[count++] = (char *)extra[i];
	argv[count] = NULL;
	return start_group(argv, NULL, err_path);
}

/* Lets a profile_start run sample for ms more, then ends it as Ctrl-C does; fails the test, with
 * its output, unless it exited 0. */
static void profile_finish(pid_t profiler, long ms, const char *err_path, const char *label)
{
	char what[64];
	int status;

	sleep_ms(ms);
	status = stop_group(profiler, SIGINT, 60);

	if (status != 0) {
		FORMAT(what, "%s: pybpfprof exited %d", label, status);
		fail_with_log(what, err_path);
	}
}

/* Whether a MOJO file being written has the metadata line of process pid ("process.PID"),
 * which a run writes when it starts sampling that process. */
static bool mojo_names_process(const uint8_t *data, size_t len, pid_t pid)
{
	char key[32];
	size_t key_len;

	FORMAT(key, "process.%d", (int)pid);
	key_len = strlen(key);
	for (const uint8_t *at = data; (at = memmem(at, len - (size_t)(at - data), key, key_len)); at += key_len)
		if ((size_t)(at - data) + key_len < len && (at[key_len] < '0' || at[key_len] > '9'))
			return true;
	return false;
}

/* Waits until a profile_start run is sampling every one of pids (its MOJO, flushed every
 * second, names them); fails the test if the run ends or READY_SECONDS pass first. */
static void wait_until_profiled(const char *mojo, const pid_t *pids, size_t count, pid_t profiler,
				const char *err_path)
{
	uint64_t started = monotonic_ns();

	for (int tries = 0; tries < READY_SECONDS * 10; tries++) {
		size_t len = 0, named = 0;
		uint8_t *data = read_whole_file(mojo, &len);
		int status;

		for (size_t i = 0; data && i < count; i++)
			named += mojo_names_process(data, len, pids[i]);
		free(data);
		if (named == count) {
			print_message("the profile names the %zu processes %.1f s in\n", count,
				      (double)(monotonic_ns() - started) / 1e9);
			return;
		}
		if (child_exited(profiler, &status))
			fail_with_log("the profiler ended before it sampled every process", err_path);
		sleep_ms(100);
	}
	fail_with_log("the profiler did not sample every process in time", err_path);
}

static ssize_t index_of(const pid_t *pids, size_t count, uint32_t pid)
{
	for (size_t i = 0; i < count; i++)
		if ((uint32_t)pids[i] == pid)
			return (ssize_t)i;
	return -1;
}

/* A scratch directory of this test binary's for a workload's truth files. */
static void truth_dir(char *dir, size_t len, const char *name)
{
	snprintf(dir, len, "%s/%s", test_tmpdir(), name);
	assert_true(mkdir(dir, 0755) == 0 || errno == EEXIST);
}

/* A gunicorn serving flask_app under wrk's load, profiled with -C -p master; its files named
 * after its name in the test's directory. */
struct gunicorn_run {
	char log[PATH_MAX], wrk_log[PATH_MAX], mojo[PATH_MAX], profiler_log[PATH_MAX], truth[PATH_MAX];
	pid_t workers[MAX_WORKERS]; /* the two it started with */
	pid_t master, wrk, profiler;
};

/* gunicorn -w 2 with extra options (NULL-terminated) started and loaded, its workers busy for
 * two seconds before the profiler attaches to the master. */
static void gunicorn_start_profiled(struct gunicorn_run *run, const char *name, const char *const extra[])
{
	char truth_name[64], truth_env[PATH_MAX + 32], bind[32], master_text[16], script[PATH_MAX];
	char *env[] = { truth_env, NULL };
	char *argv[24] = { "/usr/bin/gunicorn", "-c", "gunicorn_conf.py", "-w", "2" };
	size_t argc = 5;
	int port;

	need_program("/usr/bin/gunicorn");
	need_program("/usr/bin/wrk");
	need_module("flask");
	port = free_port();
	FORMAT(bind, "127.0.0.1:%d", port);
	FORMAT(run->log, "%s/%s.log", test_tmpdir(), name);
	FORMAT(run->wrk_log, "%s/%s-wrk.log", test_tmpdir(), name);
	FORMAT(run->mojo, "%s/%s.mojo", test_tmpdir(), name);
	FORMAT(run->profiler_log, "%s/%s-profiler.log", test_tmpdir(), name);
	FORMAT(script, "%s/alternate.lua", services_dir());
	FORMAT(truth_name, "%s-truth", name);
	truth_dir(run->truth, sizeof(run->truth), truth_name);
	FORMAT(truth_env, "SERVICE_TRUTH_DIR=%s", run->truth);
	for (size_t i = 0; extra[i]; i++)
		argv[argc++] = (char *)extra[i];
	memcpy(argv + argc, (char *const[]){ "-b", bind, "--graceful-timeout", "20", "flask_app:app", NULL },
	       6 * sizeof(*argv));

	run->master = start_group(argv, env, run->log);
	wait_for_port(port, run->master, run->log);
	wait_for_children(run->master, run->workers, 2, run->log);
	run->wrk = start_wrk(port, "/", script, run->wrk_log);
	sleep_ms(2000);
	FORMAT(master_text, "%d", (int)run->master);
	run->profiler = profile_start((const char *const[]){ "-C", "-p", master_text, NULL }, run->mojo,
				      run->profiler_log);
}

/* The load stopped, then gunicorn, which must stop cleanly. */
static void gunicorn_stop(const struct gunicorn_run *run)
{
	stop_wrk(run->wrk, run->wrk_log);
	if (stop_group(run->master, SIGTERM, 30) != 0)
		fail_with_log("gunicorn did not stop cleanly", run->log);
}

static void gunicorn_flask_workers(void **state)
{
	enum { WORKERS = 2 };
	static struct gunicorn_run run;
	const pid_t *workers = run.workers;
	uint64_t samples[WORKERS] = { 0 }, report = 0, lookup = 0, truth_report = 0, truth_lookup = 0,
		 cpu_before, cpu_after, in_workers = 0;
	struct pf_reader *reader;
	struct pf_sample sample;
	int got;

	(void)state;
	gunicorn_start_profiled(&run, "gunicorn", (const char *const[]){ NULL });
	wait_until_profiled(run.mojo, workers, WORKERS, run.profiler, run.profiler_log);
	cpu_before = cpu_ms_of(workers, WORKERS);
	profile_finish(run.profiler, 10000, run.profiler_log, "gunicorn");
	cpu_after = cpu_ms_of(workers, WORKERS);
	gunicorn_stop(&run);

	/* The truth: each worker's own CPU time in each view. */
	for (size_t i = 0; i < WORKERS; i++) {
		char path[PATH_MAX + 32];
		unsigned long long view_report = 0, view_lookup = 0;
		size_t len;
		uint8_t *text;

		FORMAT(path, "%s/flask.%d", run.truth, (int)workers[i]);
		text = read_whole_file(path, &len);
		if (!text || sscanf((char *)text, "%llu %llu", &view_report, &view_lookup) != 2)
			fail_with_log("a worker wrote no truth", run.log);
		free(text);
		truth_report += view_report;
		truth_lookup += view_lookup;
	}

	reader = test_open_profile(run.mojo);
	while ((got = pf_reader_next_sample(reader, &sample)) == 1) {
		ssize_t worker = index_of(workers, WORKERS, sample.pid);

		if (worker < 0)
			continue;
		samples[worker]++;
		in_workers++;
		if (test_has_python_frame(&sample, "report"))
			report++;
		else if (test_has_python_frame(&sample, "lookup"))
			lookup++;
	}
	assert_int_equal(got, 0);
	pf_reader_close(reader);

	{
		double truth_share = (double)truth_report / (double)(truth_report + truth_lookup);
		double share = report + lookup ? (double)report / (double)(report + lookup) : 0;
		double in_views = in_workers ? (double)(report + lookup) / (double)in_workers : 0;

		print_message("gunicorn: worker samples %" PRIu64 " (%" PRIu64 ", %" PRIu64 "), worker CPU %" PRIu64
			      " ms; in views %.1f%%; report %.1f%% (app: %.1f%%, %.1f:1)\n",
			      in_workers, samples[0], samples[1], cpu_after - cpu_before,
			      100 * in_views, 100 * share, 100 * truth_share,
			      (double)truth_report / (double)truth_lookup);
		for (size_t i = 0; i < WORKERS; i++)
			if (!samples[i])
				fail_msg("gunicorn: worker %d has no samples", (int)workers[i]);
		if ((double)in_workers < MIN_SAMPLE_SHARE * (double)(cpu_after - cpu_before))
			fail_msg("gunicorn: %" PRIu64 " worker samples for %" PRIu64 " ms of worker CPU", in_workers,
				 cpu_after - cpu_before);
		if (in_views < 0.90)
			fail_msg("gunicorn: %.1f%% of worker samples in the views, not >= 90%%", 100 * in_views);
		if (share < truth_share - 0.03 || share > truth_share + 0.03)
			fail_msg("gunicorn: report has %.1f%% of the views' samples, the app measured %.1f%%",
				 100 * share, 100 * truth_share);
	}
}

/* One gunicorn worker's own account (tests/scripts/services/flask_app.py). */
struct worker_truth {
	pid_t pid;
	unsigned long long report_ns, lookup_ns, started_ns, ended_ns;
};

/* Every worker's truth file in dir; how many (at most max). */
static size_t read_worker_truths(const char *dir, struct worker_truth *out, size_t max)
{
	DIR *listing = opendir(dir);
	struct dirent *entry;
	size_t count = 0;

	assert_non_null(listing);
	while ((entry = readdir(listing)) && count < max) {
		char path[PATH_MAX + 300];
		struct worker_truth truth = { 0 };
		uint8_t *text;
		size_t len;

		if (sscanf(entry->d_name, "flask.%d", &truth.pid) != 1 || strstr(entry->d_name, ".tmp"))
			continue;
		FORMAT(path, "%s/%s", dir, entry->d_name);
		text = read_whole_file(path, &len);
		if (text && sscanf((char *)text, "%llu %llu %llu %llu", &truth.report_ns, &truth.lookup_ns,
				   &truth.started_ns, &truth.ended_ns) == 4)
			out[count++] = truth;
		free(text);
	}
	closedir(listing);
	return count;
}

/*
 * gunicorn recycling its workers (--max-requests), attached to the master with -C: a worker
 * forked while the profile runs is in it from its start, with its views' samples.
 */
static void gunicorn_recycled_workers(void **state)
{
	enum { MAX_TRUTHS = 256 };
	static struct gunicorn_run run;
	static struct worker_truth truths[MAX_TRUTHS];
	static const char *const views[2] = { "report", "lookup" };
	static uint64_t samples[MAX_TRUTHS];
	pid_t pids[MAX_TRUTHS];
	size_t count, born_inside = 0;
	uint64_t from, until;
	struct pf_reader *reader;
	struct pf_sample sample;
	int got;

	(void)state;
	gunicorn_start_profiled(&run, "recycled", (const char *const[]){ "--max-requests", "10", NULL });
	wait_until_profiled(run.mojo, &run.master, 1, run.profiler, run.profiler_log);
	from = monotonic_ns();
	/* At least 8 s, and until a worker forked since has been recycled (a slow machine
	 * serves its 10 requests slowly). */
	for (int tries = 0; tries < READY_SECONDS * 2; tries++) {
		bool recycled = false;

		sleep_ms(500);
		count = read_worker_truths(run.truth, truths, MAX_TRUTHS);
		for (size_t i = 0; i < count; i++)
			recycled |= truths[i].started_ns >= from;
		if (recycled && tries >= 16)
			break;
	}
	profile_finish(run.profiler, 0, run.profiler_log, "gunicorn");
	until = monotonic_ns();
	gunicorn_stop(&run);

	count = read_worker_truths(run.truth, truths, MAX_TRUTHS);
	for (size_t i = 0; i < count; i++)
		pids[i] = truths[i].pid;
	reader = test_open_profile(run.mojo);
	while ((got = pf_reader_next_sample(reader, &sample)) == 1) {
		ssize_t at = index_of(pids, count, sample.pid);

		if (at >= 0 && (test_has_python_frame(&sample, views[0]) || test_has_python_frame(&sample, views[1])))
			samples[at]++;
	}
	assert_int_equal(got, 0);
	pf_reader_close(reader);

	for (size_t i = 0; i < count; i++) {
		uint64_t view_ms = (truths[i].report_ns + truths[i].lookup_ns) / 1000000u;

		/* Forked after the profiler started and gone before it ended: its whole life profiled. */
		if (truths[i].started_ns < from || truths[i].ended_ns > until)
			continue;
		born_inside++;
		print_message("gunicorn --max-requests: worker %d: %" PRIu64 " samples in the views, %" PRIu64
			      " ms of view CPU by its own account\n",
			      (int)truths[i].pid, samples[i], view_ms);
		if (!samples[i] || (double)samples[i] < MIN_SAMPLE_SHARE * (double)view_ms)
			fail_msg("gunicorn --max-requests: worker %d, forked while profiled: %" PRIu64
				 " samples in the views for %" PRIu64 " ms of view CPU",
				 (int)truths[i].pid, samples[i], view_ms);
	}
	if (!born_inside)
		fail_with_log("no worker was forked and recycled while profiled (of the workers that wrote a truth)", run.log);
}

/* Whether a sample holds Python frames named chain[0], chain[1], ... in that order, root to leaf
 * (others may stand between them). */
static bool has_python_chain(const struct pf_sample *sample, const char *const chain[], size_t length)
{
	size_t next = 0;

	for (size_t i = 0; i < sample->frame_count && next < length; i++)
		if (sample->frames[i].kind == PF_FRAME_PYTHON && strcmp(sample->frames[i].name, chain[next]) == 0)
			next++;
	return next == length;
}

/* Whether a sample holds an asyncio task frame ("<task NAME>", file <asyncio>) above the Python
 * frame named below. */
static bool has_task_above(const struct pf_sample *sample, const char *below)
{
	bool task = false;

	for (size_t i = 0; i < sample->frame_count; i++) {
		const struct pf_frame *frame = &sample->frames[i];

		if (frame->kind != PF_FRAME_PYTHON)
			continue;
		if (strcmp(frame->name, below) == 0)
			return task;
		task |= strncmp(frame->name, "<task ", 6) == 0 && frame->file && strcmp(frame->file, "<asyncio>") == 0;
	}
	return false;
}

/* uvicorn serving fastapi_app on an event loop (--loop: asyncio, uvloop) under wrk on one path,
 * profiled with extra options for PROFILE_MS; what the app measured, ns (its truth file). */
struct uvicorn_run {
	char log[PATH_MAX], wrk_log[PATH_MAX], mojo[PATH_MAX], profiler_log[PATH_MAX];
	pid_t server;
	uint64_t cpu_ms; /* the server's CPU time while profiled */
	unsigned long long handler_cpu, query_cpu, report_wall, db_wall;
};
#define UVICORN_PROFILE_MS 6000

static void uvicorn_profiled(const char *name, const char *loop, const char *path, const char *const extra[],
			     struct uvicorn_run *run)
{
	char truth[PATH_MAX], truth_env[PATH_MAX + 32], port_text[16], pid_text[16], file[PATH_MAX + 32];
	char *env[] = { truth_env, NULL };
	char *argv[] = { "/usr/bin/uvicorn", "--host", "127.0.0.1", "--port", port_text, "--loop", (char *)loop,
			 "--app-dir", ".", "fastapi_app:app", NULL };
	const char *options[12];
	uint64_t cpu_before;
	size_t count = 0, len;
	pid_t profiler, wrk;
	uint8_t *text;

	FORMAT(port_text, "%d", free_port());
	FORMAT(run->log, "%s/%s.log", test_tmpdir(), name);
	FORMAT(run->wrk_log, "%s/%s-wrk.log", test_tmpdir(), name);
	FORMAT(run->mojo, "%s/%s.mojo", test_tmpdir(), name);
	FORMAT(run->profiler_log, "%s/%s-profiler.log", test_tmpdir(), name);
	truth_dir(truth, sizeof(truth), "uvicorn-truth");
	FORMAT(truth_env, "SERVICE_TRUTH_DIR=%s", truth);

	run->server = start_group(argv, env, run->log);
	wait_for_port(atoi(port_text), run->server, run->log);
	wrk = start_wrk(atoi(port_text), path, NULL, run->wrk_log);
	sleep_ms(1000); /* the handler busy before the profiler attaches */
	FORMAT(pid_text, "%d", (int)run->server);
	for (size_t i = 0; extra[i] && count < 9; i++)
		options[count++] = extra[i];
	options[count++] = "-p";
	options[count++] = pid_text;
	options[count] = NULL;
	profiler = profile_start(options, run->mojo, run->profiler_log);
	wait_until_profiled(run->mojo, &run->server, 1, profiler, run->profiler_log);
	cpu_before = test_cpu_ms(run->server);
	profile_finish(profiler, UVICORN_PROFILE_MS, run->profiler_log, name);
	run->cpu_ms = test_cpu_ms(run->server) - cpu_before;
	stop_wrk(wrk, run->wrk_log);
	/* uvicorn's shutdown runs the app's shutdown handler, which writes the truth. */
	if (stop_group(run->server, SIGTERM, 30) != 0)
		fail_with_log("uvicorn did not stop cleanly", run->log);
	FORMAT(file, "%s/fastapi.%d", truth, (int)run->server);
	text = read_whole_file(file, &len);
	if (!text || sscanf((char *)text, "%llu %llu %llu %llu", &run->handler_cpu, &run->query_cpu, &run->report_wall,
			    &run->db_wall) != 4)
		fail_with_log("the app wrote no truth", run->log);
	free(text);
}

/*
 * The running request's task name is copied at the sample, so a request whose task ended before
 * its record was drained keeps its task frame: 100% of handler samples had one in 5 runs at load
 * 18-25, 2 of them beside two CPU hogs (96-100% at load 8-11 when the name was read at the drain).
 */
#define TASK_SHARE_MIN 0.90
/*
 * Wall mode's waiting requests: each one's stack is read from the target as its thread's record
 * is drained (a request that ended before shows none); this share of them must have a task frame.
 */
#define WAITING_TASK_SHARE_MIN 0.80

/*
 * uvicorn on asyncio's own loop, CPU mode: the request's task frame above handler -> service ->
 * query in most of the handler's samples (TASK_SHARE_MIN), the loop's plumbing (_run_once,
 * Handle._run) hidden above every task frame.
 */
static void uvicorn_fastapi_chain(void **state)
{
	static const char *const chain[] = { "handler", "service", "query" };
	uint64_t handler = 0, in_chain = 0, in_task = 0, plumbing = 0;
	struct uvicorn_run run;
	struct pf_reader *reader;
	struct pf_sample sample;
	int got;

	(void)state;
	need_program("/usr/bin/uvicorn");
	need_program("/usr/bin/wrk");
	need_module("fastapi");
	uvicorn_profiled("uvicorn", "asyncio", "/orders", (const char *const[]){ NULL }, &run);
	if (!run.handler_cpu)
		fail_with_log("the app measured no handler time", run.log);

	reader = test_open_profile(run.mojo);
	while ((got = pf_reader_next_sample(reader, &sample)) == 1) {
		if (sample.pid != (uint32_t)run.server || !test_has_python_frame(&sample, "handler"))
			continue;
		handler++;
		in_chain += has_python_chain(&sample, chain, 3);
		in_task += has_task_above(&sample, "handler");
		plumbing += has_task_above(&sample, "handler") &&
			    (test_has_python_frame(&sample, "BaseEventLoop._run_once") ||
			     test_has_python_frame(&sample, "Handle._run"));
	}
	assert_int_equal(got, 0);
	pf_reader_close(reader);

	{
		double truth_share = (double)run.query_cpu / (double)run.handler_cpu;
		double share = handler ? (double)in_chain / (double)handler : 0;
		double task_share = handler ? (double)in_task / (double)handler : 0;

		print_message("uvicorn: handler samples %" PRIu64 ", server CPU %" PRIu64
			      " ms; handler -> service -> query in %.1f%% (app: query %.1f%% of handler); under a task "
			      "%.1f%%, of those under the loop's plumbing %" PRIu64 "\n",
			      handler, run.cpu_ms, 100 * share, 100 * truth_share, 100 * task_share, plumbing);
		if ((double)handler < MIN_SAMPLE_SHARE * 0.5 * (double)run.cpu_ms)
			fail_msg("uvicorn: %" PRIu64 " handler samples for %" PRIu64 " ms of server CPU", handler,
				 run.cpu_ms);
		if (share < 0.90)
			fail_msg("uvicorn: the chain in %.1f%% of handler samples, not >= 90%%", 100 * share);
		if (share < truth_share - 0.03 || share > truth_share + 0.03)
			fail_msg("uvicorn: the chain in %.1f%% of handler samples, the app measured %.1f%% in query",
				 100 * share, 100 * truth_share);
		if (task_share < TASK_SHARE_MIN)
			fail_msg("uvicorn: a task frame above handler in %.1f%% of its samples, not >= %.0f%%",
				 100 * task_share, 100 * TASK_SHARE_MIN);
		if (plumbing)
			fail_msg("uvicorn: %" PRIu64 " handler samples under a task and the loop's plumbing", plumbing);
	}
}

/*
 * How close the share of db_query in the waiting requests' samples must be to the share of wall
 * time the app measured there. A waiting task's stack is read as its thread's record is drained,
 * not when it was sampled: on a loaded host the drain lags and takes records in bursts, which
 * correlates the samples (db_query 30 ms, render_page 10 ms: quiet, 71.7% against the app's
 * 71.8%; at load 9-11, 2.6-5.0 points low). db_query against render_page is 1:3 (their stacks
 * mistaken for each other would be far more than 10 points off).
 */
#define WAIT_SHARE_POINTS 0.10
/* Samples of waiting requests a run must give at least (at 1000 Hz, four requests at a time for
 * six seconds: some 24,000 when nothing is thinned). */
#define WAIT_SAMPLES_MIN 1000

/*
 * uvicorn on uvloop, wall mode with every waiting task (--async-mode all): requests to /report
 * wait in its database call (asyncio.sleep, 5-15 ms) then in render_page (20-40 ms); the samples under
 * report are under the request's task frame (WAITING_TASK_SHARE_MIN), and those of them in db_query
 * (suspended in its sleep) are the share of the requests' wall time the app measured there,
 * within WAIT_SHARE_POINTS.
 */
static void uvicorn_waiting_requests(void **state)
{
	uint64_t report = 0, in_db = 0, in_task = 0, in_sleep = 0;
	struct uvicorn_run run;
	struct pf_reader *reader;
	struct pf_sample sample;
	int got;

	(void)state;
	need_program("/usr/bin/uvicorn");
	need_program("/usr/bin/wrk");
	need_module("fastapi");
	need_module("uvloop");
	uvicorn_profiled("uvicorn-wall", "uvloop", "/report",
			 (const char *const[]){ "--mode", "wall", "--async-mode", "all", NULL }, &run);
	if (!run.report_wall)
		fail_with_log("the app measured no request", run.log);

	reader = test_open_profile(run.mojo);
	while ((got = pf_reader_next_sample(reader, &sample)) == 1) {
		const struct pf_frame *leaf = sample.frame_count ? &sample.frames[sample.frame_count - 1] : NULL;

		if (sample.pid != (uint32_t)run.server || !test_has_python_frame(&sample, "report"))
			continue;
		report++;
		in_task += has_task_above(&sample, "report");
		if (test_has_python_frame(&sample, "db_query")) {
			in_db++;
			in_sleep += leaf && leaf->kind == PF_FRAME_PYTHON && strcmp(leaf->name, "sleep") == 0;
		}
	}
	assert_int_equal(got, 0);
	pf_reader_close(reader);

	{
		double truth_share = (double)run.db_wall / (double)run.report_wall;
		double share = report ? (double)in_db / (double)report : 0;
		double task_share = report ? (double)in_task / (double)report : 0;

		print_message("uvicorn wall: report samples %" PRIu64 ", in db_query %.1f%% (%" PRIu64
			      " ending in its sleep; app: %.1f%% of the requests' wall time), under a task %.1f%%\n",
			      report, 100 * share, in_sleep, 100 * truth_share, 100 * task_share);
		if (report < WAIT_SAMPLES_MIN)
			fail_msg("uvicorn wall: %" PRIu64 " samples of waiting requests, not >= %d", report,
				 WAIT_SAMPLES_MIN);
		if (task_share < WAITING_TASK_SHARE_MIN)
			fail_msg("uvicorn wall: a task frame above report in %.1f%% of its samples, not >= %.0f%%",
				 100 * task_share, 100 * WAITING_TASK_SHARE_MIN);
		if (share < truth_share - WAIT_SHARE_POINTS || share > truth_share + WAIT_SHARE_POINTS)
			fail_msg("uvicorn wall: db_query in %.1f%% of report samples, the app measured %.1f%%",
				 100 * share, 100 * truth_share);
		if ((double)in_sleep < 0.9 * (double)in_db)
			fail_msg("uvicorn wall: only %" PRIu64 " of %" PRIu64 " db_query samples end in its sleep",
				 in_sleep, in_db);
	}
}

/* Samples per process of pids that hold a Python frame of function; counts[i] for pids[i]. */
static void count_python_samples(const char *mojo, const pid_t *pids, size_t count, const char *const function[],
				 uint64_t *counts)
{
	struct pf_reader *reader = test_open_profile(mojo);
	struct pf_sample sample;
	int got;

	while ((got = pf_reader_next_sample(reader, &sample)) == 1) {
		ssize_t at = index_of(pids, count, sample.pid);

		if (at >= 0 && test_has_python_frame(&sample, function[at]))
			counts[at]++;
	}
	assert_int_equal(got, 0);
	pf_reader_close(reader);
}

static void uwsgi_whole_host(void **state)
{
	enum { WORKERS = 2, PROCESSES = WORKERS + 1 };
	char log[PATH_MAX], wrk_log[PATH_MAX], mojo[PATH_MAX], profiler_err[PATH_MAX], socket_text[32];
	char *argv[] = { "/usr/bin/uwsgi", "--plugin", "python3", "--http-socket", socket_text, "--master",
			 "--processes", "2", "--enable-threads", "--die-on-term", "--wsgi-file", "uwsgi_app.py", NULL };
	/* The master's housekeeping thread, the workers' view. */
	const char *const functions[PROCESSES] = { "housekeeping", "render", "render" };
	uint64_t samples[PROCESSES] = { 0 }, cpu_before[PROCESSES], cpu_after[PROCESSES];
	pid_t pids[PROCESSES], wrk, profiler;
	int port;

	(void)state;
	need_program("/usr/bin/uwsgi");
	need_program("/usr/bin/wrk");
	if (access("/usr/lib/uwsgi/plugins/python3_plugin.so", R_OK) != 0) {
		print_message("uWSGI's python3 plugin is not installed (sudo make deps), skipped\n");
		skip();
	}
	port = free_port();
	FORMAT(socket_text, "127.0.0.1:%d", port);
	FORMAT(log, "%s/uwsgi.log", test_tmpdir());
	FORMAT(wrk_log, "%s/uwsgi-wrk.log", test_tmpdir());
	FORMAT(mojo, "%s/uwsgi.mojo", test_tmpdir());
	FORMAT(profiler_err, "%s/uwsgi-profiler.log", test_tmpdir());

	pids[0] = start_group(argv, NULL, log);
	wait_for_port(port, pids[0], log);
	wait_for_children(pids[0], pids + 1, WORKERS, log);
	wrk = start_wrk(port, "/", NULL, wrk_log);
	sleep_ms(1000);
	/*
	 * No -p: the whole host, where uwsgi is found by what it maps (libpython through a plugin).
	 * On a busy host discovering every process takes a while: the CPU time the samples are
	 * held to is counted from when the profile names all three processes.
	 */
	profiler = profile_start((const char *const[]){ NULL }, mojo, profiler_err);
	wait_until_profiled(mojo, pids, PROCESSES, profiler, profiler_err);
	for (size_t i = 0; i < PROCESSES; i++)
		cpu_before[i] = test_cpu_ms(pids[i]);
	profile_finish(profiler, 6000, profiler_err, "uwsgi");
	for (size_t i = 0; i < PROCESSES; i++)
		cpu_after[i] = test_cpu_ms(pids[i]);
	stop_wrk(wrk, wrk_log);
	stop_group(pids[0], SIGTERM, 30);

	count_python_samples(mojo, pids, PROCESSES, functions, samples);
	print_message("uwsgi: master %d: %" PRIu64 " samples in housekeeping (%" PRIu64
		      " ms CPU); workers %d, %d: %" PRIu64 ", %" PRIu64 " in render (%" PRIu64 ", %" PRIu64 " ms CPU)\n",
		      (int)pids[0], samples[0], cpu_after[0] - cpu_before[0], (int)pids[1], (int)pids[2], samples[1],
		      samples[2], cpu_after[1] - cpu_before[1], cpu_after[2] - cpu_before[2]);
	for (size_t i = 0; i < PROCESSES; i++) {
		/* The master's CPU is also its own C loop's: a looser share there. */
		double share = i == 0 ? MIN_SAMPLE_SHARE / 5 : MIN_SAMPLE_SHARE;

		if (!samples[i] || (double)samples[i] < share * (double)(cpu_after[i] - cpu_before[i]))
			fail_msg("uwsgi: %s %d: %" PRIu64 " samples in %s for %" PRIu64 " ms of CPU",
				 i == 0 ? "master" : "worker", (int)pids[i], samples[i], functions[i],
				 cpu_after[i] - cpu_before[i]);
	}
}

/* A child's task CPU time (ns) in tasks that ran wholly between from and until (CLOCK_MONOTONIC
 * ns), by its own truth file; how many such tasks in *tasks. */
static uint64_t task_cpu_between(const char *truth, pid_t child, uint64_t from, uint64_t until, unsigned *tasks)
{
	char path[PATH_MAX + 32], line[128];
	uint64_t total = 0;
	FILE *file;

	*tasks = 0;
	FORMAT(path, "%s/celery.%d", truth, (int)child);
	file = fopen(path, "r");
	if (!file)
		return 0;
	while (fgets(line, sizeof(line), file)) {
		unsigned long long pid, cpu, start, end;

		if (sscanf(line, "%llu %llu %llu %llu", &pid, &cpu, &start, &end) == 4 && start >= from &&
		    end <= until) {
			total += cpu;
			(*tasks)++;
		}
	}
	fclose(file);
	return total;
}

static void celery_prefork_children(void **state)
{
	char profiler_log[PATH_MAX];
	pid_t profiler;
	enum { CHILDREN = 2 };
	char redis_log[PATH_MAX], log[PATH_MAX], queue_log[PATH_MAX], mojo[PATH_MAX], truth[PATH_MAX],
		truth_env[PATH_MAX + 32], broker_env[64], port_text[16], parent_text[16];
	char *env[] = { truth_env, broker_env, NULL };
	char *redis_argv[] = { "/usr/bin/redis-server", "--port", port_text, "--bind", "127.0.0.1", "--save", "",
			       "--appendonly", "no", NULL };
	/* 300 tasks of about 0.1 s of CPU: more than two children get through while profiled. */
	char *queue_argv[] = { SYSTEM_PYTHON, "celery_app.py", "300", "2000000", NULL };
	char *worker_argv[] = { SYSTEM_PYTHON, "-m", "celery", "-A", "celery_app", "worker", "-c", "2", "-P",
				"prefork", "-O", "fair", "--without-heartbeat", "--without-gossip", "--without-mingle",
				"-l", "warning", NULL };
	static const char *const crunch[CHILDREN] = { "crunch", "crunch" };
	uint64_t samples[CHILDREN] = { 0 }, from, until;
	pid_t redis, queue, parent, children[MAX_WORKERS];
	int port;

	(void)state;
	need_program("/usr/bin/redis-server");
	need_module("celery");
	need_module("redis");
	port = free_port();
	FORMAT(port_text, "%d", port);
	FORMAT(redis_log, "%s/redis.log", test_tmpdir());
	FORMAT(log, "%s/celery.log", test_tmpdir());
	FORMAT(queue_log, "%s/celery-queue.log", test_tmpdir());
	FORMAT(mojo, "%s/celery.mojo", test_tmpdir());
	FORMAT(profiler_log, "%s/celery-profiler.log", test_tmpdir());
	truth_dir(truth, sizeof(truth), "celery-truth");
	FORMAT(truth_env, "SERVICE_TRUTH_DIR=%s", truth);
	FORMAT(broker_env, "SERVICE_BROKER=redis://127.0.0.1:%d/0", port);

	redis = start_group(redis_argv, NULL, redis_log);
	wait_for_port(port, redis, redis_log);
	queue = start_group(queue_argv, env, queue_log);
	if (wait_group(queue) != 0)
		fail_with_log("the tasks could not be queued", queue_log);
	parent = start_group(worker_argv, env, log);
	wait_for_children(parent, children, CHILDREN, log);
	/* Ready once each child has finished a task: both take work before the profiler attaches. */
	for (int tries = 0;; tries++) {
		unsigned tasks[CHILDREN];

		task_cpu_between(truth, children[0], 0, UINT64_MAX, &tasks[0]);
		task_cpu_between(truth, children[1], 0, UINT64_MAX, &tasks[1]);
		if (tasks[0] && tasks[1])
			break;
		if (tries == READY_SECONDS * 10)
			fail_with_log("the children ran no task", log);
		sleep_ms(100);
	}
	FORMAT(parent_text, "%d", (int)parent);
	profiler = profile_start((const char *const[]){ "-C", "-p", parent_text, NULL }, mojo, profiler_log);
	wait_until_profiled(mojo, children, CHILDREN, profiler, profiler_log);
	from = monotonic_ns();
	/* At least 5 s, and until each child has run a task wholly since (a slow machine runs
	 * its tasks slowly). */
	for (int tries = 0; tries < READY_SECONDS * 2; tries++) {
		unsigned tasks[CHILDREN];

		sleep_ms(500);
		task_cpu_between(truth, children[0], from, UINT64_MAX, &tasks[0]);
		task_cpu_between(truth, children[1], from, UINT64_MAX, &tasks[1]);
		if (tasks[0] && tasks[1] && tries >= 10)
			break;
	}
	profile_finish(profiler, 0, profiler_log, "celery");
	until = monotonic_ns();
	stop_group(parent, SIGTERM, 30);
	stop_group(redis, SIGTERM, 30);

	count_python_samples(mojo, children, CHILDREN, crunch, samples);
	for (size_t i = 0; i < CHILDREN; i++) {
		unsigned tasks;
		uint64_t cpu_ms = task_cpu_between(truth, children[i], from, until, &tasks) / 1000000u;

		print_message("celery: child %d: %" PRIu64 " samples in crunch; by its own account %u tasks, %" PRIu64
			      " ms CPU in them while profiled\n",
			      (int)children[i], samples[i], tasks, cpu_ms);
		if (!tasks)
			fail_msg("celery: child %d ran no whole task while profiled", (int)children[i]);
		if (!samples[i] || (double)samples[i] < MIN_SAMPLE_SHARE * (double)cpu_ms)
			fail_msg("celery: child %d: %" PRIu64 " samples in crunch for %" PRIu64 " ms of task CPU",
				 (int)children[i], samples[i], cpu_ms);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(gunicorn_flask_workers, kill_groups),
		cmocka_unit_test_teardown(gunicorn_recycled_workers, kill_groups),
		cmocka_unit_test_teardown(uvicorn_fastapi_chain, kill_groups),
		cmocka_unit_test_teardown(uvicorn_waiting_requests, kill_groups),
		cmocka_unit_test_teardown(uwsgi_whole_host, kill_groups),
		cmocka_unit_test_teardown(celery_prefork_children, kill_groups),
	};

	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	if (geteuid() != 0) {
		print_message("test_services: needs root (real BPF), skipped\n");
		return 0;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
