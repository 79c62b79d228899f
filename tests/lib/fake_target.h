// SPDX-License-Identifier: MIT
/* A fake CPython 3.11 target in this process's memory (tests/lib/fake_target.c). */
#ifndef PYBPFPROF_TESTS_FAKE_TARGET_H
#define PYBPFPROF_TESTS_FAKE_TARGET_H

#include "testlib.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "profile/profile.h"
#include "python/py_offsets.h"
#include "symbolize/symbolize_py.h"

#define FAKE_CODES 200

struct fake_target {
	struct py_proc_config config;
	uint8_t *name;              /* a str object */
	uint8_t *linetable;         /* a bytes object of SYMBOLIZE_PY_MAX_LINETABLE_BYTES */
	uint8_t *codes[FAKE_CODES]; /* code objects sharing name and line table */
};

/* A str object holding text, with room for the prefix a code object's identity copies. */
uint8_t *fake_str(const struct py_offsets *off, const char *text);
/* A bytes object of size zero bytes. */
uint8_t *fake_bytes(const struct py_offsets *off, size_t size);
void put_pointer(uint8_t *object, uint32_t offset, const void *pointer);
/* FAKE_CODES code objects (first lines 1, 2, ...) named "fake", sharing a line table of linetable_bytes. */
void build_fake_target(struct fake_target *fake, size_t linetable_bytes);
void free_fake_target(struct fake_target *fake);
/* Code object i of the fake target, resolved by the cache as process pid's. */
int resolve(struct symbolize_py_cache *cache, pid_t pid, const struct fake_target *fake, int i,
	    struct pf_frame *frame);

#endif
