/* SPDX-License-Identifier: MIT */
/* SVG flame graphs: the write-only backend behind the "svg" format descriptor. */
#ifndef PYBPFPROF_FLAMEGRAPH_H
#define PYBPFPROF_FLAMEGRAPH_H

#include "profile/profile.h"

pf_writer_create_fn flamegraph_writer_create;

#endif
