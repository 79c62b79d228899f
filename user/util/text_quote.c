// SPDX-License-Identifier: MIT
#include "util/text_quote.h"

void fput_quoted(FILE *out, const char *text, size_t len)
{
	fputc('"', out);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)text[i];

		switch (c) {
		case '"':
			fputs("\\\"", out);
			break;
		case '\\':
			fputs("\\\\", out);
			break;
		case '\n':
			fputs("\\n", out);
			break;
		case '\r':
			fputs("\\r", out);
			break;
		case '\t':
			fputs("\\t", out);
			break;
		default:
			/* UTF-8 bytes pass through; control bytes are made visible. */
			if (c < 0x20 || c == 0x7f)
				fprintf(out, "\\x%02x", c);
			else
				fputc(c, out);
		}
	}
	fputc('"', out);
}
