// SPDX-License-Identifier: MIT
#include "elf/debug_file.h"

#include <elfutils/libdwelf.h>
#include <errno.h>
#include <gelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* The file's .gnu_debuglink (libdw: a NUL-terminated name, its CRC32 in the file's byte
 * order), kept only if its name is a single file name. */
static bool read_debuglink(const struct elf_file *file, struct debug_identity *identity)
{
	GElf_Word crc;
	const char *link = dwelf_elf_gnu_debuglink(file->elf, &crc);
	size_t name_len = link ? strnlen(link, NAME_MAX + 1) : 0;

	if (!name_len || name_len > NAME_MAX || memchr(link, '/', name_len) || !strcmp(link, ".") ||
	    !strcmp(link, ".."))
		return false;
	memcpy(identity->link_name, link, name_len);
	identity->link_name[name_len] = 0;
	identity->link_crc = crc;
	identity->has_link = true;
	return true;
}

/* The CRC32 of the whole file (bounded by ELF_FILE_MAX_BYTES when it was opened, and by what
 * *bytes_left allows, which it uses up), read, not mapped. */
static int file_crc32(int fd, uint64_t *bytes_left, uint32_t *crc)
{
	uint64_t limit = ELF_FILE_MAX_BYTES;
	struct stat info;

	if (bytes_left) {
		if (fstat(fd, &info) || (uint64_t)info.st_size > *bytes_left)
			return -E2BIG;
		limit = (uint64_t)info.st_size;
		*bytes_left -= limit;
	}
	return debug_file_crc32(fd, limit, crc);
}

int debug_file_crc32(int fd, uint64_t limit, uint32_t *crc)
{
	unsigned char chunk[64 << 10];
	uint64_t offset = 0;
	uLong sum = crc32(0, Z_NULL, 0);
	ssize_t got = 0;

	while (offset < limit && (got = pread(fd, chunk, sizeof(chunk), (off_t)offset)) > 0) {
		sum = crc32(sum, chunk, (uInt)got);
		offset += (uint64_t)got;
	}
	if (got < 0)
		return -errno;
	*crc = (uint32_t)sum;
	return 0;
}

static bool same_file(const struct elf_file *left, const struct elf_file *right)
{
	struct stat a, b;

	return left->fd >= 0 && right->fd >= 0 && !fstat(left->fd, &a) && !fstat(right->fd, &b) &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* <debug dir>/.build-id/xx/rest.debug, in hex. */
static bool build_id_path(const struct debug_file_place *place, const struct debug_identity *identity, char *path,
			  size_t size)
{
	int len = snprintf(path, size, "%s/.build-id/%02x/", place->debug_dir, identity->build_id[0]);

	if (identity->build_id_len < 2 || len < 0 || (size_t)len >= size)
		return false;
	for (size_t i = 1; i < identity->build_id_len; i++) {
		int more = snprintf(path + len, size - (size_t)len, "%02x", identity->build_id[i]);

		if (more < 0 || (size_t)(len += more) >= size)
			return false;
	}
	return (size_t)snprintf(path + len, size - (size_t)len, ".debug") < size - (size_t)len;
}

/* The debuglink candidate "<prefix><the file's directory><middle><link name>", if it matches. */
static bool try_link_candidate(const struct debug_identity *identity, const struct debug_file_place *place,
			       pid_t root_pid, const char *prefix, const char *middle, debug_file_try_fn *try,
			       void *context)
{
	const char *last_slash = strrchr(place->path_in_target, '/');
	int dir_len = (int)(last_slash - place->path_in_target);
	char path[PATH_MAX];

	return (size_t)snprintf(path, sizeof(path), "%s%.*s%s%s", prefix, dir_len, place->path_in_target, middle,
				identity->link_name) < sizeof(path) &&
	       try(context, root_pid, path, false);
}

/* The candidate paths of one root, in gdb's order; in_target_root: also those beside the file. */
static bool search_root(const struct debug_identity *identity, const struct debug_file_place *place, pid_t root_pid,
			bool in_target_root, debug_file_try_fn *try, void *context)
{
	char path[PATH_MAX];

	if (identity->build_id_len && build_id_path(place, identity, path, sizeof(path)) &&
	    try(context, root_pid, path, true))
		return true;
	if (!identity->has_link || place->path_in_target[0] != '/')
		return false;
	if (in_target_root && (try_link_candidate(identity, place, root_pid, "", "/", try, context) ||
			       try_link_candidate(identity, place, root_pid, "", "/.debug/", try, context)))
		return true;
	return try_link_candidate(identity, place, root_pid, place->debug_dir, "/", try, context);
}

/* Whether pid's root is another directory than ours (a container, a chroot). */
static bool root_is_other(pid_t pid)
{
	char root_path[64];
	struct stat theirs, ours;

	if (!pid)
		return false;
	snprintf(root_path, sizeof(root_path), "/proc/%d/root", (int)pid);
	if (stat(root_path, &theirs) || stat("/", &ours))
		return false;
	return theirs.st_dev != ours.st_dev || theirs.st_ino != ours.st_ino;
}

int debug_file_identity(const struct elf_file *file, struct debug_identity *identity)
{
	*identity = (struct debug_identity){ .build_id_len = 0 };
	if (elf_file_build_id(file, identity->build_id, &identity->build_id_len))
		identity->build_id_len = 0;
	read_debuglink(file, identity);
	return identity->build_id_len || identity->has_link ? 0 : -ENOENT;
}

bool debug_file_search(const struct debug_identity *identity, const struct debug_file_place *place,
		       debug_file_try_fn *try, void *context)
{
	/* Ours first where the target has another root: our debug tree is root's, so a container
	 * cannot rename the functions of a file the host maps too (the same build). */
	if (root_is_other(place->pid) && search_root(identity, place, 0, false, try, context))
		return true;
	return search_root(identity, place, place->pid, true, try, context);
}

bool debug_file_matches(const struct debug_identity *identity, const uint8_t *build_id, size_t build_id_len,
			bool by_build_id, const uint32_t *crc)
{
	bool same_build_id = build_id_len && build_id_len == identity->build_id_len &&
			     !memcmp(build_id, identity->build_id, build_id_len);

	if (by_build_id)
		return same_build_id;
	if (build_id_len && identity->build_id_len && !same_build_id)
		return false;
	return crc && *crc == identity->link_crc;
}

/* The in-process search's state: the file, where, and the candidate kept. */
struct open_search {
	const struct elf_file *file;
	const struct debug_identity *identity;
	const struct debug_file_place *place;
	struct elf_file *debug;
};

/* Opens path inside root_pid's root (0: ours) and keeps it if it matches. */
static bool try_open_candidate(void *context, pid_t root_pid, const char *path, bool by_build_id)
{
	struct open_search *search = context;
	uint8_t build_id[ELF_FILE_MAX_BUILD_ID];
	size_t build_id_len = 0;
	uint32_t crc;
	bool crc_known = false;
	int fd = elf_file_candidate_fd(root_pid, path, by_build_id);

	if (fd < 0 || elf_file_open_fd(search->debug, fd, path))
		return false;
	if (!same_file(search->file, search->debug)) {
		if (elf_file_build_id(search->debug, build_id, &build_id_len))
			build_id_len = 0;
		crc_known = !by_build_id && !file_crc32(search->debug->fd, search->place->check_bytes_left, &crc);
		if (debug_file_matches(search->identity, build_id, build_id_len, by_build_id, crc_known ? &crc : NULL))
			return true;
	}
	elf_file_close(search->debug);
	return false;
}

int debug_file_open(const struct elf_file *file, const struct debug_file_place *place, struct elf_file *debug)
{
	struct debug_identity identity;
	struct open_search search = { .file = file, .identity = &identity, .place = place, .debug = debug };

	if (debug_file_identity(file, &identity))
		return -ENOENT;
	return debug_file_search(&identity, place, try_open_candidate, &search) ? 0 : -ENOENT;
}
