// SPDX-License-Identifier: MIT
/*
 * Subinterpreters end to end (real BPF, root): code running in a
 * subinterpreter is sampled in that interpreter, with its id (MOJO's iid,
 * Tachyon's thread iid). The target (tests/scripts/subinterp_threads.py)
 * has a main thread that alternates between main_spin in the main
 * interpreter and sub_spin in subinterpreter A (a thread that switches
 * interpreters, with a new thread state of A at every switch), a thread
 * spinning in sub_thread_spin in subinterpreter B and one sleeping in
 * sub_sleep in subinterpreter C. Recorded in cpu and in wall mode, every
 * sample in one of those functions carries its interpreter's id (0 for the
 * main one), both phases of the main thread are there, and so are the other
 * threads (the sleeper in wall mode only); CPython 3.15 replays the Tachyon
 * files. In wall mode the main thread's main_spin holds the main interpreter's
 * GIL (attached after the subinterpreters were made, which come first in the
 * interpreter list).
 *
 * 3.12's _xxsubinterpreters runs a thread's code on the thread state the
 * interpreter's creator made, which carries the creator's thread id: no
 * thread state says which thread runs in B or C, so 3.12 runs the main
 * thread alone (bpf/thread_state.h tells its two thread states apart).
 */
#include "testlib.h"

#include "formats/format_registry.h"
#include "profile/profile.h"

#define SCRIPT "subinterp_threads.py"
#define MAX_PYTHONS 32
/* cpu mode samples CPU time, which a busy machine gives the spinners little of (19 samples in 2 s
 * at 100 Hz beside two CPU hogs): 1 kHz there; wall mode samples every interval whatever the load. */
#define CPU_RATE "1000"
#define WALL_RATE "100"
#define SECONDS "2"
/* At 100 Hz for 2 s each phase of the main thread has about 100 samples in wall mode, in cpu mode
 * 25 to 100 (the host is busy), a spinning thread up to 200. */
#define SAMPLES_MIN 10

static const char *const subinterp_labels[] = { "3.12", "3.13", "3.14", "3.15" };

static struct test_python pythons[MAX_PYTHONS];
static size_t python_count;

enum { MAIN_SPIN, SUB_SPIN, SUB_THREAD_SPIN, SUB_SLEEP, SPIN_KINDS };

static const char *const spin_functions[SPIN_KINDS] = { "main_spin", "sub_spin", "sub_thread_spin", "sub_sleep" };

/* The script's interpreters: which id each function must carry. */
struct expected_iids {
	uint32_t iid[SPIN_KINDS];
	bool alone;  /* the main thread only (3.12) */
};

struct iid_tally {
	size_t samples;
	size_t in[SPIN_KINDS];        /* samples whose innermost Python frame is that function, right iid */
	size_t wrong_iid[SPIN_KINDS]; /* ... with another interpreter's id */
	size_t main_thread_elsewhere; /* main_spin or sub_spin in a thread other than the main one */
	size_t main_spin_has_gil;     /* main_spin samples holding the (main interpreter's) GIL */
	uint32_t first_wrong_iid;
};

static const struct test_python *wanted_python(void **state)
{
	return test_wanted_python(state, pythons, python_count);
}

/* Starts the script and reads the interpreter ids from its "ready A [B C]" line. */
static void start_target(const struct test_python *python, bool alone, struct test_target *target,
			 struct expected_iids *expected)
{
	char line[128];
	unsigned a = 0, b = 0, c = 0;
	int got;

	target->pid = test_start_ready_script_line(python, SCRIPT, alone ? "alone" : "all", &target->out_fd, line,
						   sizeof(line));
	got = sscanf(line, "ready %u %u %u", &a, &b, &c);
	if (got != (alone ? 1 : 3) || a == 0 || (!alone && (b == 0 || c == 0)))
		fail_msg("%s: the script said '%s'", python->label, line);
	*expected = (struct expected_iids){ .iid = { 0, a, b, c }, .alone = alone };
}

/* The function of the sample's innermost Python frame, as an index in spin_functions, or -1. */
static int spin_kind(const struct pf_sample *sample)
{
	for (size_t i = sample->frame_count; i-- > 0;) {
		if (sample->frames[i].kind != PF_FRAME_PYTHON)
			continue;
		for (int kind = 0; kind < SPIN_KINDS; kind++)
			if (strcmp(sample->frames[i].name, spin_functions[kind]) == 0)
				return kind;
		return -1;
	}
	return -1;
}

static void tally_iids(const char *path, pid_t main_tid, const struct expected_iids *expected, struct iid_tally *tally)
{
	struct pf_reader *reader;
	struct pf_sample sample;
	int got;

	memset(tally, 0, sizeof(*tally));
	reader = test_open_profile(path);
	while ((got = pf_reader_next_sample(reader, &sample)) > 0) {
		int kind = spin_kind(&sample);

		tally->samples++;
		if (kind < 0)
			continue;
		if (sample.iid != expected->iid[kind]) {
			if (!tally->wrong_iid[0] && !tally->wrong_iid[1] && !tally->wrong_iid[2] && !tally->wrong_iid[3])
				tally->first_wrong_iid = sample.iid;
			tally->wrong_iid[kind]++;
		} else {
			tally->in[kind]++;
		}
		tally->main_thread_elsewhere += (kind == MAIN_SPIN || kind == SUB_SPIN) && sample.tid != (uint64_t)main_tid;
		tally->main_spin_has_gil += kind == MAIN_SPIN && (sample.status & PF_STATUS_HAS_GIL);
	}
	if (got < 0)
		fail_msg("%s: %s", path, pf_reader_error(reader));
	pf_reader_close(reader);
}

static void assert_iids(const char *label, const char *mode, const char *path, const struct iid_tally *tally,
			const struct expected_iids *expected)
{
	print_message("%s %s %s: %zu samples: main_spin %zu, sub_spin %zu, sub_thread_spin %zu, sub_sleep %zu; "
		      "wrong iid %zu/%zu/%zu/%zu; main_spin holding the GIL %zu\n",
		      label, mode, strrchr(path, '.'), tally->samples, tally->in[MAIN_SPIN], tally->in[SUB_SPIN],
		      tally->in[SUB_THREAD_SPIN], tally->in[SUB_SLEEP], tally->wrong_iid[MAIN_SPIN],
		      tally->wrong_iid[SUB_SPIN], tally->wrong_iid[SUB_THREAD_SPIN], tally->wrong_iid[SUB_SLEEP],
		      tally->main_spin_has_gil);
	for (int kind = 0; kind < SPIN_KINDS; kind++)
		if (tally->wrong_iid[kind])
			fail_msg("%s %s: %zu samples in %s with another interpreter's id (first: %u, not %u)", label,
				 mode, tally->wrong_iid[kind], spin_functions[kind], tally->first_wrong_iid,
				 expected->iid[kind]);
	assert_int_equal(tally->main_thread_elsewhere, 0);
	/* both phases of the thread that switches interpreters */
	assert_true(tally->in[MAIN_SPIN] >= SAMPLES_MIN);
	assert_true(tally->in[SUB_SPIN] >= SAMPLES_MIN);
	if (expected->alone)
		return;
	assert_true(tally->in[SUB_THREAD_SPIN] >= SAMPLES_MIN);
	/* the sleeper is off CPU: cpu mode sees it only when it wakes */
	if (strcmp(mode, "wall") == 0)
		assert_true(tally->in[SUB_SLEEP] >= SAMPLES_MIN);
}

static void subinterp_iids(void **state)
{
	const struct test_python *python = wanted_python(state);
	static const char *const modes[] = { "cpu", "wall" }, *const rates[] = { CPU_RATE, WALL_RATE };
	char mojo[2][PATH_MAX], tachyon[2][PATH_MAX];
	bool alone = strcmp(python->label, "3.12") == 0;
	struct expected_iids expected;
	struct test_target target;

	if (alone)
		print_message("3.12: the main thread alone (_xxsubinterpreters runs other threads on thread states "
			      "that carry their interpreter's creator's thread id)\n");
	start_target(python, alone, &target, &expected);
	for (size_t m = 0; m < 2; m++) {
		FORMAT(mojo[m], "%s/subinterp-%s-%s.mojo", test_tmpdir(), modes[m], python->label);
		FORMAT(tachyon[m], "%s/subinterp-%s-%s.bin", test_tmpdir(), modes[m], python->label);
		test_record_pid(python->label, modes[m], rates[m], target.pid, SECONDS, mojo[m], tachyon[m]);
	}
	test_stop_target(&target);
	for (size_t m = 0; m < 2; m++) {
		struct iid_tally from_mojo, from_tachyon;

		tally_iids(mojo[m], target.pid, &expected, &from_mojo);
		tally_iids(tachyon[m], target.pid, &expected, &from_tachyon);
		assert_iids(python->label, modes[m], mojo[m], &from_mojo, &expected);
		assert_iids(python->label, modes[m], tachyon[m], &from_tachyon, &expected);
		assert_int_equal(from_mojo.samples, from_tachyon.samples);
		/* The GIL read is the main interpreter's, found at the end of the list although the
		 * subinterpreters came first: the main thread spinning alone in it holds it (Tachyon has
		 * the bit, MOJO not). */
		if (strcmp(modes[m], "wall") == 0 && from_tachyon.main_spin_has_gil < from_tachyon.in[MAIN_SPIN] * 9 / 10)
			fail_msg("%s: main_spin held the GIL in %zu of %zu wall samples", python->label,
				 from_tachyon.main_spin_has_gil, from_tachyon.in[MAIN_SPIN]);
		assert_cpython_accepts(tachyon[m], from_tachyon.samples);
	}
}

int main(void)
{
	static const struct test_per_python kinds[] = { { "subinterp_iids_", subinterp_iids } };

	python_count = test_pythons(pythons, MAX_PYTHONS);
	return test_run_per_python("test_subinterp", subinterp_labels,
				   sizeof(subinterp_labels) / sizeof(subinterp_labels[0]), kinds,
				   sizeof(kinds) / sizeof(kinds[0]));
}
