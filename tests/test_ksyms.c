// SPDX-License-Identifier: MIT
/* Kernel symbolization from kallsyms: real addresses back to their names, modules, hidden addresses. */
#include "testlib.h"

#include <errno.h>
#include <inttypes.h>

#include "symbolize/ksyms.h"

/* The address of a code symbol named name (and its module, if any) as /proc/kallsyms lists it. */
static int kallsyms_lookup(const char *name, int want_module, uint64_t *addr, char *module, size_t modlen)
{
	FILE *file = fopen("/proc/kallsyms", "r");
	char line[1024], sym[512], mod[128];
	int found = 0;

	if (!file)
		return 0;
	while (!found && fgets(line, sizeof(line), file)) {
		char type;
		int fields = sscanf(line, "%" SCNx64 " %c %511s [%127[^]]]", addr, &type, sym, mod);

		if (fields < 3 || (type != 't' && type != 'T'))
			continue;
		if (want_module ? fields == 4 && (!name || strcmp(sym, name) == 0) : fields == 3 && strcmp(sym, name) == 0) {
			if (want_module)
				snprintf(module, modlen, "%s", mod);
			found = 1;
		}
	}
	fclose(file);
	return found;
}

static void test_resolves_vfs_read(void **state)
{
	struct ksyms *ksyms;
	char err[256];
	uint64_t addr, offset = 99;
	const char *module = "x";
	const char *name;

	(void)state;
	if (!kallsyms_lookup("vfs_read", 0, &addr, NULL, 0) || addr == 0)
		skip();
	assert_int_equal(ksyms_load(&ksyms, err, sizeof(err)), 0);
	assert_true(ksyms_count(ksyms) > 1000);
	name = ksyms_resolve(ksyms, addr, &offset, &module);
	assert_non_null(name);
	assert_string_equal(name, "vfs_read");
	assert_int_equal(offset, 0);
	assert_null(module);
	/* An address inside the function. */
	name = ksyms_resolve(ksyms, addr + 5, &offset, NULL);
	assert_string_equal(name, "vfs_read");
	assert_int_equal(offset, 5);
	ksyms_free(ksyms);
}


static void write_file(const char *name, const char *text, char *path, size_t pathlen)
{
	snprintf(path, pathlen, "%s/%s", test_tmpdir(), name);
	assert_int_equal(write_whole_file(path, text, strlen(text)), 0);
}

static void test_unsorted_file_with_data_symbols(void **state)
{
	static const char text[] = "ffffffff81000300 T third\n"
				   "ffffffff81000100 T first\n"
				   "ffffffff81000180 D some_data\n"
				   "ffffffff81000200 t second\n"
				   "ffffffffc0000000 t mod_func\t[mymod]\n";
	struct ksyms *ksyms;
	char path[256], err[256];
	uint64_t offset;
	const char *module;

	(void)state;
	write_file("kallsyms", text, path, sizeof(path));
	assert_int_equal(ksyms_load_file(&ksyms, path, err, sizeof(err)), 0);
	assert_int_equal(ksyms_count(ksyms), 4);
	assert_null(ksyms_resolve(ksyms, 0xffffffff810000ffull, NULL, NULL));
	/* Data symbols do not cut a function short. */
	assert_string_equal(ksyms_resolve(ksyms, 0xffffffff81000190ull, &offset, NULL), "first");
	assert_int_equal(offset, 0x90);
	assert_string_equal(ksyms_resolve(ksyms, 0xffffffff81000200ull, NULL, NULL), "second");
	assert_string_equal(ksyms_resolve(ksyms, 0xffffffff81000301ull, NULL, &module), "third");
	assert_null(module);
	assert_string_equal(ksyms_resolve(ksyms, 0xffffffffc0000010ull, NULL, &module), "mod_func");
	assert_string_equal(module, "mymod");
	ksyms_free(ksyms);
}

/* The file is read 64 KiB at a time: lines that straddle two reads are whole, and a line longer
 * than a read is dropped whole. Here the long line's x's end exactly where a reader that forgot
 * it was inside that line would start afresh, with text that reads like a symbol. */
static void test_long_file_and_overlong_line(void **state)
{
	enum { SYMBOLS = 6000, XS = 2 * 65536 };
	size_t capacity = SYMBOLS * 48 + XS + 256, used = 0;
	char *text = malloc(capacity);
	struct ksyms *ksyms;
	char path[256], err[256];
	uint64_t offset;

	(void)state;
	assert_non_null(text);
	used += (size_t)snprintf(text + used, capacity - used, "ffffffff81000000 T before_long\n");
	memset(text + used, 'x', XS);
	used += XS;
	used += (size_t)snprintf(text + used, capacity - used, "ffffffff90000000 T smuggled\n");
	for (unsigned i = 0; i < SYMBOLS; i++)
		used += (size_t)snprintf(text + used, capacity - used, "%016llx T func_%u\n",
					 0xffffffff82000000ull + 0x100ull * i, i);
	write_file("kallsyms-long", text, path, sizeof(path));
	free(text);
	assert_int_equal(ksyms_load_file(&ksyms, path, err, sizeof(err)), 0);
	assert_int_equal(ksyms_count(ksyms), SYMBOLS + 1);
	assert_string_equal(ksyms_resolve(ksyms, 0xffffffff90000010ull, NULL, NULL), "func_5999");
	assert_string_equal(ksyms_resolve(ksyms, 0xffffffff82000000ull + 0x100ull * 4321 + 5, &offset, NULL),
			    "func_4321");
	assert_int_equal(offset, 5);
	assert_string_equal(ksyms_resolve(ksyms, 0xffffffff81000010ull, NULL, NULL), "before_long");
	ksyms_free(ksyms);
}

/* Addresses are kept as their low halves, the high halves in runs: an address past the last
 * symbol of one half, or in a half of its own, still finds the nearest symbol below it. */
static void test_symbols_across_high_halves(void **state)
{
	static const char text[] = "00000001fffffff0 T low_last\n"
				   "0000000100000000 T low_first\n"
				   "0000000300000010 t far\t[farmod]\n"
				   "ffffffff81000000 T kernel_first\n";
	struct ksyms *ksyms;
	char path[256], err[256];
	uint64_t offset;
	const char *module;

	(void)state;
	write_file("kallsyms-halves", text, path, sizeof(path));
	assert_int_equal(ksyms_load_file(&ksyms, path, err, sizeof(err)), 0);
	assert_int_equal(ksyms_count(ksyms), 4);
	assert_null(ksyms_resolve(ksyms, 0xffffffffull, NULL, NULL));
	assert_string_equal(ksyms_resolve(ksyms, 0x100000001ull, NULL, NULL), "low_first");
	assert_string_equal(ksyms_resolve(ksyms, 0x2000000f0ull, &offset, &module), "low_last");
	assert_int_equal(offset, 0x100);
	assert_null(module);
	assert_string_equal(ksyms_resolve(ksyms, 0x300000000ull, NULL, NULL), "low_last");
	assert_string_equal(ksyms_resolve(ksyms, 0x300000020ull, &offset, &module), "far");
	assert_int_equal(offset, 0x10);
	assert_string_equal(module, "farmod");
	assert_string_equal(ksyms_resolve(ksyms, 0xffffffff81000008ull, &offset, &module), "kernel_first");
	assert_int_equal(offset, 8);
	assert_null(module);
	ksyms_free(ksyms);
}

static void test_hidden_addresses_are_reported(void **state)
{
	static const char text[] = "0000000000000000 T first\n0000000000000000 T second\n";
	struct ksyms *ksyms = NULL;
	char path[256], err[256] = "";

	(void)state;
	write_file("kallsyms-hidden", text, path, sizeof(path));
	assert_int_equal(ksyms_load_file(&ksyms, path, err, sizeof(err)), -EPERM);
	assert_null(ksyms);
	assert_non_null(strstr(err, "kptr_restrict"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resolves_vfs_read),
		cmocka_unit_test(test_unsorted_file_with_data_symbols),
		cmocka_unit_test(test_long_file_and_overlong_line),
		cmocka_unit_test(test_symbols_across_high_halves),
		cmocka_unit_test(test_hidden_addresses_are_reported),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
