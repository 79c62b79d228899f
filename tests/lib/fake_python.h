/* SPDX-License-Identifier: MIT */
/*
 * Fake CPython 3.11 code objects built in this process's own memory, and ring-buffer
 * records of a stack of them: symbolize_py reads them as it would a target's (the
 * target is this process), so a sample resolves without BPF or a Python. Each frame
 * has its own code object (file "fake_N.py", function "function_N", first line N + 1).
 * Shared by tests/unit/test_symbolize_stack_cache.c and bench/stack_repeat.c; no cmocka here.
 */
#ifndef PYBPFPROF_FAKE_PYTHON_H
#define PYBPFPROF_FAKE_PYTHON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "py_proc_config.h"
#include "sample_record.h"
#include "python/py_discover.h"
#include "python/py_offsets.h"
#include "unwind_table.h"

/* PEP 393 state of a compact ASCII str: kind 1, compact, ascii. */
#define FAKE_PYTHON_ASCII_STATE ((1u << 2) | (1u << 5) | (1u << 6))

struct fake_python {
	struct py_target python;  /* this process, as a 3.11 target */
	size_t code_count;
	uint8_t **codes;          /* code objects */
	uint8_t **files, **names; /* their str objects */
	uint8_t *linetable;       /* one empty bytes object: every line from co_firstlineno */
};

static inline uint8_t *fake_python_str(const struct py_offsets *off, const char *text)
{
	/* Room for the prefix a code object's identity copies (py_string_span), as a heap has. */
	uint8_t *object = calloc(1, off->unicode_ascii_data + strlen(text) + 1 + PY_STRING_PREFIX);
	uint32_t state = FAKE_PYTHON_ASCII_STATE;
	int64_t length = (int64_t)strlen(text);

	if (!object)
		abort();
	memcpy(object + off->unicode_state, &state, sizeof(state));
	memcpy(object + off->unicode_length, &length, sizeof(length));
	memcpy(object + off->unicode_ascii_data, text, strlen(text));
	return object;
}

static inline void fake_python_put_pointer(uint8_t *object, uint32_t offset, const void *pointer)
{
	uint64_t value = (uint64_t)(uintptr_t)pointer;

	memcpy(object + offset, &value, sizeof(value));
}

static inline void fake_python_init(struct fake_python *fake, size_t code_count)
{
	const struct py_offsets *off = py_offsets_for_version(3, 11);

	if (!off)
		abort();
	memset(fake, 0, sizeof(*fake));
	fake->python.pid = getpid();
	fake->python.major = 3;
	fake->python.minor = 11;
	fake->python.config.off = *off;
	fake->python.config.version_hex = 0x030b00f0;
	fake->code_count = code_count;
	fake->codes = calloc(code_count, sizeof(*fake->codes));
	fake->files = calloc(code_count, sizeof(*fake->files));
	fake->names = calloc(code_count, sizeof(*fake->names));
	fake->linetable = calloc(1, off->bytes_data + 1);
	if (!fake->codes || !fake->files || !fake->names || !fake->linetable)
		abort();
	for (size_t i = 0; i < code_count; i++) {
		int32_t firstlineno = (int32_t)i + 1, argcount = 0;
		char text[64];

		snprintf(text, sizeof(text), "fake_%zu.py", i);
		fake->files[i] = fake_python_str(off, text);
		snprintf(text, sizeof(text), "function_%zu", i);
		fake->names[i] = fake_python_str(off, text);
		fake->codes[i] = calloc(1, 1024);
		if (!fake->codes[i])
			abort();
		memcpy(fake->codes[i] + off->code_firstlineno, &firstlineno, sizeof(firstlineno));
		memcpy(fake->codes[i] + off->code_argcount, &argcount, sizeof(argcount));
		fake_python_put_pointer(fake->codes[i], off->code_filename, fake->files[i]);
		fake_python_put_pointer(fake->codes[i], off->code_name, fake->names[i]);
		fake_python_put_pointer(fake->codes[i], off->code_qualname, fake->names[i]);
		fake_python_put_pointer(fake->codes[i], off->code_linetable, fake->linetable);
	}
}

static inline void fake_python_free(struct fake_python *fake)
{
	for (size_t i = 0; i < fake->code_count; i++) {
		free(fake->codes[i]);
		free(fake->files[i]);
		free(fake->names[i]);
	}
	free(fake->codes);
	free(fake->files);
	free(fake->names);
	free(fake->linetable);
}

/* What BPF sends for code object index: its address and checksum, the instruction offset given. */
static inline uint64_t fake_python_string_identity(const struct py_offsets *off, const uint8_t *string)
{
	uint8_t span[PY_STRING_SPAN_MAX + 8] = { 0 };

	memcpy(span, string + py_string_span_low(off), py_string_span(off));
	return py_string_identity(off, span);
}

static inline struct pbp_py_frame fake_python_frame(const struct fake_python *fake, size_t index,
						    uint32_t instr_offset)
{
	const struct py_offsets *off = &fake->python.config.off;
	const uint8_t *code = fake->codes[index];

	return (struct pbp_py_frame){
		.code_addr = (uint64_t)(uintptr_t)code,
		.instr_offset = instr_offset,
		.checksum = py_code_checksum((int32_t)index + 1, 0, (uint64_t)(uintptr_t)fake->files[index],
					     (uint64_t)(uintptr_t)fake->names[index],
					     fake_python_string_identity(off, fake->files[index]),
					     fake_python_string_identity(off, fake->names[index])),
	};
}

/* A record buffer for as many frames as a record has room for. */
struct fake_record {
	union {
		struct pbp_record record;
		uint8_t bytes[sizeof(struct pbp_record) + PBP_MAX_PY_FRAMES * sizeof(struct pbp_py_frame) +
			      (UNWIND_MAX_FRAMES + PBP_MAX_KERNEL_FRAMES) * sizeof(uint64_t)];
	};
	size_t size;
};

/*
 * A record of this process: code objects codes[0..depth) leaf first (codes[0] the leaf),
 * each at instruction offset leaf_offset for the leaf and 0 (not started: its first line)
 * for the others; then kernel addresses. fake_python_add_native puts native pcs between.
 */
static inline void fake_python_record(const struct fake_python *fake, struct fake_record *buffer,
				      const size_t *codes, size_t depth, uint32_t leaf_offset,
				      const uint64_t *kernel_ips, size_t kernel_count)
{
	struct pbp_py_frame *py = (struct pbp_py_frame *)(buffer->bytes + sizeof(struct pbp_record));

	memset(&buffer->record, 0, sizeof(buffer->record));
	buffer->record.pid = (uint32_t)fake->python.pid;
	buffer->record.tid = (uint32_t)fake->python.pid;
	buffer->record.flags = PBP_REC_USER_MODE | PBP_REC_HAS_GIL;
	buffer->record.py_frame_count = (uint16_t)depth;
	buffer->record.kernel_frame_count = (uint16_t)kernel_count;
	for (size_t i = 0; i < depth; i++)
		py[i] = fake_python_frame(fake, codes[i], i == 0 ? leaf_offset : 0);
	if (kernel_count)
		memcpy(py + depth, kernel_ips, kernel_count * sizeof(*kernel_ips));
	buffer->size = sizeof(struct pbp_record) + depth * sizeof(*py) + kernel_count * sizeof(*kernel_ips);
}

/* Native pcs (leaf first) after the record's Python frames, its kernel addresses moved behind them. */
static inline void fake_python_add_native(struct fake_record *buffer, const uint64_t *pcs, size_t count,
					  uint8_t native_stop)
{
	uint8_t *native = buffer->bytes + sizeof(struct pbp_record) +
			  buffer->record.py_frame_count * sizeof(struct pbp_py_frame);
	size_t kernel_bytes = buffer->record.kernel_frame_count * sizeof(uint64_t);

	memmove(native + count * sizeof(*pcs), native, kernel_bytes);
	memcpy(native, pcs, count * sizeof(*pcs));
	buffer->record.native_frame_count = (uint16_t)count;
	buffer->record.native_stop = native_stop;
	buffer->record.user_ip = count ? pcs[0] : 0;
	buffer->size += count * sizeof(*pcs);
}

#endif
