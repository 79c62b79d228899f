// SPDX-License-Identifier: MIT
/* Error lines of the file commands (dump, top, convert). */
#include "cli/commands.h"
#include "util/text_quote.h"

#include <stdio.h>

void cli_error_print(const char *command, const char *path, const char *message)
{
	/* A file's name and what its reader says of it may hold anything: escape both. */
	fprintf(stderr, "pybpfprof: %s: ", command);
	fput_escaped(stderr, path);
	fputs(": ", stderr);
	fput_escaped(stderr, message);
	fputc('\n', stderr);
}
