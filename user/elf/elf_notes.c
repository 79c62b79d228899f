// SPDX-License-Identifier: MIT
#include "elf/elf_notes.h"

#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

static bool read_at(int fd, void *buf, size_t len, uint64_t offset)
{
	size_t done = 0;

	while (done < len) {
		ssize_t got = pread(fd, (char *)buf + done, len - done, (off_t)(offset + done));

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return false;
		done += (size_t)got;
	}
	return true;
}

static int read_header(int fd, Elf64_Ehdr *header)
{
	if (!read_at(fd, header, sizeof(*header), 0) || memcmp(header->e_ident, ELFMAG, SELFMAG) ||
	    header->e_ident[EI_CLASS] != ELFCLASS64 || header->e_ident[EI_DATA] != ELFDATA2LSB ||
	    header->e_machine != EM_X86_64)
		return -ENOEXEC;
	return 0;
}

int elf_notes_load_segments(int fd, struct elf_load_segment *segments, size_t max, size_t *count)
{
	Elf64_Ehdr header;
	int err = read_header(fd, &header);

	*count = 0;
	if (err)
		return err;
	if (header.e_phentsize != sizeof(Elf64_Phdr) || header.e_phnum > ELF_NOTES_MAX_PROGRAM_HEADERS)
		return -ENOEXEC;
	for (unsigned i = 0; i < header.e_phnum && *count < max; i++) {
		Elf64_Phdr phdr;

		if (!read_at(fd, &phdr, sizeof(phdr), header.e_phoff + (uint64_t)i * sizeof(phdr)))
			return -ENOEXEC;
		if (phdr.p_type == PT_LOAD)
			segments[(*count)++] = (struct elf_load_segment){ phdr.p_vaddr, phdr.p_offset, phdr.p_filesz };
	}
	return 0;
}
