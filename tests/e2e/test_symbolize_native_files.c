// SPDX-License-Identifier: MIT
/* Native symbolization of user addresses through the parser worker (root: its sandbox): libc's and
 * a library's functions named, a static one by its start, symbol tables within their budget. */
#include "testlib.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "proc/proc_maps.h"
#include "symbolize/symbolize_native.h"
#include "util/target_budget.h"

static uint64_t code_address(void (*function)(void))
{
	return (uint64_t)(uintptr_t)function;
}

/* A function of a shared library: the library's file and the function's own name (inside it, not at its start). */
static void test_names_a_library_function(void **state)
{
	struct symbolize_native *symbolizer = symbolize_native_new();
	struct pf_frame frame;

	(void)state;
	assert_non_null(symbolizer);
	assert_int_equal(symbolize_native_resolve(symbolizer, getpid(), NULL,
					   code_address((void (*)(void))deflateInit2_) + 1, &frame), 1);
	assert_int_equal(frame.kind, PF_FRAME_NATIVE);
	assert_non_null(strstr(frame.file, "/libz.so"));
	assert_string_equal(frame.name, "deflateInit2_");
	assert_int_equal(frame.line, -1);
	symbolize_native_free(symbolizer);
}

/* A static function of a stripped library (no symbol names it), built here: its own C source. */
static const char hidden_source[] =
	"static __attribute__((noinline)) unsigned long hidden_loop(unsigned long n)\n"
	"{ unsigned long total = 0; for (unsigned long i = 0; i < n; i++) total += (i * i) ^ (total >> 3); return total; }\n"
	"void *hidden_loop_address(void) { return (void *)hidden_loop; }\n"
	"unsigned long call_hidden(unsigned long n) { return hidden_loop(n); }\n";

/* Every pc of an unnamed function has one name: the file offset of the function's start (its FDE). */
static void test_unnamed_function_named_by_its_start(void **state)
{
	char dir[] = "/tmp/pybpfprof-hidden.XXXXXX", source[PATH_MAX], library[PATH_MAX], command[3 * PATH_MAX];
	char expected[64], first_name[64];
	struct symbolize_native *symbolizer = symbolize_native_new();
	struct symbolize_native_frame found;
	void *(*hidden_loop_address)(void);
	uint64_t start;
	Dl_info info;
	void *handle;

	(void)state;
	assert_non_null(mkdtemp(dir));
	FORMAT(source, "%s/hidden.c", dir);
	FORMAT(library, "%s/libhidden.so", dir);
	assert_int_equal(write_whole_file(source, hidden_source, sizeof(hidden_source) - 1), 0);
	FORMAT(command, "cc -shared -fPIC -O1 -s -o %s %s", library, source);
	assert_int_equal(system(command), 0);
	handle = dlopen(library, RTLD_NOW);
	assert_non_null(handle);
	*(void **)&hidden_loop_address = dlsym(handle, "hidden_loop_address");
	assert_non_null(hidden_loop_address);
	start = (uint64_t)(uintptr_t)hidden_loop_address();
	assert_true(dladdr((void *)(uintptr_t)start, &info) != 0);
	/* cc lays its text segment out at the same file offset as its address */
	FORMAT(expected, "[libhidden.so+0x%" PRIx64 "]", start - (uint64_t)(uintptr_t)info.dli_fbase);

	assert_int_equal(symbolize_native_lookup(symbolizer, getpid(), NULL, start + 1, &found), 1);
	assert_null(found.symbol);
	FORMAT(first_name, "%s", found.frame.name);
	assert_int_equal(symbolize_native_lookup(symbolizer, getpid(), NULL, start + 6, &found), 1);
	assert_null(found.symbol);
	print_message("pcs +1 and +6 of a static function: %s, %s (its start: %s)\n", first_name, found.frame.name,
		      expected);
	assert_string_equal(first_name, expected);
	assert_string_equal(found.frame.name, expected);
	assert_true(strstr(found.frame.file, "/libhidden.so") != NULL);

	dlclose(handle);
	unlink(library);
	unlink(source);
	rmdir(dir);
	symbolize_native_free(symbolizer);
}

/* The symbol table bytes a fresh symbolizer holds once it has named pc. */
static uint64_t table_bytes_for(uint64_t pc)
{
	struct symbolize_native *symbolizer = symbolize_native_new();
	struct symbolize_native_frame found;
	struct symbolize_native_stats stats;

	assert_int_equal(symbolize_native_lookup(symbolizer, getpid(), NULL, pc, &found), 1);
	assert_non_null(found.symbol);
	symbolize_native_stats(symbolizer, &stats);
	symbolize_native_free(symbolizer);
	return stats.symbol_bytes;
}

/* Root holds the files' symbol tables within a byte budget: past it the least recently used
 * goes (and comes back when its file is named again), and names handed out stay valid. */
static void test_symbol_tables_within_their_budget(void **state)
{
	uint64_t libz_pc = code_address((void (*)(void))deflateInit2_) + 1;
	uint64_t libc_pc = code_address((void (*)(void))getppid) + 1;
	uint64_t libz_bytes = table_bytes_for(libz_pc), libc_bytes = table_bytes_for(libc_pc);
	uint64_t budget = (libz_bytes > libc_bytes ? libz_bytes : libc_bytes) + 1;
	struct symbolize_native *symbolizer = symbolize_native_new();
	struct symbolize_native_frame found;
	struct symbolize_native_stats stats;
	const char *libz_name;

	(void)state;
	print_message("tables: libz %" PRIu64 " bytes, libc %" PRIu64 " bytes; budget %" PRIu64 "\n", libz_bytes,
		      libc_bytes, budget);
	symbolize_native_set_budgets(symbolizer, budget, SYMBOLIZE_NATIVE_FILE_SYMBOL_BYTES);
	assert_int_equal(symbolize_native_lookup(symbolizer, getpid(), NULL, libz_pc, &found), 1);
	libz_name = found.frame.name;
	assert_string_equal(libz_name, "deflateInit2_");
	for (int round = 0; round < 2; round++) {
		assert_int_equal(symbolize_native_lookup(symbolizer, getpid(), NULL, libc_pc, &found), 1);
		assert_non_null(found.symbol);
		assert_non_null(strstr(found.symbol, "getppid"));
		assert_int_equal(symbolize_native_lookup(symbolizer, getpid(), NULL, libz_pc, &found), 1);
		assert_non_null(found.symbol);
		assert_string_equal(found.symbol, "deflateInit2_");
		symbolize_native_stats(symbolizer, &stats);
		assert_true(stats.symbol_bytes <= budget);
	}
	/* the first name, from a table dropped since, still reads */
	assert_string_equal(libz_name, "deflateInit2_");
	assert_int_equal(stats.tables_evicted, 4);
	symbolize_native_free(symbolizer);
}

/* A record's pcs wait while a file of theirs is being read, not after: the drain holds such
 * records (session/late_unwind.c) so their frames are named rather than left as offsets. */
static void test_names_pending_while_a_file_is_read(void **state)
{
	uint64_t libz_pc = code_address((void (*)(void))deflateInit2_) + 1;
	struct symbolize_native *symbolizer = symbolize_native_new();
	struct symbolize_native_frame found;
	char *heap = malloc(64);
	uint64_t heap_pc = (uint64_t)(uintptr_t)heap;
	unsigned polls = 0;

	(void)state;
	assert_non_null(symbolizer);
	assert_non_null(heap);
	symbolize_native_set_wait_ms(symbolizer, 0);
	/* nothing asked for yet: no lookup, nothing pending */
	assert_false(symbolize_native_names_pending(symbolizer, getpid(), &heap_pc, 1));
	/* libz is asked for now: its symbols come from the worker, started for it */
	assert_true(symbolize_native_names_pending(symbolizer, getpid(), &libz_pc, 1));
	assert_false(symbolize_native_names_pending(symbolizer, getpid(), &heap_pc, 1));
	while (symbolize_native_names_pending(symbolizer, getpid(), &libz_pc, 1)) {
		assert_true(++polls < 60000); /* 10 minutes: a worker that never answers */
		usleep(10000);
	}
	assert_int_equal(symbolize_native_lookup(symbolizer, getpid(), NULL, libz_pc, &found), 1);
	assert_false(found.provisional);
	assert_string_equal(found.symbol, "deflateInit2_");
	free(heap);
	symbolize_native_free(symbolizer);
}

#define NAME_BUDGET 4096
#define LIBC_PCS 2000

/* A target can make root meet any number of distinct native names (its files' paths, their
 * symbols, offsets of unnamed functions), kept until compacted: past their budget a new name
 * reads as its file's bracket name, a name handed out before still reads, and the names hold
 * no more than the budget, as the target budget counts them. */
static void test_names_within_their_budget(void **state)
{
	uint64_t libz_pc = code_address((void (*)(void))deflateInit2_) + 1;
	uint64_t libc_pc = code_address((void (*)(void))getppid);
	struct target_budget_store_stats stores[TARGET_BUDGET_MAX_STORES];
	struct symbolize_native *symbolizer = symbolize_native_new();
	struct symbolize_native_frame found;
	struct symbolize_native_stats stats;
	struct target_budget *budget;
	int named = 0, stand_ins = 0, count;
	const char *libz_name;

	(void)state;
	assert_non_null(symbolizer);
	assert_int_equal(target_budget_new((uint64_t)64 << 20, &budget), 0);
	symbolize_native_set_name_budget(symbolizer, NAME_BUDGET);
	assert_int_equal(symbolize_native_set_target_budget(symbolizer, budget), 0);
	assert_int_equal(symbolize_native_lookup(symbolizer, getpid(), NULL, libz_pc, &found), 1);
	libz_name = found.frame.name;
	assert_string_equal(libz_name, "deflateInit2_");
	/* libc's functions around getppid, 256 bytes apart: hundreds of distinct names */
	for (int i = 0; i < LIBC_PCS; i++) {
		if (symbolize_native_lookup(symbolizer, getpid(), NULL, libc_pc - LIBC_PCS / 2 * 256 + (uint64_t)i * 256,
					    &found) != 1)
			continue;
		named++;
		stand_ins += strcmp(found.frame.name, "[libc.so.6]") == 0;
		assert_non_null(strstr(found.frame.file, "libc.so"));
	}
	symbolize_native_stats(symbolizer, &stats);
	count = target_budget_stats(budget, stores);
	print_message("%d libc pcs named, %d as the stand-in; names %" PRIu64 " bytes (budget %d), %" PRIu64
		      " past it\n", named, stand_ins, stats.name_table_bytes, NAME_BUDGET, stats.names_over_budget);
	assert_true(named > LIBC_PCS / 2);
	assert_true(stand_ins > 0 && stats.names_over_budget > 0);
	assert_true(stats.name_table_bytes <= NAME_BUDGET);
	assert_int_equal(count, 2);
	assert_string_equal(stores[1].name, "native names");
	assert_int_equal(stores[1].held, stats.name_table_bytes);
	/* the first name still reads, and is still the name of its pc */
	assert_string_equal(libz_name, "deflateInit2_");
	assert_int_equal(symbolize_native_lookup(symbolizer, getpid(), NULL, libz_pc, &found), 1);
	assert_ptr_equal(found.frame.name, libz_name);
	symbolize_native_free(symbolizer);
	target_budget_free(budget);
}

/* Every pc of the test's own executable mappings, 64 bytes apart (at most `cap` a mapping),
 * those of files whose path holds `skip` left out (NULL: none): the names of thousands of
 * functions of a dozen libraries. Returns the pcs named. */
static int name_every_mapped_function(struct symbolize_native *symbolizer, int cap, const char *skip)
{
	struct proc_maps maps;
	struct symbolize_native_frame found;
	int named = 0;

	assert_int_equal(proc_maps_read(getpid(), &maps), 0);
	for (size_t m = 0; m < maps.count; m++) {
		const struct proc_map *map = &maps.maps[m];

		if (map->perms[2] != 'x' || map->path[0] != '/' || (skip && strstr(map->path, skip)))
			continue;
		for (int i = 0; i < cap && map->start + (uint64_t)i * 64 < map->end; i++)
			named += symbolize_native_lookup(symbolizer, getpid(), NULL, map->start + (uint64_t)i * 64,
							 &found) == 1;
	}
	proc_maps_free(&maps);
	return named;
}

/* A whole host keeps meeting files of new names: the names of files whose tables went (past
 * the tables' budget) leave once they are most of the table, the names of the files kept stay
 * (and read right, under ASan), and the budget's store holds what the table holds. */
static void test_names_of_dropped_tables_leave_on_compaction(void **state)
{
	uint64_t libz_pc = code_address((void (*)(void))deflateInit2_) + 1;
	uint64_t libc_pc = code_address((void (*)(void))getppid) + 1;
	struct target_budget_store_stats stores[TARGET_BUDGET_MAX_STORES];
	struct symbolize_native *symbolizer = symbolize_native_new();
	struct symbolize_native_frame found;
	struct symbolize_native_stats before, after;
	struct target_budget *budget;
	int named;

	(void)state;
	assert_non_null(symbolizer);
	assert_int_equal(target_budget_new((uint64_t)64 << 20, &budget), 0);
	assert_int_equal(symbolize_native_set_target_budget(symbolizer, budget), 0);
	/* room for libz's or libc's table, not both: each library's goes when the next comes */
	symbolize_native_set_budgets(symbolizer, table_bytes_for(libz_pc) > table_bytes_for(libc_pc)
							 ? table_bytes_for(libz_pc) + 1 : table_bytes_for(libc_pc) + 1,
				     SYMBOLIZE_NATIVE_FILE_SYMBOL_BYTES);
	named = name_every_mapped_function(symbolizer, 4096, NULL);
	assert_int_equal(symbolize_native_lookup(symbolizer, getpid(), NULL, libz_pc, &found), 1);
	assert_string_equal(found.frame.name, "deflateInit2_");
	symbolize_native_stats(symbolizer, &before);
	assert_int_equal(symbolize_native_compact_names(symbolizer), 1);
	symbolize_native_stats(symbolizer, &after);
	target_budget_stats(budget, stores);
	print_message("%d pcs named; names %" PRIu64 " bytes, %" PRIu64 " after compaction; %" PRIu64
		      " tables dropped\n", named, before.name_table_bytes, after.name_table_bytes, before.tables_evicted);
	assert_true(before.name_table_bytes >= SYMBOLIZE_NATIVE_COMPACT_MIN_BYTES);
	assert_true(before.tables_evicted > 0);
	assert_true(after.name_table_bytes < before.name_table_bytes / 4);
	assert_int_equal(after.name_compactions, 1);
	assert_string_equal(stores[1].name, "native names");
	assert_int_equal(stores[1].held, after.name_table_bytes);
	/* the kept file's names read from the new table; a dropped one's come back with its table */
	assert_int_equal(symbolize_native_lookup(symbolizer, getpid(), NULL, libz_pc, &found), 1);
	assert_string_equal(found.frame.name, "deflateInit2_");
	assert_non_null(strstr(found.frame.file, "/libz.so"));
	assert_int_equal(symbolize_native_lookup(symbolizer, getpid(), NULL, libc_pc, &found), 1);
	assert_non_null(found.symbol);
	assert_non_null(strstr(found.symbol, "getppid"));
	/* not again until the table has doubled */
	assert_int_equal(symbolize_native_compact_names(symbolizer), 0);
	symbolize_native_free(symbolizer);
	target_budget_free(budget);
}

/* A function named past the budget stands in as its file's [name] (or the names' stand-in, when
 * the file's [name] came past it too); once a compaction has made room, its next pc is named for
 * real, its file's table kept all along. */
static void test_stand_ins_named_again_after_compaction(void **state)
{
	uint64_t libz_pc = code_address((void (*)(void))deflateInit2_) + 1;
	struct symbolize_native *symbolizer = symbolize_native_new();
	struct symbolize_native_frame found;
	struct symbolize_native_stats stats;
	struct target_budget *budget;
	unsigned polls = 0;

	(void)state;
	assert_non_null(symbolizer);
	assert_int_equal(target_budget_new((uint64_t)64 << 20, &budget), 0);
	symbolize_native_set_name_budget(symbolizer, SYMBOLIZE_NATIVE_COMPACT_MIN_BYTES + (64 << 10));
	assert_int_equal(symbolize_native_set_target_budget(symbolizer, budget), 0);
	/* room for one library's table at a time; every library's names but libz's fill the budget */
	symbolize_native_set_budgets(symbolizer, table_bytes_for(libz_pc) * 4, SYMBOLIZE_NATIVE_FILE_SYMBOL_BYTES);
	name_every_mapped_function(symbolizer, 4096, "/libz.so");
	symbolize_native_stats(symbolizer, &stats);
	assert_true(stats.names_over_budget > 0);
	/* libz's table read: its function is named from it, past the budget */
	while (symbolize_native_names_pending(symbolizer, getpid(), &libz_pc, 1)) {
		assert_true(++polls < 60000); /* 10 minutes: a worker that never answers */
		usleep(10000);
	}
	assert_int_equal(symbolize_native_lookup(symbolizer, getpid(), NULL, libz_pc, &found), 1);
	assert_false(found.provisional);
	assert_non_null(found.symbol);
	print_message("past the budget, deflateInit2_ reads '%s'\n", found.symbol);
	assert_true(found.symbol[0] == '[');
	assert_int_equal(symbolize_native_compact_names(symbolizer), 1);
	assert_int_equal(symbolize_native_lookup(symbolizer, getpid(), NULL, libz_pc, &found), 1);
	assert_false(found.provisional);
	assert_string_equal(found.frame.name, "deflateInit2_");
	assert_non_null(strstr(found.frame.file, "/libz.so"));
	symbolize_native_free(symbolizer);
	target_budget_free(budget);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names_a_library_function),
		cmocka_unit_test(test_unnamed_function_named_by_its_start),
		cmocka_unit_test(test_symbol_tables_within_their_budget),
		cmocka_unit_test(test_names_pending_while_a_file_is_read),
		cmocka_unit_test(test_names_within_their_budget),
		cmocka_unit_test(test_names_of_dropped_tables_leave_on_compaction),
		cmocka_unit_test(test_stand_ins_named_again_after_compaction),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
