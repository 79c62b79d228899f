/* SPDX-License-Identifier: MIT */
/* SVG flame graphs: the write-only backend behind the "svg" format descriptor. */
#ifndef PYBPFPROF_FLAMEGRAPH_H
#define PYBPFPROF_FLAMEGRAPH_H

#include "profile/profile.h"

pf_writer_create_fn flamegraph_writer_create;

/*
 * The differential flame graph of `pybpfprof diff`: samples are NEW's until the metadata
 * FLAMEGRAPH_DIFF_SIDE is set to "base" (and again after "new"). Boxes are NEW's shares,
 * coloured by the change of their total share; frames only BASE has are drawn hatched at
 * BASE's share. Not in the format table: only diff writes it.
 */
pf_writer_create_fn flamegraph_diff_writer_create;
#define FLAMEGRAPH_DIFF_SIDE "pybpfprof_diff_side"

#endif
