// SPDX-License-Identifier: MIT
/*
 * --event syscall:NAME[,NAME...][:bytes|:latency] and --event block-io end to end (real BPF,
 * root). Every call is a sample (none is sampled away), so the shares are the workload's own
 * structure, whatever the host's load: a slow host stretches the rounds, not the ratios.
 *  - counts, a launched command: write_three() calls write 3 times for write_one()'s once; the
 *    calls under them split 3:1 within 2 points, nearly every call is a sample, and every format
 *    says it counts calls (event and event_unit, pprof's syscall:write/count, speedscope's
 *    "none", the SVG's events; `pybpfprof top` ranks and sums them).
 *  - bytes: big_writes() writes 8192 bytes once for small_writes()' three 1024-byte writes: the
 *    bytes under them split as os.write's return values do, within 2 points (by calls it would be
 *    1:3), in every format's bytes (MOJO's memory metric, pprof's io/bytes, speedscope, collapsed).
 *  - latency: slow_writes() writes into a full pipe a reader drains every 2 ms, fast_writes() to
 *    /dev/null; each times its calls. slow_writes' share of the nanoseconds is the clocks' share
 *    (less 3 points at most), its nanoseconds 70-105% of its clock's (which also holds the GIL's
 *    return), fast_writes' at most its clock's. The MOJO file converted to pprof and speedscope
 *    still says nanoseconds.
 *  - attach (-p): the counts workload running before the profiler; 3:1 within 2 points over at
 *    least MIN_ATTACH_CALLS calls.
 *  - whole host: the same beside dd writing a byte at a time to /dev/null: none of dd's calls is
 *    a sample, the workload's split 3:1.
 *  - block-io: fsync_writes() rewrites and fsyncs 256 KiB in a directory on a block device (the
 *    test's tmp dir, else the checkout's build folder; skipped, saying so, where neither is):
 *    at least 90% of the process's block I/O bytes are under it, and they are at least 80% of
 *    the bytes it wrote; launched, and running before the profiler (-p).
 *  - block-io:10: direct_writes() makes 25600 O_DIRECT writes of 4 KiB, each a bio it queues
 *    itself: the bytes under it are those written within 6% (over 5 sd of the sampling's
 *    spread), each sample weighs 10 bios of 4 KiB, and event_period says 10.
 *  - a period (--event-period 10): write_three() and write_one() as fast as they go, PERIOD_ROUNDS
 *    rounds; about one call in 10 is a sample weighing 10: the split still 3:1 within 2 points
 *    (some 20000 samples: the gaps are drawn at random, so no loop falls in step with them), the
 *    calls under the two within 5% of the truth (the count of samples in 200000 calls varies by
 *    some 0.4%; the file's, as a sample taken before the profiler read the process is under
 *    neither), and the file's event_period says 10. Weighed in bytes (big_writes against
 *    small_writes), the bytes split as os.write's do within 2 points and sum to theirs within 5%.
 *  - compat: compat_writes() writes three times through int $0x80 (i386's write, number 4,
 *    which is x86_64's stat) for native_writes()' once through write: --event syscall:write
 *    counts both, 3:1 within 2 points, nearly every call; --event syscall:stat counts none of
 *    them. Skipped, saying so, where the kernel runs no i386 call.
 *  - compat only: socketcall, a name of i386 alone (102, x86_64's getuid), made through int $0x80
 *    from C (tests/scripts/compat_calls.c, built here) 1800 times beside 600 getuids: the file of
 *    --event syscall:socketcall weighs 1800 calls, none of them under the getuids; that of
 *    syscall:getuid has the getuids, none of the socketcalls. Skipped, saying so, as compat's.
 *  - names: write, openat and futex are this machine's numbers; a 32-bit-only name is not, but is
 *    i386's (socketcall 102, _llseek 140, mmap2 192); i386's numbers of write and openat (4, 295)
 *    go to the compat bitmap.
 *  - mistakes: an unknown call (with its likely spelling), :bytes on a call that moves none, an
 *    unknown weight, a period on off-cpu: one line each and the usage status.
 */
#include "testlib.h"

#include "formats/format_registry.h"
#include "profile/profile.h"
#include "sampler/syscall_names.h"
#include "util/exit_status.h"

#include <dlfcn.h>
#include <errno.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <math.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#define SCRIPT "syscall_work.py"
#define MAX_PYTHONS 32
#define COUNT_ROUNDS 600
#define BYTES_ROUNDS 400
#define LATENCY_ROUNDS 150
#define BLOCK_ROUNDS 120
#define SHARE_TOLERANCE 0.02
#define LATENCY_SHARE_TOLERANCE 0.03
/* The kernel's entry-to-exit lies inside the workload's clock, which also counts the GIL taken
 * back after the call (longer on a loaded host): the profile's time is at most the clock's, and
 * not far below it. */
#define LATENCY_TIME_MIN 0.7
#define LATENCY_TIME_MAX 1.05
/* Calls a launched run must show of those the workload made (a record lost to a full ring is
 * counted by the profiler, not hidden, but a run of these few thousand calls loses none). */
#define CALLS_SEEN_MIN 0.9
#define MIN_ATTACH_CALLS 400
#define BLOCK_SHARE_MIN 0.9
#define BLOCK_BYTES_MIN 0.8
/* Rounds of 256 KiB a -p run must see: far more than a few reads of its own can outweigh. */
#define MIN_BLOCK_SAMPLES 20
#define PERIOD 10
#define PERIOD_ROUNDS 50000
/* The weighed total against the truth: 10 sd of the count of samples at PERIOD_ROUNDS. */
#define PERIOD_TOTAL_TOLERANCE 0.05
/* Direct writes of 4 KiB (100 MiB) for block-io:PERIOD: some 2560 samples. */
#define DIRECT_WRITES 25600
#define DIRECT_BLOCK 4096
/*
 * Gaps of 1 to 2P-1 (uniform: variance about P^2/3) make the samples in M occurrences a renewal
 * count of mean M/P and variance about M/(3P): a relative sd of sqrt(P/(3M)), 1.14% at P = 10,
 * M = 25600. 6% is over 5 sd; a period not multiplied in is off by 90%.
 */
#define BLOCK_PERIOD_TOLERANCE 0.06

static const char *const syscall_labels[] = { "2.7", "3.12", "3.13", "3.15" };
/* The interpreter of the tests run once. */
#define ONE_PYTHON "3.12"

static struct test_python pythons[MAX_PYTHONS];
static size_t python_count;

/* ---- what the files show ---- */

/* The weight (pf_sample_weight) and samples under two functions of one process (pid 0: any). */
struct split {
	double first, second, total;
	size_t first_samples, second_samples, samples;
	uint32_t metrics;
};

static void sum_split(const char *path, pid_t pid, const char *first, const char *second, struct split *split)
{
	struct pf_reader *reader = test_open_profile(path);
	struct pf_sample sample;

	*split = (struct split){ 0 };
	while (pf_reader_next_sample(reader, &sample) == 1) {
		double weight = (double)pf_sample_weight(&sample);

		if (pid && sample.pid != (uint32_t)pid)
			continue;
		split->total += weight;
		split->samples++;
		split->metrics |= sample.metrics;
		if (test_has_python_frame(&sample, first)) {
			split->first += weight;
			split->first_samples++;
		} else if (test_has_python_frame(&sample, second)) {
			split->second += weight;
			split->second_samples++;
		}
	}
	pf_reader_close(reader);
}

static double first_share(const struct split *split)
{
	return split->first + split->second > 0 ? split->first / (split->first + split->second) : 0;
}

/* How many samples of the file are of process pid. */
static size_t samples_of(const char *path, pid_t pid)
{
	struct pf_reader *reader = test_open_profile(path);
	struct pf_sample sample;
	size_t count = 0;

	while (pf_reader_next_sample(reader, &sample) == 1)
		count += sample.pid == (uint32_t)pid;
	pf_reader_close(reader);
	return count;
}

/* Runs the workload (mode and its arguments) under pybpfprof with options; its stdout into out. */
static void run_workload(const struct test_python *python, const char *options, const char *mode, char *out,
			 size_t len)
{
	char command[4096], *argv[64], err[8192];
	int status;

	FORMAT(command, "%s -q %s -- %s %s/tests/scripts/%s %s", pybpfprof_binary(), options, python->command,
	       test_source_dir(), SCRIPT, mode);
	assert_true(split_command(command, argv, 64) > 0);
	status = run_capture_both(argv, out, len, err, sizeof(err));
	if (status != 0)
		fail_msg("%s: pybpfprof %s exited %d: %s", python->label, options, status, err);
}

/* `pybpfprof convert FROM -o TO`; fails the test if it does not exit 0. */
static void test_convert_file(const char *from, const char *to)
{
	char *argv[] = { (char *)pybpfprof_binary(), "convert", (char *)from, "-o", (char *)to, NULL };
	char err[4096];
	int status = run_capture(argv, err, sizeof(err));

	if (status != 0)
		fail_msg("pybpfprof convert %s -o %s exited %d: %s", from, to, status, err);
}

static void assert_metadata(const char *path, const char *key, const char *expected)
{
	char value[128];

	test_profile_metadata(path, key, value, sizeof(value));
	if (strcmp(value, expected) != 0)
		fail_msg("%s: %s is '%s', not '%s'", path, key, value, expected);
}

/* ---- counted calls ---- */

static void counts(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	char dir[PATH_MAX], mojo[PATH_MAX], pprof[PATH_MAX], speedscope[PATH_MAX], collapsed[PATH_MAX], svg[PATH_MAX];
	char options[6 * PATH_MAX + 64], mode[32], out[4096];
	unsigned long long three = 0, one = 0;
	struct split split;

	snprintf(dir, sizeof(dir), "%s/syscall-counts-%s", test_tmpdir(), python->label);
	mkdir(dir, 0755);
	FORMAT(mojo, "%s/c.mojo", dir);
	FORMAT(pprof, "%s/c.pb.gz", dir);
	FORMAT(speedscope, "%s/c.speedscope.json", dir);
	FORMAT(collapsed, "%s/c.collapsed", dir);
	FORMAT(svg, "%s/c.svg", dir);
	FORMAT(options, "--event syscall:write -o %s -o %s -o %s -o %s -o %s", mojo, pprof, speedscope, collapsed, svg);
	FORMAT(mode, "counts %d", COUNT_ROUNDS);
	run_workload(python, options, mode, out, sizeof(out));
	if (sscanf(out, "writes three=%llu one=%llu", &three, &one) != 2)
		fail_msg("the workload did not say its writes: '%s'", out);

	sum_split(mojo, 0, "write_three", "write_one", &split);
	print_message("%s: %llu + %llu writes; profile %zu + %zu calls (%.2f%% under write_three)\n", python->label,
		      three, one, split.first_samples, split.second_samples, 100 * first_share(&split));
	assert_true((double)(split.first_samples + split.second_samples) >= CALLS_SEEN_MIN * (double)(three + one));
	/* A call is one sample weighing one. */
	assert_true(split.first == (double)split.first_samples);
	assert_true(fabs(first_share(&split) - 0.75) <= SHARE_TOLERANCE);
	sum_split(collapsed, 0, "write_three", "write_one", &split);
	assert_true(fabs(first_share(&split) - 0.75) <= SHARE_TOLERANCE);

	assert_metadata(mojo, "event", "syscall:write");
	assert_metadata(mojo, "event_unit", "count");
	test_assert_pprof_sample_types(pprof, "syscall:write/count");
	test_assert_top_ranks(mojo, "own syscalls (where the calls were made)", "write_three");
	test_assert_top_ranks(mojo, " calls in all", "write_one");
	assert_true(test_file_holds(speedscope, "\"unit\":\"none\""));
	assert_true(test_file_holds(svg, "width: events"));
}

/* ---- bytes ---- */

static void bytes(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	char dir[PATH_MAX], mojo[PATH_MAX], pprof[PATH_MAX], speedscope[PATH_MAX], collapsed[PATH_MAX], svg[PATH_MAX];
	char options[6 * PATH_MAX + 64], mode[32], out[4096];
	unsigned long long big = 0, small = 0;
	double truth_share;
	struct split split;

	snprintf(dir, sizeof(dir), "%s/syscall-bytes-%s", test_tmpdir(), python->label);
	mkdir(dir, 0755);
	FORMAT(mojo, "%s/b.mojo", dir);
	FORMAT(pprof, "%s/b.pb.gz", dir);
	FORMAT(speedscope, "%s/b.speedscope.json", dir);
	FORMAT(collapsed, "%s/b.collapsed", dir);
	FORMAT(svg, "%s/b.svg", dir);
	FORMAT(options, "--event syscall:write:bytes -o %s -o %s -o %s -o %s -o %s", mojo, pprof, speedscope,
	       collapsed, svg);
	FORMAT(mode, "bytes %d", BYTES_ROUNDS);
	run_workload(python, options, mode, out, sizeof(out));
	if (sscanf(out, "bytes big=%llu small=%llu", &big, &small) != 2)
		fail_msg("the workload did not say its bytes: '%s'", out);
	truth_share = (double)big / (double)(big + small);

	sum_split(mojo, 0, "big_writes", "small_writes", &split);
	print_message("%s: wrote %llu + %llu bytes (%.2f%%); profile %.0f + %.0f bytes (%.2f%%) in %zu + %zu calls\n",
		      python->label, big, small, 100 * truth_share, split.first, split.second,
		      100 * first_share(&split), split.first_samples, split.second_samples);
	assert_true((double)(split.first_samples + split.second_samples) >= CALLS_SEEN_MIN * 4 * BYTES_ROUNDS);
	assert_true(split.metrics == PF_METRIC_MEMORY);
	assert_true(fabs(first_share(&split) - truth_share) <= SHARE_TOLERANCE);
	sum_split(collapsed, 0, "big_writes", "small_writes", &split);
	assert_true(fabs(first_share(&split) - truth_share) <= SHARE_TOLERANCE);

	assert_metadata(mojo, "mode", "memory");
	assert_metadata(mojo, "event", "syscall:write");
	assert_metadata(mojo, "event_unit", "bytes");
	test_assert_pprof_sample_types(pprof, "syscall:write/count io/bytes");
	test_assert_top_ranks(mojo, "own syscall bytes (where the calls were made)", "big_writes");
	test_assert_top_ranks(mojo, " bytes in all", "small_writes");
	assert_true(test_file_holds(speedscope, "\"unit\":\"bytes\""));
	assert_true(test_file_holds(svg, "width: bytes moved"));
}

/* ---- a period ---- */

static void period_counts(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	char dir[PATH_MAX], mojo[PATH_MAX], options[PATH_MAX + 64], mode[32], out[4096];
	unsigned long long three = 0, one = 0;
	struct split split;
	double calls;

	snprintf(dir, sizeof(dir), "%s/syscall-period-%s", test_tmpdir(), python->label);
	mkdir(dir, 0755);
	FORMAT(mojo, "%s/p.mojo", dir);
	FORMAT(options, "--event syscall:write --event-period %d -o %s", PERIOD, mojo);
	FORMAT(mode, "counts %d 0", PERIOD_ROUNDS);
	run_workload(python, options, mode, out, sizeof(out));
	if (sscanf(out, "writes three=%llu one=%llu", &three, &one) != 2)
		fail_msg("the workload did not say its writes: '%s'", out);
	calls = (double)(three + one);

	sum_split(mojo, 0, "write_three", "write_one", &split);
	print_message("%s: %llu + %llu writes; profile %zu + %zu samples, %.0f + %.0f calls (%.2f%% under "
		      "write_three), %.0f in all\n",
		      python->label, three, one, split.first_samples, split.second_samples, split.first, split.second,
		      100 * first_share(&split), split.total);
	/* each sample stands for PERIOD calls */
	assert_true(split.first == (double)(PERIOD * split.first_samples));
	assert_true(fabs(first_share(&split) - 0.75) <= SHARE_TOLERANCE);
	/* the whole file's: a sample taken before the profiler had read the process has no Python
	 * frame to put it under either function */
	assert_true(fabs(split.total - calls) <= PERIOD_TOTAL_TOLERANCE * calls);
	assert_metadata(mojo, "event_period", "10");
}

static void period_bytes(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	char dir[PATH_MAX], mojo[PATH_MAX], options[PATH_MAX + 64], mode[32], out[4096];
	unsigned long long big = 0, small = 0;
	double truth_share, written;
	struct split split;

	snprintf(dir, sizeof(dir), "%s/syscall-period-bytes-%s", test_tmpdir(), python->label);
	mkdir(dir, 0755);
	FORMAT(mojo, "%s/p.mojo", dir);
	FORMAT(options, "--event syscall:write:bytes --event-period %d -o %s", PERIOD, mojo);
	FORMAT(mode, "bytes %d 0", PERIOD_ROUNDS);
	run_workload(python, options, mode, out, sizeof(out));
	if (sscanf(out, "bytes big=%llu small=%llu", &big, &small) != 2)
		fail_msg("the workload did not say its bytes: '%s'", out);
	written = (double)(big + small);
	truth_share = (double)big / written;

	sum_split(mojo, 0, "big_writes", "small_writes", &split);
	print_message("%s: wrote %llu + %llu bytes (%.2f%%); profile %.0f + %.0f bytes (%.2f%%) in %zu + %zu samples, "
		      "%.0f in all\n",
		      python->label, big, small, 100 * truth_share, split.first, split.second,
		      100 * first_share(&split), split.first_samples, split.second_samples, split.total);
	assert_true(split.metrics == PF_METRIC_MEMORY);
	assert_true(fabs(first_share(&split) - truth_share) <= SHARE_TOLERANCE);
	assert_true(fabs(split.total - written) <= PERIOD_TOTAL_TOLERANCE * written);
}

/* ---- compat (i386) calls ---- */

static void compat_calls(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	char dir[PATH_MAX], mojo[PATH_MAX], stat_mojo[PATH_MAX], options[PATH_MAX + 64], mode[32], out[4096];
	unsigned long long three = 0, one = 0;
	struct split split;

	snprintf(dir, sizeof(dir), "%s/syscall-compat-%s", test_tmpdir(), python->label);
	mkdir(dir, 0755);
	FORMAT(mojo, "%s/c.mojo", dir);
	FORMAT(stat_mojo, "%s/s.mojo", dir);
	FORMAT(options, "--event syscall:write -o %s", mojo);
	FORMAT(mode, "compat %d", COUNT_ROUNDS);
	run_workload(python, options, mode, out, sizeof(out));
	if (strstr(out, "no ia32")) {
		print_message("%s: this kernel runs no i386 call (int $0x80): skipped\n", python->label);
		skip();
	}
	if (sscanf(out, "compat three=%llu native=%llu", &three, &one) != 2)
		fail_msg("the workload did not say its writes: '%s'", out);
	sum_split(mojo, 0, "compat_writes", "native_writes", &split);
	print_message("%s: %llu i386 + %llu x86_64 writes; profile %zu + %zu calls (%.2f%% under compat_writes)\n",
		      python->label, three, one, split.first_samples, split.second_samples, 100 * first_share(&split));
	assert_true((double)(split.first_samples + split.second_samples) >= CALLS_SEEN_MIN * (double)(three + one));
	assert_true(fabs(first_share(&split) - 0.75) <= SHARE_TOLERANCE);

	/* x86_64's stat has i386's write's number: none of those is a stat */
	FORMAT(options, "--event syscall:stat -o %s", stat_mojo);
	run_workload(python, options, mode, out, sizeof(out));
	sum_split(stat_mojo, 0, "compat_writes", "native_writes", &split);
	print_message("%s: syscall:stat: %zu + %zu calls\n", python->label, split.first_samples, split.second_samples);
	assert_int_equal(split.first_samples + split.second_samples, 0);
}

/* ---- calls of i386 only ---- */

/* tests/scripts/compat_calls.c built as a shared library in the test's tmp dir, at library. */
static void build_compat_library(char *library, size_t len)
{
	char source[PATH_MAX], err[1024] = "";
	char *argv[] = { "cc", "-shared", "-fPIC", "-O1", "-o", library, source, NULL };

	snprintf(library, len, "%s/libcompat_calls.so", test_tmpdir());
	FORMAT(source, "%s/tests/scripts/compat_calls.c", test_source_dir());
	if (run_capture(argv, err, sizeof(err)) != 0)
		fail_msg("building %s: %s", library, err);
}

/* Whether this kernel runs int $0x80 (i386 emulation): one socketcall through the library, in a
 * child, as a kernel without it kills the caller. */
static bool compat_calls_run(const char *library)
{
	pid_t child = fork();
	int status;

	assert_true(child >= 0);
	if (child == 0) {
		void *handle = dlopen(library, RTLD_NOW);
		int (*socketcalls)(int) = handle ? (int (*)(int))dlsym(handle, "compat_socketcalls") : NULL;

		_exit(socketcalls && socketcalls(1) == 1 ? 0 : 1);
	}
	assert_int_equal(waitpid(child, &status, 0), child);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/*
 * A name only i386 has: compat_socketcalls() makes socketcall (i386's 102) through int $0x80 three
 * times for native_getuids()' getuid (x86_64's 102) once. --event syscall:socketcall counts every
 * socketcall and nothing else: the file's weight is the socketcalls made, none under
 * native_getuids; --event syscall:getuid the other way round.
 */
static void compat_only_calls(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	char dir[PATH_MAX], library[PATH_MAX], mojo[PATH_MAX], getuid_mojo[PATH_MAX], options[PATH_MAX + 64];
	char mode[PATH_MAX + 32], out[4096];
	unsigned long long socketcalls = 0, getuids = 0;
	struct split split;

	build_compat_library(library, sizeof(library));
	if (!compat_calls_run(library)) {
		print_message("%s: this kernel runs no i386 call (int $0x80): skipped\n", python->label);
		skip();
	}
	snprintf(dir, sizeof(dir), "%s/syscall-compat-only-%s", test_tmpdir(), python->label);
	mkdir(dir, 0755);
	FORMAT(mojo, "%s/s.mojo", dir);
	FORMAT(getuid_mojo, "%s/g.mojo", dir);
	FORMAT(options, "--event syscall:socketcall -o %s", mojo);
	FORMAT(mode, "compatonly %d %s", COUNT_ROUNDS, library);
	run_workload(python, options, mode, out, sizeof(out));
	if (sscanf(out, "compatonly socketcall=%llu getuid=%llu", &socketcalls, &getuids) != 2)
		fail_msg("the workload did not say its calls: '%s'", out);
	/* every int $0x80 call was answered as i386's socketcall, not as a getuid */
	assert_true(socketcalls == 3ull * COUNT_ROUNDS && getuids == COUNT_ROUNDS);
	sum_split(mojo, 0, "compat_socketcalls", "native_getuids", &split);
	print_message("%s: %llu socketcalls (int $0x80) + %llu getuids; syscall:socketcall: %.0f calls in all, %zu + "
		      "%zu under the two\n",
		      python->label, socketcalls, getuids, split.total, split.first_samples, split.second_samples);
	assert_true(split.total == (double)socketcalls);
	assert_true((double)split.first_samples >= CALLS_SEEN_MIN * (double)socketcalls);
	assert_int_equal(split.second_samples, 0);
	assert_metadata(mojo, "event", "syscall:socketcall");
	test_assert_top_ranks(mojo, "own syscalls (where the calls were made)", "compat_socketcalls");

	FORMAT(options, "--event syscall:getuid -o %s", getuid_mojo);
	run_workload(python, options, mode, out, sizeof(out));
	sum_split(getuid_mojo, 0, "compat_socketcalls", "native_getuids", &split);
	print_message("%s: syscall:getuid: %zu + %zu calls under the two\n", python->label, split.first_samples,
		      split.second_samples);
	assert_int_equal(split.first_samples, 0);
	assert_true((double)split.second_samples >= CALLS_SEEN_MIN * (double)getuids);
}

/* ---- latency ---- */

static void latency(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	char dir[PATH_MAX], mojo[PATH_MAX], pprof[PATH_MAX], speedscope[PATH_MAX], options[3 * PATH_MAX + 64];
	char mode[32], out[4096];
	unsigned long long slow = 0, fast = 0;
	double truth_share;
	struct split split;

	snprintf(dir, sizeof(dir), "%s/syscall-latency-%s", test_tmpdir(), python->label);
	mkdir(dir, 0755);
	FORMAT(mojo, "%s/l.mojo", dir);
	FORMAT(pprof, "%s/l.pb.gz", dir);
	FORMAT(speedscope, "%s/l.speedscope.json", dir);
	FORMAT(options, "--event syscall:write:latency -o %s -o %s -o %s", mojo, pprof, speedscope);
	FORMAT(mode, "latency %d", LATENCY_ROUNDS);
	run_workload(python, options, mode, out, sizeof(out));
	if (sscanf(out, "latency slow=%llu fast=%llu", &slow, &fast) != 2)
		fail_msg("the workload did not say its times: '%s'", out);
	truth_share = (double)slow / (double)(slow + fast);

	sum_split(mojo, 0, "slow_writes", "fast_writes", &split);
	print_message("%s: timed %.3f + %.3f s (%.2f%%); profile %.3f + %.3f s (%.2f%%) in %zu + %zu calls\n",
		      python->label, (double)slow / 1e9, (double)fast / 1e9, 100 * truth_share, split.first / 1e9,
		      split.second / 1e9, 100 * first_share(&split), split.first_samples, split.second_samples);
	assert_true((double)(split.first_samples + split.second_samples) >= CALLS_SEEN_MIN * 2 * LATENCY_ROUNDS);
	/* A loaded host stretches fast_writes' clock (the GIL's return) more than its calls: the
	 * profile's share of slow_writes may be higher than the clocks', never much lower. */
	assert_true(first_share(&split) >= truth_share - LATENCY_SHARE_TOLERANCE);
	assert_true(split.first >= LATENCY_TIME_MIN * (double)slow && split.first <= LATENCY_TIME_MAX * (double)slow);
	assert_true(split.second <= LATENCY_TIME_MAX * (double)fast);

	assert_metadata(mojo, "event_unit", "nanoseconds");
	test_assert_pprof_sample_types(pprof, "syscall:write/nanoseconds\n");
	test_assert_top_ranks(mojo, "own syscall time, in ns", "slow_writes");
	assert_true(test_file_holds(speedscope, "\"unit\":\"nanoseconds\""));

	/* The MOJO file converted: its time metric holds nanoseconds, not microseconds. */
	FORMAT(pprof, "%s/converted.pb.gz", dir);
	FORMAT(speedscope, "%s/converted.speedscope.json", dir);
	test_convert_file(mojo, pprof);
	test_convert_file(mojo, speedscope);
	test_assert_pprof_sample_types(pprof, "syscall:write/nanoseconds\n");
	assert_true(test_file_holds(speedscope, "\"unit\":\"nanoseconds\""));
}

/* ---- a running process, the whole host ---- */

/* The counts workload running on (it says "ready" after its first round). */
static void start_counts(const struct test_python *python, struct test_target *target)
{
	target->pid = test_start_ready_script(python, SCRIPT, "counts 0", &target->out_fd);
	if (target->pid <= 0)
		fail_msg("%s: the counts workload did not start", python->label);
}

static void attach(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	char mojo[PATH_MAX], pid_text[16], err[8192];
	struct test_target target;
	struct split split;
	int status;

	FORMAT(mojo, "%s/syscall-attach-%s.mojo", test_tmpdir(), python->label);
	start_counts(python, &target);
	snprintf(pid_text, sizeof(pid_text), "%d", (int)target.pid);
	{
		char *argv[] = { (char *)pybpfprof_binary(), "-q", "--event", "syscall:write", "-p", pid_text, "-d", "4",
				 "-o", mojo, NULL };

		status = run_capture(argv, err, sizeof(err));
	}
	test_stop_target(&target);
	if (status != 0)
		fail_msg("%s: pybpfprof --event syscall:write -p exited %d: %s", python->label, status, err);
	sum_split(mojo, target.pid, "write_three", "write_one", &split);
	print_message("%s: -p: %zu + %zu calls (%.2f%% under write_three)\n", python->label, split.first_samples,
		      split.second_samples, 100 * first_share(&split));
	assert_true(split.first_samples + split.second_samples >= MIN_ATTACH_CALLS);
	assert_true(fabs(first_share(&split) - 0.75) <= SHARE_TOLERANCE);
}

/* dd writing one byte at a time to /dev/null: a host's process that is no Python target. */
static pid_t start_dd(void)
{
	char *argv[] = { "dd", "if=/dev/zero", "of=/dev/null", "bs=1", NULL };
	char err_path[PATH_MAX];

	FORMAT(err_path, "%s/dd.err", test_tmpdir());
	return test_spawn(argv, NULL, err_path);
}

static void whole_host(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	char mojo[PATH_MAX], err[8192];
	char *argv[] = { (char *)pybpfprof_binary(), "-q", "--event", "syscall:write", "-d", "6", "-o", mojo, NULL };
	struct test_target target;
	struct split split;
	size_t dd_samples;
	pid_t dd;
	int status;

	FORMAT(mojo, "%s/syscall-host-%s.mojo", test_tmpdir(), python->label);
	start_counts(python, &target);
	dd = start_dd();
	assert_true(dd > 0);
	status = run_capture(argv, err, sizeof(err));
	kill(dd, SIGKILL);
	test_wait_status(dd);
	test_stop_target(&target);
	if (status != 0)
		fail_msg("%s: pybpfprof --event syscall:write (whole host) exited %d: %s", python->label, status, err);
	sum_split(mojo, target.pid, "write_three", "write_one", &split);
	dd_samples = samples_of(mojo, dd);
	print_message("%s: whole host: the workload %zu + %zu calls (%.2f%% under write_three); dd %zu\n",
		      python->label, split.first_samples, split.second_samples, 100 * first_share(&split), dd_samples);
	assert_int_equal(dd_samples, 0);
	assert_true(split.first_samples + split.second_samples >= MIN_ATTACH_CALLS);
	assert_true(fabs(first_share(&split) - 0.75) <= SHARE_TOLERANCE);
}

/* ---- block I/O ---- */

static bool on_block_device(const char *dir)
{
	struct stat info;

	return stat(dir, &info) == 0 && major(info.st_dev) != 0;
}

/*
 * A fresh folder for the writer on a filesystem with a block layer: the test's tmp dir, else
 * (tmpfs and its kind, anonymous devices of major 0, have none) one in the checkout's build
 * folder; the test is skipped, saying so, only when neither is.
 */
static void block_io_dir(const struct test_python *python, const char *name, char *dir, size_t len)
{
	snprintf(dir, len, "%s/%s-%s", test_tmpdir(), name, python->label);
	mkdir(dir, 0755);
	if (on_block_device(dir))
		return;
	rmdir(dir);
	snprintf(dir, len, "%s/build/%s-%s-%d", test_source_dir(), name, python->label, (int)getpid());
	mkdir(dir, 0755);
	if (on_block_device(dir))
		return;
	rmdir(dir);
	print_message("%s: neither %s nor the checkout is on a block device: block-io skipped\n", python->label,
		      test_tmpdir());
	skip();
}

/* The writer's folder and all in it. */
static void remove_block_io_dir(const char *dir)
{
	char command[PATH_MAX + 16];

	FORMAT(command, "rm -rf '%s'", dir);
	assert_int_equal(system(command), 0);
}

static void block_io(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	char dir[PATH_MAX], mojo[PATH_MAX], pprof[PATH_MAX], options[2 * PATH_MAX + 64], mode[PATH_MAX + 32];
	char out[4096];
	unsigned long long written = 0;
	struct split split;

	block_io_dir(python, "block-io", dir, sizeof(dir));
	FORMAT(mojo, "%s/io.mojo", dir);
	FORMAT(pprof, "%s/io.pb.gz", dir);
	FORMAT(options, "--event block-io -o %s -o %s", mojo, pprof);
	FORMAT(mode, "blockio %d %s", BLOCK_ROUNDS, dir);
	run_workload(python, options, mode, out, sizeof(out));
	if (sscanf(out, "wrote %llu", &written) != 1)
		fail_msg("the workload did not say what it wrote: '%s'", out);
	sum_split(mojo, 0, "fsync_writes", "blockio", &split);
	print_message("%s: wrote %.1f MB; block I/O %.1f MB in %zu samples, %.2f%% under fsync_writes\n",
		      python->label, (double)written / 1e6, split.total / 1e6, split.samples,
		      split.total ? 100 * split.first / split.total : 0.0);
	assert_true(split.first >= BLOCK_SHARE_MIN * split.total);
	assert_true(split.first >= BLOCK_BYTES_MIN * (double)written);
	assert_metadata(mojo, "event", "block-io");
	assert_metadata(mojo, "event_unit", "bytes");
	test_assert_pprof_sample_types(pprof, "block-io/count io/bytes");
	test_assert_top_ranks(mojo, "own block-io bytes (where the I/O was issued)", "fsync_writes");
	remove_block_io_dir(dir);
}

/* The same writer running before the profiler, -p: its bytes under fsync_writes. */
static void block_io_attach(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	char dir[PATH_MAX], mojo[PATH_MAX], args[PATH_MAX + 32], pid_text[16], err[8192];
	struct test_target target;
	struct split split;
	int status;

	block_io_dir(python, "block-io-attach", dir, sizeof(dir));
	FORMAT(mojo, "%s/io.mojo", dir);
	FORMAT(args, "blockio 0 %s", dir);
	target.pid = test_start_ready_script(python, SCRIPT, args, &target.out_fd);
	snprintf(pid_text, sizeof(pid_text), "%d", (int)target.pid);
	{
		char *argv[] = { (char *)pybpfprof_binary(), "-q", "--event", "block-io", "-p", pid_text, "-d", "4",
				 "-o", mojo, NULL };

		status = run_capture(argv, err, sizeof(err));
	}
	test_stop_target(&target);
	if (status != 0)
		fail_msg("%s: pybpfprof --event block-io -p exited %d: %s", python->label, status, err);
	sum_split(mojo, target.pid, "fsync_writes", "blockio", &split);
	print_message("%s: -p: block I/O %.1f MB in %zu samples, %.2f%% under fsync_writes\n", python->label,
		      split.total / 1e6, split.samples, split.total ? 100 * split.first / split.total : 0.0);
	assert_true(split.samples >= MIN_BLOCK_SAMPLES);
	assert_true(split.first >= BLOCK_SHARE_MIN * split.total);
	remove_block_io_dir(dir);
}

/*
 * block-io:PERIOD: direct_writes() queues DIRECT_WRITES bios of 4 KiB itself (O_DIRECT, no page
 * cache, no writeback thread between); about one in PERIOD is a sample weighing PERIOD times its
 * bytes, so the bytes under it are the bytes written, within the sampling's spread.
 */
static void block_io_period(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	char dir[PATH_MAX], mojo[PATH_MAX], options[PATH_MAX + 64], mode[PATH_MAX + 32], out[4096];
	unsigned long long written = 0;
	struct split split;

	block_io_dir(python, "block-io-period", dir, sizeof(dir));
	FORMAT(mojo, "%s/io.mojo", dir);
	FORMAT(options, "--event block-io:%d -o %s", PERIOD, mojo);
	FORMAT(mode, "blockdirect %d %s", DIRECT_WRITES, dir);
	run_workload(python, options, mode, out, sizeof(out));
	if (strstr(out, "no direct io"))
		fail_msg("%s: %s is on a block device but refused O_DIRECT", python->label, dir);
	if (sscanf(out, "direct %llu", &written) != 1)
		fail_msg("the workload did not say what it wrote: '%s'", out);
	sum_split(mojo, 0, "direct_writes", "blockdirect", &split);
	print_message("%s: wrote %llu bytes in %d direct writes; profile %.0f bytes (%+.2f%%) in %zu samples under "
		      "direct_writes, %.0f in all\n",
		      python->label, written, DIRECT_WRITES, split.first, 100 * (split.first / (double)written - 1),
		      split.first_samples, split.total);
	assert_true(written == (unsigned long long)DIRECT_WRITES * DIRECT_BLOCK);
	assert_true(split.metrics == PF_METRIC_MEMORY);
	/* each sample one bio of 4 KiB, standing for PERIOD of them */
	assert_true(split.first == (double)(split.first_samples * PERIOD * DIRECT_BLOCK));
	assert_true(fabs(split.first - (double)written) <= BLOCK_PERIOD_TOLERANCE * (double)written);
	assert_metadata(mojo, "event_period", "10");
	test_assert_top_ranks(mojo, "own block-io bytes (where the I/O was issued)", "direct_writes");
	remove_block_io_dir(dir);
}

/* ---- the command line ---- */

/* Names as this machine numbers them, the calls :bytes takes, the list suggestions come from. */
static void names(void **state)
{
	const char *known[PBP_SYSCALL_MAX];
	size_t count = syscall_known_names(known, PBP_SYSCALL_MAX);
	bool write_known = false;

	(void)state;
	assert_int_equal(syscall_number("write"), SYS_write);
	assert_int_equal(syscall_number("openat"), SYS_openat);
	assert_int_equal(syscall_number("futex"), SYS_futex);
	assert_int_equal(syscall_number("no_such_call"), -ENOENT);
	/* a 32-bit architecture's call, which x86_64 has not */
	assert_int_equal(syscall_number("socketcall"), -ENOENT);
	assert_int_equal(syscall_number_compat_only("write"), -ENOENT);
	assert_int_equal(syscall_number_compat_only("no_such_call"), -ENOENT);
	assert_true(syscall_returns_bytes("write") && syscall_returns_bytes("recvfrom"));
	assert_false(syscall_returns_bytes("openat") || syscall_returns_bytes("futex"));
	assert_true(count > 300);
	for (size_t i = 0; i < count; i++)
		write_known |= strcmp(known[i], "write") == 0;
	assert_true(write_known);
#if defined(__x86_64__)
	{
		/* i386's table beside: write is 4 there (x86_64's stat), openat 295 */
		struct syscall_filter filter = { 0 };

		syscall_filter_add_ia32(&filter, "write");
		syscall_filter_add_ia32(&filter, "openat");
		assert_true(filter.mask_ia32[0] == 1ull << 4);
		assert_true(filter.mask_ia32[295 / 64] == 1ull << (295 % 64));
		/* i386's own: socketcall 102 (x86_64's getuid), _llseek 140, mmap2 192 */
		assert_int_equal(syscall_number_compat_only("socketcall"), 102);
		assert_int_equal(syscall_number_compat_only("_llseek"), 140);
		assert_int_equal(syscall_number_compat_only("mmap2"), 192);
	}
#endif
}

static void mistakes(void **state)
{
	static const struct {
		const char *event, *period, *said;
	} cases[] = {
		{ "syscall:wrte", NULL, "unknown system call 'wrte' in --event syscall:wrte; did you mean write?" },
		{ "syscall:write,opneat", NULL, "did you mean openat?" },
		{ "syscall:xyzzyq", NULL, "unknown system call 'xyzzyq'" },
		{ "syscall", NULL, "--event syscall needs the calls" },
		{ "syscall:openat:bytes", NULL, "openat returns no bytes moved" },
		{ "syscall:write:slow", NULL, "unknown weight 'slow'" },
		{ "off-cpu", "5", "--event-period is for perf events" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *argv[] = { (char *)pybpfprof_binary(), "--event", (char *)cases[i].event, "-d", "1",
				 cases[i].period ? "--event-period" : NULL, (char *)cases[i].period, NULL };
		char out[1024], err[2048];
		const char *newline;

		assert_int_equal(run_capture_both(argv, out, sizeof(out), err, sizeof(err)), EXIT_STATUS_USAGE);
		if (!strstr(err, cases[i].said))
			fail_msg("--event %s: expected '%s' in '%s'", cases[i].event, cases[i].said, err);
		newline = strchr(err, '\n');
		if (!newline || newline[1])
			fail_msg("--event %s: not one line: '%s'", cases[i].event, err);
	}
}

int main(void)
{
	static const struct test_per_python kinds[] = {
		{ "counts_", counts }, { "bytes_", bytes }, { "latency_", latency }, { "attach_", attach }
	};
	static const struct test_per_python once[] = { { "whole_host_", whole_host },
						       { "block_io_", block_io },
						       { "block_io_attach_", block_io_attach },
						       { "block_io_period_", block_io_period },
						       { "period_counts_", period_counts },
						       { "period_bytes_", period_bytes },
						       { "compat_calls_", compat_calls },
						       { "compat_only_calls_", compat_only_calls } };
	static const char *const one_label[] = { ONE_PYTHON };
	static const struct CMUnitTest cli_tests[] = { cmocka_unit_test(names), cmocka_unit_test(mistakes) };
	int failed;

	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	failed = cmocka_run_group_tests_name("test_syscalls_cli", cli_tests, NULL, NULL);
	python_count = test_pythons(pythons, MAX_PYTHONS);
	failed += test_run_per_python("test_syscalls", syscall_labels, sizeof(syscall_labels) / sizeof(syscall_labels[0]),
				      kinds, sizeof(kinds) / sizeof(kinds[0]));
	return failed + test_run_per_python("test_syscalls_host", one_label, 1, once, sizeof(once) / sizeof(once[0]));
}
