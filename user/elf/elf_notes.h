/* SPDX-License-Identifier: MIT */
/*
 * What root may still read itself of a file a target maps, with bounded reads (pread, no
 * libelf): its PT_LOAD segments (a mapping's load bias), and its GNU build id, read from its
 * section headers and note sections into one buffer. A
 * file's notes may claim anything (thousands of overlapping note sections each as large as
 * the file): at most ELF_NOTES_MAX_SECTIONS headers and ELF_NOTES_BUDGET bytes of notes are
 * read, one section at a time, nothing kept. libdw's dwelf_elf_gnu_build_id would fetch
 * every note section and PT_NOTE segment through libelf, which copies each from a file it
 * reads and keeps the copies until the file is closed: this walker stays for files on a
 * descriptor, in root and in the parser worker (doc/internals.md, doc/security.md).
 */
#ifndef PYBPFPROF_ELF_NOTES_H
#define PYBPFPROF_ELF_NOTES_H

#include <stddef.h>
#include <stdint.h>

#include "elf/elf_file.h"

#define ELF_NOTES_MAX_SECTIONS 65536u
/* Program headers looked at (real files have about a dozen). */
#define ELF_NOTES_MAX_PROGRAM_HEADERS 256u
/* A note section past this is skipped (a build-id note section has some 36 bytes). */
#define ELF_NOTES_MAX_SECTION_BYTES ((size_t)1 << 20)
/* The note bytes read for one file, all sections together. */
#define ELF_NOTES_BUDGET ((size_t)4 << 20)

/*
 * The descriptor of the first NT_GNU_BUILD_ID note ("GNU") of at most max bytes among fd's
 * note sections, copied into id. 0, -ENOENT (none within the bounds), -ENOEXEC (not a 64-bit
 * little-endian x86-64 ELF, or its section headers do not fit in the file), -EIO, -ENOMEM.
 */
int elf_notes_build_id(int fd, uint8_t *id, size_t max, size_t *len);

/* The file's PT_LOAD segments, at most max, in program header order (elf_load_bias takes
 * them): 0 with *count, or -ENOEXEC (as above, or unreadable program headers), -EIO. */
int elf_notes_load_segments(int fd, struct elf_load_segment *segments, size_t max, size_t *count);

#endif
