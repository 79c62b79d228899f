// SPDX-License-Identifier: MIT
/*
 * The BPF programs are loaded by a short-lived child (sampler/bpf_loader.c). A loader that dies
 * before it hands the programs over leaves one line saying so, and the run exits non-zero
 * (69, the machine cannot profile) instead of hanging or sampling nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

/* Attempts at killing the loader before it answers: one that comes too late is a run that
 * samples normally, tried again. */
#define ATTEMPTS 20
/* How long a run's loader is looked for, in 1 ms polls. */
#define LOOK_POLLS 5000

/* The first child of pid whose command is exactly "pybpfprof" (the loader is a fork; a parser
 * worker is named pybpfprof-parse once it runs), or 0. */
static pid_t loader_of(pid_t pid)
{
	char path[64], children[4096], comm_path[64], comm[32];
	FILE *file;
	size_t got;

	FORMAT(path, "/proc/%d/task/%d/children", (int)pid, (int)pid);
	file = fopen(path, "r");
	if (!file)
		return 0;
	got = fread(children, 1, sizeof(children) - 1, file);
	fclose(file);
	children[got] = '\0';
	for (char *word = strtok(children, " \n"); word; word = strtok(NULL, " \n")) {
		FORMAT(comm_path, "/proc/%s/comm", word);
		file = fopen(comm_path, "r");
		if (!file)
			continue;
		got = fread(comm, 1, sizeof(comm) - 1, file);
		fclose(file);
		comm[got] = '\0';
		if (strcmp(comm, "pybpfprof\n") == 0)
			return (pid_t)atoi(word);
	}
	return 0;
}

/* Starts a run and kills its loader as soon as it shows: the loader's pid (0 if none was seen
 * before the run ended), the run's exit status in *status. */
static pid_t run_killing_the_loader(const char *err_path, int *status)
{
	char output[PATH_MAX];
	char *argv[] = { (char *)pybpfprof_binary(), "-q", "--no-native", "-F", "99", "-d", "1", "-o", output, NULL };
	struct timespec poll_interval = { 0, 1000000 };
	pid_t run, loader = 0;

	FORMAT(output, "%s/loader.mojo", test_tmpdir());
	run = test_spawn(argv, NULL, err_path);
	assert_true(run > 0);
	for (int i = 0; i < LOOK_POLLS && !loader; i++) {
		loader = loader_of(run);
		if (!loader)
			nanosleep(&poll_interval, NULL);
	}
	if (loader)
		kill(loader, SIGKILL);
	*status = test_wait_status(run);
	return loader;
}

static void killed_loader_leaves_one_line_and_fails(void **state)
{
	char err_path[PATH_MAX], expected[128];
	(void)state;

	FORMAT(err_path, "%s/loader.err", test_tmpdir());
	for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
		int status;
		pid_t loader = run_killing_the_loader(err_path, &status);
		size_t len;
		char *text;

		if (!loader || status == 0)
			continue; /* too late: it had answered, the run sampled */
		text = (char *)read_whole_file(err_path, &len);
		assert_non_null(text);
		FORMAT(expected, "pybpfprof: the BPF loader (pid %d) was killed by signal %d", (int)loader, SIGKILL);
		if (strncmp(text, expected, strlen(expected)) != 0)
			fail_msg("status %d, stderr:\n%s", status, text);
		assert_int_equal(status, 69);
		/* one line: the first newline ends the output */
		assert_non_null(strchr(text, '\n'));
		assert_string_equal(strchr(text, '\n'), "\n");
		free(text);
		return;
	}
	/* Polled every ms, a loader lives through the verifier's tenths of a second: never caught
	 * in 20 runs means no loader child was there to catch. */
	fail_msg("the BPF loader was never caught before it answered, in %d runs", ATTEMPTS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(killed_loader_leaves_one_line_and_fails),
	};

	return cmocka_run_group_tests_name("bpf_loader", tests, NULL, NULL);
}
