/* SPDX-License-Identifier: MIT */
/*
 * A file's separate debug file, found as gdb finds it: by the file's GNU build-id
 * (<debug dir>/.build-id/xx/rest.debug), else by its .gnu_debuglink (a name and the CRC32 of
 * the debug file) beside the file, in its directory's .debug/, or under <debug dir>/<its
 * directory>/. Debian's -dbgsym and Fedora's -debuginfo packages install them so.
 *
 * Where, for a target in another mount namespace or chroot: first in our own debug dir (the
 * build-id tree and <debug dir>/<its directory>/ only: the file's directory means nothing
 * outside its root), which root controls, so that a container cannot rename the functions of
 * a build the host has the debug file of; then inside the target's root (/proc/PID/root,
 * resolved with openat2(RESOLVE_IN_ROOT) like every target path), where the debug files of a
 * container's own libraries are installed. Either way a candidate is
 * trusted only when it matches: its build-id equal to the file's (a build-id candidate), or
 * its CRC32 the one the debuglink names and its build-id, if both have one, equal (a debuglink
 * candidate). It is opened and read as any target file (elf_file.h: a regular file, bounded,
 * never mapped); the last path component may be a symlink (Fedora's build-id tree is links),
 * followed inside the same root.
 */
#ifndef PYBPFPROF_DEBUG_FILE_H
#define PYBPFPROF_DEBUG_FILE_H

#include <sys/types.h>

#include "target/elf_file.h"

/* The debug tree distributions install into. */
#define DEBUG_FILE_DIR "/usr/lib/debug"

/* Where one file's debug file is looked for. */
struct debug_file_place {
	pid_t pid;                  /* the target whose root the paths are in; 0: our own root */
	const char *path_in_target; /* the file's absolute path as the target sees it */
	const char *debug_dir;      /* DEBUG_FILE_DIR, or a test's tree */
	/* Bytes the debuglink checks may still read, over a run (a candidate's CRC32 reads it
	 * whole): a candidate past it is not trusted. NULL: each file's own bound only. */
	uint64_t *check_bytes_left;
};

/*
 * The debug file of file (open in *debug, closed by the caller). 0, or -ENOENT (none found,
 * or none matched).
 */
int debug_file_open(const struct elf_file *file, const struct debug_file_place *place, struct elf_file *debug);

#endif
