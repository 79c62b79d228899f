// SPDX-License-Identifier: MIT
/* target/launch_files: the files a command maps before its first instruction, found as exec and ld.so find them. */
#include "testlib.h"

#include <elf.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "parser/parser_protocol.h"
#include "target/launch_files.h"

#define PYENV_312 "/root/.pyenv/versions/3.12.1/bin/python3.12"

static char paths[LAUNCH_FILES_MAX][PATH_MAX];

static bool found(size_t count, const char *part)
{
	for (size_t i = 0; i < count; i++)
		if (strstr(paths[i], part))
			return true;
	return false;
}

/* A name on PATH is the file execvp runs; the libraries it names come after it. */
static void test_name_on_path(void **state)
{
	char *argv[] = { "sh", "-c", "true", NULL };
	char *old = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
	char real[PATH_MAX];
	size_t count;

	(void)state;
	setenv("PATH", "/nonexistent:/usr/bin:/bin", 1);
	count = launch_files_find(argv, paths, LAUNCH_FILES_MAX);
	assert_true(count >= 2);
	assert_string_equal(paths[0], "/usr/bin/sh");
	assert_true(found(count, "/libc.so.6"));
	for (size_t i = 1; i < count; i++)
		assert_non_null(realpath(paths[i], real));
	if (old)
		setenv("PATH", old, 1);
	free(old);
}

/* A library found through the executable's RUNPATH: pyenv's shared libpython. */
static void test_runpath(void **state)
{
	char *argv[] = { PYENV_312, NULL };
	size_t count;

	(void)state;
	if (!file_exists(PYENV_312)) {
		print_message("%s is absent; skipped\n", PYENV_312);
		return;
	}
	count = launch_files_find(argv, paths, LAUNCH_FILES_MAX);
	assert_string_equal(paths[0], PYENV_312);
	assert_true(found(count, "/root/.pyenv/versions/3.12.1/lib/libpython3.12.so"));
	assert_true(found(count, "/libc.so.6"));
}

/* A #! script is its interpreter; `#!/usr/bin/env NAME` is NAME on PATH. */
static void test_scripts(void **state)
{
	char script[PATH_MAX], chained[PATH_MAX];
	char *argv[] = { chained, NULL };
	size_t count;

	(void)state;
	FORMAT(script, "%s/launch-files-%d.sh", test_tmpdir(), (int)getpid());
	FORMAT(chained, "%s/launch-files-%d-env", test_tmpdir(), (int)getpid());
	assert_int_equal(write_whole_file(script, "#!/bin/sh -e\necho hi\n", 21), 0);
	assert_int_equal(chmod(script, 0755), 0);
	argv[0] = script;
	count = launch_files_find(argv, paths, LAUNCH_FILES_MAX);
	assert_true(count >= 1);
	assert_string_equal(paths[0], "/bin/sh");
	assert_int_equal(write_whole_file(chained, "#!/usr/bin/env sh\n", 18), 0);
	assert_int_equal(chmod(chained, 0755), 0);
	argv[0] = chained;
	setenv("PATH", "/usr/bin:/bin", 1);
	count = launch_files_find(argv, paths, LAUNCH_FILES_MAX);
	assert_true(count >= 1);
	assert_string_equal(paths[0], "/usr/bin/sh");
	unlink(script);
	unlink(chained);
}

/* What exec would not run gives nothing: the command fails as it would have. */
static void test_not_found(void **state)
{
	char *missing[] = { "pybpfprof-no-such-command", NULL };
	char *empty[] = { "", NULL };

	(void)state;
	assert_int_equal(launch_files_find(missing, paths, LAUNCH_FILES_MAX), 0);
	assert_int_equal(launch_files_find(empty, paths, LAUNCH_FILES_MAX), 0);
	assert_int_equal(launch_files_find(missing, paths, 0), 0);
}

/* The peak RSS of this process so far, in KiB. */
static long peak_rss_kib(void)
{
	struct rusage usage;

	assert_int_equal(getrusage(RUSAGE_SELF, &usage), 0);
	return usage.ru_maxrss;
}

/* An ELF header and two section headers: a dynamic section that spans all of a 512 MiB file. */
static void write_sparse_executable_template(const char *path)
{
	struct {
		Elf64_Ehdr header;
		Elf64_Shdr sections[2];
	} image = { .header = { .e_type = ET_EXEC, .e_machine = EM_X86_64, .e_version = EV_CURRENT,
				.e_ehsize = sizeof(Elf64_Ehdr), .e_shoff = sizeof(Elf64_Ehdr),
				.e_shentsize = sizeof(Elf64_Shdr), .e_shnum = 2 } };
	FILE *file = fopen(path, "w");

	memcpy(image.header.e_ident, ELFMAG, SELFMAG);
	image.header.e_ident[EI_CLASS] = ELFCLASS64;
	image.header.e_ident[EI_DATA] = ELFDATA2LSB;
	image.header.e_ident[EI_VERSION] = EV_CURRENT;
	image.sections[1] = (Elf64_Shdr){ .sh_type = SHT_DYNAMIC, .sh_size = (uint64_t)512 << 20,
					  .sh_entsize = sizeof(Elf64_Dyn) };
	assert_non_null(file);
	assert_int_equal(fwrite(&image, sizeof(image), 1, file), 1);
	assert_int_equal(fclose(file), 0);
}

/* As nobody: a command that is nobody's sparse 512 MiB file whose dynamic section spans it.
 * Root reads none of it (the parser worker does, within its own memory limit): its RSS stays
 * where it was, and the command is still found. */
static void test_hostile_executable_is_not_read_by_root(void **state)
{
	char dir[64], template[PATH_MAX], command[PATH_MAX * 4 + 128], executable[PATH_MAX];
	char *argv[] = { executable, NULL };
	long before;
	size_t count;

	(void)state;
	test_make_sticky_dir(dir, sizeof(dir));
	snprintf(template, sizeof(template), "%s/template", dir);
	write_sparse_executable_template(template);
	assert_int_equal(chmod(template, 0644), 0);
	snprintf(executable, sizeof(executable), "%s/sparse-command", dir);
	snprintf(command, sizeof(command), "cp '%s' '%s' && truncate -s 512M '%s' && chmod 755 '%s'", template,
		 executable, executable, executable);
	assert_int_equal(test_run_as_nobody(command), 0);
	before = peak_rss_kib();
	count = launch_files_find(argv, paths, LAUNCH_FILES_MAX);
	print_message("peak RSS %ld KiB before, %ld KiB after\n", before, peak_rss_kib());
	assert_int_equal(count, 1);
	assert_string_equal(paths[0], executable);
	assert_true(peak_rss_kib() - before < 64 * 1024);
	unlink(executable);
	unlink(template);
	rmdir(dir);
}

/* What a lying worker might answer about an executable's libraries: refused whole. */
static void test_lying_dynamic_names_are_refused(void **state)
{
	struct parser_dynamic_names names;
	struct {
		struct parser_dynamic_head head;
		char names[16];
	} answer;

	(void)state;
	answer.head = (struct parser_dynamic_head){ .needed_count = 1, .names_len = 6 };
	memcpy(answer.names, "\0\0libc", 6);
	/* no NUL at the end */
	assert_int_equal(parser_dynamic_check(&answer, sizeof(answer.head) + 6, &names), -EBADMSG);
	memcpy(answer.names, "\0\0libc\0", 7 + 1);
	answer.head.names_len = 7;
	assert_int_equal(parser_dynamic_check(&answer, sizeof(answer.head) + 7, &names), 0);
	assert_string_equal(names.needed, "libc");
	/* a length that does not add up, a count that does not match the names, an empty name */
	assert_int_equal(parser_dynamic_check(&answer, sizeof(answer.head) + 6, &names), -EBADMSG);
	answer.head.needed_count = 2;
	assert_int_equal(parser_dynamic_check(&answer, sizeof(answer.head) + 7, &names), -EBADMSG);
	memcpy(answer.names, "\0\0\0", 3);
	answer.head = (struct parser_dynamic_head){ .needed_count = 1, .names_len = 3 };
	assert_int_equal(parser_dynamic_check(&answer, sizeof(answer.head) + 3, &names), -EBADMSG);
	answer.head = (struct parser_dynamic_head){ .needed_count = PARSER_MAX_NEEDED + 1, .names_len = 3 };
	assert_int_equal(parser_dynamic_check(&answer, sizeof(answer.head) + 3, &names), -EBADMSG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_name_on_path),
		cmocka_unit_test(test_runpath),
		cmocka_unit_test(test_scripts),
		cmocka_unit_test(test_not_found),
		cmocka_unit_test(test_hostile_executable_is_not_read_by_root),
		cmocka_unit_test(test_lying_dynamic_names_are_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
