/* SPDX-License-Identifier: MIT */
/*
 * Text from a target or a file, made safe for a terminal: control bytes (C0,
 * DEL, C1, and so every escape sequence) and bytes that are not UTF-8 shown
 * as C escapes or \xNN, the bidirectional formatting characters (U+202E...)
 * as \uNNNN; other valid UTF-8 text passes through.
 */
#ifndef PYBPFPROF_TEXT_QUOTE_H
#define PYBPFPROF_TEXT_QUOTE_H

#include <stddef.h>
#include <stdio.h>

/* The dump text form: double-quoted, '"' and '\' escaped too. */
void fput_quoted(FILE *out, const char *text, size_t len);
static inline void fput_quoted_cstr(FILE *out, const char *text)
{
	size_t len = 0;

	while (text[len])
		len++;
	fput_quoted(out, text, len);
}

/* Unquoted, for labels and messages: only what a terminal would act on is escaped. */
void fput_escaped(FILE *out, const char *text);
/* The same into buffer (cut short to fit, always NUL-terminated); returns buffer. */
const char *text_escaped(char *buffer, size_t size, const char *text);
/*
 * The bidirectional formatting characters (ALM, LRM, RLM, LRE...RLO, LRI...PDI): shown raw they
 * reorder what a terminal, an editor or a browser displays around them, so that a name can read
 * as something else. The code point of the valid UTF-8 sequence of span bytes at text if it is
 * one of them, else 0.
 */
unsigned utf8_bidi_control(const unsigned char *text, size_t span);
/* Bytes of the well-formed UTF-8 sequence at text (RFC 3629: no overlongs, no surrogates,
 * nothing past U+10FFFF; 1 for ASCII), or 0 for a stray byte. Never reads past
 * a NUL. */
size_t utf8_well_formed_length(const unsigned char *text);
/* A JSON string literal, quotes included: every byte that is not well-formed UTF-8
 * becomes U+FFFD, so that strict parsers accept any target-supplied name. */
void fput_json_string(FILE *out, const char *text);

#endif
