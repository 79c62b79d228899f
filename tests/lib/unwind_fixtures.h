// SPDX-License-Identifier: MIT
/* Fixtures shared by the unwind table tests (tests/lib/unwind_fixtures.c). */
#ifndef PYBPFPROF_TESTS_UNWIND_FIXTURES_H
#define PYBPFPROF_TESTS_UNWIND_FIXTURES_H

#include "testlib.h"

#include <stdbool.h>
#include <stdint.h>

#include "worker/unwind_build.h"

/* A program with known CFI compiled with extra cc flags, then run through extra shell steps ("" for none). */
void compile_program(char *path, size_t len, const char *name, const char *flags, const char *after);
/* The assembly text in a shared library of its own. */
void assemble_text(char *path, size_t len, const char *name, const char *text);
int build_table(const char *path, struct unwind_table *table, struct errbuf *error);
void function_range(const char *path, const char *name, uint64_t *start, uint64_t *size);
/* Every readelf row of the function's FDE has our rule at its pc; ours start only where readelf's do. */
void check_function_against_readelf(const char *path, const struct unwind_table *table, const char *name,
				    unsigned *rsp_rows, unsigned *rbp_rows);
/* Every row readelf prints for the file, looked up in our table: the same rule. */
void check_file_against_readelf(const char *path, const struct unwind_table *table);
/* crt1's _start says its return address is undefined: the end of every stack. */
void check_start_is_root(const char *path, const struct unwind_table *table);
/* A real file's table: mostly supported, its PLT, readelf's rows, the page index (and _start). */
void check_real_file(const char *path, bool has_start);
/* This process's CPU time in microseconds. */
uint64_t cpu_us(void);
/* Both builders on one file: the same outcome, the same rows, index and counts. */
void check_same_table(const char *path);

#endif
