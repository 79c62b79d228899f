// SPDX-License-Identifier: MIT
/*
 * A profiling run of a workload that starts its measured part only once the profiler samples
 * it (tests/lib/gated_run.c): the script prints "ready", then waits in wait_for_go() until
 * SIGUSR1, which is sent once the MOJO file being written holds samples of wait_for_go from
 * that process; so the whole of what it does is in the profile, whatever the load, attached
 * with -p or on the whole host.
 */
#ifndef PYBPFPROF_TESTS_GATED_RUN_H
#define PYBPFPROF_TESTS_GATED_RUN_H

#include "testlib.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct gated_run {
	const char *script;           /* tests/scripts/SCRIPT */
	const char *args;             /* its arguments */
	const char *const *options;   /* pybpfprof's options that say what a sample is (NULL-ended) */
	const char *const *outputs;   /* paths written besides DIR/m.mojo (NULL-ended; NULL: none) */
	const char *dir;              /* DIR: m.mojo and pybpfprof.log go there */
	bool whole_host;              /* no -p: the profiler is ended (SIGINT) once the script is */
};

/* Samples of wait_for_go by pid in the MOJO file written so far (0 while it is not there or holds
 * none: a file being written may end mid-record, so a reader error ends the count, not the test). */
size_t gated_run_waiting_samples(const char *path, pid_t pid);

/*
 * Runs it: the script's truth line (what it printed after "ready") into truth, its pid returned
 * (the samples to keep on the whole host, where other processes are sampled too). Fails the
 * test if the script or the profiler do not end well.
 */
pid_t gated_run(const struct test_python *python, const struct gated_run *run, char *truth, size_t truth_len);

#endif
