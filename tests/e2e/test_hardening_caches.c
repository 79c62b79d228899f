// SPDX-License-Identifier: MIT
/*
 * What a hostile target can make us keep: code objects that all point at one
 * 1 MiB line table (each would get its own copy), in one process or in eight
 * run as nobody (one budget for them all), and a long run's churn of
 * short-lived processes (each would leave its state behind). The targets are
 * this process and its forks: fake CPython 3.11 objects built in our memory.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <time.h>
#include <sys/wait.h>

#include "fake_target.h"

#include "symbolize/sample_resolve.h"
#include "symbolize/symbolize_py.h"
#include "python/py_offsets.h"
#include "python/py_runtime_file.h"
#include "python/target_set.h"
#include "unwind/unwind_cache.h"
#include "util/target_budget.h"

#define ATTACKERS 8
/* What the cache may hold at most: its budget, plus the table being answered. */
#define HELD_AT_MOST (SYMBOLIZE_PY_MAX_BYTES + SYMBOLIZE_PY_MAX_LINETABLE_BYTES + 4096)

/* 200 code objects sharing one 1 MiB line table: the cache stays within its budget. */
static void shared_line_tables_stay_within_budget(void **state)
{
	struct symbolize_py_cache *cache = symbolize_py_cache_new();
	struct symbolize_py_stats stats;
	struct fake_target fake;
	struct pf_frame frame;

	(void)state;
	build_fake_target(&fake, SYMBOLIZE_PY_MAX_LINETABLE_BYTES);
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < FAKE_CODES; i++) {
			assert_int_equal(resolve(cache, getpid(), &fake, i, &frame), 0);
			assert_string_equal(frame.name, "fake");
			symbolize_py_cache_stats(cache, &stats);
			assert_true(stats.code_bytes <= HELD_AT_MOST);
		}
	}
	symbolize_py_cache_stats(cache, &stats);
	/* Their line tables went; the code objects stay, remembered as over budget. */
	assert_true(stats.lines_over_budget > 0);
	assert_int_equal(stats.evicted, 0);
	assert_int_equal(stats.codes, FAKE_CODES);
	/* the second round read nothing again: every frame was answered by one lookup */
	assert_int_equal(stats.hits, FAKE_CODES);
	assert_int_equal(resolve(cache, getpid(), &fake, FAKE_CODES - 1, &frame), 0);
	symbolize_py_cache_stats(cache, &stats);
	assert_int_equal(stats.hits, FAKE_CODES + 1);
	symbolize_py_cache_free(cache);
	free_fake_target(&fake);
}

/* ATTACKERS forks of this process (the same fake objects at the same addresses) as nobody, waiting. */
static void start_attackers(pid_t attackers[ATTACKERS])
{
	for (int a = 0; a < ATTACKERS; a++)
		attackers[a] = test_fork_as_nobody(NULL, NULL);
}

static void stop_attackers(const pid_t attackers[ATTACKERS])
{
	for (int a = 0; a < ATTACKERS; a++) {
		kill(attackers[a], SIGKILL);
		waitpid(attackers[a], NULL, 0);
	}
}

/*
 * Eight processes as nobody, each with 200 code objects holding a 1 MiB line table: the one
 * budget holds for all of them together, and once the attackers are gone every code object
 * is still named without reading it again (a re-read would fail: the process is gone).
 */
static void attackers_share_one_budget(void **state)
{
	struct symbolize_py_cache *cache = symbolize_py_cache_new();
	struct symbolize_py_stats stats;
	struct fake_target fake;
	struct pf_frame frame;
	pid_t attackers[ATTACKERS];
	uint64_t read_errors;

	(void)state;
	if (geteuid() != 0)
		skip();
	build_fake_target(&fake, SYMBOLIZE_PY_MAX_LINETABLE_BYTES);
	start_attackers(attackers);
	for (int a = 0; a < ATTACKERS; a++)
		for (int i = 0; i < FAKE_CODES; i++) {
			assert_int_equal(resolve(cache, attackers[a], &fake, i, &frame), 0);
			symbolize_py_cache_stats(cache, &stats);
			if (stats.code_bytes > HELD_AT_MOST)
				fail_msg("attacker %d, code object %d: the cache holds %zu bytes", a, i,
					 stats.code_bytes);
		}
	print_message("%d attackers x %d code objects: %zu bytes held, %" PRIu64 " line tables over budget\n",
		      ATTACKERS, FAKE_CODES, stats.code_bytes, stats.lines_over_budget);
	stop_attackers(attackers);
	read_errors = stats.read_errors;
	for (int a = 0; a < ATTACKERS; a++)
		for (int i = 0; i < FAKE_CODES; i++) {
			assert_int_equal(resolve(cache, attackers[a], &fake, i, &frame), 0);
			assert_string_equal(frame.name, "fake");
		}
	symbolize_py_cache_stats(cache, &stats);
	assert_int_equal(stats.read_errors, read_errors);
	assert_int_equal(stats.codes, ATTACKERS * FAKE_CODES);
	symbolize_py_cache_free(cache);
	free_fake_target(&fake);
}

/* A budget smaller than the unique names of FAKE_CODES code objects (a file and a qualified
 * name of SYMBOLIZE_PY_MAX_STRING_CHARS each: 1.6 MiB). */
#define NAMES_BUDGET ((uint64_t)1 << 20)

/* One str object of SYMBOLIZE_PY_MAX_STRING_CHARS characters, its own for (kind, i). */
static uint8_t *long_unique_str(const struct py_offsets *off, char kind, int i)
{
	static char text[SYMBOLIZE_PY_MAX_STRING_CHARS + 1];

	memset(text, kind, SYMBOLIZE_PY_MAX_STRING_CHARS);
	text[SYMBOLIZE_PY_MAX_STRING_CHARS] = 0;
	snprintf(text, 16, "%c%06d", kind, i);
	text[7] = kind;
	return fake_str(off, text);
}

/* Code i's checksum as BPF would read it, from its own file and name objects. */
static uint32_t checksum_of(const struct py_offsets *off, int i, const uint8_t *file, const uint8_t *name)
{
	uint8_t file_span[PY_STRING_SPAN_MAX + 8] = { 0 }, name_span[PY_STRING_SPAN_MAX + 8] = { 0 };

	memcpy(file_span, file + py_string_span_low(off), py_string_span(off));
	memcpy(name_span, name + py_string_span_low(off), py_string_span(off));
	return py_code_checksum(i + 1, 0, (uint64_t)(uintptr_t)file, (uint64_t)(uintptr_t)name,
				py_string_identity(off, file_span), py_string_identity(off, name_span));
}

/*
 * Two processes as nobody whose 200 code objects each have their own 4096-character file and
 * name, against a 1 MiB target budget: the names never take more than their share of it (past
 * it a code object's name reads as the placeholder, remembered: a second pass reads nothing),
 * and the code objects' entries are counted in it too.
 */
static void code_names_stay_within_the_target_budget(void **state)
{
	struct symbolize_py_cache *cache = symbolize_py_cache_new();
	struct target_budget_store_stats stores[TARGET_BUDGET_MAX_STORES];
	uint8_t *files[FAKE_CODES], *names[FAKE_CODES];
	struct target_budget *budget;
	struct symbolize_py_stats stats;
	struct fake_target fake;
	struct pf_frame frame;
	pid_t attackers[ATTACKERS];
	int count, placeholders = 0;
	uint64_t hits = 0;

	(void)state;
	if (geteuid() != 0)
		skip();
	assert_int_equal(target_budget_new(NAMES_BUDGET, &budget), 0);
	assert_int_equal(symbolize_py_cache_set_budget(cache, budget), 0);
	build_fake_target(&fake, 16);
	for (int i = 0; i < FAKE_CODES; i++) {
		files[i] = long_unique_str(&fake.config.off, 'f', i);
		names[i] = long_unique_str(&fake.config.off, 'n', i);
		put_pointer(fake.codes[i], fake.config.off.code_filename, files[i]);
		put_pointer(fake.codes[i], fake.config.off.code_name, names[i]);
		put_pointer(fake.codes[i], fake.config.off.code_qualname, names[i]);
	}
	start_attackers(attackers);
	for (int pass = 0; pass < 2; pass++)
		for (int a = 0; a < 2; a++)
			for (int i = 0; i < FAKE_CODES; i++) {
				uint32_t checksum = checksum_of(&fake.config.off, i, files[i], names[i]);

				if (pass == 1 && a == 0 && i == 0) {
					symbolize_py_cache_stats(cache, &stats);
					hits = stats.hits;
				}
				assert_int_equal(symbolize_py_resolve(cache, attackers[a], &fake.config,
								      (uint64_t)(uintptr_t)fake.codes[i], checksum, 0,
								      &frame),
						 0);
				placeholders += pass == 1 && !strcmp(frame.name, SYMBOLIZE_PY_NAME_OVER_BUDGET);
				if (target_budget_held(budget) > NAMES_BUDGET)
					fail_msg("pass %d, attacker %d, code object %d: the budget holds %" PRIu64
						 " bytes", pass, a, i, target_budget_held(budget));
			}
	symbolize_py_cache_stats(cache, &stats);
	count = target_budget_stats(budget, stores);
	print_message("%d code objects x 2 attackers with 8 KiB of names, %" PRIu64 " KiB budget: names %" PRIu64
		      " bytes held, %" PRIu64 " refused; entries %" PRIu64 " bytes; cache names %zu bytes\n",
		      FAKE_CODES, NAMES_BUDGET >> 10, stores[2].held, stores[2].refusals, stores[1].held,
		      stats.name_bytes);
	assert_int_equal(count, 4);
	assert_string_equal(stores[1].name, "code objects");
	assert_string_equal(stores[2].name, "code names");
	assert_true(stores[1].held > 0);
	assert_true(stores[2].refusals > 0);
	/* the budget holds what the names' table takes, its index and hash slots with the keys */
	assert_int_equal(stores[2].held, stats.name_table_bytes);
	assert_true(stats.name_table_bytes <= NAMES_BUDGET / SYMBOLIZE_PY_NAMES_BUDGET_SHARE);
	assert_true(target_budget_peak(budget) <= NAMES_BUDGET);
	assert_true(placeholders > 0 && placeholders < 2 * FAKE_CODES);
	/* the second pass answered every frame without reading its target again */
	assert_int_equal(stats.hits - hits, 2 * FAKE_CODES);
	stop_attackers(attackers);
	symbolize_py_cache_free(cache);
	for (int i = 0; i < FAKE_CODES; i++) {
		free(files[i]);
		free(names[i]);
	}
	free_fake_target(&fake);
	target_budget_free(budget);
}

/* A budget that holds some 700 code objects' entries, of the 1,600 the attackers show. */
#define ENTRIES_BUDGET ((uint64_t)64 << 10)

/*
 * Eight processes as nobody with 200 code objects each (small line tables, one name), against
 * a 64 KiB target budget: the code objects' entries never take more than it (the least
 * recently used go, read again if seen again), every frame is still named.
 */
static void code_objects_stay_within_the_target_budget(void **state)
{
	struct symbolize_py_cache *cache = symbolize_py_cache_new();
	struct target_budget_store_stats stores[TARGET_BUDGET_MAX_STORES];
	struct target_budget *budget;
	struct symbolize_py_stats stats;
	struct fake_target fake;
	struct pf_frame frame;
	pid_t attackers[ATTACKERS];

	(void)state;
	if (geteuid() != 0)
		skip();
	assert_int_equal(target_budget_new(ENTRIES_BUDGET, &budget), 0);
	assert_int_equal(symbolize_py_cache_set_budget(cache, budget), 0);
	build_fake_target(&fake, 16);
	start_attackers(attackers);
	for (int a = 0; a < ATTACKERS; a++)
		for (int i = 0; i < FAKE_CODES; i++) {
			assert_int_equal(resolve(cache, attackers[a], &fake, i, &frame), 0);
			assert_string_equal(frame.name, "fake");
			if (target_budget_held(budget) > ENTRIES_BUDGET)
				fail_msg("attacker %d, code object %d: the budget holds %" PRIu64 " bytes", a, i,
					 target_budget_held(budget));
		}
	symbolize_py_cache_stats(cache, &stats);
	target_budget_stats(budget, stores);
	print_message("%d attackers x %d code objects in a %" PRIu64 " KiB budget: %zu kept, entries %" PRIu64
		      " bytes held, %" PRIu64 " evicted\n",
		      ATTACKERS, FAKE_CODES, ENTRIES_BUDGET >> 10, stats.codes, stores[1].held, stats.evicted);
	assert_string_equal(stores[1].name, "code objects");
	assert_true(stats.evicted > 0);
	assert_true(stats.codes < ATTACKERS * FAKE_CODES);
	assert_true(stores[1].held > 0 && stores[1].held <= ENTRIES_BUDGET);
	assert_true(stores[1].evictions > 0);
	assert_true(target_budget_peak(budget) <= ENTRIES_BUDGET);
	stop_attackers(attackers);
	symbolize_py_cache_free(cache);
	free_fake_target(&fake);
	target_budget_free(budget);
}

/* A budget a quarter of the frame table 200 code objects at 2,000 offsets each would take. */
#define FRAMES_BUDGET ((uint64_t)4 << 20)
#define FRAME_OFFSETS 2000

/*
 * Two processes as nobody whose 200 code objects are each seen at 2,000 instruction offsets
 * (800,000 decoded frames, a table of some 48 MiB), against a 4 MiB target budget: the
 * decoded frame table never takes more than it (it starts over instead of growing), and
 * every frame is still named.
 */
static void decoded_frames_stay_within_the_target_budget(void **state)
{
	struct symbolize_py_cache *cache = symbolize_py_cache_new();
	struct target_budget_store_stats stores[TARGET_BUDGET_MAX_STORES];
	struct target_budget *budget;
	struct symbolize_py_stats stats;
	struct fake_target fake;
	struct pf_frame frame;
	pid_t attackers[ATTACKERS];
	size_t most_frames = 0;

	(void)state;
	if (geteuid() != 0)
		skip();
	assert_int_equal(target_budget_new(FRAMES_BUDGET, &budget), 0);
	assert_int_equal(symbolize_py_cache_set_budget(cache, budget), 0);
	build_fake_target(&fake, 16);
	start_attackers(attackers);
	for (int a = 0; a < 2; a++)
		for (int i = 0; i < FAKE_CODES; i++) {
			const struct py_offsets *off = &fake.config.off;
			uint8_t span[PY_STRING_SPAN_MAX + 8] = { 0 };
			uint64_t name_hash;
			uint32_t checksum;

			memcpy(span, fake.name + py_string_span_low(off), py_string_span(off));
			name_hash = py_string_identity(off, span);
			checksum = py_code_checksum(i + 1, 0, (uint64_t)(uintptr_t)fake.name,
						    (uint64_t)(uintptr_t)fake.name, name_hash, name_hash);
			for (uint32_t offset = 0; offset < FRAME_OFFSETS; offset++) {
				assert_int_equal(symbolize_py_resolve(cache, attackers[a], &fake.config,
								      (uint64_t)(uintptr_t)fake.codes[i], checksum,
								      offset * 2, &frame),
						 0);
				assert_string_equal(frame.name, "fake");
			}
			symbolize_py_cache_stats(cache, &stats);
			if (stats.frames > most_frames)
				most_frames = stats.frames;
			if (target_budget_held(budget) > FRAMES_BUDGET)
				fail_msg("attacker %d, code object %d: the budget holds %" PRIu64 " bytes", a, i,
					 target_budget_held(budget));
		}
	target_budget_stats(budget, stores);
	print_message("%d code objects x %d offsets x 2 attackers in a %" PRIu64 " MiB budget: at most %zu frames "
		      "decoded at once, the table %" PRIu64 " bytes (peak %" PRIu64 "), started over %" PRIu64
		      " times\n",
		      FAKE_CODES, FRAME_OFFSETS, FRAMES_BUDGET >> 20, most_frames, stores[3].held, stores[3].peak,
		      stores[3].evictions);
	assert_string_equal(stores[3].name, "decoded frames");
	assert_true(stores[3].peak <= FRAMES_BUDGET);
	assert_true(stores[3].evictions > 0);
	/* each decoded frame takes a slot of a table at most twice as large as the frames it holds */
	assert_true(most_frames * 2 * 48 <= FRAMES_BUDGET);
	assert_true(target_budget_peak(budget) <= FRAMES_BUDGET);
	stop_attackers(attackers);
	symbolize_py_cache_free(cache);
	free_fake_target(&fake);
	target_budget_free(budget);
}

/* A small target budget of which output tables (which cannot be evicted) hold half. */
#define SMALL_BUDGET ((uint64_t)8 << 20)
#define OUTPUT_TABLES ((uint64_t)4 << 20)

/*
 * The same eight attackers against a cache charged to one small target budget, beside
 * output tables that hold half of it: the line tables never take more than the other half
 * (the least recently used go, or the new ones are refused and remembered as over budget),
 * the budget never holds more than its limit, and the code objects stay named.
 */
static void attackers_fit_in_the_target_budget_beside_other_stores(void **state)
{
	struct symbolize_py_cache *cache = symbolize_py_cache_new();
	struct target_budget_store_stats stores[TARGET_BUDGET_MAX_STORES];
	struct target_budget *budget;
	struct symbolize_py_stats stats;
	struct fake_target fake;
	struct pf_frame frame;
	pid_t attackers[ATTACKERS];
	int outputs;

	(void)state;
	if (geteuid() != 0)
		skip();
	assert_int_equal(target_budget_new(SMALL_BUDGET, &budget), 0);
	assert_int_equal(symbolize_py_cache_set_budget(cache, budget), 0);
	outputs = target_budget_register(budget, "output tables", NULL, NULL, NULL);
	assert_true(outputs >= 0);
	target_budget_set_held(budget, outputs, OUTPUT_TABLES);
	build_fake_target(&fake, SYMBOLIZE_PY_MAX_LINETABLE_BYTES);
	start_attackers(attackers);
	for (int a = 0; a < ATTACKERS; a++)
		for (int i = 0; i < FAKE_CODES; i++) {
			assert_int_equal(resolve(cache, attackers[a], &fake, i, &frame), 0);
			assert_string_equal(frame.name, "fake");
			assert_int_equal(target_budget_stats(budget, stores), 5);
			if (stores[0].held > SMALL_BUDGET - OUTPUT_TABLES || target_budget_held(budget) > SMALL_BUDGET)
				fail_msg("attacker %d, code object %d: line tables hold %" PRIu64 " bytes, the budget %"
					 PRIu64, a, i, stores[0].held, target_budget_held(budget));
		}
	symbolize_py_cache_stats(cache, &stats);
	target_budget_stats(budget, stores);
	print_message("%d attackers x %d code objects in a %" PRIu64 " MiB budget: line tables %" PRIu64
		      " bytes held, %" PRIu64 " evictions, %" PRIu64 " refused\n",
		      ATTACKERS, FAKE_CODES, SMALL_BUDGET >> 20, stores[0].held, stores[0].evictions,
		      stores[0].refusals);
	assert_true(stores[0].evictions > 0);
	assert_true(stats.lines_over_budget > 0);
	assert_int_equal(stats.codes, ATTACKERS * FAKE_CODES);
	assert_true(target_budget_peak(budget) <= SMALL_BUDGET);
	stop_attackers(attackers);
	symbolize_py_cache_free(cache);
	free_fake_target(&fake);
	target_budget_free(budget);
}

/*
 * Code objects whose 1 MiB line tables the target budget cannot take (output tables hold all
 * but half a MiB of it): each is named, remembered as over budget, and not one byte of its table
 * is read, so that an attacker's tables cost the draining loop no copying once refused.
 */
static void refused_line_tables_are_never_read(void **state)
{
	struct symbolize_py_cache *cache = symbolize_py_cache_new();
	struct target_budget *budget;
	struct symbolize_py_stats stats;
	struct fake_target fake;
	struct pf_frame frame;
	int outputs;

	(void)state;
	assert_int_equal(target_budget_new(SMALL_BUDGET, &budget), 0);
	assert_int_equal(symbolize_py_cache_set_budget(cache, budget), 0);
	outputs = target_budget_register(budget, "output tables", NULL, NULL, NULL);
	assert_true(outputs >= 0);
	target_budget_set_held(budget, outputs, SMALL_BUDGET - (SYMBOLIZE_PY_MAX_LINETABLE_BYTES / 2));
	build_fake_target(&fake, SYMBOLIZE_PY_MAX_LINETABLE_BYTES);
	for (int i = 0; i < FAKE_CODES; i++) {
		assert_int_equal(resolve(cache, getpid(), &fake, i, &frame), 0);
		assert_string_equal(frame.name, "fake");
	}
	symbolize_py_cache_stats(cache, &stats);
	assert_int_equal(stats.codes, FAKE_CODES);
	assert_int_equal(stats.lines_over_budget, FAKE_CODES);
	assert_int_equal(stats.linetable_bytes_read, 0);
	symbolize_py_cache_free(cache);
	free_fake_target(&fake);
	target_budget_free(budget);
}

/* A size as the summary prints it ("8.0 MiB", "596.8 KiB", "12 B") in bytes; -1 if none. */
static double summary_size(const char *text)
{
	double value;
	char unit[8];

	if (sscanf(text, "%lf %7s", &value, unit) != 2)
		return -1;
	if (strncmp(unit, "MiB", 3) == 0)
		return value * (1 << 20);
	if (strncmp(unit, "KiB", 3) == 0)
		return value * (1 << 10);
	return unit[0] == 'B' ? value : -1;
}

/* pid's peak RSS so far (VmHWM) in KiB once it runs pybpfprof (before its exec it is this
 * test's fork, under ASan some 300 MB); 0 before that, and once it is gone. */
static long peak_rss_kib_of(pid_t pid)
{
	char path[64], line[256];
	bool profiler = false;
	long kib = 0;
	FILE *status;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	status = fopen(path, "r");
	if (!status)
		return 0;
	while (fgets(line, sizeof(line), status)) {
		if (strcmp(line, "Name:\tpybpfprof\n") == 0)
			profiler = true;
		if (sscanf(line, "VmHWM: %ld", &kib) == 1)
			break;
	}
	fclose(status);
	return profiler ? kib : 0;
}

/* Every run here asks -d of 10 s at most: one still running this long after its start will not
 * end (a consumer that fell behind its samples once never left its drain), and is killed. */
#define RUN_OVERDUE_S 180

/*
 * Runs the pybpfprof command argv to the end, its stderr into err; its exit status, and its
 * peak RSS in KiB as /proc last showed it (not wait4's ru_maxrss: that counts this test's
 * fork before the exec). A run overdue is killed (status 128 + SIGKILL).
 */
static int run_measured(char *const argv[], char *err, size_t errlen, long *peak_kib)
{
	char err_path[PATH_MAX];
	size_t len = 0;
	uint8_t *text;
	int status = 0;
	pid_t pid;
	time_t overdue = time(NULL) + RUN_OVERDUE_S;

	FORMAT(err_path, "%s/measured.%d", test_tmpdir(), (int)getpid());
	pid = test_spawn(argv, NULL, err_path);
	assert_true(pid > 0);
	*peak_kib = 0;
	while (waitpid(pid, &status, WNOHANG) == 0) {
		long kib = peak_rss_kib_of(pid);

		if (kib > *peak_kib)
			*peak_kib = kib;
		if (time(NULL) > overdue)
			kill(pid, SIGKILL);
		usleep(50 * 1000);
	}
	text = read_whole_file(err_path, &len);
	snprintf(err, errlen, "%s", text ? (char *)text : "");
	free(text);
	unlink(err_path);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The attackers' Python: nobody cannot run pyenv's (under /root). */
#define HOSTILE_PYTHON "/usr/bin/python3.11"
/* Four processes, each running 200 code objects whose line tables are 1 MiB (each long enough
 * to be sampled, so that its table is read), until killed. */
#define LINETABLE_ATTACK                                                                        \
	"import os, time\n"                                                                     \
	"def hostile_linetable():\n"                                                            \
	"    for _ in range(1000):\n"                                                           \
	"        pass\n"                                                                        \
	"code = hostile_linetable.__code__.replace(co_linetable=b'\\xff' * (1 << 20))\n"         \
	"functions = [type(hostile_linetable)(code.replace(co_firstlineno=i + 1), {})\n"        \
	"             for i in range(200)]\n"                                                   \
	"for _ in range(2):\n"                                                                  \
	"    os.fork()\n"                                                                       \
	"while True:\n"                                                                         \
	"    for function in functions:\n"                                                      \
	"        function()\n"                                                                  \
	"    time.sleep(0.01)\n"
#define RUN_BUDGET_MIB 8
/* Measured: a peak RSS of 25-40 MB with this budget (more processes on the host, more state),
 * 82 MB with the default one on a quiet host (the attack adds 64 MiB of line tables). */
#define RUN_PEAK_RSS_KIB (72 * 1000 * 1000 / 1024)

/*
 * The whole-host profiler, its target budget set small by --target-budget, while four
 * processes as nobody run 200 code objects each with 1 MiB line tables: the summary shows
 * the budget at work on the line tables (evicted or refused), never more held than the
 * limit, and the profiler's peak RSS well under what the default budget would let the
 * attack add.
 */
static void a_run_with_attackers_stays_within_its_target_budget(void **state)
{
	char out[PATH_MAX], budget_arg[16], err[32768];
	/* a session of their own: the attackers are killed as one process group */
	char *attack[] = { "setsid", "setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
			   HOSTILE_PYTHON, "-c", LINETABLE_ATTACK, NULL };
	char *profile[] = { (char *)pybpfprof_binary(), "-v", "--target-budget", budget_arg, "-d", "6", "-o", out,
			    NULL };
	char held[32], limit[32], peak[32];
	unsigned long long evictions = 0, refused = 0;
	const char *line, *lines;
	long peak_rss_kib;
	pid_t attacker;
	int status;

	(void)state;
	if (geteuid() != 0 || access(HOSTILE_PYTHON, X_OK))
		skip();
	FORMAT(out, "%s/budget-run.%d.collapsed", test_tmpdir(), (int)getpid());
	snprintf(budget_arg, sizeof(budget_arg), "%d", RUN_BUDGET_MIB);
	attacker = test_spawn(attack, NULL, NULL);
	assert_true(attacker > 0);
	status = run_measured(profile, err, sizeof(err), &peak_rss_kib);
	kill(-attacker, SIGKILL);
	test_wait_status(attacker);
	if (status)
		fail_msg("the profiler exited %d: %s", status, err);
	line = strstr(err, "pybpfprof: target budget: ");
	if (!line || sscanf(line, "pybpfprof: target budget: %31[^h]held of %31[^(](peak %31[^)])", held, limit,
			    peak) != 3)
		fail_msg("no target budget line in the summary: %s", err);
	lines = strstr(line, "line tables ");
	if (!lines || sscanf(strstr(lines, "), ") + 3, "%llu evictions, %llu refused", &evictions, &refused) != 2)
		fail_msg("no line tables in the target budget line: %s", line);
	print_message("%.*s\npeak RSS %ld KiB\n", (int)strcspn(line, "\n"), line, peak_rss_kib);
	assert_true(summary_size(limit) == (double)RUN_BUDGET_MIB * (1 << 20));
	assert_true(summary_size(peak) >= 0 && summary_size(peak) <= summary_size(limit));
	assert_true(evictions + refused > 0);
	assert_true(peak_rss_kib < RUN_PEAK_RSS_KIB);
	unlink(out);
}

/* A store's numbers on the summary's target budget line (as a_run_with_attackers_... reads it). */
struct summary_store {
	double held, peak;
	unsigned long long evictions, refused;
};

/* The target budget line of a -v summary: its limit and peak in bytes, and store's numbers;
 * fails the test when there is no such line or no such store on it. */
static void parse_budget_line(const char *err, const char *store, double *limit_bytes, double *peak_bytes,
			      struct summary_store *found)
{
	char held[32], limit[32], peak[32], store_held[32], store_peak[32], name[64];
	const char *line = strstr(err, "pybpfprof: target budget: "), *at;
	size_t line_len;

	if (!line || sscanf(line, "pybpfprof: target budget: %31[^h]held of %31[^(](peak %31[^)])", held, limit,
			    peak) != 3)
		fail_msg("no target budget line in the summary: %s", err);
	line_len = strcspn(line, "\n");
	FORMAT(name, "%s ", store);
	at = strstr(line, name);
	if (!at || at > line + line_len ||
	    sscanf(at + strlen(name), "%31[^(](peak %31[^)]), %llu evictions, %llu refused", store_held, store_peak,
		   &found->evictions, &found->refused) != 4)
		fail_msg("no %s store in the target budget line: %.*s", store, (int)line_len, line);
	print_message("%.*s\n", (int)line_len, line);
	*limit_bytes = summary_size(limit);
	*peak_bytes = summary_size(peak);
	found->held = summary_size(store_held);
	found->peak = summary_size(store_peak);
}

/* What a benign Python runs beside the attackers: its function must be in the profile. */
#define BENIGN_WORK                                                                             \
	"import time\n"                                                                         \
	"def benign_work():\n"                                                                  \
	"    while True:\n"                                                                     \
	"        sum(range(1000))\n"                                                            \
	"        time.sleep(0.001)\n"                                                           \
	"benign_work()\n"

/*
 * Starts the benign Python, then the attack (a Python script run as nobody in a session of its
 * own), and waits until ready_lines lines of its stdout say "ready" (each written whole, so that
 * lines never interleave; no deadline: an attack that fails closes its stdout, which fails the
 * test); runs the whole-host profiler argv (-v, its summary into err); kills them all. The
 * benign one goes first so that the profiler's first scan of the host (in pid order) meets it
 * before the attackers. The profiler's exit status.
 */
static int run_against_attack(const char *attack_script, int ready_lines, char *const profile[], char *err,
			      size_t errlen)
{
	char *attack[] = { "setsid", "setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
			   HOSTILE_PYTHON, "-c", (char *)attack_script, NULL };
	char *benign[] = { HOSTILE_PYTHON, "-c", BENIGN_WORK, NULL };
	char text[4096];
	size_t len = 0;
	int ready = 0, out_fd, status;
	long peak_rss_kib;
	pid_t attacker, benign_pid;

	benign_pid = test_spawn(benign, NULL, NULL);
	assert_true(benign_pid > 0);
	attacker = test_spawn(attack, &out_fd, NULL);
	assert_true(attacker > 0);
	while (ready < ready_lines) {
		ssize_t got = read(out_fd, text + len, sizeof(text) - 1 - len);

		if (got <= 0) {
			kill(-attacker, SIGKILL);
			test_wait_status(attacker);
			kill(benign_pid, SIGKILL);
			test_wait_status(benign_pid);
			fail_msg("the attack ended before it was ready (%d of %d)", ready, ready_lines);
		}
		len += (size_t)got;
		text[len] = '\0';
		ready = 0;
		for (const char *at = text; (at = strstr(at, "ready\n")); at++)
			ready++;
		if (len == sizeof(text) - 1)
			len = 0;
	}
	status = run_measured(profile, err, errlen, &peak_rss_kib);
	print_message("peak RSS %ld KiB\n", peak_rss_kib);
	kill(-attacker, SIGKILL);
	test_wait_status(attacker);
	close(out_fd);
	kill(benign_pid, SIGKILL);
	test_wait_status(benign_pid);
	return status;
}

/* Whether the collapsed profile at path has a stack through function. */
static bool profile_has_function(const char *path, const char *function)
{
	size_t len = 0;
	uint8_t *text = read_whole_file(path, &len);
	bool found = text && strstr((char *)text, function);

	free(text);
	return found;
}

/* Four processes whose every sample is a stack no other had: 500 random choices between two
 * functions deep (a thousand frames), rebuilt every 2 ms. */
#define DISTINCT_STACKS_ATTACK                                                                  \
	"import os, random, sys, time\n"                                                        \
	"sys.setrecursionlimit(5000)\n"                                                         \
	"def left(n):\n"                                                                        \
	"    return step(n)\n"                                                                  \
	"def right(n):\n"                                                                       \
	"    return step(n)\n"                                                                  \
	"def step(n):\n"                                                                        \
	"    if n == 0:\n"                                                                      \
	"        start = time.perf_counter()\n"                                                 \
	"        while time.perf_counter() - start < 0.002:\n"                                  \
	"            pass\n"                                                                    \
	"        return\n"                                                                      \
	"    (left if random.getrandbits(1) else right)(n - 1)\n"                               \
	"for _ in range(2):\n"                                                                  \
	"    os.fork()\n"                                                                       \
	"os.write(1, b'ready\\n')\n"                                                          \
	"while True:\n"                                                                         \
	"    step(500)\n"
/* Its share for resolved stacks (512 KiB) takes some 7 of the attackers' stacks; the whole, the
 * records held at the default rate beside the code objects (a smaller budget, or a higher rate,
 * has records of a thousand frames fill it, and the code objects read again at every record). */
#define STACKS_BUDGET_MIB 2

/* The whole-host profiler under a target budget of budget_mib MiB for seconds, while attack runs
 * as nobody (4 processes): its -v summary in err, the store's part of the budget line in found and
 * the limit said there (checked to be the budget asked); the benign Python beside them is in the
 * profile. */
static void run_under_target_budget(const char *attack, int budget_mib, const char *seconds, const char *store,
				    struct summary_store *found, double *limit, char *err, size_t err_len)
{
	char out[PATH_MAX], budget_arg[16];
	char *profile[] = { (char *)pybpfprof_binary(), "-v", "--target-budget", budget_arg, "-d", (char *)seconds,
			    "-o", out, NULL };
	double peak;
	int status;

	if (geteuid() != 0 || access(HOSTILE_PYTHON, X_OK))
		skip();
	FORMAT(out, "%s/budget-%d.%d.collapsed", test_tmpdir(), budget_mib, (int)getpid());
	snprintf(budget_arg, sizeof(budget_arg), "%d", budget_mib);
	status = run_against_attack(attack, 4, profile, err, err_len);
	if (status)
		fail_msg("the profiler exited %d: %s", status, err);
	parse_budget_line(err, store, limit, &peak, found);
	assert_true(*limit == (double)budget_mib * (1 << 20));
	assert_true(profile_has_function(out, "benign_work"));
	unlink(out);
}

/*
 * The whole-host profiler, its target budget 2 MiB, while four processes as nobody show a
 * stack never seen before at every sample (some 70 KB resolved, where the resolver kept up
 * to 16 MiB of them beside the budget): the resolved stacks are charged to the budget, evicted
 * (or refused) past their share of it, and a benign Python beside them is still profiled.
 */
static void distinct_stacks_stay_within_the_target_budget(void **state)
{
	char err[32768];
	struct summary_store stacks;
	double limit;

	(void)state;
	run_under_target_budget(DISTINCT_STACKS_ATTACK, STACKS_BUDGET_MIB, "8", "resolved stacks", &stacks, &limit, err,
				sizeof(err));
	assert_true(stacks.peak >= 0 && stacks.peak <= limit / 100 * SAMPLE_RESOLVE_STACKS_BUDGET_SHARE_PERCENT);
	assert_true(stacks.evictions + stacks.refused > 0);
}

/*
 * The same attack at 5 kHz unthrottled, the target budget 1 MiB: the profiler resolves records
 * far slower than they come (each one's code objects read again, the budget keeping none), so
 * its drains never found the ring empty, and a run asked for 4 s went on until killed. It ends
 * now, says that it fell behind, and counts what the ring dropped meanwhile.
 */
static void a_run_behind_its_samples_still_ends(void **state)
{
	char out[PATH_MAX], err[32768];
	char *profile[] = { (char *)pybpfprof_binary(), "-v", "-F", "5000", "--max-overhead", "0",
			    "--target-budget", "1", "-d", "4", "-o", out, NULL };
	int status;

	(void)state;
	if (geteuid() != 0 || access(HOSTILE_PYTHON, X_OK))
		skip();
	FORMAT(out, "%s/behind.%d.collapsed", test_tmpdir(), (int)getpid());
	status = run_against_attack(DISTINCT_STACKS_ATTACK, 4, profile, err, sizeof(err));
	if (status)
		fail_msg("the profiler exited %d (137: killed, %d s after its start): %s", status, RUN_OVERDUE_S, err);
	/* said to every user, not only with -v: the end of the run may be missing */
	if (!strstr(err, "resolving fell behind the samples") || !strstr(err, "drains stopped at their time limit"))
		fail_msg("the summary does not say the profiler fell behind: %s", err);
	assert_true(profile_has_function(out, "benign_work"));
	unlink(out);
}

/* Four processes, each with 12,000 executable mappings (anonymous pages made executable one in
 * two, so that none merge): 192 KB of ranges each that the unwinder keeps per process, 768 KB
 * together, more than their share of a 1 MiB budget whatever the other stores hold. */
#define MAPPINGS_ATTACK                                                                         \
	"import ctypes, os, time\n"                                                             \
	"libc = ctypes.CDLL(None, use_errno=True)\n"                                            \
	"libc.mmap.restype = ctypes.c_void_p\n"                                                 \
	"libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,\n" \
	"                      ctypes.c_int, ctypes.c_long]\n"                                  \
	"libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]\n"           \
	"PAGE, COUNT = 4096, 12000\n"                                                           \
	"base = libc.mmap(None, 2 * COUNT * PAGE, 1, 0x22, -1, 0)\n"                            \
	"for i in range(COUNT):\n"                                                              \
	"    if libc.mprotect(base + 2 * i * PAGE, PAGE, 5):\n"                                 \
	"        raise SystemExit('mprotect failed')\n"                                         \
	"for _ in range(3):\n"                                                                  \
	"    if os.fork() == 0:\n"                                                              \
	"        break\n"                                                                       \
	"os.write(1, b'ready\\n')\n"                                                          \
	"while True:\n"                                                                         \
	"    time.sleep(1)\n"
#define MAPPINGS_BUDGET_MIB 1

/*
 * The whole-host profiler, its target budget 1 MiB, while four processes as nobody hold 12,000
 * executable mappings each (which the unwinder kept per process beside the budget): the
 * process mappings are charged to the budget, which refuses the reads that do not fit
 * (counted) and never holds more than its limit of them, and a benign Python beside them is
 * still profiled (10 s: discovery reads the attackers' 48,000 maps lines too, some seconds on
 * a loaded machine).
 */
static void executable_mappings_stay_within_the_target_budget(void **state)
{
	char err[32768];
	struct summary_store mappings;
	double limit;

	(void)state;
	run_under_target_budget(MAPPINGS_ATTACK, MAPPINGS_BUDGET_MIB, "10", "process mappings", &mappings, &limit, err,
				sizeof(err));
	/* (the refused reads: those past their share of the limit, see unwind_cache.h) */
	assert_true(mappings.peak >= 0 && mappings.peak <= limit / 100 * UNWIND_CACHE_BUDGET_SHARE_PERCENT);
	assert_true(mappings.refused > 0);
	if (!strstr(err, "maps reads refused by the target budget"))
		fail_msg("no refused maps reads in the summary: %s", err);
}

struct forgetting {
	struct symbolize_py_cache *cache;
	size_t forgotten;
};


/* Four processes as nobody, each mapping 16 tiny ELF files of its own named like libpython
 * (discovery reads up to 16 such files of a process, whatever holds its runtime), in dir. */
#define VERDICTS_ATTACK                                                                                        \
	"import mmap, os, struct, sys, time\n"                                                                 \
	"d = '%s'\n"                                                                                           \
	"elf = bytearray(4096)\n"                                                                              \
	"elf[0:64] = struct.pack('<4sBBBBB7xHHIQQQIHHHHHH', b'\\x7fELF', 2, 1, 1, 0, 0, 3, 62, 1, 0, 64, 0, 0, 64, " \
	"56, 1, 64, 0, 0)\n"                                                                                   \
	"elf[64:120] = struct.pack('<IIQQQQQQ', 1, 5, 0, 0, 0, 4096, 4096, 4096)\n"                            \
	"for _ in range(3):\n"                                                                                 \
	"    if os.fork() == 0:\n"                                                                             \
	"        break\n"                                                                                      \
	"keep = []\n"                                                                                          \
	"for i in range(16):\n"                                                                                \
	"    name = os.path.join(d, 'libpython3.99-%%d-%%d.so' %% (os.getpid(), i))\n"                         \
	"    with open(name, 'wb') as f: f.write(elf)\n"                                                       \
	"    fd = os.open(name, os.O_RDONLY)\n"                                                                \
	"    keep.append(mmap.mmap(fd, 4096, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_EXEC))\n" \
	"    os.close(fd)\n"                                                                                   \
	"os.write(1, b'ready\\n')\n"                                                                           \
	"while True:\n"                                                                                        \
	"    time.sleep(1)\n"

/* What discovery's verdicts may take at most: 8192 entries and an index of 16384 slots
 * (py_runtime_file.h), with room for the entries' keys. */
#define VERDICTS_AT_MOST_BYTES ((double)(5u << 19))

/*
 * Discovery's verdicts (kept on its own thread under a fixed cap) are a store on the target
 * budget's line, outside its limit: the whole-host profiler's budget line shows what they
 * take, at least a verdict's bytes for each file examined, at most the cap, while attackers
 * as nobody map files for it to judge.
 */
static void file_verdicts_count_in_the_target_budget(void **state)
{
	char err[32768], dir[64], attack[2048], command[128];
	struct summary_store verdicts;
	unsigned long long examined = 0;
	const char *line;
	double limit;

	(void)state;
	test_make_sticky_dir(dir, sizeof(dir));
	FORMAT(attack, VERDICTS_ATTACK, dir);
	run_under_target_budget(attack, 8, "4", "file verdicts", &verdicts, &limit, err, sizeof(err));
	line = strstr(err, "pybpfprof: discovery: ");
	if (!line || sscanf(line, "pybpfprof: discovery: %llu files examined", &examined) != 1)
		fail_msg("no discovery line in the summary: %s", err);
	if (!strstr(err, "file verdicts ") || !strstr(strstr(err, "file verdicts "), "a fixed cap outside the limit"))
		fail_msg("the file verdicts are not shown as a fixed cap: %s", err);
	print_message("%llu files examined; their verdicts %.0f bytes held (peak %.0f)\n", examined, verdicts.held,
		      verdicts.peak);
	assert_true(examined >= 4 * 16);
	assert_true(verdicts.peak >= (double)examined * sizeof(struct py_runtime_file));
	assert_true(verdicts.peak <= VERDICTS_AT_MOST_BYTES);
	FORMAT(command, "rm -rf %s", dir);
	assert_int_equal(system(command), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(shared_line_tables_stay_within_budget),
		cmocka_unit_test(attackers_share_one_budget),
		cmocka_unit_test(code_names_stay_within_the_target_budget),
		cmocka_unit_test(code_objects_stay_within_the_target_budget),
		cmocka_unit_test(decoded_frames_stay_within_the_target_budget),
		cmocka_unit_test(attackers_fit_in_the_target_budget_beside_other_stores),
		cmocka_unit_test(refused_line_tables_are_never_read),
		cmocka_unit_test(a_run_with_attackers_stays_within_its_target_budget),
		cmocka_unit_test(distinct_stacks_stay_within_the_target_budget),
		cmocka_unit_test(a_run_behind_its_samples_still_ends),
		cmocka_unit_test(executable_mappings_stay_within_the_target_budget),
		cmocka_unit_test(file_verdicts_count_in_the_target_budget),
	};

	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
