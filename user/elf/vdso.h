/* SPDX-License-Identifier: MIT */
/*
 * The vDSO as a file. Every 64-bit process of this kernel maps the same vDSO
 * image (our own), which has no file on disk; a copy in a memfd lets the code
 * that reads mapped files (unwind tables, symbols) read it like any other.
 */
#ifndef PYBPFPROF_VDSO_H
#define PYBPFPROF_VDSO_H

#include <stdbool.h>

/* The name /proc/PID/maps gives the vDSO's mapping. */
#define VDSO_MAP_NAME "[vdso]"

/* A read-only descriptor of the image (made once, kept for the run), or -errno. Do not close it. */
int vdso_image_fd(void);
bool vdso_is_map_name(const char *path);

#endif
