// SPDX-License-Identifier: MIT
/*
 * --event end to end (real BPF, root): sampling on kernel events instead of the cpu-clock.
 *  - page-faults, -p: a process that fills a fresh 200 MB buffer in touch_fresh() and computes
 *    in compute() shows at least 95% of its fault bytes under touch_fresh; every format carries
 *    bytes (pprof's sample types read by `go tool pprof -raw`, speedscope's unit, MOJO's memory
 *    mode and metric, the flame graph's width).
 *  - context-switches, a launched command: a process that sleeps 100 us at a time in sleep_often()
 *    and its child that spins in spin() count their own switches in those functions (getrusage);
 *    the profile's split between them is the truth's within 3 points. Counted events carry counts
 *    (speedscope "none", pprof's context-switches/count, MOJO's cpu mode), and `pybpfprof top`
 *    ranks them under the event's name.
 *  - page-faults with --max-overhead far below the walks' cost, launched: most samples are skipped,
 *    and the kept ones' weights still add up to the bytes the workload says it filled (within 5%).
 *  - cycles: where the machine has no PMU (this VM), one line saying so and a non-zero exit;
 *    where it has one, a profile.
 */
#include "testlib.h"

#include "formats/format_registry.h"
#include "profile/profile.h"

#include <linux/perf_event.h>
#include <math.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#define SCRIPT "event_work.py"
#define MAX_PYTHONS 32
#define FAULT_SHARE_MIN 0.95
#define FAULT_SAMPLES_MIN 1000
#define SWITCH_SHARE_TOLERANCE 0.03
#define SWITCHES_MIN 500
#define BUDGET_BYTES_TOLERANCE 0.05

static const char *const event_labels[] = { "2.7", "3.12", "3.14" };

static struct test_python pythons[MAX_PYTHONS];
static size_t python_count;

/* ---- what the files show ---- */

struct weights {
	double in_function; /* pf_sample_weight of the samples with the function's frame */
	double other;       /* of a second function's, when asked for */
	double total;
	size_t samples;
	uint32_t metrics;   /* every sample's PF_METRIC_* */
};

static void sum_weights(const char *path, const char *function, const char *other, struct weights *weights)
{
	struct pf_reader *reader = test_open_profile(path);
	struct pf_sample sample;

	*weights = (struct weights){ 0 };
	while (pf_reader_next_sample(reader, &sample) == 1) {
		double weight = (double)pf_sample_weight(&sample);

		weights->total += weight;
		weights->samples++;
		weights->metrics |= sample.metrics;
		if (test_has_python_frame(&sample, function))
			weights->in_function += weight;
		else if (other && test_has_python_frame(&sample, other))
			weights->other += weight;
	}
	pf_reader_close(reader);
}

/* ---- page faults ---- */

static void page_faults(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	char dir[PATH_MAX], mojo[PATH_MAX], pprof[PATH_MAX], speedscope[PATH_MAX], collapsed[PATH_MAX], svg[PATH_MAX];
	char pid_text[16], err[8192], value[64];
	struct test_target target;
	struct weights weights;
	int status;

	snprintf(dir, sizeof(dir), "%s/faults-%s", test_tmpdir(), python->label);
	mkdir(dir, 0755);
	FORMAT(mojo, "%s/f.mojo", dir);
	FORMAT(pprof, "%s/f.pb.gz", dir);
	FORMAT(speedscope, "%s/f.speedscope.json", dir);
	FORMAT(collapsed, "%s/f.collapsed", dir);
	FORMAT(svg, "%s/f.svg", dir);
	target.pid = test_start_ready_script(python, SCRIPT, "faults", &target.out_fd);
	snprintf(pid_text, sizeof(pid_text), "%d", (int)target.pid);
	{
		char *argv[] = { (char *)pybpfprof_binary(), "-q", "--event", "page-faults", "-p", pid_text, "-d", "8",
				 "-o", mojo, "-o", pprof, "-o", speedscope, "-o", collapsed, "-o", svg, NULL };

		status = run_capture(argv, err, sizeof(err));
	}
	test_stop_target(&target);
	if (status != 0)
		fail_msg("%s: pybpfprof --event page-faults exited %d: %s", python->label, status, err);

	sum_weights(mojo, "touch_fresh", NULL, &weights);
	print_message("%s: %zu samples, %.0f MB of faults, %.2f%% in touch_fresh\n", python->label, weights.samples,
		      weights.total / 1e6, 100.0 * weights.in_function / weights.total);
	assert_true(weights.samples >= FAULT_SAMPLES_MIN);
	assert_true(weights.metrics == PF_METRIC_MEMORY);
	assert_true(weights.in_function >= FAULT_SHARE_MIN * weights.total);
	/* The same in the collapsed file, whose weights are bytes too. */
	sum_weights(collapsed, "touch_fresh", NULL, &weights);
	assert_true(weights.in_function >= FAULT_SHARE_MIN * weights.total);

	test_profile_metadata(mojo, "mode", value, sizeof(value));
	assert_string_equal(value, "memory");
	test_profile_metadata(mojo, "event", value, sizeof(value));
	assert_string_equal(value, "page-faults");
	test_profile_metadata(mojo, "event_unit", value, sizeof(value));
	assert_string_equal(value, "bytes");
	test_assert_pprof_sample_types(pprof, "page-faults/count space/bytes");
	test_assert_top_ranks(mojo, "own page-faults, in bytes", "touch_fresh");
	assert_true(test_file_holds(speedscope, "\"unit\":\"bytes\""));
	assert_true(test_file_holds(svg, "width: bytes allocated"));
}

/* ---- the overhead budget ---- */

/*
 * --max-overhead far below what the walks cost (1% of a CPU against some 40%): BPF keeps one
 * fault sample in a stride (some 1 in 200), and the kept ones weigh the stride, so the bytes
 * under touch_fresh are still the bytes it filled (the workload says how many: "touched N
 * BYTES"), though most samples were never taken. The total is an estimate: each CPU's count of
 * ticks is cut in strides, so it can miss by a stride's ticks per CPU at each change of stride.
 * 30 buffers give some 96,000 ticks, so that this stays well within the tolerance (at 0.1% and
 * 10 buffers, a stride of 1300 over 32,000 ticks missed by up to 5%).
 */
static void budget_keeps_fault_bytes(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	char mojo[PATH_MAX], command[1400], *argv[32], out[4096], err[8192];
	unsigned long long buffers = 0, truth = 0;
	struct weights weights;
	const char *line;
	int status;

	FORMAT(mojo, "%s/budget-%s.mojo", test_tmpdir(), python->label);
	FORMAT(command, "%s -q --event page-faults --max-overhead 1 -o %s -- %s %s/tests/scripts/%s buffers 30",
	       pybpfprof_binary(), mojo, python->command, test_source_dir(), SCRIPT);
	assert_true(split_command(command, argv, 32) > 0);
	status = run_capture_both(argv, out, sizeof(out), err, sizeof(err));
	if (status != 0)
		fail_msg("%s: pybpfprof --event page-faults --max-overhead exited %d: %s", python->label, status, err);
	line = strstr(out, "touched ");
	if (!line || sscanf(line, "touched %llu %llu", &buffers, &truth) != 2 || buffers != 30)
		fail_msg("the workload did not report what it touched: '%s'", out);

	sum_weights(mojo, "touch_fresh", NULL, &weights);
	print_message("%s: %zu samples; %.0f MB under touch_fresh, truth %.0f MB (%.2f%%)\n", python->label,
		      weights.samples, weights.in_function / 1e6, (double)truth / 1e6,
		      100.0 * weights.in_function / (double)truth);
	/* Throttled: fewer than half the samples an unthrottled run takes (one per 16 pages). */
	assert_true((double)weights.samples < 0.5 * (double)truth / (16.0 * 4096.0));
	assert_true(fabs(weights.in_function / (double)truth - 1.0) <= BUDGET_BYTES_TOLERANCE);
}

/* ---- context switches ---- */

/* "switches sleep_often=N spin=M" in the launched command's output. */
static void read_switch_truth(const char *out, double *slept, double *spun)
{
	const char *line = strstr(out, "switches sleep_often=");
	unsigned long long a = 0, b = 0;

	if (!line || sscanf(line, "switches sleep_often=%llu spin=%llu", &a, &b) != 2)
		fail_msg("the workload did not report its switches: '%s'", out);
	*slept = (double)a;
	*spun = (double)b;
}

static void context_switches(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	char mojo[PATH_MAX], pprof[PATH_MAX], speedscope[PATH_MAX], svg[PATH_MAX], command[1400], value[64];
	char *argv[48], out[4096], err[8192];
	struct weights weights;
	double slept, spun, truth_share, share;
	int argc = 0, status;

	FORMAT(mojo, "%s/switches-%s.mojo", test_tmpdir(), python->label);
	FORMAT(pprof, "%s/switches-%s.pb.gz", test_tmpdir(), python->label);
	FORMAT(speedscope, "%s/switches-%s.speedscope.json", test_tmpdir(), python->label);
	FORMAT(svg, "%s/switches-%s.svg", test_tmpdir(), python->label);
	FORMAT(command, "%s -q --event context-switches -o %s -o %s -o %s -o %s -- %s %s/tests/scripts/%s switches 4",
	       pybpfprof_binary(), mojo, pprof, speedscope, svg, python->command, test_source_dir(), SCRIPT);
	argc = split_command(command, argv, 48);
	assert_true(argc > 0);
	status = run_capture_both(argv, out, sizeof(out), err, sizeof(err));
	if (status != 0)
		fail_msg("%s: pybpfprof --event context-switches exited %d: %s", python->label, status, err);
	read_switch_truth(out, &slept, &spun);

	sum_weights(mojo, "sleep_often", "spin", &weights);
	truth_share = slept / (slept + spun);
	share = weights.in_function / (weights.in_function + weights.other);
	print_message("%s: truth sleep_often %.0f spin %.0f (%.1f%%); profile %.0f / %.0f (%.1f%%)\n", python->label,
		      slept, spun, 100 * truth_share, weights.in_function, weights.other, 100 * share);
	/* The spinner is switched out only when something preempts it: on a quiet machine that may be
	 * seldom, and the split is then nearly all the sleeper's, in the truth as in the profile. */
	assert_true(slept >= SWITCHES_MIN && weights.in_function >= SWITCHES_MIN);
	assert_true(fabs(share - truth_share) <= SWITCH_SHARE_TOLERANCE);

	test_profile_metadata(mojo, "event", value, sizeof(value));
	assert_string_equal(value, "context-switches");
	test_profile_metadata(mojo, "event_unit", value, sizeof(value));
	assert_string_equal(value, "count");
	test_assert_pprof_sample_types(pprof, "context-switches/count");
	test_assert_top_ranks(mojo, "own context-switches", "sleep_often");
	assert_true(test_file_holds(speedscope, "\"unit\":\"none\""));
	assert_true(test_file_holds(svg, "width: events"));
}

/* ---- hardware events ---- */

/* Whether this machine counts cycles: perf_event_open of the event on CPU 0. */
static bool machine_counts_cycles(void)
{
	struct perf_event_attr attr = { .type = PERF_TYPE_HARDWARE, .size = sizeof(attr),
					.config = PERF_COUNT_HW_CPU_CYCLES, .sample_period = 10000000 };
	long fd = syscall(__NR_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);

	if (fd < 0)
		return false;
	close((int)fd);
	return true;
}

static void hardware_event(void **state)
{
	char path[PATH_MAX], err[8192], *newline;
	char *argv[] = { (char *)pybpfprof_binary(), "--event", "cycles", "-d", "1", "-o", path, NULL };
	int status;

	(void)state;
	FORMAT(path, "%s/cycles.mojo", test_tmpdir());
	unlink(path);
	status = run_capture(argv, err, sizeof(err));
	if (machine_counts_cycles()) {
		print_message("this machine has a PMU: cycles sampled\n");
		assert_int_equal(status, 0);
		return;
	}
	print_message("no PMU: '%s'\n", err);
	assert_int_not_equal(status, 0);
	assert_false(file_exists(path));
	/* One line, naming the event and the missing PMU. */
	newline = strchr(err, '\n');
	assert_non_null(newline);
	assert_true(newline[1] == 0);
	assert_non_null(strstr(err, "cycles"));
	assert_non_null(strstr(err, "no PMU"));
}

int main(void)
{
	static const struct test_per_python kinds[] = { { "page_faults_", page_faults },
							{ "context_switches_", context_switches },
							{ "budget_fault_bytes_", budget_keeps_fault_bytes } };
	static const struct CMUnitTest machine_tests[] = { cmocka_unit_test(hardware_event) };
	int failed;

	python_count = test_pythons(pythons, MAX_PYTHONS);
	failed = test_run_per_python("test_events", event_labels, sizeof(event_labels) / sizeof(event_labels[0]),
				     kinds, sizeof(kinds) / sizeof(kinds[0]));
	if (geteuid() != 0)
		return failed;
	return failed + cmocka_run_group_tests_name("test_events_machine", machine_tests, NULL, NULL);
}
