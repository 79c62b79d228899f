/* SPDX-License-Identifier: MIT */
/*
 * An ELF file whose unwind table is a memory bomb for whoever builds it: tests that the parser
 * worker, not root, pays for it (e2e/test_unwind_cache_worker.c, e2e/test_parser_worker.c).
 */
#ifndef PYBPFPROF_TEST_INFLATION_BOMB_H
#define PYBPFPROF_TEST_INFLATION_BOMB_H

#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

/* After testlib.h (its cmocka asserts). */

/* Appends a zlib stream of bytes zero bytes to fd (64 KiB of memory whatever bytes is). */
static inline void write_zeros_deflated(int fd, uint64_t bytes)
{
	static unsigned char zeros[1 << 16], out[1 << 16];
	z_stream stream = { 0 };
	int flush;

	assert_int_equal(deflateInit(&stream, Z_BEST_SPEED), Z_OK);
	do {
		size_t chunk = bytes < sizeof(zeros) ? (size_t)bytes : sizeof(zeros);

		bytes -= chunk;
		flush = bytes ? Z_NO_FLUSH : Z_FINISH;
		stream.next_in = zeros;
		stream.avail_in = (uInt)chunk;
		do {
			stream.next_out = out;
			stream.avail_out = sizeof(out);
			assert_true(deflate(&stream, flush) != Z_STREAM_ERROR);
			assert_int_equal(write(fd, out, sizeof(out) - stream.avail_out),
					 (ssize_t)(sizeof(out) - stream.avail_out));
		} while (stream.avail_out == 0);
	} while (flush != Z_FINISH);
	deflateEnd(&stream);
}

#define BOMB_SECTIONS 10
#define BOMB_SECTION_BYTES ((uint64_t)60 << 20)

/*
 * A small ELF with code (one executable segment) and no .eh_frame, whose .debug_frame and
 * other DWARF sections are each compressed to some 60 KiB of zeros that inflate to 60 MiB:
 * building its table inflates them all (libdw does, on opening the DWARF), 600 MiB.
 */
static inline void write_inflation_bomb(const char *path)
{
	static const char *const names[BOMB_SECTIONS] = {
		".debug_frame", ".debug_info",	  ".debug_abbrev", ".debug_line", ".debug_str",
		".debug_loc",	".debug_ranges", ".debug_aranges", ".debug_macro", ".debug_line_str",
	};
	Elf64_Shdr sections[BOMB_SECTIONS + 3] = { { 0 } };
	char names_text[512] = "";
	size_t names_len = 1;
	Elf64_Ehdr header = { .e_type = ET_DYN, .e_machine = EM_X86_64, .e_version = EV_CURRENT,
			      .e_phoff = sizeof(Elf64_Ehdr), .e_ehsize = sizeof(Elf64_Ehdr),
			      .e_phentsize = sizeof(Elf64_Phdr), .e_phnum = 1,
			      .e_shentsize = sizeof(Elf64_Shdr), .e_shnum = BOMB_SECTIONS + 3,
			      .e_shstrndx = BOMB_SECTIONS + 2 };
	Elf64_Phdr code = { .p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_offset = 0, .p_vaddr = 0,
			    .p_filesz = 8192, .p_memsz = 8192, .p_align = 4096 };
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	assert_true(fd >= 0);
	memcpy(header.e_ident, ELFMAG, SELFMAG);
	header.e_ident[EI_CLASS] = ELFCLASS64;
	header.e_ident[EI_DATA] = ELFDATA2LSB;
	header.e_ident[EI_VERSION] = EV_CURRENT;
	/* .text: a page of ret instructions */
	sections[1] = (Elf64_Shdr){ .sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC | SHF_EXECINSTR,
				    .sh_addr = 4096, .sh_offset = 4096, .sh_size = 4096, .sh_addralign = 16 };
	assert_int_equal(lseek(fd, 4096, SEEK_SET), 4096);
	{
		unsigned char rets[4096];

		memset(rets, 0xc3, sizeof(rets));
		assert_int_equal(write(fd, rets, sizeof(rets)), (ssize_t)sizeof(rets));
	}
	memcpy(names_text + names_len, ".text", sizeof(".text"));
	sections[1].sh_name = (Elf64_Word)names_len;
	names_len += sizeof(".text");
	for (size_t i = 0; i < BOMB_SECTIONS; i++) {
		Elf64_Chdr chdr = { .ch_type = ELFCOMPRESS_ZLIB, .ch_size = BOMB_SECTION_BYTES, .ch_addralign = 1 };
		off_t at = lseek(fd, 0, SEEK_END);

		assert_int_equal(write(fd, &chdr, sizeof(chdr)), (ssize_t)sizeof(chdr));
		write_zeros_deflated(fd, BOMB_SECTION_BYTES);
		sections[2 + i] = (Elf64_Shdr){ .sh_name = (Elf64_Word)names_len, .sh_type = SHT_PROGBITS,
						.sh_flags = SHF_COMPRESSED, .sh_offset = (Elf64_Off)at,
						.sh_size = (Elf64_Xword)(lseek(fd, 0, SEEK_END) - at), .sh_addralign = 1 };
		memcpy(names_text + names_len, names[i], strlen(names[i]) + 1);
		names_len += strlen(names[i]) + 1;
	}
	memcpy(names_text + names_len, ".shstrtab", sizeof(".shstrtab"));
	sections[BOMB_SECTIONS + 2] = (Elf64_Shdr){ .sh_name = (Elf64_Word)names_len, .sh_type = SHT_STRTAB,
						    .sh_offset = (Elf64_Off)lseek(fd, 0, SEEK_END),
						    .sh_size = names_len + sizeof(".shstrtab"), .sh_addralign = 1 };
	assert_int_equal(write(fd, names_text, sections[BOMB_SECTIONS + 2].sh_size),
			 (ssize_t)sections[BOMB_SECTIONS + 2].sh_size);
	header.e_shoff = (Elf64_Off)lseek(fd, 0, SEEK_END);
	assert_int_equal(write(fd, sections, sizeof(sections)), (ssize_t)sizeof(sections));
	assert_int_equal(pwrite(fd, &header, sizeof(header), 0), (ssize_t)sizeof(header));
	assert_int_equal(pwrite(fd, &code, sizeof(code), sizeof(header)), (ssize_t)sizeof(code));
	close(fd);
}

#endif
