/* SPDX-License-Identifier: MIT */
/*
 * One-line error messages: a fixed buffer every layer fills the same way, so a
 * failure is described where it happens and reported once, at the top.
 */
#ifndef PYBPFPROF_ERRBUF_H
#define PYBPFPROF_ERRBUF_H

#include <stddef.h>

#define ERRBUF_SIZE 512

struct errbuf {
	char text[ERRBUF_SIZE];
};

/* Formats the message into buf and returns err (a negative errno), for `return errbuf_set(...)`. */
__attribute__((format(printf, 3, 4))) int errbuf_set(struct errbuf *buf, int err, const char *format, ...);
/* The same into a caller's char buffer (APIs that take char *, size_t). */
__attribute__((format(printf, 4, 5))) int errbuf_format(char *text, size_t len, int err,
							const char *format, ...);
static inline void errbuf_clear(struct errbuf *buf)
{
	buf->text[0] = 0;
}

#endif
