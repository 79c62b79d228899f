// SPDX-License-Identifier: MIT
/*
 * asyncio task-aware stacks on real interpreters (3.14+, which publish the _asyncio module's
 * layout; 3.11-3.13 through generated layouts): tests/scripts/async_tasks.py runs named tasks from gather and from a TaskGroup, a
 * plain await chain and a task awaited as such, each CPU-bound in a coroutine of its own; the profile must read root to
 * leaf as the tasks awaiting one another, "<task NAME>" then the task's coroutines, with the
 * event loop's frames gone (kept with --async-plumbing). A hostile target (an awaited_by cycle,
 * a task name whose length field is absurd) must do no harm.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testlib.h"
#include "formats/format_registry.h"
#include "profile/profile.h"

#define MAX_PYTHONS 32
/* Shares of the CPU-bound samples that must read as their task chain: the rest are samples of a
 * task that finished before its record was drained, or taken while its chain was being set up. */
#define CHAIN_SHARE_MIN 0.8

static struct test_python pythons[MAX_PYTHONS];
static size_t python_count;
static const char *const async_labels[] = { "3.14", "3.15" };

/* The samples, by weight, of a collapsed profile: those whose stack holds `part`, and of those the
 * ones that also hold every one of `wanted` in this order. */
struct chain_count {
	unsigned long long with_part, in_chain;
};

/* Whether the text holds each of wanted in order (NULL-terminated). */
static bool holds_in_order(const char *text, const char *const *wanted)
{
	for (size_t i = 0; wanted[i]; i++) {
		const char *found = strstr(text, wanted[i]);

		if (!found)
			return false;
		text = found + strlen(wanted[i]);
	}
	return true;
}

static FILE *open_collapsed(const char *path)
{
	FILE *file = fopen(path, "r");

	if (!file)
		fail_msg("%s: cannot open", path);
	return file;
}

/* The next "stack weight" line of a collapsed file: the stack left in *line, its weight in
 * *weight; false at the end. */
static bool next_stack(FILE *file, char **line, size_t *room, unsigned long long *weight)
{
	while (getline(line, room, file) > 0) {
		char *space = strrchr(*line, ' ');

		if (!space)
			continue;
		*space = 0;
		*weight = strtoull(space + 1, NULL, 10);
		return true;
	}
	return false;
}

static struct chain_count count_chain(const char *path, const char *part, const char *const *wanted)
{
	struct chain_count count = { 0, 0 };
	FILE *file = open_collapsed(path);
	unsigned long long value;
	char *line = NULL;
	size_t room = 0;

	while (next_stack(file, &line, &room, &value)) {
		if (!strstr(line, part))
			continue;
		count.with_part += value;
		if (holds_in_order(line, wanted))
			count.in_chain += value;
	}
	free(line);
	fclose(file);
	return count;
}

static void assert_chain_share(const char *label, const char *path, const char *part, const char *const *wanted)
{
	struct chain_count count = count_chain(path, part, wanted);

	print_message("%s: %s: %llu of %llu us in the task chain\n", label, part, count.in_chain, count.with_part);
	if (count.with_part == 0)
		fail_msg("%s: %s: no sample of %s", label, path, part);
	if ((double)count.in_chain < CHAIN_SHARE_MIN * (double)count.with_part)
		fail_msg("%s: %s: only %llu of %llu us of %s under its task chain", label, path, count.in_chain,
			 count.with_part, part);
}

/* Weight of the samples holding both a and b (b NULL: a alone). */
static unsigned long long weight_holding(const char *path, const char *a, const char *b)
{
	const char *const wanted[] = { a, b, NULL };

	return count_chain(path, a, wanted).in_chain;
}

/* The pybpfprof command line (split in place) run to its end, which must succeed. */
static void run_pybpfprof(const char *label, char *command)
{
	char err[4096], *argv[32];
	int status;

	split_command(command, argv, 32);
	status = run_capture(argv, err, sizeof(err));
	if (status != 0)
		fail_msg("%s: pybpfprof exited %d: %s", label, status, err);
}

/* pybpfprof -p PID for seconds into a collapsed file (extra: an option or ""). */
static void record_collapsed(const char *label, pid_t pid, const char *extra, const char *path)
{
	char command[PATH_MAX * 2];

	FORMAT(command, "%s -q %s -p %d -d 2.5 -o %s", pybpfprof_binary(), extra, (int)pid, path);
	run_pybpfprof(label, command);
}

static const char *const gathered_chain[] = { "<asyncio>:<task Task-1>:0;", ":main:", ":gather_round:",
					      "<asyncio>:<task gathered-", ":gathered_worker:",
					      ":crunch_gathered:", NULL };
static const char *const grouped_chain[] = { "<asyncio>:<task Task-1>:0;", ":main:", ":group_round:",
					     "TaskGroup._aexit:", "<asyncio>:<task grouped-", ":grouped_worker:",
					     ":crunch_grouped:", NULL };
/* 3.11-3.13's TaskGroup waits in __aexit__ itself */
static const char *const grouped_chain_311[] = { "<asyncio>:<task Task-1>:0;", ":main:", ":group_round:",
						 "TaskGroup.__aexit__:", "<asyncio>:<task grouped-", ":grouped_worker:",
						 ":crunch_grouped:", NULL };

static bool before_314(const struct test_python *python)
{
	return strcmp(python->label, "3.14") < 0;
}
static const char *const await_chain[] = { "<asyncio>:<task Task-1>:0;", ":main:", ":chain_top:",
					   ":chain_middle:", ":chain_leaf:", NULL };
static const char *const awaited_task_chain[] = { "<asyncio>:<task Task-1>:0;", ":main:", ":await_round:",
						  "<asyncio>:<task awaited>:0;", ":awaited_worker:",
						  ":crunch_awaited:", NULL };

/*
 * Samples (in us of CPU: 1 ms each) each leaf of the script must have before its share is judged.
 * A loaded host may give the target a few percent of a CPU, leaving a leaf a handful of samples
 * per recording: a share of 5 samples is luck, so the recordings go on until each leaf has this
 * many, at most RECORDINGS_MAX of them.
 */
#define LEAF_US_MIN 40000ull
#define RECORDINGS_MAX 12
static const char *const script_leaves[] = { ":crunch_gathered:", ":crunch_grouped:", ":chain_leaf:",
					     ":crunch_awaited:", NULL };

/* The collapsed file from appended to the end of to (collapsed lines add up). */
static void append_collapsed(const char *from, const char *to)
{
	FILE *in = open_collapsed(from), *out = fopen(to, "a");
	char buffer[65536];
	size_t got;

	if (!out)
		fail_msg("%s: cannot open", to);
	while ((got = fread(buffer, 1, sizeof(buffer), in)) > 0)
		assert_int_equal(fwrite(buffer, 1, got, out), got);
	fclose(in);
	assert_int_equal(fclose(out), 0);
}

/* Whether every leaf of the script has LEAF_US_MIN in path. */
static bool every_leaf_sampled(const char *path)
{
	if (access(path, R_OK) != 0)
		return false;
	for (size_t i = 0; script_leaves[i]; i++)
		if (weight_holding(path, script_leaves[i], NULL) < LEAF_US_MIN)
			return false;
	return true;
}

/* async_tasks.py (with args) run by python, recorded into hidden, then with its loop's plumbing
 * kept into shown; again, both appended, until each file has every leaf LEAF_US_MIN. */
static void record_plumbing_both_ways(const struct test_python *python, const char *args, const char *hidden,
				      const char *shown)
{
	struct test_target target;
	char part[PATH_MAX];
	int recordings = 0;

	FORMAT(part, "%s/async-part-%s.collapsed", test_tmpdir(), python->label);
	unlink(hidden);
	unlink(shown);
	target.pid = test_start_ready_script(python, "async_tasks.py", args, &target.out_fd);
	do {
		if (!every_leaf_sampled(hidden)) {
			record_collapsed(python->label, target.pid, "", part);
			append_collapsed(part, hidden);
		}
		if (!every_leaf_sampled(shown)) {
			record_collapsed(python->label, target.pid, "--async-plumbing", part);
			append_collapsed(part, shown);
		}
	} while (++recordings < RECORDINGS_MAX && !(every_leaf_sampled(hidden) && every_leaf_sampled(shown)));
	test_stop_target(&target);
	print_message("%s: %d recordings of each kind\n", python->label, recordings);
}

/* The script's three task chains, each under most of its leaf's samples in path. */
static void assert_task_chains(const struct test_python *python, const char *path)
{
	assert_chain_share(python->label, path, ":crunch_gathered:", gathered_chain);
	assert_chain_share(python->label, path, ":crunch_grouped:", before_314(python) ? grouped_chain_311 : grouped_chain);
	assert_chain_share(python->label, path, ":chain_leaf:", await_chain);
	assert_chain_share(python->label, path, ":crunch_awaited:", awaited_task_chain);
}

static void task_stacks(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	char hidden[PATH_MAX], shown[PATH_MAX];

	FORMAT(hidden, "%s/async-%s.collapsed", test_tmpdir(), python->label);
	FORMAT(shown, "%s/async-plumbing-%s.collapsed", test_tmpdir(), python->label);
	record_plumbing_both_ways(python, "600", hidden, shown);

	assert_task_chains(python, hidden);
	/* both gathered tasks and both grouped ones by name */
	assert_true(weight_holding(hidden, "<task gathered-a>", ":crunch_gathered:") > 0);
	assert_true(weight_holding(hidden, "<task gathered-b>", ":crunch_gathered:") > 0);
	assert_true(weight_holding(hidden, "<task grouped-a>", ":crunch_grouped:") > 0);
	assert_true(weight_holding(hidden, "<task grouped-b>", ":crunch_grouped:") > 0);
	/* the loop's plumbing: gone above a task chain by default, kept above it on request */
	assert_int_equal(weight_holding(hidden, "_run_once:", "<task "), 0);
	assert_int_equal(weight_holding(hidden, "Handle._run:", "<task "), 0);
	assert_chain_share(python->label, shown, ":crunch_gathered:",
			   (const char *const[]){ ":BaseEventLoop.run_forever:", ":BaseEventLoop._run_once:",
						  ":Handle._run:", "<task Task-1>", ":gather_round:",
						  "<task gathered-", ":crunch_gathered:", NULL });
}

/* Occurrences of needle in the stack lines of path holding part, the most in one line. */
static size_t most_in_a_line(const char *path, const char *part, const char *needle)
{
	FILE *file = open_collapsed(path);
	unsigned long long weight;
	char *line = NULL;
	size_t room = 0, most = 0;

	while (next_stack(file, &line, &room, &weight)) {
		size_t count = 0;

		if (!strstr(line, part))
			continue;
		for (const char *at = strstr(line, needle); at; at = strstr(at + 1, needle))
			count++;
		if (count > most)
			most = count;
	}
	free(line);
	fclose(file);
	return most;
}

/*
 * A target (as nobody) whose tasks' awaited_by links form cycles, a chain of 100 tasks or point at
 * unmapped memory, and whose task name's length field claims 2**40 characters: the profiler runs
 * to its end and each spinning task's stack reads as far as its chain is sound and bounded, the
 * name cut.
 */
static void hostile_tasks(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	struct test_target target;
	char path[PATH_MAX], name[300] = "<task ";

	if (strcmp(python->kind, "chroot") != 0)
		skip();
	FORMAT(path, "%s/async-hostile-%s.collapsed", test_tmpdir(), python->label);
	setenv("PYBPFPROF_RUN_AS_NOBODY", "1", 1);
	target.pid = test_start_ready_script(python, "async_hostile.py", "", &target.out_fd);
	unsetenv("PYBPFPROF_RUN_AS_NOBODY");
	record_collapsed(python->label, target.pid, "", path);
	test_stop_target(&target);

	/* two tasks awaiting each other: each once, the awaiting one outermost */
	assert_true(weight_holding(path, "<asyncio>:<task cyclic-b>:0;", "<asyncio>:<task cyclic-a>:0;") > 0);
	assert_int_equal(most_in_a_line(path, "<task cyclic-a>", "<task cyclic-a>"), 1);
	assert_int_equal(most_in_a_line(path, "<task cyclic-a>", "<task cyclic-b>"), 1);
	/* a task awaiting itself, one awaited by unmapped memory: themselves alone */
	assert_true(weight_holding(path, "<asyncio>:<task itself>:0;", ":spin_forever:") > 0);
	assert_int_equal(most_in_a_line(path, "<task itself>", "<task "), 1);
	assert_true(weight_holding(path, "<asyncio>:<task unmapped>:0;", ":spin_forever:") > 0);
	assert_int_equal(most_in_a_line(path, "<task unmapped>", "<task "), 1);
	/* a chain of 100 tasks: its 32 innermost */
	assert_true(weight_holding(path, "<asyncio>:<task deep-31>:0;", "<asyncio>:<task deep-0>:0;") > 0);
	assert_int_equal(most_in_a_line(path, "<task deep-0>", "<task "), 32);
	/* the name claiming 2**40 characters: its first 256 */
	for (int i = 0; i < 64; i++)
		strcat(name, "huge");
	strcat(name, ">:0;");
	assert_true(weight_holding(path, name, ":spin_forever:") > 0);
}

/*
 * 3.11-3.13, whose awaiting tasks are found through done callbacks: a target (as nobody) whose
 * tasks' callbacks claim cycles, a chain of 100 tasks, a task awaiting itself through a closure's
 * future, a parent that is no task, and a first callback in unmapped memory, and whose task
 * name's length field claims 2**40 characters: the profiler runs to its end and each spinning
 * task's stack reads as far as its chain is sound and bounded (a long one within the reads a
 * chain may cost), the name cut. Its set of all tasks also holds 20000 futures and its
 * _eager_tasks claims 2**40 slots in unmapped memory, and its thread's dict holds 5000 entries
 * before the running loop's: `stacks` and wall mode with every waiting task run to their end.
 */
static void hostile_callbacks(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	struct test_target target;
	char path[PATH_MAX], wall[PATH_MAX], command[PATH_MAX * 2], name[300] = "<task ";
	size_t deep;

	FORMAT(path, "%s/async-hostile-callbacks-%s.collapsed", test_tmpdir(), python->label);
	FORMAT(wall, "%s/async-hostile-callbacks-wall-%s.collapsed", test_tmpdir(), python->label);
	setenv("PYBPFPROF_RUN_AS_NOBODY", "1", 1);
	target.pid = test_start_ready_script(python, "async_hostile_callbacks.py", "", &target.out_fd);
	unsetenv("PYBPFPROF_RUN_AS_NOBODY");
	record_collapsed(python->label, target.pid, "", path);
	record_collapsed(python->label, target.pid, "--mode wall --async-mode all", wall);
	FORMAT(command, "%s stacks --json %d > /dev/null", pybpfprof_binary(), (int)target.pid);
	assert_int_equal(system(command), 0);
	test_stop_target(&target);

	/* the running tasks' chains, as without wall mode (the waiting ones may be cut off: only
	 * the first 4096 slots of the set of 20000 are looked at) */
	assert_true(weight_holding(wall, "<asyncio>:<task cyclic-b>:0;", "<asyncio>:<task cyclic-a>:0;") > 0);
	assert_true(weight_holding(wall, "<asyncio>:<task deep-7>:0;", "<asyncio>:<task deep-0>:0;") > 0);

	/* two tasks awaiting each other: each once, the awaiting one outermost */
	assert_true(weight_holding(path, "<asyncio>:<task cyclic-b>:0;", "<asyncio>:<task cyclic-a>:0;") > 0);
	assert_int_equal(most_in_a_line(path, "<task cyclic-a>", "<task cyclic-a>"), 1);
	assert_int_equal(most_in_a_line(path, "<task cyclic-a>", "<task cyclic-b>"), 1);
	/* awaiting itself (directly, or through a closure's future), a parent that is no task, an
	 * unmapped callback: themselves alone */
	assert_true(weight_holding(path, "<asyncio>:<task itself>:0;", ":spin_forever:") > 0);
	assert_int_equal(most_in_a_line(path, "<task itself>", "<task "), 1);
	assert_true(weight_holding(path, "<asyncio>:<task closed>:0;", ":spin_forever:") > 0);
	assert_int_equal(most_in_a_line(path, "<task closed>", "<task "), 1);
	assert_true(weight_holding(path, "<asyncio>:<task not-a-task>:0;", ":spin_forever:") > 0);
	assert_int_equal(most_in_a_line(path, "<task not-a-task>", "<task "), 1);
	assert_true(weight_holding(path, "<asyncio>:<task unmapped>:0;", ":spin_forever:") > 0);
	assert_int_equal(most_in_a_line(path, "<task unmapped>", "<task "), 1);
	/* a chain of 100 tasks: its innermost ones, at most 32 (fewer when its reads run out) */
	deep = most_in_a_line(path, "<task deep-0>", "<task ");
	print_message("%s: the chain of 100 reads as %zu tasks\n", python->label, deep);
	assert_true(deep >= 8 && deep <= 32);
	assert_true(weight_holding(path, "<asyncio>:<task deep-7>:0;", "<asyncio>:<task deep-0>:0;") > 0);
	/* the name claiming 2**40 characters: its first 256 */
	for (int i = 0; i < 64; i++)
		strcat(name, "huge");
	strcat(name, ">:0;");
	assert_true(weight_holding(path, name, ":spin_forever:") > 0);
}

/*
 * `stacks PID` shows the event loop's task tree: which task awaits which, where each is suspended
 * (the JSON checked by tests/scripts/async_tree_check.py), and the text names them. The script
 * spends a fifth of its time in a round without child tasks: a few looks find a tree.
 */
static void stacks_task_tree(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	struct test_target target;
	char json[PATH_MAX], command[PATH_MAX * 2 + 64], verdict[256] = "", text[65536], err[4096];
	bool tree = false;

	FORMAT(json, "%s/async-tree-%s.json", test_tmpdir(), python->label);
	target.pid = test_start_ready_script(python, "async_tasks.py", "60", &target.out_fd);
	for (int look = 0; look < 20 && !tree; look++) {
		FILE *check;

		FORMAT(command, "%s stacks --json %d > %s", pybpfprof_binary(), (int)target.pid, json);
		assert_int_equal(system(command), 0);
		FORMAT(command, "python3 %s/tests/scripts/async_tree_check.py %s", test_source_dir(), json);
		check = popen(command, "r");
		assert_non_null(check);
		if (!fgets(verdict, sizeof(verdict), check))
			verdict[0] = 0;
		assert_int_equal(pclose(check), 0);
		print_message("%s: look %d: %s", python->label, look, verdict);
		tree = strncmp(verdict, "tree", 4) == 0;
	}
	{
		char pid_text[16];
		char *argv[] = { (char *)pybpfprof_binary(), "stacks", pid_text, NULL };

		FORMAT(pid_text, "%d", (int)target.pid);
		assert_int_equal(run_capture_both(argv, text, sizeof(text), err, sizeof(err)), 0);
	}
	test_stop_target(&target);
	if (!tree)
		fail_msg("%s: no look at the tasks found the script's tree (last: %s)", python->label, verdict);
	if (!strstr(text, "asyncio tasks") || !strstr(text, "(T) Task-1"))
		fail_msg("%s: stacks printed no task tree:\n%s", python->label, text);
}

/*
 * `stacks --json PID` checked by tests/scripts/CHECKER (with args) up to looks times until its
 * verdict starts with want; every verdict must not start with never (NULL: any may). The last
 * verdict into verdict[size]; whether want was seen.
 */
static bool look_at_tasks(const struct test_python *python, pid_t pid, const char *checker, const char *args,
			  const char *want, const char *never, int looks, char *verdict, size_t size)
{
	char json[PATH_MAX], command[PATH_MAX * 3];

	FORMAT(json, "%s/async-look-%s.json", test_tmpdir(), python->label);
	for (int look = 0; look < looks; look++) {
		FILE *check;

		FORMAT(command, "%s stacks --json %d > %s", pybpfprof_binary(), (int)pid, json);
		assert_int_equal(system(command), 0);
		FORMAT(command, "python3 %s/tests/scripts/%s %s %s", test_source_dir(), checker, json, args);
		check = popen(command, "r");
		assert_non_null(check);
		if (!fgets(verdict, (int)size, check))
			verdict[0] = 0;
		assert_int_equal(pclose(check), 0);
		print_message("%s: look %d: %s", python->label, look, verdict);
		if (never && strncmp(verdict, never, strlen(never)) == 0)
			fail_msg("%s: %s", python->label, verdict);
		if (strncmp(verdict, want, strlen(want)) == 0)
			return true;
	}
	return false;
}

/*
 * `stacks PID` of a process whose thread ran a loop and exited, leaving its tasks pending (alive,
 * the loop kept): no look lists a task of that loop or of a thread that is not running one, and
 * both live threads' loops are listed, each with its tree.
 */
static void stacks_exited_thread_tasks(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	struct test_target target;
	char ready[128], tids[64], verdict[256] = "";
	unsigned live_1 = 0, live_2 = 0;
	bool tree;

	target.pid = test_start_ready_script_line(python, "async_threads.py", "", &target.out_fd, ready, sizeof(ready));
	if (sscanf(ready, "ready %u %u", &live_1, &live_2) != 2)
		fail_msg("%s: the script said '%s'", python->label, ready);
	FORMAT(tids, "%u %u", live_1, live_2);
	/* the trees should be there at the first look: a few, in case one catches a loop mid-step */
	tree = look_at_tasks(python, target.pid, "async_threads_check.py", tids, "tree", "stale", 5, verdict,
			     sizeof(verdict));
	test_stop_target(&target);
	if (!tree)
		fail_msg("%s: no look found both live loops' trees (last: %s)", python->label, verdict);
}

/*
 * A task awaited by two tasks: `stacks --json` lists both as awaiting it (awaited_by the first,
 * the one its samples go up through), and the text shows it under each (once in full).
 */
static void stacks_shared_task(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	struct test_target target;
	char verdict[256] = "", text[65536], err[4096], pid_text[16];
	char *argv[] = { (char *)pybpfprof_binary(), "stacks", pid_text, NULL };
	bool shared;
	const char *first, *second;

	target.pid = test_start_ready_script(python, "async_shared.py", "", &target.out_fd);
	shared = look_at_tasks(python, target.pid, "async_shared_check.py", "", "shared", NULL, 5, verdict,
			       sizeof(verdict));
	FORMAT(pid_text, "%d", (int)target.pid);
	assert_int_equal(run_capture_both(argv, text, sizeof(text), err, sizeof(err)), 0);
	test_stop_target(&target);
	if (!shared)
		fail_msg("%s: the shared task was not listed under both its waiters (last: %s)", python->label, verdict);
	/* in full under one waiter, named under the other */
	first = strstr(text, "(shared: awaited by 2 tasks)\n");
	second = strstr(text, "(T) shared (shared: awaited by 2 tasks, shown under waiter-");
	if (!first || !second)
		fail_msg("%s: stacks did not show the shared task under both waiters:\n%s", python->label, text);
}

/* Weight of the stack lines of path whose stack ends with leaf (its last frame's "file:function:"). */
static unsigned long long weight_ending(const char *path, const char *holding, const char *leaf)
{
	FILE *file = open_collapsed(path);
	unsigned long long weight = 0, value;
	char *line = NULL;
	size_t room = 0;

	while (next_stack(file, &line, &room, &value)) {
		const char *last = strrchr(line, ';');

		last = last ? last + 1 : line;
		if (strstr(line, holding) && strstr(last, leaf))
			weight += value;
	}
	free(line);
	fclose(file);
	return weight;
}

/* async_tasks.py run by python, recorded for a while with options into the collapsed file path. */
static void record_async_tasks(const struct test_python *python, const char *options, const char *path)
{
	struct test_target target;

	target.pid = test_start_ready_script(python, "async_tasks.py", "60", &target.out_fd);
	record_collapsed(python->label, target.pid, options, path);
	test_stop_target(&target);
}

/*
 * Wall mode with --async-mode all: each task that is not running is a sample of where it is
 * suspended, under the tasks awaiting it (without it, threads only: none under a waiting task). The script's workers crunch one after the other: while one does, the
 * other is suspended in asyncio.sleep (or not started yet), and the main task in the round.
 */
static void wall_pending_tasks(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	unsigned long long waiting_gathered, waiting_grouped, running_gathered, running_grouped;
	char path[PATH_MAX];

	FORMAT(path, "%s/async-wall-%s.collapsed", test_tmpdir(), python->label);
	record_async_tasks(python, "--mode wall --async-mode all", path);

	/* a worker waiting in sleep while its sibling crunches: under its task and the main one */
	assert_true(weight_holding(path, "<asyncio>:<task Task-1>:0;", "<asyncio>:<task gathered-") > 0);
	waiting_gathered = weight_ending(path, "<task gathered-", "asyncio/tasks.py:sleep:");
	waiting_grouped = weight_ending(path, "<task grouped-", "asyncio/tasks.py:sleep:");
	assert_true(waiting_gathered > 0);
	assert_true(waiting_grouped > 0);
	/* the main task itself, suspended in its round's await */
	assert_true(weight_ending(path, "<asyncio>:<task Task-1>:0;", ":gather_round:") > 0);
	assert_true(weight_ending(path, "<asyncio>:<task Task-1>:0;",
				  before_314(python) ? "TaskGroup.__aexit__:" : "TaskGroup._aexit:") > 0);
	/* a pending task is where it waits, never in the crunch its sibling runs */
	assert_int_equal(weight_holding(path, ":sleep:", ":spin:"), 0);

	/* by default (--async-mode running) threads only: a task is in sleep's frame only while it
	 * runs its first lines (making the future it then waits on), microseconds a call, which
	 * a tick now and then lands in (a fresh-clone run: one sample of 3.14's); never the whole
	 * wait, as above */
	FORMAT(path, "%s/async-wall-running-%s.collapsed", test_tmpdir(), python->label);
	record_async_tasks(python, "--mode wall", path);
	assert_true(weight_holding(path, "<task gathered-", ":crunch_gathered:") > 0);
	running_gathered = weight_ending(path, "<task gathered-", "asyncio/tasks.py:sleep:");
	running_grouped = weight_ending(path, "<task grouped-", "asyncio/tasks.py:sleep:");
	print_message("%s: in sleep, waiting (all tasks) %llu and %llu us, running (default) %llu and %llu us\n",
		      python->label, waiting_gathered, waiting_grouped, running_gathered, running_grouped);
	assert_true(running_gathered * 4 < waiting_gathered);
	assert_true(running_grouped * 4 < waiting_grouped);
}

/* How close the share of db_call in the requests' samples must be to what they measured (a
 * waiting task's stack is read when its thread's record is drained: see tests/e2e/test_services.c). */
#define WAIT_SHARE_POINTS 0.10

/*
 * Wall mode with every waiting task: tests/scripts/async_waits.py's 16 clients each await one
 * request task after another, which waits 5-15 ms in db_call then 20-40 ms in render. The share
 * of the requests' samples in db_call is the share of their wall time they measured there
 * (within WAIT_SHARE_POINTS), each under its "<task request-N>" frame: a task that moved from
 * one sleep to the next is where it waits now, not where it waited before.
 */
static void wall_waiting_share(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	unsigned long long rounds, in_db, db_ns = 0, round_ns = 0;
	struct test_target target;
	char path[PATH_MAX], line[128];
	struct pollfd truth;
	ssize_t got;

	line[0] = 0;
	double share, measured;

	FORMAT(path, "%s/async-waits-%s.collapsed", test_tmpdir(), python->label);
	target.pid = test_start_ready_script(python, "async_waits.py", "", &target.out_fd);
	record_collapsed(python->label, target.pid, "--mode wall --async-mode all", path);
	assert_int_equal(kill(target.pid, SIGUSR1), 0);
	/* the script's answer: the line of two numbers after whatever else it wrote */
	for (size_t used = 0; used < sizeof(line) - 1;) {
		char *last;

		truth = (struct pollfd){ .fd = target.out_fd, .events = POLLIN };
		if (poll(&truth, 1, 60000) != 1 || (got = read(target.out_fd, line + used, sizeof(line) - 1 - used)) <= 0)
			break;
		used += (size_t)got;
		line[used] = 0;
		last = used > 1 ? memrchr(line, '\n', used - 1) : NULL;
		if (line[used - 1] == '\n' && sscanf(last ? last + 1 : line, "%llu %llu", &db_ns, &round_ns) == 2)
			break;
	}
	test_stop_target(&target);
	if (round_ns == 0)
		fail_msg("%s: the requests said no times: '%s'", python->label, line);

	rounds = weight_holding(path, "<task request-", ":handle_request:");
	in_db = count_chain(path, ":handle_request:",
			    (const char *const[]){ "<task request-", ":handle_request:", ":db_call:", NULL }).in_chain;
	share = rounds ? (double)in_db / (double)rounds : 0;
	measured = (double)db_ns / (double)round_ns;
	print_message("%s: requests: %llu us sampled, db_call %.1f%% (measured %.1f%%)\n", python->label, rounds,
		      100 * share, 100 * measured);
	/* 16 requests at a time at 100 Hz (10,000 us a sample) for 2.5 s: some 4,000 samples when
	 * nothing is thinned */
	assert_true(rounds >= 1000ull * 10000);
	if (share < measured - WAIT_SHARE_POINTS || share > measured + WAIT_SHARE_POINTS)
		fail_msg("%s: db_call in %.1f%% of the requests' samples, they measured %.1f%%", python->label,
			 100 * share, 100 * measured);
	/* the requests' samples under their task (a running one's may miss it, as in task_stacks) */
	assert_true((double)rounds >= CHAIN_SHARE_MIN * (double)weight_holding(path, ":handle_request:", NULL));
}

/*
 * uvloop (Debian's python3-uvloop, built for sid's 3.14, installed into the chroot by
 * tests/pythons/sid-install.sh): the same chains, the loop's frames (C, uvloop's) gone.
 */
static void uvloop_task_stacks(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	char path[PATH_MAX], shown[PATH_MAX], command[PATH_MAX + 64];

	if (strcmp(python->kind, "chroot") != 0)
		skip();
	FORMAT(command, "%s/tests/pythons/sid-install.sh python3-uvloop", test_source_dir());
	if (system(command) != 0) {
		print_message("%s: python3-uvloop could not be installed in the sid chroot, skipped\n", python->label);
		skip();
	}
	FORMAT(path, "%s/async-uvloop-%s.collapsed", test_tmpdir(), python->label);
	FORMAT(shown, "%s/async-uvloop-plumbing-%s.collapsed", test_tmpdir(), python->label);
	record_plumbing_both_ways(python, "600 0.25 uvloop", path, shown);

	assert_task_chains(python, path);
	/* uvloop's own loop, in C around libuv, runs the tasks: above the chain only when kept */
	assert_true(weight_holding(shown, "uv_run_[n]", "<asyncio>:<task Task-1>:0;") > 0);
	assert_int_equal(weight_holding(path, "uv_run_[n]", "<task "), 0);
	assert_int_equal(weight_holding(path, "runners.py:", "<task "), 0);
}

/*
 * A launched program imports asyncio after the profiler found its runtime: on 3.14, whose
 * _asyncio is an extension mapped at that import, its tasks are recognized once it is mapped.
 */
static void launched_task_stacks(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	char path[PATH_MAX], command[PATH_MAX * 3];
	struct chain_count count;

	FORMAT(path, "%s/async-launched-%s.collapsed", test_tmpdir(), python->label);
	FORMAT(command, "%s -q -o %s -- %s %s/tests/scripts/async_tasks.py 4", pybpfprof_binary(), path,
	       python->command, test_source_dir());
	run_pybpfprof(python->label, command);
	/* the start-up before the module is found may miss its chains: half of the run at least */
	count = count_chain(path, ":crunch_gathered:", gathered_chain);
	print_message("%s: launched: %llu of %llu us of crunch_gathered in its chain\n", python->label,
		      count.in_chain, count.with_part);
	assert_true(count.with_part > 0);
	assert_true(2 * count.in_chain >= count.with_part);
	assert_true(weight_holding(path, "<task grouped-", ":crunch_grouped:") > 0);
}

/* The most a run with a 1 MiB target budget may show for a store: its limit. */
#define CHAIN_BUDGET_MIB 1

/* A size of the -v summary ("12.5 KiB") in bytes; -1 if none. */
static double summary_bytes(const char *text)
{
	double value;
	char unit[8];

	if (!text || sscanf(text, "%lf %7s", &value, unit) != 2)
		return -1;
	if (strncmp(unit, "MiB", 3) == 0)
		return value * (1 << 20);
	if (strncmp(unit, "KiB", 3) == 0)
		return value * (1 << 10);
	return unit[0] == 'B' ? value : -1;
}

/*
 * A target as nobody with 400 tasks each suspended under 60 coroutines of its own (their
 * chains some 4 KiB each, 1.6 MB together), in wall mode with every waiting task, against a
 * 1 MiB target budget: the summary's "task chains" store never held more than the budget,
 * and had to let chains go (or refuse them) to stay there; the waiting tasks are still in
 * the profile, where they wait.
 */
static void chain_budget(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	char path[PATH_MAX], command[PATH_MAX * 2], err[16384], *argv[32], held[32], peak[32];
	unsigned long long evictions = 0, refused = 0;
	struct test_target target;
	const char *line;
	int status;

	if (strcmp(python->kind, "chroot") != 0)
		skip();
	FORMAT(path, "%s/async-chain-budget-%s.collapsed", test_tmpdir(), python->label);
	setenv("PYBPFPROF_RUN_AS_NOBODY", "1", 1);
	target.pid = test_start_ready_script(python, "async_many_pending.py", "60 400 60", &target.out_fd);
	unsetenv("PYBPFPROF_RUN_AS_NOBODY");
	FORMAT(command, "%s -v --target-budget %d --mode wall --async-mode all -p %d -d 3 -o %s", pybpfprof_binary(),
	       CHAIN_BUDGET_MIB, (int)target.pid, path);
	split_command(command, argv, 32);
	status = run_capture(argv, err, sizeof(err));
	test_stop_target(&target);
	if (status != 0)
		fail_msg("%s: pybpfprof exited %d: %s", python->label, status, err);
	line = strstr(err, "task chains ");
	if (!line || sscanf(line, "task chains %31[^(](peak %31[^)]), %llu evictions, %llu refused", held, peak,
			    &evictions, &refused) != 4)
		fail_msg("%s: no task chains in the target budget: %s", python->label, err);
	print_message("%s: task chains %s held (peak %s), %llu evictions, %llu refused\n", python->label, held, peak,
		      evictions, refused);
	assert_true(summary_bytes(peak) > 0 && summary_bytes(peak) <= (double)CHAIN_BUDGET_MIB * (1 << 20));
	assert_true(evictions + refused > 0);
	assert_true(weight_ending(path, "<task many-", "asyncio/tasks.py:sleep:") > 0);
}

/*
 * Tasks that end before their record is drained: short_tasks.py runs 3 ms tasks "alpha-N" and
 * "beta-N" one after the other (each one often made where the last one lay), while the profiler
 * is stopped (SIGSTOP) for 600 ms of every 800: most records are drained long after their task
 * ended. Each task's name is copied at the sample: of the samples surely within a task's run
 * (by the times the script wrote), most are under that task's own frame, and none under
 * another task's.
 */
#define SHORT_TASK_SHARE_MIN 0.9
/* Samples surely within a task's run that the share is judged on: enough not to be luck. */
#define SHORT_TASK_SAMPLES_MIN 300
#define SHORT_TASK_RECORDINGS_MAX 12
/* A sample this close to a task's start or end (the script's clock readings) is not judged. */
#define SHORT_TASK_SLACK_US 500
#define SHORT_TASK_NAME_MAX 32

struct task_run {
	char name[SHORT_TASK_NAME_MAX];
	uint64_t start_us, end_us;
};

struct task_runs {
	struct task_run *runs;
	size_t count;
};

/* The script's runs, in the order they ran (each ends before the next starts). */
static struct task_runs read_task_runs(const char *path)
{
	struct task_runs runs = { NULL, 0 };
	size_t room = 0;
	struct task_run run;
	FILE *file = fopen(path, "r");

	if (!file)
		fail_msg("%s: cannot open", path);
	while (fscanf(file, "%31s %" SCNu64 " %" SCNu64, run.name, &run.start_us, &run.end_us) == 3) {
		if (runs.count == room) {
			room = room ? 2 * room : 4096;
			runs.runs = realloc(runs.runs, room * sizeof(*runs.runs));
			assert_non_null(runs.runs);
		}
		runs.runs[runs.count++] = run;
	}
	fclose(file);
	return runs;
}

/* The run surely under way at time_us, NULL if none. */
static const struct task_run *run_at(const struct task_runs *runs, uint64_t time_us)
{
	size_t low = 0, high = runs->count;

	while (low < high) {
		size_t mid = low + (high - low) / 2;

		if (runs->runs[mid].start_us <= time_us)
			low = mid + 1;
		else
			high = mid;
	}
	if (low == 0)
		return NULL;
	const struct task_run *run = &runs->runs[low - 1];

	return run->start_us + SHORT_TASK_SLACK_US <= time_us && time_us + SHORT_TASK_SLACK_US <= run->end_us ? run : NULL;
}

struct short_task_tally {
	size_t judged, own, other, none;
	char shown[160];
};

/* The name of the innermost task frame of the sample above its frame `below`, NULL if none. */
static const char *task_above(const struct pf_sample *sample, const char *below)
{
	const char *task = NULL;

	for (size_t i = 0; i < sample->frame_count; i++) {
		const struct pf_frame *frame = &sample->frames[i];

		if (frame->kind == PF_FRAME_PYTHON && strcmp(frame->name, below) == 0)
			return task;
		if (strncmp(frame->name, "<task ", 6) == 0 && frame->file && strcmp(frame->file, "<asyncio>") == 0)
			task = frame->name;
	}
	return NULL;
}

/* Judges the samples of a Tachyon profile surely within a task's run against that run. */
static void tally_short_tasks(const char *path, const struct task_runs *runs, struct short_task_tally *tally)
{
	struct pf_reader *reader = test_open_profile(path);
	struct pf_sample sample;
	int got;

	while ((got = pf_reader_next_sample(reader, &sample)) == 1) {
		const struct task_run *run = run_at(runs, sample.timestamp_us);
		const char *leaf = run && run->name[0] == 'a' ? "crunch_alpha" : "crunch_beta";
		char expected[SHORT_TASK_NAME_MAX + 8];
		const char *task;

		if (!run || !test_has_python_frame(&sample, leaf))
			continue;
		tally->judged++;
		task = task_above(&sample, leaf);
		FORMAT(expected, "<task %s>", run->name);
		if (!task) {
			tally->none++;
		} else if (strcmp(task, expected) == 0) {
			tally->own++;
		} else {
			if (!tally->other)
				FORMAT(tally->shown, "%s at %" PRIu64 " us, in %s's run", task, sample.timestamp_us, run->name);
			tally->other++;
		}
	}
	assert_int_equal(got, 0);
	pf_reader_close(reader);
}

/* Whether process pid holds a perf event (pybpfprof opens its sampling events once its BPF
 * programs are loaded: a signal while the verifier runs would fail the load). */
static bool holds_perf_event(pid_t pid)
{
	char dir[64], path[PATH_MAX], link[128];
	struct dirent *entry;
	bool found = false;
	DIR *fds;

	FORMAT(dir, "/proc/%d/fd", (int)pid);
	fds = opendir(dir);
	while (fds && !found && (entry = readdir(fds))) {
		ssize_t len;

		FORMAT(path, "%s/%s", dir, entry->d_name);
		len = readlink(path, link, sizeof(link) - 1);
		if (len > 0) {
			link[len] = 0;
			found = strcmp(link, "anon_inode:[perf_event]") == 0;
		}
	}
	if (fds)
		closedir(fds);
	return found;
}

/* pybpfprof -F 1000 -p pid for 4 s into path (Tachyon), its drain held back by stops once it
 * samples. */
static void record_with_stalled_drain(const struct test_python *python, pid_t pid, const char *path)
{
	char command[PATH_MAX * 2], log[PATH_MAX], *argv[32];
	pid_t profiler;
	int status;

	FORMAT(log, "%s/short-tasks-%s.log", test_tmpdir(), python->label);
	FORMAT(command, "%s -q -F 1000 -p %d -d 4 -o %s", pybpfprof_binary(), (int)pid, path);
	split_command(command, argv, 32);
	profiler = test_spawn(argv, NULL, log);
	assert_true(profiler > 0);
	while (waitpid(profiler, &status, WNOHANG) == 0 && !holds_perf_event(profiler))
		usleep(20 * 1000);
	while (waitpid(profiler, &status, WNOHANG) == 0) {
		usleep(200 * 1000);
		kill(profiler, SIGSTOP);
		usleep(600 * 1000);
		kill(profiler, SIGCONT);
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("%s: pybpfprof ended with status %d (log %s)", python->label, status, log);
}

/* The Tachyon file of recording number `number` of the test on python. */
static void short_task_recording(const struct test_python *python, int number, char *path, size_t len)
{
	snprintf(path, len, "%s/short-tasks-%s-%d.bin", test_tmpdir(), python->label, number);
}

/* The first `recordings` recordings judged against the runs the script wrote by now. */
static struct short_task_tally tally_recordings(const struct test_python *python, int recordings, const char *truth)
{
	struct task_runs runs = read_task_runs(truth);
	struct short_task_tally tally = { 0 };
	char path[PATH_MAX];

	for (int i = 0; i < recordings; i++) {
		short_task_recording(python, i, path, sizeof(path));
		tally_short_tasks(path, &runs, &tally);
	}
	free(runs.runs);
	return tally;
}

static void short_lived_tasks(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	char path[PATH_MAX], truth[PATH_MAX], args[PATH_MAX + 16];
	struct short_task_tally tally = { 0 };
	struct test_target target;
	int recordings = 0;

	/* a chroot's interpreter writes inside it */
	if (strcmp(python->kind, "chroot") == 0) {
		FORMAT(args, "600 0.003 /tmp/pybpfprof-short-tasks-%d-%s.truth", (int)getpid(), python->label);
		FORMAT(truth, "%s%s", SID_CHROOT, strrchr(args, ' ') + 1);
	} else {
		FORMAT(truth, "%s/short-tasks-%s.truth", test_tmpdir(), python->label);
		FORMAT(args, "600 0.003 %s", truth);
	}
	target.pid = test_start_ready_script(python, "short_tasks.py", args, &target.out_fd);
	do {
		short_task_recording(python, recordings, path, sizeof(path));
		record_with_stalled_drain(python, target.pid, path);
		tally = tally_recordings(python, ++recordings, truth);
	} while (recordings < SHORT_TASK_RECORDINGS_MAX && tally.judged < SHORT_TASK_SAMPLES_MIN);
	test_stop_target(&target);
	unlink(truth);
	print_message("%s: %d recordings; %zu samples surely within a task's run: under its own task frame %zu "
		      "(%.1f%%), another task's %zu, none %zu%s%s\n",
		      python->label, recordings, tally.judged, tally.own,
		      tally.judged ? 100.0 * (double)tally.own / (double)tally.judged : 0, tally.other, tally.none,
		      tally.other ? "; first: " : "", tally.shown);
	if (tally.judged < SHORT_TASK_SAMPLES_MIN)
		fail_msg("%s: %zu samples within the tasks' runs in %d recordings, not %d", python->label, tally.judged,
			 recordings, SHORT_TASK_SAMPLES_MIN);
	/* a task frame is never another task's */
	if (tally.other)
		fail_msg("%s: %zu samples under another task's frame: %s", python->label, tally.other, tally.shown);
	if ((double)tally.own < SHORT_TASK_SHARE_MIN * (double)tally.judged)
		fail_msg("%s: %zu of %zu samples under their own task's frame, not >= %.0f%%", python->label, tally.own,
			 tally.judged, 100 * SHORT_TASK_SHARE_MIN);
}

int main(void)
{
	const struct test_per_python kinds[] = {
		{ "task_stacks_", task_stacks },
		{ "hostile_tasks_", hostile_tasks },
		{ "stacks_task_tree_", stacks_task_tree },
		{ "wall_pending_tasks_", wall_pending_tasks },
		{ "launched_task_stacks_", launched_task_stacks },
		{ "wall_waiting_share_", wall_waiting_share },
		{ "chain_budget_", chain_budget },
		{ "stacks_exited_thread_tasks_", stacks_exited_thread_tasks },
		{ "stacks_shared_task_", stacks_shared_task },
		{ "short_lived_tasks_", short_lived_tasks },
	};
	/* 3.11-3.13: their tasks listed from the process's sets of them, by loop */
	static const char *const old_labels[] = { "3.11", "3.12", "3.13" };
	const struct test_per_python old_kinds[] = {
		{ "task_stacks_", task_stacks },
		{ "launched_task_stacks_", launched_task_stacks },
		{ "hostile_callbacks_", hostile_callbacks },
		{ "stacks_task_tree_", stacks_task_tree },
		{ "wall_pending_tasks_", wall_pending_tasks },
		{ "wall_waiting_share_", wall_waiting_share },
		{ "stacks_exited_thread_tasks_", stacks_exited_thread_tasks },
		{ "stacks_shared_task_", stacks_shared_task },
		{ "short_lived_tasks_", short_lived_tasks },
	};
	/* uvloop on /usr/bin/python3.11 (bookworm's 0.17): tests/e2e/test_services.c runs uvicorn on it */
	static const char *const uvloop_labels[] = { "3.14" };
	const struct test_per_python uvloop_kinds[] = {
		{ "uvloop_task_stacks_", uvloop_task_stacks },
	};
	int failed;

	python_count = test_pythons(pythons, MAX_PYTHONS);
	failed = test_run_per_python("async_tasks", async_labels, sizeof(async_labels) / sizeof(async_labels[0]), kinds,
				     sizeof(kinds) / sizeof(kinds[0]));
	failed += test_run_per_python("async_tasks_before_314", old_labels, sizeof(old_labels) / sizeof(old_labels[0]),
				      old_kinds, sizeof(old_kinds) / sizeof(old_kinds[0]));
	return failed + test_run_per_python("async_uvloop", uvloop_labels, 1, uvloop_kinds, 1);
}
