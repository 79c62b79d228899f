// SPDX-License-Identifier: MIT
#include "util/text_quote.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Bytes in the valid UTF-8 sequence at text (not a C1 control), or 0. */
static size_t utf8_printable_length(const unsigned char *text, size_t len)
{
	size_t need;

	if (text[0] >= 0xc2 && text[0] <= 0xdf)
		need = 2;
	else if (text[0] >= 0xe0 && text[0] <= 0xef)
		need = 3;
	else if (text[0] >= 0xf0 && text[0] <= 0xf4)
		need = 4;
	else
		return 0;
	if (len < need)
		return 0;
	for (size_t i = 1; i < need; i++)
		if ((text[i] & 0xc0) != 0x80)
			return 0;
	/* U+0080-U+009F: the C1 controls (CSI among them), which terminals obey. */
	if (text[0] == 0xc2 && text[1] < 0xa0)
		return 0;
	return need;
}

unsigned utf8_bidi_control(const unsigned char *text, size_t span)
{
	unsigned code;

	if (span == 2 && text[0] == 0xd8 && text[1] == 0x9c)
		return 0x061c;
	if (span != 3 || text[0] != 0xe2)
		return 0;
	code = 0x2000 | (unsigned)(text[1] & 0x3f) << 6 | (text[2] & 0x3f);
	if (code == 0x200e || code == 0x200f || (code >= 0x202a && code <= 0x202e) ||
	    (code >= 0x2066 && code <= 0x2069))
		return code;
	return 0;
}

/*
 * The next unit of text at *at: either *span bytes that may pass as they are,
 * or (span 0) an escape in piece that stands for *consumed bytes.
 */
static void next_unit(const unsigned char *text, size_t len, size_t at, bool quoted,
		      size_t *span, size_t *consumed, char piece[8])
{
	unsigned char c = text[at];
	const char *named = NULL;
	unsigned bidi;

	*span = 0;
	*consumed = 1;
	switch (c) {
	case '"':
		named = quoted ? "\\\"" : NULL;
		break;
	case '\\':
		named = quoted ? "\\\\" : NULL;
		break;
	case '\n':
		named = "\\n";
		break;
	case '\r':
		named = "\\r";
		break;
	case '\t':
		named = "\\t";
		break;
	default:
		break;
	}
	if (named) {
		strcpy(piece, named);
		return;
	}
	if (c >= 0x20 && c < 0x7f) {
		*span = 1;
		return;
	}
	if (c >= 0x80 && (*span = utf8_printable_length(text + at, len - at))) {
		bidi = utf8_bidi_control(text + at, *span);
		if (!bidi)
			return;
		*consumed = *span;
		*span = 0;
		snprintf(piece, 8, "\\u%04x", bidi & 0xffffu);
		return;
	}
	snprintf(piece, 8, "\\x%02x", c);
}

static void fput_units(FILE *out, const char *text, size_t len, bool quoted)
{
	const unsigned char *bytes = (const unsigned char *)text;
	char piece[8];
	size_t span, consumed;

	for (size_t i = 0; i < len; i += span ? span : consumed) {
		next_unit(bytes, len, i, quoted, &span, &consumed, piece);
		if (span)
			fwrite(text + i, 1, span, out);
		else
			fputs(piece, out);
	}
}

void fput_quoted(FILE *out, const char *text, size_t len)
{
	fputc('"', out);
	fput_units(out, text, len, true);
	fputc('"', out);
}

void fput_escaped(FILE *out, const char *text)
{
	fput_units(out, text, strlen(text), false);
}

const char *text_escaped(char *buffer, size_t size, const char *text)
{
	const unsigned char *bytes = (const unsigned char *)text;
	size_t len = strlen(text), used = 0, span, consumed;
	char piece[8];

	if (!size)
		return buffer;
	for (size_t i = 0; i < len; i += span ? span : consumed) {
		const char *add;
		size_t add_len;

		next_unit(bytes, len, i, false, &span, &consumed, piece);
		add = span ? text + i : piece;
		add_len = span ? span : strlen(piece);
		if (used + add_len >= size)
			break;
		memcpy(buffer + used, add, add_len);
		used += add_len;
	}
	buffer[used] = 0;
	return buffer;
}

size_t utf8_well_formed_length(const unsigned char *text)
{
	unsigned char lead = text[0], low = 0x80, high = 0xbf;
	size_t need;

	if (lead < 0x80)
		return 1;
	if (lead >= 0xc2 && lead <= 0xdf)
		need = 2;
	else if (lead >= 0xe0 && lead <= 0xef)
		need = 3;
	else if (lead >= 0xf0 && lead <= 0xf4)
		need = 4;
	else
		return 0;
	if (lead == 0xe0)
		low = 0xa0;
	else if (lead == 0xed)
		high = 0x9f;
	else if (lead == 0xf0)
		low = 0x90;
	else if (lead == 0xf4)
		high = 0x8f;
	if (text[1] < low || text[1] > high)
		return 0;
	for (size_t i = 2; i < need; i++)
		if ((text[i] & 0xc0) != 0x80)
			return 0;
	return need;
}

void fput_json_string(FILE *out, const char *text)
{
	const unsigned char *at = (const unsigned char *)text;

	fputc('"', out);
	while (*at) {
		size_t span = utf8_well_formed_length(at);

		if (span == 0) {
			fputs("\\ufffd", out);
			at++;
		} else if (*at == '"' || *at == '\\') {
			fputc('\\', out);
			fputc(*at++, out);
		} else if (*at < 0x20 || *at == 0x7f) {
			fprintf(out, "\\u%04x", *at++);
		} else {
			fwrite(at, 1, span, out);
			at += span;
		}
	}
	fputc('"', out);
}
