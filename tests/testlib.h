/* SPDX-License-Identifier: MIT */
/* Shared by the cmocka tests: where the reference data lives, small file helpers. */
#ifndef PYBPFPROF_TESTLIB_H
#define PYBPFPROF_TESTLIB_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

/* The reference files: $PYBPFPROF_TESTDATA, else ../shared/testdata beside the checkout. */
static inline const char *testdata_dir(void)
{
	const char *dir = getenv("PYBPFPROF_TESTDATA");

	return dir && *dir ? dir : "../shared/testdata";
}

static inline void testdata_path(char *out, size_t len, const char *relative)
{
	snprintf(out, len, "%s/%s", testdata_dir(), relative);
}

/* A fresh scratch directory for one test binary (removed by the OS's tmp cleaning). */
static inline const char *test_tmpdir(void)
{
	static char dir[64];

	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/pybpfprof-test.XXXXXX");
		if (!mkdtemp(dir))
			abort();
	}
	return dir;
}

/* Whole file into a malloc'd buffer (NUL-terminated); NULL if unreadable. */
static inline uint8_t *read_whole_file(const char *path, size_t *len)
{
	FILE *file = fopen(path, "rb");
	uint8_t *data = NULL;
	long size;

	if (!file)
		return NULL;
	if (fseek(file, 0, SEEK_END) == 0 && (size = ftell(file)) >= 0 && fseek(file, 0, SEEK_SET) == 0) {
		data = malloc((size_t)size + 1);
		if (data && fread(data, 1, (size_t)size, file) != (size_t)size) {
			free(data);
			data = NULL;
		}
		if (data) {
			data[size] = 0;
			*len = (size_t)size;
		}
	}
	fclose(file);
	return data;
}

static inline int write_whole_file(const char *path, const void *data, size_t len)
{
	FILE *file = fopen(path, "wb");
	int ok;

	if (!file)
		return -1;
	ok = fwrite(data, 1, len, file) == len;
	return fclose(file) == 0 && ok ? 0 : -1;
}

#endif
