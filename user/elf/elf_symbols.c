// SPDX-License-Identifier: MIT
#include "elf/elf_symbols.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "elf/minidebuginfo.h"

/* The functions of one source, sorted by address (elf_file_functions). */
struct symbol_source {
	struct elf_function *functions;
	size_t count;
	size_t next; /* while merging */
};

/* The functions of one opened ELF into source and its names into *names; false if it has none. */
static bool read_source(const struct elf_file *elf, struct symbol_source *source, char **names)
{
	*source = (struct symbol_source){ 0 };
	if (elf_file_functions(elf, &source->functions, &source->count, names) < 0) {
		*source = (struct symbol_source){ 0 };
		*names = NULL;
		return false;
	}
	return true;
}

/* The source whose next function has the lowest address (the first source on a tie); -1 when all are done. */
static int lowest_source(const struct symbol_source *sources, int source_count)
{
	int lowest = -1;

	for (int i = 0; i < source_count; i++) {
		const struct symbol_source *source = &sources[i];

		if (source->next == source->count)
			continue;
		if (lowest < 0 || source->functions[source->next].addr <
					  sources[lowest].functions[sources[lowest].next].addr)
			lowest = i;
	}
	return lowest;
}

/* Every source's functions into one sorted array, the first source's where two share an address. */
static int merge_sources(struct elf_symbols *symbols, struct symbol_source *sources, int source_count)
{
	size_t total = 0;
	int from;

	for (int i = 0; i < source_count; i++)
		total += sources[i].count;
	if (!total)
		return 0;
	symbols->functions = calloc(total, sizeof(*symbols->functions));
	if (!symbols->functions)
		return -ENOMEM;
	while ((from = lowest_source(sources, source_count)) >= 0) {
		const struct elf_function *function = &sources[from].functions[sources[from].next++];

		if (symbols->count && symbols->functions[symbols->count - 1].addr == function->addr)
			continue;
		symbols->functions[symbols->count++] = *function;
	}
	return 0;
}

/* The separate debug file's functions, when it has a .symtab (else it adds nothing). */
static bool read_debug_file(const struct elf_file *file, const struct debug_file_place *place,
			    uint64_t *debug_bytes_left, struct symbol_source *source, char **names)
{
	struct debug_file_place budgeted;
	struct elf_file debug;
	bool found;

	if (!place)
		return false;
	budgeted = *place;
	budgeted.check_bytes_left = debug_bytes_left;
	if (debug_file_open(file, &budgeted, &debug))
		return false;
	found = elf_file_has_symtab(&debug) && read_source(&debug, source, names);
	elf_file_close(&debug);
	return found;
}

static bool read_minidebuginfo(const struct elf_file *file, uint64_t *debug_bytes_left, struct symbol_source *source,
			       char **names)
{
	struct elf_file debugdata;
	bool found;

	if (minidebuginfo_open(file, debug_bytes_left, &debugdata))
		return false;
	found = read_source(&debugdata, source, names);
	elf_file_close(&debugdata);
	return found;
}

int elf_symbols_read(struct elf_symbols *symbols, const struct elf_file *file, const struct debug_file_place *place,
		     uint64_t *debug_bytes_left)
{
	struct symbol_source sources[ELF_SYMBOLS_MAX_SOURCES];
	int source_count = 0, err;

	*symbols = (struct elf_symbols){ 0 };
	source_count += read_source(file, &sources[source_count], &symbols->names[source_count]);
	/* A file with its .symtab names its static functions already: nothing else is read. */
	if (!elf_file_has_symtab(file)) {
		if (read_debug_file(file, place, debug_bytes_left, &sources[source_count], &symbols->names[source_count]))
			source_count++;
		/* MiniDebugInfo is a subset of what a debug file holds: read only without one */
		else if (read_minidebuginfo(file, debug_bytes_left, &sources[source_count],
					    &symbols->names[source_count]))
			source_count++;
	}
	err = merge_sources(symbols, sources, source_count);
	for (int i = 0; i < source_count; i++)
		free(sources[i].functions);
	if (err)
		elf_symbols_free(symbols);
	return err;
}

int elf_symbols_merge(struct elf_symbols *symbols, struct elf_symbols_source *given, int source_count)
{
	struct symbol_source sources[ELF_SYMBOLS_MAX_SOURCES];
	int err;

	*symbols = (struct elf_symbols){ 0 };
	/* One source: its array is taken over, one function kept per address, in place. */
	if (source_count == 1) {
		symbols->functions = given[0].functions;
		symbols->names[0] = given[0].names;
		for (size_t i = 0; i < given[0].count; i++)
			if (!symbols->count || symbols->functions[symbols->count - 1].addr != given[0].functions[i].addr)
				symbols->functions[symbols->count++] = given[0].functions[i];
		return 0;
	}
	for (int i = 0; i < source_count && i < ELF_SYMBOLS_MAX_SOURCES; i++) {
		sources[i] = (struct symbol_source){ .functions = given[i].functions, .count = given[i].count };
		symbols->names[i] = given[i].names;
	}
	if (source_count > ELF_SYMBOLS_MAX_SOURCES)
		source_count = ELF_SYMBOLS_MAX_SOURCES;
	err = merge_sources(symbols, sources, source_count);
	for (int i = 0; i < source_count; i++)
		free(sources[i].functions);
	if (err)
		elf_symbols_free(symbols);
	return err;
}

void elf_symbols_free(struct elf_symbols *symbols)
{
	free(symbols->functions);
	for (int i = 0; i < ELF_SYMBOLS_MAX_SOURCES; i++)
		free(symbols->names[i]);
	*symbols = (struct elf_symbols){ 0 };
}
