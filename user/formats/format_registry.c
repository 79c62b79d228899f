// SPDX-License-Identifier: MIT
#include "formats/format_registry.h"

#include "formats/collapsed.h"
#include "formats/flamegraph.h"
#include "formats/gecko.h"
#include "formats/jsonl.h"
#include "formats/mojo/mojo.h"
#include "formats/pprof/pprof.h"
#include "formats/pstats.h"
#include "formats/speedscope.h"
#include "formats/tachyon/tachyon.h"
#include "util/array.h"
#include "util/errbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static const uint8_t tachyon_magic_le[4] = { 0x48, 0x43, 0x41, 0x54 };
static const uint8_t tachyon_magic_be[4] = { 0x54, 0x41, 0x43, 0x48 };

static const struct pf_format formats[] = {
	{
		.name = "mojo",
		.extensions = { "mojo" },
		.magics = { { (const uint8_t *)MOJO_MAGIC, sizeof(MOJO_MAGIC) - 1 } },
		.default_file = "pybpfprof.mojo",
		.flush_readable = true,
		.writer_create = mojo_writer_create,
		.reader_create = mojo_reader_create,
		.dump = mojo_dump,
	},
	{
		.name = "tachyon",
		.aliases = { "bin" },
		.extensions = { "bin", "tachyon" },
		.magics = { { tachyon_magic_le, sizeof(tachyon_magic_le) },
			    { tachyon_magic_be, sizeof(tachyon_magic_be) } },
		.default_file = "pybpfprof.bin",
		.timestamps = true,
		.flush_readable = true,
		.writer_create = tachyon_writer_create,
		.reader_create = tachyon_reader_create,
		.dump = tachyon_dump,
	},
	{
		.name = "collapsed",
		.aliases = { "folded" },
		.extensions = { "collapsed", "folded", "txt" },
		.default_file = "pybpfprof.collapsed",
		.aggregated = true,
		.writer_create = collapsed_writer_create,
		.reader_create = collapsed_reader_create,
	},
	{
		.name = "svg",
		.aliases = { "flamegraph" },
		.extensions = { "svg" },
		.default_file = "pybpfprof.svg",
		.writer_create = flamegraph_writer_create,
	},
	{
		.name = "pprof",
		.extensions = { "pb.gz", "pprof" },
		.default_file = "pybpfprof.pb.gz",
		.aggregated = true,
		.writer_create = pprof_writer_create,
	},
	{
		.name = "speedscope",
		.extensions = { "speedscope.json", "json" },
		.default_file = "pybpfprof.speedscope.json",
		.writer_create = speedscope_writer_create,
	},
	{
		.name = "pstats",
		.aliases = { "prof" },
		.extensions = { "pstats", "prof" },
		.default_file = "pybpfprof.pstats",
		.aggregated = true,
		.writer_create = pstats_writer_create,
	},
	{
		.name = "gecko",
		.aliases = { "firefox" },
		.extensions = { "gecko.json" },
		.default_file = "pybpfprof.gecko.json",
		.writer_create = gecko_writer_create,
	},
	{
		.name = "gecko-gz",
		.extensions = { "gecko.json.gz" },
		.default_file = "pybpfprof.gecko.json.gz",
		.writer_create = gecko_gz_writer_create,
	},
	{
		.name = "jsonl",
		.aliases = { "ndjson" },
		.extensions = { "jsonl", "ndjson" },
		.default_file = "pybpfprof.jsonl",
		.flush_readable = true,
		.writer_create = jsonl_writer_create,
	},
};

static bool name_in(const char *const *names, size_t count, const char *name)
{
	for (size_t i = 0; i < count && names[i]; i++)
		if (strcasecmp(names[i], name) == 0)
			return true;
	return false;
}

const struct pf_format *format_registry_find_name(const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(formats); i++)
		if (strcasecmp(formats[i].name, name) == 0 ||
		    name_in(formats[i].aliases, PF_FORMAT_MAX_NAMES, name))
			return &formats[i];
	return NULL;
}

/* Whether the file name ends with "." + extension (which may hold dots: "pb.gz"). */
static bool has_extension(const char *base, const char *extension)
{
	size_t base_len = strlen(base), len = strlen(extension);

	return base_len > len + 1 && base[base_len - len - 1] == '.' &&
	       strcasecmp(base + base_len - len, extension) == 0;
}

/* The longest extension that matches wins: "a.gecko.json" is gecko's, not speedscope's ".json". */
const struct pf_format *format_registry_find_path(const char *path)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	const struct pf_format *found = NULL;
	size_t found_len = 0;

	for (size_t i = 0; i < ARRAY_SIZE(formats); i++)
		for (size_t e = 0; e < PF_FORMAT_MAX_NAMES && formats[i].extensions[e]; e++)
			if (strlen(formats[i].extensions[e]) > found_len &&
			    has_extension(base, formats[i].extensions[e])) {
				found = &formats[i];
				found_len = strlen(formats[i].extensions[e]);
			}
	return found;
}

const struct pf_format *format_registry_find_magic(const void *head, size_t len)
{
	for (size_t i = 0; i < ARRAY_SIZE(formats); i++)
		for (size_t m = 0; m < PF_FORMAT_MAX_MAGICS && formats[i].magics[m].len; m++)
			if (len >= formats[i].magics[m].len &&
			    memcmp(head, formats[i].magics[m].bytes, formats[i].magics[m].len) == 0)
				return &formats[i];
	return NULL;
}

/* Appends text to out (size bytes, *used taken so far), cutting it short rather than overflowing. */
static void append(char *out, size_t size, size_t *used, const char *text)
{
	int len = snprintf(out + *used, size - *used, "%s", text);

	if (len > 0)
		*used += (size_t)len < size - *used ? (size_t)len : size - *used - 1;
}

const char *format_registry_names(char *out, size_t size, const char *separator, const char *last)
{
	size_t used = 0;

	out[0] = 0;
	for (size_t i = 0; i < ARRAY_SIZE(formats); i++) {
		if (i)
			append(out, size, &used, i + 1 == ARRAY_SIZE(formats) ? last : separator);
		append(out, size, &used, formats[i].name);
	}
	return out;
}

const char *format_registry_extensions(char *out, size_t size, bool every_extension)
{
	size_t used = 0;

	out[0] = 0;
	for (size_t i = 0; i < ARRAY_SIZE(formats); i++) {
		for (size_t e = 0; e < PF_FORMAT_MAX_NAMES && formats[i].extensions[e]; e++) {
			if (e && !every_extension)
				break;
			append(out, size, &used, e ? "/." : i ? ", ." : ".");
			append(out, size, &used, formats[i].extensions[e]);
		}
	}
	return out;
}

int format_registry_find_file(const char *path, const struct pf_format **format, char *errbuf,
			      size_t errlen)
{
	uint8_t head[8];
	ssize_t got;
	int fd = pf_input_open(path, errbuf, errlen);

	*format = NULL;
	if (fd < 0)
		return fd;
	got = pread(fd, head, sizeof(head), 0);
	if (got < 0) {
		int err = errbuf_format(errbuf, errlen, -errno, "%s", strerror(errno));

		close(fd);
		return err;
	}
	close(fd);
	*format = format_registry_find_magic(head, (size_t)got);
	if (!*format)
		*format = format_registry_find_path(path);
	if (!*format)
		return errbuf_format(
			errbuf, errlen, -EPROTO,
			"unknown format (neither MOJO nor Tachyon, and no known extension)");
	return 0;
}

int format_registry_open_reader(struct pf_reader **reader_out, const char *path, char *errbuf,
				size_t errlen)
{
	const struct pf_format *format;
	int err = format_registry_find_file(path, &format, errbuf, errlen);

	*reader_out = NULL;
	if (err)
		return err;
	return pf_reader_open(reader_out, path, format, errbuf, errlen);
}
