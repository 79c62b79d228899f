/* SPDX-License-Identifier: MIT */
/* Kernel addresses to symbol names, from /proc/kallsyms loaded once. */
#ifndef PYBPFPROF_KSYMS_H
#define PYBPFPROF_KSYMS_H

#include <stddef.h>
#include <stdint.h>

struct ksyms;

/* Loads /proc/kallsyms. -EPERM with a hint if every address reads as 0 (kernel.kptr_restrict). */
int ksyms_load(struct ksyms **out, char *err_text, size_t err_len);
/* The same from another file in kallsyms format. */
int ksyms_load_file(struct ksyms **out, const char *path, char *err_text, size_t err_len);
/* The symbol containing addr (the nearest one at or below it), NULL if below every symbol (or
 * if its name cannot be read back). offset (optional) gets addr - symbol address; module
 * (optional) the module name or NULL for the core kernel. The name lives until the next
 * ksyms_resolve (names are kept compressed), the module name as long as the ksyms. */
const char *ksyms_resolve(struct ksyms *ksyms, uint64_t addr, uint64_t *offset, const char **module);
size_t ksyms_count(const struct ksyms *ksyms);
void ksyms_free(struct ksyms *ksyms);

#endif
