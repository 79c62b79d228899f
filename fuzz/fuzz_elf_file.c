// SPDX-License-Identifier: MIT
/*
 * An ELF file a target maps (its interpreter, libpython, any library): what py_discover asks
 * of the runtime's file and symbolize_native of every file it names a native frame in.
 */
#include "fuzz.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf/elf_file.h"

/* The symbols py_discover looks up. */
static const char *const runtime_symbols[] = {
	"_PyRuntime", "interp_head", "Py_Version", "gil_last_holder", "gil_locked",
	"_PyThreadState_Current",
};

static size_t section_bytes(const struct elf_file *file, const char *name)
{
	const void *data;
	size_t len, sum = 0;

	if (elf_file_section_data(file, name, &data, &len))
		return 0;
	/* py_discover scans .rodata for the version string: every byte must be readable */
	for (size_t i = 0; i < len; i++)
		sum += ((const uint8_t *)data)[i];
	return sum;
}

static size_t function_bytes(const struct elf_file *file)
{
	struct elf_function *functions;
	size_t count, sum = 0;
	char *names;

	if (elf_file_functions(file, &functions, &count, &names))
		return 0;
	for (size_t i = 0; i < count; i++)
		sum += strlen(functions[i].name) + functions[i].size;
	free(functions);
	free(names);
	return sum;
}

int fuzz_elf_file_run(const uint8_t *data, size_t size)
{
	struct elf_file file;
	uint64_t addr, length, bias;
	char path[64];
	int fd = fuzz_input_memfd(data, size);

	if (fd < 0)
		return 0;
	if (!elf_file_open(&file, fuzz_input_path(fd, path, sizeof(path)))) {
		for (size_t i = 0; i < sizeof(runtime_symbols) / sizeof(runtime_symbols[0]); i++)
			if (!elf_file_symbol(&file, runtime_symbols[i], &addr, &length))
				fuzz_input_sink += addr + length;
		if (!elf_file_section(&file, ".PyRuntime", &addr, &length))
			fuzz_input_sink += addr + length;
		fuzz_input_sink += section_bytes(&file, ".rodata") + section_bytes(&file, ".PyRuntime");
		fuzz_input_sink += function_bytes(&file);
		/* the mappings a loader makes of a small file: its first page, and one further on */
		if (!elf_file_load_bias(&file, 0x7f0000000000, 0, &bias))
			fuzz_input_sink += bias;
		if (!elf_file_load_bias(&file, 0x7f0000001000, 0x1000, &bias))
			fuzz_input_sink += bias;
		elf_file_close(&file);
	}
	close(fd);
	return 0;
}
