// SPDX-License-Identifier: MIT
/*
 * Format-independent front of the profile model: picks a backend, owns the
 * file descriptor, and makes "no half-written output" true: atomic writers
 * go to a temporary name renamed at close; an aborted writer leaves nothing.
 */
#include "profile/profile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

struct pf_writer {
	const struct pf_writer_ops *ops;
	void *state;
	int fd;
	char *path;      /* final name */
	char *temp_path; /* where we write when atomic, else NULL */
	char error[512];
};

struct pf_reader {
	const struct pf_reader_ops *ops;
	void *state;
	int fd;
	enum pf_format format;
	char error[512];
};

enum pf_format pf_format_from_name(const char *name)
{
	if (!name)
		return PF_FORMAT_UNKNOWN;
	if (strcasecmp(name, "mojo") == 0)
		return PF_FORMAT_MOJO;
	if (strcasecmp(name, "tachyon") == 0 || strcasecmp(name, "bin") == 0)
		return PF_FORMAT_TACHYON;
	if (strcasecmp(name, "collapsed") == 0 || strcasecmp(name, "folded") == 0)
		return PF_FORMAT_COLLAPSED;
	if (strcasecmp(name, "svg") == 0 || strcasecmp(name, "flamegraph") == 0)
		return PF_FORMAT_SVG;
	return PF_FORMAT_UNKNOWN;
}

enum pf_format pf_format_from_path(const char *path)
{
	const char *slash = strrchr(path, '/');
	const char *dot = strrchr(slash ? slash : path, '.');

	if (!dot)
		return PF_FORMAT_UNKNOWN;
	dot++;
	if (strcasecmp(dot, "mojo") == 0)
		return PF_FORMAT_MOJO;
	if (strcasecmp(dot, "bin") == 0 || strcasecmp(dot, "tachyon") == 0)
		return PF_FORMAT_TACHYON;
	if (strcasecmp(dot, "collapsed") == 0 || strcasecmp(dot, "folded") == 0 ||
	    strcasecmp(dot, "txt") == 0)
		return PF_FORMAT_COLLAPSED;
	if (strcasecmp(dot, "svg") == 0)
		return PF_FORMAT_SVG;
	return PF_FORMAT_UNKNOWN;
}

enum pf_format pf_format_from_magic(const void *head, size_t len)
{
	static const uint8_t tachyon_le[4] = { 0x48, 0x43, 0x41, 0x54 };
	static const uint8_t tachyon_be[4] = { 0x54, 0x41, 0x43, 0x48 };

	if (len >= 3 && memcmp(head, "MOJ", 3) == 0)
		return PF_FORMAT_MOJO;
	if (len >= 4 && (memcmp(head, tachyon_le, 4) == 0 || memcmp(head, tachyon_be, 4) == 0))
		return PF_FORMAT_TACHYON;
	return PF_FORMAT_UNKNOWN;
}

const char *pf_format_name(enum pf_format format)
{
	switch (format) {
	case PF_FORMAT_MOJO:
		return "mojo";
	case PF_FORMAT_TACHYON:
		return "tachyon";
	case PF_FORMAT_COLLAPSED:
		return "collapsed";
	case PF_FORMAT_SVG:
		return "svg";
	default:
		return "unknown";
	}
}

static int create_backend(struct pf_writer *writer, enum pf_format format,
			  const struct pf_writer_options *options)
{
	switch (format) {
	case PF_FORMAT_MOJO:
		return mojo_writer_create(writer->fd, options, &writer->state, &writer->ops);
	case PF_FORMAT_TACHYON:
		return tachyon_writer_create(writer->fd, options, &writer->state, &writer->ops);
	case PF_FORMAT_COLLAPSED:
		return collapsed_writer_create(writer->fd, options, &writer->state, &writer->ops);
	case PF_FORMAT_SVG:
		return flamegraph_writer_create(writer->fd, options, &writer->state, &writer->ops);
	default:
		return -EINVAL;
	}
}

static int open_output(struct pf_writer *writer, bool atomic)
{
	if (!atomic) {
		writer->fd = open(writer->path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		return writer->fd < 0 ? -errno : 0;
	}
	if (asprintf(&writer->temp_path, "%s.partial-XXXXXX", writer->path) < 0) {
		writer->temp_path = NULL;
		return -ENOMEM;
	}
	writer->fd = mkostemp(writer->temp_path, O_CLOEXEC);
	if (writer->fd < 0) {
		int err = -errno;

		free(writer->temp_path);
		writer->temp_path = NULL;
		return err;
	}
	/* mkostemp makes 0600; a profile should be as readable as any file we create.
	 * Failing here only leaves it private, so the result is ignored. */
	(void)!fchmod(writer->fd, 0644);
	return 0;
}

static void free_writer(struct pf_writer *writer)
{
	free(writer->path);
	free(writer->temp_path);
	free(writer);
}

int pf_writer_open(struct pf_writer **writer_out, const char *path, enum pf_format format,
		   const struct pf_writer_options *options)
{
	struct pf_writer_options defaults = PF_WRITER_OPTIONS_DEFAULT;
	struct pf_writer *writer;
	int err;

	*writer_out = NULL;
	if (!options)
		options = &defaults;
	if (format == PF_FORMAT_UNKNOWN)
		return -EINVAL;
	writer = calloc(1, sizeof(*writer));
	if (!writer)
		return -ENOMEM;
	writer->fd = -1;
	writer->path = strdup(path);
	if (!writer->path) {
		free_writer(writer);
		return -ENOMEM;
	}
	err = open_output(writer, options->atomic);
	if (err) {
		free_writer(writer);
		return err;
	}
	err = create_backend(writer, format, options);
	if (err) {
		close(writer->fd);
		unlink(writer->temp_path ? writer->temp_path : writer->path);
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

int pf_writer_add_sample(struct pf_writer *writer, const struct pf_sample *sample)
{
	return writer->ops->add_sample(writer->state, sample);
}

int pf_writer_flush(struct pf_writer *writer)
{
	return writer->ops->flush(writer->state);
}

const char *pf_writer_error(const struct pf_writer *writer)
{
	const char *backend = writer->ops ? writer->ops->error(writer->state) : NULL;

	if (writer->error[0])
		return writer->error;
	return backend && *backend ? backend : "write failed";
}

uint64_t pf_writer_bytes(const struct pf_writer *writer)
{
	return writer->ops->bytes(writer->state);
}

int pf_writer_close(struct pf_writer *writer)
{
	int err = writer->ops->finish(writer->state);

	if (!err && close(writer->fd) < 0)
		err = -errno;
	else if (err)
		close(writer->fd);
	writer->fd = -1;
	if (!err && writer->temp_path && rename(writer->temp_path, writer->path) < 0)
		err = -errno;
	if (err && writer->temp_path)
		unlink(writer->temp_path);
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
	unlink(writer->temp_path ? writer->temp_path : writer->path);
	free_writer(writer);
}

static int sniff_format(int fd, enum pf_format *format)
{
	uint8_t head[4];
	ssize_t got = pread(fd, head, sizeof(head), 0);

	if (got < 0)
		return -errno;
	*format = pf_format_from_magic(head, (size_t)got);
	return 0;
}

static int create_reader_backend(struct pf_reader *reader)
{
	switch (reader->format) {
	case PF_FORMAT_MOJO:
		return mojo_reader_create(reader->fd, &reader->state, &reader->ops, reader->error,
					  sizeof(reader->error));
	case PF_FORMAT_TACHYON:
		return tachyon_reader_create(reader->fd, &reader->state, &reader->ops, reader->error,
					     sizeof(reader->error));
	case PF_FORMAT_COLLAPSED:
		return collapsed_reader_create(reader->fd, &reader->state, &reader->ops,
					       reader->error, sizeof(reader->error));
	default:
		return -EINVAL;
	}
}

int pf_reader_open(struct pf_reader **reader_out, const char *path, enum pf_format format,
		   char *errbuf, size_t errlen)
{
	struct pf_reader *reader;
	int err;

	*reader_out = NULL;
	reader = calloc(1, sizeof(*reader));
	if (!reader)
		return -ENOMEM;
	reader->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (reader->fd < 0) {
		err = -errno;
		snprintf(errbuf, errlen, "cannot open: %s", strerror(-err));
		free(reader);
		return err;
	}
	if (format == PF_FORMAT_UNKNOWN) {
		err = sniff_format(reader->fd, &format);
		if (!err && format == PF_FORMAT_UNKNOWN)
			format = pf_format_from_path(path);
		if (!err && format == PF_FORMAT_UNKNOWN)
			err = -EPROTO;
		if (err) {
			snprintf(errbuf, errlen, "%s",
				 err == -EPROTO ? "unknown format (neither MOJO nor Tachyon, and no known extension)"
						: strerror(-err));
			close(reader->fd);
			free(reader);
			return err;
		}
	}
	reader->format = format;
	if (format == PF_FORMAT_SVG) {
		snprintf(errbuf, errlen, "an SVG flame graph cannot be read back (it keeps no samples)");
		close(reader->fd);
		free(reader);
		return -EINVAL;
	}
	err = create_reader_backend(reader);
	if (err) {
		snprintf(errbuf, errlen, "%s", reader->error[0] ? reader->error : strerror(-err));
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

enum pf_format pf_reader_format(const struct pf_reader *reader)
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
