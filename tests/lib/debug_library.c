// SPDX-License-Identifier: MIT
/*
 * A library with a static function, built and loaded for the debug symbol tests
 * (tests/unit/test_elf_debug_symbols.c, tests/e2e/test_debug_symbols.c).
 */
#include "debug_library.h"

#include <dlfcn.h>
#include <stdlib.h>

/* A static function (hidden_loop) and an exported one; VARIANT changes the code (and so the build-id). */
static const char library_source[] =
	"#ifndef VARIANT\n#define VARIANT 3\n#endif\n"
	"static __attribute__((noinline)) unsigned long hidden_loop(unsigned long n)\n"
	"{ unsigned long total = 0; for (unsigned long i = 0; i < n; i++) total += (i * i) ^ (total >> VARIANT); return total; }\n"
	"void *hidden_loop_address(void) { return (void *)hidden_loop; }\n"
	"unsigned long call_hidden(unsigned long n) { return hidden_loop(n); }\n";

/*
 * Builds lib.so from library_source in a fresh directory (cc's default --build-id), runs
 * steps there (sh; $DEBUG is the test's debug dir), then loads it.
 */
void build_library(struct test_library *library, const char *steps)
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

void unload_library(struct test_library *library)
{
	char command[PATH_MAX + 16];

	dlclose(library->handle);
	FORMAT(command, "rm -rf %s", library->dir);
	assert_int_equal(system(command), 0);
}
