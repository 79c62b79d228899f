// SPDX-License-Identifier: MIT
/*
 * `pybpfprof annotate PROFILE`: a source heatmap. For the hottest source files
 * (or the files of --function F), each file's lines with their share of the
 * profile's total weight (pf_sample_weight, as `top` and `diff` count it):
 * own, the line of the leaf Python frame; total, the line anywhere on the
 * stack, once per sample. Hottest functions first, each as the region of the
 * file its samples touch with a few lines of context (all lines with --all).
 * Source is read from the profile's paths, remapped by --source-root or
 * --path-map; the paths are the target's, so a file is read only if it is a
 * regular one, with a size cap, and a missing one is said to be missing.
 * -o FILE.html writes the same as one self-contained page. A profile whose
 * frames carry instructions (record --opcodes, 3.11+) also lists under each line
 * its instructions' own and total shares, named by the profile's Python version.
 */
#include "cli/commands.h"
#include "cli/options.h"
#include "formats/format_registry.h"
#include "profile/profile.h"
#include "profile/py_opcodes.h"
#include "util/array.h"
#include "util/exit_status.h"
#include "util/fd_write.h"
#include "util/intern.h"
#include "util/text_quote.h"

#include <argp.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define ANNOTATE_MAX_PATH_MAPS 16
#define ANNOTATE_DEFAULT_FILES 5
#define ANNOTATE_CONTEXT_LINES 3
/* A source file bigger than this is read only this far: the profile names the file, the
 * target may have put anything there. */
#define SOURCE_MAX_BYTES (16u << 20)
/* A line printed longer than this is cut. */
#define SOURCE_MAX_LINE_BYTES (1u << 20)
/* Line numbers past this come from a broken or hostile profile: no region reaches them, and
 * a source file is indexed only this far (4 bytes a line). */
#define SOURCE_MAX_LINE 1000000
/* What the tables of a profile's files, functions, lines and instructions may hold by default
 * (--memory-cap): a hostile or broken profile can name any number of distinct ones. */
#define ANNOTATE_DEFAULT_MEMORY_MIB 512
/* What an entry of those tables costs besides its key and its heat: the intern table's record
 * and hash slots. */
#define ANNOTATE_ENTRY_OVERHEAD 48

struct path_map {
	const char *from;
	size_t from_len;
	const char *to;
};

struct annotate_args {
	const char *profile;
	const char *function;
	const char *source_root;
	struct path_map maps[ANNOTATE_MAX_PATH_MAPS];
	size_t map_count;
	const char *output;
	size_t files;
	bool all_lines;
	size_t memory_cap; /* bytes the tables may hold (0: the default) */
};

/* Weights of a line, a function or a file. */
struct heat {
	uint64_t own;
	uint64_t total;
	uint64_t last_sample; /* sample number that last added to total: once per sample */
};

/* A line of a function: a line of source belongs to one function (code object), so its
 * shares are the file line's, and a function's region shows only its own. */
struct line_heat {
	uint32_t function;
	int32_t line;
	struct heat heat;
	uint32_t instr_first, instr_count; /* its instructions in annotate_table.sorted_instrs */
};

/* An instruction of a line (record --opcodes): its opcode byte at that line. */
struct instr_heat {
	uint32_t line; /* line id */
	int16_t opcode;
	struct heat heat;
};

struct function_heat {
	uint32_t file;
	const char *name; /* interned */
	int32_t first_line; /* co_firstlineno, or 0 */
	int32_t min_line, max_line; /* of its samples */
	bool selected; /* --function matches it */
	struct heat heat;
	const int32_t *lines; /* its sampled lines, ascending (in annotate_table.sorted_lines) */
	size_t line_count;
};

struct annotate_table {
	struct intern_table files;      /* file path -> id */
	struct heat *file_heat;         /* by file id */
	bool *file_selected;            /* by file id: it holds a --function */
	size_t file_capacity;
	struct intern_table lines;      /* (function id, line) -> id */
	struct line_heat *line_heat;    /* by line id */
	size_t line_capacity;
	struct intern_table functions;  /* (file id, name) -> id */
	struct function_heat *function_heat;
	size_t function_capacity;
	int32_t *sorted_lines;          /* every function's sampled lines, by function then line */
	struct intern_table instrs;     /* (line id, opcode) -> id */
	struct instr_heat *instr_heat;  /* by instruction id */
	size_t instr_capacity;
	uint32_t *sorted_instrs;        /* instruction ids by line, hottest first */
	unsigned py_major, py_minor;    /* the profile's Python, which names the opcodes (0: unknown) */
	size_t bytes;     /* what the tables above hold, against the memory cap */
	size_t memory_cap;
	uint64_t weight;
	uint64_t samples; /* distinct stacks, for a format that aggregates (collapsed) */
	uint32_t metrics;
	bool aggregated;
};

/* ---- counting ---- */

/* A new table entry of key_len bytes and an entry_size record: false past the cap. */
static bool charge(struct annotate_table *table, size_t key_len, size_t entry_size)
{
	table->bytes += key_len + entry_size + ANNOTATE_ENTRY_OVERHEAD;
	return table->bytes <= table->memory_cap;
}

static void heat_add(struct heat *heat, uint64_t weight, uint64_t sample, bool own)
{
	if (heat->last_sample != sample + 1) {
		heat->total += weight;
		heat->last_sample = sample + 1;
	}
	if (own)
		heat->own += weight;
}

static int64_t file_id(struct annotate_table *table, const char *file)
{
	size_t count = intern_count(&table->files);
	int64_t id = intern_add(&table->files, file, strlen(file), NULL);

	if (id < 0)
		return id;
	if ((size_t)id == count) {
		if (ARRAY_RESERVE(table->file_heat, table->file_capacity, count + 1))
			return -ENOMEM;
		table->file_heat[id] = (struct heat){ 0 };
		if (!charge(table, strlen(file), sizeof(struct heat) + sizeof(bool)))
			return -E2BIG;
	}
	return id;
}

/* The line's id: -ENOMEM, or -E2BIG past the memory cap. */
static int64_t line_at(struct annotate_table *table, uint32_t function, int32_t line)
{
	int32_t key[2] = { (int32_t)function, line };
	size_t count = intern_count(&table->lines);
	int64_t id = intern_add(&table->lines, key, sizeof(key), NULL);

	if (id < 0)
		return id;
	if ((size_t)id == count) {
		if (ARRAY_RESERVE(table->line_heat, table->line_capacity, count + 1))
			return -ENOMEM;
		table->line_heat[id] = (struct line_heat){ .function = function, .line = line };
		/* with its place in sorted_lines */
		if (!charge(table, sizeof(key), sizeof(struct line_heat) + sizeof(int32_t)))
			return -E2BIG;
	}
	return id;
}

static int instr_add(struct annotate_table *table, uint32_t line, int16_t opcode, uint64_t weight,
		     uint64_t sample, bool own)
{
	uint32_t key[2] = { line, (uint32_t)opcode };
	size_t count = intern_count(&table->instrs);
	int64_t id = intern_add(&table->instrs, key, sizeof(key), NULL);

	if (id < 0)
		return (int)id;
	if ((size_t)id == count) {
		if (ARRAY_RESERVE(table->instr_heat, table->instr_capacity, count + 1))
			return -ENOMEM;
		table->instr_heat[id] = (struct instr_heat){ .line = line, .opcode = opcode };
		if (!charge(table, sizeof(key), sizeof(struct instr_heat) + sizeof(uint32_t)))
			return -E2BIG;
	}
	heat_add(&table->instr_heat[id].heat, weight, sample, own);
	return 0;
}

static bool name_matches(const char *name, const char *wanted)
{
	size_t len = strlen(name), wanted_len = strlen(wanted);

	/* "f" finds "f" and a qualified "Class.f" or "outer.<locals>.f". */
	return !strcmp(name, wanted) ||
	       (len > wanted_len && name[len - wanted_len - 1] == '.' && !strcmp(name + len - wanted_len, wanted));
}

static int64_t function_at(struct annotate_table *table, uint32_t file, const struct pf_frame *frame,
			   const char *wanted)
{
	size_t name_len = strlen(frame->name), count = intern_count(&table->functions);
	char stack_key[512], *key = stack_key;
	int64_t id;

	if (sizeof(file) + name_len > sizeof(stack_key) && !(key = malloc(sizeof(file) + name_len)))
		return -ENOMEM;
	memcpy(key, &file, sizeof(file));
	memcpy(key + sizeof(file), frame->name, name_len);
	id = intern_add(&table->functions, key, sizeof(file) + name_len, NULL);
	if (key != stack_key)
		free(key);
	if (id < 0)
		return id;
	if ((size_t)id == count) {
		const char *stored = intern_key(&table->functions, (uint32_t)id, NULL);
		char *name = strndup(stored + sizeof(file), name_len);

		if (!name || ARRAY_RESERVE(table->function_heat, table->function_capacity, count + 1)) {
			free(name);
			return -ENOMEM;
		}
		table->function_heat[id] = (struct function_heat){
			.file = file, .name = name, .min_line = INT32_MAX, .max_line = 0,
			.first_line = frame->function_line > 0 && frame->function_line <= SOURCE_MAX_LINE
					      ? frame->function_line : 0,
			.selected = wanted && name_matches(name, wanted) };
		/* the name twice: the key and the copy */
		if (!charge(table, sizeof(file) + 2 * name_len, sizeof(struct function_heat)))
			return -E2BIG;
	}
	return id;
}

/* Frees (negative weights) take nothing, as in `top`: a memory profile ranks allocations. */
static uint64_t sample_weight(const struct pf_sample *sample)
{
	int64_t weight = pf_sample_weight(sample);

	return weight > 0 ? (uint64_t)weight : 0;
}

/* The leaf Python frame's index, or frame_count when the stack has none. */
static size_t leaf_python(const struct pf_sample *sample)
{
	for (size_t i = sample->frame_count; i-- > 0;)
		if (sample->frames[i].kind == PF_FRAME_PYTHON && sample->frames[i].file[0])
			return i;
	return sample->frame_count;
}

static int table_add(struct annotate_table *table, const struct pf_sample *sample, const char *wanted)
{
	uint64_t weight = sample_weight(sample), number = table->samples;
	size_t leaf = leaf_python(sample);

	for (size_t i = 0; i < sample->frame_count; i++) {
		const struct pf_frame *frame = &sample->frames[i];
		struct function_heat *function;
		int64_t file, function_id;

		if (frame->kind != PF_FRAME_PYTHON || !frame->file[0])
			continue;
		file = file_id(table, frame->file);
		if (file < 0)
			return (int)file;
		heat_add(&table->file_heat[file], weight, number, i == leaf);
		function_id = function_at(table, (uint32_t)file, frame, wanted);
		if (function_id < 0)
			return (int)function_id;
		function = &table->function_heat[function_id];
		heat_add(&function->heat, weight, number, i == leaf);
		if (frame->line > 0 && frame->line <= SOURCE_MAX_LINE) {
			int64_t line = line_at(table, (uint32_t)function_id, frame->line);
			int err;

			if (line < 0)
				return (int)line;
			heat_add(&table->line_heat[line].heat, weight, number, i == leaf);
			if (frame->opcode >= 0 &&
			    (err = instr_add(table, (uint32_t)line, frame->opcode, weight, number, i == leaf)))
				return err;
			if (frame->line < function->min_line)
				function->min_line = frame->line;
			if (frame->line > function->max_line)
				function->max_line = frame->line;
		}
	}
	table->weight += weight;
	table->samples++;
	table->metrics |= sample->metrics;
	return 0;
}

static void table_free(struct annotate_table *table)
{
	for (size_t i = 0; i < intern_count(&table->functions); i++)
		free((char *)table->function_heat[i].name);
	intern_free(&table->files);
	intern_free(&table->lines);
	intern_free(&table->functions);
	intern_free(&table->instrs);
	free(table->instr_heat);
	free(table->sorted_instrs);
	free(table->file_heat);
	free(table->file_selected);
	free(table->line_heat);
	free(table->function_heat);
	free(table->sorted_lines);
}

static int compare_line_heat(const void *a, const void *b)
{
	const struct line_heat *left = a, *right = b;

	if (left->function != right->function)
		return left->function < right->function ? -1 : 1;
	return (left->line > right->line) - (left->line < right->line);
}

/*
 * Gives each function the list of its sampled lines, so that a region without source walks
 * those only (never every number up to a far line a profile may claim): 0 or -ENOMEM.
 */
static int index_function_lines(struct annotate_table *table)
{
	size_t count = intern_count(&table->lines);
	struct line_heat *sorted = malloc((count ? count : 1) * sizeof(*sorted));

	table->sorted_lines = malloc((count ? count : 1) * sizeof(*table->sorted_lines));
	if (!sorted || !table->sorted_lines) {
		free(sorted);
		return -ENOMEM;
	}
	if (count)
		memcpy(sorted, table->line_heat, count * sizeof(*sorted));
	qsort(sorted, count, sizeof(*sorted), compare_line_heat);
	for (size_t i = 0; i < count; i++) {
		struct function_heat *function = &table->function_heat[sorted[i].function];

		table->sorted_lines[i] = sorted[i].line;
		if (!function->line_count)
			function->lines = &table->sorted_lines[i];
		function->line_count++;
	}
	free(sorted);
	return 0;
}

static const struct instr_heat *sort_instrs_base;

/* By line, then hottest (total) first, then by opcode. */
static int compare_instrs(const void *a, const void *b)
{
	const struct instr_heat *left = &sort_instrs_base[*(const uint32_t *)a];
	const struct instr_heat *right = &sort_instrs_base[*(const uint32_t *)b];

	if (left->line != right->line)
		return left->line < right->line ? -1 : 1;
	if (left->heat.total != right->heat.total)
		return left->heat.total > right->heat.total ? -1 : 1;
	return (left->opcode > right->opcode) - (left->opcode < right->opcode);
}

/* Gives each line the range of its instructions, hottest first: 0 or -ENOMEM. */
static int index_line_instrs(struct annotate_table *table)
{
	size_t count = intern_count(&table->instrs);

	table->sorted_instrs = malloc((count ? count : 1) * sizeof(*table->sorted_instrs));
	if (!table->sorted_instrs)
		return -ENOMEM;
	for (size_t i = 0; i < count; i++)
		table->sorted_instrs[i] = (uint32_t)i;
	sort_instrs_base = table->instr_heat;
	qsort(table->sorted_instrs, count, sizeof(*table->sorted_instrs), compare_instrs);
	for (size_t i = 0; i < count; i++) {
		struct line_heat *line = &table->line_heat[table->instr_heat[table->sorted_instrs[i]].line];

		if (!line->instr_count)
			line->instr_first = (uint32_t)i;
		line->instr_count++;
	}
	return 0;
}

static double share(const struct annotate_table *table, uint64_t weight)
{
	return table->weight ? 100.0 * (double)weight / (double)table->weight : 0.0;
}

/* ---- ranking ---- */

/* Ids sorted by total weight, hottest first; equal ones by own weight (the function the time
 * is spent in before its callers), then in first-seen order. */
struct ranked {
	uint32_t id;
	uint64_t total;
	uint64_t own;
};

static int compare_ranked(const void *a, const void *b)
{
	const struct ranked *left = a, *right = b;

	if (left->total != right->total)
		return left->total > right->total ? -1 : 1;
	if (left->own != right->own)
		return left->own > right->own ? -1 : 1;
	return left->id < right->id ? -1 : left->id > right->id;
}

/* The files to show, hottest first (those holding a --function only): count in *count. */
static struct ranked *rank_files(struct annotate_table *table, const struct annotate_args *args, size_t *count)
{
	size_t files = intern_count(&table->files), kept = 0;
	struct ranked *ranked = calloc(files ? files : 1, sizeof(*ranked));

	table->file_selected = calloc(files ? files : 1, sizeof(bool));
	if (!ranked || !table->file_selected) {
		free(ranked);
		return NULL;
	}
	for (size_t i = 0; i < intern_count(&table->functions); i++)
		if (table->function_heat[i].selected)
			table->file_selected[table->function_heat[i].file] = true;
	for (uint32_t id = 0; id < files; id++)
		if (!args->function || table->file_selected[id])
			ranked[kept++] = (struct ranked){ .id = id, .total = table->file_heat[id].total,
							   .own = table->file_heat[id].own };
	qsort(ranked, kept, sizeof(*ranked), compare_ranked);
	*count = kept < args->files ? kept : args->files;
	return ranked;
}

/* The functions of file with sampled lines (the --function ones only), hottest first. */
static struct ranked *rank_functions(const struct annotate_table *table, const struct annotate_args *args,
				     uint32_t file, size_t *count)
{
	size_t functions = intern_count(&table->functions), kept = 0;
	struct ranked *ranked = calloc(functions ? functions : 1, sizeof(*ranked));

	if (!ranked)
		return NULL;
	for (uint32_t id = 0; id < functions; id++) {
		const struct function_heat *function = &table->function_heat[id];

		if (function->file == file && function->max_line > 0 && (!args->function || function->selected))
			ranked[kept++] = (struct ranked){ .id = id, .total = function->heat.total,
							   .own = function->heat.own };
	}
	qsort(ranked, kept, sizeof(*ranked), compare_ranked);
	*count = kept;
	return ranked;
}

/* ---- source ---- */

struct source {
	char *text;       /* NULL: not at hand */
	size_t len;
	uint32_t *line_starts; /* offsets in text; [0] is line 1 */
	size_t line_count;
	char why[256];    /* when not at hand, or cut */
	char path[PATH_MAX];
};

/* Where the profile's path is on this machine: the first --path-map whose FROM starts it, else
 * under --source-root, else as it is. */
static void source_path(const struct annotate_args *args, const char *file, char *out, size_t size)
{
	for (size_t i = 0; i < args->map_count; i++) {
		const struct path_map *map = &args->maps[i];

		if (!strncmp(file, map->from, map->from_len)) {
			snprintf(out, size, "%s%s", map->to, file + map->from_len);
			return;
		}
	}
	if (args->source_root)
		snprintf(out, size, "%s%s%s", args->source_root, file[0] == '/' ? "" : "/", file);
	else
		snprintf(out, size, "%s", file);
}

/* Reads a regular file, at most SOURCE_MAX_BYTES: never a device or a FIFO a path could name. */
static int read_source_text(struct source *source)
{
	int fd = open(source->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	struct stat st;
	size_t cap;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	cap = (size_t)st.st_size < SOURCE_MAX_BYTES ? (size_t)st.st_size : SOURCE_MAX_BYTES;
	if ((uint64_t)st.st_size > SOURCE_MAX_BYTES)
		snprintf(source->why, sizeof(source->why), "read only its first %u MiB", SOURCE_MAX_BYTES >> 20);
	source->text = malloc(cap + 1);
	if (!source->text) {
		close(fd);
		return -ENOMEM;
	}
	while (source->len < cap) {
		ssize_t got = read(fd, source->text + source->len, cap - source->len);

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		source->len += (size_t)got;
	}
	close(fd);
	source->text[source->len] = 0;
	return 0;
}

static int index_lines(struct source *source)
{
	size_t capacity = 0;

	for (const char *at = source->text; at < source->text + source->len;) {
		const char *end = memchr(at, '\n', (size_t)(source->text + source->len - at));

		if (source->line_count == SOURCE_MAX_LINE) {
			/* The text past the last indexed line is never shown. */
			source->len = (size_t)(at - source->text);
			snprintf(source->why, sizeof(source->why), "read only its first %d lines", SOURCE_MAX_LINE);
			break;
		}
		if (ARRAY_RESERVE(source->line_starts, capacity, source->line_count + 1))
			return -ENOMEM;
		source->line_starts[source->line_count++] = (uint32_t)(at - source->text);
		at = end ? end + 1 : source->text + source->len;
	}
	return 0;
}

static void source_load(struct source *source, const struct annotate_args *args, const char *file)
{
	int err;

	*source = (struct source){ 0 };
	source_path(args, file, source->path, sizeof(source->path));
	err = read_source_text(source);
	if (!err)
		err = index_lines(source);
	if (err) {
		free(source->text);
		free(source->line_starts);
		source->text = NULL;
		source->line_starts = NULL;
		snprintf(source->why, sizeof(source->why), "source not at hand: %s",
			 err == -EINVAL ? "not a regular file" : strerror(-err));
	}
}

static void source_free(struct source *source)
{
	free(source->text);
	free(source->line_starts);
}

/* Line number's text (without its newline, cut to SOURCE_MAX_LINE_BYTES), or NULL past the end. */
static const char *source_line(const struct source *source, int32_t line, size_t *len)
{
	const char *start, *end;

	if (!source->text || line < 1 || (size_t)line > source->line_count)
		return NULL;
	start = source->text + source->line_starts[line - 1];
	end = source->text + ((size_t)line < source->line_count ? source->line_starts[line] : source->len);
	if (end > start && end[-1] == '\n')
		end--;
	if (end > start && end[-1] == '\r')
		end--;
	*len = (size_t)(end - start);
	if (*len > SOURCE_MAX_LINE_BYTES)
		*len = SOURCE_MAX_LINE_BYTES;
	return start;
}

/* ---- output ---- */

/* The line a region shows after line: the next, or with no source the next sampled one
 * (INT32_MAX: none). */
static int32_t region_next(const struct function_heat *function, const struct source *source, int32_t line)
{
	size_t low = 0, high = function->line_count;

	if (source->text)
		return line + 1;
	while (low < high) {
		size_t middle = low + (high - low) / 2;

		if (function->lines[middle] <= line)
			low = middle + 1;
		else
			high = middle;
	}
	return low < function->line_count ? function->lines[low] : INT32_MAX;
}

struct region {
	int32_t first, last;
};

static struct region function_region(const struct function_heat *function, const struct source *source,
				     bool all_lines)
{
	struct region region = { function->min_line, function->max_line };

	if (all_lines && !source->text)
		return region;
	if (all_lines) {
		region.first = 1;
		if (source->text && source->line_count > (size_t)region.last)
			region.last = (int32_t)source->line_count;
		return region;
	}
	if (function->first_line > 0 && function->first_line < region.first)
		region.first = function->first_line;
	region.first = region.first > ANNOTATE_CONTEXT_LINES ? region.first - ANNOTATE_CONTEXT_LINES : 1;
	region.last += ANNOTATE_CONTEXT_LINES;
	if (source->text && (size_t)region.last > source->line_count)
		region.last = (int32_t)(source->line_count > (size_t)function->max_line ? source->line_count
											   : (size_t)function->max_line);
	else if (!source->text)
		region = (struct region){ function->min_line, function->max_line };
	return region;
}

static const struct line_heat *line_entry(const struct annotate_table *table, uint32_t function, int32_t line)
{
	int32_t key[2] = { (int32_t)function, line };
	int64_t id = intern_find(&table->lines, key, sizeof(key));

	return id < 0 ? NULL : &table->line_heat[id];
}

static const struct heat *line_heat(const struct annotate_table *table, uint32_t function, int32_t line)
{
	const struct line_heat *entry = line_entry(table, function, line);

	return entry ? &entry->heat : NULL;
}

/* The name annotate shows for an opcode of the profile's Python. */
static const char *instr_name(const struct annotate_table *table, int16_t opcode, char *buffer, size_t size)
{
	return py_opcode_describe(table->py_major, table->py_minor, opcode, buffer, size);
}

/* Text: a share column, blank for nothing. */
static void print_share(FILE *out, const struct annotate_table *table, uint64_t weight)
{
	if (weight)
		fprintf(out, " %6.2f%%", share(table, weight));
	else
		fputs("        ", out);
}

/* The bytes of a source line, as a terminal may show them: escapes for what it would act on. */
static void print_source_text(FILE *out, const char *text, size_t len)
{
	char *copy = strndup(text, len);

	if (copy)
		fput_escaped(out, copy);
	free(copy);
}

/* Under a line, its instructions (record --opcodes), hottest first. */
static void text_line_instrs(FILE *out, const struct annotate_table *table, const struct line_heat *line)
{
	char name[128];

	for (uint32_t i = 0; line && i < line->instr_count; i++) {
		const struct instr_heat *instr = &table->instr_heat[table->sorted_instrs[line->instr_first + i]];

		print_share(out, table, instr->heat.own);
		print_share(out, table, instr->heat.total);
		fprintf(out, "          | %s\n", instr_name(table, instr->opcode, name, sizeof(name)));
	}
}

static void text_region(FILE *out, const struct annotate_table *table, uint32_t id,
			const struct source *source, bool all_lines)
{
	const struct function_heat *function = &table->function_heat[id];
	struct region region = function_region(function, source, all_lines);

	fputs("\n-- ", out);
	fput_escaped(out, function->name);
	fprintf(out, ": own %.2f%%, total %.2f%%, lines %" PRId32 "-%" PRId32 "\n     OWN    TOTAL   LINE\n",
		share(table, function->heat.own), share(table, function->heat.total), region.first, region.last);
	for (int32_t line = region.first; line <= region.last; line = region_next(function, source, line)) {
		const struct heat *heat = line_heat(table, id, line);
		const char *text;
		size_t len;

		/* Without the source, the lines that have samples are all there is to show. */
		if (!source->text && !heat)
			continue;
		print_share(out, table, heat ? heat->own : 0);
		print_share(out, table, heat ? heat->total : 0);
		fprintf(out, " %6" PRId32 "  ", line);
		text = source_line(source, line, &len);
		if (text)
			print_source_text(out, text, len);
		else
			fputs(source->text ? "(past the end of the file)" : "(source not at hand)", out);
		fputc('\n', out);
		text_line_instrs(out, table, line_entry(table, id, line));
	}
}

static void print_totals(FILE *out, const struct annotate_table *table)
{
	if (table->metrics & PF_METRIC_TIME)
		fprintf(out, "%.3f s", (double)table->weight / 1e6);
	else if (table->metrics & PF_METRIC_MEMORY)
		fprintf(out, "%" PRIu64 " bytes", table->weight);
	else
		fprintf(out, "%" PRIu64 " samples", table->weight);
}

static void text_header(FILE *out, const struct annotate_table *table, const struct annotate_args *args)
{
	fputs("profile ", out);
	fput_escaped(out, args->profile);
	fprintf(out, ": %" PRIu64 " %s%s, total weight ", table->samples,
		table->aggregated ? "distinct stack" : "sample", table->samples == 1 ? "" : "s");
	print_totals(out, table);
	fputs("\nshares of the total weight: OWN, the line of the leaf Python frame; TOTAL, the line "
	      "anywhere on the stack (once per sample)\n", out);
	if (intern_count(&table->instrs))
		fprintf(out, "under a line, after '|': its instructions (record --opcodes) as CPython %u.%u names them, "
			     "a specialised one with its base in parentheses\n", table->py_major, table->py_minor);
}

static void text_file_header(FILE *out, const struct annotate_table *table, uint32_t file,
			     const struct source *source)
{
	fputs("\n== ", out);
	fput_escaped(out, intern_key(&table->files, file, NULL));
	fprintf(out, ": own %.2f%%, total %.2f%%", share(table, table->file_heat[file].own),
		share(table, table->file_heat[file].total));
	if (strcmp(source->path, intern_key(&table->files, file, NULL))) {
		fputs(" (read from ", out);
		fput_escaped(out, source->path);
		fputc(')', out);
	}
	if (source->why[0]) {
		fputs(": ", out);
		fput_escaped(out, source->why);
	}
	fputc('\n', out);
}

/* HTML text: every byte from the profile or the source escaped, so none is markup. */
static void html_escaped(FILE *out, const char *text, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		switch (text[i]) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&#39;", out); break;
		case 0: fputs("\xef\xbf\xbd", out); break;
		default: fputc(text[i], out); break;
		}
	}
}

static void html_cstr(FILE *out, const char *text)
{
	html_escaped(out, text, strlen(text));
}

static const char html_head[] =
	"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n"
	"<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
	"<title>pybpfprof annotate</title>\n<style>\n"
	"body{font-family:sans-serif;margin:1em}nav{margin-bottom:1em}nav ul{margin:0}\n"
	"table{border-collapse:collapse;font-family:monospace;white-space:pre}\n"
	"td{padding:0 .5em}td.s{text-align:right;color:#444}td.n{text-align:right;color:#888}\n"
	"tr.op td{color:#268;font-size:.9em}\n"
	"h2{font-size:1.1em;margin-top:2em}h3{font-size:1em}\n"
	"</style></head><body>\n";

static void html_line_instrs(FILE *out, const struct annotate_table *table, const struct line_heat *line)
{
	char name[128];

	for (uint32_t i = 0; line && i < line->instr_count; i++) {
		const struct instr_heat *instr = &table->instr_heat[table->sorted_instrs[line->instr_first + i]];

		fputs("<tr class=\"op\"><td class=\"s\">", out);
		if (instr->heat.own)
			fprintf(out, "%.2f%%", share(table, instr->heat.own));
		fputs("</td><td class=\"s\">", out);
		if (instr->heat.total)
			fprintf(out, "%.2f%%", share(table, instr->heat.total));
		fputs("</td><td class=\"n\"></td><td>    ", out);
		html_cstr(out, instr_name(table, instr->opcode, name, sizeof(name)));
		fputs("</td></tr>\n", out);
	}
}

static void html_region(FILE *out, const struct annotate_table *table, uint32_t id,
			const struct source *source, bool all_lines)
{
	const struct function_heat *function = &table->function_heat[id];
	struct region region = function_region(function, source, all_lines);

	fprintf(out, "<h3 id=\"fn%" PRIu32 "\">", id);
	html_cstr(out, function->name);
	fprintf(out, ": own %.2f%%, total %.2f%%</h3>\n<table><tr><th>own</th><th>total</th><th>line</th><th></th></tr>\n",
		share(table, function->heat.own), share(table, function->heat.total));
	for (int32_t line = region.first; line <= region.last; line = region_next(function, source, line)) {
		const struct heat *heat = line_heat(table, id, line);
		double shade = heat && table->weight ? (double)heat->total / (double)table->weight : 0.0;
		const char *text;
		size_t len;

		if (!source->text && !heat)
			continue;
		fprintf(out, "<tr style=\"background:rgba(255,64,0,%.3f)\"><td class=\"s\">", shade);
		if (heat && heat->own)
			fprintf(out, "%.2f%%", share(table, heat->own));
		fputs("</td><td class=\"s\">", out);
		if (heat && heat->total)
			fprintf(out, "%.2f%%", share(table, heat->total));
		fprintf(out, "</td><td class=\"n\">%" PRId32 "</td><td>", line);
		text = source_line(source, line, &len);
		if (text)
			html_escaped(out, text, len);
		else
			fputs(source->text ? "(past the end of the file)" : "(source not at hand)", out);
		fputs("</td></tr>\n", out);
		html_line_instrs(out, table, line_entry(table, id, line));
	}
	fputs("</table>\n", out);
}

static void html_nav(FILE *out, const struct annotate_table *table, const struct annotate_args *args,
		     const struct ranked *files, size_t file_count)
{
	fputs("<nav><ul>\n", out);
	for (size_t f = 0; f < file_count; f++) {
		size_t count = 0;
		struct ranked *functions = rank_functions(table, args, files[f].id, &count);

		fprintf(out, "<li><a href=\"#file%" PRIu32 "\">", files[f].id);
		html_cstr(out, intern_key(&table->files, files[f].id, NULL));
		fprintf(out, "</a> %.2f%%<ul>\n", share(table, table->file_heat[files[f].id].total));
		for (size_t i = 0; functions && i < count; i++) {
			fprintf(out, "<li><a href=\"#fn%" PRIu32 "\">", functions[i].id);
			html_cstr(out, table->function_heat[functions[i].id].name);
			fprintf(out, "</a> %.2f%%</li>\n", share(table, functions[i].total));
		}
		fputs("</ul></li>\n", out);
		free(functions);
	}
	fputs("</ul></nav>\n", out);
}

/* The whole report, as text or as the page, into out: 0 or negative errno. */
static int write_report(FILE *out, struct annotate_table *table, const struct annotate_args *args, bool html)
{
	size_t file_count = 0;
	struct ranked *files = rank_files(table, args, &file_count);

	if (!files)
		return -ENOMEM;
	if (html) {
		fputs(html_head, out);
		fputs("<h1>", out);
		html_cstr(out, args->profile);
		fprintf(out, "</h1>\n<p>%" PRIu64 " %s. Shares of the total weight: own, the line of the leaf "
			     "Python frame; total, the line anywhere on the stack (once per sample).</p>\n",
			table->samples, table->aggregated ? "distinct stacks" : "samples");
		html_nav(out, table, args, files, file_count);
	} else {
		text_header(out, table, args);
	}
	if (!file_count)
		fputs(args->function ? "no Python function of that name has samples\n"
				     : "no Python frames with a source file in this profile\n", out);
	for (size_t f = 0; f < file_count; f++) {
		uint32_t file = files[f].id;
		size_t count = 0;
		struct ranked *functions = rank_functions(table, args, file, &count);
		struct source source;

		if (!functions) {
			free(files);
			return -ENOMEM;
		}
		source_load(&source, args, intern_key(&table->files, file, NULL));
		if (html) {
			fprintf(out, "<h2 id=\"file%" PRIu32 "\">", file);
			html_cstr(out, intern_key(&table->files, file, NULL));
			fprintf(out, ": own %.2f%%, total %.2f%%", share(table, table->file_heat[file].own),
				share(table, table->file_heat[file].total));
			if (source.why[0]) {
				fputs(": ", out);
				html_cstr(out, source.why);
			}
			fputs("</h2>\n", out);
		} else {
			text_file_header(out, table, file, &source);
		}
		for (size_t i = 0; i < count; i++) {
			if (html)
				html_region(out, table, functions[i].id, &source, args->all_lines);
			else
				text_region(out, table, functions[i].id, &source, args->all_lines);
		}
		source_free(&source);
		free(functions);
	}
	if (html)
		fputs("</body></html>\n", out);
	free(files);
	return 0;
}

/* Where the report goes: stdout, or the page's file (opened as diff opens its table). NULL
 * after the message. */
static FILE *open_report(const struct annotate_args *args)
{
	char why[256];
	int fd, err;
	FILE *out;

	if (!args->output)
		return stdout;
	err = pf_output_check(args->output, why, sizeof(why));
	if (!err && (fd = fd_open_output(args->output)) < 0) {
		err = fd;
		snprintf(why, sizeof(why), "cannot write: %s", strerror(-err));
	}
	if (err) {
		cli_error_print("annotate", args->output, why);
		return NULL;
	}
	out = fdopen(fd, "w");
	if (!out) {
		close(fd);
		cli_error_print("annotate", args->output, "out of memory");
	}
	return out;
}

/*
 * The report on stdout, or in args->output, written as it is made (a page of a large profile
 * is never held whole): 0, or the exit status after the message.
 */
static int emit_report(struct annotate_table *table, const struct annotate_args *args)
{
	const char *where = args->output ? args->output : "stdout";
	FILE *out = open_report(args);
	int err, write_err;

	if (!out)
		return EXIT_STATUS_OUTPUT;
	err = write_report(out, table, args, args->output != NULL);
	write_err = ferror(out);
	if (out == stdout ? fflush(out) : fclose(out))
		write_err = 1;
	if (err) {
		cli_error_print("annotate", where, "out of memory");
		return EXIT_STATUS_FAILED;
	}
	if (write_err) {
		cli_error_print("annotate", where, "write failed");
		return EXIT_STATUS_OUTPUT;
	}
	return 0;
}

static int read_profile(struct annotate_table *table, const struct annotate_args *args)
{
	struct pf_reader *reader;
	struct pf_sample sample;
	const char *python;
	char err[512];
	int got, err_added = 0;

	if (format_registry_open_reader(&reader, args->profile, err, sizeof(err))) {
		cli_error_print("annotate", args->profile, err);
		return EXIT_STATUS_TARGET;
	}
	table->aggregated = pf_reader_format(reader)->aggregated;
	python = pf_reader_metadata(reader, "python");
	if (!python || sscanf(python, "%u.%u", &table->py_major, &table->py_minor) != 2)
		table->py_major = table->py_minor = 0;
	while ((got = pf_reader_next_sample(reader, &sample)) > 0 && (err_added = table_add(table, &sample, args->function)) == 0)
		;
	if (err_added == -E2BIG) {
		snprintf(err, sizeof(err), "names more distinct files, functions, lines and instructions than the memory "
			 "cap holds (%zu MiB; --memory-cap MIB raises it)", table->memory_cap >> 20);
		cli_error_print("annotate", args->profile, err);
	} else if (err_added) {
		cli_error_print("annotate", args->profile, "out of memory");
	} else if (got < 0) {
		cli_error_print("annotate", args->profile, pf_reader_error(reader));
	}
	pf_reader_close(reader);
	if (err_added)
		return EXIT_STATUS_FAILED;
	return got < 0 ? EXIT_STATUS_TARGET : 0;
}

/* Reads the profile, then hands its table to emit: the exit status. */
static int annotate_with(const struct annotate_args *args,
			 int (*emit)(struct annotate_table *table, const struct annotate_args *args, FILE *out),
			 FILE *out)
{
	struct annotate_table table = { 0 };
	int status;

	intern_init(&table.files);
	intern_init(&table.lines);
	intern_init(&table.functions);
	intern_init(&table.instrs);
	table.memory_cap = args->memory_cap ? args->memory_cap : (size_t)ANNOTATE_DEFAULT_MEMORY_MIB << 20;
	status = read_profile(&table, args);
	if (!status && (index_function_lines(&table) || index_line_instrs(&table))) {
		cli_error_print("annotate", args->profile, "out of memory");
		status = EXIT_STATUS_FAILED;
	}
	if (!status)
		status = emit(&table, args, out);
	table_free(&table);
	return status;
}

static int emit_to_output(struct annotate_table *table, const struct annotate_args *args, FILE *out)
{
	(void)out;
	return emit_report(table, args);
}

static int emit_to_stream(struct annotate_table *table, const struct annotate_args *args, FILE *out)
{
	return write_report(out, table, args, args->output != NULL) ? EXIT_STATUS_FAILED : 0;
}

int annotate_to_stream(const char *profile, const char *source_root, bool html, FILE *out)
{
	struct annotate_args args = { .profile = profile, .source_root = source_root,
				      .files = SIZE_MAX, .all_lines = true, .output = html ? "" : NULL };

	return annotate_with(&args, emit_to_stream, out);
}

/* ---- command line ---- */

enum { OPT_SOURCE_ROOT = 0x100, OPT_PATH_MAP, OPT_FUNCTION, OPT_MEMORY_CAP };

static const struct argp_option annotate_options[] = {
	OPTIONS_HELP,
	{ "function", OPT_FUNCTION, "F", 0, "Only the files and lines of function F (a name, f, or a qualified "
					    "name, C.f)", 0 },
	{ "source-root", OPT_SOURCE_ROOT, "DIR", 0, "Read the profile's source paths under DIR (a container's "
						    "root, a chroot)", 0 },
	{ "path-map", OPT_PATH_MAP, "FROM=TO", 0, "Read a source path starting with FROM from TO instead "
						  "(repeatable, the first that matches)", 0 },
	{ "files", 'n', "N", 0, "The N hottest files (default 5)", 0 },
	{ "all", 'a', 0, 0, "Every line of each function's file, not only its hot region", 0 },
	{ "output", 'o', "FILE", 0, "Write a self-contained HTML page (FILE.html) instead of text on stdout", 0 },
	{ "memory-cap", OPT_MEMORY_CAP, "MIB", 0, "The most the profile's distinct files, functions, lines and instructions may take (default 512): past it annotate stops and says so", 0 },
	{ 0 },
};

static const char annotate_doc[] =
	"Show the hottest source lines of a profile (MOJO, Tachyon, or collapsed stacks whose frames "
	"name file:line): "
	"each line's own and total share of the profile's total weight beside the source.\n"
	"\n"
	"EXAMPLES:\n"
	"  pybpfprof annotate run.mojo                        # the 5 hottest files\n"
	"  pybpfprof annotate run.mojo --function parse -a    # all of parse's file\n"
	"  pybpfprof annotate run.mojo --path-map /app=./src  # a container's paths\n"
	"  pybpfprof annotate run.mojo -o heat.html           # one self-contained page"
	"\v"
	"EXIT STATUS:\n"
	"    0    done\n"
	"    1    the profile names more than --memory-cap holds, or out of memory\n"
	"    64   usage\n"
	"    66   PROFILE missing or not a valid profile\n"
	"    74   the output could not be written";

static error_t parse_annotate_option(int key, char *arg, struct argp_state *state)
{
	struct annotate_args *args = state->input;
	unsigned long long files;
	char *equals;
	size_t len;

	switch (key) {
	case OPT_FUNCTION:
		args->function = arg;
		break;
	case OPT_SOURCE_ROOT:
		args->source_root = arg;
		break;
	case OPT_PATH_MAP:
		equals = strchr(arg, '=');
		if (!equals || equals == arg)
			options_usage_error(state, "invalid --path-map '%s' (FROM=TO)", arg);
		if (args->map_count == ANNOTATE_MAX_PATH_MAPS)
			options_usage_error(state, "at most %d --path-map", ANNOTATE_MAX_PATH_MAPS);
		*equals = 0;
		args->maps[args->map_count++] =
			(struct path_map){ .from = arg, .from_len = strlen(arg), .to = equals + 1 };
		break;
	case 'n':
		if (options_parse_count(arg, 1, SIZE_MAX, &files))
			options_usage_error(state, "invalid -n '%s' (a number of files, 1 or more)", arg);
		args->files = (size_t)files;
		break;
	case 'a':
		args->all_lines = true;
		break;
	case OPT_MEMORY_CAP:
		if (options_parse_count(arg, 1, SIZE_MAX >> 21, &files))
			options_usage_error(state, "invalid --memory-cap '%s' (MiB, 1 or more)", arg);
		args->memory_cap = (size_t)files << 20;
		break;
	case 'o':
		len = strlen(arg);
		if (len < 5 || (strcasecmp(arg + len - 5, ".html") && (len < 4 || strcasecmp(arg + len - 4, ".htm"))))
			options_usage_error(state, "-o '%s': annotate writes an HTML page (FILE.html)", arg);
		/* One page: a second -o naming another file would never be written. */
		if (args->output && !options_same_output(args->output, arg))
			options_usage_error(state, "-o given twice (%s, %s): annotate writes one page", args->output, arg);
		if (args->output)
			options_warn_repeated_output("pybpfprof annotate", arg, args->output);
		args->output = arg;
		break;
	case 'h':
		argp_state_help(state, stdout, ARGP_HELP_STD_HELP);
		break;
	case ARGP_KEY_ARG:
		if (args->profile)
			options_usage_error(state, "give one profile");
		args->profile = arg;
		break;
	case ARGP_KEY_END:
		if (!args->profile)
			options_usage_error(state, "give one profile");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

int annotate_main(int argc, char **argv)
{
	static const struct argp argp = {
		.options = annotate_options,
		.parser = parse_annotate_option,
		.args_doc = "PROFILE",
		.doc = annotate_doc,
	};
	struct annotate_args args = { .files = ANNOTATE_DEFAULT_FILES };

	argp_err_exit_status = EXIT_STATUS_USAGE;
	argv[0] = (char *)"pybpfprof annotate";
	if (options_refuse_misspelled(annotate_options, argc, argv, argv[0], false) ||
	    argp_parse(&argp, argc, argv, 0, NULL, &args))
		return EXIT_STATUS_USAGE;
	return annotate_with(&args, emit_to_output, NULL);
}
