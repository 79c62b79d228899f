// SPDX-License-Identifier: MIT
/*
 * Format-independent front of the profile model: picks a backend, owns the
 * file descriptor, and makes "no half-written output" true: atomic writers
 * go to a temporary name renamed at close; an aborted writer leaves nothing.
 */
#include "profile/profile.h"
#include "util/errbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int64_t pf_sample_weight(const struct pf_sample *sample)
{
	if (sample->metrics & PF_METRIC_TIME)
		return (int64_t)sample->time_us;
	if (sample->metrics & PF_METRIC_MEMORY)
		return sample->memory;
	return 1;
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
	err = format->writer_create(writer->fd, options, &writer->state, &writer->ops);
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
	reader->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (reader->fd < 0) {
		err = errbuf_format(errbuf, errlen, -errno, "cannot open: %s", strerror(errno));
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
