/* SPDX-License-Identifier: MIT */
/*
 * MiniDebugInfo: a stripped file's .gnu_debugdata section, an xz-compressed ELF whose .symtab
 * names the functions .dynsym does not (the static ones). Fedora ships its binaries so, and
 * some Debian builds. The section is the target's: both what it holds and what it expands
 * to are bounded, and the ELF inside is parsed from our own copy in memory.
 */
#ifndef PYBPFPROF_MINIDEBUGINFO_H
#define PYBPFPROF_MINIDEBUGINFO_H

#include <stddef.h>
#include <stdint.h>

#include "elf/elf_file.h"

/* A .gnu_debugdata larger than this is not read (Fedora's libpython3: about 100 KiB). */
#define MINIDEBUGINFO_MAX_COMPRESSED_BYTES ((size_t)16 << 20)
/* What it expands to is refused beyond this (a bomb stops here, not at our memory's end). */
#define MINIDEBUGINFO_MAX_BYTES ((size_t)64 << 20)
/* The xz decoder's own memory (its dictionary, which the stream's header chooses): xz -9 needs 65 MiB. */
#define MINIDEBUGINFO_MAX_DECODER_BYTES ((uint64_t)80 << 20)

/*
 * The .xz stream in (in_len bytes) decompressed into *out (malloc'd, *out_len bytes), at most
 * max_bytes; *out_len also says what a failed decoding expanded. 0, -E2BIG (expands past max_bytes, or needs more decoder memory than
 * MINIDEBUGINFO_MAX_DECODER_BYTES), -EBADMSG (not xz, corrupt, truncated), -ENOMEM.
 */
int minidebuginfo_decompress(const void *in, size_t in_len, size_t max_bytes, void **out, size_t *out_len);
/*
 * The ELF inside file's .gnu_debugdata, opened from memory into *debugdata (closed by the
 * caller with elf_file_close); bytes_left (NULL: no limit) is what expanding may still
 * produce over a run, used up by what it does (past it: -E2BIG). 0, -ENOENT (no such section), -E2BIG (past a budget),
 * -EBADMSG, -ENOEXEC (not a 64-bit ELF inside), -ENOMEM.
 */
int minidebuginfo_open(const struct elf_file *file, uint64_t *bytes_left, struct elf_file *debugdata);

#endif
