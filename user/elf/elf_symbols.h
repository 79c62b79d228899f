/* SPDX-License-Identifier: MIT */
/*
 * Every function symbol that names a file's code, from all its sources: the file's own
 * .symtab (else .dynsym), and where the file has no .symtab, its separate debug file's
 * (debug_file.h), else its MiniDebugInfo (minidebuginfo.h), which names the static functions
 * .dynsym leaves out. Each source is bounded as elf_file_functions bounds one table.
 */
#ifndef PYBPFPROF_ELF_SYMBOLS_H
#define PYBPFPROF_ELF_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

#include "elf/debug_file.h"
#include "elf/elf_file.h"

/* The file itself, its debug file, its MiniDebugInfo. */
#define ELF_SYMBOLS_MAX_SOURCES 3

struct elf_symbols {
	struct elf_function *functions; /* sorted by address, one per address */
	size_t count;
	char *names[ELF_SYMBOLS_MAX_SOURCES]; /* the string tables the names point into */
};

/*
 * The functions of file; place (NULL: none) says where its debug file may be. Where two
 * sources name one address, the file's own name is kept, then the debug file's. A source
 * that cannot be read (none, hostile, past a budget) is left out. debug_bytes_left (NULL: no
 * limit) is what may still be read to check debug files (their CRC32) and expand MiniDebugInfo
 * over a run, each file's own bounds aside: this uses it up. 0 (possibly no function), -ENOMEM.
 */
int elf_symbols_read(struct elf_symbols *symbols, const struct elf_file *file, const struct debug_file_place *place,
		     uint64_t *debug_bytes_left);
/* One source's functions (sorted by address), their names pointing into names. */
struct elf_symbols_source {
	struct elf_function *functions;
	size_t count;
	char *names;
};
/* The sources (at most ELF_SYMBOLS_MAX_SOURCES, the first one's name kept where two share an
 * address) into *symbols, which takes over their names; their functions are freed. 0 or
 * -ENOMEM (all freed). */
int elf_symbols_merge(struct elf_symbols *symbols, struct elf_symbols_source *sources, int source_count);
void elf_symbols_free(struct elf_symbols *symbols);

#endif
