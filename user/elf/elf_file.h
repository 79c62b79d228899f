/* SPDX-License-Identifier: MIT */
/* An ELF file a target has mapped, read with libelf: symbols, sections, load bias. */
#ifndef PYBPFPROF_ELF_FILE_H
#define PYBPFPROF_ELF_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proc/proc_maps.h"

/*
 * Target files are hostile: they are read into memory by libelf, never mapped (a user
 * truncating a mapped file would kill us with SIGBUS), only when they are regular files
 * (never a FIFO: opened without blocking, refused before a byte is read), and only up to
 * ELF_FILE_MAX_BYTES.
 */
#define ELF_FILE_MAX_BYTES ((uint64_t)512 << 20)
/* The symbol names of one file (its string table) and its function entries are refused beyond this. */
#define ELF_FILE_MAX_SYMBOL_BYTES ((size_t)128 << 20)

struct elf_file {
	int fd;               /* -1 for an image in memory */
	void *elf;            /* Elf *, kept opaque so users need not include libelf.h */
	void *image;          /* an image in memory (elf_file_open_memory), freed at close */
	char path[4096 + 32]; /* the path opened */
};

/* Open path as the process pid sees it: resolved inside /proc/PID/root (its symlinks stay in
 * that root, magic links are refused, the last component must not be a link).
 * 0, or -ENOENT / -EACCES / -ESRCH / -ENOEXEC (not a regular file, not a 64-bit ELF) /
 * -EFBIG (larger than ELF_FILE_MAX_BYTES) / -ENOMEM. */
int elf_file_open_in(struct elf_file *file, pid_t pid, const char *path_in_target);
/* A file of ours (not a target's path): the same checks but the resolution. */
int elf_file_open(struct elf_file *file, const char *path);
/* As elf_file_open_in, but the last component may be a symlink, followed inside the same root
 * (a build-id tree's entries link to the debug files); root_pid 0: our own root. For files
 * that are checked once open (a debug file must match the file it describes). */
int elf_file_open_linked_in(struct elf_file *file, pid_t root_pid, const char *path_in_root);
/* An ELF image in memory (a decompressed MiniDebugInfo), taken over: freed at close, also on
 * failure. name is what the file's path says. 0, -ENOEXEC (not a 64-bit ELF), -ENOSYS. */
int elf_file_open_memory(struct elf_file *file, void *image, size_t len, const char *name);
/* The file behind one mapping of pid: /proc/PID/map_files/START-END (what is mapped, whatever
 * became of its path; also right when the maps' path is relative to our root rather than the
 * target's), else, where map_files cannot be opened, path_in_target as elf_file_open_in does.
 * The file must be the regular file with the mapping's inode (else -ENOENT), and for
 * elf_file_open_map its device too. Same errors as elf_file_open_in. */
int elf_file_open_map(struct elf_file *file, pid_t pid, const struct proc_map *map);
int elf_file_open_mapped(struct elf_file *file, pid_t pid, const char *path_in_target, uint64_t map_start,
			 uint64_t map_end, uint64_t inode);
/* A descriptor that was checked already (elf_file_map_fd, elf_file_candidate_fd), taken
 * over: closed at close, also on failure. name is what the file's path says. */
int elf_file_open_fd(struct elf_file *file, int fd, const char *name);
/* The checked descriptor (regular file, the mapping's device and inode, no larger than
 * ELF_FILE_MAX_BYTES, O_NOCTTY, never a device opened) of the file behind one mapping of pid,
 * found as elf_file_open_map finds it; a negative errno as elf_file_open_map. */
int elf_file_map_fd(pid_t pid, const struct proc_map *map);
/* As elf_file_open_linked_in finds it (follow_last: the last component may be a symlink, else
 * never), the checked descriptor of a regular file; -ENOEXEC for anything else (a tty, a FIFO,
 * a device: never opened), -ENOENT, -EFBIG. */
int elf_file_candidate_fd(pid_t root_pid, const char *path_in_root, bool follow_last);
void elf_file_close(struct elf_file *file);

/* Link-time address and size of a symbol, searched in .symtab (static ones too) then .dynsym.
 * 0 or -ENOENT. */
int elf_file_symbol(const struct elf_file *file, const char *name, uint64_t *addr, uint64_t *size);
/* Which symbol table elf_file_lookup_symbols() reads. */
enum elf_symbol_table {
	ELF_SYMBOLS_DYNAMIC, /* .dynsym: what the file exports and imports, kept when stripped */
	ELF_SYMBOLS_STATIC,  /* .symtab: every symbol, static ones too, gone when stripped */
};
/* One wanted name; found, addr and size are filled by elf_file_lookup_symbols(). */
struct elf_symbol_query {
	const char *name;
	bool found;
	uint64_t addr;
	uint64_t size;
};
/* One pass over a table for every name of queries not found yet (defined symbols only).
 * How many of queries are found now, or -ENOENT (no such table). */
int elf_file_lookup_symbols(const struct elf_file *file, enum elf_symbol_table table,
			    struct elf_symbol_query *queries, size_t count);
/* Whether .dynsym has an undefined symbol whose name starts with one of prefixes: the file
 * links against a library providing them. */
bool elf_file_imports_prefix(const struct elf_file *file, const char *const *prefixes, size_t count);
/* The DT_SONAME of a shared library ("libpython3.9.so.1.0"); 0 or -ENOENT. */
int elf_file_soname(const struct elf_file *file, char *out, size_t len);
/* Link-time address and size of a section by name; 0 or -ENOENT. */
int elf_file_section(const struct elf_file *file, const char *name, uint64_t *addr, uint64_t *size);
/* The file's contents of a section, allocated or not (valid until close); 0, -ENOENT, or -ENODATA (NOBITS). */
int elf_file_section_data(const struct elf_file *file, const char *name, const void **data, size_t *len);
/* A function symbol: [addr, addr + size) at link time. */
struct elf_function {
	uint64_t addr;
	uint64_t size;
	const char *name;  /* points into the names elf_file_functions() returns */
};

/* Every sized function symbol of .symtab (else .dynsym: stripped libraries), sorted by address.
 * *names is one copy of the table's string section, which every name points into (symbols
 * sharing a name share its bytes); the caller frees *functions and *names. 0, -ENOENT (no
 * symbol table), -E2BIG (names and entries beyond ELF_FILE_MAX_SYMBOL_BYTES), -ENOMEM. */
int elf_file_functions(const struct elf_file *file, struct elf_function **functions, size_t *count,
		       char **names);
/* Whether every symbol table, string table, dynamic section and .rodata of the file (what
 * finding symbols, names and version strings reads) is at most max bytes: looks at the
 * section headers only. */
bool elf_file_tables_within(const struct elf_file *file, uint64_t max);
/* Whether the file has a .symtab (its static functions named): a stripped file has not. */
bool elf_file_has_symtab(const struct elf_file *file);
/* The file's GNU build-id (NT_GNU_BUILD_ID note), copied into id (up to ELF_FILE_MAX_BUILD_ID
 * bytes). 0, -ENOENT. */
#define ELF_FILE_MAX_BUILD_ID 64
int elf_file_build_id(const struct elf_file *file, uint8_t id[ELF_FILE_MAX_BUILD_ID], size_t *len);
/* A PT_LOAD segment: what the load bias of a mapping is computed from. */
struct elf_load_segment {
	uint64_t vaddr;
	uint64_t offset;
	uint64_t filesz;
};
#define ELF_FILE_MAX_LOAD_SEGMENTS 16
/* The file's PT_LOAD segments, at most max, in program header order; how many. */
size_t elf_file_load_segments(const struct elf_file *file, struct elf_load_segment *segments, size_t max);
/* elf_file_load_bias's rule over segments already read. 0 or -ENOENT. */
int elf_load_bias(const struct elf_load_segment *segments, size_t count, uint64_t map_start, uint64_t map_offset,
		  uint64_t *bias);
/* Runtime address minus link-time address, given where the mapping at map_offset of the file starts. */
int elf_file_load_bias(const struct elf_file *file, uint64_t map_start, uint64_t map_offset, uint64_t *bias);

#endif
