// SPDX-License-Identifier: MIT
/*
 * Format-independent front of the profile model: picks a backend, owns the
 * file descriptor, and makes "no half-written output" true. Every writer goes
 * to an unnamed file in its final name's directory (O_TMPFILE: nothing to see,
 * nothing left if the run is killed) that is given the final name only once it
 * holds something worth keeping; an aborted writer leaves the old file as it
 * was. Where the file system has no unnamed files, a new file beside the final
 * name (created exclusively, so a planted link or FIFO is never followed) is
 * renamed into place instead. That directory is reached one component at a
 * time and held open: a symbolic link on the way is followed only if root or
 * the invoking user owns it, never one another user planted (in /tmp, say).
 */
#include "profile/profile.h"
#include "util/errbuf.h"
#include "util/sudo_user.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

struct pf_writer {
	const struct pf_writer_ops *ops;
	void *state;
	const struct pf_format *format;
	int fd;
	char *path;      /* final name */
	char *temp_path; /* where the file is until it is renamed to path; NULL: unnamed (O_TMPFILE) */
	int dir_fd;      /* path's directory, reached as output_directory_open allows */
	const char *base;     /* path's last component, in path */
	bool has_samples;
	bool published;  /* renamed to path: the file is there, written on in place */
	char error[512];
};

struct pf_reader {
	const struct pf_reader_ops *ops;
	void *state;
	int fd;
	const struct pf_format *format;
	char error[512];
};

const char *pf_native_file_stored(const struct pf_frame *frame, char *buffer, size_t size)
{
	const char *file = frame->file ? frame->file : "";

	if (frame->kind != PF_FRAME_NATIVE)
		return file;
	snprintf(buffer, size, "%s%s", PF_NATIVE_FILE_PREFIX, file);
	return buffer;
}

bool pf_native_file_strip(const char **file)
{
	size_t len = strlen(PF_NATIVE_FILE_PREFIX);

	if (strncmp(*file, PF_NATIVE_FILE_PREFIX, len) != 0)
		return false;
	*file += len;
	return true;
}

const char *pf_status_name(uint32_t bit)
{
	switch (bit) {
	case PF_STATUS_HAS_GIL:
		return "has_gil";
	case PF_STATUS_ON_CPU:
		return "on_cpu";
	case PF_STATUS_UNKNOWN:
		return "unknown";
	case PF_STATUS_GIL_REQUESTED:
		return "gil_requested";
	case PF_STATUS_HAS_EXCEPTION:
		return "has_exception";
	case PF_STATUS_MAIN_THREAD:
		return "main_thread";
	case PF_STATUS_GC:
		return "gc";
	case PF_STATUS_IDLE:
		return "idle";
	default:
		return NULL;
	}
}

const char *pf_status_describe(uint32_t status, char *buffer, size_t size)
{
	size_t used = 0;

	if (size)
		buffer[0] = 0;
	for (uint32_t bit = 1; bit && used < size; bit <<= 1) {
		const char *name = (status & bit) ? pf_status_name(bit) : NULL;
		int n;

		if (!name)
			continue;
		n = snprintf(buffer + used, size - used, "%s%s", used ? "," : "", name);
		if (n < 0)
			break;
		used += (size_t)n;
	}
	return buffer;
}

int64_t pf_sample_weight(const struct pf_sample *sample)
{
	if (sample->metrics & PF_METRIC_TIME)
		return (int64_t)sample->time_us;
	if (sample->metrics & PF_METRIC_MEMORY)
		return sample->memory;
	if (sample->metrics & PF_METRIC_COUNT)
		return (int64_t)sample->count;
	return 1;
}

int pf_output_check(const char *path, char *errbuf, size_t errlen)
{
	struct stat info;
	const char *what;
	int err;

	if (lstat(path, &info) < 0)
		return 0; /* absent (or unreachable: creating the file will say why) */
	if (S_ISREG(info.st_mode))
		return 0;
	if (S_ISLNK(info.st_mode)) {
		what = "a symbolic link";
		err = -ELOOP;
	} else if (S_ISDIR(info.st_mode)) {
		what = "a directory";
		err = -EISDIR;
	} else {
		what = S_ISFIFO(info.st_mode) ? "a FIFO" : S_ISSOCK(info.st_mode) ? "a socket" : "a device";
		err = -EINVAL;
	}
	if (errbuf)
		errbuf_format(errbuf, errlen, err,
			      "%s is %s: outputs replace only regular files (remove it or choose another name)",
			      path, what);
	return err;
}

static mode_t output_mode(const struct pf_writer_options *options)
{
	mode_t mask;

	if (options->private_file)
		return 0600;
	mask = umask(0);
	umask(mask);
	return 0644 & ~mask;
}

/* A new name beside path, "PATH.partial-XXXXXX" (allocated), for a file created exclusively. */
static char *name_beside(const char *path)
{
	char *name;

	return asprintf(&name, "%s.partial-XXXXXX", path) < 0 ? NULL : name;
}

/* The last component of path (a name in its directory). */
static const char *last_component(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* Symbolic links followed on the way to an output's directory, at most (the kernel's own bound). */
#define OUTPUT_DIR_LINKS_MAX 40

/*
 * Whether a symbolic link owned by owner may lead to an output's directory: root's and the
 * invoking user's are their own choice; one planted by another user (in /tmp, say) would send
 * root's file wherever that user likes.
 */
static bool output_link_trusted(uid_t owner)
{
	uid_t sudo_uid;
	gid_t sudo_gid;

	return owner == 0 || owner == getuid() || owner == geteuid() ||
	       (sudo_user_ids(&sudo_uid, &sudo_gid) && owner == sudo_uid);
}

static int resolve_directory(int start_fd, const char *path, int *links);

/* Follows the link at link_fd (found in the directory at dir_fd): the directory it names, as an
 * O_PATH descriptor, or a negative errno. */
static int follow_output_link(int dir_fd, int link_fd, const struct stat *info, int *links)
{
	char target[PATH_MAX];
	ssize_t len;
	int start_fd;

	if (!output_link_trusted(info->st_uid))
		return -EACCES;
	if (++*links > OUTPUT_DIR_LINKS_MAX)
		return -ELOOP;
	len = readlinkat(link_fd, "", target, sizeof(target));
	if (len < 0)
		return -errno;
	if ((size_t)len >= sizeof(target))
		return -ENAMETOOLONG;
	target[len] = 0;
	start_fd = target[0] == '/' ? open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)
				    : fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
	if (start_fd < 0)
		return -errno;
	return resolve_directory(start_fd, target, links);
}

/*
 * The directory path names from start_fd (taken: closed here), one component at a time with
 * no link followed by the kernel: each symbolic link on the way is checked, then followed here.
 * An O_PATH descriptor of it, or a negative errno.
 */
static int resolve_directory(int start_fd, const char *path, int *links)
{
	char component[NAME_MAX + 1];
	int fd = start_fd;

	while (*path) {
		size_t len = strcspn(path, "/");
		struct stat info;
		int next, err = 0;

		if (len > NAME_MAX) {
			close(fd);
			return -ENAMETOOLONG;
		}
		memcpy(component, path, len);
		component[len] = 0;
		path += len;
		path += strspn(path, "/");
		if (len == 0 || strcmp(component, ".") == 0)
			continue;
		next = openat(fd, component, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0 || fstat(next, &info) < 0) {
			err = -errno;
		} else if (S_ISLNK(info.st_mode)) {
			int target = follow_output_link(fd, next, &info, links);

			close(next);
			next = target;
			err = target < 0 ? target : 0;
		} else if (!S_ISDIR(info.st_mode)) {
			err = -ENOTDIR;
		}
		close(fd);
		if (err) {
			if (next >= 0)
				close(next);
			return err;
		}
		fd = next;
	}
	return fd;
}

/* The directory of path, reached without following a symbolic link another user planted on the
 * way: an O_PATH descriptor, or a negative errno (-EACCES for such a link). */
static int output_directory_open(const char *path)
{
	char directory[PATH_MAX];
	int links = 0, start_fd;
	size_t len = (size_t)(last_component(path) - path);

	if (len >= sizeof(directory))
		return -ENAMETOOLONG;
	memcpy(directory, path, len);
	directory[len] = 0;
	start_fd = open(path[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (start_fd < 0)
		return -errno;
	return resolve_directory(start_fd, directory, &links);
}

/* An unnamed file in the output's directory; its descriptor, or a negative errno (-EOPNOTSUPP
 * and the like where the file system has none). */
static int create_unnamed(const struct pf_writer *writer)
{
	/* 0600 until the mode is set below: never readable by others before it is meant to be */
	int fd = openat(writer->dir_fd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);

	return fd < 0 ? -errno : fd;
}

static void randomize_name(char *name);

/* A new file beside the output, created exclusively under a random name (writer->temp_path). */
static int create_named(struct pf_writer *writer)
{
	int err = -EEXIST;

	for (int attempt = 0; err == -EEXIST && attempt < 16; attempt++) {
		free(writer->temp_path);
		writer->temp_path = name_beside(writer->path);
		if (!writer->temp_path)
			return -ENOMEM;
		randomize_name(writer->temp_path);
		writer->fd = openat(writer->dir_fd, last_component(writer->temp_path),
				    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		err = writer->fd < 0 ? -errno : 0;
	}
	if (err) {
		free(writer->temp_path);
		writer->temp_path = NULL;
	}
	return err;
}

/* The new file beside the final name (same directory: linking or renaming it there is atomic). */
static int create_output(struct pf_writer *writer, const struct pf_writer_options *options)
{
	uid_t uid;
	gid_t gid;

	writer->dir_fd = output_directory_open(writer->path);
	if (writer->dir_fd < 0)
		return writer->dir_fd;
	writer->base = last_component(writer->path);
	writer->fd = create_unnamed(writer);
	if (writer->fd < 0) {
		/* No unnamed files here (an old kernel, a file system without them): a named one. */
		int err = create_named(writer);

		if (err)
			return err;
	}
	/* Both make 0600. Failing to widen it only leaves it private. */
	(void)!fchmod(writer->fd, output_mode(options));
	/* Under sudo the profile is the invoking user's, as if they had written it. A file
	 * system without owners (vfat) cannot say so; the profile is still worth writing. */
	if (sudo_user_ids(&uid, &gid))
		(void)!fchown(writer->fd, uid, gid);
	return 0;
}

/* Links the unnamed file at name (through /proc/self/fd: no capability needed; without /proc,
 * by its descriptor, as root may); a link never replaces a name (-EEXIST), nor follows a link
 * planted there. */
static int link_at(const struct pf_writer *writer, const char *name)
{
	char fd_path[64];

	snprintf(fd_path, sizeof(fd_path), "/proc/self/fd/%d", writer->fd);
	if (linkat(AT_FDCWD, fd_path, writer->dir_fd, last_component(name), AT_SYMLINK_FOLLOW) == 0)
		return 0;
	if (errno != ENOENT)
		return -errno;
	return linkat(writer->fd, "", writer->dir_fd, last_component(name), AT_EMPTY_PATH) < 0 ? -errno : 0;
}

/* Replaces the X's that end name with random letters and digits. */
static void randomize_name(char *name)
{
	static const char letters[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	unsigned char noise[6] = { 0 };
	size_t len = strlen(name);

	/* Short of entropy the name stays as it is: the link is refused if taken, and tried again. */
	if (getrandom(noise, sizeof(noise), GRND_NONBLOCK) != (ssize_t)sizeof(noise))
		return;
	for (size_t i = 0; i < sizeof(noise) && i < len; i++)
		name[len - 1 - i] = letters[noise[i] % (sizeof(letters) - 1)];
}

/*
 * Gives the unnamed file its final name: at once where no file has it; else a fresh name
 * beside it (left in writer->temp_path) for the rename over the older file that follows.
 */
static int link_unnamed(struct pf_writer *writer)
{
	int err = link_at(writer, writer->path);

	if (err == 0) {
		writer->published = true;
		return 0;
	}
	for (int attempt = 0; err == -EEXIST && attempt < 16; attempt++) {
		char *name = name_beside(writer->path);

		if (!name)
			return -ENOMEM;
		randomize_name(name);
		err = link_at(writer, name);
		if (err == 0) {
			writer->temp_path = name;
			return 0;
		}
		free(name);
	}
	return errbuf_format(writer->error, sizeof(writer->error), err, "cannot create %s: %s", writer->path,
			     strerror(-err));
}

static int publish_output(struct pf_writer *writer)
{
	if (writer->published)
		return 0;
	if (!writer->temp_path) {
		int err = link_unnamed(writer);

		if (err || writer->published)
			return err;
	}
	if (renameat(writer->dir_fd, last_component(writer->temp_path), writer->dir_fd, writer->base) < 0) {
		int err = -errno;

		return errbuf_format(writer->error, sizeof(writer->error), err,
				     "cannot rename %s to %s: %s", writer->temp_path, writer->path,
				     strerror(-err));
	}
	writer->published = true;
	return 0;
}

/* The name our file has now; NULL while it has none (unnamed). */
static const char *current_path(const struct pf_writer *writer)
{
	return writer->published ? writer->path : writer->temp_path;
}

/* Removes our file's name (path or temp_path) from the output's directory. */
static void unlink_output(const struct pf_writer *writer, const char *name)
{
	unlinkat(writer->dir_fd, last_component(name), 0);
}

static void free_writer(struct pf_writer *writer)
{
	if (writer->dir_fd >= 0)
		close(writer->dir_fd);
	free(writer->path);
	free(writer->temp_path);
	free(writer);
}

int pf_writer_open(struct pf_writer **writer_out, const char *path,
		   const struct pf_format *format, const struct pf_writer_options *options)
{
	struct pf_writer_options defaults = PF_WRITER_OPTIONS_DEFAULT;
	struct pf_writer *writer;
	int err;

	*writer_out = NULL;
	if (!options)
		options = &defaults;
	if (!format || !format->writer_create)
		return -EINVAL;
	err = pf_output_check(path, NULL, 0);
	if (err)
		return err;
	writer = calloc(1, sizeof(*writer));
	if (!writer)
		return -ENOMEM;
	writer->fd = -1;
	writer->dir_fd = -1;
	writer->format = format;
	writer->path = strdup(path);
	if (!writer->path) {
		free_writer(writer);
		return -ENOMEM;
	}
	err = create_output(writer, options);
	if (err) {
		free_writer(writer);
		return err;
	}
	err = format->writer_create(writer->fd, options, &writer->state, &writer->ops);
	if (err) {
		close(writer->fd);
		if (writer->temp_path)
			unlink_output(writer, writer->temp_path);
		free_writer(writer);
		return err;
	}
	*writer_out = writer;
	return 0;
}

int pf_writer_set_metadata(struct pf_writer *writer, const char *key, const char *value)
{
	return writer->ops->set_metadata(writer->state, key, value);
}

static int set_metadata_u64(struct pf_writer *writer, const char *key, uint64_t value)
{
	char text[32];

	snprintf(text, sizeof(text), "%" PRIu64, value);
	return pf_writer_set_metadata(writer, key, text);
}

int pf_writer_set_run_info(struct pf_writer *writer, const struct pf_run_info *info)
{
	int err;

	if (writer->ops->set_run_info)
		return writer->ops->set_run_info(writer->state, info);
	err = set_metadata_u64(writer, "interval", info->interval_us);
	if (!err)
		err = pf_writer_set_metadata(writer, "mode", info->mode);
	if (!err && info->own_mode)
		err = pf_writer_set_metadata(writer, "pybpfprof_mode", info->own_mode);
	if (!err && info->multiprocess)
		err = pf_writer_set_metadata(writer, "multiprocess", "on");
	if (!err)
		err = set_metadata_u64(writer, "frequency", info->frequency_hz);
	if (!err)
		err = set_metadata_u64(writer, "start_time_us", info->start_time_us);
	return err;
}

int pf_writer_set_python_version(struct pf_writer *writer, const struct pf_python_version *version)
{
	char text[32];

	if (writer->ops->set_python_version)
		return writer->ops->set_python_version(writer->state, version);
	snprintf(text, sizeof(text), "%u.%u.%u", version->major, version->minor, version->micro);
	return pf_writer_set_metadata(writer, "python", text);
}

/* "a/b" */
static int set_metadata_ratio(struct pf_writer *writer, const char *key, uint64_t part, uint64_t whole)
{
	char text[64];

	snprintf(text, sizeof(text), "%" PRIu64 "/%" PRIu64, part, whole);
	return pf_writer_set_metadata(writer, key, text);
}

double pf_run_totals_error_rate(const struct pf_run_totals *totals)
{
	char text[32];

	/* Rounded as printf rounds the quotient (half-even on its exact binary value), which
	 * arithmetic on the double cannot reproduce in every case. */
	snprintf(text, sizeof(text), "%.6f",
		 (double)pf_run_totals_errors(totals) / (double)totals->samples);
	return strtod(text, NULL);
}

int pf_writer_set_run_totals(struct pf_writer *writer, const struct pf_run_totals *totals)
{
	uint64_t errors = pf_run_totals_errors(totals);
	int err;

	if (writer->ops->set_run_totals)
		return writer->ops->set_run_totals(writer->state, totals);
	err = set_metadata_u64(writer, "duration", totals->duration_us);
	if (!err)
		err = set_metadata_u64(writer, "samples", totals->samples);
	if (!err)
		err = set_metadata_u64(writer, "lost_samples", totals->lost_samples);
	if (!err)
		err = set_metadata_u64(writer, "truncated_stacks", totals->truncated_stacks);
	if (!err)
		err = set_metadata_u64(writer, "read_faults", totals->read_faults);
	if (!err)
		err = set_metadata_u64(writer, "unresolved_frames", totals->unresolved_frames);
	if (!err)
		err = set_metadata_ratio(writer, "errors", errors, totals->samples);
	if (!err)
		err = set_metadata_ratio(writer, "saturation", totals->lost_samples,
					 totals->lost_samples + totals->samples);
	if (!err && totals->samples) {
		char text[32];

		snprintf(text, sizeof(text), "%.6f", pf_run_totals_error_rate(totals));
		err = pf_writer_set_metadata(writer, "error_rate", text);
	}
	return err;
}

int pf_writer_add_sample(struct pf_writer *writer, const struct pf_sample *sample)
{
	int err = writer->ops->add_sample(writer->state, sample);

	if (!err)
		writer->has_samples = true;
	return err;
}

int pf_writer_forget_pid(struct pf_writer *writer, uint32_t pid)
{
	return writer->ops && writer->ops->forget_pid ? writer->ops->forget_pid(writer->state, pid) : 0;
}

size_t pf_writer_held_bytes(const struct pf_writer *writer)
{
	return writer->ops && writer->ops->held_bytes ? writer->ops->held_bytes(writer->state) : 0;
}

uint64_t pf_writer_frames_past_budget(const struct pf_writer *writer)
{
	return writer->ops && writer->ops->frames_past_budget ? writer->ops->frames_past_budget(writer->state) : 0;
}

int pf_writer_flush(struct pf_writer *writer)
{
	int err = writer->ops->flush(writer->state);

	/* A killed run still leaves the samples so far at the final name. */
	if (!err && writer->has_samples && writer->format->flush_readable)
		err = publish_output(writer);
	return err;
}

const char *pf_writer_error(const struct pf_writer *writer)
{
	const char *backend = writer->ops ? writer->ops->error(writer->state) : NULL;

	if (writer->error[0])
		return writer->error;
	return backend && *backend ? backend : "write failed";
}

int pf_writer_close(struct pf_writer *writer)
{
	bool was_published = writer->published;
	int err = writer->ops->finish(writer->state);

	/* An unnamed file is named through its descriptor: before it is closed. */
	if (!err && !writer->published && !writer->temp_path)
		err = link_unnamed(writer);
	if (!err && close(writer->fd) < 0)
		err = -errno;
	else if (err)
		close(writer->fd);
	writer->fd = -1;
	if (!err)
		err = publish_output(writer);
	/* A file that failed to close is not left as the profile: none was there before it. */
	if (err && writer->published && !was_published)
		unlink_output(writer, writer->path);
	if (err && !writer->published && writer->temp_path)
		unlink_output(writer, writer->temp_path);
	writer->ops->destroy(writer->state);
	free_writer(writer);
	return err;
}

void pf_writer_abort(struct pf_writer *writer)
{
	if (!writer)
		return;
	writer->ops->destroy(writer->state);
	if (writer->fd >= 0)
		close(writer->fd);
	if (current_path(writer))
		unlink_output(writer, current_path(writer));
	free_writer(writer);
}

int pf_input_open(const char *path, char *errbuf, size_t errlen)
{
	/* O_NONBLOCK: opening a FIFO with no writer returns at once, so it can be refused. */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	struct stat info;
	int err;

	if (fd < 0)
		return errbuf_format(errbuf, errlen, -errno, "cannot open: %s", strerror(errno));
	if (fstat(fd, &info) < 0) {
		err = errbuf_format(errbuf, errlen, -errno, "cannot open: %s", strerror(errno));
		close(fd);
		return err;
	}
	if (!S_ISREG(info.st_mode)) {
		close(fd);
		return errbuf_format(errbuf, errlen, S_ISDIR(info.st_mode) ? -EISDIR : -EINVAL,
				     "not a regular file (%s): profiles are read from files only",
				     S_ISDIR(info.st_mode)    ? "a directory"
				     : S_ISFIFO(info.st_mode) ? "a FIFO"
				     : S_ISSOCK(info.st_mode) ? "a socket"
							      : "a device");
	}
	/* Back to blocking reads (O_NONBLOCK means nothing to a regular file, but readers need not
	 * know it was set). */
	if (fcntl(fd, F_SETFL, 0) < 0) {
		err = errbuf_format(errbuf, errlen, -errno, "cannot open: %s", strerror(errno));
		close(fd);
		return err;
	}
	return fd;
}

int pf_reader_open(struct pf_reader **reader_out, const char *path,
		   const struct pf_format *format, char *errbuf, size_t errlen)
{
	struct pf_reader *reader;
	int err;

	*reader_out = NULL;
	reader = calloc(1, sizeof(*reader));
	if (!reader)
		return -ENOMEM;
	reader->format = format;
	reader->fd = pf_input_open(path, errbuf, errlen);
	if (reader->fd < 0) {
		err = reader->fd;
		free(reader);
		return err;
	}
	if (!format->reader_create) {
		errbuf_format(errbuf, errlen, 0,
			      "%s: this format cannot be read back (it keeps no samples)",
			      format->name);
		close(reader->fd);
		free(reader);
		return -EINVAL;
	}
	err = format->reader_create(reader->fd, &reader->state, &reader->ops, reader->error,
				    sizeof(reader->error));
	if (err) {
		errbuf_format(errbuf, errlen, err, "%s",
			      reader->error[0] ? reader->error : strerror(-err));
		close(reader->fd);
		free(reader);
		return err;
	}
	*reader_out = reader;
	return 0;
}

int pf_reader_next_sample(struct pf_reader *reader, struct pf_sample *sample)
{
	return reader->ops->next_sample(reader->state, sample);
}

size_t pf_reader_metadata_count(const struct pf_reader *reader)
{
	return reader->ops->metadata_count(reader->state);
}

void pf_reader_metadata_at(const struct pf_reader *reader, size_t index, const char **key,
			   const char **value)
{
	reader->ops->metadata_at(reader->state, index, key, value);
}

const char *pf_reader_metadata(const struct pf_reader *reader, const char *key)
{
	const char *found = NULL;
	size_t count = pf_reader_metadata_count(reader);

	for (size_t i = 0; i < count; i++) {
		const char *k, *v;

		pf_reader_metadata_at(reader, i, &k, &v);
		if (strcmp(k, key) == 0)
			found = v;
	}
	return found;
}

const char *pf_reader_error(const struct pf_reader *reader)
{
	const char *backend = reader->ops->error(reader->state);

	return backend && *backend ? backend : reader->error;
}

const struct pf_format *pf_reader_format(const struct pf_reader *reader)
{
	return reader->format;
}

void pf_reader_close(struct pf_reader *reader)
{
	if (!reader)
		return;
	reader->ops->destroy(reader->state);
	close(reader->fd);
	free(reader);
}

int pf_frame_function_label(const struct pf_frame *frame, char *label, size_t size)
{
	int len;

	switch (frame->kind) {
	case PF_FRAME_KERNEL:
		len = snprintf(label, size, "%s [kernel]", frame->name);
		break;
	case PF_FRAME_INVALID:
		len = snprintf(label, size, "[truncated stack]");
		break;
	default:
		/* Collapsed files name native frames without their file. */
		if (frame->file && frame->file[0])
			len = snprintf(label, size, "%s (%s)", frame->name, frame->file);
		else
			len = snprintf(label, size, "%s", frame->name);
		break;
	}
	if (len < 0 || size == 0)
		return -EINVAL;
	return (size_t)len >= size ? (int)size - 1 : len;
}

const char *pf_frame_kind_name(enum pf_frame_kind kind)
{
	switch (kind) {
	case PF_FRAME_PYTHON:
		return "python";
	case PF_FRAME_NATIVE:
		return "native";
	case PF_FRAME_KERNEL:
		return "kernel";
	default:
		return "invalid";
	}
}

/* Stack ids are never reused in the process, whoever gives them; they die all at once, as the
 * resolver forgets its kept stacks: one mark says which. */
static uint64_t last_stack_id;
static uint64_t stack_ids_dead_below;

uint64_t pf_stack_id_new(void)
{
	return ++last_stack_id;
}

uint64_t pf_stack_ids_dead_below(void)
{
	return stack_ids_dead_below;
}

void pf_stack_ids_die(void)
{
	stack_ids_dead_below = last_stack_id + 1;
}
