// SPDX-License-Identifier: MIT
/*
 * Thread states end to end (real BPF, root), on every supported interpreter
 * on the machine.
 *
 * Contention: two threads spinning in Python contend for the GIL. In wall
 * mode, at every pass that saw both, exactly one of them holds it: their
 * GIL-holding shares add up to 100% of the passes (+- 3 pp, less the time the
 * spinners waited for a CPU on a busy host: the GIL is free from a drop until
 * the woken thread runs), and neither is flagged as collecting garbage. In gil mode every sample holds the GIL, the
 * MOJO file says mode wall with our own pybpfprof_mode gil, the Tachyon file
 * mode gil, and CPython 3.15 replays it. A spinner holding the GIL runs
 * Python code: the interrupt that preempted it is never its leaf.
 *
 * Garbage: a thread making reference cycles shows GC-flagged samples in MOJO
 * (its GC event) and, for the same samples, CPython's "~" "<GC>" leaf frame in
 * Tachyon, which CPython 3.15's replay shows as <GC>.
 *
 * 2.7 has no GIL holder field (SHARE_MIN_27 says why its sum is lower).
 * Waiting for the GIL (Tachyon's GIL_REQUESTED): 3.15 says it
 * (PyThreadState.gil_requested), so some of a spinner's samples without the
 * GIL carry it there, none with the GIL; earlier versions never set it.
 */
#include "testlib.h"

#include "formats/format_registry.h"
#include "profile/profile.h"
#include "util/clock.h"

#include <dirent.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>

#define SCRIPT "gil_threads.py"
#define MAX_PYTHONS 32
#define SHARE_TOLERANCE 0.03
/* 2.7's GIL has no holder field: the holder is _PyThreadState_Current, which the thread clears
 * before it releases the lock every check interval and sets again once it has it back. Two
 * spinners on two CPUs spend part of the time in that release and re-acquire (the old GIL's
 * contention), when no thread holds it: how much depends on how soon the woken thread runs,
 * measured 57.9% to 90.8% held on this VM. Nor is the old GIL fair: the releasing thread often
 * takes it straight back, so one spinner's share ran from 7.6% to 58% across runs, with this
 * build and the one before it alike. What holds whatever the scheduling:
 * the shares never overlap, never pass 100%, and each spinner is seen holding it. */
#define SHARE_MIN_27 0.5
#define SPINNER_SHARE_MIN_27 0.03
#define PASSES_MIN 100
#define GC_SHARE_MIN 0.05

static const char *const gil_labels[] = { "2.7", "3.8", "3.11-static", "3.12", "3.13", "3.14", "3.15" };

static struct test_python pythons[MAX_PYTHONS];
static size_t python_count;

static const struct test_python *wanted_python(void **state)
{
	return test_wanted_python(state, pythons, python_count);
}

/* ---- the target ---- */

static void start_target(const struct test_python *python, const char *mode, struct test_target *target)
{
	char command[1400], *argv[32], line[64] = "";
	struct pollfd ready;
	ssize_t got;

	FORMAT(command, "%s %s/tests/scripts/%s %s", python->command, test_source_dir(), SCRIPT, mode);
	split_command(command, argv, 32);
	target->pid = test_spawn(argv, &target->out_fd, NULL);
	assert_true(target->pid > 0);
	ready = (struct pollfd){ .fd = target->out_fd, .events = POLLIN };
	if (poll(&ready, 1, 20000) != 1)
		fail_msg("%s: the script did not start", python->label);
	got = read(target->out_fd, line, sizeof(line) - 1);
	if (got <= 0 || strncmp(line, "ready", 5) != 0)
		fail_msg("%s: the script said '%s'", python->label, line);
}

static bool has_gc_leaf(const struct pf_sample *sample)
{
	const struct pf_frame *leaf = sample->frame_count ? &sample->frames[sample->frame_count - 1] : NULL;

	return leaf && strcmp(leaf->file, "~") == 0 && strcmp(leaf->name, "<GC>") == 0;
}

static struct pf_reader *open_profile(const char *path)
{
	struct pf_reader *reader;

	reader = test_open_profile(path);
	return reader;
}

static void assert_metadata(struct pf_reader *reader, const char *key, const char *want)
{
	const char *value = pf_reader_metadata(reader, key);

	if (!value || strcmp(value, want) != 0)
		fail_msg("metadata %s is '%s', not '%s'", key, value ? value : "(none)", want);
}

/* ---- two threads contending for the GIL: one holds it at every pass ---- */

#define WORKERS 2

/* Wall mode: the passes that saw both spinners, and how often each held the GIL in them. */
struct contention_tally {
	size_t passes;
	size_t held[WORKERS];
	size_t both_held;      /* passes where both claimed it: the holder changed mid-pass */
	size_t gc_flagged;     /* spinner samples flagged GC: they make no garbage */
	size_t requesting;     /* spinner samples waiting for the GIL */
	size_t holding_and_requesting;
	uint64_t tids[WORKERS];
};

/* One spinner sample: which spinner, in which pass, holding the GIL or not. */
struct spinner_sample {
	uint64_t timestamp_us;
	int slot;
	int holding;
};

static int worker_slot(struct contention_tally *tally, uint64_t tid)
{
	for (int i = 0; i < WORKERS; i++) {
		if (tally->tids[i] == tid)
			return i;
		if (tally->tids[i] == 0) {
			tally->tids[i] = tid;
			return i;
		}
	}
	return -1;
}

static int by_timestamp(const void *a, const void *b)
{
	uint64_t ta = ((const struct spinner_sample *)a)->timestamp_us;
	uint64_t tb = ((const struct spinner_sample *)b)->timestamp_us;

	return ta < tb ? -1 : ta > tb;
}

/* The samples of one pass share its timestamp (Tachyon's repeat records put them out of order). */
static void count_passes(struct contention_tally *tally, struct spinner_sample *samples, size_t count)
{
	qsort(samples, count, sizeof(*samples), by_timestamp);
	for (size_t first = 0, end; first < count; first = end) {
		int present[WORKERS] = { 0 }, holding[WORKERS] = { 0 }, holders = 0;

		for (end = first; end < count && samples[end].timestamp_us == samples[first].timestamp_us; end++) {
			present[samples[end].slot] = 1;
			holding[samples[end].slot] = samples[end].holding;
		}
		if (!present[0] || !present[1])
			continue;
		tally->passes++;
		for (int i = 0; i < WORKERS; i++) {
			tally->held[i] += holding[i];
			holders += holding[i];
		}
		tally->both_held += holders > 1;
	}
}

static void tally_contention(const char *path, struct contention_tally *tally)
{
	struct pf_reader *reader = open_profile(path);
	struct spinner_sample *samples = NULL;
	size_t count = 0, capacity = 0;
	struct pf_sample sample;
	int got;

	memset(tally, 0, sizeof(*tally));
	while ((got = pf_reader_next_sample(reader, &sample)) > 0) {
		int slot;

		if (!test_has_python_frame(&sample, "contend_spin"))
			continue;
		slot = worker_slot(tally, sample.tid);
		if (slot < 0)
			fail_msg("%s: a third thread in contend_spin", path);
		if (count == capacity) {
			capacity = capacity ? 2 * capacity : 1024;
			samples = realloc(samples, capacity * sizeof(*samples));
			assert_non_null(samples);
		}
		samples[count++] = (struct spinner_sample){ .timestamp_us = sample.timestamp_us, .slot = slot,
							    .holding = (sample.status & PF_STATUS_HAS_GIL) != 0 };
		tally->gc_flagged += (sample.status & PF_STATUS_GC) != 0;
		tally->requesting += (sample.status & PF_STATUS_GIL_REQUESTED) != 0;
		tally->holding_and_requesting += (sample.status & (PF_STATUS_GIL_REQUESTED | PF_STATUS_HAS_GIL)) ==
						 (PF_STATUS_GIL_REQUESTED | PF_STATUS_HAS_GIL);
	}
	if (got < 0)
		fail_msg("%s: %s", path, pf_reader_error(reader));
	assert_metadata(reader, "mode", "wall");
	pf_reader_close(reader);
	count_passes(tally, samples, count);
	free(samples);
}

struct gil_tally {
	size_t samples;
	size_t not_holding;
	size_t spinning;
	size_t preempted_leaf; /* the leaf is the kernel's way back to user space */
};

/* The kernel's way back to user space: the interrupt by which a thread running user code was
 * preempted, not somewhere it waits. */
static bool preempted_leaf(const struct pf_sample *sample)
{
	const struct pf_frame *leaf = sample->frame_count ? &sample->frames[sample->frame_count - 1] : NULL;

	return leaf && leaf->kind == PF_FRAME_KERNEL &&
	       (strncmp(leaf->name, "irqentry_", 9) == 0 || strncmp(leaf->name, "asm_sysvec_", 11) == 0 ||
		strncmp(leaf->name, "asm_common_interrupt", 20) == 0 || strstr(leaf->name, "exit_to_user"));
}

static void tally_gil_mode(const char *path, bool tachyon, struct gil_tally *tally)
{
	struct pf_reader *reader = open_profile(path);
	struct pf_sample sample;
	int got;

	memset(tally, 0, sizeof(*tally));
	while ((got = pf_reader_next_sample(reader, &sample)) > 0) {
		tally->samples++;
		tally->spinning += test_has_python_frame(&sample, "contend_spin");
		if (preempted_leaf(&sample)) {
			/* say which stack, so that a failure shows the path the filter missed */
			if (tally->preempted_leaf++ == 0) {
				print_message("%s: preempted leaf in a sample of thread %" PRIu64 ", root to leaf:", path,
					      (uint64_t)sample.tid);
				for (size_t i = 0; i < sample.frame_count; i++)
					print_message(" %s", sample.frames[i].name);
				print_message("\n");
			}
		}
		tally->not_holding += tachyon && !(sample.status & PF_STATUS_HAS_GIL);
	}
	if (got < 0)
		fail_msg("%s: %s", path, pf_reader_error(reader));
	if (tachyon) {
		assert_metadata(reader, "mode", "gil");
	} else {
		/* Austin has no gil mode: wall samples, and our own key says which. */
		assert_metadata(reader, "mode", "wall");
		assert_metadata(reader, "pybpfprof_mode", "gil");
	}
	pf_reader_close(reader);
}

/* How long all of pid's threads together have waited for a CPU so far (schedstat's run delay), ns. */
static uint64_t threads_cpu_wait_ns(pid_t pid)
{
	char dir_path[64], path[PATH_MAX], text[256];
	unsigned long long run_ns, wait_ns;
	uint64_t total = 0;
	struct dirent *entry;
	DIR *dir;

	FORMAT(dir_path, "/proc/%d/task", (int)pid);
	dir = opendir(dir_path);
	if (!dir)
		return 0;
	while ((entry = readdir(dir))) {
		FILE *file;

		if (entry->d_name[0] == '.')
			continue;
		FORMAT(path, "%s/%s/schedstat", dir_path, entry->d_name);
		file = fopen(path, "re");
		if (!file)
			continue;
		if (fgets(text, sizeof(text), file) && sscanf(text, "%llu %llu", &run_ns, &wait_ns) == 2)
			total += wait_ns;
		fclose(file);
	}
	closedir(dir);
	return total;
}

static uint64_t monotonic_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

static void gil_contention(void **state)
{
	const struct test_python *python = wanted_python(state);
	char wall_mojo[PATH_MAX], wall_tachyon[PATH_MAX], gil_mojo[PATH_MAX], gil_tachyon[PATH_MAX];
	struct contention_tally contention;
	struct gil_tally from_mojo, from_tachyon;
	struct test_target target;
	double shares[WORKERS], sum = 0, waited_share;
	uint64_t waited_ns, started_ns;

	FORMAT(wall_mojo, "%s/contend-wall-%s.mojo", test_tmpdir(), python->label);
	FORMAT(wall_tachyon, "%s/contend-wall-%s.bin", test_tmpdir(), python->label);
	FORMAT(gil_mojo, "%s/contend-gil-%s.mojo", test_tmpdir(), python->label);
	FORMAT(gil_tachyon, "%s/contend-gil-%s.bin", test_tmpdir(), python->label);
	start_target(python, "contend", &target);
	waited_ns = threads_cpu_wait_ns(target.pid);
	started_ns = monotonic_ns();
	test_record_pid(python->label, "wall", "100", target.pid, "3", wall_mojo, wall_tachyon);
	waited_ns = threads_cpu_wait_ns(target.pid) - waited_ns;
	waited_share = (double)waited_ns / (double)(monotonic_ns() - started_ns);
	test_record_pid(python->label, "gil", "100", target.pid, "3", gil_mojo, gil_tachyon);
	test_stop_target(&target);

	tally_contention(wall_tachyon, &contention);
	for (int i = 0; i < WORKERS; i++) {
		shares[i] = contention.passes ? (double)contention.held[i] / (double)contention.passes : 0;
		sum += shares[i];
	}
	print_message("%s: %zu passes with both spinners: GIL held %.1f%% + %.1f%% = %.1f%% (both: %zu), GC-flagged %zu; "
		      "its threads waited for a CPU %.1f%% of the run\n",
		      python->label, contention.passes, 100 * shares[0], 100 * shares[1], 100 * sum,
		      contention.both_held, contention.gc_flagged, 100 * waited_share);
	assert_true(contention.passes >= PASSES_MIN);
	if (strcmp(python->label, "2.7") == 0) {
		if (sum < SHARE_MIN_27 || sum > 1 + SHARE_TOLERANCE)
			fail_msg("2.7: the spinners' GIL shares add up to %.1f%% of the wall time", 100 * sum);
		for (int i = 0; i < WORKERS; i++)
			if (shares[i] < SPINNER_SHARE_MIN_27)
				fail_msg("2.7: spinner %d held the GIL %.1f%% of the time", i, 100 * shares[i]);
	} else if (sum > 1 + SHARE_TOLERANCE || sum < 1 - SHARE_TOLERANCE - waited_share) {
		/* Held by nobody: from the holder's drop until the woken spinner runs and takes it. On a
		 * quiet host that is microseconds; on a busy one the woken thread waits for a CPU, and
		 * that wait (the spinners' run delay, which also counts a holder preempted) is GIL-free
		 * time the profile must show as such. */
		fail_msg("%s: the spinners' GIL shares add up to %.1f%% of the wall time (their threads waited for "
			 "a CPU %.1f%% of it)", python->label, 100 * sum, 100 * waited_share);
	}
	assert_int_equal(contention.gc_flagged, 0);
	print_message("%s: %zu spinner samples waiting for the GIL\n", python->label, contention.requesting);
	assert_int_equal(contention.holding_and_requesting, 0);
	if (strcmp(python->label, "3.15") == 0)
		assert_true(contention.requesting > 0);
	else
		assert_int_equal(contention.requesting, 0);

	tally_gil_mode(gil_mojo, false, &from_mojo);
	tally_gil_mode(gil_tachyon, true, &from_tachyon);
	print_message("%s gil mode: %zu samples, %zu in the spinners, %zu not holding the GIL, %zu with the "
		      "interrupt that preempted them as leaf\n", python->label, from_tachyon.samples,
		      from_tachyon.spinning, from_tachyon.not_holding, from_tachyon.preempted_leaf);
	assert_int_equal(from_mojo.samples, from_tachyon.samples);
	assert_int_equal(from_mojo.preempted_leaf, 0);
	assert_int_equal(from_tachyon.preempted_leaf, 0);
	assert_true(from_tachyon.spinning >= PASSES_MIN);
	assert_int_equal(from_tachyon.not_holding, 0);
	assert_cpython_accepts(gil_tachyon, from_tachyon.samples);
}

/* ---- the garbage collector: its samples are flagged GC ---- */

struct gc_tally {
	size_t samples;
	size_t gc;  /* MOJO: GC status (its GC event); Tachyon: a "~" "<GC>" leaf frame */
};

static void tally_gc(const char *path, bool tachyon, struct gc_tally *tally)
{
	struct pf_reader *reader = open_profile(path);
	struct pf_sample sample;
	int got;

	memset(tally, 0, sizeof(*tally));
	while ((got = pf_reader_next_sample(reader, &sample)) > 0) {
		if (!test_has_python_frame(&sample, "cycles_forever"))
			continue;
		tally->samples++;
		tally->gc += tachyon ? has_gc_leaf(&sample) : (sample.status & PF_STATUS_GC) != 0;
	}
	if (got < 0)
		fail_msg("%s: %s", path, pf_reader_error(reader));
	pf_reader_close(reader);
}

/* CPython 3.15's replay of our file, collapsed, names <GC> (where the sid chroot has it). */
static void assert_cpython_shows_gc(const char *tachyon)
{
	char err[8192];
	long replayed = cpython_replay_samples(tachyon, err, sizeof(err));
	size_t len = 0;
	char *collapsed;

	if (replayed == -1) {
		print_message("CPython 3.15 replay not checked: the sid chroot is absent\n");
		return;
	}
	if (replayed < 0)
		fail_msg("python3.15 replay of %s: %s", tachyon, err);
	collapsed = (char *)read_whole_file(SID_CHROOT "/tmp/replay.out", &len);
	assert_non_null(collapsed);
	if (!memmem(collapsed, len, ";<GC> ", 6))
		fail_msg("python3.15 replay of %s shows no <GC> frame", tachyon);
	free(collapsed);
}

static void gil_gc(void **state)
{
	const struct test_python *python = wanted_python(state);
	char mojo[PATH_MAX], tachyon[PATH_MAX];
	struct gc_tally from_mojo, from_tachyon;
	struct test_target target;
	uint64_t cpu_ms, wall_ms, sampled_ms;
	char duration[64];
	double share;

	FORMAT(mojo, "%s/gc-%s.mojo", test_tmpdir(), python->label);
	FORMAT(tachyon, "%s/gc-%s.bin", test_tmpdir(), python->label);
	start_target(python, "cycles", &target);
	cpu_ms = test_cpu_ms(target.pid);
	wall_ms = clock_monotonic_ms();
	test_record_pid(python->label, "cpu", "200", target.pid, "2", mojo, tachyon);
	cpu_ms = test_cpu_ms(target.pid) - cpu_ms;
	wall_ms = clock_monotonic_ms() - wall_ms;
	test_stop_target(&target);
	/* Its CPU while sampling: the profiler's start (BPF's load, slow on a loaded host) is in
	 * the measured span but not in the profile's duration; the target spun at one rate. */
	test_profile_metadata(mojo, "duration", duration, sizeof(duration));
	sampled_ms = strtoull(duration, NULL, 10) / 1000;
	if (wall_ms && sampled_ms < wall_ms)
		cpu_ms = cpu_ms * sampled_ms / wall_ms;
	tally_gc(mojo, false, &from_mojo);
	tally_gc(tachyon, true, &from_tachyon);
	share = from_mojo.samples ? (double)from_mojo.gc / (double)from_mojo.samples : 0;
	print_message("%s: %zu of %zu samples collecting (%.1f%%) in %" PRIu64 " ms of its CPU; Tachyon <GC> frames %zu\n",
		      python->label, from_mojo.gc, from_mojo.samples, 100 * share, cpu_ms, from_tachyon.gc);
	/* At 200 Hz a sample per 5 ms of the target's CPU while sampled (a loaded machine gives it
	 * less than the 2 s): half of them at least, and enough for a share. */
	if (from_mojo.samples * 10 < cpu_ms || from_mojo.samples < 20)
		fail_msg("%s: %zu samples for %" PRIu64 " ms of CPU", python->label, from_mojo.samples, cpu_ms);
	assert_true(share >= GC_SHARE_MIN);
	assert_int_equal(from_mojo.samples, from_tachyon.samples);
	assert_int_equal(from_mojo.gc, from_tachyon.gc);
	assert_cpython_shows_gc(tachyon);
}

int main(void)
{
	static const struct test_per_python kinds[] = { { "gil_contention_", gil_contention }, { "gil_gc_", gil_gc } };

	python_count = test_pythons(pythons, MAX_PYTHONS);
	return test_run_per_python("test_gil", gil_labels, sizeof(gil_labels) / sizeof(gil_labels[0]), kinds,
				   sizeof(kinds) / sizeof(kinds[0]));
}
