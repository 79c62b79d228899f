/* SPDX-License-Identifier: MIT */
/* JSON lines, one object a sample: the backend behind the "jsonl" format descriptor. */
#ifndef PYBPFPROF_JSONL_H
#define PYBPFPROF_JSONL_H

#include "profile/profile.h"

pf_writer_create_fn jsonl_writer_create;

#endif
