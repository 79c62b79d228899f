// SPDX-License-Identifier: MIT
/*
 * Up to 3.11 an activation of the interpreter's evaluation function is what a sample's Python
 * frames are merged in place of; BPF does not mark them there (it does from 3.12). The
 * profiler knows them by the function's address, found when the runtime is discovered, and not
 * only by the name the file's symbol table gives each frame: a file whose table has no such
 * name (here a libpython whose .symtab keeps one symbol, its .dynsym whole), like one whose
 * table is still being read when its samples are written (a busy host), still has its Python
 * frames under their native callers (real BPF, root).
 *
 * The workload is tests/scripts/native_qsort_callback.py (Python -> ctypes -> libffi -> libc's
 * qsort -> Python), run with LD_LIBRARY_PATH naming the stripped copy of the interpreter's
 * libpython; its comparator's samples must show caller;ffi_call;qsort;comparator in order.
 */
#include "sample_frames.h"
#include "testlib.h"

#include "elf/elf_file.h"
#include "formats/format_registry.h"
#include "profile/profile.h"
#include "util/array.h"

#define MAX_PYTHONS 32
#define SCRIPT "native_qsort_callback.py"
#define SCRIPT_CPU_SECONDS "2" /* the script's own CPU time: some 2000 samples however loaded */

/* pyenv's shared builds before 3.12, whose activations only the merge tells apart. */
static const char *const labels[] = { "2.7", "3.8", "3.10" };

static struct test_python pythons[MAX_PYTHONS];
static size_t python_count;

/* The interpreter's libpython (pyenv: PREFIX/lib next to PREFIX/bin), NULL-free: false if none. */
static bool find_libpython(const struct test_python *python, char *path, size_t len)
{
	const char *bin = strstr(python->command, "/bin/");

	if (!bin || strcmp(python->kind, "pyenv") != 0)
		return false;
	if ((size_t)snprintf(path, len, "%.*s/lib/libpython%s.so.1.0", (int)(bin - python->command), python->command,
			     python->label) >= len)
		return false;
	return file_exists(path);
}

/* Whether the ELF at path defines name in the table asked for. */
static bool defines(const char *path, enum elf_symbol_table table, const char *name)
{
	struct elf_symbol_query query = { .name = name };
	struct elf_file elf;

	assert_int_equal(elf_file_open(&elf, path), 0);
	elf_file_lookup_symbols(&elf, table, &query, 1);
	elf_file_close(&elf);
	return query.found;
}

/*
 * A copy of the interpreter's libpython in dir whose .symtab keeps Py_Main alone of its
 * functions: every other one is named by its offset in a profile, the evaluation function
 * included, while .dynsym, which the loader and discovery read, is whole. (2.7's runtime is
 * found by static variables, kept too.)
 */
static void strip_libpython(const struct test_python *python, const char *libpython, char *dir, size_t len)
{
	const char *eval_function = python->label[0] == '2' ? "PyEval_EvalFrameEx" : "_PyEval_EvalFrameDefault";
	char copy[PATH_MAX + 64], command[PATH_MAX * 3 + 128], out[4096];

	if ((size_t)snprintf(dir, len, "%s/eval-range-%s", test_tmpdir(), python->label) >= len)
		fail_msg("text too long for the copy's directory");
	FORMAT(copy, "%s/%s", dir, strrchr(libpython, '/') + 1);
	FORMAT(command, "mkdir -p '%s' && strip --strip-all --keep-symbol=Py_Main --keep-symbol=interp_head "
	       "--keep-symbol=collecting -o '%s' '%s'", dir, copy, libpython);
	if (run_shell(command, out, sizeof(out)) != 0)
		fail_msg("%s: %s: %s", python->label, command, out);
	assert_false(defines(copy, ELF_SYMBOLS_STATIC, eval_function));
	assert_true(defines(copy, ELF_SYMBOLS_STATIC, "Py_Main"));
	assert_true(defines(copy, ELF_SYMBOLS_DYNAMIC, eval_function));
	/* the interpreter loads the copy (its RUNPATH, if any, comes after LD_LIBRARY_PATH) */
	FORMAT(command, "LD_LIBRARY_PATH='%s' ldd %s", dir, python->command);
	assert_int_equal(run_shell(command, out, sizeof(out)), 0);
	if (!strstr(out, copy))
		fail_msg("%s: the interpreter would not load %s: %s", python->label, copy, out);
}

static void stripped_symtab(void **state)
{
	const struct test_python *python = test_wanted_python(state, pythons, python_count);
	char libpython[PATH_MAX], dir[PATH_MAX], mojo[PATH_MAX], command[PATH_MAX * 3], err[8192], failures[32];
	struct qsort_chain found = { 0 };
	size_t samples = 0;
	struct pf_reader *reader;
	struct pf_sample sample;
	unsigned long merge_failures;
	char *argv[32];
	int status, got;

	if (!find_libpython(python, libpython, sizeof(libpython))) {
		print_message("%s: no shared libpython next to %s; skipped\n", python->label, python->command);
		skip();
	}
	strip_libpython(python, libpython, dir, sizeof(dir));
	FORMAT(mojo, "%s/eval-range-%s.mojo", test_tmpdir(), python->label);
	FORMAT(command, "%s -o %s -- %s %s/tests/scripts/" SCRIPT " " SCRIPT_CPU_SECONDS, pybpfprof_binary(), mojo,
	       python->command, test_source_dir());
	split_command(command, argv, 32);
	setenv("LD_LIBRARY_PATH", dir, 1);
	status = run_capture(argv, err, sizeof(err));
	unsetenv("LD_LIBRARY_PATH");
	if (status != 0)
		fail_msg("%s: pybpfprof -- %s exited %d: %s", python->label, SCRIPT, status, err);
	reader = test_open_profile(mojo);
	for (; (got = pf_reader_next_sample(reader, &sample)) > 0; samples++)
		qsort_chain_note(&sample, &found);
	if (got < 0)
		fail_msg("%s: %s", mojo, pf_reader_error(reader));
	pf_reader_close(reader);
	test_profile_metadata(mojo, "native_merge_failures", failures, sizeof(failures));
	merge_failures = strtoul(failures, NULL, 10);
	print_message("%s, .symtab stripped: %zu of %zu comparator samples show caller;ffi_call;qsort;comparator; "
		      "%lu of %zu samples' merges disagreed\n",
		      python->label, found.whole_chain, found.compare_samples, merge_failures, samples);
	assert_true(found.compare_samples >= 200);
	/* As tests/e2e/test_record_native.c's native_qsort_callback asks of an interpreter with its
	 * names: the frames lost to a table built late (a busy host) are not this test's. */
	assert_true(found.whole_chain * 2 >= found.compare_samples);
	assert_true(merge_failures * 5 <= samples);
}

int main(void)
{
	static const struct test_per_python kinds[] = { { "stripped_symtab_", stripped_symtab } };

	python_count = test_pythons(pythons, MAX_PYTHONS);
	return test_run_per_python("test_native_eval_range", labels, ARRAY_SIZE(labels), kinds, ARRAY_SIZE(kinds));
}
