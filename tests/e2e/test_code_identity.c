// SPDX-License-Identifier: MIT
/*
 * Freed and reused code objects are never misnamed (real BPF, root), on every
 * supported interpreter on the machine. tests/scripts/code_churn.py compiles,
 * calls and frees thousands of functions gen_N of one shape with one globals dict,
 * so that each new function's code object (and often its name and file strings)
 * lands where an earlier one was; it logs when each call started and ended on
 * CLOCK_MONOTONIC, the clock BPF stamps samples with. Userspace names a (code
 * address, identity checksum) pair once, when it first sees it: if BPF's identity
 * did not tell a reused object from the one before it, the new function's samples
 * would carry an old name. So no sample may name a function that had ended when
 * the sample was taken (1 ms slack), and no sample taken well inside a call may
 * name an earlier function (a consumer too late to read a freed object leaves the
 * frame unresolved: that is allowed, and counted). A name from the future cannot
 * come from a reused object (the later function did not exist yet when BPF read
 * the frame): such a sample was placed on the wrong side of a call's boundary
 * (a clock read late on a loaded machine), and a few are allowed and counted, as
 * are samples inside a call in the script's own clock reading.
 */
#include "testlib.h"

#include "formats/format_registry.h"
#include "profile/profile.h"
#include "util/array.h"

#include <inttypes.h>

#define SCRIPT "code_churn.py"
#define CHURN_SECONDS "7" /* the script's churn: longer than the recording, which starts after it */
#define RECORD_SECONDS "5"
#define RATE "1000"
#define SLACK_US 1000     /* clock reading vs call boundary; a stale name is >= 3 ms (one call) away */
#define NAMED_MIN 500     /* gen samples that must carry a name: the check is not vacuous */
#define MISNAMED_SHOWN 5
#define DISPLACED_MAX_PERCENT 2 /* samples on the wrong side of a boundary, of those inside calls */
/* Gen frames whose stack is cut right above them, of those named: a sample in the few
 * instructions where 3.12 has made a new frame current but not linked it yet (bpf/frame_walk.h's
 * pbp_leaf_link_stale) keeps the leaf and says the rest could not be read. */
#define CUT_MAX_PERCENT 1
#define MAX_PYTHONS 32
#define GEN_PREFIX "gen_"
#define DRIVER "churn"        /* the script's function that calls every gen_N */
#define DRIVER_CALLER "main"
#define UNRESOLVED "<unresolved>" /* sample_resolve's name for a frame it could not name */

static const char *const code_labels[] = { "2.7", "3.8", "3.11-static", "3.12", "3.13", "3.14", "3.15" };

static struct test_python pythons[MAX_PYTHONS];
static size_t python_count;

/* ---- the script's log: when each gen_N ran ---- */

struct gen_call {
	uint64_t start_us; /* before the call: the key the search by time uses */
	uint64_t end_us;   /* after it returned */
	long number;       /* N of gen_N */
};

struct gen_log {
	struct gen_call *calls; /* in call order: by number and by time */
	size_t count, capacity;
	long first_number;
};

/* Everything the script prints after "ready", to its end. */
static char *read_rest(int fd)
{
	size_t used = 0, capacity = 0;
	char *text = NULL;
	ssize_t got;

	do {
		if (ARRAY_RESERVE(text, capacity, used + 4096 + 1))
			fail_msg("out of memory for the script's log");
		got = read(fd, text + used, 4096);
		if (got > 0)
			used += (size_t)got;
	} while (got > 0 || (got < 0 && errno == EINTR));
	text[used] = 0;
	return text;
}

/* "N START_US END_US" lines closed by "end". */
static void parse_log(const char *label, char *text, struct gen_log *log)
{
	char *save = NULL;
	bool ended = false;

	memset(log, 0, sizeof(*log));
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct gen_call call;

		if (strcmp(line, "end") == 0) {
			ended = true;
			break;
		}
		if (sscanf(line, "%ld %" SCNu64 " %" SCNu64, &call.number, &call.start_us, &call.end_us) != 3)
			continue; /* the rest of the "ready" line */
		if (log->count && call.number != log->calls[log->count - 1].number + 1)
			fail_msg("%s: the script's log skips from gen_%ld to gen_%ld", label,
				 log->calls[log->count - 1].number, call.number);
		if (ARRAY_RESERVE(log->calls, log->capacity, log->count + 1))
			fail_msg("out of memory for the script's log");
		log->calls[log->count++] = call;
	}
	if (!ended || log->count == 0)
		fail_msg("%s: the script's log is incomplete (%zu calls)", label, log->count);
	log->first_number = log->calls[0].number;
}

/* The call of gen_<number>, NULL if the log has none. */
static const struct gen_call *call_numbered(const struct gen_log *log, long number)
{
	if (number < log->first_number || (size_t)(number - log->first_number) >= log->count)
		return NULL;
	return &log->calls[number - log->first_number];
}

/* The last call started at or before time_us, NULL if none was. */
static const struct gen_call *call_started_by(const struct gen_log *log, uint64_t time_us)
{
	return array_last_at_or_below_u64(log->calls, log->count, sizeof(*log->calls),
					  offsetof(struct gen_call, start_us), time_us);
}

/* The call running at time_us with SLACK_US to spare on both sides, NULL if none is. */
static const struct gen_call *call_surely_running(const struct gen_log *log, uint64_t time_us)
{
	const struct gen_call *call = call_started_by(log, time_us - SLACK_US);

	return call && time_us + SLACK_US <= call->end_us ? call : NULL;
}

/* ---- what the profile says ---- */

struct name_tally {
	size_t samples;
	size_t gen_named;      /* frames named gen_N */
	size_t gen_unnamed;    /* unresolved frames the driver called */
	size_t in_calls;       /* samples surely inside a call */
	size_t misnamed;       /* samples naming a function that had ended (a reused object's old name) */
	size_t displaced;      /* samples naming a function that had not started yet: boundary noise */
	size_t other_callee;   /* samples inside a call whose callee is not a gen_N (the clock reading) */
	size_t wrong_callers;  /* a gen_N whose callers are not the driver and its caller */
	size_t cut_callers;    /* a gen_N whose stack is cut right above it: its callers unknown, said so */
	char shown[MISNAMED_SHOWN][160];
	char shown_callers[MISNAMED_SHOWN][512]; /* the stacks of the first few with wrong callers */
	bool this_sample_misnamed; /* counted once however many of its frames are wrong */
};

/* The index of the Python frame before frame `from` (its caller), or -1. */
static long python_caller(const struct pf_sample *sample, long from)
{
	for (long i = from - 1; i >= 0; i--)
		if (sample->frames[i].kind == PF_FRAME_PYTHON)
			return i;
	return -1;
}

/* The index of the Python frame after frame `from` (its callee), or -1. */
static long python_callee(const struct pf_sample *sample, long from)
{
	for (size_t i = (size_t)from + 1; i < sample->frame_count; i++)
		if (sample->frames[i].kind == PF_FRAME_PYTHON)
			return (long)i;
	return -1;
}

static bool frame_named(const struct pf_sample *sample, long index, const char *name)
{
	return index >= 0 && strcmp(sample->frames[index].name, name) == 0;
}

/* Counts the sample once, describing the first few with the call that really ran then. */
static void note_misnamed(struct name_tally *tally, const struct gen_log *log, const struct pf_sample *sample,
			  const char *name)
{
	const struct gen_call *ran = call_started_by(log, sample->timestamp_us);

	if (tally->this_sample_misnamed)
		return;
	tally->this_sample_misnamed = true;
	if (tally->misnamed < MISNAMED_SHOWN) {
		if (ran && sample->timestamp_us <= ran->end_us)
			snprintf(tally->shown[tally->misnamed], sizeof(tally->shown[0]),
				 "%s at %" PRIu64 " us, in gen_%ld's call [%" PRIu64 ", %" PRIu64 "]", name,
				 sample->timestamp_us, ran->number, ran->start_us, ran->end_us);
		else
			snprintf(tally->shown[tally->misnamed], sizeof(tally->shown[0]),
				 "%s at %" PRIu64 " us, between calls", name, sample->timestamp_us);
	}
	tally->misnamed++;
}

/* Counts the frame, keeping the first few samples' stacks, root first, to say what called it. */
static void note_wrong_callers(struct name_tally *tally, const struct pf_sample *sample)
{
	if (tally->wrong_callers < MISNAMED_SHOWN) {
		char *text = tally->shown_callers[tally->wrong_callers];
		size_t size = sizeof(tally->shown_callers[0]), used = 0;

		used += (size_t)snprintf(text, size, "at %" PRIu64 " us:", sample->timestamp_us);
		for (size_t i = 0; i < sample->frame_count && used < size; i++)
			used += (size_t)snprintf(text + used, size - used, " %s%s",
						 sample->frames[i].kind == PF_FRAME_PYTHON ? "" : "~",
						 sample->frames[i].name);
	}
	tally->wrong_callers++;
}

/* A frame named gen_N: stamped within gen_N's call, called by the driver from its caller. */
static void check_gen_frame(struct name_tally *tally, const struct gen_log *log, const struct pf_sample *sample,
			    long index)
{
	const char *name = sample->frames[index].name;
	const struct gen_call *call = call_numbered(log, strtol(name + strlen(GEN_PREFIX), NULL, 10));
	long caller = python_caller(sample, index);

	tally->gen_named++;
	if (!call || sample->timestamp_us > call->end_us + SLACK_US)
		note_misnamed(tally, log, sample, name);
	else if (sample->timestamp_us + SLACK_US < call->start_us)
		tally->displaced++;
	if (caller < 0 && sample->frames[0].kind == PF_FRAME_INVALID)
		tally->cut_callers++;
	else if (!frame_named(sample, caller, DRIVER) ||
		 !frame_named(sample, python_caller(sample, caller), DRIVER_CALLER))
		note_wrong_callers(tally, sample);
}

/* A sample surely inside gen_N's call: what the driver calls is gen_N, unnamed, or not a gen_ function. */
static void check_call_callee(struct name_tally *tally, const struct pf_sample *sample, const struct gen_call *running,
			      long driver)
{
	long callee = python_callee(sample, driver);
	char expected[32];

	tally->in_calls++;
	if (callee < 0)
		return; /* the walk lost the leaf frame: no name to check */
	snprintf(expected, sizeof(expected), GEN_PREFIX "%ld", running->number);
	if (frame_named(sample, callee, expected) || frame_named(sample, callee, UNRESOLVED))
		return;
	/* A gen_N named is judged by check_gen_frame: an earlier one is misnamed there. */
	if (strncmp(sample->frames[callee].name, GEN_PREFIX, strlen(GEN_PREFIX)) != 0)
		tally->other_callee++;
}

static void tally_sample(struct name_tally *tally, const struct gen_log *log, const struct pf_sample *sample)
{
	const struct gen_call *running = call_surely_running(log, sample->timestamp_us);
	long driver = -1;

	tally->samples++;
	tally->this_sample_misnamed = false;
	for (size_t i = 0; i < sample->frame_count; i++) {
		const struct pf_frame *frame = &sample->frames[i];

		if (frame->kind != PF_FRAME_PYTHON)
			continue;
		if (strcmp(frame->name, DRIVER) == 0 && driver < 0)
			driver = (long)i;
		if (strncmp(frame->name, GEN_PREFIX, strlen(GEN_PREFIX)) == 0)
			check_gen_frame(tally, log, sample, (long)i);
	}
	if (driver < 0)
		return;
	tally->gen_unnamed += frame_named(sample, python_callee(sample, driver), UNRESOLVED);
	if (running)
		check_call_callee(tally, sample, running, driver);
}

static void tally_file(const char *path, const struct gen_log *log, struct name_tally *tally)
{
	struct pf_reader *reader;
	struct pf_sample sample;
	int got;

	memset(tally, 0, sizeof(*tally));
	reader = test_open_profile(path);
	/* Tachyon's reader gives each sample its absolute stamp (the file's start_time_us plus
	 * the deltas), on the clock of the script's log. */
	while ((got = pf_reader_next_sample(reader, &sample)) > 0)
		tally_sample(tally, log, &sample);
	if (got < 0)
		fail_msg("%s: %s", path, pf_reader_error(reader));
	pf_reader_close(reader);
}

/* ---- the test ---- */

static const struct test_python *wanted_python(void **state)
{
	return test_wanted_python(state, pythons, python_count);
}

static void check_names(const char *label, const struct gen_log *log, const struct name_tally *tally)
{
	print_message("%s: %zu samples on the wrong side of a call boundary, %zu inside a call in something "
		      "else (the clock reading)\n", label, tally->displaced, tally->other_callee);
	if (tally->displaced * 100 > tally->in_calls * DISPLACED_MAX_PERCENT)
		fail_msg("%s: %zu of %zu samples name a function that had not started yet: the timeline is off",
			 label, tally->displaced, tally->in_calls);
	print_message("%s: %zu calls logged, %zu samples, %zu inside calls; gen frames: %zu named, %zu unnamed; "
		      "%zu misnamed, %zu with wrong callers\n",
		      label, log->count, tally->samples, tally->in_calls, tally->gen_named, tally->gen_unnamed,
		      tally->misnamed, tally->wrong_callers);
	for (size_t i = 0; i < tally->misnamed && i < MISNAMED_SHOWN; i++)
		print_message("%s: misnamed: %s\n", label, tally->shown[i]);
	for (size_t i = 0; i < tally->wrong_callers && i < MISNAMED_SHOWN; i++)
		print_message("%s: wrong callers: %s\n", label, tally->shown_callers[i]);
	if (tally->misnamed)
		fail_msg("%s: %zu samples misnamed (a freed code object's name given to its successor)", label,
			 tally->misnamed);
	if (tally->wrong_callers)
		fail_msg("%s: %zu gen frames not called by " DRIVER " from " DRIVER_CALLER, label, tally->wrong_callers);
	print_message("%s: %zu gen frames in stacks cut right above them\n", label, tally->cut_callers);
	if (tally->cut_callers * 100 > tally->gen_named * CUT_MAX_PERCENT)
		fail_msg("%s: %zu of %zu gen frames have no callers: the walk stops too often", label,
			 tally->cut_callers, tally->gen_named);
	if (tally->gen_named < NAMED_MIN)
		fail_msg("%s: only %zu gen frames named (want %d)", label, tally->gen_named, NAMED_MIN);
}

/* The counts of one round added to the run's (misnamed ones were said with the round's). */
static void tally_add(struct name_tally *total, const struct name_tally *round)
{
	total->samples += round->samples;
	total->gen_named += round->gen_named;
	total->gen_unnamed += round->gen_unnamed;
	total->in_calls += round->in_calls;
	total->misnamed += round->misnamed;
	total->displaced += round->displaced;
	total->other_callee += round->other_callee;
	total->wrong_callers += round->wrong_callers;
	total->cut_callers += round->cut_callers;
}

/* One churn of the script, recorded: its tally, and the calls it logged. */
static void churn_round(const struct test_python *python, int round, struct name_tally *tally, size_t *calls)
{
	char mojo[PATH_MAX], tachyon[PATH_MAX], *rest;
	struct test_target target;
	struct gen_log log;
	int status;

	FORMAT(mojo, "%s/churn-%s-%d.mojo", test_tmpdir(), python->label, round);
	FORMAT(tachyon, "%s/churn-%s-%d.bin", test_tmpdir(), python->label, round);
	target.pid = test_start_ready_script(python, SCRIPT, CHURN_SECONDS, &target.out_fd);
	test_record_pid(python->label, "cpu", RATE, target.pid, RECORD_SECONDS, mojo, tachyon);
	rest = read_rest(target.out_fd);
	close(target.out_fd);
	status = test_wait_status(target.pid);
	if (status != 0)
		fail_msg("%s: %s exited %d", python->label, SCRIPT, status);
	parse_log(python->label, rest, &log);
	free(rest);
	tally_file(tachyon, &log, tally);
	*calls = log.count;
	/* a misnamed sample fails the test with its round's details */
	if (tally->misnamed || tally->wrong_callers)
		check_names(python->label, &log, tally);
	free(log.calls);
}

/* Rounds until NAMED_MIN gen frames are named: a loaded machine gives the script less CPU in a
 * round, and the check must not be vacuous, nor fail for want of samples. */
#define CHURN_ROUNDS_MAX 8

static void code_churn_names(void **state)
{
	const struct test_python *python = wanted_python(state);
	struct name_tally total = { 0 };
	struct gen_log calls = { 0 };

	for (int round = 0; round < CHURN_ROUNDS_MAX && total.gen_named < NAMED_MIN; round++) {
		struct name_tally tally;
		size_t count;

		churn_round(python, round, &tally, &count);
		tally_add(&total, &tally);
		calls.count += count;
	}
	check_names(python->label, &calls, &total);
}

int main(void)
{
	static const struct test_per_python kinds[] = { { "code_churn_", code_churn_names } };

	python_count = test_pythons(pythons, MAX_PYTHONS);
	return test_run_per_python("test_code_identity", code_labels, ARRAY_SIZE(code_labels), kinds,
				   ARRAY_SIZE(kinds));
}
