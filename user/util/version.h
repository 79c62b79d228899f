/* SPDX-License-Identifier: MIT */
/* The program's version, written into every profile's metadata and printed by --version. */
#ifndef PYBPFPROF_VERSION_H
#define PYBPFPROF_VERSION_H

#define PYBPFPROF_VERSION "0.1.0"

#endif
