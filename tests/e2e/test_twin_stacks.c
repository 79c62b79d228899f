// SPDX-License-Identifier: MIT
/*
 * A code identity BPF takes from the previous record never names another process's function
 * (real BPF, root). A walk may take a frame's identity from the record before it on the same
 * CPU where the code address at that index is the same (bpf/frame_walk.h), but only in the hot
 * epoch that record was written in: same process, interpreter, image and code-object counter.
 * tests/scripts/twin_stacks.py run twice, ASLR off and one hash seed, with prefixes of one
 * length, makes two processes whose deep stacks of distinct functions sit at the same code
 * addresses and are different code (aaaa_level_N against bbbb_level_N). Both are pinned to one
 * CPU, so that its records alternate between them, and profiled together: every sample of
 * each must name only its own functions (a frame with the other's identity would name the
 * other's function, or none when its process's object does not match it).
 */
#include "testlib.h"

#include "formats/format_registry.h"
#include "profile/profile.h"
#include "util/array.h"

#include <inttypes.h>
#include <sys/utsname.h>

#define SCRIPT "twin_stacks.py"
#define DEPTH "200"       /* levels of each twin: several of BPF's window copies */
#define RATE "1000"
/* Each twin's CPU time the recording lasts (some 1500 samples of each at 1 kHz, fewer as the
 * profiler starts), however loaded the machine; and a bound on its wall time. */
#define TWIN_CPU_MS 1500
#define RECORD_WALL_MS_MAX 120000
#define SAMPLES_MIN 200   /* of each twin: the check is not vacuous */
#define SWITCHES_MIN 20   /* records of one twin right after the other's, on their one CPU */
#define SHOWN_MAX 5
#define MAX_PYTHONS 32
#define READY_BYTES 128

static const char *const labels[] = { "3.12", "3.13", "3.14", "3.15" };
static const char *const prefixes[2] = { "aaaa", "bbbb" };
/* The frames both twins run, the same code in each. */
static const char *const shared_frames[] = { "<module>", "main" };

static struct test_python pythons[MAX_PYTHONS];
static size_t python_count;

struct twin {
	struct test_target target;
	char ready[READY_BYTES]; /* "ready LEAF_CODE OUTERMOST_CODE": where its code objects are */
};

/* The twin with prefix, its stack built, pinned to cpu with ASLR off. */
static void start_twin(const struct test_python *python, int cpu, const char *prefix, struct twin *twin)
{
	struct test_python pinned = *python;
	struct utsname host;
	char args[64];

	if (uname(&host) != 0)
		fail_msg("uname: %s", strerror(errno));
	FORMAT(pinned.command, "setarch %s -R taskset -c %d %s", host.machine, cpu, python->command);
	FORMAT(args, "%s " DEPTH, prefix);
	setenv("PYTHONHASHSEED", "0", 1);
	twin->target.pid = test_start_ready_script_line(&pinned, SCRIPT, args, &twin->target.out_fd, twin->ready,
						       sizeof(twin->ready));
	unsetenv("PYTHONHASHSEED");
	twin->ready[strcspn(twin->ready, "\n")] = 0;
}

/* What the profile says of the twins. */
struct twin_tally {
	size_t samples[2];
	size_t foreign;  /* samples with a frame that is not their own process's */
	size_t switches; /* in time order, a sample of one twin right after one of the other */
	char shown[SHOWN_MAX][256];
};

struct stamp {
	uint64_t timestamp_us;
	int twin;
};

static int compare_stamps(const void *a, const void *b)
{
	const struct stamp *x = a, *y = b;

	return x->timestamp_us < y->timestamp_us ? -1 : x->timestamp_us > y->timestamp_us;
}

/* Whether a Python frame of twin's process is one of its own functions. */
static bool own_frame(const char *name, int twin)
{
	size_t prefix_len = strlen(prefixes[twin]);

	for (size_t i = 0; i < ARRAY_SIZE(shared_frames); i++)
		if (strcmp(name, shared_frames[i]) == 0)
			return true;
	return strncmp(name, prefixes[twin], prefix_len) == 0 && name[prefix_len] == '_';
}

static void note_foreign(struct twin_tally *tally, const struct pf_sample *sample, const char *name)
{
	if (tally->foreign < SHOWN_MAX)
		snprintf(tally->shown[tally->foreign], sizeof(tally->shown[0]), "thread %" PRIu64 " at %" PRIu64 " us: %s",
			 sample->tid, sample->timestamp_us, name);
	tally->foreign++;
}

static void tally_profile(const char *path, const pid_t pids[2], struct twin_tally *tally)
{
	struct pf_reader *reader = test_open_profile(path);
	struct stamp *stamps = NULL;
	size_t stamp_count = 0, stamp_capacity = 0;
	struct pf_sample sample;
	int got;

	memset(tally, 0, sizeof(*tally));
	while ((got = pf_reader_next_sample(reader, &sample)) > 0) {
		/* Each twin runs only its main thread, whose id is its pid (Tachyon keeps threads). */
		int twin = sample.tid == (uint64_t)pids[0] ? 0 : sample.tid == (uint64_t)pids[1] ? 1 : -1;

		if (twin < 0)
			continue;
		tally->samples[twin]++;
		for (size_t i = 0; i < sample.frame_count; i++)
			if (sample.frames[i].kind == PF_FRAME_PYTHON && !own_frame(sample.frames[i].name, twin)) {
				note_foreign(tally, &sample, sample.frames[i].name);
				break;
			}
		if (ARRAY_RESERVE(stamps, stamp_capacity, stamp_count + 1))
			fail_msg("out of memory for the samples' stamps");
		stamps[stamp_count++] = (struct stamp){ sample.timestamp_us, twin };
	}
	if (got < 0)
		fail_msg("%s: %s", path, pf_reader_error(reader));
	pf_reader_close(reader);
	if (stamp_count)
		qsort(stamps, stamp_count, sizeof(*stamps), compare_stamps);
	for (size_t i = 1; i < stamp_count; i++)
		tally->switches += stamps[i].twin != stamps[i - 1].twin;
	free(stamps);
}

/* Both twins recorded into tachyon until each has run TWIN_CPU_MS since the profiler started
 * (or RECORD_WALL_MS_MAX passed), then stopped as a user stops it; the profiler's exit status. */
static int record_twins(char pid_text[2][16], const pid_t pids[2], const char *tachyon, const char *err_path)
{
	char *argv[] = { (char *)pybpfprof_binary(), "-q", "-F", RATE, "-p", pid_text[0], "-p", pid_text[1],
			 "-o", (char *)tachyon, NULL };
	uint64_t cpu_before[2] = { test_cpu_ms(pids[0]), test_cpu_ms(pids[1]) };
	pid_t profiler = test_spawn(argv, NULL, err_path);

	assert_true(profiler > 0);
	for (int waited_ms = 0; waited_ms < RECORD_WALL_MS_MAX; waited_ms += 100) {
		if (test_cpu_ms(pids[0]) - cpu_before[0] >= TWIN_CPU_MS &&
		    test_cpu_ms(pids[1]) - cpu_before[1] >= TWIN_CPU_MS)
			break;
		usleep(100 * 1000);
	}
	kill(profiler, SIGINT);
	return test_wait_status(profiler);
}

static void twin_stacks(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	char tachyon[PATH_MAX], err_path[PATH_MAX], pid_text[2][16];
	struct twin twins[2];
	struct twin_tally tally;
	pid_t pids[2];
	bool same_addresses;
	int status;

	for (int i = 0; i < 2; i++) {
		start_twin(python, 0, prefixes[i], &twins[i]);
		pids[i] = twins[i].target.pid;
		snprintf(pid_text[i], sizeof(pid_text[i]), "%d", (int)pids[i]);
	}
	FORMAT(tachyon, "%s/twins-%s.bin", test_tmpdir(), python->label);
	FORMAT(err_path, "%s/twins-%s.err", test_tmpdir(), python->label);
	status = record_twins(pid_text, pids, tachyon, err_path);
	same_addresses = strcmp(twins[0].ready, twins[1].ready) == 0;
	for (int i = 0; i < 2; i++)
		test_stop_target(&twins[i].target);
	if (status != 0) {
		size_t len = 0;
		char *text = (char *)read_whole_file(err_path, &len);

		fail_msg("%s: pybpfprof -p %s -p %s exited %d: %s", python->label, pid_text[0], pid_text[1], status,
			 text ? text : "");
	}
	/* Otherwise no identity of one could pass for the other's: the test would prove nothing. */
	if (!same_addresses)
		fail_msg("%s: the twins' code objects are not at the same addresses ('%s' against '%s')", python->label,
			 twins[0].ready, twins[1].ready);
	tally_profile(tachyon, pids, &tally);
	print_message("%s: %zu and %zu samples, %zu switches between the twins, %zu with a frame not their own\n",
		      python->label, tally.samples[0], tally.samples[1], tally.switches, tally.foreign);
	for (size_t i = 0; i < tally.foreign && i < SHOWN_MAX; i++)
		print_message("%s: not its own: %s\n", python->label, tally.shown[i]);
	if (tally.foreign)
		fail_msg("%s: %zu samples name a function their process does not have", python->label, tally.foreign);
	if (tally.samples[0] < SAMPLES_MIN || tally.samples[1] < SAMPLES_MIN)
		fail_msg("%s: only %zu and %zu samples of the twins (want %d each)", python->label, tally.samples[0],
			 tally.samples[1], SAMPLES_MIN);
	if (tally.switches < SWITCHES_MIN)
		fail_msg("%s: only %zu switches between the twins (want %d)", python->label, tally.switches,
			 SWITCHES_MIN);
}

int main(void)
{
	static const struct test_per_python kinds[] = { { "twin_stacks_", twin_stacks } };

	python_count = test_pythons(pythons, MAX_PYTHONS);
	return test_run_per_python("test_twin_stacks", labels, ARRAY_SIZE(labels), kinds, ARRAY_SIZE(kinds));
}
