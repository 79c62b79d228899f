// SPDX-License-Identifier: MIT
#include "target/debug_file.h"

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

/* What a file says its debug file is. */
struct debug_identity {
	uint8_t build_id[ELF_FILE_MAX_BUILD_ID];
	size_t build_id_len;   /* 0: no build-id */
	char link_name[NAME_MAX + 1];
	uint32_t link_crc;
	bool has_link;
};

/* A .gnu_debuglink: a file name (no directory), NUL-padded to 4 bytes, then the CRC32 in the file's byte order. */
static bool read_debuglink(const struct elf_file *file, struct debug_identity *identity)
{
	const unsigned char *link;
	const char *ident;
	size_t len, name_len, crc_at;

	if (elf_file_section_data(file, ".gnu_debuglink", (const void **)&link, &len))
		return false;
	name_len = strnlen((const char *)link, len);
	crc_at = (name_len + 4) & ~(size_t)3;
	if (!name_len || name_len > NAME_MAX || crc_at + 4 > len || memchr(link, '/', name_len) ||
	    !strcmp((const char *)link, ".") || !strcmp((const char *)link, ".."))
		return false;
	memcpy(identity->link_name, link, name_len);
	identity->link_name[name_len] = 0;
	ident = elf_getident(file->elf, NULL);
	if (ident && ident[EI_DATA] == ELFDATA2MSB)
		identity->link_crc = (uint32_t)link[crc_at] << 24 | (uint32_t)link[crc_at + 1] << 16 |
				     (uint32_t)link[crc_at + 2] << 8 | link[crc_at + 3];
	else
		identity->link_crc = (uint32_t)link[crc_at + 3] << 24 | (uint32_t)link[crc_at + 2] << 16 |
				     (uint32_t)link[crc_at + 1] << 8 | link[crc_at];
	identity->has_link = true;
	return true;
}

/* The CRC32 of the whole file (bounded by ELF_FILE_MAX_BYTES when it was opened, and by what
 * *bytes_left allows, which it uses up), read, not mapped. */
static int file_crc32(int fd, uint64_t *bytes_left, uint32_t *crc)
{
	unsigned char chunk[64 << 10];
	uint64_t offset = 0, limit = ELF_FILE_MAX_BYTES;
	uLong sum = crc32(0, Z_NULL, 0);
	struct stat info;
	ssize_t got = 0;

	if (bytes_left) {
		if (fstat(fd, &info) || (uint64_t)info.st_size > *bytes_left)
			return -E2BIG;
		limit = (uint64_t)info.st_size;
		*bytes_left -= limit;
	}
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

/* Whether candidate is the debug file identity describes: by build-id, or by the debuglink's CRC. */
static bool matches(const struct elf_file *file, const struct debug_identity *identity,
		    const struct elf_file *candidate, bool by_build_id, uint64_t *check_bytes_left)
{
	uint8_t build_id[ELF_FILE_MAX_BUILD_ID];
	size_t build_id_len = 0;
	bool has_build_id = !elf_file_build_id(candidate, build_id, &build_id_len);
	bool same_build_id = has_build_id && build_id_len == identity->build_id_len &&
			     !memcmp(build_id, identity->build_id, build_id_len);
	uint32_t crc;

	if (same_file(file, candidate))
		return false;
	if (by_build_id)
		return same_build_id;
	if (has_build_id && identity->build_id_len && !same_build_id)
		return false;
	return !file_crc32(candidate->fd, check_bytes_left, &crc) && crc == identity->link_crc;
}

/* Opens path inside root_pid's root (0: ours) and keeps it if it matches. */
static bool try_candidate(const struct elf_file *file, const struct debug_identity *identity,
			  const struct debug_file_place *place, pid_t root_pid, const char *path, bool by_build_id,
			  struct elf_file *debug)
{
	if (elf_file_open_linked_in(debug, root_pid, path))
		return false;
	if (matches(file, identity, debug, by_build_id, place->check_bytes_left))
		return true;
	elf_file_close(debug);
	return false;
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
static bool try_link_candidate(const struct elf_file *file, const struct debug_identity *identity,
			       const struct debug_file_place *place, pid_t root_pid, const char *prefix,
			       const char *middle, struct elf_file *debug)
{
	const char *last_slash = strrchr(place->path_in_target, '/');
	int dir_len = (int)(last_slash - place->path_in_target);
	char path[PATH_MAX];

	return (size_t)snprintf(path, sizeof(path), "%s%.*s%s%s", prefix, dir_len, place->path_in_target, middle,
				identity->link_name) < sizeof(path) &&
	       try_candidate(file, identity, place, root_pid, path, false, debug);
}

/* The candidate paths of one root, in gdb's order; in_target_root: also those beside the file. */
static bool search_root(const struct elf_file *file, const struct debug_identity *identity,
			const struct debug_file_place *place, pid_t root_pid, bool in_target_root,
			struct elf_file *debug)
{
	char path[PATH_MAX];

	if (identity->build_id_len && build_id_path(place, identity, path, sizeof(path)) &&
	    try_candidate(file, identity, place, root_pid, path, true, debug))
		return true;
	if (!identity->has_link || place->path_in_target[0] != '/')
		return false;
	if (in_target_root && (try_link_candidate(file, identity, place, root_pid, "", "/", debug) ||
			       try_link_candidate(file, identity, place, root_pid, "", "/.debug/", debug)))
		return true;
	return try_link_candidate(file, identity, place, root_pid, place->debug_dir, "/", debug);
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

int debug_file_open(const struct elf_file *file, const struct debug_file_place *place, struct elf_file *debug)
{
	struct debug_identity identity = { .build_id_len = 0 };

	if (elf_file_build_id(file, identity.build_id, &identity.build_id_len))
		identity.build_id_len = 0;
	read_debuglink(file, &identity);
	if (!identity.build_id_len && !identity.has_link)
		return -ENOENT;
	/* Ours first where the target has another root: our debug tree is root's, so a container
	 * cannot rename the functions of a file the host maps too (the same build). */
	if (root_is_other(place->pid) && search_root(file, &identity, place, 0, false, debug))
		return 0;
	return search_root(file, &identity, place, place->pid, true, debug) ? 0 : -ENOENT;
}
