/* SPDX-License-Identifier: MIT */
/*
 * What root still reads itself of a file a target maps (doc/security.md): its ELF header and
 * PT_LOAD program headers, for a mapping's load bias, each read whole into a fixed-size
 * struct with pread (at most ELF_NOTES_MAX_PROGRAM_HEADERS of them, no allocation, nothing
 * kept). Notes, build ids and debug links are the parser worker's (libdw, there).
 */
#ifndef PYBPFPROF_ELF_NOTES_H
#define PYBPFPROF_ELF_NOTES_H

#include <stddef.h>
#include <stdint.h>

#include "elf/elf_file.h"

/* Program headers looked at (real files have about a dozen). */
#define ELF_NOTES_MAX_PROGRAM_HEADERS 256u
/* The note bytes the parser worker lets libdw fetch for one file (elf_file_build_id), all
 * sections and segments together: a build-id note section has some 36 bytes. */
#define ELF_NOTES_BUDGET ((size_t)4 << 20)

/* The file's PT_LOAD segments, at most max, in program header order (elf_load_bias takes
 * them): 0 with *count, or -ENOEXEC (as above, or unreadable program headers), -EIO. */
int elf_notes_load_segments(int fd, struct elf_load_segment *segments, size_t max, size_t *count);

#endif
