/* SPDX-License-Identifier: MIT */
/* Finding a section of an ELF file opened with libelf, bounded against corrupt headers. */
#ifndef PYBPFPROF_ELF_SECTION_H
#define PYBPFPROF_ELF_SECTION_H

#include <gelf.h>

/* Guards against corrupt section headers claiming absurd counts. */
#define ELF_SECTION_MAX 65536u

/* The first section named name (its header in *shdr), or NULL. */
Elf_Scn *elf_section_by_name(Elf *elf, const char *name, GElf_Shdr *shdr);
/* The first section of type (SHT_SYMTAB, ...), or NULL. */
Elf_Scn *elf_section_of_type(Elf *elf, Elf64_Word type, GElf_Shdr *shdr);

#endif
