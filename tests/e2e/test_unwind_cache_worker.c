// SPDX-License-Identifier: MIT
/* target/unwind_cache with tables the parser worker builds (root: its sandbox): one table per file
 * shared by processes, refcounts, the row budget, bombs and overruns cost one file. */
#include "unwind_cache_ops.h"
#include "inflation_bomb.h"

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

/* An address in the executable mapping of the first file whose path contains name. */
static uint64_t code_in(pid_t pid, const char *name)
{
	struct proc_maps maps;
	uint64_t pc = 0;

	assert_int_equal(proc_maps_read(pid, &maps), 0);
	for (size_t i = 0; i < maps.count && !pc; i++)
		if (maps.maps[i].perms[2] == 'x' && strstr(maps.maps[i].path, name))
			pc = maps.maps[i].start + 16;
	proc_maps_free(&maps);
	return pc;
}

static void assert_sorted(const struct unwind_proc *proc)
{
	for (uint32_t i = 1; i < proc->count; i++)
		assert_true(proc->mappings[i - 1].end <= proc->mappings[i].start);
}

/* argv run, once it has exec'd the program named name (its maps then name libc too). */
static pid_t spawn_program(char *const argv[], const char *name)
{
	pid_t pid = test_spawn(argv, NULL, NULL);

	assert_true(pid > 0);
	for (int i = 0; i < 200 && !code_in(pid, name); i++)
		usleep(5000);
	return pid;
}

/* argv run, once it has said "ready" on its stdout (*out: the caller closes it once the
 * program is gone: it may write more). */
static pid_t spawn_ready(char *const argv[], int *out)
{
	char said[16] = "";
	pid_t pid = test_spawn(argv, out, NULL);
	size_t got = 0;

	assert_true(pid > 0);
	while (!strstr(said, "ready") && got < sizeof(said) - 1) {
		ssize_t n = read(*out, said + got, sizeof(said) - 1 - got);

		assert_true(n > 0);
		got += (size_t)n;
	}
	assert_non_null(strstr(said, "ready"));
	return pid;
}

static pid_t spawn_sleep(void)
{
	char *argv[] = { "sleep", "30", NULL };

	return spawn_program(argv, "sleep");
}

/* Our own libz and libc have tables; a pc maps to file pc = pc - bias inside the table's file. */
static void test_maps_own_process(void **state)
{
	static struct unwind_proc proc;
	struct recorded_ops *recorded = calloc(1, sizeof(*recorded));
	struct unwind_cache *cache = new_cache(recorded, UNWIND_ROWS_DEFAULT);
	struct unwind_cache_stats stats;
	const struct unwind_mapping *libz;
	Dl_info info;
	void *heap;

	(void)state;
	assert_int_equal(unwind_cache_map_proc(cache, getpid(), &proc), 0);
	assert_true(proc.count > 0);
	assert_sorted(&proc);
	libz = mapping_at(&proc, (uint64_t)(uintptr_t)deflate + 16);
	assert_non_null(libz);
	assert_true(libz->table_id < UNWIND_MAX_TABLES);
	assert_true(recorded->live[libz->table_id]);
	/* A shared library's bias is its load address (dladdr's base, the link map's l_addr). */
	assert_true(dladdr((void *)(uintptr_t)deflate, &info) != 0);
	assert_int_equal(libz->bias, (uint64_t)(uintptr_t)info.dli_fbase);
	assert_non_null(mapping_at(&proc, code_in(getpid(), "/libc.so")));
	/* The heap and the stack are no file mapping: BPF says NO_MAPPING there. */
	heap = malloc(64);
	assert_null(mapping_at(&proc, (uint64_t)(uintptr_t)heap));
	free(heap);
	unwind_cache_stats(cache, &stats);
	assert_int_equal(stats.files, recorded->uploads);
	assert_int_equal(stats.tables_built, recorded->uploads);
	assert_true(stats.rows_used > 1000);
	assert_int_equal(stats.row_capacity, UNWIND_ROWS_DEFAULT);
	assert_int_equal(stats.processes, 1);
	assert_true(unwind_cache_knows_proc(cache, getpid()));
	/* Reading the maps again builds nothing new and keeps the tables. */
	assert_int_equal(unwind_cache_map_proc(cache, getpid(), &proc), 0);
	assert_int_equal(recorded->releases, 0);
	unwind_cache_stats(cache, &stats);
	assert_int_equal(stats.tables_built, recorded->uploads);
	unwind_cache_forget_proc(cache, getpid());
	assert_false(unwind_cache_knows_proc(cache, getpid()));
	/* Mapped by no process, the tables stay, idle, for the next process of the same files. */
	assert_int_equal(recorded->releases, 0);
	unwind_cache_stats(cache, &stats);
	assert_int_equal(stats.files, recorded->uploads);
	assert_int_equal(stats.idle_files, recorded->uploads);
	assert_int_equal(stats.peak_files, recorded->uploads);
	assert_true(stats.peak_rows_used > 1000);
	/* ... which gets them without a rebuild. */
	assert_int_equal(unwind_cache_map_proc(cache, getpid(), &proc), 0);
	unwind_cache_stats(cache, &stats);
	assert_int_equal(stats.tables_built, recorded->uploads);
	assert_int_equal(stats.idle_files, 0);
	assert_int_equal(stats.idle_reused, recorded->uploads);
	unwind_cache_forget_proc(cache, getpid());
	unwind_cache_free(cache);
	free(recorded);
}

/* libc mapped by two processes: one table, in use until neither maps it, then idle. */
static void test_shared_file_one_table(void **state)
{
	static struct unwind_proc ours, theirs;
	struct recorded_ops *recorded = calloc(1, sizeof(*recorded));
	struct unwind_cache *cache = new_cache(recorded, UNWIND_ROWS_DEFAULT);
	const struct unwind_mapping *our_libc, *their_libc;
	pid_t child = spawn_sleep();
	size_t uploads_before;

	(void)state;
	assert_int_equal(unwind_cache_map_proc(cache, getpid(), &ours), 0);
	uploads_before = recorded->uploads;
	assert_int_equal(unwind_cache_map_proc(cache, child, &theirs), 0);
	our_libc = mapping_at(&ours, code_in(getpid(), "/libc.so"));
	their_libc = mapping_at(&theirs, code_in(child, "/libc.so"));
	assert_non_null(our_libc);
	assert_non_null(their_libc);
	assert_true(our_libc->table_id < UNWIND_MAX_TABLES);
	assert_int_equal(our_libc->table_id, their_libc->table_id);
	/* Only files we do not map were built for the child (sleep itself, maybe its loader). */
	assert_true(recorded->uploads - uploads_before <= 2);
	unwind_cache_forget_proc(cache, getpid());
	assert_true(recorded->live[their_libc->table_id]);
	unwind_cache_forget_proc(cache, child);
	assert_int_equal(recorded->releases, 0);
	{
		struct unwind_cache_stats stats;

		unwind_cache_stats(cache, &stats);
		assert_int_equal(stats.idle_files, recorded->uploads);
	}
	end_child(child);
	unwind_cache_free(cache);
	free(recorded);
}

/*
 * A new file that needs room takes it from the tables idle longest, never from one in use.
 * Debian's python3 (its binary holds libpython), libc, the loader fit a default chunk: given
 * just their rows, the cache holds them in one chunk of that size, packed; sleep's binary
 * then finds no room.
 */
static void test_idle_tables_make_room(void **state)
{
	static struct unwind_proc first_proc, second_proc;
	/* says so once its start-up has mapped all it maps: both caches below see the same files */
	char *python_argv[] = { "/usr/bin/python3", "-c", "import time; print('ready', flush=True); time.sleep(30)",
				NULL };
	struct recorded_ops *probe, *recorded;
	struct unwind_cache *cache;
	struct unwind_cache_stats stats;
	const struct unwind_mapping *sleep_binary;
	pid_t first, second;
	int first_out = -1;
	size_t first_rows;

	(void)state;
	if (access(python_argv[0], X_OK) != 0)
		skip();
	probe = calloc(1, sizeof(*probe));
	recorded = calloc(1, sizeof(*recorded));
	cache = new_cache(probe, UNWIND_ROWS_DEFAULT);
	first = spawn_ready(python_argv, &first_out);
	second = spawn_sleep();
	/* What the first process's files take: the room of a cache that then holds nothing else. */
	assert_int_equal(unwind_cache_map_proc(cache, first, &first_proc), 0);
	unwind_cache_stats(cache, &stats);
	first_rows = stats.rows_used;
	assert_true(first_rows <= UNWIND_CHUNK_ROWS);
	unwind_cache_forget_proc(cache, first);
	unwind_cache_free(cache);
	cache = new_cache(recorded, first_rows);
	assert_int_equal(unwind_cache_map_proc(cache, first, &first_proc), 0);
	unwind_cache_forget_proc(cache, first);
	assert_int_equal(recorded->releases, 0);
	unwind_cache_stats(cache, &stats);
	assert_int_equal(stats.rows_used, first_rows);
	assert_int_equal(stats.chunks, 1);
	assert_int_equal(stats.chunk_rows, first_rows);
	/* sleep's binary needs rows: idle tables of python's (its binary first) make room;
	 * its libc and loader are python's, reused as they are. */
	assert_int_equal(unwind_cache_map_proc(cache, second, &second_proc), 0);
	sleep_binary = mapping_at(&second_proc, code_in(second, "sleep"));
	assert_non_null(sleep_binary);
	assert_true(sleep_binary->table_id < UNWIND_MAX_TABLES);
	unwind_cache_stats(cache, &stats);
	print_message("idle: %zu evicted for room, %zu reused, %zu still idle; %zu chunks of %zu rows together\n",
		      stats.idle_evicted, stats.idle_reused, stats.idle_files, stats.chunks, stats.chunk_rows);
	assert_true(stats.idle_evicted >= 1);
	assert_int_equal(recorded->releases, stats.idle_evicted);
	assert_true(stats.idle_reused >= 1);
	assert_true(stats.rows_used <= first_rows);
	assert_true(stats.chunk_rows <= first_rows);
	/* The room was made inside the one chunk, never freed since. */
	assert_int_equal(recorded->chunks_added, 1);
	assert_int_equal(recorded->chunks_removed, 0);
	unwind_cache_forget_proc(cache, second);
	end_child(first);
	close(first_out);
	end_child(second);
	unwind_cache_free(cache);
	free(probe);
	free(recorded);
}

/* A budget too small for libc: its mapping gets NO_TABLE, counted once, and it is not built again. */
static void test_budget_too_small(void **state)
{
	static struct unwind_proc proc;
	struct recorded_ops *recorded = calloc(1, sizeof(*recorded));
	struct unwind_cache *cache = new_cache(recorded, 4000);
	struct unwind_cache_stats first, second;
	const struct unwind_mapping *libc;

	(void)state;
	assert_int_equal(unwind_cache_map_proc(cache, getpid(), &proc), 0);
	libc = mapping_at(&proc, code_in(getpid(), "/libc.so"));
	assert_non_null(libc);
	assert_int_equal(libc->table_id, UNWIND_TABLE_NONE);
	assert_int_equal(libc->stop_cause, UNWIND_STOP_NO_TABLE);
	unwind_cache_stats(cache, &first);
	assert_true(first.failures[UNWIND_FAIL_NO_ROOM] >= 1);
	assert_true(first.failed_files >= 1);
	assert_true(first.rows_used <= 4000);
	/* Starting the parser worker maps libraries into this process (libcap, an NSS module), which
	 * the next look finds new: the files are stable from then on, and none is built again. */
	assert_int_equal(unwind_cache_map_proc(cache, getpid(), &proc), 0);
	unwind_cache_stats(cache, &first);
	assert_int_equal(unwind_cache_map_proc(cache, getpid(), &proc), 0);
	unwind_cache_stats(cache, &second);
	assert_int_equal(second.failures[UNWIND_FAIL_NO_ROOM], first.failures[UNWIND_FAIL_NO_ROOM]);
	assert_true(second.build_us == first.build_us);
	assert_string_equal(unwind_cache_failure_name(UNWIND_FAIL_NO_ROOM), "no_room");
	unwind_cache_forget_proc(cache, getpid());
	unwind_cache_free(cache);
	free(recorded);
}

/* A pc in no known mapping asks for a re-read, at most every UNWIND_CACHE_REFRESH_MS. */
static void test_refresh_only_for_unknown_pcs(void **state)
{
	static struct unwind_proc proc;
	struct recorded_ops *recorded = calloc(1, sizeof(*recorded));
	struct unwind_cache *cache = new_cache(recorded, UNWIND_ROWS_DEFAULT);
	uint64_t now = clock_monotonic_ms();
	uint64_t known = (uint64_t)(uintptr_t)deflate;

	(void)state;
	assert_false(unwind_cache_should_refresh(cache, getpid(), 0x10, now + 1000));
	assert_int_equal(unwind_cache_map_proc(cache, getpid(), &proc), 0);
	assert_false(unwind_cache_should_refresh(cache, getpid(), known, now + 1000));
	/* just short of the pace after the read began (the read itself, its tables built by the
	 * worker, takes longer than the pace on a loaded machine) */
	assert_false(unwind_cache_should_refresh(cache, getpid(), 0x10,
						 unwind_cache_read_ms(cache, getpid()) + UNWIND_CACHE_REFRESH_MS - 1));
	assert_true(unwind_cache_should_refresh(cache, getpid(), 0x10, clock_monotonic_ms() + UNWIND_CACHE_REFRESH_MS));
	unwind_cache_forget_proc(cache, getpid());
	unwind_cache_free(cache);
	free(recorded);
}

/* A library loaded after the maps were read (dlopen): unknown until they are read again. */
static void test_library_loaded_later(void **state)
{
	static struct unwind_proc proc;
	struct recorded_ops *recorded = calloc(1, sizeof(*recorded));
	struct unwind_cache *cache = new_cache(recorded, UNWIND_ROWS_DEFAULT);
	char source[4096] = "", copy[4096], command[8400];
	const struct unwind_mapping *mapping;
	uint64_t pc;
	Dl_info info;
	void *handle;

	(void)state;
	assert_true(dladdr((void *)(uintptr_t)deflate, &info) != 0);
	assert_true(realpath(info.dli_fname, source) != NULL);
	FORMAT(copy, "%s/unwind-cache-later-%d.so", test_tmpdir(), (int)getpid());
	FORMAT(command, "cp '%s' '%s'", source, copy);
	assert_int_equal(system(command), 0);
	assert_int_equal(unwind_cache_map_proc(cache, getpid(), &proc), 0);
	handle = dlopen(copy, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(handle);
	pc = (uint64_t)(uintptr_t)dlsym(handle, "deflate");
	assert_true(pc != 0);
	assert_null(mapping_at(&proc, pc));
	assert_true(unwind_cache_should_refresh(cache, getpid(), pc, clock_monotonic_ms() + UNWIND_CACHE_REFRESH_MS));
	assert_int_equal(unwind_cache_map_proc(cache, getpid(), &proc), 0);
	mapping = mapping_at(&proc, pc);
	assert_non_null(mapping);
	/* The same bytes in another file: its own table (a copy's build id is only its claim, and
	 * anyone's file could claim libz's), beside our own libz's. */
	assert_true(mapping->table_id < UNWIND_MAX_TABLES);
	assert_int_not_equal(mapping->table_id, mapping_at(&proc, (uint64_t)(uintptr_t)deflate)->table_id);
	assert_false(unwind_cache_should_refresh(cache, getpid(), pc, clock_monotonic_ms() + UNWIND_CACHE_REFRESH_MS));
	dlclose(handle);
	unlink(copy);
	unwind_cache_forget_proc(cache, getpid());
	unwind_cache_free(cache);
	free(recorded);
}

/* Records the order the tables were placed in (table ids) beside what record_upload checks. */
struct ordered_ops {
	struct recorded_ops recorded;
	uint32_t order[UNWIND_MAX_TABLES];
	size_t placed;
};

static int record_upload_in_order(void *ctx, uint32_t table_id, const struct unwind_table_ref *ref,
				  const struct unwind_row *rows, const uint32_t *pages)
{
	struct ordered_ops *ordered = ctx;

	if (ordered->placed < UNWIND_MAX_TABLES)
		ordered->order[ordered->placed++] = table_id;
	return record_upload(&ordered->recorded, table_id, ref, rows, pages);
}

static struct unwind_cache *new_background_cache(struct ordered_ops *ordered)
{
	struct unwind_cache_ops ops = { .ctx = ordered, .upload_table = record_upload_in_order,
					.release_table = record_release, .add_chunk = record_add_chunk,
					.remove_chunk = record_remove_chunk };
	struct unwind_cache *cache = NULL;

	memset(ordered, 0, sizeof(*ordered));
	assert_int_equal(unwind_cache_new(&cache, UNWIND_ROWS_DEFAULT, &ops), 0);
	assert_int_equal(unwind_cache_build_in_background(cache), 0);
	return cache;
}

static void wait_until_built(struct unwind_cache *cache)
{
	pid_t pids[16];

	while (unwind_cache_building(cache)) {
		unwind_cache_poll(cache, pids, 16);
		usleep(1000);
	}
	unwind_cache_poll(cache, pids, 16);
}

/* An address in the last executable file mapping of pid: its file is queued last. */
static uint64_t code_in_last_file(pid_t pid)
{
	struct proc_maps maps;
	uint64_t pc = 0;

	assert_int_equal(proc_maps_read(pid, &maps), 0);
	for (size_t i = 0; i < maps.count; i++)
		if (maps.maps[i].perms[2] == 'x' && maps.maps[i].path[0] == '/')
			pc = maps.maps[i].start + 16;
	proc_maps_free(&maps);
	return pc;
}

/* The file walks stopped in for want of its table is built before the files queued ahead of it. */
static void test_wanted_file_built_first(void **state)
{
	static struct unwind_proc proc;
	struct ordered_ops *ordered = calloc(1, sizeof(*ordered));
	struct unwind_cache *cache = new_background_cache(ordered);
	uint64_t wanted_pc = code_in_last_file(getpid());
	size_t built_before, position;
	const struct unwind_mapping *wanted;
	pid_t pids[16];

	(void)state;
	assert_int_equal(unwind_cache_map_proc(cache, getpid(), &proc), 0);
	unwind_cache_want_pc(cache, getpid(), wanted_pc);
	/* What the builder had taken before it was told may come first: at most one in progress. */
	unwind_cache_poll(cache, pids, 16);
	built_before = ordered->placed;
	wait_until_built(cache);
	assert_int_equal(unwind_cache_map_proc(cache, getpid(), &proc), 0);
	wanted = mapping_at(&proc, wanted_pc);
	assert_non_null(wanted);
	assert_true(wanted->table_id < UNWIND_MAX_TABLES);
	for (position = 0; position < ordered->placed && ordered->order[position] != wanted->table_id; position++)
		;
	print_message("the wanted file was placed %zu of %zu (%zu built before it was wanted)\n", position + 1,
		      ordered->placed, built_before);
	assert_true(position < ordered->placed);
	if (built_before + 2 >= ordered->placed)
		print_message("every file was built before it was wanted: the order is not checked\n");
	else
		assert_true(position <= built_before + 1);
	unwind_cache_forget_proc(cache, getpid());
	unwind_cache_free(cache);
	free(ordered);
}

/* Code in the first executable mapping of pid whose path holds name; 0 if none. */
static uint64_t code_in_file_named(pid_t pid, const char *name)
{
	struct proc_maps maps;
	uint64_t pc = 0;

	if (proc_maps_read(pid, &maps))
		return 0;
	for (size_t i = 0; i < maps.count && !pc; i++)
		if (maps.maps[i].perms[2] == 'x' && strstr(maps.maps[i].path, name))
			pc = maps.maps[i].start + 16;
	proc_maps_free(&maps);
	return pc;
}

/*
 * Processes take turns: a process whose walks wait for many files (this one, all of its own) does
 * not have them all built before the one file a process sampled later waits for (a sleep, started
 * after): that file comes in the later process's first turn, right after the busy one's first.
 */
static void test_new_process_file_in_its_first_turn(void **state)
{
	static struct unwind_proc proc;
	struct ordered_ops *ordered = calloc(1, sizeof(*ordered));
	struct unwind_cache *cache = new_background_cache(ordered);
	char *argv[] = { "sleep", "30", NULL };
	size_t built_before, position, busy_files = 0;
	const struct unwind_mapping *mapping;
	struct proc_maps maps;
	uint64_t sleep_pc = 0;
	pid_t pids[16], child;

	(void)state;
	child = test_spawn(argv, NULL, NULL);
	assert_true(child > 0);
	/* Until it has exec'd: bounded, and not a timing assertion (it fails only if sleep never runs). */
	for (int i = 0; i < 3000 && !sleep_pc; i++) {
		sleep_pc = code_in_file_named(child, "/sleep");
		if (!sleep_pc)
			usleep(1000);
	}
	assert_true(sleep_pc != 0);
	assert_int_equal(unwind_cache_map_proc(cache, getpid(), &proc), 0);
	assert_int_equal(unwind_cache_map_proc(cache, child, &proc), 0);
	/* Every file of this process is waited for, in maps order, before the sleep's. */
	assert_int_equal(proc_maps_read(getpid(), &maps), 0);
	for (size_t i = 0; i < maps.count; i++)
		if (maps.maps[i].perms[2] == 'x' && maps.maps[i].path[0] == '/') {
			unwind_cache_want_pc(cache, getpid(), maps.maps[i].start + 16);
			busy_files++;
		}
	proc_maps_free(&maps);
	unwind_cache_want_pc(cache, child, sleep_pc);
	unwind_cache_poll(cache, pids, 16);
	built_before = ordered->placed;
	wait_until_built(cache);
	assert_int_equal(unwind_cache_map_proc(cache, child, &proc), 0);
	mapping = mapping_at(&proc, sleep_pc);
	assert_non_null(mapping);
	assert_true(mapping->table_id < UNWIND_MAX_TABLES);
	for (position = 0; position < ordered->placed && ordered->order[position] != mapping->table_id; position++)
		;
	print_message("the sleep's file was placed %zu of %zu (%zu built before it was wanted, %zu files waited for "
		      "by the busy process)\n",
		      position + 1, ordered->placed, built_before, busy_files);
	assert_true(position < ordered->placed);
	if (built_before + 3 >= ordered->placed)
		print_message("nearly every file was built before it was wanted: the order is not checked\n");
	else
		assert_true(position <= built_before + 2); /* one in progress, the busy one's first turn */
	kill(child, SIGKILL);
	test_wait_status(child);
	unwind_cache_forget_proc(cache, child);
	unwind_cache_forget_proc(cache, getpid());
	unwind_cache_free(cache);
	free(ordered);
}

/* A file built before any process maps it (a command about to be launched) serves the first that does. */
static void test_prebuilt_file_serves_a_later_process(void **state)
{
	static struct unwind_proc proc;
	struct ordered_ops *ordered = calloc(1, sizeof(*ordered));
	struct unwind_cache *cache = new_background_cache(ordered);
	const struct unwind_mapping *libz;
	struct unwind_cache_stats stats;
	char path[4096];
	Dl_info info;
	int fd;

	(void)state;
	assert_true(dladdr((void *)(uintptr_t)deflate, &info) != 0);
	assert_non_null(realpath(info.dli_fname, path));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(unwind_cache_prebuild_file(cache, fd), 0);
	close(fd);
	assert_true(unwind_cache_building(cache));
	wait_until_built(cache);
	assert_int_equal(ordered->placed, 1);
	unwind_cache_stats(cache, &stats);
	assert_int_equal(stats.idle_files, 1);
	assert_int_equal(unwind_cache_map_proc(cache, getpid(), &proc), 0);
	libz = mapping_at(&proc, (uint64_t)(uintptr_t)deflate + 16);
	assert_non_null(libz);
	assert_int_equal(libz->table_id, ordered->order[0]);
	unwind_cache_stats(cache, &stats);
	assert_int_equal(stats.idle_reused, 1);
	/* Not an ELF file: refused, nothing queued. */
	fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	assert_int_equal(unwind_cache_prebuild_file(cache, fd), -ENOEXEC);
	close(fd);
	wait_until_built(cache);
	unwind_cache_forget_proc(cache, getpid());
	unwind_cache_free(cache);
	free(ordered);
}

/* ---- many distinct files ---- */

#define MANY_FILE_PROCS 8
#define MANY_FILES_EACH 250

static size_t open_descriptors(void)
{
	size_t count = 0;
	DIR *dir = opendir("/proc/self/fd");
	struct dirent *entry;

	assert_non_null(dir);
	while ((entry = readdir(dir)))
		count += entry->d_name[0] != '.';
	closedir(dir);
	return count;
}

/* A process of nobody's that maps each of the count copies of library (from first) executable. */
static pid_t spawn_mapper_as_nobody(const char *dir, size_t first, size_t count)
{
	const struct test_library_copies copies = { dir, first, count };

	return test_fork_as_nobody(test_map_library_copies, &copies);
}

/* dir (made here) holds count copies of one tiny ELF with no CFI, lib0.so ... */
static void write_tiny_copies(const char *dir, size_t count)
{
	char library[PATH_MAX], copy[PATH_MAX], err[4096];
	char *build[] = { "cc", "-shared", "-nostdlib", "-Wl,--build-id=none", "-o", library, "-x", "c",
			  "/dev/null", NULL };
	size_t len;
	uint8_t *image;

	assert_int_equal(mkdir(dir, 0755), 0);
	FORMAT(library, "%s/tiny.so", dir);
	if (run_capture(build, err, sizeof(err)) != 0)
		fail_msg("building %s: %s", library, err);
	image = read_whole_file(library, &len);
	assert_non_null(image);
	for (size_t i = 0; i < count; i++) {
		FORMAT(copy, "%s/lib%zu.so", dir, i);
		assert_int_equal(write_whole_file(copy, image, len), 0);
		chmod(copy, 0644);
	}
	free(image);
	unlink(library);
}

static void remove_tiny_copies(const char *dir, size_t count)
{
	char copy[PATH_MAX];

	for (size_t i = 0; i < count; i++) {
		FORMAT(copy, "%s/lib%zu.so", dir, i);
		unlink(copy);
	}
	rmdir(dir);
}

/*
 * Processes of nobody's mapping 2,000 distinct tiny ELF files: the profiler holds a
 * bounded number of descriptors (each queued build holds one), whatever they map.
 */
static void test_many_files_bounded_descriptors(void **state)
{
	static struct unwind_proc proc;
	struct ordered_ops *ordered = calloc(1, sizeof(*ordered));
	struct unwind_cache *cache = new_background_cache(ordered);
	char dir[64];
	size_t before = open_descriptors(), peak = 0;
	struct unwind_cache_stats stats;
	pid_t pids[MANY_FILE_PROCS];

	(void)state;
	FORMAT(dir, "/tmp/pybpfprof-many-files.%d", (int)getpid());
	write_tiny_copies(dir, MANY_FILE_PROCS * MANY_FILES_EACH);
	for (size_t p = 0; p < MANY_FILE_PROCS; p++)
		pids[p] = spawn_mapper_as_nobody(dir, p * MANY_FILES_EACH, MANY_FILES_EACH);
	for (size_t p = 0; p < MANY_FILE_PROCS; p++) {
		size_t now;

		assert_int_equal(unwind_cache_map_proc(cache, pids[p], &proc), 0);
		now = open_descriptors();
		peak = now > peak ? now : peak;
	}
	unwind_cache_stats(cache, &stats);
	for (size_t p = 0; p < MANY_FILE_PROCS; p++) {
		unwind_cache_forget_proc(cache, pids[p]);
		end_child(pids[p]);
	}
	remove_tiny_copies(dir, MANY_FILE_PROCS * MANY_FILES_EACH);
	print_message("%zu descriptors at most beside %zu before; %zu files deferred\n", peak - before, before,
		      stats.builds_deferred);
	/* the queue's (unwind/unwind_cache.c) and the parser worker's socket and its spare */
	assert_true(peak <= before + 64 + 2);
	assert_true(stats.builds_deferred > 0);
	unwind_cache_free(cache);
	free(ordered);
}

/*
 * Files without a table that no process maps any more are remembered, so that a library
 * mapped again is not read again, but only the newest UNWIND_CACHE_IDLE_VERDICTS of them: a
 * host mapping new files all day (20,000 tiny ELFs in the soak's attack zoo) would otherwise
 * grow the cache, and every lookup over it, for the whole run.
 */
#define VERDICT_FILES (UNWIND_CACHE_IDLE_VERDICTS + 1500)
#define VERDICT_PROCS 120 /* each maps fewer files than the build queue holds: none deferred */

static void test_failed_files_remembered_within_a_bound(void **state)
{
	static struct unwind_proc proc;
	struct ordered_ops *ordered = calloc(1, sizeof(*ordered));
	struct unwind_cache *cache;
	char dir[64];
	const size_t each = (VERDICT_FILES + VERDICT_PROCS - 1) / VERDICT_PROCS;
	struct unwind_cache_stats stats;
	size_t failed = 0;

	(void)state;
	FORMAT(dir, "/tmp/pybpfprof-verdicts.%d", (int)getpid());
	write_tiny_copies(dir, VERDICT_PROCS * each);
	cache = new_background_cache(ordered);
	/* one process after another, each mapping files of its own, then gone */
	for (size_t p = 0; p < VERDICT_PROCS; p++) {
		pid_t pid = spawn_mapper_as_nobody(dir, p * each, each);

		assert_int_equal(unwind_cache_map_proc(cache, pid, &proc), 0);
		wait_until_built(cache);
		unwind_cache_forget_proc(cache, pid);
		end_child(pid);
	}
	unwind_cache_stats(cache, &stats);
	remove_tiny_copies(dir, VERDICT_PROCS * each);
	for (size_t cause = 0; cause < UNWIND_FAIL_COUNT; cause++)
		failed += stats.failures[cause];
	print_message("%zu files without a table: %zu remembered, %zu forgotten\n", failed, stats.idle_verdicts,
		      stats.verdicts_forgotten);
	assert_true(failed >= VERDICT_PROCS * each);
	assert_true(stats.idle_verdicts <= UNWIND_CACHE_IDLE_VERDICTS);
	assert_true(stats.verdicts_forgotten > 0);
	assert_true(stats.idle_verdicts + stats.verdicts_forgotten == failed);
	unwind_cache_free(cache);
	free(ordered);
}

/* Idle tables hold at most their limit of rows: past it the longest idle go (and give their
 * chunks back), counted; a process mapping a dropped file again gets it rebuilt. */
static void test_idle_tables_bounded(void **state)
{
	static struct unwind_proc proc;
	struct recorded_ops *recorded = calloc(1, sizeof(*recorded));
	struct unwind_cache *cache = new_cache(recorded, UNWIND_ROWS_DEFAULT);
	struct unwind_cache_stats stats;
	size_t built, limit, dropped;

	(void)state;
	assert_int_equal(unwind_cache_map_proc(cache, getpid(), &proc), 0);
	unwind_cache_stats(cache, &stats);
	built = stats.tables_built;
	assert_true(built >= 2);
	limit = stats.rows_used / 2;
	unwind_cache_set_idle_limit(cache, limit);
	unwind_cache_forget_proc(cache, getpid());
	unwind_cache_stats(cache, &stats);
	print_message("%zu tables of %zu rows: %zu idle (%zu rows, limit %zu), %zu dropped (%" PRIu64 " rows)\n",
		      built, stats.peak_rows_used, stats.idle_files, stats.idle_rows, limit, stats.idle_dropped,
		      stats.idle_dropped_rows);
	assert_true(stats.idle_rows <= limit);
	assert_true(stats.idle_dropped >= 1);
	assert_int_equal(stats.idle_dropped + stats.idle_files, built);
	assert_int_equal(recorded->releases, stats.idle_dropped);
	assert_int_equal(stats.rows_used, stats.idle_rows);
	dropped = stats.idle_dropped;
	/* none kept at all: every chunk goes back */
	unwind_cache_set_idle_limit(cache, 0);
	assert_int_equal(unwind_cache_map_proc(cache, getpid(), &proc), 0);
	unwind_cache_stats(cache, &stats);
	/* the dropped tables are built again, the idle ones reused */
	assert_int_equal(stats.tables_built, built + dropped);
	assert_true(mapping_at(&proc, (uint64_t)(uintptr_t)deflate + 16)->table_id < UNWIND_MAX_TABLES);
	unwind_cache_forget_proc(cache, getpid());
	unwind_cache_stats(cache, &stats);
	assert_int_equal(stats.idle_files, 0);
	assert_int_equal(stats.idle_rows, 0);
	assert_int_equal(stats.rows_used, 0);
	assert_int_equal(recorded->chunks_removed, recorded->chunks_added);
	unwind_cache_free(cache);
	free(recorded);
}

/*
 * A worker that overruns its time on a file (here a budget of 1 ms per file, for tables that
 * take some 5-15 ms of CPU to build) is killed: the file is bad for the run, counted, and the
 * next file gets a fresh worker; the cache goes on.
 */
static void test_overrun_costs_one_file(void **state)
{
	char pyenv_312[PATH_MAX];
	const char *candidates[] = { SID_CHROOT "/usr/bin/python3.15", pyenv_312, "/usr/bin/python3.11" };
	struct recorded_ops *recorded = calloc(1, sizeof(*recorded));
	struct unwind_cache *cache = new_cache(recorded, UNWIND_ROWS_DEFAULT);
	struct parser_client_options hurried = { .timeout_ms = 1 };
	struct unwind_cache_stats stats;
	size_t tried = 0;

	(void)state;
	FORMAT(pyenv_312, "%s/3.12.1/lib/libpython3.12.so.1.0", test_pyenv_versions());
	assert_int_equal(unwind_cache_set_parser_options(cache, &hurried), 0);
	for (size_t i = 0; i < ARRAY_SIZE(candidates); i++) {
		int fd = open(candidates[i], O_RDONLY | O_CLOEXEC);

		if (fd < 0)
			continue;
		assert_int_equal(unwind_cache_prebuild_file(cache, fd), 0);
		close(fd);
		tried++;
	}
	if (tried < 2)
		skip();
	unwind_cache_stats(cache, &stats);
	print_message("%zu files: %zu without a table for the worker, %" PRIu64 " overran, %" PRIu64 " worker starts\n",
		      tried, stats.failures[UNWIND_FAIL_WORKER], stats.parser.timeouts, stats.parser.worker_starts);
	assert_int_equal(stats.failures[UNWIND_FAIL_WORKER], tried);
	assert_int_equal(stats.parser.timeouts, tried);
	assert_int_equal(stats.parser.lost_files, tried);
	/* one worker per file: each lost one was replaced */
	assert_int_equal(stats.parser.worker_starts, tried);
	assert_int_equal(recorded->uploads, 0);
	unwind_cache_free(cache);
	free(recorded);
}

/* This process's peak resident memory (VmHWM), in KiB. */
static long peak_rss_kib(void)
{
	long kib = test_peak_rss_kib(getpid());

	assert_true(kib > 0);
	return kib;
}

/* Maps the file at path executable (two pages); 0 or -1. */
static int map_executable(const void *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	return fd < 0 || mmap(NULL, 8192, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0) == MAP_FAILED ? -1 : 0;
}

/* A process of nobody's that maps path executable, waiting to be killed. */
static pid_t map_as_nobody(const char *path)
{
	return test_fork_as_nobody(map_executable, path);
}

/*
 * A file nobody maps whose CFI inflates to 600 MiB costs that one file: the parser worker reads
 * it, not root, whose peak memory stays where it was; the process's libc (and then our own libz)
 * still get their tables, from a fresh worker if the bomb took the first one down.
 */
static void test_inflation_bomb_costs_one_file(void **state)
{
	static struct unwind_proc proc;
	struct recorded_ops *recorded = calloc(1, sizeof(*recorded));
	struct unwind_cache *cache = new_cache(recorded, UNWIND_ROWS_DEFAULT);
	struct unwind_cache_stats stats;
	const struct unwind_mapping *bomb, *libc;
	char dir[64], path[128], command[160];
	long before, after;
	size_t failed_files = 0;
	pid_t attacker;

	(void)state;
	test_make_sticky_dir(dir, sizeof(dir));
	FORMAT(path, "%s/bomb.so", dir);
	write_inflation_bomb(path);
	assert_int_equal(chown(path, 65534, 65534), 0);
	attacker = map_as_nobody(path);
	before = peak_rss_kib();
	assert_int_equal(unwind_cache_map_proc(cache, attacker, &proc), 0);
	bomb = mapping_at(&proc, code_in(attacker, "/bomb.so"));
	assert_non_null(bomb);
	assert_int_equal(bomb->table_id, UNWIND_TABLE_NONE);
	libc = mapping_at(&proc, code_in(attacker, "/libc.so"));
	assert_non_null(libc);
	assert_true(libc->table_id < UNWIND_MAX_TABLES);
	assert_int_equal(unwind_cache_map_proc(cache, getpid(), &proc), 0);
	assert_true(mapping_at(&proc, (uint64_t)(uintptr_t)deflate + 16)->table_id < UNWIND_MAX_TABLES);
	after = peak_rss_kib();
	unwind_cache_stats(cache, &stats);
	for (unsigned failure = 0; failure < UNWIND_FAIL_COUNT; failure++)
		failed_files += stats.failures[failure];
	print_message("peak RSS %ld KiB before, %ld KiB after; %zu file without a table (worker %zu); the worker: %"
		      PRIu64 " requests, %" PRIu64 " starts, %" PRIu64 " past its memory\n",
		      before, after, failed_files, stats.failures[UNWIND_FAIL_WORKER], stats.parser.requests,
		      stats.parser.worker_starts, stats.parser.out_of_memory);
	assert_true(after - before < 64 << 10);
	/* the bomb alone */
	assert_int_equal(failed_files, 1);
	unwind_cache_forget_proc(cache, getpid());
	unwind_cache_forget_proc(cache, attacker);
	end_child(attacker);
	unwind_cache_free(cache);
	free(recorded);
	FORMAT(command, "rm -rf %s", dir);
	assert_int_equal(system(command), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_maps_own_process),
		cmocka_unit_test(test_shared_file_one_table),
		cmocka_unit_test(test_idle_tables_make_room),
		cmocka_unit_test(test_budget_too_small),
		cmocka_unit_test(test_refresh_only_for_unknown_pcs),
		cmocka_unit_test(test_library_loaded_later),
		cmocka_unit_test(test_wanted_file_built_first),
		cmocka_unit_test(test_new_process_file_in_its_first_turn),
		cmocka_unit_test(test_prebuilt_file_serves_a_later_process),
		cmocka_unit_test(test_many_files_bounded_descriptors),
		cmocka_unit_test(test_idle_tables_bounded),
		cmocka_unit_test(test_inflation_bomb_costs_one_file),
		cmocka_unit_test(test_overrun_costs_one_file),
		cmocka_unit_test(test_failed_files_remembered_within_a_bound),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
