/* SPDX-License-Identifier: MIT */
/* The subcommands of the pybpfprof binary; each returns the process exit status. */
#ifndef PYBPFPROF_COMMANDS_H
#define PYBPFPROF_COMMANDS_H

int dump_main(int argc, char **argv);
int convert_main(int argc, char **argv);
int record_main(int argc, char **argv);
int top_main(int argc, char **argv);

#endif
