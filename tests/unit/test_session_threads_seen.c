// SPDX-License-Identifier: MIT
/*
 * session/threads_seen: a whole-host run meets thousands of short processes; what it holds for
 * their threads follows the threads alive, not the length of the run, while the counts the
 * summary prints (threads that ran Python, processes that ran none, by name) stay whole.
 */
#include "testlib.h"

#include <stdio.h>

#include "session/threads_seen.h"

#define THREADS_PER_PROCESS 7
#define ROUNDS 50
#define PROCESSES_PER_ROUND 100

/* One short process: its threads seen and named, all of them running Python but for the
 * launcher's shells (every tenth process), then forgotten when it ends. */
static void one_process(struct threads_seen *seen, uint64_t pid)
{
	bool shell = pid % 10 == 0;

	for (uint64_t k = 0; k < (shell ? 1 : THREADS_PER_PROCESS); k++) {
		struct thread_seen *thread = threads_seen_get(seen, pid, pid + k);

		assert_non_null(thread);
		assert_false(thread->named);
		snprintf(thread->name, sizeof(thread->name), shell ? "bash" : "worker-%u", (unsigned)k);
		thread->named = true;
		if (!shell)
			threads_seen_mark_python(seen, thread);
	}
}

static void test_held_bytes_follow_the_threads_alive(void **state)
{
	struct threads_seen seen;
	size_t held_after_first_round = 0;
	uint64_t pid = 1000;

	(void)state;
	threads_seen_init(&seen);
	for (int round = 0; round < ROUNDS; round++) {
		uint64_t first = pid;

		for (int p = 0; p < PROCESSES_PER_ROUND; p++)
			one_process(&seen, pid++);
		for (uint64_t gone = first; gone < pid; gone++)
			threads_seen_forget_pid(&seen, gone);
		assert_int_equal(seen.live, 0);
		if (round == 0)
			held_after_first_round = threads_seen_held_bytes(&seen);
		else
			assert_int_equal(threads_seen_held_bytes(&seen), held_after_first_round);
	}
	print_message("%d processes: %zu bytes held, as after the first %d\n", ROUNDS * PROCESSES_PER_ROUND,
		      held_after_first_round, PROCESSES_PER_ROUND);
	assert_int_equal(seen.python_threads, (uint64_t)ROUNDS * PROCESSES_PER_ROUND * 9 / 10 * THREADS_PER_PROCESS);
	threads_seen_free(&seen);
}

static void test_other_processes_counted_gone_and_alive(void **state)
{
	struct threads_seen_name names[THREADS_SEEN_OTHER_NAMES];
	struct threads_seen seen;
	struct thread_seen *thread;
	size_t name_count;
	bool more;

	(void)state;
	threads_seen_init(&seen);
	for (uint64_t pid = 10; pid < 40; pid += 10)
		one_process(&seen, pid); /* three shells */
	one_process(&seen, 41);          /* a Python process */
	threads_seen_forget_pid(&seen, 10);
	threads_seen_forget_pid(&seen, 41);
	/* a shell's pid that exec'd Python is not one of them */
	thread = threads_seen_get(&seen, 30, 30);
	threads_seen_mark_python(&seen, thread);
	/* a thread of a shell is not a process */
	assert_non_null(threads_seen_get(&seen, 20, 21));
	/* five other names: one is left out */
	for (uint64_t pid = 50; pid < 55; pid++) {
		thread = threads_seen_get(&seen, pid, pid);
		snprintf(thread->name, sizeof(thread->name), "tool%u", (unsigned)pid);
	}
	assert_int_equal(threads_seen_other_processes(&seen, names, &name_count, &more), 7);
	assert_int_equal(name_count, THREADS_SEEN_OTHER_NAMES);
	assert_string_equal(names[0].name, "bash");
	assert_int_equal(names[0].processes, 2);
	assert_true(more);
	threads_seen_free(&seen);
}

static void test_a_reused_pid_starts_over(void **state)
{
	struct threads_seen seen;
	struct thread_seen *thread;

	(void)state;
	threads_seen_init(&seen);
	assert_null(threads_seen_find(&seen, 77, 78)); /* finding makes no slot */
	thread = threads_seen_get(&seen, 77, 78);
	assert_ptr_equal(threads_seen_find(&seen, 77, 78), thread);
	snprintf(thread->name, sizeof(thread->name), "old");
	thread->named = true;
	threads_seen_mark_python(&seen, thread);
	assert_ptr_equal(threads_seen_get(&seen, 77, 78), thread);
	threads_seen_forget_pid(&seen, 77);
	threads_seen_forget_pid(&seen, 77); /* twice: nothing left to forget */
	assert_null(threads_seen_find(&seen, 77, 78));
	thread = threads_seen_get(&seen, 77, 78);
	assert_false(thread->named);
	assert_false(thread->python);
	assert_string_equal(thread->name, "");
	assert_int_equal(seen.python_threads, 1);
	threads_seen_free(&seen);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_held_bytes_follow_the_threads_alive),
		cmocka_unit_test(test_other_processes_counted_gone_and_alive),
		cmocka_unit_test(test_a_reused_pid_starts_over),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
