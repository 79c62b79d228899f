// SPDX-License-Identifier: MIT
#include "target/elf_file.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "target/elf_section.h"

/* Guards against corrupt headers claiming absurd counts. */
#define ELF_MAX_SYMBOLS (1u << 24)
#define ELF_MAX_PHDRS 4096u

int elf_file_open(struct elf_file *file, const char *path)
{
	Elf *elf;

	file->fd = -1;
	file->elf = NULL;
	snprintf(file->path, sizeof(file->path), "%s", path);
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	file->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (file->fd < 0)
		return -errno;
	elf = elf_begin(file->fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || gelf_getclass(elf) != ELFCLASS64) {
		if (elf)
			elf_end(elf);
		close(file->fd);
		file->fd = -1;
		return -ENOEXEC;
	}
	file->elf = elf;
	return 0;
}

int elf_file_open_in(struct elf_file *file, pid_t pid, const char *path_in_target)
{
	char path[sizeof(file->path)];

	if (path_in_target[0] != '/')
		return -ENOENT;
	snprintf(path, sizeof(path), "/proc/%d/root%s", (int)pid, path_in_target);
	return elf_file_open(file, path);
}

int elf_file_open_mapped(struct elf_file *file, pid_t pid, const char *path_in_target, uint64_t map_start,
			 uint64_t map_end, uint64_t inode)
{
	char map_file[96];
	struct stat st;
	int err = elf_file_open_in(file, pid, path_in_target);

	if (!err && fstat(file->fd, &st) == 0 && (uint64_t)st.st_ino == inode)
		return 0;
	if (!err)
		elf_file_close(file);
	snprintf(map_file, sizeof(map_file), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid, map_start, map_end);
	/* map_files needs CAP_SYS_ADMIN: keep the first error when it is refused */
	return elf_file_open(file, map_file) ? (err ? err : -ENOENT) : 0;
}

void elf_file_close(struct elf_file *file)
{
	if (file->elf)
		elf_end(file->elf);
	if (file->fd >= 0)
		close(file->fd);
	file->elf = NULL;
	file->fd = -1;
}

/* A symbol table: its entries, how many (bounded), and the string section its names are in. */
struct symbol_table {
	Elf *elf;
	Elf_Data *data;
	size_t count;
	size_t names_section;
};

static int open_symbol_table(Elf *elf, Elf64_Word table_type, struct symbol_table *table)
{
	GElf_Shdr shdr;
	Elf_Scn *scn = elf_section_of_type(elf, table_type, &shdr);

	if (!scn || !shdr.sh_entsize)
		return -ENOENT;
	table->elf = elf;
	table->data = elf_getdata(scn, NULL);
	if (!table->data)
		return -ENOENT;
	table->count = shdr.sh_size / shdr.sh_entsize;
	if (table->count > ELF_MAX_SYMBOLS)
		table->count = ELF_MAX_SYMBOLS;
	table->names_section = shdr.sh_link;
	return 0;
}

/* Entry i of the table and its name; NULL for an undefined or nameless symbol. */
static const char *defined_symbol(const struct symbol_table *table, size_t i, GElf_Sym *sym)
{
	const char *name;

	if (!gelf_getsym(table->data, (int)i, sym) || sym->st_shndx == SHN_UNDEF)
		return NULL;
	name = elf_strptr(table->elf, table->names_section, sym->st_name);
	return name && *name ? name : NULL;
}

static int symbol_in_table(Elf *elf, Elf64_Word table_type, const char *name, uint64_t *addr, uint64_t *size)
{
	struct symbol_table table;

	if (open_symbol_table(elf, table_type, &table))
		return -ENOENT;
	for (size_t i = 0; i < table.count; i++) {
		GElf_Sym sym;
		const char *sym_name = defined_symbol(&table, i, &sym);

		if (sym_name && !strcmp(sym_name, name)) {
			*addr = sym.st_value;
			if (size)
				*size = sym.st_size;
			return 0;
		}
	}
	return -ENOENT;
}

int elf_file_symbol(const struct elf_file *file, const char *name, uint64_t *addr, uint64_t *size)
{
	/* .symtab first: it also holds static symbols such as 2.7's interp_head */
	if (!symbol_in_table(file->elf, SHT_SYMTAB, name, addr, size))
		return 0;
	return symbol_in_table(file->elf, SHT_DYNSYM, name, addr, size);
}

/* A named function with an address and a size: something an address can fall inside. */
static const char *sized_function(const struct symbol_table *table, size_t i, GElf_Sym *sym)
{
	const char *name = defined_symbol(table, i, sym);
	unsigned type = GELF_ST_TYPE(sym->st_info);

	if (!name || (type != STT_FUNC && type != STT_GNU_IFUNC) || !sym->st_value || !sym->st_size)
		return NULL;
	return name;
}

static int compare_functions(const void *left, const void *right)
{
	const struct elf_function *a = left, *b = right;

	return a->addr < b->addr ? -1 : a->addr > b->addr;
}

static int functions_in_table(Elf *elf, Elf64_Word table_type, struct elf_function **functions,
			      size_t *count, char **names)
{
	struct symbol_table table;
	size_t kept = 0, names_len = 0, used = 0;
	GElf_Sym sym;

	if (open_symbol_table(elf, table_type, &table))
		return -ENOENT;
	/* Measure first, so that one allocation holds every name. */
	for (size_t i = 0; i < table.count; i++) {
		const char *name = sized_function(&table, i, &sym);

		kept += name != NULL;
		names_len += name ? strlen(name) + 1 : 0;
	}
	if (!kept)
		return -ENOENT;
	*functions = calloc(kept, sizeof(**functions));
	*names = malloc(names_len);
	if (!*functions || !*names) {
		free(*functions);
		free(*names);
		return -ENOMEM;
	}
	*count = 0;
	for (size_t i = 0; i < table.count && *count < kept; i++) {
		const char *name = sized_function(&table, i, &sym);
		size_t len = name ? strlen(name) + 1 : 0;

		if (!name || used + len > names_len)
			continue;
		memcpy(*names + used, name, len);
		(*functions)[(*count)++] = (struct elf_function){ sym.st_value, sym.st_size, *names + used };
		used += len;
	}
	qsort(*functions, *count, sizeof(**functions), compare_functions);
	return 0;
}

int elf_file_functions(const struct elf_file *file, struct elf_function **functions, size_t *count,
		       char **names)
{
	int err = functions_in_table(file->elf, SHT_SYMTAB, functions, count, names);

	if (err == -ENOENT)
		err = functions_in_table(file->elf, SHT_DYNSYM, functions, count, names);
	return err;
}

int elf_file_section(const struct elf_file *file, const char *name, uint64_t *addr, uint64_t *size)
{
	GElf_Shdr shdr;

	if (!elf_section_by_name(file->elf, name, &shdr))
		return -ENOENT;
	*addr = shdr.sh_addr;
	if (size)
		*size = shdr.sh_size;
	return 0;
}

int elf_file_section_data(const struct elf_file *file, const char *name, const void **data, size_t *len)
{
	GElf_Shdr shdr;
	Elf_Scn *scn = elf_section_by_name(file->elf, name, &shdr);
	Elf_Data *contents;

	if (!scn)
		return -ENOENT;
	if (shdr.sh_type == SHT_NOBITS)
		return -ENODATA;
	contents = elf_getdata(scn, NULL);
	if (!contents || !contents->d_buf)
		return -ENODATA;
	*data = contents->d_buf;
	*len = contents->d_size;
	return 0;
}

int elf_file_load_bias(const struct elf_file *file, uint64_t map_start, uint64_t map_offset, uint64_t *bias)
{
	size_t count;
	long page = sysconf(_SC_PAGESIZE);
	uint64_t page_mask = ~((uint64_t)(page > 0 ? page : 4096) - 1);

	if (elf_getphdrnum(file->elf, &count))
		return -ENOEXEC;
	if (count > ELF_MAX_PHDRS)
		count = ELF_MAX_PHDRS;
	for (size_t i = 0; i < count; i++) {
		GElf_Phdr phdr;
		uint64_t seg_file_start, seg_vaddr_start;

		if (!gelf_getphdr(file->elf, (int)i, &phdr) || phdr.p_type != PT_LOAD)
			continue;
		/* the kernel maps each PT_LOAD from page-aligned file offset to page-aligned vaddr */
		seg_file_start = phdr.p_offset & page_mask;
		seg_vaddr_start = phdr.p_vaddr & page_mask;
		if (map_offset < seg_file_start || map_offset >= phdr.p_offset + phdr.p_filesz)
			continue;
		*bias = map_start - (seg_vaddr_start + (map_offset - seg_file_start));
		return 0;
	}
	return -ENOENT;
}
