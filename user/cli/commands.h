/* SPDX-License-Identifier: MIT */
/* The subcommands of the pybpfprof binary; each returns the process exit status. */
#ifndef PYBPFPROF_COMMANDS_H
#define PYBPFPROF_COMMANDS_H

#include <stdbool.h>
#include <stdio.h>

int dump_main(int argc, char **argv);
int convert_main(int argc, char **argv);
int record_main(int argc, char **argv);
int top_main(int argc, char **argv);
int stacks_main(int argc, char **argv);
int diff_main(int argc, char **argv);
int annotate_main(int argc, char **argv);
/* annotate's report of every file and line of profile, as text or as the page, into out;
 * sources read under source_root (NULL: where the profile says). The exit status (after a
 * message on stderr). The fuzz harness's way in. */
int annotate_to_stream(const char *profile, const char *source_root, bool html, FILE *out);

/* "pybpfprof: COMMAND: PATH: MESSAGE" on stderr, control bytes in PATH and MESSAGE escaped. */
void cli_error_print(const char *command, const char *path, const char *message);

#endif
