// SPDX-License-Identifier: MIT
/*
 * The CFI of an ELF file a target maps (.eh_frame, .eh_frame_hdr, .debug_frame): what the
 * unwind cache builds a native-unwinding table from (in the parser worker), and
 * symbolize_native names a stripped file's functions by; and the same bytes as a worker's
 * answer root checks (a worker a file took over answers anything).
 */
#include "fuzz.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "worker/unwind_build.h"

static size_t table_bytes(const struct unwind_table *table)
{
	size_t sum = table->count + table->id.len;

	for (size_t i = 0; i < table->count; i++) {
		const struct unwind_row *row = unwind_table_lookup(table, table->rows[i].pc);

		sum += row ? row->pc : 0;
	}
	return sum;
}

/* The bytes as a PARSER_REQUEST_UNWIND_ROWS answer about a file whose code is its first 64 KiB
 * and a range past 4 GiB (beyond any row's pc). */
static void fuzz_worker_answer(const uint8_t *data, size_t size)
{
	const struct unwind_code_ranges code = { .ranges = { { 0, 1 << 16 }, { 1ull << 32, 1ull << 33 } }, .count = 2 };
	struct unwind_table table;
	struct errbuf error;
	void *payload = malloc(size ? size : 1);

	if (!payload)
		return;
	memcpy(payload, data, size);
	if (!unwind_table_from_payload(payload, size, &code, &table, &error))
		fuzz_input_sink += table_bytes(&table);
	unwind_table_free(&table);
}

int fuzz_unwind_table_run(const uint8_t *data, size_t size)
{
	struct unwind_table table = { 0 };
	struct unwind_function_range *ranges = NULL;
	struct unwind_file_id id;
	struct errbuf error;
	size_t count = 0;
	int fd = fuzz_input_memfd(data, size);

	if (fd < 0)
		return 0;
	if (!unwind_table_build(fd, &table, &error))
		fuzz_input_sink += table_bytes(&table);
	unwind_table_free(&table);
	if (!unwind_table_function_starts(fd, &ranges, &count, &error)) {
		for (size_t i = 0; i < count; i++)
			fuzz_input_sink += ranges[i].end - ranges[i].start;
		free(ranges);
	}
	if (!unwind_table_file_id(fd, &id))
		fuzz_input_sink += id.len;
	close(fd);
	fuzz_worker_answer(data, size);
	return 0;
}
