/* SPDX-License-Identifier: MIT */
/* Strings in the dump text form: double-quoted, C escapes, non-printables as \xNN. */
#ifndef PYBPFPROF_TEXT_QUOTE_H
#define PYBPFPROF_TEXT_QUOTE_H

#include <stddef.h>
#include <stdio.h>

void fput_quoted(FILE *out, const char *text, size_t len);
static inline void fput_quoted_cstr(FILE *out, const char *text)
{
	size_t len = 0;

	while (text[len])
		len++;
	fput_quoted(out, text, len);
}

#endif
