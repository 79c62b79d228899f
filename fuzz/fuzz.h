/* SPDX-License-Identifier: MIT */
/*
 * Fuzzing harnesses: each feeds hostile bytes to the function the profiler itself
 * uses on what a target, a file or another user controls. A harness returns 0
 * (libFuzzer's convention) and frees everything it made: a bug is found by the
 * sanitizers (address, undefined, leak), not by a return value.
 *
 * Built two ways (see the Makefile): with clang's libFuzzer (fuzz/libfuzzer_entry.c,
 * `make fuzz`), and linked into tests/unit/test_fuzz_corpus.c, which runs every file of
 * fuzz/corpus/<harness>/ once under ASan and UBSan (`make check`).
 */
#ifndef PYBPFPROF_FUZZ_H
#define PYBPFPROF_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* The harnesses, one per file fuzz/fuzz_<name>.c, its corpus in fuzz/corpus/fuzz_<name>/. */
int fuzz_mojo_reader_run(const uint8_t *data, size_t size);
int fuzz_tachyon_reader_run(const uint8_t *data, size_t size);
int fuzz_collapsed_reader_run(const uint8_t *data, size_t size);
int fuzz_py_linetable_run(const uint8_t *data, size_t size);
int fuzz_proc_maps_run(const uint8_t *data, size_t size);
int fuzz_py_debug_offsets_run(const uint8_t *data, size_t size);
int fuzz_elf_file_run(const uint8_t *data, size_t size);
int fuzz_unwind_table_run(const uint8_t *data, size_t size);

/*
 * The input as a file: a memfd holding exactly data (offset 0), for the APIs that take a
 * file descriptor or a path (fuzz_input_path). The caller closes it. Negative errno on failure.
 */
int fuzz_input_memfd(const uint8_t *data, size_t size);
/* What harnesses add up of the bytes a parser hands out: reading them lets the sanitizers check
 * every pointer it returns, and a global keeps the reads from being optimised away. */
extern volatile size_t fuzz_input_sink;

/* The path that opens fd anew ("/proc/self/fd/N"), in buffer. */
const char *fuzz_input_path(int fd, char *buffer, size_t size);

/* Reads every sample and metadata line of data as a file of the named format (the profile
 * reader API, as `convert` does), then dumps it when the format has a dump (as `dump` does). */
int fuzz_profile_read(const char *format_name, const uint8_t *data, size_t size);

#endif
