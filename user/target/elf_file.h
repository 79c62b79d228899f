/* SPDX-License-Identifier: MIT */
/* An ELF file a target has mapped, read with libelf: symbols, sections, load bias. */
#ifndef PYBPFPROF_ELF_FILE_H
#define PYBPFPROF_ELF_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct elf_file {
	int fd;
	void *elf;            /* Elf *, kept opaque so users need not include libelf.h */
	char path[4096 + 32]; /* the path opened (through /proc/PID/root) */
};

/* Open path as the process pid sees it (through /proc/PID/root, so containers and chroots work).
 * 0, or -ENOENT / -EACCES / -ENOEXEC (not an ELF) / -ENOMEM. */
int elf_file_open_in(struct elf_file *file, pid_t pid, const char *path_in_target);
int elf_file_open(struct elf_file *file, const char *path);
/* The file behind one mapping of pid: through /proc/PID/root/PATH when that is the same file (inode),
 * else through /proc/PID/map_files/START-END, which also works when the maps' path is relative to
 * our root rather than the target's (a chrooted target). Same errors as elf_file_open_in. */
int elf_file_open_mapped(struct elf_file *file, pid_t pid, const char *path_in_target, uint64_t map_start,
			 uint64_t map_end, uint64_t inode);
void elf_file_close(struct elf_file *file);

/* Link-time address and size of a symbol, searched in .symtab (static ones too) then .dynsym.
 * 0 or -ENOENT. */
int elf_file_symbol(const struct elf_file *file, const char *name, uint64_t *addr, uint64_t *size);
/* Link-time address and size of a section by name; 0 or -ENOENT. */
int elf_file_section(const struct elf_file *file, const char *name, uint64_t *addr, uint64_t *size);
/* The file's contents of an allocated section (valid until close); 0, -ENOENT, or -ENODATA (NOBITS). */
int elf_file_section_data(const struct elf_file *file, const char *name, const void **data, size_t *len);
/* A function symbol: [addr, addr + size) at link time. */
struct elf_function {
	uint64_t addr;
	uint64_t size;
	const char *name;  /* points into the caller's copy of the names */
};

/* Every sized function symbol of .symtab (else .dynsym: stripped libraries), sorted by address.
 * *names holds every name; the caller frees *functions and *names. 0, -ENOENT (no symbol
 * table), -ENOMEM. */
int elf_file_functions(const struct elf_file *file, struct elf_function **functions, size_t *count,
		       char **names);
/* Runtime address minus link-time address, given where the mapping at map_offset of the file starts. */
int elf_file_load_bias(const struct elf_file *file, uint64_t map_start, uint64_t map_offset, uint64_t *bias);

#endif
