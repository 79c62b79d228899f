/* SPDX-License-Identifier: MIT */
/* speedscope's JSON file format: the backend behind the "speedscope" format descriptor. */
#ifndef PYBPFPROF_SPEEDSCOPE_H
#define PYBPFPROF_SPEEDSCOPE_H

#include "profile/profile.h"

pf_writer_create_fn speedscope_writer_create;

#endif
