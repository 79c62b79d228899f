// SPDX-License-Identifier: MIT
/*
 * The compact unwind tables as the parser worker builds them (root: the worker is sandboxed as
 * its own uid): the same rows as in process and as libdw's, row for row, for a program with
 * only .debug_frame, crafted CFI, pyenv's libpython 3.12 and every interpreter's files at hand.
 */
#include "unwind_fixtures.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <inttypes.h>
#include <stddef.h>
#include <sys/stat.h>

#include "elf/elf_file.h"
#include "worker/unwind_build.h"
#include "util/array.h"
#include "util/clock.h"

static void check_worker_table(const char *path);
/* Without .eh_frame, .debug_frame gives the same rules. */
static void test_debug_frame_when_no_eh_frame(void **state)
{
	struct unwind_table table;
	struct errbuf error;
	unsigned rsp_rows = 0, rbp_rows = 0;
	char path[512], after[1024];

	(void)state;
	snprintf(after, sizeof(after),
		 "&& objcopy --remove-section=.eh_frame --remove-section=.eh_frame_hdr %s/debug_frame_program",
		 test_tmpdir());
	compile_program(path, sizeof(path), "debug_frame_program",
			"-O2 -g -fomit-frame-pointer -fno-asynchronous-unwind-tables -fno-unwind-tables", after);
	assert_int_equal(build_table(path, &table, &error), 0);
	assert_int_equal(table.source, UNWIND_CFI_DEBUG_FRAME);
	check_function_against_readelf(path, &table, "pushes", &rsp_rows, &rbp_rows);
	check_function_against_readelf(path, &table, "framed", &rsp_rows, &rbp_rows);
	check_file_against_readelf(path, &table);
	unwind_table_free(&table);
	check_same_table(path);
	check_worker_table(path);
}

/* pyenv's CPython 3.12, found as tests/pythons/list-pythons.sh finds it: its shared libpython. */
static void test_libpython312(void **state)
{
	char pattern[512];
	glob_t found;

	(void)state;
	snprintf(pattern, sizeof(pattern), "%s/3.12*/lib/libpython3.12.so.1.0", test_pyenv_versions());
	if (glob(pattern, 0, NULL, &found) || !found.gl_pathc) {
		print_message("no pyenv CPython 3.12 with a shared libpython, skipped\n");
		skip();
	}
	check_real_file(found.gl_pathv[0], false);
	globfree(&found);
}

static bool is_elf_file(const char *path)
{
	struct stat st;
	char magic[4];
	int fd;
	bool elf;

	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return false;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	elf = read(fd, magic, sizeof(magic)) == sizeof(magic) && !memcmp(magic, "\177ELF", 4);
	close(fd);
	return elf;
}

struct path_list {
	char (*items)[PATH_MAX];
	size_t count;
	size_t capacity;
};

/* Each ELF file the pattern matches, once (symlinks resolved). */
static void add_matches(struct path_list *list, const char *pattern)
{
	glob_t found;

	if (glob(pattern, 0, NULL, &found))
		return;
	for (size_t i = 0; i < found.gl_pathc; i++) {
		char resolved[PATH_MAX];
		bool seen = false;

		if (!realpath(found.gl_pathv[i], resolved) || !is_elf_file(resolved))
			continue;
		for (size_t j = 0; j < list->count && !seen; j++)
			seen = !strcmp(list->items[j], resolved);
		if (seen)
			continue;
		assert_int_equal(ARRAY_RESERVE(list->items, list->capacity, list->count + 1), 0);
		snprintf(list->items[list->count++], PATH_MAX, "%s", resolved);
	}
	globfree(&found);
}

/* The table root receives from the parser worker (checked, then indexed by root) is the one
 * built in process, row for row, page for page. */
static void check_worker_table(const char *path)
{
	static struct parser_client *client;
	struct unwind_table here, there;
	struct errbuf here_error, there_error;
	int fd = open(path, O_RDONLY | O_CLOEXEC), here_err, there_err;

	assert_true(fd >= 0);
	if (!client)
		assert_int_equal(parser_client_new(&(struct parser_client_options){ 0 }, &client), 0);
	here_err = unwind_table_build(fd, &here, &here_error);
	there_err = unwind_table_from_worker(client, fd, &there, &there_error);
	close(fd);
	if (here_err != there_err)
		fail_msg("%s: in process: %s (%d), by the worker: %s (%d)", path, here_error.text, here_err,
			 there_error.text, there_err);
	assert_int_equal(here.count, there.count);
	if (here.count)
		assert_memory_equal(here.rows, there.rows, here.count * sizeof(*here.rows));
	assert_int_equal(here.page_count, there.page_count);
	assert_int_equal(here.page_base, there.page_base);
	if (here.page_count)
		assert_memory_equal(here.pages, there.pages, here.page_count * sizeof(*here.pages));
	assert_int_equal(here.source, there.source);
	unwind_table_free(&here);
	unwind_table_free(&there);
}

/* Every interpreter's files at hand, libc, libz and numpy: one pass gives libdw's table, row for row. */
static void test_one_pass_matches_libdw(void **state)
{
	const char *versions = test_pyenv_versions();
	static const char *const per_version[] = {
		"lib/libpython*.so*", "bin/python[23].[0-9]", "bin/python3.[0-9][0-9]",
		"lib/python*/site-packages/numpy/*core/_multiarray_umath*.so",
	};
	struct path_list files = { 0 };
	char pattern[PATH_MAX];
	size_t pyenv_files;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(per_version); i++) {
		snprintf(pattern, sizeof(pattern), "%s/*/%s", versions, per_version[i]);
		add_matches(&files, pattern);
	}
	pyenv_files = files.count;
	if (access(SID_CHROOT "/usr/bin/python3.15", R_OK))
		print_message("the sid chroot's python3.14/3.15 not checked: %s is absent\n", SID_CHROOT);
	add_matches(&files, SID_CHROOT "/usr/bin/python3.1[45]");
	add_matches(&files, SID_CHROOT "/usr/lib/x86_64-linux-gnu/libpython3.1[45]*.so*");
	add_matches(&files, "/usr/bin/python3.11");
	add_matches(&files, "/lib/x86_64-linux-gnu/libc.so.6");
	add_matches(&files, "/lib/x86_64-linux-gnu/libz.so.1");
	add_matches(&files, "/usr/lib/python3/dist-packages/numpy/core/_multiarray_umath*.so");
	print_message("%zu files, %zu of them from %s\n", files.count, pyenv_files, versions);
	assert_true(files.count >= 3); /* libc and libz at least */
	for (size_t i = 0; i < files.count; i++) {
		check_same_table(files.items[i]);
		check_worker_table(files.items[i]);
	}
	free(files.items);
}

/*
 * Functions whose CFI holds what compilers rarely emit, many written as raw
 * instructions (.cfi_escape): expressions, remembered states, registers
 * restored, saved in registers or as values, factored offsets, long
 * advances, a signal frame, another return column, an unknown opcode.
 * ld builds no .eh_frame_hdr for them (it does not follow every opcode):
 * libdw then finds each row's FDE by walking .eh_frame.
 */
static const char crafted_cfi[] =
	"\t.text\n"
	/* remember/restore state around an early return, then restore of rbp */
	"f_state:\n\t.cfi_startproc\n\tpushq %rbp\n\t.cfi_def_cfa_offset 16\n\t.cfi_offset %rbp, -16\n"
	"\tmovq %rsp, %rbp\n\t.cfi_def_cfa_register %rbp\n\tnop\n\t.cfi_remember_state\n"
	"\tpopq %rbp\n\t.cfi_restore %rbp\n\t.cfi_def_cfa %rsp, 8\n\tret\n\t.cfi_restore_state\n"
	"\t.skip 300, 0x90\n\t.cfi_escape 0x06, 0x06\n\tnop\n\t.cfi_same_value %rbp\n\t.skip 70000, 0x90\n"
	"\t.cfi_undefined %rip\n\tnop\n\tret\n\t.cfi_endproc\n"
	/* CFA expressions: one DW_OP_breg7 +16, GNU ld's PLT, then one libdw rejects after def_cfa_offset */
	"f_expressions:\n\t.cfi_startproc\n\tnop\n\t.cfi_escape 0x0f, 0x02, 0x77, 0x10\n\tnop\n"
	"\t.cfi_escape 0x0f, 0x0b, 0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22\n\tnop\n"
	"\t.cfi_escape 0x0f, 0x03, 0x76, 0x08, 0x06\n\tnop\n\t.cfi_def_cfa_offset 24\n\tnop\n"
	"\t.cfi_def_cfa %rbp, 16\n\tnop\n\t.cfi_escape 0x0f, 0x03, 0x92, 0x06, 0x20\n\tnop\n"
	"\t.cfi_escape 0x0e, 0x18\n\tnop\n\t.cfi_def_cfa %rsp, 8\n\tret\n\t.cfi_endproc\n"
	/* register rules: in a register, as a value, by expressions, factored and negative offsets */
	"f_registers:\n\t.cfi_startproc\n\tnop\n\t.cfi_register %rbp, %rbx\n\tnop\n\t.cfi_escape 0x14, 0x06, 0x02\n"
	"\tnop\n\t.cfi_escape 0x10, 0x06, 0x02, 0x91, 0x70\n\tnop\n\t.cfi_escape 0x16, 0x06, 0x02, 0x91, 0x70\n"
	"\tnop\n\t.cfi_escape 0x11, 0x06, 0x03\n\tnop\n\t.cfi_escape 0x2f, 0x06, 0x02\n\tnop\n"
	"\t.cfi_escape 0x05, 0x06, 0x03\n\tnop\n\t.cfi_escape 0x12, 0x07, 0x7e\n\tnop\n"
	"\t.cfi_escape 0x13, 0x7c\n\tnop\n\t.cfi_escape 0x2e, 0x10\n\tnop\n\t.cfi_escape 0x00\n"
	"\t.cfi_escape 0x90, 0x01\n\tnop\n\t.cfi_escape 0xd0\n\tnop\n\t.cfi_escape 0x10, 0x10, 0x00\n\tnop\n"
	"\t.cfi_escape 0x2d\n\tnop\n\t.cfi_undefined %rbp\n\tnop\n\t.cfi_escape 0x16, 0x10, 0x00\n\tnop\n"
	"\t.cfi_escape 0x10, 0x10, 0x02, 0x23, 0x08\n\tnop\n"
	"\t.cfi_escape 0x10, 0x10, 0x0b, 0x23, 0xf8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01\n\tnop\n"
	"\t.cfi_escape 0x10, 0x06, 0x0b, 0x23, 0xf0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01\n\tnop\n"
	"\t.cfi_def_cfa %rsp, 32\n\tnop\n\t.cfi_escape 0x10, 0x06, 0x01, 0x30\n\tnop\n\tret\n\t.cfi_endproc\n"
	/* a signal frame's CIE, and another return column's */
	"f_signal:\n\t.cfi_startproc\n\t.cfi_signal_frame\n\tnop\n\t.cfi_def_cfa_offset 16\n\tret\n\t.cfi_endproc\n"
	"f_column:\n\t.cfi_startproc\n\t.cfi_return_column %rbx\n\tnop\n\t.cfi_def_cfa_offset 16\n\tret\n"
	"\t.cfi_endproc\n"
	/* an opcode libdw does not know, after two good rows */
	"f_unknown:\n\t.cfi_startproc\n\tpushq %rbx\n\t.cfi_def_cfa_offset 16\n\tnop\n\t.cfi_escape 0x3f\n"
	"\tnop\n\t.cfi_def_cfa_offset 8\n\tret\n\t.cfi_endproc\n"
	/* restore_state with nothing remembered */
	"f_unbalanced:\n\t.cfi_startproc\n\tnop\n\t.cfi_def_cfa_offset 16\n\tnop\n\t.cfi_escape 0x0b\n"
	"\tnop\n\tret\n\t.cfi_endproc\n";

static void test_crafted_cfi_matches_libdw(void **state)
{
	struct unwind_table table;
	struct errbuf error;
	char path[512];

	(void)state;
	assemble_text(path, sizeof(path), "crafted_cfi", crafted_cfi);
	check_same_table(path);
	check_worker_table(path);
	assert_int_equal(build_table(path, &table, &error), 0);
	/* what the functions above were written to give */
	assert_true(table.stats.by_kind[UNWIND_ROW_CFA_RBP] > 0);
	assert_true(table.stats.by_kind[UNWIND_ROW_PLT] > 0);
	assert_true(table.stats.by_kind[UNWIND_ROW_ROOT] > 0);
	assert_true(table.stats.by_kind[UNWIND_ROW_UNSUPPORTED] > 0);
	print_message("%zu rows: %zu rsp, %zu rbp, %zu plt, %zu root, %zu unsupported\n", table.count,
		      table.stats.by_kind[UNWIND_ROW_CFA_RSP], table.stats.by_kind[UNWIND_ROW_CFA_RBP],
		      table.stats.by_kind[UNWIND_ROW_PLT], table.stats.by_kind[UNWIND_ROW_ROOT],
		      table.stats.by_kind[UNWIND_ROW_UNSUPPORTED]);
	unwind_table_free(&table);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_debug_frame_when_no_eh_frame),
		cmocka_unit_test(test_libpython312),
		cmocka_unit_test(test_one_pass_matches_libdw),
		cmocka_unit_test(test_crafted_cfi_matches_libdw),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
