/* SPDX-License-Identifier: MIT */
/*
 * The files a command about to be launched maps before its first instruction:
 * its executable and the libraries that executable names. Their unwind tables
 * are built before the command starts (session/native_stacks.c), so that its
 * first samples keep their native frames however busy the host is.
 */
#ifndef PYBPFPROF_LAUNCH_FILES_H
#define PYBPFPROF_LAUNCH_FILES_H

#include <limits.h>
#include <stddef.h>

/* Files found for one command at most: the executable and its first libraries. */
#define LAUNCH_FILES_MAX 16
/* #! interpreters followed at most (the kernel allows 4 levels too). */
#define LAUNCH_FILES_MAX_SCRIPTS 4

/*
 * Writes into paths (up to max) the executable execvp would run for argv[0],
 * through #! interpreters (`#!/usr/bin/env NAME` is NAME on PATH), then the
 * libraries it names (DT_NEEDED) where the dynamic linker looks first: its
 * RPATH, LD_LIBRARY_PATH, its RUNPATH, the system's library directories. What
 * cannot be found is left out (the command then builds it once it runs).
 * The executable's dynamic section is read by the parser worker (parser/parser_client.h),
 * not here: the command may be another user's file. Returns how many.
 */
size_t launch_files_find(char *const argv[], char (*paths)[PATH_MAX], size_t max);

#endif
