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

#include <zstd.h>

#include "util/array.h"
#include "util/errbuf.h"

/*
 * kallsyms holds some 10^5 code symbols (122k here) and 3 MB of their names: as plain arrays,
 * about 5 MB, a third of the profiler's memory. Kept compact instead:
 * - names zstd-compressed in blocks of whole names (3 MB -> 0.6 MB). The resolver names each
 *   kernel address once (symbolize/sample_resolve.c caches names by address), so a block is
 *   decompressed about once per kernel function a profile shows;
 * - 8 bytes a symbol: the address's low 32 bits and the name's place; the high 32 bits (all
 *   equal on x86-64, where the kernel, its modules and BPF programs lie in the top 2 GiB) in
 *   runs, and the module names in runs of symbols too (a module's symbols lie together).
 */
struct ksym {
	uint32_t addr_low;
	uint32_t name; /* block << NAME_OFFSET_BITS | offset in the block */
};

/* Symbols [first, next run's first) have addresses high << 32 | addr_low. */
struct ksym_high_run {
	uint64_t first;
	uint64_t high;
};

/* Symbols [first, next run's first) belong to the module named at modules + module. */
struct ksym_module_run {
	uint64_t first;
	uint32_t module; /* NO_MODULE: the core kernel */
};

/* A symbol while the file is read (in file order; sorted by address once read). */
struct ksym_loading {
	uint64_t addr;
	uint32_t name;
	uint32_t module;
};

#define NAME_OFFSET_BITS 14
#define NAME_BLOCK_BYTES (1u << NAME_OFFSET_BITS)
#define NAME_MAX_BLOCKS (1u << (32 - NAME_OFFSET_BITS))
/* zstd's fastest levels compress kernel names 5:1 at 300+ MB/s here (10 ms for all of them). */
#define NAME_ZSTD_LEVEL 1

struct name_blocks {
	uint8_t *data; /* the compressed blocks back to back */
	size_t len, capacity;
	uint32_t *starts; /* block i is data[starts[i], starts[i + 1]); starts[count] = len */
	size_t count, starts_capacity;
	/* While loading: the block being filled and the compressor. */
	char *open;
	size_t open_len;
	ZSTD_CCtx *cctx;
	/* While resolving: the last block decompressed. */
	char *current;
	size_t current_block; /* SIZE_MAX: none yet */
	ZSTD_DCtx *dctx;
};

struct ksyms {
	struct ksym *syms;
	size_t count;
	struct ksym_high_run *highs;
	size_t high_count;
	struct ksym_module_run *module_runs;
	size_t module_run_count;
	char *modules; /* module names, each NUL-terminated */
	size_t modules_len, modules_capacity;
	struct name_blocks names;
	/* While loading */
	struct ksym_loading *loading;
	size_t loading_count, loading_capacity;
};

#define NO_MODULE UINT32_MAX
/* kallsyms holds some 10^5 code symbols: start near there, not at 16 (every doubling copies
 * what came before). */
#define KSYMS_MIN_CAPACITY (1u << 16)
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

/* Copies a module's name into modules; *offset gets its place. */
static int add_module_name(struct ksyms *ksyms, const char *name, size_t name_len, uint32_t *offset)
{
	size_t len = name_len + 1;

	if (ksyms->modules_len + len > UINT32_MAX - 1)
		return -E2BIG;
	if (array_reserve((void **)&ksyms->modules, &ksyms->modules_capacity, ksyms->modules_len + len, 1, 4096))
		return -ENOMEM;
	memcpy(ksyms->modules + ksyms->modules_len, name, name_len);
	ksyms->modules[ksyms->modules_len + name_len] = '\0';
	*offset = (uint32_t)ksyms->modules_len;
	ksyms->modules_len += len;
	return 0;
}

/* Compresses the open block onto the others. */
static int close_block(struct name_blocks *blocks)
{
	size_t bound = ZSTD_compressBound(blocks->open_len), written;

	if (blocks->count + 1 >= NAME_MAX_BLOCKS || blocks->len + bound > UINT32_MAX)
		return -E2BIG;
	if (array_reserve((void **)&blocks->data, &blocks->capacity, blocks->len + bound, 1, 256u << 10) ||
	    array_reserve((void **)&blocks->starts, &blocks->starts_capacity, blocks->count + 2,
			  sizeof(*blocks->starts), 64))
		return -ENOMEM;
	written = ZSTD_compressCCtx(blocks->cctx, blocks->data + blocks->len, bound, blocks->open, blocks->open_len,
				    NAME_ZSTD_LEVEL);
	if (ZSTD_isError(written))
		return -EIO;
	blocks->starts[blocks->count] = (uint32_t)blocks->len;
	blocks->len += written;
	blocks->count++;
	blocks->starts[blocks->count] = (uint32_t)blocks->len;
	blocks->open_len = 0;
	return 0;
}

/* Adds a name to the open block (closing it first if the name does not fit); *ref gets its place. */
static int add_name(struct name_blocks *blocks, const char *name, size_t name_len, uint32_t *ref)
{
	size_t len = name_len + 1;
	int err;

	if (len > NAME_BLOCK_BYTES)
		return -E2BIG;
	if (blocks->open_len + len > NAME_BLOCK_BYTES && (err = close_block(blocks)))
		return err;
	memcpy(blocks->open + blocks->open_len, name, name_len);
	blocks->open[blocks->open_len + name_len] = '\0';
	*ref = (uint32_t)(blocks->count << NAME_OFFSET_BITS | blocks->open_len);
	blocks->open_len += len;
	return 0;
}

/* The name at ref, decompressing its block unless it is the last one read; NULL on a corrupt block. */
static const char *name_at(struct name_blocks *blocks, uint32_t ref)
{
	size_t block = ref >> NAME_OFFSET_BITS, offset = ref & (NAME_BLOCK_BYTES - 1), got;

	if (block >= blocks->count)
		return NULL;
	if (block != blocks->current_block) {
		if (!blocks->current && !(blocks->current = malloc(NAME_BLOCK_BYTES)))
			return NULL;
		if (!blocks->dctx && !(blocks->dctx = ZSTD_createDCtx()))
			return NULL;
		blocks->current_block = SIZE_MAX;
		got = ZSTD_decompressDCtx(blocks->dctx, blocks->current, NAME_BLOCK_BYTES,
					  blocks->data + blocks->starts[block], blocks->starts[block + 1] - blocks->starts[block]);
		if (ZSTD_isError(got) || offset >= got || blocks->current[got - 1] != '\0')
			return NULL;
		blocks->current_block = block;
	}
	return blocks->current + offset;
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
	struct ksym_loading *sym;
	int err;

	if (!parse_line(line, end, &parsed) || !is_code_type(parsed.type))
		return 0;
	if (array_reserve((void **)&ksyms->loading, &ksyms->loading_capacity, ksyms->loading_count + 1,
			  sizeof(*ksyms->loading), KSYMS_MIN_CAPACITY))
		return -ENOMEM;
	sym = &ksyms->loading[ksyms->loading_count];
	sym->addr = parsed.addr;
	sym->module = NO_MODULE;
	if (parsed.name_len >= NAME_BLOCK_BYTES)
		return 0; /* no kernel writes one: not a symbol */
	err = add_name(&ksyms->names, parsed.name, parsed.name_len, &sym->name);
	if (err)
		return err;
	if (parsed.module_len) {
		/* Modules' symbols come grouped: share one copy of the name. */
		if (*last_module == NO_MODULE || strlen(ksyms->modules + *last_module) != parsed.module_len ||
		    memcmp(ksyms->modules + *last_module, parsed.module, parsed.module_len) != 0) {
			err = add_module_name(ksyms, parsed.module, parsed.module_len, last_module);
			if (err)
				return err;
		}
		sym->module = *last_module;
	}
	ksyms->loading_count++;
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

static int by_address(const void *a, const void *b)
{
	const struct ksym_loading *left = a, *right = b;

	return left->addr < right->addr ? -1 : left->addr > right->addr;
}

static bool all_zero(const struct ksym_loading *syms, size_t count)
{
	for (size_t i = 0; i < count; i++)
		if (syms[i].addr)
			return false;
	return true;
}

/* kallsyms lists the core kernel in address order; only the modules' symbols need sorting. */
static void sort_by_address(struct ksym_loading *syms, size_t count)
{
	for (size_t i = 1; i < count; i++) {
		if (syms[i - 1].addr > syms[i].addr) {
			qsort(syms, count, sizeof(*syms), by_address);
			return;
		}
	}
}

/* Runs of equal high halves and of equal modules over the sorted symbols: counts first (a few
 * of each), then the runs. */
static size_t count_runs(const struct ksym_loading *syms, size_t count, bool by_module)
{
	size_t runs = 0;

	for (size_t i = 0; i < count; i++)
		runs += i == 0 || (by_module ? syms[i].module != syms[i - 1].module
					     : syms[i].addr >> 32 != syms[i - 1].addr >> 32);
	return runs;
}

/* The loaded symbols, sorted, into the compact arrays. */
static int compact_symbols(struct ksyms *ksyms)
{
	const struct ksym_loading *loading = ksyms->loading;
	size_t count = ksyms->loading_count, highs = 0, module_runs = 0;

	ksyms->syms = malloc(count * sizeof(*ksyms->syms));
	ksyms->highs = malloc(count_runs(loading, count, false) * sizeof(*ksyms->highs));
	ksyms->module_runs = malloc(count_runs(loading, count, true) * sizeof(*ksyms->module_runs));
	if (!ksyms->syms || !ksyms->highs || !ksyms->module_runs)
		return -ENOMEM;
	for (size_t i = 0; i < count; i++) {
		if (i == 0 || loading[i].addr >> 32 != loading[i - 1].addr >> 32)
			ksyms->highs[highs++] = (struct ksym_high_run){ .high = loading[i].addr >> 32, .first = i };
		if (i == 0 || loading[i].module != loading[i - 1].module)
			ksyms->module_runs[module_runs++] =
				(struct ksym_module_run){ .first = i, .module = loading[i].module };
		ksyms->syms[i] = (struct ksym){ .addr_low = (uint32_t)loading[i].addr, .name = loading[i].name };
	}
	ksyms->count = count;
	ksyms->high_count = highs;
	ksyms->module_run_count = module_runs;
	return 0;
}

/* What only loading needs: the file-order symbols, the open block, the compressor. */
static void free_loading(struct ksyms *ksyms)
{
	free(ksyms->loading);
	ksyms->loading = NULL;
	ksyms->loading_count = ksyms->loading_capacity = 0;
	free(ksyms->names.open);
	ksyms->names.open = NULL;
	ZSTD_freeCCtx(ksyms->names.cctx);
	ksyms->names.cctx = NULL;
}

/* The last block, and the symbols sorted into their compact form. */
static int finish_loading(struct ksyms *ksyms)
{
	int err = ksyms->names.open_len ? close_block(&ksyms->names) : 0;

	if (err)
		return err;
	sort_by_address(ksyms->loading, ksyms->loading_count);
	err = compact_symbols(ksyms);
	free_loading(ksyms);
	return err;
}

static int start_loading(struct ksyms *ksyms)
{
	ksyms->names.current_block = SIZE_MAX;
	ksyms->names.open = malloc(NAME_BLOCK_BYTES);
	ksyms->names.cctx = ZSTD_createCCtx();
	return ksyms->names.open && ksyms->names.cctx ? 0 : -ENOMEM;
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
	err = ksyms ? start_loading(ksyms) : -ENOMEM;
	if (!err)
		err = read_lines(ksyms, fd);
	close(fd);
	if (err) {
		ksyms_free(ksyms);
		return errbuf_format(err_text, err_len, err, "reading %s: %s", path, strerror(-err));
	}
	if (ksyms->loading_count == 0 || all_zero(ksyms->loading, ksyms->loading_count)) {
		errbuf_format(err_text, err_len, -EPERM,
			      "%s shows no kernel addresses (%s): kernel stacks cannot be named; "
			      "run as root or lower kernel.kptr_restrict",
			      path, ksyms->loading_count ? "all are 0" : "no code symbols");
		ksyms_free(ksyms);
		return -EPERM;
	}
	err = finish_loading(ksyms);
	if (err) {
		ksyms_free(ksyms);
		return errbuf_format(err_text, err_len, err, "reading %s: %s", path, strerror(-err));
	}
	*out = ksyms;
	return 0;
}

int ksyms_load(struct ksyms **out, char *err_text, size_t err_len)
{
	return ksyms_load_file(out, "/proc/kallsyms", err_text, err_len);
}

/* The run holding symbol index: the last one starting at or before it (run 0 starts at 0). */
#define RUN_OF(runs, count, index) \
	((const __typeof__(*(runs)) *)array_last_at_or_below_u64((runs), (count), sizeof(*(runs)), \
								 offsetof(__typeof__(*(runs)), first), (index)))

static uint64_t address_of(const struct ksyms *ksyms, size_t index)
{
	return RUN_OF(ksyms->highs, ksyms->high_count, index)->high << 32 | ksyms->syms[index].addr_low;
}

static const char *module_of(const struct ksyms *ksyms, size_t index)
{
	uint32_t module = RUN_OF(ksyms->module_runs, ksyms->module_run_count, index)->module;

	return module == NO_MODULE ? NULL : ksyms->modules + module;
}

const char *ksyms_resolve(struct ksyms *ksyms, uint64_t addr, uint64_t *offset, const char **module)
{
	size_t low = 0, high = ksyms->count;

	if (!ksyms->count || address_of(ksyms, 0) > addr)
		return NULL;
	/* the last symbol at or below addr: symbol low is at or below it */
	while (high - low > 1) {
		size_t mid = low + (high - low) / 2;

		if (address_of(ksyms, mid) <= addr)
			low = mid;
		else
			high = mid;
	}
	if (offset)
		*offset = addr - address_of(ksyms, low);
	if (module)
		*module = module_of(ksyms, low);
	return name_at(&ksyms->names, ksyms->syms[low].name);
}

size_t ksyms_count(const struct ksyms *ksyms)
{
	return ksyms->count;
}

void ksyms_free(struct ksyms *ksyms)
{
	if (!ksyms)
		return;
	free_loading(ksyms);
	free(ksyms->syms);
	free(ksyms->highs);
	free(ksyms->module_runs);
	free(ksyms->modules);
	free(ksyms->names.data);
	free(ksyms->names.starts);
	free(ksyms->names.current);
	ZSTD_freeDCtx(ksyms->names.dctx);
	free(ksyms);
}
