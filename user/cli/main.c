// SPDX-License-Identifier: MIT
/* pybpfprof: dispatch to a subcommand; with none, record (the profiler itself). */
#include "cli/commands.h"
#include "util/version.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "dump") == 0)
		return dump_main(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "convert") == 0)
		return convert_main(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "top") == 0)
		return top_main(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "record") == 0)
		return record_main(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "--version") == 0) {
		printf("pybpfprof %s\n", PYBPFPROF_VERSION);
		return 0;
	}
	return record_main(argc, argv);
}
