// SPDX-License-Identifier: MIT
/*
 * --event off-cpu end to end (real BPF, root): blocked time measured at the scheduler.
 *  - blocks, a launched command: a worker thread blocks in f() (time.sleep, 7 ms) and in g() (a
 *    lock another thread holds some 3 ms) in turn, each timing its own waits; the profile's
 *    nanoseconds split between f and g as the workload's truth does, within 3 points, each under
 *    the kernel wait it blocked in (a sleep, a futex). Then tiny_block() sleeps 1 ms at a time:
 *    every block is a sample (100 Hz wall sampling would see one in ten), and their nanoseconds
 *    add up to the time the workload measured, within 15%. Every format carries nanoseconds
 *    (event_unit, pprof's off-cpu/nanoseconds, speedscope's unit, the SVG's width), `pybpfprof
 *    top` ranks them, and no kernel stack starts in the profiler's own program.
 *  - off-cpu:MIN_US: no sample weighs less than MIN_US; a MIN_US of 0 or with a unit, and
 *    --event-period beside off-cpu, are refused in one line.
 *  - attached with -p, and on the whole host (other Python processes beside; the workload's own
 *    samples by pid): the workload waits (sleeping) until the profiler has its blocks, then the
 *    same f/g shares, kernel waits and tiny blocks as launched (3.12).
 * Blocked times are measured exactly, not sampled: the shares hold under load, where the sleeps
 * stretch, because the truth stretches with them.
 */
#include "gated_run.h"
#include "testlib.h"

#include "formats/format_registry.h"
#include "profile/profile.h"
#include "util/exit_status.h"

#include <math.h>
#include <sys/stat.h>

#define SCRIPT "offcpu_work.py"
#define MAX_PYTHONS 32
#define ROUNDS 400
#define SHARE_TOLERANCE 0.03
/* A sleep preempted between setting its state and switching out, whose timer fires before it
 * runs again, never blocked: on a loaded host a few of the 1 ms sleeps (2% at a load average of
 * 10 on 2 CPUs) spend their millisecond runnable, which the workload's clock counts and off-cpu
 * rightly does not. */
#define TINY_TIME_TOLERANCE 0.15
#define TINY_SAMPLES_MIN 0.8
/* Most of a function's blocked time is under its kernel wait (the rest: GIL hand-overs). */
#define KERNEL_WAIT_SHARE_MIN 0.8
#define MIN_BLOCK_US 5000
#define MIN_BLOCK_ROUNDS 100

static const char *const offcpu_labels[] = { "3.12", "3.13", "3.14", "3.15" };
/* Attached with -p and on the whole host: one interpreter. */
static const char *const targeted_labels[] = { "3.12" };

static struct test_python pythons[MAX_PYTHONS];
static size_t python_count;

/* What the workload measured: "blocked f=N g=N tiny_block=N tiny_calls=N" (ns). */
struct truth {
	double f, g, tiny;
	unsigned long long tiny_calls;
};

static void read_truth(const char *out, struct truth *truth)
{
	const char *line = strstr(out, "blocked f=");
	unsigned long long f = 0, g = 0, tiny = 0;

	if (!line || sscanf(line, "blocked f=%llu g=%llu tiny_block=%llu tiny_calls=%llu", &f, &g, &tiny,
			    &truth->tiny_calls) != 4)
		fail_msg("the workload did not report its blocked time: '%s'", out);
	truth->f = (double)f;
	truth->g = (double)g;
	truth->tiny = (double)tiny;
}

/* The nanoseconds under one function, and how many of them also lie under a kernel frame whose
 * name holds kernel_wait. */
struct function_time {
	const char *function, *kernel_wait;
	double ns, ns_in_wait;
	size_t samples;
};

static bool has_kernel_frame(const struct pf_sample *sample, const char *part)
{
	for (size_t i = 0; i < sample->frame_count; i++)
		if (sample->frames[i].kind == PF_FRAME_KERNEL && strstr(sample->frames[i].name, part))
			return true;
	return false;
}

/* Sums the file's samples of process pid (0: all) by function; fails on a sample whose kernel
 * stack starts in BPF. */
static void sum_functions(const char *path, uint32_t pid, struct function_time *functions, size_t count,
			  double *total)
{
	struct pf_reader *reader = test_open_profile(path);
	struct pf_sample sample;

	*total = 0;
	while (pf_reader_next_sample(reader, &sample) == 1) {
		double weight = (double)pf_sample_weight(&sample);

		if (pid && sample.pid != pid)
			continue;
		*total += weight;
		if (has_kernel_frame(&sample, "bpf_prog_") || has_kernel_frame(&sample, "bpf_trace_run") ||
		    has_kernel_frame(&sample, "__traceiter_"))
			fail_msg("%s: a kernel stack holds the profiler's own program", path);
		for (size_t i = 0; i < count; i++) {
			if (!test_has_python_frame(&sample, functions[i].function))
				continue;
			functions[i].ns += weight;
			functions[i].samples++;
			if (functions[i].kernel_wait && has_kernel_frame(&sample, functions[i].kernel_wait))
				functions[i].ns_in_wait += weight;
		}
	}
	pf_reader_close(reader);
}

/* Runs the blocks workload under pybpfprof with extra options; its output into out. */
static void run_blocks(const struct test_python *python, const char *options, int rounds, char *out, size_t len)
{
	char command[2048], *argv[48], err[8192];
	int status;

	FORMAT(command, "%s -q %s -- %s %s/tests/scripts/%s blocks %d", pybpfprof_binary(), options, python->command,
	       test_source_dir(), SCRIPT, rounds);
	assert_true(split_command(command, argv, 48) > 0);
	status = run_capture_both(argv, out, len, err, sizeof(err));
	if (status != 0)
		fail_msg("%s: pybpfprof %s exited %d: %s", python->label, options, status, err);
}

/* The workload's truth (its output, out) against process pid's samples in the MOJO file: f's and
 * g's shares of their blocked time within 3 points, each under its kernel wait; every 1 ms block of
 * tiny_block counted. f's share of the truth into truth_share. */
static void check_blocks(const char *label, const char *mojo, uint32_t pid, const char *out, double *truth_share)
{
	struct function_time functions[] = { { "f", "nanosleep", 0, 0, 0 },
					     { "g", "futex", 0, 0, 0 },
					     { "tiny_block", "nanosleep", 0, 0, 0 } };
	struct function_time *f = &functions[0], *g = &functions[1], *tiny = &functions[2];
	double total, share;
	struct truth truth;

	read_truth(out, &truth);
	sum_functions(mojo, pid, functions, 3, &total);
	*truth_share = truth.f / (truth.f + truth.g);
	share = f->ns / (f->ns + g->ns);
	print_message("%s: truth f %.3f s g %.3f s (%.1f%%); profile f %.3f s g %.3f s (%.1f%%), %zu/%zu blocks\n",
		      label, truth.f / 1e9, truth.g / 1e9, 100 * *truth_share, f->ns / 1e9, g->ns / 1e9, 100 * share,
		      f->samples, g->samples);
	print_message("%s: tiny_block truth %.3f s in %llu calls; profile %.3f s in %zu blocks\n", label,
		      truth.tiny / 1e9, truth.tiny_calls, tiny->ns / 1e9, tiny->samples);
	print_message("%s: under their kernel wait: f %.1f%%, g %.1f%%\n", label, 100 * f->ns_in_wait / f->ns,
		      100 * g->ns_in_wait / g->ns);
	assert_true(f->samples >= ROUNDS / 2 && g->samples >= ROUNDS / 2);
	assert_true(fabs(share - *truth_share) <= SHARE_TOLERANCE);
	assert_true(f->ns_in_wait >= KERNEL_WAIT_SHARE_MIN * f->ns);
	assert_true(g->ns_in_wait >= KERNEL_WAIT_SHARE_MIN * g->ns);
	assert_true((double)tiny->samples >= TINY_SAMPLES_MIN * (double)truth.tiny_calls);
	assert_true(fabs(tiny->ns / truth.tiny - 1.0) <= TINY_TIME_TOLERANCE);
}

static void blocks(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	char dir[PATH_MAX], mojo[PATH_MAX], pprof[PATH_MAX], speedscope[PATH_MAX], collapsed[PATH_MAX], svg[PATH_MAX];
	char options[6 * PATH_MAX + 64], out[4096], value[64];
	struct function_time functions[2];
	struct function_time *f = &functions[0], *g = &functions[1];
	double total, truth_share;

	snprintf(dir, sizeof(dir), "%s/offcpu-%s", test_tmpdir(), python->label);
	mkdir(dir, 0755);
	FORMAT(mojo, "%s/o.mojo", dir);
	FORMAT(pprof, "%s/o.pb.gz", dir);
	FORMAT(speedscope, "%s/o.speedscope.json", dir);
	FORMAT(collapsed, "%s/o.collapsed", dir);
	FORMAT(svg, "%s/o.svg", dir);
	FORMAT(options, "--event off-cpu -o %s -o %s -o %s -o %s -o %s", mojo, pprof, speedscope, collapsed, svg);
	run_blocks(python, options, ROUNDS, out, sizeof(out));
	check_blocks(python->label, mojo, 0, out, &truth_share);

	/* The collapsed file's weights are the same nanoseconds. */
	memset(&functions, 0, sizeof(functions));
	functions[0].function = "f";
	functions[1].function = "g";
	sum_functions(collapsed, 0, functions, 2, &total);
	assert_true(fabs(f->ns / (f->ns + g->ns) - truth_share) <= SHARE_TOLERANCE);

	test_profile_metadata(mojo, "event", value, sizeof(value));
	assert_string_equal(value, "off-cpu");
	test_profile_metadata(mojo, "event_unit", value, sizeof(value));
	assert_string_equal(value, "nanoseconds");
	test_assert_pprof_sample_types(pprof, "off-cpu/nanoseconds");
	test_assert_top_ranks(mojo, "own off-cpu time, in ns", "tiny_block");
	assert_true(test_file_holds(speedscope, "\"unit\":\"nanoseconds\""));
	assert_true(test_file_holds(svg, "width: time"));
}

/* The blocks workload attached with -p (whole_host: on the whole host, other Python processes
 * beside, its own samples taken by pid), let go once the profiler has its waiting blocks: the
 * same shares as launched. */
static void gated_blocks(const struct test_python *python, bool whole_host)
{
	static const char *const options[] = { "--event", "off-cpu", NULL };
	char dir[PATH_MAX], mojo[PATH_MAX], args[32], out[4096];
	struct gated_run run = { SCRIPT, args, options, NULL, dir, whole_host };
	double truth_share;
	pid_t pid;

	snprintf(dir, sizeof(dir), "%s/offcpu-%s-%s", test_tmpdir(), whole_host ? "host" : "pid", python->label);
	mkdir(dir, 0755);
	FORMAT(mojo, "%s/m.mojo", dir);
	FORMAT(args, "gated_blocks %d", ROUNDS);
	pid = gated_run(python, &run, out, sizeof(out));
	check_blocks(python->label, mojo, (uint32_t)pid, out, &truth_share);
}

static void blocks_attached(void **state)
{
	gated_blocks(test_wanted_python(state, pythons, python_count), false);
}

static void blocks_whole_host(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	char mojo[PATH_MAX];

	gated_blocks(python, true);
	/* The profiler's own parser workers block often; they are not the host's to profile. */
	FORMAT(mojo, "%s/offcpu-host-%s/m.mojo", test_tmpdir(), python->label);
	assert_false(test_file_holds(mojo, "pybpfprof-parse"));
}

/* off-cpu:MIN_US: the blocks shorter than MIN_US (tiny_block's, g's) are not sent. */
static void shortest_block(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	char mojo[PATH_MAX], options[PATH_MAX + 64], out[4096];
	struct pf_reader *reader;
	struct pf_sample sample;
	size_t samples = 0, in_f = 0;
	int64_t lightest = INT64_MAX;

	FORMAT(mojo, "%s/offcpu-min-%s.mojo", test_tmpdir(), python->label);
	FORMAT(options, "--event off-cpu:%d -o %s", MIN_BLOCK_US, mojo);
	run_blocks(python, options, MIN_BLOCK_ROUNDS, out, sizeof(out));
	reader = test_open_profile(mojo);
	while (pf_reader_next_sample(reader, &sample) == 1) {
		int64_t weight = pf_sample_weight(&sample);

		samples++;
		in_f += test_has_python_frame(&sample, "f");
		if (weight < lightest)
			lightest = weight;
	}
	pf_reader_close(reader);
	print_message("%s: %zu samples (%zu in f), the lightest %.3f ms\n", python->label, samples, in_f,
		      (double)lightest / 1e6);
	assert_true(in_f >= MIN_BLOCK_ROUNDS / 2);
	assert_true(lightest >= (int64_t)MIN_BLOCK_US * 1000);
}

/* The command line's mistakes, said before anything starts (no root needed). */
static void mistakes(void **state)
{
	static const struct {
		const char *event, *period, *said;
	} cases[] = {
		{ "off-cpu:0", NULL, "invalid shortest block '0'" },
		{ "off-cpu:1ms", NULL, "invalid shortest block '1ms'" },
		{ "off-cpu", "5", "--event-period is for perf events" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *argv[] = { (char *)pybpfprof_binary(), "--event", (char *)cases[i].event, "-d", "1",
				 cases[i].period ? "--event-period" : NULL, (char *)cases[i].period, NULL };
		char out[1024], err[2048];

		assert_int_equal(run_capture_both(argv, out, sizeof(out), err, sizeof(err)), EXIT_STATUS_USAGE);
		if (!strstr(err, cases[i].said))
			fail_msg("--event %s: expected '%s' in '%s'", cases[i].event, cases[i].said, err);
	}
}

int main(void)
{
	static const struct test_per_python kinds[] = { { "blocks_", blocks }, { "shortest_block_", shortest_block } };
	static const struct test_per_python targeted_kinds[] = { { "blocks_attached_", blocks_attached },
								 { "blocks_whole_host_", blocks_whole_host } };
	static const struct CMUnitTest cli_tests[] = { cmocka_unit_test(mistakes) };
	int failed = cmocka_run_group_tests_name("test_offcpu_cli", cli_tests, NULL, NULL);

	python_count = test_pythons(pythons, MAX_PYTHONS);
	failed += test_run_per_python("test_offcpu_targeted", targeted_labels,
				      sizeof(targeted_labels) / sizeof(targeted_labels[0]), targeted_kinds,
				      sizeof(targeted_kinds) / sizeof(targeted_kinds[0]));
	return failed + test_run_per_python("test_offcpu", offcpu_labels,
					    sizeof(offcpu_labels) / sizeof(offcpu_labels[0]), kinds,
					    sizeof(kinds) / sizeof(kinds[0]));
}
