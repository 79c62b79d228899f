// SPDX-License-Identifier: MIT
/*
 * The profiler's userspace cost per frame for a stack it has seen before: the same
 * synthetic record (depth Python frames, each its own code object, already symbolized;
 * the leaf at one of 4 instruction offsets in turn) goes SAMPLES times through what
 * session.c does with a record (sample_resolve_prefetch, sample_resolve_record) and then
 * to no writer, the MOJO writer, the Tachyon writer, or both. Prints ns per frame for
 * each; the figures are for `make bench`, never asserted.
 *
 *   stack_repeat [--sink=resolve|+mojo|+tachyon|+both] [depth samples]...
 *
 * default: every sink, 30 20000 900 2000. One sink alone is for counting instructions
 * (valgrind --tool=callgrind): the difference of two sample counts, per frame.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../tests/lib/fake_python.h"
#include "formats/format_registry.h"
#include "profile/profile.h"
#include "symbolize/sample_resolve.h"
#include "util/clock.h"

#define LEAF_OFFSETS 4

enum sink { SINK_NONE, SINK_MOJO, SINK_TACHYON, SINK_BOTH, SINK_COUNT };
static const char *const sink_names[SINK_COUNT] = { "resolve", "+mojo", "+tachyon", "+both" };

static struct pf_writer *open_writer(const char *dir, const char *format_name)
{
	const struct pf_writer_options options = PF_WRITER_OPTIONS_DEFAULT;
	const struct pf_format *format = format_registry_find_name(format_name);
	struct pf_writer *writer = NULL;
	char path[512];
	int err;

	snprintf(path, sizeof(path), "%s/out.%s", dir, format_name);
	err = format ? pf_writer_open(&writer, path, format, &options) : -ENOENT;
	if (err) {
		fprintf(stderr, "stack_repeat: cannot open %s: %s\n", path, strerror(-err));
		exit(1);
	}
	return writer;
}

static void remove_outputs(const char *dir)
{
	static const char *const names[] = { "out.mojo", "out.tachyon" };
	char path[600];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
}

/* One record through the resolver and the writers, as session.c does. */
static void feed(struct sample_resolver *resolver, const struct fake_python *fake, struct fake_record *buffer,
		 struct pf_writer **writers, size_t writer_count)
{
	struct pf_sample sample;

	sample_resolve_prefetch(resolver, &buffer->record, buffer->size, &fake->python);
	if (sample_resolve_record(resolver, &buffer->record, buffer->size, &fake->python, &sample)) {
		fprintf(stderr, "stack_repeat: a record did not resolve\n");
		exit(1);
	}
	for (size_t i = 0; i < writer_count; i++)
		if (pf_writer_add_sample(writers[i], &sample)) {
			fprintf(stderr, "stack_repeat: write: %s\n", pf_writer_error(writers[i]));
			exit(1);
		}
}

/* Nanoseconds per frame of samples repeats of the depth-deep stack into sink. */
static double measure(const struct fake_python *fake, size_t depth, size_t samples, enum sink sink, const char *dir)
{
	static struct sample_resolver resolver;
	/* Built before the clock starts: only the profiler's work is timed. */
	static struct fake_record buffers[LEAF_OFFSETS];
	struct pf_writer *writers[2];
	size_t writer_count = 0, *codes = calloc(depth, sizeof(*codes));
	uint64_t start_ns, elapsed_ns;

	if (!codes || sample_resolve_init(&resolver, NULL, NULL, 1000))
		exit(1);
	for (size_t i = 0; i < depth; i++)
		codes[i] = i;
	if (sink == SINK_MOJO || sink == SINK_BOTH)
		writers[writer_count++] = open_writer(dir, "mojo");
	if (sink == SINK_TACHYON || sink == SINK_BOTH)
		writers[writer_count++] = open_writer(dir, "tachyon");
	/* The first sight of each variant reads the code objects: not what is measured. */
	for (uint32_t i = 0; i < LEAF_OFFSETS; i++) {
		fake_python_record(fake, &buffers[i], codes, depth, i * 2, NULL, 0);
		buffers[i].record.time_ns = (uint64_t)i * 1000000;
		feed(&resolver, fake, &buffers[i], writers, writer_count);
	}
	start_ns = clock_monotonic_ns();
	for (size_t n = 0; n < samples; n++) {
		struct fake_record *buffer = &buffers[n % LEAF_OFFSETS];

		buffer->record.time_ns = (uint64_t)(n + LEAF_OFFSETS) * 1000000;
		feed(&resolver, fake, buffer, writers, writer_count);
	}
	elapsed_ns = clock_monotonic_ns() - start_ns;
	for (size_t i = 0; i < writer_count; i++)
		if (pf_writer_close(writers[i]))
			exit(1);
	sample_resolve_free(&resolver);
	free(codes);
	return (double)elapsed_ns / ((double)samples * (double)depth);
}

int main(int argc, char **argv)
{
	static const char *const defaults[] = { "30", "20000", "900", "2000" };
	const char *const *args = (const char *const *)argv + 1;
	size_t arg_count = (size_t)argc - 1;
	int first_sink = 0, last_sink = SINK_COUNT - 1;
	char dir[] = "/tmp/stack_repeat.XXXXXX";
	struct fake_python fake;
	size_t max_depth = 0;

	if (arg_count && strncmp(args[0], "--sink=", 7) == 0) {
		for (first_sink = 0; first_sink < SINK_COUNT && strcmp(args[0] + 7, sink_names[first_sink]); first_sink++)
			;
		last_sink = first_sink;
		args++;
		arg_count--;
	}
	if (arg_count == 0) {
		args = defaults;
		arg_count = sizeof(defaults) / sizeof(defaults[0]);
	}
	if (arg_count % 2 || first_sink == SINK_COUNT || !mkdtemp(dir)) {
		fprintf(stderr, "usage: stack_repeat [depth samples]...\n");
		return 2;
	}
	for (size_t i = 0; i < arg_count; i += 2)
		if (strtoul(args[i], NULL, 10) > max_depth)
			max_depth = strtoul(args[i], NULL, 10);
	if (max_depth == 0 || max_depth > PBP_MAX_PY_FRAMES) {
		fprintf(stderr, "stack_repeat: depth 1 to %d\n", PBP_MAX_PY_FRAMES);
		return 2;
	}
	fake_python_init(&fake, max_depth);
	printf("%-6s %8s", "depth", "samples");
	for (int sink = first_sink; sink <= last_sink; sink++)
		printf(" %9s", sink_names[sink]);
	printf("   (ns per frame)\n");
	for (size_t i = 0; i < arg_count; i += 2) {
		size_t depth = strtoul(args[i], NULL, 10), samples = strtoul(args[i + 1], NULL, 10);

		if (depth == 0 || depth > max_depth || samples == 0)
			return 2;
		printf("%-6zu %8zu", depth, samples);
		for (int sink = first_sink; sink <= last_sink; sink++)
			printf(" %9.1f", measure(&fake, depth, samples, (enum sink)sink, dir));
		printf("\n");
	}
	fake_python_free(&fake);
	remove_outputs(dir);
	return 0;
}
