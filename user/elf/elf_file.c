// SPDX-License-Identifier: MIT
#include "elf/elf_file.h"

#include <elfutils/libdwelf.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "elf/elf_notes.h"
#include "elf/elf_section.h"

/* Guards against corrupt headers claiming absurd counts. */
#define ELF_MAX_SYMBOLS (1u << 24)
#define ELF_MAX_PHDRS 4096u

/* The regular file (device, inode) a maps line names; dev_major UINT32_MAX: any device. */
struct expected_file {
	uint64_t inode;
	uint32_t dev_major, dev_minor;
};

#define ANY_DEVICE UINT32_MAX

/*
 * Reads fd (which the caller opened) with libelf. Target files are hostile: libelf reads
 * them into memory (never a mapping, which a user truncating the file would turn into a
 * SIGBUS), so a file larger than ELF_FILE_MAX_BYTES is refused, and only a regular file
 * (the expected one when given) is read at all: not a FIFO, a device or a directory.
 */
static int open_elf_fd(struct elf_file *file, int fd, const struct expected_file *expected)
{
	struct stat info;
	Elf *elf;

	if (fstat(fd, &info) || !S_ISREG(info.st_mode)) {
		close(fd);
		return -ENOEXEC;
	}
	if (expected && ((uint64_t)info.st_ino != expected->inode ||
			 (expected->dev_major != ANY_DEVICE &&
			  (major(info.st_dev) != expected->dev_major || minor(info.st_dev) != expected->dev_minor)))) {
		close(fd);
		return -ENOENT;
	}
	if ((uint64_t)info.st_size > ELF_FILE_MAX_BYTES) {
		close(fd);
		return -EFBIG;
	}
	if (elf_version(EV_CURRENT) == EV_NONE) {
		close(fd);
		return -ENOSYS;
	}
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || gelf_getclass(elf) != ELFCLASS64) {
		if (elf)
			elf_end(elf);
		close(fd);
		return -ENOEXEC;
	}
	file->fd = fd;
	file->elf = elf;
	return 0;
}

static void elf_file_reset(struct elf_file *file, const char *path)
{
	file->fd = -1;
	file->elf = NULL;
	file->image = NULL;
	snprintf(file->path, sizeof(file->path), "%s", path);
}

int elf_file_open(struct elf_file *file, const char *path)
{
	int fd;

	elf_file_reset(file, path);
	fd = open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return open_elf_fd(file, fd, NULL);
}

/*
 * A descriptor for reading path_fd's file (an O_PATH descriptor, taken over), opened only
 * once it is known to be a regular file (the expected one when given) no larger than
 * ELF_FILE_MAX_BYTES: opening anything else can act before a byte is read (a tty becomes
 * our controlling terminal, a FIFO waits for a writer, a device rewinds its tape).
 */
static int reopen_regular(int path_fd, const struct expected_file *expected)
{
	struct stat info, opened;
	char self[64];
	int fd;

	if (fstat(path_fd, &info) || !S_ISREG(info.st_mode)) {
		close(path_fd);
		return -ENOEXEC;
	}
	if (expected && ((uint64_t)info.st_ino != expected->inode ||
			 (expected->dev_major != ANY_DEVICE &&
			  (major(info.st_dev) != expected->dev_major || minor(info.st_dev) != expected->dev_minor)))) {
		close(path_fd);
		return -ENOENT;
	}
	if ((uint64_t)info.st_size > ELF_FILE_MAX_BYTES) {
		close(path_fd);
		return -EFBIG;
	}
	snprintf(self, sizeof(self), "/proc/self/fd/%d", path_fd);
	fd = open(self, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	fd = fd < 0 ? -errno : fd;
	close(path_fd);
	if (fd >= 0 && (fstat(fd, &opened) || opened.st_dev != info.st_dev || opened.st_ino != info.st_ino)) {
		close(fd);
		return -ENOENT;
	}
	return fd;
}

/*
 * path_in_target resolved inside the target's root (pid 0: ours): its symlinks (absolute ones
 * too) stay in that root, magic links (/proc/self/...) are refused, the last component must not
 * be a link unless follow_last; and only a regular file is opened for reading (reopen_regular).
 */
static int open_in_root(pid_t pid, const char *path_in_target, bool follow_last, const struct expected_file *expected)
{
	struct open_how how = { .flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
	char root_path[64];
	int root, fd;

	if (path_in_target[0] != '/')
		return -ENOENT;
	if (!follow_last)
		how.flags |= O_NOFOLLOW;
	if (pid)
		snprintf(root_path, sizeof(root_path), "/proc/%d/root", (int)pid);
	else
		snprintf(root_path, sizeof(root_path), "/");
	root = open(root_path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	fd = (int)syscall(SYS_openat2, root, path_in_target, &how, sizeof(how));
	fd = fd < 0 ? -errno : fd;
	close(root);
	return fd < 0 ? fd : reopen_regular(fd, expected);
}

static int open_in(struct elf_file *file, pid_t pid, const char *path_in_target,
		   const struct expected_file *expected)
{
	int fd;

	elf_file_reset(file, path_in_target);
	fd = open_in_root(pid, path_in_target, false, expected);
	return fd < 0 ? fd : open_elf_fd(file, fd, expected);
}

int elf_file_open_linked_in(struct elf_file *file, pid_t root_pid, const char *path_in_root)
{
	int fd;

	elf_file_reset(file, path_in_root);
	fd = open_in_root(root_pid, path_in_root, true, NULL);
	return fd < 0 ? fd : open_elf_fd(file, fd, NULL);
}

int elf_file_open_fd(struct elf_file *file, int fd, const char *name)
{
	elf_file_reset(file, name);
	return open_elf_fd(file, fd, NULL);
}

int elf_file_candidate_fd(pid_t root_pid, const char *path_in_root, bool follow_last)
{
	return open_in_root(root_pid, path_in_root, follow_last, NULL);
}

int elf_file_open_memory(struct elf_file *file, void *image, size_t len, const char *name)
{
	Elf *elf;

	elf_file_reset(file, name);
	file->image = image;
	if (elf_version(EV_CURRENT) == EV_NONE) {
		elf_file_close(file);
		return -ENOSYS;
	}
	/* libelf reads the image in place: it is ours, a copy already bounded by the caller */
	elf = elf_memory(image, len);
	file->elf = elf;
	if (!elf || elf_kind(elf) != ELF_K_ELF || gelf_getclass(elf) != ELFCLASS64) {
		elf_file_close(file);
		return -ENOEXEC;
	}
	return 0;
}

int elf_file_open_in(struct elf_file *file, pid_t pid, const char *path_in_target)
{
	return open_in(file, pid, path_in_target, NULL);
}

/*
 * What the process maps, through /proc/PID/map_files (root only: it needs CAP_SYS_ADMIN),
 * whatever became of its path since; the path inside the target's root only where
 * map_files cannot be opened. Either way the file must be the one the maps line names.
 */
/* The checked descriptor of what pid maps at [map_start, map_end) (open_mapped says how). */
static int mapped_fd(pid_t pid, const char *path_in_target, uint64_t map_start, uint64_t map_end,
		     const struct expected_file *expected)
{
	char map_file[96];
	int fd;

	snprintf(map_file, sizeof(map_file), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid, map_start, map_end);
	fd = open(map_file, O_PATH | O_CLOEXEC);
	if (fd >= 0)
		return reopen_regular(fd, expected);
	return open_in_root(pid, path_in_target, false, expected);
}

static int open_mapped(struct elf_file *file, pid_t pid, const char *path_in_target, uint64_t map_start,
		       uint64_t map_end, const struct expected_file *expected)
{
	int fd;

	elf_file_reset(file, path_in_target);
	fd = mapped_fd(pid, path_in_target, map_start, map_end, expected);
	return fd < 0 ? fd : open_elf_fd(file, fd, expected);
}

int elf_file_map_fd(pid_t pid, const struct proc_map *map)
{
	struct expected_file expected = { .inode = map->inode, .dev_major = map->dev_major,
					  .dev_minor = map->dev_minor };

	return mapped_fd(pid, map->path, map->start, map->end, &expected);
}

int elf_file_open_mapped(struct elf_file *file, pid_t pid, const char *path_in_target, uint64_t map_start,
			 uint64_t map_end, uint64_t inode)
{
	struct expected_file expected = { .inode = inode, .dev_major = ANY_DEVICE };

	return open_mapped(file, pid, path_in_target, map_start, map_end, &expected);
}

int elf_file_open_map(struct elf_file *file, pid_t pid, const struct proc_map *map)
{
	struct expected_file expected = { .inode = map->inode, .dev_major = map->dev_major,
					  .dev_minor = map->dev_minor };

	return open_mapped(file, pid, map->path, map->start, map->end, &expected);
}

void elf_file_close(struct elf_file *file)
{
	if (file->elf)
		elf_end(file->elf);
	if (file->fd >= 0)
		close(file->fd);
	free(file->image);
	file->elf = NULL;
	file->image = NULL;
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

/* Whether name is wanted by a query not answered yet; fills it. */
static void answer_query(struct elf_symbol_query *queries, size_t count, const char *name, const GElf_Sym *sym)
{
	for (size_t q = 0; q < count; q++) {
		if (queries[q].found || strcmp(queries[q].name, name))
			continue;
		queries[q].found = true;
		queries[q].addr = sym->st_value;
		queries[q].size = sym->st_size;
	}
}

int elf_file_lookup_symbols(const struct elf_file *file, enum elf_symbol_table table,
			    struct elf_symbol_query *queries, size_t count)
{
	struct symbol_table symbols;
	int found = 0;

	if (open_symbol_table(file->elf, table == ELF_SYMBOLS_DYNAMIC ? SHT_DYNSYM : SHT_SYMTAB, &symbols))
		return -ENOENT;
	for (size_t i = 0; i < symbols.count; i++) {
		GElf_Sym sym;
		const char *name = defined_symbol(&symbols, i, &sym);

		if (name)
			answer_query(queries, count, name, &sym);
	}
	for (size_t q = 0; q < count; q++)
		found += queries[q].found;
	return found;
}

bool elf_file_imports_prefix(const struct elf_file *file, const char *const *prefixes, size_t count)
{
	struct symbol_table symbols;

	if (open_symbol_table(file->elf, SHT_DYNSYM, &symbols))
		return false;
	for (size_t i = 0; i < symbols.count; i++) {
		GElf_Sym sym;
		const char *name;

		if (!gelf_getsym(symbols.data, (int)i, &sym) || sym.st_shndx != SHN_UNDEF)
			continue;
		name = elf_strptr(symbols.elf, symbols.names_section, sym.st_name);
		for (size_t p = 0; name && p < count; p++)
			if (!strncmp(name, prefixes[p], strlen(prefixes[p])))
				return true;
	}
	return false;
}

int elf_file_soname(const struct elf_file *file, char *out, size_t len)
{
	GElf_Shdr shdr;
	Elf_Scn *scn = elf_section_of_type(file->elf, SHT_DYNAMIC, &shdr);
	Elf_Data *data = scn ? elf_getdata(scn, NULL) : NULL;
	size_t entries = data && shdr.sh_entsize ? shdr.sh_size / shdr.sh_entsize : 0;

	for (size_t i = 0; i < entries && i < ELF_MAX_SYMBOLS; i++) {
		GElf_Dyn dyn;
		const char *name;

		if (!gelf_getdyn(data, (int)i, &dyn) || dyn.d_tag == DT_NULL)
			break;
		if (dyn.d_tag != DT_SONAME)
			continue;
		name = elf_strptr(file->elf, shdr.sh_link, dyn.d_un.d_val);
		if (!name)
			return -ENOENT;
		snprintf(out, len, "%s", name);
		return 0;
	}
	return -ENOENT;
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

/* One copy of the table's string section, NUL-terminated, for the names to point into. */
static int copy_names(const struct symbol_table *table, char **names, size_t *names_len)
{
	Elf_Scn *scn = elf_getscn(table->elf, table->names_section);
	Elf_Data *data = scn ? elf_getdata(scn, NULL) : NULL;

	if (!data || !data->d_buf)
		return -ENOENT;
	if (data->d_size >= ELF_FILE_MAX_SYMBOL_BYTES)
		return -E2BIG;
	*names = malloc(data->d_size + 1);
	if (!*names)
		return -ENOMEM;
	memcpy(*names, data->d_buf, data->d_size);
	(*names)[data->d_size] = 0;
	*names_len = data->d_size;
	return 0;
}

static int functions_in_table(Elf *elf, Elf64_Word table_type, struct elf_function **functions,
			      size_t *count, char **names)
{
	struct symbol_table table;
	size_t kept = 0, names_len = 0;
	GElf_Sym sym;
	int err;

	if (open_symbol_table(elf, table_type, &table))
		return -ENOENT;
	for (size_t i = 0; i < table.count; i++)
		kept += sized_function(&table, i, &sym) != NULL;
	if (!kept)
		return -ENOENT;
	/* A name is referenced, never copied per symbol: symbols sharing one long name cost one copy. */
	err = copy_names(&table, names, &names_len);
	if (err)
		return err;
	if (kept > (ELF_FILE_MAX_SYMBOL_BYTES - names_len) / sizeof(**functions)) {
		free(*names);
		return -E2BIG;
	}
	*functions = calloc(kept, sizeof(**functions));
	if (!*functions) {
		free(*names);
		return -ENOMEM;
	}
	*count = 0;
	for (size_t i = 0; i < table.count && *count < kept; i++) {
		/* sized_function checked that libelf finds the name inside the section */
		if (!sized_function(&table, i, &sym) || sym.st_name >= names_len)
			continue;
		(*functions)[(*count)++] = (struct elf_function){ sym.st_value, sym.st_size, *names + sym.st_name };
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

bool elf_file_has_symtab(const struct elf_file *file)
{
	GElf_Shdr shdr;

	return elf_section_of_type(file->elf, SHT_SYMTAB, &shdr) != NULL;
}

bool elf_file_tables_within(const struct elf_file *file, uint64_t max)
{
	size_t names_index;
	Elf_Scn *scn = NULL;
	unsigned seen = 0;

	if (elf_getshdrstrndx(file->elf, &names_index))
		names_index = SHN_UNDEF;
	while ((scn = elf_nextscn(file->elf, scn)) && seen++ < ELF_SECTION_MAX) {
		GElf_Shdr shdr;
		const char *name;
		bool table;

		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type == SHT_NOBITS || shdr.sh_size <= max)
			continue;
		table = shdr.sh_type == SHT_SYMTAB || shdr.sh_type == SHT_DYNSYM || shdr.sh_type == SHT_STRTAB ||
			shdr.sh_type == SHT_DYNAMIC;
		name = names_index != SHN_UNDEF ? elf_strptr(file->elf, names_index, shdr.sh_name) : NULL;
		if (table || (name && !strcmp(name, ".rodata")))
			return false;
	}
	return true;
}

/* Whether the note bytes libdw may fetch (every PT_NOTE segment and SHT_NOTE section: libelf
 * copies each from a file it reads, and from an image when misaligned, and keeps the copies
 * until the file is closed; a file may list thousands, each as large as itself) are within
 * ELF_NOTES_BUDGET and its section count within ELF_SECTION_MAX: looks at the headers only. */
static bool notes_within_budget(Elf *elf)
{
	uint64_t note_bytes = 0;
	size_t count, sections;
	Elf_Scn *scn = NULL;

	if (elf_getphdrnum(elf, &count) || count > ELF_NOTES_MAX_PROGRAM_HEADERS ||
	    elf_getshdrnum(elf, &sections) || sections > ELF_SECTION_MAX)
		return false;
	for (size_t i = 0; i < count; i++) {
		GElf_Phdr phdr;

		if (gelf_getphdr(elf, (int)i, &phdr) && phdr.p_type == PT_NOTE)
			note_bytes += phdr.p_filesz;
		if (note_bytes > ELF_NOTES_BUDGET)
			return false;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;

		if (gelf_getshdr(scn, &shdr) && shdr.sh_type == SHT_NOTE)
			note_bytes += shdr.sh_size;
		if (note_bytes > ELF_NOTES_BUDGET)
			return false;
	}
	return true;
}

int elf_file_build_id(const struct elf_file *file, uint8_t id[ELF_FILE_MAX_BUILD_ID], size_t *len)
{
	const void *bits;
	ssize_t bits_len;

	if (!notes_within_budget(file->elf))
		return -ENOENT;
	bits_len = dwelf_elf_gnu_build_id(file->elf, &bits);
	if (bits_len <= 0 || bits_len > ELF_FILE_MAX_BUILD_ID)
		return -ENOENT;
	memcpy(id, bits, (size_t)bits_len);
	*len = (size_t)bits_len;
	return 0;
}

size_t elf_file_load_segments(const struct elf_file *file, struct elf_load_segment *segments, size_t max)
{
	size_t count, kept = 0;

	if (elf_getphdrnum(file->elf, &count))
		return 0;
	if (count > ELF_MAX_PHDRS)
		count = ELF_MAX_PHDRS;
	for (size_t i = 0; i < count && kept < max; i++) {
		GElf_Phdr phdr;

		if (!gelf_getphdr(file->elf, (int)i, &phdr) || phdr.p_type != PT_LOAD)
			continue;
		segments[kept++] = (struct elf_load_segment){ phdr.p_vaddr, phdr.p_offset, phdr.p_filesz };
	}
	return kept;
}

int elf_load_bias(const struct elf_load_segment *segments, size_t count, uint64_t map_start, uint64_t map_offset,
		  uint64_t *bias)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t page_mask = ~((uint64_t)(page > 0 ? page : 4096) - 1);

	for (size_t i = 0; i < count; i++) {
		const struct elf_load_segment *segment = &segments[i];
		/* the kernel maps each PT_LOAD from page-aligned file offset to page-aligned vaddr */
		uint64_t seg_file_start = segment->offset & page_mask;
		uint64_t seg_vaddr_start = segment->vaddr & page_mask;

		if (map_offset < seg_file_start || map_offset >= segment->offset + segment->filesz)
			continue;
		*bias = map_start - (seg_vaddr_start + (map_offset - seg_file_start));
		return 0;
	}
	return -ENOENT;
}

int elf_file_load_bias(const struct elf_file *file, uint64_t map_start, uint64_t map_offset, uint64_t *bias)
{
	struct elf_load_segment segments[ELF_FILE_MAX_LOAD_SEGMENTS];
	size_t count;

	if (!file->elf)
		return -ENOEXEC;
	count = elf_file_load_segments(file, segments, ELF_FILE_MAX_LOAD_SEGMENTS);
	return elf_load_bias(segments, count, map_start, map_offset, bias);
}
