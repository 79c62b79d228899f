/* SPDX-License-Identifier: MIT */
/* pprof's profile.proto, gzipped: the backend behind the "pprof" format descriptor. */
#ifndef PYBPFPROF_PPROF_H
#define PYBPFPROF_PPROF_H

#include "profile/profile.h"

pf_writer_create_fn pprof_writer_create;

#endif
