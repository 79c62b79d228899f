// SPDX-License-Identifier: MIT
#include "symbolize/ksyms.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
/* kallsyms holds some 10^5 code symbols and 2 MB of their names: start near there, not at 16
 * bytes (every doubling copies what came before). */
#define KSYMS_MIN_CAPACITY (1u << 16)
#define KSYMS_NAMES_MIN_CAPACITY (1u << 20)
/* The file is read in chunks of this size; a line longer than one chunk (no kernel writes one)
 * is skipped. */
#define KSYMS_READ_CHUNK (64u << 10)

/* One line of kallsyms: "address type name" and, for a module's symbol, "\t[module]". */
struct kallsyms_line {
	uint64_t addr;
	char type;
	const char *name, *module;
	size_t name_len, module_len; /* module_len 0: the core kernel */
};

static int intern_name(struct ksyms *ksyms, const char *name, size_t name_len, uint32_t *offset)
{
	size_t len = name_len + 1;

	if (ksyms->names_len + len > UINT32_MAX - 1)
		return -E2BIG;
	if (array_reserve((void **)&ksyms->names, &ksyms->names_capacity, ksyms->names_len + len, 1,
			  KSYMS_NAMES_MIN_CAPACITY))
		return -ENOMEM;
	memcpy(ksyms->names + ksyms->names_len, name, name_len);
	ksyms->names[ksyms->names_len + name_len] = '\0';
	*offset = (uint32_t)ksyms->names_len;
	ksyms->names_len += len;
	return 0;
}

/* Code symbols only: data symbols would swallow text addresses between them. */
static int is_code_type(char type)
{
	return type == 't' || type == 'T' || type == 'w' || type == 'W';
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Parses [line, end) (no newline); false for a line that is not a symbol. A hand parser: sscanf
 * on 10^5 lines was a third of the profiler's start-up. */
static bool parse_line(const char *line, const char *end, struct kallsyms_line *out)
{
	const char *p = line;
	int digits = 0, digit;

	out->addr = 0;
	while (p < end && (digit = hex_digit(*p)) >= 0 && digits < 16) {
		out->addr = out->addr << 4 | (uint64_t)digit;
		p++;
		digits++;
	}
	if (digits == 0 || end - p < 4 || p[0] != ' ' || p[2] != ' ')
		return false;
	out->type = p[1];
	out->name = p += 3;
	while (p < end && *p != ' ' && *p != '\t')
		p++;
	out->name_len = (size_t)(p - out->name);
	out->module = NULL;
	out->module_len = 0;
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	if (p < end && *p == '[') {
		const char *close = memchr(p, ']', (size_t)(end - p));

		if (close && close > p + 1) {
			out->module = p + 1;
			out->module_len = (size_t)(close - p - 1);
		}
	}
	return out->name_len > 0;
}

/* Where the reading of the lines stands between chunks. */
struct kallsyms_reader {
	uint32_t last_module; /* names offset of the last module's name, NO_MODULE before any */
	bool skipping;        /* in a line longer than a chunk: it is dropped up to its newline */
};

static int add_line(struct ksyms *ksyms, const char *line, const char *end, uint32_t *last_module)
{
	struct kallsyms_line parsed;
	struct ksym *sym;

	if (!parse_line(line, end, &parsed) || !is_code_type(parsed.type))
		return 0;
	if (array_reserve((void **)&ksyms->syms, &ksyms->capacity, ksyms->count + 1, sizeof(*ksyms->syms),
			  KSYMS_MIN_CAPACITY))
		return -ENOMEM;
	sym = &ksyms->syms[ksyms->count];
	sym->addr = parsed.addr;
	sym->module = NO_MODULE;
	if (intern_name(ksyms, parsed.name, parsed.name_len, &sym->name))
		return -ENOMEM;
	if (parsed.module_len) {
		/* Modules' symbols come grouped: share one copy of the name. */
		if (*last_module == NO_MODULE || strlen(ksyms->names + *last_module) != parsed.module_len ||
		    memcmp(ksyms->names + *last_module, parsed.module, parsed.module_len) != 0) {
			if (intern_name(ksyms, parsed.module, parsed.module_len, last_module))
				return -ENOMEM;
		}
		sym->module = *last_module;
	}
	ksyms->count++;
	return 0;
}

/* Adds every whole line of buf[0, *len) and keeps the unfinished last one at its start. */
static int add_lines(struct ksyms *ksyms, char *buf, size_t *len, struct kallsyms_reader *reader)
{
	char *line = buf, *end = buf + *len, *newline;
	int err;

	while ((newline = memchr(line, '\n', (size_t)(end - line)))) {
		if (reader->skipping) {
			reader->skipping = false;
		} else {
			err = add_line(ksyms, line, newline, &reader->last_module);
			if (err)
				return err;
		}
		line = newline + 1;
	}
	*len = (size_t)(end - line);
	if (*len == KSYMS_READ_CHUNK) {
		/* One line fills the whole chunk: not a symbol, and its rest is not a line either. */
		*len = 0;
		reader->skipping = true;
	}
	memmove(buf, line, *len);
	return 0;
}

/* Reads every line of fd into ksyms. */
static int read_lines(struct ksyms *ksyms, int fd)
{
	struct kallsyms_reader reader = { .last_module = NO_MODULE };
	size_t len = 0;
	ssize_t got;
	char *buf = malloc(KSYMS_READ_CHUNK);
	int err = 0;

	if (!buf)
		return -ENOMEM;
	while (err == 0) {
		got = read(fd, buf + len, KSYMS_READ_CHUNK - len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			err = -errno;
			break;
		}
		if (got == 0) {
			/* a last line without its newline */
			if (len && !reader.skipping)
				err = add_line(ksyms, buf, buf + len, &reader.last_module);
			break;
		}
		len += (size_t)got;
		err = add_lines(ksyms, buf, &len, &reader);
	}
	free(buf);
	return err;
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

/* kallsyms lists the core kernel in address order; only the modules' symbols need sorting. */
static void sort_by_address(struct ksyms *ksyms)
{
	for (size_t i = 1; i < ksyms->count; i++) {
		if (ksyms->syms[i - 1].addr > ksyms->syms[i].addr) {
			qsort(ksyms->syms, ksyms->count, sizeof(*ksyms->syms), by_address);
			return;
		}
	}
}

int ksyms_load_file(struct ksyms **out, const char *path, char *err_text, size_t err_len)
{
	struct ksyms *ksyms;
	int fd, err;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		return errbuf_format(err_text, err_len, err, "cannot open %s: %s", path, strerror(-err));
	}
	ksyms = calloc(1, sizeof(*ksyms));
	if (!ksyms) {
		close(fd);
		return errbuf_format(err_text, err_len, -ENOMEM, "out of memory");
	}
	err = read_lines(ksyms, fd);
	close(fd);
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
	sort_by_address(ksyms);
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
