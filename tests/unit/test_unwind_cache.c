// SPDX-License-Identifier: MIT
/* target/unwind_cache without building a table: a deleted library is no file to read, a gone
 * process leaves nothing behind. */
#include "unwind_cache_ops.h"

#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "proc/proc_maps.h"
#include "unwind/unwind_cache.h"
#include "util/array.h"
#include "util/clock.h"

/* A library unlinked after it was loaded is not opened: its mapping says DELETED_FILE. */
static void test_deleted_library(void **state)
{
	static struct unwind_proc proc;
	struct recorded_ops *recorded = calloc(1, sizeof(*recorded));
	struct unwind_cache *cache = new_cache(recorded, UNWIND_ROWS_DEFAULT);
	char source[4096] = "", copy[4096], command[8400];
	int ready[2];
	struct proc_maps maps;
	const struct unwind_mapping *mapping = NULL;
	Dl_info info;
	pid_t child;
	char byte;

	(void)state;
	assert_true(dladdr((void *)(uintptr_t)deflate, &info) != 0);
	assert_true(realpath(info.dli_fname, source) != NULL);
	FORMAT(copy, "%s/unwind-cache-libz-%d.so", test_tmpdir(), (int)getpid());
	FORMAT(command, "cp '%s' '%s'", source, copy);
	assert_int_equal(system(command), 0);
	assert_int_equal(pipe(ready), 0);
	child = fork();
	if (child == 0) {
		/* RTLD_DEEPBIND-free plain load: a second copy of libz under another name. */
		void *handle = dlopen(copy, RTLD_NOW | RTLD_LOCAL);

		byte = handle ? 1 : 0;
		if (write(ready[1], &byte, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	assert_true(child > 0);
	assert_int_equal(read(ready[0], &byte, 1), 1);
	assert_int_equal(byte, 1);
	assert_int_equal(unlink(copy), 0);
	assert_int_equal(unwind_cache_map_proc(cache, child, &proc), 0);
	assert_int_equal(proc_maps_read(child, &maps), 0);
	for (size_t i = 0; i < maps.count && !mapping; i++)
		if (maps.maps[i].perms[2] == 'x' && maps.maps[i].deleted && strcmp(maps.maps[i].path, copy) == 0)
			mapping = mapping_at(&proc, maps.maps[i].start);
	proc_maps_free(&maps);
	assert_non_null(mapping);
	assert_int_equal(mapping->table_id, UNWIND_TABLE_NONE);
	assert_int_equal(mapping->stop_cause, UNWIND_STOP_DELETED_FILE);
	end_child(child);
	close(ready[0]);
	close(ready[1]);
	unwind_cache_forget_proc(cache, child);
	unwind_cache_free(cache);
	free(recorded);
}

/* Records the order the tables were placed in (table ids) beside what record_upload checks. */
struct ordered_ops {
	struct recorded_ops recorded;
	uint32_t order[UNWIND_MAX_TABLES];
	size_t placed;
};

/* ---- many distinct files ---- */

/*
 * Files without a table that no process maps any more are remembered, so that a library
 * mapped again is not read again, but only the newest UNWIND_CACHE_IDLE_VERDICTS of them: a
 * host mapping new files all day (20,000 tiny ELFs in the soak's attack zoo) would otherwise
 * grow the cache, and every lookup over it, for the whole run.
 */

static void test_gone_process(void **state)
{
	static struct unwind_proc proc;
	struct unwind_cache *cache = NULL;

	(void)state;
	assert_int_equal(unwind_cache_new(&cache, 100, NULL), 0);
	assert_int_equal(unwind_cache_map_proc(cache, 0x3ffffff0, &proc), -ESRCH);
	assert_false(unwind_cache_knows_proc(cache, 0x3ffffff0));
	unwind_cache_free(cache);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_deleted_library),
		cmocka_unit_test(test_gone_process),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
