// SPDX-License-Identifier: MIT
#include "elf/elf_section.h"

#include <string.h>

Elf_Scn *elf_section_by_name(Elf *elf, const char *name, GElf_Shdr *shdr)
{
	size_t names_index;
	Elf_Scn *scn = NULL;
	unsigned seen = 0;

	if (elf_getshdrstrndx(elf, &names_index))
		return NULL;
	while ((scn = elf_nextscn(elf, scn)) && seen++ < ELF_SECTION_MAX) {
		const char *scn_name;

		if (!gelf_getshdr(scn, shdr))
			continue;
		scn_name = elf_strptr(elf, names_index, shdr->sh_name);
		if (scn_name && !strcmp(scn_name, name))
			return scn;
	}
	return NULL;
}

Elf_Scn *elf_section_of_type(Elf *elf, Elf64_Word type, GElf_Shdr *shdr)
{
	Elf_Scn *scn = NULL;
	unsigned seen = 0;

	while ((scn = elf_nextscn(elf, scn)) && seen++ < ELF_SECTION_MAX) {
		if (gelf_getshdr(scn, shdr) && shdr->sh_type == type)
			return scn;
	}
	return NULL;
}
