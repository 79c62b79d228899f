// SPDX-License-Identifier: MIT
/*
 * Helpers shared by the `pybpfprof record` end-to-end tests (tests/e2e/test_record*.c): the
 * test scripts' paths, what a sample's frames hold, and a spinning workload.py to attach to.
 */
#include "record_run.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>

#include "formats/format_registry.h"

void script_path(char *out, size_t len, const char *name)
{
	if ((size_t)snprintf(out, len, "%s/tests/scripts/%s", test_source_dir(), name) >= len)
		fail_msg("path too long");
}

int startup_module_of(const struct pf_frame *frame)
{
	const char *base = frame->file ? strrchr(frame->file, '/') : NULL;
	int index = -1;

	if (!base || !frame->name || strcmp(frame->name, "<module>") != 0 ||
	    sscanf(base, "/startup_mod_%d.py", &index) != 1)
		return -1;
	return index;
}

void count_module_bodies(const char *path, uint32_t pid, const char *label, struct module_bodies *found)
{
	struct pf_reader *reader = test_open_profile(path);
	bool seen[MODULE_BODIES] = { false };
	struct pf_sample sample;

	*found = (struct module_bodies){ 0 };
	while (pf_reader_next_sample(reader, &sample) > 0) {
		bool in_module = false;

		if (pid && sample.pid != pid)
			continue;
		for (size_t f = 0; f < sample.frame_count; f++) {
			int index = startup_module_of(&sample.frames[f]);

			if (index >= 0 && index < MODULE_BODIES) {
				found->named += !seen[index];
				seen[index] = true;
				in_module = true;
			}
		}
		found->samples += in_module;
		found->unresolved_samples += count_named(&sample, "<unresolved>") > 0;
	}
	pf_reader_close(reader);
	print_message("%s: %zu of %d module bodies named in %zu samples; %zu samples with unresolved frames\n", label,
		      found->named, MODULE_BODIES, found->samples, found->unresolved_samples);
}

const struct pf_frame *python_leaf(const struct pf_sample *sample)
{
	for (size_t i = sample->frame_count; i-- > 0;)
		if (sample->frames[i].kind == PF_FRAME_PYTHON)
			return &sample->frames[i];
	return NULL;
}

size_t count_named(const struct pf_sample *sample, const char *name)
{
	size_t count = 0;

	for (size_t i = 0; i < sample->frame_count; i++)
		count += strcmp(sample->frames[i].name, name) == 0;
	return count;
}

size_t count_kind(const struct pf_sample *sample, enum pf_frame_kind kind)
{
	size_t count = 0;

	for (size_t i = 0; i < sample->frame_count; i++)
		count += sample->frames[i].kind == kind;
	return count;
}

/* A Python spinning in the split phase for a while; returns once it runs. */
void start_spinner(struct running_python *target, const struct test_python *pythons, size_t python_count,
		   const char *phases)
{
	const struct test_python *python = test_python_find(pythons, python_count, "3.12");
	char command[1200], script[PATH_MAX];
	char *argv[32];

	if (!python)
		python = &pythons[0];
	assert_true(python_count > 0);
	script_path(script, sizeof(script), "workload.py");
	FORMAT(command, "%s %s %s", python->command, script, phases);
	split_command(command, argv, 32);
	target->pid = test_spawn(argv, NULL, NULL);
	assert_true(target->pid > 0);
	/* Long enough for the interpreter to be up; discovery retries if it isn't quite. */
	usleep(300 * 1000);
}

void stop_spinner(struct running_python *target)
{
	kill(target->pid, SIGKILL);
	test_wait_status(target->pid);
}

/*
 * Whether a profile at the default 1 kHz holds enough heavy samples for the CPU time the spinner had
 * while it ran (cpu_ms): heavy is 3/4 of the split and start-up takes part of the run, so at least
 * one sample per ms_per_sample ms (4; a whole-host start-up takes longer). On a quiet machine that
 * is the 1 kHz of wall time the checks were written for; on a busy one the spinner runs less, and
 * is sampled less, through no fault of the profiler.
 */
void assert_heavy_for_cpu(const char *what, size_t heavy, uint64_t cpu_ms, unsigned ms_per_sample)
{
	print_message("%s: %zu heavy samples for %" PRIu64 " ms of the spinner's CPU\n", what, heavy, cpu_ms);
	if (heavy * ms_per_sample < cpu_ms || heavy < 50)
		fail_msg("%s: %zu heavy samples for %" PRIu64 " ms of CPU (at least one per %u ms, and 50)", what,
			 heavy, cpu_ms, ms_per_sample);
}

size_t count_samples_of(const char *path, uint32_t pid, const char *leaf_name,
			       char *err, size_t errlen)
{
	struct pf_reader *reader;
	struct pf_sample sample;
	size_t count = 0;
	int got;

	err[0] = 0;
	if (format_registry_open_reader(&reader, path, err, errlen))
		return 0;
	while ((got = pf_reader_next_sample(reader, &sample)) > 0) {
		const struct pf_frame *leaf = python_leaf(&sample);

		/* the ticks it stands for: a whole-host run thins a costly process (--max-overhead) */
		if ((pid == 0 || sample.pid == pid) && leaf &&
		    (!leaf_name || strcmp(leaf->name, leaf_name) == 0))
			count += sample.samples ? sample.samples : 1;
	}
	if (got < 0)
		snprintf(err, errlen, "%s", pf_reader_error(reader));
	pf_reader_close(reader);
	return count;
}

/* Waits (up to 30 s) until the streamed MOJO file being written at path holds a heavy sample: the
 * profiler's start-up is over, however long a busy machine made it. */
void wait_for_heavy_samples(const char *path)
{
	char err[512];

	for (int tries = 0; tries < 300; tries++) {
		if (count_samples_of(path, 0, "heavy", err, sizeof(err)) > 0)
			return;
		usleep(100 * 1000);
	}
	fail_msg("%s: no heavy sample after 30 s", path);
}
