// SPDX-License-Identifier: MIT
/*
 * Wall mode end to end (real BPF, root), on every supported interpreter on the
 * machine: a process with a spinning thread, a thread in time.sleep, one
 * blocked in os.read on a pipe and one waiting on a threading.Lock shows all
 * four in nearly every interval, the three waiting ones idle, with their
 * Python stacks and a kernel stack naming the wait; cpu mode on the same
 * process shows only the spinner; a thread that sleeps 0.3 s and spins 0.1 s
 * shows 75% in the sleeping function (launched: the iterator over every task,
 * where the others attach with -p: one iterator per process). Files are read back with our readers
 * (MOJO's mode and time metric, Tachyon's mode and status bits) and CPython
 * 3.15's own reader replays the Tachyon file. The spinner, running Python
 * code, never shows the kernel's way back to user space (the interrupt that
 * preempted it) as a kernel stack on top of its frames. A thread read while it
 * runs, alternating between two call chains, never shows frames of both.
 */
#include "testlib.h"

#include "formats/format_registry.h"
#include "profile/profile.h"

#include <math.h>
#include <sched.h>

#define SCRIPT "wall_threads.py"
#define MAX_PYTHONS 32
#define WALL_HZ_TEXT "100"
#define WALL_HZ 100
#define WALL_INTERVAL_US (1000000 / WALL_HZ)
#define COVERAGE_MIN 0.95
#define DUTY_SLEEP_SHARE 0.75
#define DUTY_TOLERANCE 0.03

static const char *const wall_labels[] = { "2.7", "3.8", "3.11-static", "3.12", "3.13", "3.14", "3.15" };

static struct test_python pythons[MAX_PYTHONS];
static size_t python_count;

/* ---- the target ---- */

/* Runs the script in `mode` and returns once it says every thread runs. */
static void start_target(const struct test_python *python, const char *mode, struct test_target *target)
{
	target->pid = test_start_ready_script(python, SCRIPT, mode, &target->out_fd);
}

/* ---- what the files show ---- */

/* A kernel frame whose name holds one of the parts (NULL-terminated). */
static bool has_kernel_frame(const struct pf_sample *sample, const char *const *parts)
{
	for (size_t i = 0; i < sample->frame_count; i++)
		for (const char *const *part = parts; *part; part++)
			if (sample->frames[i].kind == PF_FRAME_KERNEL && strstr(sample->frames[i].name, *part))
				return true;
	return false;
}

/* The leaf is the kernel's way back to user space: the interrupt by which a thread running user
 * code was preempted, not somewhere it waits. */
static bool preempted_leaf(const struct pf_sample *sample)
{
	const struct pf_frame *leaf = sample->frame_count ? &sample->frames[sample->frame_count - 1] : NULL;

	return leaf && leaf->kind == PF_FRAME_KERNEL &&
	       (strncmp(leaf->name, "irqentry_", 9) == 0 || strncmp(leaf->name, "asm_sysvec_", 11) == 0 ||
		strncmp(leaf->name, "asm_common_interrupt", 20) == 0 || strstr(leaf->name, "exit_to_user"));
}

enum { SPINNER, SLEEPER, PIPE_READER, LOCK_WAITER, THREAD_KINDS };

static const char *const thread_functions[THREAD_KINDS] = { "spin_forever", "sleep_forever", "read_pipe_forever",
							    "wait_on_lock" };
/* Where each waits in the kernel. time.sleep is select() up to 3.10 and clock_nanosleep from 3.11. */
static const char *const sleep_waits[] = { "nanosleep", "select", NULL };
static const char *const pipe_waits[] = { "pipe_read", NULL };
static const char *const lock_waits[] = { "futex", NULL };
static const char *const *const thread_waits[THREAD_KINDS] = { NULL, sleep_waits, pipe_waits, lock_waits };

struct thread_tally {
	size_t samples;
	size_t samples_in_run;  /* Tachyon: stamped at or after the run's start (passes begin while it starts) */
	size_t idle;            /* not on a CPU: MOJO has no marker in wall mode, Tachyon no ON_CPU bit */
	size_t waiting_in_kernel; /* with a kernel frame naming its wait */
	size_t preempted_leaf;  /* its leaf the kernel's way back to user space */
	size_t time_not_interval; /* MOJO: a time metric other than the interval */
};

struct file_tally {
	size_t samples;
	struct thread_tally threads[THREAD_KINDS];
	uint64_t duration_us;
	char mode[16];
};

static void tally_sample(struct file_tally *tally, const struct pf_sample *sample, bool tachyon,
			 uint64_t start_time_us)
{
	tally->samples++;
	for (int kind = 0; kind < THREAD_KINDS; kind++) {
		struct thread_tally *thread = &tally->threads[kind];

		if (!test_has_python_frame(sample, thread_functions[kind]))
			continue;
		thread->samples++;
		thread->samples_in_run += tachyon && sample->timestamp_us >= start_time_us;
		if (tachyon && !(sample->status & PF_STATUS_ON_CPU))
			thread->idle++;
		if (thread_waits[kind] && has_kernel_frame(sample, thread_waits[kind]))
			thread->waiting_in_kernel++;
		thread->preempted_leaf += preempted_leaf(sample);
		if (sample->time_us != WALL_INTERVAL_US)
			thread->time_not_interval++;
	}
}

static void tally_file(const char *path, struct file_tally *tally)
{
	struct pf_reader *reader;
	struct pf_sample sample;
	const char *value;
	uint64_t start_time_us;
	bool tachyon;
	int got;

	memset(tally, 0, sizeof(*tally));
	reader = test_open_profile(path);
	tachyon = strcmp(pf_reader_format(reader)->name, "tachyon") == 0;
	value = pf_reader_metadata(reader, "start_time_us");
	start_time_us = value ? strtoull(value, NULL, 10) : 0;
	while ((got = pf_reader_next_sample(reader, &sample)) > 0)
		tally_sample(tally, &sample, tachyon, start_time_us);
	if (got < 0)
		fail_msg("%s: %s", path, pf_reader_error(reader));
	value = pf_reader_metadata(reader, "mode");
	snprintf(tally->mode, sizeof(tally->mode), "%s", value ? value : "");
	value = pf_reader_metadata(reader, "duration");
	tally->duration_us = value ? strtoull(value, NULL, 10) : 0;
	pf_reader_close(reader);
}

static const struct test_python *wanted_python(void **state)
{
	return test_wanted_python(state, pythons, python_count);
}

/* ---- every thread shows, idle or not, where it waits; cpu mode shows the spinner only ---- */

static void check_wall_threads(const char *label, const struct file_tally *from_mojo,
			       const struct file_tally *from_tachyon)
{
	double intervals = (double)from_mojo->duration_us / WALL_INTERVAL_US;

	assert_string_equal(from_mojo->mode, "wall");
	assert_string_equal(from_tachyon->mode, "wall");
	assert_int_equal(from_mojo->samples, from_tachyon->samples);
	assert_true(intervals > 100);
	for (int kind = 0; kind < THREAD_KINDS; kind++) {
		const struct thread_tally *mojo = &from_mojo->threads[kind], *tachyon = &from_tachyon->threads[kind];
		double coverage = (double)tachyon->samples_in_run / intervals;
		double idle = tachyon->samples ? (double)tachyon->idle / (double)tachyon->samples : 0;
		double waiting = mojo->samples ? (double)mojo->waiting_in_kernel / (double)mojo->samples : 0;

		print_message("%s wall: %-17s in %.1f%% of %.0f intervals, idle %.1f%%, kernel wait %.1f%%, "
			      "preempted leaf %zu\n", label, thread_functions[kind], 100 * coverage, intervals,
			      100 * idle, 100 * waiting, mojo->preempted_leaf);
		assert_int_equal(mojo->samples, tachyon->samples);
		if (mojo->preempted_leaf || tachyon->preempted_leaf)
			fail_msg("%s: %s has the interrupt that preempted it as its leaf in %zu samples", label,
				 thread_functions[kind], mojo->preempted_leaf);
		assert_int_equal(mojo->time_not_interval, 0);
		if (coverage < COVERAGE_MIN)
			fail_msg("%s: %s in %.1f%% of the intervals", label, thread_functions[kind], 100 * coverage);
		if (kind == SPINNER) {
			if (idle > 1 - COVERAGE_MIN)
				fail_msg("%s: the spinner is idle in %.1f%% of its samples", label, 100 * idle);
			continue;
		}
		if (idle < COVERAGE_MIN || waiting < COVERAGE_MIN)
			fail_msg("%s: %s idle in %.1f%%, its kernel wait in %.1f%% of its samples", label,
				 thread_functions[kind], 100 * idle, 100 * waiting);
	}
}

static void check_cpu_threads(const char *label, const struct file_tally *from_mojo)
{
	assert_string_equal(from_mojo->mode, "cpu");
	print_message("%s cpu: spinner %zu samples, waiting threads %zu %zu %zu\n", label,
		      from_mojo->threads[SPINNER].samples, from_mojo->threads[SLEEPER].samples,
		      from_mojo->threads[PIPE_READER].samples, from_mojo->threads[LOCK_WAITER].samples);
	/* A busy host gives the spinner little CPU: some ticks, not a rate. */
	assert_true(from_mojo->threads[SPINNER].samples >= 10);
	/* The sleeper wakes for microseconds once a second: a tick may land on it, rarely. */
	assert_true(from_mojo->threads[SLEEPER].samples <= 2);
	assert_int_equal(from_mojo->threads[PIPE_READER].samples, 0);
	assert_int_equal(from_mojo->threads[LOCK_WAITER].samples, 0);
}

static void wall_waiting_threads(void **state)
{
	const struct test_python *python = wanted_python(state);
	char mojo[PATH_MAX], tachyon[PATH_MAX], cpu_mojo[PATH_MAX], cpu_tachyon[PATH_MAX];
	struct file_tally from_mojo, from_tachyon, from_cpu;
	struct test_target target;

	FORMAT(mojo, "%s/wall-%s.mojo", test_tmpdir(), python->label);
	FORMAT(tachyon, "%s/wall-%s.bin", test_tmpdir(), python->label);
	FORMAT(cpu_mojo, "%s/wall-cpu-%s.mojo", test_tmpdir(), python->label);
	FORMAT(cpu_tachyon, "%s/wall-cpu-%s.bin", test_tmpdir(), python->label);
	start_target(python, "waits", &target);
	test_record_pid(python->label, "wall", WALL_HZ_TEXT, target.pid, "3", mojo, tachyon);
	test_record_pid(python->label, "cpu", WALL_HZ_TEXT, target.pid, "2", cpu_mojo, cpu_tachyon);
	test_stop_target(&target);
	tally_file(mojo, &from_mojo);
	tally_file(tachyon, &from_tachyon);
	tally_file(cpu_mojo, &from_cpu);
	check_wall_threads(python->label, &from_mojo, &from_tachyon);
	check_cpu_threads(python->label, &from_cpu);
	assert_cpython_accepts(tachyon, from_tachyon.samples);
}

/* ---- a thread asleep 0.3 s of every 0.4 s shows 75% in the sleeping function ---- */

/* Launched (the other iterator: every task of the host, filtered by the target map), for 6 s.
 * Returns the sleeping share the script measured itself (its wall time in duty_sleep), 0.75
 * if it did not say. */
static double record_launched_duty(const struct test_python *python, const char *mojo, const char *tachyon)
{
	const char *truth;
	double slept = 0, total = 0;
	char command[2400], rate[16], err[4096], *argv[48];
	int status;

	FORMAT(rate, "%d", WALL_HZ);
	FORMAT(command, "%s -q --mode wall -F %s -o %s -o %s -- %s %s/tests/scripts/%s duty 6", pybpfprof_binary(),
	       rate, mojo, tachyon, python->command, test_source_dir(), SCRIPT);
	split_command(command, argv, 48);
	status = run_capture(argv, err, sizeof(err));
	if (status != 0)
		fail_msg("%s: pybpfprof --mode wall -- ... exited %d: %s", python->label, status, err);
	truth = strstr(err, "duty-truth ");
	if (truth && sscanf(truth, "duty-truth %lf %lf", &slept, &total) == 2 && total > 0)
		return slept / total;
	return DUTY_SLEEP_SHARE;
}

struct duty_tally {
	size_t samples, sleeping;
};

static void tally_duty(const char *path, struct duty_tally *tally)
{
	struct pf_reader *reader;
	struct pf_sample sample;
	int got;

	memset(tally, 0, sizeof(*tally));
	reader = test_open_profile(path);
	while ((got = pf_reader_next_sample(reader, &sample)) > 0) {
		if (!test_has_python_frame(&sample, "duty_cycle"))
			continue;
		tally->samples++;
		tally->sleeping += test_has_python_frame(&sample, "duty_sleep");
	}
	if (got < 0)
		fail_msg("%s: %s", path, pf_reader_error(reader));
	pf_reader_close(reader);
}

static void wall_duty_cycle(void **state)
{
	const struct test_python *python = wanted_python(state);
	char mojo[PATH_MAX], tachyon[PATH_MAX];
	struct duty_tally tally;
	double share, truth;

	FORMAT(mojo, "%s/duty-%s.mojo", test_tmpdir(), python->label);
	FORMAT(tachyon, "%s/duty-%s.bin", test_tmpdir(), python->label);
	truth = record_launched_duty(python, mojo, tachyon);
	tally_duty(mojo, &tally);
	share = tally.samples ? (double)tally.sleeping / (double)tally.samples : 0;
	print_message("%s duty: %.1f%% of %zu samples in duty_sleep (the thread measured %.1f%%)\n", python->label,
		      100 * share, tally.samples, 100 * truth);
	assert_true(tally.samples > 400);
	/* A busy host stretches the cycle (wakeups wait for a CPU, the spin gets less of one): the
	 * truth moves off 75% (71.5% beside two CPU hogs), the thread still sleeps most of the time,
	 * and the profile must match the truth. */
	assert_true(fabs(truth - DUTY_SLEEP_SHARE) <= 0.15);
	if (fabs(share - truth) > DUTY_TOLERANCE)
		fail_msg("%s: %.1f%% in the sleeping function, the thread measured %.1f%% (+- 3)", python->label,
			 100 * share, 100 * truth);
}

/* ---- a thread that runs while it is read shows only stacks it had ---- */

#define ALTERNATE_HZ_TEXT "1000"
#define ALTERNATE_SECONDS_TEXT "4"
#define ALTERNATE_SAMPLES_MIN 1000
/* Of the alternating thread's samples, at most this share may be left with the root side of its
 * stack only (a chain changes every 0.05 ms, a read takes microseconds). */
#define ALTERNATE_CHANGING_MAX 0.10

struct alternate_tally {
	unsigned long long whole, torn, changing;
	char torn_stack[512];
};

/* The lowest CPU this process may run on. */
static int first_allowed_cpu(void)
{
	cpu_set_t allowed;

	if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
		return 0;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &allowed))
			return cpu;
	return 0;
}

static void tally_alternating(const char *path, struct alternate_tally *tally)
{
	FILE *file = fopen(path, "r");
	char line[8192];

	memset(tally, 0, sizeof(*tally));
	if (!file)
		fail_msg("%s: cannot open", path);
	while (fgets(line, sizeof(line), file)) {
		char *space = strrchr(line, ' ');
		bool a = strstr(line, ":chain_a_") != NULL, b = strstr(line, ":chain_b_") != NULL;
		unsigned long long weight;

		if (!space || !strstr(line, ":alternate:"))
			continue;
		weight = strtoull(space + 1, NULL, 10) / 1000;
		if (strstr(line, "<stack changed while read>"))
			tally->changing += weight;
		else if (a && b) {
			tally->torn += weight;
			if (!tally->torn_stack[0])
				snprintf(tally->torn_stack, sizeof(tally->torn_stack), "%.*s", (int)(space - line), line);
		} else if (a || b)
			tally->whole += weight;
	}
	fclose(file);
}

/*
 * Wall mode reads a thread's frames from another CPU while the thread may be running: one call
 * chain returns and the other takes its frames' places in the middle of the read. The profile may
 * show only stacks the thread had: never frames of both chains in one stack. The thread keeps to
 * the last CPU it may use and the profiler to the first, so that the reads meet it running.
 */
static void wall_whole_stacks(void **state)
{
	const struct test_python *python = wanted_python(state);
	char path[PATH_MAX], command[PATH_MAX * 2], err[4096], *argv[32];
	struct alternate_tally tally;
	struct test_target target;
	unsigned long long samples;
	int status;

	FORMAT(path, "%s/alternate-%s.collapsed", test_tmpdir(), python->label);
	start_target(python, "alternate", &target);
	FORMAT(command, "taskset -c %d %s -q --mode wall -F %s -d %s -p %d -o %s", first_allowed_cpu(),
	       pybpfprof_binary(), ALTERNATE_HZ_TEXT, ALTERNATE_SECONDS_TEXT, (int)target.pid, path);
	split_command(command, argv, 32);
	status = run_capture(argv, err, sizeof(err));
	test_stop_target(&target);
	if (status != 0)
		fail_msg("%s: pybpfprof --mode wall exited %d: %s", python->label, status, err);
	tally_alternating(path, &tally);
	samples = tally.whole + tally.torn + tally.changing;
	print_message("%s alternate: %llu samples, %llu of one chain, %llu of both, %llu left at the root side\n",
		      python->label, samples, tally.whole, tally.torn, tally.changing);
	if (samples < ALTERNATE_SAMPLES_MIN)
		fail_msg("%s: %llu samples of the alternating thread, not %d", python->label, samples,
			 ALTERNATE_SAMPLES_MIN);
	if (tally.torn)
		fail_msg("%s: %llu samples hold frames of both chains, e.g. %s", python->label, tally.torn,
			 tally.torn_stack);
	if ((double)tally.changing > ALTERNATE_CHANGING_MAX * (double)samples)
		fail_msg("%s: %llu of %llu samples without their leaf side", python->label, tally.changing, samples);
}

int main(void)
{
	static const struct test_per_python kinds[] = { { "wall_threads_", wall_waiting_threads },
							{ "wall_duty_", wall_duty_cycle },
							{ "wall_whole_stacks_", wall_whole_stacks } };

	python_count = test_pythons(pythons, MAX_PYTHONS);
	return test_run_per_python("test_wall", wall_labels, sizeof(wall_labels) / sizeof(wall_labels[0]), kinds,
				   sizeof(kinds) / sizeof(kinds[0]));
}
