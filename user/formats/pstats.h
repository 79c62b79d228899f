/* SPDX-License-Identifier: MIT */
/* Python's pstats file (what cProfile writes): the backend behind the "pstats" format descriptor. */
#ifndef PYBPFPROF_PSTATS_H
#define PYBPFPROF_PSTATS_H

#include "profile/profile.h"

pf_writer_create_fn pstats_writer_create;

#endif
