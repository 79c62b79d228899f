// SPDX-License-Identifier: MIT
/*
 * `pybpfprof stacks PID` end to end (real BPF, root), on every supported
 * interpreter on the machine (2.7, 3.6-3.15, Debian's static 3.11): a process with a spinning thread, one in
 * time.sleep and one blocked in os.read on a pipe (tests/scripts/wall_threads.py
 * waits) shows all three with their Python function, the waiting two idle with
 * a kernel frame naming the wait, the spinner running; `--json` parses
 * (python3's json.load) and says the same; a SIGSTOPped process (a hung one)
 * shows every thread stopped in do_signal_stop with its Python frames; a
 * process that is not Python gives exit status 66 and one line. A thread that
 * spins 1 ms and sleeps 1 ms, read over and over, never has a state that
 * contradicts its stack: never idle in state R, never running (on a CPU) with
 * a kernel stack.
 */
#include "testlib.h"


#define SCRIPT "wall_threads.py"
#define MAX_PYTHONS 32
#define OUTPUT_BYTES (256 * 1024)
/* Passes per form before a thread caught between its waits counts as a failure. */
#define ATTEMPTS 5
/* Reads of the flickering thread: each catches it spinning, asleep, or between. */
#define FLICKER_READS 20

static const char *const stacks_labels[] = { "2.7", "3.11-static", "3.12", "3.15" };

static struct test_python pythons[MAX_PYTHONS];
/* What went wrong, for the test's failure once the target is killed. */
static char failure[OUTPUT_BYTES + 1024];
static size_t python_count;

/* ---- the target ---- */

/* Runs the script's waiting threads and returns once it says every thread runs. */
static void start_target(const struct test_python *python, struct test_target *target)
{
	target->pid = test_start_ready_script(python, SCRIPT, "waits", &target->out_fd);
}

/* `pybpfprof stacks [--json] PID` into out; its exit status. */
static int run_stacks(pid_t pid, bool json, char *out, size_t outlen, char *err, size_t errlen)
{
	char pid_text[16];
	char *argv[] = { (char *)pybpfprof_binary(), "stacks", pid_text, NULL, NULL };

	FORMAT(pid_text, "%d", (int)pid);
	if (json) {
		argv[2] = "--json";
		argv[3] = pid_text;
	}
	return run_capture_both(argv, out, outlen, err, errlen);
}

/* The JSON document in the text form (tests/scripts/stacks_json_view.py), into view. */
static bool view_json(const char *label, const char *document, char *view, size_t viewlen)
{
	char path[PATH_MAX], script[PATH_MAX], err[4096];
	char *argv[] = { "python3", script, path, NULL };
	int status;

	FORMAT(path, "%s/stacks-%d.json", test_tmpdir(), (int)getpid());
	FORMAT(script, "%s/tests/scripts/stacks_json_view.py", test_source_dir());
	assert_int_equal(write_whole_file(path, document, strlen(document)), 0);
	status = run_capture_both(argv, view, viewlen, err, sizeof(err));
	unlink(path);
	if (status != 0) {
		snprintf(failure, sizeof(failure), "%s: --json does not read as JSON (%d): %s\n%s", label, status, err,
			 document);
		return false;
	}
	return true;
}

/* ---- what the output shows ---- */

enum { SPINNER, SLEEPER, PIPE_READER, THREAD_KINDS };

static const char *const thread_functions[THREAD_KINDS] = { "spin_forever", "sleep_forever", "read_pipe_forever" };
/* time.sleep is select() up to 3.10 and clock_nanosleep from 3.11 (hrtimer_nanosleep). */
static const char *const sleep_waits[] = { "hrtimer_nanosleep", "do_select", NULL };
static const char *const pipe_waits[] = { "pipe_read", NULL }; /* pipe_read, anon_pipe_read (6.14+) */
static const char *const stop_waits[] = { "do_signal_stop", NULL };
static const char *const *const thread_waits[THREAD_KINDS] = { NULL, sleep_waits, pipe_waits };

/* The block of the thread whose stack holds `function`, from its "Thread" line to the next. */
static bool thread_block(const char *output, const char *function, char *block, size_t size)
{
	char frame[128];
	const char *at, *start, *end;

	FORMAT(frame, "\n    %s (", function);
	at = strstr(output, frame);
	if (!at)
		return false;
	for (start = at; start > output && strncmp(start, "\nThread ", 8) != 0; start--)
		;
	end = strstr(at + 1, "\nThread ");
	if (!end)
		end = output + strlen(output);
	snprintf(block, size, "%.*s", (int)(end - start), start);
	return true;
}

/* A line "    NAME [kernel]" whose name holds one of the parts (NULL-terminated). */
static bool has_kernel_frame(const char *block, const char *const *parts)
{
	for (const char *line = strchr(block, '\n'); line; line = strchr(line + 1, '\n')) {
		const char *end = strchr(line + 1, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		char text[256];

		snprintf(text, sizeof(text), "%.*s", (int)len, line);
		if (!strstr(text, " [kernel]"))
			continue;
		for (const char *const *part = parts; *part; part++)
			if (strstr(text, *part))
				return true;
	}
	return false;
}

#define FAIL_CHECK(...)                                           \
	do {                                                      \
		snprintf(failure, sizeof(failure), __VA_ARGS__); \
		return false;                                     \
	} while (0)

/* stopped: every thread stopped in do_signal_stop; else the spinner runs and the others wait. */
static bool check_threads(const char *label, const char *form, const char *output, bool stopped)
{
	static char block[OUTPUT_BYTES];

	for (int kind = 0; kind < THREAD_KINDS; kind++) {
		const char *function = thread_functions[kind];

		if (!thread_block(output, function, block, sizeof(block)))
			FAIL_CHECK("%s %s: no thread in %s:\n%s", label, form, function, output);
		if (stopped) {
			if (!strstr(block, "(idle: T") || !has_kernel_frame(block, stop_waits))
				FAIL_CHECK("%s %s: %s is not shown stopped:\n%s", label, form, function, block);
			continue;
		}
		if (kind == SPINNER) {
			/* On a CPU, or preempted and waiting for one. */
			if (!strstr(block, "(running") && !strstr(block, "(runnable"))
				FAIL_CHECK("%s %s: the spinner is not running:\n%s", label, form, block);
			continue;
		}
		if (!strstr(block, "(idle: S") || !has_kernel_frame(block, thread_waits[kind]))
			FAIL_CHECK("%s %s: %s is not shown waiting in the kernel:\n%s", label, form, function, block);
	}
	return true;
}

/*
 * One form, a few times over: a waiting thread is sometimes caught between its waits (the
 * sleeper, back from time.sleep, waits for the GIL the spinner holds: futex, not nanosleep);
 * that is a true picture, just not the one checked.
 */
static bool check_form(const char *label, pid_t pid, bool json, bool stopped)
{
	static char output[OUTPUT_BYTES], view[OUTPUT_BYTES];
	const char *form = json ? (stopped ? "json, stopped" : "json") : (stopped ? "text, stopped" : "text");
	char err[4096];

	for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
		int status = run_stacks(pid, json, output, sizeof(output), err, sizeof(err));

		if (status != 0)
			FAIL_CHECK("%s: pybpfprof stacks (%s) exited %d: %s", label, form, status, err);
		if (json && !view_json(label, output, view, sizeof(view)))
			return false;
		if (check_threads(label, form, json ? view : output, stopped))
			return true;
		print_message("%s %s: attempt %d: %.200s...\n", label, form, attempt + 1, failure);
	}
	return false;
}

static void stacks_threads(void **state)
{
	const char *label = *state;
	const struct test_python *python = test_python_find(pythons, python_count, label);
	struct test_target target;
	bool shown;

	if (!python) {
		print_message("%s: interpreter absent, skipped\n", label);
		skip();
	}
	start_target(python, &target);
	shown = check_form(label, target.pid, false, false) && check_form(label, target.pid, true, false);
	/* A hung process: every thread stopped; stacks only reads it, and it stays stopped. */
	kill(target.pid, SIGSTOP);
	shown = shown && check_form(label, target.pid, false, true) && check_form(label, target.pid, true, true);
	test_stop_target(&target);
	if (!shown)
		fail_msg("%s", failure);
}

/* The thread's header and its stack tell one story: a thread on a CPU has no kernel stack to
 * show, and an idle thread is not in state R. Else the contradiction, in failure. */
static bool state_agrees_with_stack(const char *label, const char *form, const char *block)
{
	static const char *const any_kernel_frame[] = { "", NULL };

	if (strstr(block, "(idle: R"))
		FAIL_CHECK("%s %s: idle in state R:\n%s", label, form, block);
	if ((strstr(block, "(running)") || strstr(block, "(running,")) && has_kernel_frame(block, any_kernel_frame))
		FAIL_CHECK("%s %s: running on a CPU, with a kernel stack:\n%s", label, form, block);
	return true;
}

static void stacks_state_agrees(void **state)
{
	static char output[OUTPUT_BYTES], view[OUTPUT_BYTES], block[OUTPUT_BYTES];
	const char *label = *state;
	const struct test_python *python = test_python_find(pythons, python_count, label);
	struct test_target target;
	size_t idle = 0, running = 0;
	char err[4096];
	bool agrees = true;

	if (!python) {
		print_message("%s: interpreter absent, skipped\n", label);
		skip();
	}
	target.pid = test_start_ready_script(python, SCRIPT, "flicker", &target.out_fd);
	for (int read = 0; read < FLICKER_READS && agrees; read++) {
		bool json = read % 2;
		int status = run_stacks(target.pid, json, output, sizeof(output), err, sizeof(err));

		if (status != 0) {
			snprintf(failure, sizeof(failure), "%s: pybpfprof stacks exited %d: %s", label, status, err);
			agrees = false;
		} else if (json && !view_json(label, output, view, sizeof(view))) {
			agrees = false;
		} else if (!thread_block(json ? view : output, "flicker", block, sizeof(block))) {
			snprintf(failure, sizeof(failure), "%s: no thread in flicker:\n%s", label, json ? view : output);
			agrees = false;
		} else {
			agrees = state_agrees_with_stack(label, json ? "json" : "text", block);
			idle += strstr(block, "(idle: ") != NULL;
			running += strstr(block, "(running") != NULL;
		}
	}
	test_stop_target(&target);
	print_message("%s: the flickering thread idle in %zu reads, running in %zu\n", label, idle, running);
	if (!agrees)
		fail_msg("%s", failure);
}

/* A thread name is the target's to choose: shown escaped (text) or as a valid JSON string. */
static void stacks_hostile_name(void **state)
{
	static char output[OUTPUT_BYTES], view[OUTPUT_BYTES];
	const struct test_python *python = test_python_find(pythons, python_count, "3.12");
	char err[4096];
	int out_fd, text_status, json_status;
	pid_t pid;
	bool parsed;

	(void)state;
	if (!python)
		skip();
	pid = test_start_ready_script(python, "hostile_comm.py", "", &out_fd);
	text_status = run_stacks(pid, false, output, sizeof(output), err, sizeof(err));
	if (text_status == 0 && (strpbrk(output, "\x1b\x07\xff") || !strstr(output, "\"\\x1b[31m\\\"\\\\\\x07\\xff\"")))
		text_status = -1;
	json_status = run_stacks(pid, true, view, sizeof(view), err, sizeof(err));
	parsed = json_status == 0 && strstr(view, "\"name\": \"\\u001b[31m\\\"\\\\\\u0007\\ufffd\"") &&
		 view_json("3.12", view, view, sizeof(view));
	kill(pid, SIGKILL);
	test_wait_status(pid);
	close(out_fd);
	if (text_status != 0)
		fail_msg("text (%d): %s%s", text_status, output, err);
	if (!parsed)
		fail_msg("json (%d): %s%s", json_status, failure, err);
}

/* A process that is not Python: exit status 66 and one line that says so. */
static void stacks_not_python(void **state)
{
	static char output[OUTPUT_BYTES];
	char *argv[] = { "sleep", "60", NULL };
	char err[4096];
	pid_t pid = test_spawn(argv, NULL, NULL);
	int status;

	(void)state;
	assert_true(pid > 0);
	status = run_stacks(pid, false, output, sizeof(output), err, sizeof(err));
	kill(pid, SIGKILL);
	test_wait_status(pid);
	assert_int_equal(status, 66);
	assert_string_equal(output, "");
	if (!strstr(err, "not a Python process") || strchr(err, '\n') != err + strlen(err) - 1)
		fail_msg("not one line saying so: '%s'", err);
}

int main(void)
{
	enum { LABELS = sizeof(stacks_labels) / sizeof(stacks_labels[0]) };
	static char names[LABELS][64];
	static char state_names[LABELS][64];
	struct CMUnitTest tests[2 * LABELS + 2];
	size_t count = 0;

	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	if (geteuid() != 0) {
		print_message("test_stacks: needs root (real BPF), skipped\n");
		return 0;
	}
	python_count = test_pythons(pythons, MAX_PYTHONS);
	for (size_t i = 0; i < LABELS; i++) {
		FORMAT(names[count], "stacks_threads_%s", stacks_labels[i]);
		tests[count] = (struct CMUnitTest){ .name = names[count], .test_func = stacks_threads,
						    .initial_state = (void *)stacks_labels[i] };
		count++;
	}
	for (size_t i = 0; i < LABELS; i++) {
		FORMAT(state_names[i], "stacks_state_agrees_%s", stacks_labels[i]);
		tests[count++] = (struct CMUnitTest){ .name = state_names[i], .test_func = stacks_state_agrees,
						      .initial_state = (void *)stacks_labels[i] };
	}
	tests[count++] = (struct CMUnitTest){ .name = "stacks_hostile_name", .test_func = stacks_hostile_name };
	tests[count++] = (struct CMUnitTest){ .name = "stacks_not_python", .test_func = stacks_not_python };
	return _cmocka_run_group_tests("stacks", tests, count, NULL, NULL);
}
