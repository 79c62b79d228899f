/* SPDX-License-Identifier: MIT */
/*
 * The one table of file formats (struct pf_format, profile/profile.h) and the
 * lookups the command lines make: by -f name, by a path's extension, by a
 * file's first bytes. Adding a format is adding its descriptor to the table.
 */
#ifndef PYBPFPROF_FORMAT_REGISTRY_H
#define PYBPFPROF_FORMAT_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>

#include "profile/profile.h"

/* By canonical name or alias, any case ("mojo", "bin", "flamegraph"); NULL if none. */
const struct pf_format *format_registry_find_name(const char *name);
/* By the extension of a path's last component, any case (".bin", ".folded"); NULL if none. */
const struct pf_format *format_registry_find_path(const char *path);
/* By a file's first bytes (MOJ, TACH either byte order); NULL if no format's magic. */
const struct pf_format *format_registry_find_magic(const void *head, size_t len);
/* The formats' names for a message, e.g. "mojo, tachyon, collapsed or svg" (separator ", ",
 * last " or ") or "mojo|tachyon|collapsed|svg". Returns out. */
const char *format_registry_names(char *out, size_t size, const char *separator, const char *last);
/* Their extensions for a message: ".mojo, .bin, .collapsed, .svg", or with every_extension
 * each format's aliases too: ".mojo, .bin/.tachyon, .collapsed/.folded/.txt, .svg". Returns out. */
const char *format_registry_extensions(char *out, size_t size, bool every_extension);
/* The format of the file at path: its magic, else its extension. 0, or negative errno with
 * a one-line reason in errbuf (cannot open, unknown format). */
int format_registry_find_file(const char *path, const struct pf_format **format, char *errbuf,
			      size_t errlen);
/* pf_reader_open for a file of any known format (format_registry_find_file). */
int format_registry_open_reader(struct pf_reader **reader_out, const char *path, char *errbuf,
				size_t errlen);

#endif
