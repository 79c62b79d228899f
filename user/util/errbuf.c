// SPDX-License-Identifier: MIT
#include "util/errbuf.h"

#include <stdarg.h>
#include <stdio.h>

int errbuf_set(struct errbuf *buf, int err, const char *format, ...)
{
	va_list args;

	va_start(args, format);
	vsnprintf(buf->text, sizeof(buf->text), format, args);
	va_end(args);
	return err;
}

int errbuf_format(char *text, size_t len, int err, const char *format, ...)
{
	va_list args;

	if (!len)
		return err;
	va_start(args, format);
	vsnprintf(text, len, format, args);
	va_end(args);
	return err;
}
