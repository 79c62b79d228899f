// SPDX-License-Identifier: MIT
/* Records of this process with native stacks, and a resolver for them (tests/lib/native_records.c). */
#ifndef PYBPFPROF_TESTS_NATIVE_RECORDS_H
#define PYBPFPROF_TESTS_NATIVE_RECORDS_H

#include "testlib.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"
#include "sample_record.h"
#include "symbolize/sample_resolve.h"

struct record_buffer {
	union {
		struct pbp_record record;
		uint8_t bytes[sizeof(struct pbp_record) + 16 * 16 + 8 * 32];
	};
	size_t size;
};

/* A record of this process: py_count Python frames (entry marks as given, 3.12 style), then pcs. */
void build_record(struct record_buffer *buffer, size_t py_count, const bool *entry, const uint64_t *pcs,
		  size_t pc_count, uint8_t stop);

struct fixture {
	struct sample_resolver resolver;
	struct py_target python;
};

/* cmocka fixtures: *state is a struct fixture whose resolver names native frames of this process
 * as a 3.12 interpreter's (only the main executable is the interpreter's). */
int native_resolver_setup(void **state);
int native_resolver_teardown(void **state);

/* The sample's frames root first as "name;name", Python frames as "py". */
void render(const struct pf_sample *sample, char *out, size_t len);

#endif
