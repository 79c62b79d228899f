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

/* Fedora's MiniDebugInfo: the static functions' symbols in an xz'd ELF inside the stripped file. */
#define MAKE_MINIDEBUGINFO                                                                           \
	"objcopy --only-keep-debug lib.so full.debug; "                                             \
	"objcopy -S --remove-section .gdb_index --remove-section .comment --keep-symbol=hidden_loop " \
	"full.debug mini; xz -k mini; strip -s lib.so; "

/* The debug file objcopy --only-keep-debug makes, and the stripped library linked to it by name and CRC. */
#define MAKE_DEBUGLINK                                                                 \
	"objcopy --only-keep-debug lib.so lib.so.debug; strip -s lib.so; "            \
	"objcopy --add-gnu-debuglink=lib.so.debug lib.so; "

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
		cmocka_unit_test(test_build_id_in_memory_and_on_disk_agree),
		cmocka_unit_test(test_build_id_in_memory_within_the_notes_budget),
		cmocka_unit_test(test_debuglink_identity_is_objcopys),
		cmocka_unit_test(test_run_wide_debug_budget),
		cmocka_unit_test(test_decompress_budgets),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
