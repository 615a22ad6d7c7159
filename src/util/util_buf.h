/* util_buf.h - growable byte buffer. */
#ifndef UTIL_BUF_H
#define UTIL_BUF_H

#include <stddef.h>

struct util_buf {
	char *data; /* NUL-terminated when non-NULL */
	size_t len, cap;
};

/* Zero-initialised struct is an empty buffer.  Functions return 0, or -1
 * on ENOMEM (the buffer is unchanged then). */
int util_buf_reserve(struct util_buf *b, size_t extra);
int util_buf_append(struct util_buf *b, const void *p, size_t n);
int util_buf_puts(struct util_buf *b, const char *s);
int util_buf_printf(struct util_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void util_buf_free(struct util_buf *b);

#endif
