// SPDX-License-Identifier: MIT
/*
 * pybpfprof: dispatch to a subcommand. With none (options only, or nothing)
 * it records: the profiler itself. A first word that is neither an option
 * nor a command is a mistake, not a program to launch: launching takes `--`.
 */
#include "cli/commands.h"
#include "cli/options.h"
#include "parser/parser_client.h"
#include "parser/parser_protocol.h"
#include "worker/parser_worker.h"
#include "util/exit_status.h"
#include "util/text_quote.h"
#include "util/version.h"

#include <malloc.h>
#include <stdio.h>
#include <string.h>

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
	{ "record", record_main, "sample processes (the default: `pybpfprof [OPTIONS]` records)" },
	{ "dump", dump_main, "print a profile file as text" },
	{ "convert", convert_main, "write a profile file in another format" },
	{ "top", top_main, "the functions with the most time in a profile file" },
	{ "diff", diff_main, "what changed between two profile files (table, flame graph, pprof)" },
	{ "annotate", annotate_main, "the hottest source lines of a profile file, beside the source" },
	{ "stacks", stacks_main, "every thread of a running process once, with its stacks (py-spy dump)" },
};

static const struct command *command_named(const char *name)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

static void print_commands(FILE *out)
{
	fputs("commands:\n", out);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fputs("To profile a command, put it after --: pybpfprof -o out.mojo -- python3 app.py\n", out);
}

/* The command a mistyped word most likely meant, or NULL. */
static const char *nearest_command(const char *word)
{
	const char *names[sizeof(commands) / sizeof(commands[0]) + 1];
	size_t count = 0;

	for (; count < sizeof(commands) / sizeof(commands[0]); count++)
		names[count] = commands[count].name;
	names[count++] = "help";
	return options_nearest(word, strlen(word), names, count);
}

/* One line for a near miss (it still says how to launch a program of that name), else the list. */
static int unknown_command(const char *word)
{
	const char *nearest = nearest_command(word);

	fputs("pybpfprof: unknown command '", stderr);
	fput_escaped(stderr, word);
	if (!nearest) {
		fputs("'\n", stderr);
		print_commands(stderr);
		return EXIT_STATUS_USAGE;
	}
	fprintf(stderr, "'; did you mean '%s'? (a program to profile goes after --: pybpfprof -- ", nearest);
	fput_escaped(stderr, word);
	fputs(" ...)\n", stderr);
	return EXIT_STATUS_USAGE;
}

int main(int argc, char **argv)
{
	const struct command *command;

	/* The parser worker is this binary again, started by parser_client.c: nothing else runs. */
	if (argc >= 2 && strcmp(argv[1], PARSER_WORKER_COMMAND) == 0)
		return parser_worker_main(argc, argv);
	parser_client_set_default_executable("/proc/self/exe");
	/* One malloc arena for every thread: the unwind-table builder's working memory (libdw's
	 * state, a row list, a sort's copy: some 3 MB for a libpython) then returns to the heap
	 * the recording trims, instead of staying resident at the top of an arena of its own. */
	mallopt(M_ARENA_MAX, 1);
	if (argc < 2 || argv[1][0] == '-') {
		if (argc >= 2 && strcmp(argv[1], "--version") == 0) {
			printf("pybpfprof %s\n", PYBPFPROF_VERSION);
			return EXIT_STATUS_OK;
		}
		return record_main(argc, argv);
	}
	command = command_named(argv[1]);
	if (command)
		return command->run(argc - 1, argv + 1);
	if (strcmp(argv[1], "help") == 0) {
		print_commands(stdout);
		return EXIT_STATUS_OK;
	}
	return unknown_command(argv[1]);
}
