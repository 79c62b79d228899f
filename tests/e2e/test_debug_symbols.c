// SPDX-License-Identifier: MIT
/*
 * Names of a stripped library's static functions from where distributions keep them: its
 * MiniDebugInfo (.gnu_debugdata), its separate debug file by .gnu_debuglink or by build-id;
 * and none from a debug file that does not match, or from a hostile .gnu_debugdata.
 * Each test builds its library here with cc and binutils, loads it and names its pcs.
 */
#include "debug_library.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "symbolize/symbolize_native.h"
#include "elf/debug_file.h"
#include "elf/elf_symbols.h"
#include "elf/minidebuginfo.h"

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
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
