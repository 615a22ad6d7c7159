/* atr_fileio.h - reading a trace file's bytes and growing buffers, shared
 * by the reader's thread (atr_reader.c) and the frame helper's
 * (atr_zahead.c); internal to src/format. */
#ifndef ATR_FILEIO_H
#define ATR_FILEIO_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util_io.h"

/* At most len bytes of the file at off into dst (from base if it is
 * mapped, else pread on fd; size: the file's), the rest zeroed: the bytes
 * read. */
static inline size_t atr_read_at(const uint8_t *base, int fd, uint64_t size, uint64_t off,
				 void *dst, size_t len)
{
	size_t have = off < size ? (size - off < len ? (size_t)(size - off) : len) : 0;
	if (base) {
		memcpy(dst, base + off, have);
	} else {
		ssize_t got = util_pread_full(fd, dst, have, off);
		have = got > 0 ? (size_t)got : 0;
	}
	memset((uint8_t *)dst + have, 0, len - have);
	return have;
}

/* *p grown to need bytes (contents kept) if *cap is smaller: 0, or -1
 * out of memory (*p unchanged). */
static inline int atr_grow(uint8_t **p, size_t *cap, size_t need)
{
	if (*cap >= need)
		return 0;
	uint8_t *n = realloc(*p, need);
	if (!n)
		return -1;
	*p = n;
	*cap = need;
	return 0;
}

#endif
