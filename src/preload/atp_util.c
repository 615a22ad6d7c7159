/* atp_util.c - string and number helpers that never allocate. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "atp_internal.h"

size_t atp_strlcpy(char *dst, const char *src, size_t n)
{
	size_t l = strlen(src);
	if (n) {
		size_t c = l < n - 1 ? l : n - 1;
		memcpy(dst, src, c);
		dst[c] = 0;
	}
	return l;
}

size_t atp_strlcat(char *dst, const char *src, size_t n)
{
	size_t d = strnlen(dst, n);
	if (d == n)
		return n + strlen(src);
	return d + atp_strlcpy(dst + d, src, n - d);
}

char *atp_utoa(uint64_t v, char *buf)
{
	char tmp[21];
	int i = 0;
	do {
		tmp[i++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	int j = 0;
	while (i)
		buf[j++] = tmp[--i];
	buf[j] = 0;
	return buf;
}

static void put(const char *s)
{
	size_t l = strlen(s);
	while (l) {
		ssize_t w = write(2, s, l);
		if (w <= 0) {
			if (w < 0 && errno == EINTR)
				continue;
			return;
		}
		s += w;
		l -= (size_t)w;
	}
}

/* "alloctrace[pid]: a b c: strerror(err)\n" on stderr, without stdio. */
void atp_message(const char *a, const char *b, const char *c, int err)
{
	if (g.quiet)
		return;
	int saved = errno;
	char msg[ATP_PATH_MAX + 512], num[24];
	msg[0] = 0;
	atp_strlcat(msg, "alloctrace[", sizeof msg);
	atp_strlcat(msg, atp_utoa((uint64_t)getpid(), num), sizeof msg);
	atp_strlcat(msg, "]: ", sizeof msg);
	atp_strlcat(msg, a, sizeof msg);
	if (b) {
		atp_strlcat(msg, " ", sizeof msg);
		atp_strlcat(msg, b, sizeof msg);
	}
	if (c) {
		atp_strlcat(msg, " ", sizeof msg);
		atp_strlcat(msg, c, sizeof msg);
	}
	if (err) {
		/* strerror may allocate (translations); the errno name never does */
		const char *name = strerrorname_np(err);
		atp_strlcat(msg, ": ", sizeof msg);
		atp_strlcat(msg, name ? name : "errno ", sizeof msg);
		if (!name)
			atp_strlcat(msg, atp_utoa((uint64_t)err, num), sizeof msg);
	}
	atp_strlcat(msg, "\n", sizeof msg);
	put(msg);
	errno = saved;
}

uint64_t atp_mono_ns(void)
{
	return plat_mono_ns();
}
