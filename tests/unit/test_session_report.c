// SPDX-License-Identifier: MIT
/* session/report.c: the error lines a run prints carry a target's text with its control bytes
 * escaped, so a hostile library path or name cannot drive the terminal; thread names are kept
 * only for processes the run knows. */
#include "testlib.h"

#include "session/session_internal.h"

#include <fcntl.h>

/* What report_error() printed for this message, with the target-controlled text in it. */
static char *report_error_output(const char *target_text)
{
	char path[256];
	size_t len;
	char *output;
	int saved, fd;

	snprintf(path, sizeof(path), "%s/stderr.txt", test_tmpdir());
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	assert_true(saved >= 0);
	assert_true(dup2(fd, STDERR_FILENO) >= 0);
	close(fd);
	report_error("warning: pid %d: no native stacks for %s: %s", 42, target_text, "no such file");
	fflush(stderr);
	assert_true(dup2(saved, STDERR_FILENO) >= 0);
	close(saved);
	output = (char *)read_whole_file(path, &len);
	assert_non_null(output);
	unlink(path);
	return output;
}

static void control_bytes_are_escaped(void **state)
{
	char *output = report_error_output("/tmp/lib\x1b]0;owned\x07\x1b[2J\r\n\xc2\x9b" "31m.so");

	(void)state;
	assert_string_equal(output, "pybpfprof: warning: pid 42: no native stacks for "
				    "/tmp/lib\\x1b]0;owned\\x07\\x1b[2J\\r\\n\\xc2\\x9b31m.so: no such file\n");
	free(output);
}

static void plain_text_and_utf8_pass(void **state)
{
	char *output = report_error_output("/opt/café/libpython3.12.so.1.0");

	(void)state;
	assert_string_equal(output, "pybpfprof: warning: pid 42: no native stacks for "
				    "/opt/café/libpython3.12.so.1.0: no such file\n");
	free(output);
}

/* A record can arrive after its process was forgotten (it sat in the ring): its thread is not
 * kept, for nothing would forget it again; a thread of a process the run knows is. */
static void late_record_keeps_no_thread(void **state)
{
	struct session session = { 0 };
	struct pf_sample sample = { .pid = (uint64_t)getpid(), .tid = (uint64_t)gettid() };
	char comm[64] = "";
	const char *name;
	FILE *file;

	(void)state;
	target_set_init(&session.targets);
	threads_seen_init(&session.threads);
	assert_null(report_thread_name(&session, &sample, NULL, 0));
	assert_int_equal(session.threads.live, 0);

	assert_non_null(target_set_add(&session.targets, getpid(), TARGET_FROM_PID));
	name = report_thread_name(&session, &sample, NULL, 0);
	assert_int_equal(session.threads.live, 1);
	file = fopen("/proc/thread-self/comm", "r");
	assert_non_null(file);
	assert_non_null(fgets(comm, sizeof(comm), file));
	fclose(file);
	comm[strcspn(comm, "\n")] = '\0';
	assert_non_null(name);
	assert_string_equal(name, comm);

	threads_seen_free(&session.threads);
	target_set_free(&session.targets);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(control_bytes_are_escaped),
		cmocka_unit_test(plain_text_and_utf8_pass),
		cmocka_unit_test(late_record_keeps_no_thread),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
