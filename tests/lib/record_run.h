// SPDX-License-Identifier: MIT
/* Helpers shared by the `pybpfprof record` end-to-end tests (tests/lib/record_run.c). */
#ifndef PYBPFPROF_TESTS_RECORD_RUN_H
#define PYBPFPROF_TESTS_RECORD_RUN_H

#include "testlib.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "profile/profile.h"

/* tests/scripts/NAME in the source tree. */
void script_path(char *out, size_t len, const char *name);
/* The sample's leafmost Python frame, or NULL. */
const struct pf_frame *python_leaf(const struct pf_sample *sample);
/* How many of the sample's frames are named name. */
size_t count_named(const struct pf_sample *sample, const char *name);
/* The module index of a frame in a startup_mod_N.py module body (tests/scripts/import_modules.py),
 * or -1. */
int startup_module_of(const struct pf_frame *frame);
/* What a profile holds of tests/scripts/import_modules.py's COUNT module bodies. */
#define MODULE_BODIES 20
struct module_bodies {
	size_t named;              /* bodies named in at least one sample */
	size_t samples;            /* samples in a module body */
	size_t unresolved_samples; /* samples with an <unresolved> frame */
};
/* Of process pid (0: any) in the profile at path; printed, labelled. */
void count_module_bodies(const char *path, uint32_t pid, const char *label, struct module_bodies *found);
/* How many of the sample's frames are of one kind. */
size_t count_kind(const struct pf_sample *sample, enum pf_frame_kind kind);

struct running_python {
	pid_t pid;
};

/* A Python (3.12 if pythons has one) spinning in workload.py's phases; returns once it runs. */
void start_spinner(struct running_python *target, const struct test_python *pythons, size_t python_count,
		   const char *phases);
void stop_spinner(struct running_python *target);

/* Fails unless heavy is at least one sample per ms_per_sample ms of the spinner's CPU (cpu_ms), and 50. */
void assert_heavy_for_cpu(const char *what, size_t heavy, uint64_t cpu_ms, unsigned ms_per_sample);
/* The ticks in the profile at path of process pid (0: any) whose Python leaf is leaf_name (NULL: any);
 * 0 with err set when the file cannot be read. */
size_t count_samples_of(const char *path, uint32_t pid, const char *leaf_name, char *err, size_t errlen);
/* Waits (up to 30 s) until the streamed MOJO file being written at path holds a heavy sample. */
void wait_for_heavy_samples(const char *path);

#endif
