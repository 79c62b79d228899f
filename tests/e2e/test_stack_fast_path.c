// SPDX-License-Identifier: MIT
/*
 * BPF's trusted code identities never change a reported stack (real BPF, root). Where the
 * target's code-object counter is known (py_proc_config.code_stamp_addr), BPF takes a code
 * object's identity from its verified_code cache unread while the counter stands still;
 * PYBPFPROF_NO_CODE_STAMP turns that off, so every walk reads every code object. Both ways
 * profile tests/scripts/shifting_stacks.py, whose stack changes every few milliseconds, to a
 * depth that changes, through families of distinct functions that are compiled anew and freed
 * all the time. Every sample each way must be a stack the program can make: under main, one
 * family's levels from 0 on, one generation, contiguous, then spin(); and that generation must
 * have existed when the sample was taken (a stale identity of a freed code object whose
 * address a newer one took would name the older function after it was gone).
 */
#include "testlib.h"

#include "formats/format_registry.h"
#include "profile/profile.h"
#include "util/array.h"

#include <inttypes.h>

#define SCRIPT "shifting_stacks.py"
#define SCRIPT_CPU_SECONDS "3" /* the script's own CPU time: some 3000 samples however loaded */
#define RATE "1000"
#define LOG_BYTES (1u << 20) /* the script's log: some 40 bytes a generation, a few hundred of them */
#define SLACK_US 1000      /* clock reading vs a generation's birth or end */
#define CHAIN_MIN 300      /* samples in a family's chain, each way: the check is not vacuous */
#define DEPTHS_MIN 10      /* distinct chain depths among them: the stack really moved */
#define LEVELS 48          /* the script's LEVELS */
#define INVALID_SHOWN 5
#define MAX_PYTHONS 32
#define CALLER "main"
#define LEAF "spin"
#define UNRESOLVED "<unresolved>"

static const char *const labels[] = { "3.12", "3.13" };

static struct test_python pythons[MAX_PYTHONS];
static size_t python_count;

/* ---- the script's log: when each generation of each family existed ---- */

struct generation {
	long number;
	int family;
	uint64_t born_us, dropped_us;
};

struct generation_log {
	struct generation *items;
	size_t count, capacity;
};

/* "G F BORN_US DROPPED_US" lines closed by "end". */
static void parse_generations(const char *label, char *text, struct generation_log *log)
{
	char *save = NULL;
	bool ended = false;

	memset(log, 0, sizeof(*log));
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct generation item;

		if (strcmp(line, "end") == 0) {
			ended = true;
			break;
		}
		if (sscanf(line, "%ld %d %" SCNu64 " %" SCNu64, &item.number, &item.family, &item.born_us,
			   &item.dropped_us) != 4)
			continue;
		if (ARRAY_RESERVE(log->items, log->capacity, log->count + 1))
			fail_msg("out of memory for the script's log");
		log->items[log->count++] = item;
	}
	if (!ended || log->count == 0)
		fail_msg("%s: the script's log is incomplete (%zu generations)", label, log->count);
}

static const struct generation *generation_of(const struct generation_log *log, long number, int family)
{
	for (size_t i = 0; i < log->count; i++)
		if (log->items[i].number == number && log->items[i].family == family)
			return &log->items[i];
	return NULL;
}

/* ---- judging the samples ---- */

struct stack_tally {
	size_t samples, chains, unresolved, invalid;
	bool depth_seen[LEVELS + 1];
	char shown[INVALID_SHOWN][256];
};

struct chain_frame {
	long generation;
	int family, level;
};

/* Whether the frame is g<G>_f<F>_<k>, filling out. */
static bool parse_chain_frame(const char *name, struct chain_frame *out)
{
	int used = 0;

	return sscanf(name, "g%ld_f%d_%d%n", &out->generation, &out->family, &out->level, &used) == 3 &&
	       name[used] == 0;
}

static void note_invalid(struct stack_tally *tally, const struct pf_sample *sample, const char *why)
{
	if (tally->invalid < INVALID_SHOWN) {
		int used = snprintf(tally->shown[tally->invalid], sizeof(tally->shown[0]), "at %" PRIu64 " us: %s:",
				    sample->timestamp_us, why);

		for (size_t i = 0; i < sample->frame_count && used > 0 && (size_t)used < sizeof(tally->shown[0]); i++)
			if (sample->frames[i].kind == PF_FRAME_PYTHON)
				used += snprintf(tally->shown[tally->invalid] + used,
						 sizeof(tally->shown[0]) - (size_t)used, " %s", sample->frames[i].name);
	}
	tally->invalid++;
}

/* The Python frames' names, root first, into names; their count. */
static size_t python_names(const struct pf_sample *sample, const char **names, size_t max)
{
	size_t count = 0;

	for (size_t i = 0; i < sample->frame_count && count < max; i++)
		if (sample->frames[i].kind == PF_FRAME_PYTHON)
			names[count++] = sample->frames[i].name;
	return count;
}

static void tally_sample(struct stack_tally *tally, const struct generation_log *log, const struct pf_sample *sample)
{
	const char *names[LEVELS + 16];
	size_t count = python_names(sample, names, ARRAY_SIZE(names)), first = count, at;
	struct chain_frame head, frame;
	const struct generation *generation;

	tally->samples++;
	for (size_t i = 0; i < count; i++) {
		if (strcmp(names[i], UNRESOLVED) == 0) {
			tally->unresolved++;
			return;
		}
		if (first == count && parse_chain_frame(names[i], &head))
			first = i;
	}
	if (first == count)
		return; /* in main between calls, or compiling a family: not a chain */
	tally->chains++;
	if (first == 0 || strcmp(names[first - 1], CALLER) != 0)
		return note_invalid(tally, sample, "a chain not called by " CALLER);
	for (at = first; at < count && parse_chain_frame(names[at], &frame); at++)
		if (frame.generation != head.generation || frame.family != head.family ||
		    frame.level != (int)(at - first))
			return note_invalid(tally, sample, "a chain of two families, generations or a gap");
	if (at < count && (at + 1 != count || strcmp(names[at], LEAF) != 0))
		return note_invalid(tally, sample, "a chain not ending in " LEAF);
	generation = generation_of(log, head.generation, head.family);
	if (!generation)
		return note_invalid(tally, sample, "a generation the script never made");
	if (sample->timestamp_us + SLACK_US < generation->born_us || sample->timestamp_us > generation->dropped_us + SLACK_US)
		return note_invalid(tally, sample, "a generation that did not exist then");
	if (at - first <= LEVELS)
		tally->depth_seen[at - first] = true;
}

static void tally_file(const char *path, const struct generation_log *log, struct stack_tally *tally)
{
	struct pf_reader *reader = test_open_profile(path);
	struct pf_sample sample;
	int got;

	memset(tally, 0, sizeof(*tally));
	/* Tachyon's reader gives each sample its absolute stamp, on the clock of the script's log. */
	while ((got = pf_reader_next_sample(reader, &sample)) > 0)
		tally_sample(tally, log, &sample);
	if (got < 0)
		fail_msg("%s: %s", path, pf_reader_error(reader));
	pf_reader_close(reader);
}

static size_t depths_seen(const struct stack_tally *tally)
{
	size_t count = 0;

	for (size_t i = 0; i <= LEVELS; i++)
		count += tally->depth_seen[i];
	return count;
}

/* ---- the test ---- */

/* One recording of the script, launched (so the whole run is sampled, however long a loaded
 * machine makes it); trusted: BPF may take identities unread. */
static void profile_script(const struct test_python *python, bool trusted, struct stack_tally *tally)
{
	const char *how = trusted ? "trusted" : "read";
	char mojo[PATH_MAX], tachyon[PATH_MAX], command[PATH_MAX * 4], err[4096], *argv[32];
	char *log_text = malloc(LOG_BYTES);
	struct generation_log log;
	int status;

	if (!log_text)
		fail_msg("out of memory for the script's log");
	FORMAT(mojo, "%s/shifting-%s-%s.mojo", test_tmpdir(), python->label, how);
	FORMAT(tachyon, "%s/shifting-%s-%s.bin", test_tmpdir(), python->label, how);
	FORMAT(command, "%s -q -F " RATE " -o %s -o %s -- %s %s/tests/scripts/" SCRIPT " " SCRIPT_CPU_SECONDS,
	       pybpfprof_binary(), mojo, tachyon, python->command, test_source_dir());
	split_command(command, argv, 32);
	if (!trusted)
		setenv("PYBPFPROF_NO_CODE_STAMP", "1", 1);
	status = run_capture_both(argv, log_text, LOG_BYTES, err, sizeof(err));
	unsetenv("PYBPFPROF_NO_CODE_STAMP");
	if (status != 0)
		fail_msg("%s: pybpfprof -- %s exited %d: %s", python->label, SCRIPT, status, err);
	parse_generations(python->label, log_text, &log);
	free(log_text);
	tally_file(tachyon, &log, tally);
	print_message("%s, identities %s: %zu generations; %zu samples, %zu in chains (%zu depths), %zu with an "
		      "unresolved frame, %zu impossible\n",
		      python->label, how, log.count, tally->samples, tally->chains, depths_seen(tally),
		      tally->unresolved, tally->invalid);
	for (size_t i = 0; i < tally->invalid && i < INVALID_SHOWN; i++)
		print_message("%s, identities %s: impossible stack %s\n", python->label, how, tally->shown[i]);
	free(log.items);
}

static void check_tally(const char *label, const char *how, const struct stack_tally *tally)
{
	if (tally->invalid)
		fail_msg("%s, identities %s: %zu samples are stacks the program cannot make", label, how,
			 tally->invalid);
	if (tally->chains < CHAIN_MIN)
		fail_msg("%s, identities %s: only %zu samples in chains (want %d)", label, how, tally->chains,
			 CHAIN_MIN);
	if (depths_seen(tally) < DEPTHS_MIN)
		fail_msg("%s, identities %s: only %zu chain depths seen (want %d)", label, how, depths_seen(tally),
			 DEPTHS_MIN);
}

static void shifting_stacks(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	struct stack_tally trusted, read;

	profile_script(python, true, &trusted);
	profile_script(python, false, &read);
	check_tally(python->label, "trusted", &trusted);
	check_tally(python->label, "read", &read);
}

int main(void)
{
	static const struct test_per_python kinds[] = { { "shifting_stacks_", shifting_stacks } };

	python_count = test_pythons(pythons, MAX_PYTHONS);
	return test_run_per_python("test_stack_fast_path", labels, ARRAY_SIZE(labels), kinds, ARRAY_SIZE(kinds));
}
