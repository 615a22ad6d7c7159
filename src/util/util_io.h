/* util_io.h - whole reads and writes of file descriptors. */
#ifndef UTIL_IO_H
#define UTIL_IO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* pread until len bytes, end of file or an error (EINTR retried): the
 * bytes read (fewer than len at end of file; -1 only if an error came
 * before any byte). */
ssize_t util_pread_full(int fd, void *dst, size_t len, uint64_t off);

/* write all n bytes (EINTR retried): 0, or -errno (-EIO for a write that
 * made no progress). */
int util_write_all(int fd, const void *src, size_t n);

/* Maps the whole pages of [p, p + len) now, writable, in one system call
 * (MADV_POPULATE_WRITE), for memory that is about to be written all over:
 * a fresh anonymous page costs ~10 us as a page fault on the benchmark VM
 * and ~2 us populated (bench/RESULTS.md, "info: page faults, thread switches, the live set in
 * registers").  A hint: a
 * kernel without it (before 5.14) faults the pages in as before. */
void util_populate(void *p, size_t len);

#endif
