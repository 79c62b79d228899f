// SPDX-License-Identifier: MIT
#include "symbolize/ksyms.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/array.h"
#include "util/errbuf.h"

struct ksym {
	uint64_t addr;
	uint32_t name;    /* offset into names */
	uint32_t module;  /* offset into names, UINT32_MAX for the core kernel */
};

struct ksyms {
	struct ksym *syms;
	size_t count, capacity;
	char *names;
	size_t names_len, names_capacity;
};

#define NO_MODULE UINT32_MAX
/* kallsyms holds some 10^5 names: start the name store at a page, not at 16 bytes. */
#define KSYMS_NAMES_MIN_CAPACITY 4096

static int intern_name(struct ksyms *ksyms, const char *name, uint32_t *offset)
{
	size_t len = strlen(name) + 1;

	if (ksyms->names_len + len > UINT32_MAX - 1)
		return -E2BIG;
	if (array_reserve((void **)&ksyms->names, &ksyms->names_capacity, ksyms->names_len + len, 1,
			  KSYMS_NAMES_MIN_CAPACITY))
		return -ENOMEM;
	memcpy(ksyms->names + ksyms->names_len, name, len);
	*offset = (uint32_t)ksyms->names_len;
	ksyms->names_len += len;
	return 0;
}

/* Code symbols only: data symbols would swallow text addresses between them. */
static int is_code_type(char type)
{
	return type == 't' || type == 'T' || type == 'w' || type == 'W';
}

static int add_line(struct ksyms *ksyms, const char *line, uint32_t *last_module)
{
	char name[512], module[128];
	uint64_t addr;
	char type;
	struct ksym *sym;
	int fields = sscanf(line, "%" SCNx64 " %c %511s [%127[^]]]", &addr, &type, name, module);

	if (fields < 3 || !is_code_type(type))
		return 0;
	if (ARRAY_RESERVE(ksyms->syms, ksyms->capacity, ksyms->count + 1))
		return -ENOMEM;
	sym = &ksyms->syms[ksyms->count];
	sym->addr = addr;
	sym->module = NO_MODULE;
	if (intern_name(ksyms, name, &sym->name))
		return -ENOMEM;
	if (fields == 4) {
		/* Modules' symbols come grouped: share one copy of the name. */
		if (*last_module == NO_MODULE || strcmp(ksyms->names + *last_module, module) != 0) {
			if (intern_name(ksyms, module, last_module))
				return -ENOMEM;
		}
		sym->module = *last_module;
	}
	ksyms->count++;
	return 0;
}

/* Growth doubled both stores: give back the slack, most of the profiler's heap (kallsyms holds
 * some 10^5 code symbols, about 4 MB once exact). */
static void shrink_to_fit(struct ksyms *ksyms)
{
	struct ksym *syms = realloc(ksyms->syms, ksyms->count * sizeof(*syms));
	char *names = realloc(ksyms->names, ksyms->names_len);

	if (syms) {
		ksyms->syms = syms;
		ksyms->capacity = ksyms->count;
	}
	if (names) {
		ksyms->names = names;
		ksyms->names_capacity = ksyms->names_len;
	}
}

static int by_address(const void *a, const void *b)
{
	const struct ksym *left = a, *right = b;

	return left->addr < right->addr ? -1 : left->addr > right->addr;
}

static int all_zero(const struct ksyms *ksyms)
{
	for (size_t i = 0; i < ksyms->count; i++)
		if (ksyms->syms[i].addr)
			return 0;
	return 1;
}

int ksyms_load_file(struct ksyms **out, const char *path, char *err_text, size_t err_len)
{
	struct ksyms *ksyms;
	uint32_t last_module = NO_MODULE;
	char line[1024];
	FILE *file;
	int err = 0;

	*out = NULL;
	file = fopen(path, "r");
	if (!file) {
		err = -errno;
		return errbuf_format(err_text, err_len, err, "cannot open %s: %s", path, strerror(-err));
	}
	ksyms = calloc(1, sizeof(*ksyms));
	if (!ksyms) {
		fclose(file);
		return errbuf_format(err_text, err_len, -ENOMEM, "out of memory");
	}
	while (err == 0 && fgets(line, sizeof(line), file))
		err = add_line(ksyms, line, &last_module);
	fclose(file);
	if (err) {
		ksyms_free(ksyms);
		return errbuf_format(err_text, err_len, err, "reading %s: %s", path, strerror(-err));
	}
	if (ksyms->count == 0 || all_zero(ksyms)) {
		errbuf_format(err_text, err_len, -EPERM,
			      "%s shows no kernel addresses (%s): kernel stacks cannot be named; "
			      "run as root or lower kernel.kptr_restrict",
			      path, ksyms->count ? "all are 0" : "no code symbols");
		ksyms_free(ksyms);
		return -EPERM;
	}
	qsort(ksyms->syms, ksyms->count, sizeof(*ksyms->syms), by_address);
	shrink_to_fit(ksyms);
	*out = ksyms;
	return 0;
}

int ksyms_load(struct ksyms **out, char *err_text, size_t err_len)
{
	return ksyms_load_file(out, "/proc/kallsyms", err_text, err_len);
}

const char *ksyms_resolve(const struct ksyms *ksyms, uint64_t addr, uint64_t *offset, const char **module)
{
	const struct ksym *sym = array_last_at_or_below_u64(ksyms->syms, ksyms->count, sizeof(*ksyms->syms),
							     offsetof(struct ksym, addr), addr);

	if (!sym)
		return NULL;
	if (offset)
		*offset = addr - sym->addr;
	if (module)
		*module = sym->module == NO_MODULE ? NULL : ksyms->names + sym->module;
	return ksyms->names + sym->name;
}

size_t ksyms_count(const struct ksyms *ksyms)
{
	return ksyms->count;
}

void ksyms_free(struct ksyms *ksyms)
{
	if (!ksyms)
		return;
	free(ksyms->syms);
	free(ksyms->names);
	free(ksyms);
}
