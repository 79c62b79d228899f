// SPDX-License-Identifier: MIT
/*
 * --max-overhead end to end (real BPF, root): a deep target sampled at 10 kHz under a small
 * budget is throttled, says so in the summary and the file, and its profile's 3:1 split still
 * matches the split the workload measured itself; the same target on -p without the option is
 * not throttled.
 */
#include "testlib.h"

#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <sys/wait.h>

#include "session/overhead_budget.h"

#define INTERVAL_US 100 /* -F 10000 */
/* How far a profile's heavy share may be from the workload's own (tests/e2e/test_record.c's). */
#define SPLIT_TOLERANCE 0.03

/* ---- real runs ---- */

static struct test_python pythons[32];
static size_t python_count;

struct split_findings {
	int64_t heavy_us, light_us;   /* time in the split's heavy and light, as the file weighs it */
	size_t samples, weighed;      /* samples, and those standing for more than one tick */
	const char *throttled;        /* a throttled.PID metadata value, NULL if none */
	bool budget_said;             /* a max_overhead metadata line */
};

static const struct pf_frame *python_leaf(const struct pf_sample *sample)
{
	for (size_t i = sample->frame_count; i-- > 0;)
		if (sample->frames[i].kind == PF_FRAME_PYTHON)
			return &sample->frames[i];
	return NULL;
}

static void read_split(const char *path, struct split_findings *found, char *throttled, size_t len)
{
	struct pf_reader *reader = test_open_profile(path);
	struct pf_sample sample;
	int got;

	memset(found, 0, sizeof(*found));
	while ((got = pf_reader_next_sample(reader, &sample)) > 0) {
		const struct pf_frame *leaf = python_leaf(&sample);

		found->samples++;
		found->weighed += sample.time_us > INTERVAL_US;
		if (!leaf || !test_has_python_frame(&sample, "phase_split"))
			continue;
		if (strcmp(leaf->name, "heavy") == 0)
			found->heavy_us += pf_sample_weight(&sample);
		else if (strcmp(leaf->name, "light") == 0)
			found->light_us += pf_sample_weight(&sample);
	}
	if (got < 0)
		fail_msg("%s: %s", path, pf_reader_error(reader));
	throttled[0] = 0;
	for (size_t i = 0; i < pf_reader_metadata_count(reader); i++) {
		const char *key, *value;

		pf_reader_metadata_at(reader, i, &key, &value);
		if (strncmp(key, "throttled.", 10) == 0)
			snprintf(throttled, len, "%s", value);
		found->budget_said |= strcmp(key, "max_overhead") == 0;
	}
	found->throttled = throttled[0] ? throttled : NULL;
	pf_reader_close(reader);
}

/* The heavy share the workload measured itself, over every split it ran ("split-truth HEAVY
 * LIGHT" each, CPU seconds). */
static double true_heavy_share(const char *output)
{
	double heavy = 0, light = 0;

	for (const char *line = strstr(output, "split-truth "); line; line = strstr(line + 1, "split-truth ")) {
		double h, l;

		if (sscanf(line, "split-truth %lf %lf", &h, &l) == 2) {
			heavy += h;
			light += l;
		}
	}
	if (!(heavy + light > 0))
		fail_msg("the workload did not tell its split: %s", output);
	return heavy / (heavy + light);
}

static double heavy_share(const struct split_findings *found)
{
	assert_true(found->heavy_us + found->light_us > 0);
	return (double)found->heavy_us / (double)(found->heavy_us + found->light_us);
}

/*
 * The 3:1 split 900 frames deep (twice: 5 s of CPU), launched and sampled at 10 kHz with a 5%
 * budget: each walk of that stack costs 15-200 us (a quiet machine to a loaded one), so
 * unthrottled the walks would take 15% of the target's time and more; held to 5%, some 500 to
 * 3000 samples a second are kept, enough for the share to be meaningful within 3 points. The
 * summary and the file say it was throttled; the weighted shares match the truth in MOJO,
 * Tachyon and collapsed alike.
 */
static void deep_target_is_throttled_with_true_shares(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	char command[1400], mojo[PATH_MAX], tachyon[PATH_MAX], collapsed[PATH_MAX], err[16384], throttled[512];
	char *argv[32];
	struct split_findings from_mojo, from_tachyon, from_collapsed;
	double truth;
	int status;

	FORMAT(mojo, "%s/budget-%s.mojo", test_tmpdir(), python->label);
	FORMAT(tachyon, "%s/budget-%s.bin", test_tmpdir(), python->label);
	FORMAT(collapsed, "%s/budget-%s.collapsed", test_tmpdir(), python->label);
	FORMAT(command, "%s -F 10000 --max-overhead 5 --no-native -o %s -o %s -o %s -- %s %s/tests/scripts/workload.py deep_split deep_split",
	       pybpfprof_binary(), mojo, tachyon, collapsed, python->command, test_source_dir());
	split_command(command, argv, 32);
	status = run_capture(argv, err, sizeof(err));
	if (status != 0)
		fail_msg("%s: pybpfprof exited %d: %s", python->label, status, err);
	truth = true_heavy_share(err);
	read_split(mojo, &from_mojo, throttled, sizeof(throttled));
	print_message("%s: %zu samples, %zu weighed; heavy %.1f%% (truth %.1f%%); throttled: %s\n", python->label,
		      from_mojo.samples, from_mojo.weighed, 100 * heavy_share(&from_mojo), 100 * truth,
		      from_mojo.throttled ? from_mojo.throttled : "(no)");
	if (!strstr(err, "--max-overhead 5%: 1 process throttled"))
		fail_msg("%s: the summary does not say it throttled: %s", python->label, err);
	assert_true(from_mojo.budget_said);
	assert_non_null(from_mojo.throttled);
	assert_non_null(strstr(from_mojo.throttled, "1 tick in"));
	assert_true(from_mojo.weighed > 0);
	assert_true(fabs(heavy_share(&from_mojo) - truth) <= SPLIT_TOLERANCE);
	/* The formats agree on every weight: Tachyon counts ticks, collapsed adds up time. */
	read_split(tachyon, &from_tachyon, throttled, sizeof(throttled));
	read_split(collapsed, &from_collapsed, throttled, sizeof(throttled));
	assert_int_equal(from_tachyon.heavy_us, from_mojo.heavy_us);
	assert_int_equal(from_tachyon.light_us, from_mojo.light_us);
	assert_int_equal(from_collapsed.heavy_us, from_mojo.heavy_us);
	assert_int_equal(from_collapsed.light_us, from_mojo.light_us);
}

/* The same deep target on -p at 10 kHz, no --max-overhead: every tick is walked, none weighs more. */
static void attached_run_is_not_throttled_by_default(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	char command[1400], mojo[PATH_MAX], pid_text[16], err[16384], throttled[512];
	char *argv[32];
	struct split_findings found;
	pid_t pid;
	int status;

	FORMAT(mojo, "%s/unbudgeted-%s.mojo", test_tmpdir(), python->label);
	FORMAT(command, "%s %s/tests/scripts/workload.py deep_split deep_split", python->command, test_source_dir());
	split_command(command, argv, 32);
	pid = test_spawn(argv, NULL, NULL);
	assert_true(pid > 0);
	usleep(300 * 1000);
	FORMAT(pid_text, "%d", (int)pid);
	{
		char *record[] = { (char *)pybpfprof_binary(), "-F", "10000", "--no-native", "-p", pid_text, "-d", "2",
				   "-o", mojo, NULL };

		status = run_capture(record, err, sizeof(err));
	}
	kill(pid, SIGKILL);
	test_wait_status(pid);
	if (status != 0)
		fail_msg("%s: pybpfprof -p exited %d: %s", python->label, status, err);
	read_split(mojo, &found, throttled, sizeof(throttled));
	print_message("%s: %zu samples, %zu weighed\n", python->label, found.samples, found.weighed);
	assert_null(strstr(err, "throttled"));
	assert_false(found.budget_said);
	assert_null(found.throttled);
	assert_true(found.samples > 0);
	assert_int_equal(found.weighed, 0);
}

int main(void)
{
	static const char *const labels[] = { "3.12", "3.13" };
	static const struct test_per_python kinds[] = {
		{ "throttled_deep_split_", deep_target_is_throttled_with_true_shares },
		{ "unthrottled_attach_", attached_run_is_not_throttled_by_default },
	};

	python_count = test_pythons(pythons, 32);
	return test_run_per_python("overhead_budget_bpf", labels, 2, kinds, 2);
}
