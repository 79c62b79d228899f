// SPDX-License-Identifier: MIT
/*
 * --mode memory and --mode exception end to end (real BPF, root). Each workload starts its
 * measured part only once the profiler samples it: it spins in wait_for_go() until the test
 * has seen those samples in the MOJO file and sends SIGUSR1, so the whole of what it does is
 * in the profile, whatever the load. Each says what it did.
 *
 * memory (tests/scripts/memory_work.py): 200 MB of fresh memory touched in grow_a() and
 * 100 MB in grow_b(), then grow_b's unmapped in release_b():
 *  - the growth under grow_a and grow_b is the truth's, 2:1 within 5 points, and adds up to
 *    what was touched within 5%;
 *  - the 100 MB released is charged to release_b (at least 95 MB), none to the growers;
 *  - every file carries bytes: MOJO's memory mode and metric (read back with the project's
 *    reader: austin-python is GPL-3.0, not vendored here, see doc/formats.md), pprof's memory/bytes sample type (read
 *    by `go tool pprof -raw`), speedscope's unit, the collapsed weights (negative where
 *    released), and `pybpfprof top` ranks growth and release apart.
 *
 * exception (tests/scripts/exception_work.py, 3.10-3.12 and 3.15): parse_a() raises and handles 3 times
 * as often as parse_b(), the same work in each except block, as much work between calls with
 * no exception: the kept samples split 3:1 within 5 points, hardly any lies outside the two
 * (no exception in flight there), and each carries Tachyon's has-exception status.
 *
 * Both are attached with -p; on 3.12 both run on the whole host too (no -p: other Python
 * processes are sampled beside), and the workload's own samples (by pid) say the same.
 */
#include "gated_run.h"
#include "testlib.h"

#include "formats/format_registry.h"
#include "profile/profile.h"

#include <math.h>
#include <sys/stat.h>

#define MAX_PYTHONS 32
#define SHARE_TOLERANCE 0.05
#define GROWTH_TOLERANCE 0.05
#define RELEASED_MIN 0.95
#define GROW_SAMPLES_MIN 500
#define EXCEPTION_SAMPLES_MIN 1000
#define OUTSIDE_EXCEPTIONS_MAX 0.02

static const char *const memory_labels[] = { "2.7", "3.12" };
static const char *const exception_labels[] = { "3.10", "3.11", "3.12", "3.15" };
/* The whole host: one interpreter that has both modes. */
static const char *const whole_host_labels[] = { "3.12" };

static struct test_python pythons[MAX_PYTHONS];
static size_t python_count;

/* argv's output holds texts in this order. */
static void assert_output_holds(char *const argv[], const char *what, const char *const *texts, size_t count)
{
	/* Room for all of it: a reader cut short dies of a broken pipe. */
	static char out[16 << 20];
	char err[4096];
	int status = run_capture_both(argv, out, sizeof(out), err, sizeof(err));
	const char *from = out;

	if (status != 0)
		fail_msg("%s exited %d: %s", what, status, err);
	for (size_t i = 0; i < count; i++) {
		const char *found = strstr(from, texts[i]);

		if (!found)
			fail_msg("%s: expected '%s' (after '%s') in:\n%.3000s", what, texts[i], i ? texts[i - 1] : "",
				 out);
		from = found + strlen(texts[i]);
	}
}

/* ---- memory ---- */

/* The bytes under each function, growth (positive weights) and release (negative) apart. */
struct memory_split {
	double grown_a, grown_b, grown_other;
	double released_b, released_growers, released_other;
	size_t samples, grow_samples;
	uint32_t metrics;
};

/* Of process pid's samples (0: all the file's). */
static void split_memory(const char *path, uint32_t pid, struct memory_split *split)
{
	struct pf_reader *reader = test_open_profile(path);
	struct pf_sample sample;

	*split = (struct memory_split){ 0 };
	while (pf_reader_next_sample(reader, &sample) == 1) {
		double weight = (double)pf_sample_weight(&sample);
		bool in_a = test_has_python_frame(&sample, "grow_a"), in_b = test_has_python_frame(&sample, "grow_b");

		if (pid && sample.pid != pid)
			continue;
		split->samples++;
		split->metrics |= sample.metrics;
		split->grow_samples += in_a || in_b;
		if (weight > 0)
			*(in_a ? &split->grown_a : in_b ? &split->grown_b : &split->grown_other) += weight;
		else if (test_has_python_frame(&sample, "release_b"))
			split->released_b -= weight;
		else
			*(in_a || in_b ? &split->released_growers : &split->released_other) -= weight;
	}
	pf_reader_close(reader);
}

/* The workload's truth ("grew a=BYTES b=BYTES released b=BYTES") against process pid's samples in
 * the MOJO file: the growth split and total, the release where it happened. */
static void check_memory(const char *label, const char *mojo, uint32_t pid, const char *truth)
{
	unsigned long long truth_a = 0, truth_b = 0, truth_released = 0;
	struct memory_split split;
	double share_a, truth_share_a, grown;

	if (sscanf(truth, "grew a=%llu b=%llu released b=%llu", &truth_a, &truth_b, &truth_released) != 3)
		fail_msg("the workload said '%s'", truth);
	split_memory(mojo, pid, &split);
	grown = split.grown_a + split.grown_b;
	share_a = grown > 0 ? split.grown_a / grown : 0;
	truth_share_a = (double)truth_a / (double)(truth_a + truth_b);
	print_message("%s: %zu samples (%zu growing); grown a %.1f MB, b %.1f MB (a: %.2f%%, truth %.2f%%), "
		      "elsewhere %.1f MB; released in release_b %.1f MB (truth %.1f), in the growers %.1f, "
		      "elsewhere %.1f\n",
		      label, split.samples, split.grow_samples, split.grown_a / 1e6, split.grown_b / 1e6,
		      100 * share_a, 100 * truth_share_a, split.grown_other / 1e6, split.released_b / 1e6,
		      truth_released / 1e6, split.released_growers / 1e6, split.released_other / 1e6);
	assert_true(split.metrics == PF_METRIC_MEMORY);
	assert_true(split.grow_samples >= GROW_SAMPLES_MIN);
	assert_true(fabs(share_a - truth_share_a) <= SHARE_TOLERANCE);
	assert_true(fabs(grown - (double)(truth_a + truth_b)) <= GROWTH_TOLERANCE * (double)(truth_a + truth_b));
	assert_true(split.released_b >= RELEASED_MIN * (double)truth_released);
	assert_true(split.released_b <= (1 + GROWTH_TOLERANCE) * (double)truth_released);
	assert_true(split.released_growers <= (1 - RELEASED_MIN) * (double)truth_released);
}

static const char *const memory_options[] = { "--mode", "memory", NULL };

static void memory_growth_and_release(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	char dir[PATH_MAX], mojo[PATH_MAX], pprof[PATH_MAX], speedscope[PATH_MAX], collapsed[PATH_MAX], truth[256],
		mode[32];
	const char *outputs[] = { pprof, speedscope, collapsed, NULL };
	struct gated_run run = { "memory_work.py", "memory", memory_options, outputs, dir, false };
	unsigned long long truth_a = 0, truth_b = 0, truth_released = 0;
	struct memory_split split;
	double truth_share_a;
	pid_t pid;

	snprintf(dir, sizeof(dir), "%s/memory-%s", test_tmpdir(), python->label);
	mkdir(dir, 0755);
	FORMAT(mojo, "%s/m.mojo", dir);
	FORMAT(pprof, "%s/m.pb.gz", dir);
	FORMAT(speedscope, "%s/m.speedscope.json", dir);
	FORMAT(collapsed, "%s/m.collapsed", dir);
	pid = gated_run(python, &run, truth, sizeof(truth));
	check_memory(python->label, mojo, (uint32_t)pid, truth);
	assert_int_equal(sscanf(truth, "grew a=%llu b=%llu released b=%llu", &truth_a, &truth_b, &truth_released), 3);
	truth_share_a = (double)truth_a / (double)(truth_a + truth_b);

	/* The collapsed file says the same in bytes, releases below 0. */
	split_memory(collapsed, 0, &split);
	assert_true(fabs(split.grown_a / (split.grown_a + split.grown_b) - truth_share_a) <= SHARE_TOLERANCE);
	assert_true(split.released_b >= RELEASED_MIN * (double)truth_released);

	test_profile_metadata(mojo, "mode", mode, sizeof(mode));
	assert_string_equal(mode, "memory");
	assert_true(test_file_holds(speedscope, "\"unit\":\"bytes\""));
	{
		char *argv[] = { "go", "tool", "pprof", "-raw", pprof, NULL };
		static const char *const types[] = { "samples/count memory/bytes" };

		assert_output_holds(argv, "go tool pprof -raw", types, 1);
	}
	{
		char *argv[] = { (char *)pybpfprof_binary(), "top", "-n", "1000", mojo, NULL };
		static const char *const texts[] = { "own memory growth", "grow_a (", "own memory released",
						     "total memory released", "release_b (" };

		assert_output_holds(argv, "pybpfprof top", texts, sizeof(texts) / sizeof(texts[0]));
	}
}

/* The whole host, other Python processes beside: the workload's own samples say the same. */
static void memory_whole_host(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	char dir[PATH_MAX], mojo[PATH_MAX], truth[256];
	struct gated_run run = { "memory_work.py", "memory", memory_options, NULL, dir, true };
	pid_t pid;

	snprintf(dir, sizeof(dir), "%s/memory-host-%s", test_tmpdir(), python->label);
	mkdir(dir, 0755);
	FORMAT(mojo, "%s/m.mojo", dir);
	pid = gated_run(python, &run, truth, sizeof(truth));
	check_memory(python->label, mojo, (uint32_t)pid, truth);
}

/* ---- exceptions ---- */

struct exception_split {
	size_t in_a, in_b, samples;
	size_t outside; /* in neither, nor in wait_for_go (which handles one while it waits) */
	size_t flagged; /* samples with PF_STATUS_HAS_EXCEPTION */
};

/* Of process pid's samples (0: all the file's). */
static void split_exceptions(const char *path, uint32_t pid, struct exception_split *split)
{
	struct pf_reader *reader = test_open_profile(path);
	struct pf_sample sample;

	*split = (struct exception_split){ 0 };
	while (pf_reader_next_sample(reader, &sample) == 1) {
		size_t count = sample.samples ? sample.samples : 1;

		if (pid && sample.pid != pid)
			continue;
		split->samples += count;
		split->flagged += sample.status & PF_STATUS_HAS_EXCEPTION ? count : 0;
		if (test_has_python_frame(&sample, "parse_a"))
			split->in_a += count;
		else if (test_has_python_frame(&sample, "parse_b"))
			split->in_b += count;
		else if (!test_has_python_frame(&sample, "wait_for_go"))
			split->outside += count;
	}
	pf_reader_close(reader);
}

/* The workload's truth ("raised a=N b=M") against process pid's samples in the MOJO file: 3:1, and
 * hardly any sample outside the two. */
static void check_exceptions(const char *label, const char *mojo, uint32_t pid, const char *truth)
{
	unsigned long long truth_a = 0, truth_b = 0;
	struct exception_split split;
	double share_a, truth_share_a;

	if (sscanf(truth, "raised a=%llu b=%llu", &truth_a, &truth_b) != 2)
		fail_msg("the workload said '%s'", truth);
	split_exceptions(mojo, pid, &split);
	share_a = split.in_a + split.in_b ? (double)split.in_a / (double)(split.in_a + split.in_b) : 0;
	truth_share_a = (double)truth_a / (double)(truth_a + truth_b);
	print_message("%s: %zu samples kept: parse_a %zu, parse_b %zu (a: %.2f%%, truth %.2f%%), elsewhere %zu\n",
		      label, split.samples, split.in_a, split.in_b, 100 * share_a, 100 * truth_share_a, split.outside);
	assert_true(split.in_a + split.in_b >= EXCEPTION_SAMPLES_MIN);
	assert_true(fabs(share_a - truth_share_a) <= SHARE_TOLERANCE);
	/* settle() and wait_for_go() take as much CPU as the handlers, with no exception in flight. */
	assert_true((double)split.outside <= OUTSIDE_EXCEPTIONS_MAX * (double)split.samples);
}

static const char *const exception_options[] = { "--mode", "exception", NULL };

static void exceptions_where_raised(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	char dir[PATH_MAX], mojo[PATH_MAX], tachyon[PATH_MAX], truth[256], mode[32];
	const char *outputs[] = { tachyon, NULL };
	struct gated_run run = { "exception_work.py", "exceptions", exception_options, outputs, dir, false };
	struct exception_split split;
	pid_t pid;

	snprintf(dir, sizeof(dir), "%s/exception-%s", test_tmpdir(), python->label);
	mkdir(dir, 0755);
	FORMAT(mojo, "%s/m.mojo", dir);
	FORMAT(tachyon, "%s/m.bin", dir);
	pid = gated_run(python, &run, truth, sizeof(truth));
	check_exceptions(python->label, mojo, (uint32_t)pid, truth);

	split_exceptions(tachyon, 0, &split);
	assert_true(split.samples >= EXCEPTION_SAMPLES_MIN);
	assert_true(split.flagged == split.samples);
	test_profile_metadata(mojo, "pybpfprof_mode", mode, sizeof(mode));
	assert_string_equal(mode, "exception");
	{
		char *argv[] = { (char *)pybpfprof_binary(), "top", "-n", "1000", tachyon, NULL };
		static const char *const texts[] = { "exception mode", "own time raising or handling exceptions",
						     "parse_a (" };

		assert_output_holds(argv, "pybpfprof top", texts, sizeof(texts) / sizeof(texts[0]));
	}
}

/* The whole host, other Python processes beside: the workload's own samples split 3:1 as well. */
static void exceptions_whole_host(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	char dir[PATH_MAX], mojo[PATH_MAX], truth[256];
	struct gated_run run = { "exception_work.py", "exceptions", exception_options, NULL, dir, true };
	pid_t pid;

	snprintf(dir, sizeof(dir), "%s/exception-host-%s", test_tmpdir(), python->label);
	mkdir(dir, 0755);
	FORMAT(mojo, "%s/m.mojo", dir);
	pid = gated_run(python, &run, truth, sizeof(truth));
	check_exceptions(python->label, mojo, (uint32_t)pid, truth);
}

int main(void)
{
	static const struct test_per_python memory_kinds[] = { { "memory_growth_and_release_",
								  memory_growth_and_release } };
	static const struct test_per_python exception_kinds[] = { { "exceptions_where_raised_",
								     exceptions_where_raised } };
	static const struct test_per_python whole_host_kinds[] = { { "memory_whole_host_", memory_whole_host },
								   { "exceptions_whole_host_", exceptions_whole_host } };
	int failed;

	python_count = test_pythons(pythons, MAX_PYTHONS);
	failed = test_run_per_python("test_sample_modes_memory", memory_labels,
				     sizeof(memory_labels) / sizeof(memory_labels[0]), memory_kinds, 1);
	failed += test_run_per_python("test_sample_modes_whole_host", whole_host_labels,
				      sizeof(whole_host_labels) / sizeof(whole_host_labels[0]), whole_host_kinds, 2);
	return failed + test_run_per_python("test_sample_modes_exception", exception_labels,
					    sizeof(exception_labels) / sizeof(exception_labels[0]), exception_kinds, 1);
}
