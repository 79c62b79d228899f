// SPDX-License-Identifier: MIT
#include "elf/elf_notes.h"

#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Section headers read per pread. */
#define HEADERS_PER_READ 64u

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

static uint64_t align_up(uint64_t value, uint64_t alignment)
{
	return (value + alignment - 1) & ~(alignment - 1);
}

/* The build id among one note section's notes (alignment 4 or 8, as the section says). */
static int build_id_in_notes(const uint8_t *notes, size_t size, uint64_t alignment, uint8_t *id, size_t max,
			     size_t *len)
{
	uint64_t at = 0;

	while (size - at >= sizeof(Elf64_Nhdr)) {
		Elf64_Nhdr note;
		uint64_t name_at = at + sizeof(note), desc_at, next;

		memcpy(&note, notes + at, sizeof(note));
		desc_at = align_up(name_at + note.n_namesz, alignment);
		next = align_up(desc_at + note.n_descsz, alignment);
		if (desc_at > size || note.n_descsz > size - desc_at)
			return -ENOENT;
		if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 && !memcmp(notes + name_at, "GNU", 4) &&
		    note.n_descsz && note.n_descsz <= max) {
			memcpy(id, notes + desc_at, note.n_descsz);
			*len = note.n_descsz;
			return 0;
		}
		if (next <= at || next > size)
			return -ENOENT;
		at = next;
	}
	return -ENOENT;
}

/* The headers' place and count, checked against the file's size. */
static int section_headers(int fd, const Elf64_Ehdr *header, uint64_t *count)
{
	struct stat info;
	Elf64_Shdr first;

	if (fstat(fd, &info))
		return -errno;
	*count = header->e_shnum;
	if (!header->e_shoff) {
		*count = 0;
		return 0;
	}
	if (header->e_shentsize != sizeof(Elf64_Shdr) || header->e_shoff > (uint64_t)info.st_size)
		return -ENOEXEC;
	/* e_shnum 0 with headers present: the count is in the first header */
	if (!*count) {
		if (!read_at(fd, &first, sizeof(first), header->e_shoff))
			return -ENOEXEC;
		*count = first.sh_size;
	}
	if (*count > ((uint64_t)info.st_size - header->e_shoff) / sizeof(Elf64_Shdr))
		return -ENOEXEC;
	if (*count > ELF_NOTES_MAX_SECTIONS)
		*count = ELF_NOTES_MAX_SECTIONS;
	return 0;
}

static int read_header(int fd, Elf64_Ehdr *header)
{
	if (!read_at(fd, header, sizeof(*header), 0) || memcmp(header->e_ident, ELFMAG, SELFMAG) ||
	    header->e_ident[EI_CLASS] != ELFCLASS64 || header->e_ident[EI_DATA] != ELFDATA2LSB ||
	    header->e_machine != EM_X86_64)
		return -ENOEXEC;
	return 0;
}

int elf_notes_build_id(int fd, uint8_t *id, size_t max, size_t *len)
{
	Elf64_Shdr headers[HEADERS_PER_READ];
	size_t budget = ELF_NOTES_BUDGET;
	uint8_t *notes = NULL;
	Elf64_Ehdr header;
	uint64_t count = 0;
	int err = read_header(fd, &header);

	if (!err)
		err = section_headers(fd, &header, &count);
	if (err)
		return err;
	err = -ENOENT;
	for (uint64_t base = 0; base < count && err == -ENOENT && budget; base += HEADERS_PER_READ) {
		uint64_t batch = count - base < HEADERS_PER_READ ? count - base : HEADERS_PER_READ;

		if (!read_at(fd, headers, batch * sizeof(Elf64_Shdr), header.e_shoff + base * sizeof(Elf64_Shdr)))
			break;
		for (uint64_t i = 0; i < batch && err == -ENOENT && budget; i++) {
			const Elf64_Shdr *section = &headers[i];
			uint64_t alignment = section->sh_addralign == 8 ? 8 : 4;

			if (section->sh_type != SHT_NOTE || !section->sh_size ||
			    section->sh_size > ELF_NOTES_MAX_SECTION_BYTES)
				continue;
			if (section->sh_size > budget)
				budget = 0;
			if (!budget)
				break;
			budget -= section->sh_size;
			if (!notes && !(notes = malloc(ELF_NOTES_MAX_SECTION_BYTES))) {
				err = -ENOMEM;
				break;
			}
			if (read_at(fd, notes, section->sh_size, section->sh_offset))
				err = build_id_in_notes(notes, section->sh_size, alignment, id, max, len);
		}
	}
	free(notes);
	return err;
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
