// SPDX-License-Identifier: MIT
/* target/elf_symbols on a hostile ELF: symbols that all share one long name cost that name once. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>

#include "testlib.h"

#include "elf/elf_file.h"
#include "proc/proc_maps.h"
#include "python/py_discover.h"

/* ---------------------------------------------------------------- one name shared by every symbol */

#define SHARED_NAME_LEN (32u << 10)
#define SHARED_NAME_SYMBOLS 16384u

/* An ELF with SHARED_NAME_SYMBOLS function symbols, all named by the same SHARED_NAME_LEN
 * bytes of .strtab: sections null, .symtab, .strtab, .shstrtab. */
static void write_shared_name_elf(const char *path)
{
	static const char section_names[] = "\0.symtab\0.strtab\0.shstrtab";
	size_t strtab_len = SHARED_NAME_LEN + 2, symtab_len = (SHARED_NAME_SYMBOLS + 1) * sizeof(Elf64_Sym);
	size_t symtab_off = sizeof(Elf64_Ehdr), strtab_off = symtab_off + symtab_len;
	size_t shstrtab_off = strtab_off + strtab_len, shdr_off = (shstrtab_off + sizeof(section_names) + 7) & ~7ul;
	size_t total = shdr_off + 4 * sizeof(Elf64_Shdr);
	uint8_t *image = calloc(1, total);
	Elf64_Ehdr *header = (Elf64_Ehdr *)image;
	Elf64_Sym *symbols = (Elf64_Sym *)(image + symtab_off);
	Elf64_Shdr *sections = (Elf64_Shdr *)(image + shdr_off);
	FILE *out;

	assert_non_null(image);
	memcpy(header->e_ident, ELFMAG, SELFMAG);
	header->e_ident[EI_CLASS] = ELFCLASS64;
	header->e_ident[EI_DATA] = ELFDATA2LSB;
	header->e_ident[EI_VERSION] = EV_CURRENT;
	header->e_type = ET_DYN;
	header->e_machine = EM_X86_64;
	header->e_version = EV_CURRENT;
	header->e_ehsize = sizeof(Elf64_Ehdr);
	header->e_shoff = shdr_off;
	header->e_shentsize = sizeof(Elf64_Shdr);
	header->e_shnum = 4;
	header->e_shstrndx = 3;
	for (uint32_t i = 1; i <= SHARED_NAME_SYMBOLS; i++)
		symbols[i] = (Elf64_Sym){ .st_name = 1, .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC),
					  .st_shndx = 1, .st_value = 0x1000 + 16ull * i, .st_size = 16 };
	memset(image + strtab_off + 1, 'f', SHARED_NAME_LEN);
	memcpy(image + shstrtab_off, section_names, sizeof(section_names));
	sections[1] = (Elf64_Shdr){ .sh_name = 1, .sh_type = SHT_SYMTAB, .sh_offset = symtab_off,
				    .sh_size = symtab_len, .sh_link = 2, .sh_info = 1, .sh_addralign = 8,
				    .sh_entsize = sizeof(Elf64_Sym) };
	sections[2] = (Elf64_Shdr){ .sh_name = 9, .sh_type = SHT_STRTAB, .sh_offset = strtab_off,
				    .sh_size = strtab_len, .sh_addralign = 1 };
	sections[3] = (Elf64_Shdr){ .sh_name = 17, .sh_type = SHT_STRTAB, .sh_offset = shstrtab_off,
				    .sh_size = sizeof(section_names), .sh_addralign = 1 };
	out = fopen(path, "wb");
	assert_non_null(out);
	assert_int_equal(fwrite(image, 1, total, out), total);
	fclose(out);
	free(image);
}

/* 16384 symbols sharing a 32 KiB name: one copy of the name, not 512 MiB of them. */
static void shared_symbol_name_is_not_copied_per_symbol(void **state)
{
	char path[256];
	struct elf_file file;
	struct elf_function *functions = NULL;
	char *names = NULL;
	size_t count = 0;

	(void)state;
	snprintf(path, sizeof(path), "%s/shared_name.so", test_tmpdir());
	write_shared_name_elf(path);
	assert_int_equal(elf_file_open(&file, path), 0);
	assert_int_equal(elf_file_functions(&file, &functions, &count, &names), 0);
	assert_int_equal(count, SHARED_NAME_SYMBOLS);
	for (size_t i = 0; i < count; i++) {
		assert_ptr_equal(functions[i].name, functions[0].name);
		assert_true(functions[i].name >= names && functions[i].name < names + SHARED_NAME_LEN + 2);
	}
	assert_int_equal(strlen(functions[0].name), SHARED_NAME_LEN);
	assert_int_equal(functions[0].name[0], 'f');
	free(functions);
	free(names);
	elf_file_close(&file);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(shared_symbol_name_is_not_copied_per_symbol),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
