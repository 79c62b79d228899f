// SPDX-License-Identifier: MIT
/*
 * Faults a long run meets, injected (root, real BPF):
 *  - the output disk fills (a small tmpfs): one clear error line, a non-zero
 *    exit, no NAME.partial-* left; the older profile stays byte for byte, or,
 *    where the run reached a checkpoint, the new file reads back cleanly;
 *  - the ring buffer overflows (a small ring, a high rate, deep stacks, and the
 *    profiler stalled for a moment): the summary counts the lost records and
 *    the files decode with the number of samples they claim;
 *  - a target is stopped (SIGSTOP) for 2 s: the run ends on time and the
 *    other target's samples keep coming meanwhile;
 *  - the profiler is killed (SIGKILL) mid-run: the MOJO and Tachyon files read
 *    back, and nothing else is left in the directory (no empty NAME.partial-*
 *    beside the outputs written only at the end).
 */
#include "testlib.h"

#include "util/exit_status.h"

#include <dirent.h>
#include <inttypes.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>

#include "formats/format_registry.h"
#include "profile/profile.h"
#include "util/clock.h"

#define DISK_BYTES (256u << 10)
/* A run that takes this much longer than its -d hangs. */
#define HANG_S 60

static char disk[PATH_MAX];
static char python[1024];
/* Targets a test started, killed by the teardown even when the test fails. */
static pid_t targets[4];

/* ---------------------------------------------------------------- targets */

/* Starts `python tests/scripts/SCRIPT ARG` and returns once it says "ready". */
static pid_t start_script(const char *script, const char *arg)
{
	char command[PATH_MAX + 1200], line[16] = "";
	char *argv[16];
	int out = -1;
	pid_t pid;
	FILE *ready;

	FORMAT(command, "%s %s/tests/scripts/%s %s", python, test_source_dir(), script, arg ? arg : "");
	split_command(command, argv, 16);
	pid = test_spawn(argv, &out, NULL);
	assert_true(pid > 0);
	for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++)
		if (!targets[i]) {
			targets[i] = pid;
			break;
		}
	ready = fdopen(out, "r");
	assert_non_null(ready);
	assert_non_null(fgets(line, sizeof(line), ready));
	assert_string_equal(line, "ready\n");
	fclose(ready);
	return pid;
}

static int stop_targets(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++)
		if (targets[i]) {
			kill(targets[i], SIGKILL);
			test_wait_status(targets[i]);
			targets[i] = 0;
		}
	return 0;
}

/* ---------------------------------------------------------------- reading what a run left */

struct read_back {
	size_t samples;
	char samples_claimed[32]; /* the "samples" metadata, "" if none */
	char lost_claimed[32];    /* the "lost_samples" metadata, "" if none */
	char error[512];          /* "" when the whole file read */
};

static void read_back(const char *path, struct read_back *back)
{
	struct pf_reader *reader;
	struct pf_sample sample;
	const char *value;
	int got;

	memset(back, 0, sizeof(*back));
	if (format_registry_open_reader(&reader, path, back->error, sizeof(back->error)))
		return;
	while ((got = pf_reader_next_sample(reader, &sample)) > 0)
		back->samples++;
	if (got < 0)
		snprintf(back->error, sizeof(back->error), "%s", pf_reader_error(reader));
	if ((value = pf_reader_metadata(reader, "samples")))
		snprintf(back->samples_claimed, sizeof(back->samples_claimed), "%s", value);
	if ((value = pf_reader_metadata(reader, "lost_samples")))
		snprintf(back->lost_claimed, sizeof(back->lost_claimed), "%s", value);
	pf_reader_close(reader);
}

/* No "NAME.partial-*" left beside path. */
static void assert_no_partial_files(const char *path)
{
	char command[PATH_MAX + 64];

	FORMAT(command, "! ls %s.partial-* >/dev/null 2>&1", path);
	assert_int_equal(system(command), 0);
}

static size_t line_count(const char *text)
{
	size_t lines = 0;

	for (; *text; text++)
		lines += *text == '\n';
	return lines;
}

/* ---------------------------------------------------------------- a full disk */

static int mount_small_disk(void **state)
{
	char options[64];

	(void)state;
	FORMAT(disk, "%s/disk", test_tmpdir());
	FORMAT(options, "size=%u,mode=0755", DISK_BYTES);
	if (mkdir(disk, 0755) || mount("tmpfs", disk, "tmpfs", 0, options)) {
		fprintf(stderr, "test_faults: cannot mount a tmpfs at %s: %s\n", disk, strerror(errno));
		return -1;
	}
	return 0;
}

static int unmount_small_disk(void **state)
{
	(void)state;
	stop_targets(NULL);
	return umount2(disk, MNT_DETACH);
}

static void empty_disk(void)
{
	char command[PATH_MAX + 64];

	FORMAT(command, "rm -rf %s/*", disk);
	assert_int_equal(system(command), 0);
}

/* Fills the disk up to leave_bytes free. */
static void fill_disk(size_t leave_bytes)
{
	char filler[PATH_MAX + 16];
	struct statvfs info;
	uint64_t free_bytes;
	uint8_t *zeros;

	assert_int_equal(statvfs(disk, &info), 0);
	free_bytes = (uint64_t)info.f_bavail * info.f_frsize;
	assert_true(free_bytes > leave_bytes);
	zeros = calloc(1, free_bytes - leave_bytes);
	assert_non_null(zeros);
	FORMAT(filler, "%s/filler", disk);
	assert_int_equal(write_whole_file(filler, zeros, free_bytes - leave_bytes), 0);
	free(zeros);
}

/* An older, good profile at path, made from tests/data (converted to path's format). */
static void place_older_profile(const char *path)
{
	char source[PATH_MAX], err[4096];
	char *argv[] = { (char *)pybpfprof_binary(), "convert", source, "-o", (char *)path, NULL };

	testdata_path(source, sizeof(source), "mojo/mode_xm.mojo");
	assert_int_equal(run_capture(argv, err, sizeof(err)), 0);
}

enum disk_outcome {
	KEEPS_OLDER,  /* the disk fills before the file is ever readable: the older one stays */
	READABLE_NEW, /* the file reached a checkpoint first: the new one reads back cleanly */
};

struct disk_case {
	const char *name;      /* the output's name on the disk (its extension picks the format) */
	size_t leave_bytes;    /* free space when the run starts */
	enum disk_outcome outcome;
};

/* Records the name-churning target into the nearly full disk until the disk is full. */
static void record_until_full(const struct disk_case *c)
{
	char out[PATH_MAX], pid_text[16], err[8192];
	char *argv[] = { (char *)pybpfprof_binary(), "-q", "-F", "2000", "-d", "30", "-p", pid_text,
			 "-o", out, NULL };
	uint8_t *before, *after;
	size_t before_len = 0, after_len = 0;
	struct read_back back;
	int status;

	FORMAT(out, "%s/%s", disk, c->name);
	FORMAT(pid_text, "%d", (int)targets[0]);
	empty_disk();
	place_older_profile(out);
	fill_disk(c->leave_bytes);
	before = read_whole_file(out, &before_len);
	assert_non_null(before);
	status = run_capture(argv, err, sizeof(err));
	print_message("%s with %zu bytes free: exit %d: %s", c->name, c->leave_bytes, status, err);
	assert_int_equal(status, EXIT_STATUS_OUTPUT);
	/* One line, naming the file and the cause. */
	assert_int_equal(line_count(err), 1);
	assert_non_null(strstr(err, out));
	assert_non_null(strstr(err, strerror(ENOSPC)));
	assert_no_partial_files(out);
	after = read_whole_file(out, &after_len);
	assert_non_null(after);
	if (c->outcome == KEEPS_OLDER) {
		assert_int_equal(after_len, before_len);
		assert_memory_equal(after, before, before_len);
	} else {
		assert_false(after_len == before_len && !memcmp(after, before, before_len));
		read_back(out, &back);
		assert_string_equal(back.error, "");
		assert_true(back.samples > 0);
	}
	free(before);
	free(after);
}

static void full_disk(void **state)
{
	static const struct disk_case cases[] = {
		{ "keep.mojo", 4096, KEEPS_OLDER },
		{ "new.mojo", 96 << 10, READABLE_NEW },
		{ "keep.bin", 4096, KEEPS_OLDER },
		{ "new.bin", 96 << 10, READABLE_NEW },
		{ "keep.collapsed", 4096, KEEPS_OLDER },
		{ "keep.svg", 4096, KEEPS_OLDER },
	};

	(void)state;
	/* A new function every millisecond: every format's file keeps growing. */
	start_script("fault_names.py", NULL);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		record_until_full(&cases[i]);
}

/* ---------------------------------------------------------------- the ring buffer overflows */

/* "N lost" in the summary line "... samples in ...; N lost", or -1. */
static long long summary_number(const char *summary, const char *after_text, const char *before_text)
{
	const char *line = strstr(summary, " samples in ");
	const char *at;

	if (!line)
		return -1;
	if (!after_text) {
		while (line > summary && line[-1] != '\n' && line[-1] != ' ')
			line--;
		return strtoll(line, NULL, 10);
	}
	at = strstr(line, after_text);
	if (!at)
		return -1;
	at += strlen(after_text);
	return strstr(at, before_text) ? strtoll(at, NULL, 10) : -1;
}

/*
 * A 1 MiB ring (the smallest --ringbuf-mb gives), 10 kHz on two targets 200 frames
 * deep, and the profiler itself stopped for 1.5 s: the ring fills however fast the
 * machine drains it.
 */
static void ring_overflow(void **state)
{
	char pids[64], mojo[PATH_MAX], tachyon[PATH_MAX], err_path[PATH_MAX];
	char *argv[] = { (char *)pybpfprof_binary(), "-F", "10000", "--ringbuf-mb", "1", "-d", "6",
			 "-p", pids, "-o", mojo, "-o", tachyon, NULL };
	struct read_back from_mojo, from_tachyon;
	long long samples, lost;
	uint8_t *summary;
	size_t len = 0;
	pid_t profiler;

	(void)state;
	FORMAT(pids, "%d,%d", (int)start_script("bpf_recurse.py", "200"),
	       (int)start_script("bpf_recurse.py", "200"));
	FORMAT(mojo, "%s/ring.mojo", test_tmpdir());
	FORMAT(tachyon, "%s/ring.bin", test_tmpdir());
	FORMAT(err_path, "%s/ring.err", test_tmpdir());
	profiler = test_spawn(argv, NULL, err_path);
	assert_true(profiler > 0);
	sleep(2);
	kill(profiler, SIGSTOP);
	usleep(1500 * 1000);
	kill(profiler, SIGCONT);
	assert_int_equal(test_wait_status(profiler), 0);
	summary = read_whole_file(err_path, &len);
	assert_non_null(summary);
	print_message("%s", summary ? (char *)summary : "");
	samples = summary_number((char *)summary, NULL, NULL);
	lost = summary_number((char *)summary, "; ", " lost");
	assert_true(samples > 0);
	assert_true(lost > 0);
	free(summary);
	read_back(mojo, &from_mojo);
	read_back(tachyon, &from_tachyon);
	assert_string_equal(from_mojo.error, "");
	assert_string_equal(from_tachyon.error, "");
	/* Each file holds the samples the summary and its own metadata claim, and the lost count. */
	assert_int_equal(from_mojo.samples, samples);
	assert_int_equal(from_tachyon.samples, samples);
	assert_int_equal(strtoll(from_mojo.samples_claimed, NULL, 10), samples);
	assert_int_equal(strtoll(from_tachyon.samples_claimed, NULL, 10), samples);
	assert_int_equal(strtoll(from_mojo.lost_claimed, NULL, 10), lost);
	assert_int_equal(strtoll(from_tachyon.lost_claimed, NULL, 10), lost);
}

/* ---------------------------------------------------------------- a stopped target */

#define STOP_AT_MS 1500
#define STOP_MS 2000
#define RUN_S 6

/* Samples of pid's main thread (Tachyon keeps threads, not processes) in [from_us, to_us). */
static size_t samples_between(const char *path, pid_t pid, uint64_t from_us, uint64_t to_us)
{
	struct pf_reader *reader;
	struct pf_sample sample;
	char err[512];
	size_t count = 0;

	if (format_registry_open_reader(&reader, path, err, sizeof(err)))
		fail_msg("%s: %s", path, err);
	while (pf_reader_next_sample(reader, &sample) > 0)
		count += sample.tid == (uint64_t)pid && sample.timestamp_us >= from_us &&
			 sample.timestamp_us < to_us;
	pf_reader_close(reader);
	return count;
}

static void stopped_target(void **state)
{
	char pids[64], out[PATH_MAX];
	char *argv[] = { (char *)pybpfprof_binary(), "-q", "-F", "500", "-d", "6", "-p", pids, "-o", out, NULL };
	uint64_t started_ms, stopped_us, resumed_us, running_cpu_ms;
	pid_t stopped = start_script("bpf_spin.py", NULL), running = start_script("bpf_spin.py", NULL);
	pid_t profiler;
	size_t during, stopped_during;

	(void)state;
	FORMAT(pids, "%d,%d", (int)stopped, (int)running);
	FORMAT(out, "%s/stopped.bin", test_tmpdir());
	started_ms = clock_monotonic_ms();
	profiler = test_spawn(argv, NULL, NULL);
	assert_true(profiler > 0);
	/* Sampling has begun once the file is in place (its first flush with samples): on a
	 * loaded machine loading the BPF program alone can take longer than STOP_AT_MS. */
	for (int waited = 0; waited < 300 && !file_exists(out); waited++)
		usleep(100 * 1000);
	assert_true(file_exists(out));
	usleep(STOP_AT_MS * 1000 / 3);
	kill(stopped, SIGSTOP);
	stopped_us = clock_monotonic_us();
	running_cpu_ms = test_cpu_ms(running);
	usleep(STOP_MS * 1000);
	running_cpu_ms = test_cpu_ms(running) - running_cpu_ms;
	kill(stopped, SIGCONT);
	resumed_us = clock_monotonic_us();
	assert_int_equal(test_wait_status(profiler), 0);
	/* On time: -d and what starting and finishing take on a loaded machine, not a hang. */
	print_message("the run took %.1f s for -d %d", (double)(clock_monotonic_ms() - started_ms) / 1000.0,
		      RUN_S);
	assert_true(clock_monotonic_ms() - started_ms < (RUN_S + HANG_S) * 1000ull);
	/* The stop takes effect within a scheduler tick or two: leave it 100 ms each side. */
	during = samples_between(out, running, stopped_us + 100000, resumed_us - 100000);
	stopped_during = samples_between(out, stopped, stopped_us + 100000, resumed_us - 100000);
	print_message("during the stop: %zu samples of the running target (%" PRIu64 " ms of its CPU in the stop), %zu "
		      "of the stopped one", during, running_cpu_ms, stopped_during);
	assert_int_equal(stopped_during, 0);
	/* The running one was sampled meanwhile: at 500 Hz a sample per 2 ms of its CPU, 1.8 of the
	 * stop's 2 s counted. At least a tenth of the stop on a quiet host, or, where a loaded host
	 * gave it less CPU than that, a quarter of what its CPU makes (and not a stray few). */
	assert_true(during > 90 || (during >= 20 && during * 8 >= running_cpu_ms * 9 / 10));
	/* and the stopped one is sampled again once it runs */
	assert_true(samples_between(out, stopped, resumed_us + 100000, UINT64_MAX) > 0);
}

/* Entries of dir other than "." and "..", their names joined by ' ' in names. */
static size_t directory_entries(const char *dir, char *names, size_t size)
{
	struct dirent *entry;
	DIR *handle = opendir(dir);
	size_t count = 0, used = 0;

	assert_non_null(handle);
	names[0] = 0;
	while ((entry = readdir(handle))) {
		if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0)
			continue;
		count++;
		used += (size_t)snprintf(names + used, used < size ? size - used : 0, "%s ", entry->d_name);
		if (used >= size)
			used = size - 1;
	}
	closedir(handle);
	return count;
}

/*
 * SIGKILL in the middle of a run writing every format: MOJO and Tachyon are readable where
 * they were put (flushed, checkpointed), and the formats written whole at the end leave no
 * trace, not even an empty file beside their names.
 */
static void killed_run_leaves_only_readable_files(void **state)
{
	char dir[PATH_MAX], mojo[PATH_MAX], tachyon[PATH_MAX], svg[PATH_MAX], collapsed[PATH_MAX];
	char pprof[PATH_MAX], speedscope[PATH_MAX], pid_text[16], names[1024];
	char *argv[] = { (char *)pybpfprof_binary(), "-q", "-F", "500", "-p", pid_text, "-o", mojo, "-o", tachyon,
			 "-o", svg, "-o", collapsed, "-o", pprof, "-o", speedscope, NULL };
	pid_t target = start_script("bpf_spin.py", NULL), profiler;
	struct read_back from_mojo, from_tachyon;

	(void)state;
	FORMAT(pid_text, "%d", (int)target);
	FORMAT(dir, "%s/killed", test_tmpdir());
	assert_true(mkdir(dir, 0755) == 0 || errno == EEXIST);
	FORMAT(mojo, "%s/run.mojo", dir);
	FORMAT(tachyon, "%s/run.bin", dir);
	FORMAT(svg, "%s/run.svg", dir);
	FORMAT(collapsed, "%s/run.collapsed", dir);
	FORMAT(pprof, "%s/run.pb.gz", dir);
	FORMAT(speedscope, "%s/run.speedscope.json", dir);
	profiler = test_spawn(argv, NULL, NULL);
	assert_true(profiler > 0);
	/* Killed once both streamed files hold samples (their first flush), however slow the start. */
	for (int waited = 0; waited < 300 && !(file_exists(mojo) && file_exists(tachyon)); waited++)
		usleep(100 * 1000);
	kill(profiler, SIGKILL);
	test_wait_status(profiler);
	read_back(mojo, &from_mojo);
	read_back(tachyon, &from_tachyon);
	print_message("left: %zu entries: %s; MOJO %zu samples, Tachyon %zu\n", directory_entries(dir, names, sizeof(names)),
		      names, from_mojo.samples, from_tachyon.samples);
	assert_string_equal(from_mojo.error, "");
	assert_string_equal(from_tachyon.error, "");
	assert_true(from_mojo.samples > 0 && from_tachyon.samples > 0);
	assert_int_equal(directory_entries(dir, names, sizeof(names)), 2);
}

int main(void)
{
	const struct CMUnitTest disk_tests[] = {
		cmocka_unit_test_teardown(full_disk, stop_targets),
	};
	const struct CMUnitTest run_tests[] = {
		cmocka_unit_test_teardown(ring_overflow, stop_targets),
		cmocka_unit_test_teardown(stopped_target, stop_targets),
		cmocka_unit_test_teardown(killed_run_leaves_only_readable_files, stop_targets),
	};
	int failed;

	if (geteuid() != 0) {
		fprintf(stderr, "test_faults: needs root (real BPF, mounting a tmpfs)\n");
		return 77;
	}
	if (!test_python_command("3.12", python, sizeof(python))) {
		fprintf(stderr, "test_faults: no Python 3.12 (tests/pythons/list-pythons.sh)\n");
		return 77;
	}
	failed = cmocka_run_group_tests_name("full disk", disk_tests, mount_small_disk, unmount_small_disk);
	failed += cmocka_run_group_tests_name("ring and stops", run_tests, NULL, NULL);
	return failed;
}
