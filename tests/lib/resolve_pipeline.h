// SPDX-License-Identifier: MIT
/* The resolver-and-writers pipeline of the stack cache tests (tests/lib/resolve_pipeline.c). */
#ifndef PYBPFPROF_TESTS_RESOLVE_PIPELINE_H
#define PYBPFPROF_TESTS_RESOLVE_PIPELINE_H

#include "testlib.h"

#include <stdbool.h>

#include "fake_python.h"
#include "profile/profile.h"
#include "symbolize/sample_resolve.h"

/* mojo, tachyon, collapsed, svg, pprof, speedscope, pstats, gecko, gecko-gz, jsonl */
#define FORMAT_COUNT 10

/* A resolver and the writers it feeds, one file a format in the test's directory. */
struct pipeline {
	struct sample_resolver resolver;
	struct pf_writer *writers[FORMAT_COUNT];
	char paths[FORMAT_COUNT][256];
};

/* keeping: whether the resolver keeps stacks (else every record resolves anew); native: whether it
 * names native frames. Files are TMP/NAME.FORMAT. */
void pipeline_open(struct pipeline *pipeline, const char *name, bool keeping, bool native);
void pipeline_close(struct pipeline *pipeline);
/* One record as the session takes it: prefetch, resolve, every writer. */
void pipeline_feed(struct pipeline *pipeline, const struct fake_python *fake, const struct fake_record *buffer,
		   struct pf_sample *sample);
/* The two pipelines wrote byte-identical files. */
void assert_same_files(const struct pipeline *left, const struct pipeline *right);
/* The two samples hold the same frames. */
void assert_same_frames(const struct pf_sample *left, const struct pf_sample *right);
/* Whether a sample has a frame of this name. */
bool has_frame_named(const struct pf_sample *sample, const char *name);

#endif
