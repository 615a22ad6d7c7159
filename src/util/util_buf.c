/* util_buf.c - see util_buf.h. */
#include "util_buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int util_buf_reserve(struct util_buf *b, size_t extra)
{
	if (extra > (size_t)-1 / 2 - b->len - 1)
		return -1;
	size_t need = b->len + extra + 1;
	if (need <= b->cap)
		return 0;
	size_t ncap = b->cap ? b->cap : 64;
	while (ncap < need)
		ncap *= 2;
	char *nd = realloc(b->data, ncap);
	if (!nd)
		return -1;
	b->data = nd;
	b->cap = ncap;
	return 0;
}

int util_buf_append(struct util_buf *b, const void *p, size_t n)
{
	if (util_buf_reserve(b, n) < 0)
		return -1;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = 0;
	return 0;
}

int util_buf_puts(struct util_buf *b, const char *s)
{
	return util_buf_append(b, s, strlen(s));
}

int util_buf_printf(struct util_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || util_buf_reserve(b, (size_t)n) < 0)
		return -1;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

void util_buf_free(struct util_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}
