// SPDX-License-Identifier: MIT
/*
 * A fake CPython 3.11 target in this process's memory for the symbolizer's cache tests
 * (tests/unit/test_symbolize_forgets_exited.c, tests/e2e/test_hardening_caches.c): FAKE_CODES
 * code objects sharing one name and one line table.
 */
#include "fake_target.h"

#include <stdlib.h>
#include <string.h>

/* PEP 393 state of a compact ASCII str: kind 1, compact, ascii. */
#define ASCII_STATE ((1u << 2) | (1u << 5) | (1u << 6))

uint8_t *fake_str(const struct py_offsets *off, const char *text)
{
	/* Room for the prefix a code object's identity copies (py_string_span), as a heap has. */
	uint8_t *object = calloc(1, off->unicode_ascii_data + strlen(text) + 1 + PY_STRING_PREFIX);
	uint32_t state = ASCII_STATE;
	int64_t length = (int64_t)strlen(text);

	assert_non_null(object);
	memcpy(object + off->unicode_state, &state, sizeof(state));
	memcpy(object + off->unicode_length, &length, sizeof(length));
	memcpy(object + off->unicode_ascii_data, text, strlen(text));
	return object;
}

uint8_t *fake_bytes(const struct py_offsets *off, size_t size)
{
	uint8_t *object = calloc(1, off->bytes_data + size + 1);
	int64_t length = (int64_t)size;

	assert_non_null(object);
	memcpy(object + off->bytes_size, &length, sizeof(length));
	return object;
}

void put_pointer(uint8_t *object, uint32_t offset, const void *pointer)
{
	uint64_t value = (uint64_t)(uintptr_t)pointer;

	memcpy(object + offset, &value, sizeof(value));
}

void build_fake_target(struct fake_target *fake, size_t linetable_bytes)
{
	const struct py_offsets *off = py_offsets_for_version(3, 11);

	assert_non_null(off);
	memset(fake, 0, sizeof(*fake));
	fake->config.off = *off;
	fake->config.version_hex = 0x030b00f0;
	fake->name = fake_str(off, "fake");
	fake->linetable = fake_bytes(off, linetable_bytes);
	for (int i = 0; i < FAKE_CODES; i++) {
		int32_t firstlineno = i + 1, argcount = 0;

		fake->codes[i] = calloc(1, 1024);
		assert_non_null(fake->codes[i]);
		memcpy(fake->codes[i] + off->code_firstlineno, &firstlineno, sizeof(firstlineno));
		memcpy(fake->codes[i] + off->code_argcount, &argcount, sizeof(argcount));
		put_pointer(fake->codes[i], off->code_filename, fake->name);
		put_pointer(fake->codes[i], off->code_name, fake->name);
		put_pointer(fake->codes[i], off->code_qualname, fake->name);
		put_pointer(fake->codes[i], off->code_linetable, fake->linetable);
	}
}

void free_fake_target(struct fake_target *fake)
{
	for (int i = 0; i < FAKE_CODES; i++)
		free(fake->codes[i]);
	free(fake->name);
	free(fake->linetable);
}

int resolve(struct symbolize_py_cache *cache, pid_t pid, const struct fake_target *fake, int i,
	    struct pf_frame *frame)
{
	const struct py_offsets *off = &fake->config.off;
	uint64_t addr = (uint64_t)(uintptr_t)fake->codes[i], name_hash;
	uint32_t checksum;

	uint8_t span[PY_STRING_SPAN_MAX + 8] = { 0 };

	memcpy(span, fake->name + py_string_span_low(off), py_string_span(off));
	name_hash = py_string_identity(off, span);
	checksum = py_code_checksum(i + 1, 0, (uint64_t)(uintptr_t)fake->name, (uint64_t)(uintptr_t)fake->name,
				    name_hash, name_hash);
	return symbolize_py_resolve(cache, pid, &fake->config, addr, checksum, 0, frame);
}
