/* SPDX-License-Identifier: MIT */
/*
 * One ring-buffer record to one profile sample: Python frames through the
 * code-object cache, kernel frames through kallsyms, flags to status bits.
 * A frame that cannot be named is kept as "<unresolved>" and the sample is
 * marked invalid at its root — never dropped silently.
 */
#ifndef PYBPFPROF_SAMPLE_RESOLVE_H
#define PYBPFPROF_SAMPLE_RESOLVE_H

#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"
#include "sample_record.h"
#include "target/py_discover.h"
#include "util/intern.h"

struct symbolize_py_cache;
struct ksyms;
struct symbolize_native;

struct sample_resolver {
	struct symbolize_py_cache *python;
	const struct ksyms *kernel;    /* NULL: kernel frames are shown by address */
	struct symbolize_native *native;      /* NULL: no native leaf frames */
	uint64_t period_us;            /* the time one sample stands for */
	struct intern_table kernel_names; /* "symbol [module]" / "0x..." strings, kept for the run */
	struct intern_table kernel_addresses; /* address -> position in kernel_name_of */
	const char **kernel_name_of;          /* by address id: its name in kernel_names */
	size_t kernel_name_capacity;
	struct pf_frame frames[1 + PBP_MAX_PY_FRAMES + 1 + PBP_MAX_KERNEL_FRAMES];
	uint64_t unresolved_frames;    /* Python frames written as <unresolved> */
};

int sample_resolve_init(struct sample_resolver *resolver, const struct ksyms *kernel, uint64_t period_us);
void sample_resolve_free(struct sample_resolver *resolver);
/*
 * python: the target's runtime description, or NULL while it is pending
 * (then only kernel frames are expected). Returns 0, -EINVAL for a malformed
 * record, -ENOMEM. *sample points into the resolver until the next call.
 */
int sample_resolve_record(struct sample_resolver *resolver, const struct pbp_record *record, size_t size,
			  const struct py_target *python, struct pf_sample *sample);

#endif
