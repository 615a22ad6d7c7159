/* util_io.c - see util_io.h. */
#include "util_io.h"

#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

ssize_t util_pread_full(int fd, void *dst, size_t len, uint64_t off)
{
	size_t got = 0;
	while (got < len) {
		ssize_t r = pread(fd, (char *)dst + got, len - got, (off_t)(off + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return got ? (ssize_t)got : -1;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

int util_write_all(int fd, const void *src, size_t n)
{
	const char *p = src;
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		if (w == 0)
			return -EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

void util_populate(void *p, size_t len)
{
	static long page;
	if (!page)
		page = sysconf(_SC_PAGESIZE) > 0 ? sysconf(_SC_PAGESIZE) : 4096;
	uintptr_t a = ((uintptr_t)p + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
	uintptr_t e = ((uintptr_t)p + len) & ~((uintptr_t)page - 1);
	if (e > a) {
		int saved = errno;
		madvise((void *)a, e - a, MADV_POPULATE_WRITE);
		errno = saved;
	}
}
