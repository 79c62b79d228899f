/* SPDX-License-Identifier: MIT */
/* The subcommands of the pybpfprof binary; each returns the process exit status. */
#ifndef PYBPFPROF_COMMANDS_H
#define PYBPFPROF_COMMANDS_H

int dump_main(int argc, char **argv);
int convert_main(int argc, char **argv);
int record_main(int argc, char **argv);
int top_main(int argc, char **argv);
int stacks_main(int argc, char **argv);
int diff_main(int argc, char **argv);
int annotate_main(int argc, char **argv);

/* "pybpfprof: COMMAND: PATH: MESSAGE" on stderr, control bytes in PATH and MESSAGE escaped. */
void cli_error_print(const char *command, const char *path, const char *message);

#endif
