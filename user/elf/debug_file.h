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
 * never mapped, nothing else ever opened: not a tty, a FIFO, a device). The last path
 * component of a build-id candidate may be a symlink (Fedora's build-id tree is links),
 * followed inside the same root; a debuglink candidate's never is (it lies beside a file a
 * user may control).
 */
#ifndef PYBPFPROF_DEBUG_FILE_H
#define PYBPFPROF_DEBUG_FILE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "elf/elf_file.h"

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

/* What a file says its debug file is. */
struct debug_identity {
	uint8_t build_id[ELF_FILE_MAX_BUILD_ID];
	size_t build_id_len;   /* 0: no build-id */
	char link_name[NAME_MAX + 1];
	uint32_t link_crc;
	bool has_link;
};

/* file's build id and .gnu_debuglink; 0, or -ENOENT when it has neither. */
int debug_file_identity(const struct elf_file *file, struct debug_identity *identity);
/* One candidate: path inside root_pid's root (0: ours); by_build_id: found by the build-id tree
 * (its last component may be a link), else a debuglink's. true: it matched, and is kept. */
typedef bool debug_file_try_fn(void *context, pid_t root_pid, const char *path, bool by_build_id);
/* Offers try the candidates of identity, in the order above, until one is kept; whether one was. */
bool debug_file_search(const struct debug_identity *identity, const struct debug_file_place *place,
		       debug_file_try_fn *try, void *context);
/* Whether a candidate (its build id, build_id_len 0: none; crc NULL: not read) is the debug
 * file identity describes: by build id (by_build_id), else by the debuglink's CRC32 and a
 * build id that, if both have one, is the same. */
bool debug_file_matches(const struct debug_identity *identity, const uint8_t *build_id, size_t build_id_len,
			bool by_build_id, const uint32_t *crc);
/* The CRC32 of fd's bytes, at most limit of them (a debuglink names its debug file's). 0 or -errno. */
int debug_file_crc32(int fd, uint64_t limit, uint32_t *crc);

/*
 * The debug file of file (open in *debug, closed by the caller). 0, or -ENOENT (none found,
 * or none matched).
 */
int debug_file_open(const struct elf_file *file, const struct debug_file_place *place, struct elf_file *debug);

#endif
