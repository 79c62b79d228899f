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
 *    reader: austin-python is not packaged in Debian), pprof's memory/bytes sample type (read
 *    by `go tool pprof -raw`), speedscope's unit, the collapsed weights (negative where
 *    released), and `pybpfprof top` ranks growth and release apart.
 *
 * exception (tests/scripts/exception_work.py, 3.10-3.12 and 3.15): parse_a() raises and handles 3 times
 * as often as parse_b(), the same work in each except block, as much work between calls with
 * no exception: the kept samples split 3:1 within 5 points, hardly any lies outside the two
 * (no exception in flight there), and each carries Tachyon's has-exception status.
 */
#include "testlib.h"

#include "formats/format_registry.h"
#include "profile/profile.h"

#include <math.h>
#include <poll.h>
#include <sys/stat.h>

#define MAX_PYTHONS 32
#define SHARE_TOLERANCE 0.05
#define GROWTH_TOLERANCE 0.05
#define RELEASED_MIN 0.95
/* What the test waits for before letting a workload start: this many samples of wait_for_go
 * (some 20 ms of its CPU at the default 1 kHz) say that its thread is sampled and named. */
#define WAIT_SAMPLES_MIN 20
#define GROW_SAMPLES_MIN 500
#define EXCEPTION_SAMPLES_MIN 1000
#define OUTSIDE_EXCEPTIONS_MAX 0.02
/* Safety nets only (a hung run fails rather than hangs): nothing is measured against them. */
#define STARTUP_LIMIT_S 300
#define RUN_LIMIT_S 900

static const char *const memory_labels[] = { "2.7", "3.12" };
static const char *const exception_labels[] = { "3.10", "3.11", "3.12", "3.15" };

static struct test_python pythons[MAX_PYTHONS];
static size_t python_count;

/* ---- a gated run ---- */

/* Samples of wait_for_go in the MOJO file written so far (0 while it is not there or holds none:
 * a file being written may end mid-record, so a reader error ends the count, not the test). */
static size_t waiting_samples(const char *path)
{
	struct pf_reader *reader = NULL;
	struct pf_sample sample;
	char err[512];
	size_t count = 0;

	if (access(path, R_OK) != 0 || format_registry_open_reader(&reader, path, err, sizeof(err)))
		return 0;
	while (pf_reader_next_sample(reader, &sample) == 1)
		count += test_has_python_frame(&sample, "wait_for_go");
	pf_reader_close(reader);
	return count;
}

/* The workload's line of truth, into line. */
static void read_truth(int fd, char *line, size_t len)
{
	struct pollfd ready = { .fd = fd, .events = POLLIN };
	ssize_t got;

	if (poll(&ready, 1, RUN_LIMIT_S * 1000) != 1)
		fail_msg("the workload did not finish within %d s", RUN_LIMIT_S);
	got = read(fd, line, len - 1);
	line[got > 0 ? got : 0] = 0;
}

/*
 * Runs `SCRIPT WORD` under `pybpfprof -q --mode MODE -p PID -o DIR/m.mojo` plus the outputs
 * given (NULL-terminated paths), letting it past wait_for_go (SIGUSR1) once the profiler samples
 * it; the workload's truth line into truth. Fails the test if either does not end well.
 */
static void run_gated(const struct test_python *python, const char *script, const char *word, const char *mode,
		      const char *dir, const char *const *outputs, char *truth, size_t truth_len)
{
	char mojo[PATH_MAX], log[PATH_MAX], pid_text[16], limit[16];
	char *argv[32];
	size_t argc = 0;
	struct test_target target;
	pid_t profiler;
	int status;

	FORMAT(mojo, "%s/m.mojo", dir);
	FORMAT(log, "%s/pybpfprof.log", dir);
	unlink(mojo);
	target.pid = test_start_ready_script(python, script, word, &target.out_fd);
	snprintf(pid_text, sizeof(pid_text), "%d", (int)target.pid);
	snprintf(limit, sizeof(limit), "%d", RUN_LIMIT_S);
	{
		char *fixed[] = { (char *)pybpfprof_binary(), "-q", "--mode", (char *)mode, "-p", pid_text,
				  "-d", limit, "-o", mojo };

		for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
			argv[argc++] = fixed[i];
	}
	for (size_t i = 0; outputs[i] && argc + 3 < sizeof(argv) / sizeof(argv[0]); i++) {
		argv[argc++] = "-o";
		argv[argc++] = (char *)outputs[i];
	}
	argv[argc] = NULL;
	profiler = test_spawn(argv, NULL, log);
	assert_true(profiler > 0);
	for (int waited = 0; waiting_samples(mojo) < WAIT_SAMPLES_MIN; waited++) {
		int profiler_status = 0;
		pid_t ended = waitpid(profiler, &profiler_status, WNOHANG);

		if (ended == profiler || waited >= STARTUP_LIMIT_S * 10) {
			size_t len = 0;
			char *text = (char *)read_whole_file(log, &len);

			test_stop_target(&target);
			if (ended != profiler) {
				kill(profiler, SIGTERM);
				test_wait_status(profiler);
			}
			fail_msg("%s: no samples of wait_for_go in %s (%s): %.2000s", python->label, mojo,
				 ended == profiler ? "the profiler ended" : "time limit", text ? text : "");
		}
		usleep(100 * 1000);
	}
	assert_int_equal(kill(target.pid, SIGUSR1), 0);
	read_truth(target.out_fd, truth, truth_len);
	assert_int_equal(test_wait_status(target.pid), 0);
	close(target.out_fd);
	status = test_wait_status(profiler);
	if (status != 0) {
		size_t len = 0;
		char *text = (char *)read_whole_file(log, &len);

		fail_msg("%s: pybpfprof --mode %s exited %d: %.2000s", python->label, mode, status, text ? text : "");
	}
}

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

static void split_memory(const char *path, struct memory_split *split)
{
	struct pf_reader *reader = test_open_profile(path);
	struct pf_sample sample;

	*split = (struct memory_split){ 0 };
	while (pf_reader_next_sample(reader, &sample) == 1) {
		double weight = (double)pf_sample_weight(&sample);
		bool in_a = test_has_python_frame(&sample, "grow_a"), in_b = test_has_python_frame(&sample, "grow_b");

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

static void memory_growth_and_release(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	char dir[PATH_MAX], mojo[PATH_MAX], pprof[PATH_MAX], speedscope[PATH_MAX], collapsed[PATH_MAX], truth[256],
		mode[32];
	const char *outputs[] = { pprof, speedscope, collapsed, NULL };
	unsigned long long truth_a = 0, truth_b = 0, truth_released = 0;
	struct memory_split split;
	double share_a, truth_share_a, grown;

	snprintf(dir, sizeof(dir), "%s/memory-%s", test_tmpdir(), python->label);
	mkdir(dir, 0755);
	FORMAT(mojo, "%s/m.mojo", dir);
	FORMAT(pprof, "%s/m.pb.gz", dir);
	FORMAT(speedscope, "%s/m.speedscope.json", dir);
	FORMAT(collapsed, "%s/m.collapsed", dir);
	run_gated(python, "memory_work.py", "memory", "memory", dir, outputs, truth, sizeof(truth));
	if (sscanf(truth, "grew a=%llu b=%llu released b=%llu", &truth_a, &truth_b, &truth_released) != 3)
		fail_msg("the workload said '%s'", truth);

	split_memory(mojo, &split);
	grown = split.grown_a + split.grown_b;
	share_a = grown > 0 ? split.grown_a / grown : 0;
	truth_share_a = (double)truth_a / (double)(truth_a + truth_b);
	print_message("%s: %zu samples (%zu growing); grown a %.1f MB, b %.1f MB (a: %.2f%%, truth %.2f%%), "
		      "elsewhere %.1f MB; released in release_b %.1f MB (truth %.1f), in the growers %.1f, "
		      "elsewhere %.1f\n",
		      python->label, split.samples, split.grow_samples, split.grown_a / 1e6, split.grown_b / 1e6,
		      100 * share_a, 100 * truth_share_a, split.grown_other / 1e6, split.released_b / 1e6,
		      truth_released / 1e6, split.released_growers / 1e6, split.released_other / 1e6);
	assert_true(split.metrics == PF_METRIC_MEMORY);
	assert_true(split.grow_samples >= GROW_SAMPLES_MIN);
	assert_true(fabs(share_a - truth_share_a) <= SHARE_TOLERANCE);
	assert_true(fabs(grown - (double)(truth_a + truth_b)) <= GROWTH_TOLERANCE * (double)(truth_a + truth_b));
	assert_true(split.released_b >= RELEASED_MIN * (double)truth_released);
	assert_true(split.released_b <= (1 + GROWTH_TOLERANCE) * (double)truth_released);
	assert_true(split.released_growers <= (1 - RELEASED_MIN) * (double)truth_released);

	/* The collapsed file says the same in bytes, releases below 0. */
	split_memory(collapsed, &split);
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

/* ---- exceptions ---- */

struct exception_split {
	size_t in_a, in_b, samples;
	size_t outside; /* in neither, nor in wait_for_go (which handles one while it waits) */
	size_t flagged; /* samples with PF_STATUS_HAS_EXCEPTION */
};

static void split_exceptions(const char *path, struct exception_split *split)
{
	struct pf_reader *reader = test_open_profile(path);
	struct pf_sample sample;

	*split = (struct exception_split){ 0 };
	while (pf_reader_next_sample(reader, &sample) == 1) {
		size_t count = sample.samples ? sample.samples : 1;

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

static void exceptions_where_raised(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	char dir[PATH_MAX], mojo[PATH_MAX], tachyon[PATH_MAX], truth[256], mode[32];
	const char *outputs[] = { tachyon, NULL };
	unsigned long long truth_a = 0, truth_b = 0;
	struct exception_split split;
	double share_a, truth_share_a;

	snprintf(dir, sizeof(dir), "%s/exception-%s", test_tmpdir(), python->label);
	mkdir(dir, 0755);
	FORMAT(mojo, "%s/m.mojo", dir);
	FORMAT(tachyon, "%s/m.bin", dir);
	run_gated(python, "exception_work.py", "exceptions", "exception", dir, outputs, truth, sizeof(truth));
	if (sscanf(truth, "raised a=%llu b=%llu", &truth_a, &truth_b) != 2)
		fail_msg("the workload said '%s'", truth);

	split_exceptions(mojo, &split);
	share_a = split.in_a + split.in_b ? (double)split.in_a / (double)(split.in_a + split.in_b) : 0;
	truth_share_a = (double)truth_a / (double)(truth_a + truth_b);
	print_message("%s: %zu samples kept: parse_a %zu, parse_b %zu (a: %.2f%%, truth %.2f%%), elsewhere %zu\n",
		      python->label, split.samples, split.in_a, split.in_b, 100 * share_a, 100 * truth_share_a,
		      split.outside);
	assert_true(split.in_a + split.in_b >= EXCEPTION_SAMPLES_MIN);
	assert_true(fabs(share_a - truth_share_a) <= SHARE_TOLERANCE);
	/* settle() and wait_for_go() take as much CPU as the handlers, with no exception in flight. */
	assert_true((double)split.outside <= OUTSIDE_EXCEPTIONS_MAX * (double)split.samples);

	split_exceptions(tachyon, &split);
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

int main(void)
{
	static const struct test_per_python memory_kinds[] = { { "memory_growth_and_release_",
								  memory_growth_and_release } };
	static const struct test_per_python exception_kinds[] = { { "exceptions_where_raised_",
								     exceptions_where_raised } };
	int failed;

	python_count = test_pythons(pythons, MAX_PYTHONS);
	failed = test_run_per_python("test_sample_modes_memory", memory_labels,
				     sizeof(memory_labels) / sizeof(memory_labels[0]), memory_kinds, 1);
	return failed + test_run_per_python("test_sample_modes_exception", exception_labels,
					    sizeof(exception_labels) / sizeof(exception_labels[0]), exception_kinds, 1);
}
