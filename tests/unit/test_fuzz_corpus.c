// SPDX-License-Identifier: MIT
/*
 * The fuzzing corpora as regression tests: every file of fuzz/corpus/<harness>/ (the seeds,
 * the crafted inputs that reach the readers' size budgets, and every input a fuzzer found a
 * bug with) through its harness once, under ASan, UBSan and LeakSanitizer (a finding aborts
 * the binary). `make fuzz` runs the same harnesses under libFuzzer (fuzz/README.md).
 */
#include "testlib.h"

#include <dirent.h>

#include "fuzz.h"

struct harness {
	const char *name; /* its corpus: fuzz/corpus/<name>/ */
	int (*run)(const uint8_t *data, size_t size);
};

/* The input in a buffer of exactly its size, so that the sanitizers see a read past its end. */
static uint8_t *read_input(const char *path, size_t *size)
{
	uint8_t *whole = read_whole_file(path, size);
	uint8_t *exact;

	assert_non_null(whole);
	exact = malloc(*size ? *size : 1);
	assert_non_null(exact);
	memcpy(exact, whole, *size);
	free(whole);
	return exact;
}

/* Runs every file of the harness's corpus; returns how many. */
static size_t run_corpus(const struct harness *harness)
{
	char dir[PATH_MAX], path[PATH_MAX + 256];
	struct dirent *entry;
	size_t inputs = 0;
	DIR *listing;

	FORMAT(dir, "%s/fuzz/corpus/%s", test_source_dir(), harness->name);
	listing = opendir(dir);
	if (!listing)
		fail_msg("%s: %s", dir, strerror(errno));
	while ((entry = readdir(listing))) {
		uint8_t *data;
		size_t size;

		if (entry->d_name[0] == '.')
			continue;
		FORMAT(path, "%s/%s", dir, entry->d_name);
		data = read_input(path, &size);
		assert_int_equal(harness->run(data, size), 0);
		free(data);
		inputs++;
	}
	closedir(listing);
	return inputs;
}

#define HARNESS_TEST(harness_name)                                                         \
	static void harness_name##_corpus_runs_clean(void **state)                         \
	{                                                                                  \
		const struct harness harness = { #harness_name, harness_name##_run };      \
		(void)state;                                                               \
		/* a harness without seeds would pass without testing anything */         \
		assert_true(run_corpus(&harness) >= 3);                                    \
	}

HARNESS_TEST(fuzz_mojo_reader)
HARNESS_TEST(fuzz_tachyon_reader)
HARNESS_TEST(fuzz_collapsed_reader)
HARNESS_TEST(fuzz_py_linetable)
HARNESS_TEST(fuzz_proc_maps)
HARNESS_TEST(fuzz_py_debug_offsets)
HARNESS_TEST(fuzz_elf_file)
HARNESS_TEST(fuzz_unwind_table)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fuzz_mojo_reader_corpus_runs_clean),
		cmocka_unit_test(fuzz_tachyon_reader_corpus_runs_clean),
		cmocka_unit_test(fuzz_collapsed_reader_corpus_runs_clean),
		cmocka_unit_test(fuzz_py_linetable_corpus_runs_clean),
		cmocka_unit_test(fuzz_proc_maps_corpus_runs_clean),
		cmocka_unit_test(fuzz_py_debug_offsets_corpus_runs_clean),
		cmocka_unit_test(fuzz_elf_file_corpus_runs_clean),
		cmocka_unit_test(fuzz_unwind_table_corpus_runs_clean),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
