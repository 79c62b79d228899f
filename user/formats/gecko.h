/* SPDX-License-Identifier: MIT */
/* The Firefox Profiler's processed profile: the backends behind the "gecko" and "gecko-gz" descriptors. */
#ifndef PYBPFPROF_GECKO_H
#define PYBPFPROF_GECKO_H

#include "profile/profile.h"

pf_writer_create_fn gecko_writer_create;
/* The same, gzipped (.gecko.json.gz: the Firefox Profiler opens it as is). */
pf_writer_create_fn gecko_gz_writer_create;

#endif
