/* SPDX-License-Identifier: MIT */
/* Collapsed ("folded") stacks: the backends behind the "collapsed" format descriptor. */
#ifndef PYBPFPROF_COLLAPSED_H
#define PYBPFPROF_COLLAPSED_H

#include "profile/profile.h"

pf_writer_create_fn collapsed_writer_create;
pf_reader_create_fn collapsed_reader_create;

#endif
