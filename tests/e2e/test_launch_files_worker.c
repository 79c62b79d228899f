// SPDX-License-Identifier: MIT
/* proc/launch_files through the parser worker (root: its sandbox): a command's libraries are
 * found, and a hostile command (an attacker as nobody) has none of its bytes read by root. */
#include "testlib.h"

#include <elf.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc/launch_files.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_name_on_path),
		cmocka_unit_test(test_hostile_executable_is_not_read_by_root),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
