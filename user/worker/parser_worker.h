/* SPDX-License-Identifier: MIT */
/*
 * The parser worker: the process that reads the files targets control (doc/security.md).
 * It sits above elf/, python/ and unwind/ (whose parsers it runs) and parser/ (the protocol it answers), and
 * holds the parsers root must never run itself: the unwind table builder (unwind_build.h)
 * and its CFA interpreter (cfa_program.h), which unwind/ cannot include. Root's side of the
 * conversation is parser/parser_client.h.
 * pybpfprof runs it as `pybpfprof __parser-worker --uid N --memory-mib M [--selftest]` with
 * its socket as descriptor 3 (parser_client.h starts it). Before it reads a request it drops
 * everything: root's identity for uid/gid N (which no other process has), every capability
 * (the bounding set too), any file-system access (its root is an empty, deleted directory),
 * memory beyond M MiB (RLIMIT_AS); then, under PR_SET_NO_NEW_PRIVS, a seccomp filter lets it
 * read and stat the descriptors it is sent, allocate (never executable memory), answer on its
 * socket, close and exit (readlink fails with ENOENT: libdw asks). Anything else kills it.
 */
#ifndef PYBPFPROF_WORKER_PARSER_WORKER_H
#define PYBPFPROF_WORKER_PARSER_WORKER_H

/* argv as above (argv[0] the program, argv[1] PARSER_WORKER_COMMAND); the process's exit status. */
int parser_worker_main(int argc, char **argv);

#endif
