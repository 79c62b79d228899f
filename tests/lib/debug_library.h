// SPDX-License-Identifier: MIT
/* A library with a static function, built and loaded (tests/lib/debug_library.c). */
#ifndef PYBPFPROF_TESTS_DEBUG_LIBRARY_H
#define PYBPFPROF_TESTS_DEBUG_LIBRARY_H

#include "testlib.h"

#include <limits.h>
#include <stdint.h>

/* One library built in its own directory, loaded. */
struct test_library {
	char dir[PATH_MAX];
	char debug_dir[PATH_MAX + 16]; /* the test's /usr/lib/debug */
	void *handle;
	uint64_t hidden_loop;  /* the static function's start */
	uint64_t call_hidden;  /* the exported function's start */
};

/* Builds lib.so (a static hidden_loop, an exported call_hidden) in a fresh directory (cc's default
 * --build-id), runs steps there (sh; $DEBUG is the test's debug dir), then loads it. */
void build_library(struct test_library *library, const char *steps);
/* Unloads the library and removes its directory. */
void unload_library(struct test_library *library);

#endif
