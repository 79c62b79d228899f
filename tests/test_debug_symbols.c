// SPDX-License-Identifier: MIT
/*
 * Names of a stripped library's static functions from where distributions keep them: its
 * MiniDebugInfo (.gnu_debugdata), its separate debug file by .gnu_debuglink or by build-id;
 * and none from a debug file that does not match, or from a hostile .gnu_debugdata.
 * Each test builds its library here with cc and binutils, loads it and names its pcs.
 */
#include "testlib.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "symbolize/symbolize_native.h"
#include "target/debug_file.h"
#include "target/elf_symbols.h"
#include "target/minidebuginfo.h"

/* A static function (hidden_loop) and an exported one; VARIANT changes the code (and so the build-id). */
static const char library_source[] =
	"#ifndef VARIANT\n#define VARIANT 3\n#endif\n"
	"static __attribute__((noinline)) unsigned long hidden_loop(unsigned long n)\n"
	"{ unsigned long total = 0; for (unsigned long i = 0; i < n; i++) total += (i * i) ^ (total >> VARIANT); return total; }\n"
	"void *hidden_loop_address(void) { return (void *)hidden_loop; }\n"
	"unsigned long call_hidden(unsigned long n) { return hidden_loop(n); }\n";

/* One library built in its own directory, loaded. */
struct test_library {
	char dir[PATH_MAX];
	char debug_dir[PATH_MAX + 16]; /* the test's /usr/lib/debug */
	void *handle;
	uint64_t hidden_loop;  /* the static function's start */
	uint64_t call_hidden;  /* the exported function's start */
};

/*
 * Builds lib.so from library_source in a fresh directory (cc's default --build-id), runs
 * steps there (sh; $DEBUG is the test's debug dir), then loads it.
 */
static void build_library(struct test_library *library, const char *steps)
{
	char source[PATH_MAX + 16], path[PATH_MAX + 16], command[8192];
	void *(*hidden_loop_address)(void);

	FORMAT(library->dir, "%s/lib.XXXXXX", test_tmpdir());
	assert_non_null(mkdtemp(library->dir));
	FORMAT(library->debug_dir, "%s/debug", library->dir);
	FORMAT(source, "%s/hidden.c", library->dir);
	assert_int_equal(write_whole_file(source, library_source, sizeof(library_source) - 1), 0);
	FORMAT(command,
	       "set -e; cd %s; mkdir -p debug; DEBUG=$PWD/debug; cc -shared -fPIC -O1 -o lib.so hidden.c; %s",
	       library->dir, steps);
	assert_int_equal(system(command), 0);
	FORMAT(path, "%s/lib.so", library->dir);
	library->handle = dlopen(path, RTLD_NOW);
	assert_non_null(library->handle);
	*(void **)&hidden_loop_address = dlsym(library->handle, "hidden_loop_address");
	assert_non_null(hidden_loop_address);
	library->hidden_loop = (uint64_t)(uintptr_t)hidden_loop_address();
	library->call_hidden = (uint64_t)(uintptr_t)dlsym(library->handle, "call_hidden");
	assert_true(library->call_hidden != 0);
}

static void unload_library(struct test_library *library)
{
	char command[PATH_MAX + 16];

	dlclose(library->handle);
	FORMAT(command, "rm -rf %s", library->dir);
	assert_int_equal(system(command), 0);
}

/* The symbol a fresh symbolizer (debug files under the library's debug dir) gives pc; NULL: none. */
static char *symbol_at(const struct test_library *library, uint64_t pc)
{
	struct symbolize_native *symbolizer = symbolize_native_new();
	struct symbolize_native_frame found;
	char *symbol;

	assert_non_null(symbolizer);
	symbolize_native_set_debug_dir(symbolizer, library->debug_dir);
	assert_int_equal(symbolize_native_lookup(symbolizer, getpid(), NULL, pc, &found), 1);
	assert_non_null(strstr(found.frame.file, "/lib.so"));
	symbol = found.symbol ? strdup(found.symbol) : NULL;
	symbolize_native_free(symbolizer);
	return symbol;
}

/* Builds a library with steps and checks what its static function is named (NULL: no symbol). */
static void check_static_function(const char *steps, const char *expected)
{
	struct test_library library;
	char *symbol;

	build_library(&library, steps);
	symbol = symbol_at(&library, library.hidden_loop + 1);
	print_message("static function: %s\n", symbol ? symbol : "(no symbol)");
	if (expected) {
		assert_non_null(symbol);
		assert_string_equal(symbol, expected);
	} else {
		assert_null(symbol);
	}
	free(symbol);
	/* the exported function keeps its .dynsym name whatever the debug data */
	symbol = symbol_at(&library, library.call_hidden + 1);
	assert_non_null(symbol);
	assert_string_equal(symbol, "call_hidden");
	free(symbol);
	unload_library(&library);
}

/* Fedora's MiniDebugInfo: the static functions' symbols in an xz'd ELF inside the stripped file. */
#define MAKE_MINIDEBUGINFO                                                                           \
	"objcopy --only-keep-debug lib.so full.debug; "                                             \
	"objcopy -S --remove-section .gdb_index --remove-section .comment --keep-symbol=hidden_loop " \
	"full.debug mini; xz -k mini; strip -s lib.so; "

static void test_minidebuginfo_names_a_static_function(void **state)
{
	(void)state;
	check_static_function(MAKE_MINIDEBUGINFO "objcopy --add-section .gnu_debugdata=mini.xz lib.so", "hidden_loop");
}

/* Stripped, with no debug data: no name (the frame is named by its offset). */
static void test_stripped_library_has_no_static_name(void **state)
{
	(void)state;
	check_static_function("strip -s lib.so", NULL);
}

/* A .gnu_debugdata that is not xz, cut short, or expands past the budget: the plain symbols stay. */
static void test_hostile_minidebuginfo_is_ignored(void **state)
{
	(void)state;
	check_static_function("strip -s lib.so; head -c 4096 /dev/urandom > junk; "
			      "objcopy --add-section .gnu_debugdata=junk lib.so",
			      NULL);
	check_static_function(MAKE_MINIDEBUGINFO "head -c $(( $(stat -c %s mini.xz) / 2 )) mini.xz > cut.xz; "
						 "objcopy --add-section .gnu_debugdata=cut.xz lib.so",
			      NULL);
	check_static_function("strip -s lib.so; head -c 80M /dev/zero | xz -0 -T1 > bomb.xz; "
			      "objcopy --add-section .gnu_debugdata=bomb.xz lib.so",
			      NULL);
	/* an xz'd file that is no ELF */
	check_static_function("strip -s lib.so; echo not an elf | xz > text.xz; "
			      "objcopy --add-section .gnu_debugdata=text.xz lib.so",
			      NULL);
}

/* The debug file objcopy --only-keep-debug makes, and the stripped library linked to it by name and CRC. */
#define MAKE_DEBUGLINK                                                                 \
	"objcopy --only-keep-debug lib.so lib.so.debug; strip -s lib.so; "            \
	"objcopy --add-gnu-debuglink=lib.so.debug lib.so; "

static void test_debuglink_beside_the_file(void **state)
{
	(void)state;
	check_static_function(MAKE_DEBUGLINK, "hidden_loop");
}

static void test_debuglink_in_dot_debug(void **state)
{
	(void)state;
	check_static_function(MAKE_DEBUGLINK "mkdir .debug; mv lib.so.debug .debug/", "hidden_loop");
}

static void test_debuglink_under_the_debug_dir(void **state)
{
	(void)state;
	check_static_function(MAKE_DEBUGLINK "mkdir -p \"$DEBUG$PWD\"; mv lib.so.debug \"$DEBUG$PWD/\"", "hidden_loop");
}

/* A debug file changed since the link was made (its CRC differs) is not trusted. */
static void test_debuglink_with_another_crc_is_not_used(void **state)
{
	(void)state;
	check_static_function(MAKE_DEBUGLINK "printf x >> lib.so.debug", NULL);
}

/* A .gnu_debuglink made by hand: name $1, NUL-padded to 4 bytes, the CRC32 of lib.so.debug (gzip's trailer holds it). */
#define MAKE_LINK_BY_HAND                                                                           \
	"objcopy --only-keep-debug lib.so lib.so.debug; strip -s lib.so; mkdir .debug; "            \
	"link() { printf '%s' \"$1\" > link; head -c $(( 4 - ${#1} % 4 )) /dev/zero >> link; "       \
	"gzip -c lib.so.debug | tail -c8 | head -c4 >> link; objcopy --add-section .gnu_debuglink=link lib.so; }; "

/* A debuglink name is a file name: one with a directory in it is refused (the same file by a plain name is used). */
static void test_debuglink_name_with_a_directory_is_refused(void **state)
{
	(void)state;
	check_static_function(MAKE_LINK_BY_HAND "link lib.so.debug", "hidden_loop");
	check_static_function(MAKE_LINK_BY_HAND "link .debug/../lib.so.debug", NULL);
}

/* Fedora's layout: $DEBUG/.build-id/xx/rest.debug, a link to the debug file. */
#define BUILD_ID_PATH                                                                              \
	"id=$(readelf -n lib.so | sed -n 's/.*Build ID: //p'); test -n \"$id\"; "                  \
	"mkdir -p \"$DEBUG/.build-id/$(echo $id | cut -c1-2)\"; "                                  \
	"entry=\"$DEBUG/.build-id/$(echo $id | cut -c1-2)/$(echo $id | cut -c3-).debug\"; "

static void test_build_id_debug_file(void **state)
{
	(void)state;
	check_static_function("objcopy --only-keep-debug lib.so lib.so.debug; strip -s lib.so; " BUILD_ID_PATH
			      "mkdir -p \"$DEBUG/usr/lib\"; mv lib.so.debug \"$DEBUG/usr/lib/\"; "
			      "ln -s ../../usr/lib/lib.so.debug \"$entry\"",
			      "hidden_loop");
	check_static_function("objcopy --only-keep-debug lib.so lib.so.debug; strip -s lib.so; " BUILD_ID_PATH
			      "mv lib.so.debug \"$entry\"",
			      "hidden_loop");
}

/* Another build's debug file at this build-id's path (its own build-id differs): not trusted. */
static void test_build_id_mismatch_is_not_used(void **state)
{
	(void)state;
	check_static_function("cc -shared -fPIC -O1 -DVARIANT=5 -o other.so hidden.c; "
			      "objcopy --only-keep-debug other.so other.debug; strip -s lib.so; " BUILD_ID_PATH
			      "mv other.debug \"$entry\"",
			      NULL);
}

/* A process chrooted into dir (we run as root), waiting to be killed; its root is dir once this returns. */
static pid_t spawn_chrooted(const char *dir)
{
	char root_link[64], root[PATH_MAX];
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		if (chroot(dir) || chdir("/"))
			_exit(1);
		for (;;)
			pause();
	}
	FORMAT(root_link, "/proc/%d/root", (int)pid);
	for (int tries = 0; tries < 500; tries++) {
		ssize_t len = readlink(root_link, root, sizeof(root) - 1);

		if (len > 0 && (root[len] = 0, strcmp(root, dir) == 0))
			return pid;
		usleep(2000);
	}
	fail_msg("the child did not chroot into %s", dir);
	return -1;
}

/* A target in a chroot: its debug file is found inside its root, through an absolute link that
 * only means the right file there. */
static void test_debug_file_in_the_target_root(void **state)
{
	struct test_library library;
	struct debug_file_place place = { .path_in_target = "/lib.so", .debug_dir = "/usr/lib/debug" };
	struct elf_file file, debug;
	char path[PATH_MAX + 16];
	pid_t pid;

	(void)state;
	build_library(&library, "objcopy --only-keep-debug lib.so lib.so.debug; strip -s lib.so; "
				"DEBUG=$PWD/usr/lib/debug; " BUILD_ID_PATH
				"mkdir -p usr/lib; mv lib.so.debug usr/lib/; ln -s /usr/lib/lib.so.debug \"$entry\"");
	FORMAT(path, "%s/lib.so", library.dir);
	assert_int_equal(elf_file_open(&file, path), 0);
	pid = spawn_chrooted(library.dir);
	place.pid = pid;
	assert_int_equal(debug_file_open(&file, &place, &debug), 0);
	print_message("debug file in the target's root: %s\n", debug.path);
	assert_true(elf_file_has_symtab(&debug));
	elf_file_close(&debug);
	/* our own root has no such debug file: not found without the target's root */
	place.pid = 0;
	assert_int_equal(debug_file_open(&file, &place, &debug), -ENOENT);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	elf_file_close(&file);
	unload_library(&library);
}

/* A target in a chroot whose root and ours both hold a debug file for its build: ours is used
 * (a container cannot rename the functions of a build the host has the debug file of). */
static void test_our_debug_file_before_the_target_roots(void **state)
{
	struct test_library library;
	struct debug_file_place place = { .path_in_target = "/lib.so" };
	struct elf_file file, debug;
	char path[PATH_MAX + 16], steps[4 * PATH_MAX];
	uint64_t addr;
	pid_t pid;

	(void)state;
	/* the host's tree at $DEBUG; the same path inside the chroot holds a renamed copy */
	FORMAT(steps, "objcopy --only-keep-debug lib.so lib.so.debug; strip -s lib.so; " BUILD_ID_PATH
		      "cp lib.so.debug \"$entry\"; mkdir -p \"$PWD$(dirname \"$entry\")\"; "
		      "objcopy --redefine-sym hidden_loop=renamed_loop lib.so.debug \"$PWD$entry\"");
	build_library(&library, steps);
	FORMAT(path, "%s/lib.so", library.dir);
	assert_int_equal(elf_file_open(&file, path), 0);
	pid = spawn_chrooted(library.dir);
	place.pid = pid;
	place.debug_dir = library.debug_dir;
	assert_int_equal(debug_file_open(&file, &place, &debug), 0);
	assert_int_equal(elf_file_symbol(&debug, "hidden_loop", &addr, NULL), 0);
	elf_file_close(&debug);
	/* without ours, the target's own (it matches the build-id: its names are the target's word) */
	FORMAT(steps, "rm -rf %s/.build-id", library.debug_dir);
	assert_int_equal(system(steps), 0);
	assert_int_equal(debug_file_open(&file, &place, &debug), 0);
	assert_int_equal(elf_file_symbol(&debug, "renamed_loop", &addr, NULL), 0);
	elf_file_close(&debug);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	elf_file_close(&file);
	unload_library(&library);
}

static bool names_function(const struct elf_symbols *symbols, const char *name)
{
	for (size_t i = 0; i < symbols->count; i++)
		if (strcmp(symbols->functions[i].name, name) == 0)
			return true;
	return false;
}

/* Whether the library's static function is named within a run-wide budget of debug bytes, which it uses up. */
static bool named_within(const struct test_library *library, uint64_t *bytes_left)
{
	char path[PATH_MAX + 16];
	struct debug_file_place place = { .pid = getpid(), .path_in_target = path, .debug_dir = library->debug_dir };
	struct elf_symbols symbols;
	struct elf_file file;
	bool named;

	FORMAT(path, "%s/lib.so", library->dir);
	assert_int_equal(elf_file_open(&file, path), 0);
	assert_int_equal(elf_symbols_read(&symbols, &file, &place, bytes_left), 0);
	named = names_function(&symbols, "hidden_loop");
	elf_symbols_free(&symbols);
	elf_file_close(&file);
	return named;
}

/* The build id of lib.so read from a copy in memory (libdw, as from its descriptor). */
static int build_id_in_memory(const struct test_library *library, uint8_t id[ELF_FILE_MAX_BUILD_ID], size_t *len)
{
	char path[PATH_MAX + 16];
	struct elf_file file;
	size_t image_len;
	uint8_t *image;
	int err;

	FORMAT(path, "%s/lib.so", library->dir);
	image = read_whole_file(path, &image_len);
	assert_non_null(image);
	assert_int_equal(elf_file_open_memory(&file, image, image_len, "lib.so"), 0);
	err = elf_file_build_id(&file, id, len);
	elf_file_close(&file);
	return err;
}

static void build_id_of_file(const struct test_library *library, uint8_t id[ELF_FILE_MAX_BUILD_ID], size_t *len)
{
	char path[PATH_MAX + 16];
	struct elf_file file;

	FORMAT(path, "%s/lib.so", library->dir);
	assert_int_equal(elf_file_open(&file, path), 0);
	assert_int_equal(elf_file_build_id(&file, id, len), 0);
	elf_file_close(&file);
}

/* A file in memory (a MiniDebugInfo image) and on disk give the same build id (readelf's). */
static void test_build_id_in_memory_and_on_disk_agree(void **state)
{
	uint8_t in_memory[ELF_FILE_MAX_BUILD_ID], on_disk[ELF_FILE_MAX_BUILD_ID];
	size_t in_memory_len = 0, on_disk_len = 0;
	struct test_library library;

	(void)state;
	build_library(&library, "");
	assert_int_equal(build_id_in_memory(&library, in_memory, &in_memory_len), 0);
	build_id_of_file(&library, on_disk, &on_disk_len);
	assert_int_equal(in_memory_len, 20); /* cc's default: SHA-1 */
	assert_int_equal(on_disk_len, in_memory_len);
	assert_memory_equal(in_memory, on_disk, on_disk_len);
	unload_library(&library);
}

/* Notes past the budget are not fetched, from a file in memory or on disk (libdw would keep a
 * copy of each): no build id from it, which only costs the build-id debug-file lookup. */
static void test_build_id_in_memory_within_the_notes_budget(void **state)
{
	char path[PATH_MAX + 16];
	struct elf_file file;
	uint8_t id[ELF_FILE_MAX_BUILD_ID];
	size_t len = 0;
	struct test_library library;

	(void)state;
	build_library(&library, "head -c 5000000 /dev/zero > big; objcopy --add-section .note.big=big lib.so; "
				"readelf -S -W lib.so | grep -q '.note.big *NOTE'");
	assert_int_equal(build_id_in_memory(&library, id, &len), -ENOENT);
	FORMAT(path, "%s/lib.so", library.dir);
	assert_int_equal(elf_file_open(&file, path), 0);
	assert_int_equal(elf_file_build_id(&file, id, &len), -ENOENT);
	elf_file_close(&file);
	unload_library(&library);
}

/* The debuglink objcopy wrote: its name and the debug file's CRC32. */
static void test_debuglink_identity_is_objcopys(void **state)
{
	char path[PATH_MAX + 16];
	struct debug_identity identity;
	struct test_library library;
	struct elf_file file;
	uint32_t crc = 0;
	int fd;

	(void)state;
	build_library(&library, MAKE_DEBUGLINK);
	FORMAT(path, "%s/lib.so.debug", library.dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(debug_file_crc32(fd, ELF_FILE_MAX_BYTES, &crc), 0);
	close(fd);
	FORMAT(path, "%s/lib.so", library.dir);
	assert_int_equal(elf_file_open(&file, path), 0);
	assert_int_equal(debug_file_identity(&file, &identity), 0);
	assert_true(identity.has_link);
	assert_string_equal(identity.link_name, "lib.so.debug");
	assert_int_equal(identity.link_crc, crc);
	elf_file_close(&file);
	unload_library(&library);
}

/* Checking a debuglink (its CRC32 reads the debug file whole) and expanding MiniDebugInfo use
 * up one run-wide budget; past it, a file keeps its plain symbols. */
static void test_run_wide_debug_budget(void **state)
{
	struct test_library library;
	uint64_t bytes_left;

	(void)state;
	build_library(&library, MAKE_DEBUGLINK);
	bytes_left = 100;
	assert_false(named_within(&library, &bytes_left));
	bytes_left = 1 << 30;
	assert_true(named_within(&library, &bytes_left));
	assert_true(bytes_left < 1 << 30);
	unload_library(&library);

	build_library(&library, MAKE_MINIDEBUGINFO "objcopy --add-section .gnu_debugdata=mini.xz lib.so");
	bytes_left = 100;
	assert_false(named_within(&library, &bytes_left));
	assert_int_equal(bytes_left, 0);
	bytes_left = 1 << 30;
	assert_true(named_within(&library, &bytes_left));
	assert_true(bytes_left < 1 << 30);
	unload_library(&library);
}

/* The decoder itself: its output budget, garbage, a cut stream. */
static void test_decompress_budgets(void **state)
{
	char dir[PATH_MAX], command[3 * PATH_MAX], path[PATH_MAX + 16];
	uint8_t *compressed;
	size_t compressed_len, out_len;
	void *out = NULL;

	(void)state;
	FORMAT(dir, "%s/xz", test_tmpdir());
	FORMAT(command, "mkdir -p %s && head -c 1000000 /dev/zero | xz > %s/zeros.xz", dir, dir);
	assert_int_equal(system(command), 0);
	FORMAT(path, "%s/zeros.xz", dir);
	compressed = read_whole_file(path, &compressed_len);
	assert_non_null(compressed);

	assert_int_equal(minidebuginfo_decompress(compressed, compressed_len, 1000000, &out, &out_len), 0);
	assert_int_equal(out_len, 1000000);
	assert_true(((uint8_t *)out)[999999] == 0);
	free(out);
	assert_int_equal(minidebuginfo_decompress(compressed, compressed_len, 999999, &out, &out_len), -E2BIG);
	assert_int_equal(minidebuginfo_decompress(compressed, compressed_len / 2, 1000000, &out, &out_len), -EBADMSG);
	assert_int_equal(minidebuginfo_decompress("not xz at all", 13, 1000000, &out, &out_len), -EBADMSG);
	assert_int_equal(minidebuginfo_decompress(compressed, 0, 1000000, &out, &out_len), -EBADMSG);
	free(compressed);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_minidebuginfo_names_a_static_function),
		cmocka_unit_test(test_stripped_library_has_no_static_name),
		cmocka_unit_test(test_hostile_minidebuginfo_is_ignored),
		cmocka_unit_test(test_debuglink_beside_the_file),
		cmocka_unit_test(test_debuglink_in_dot_debug),
		cmocka_unit_test(test_debuglink_under_the_debug_dir),
		cmocka_unit_test(test_debuglink_with_another_crc_is_not_used),
		cmocka_unit_test(test_debuglink_name_with_a_directory_is_refused),
		cmocka_unit_test(test_build_id_debug_file),
		cmocka_unit_test(test_build_id_mismatch_is_not_used),
		cmocka_unit_test(test_debug_file_in_the_target_root),
		cmocka_unit_test(test_our_debug_file_before_the_target_roots),
		cmocka_unit_test(test_build_id_in_memory_and_on_disk_agree),
		cmocka_unit_test(test_build_id_in_memory_within_the_notes_budget),
		cmocka_unit_test(test_debuglink_identity_is_objcopys),
		cmocka_unit_test(test_run_wide_debug_budget),
		cmocka_unit_test(test_decompress_budgets),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
