/* atp_xhooks.c - the other traced calls (ATR_XCALLS): the program's own
 * mappings (mmap, mmap64, munmap, mremap, madvise), break moves (brk,
 * sbrk) and allocator controls (mallopt, malloc_trim,
 * malloc_usable_size).  Each writes one EXT record (docs/TRACE_FORMAT.md,
 * "Extended calls").
 *
 * glibc's malloc reaches the kernel through internal symbols, so only the
 * program's and its libraries' calls arrive here; our own mappings go to
 * g.real directly and the libraries we call while the guard is set (zstd,
 * libunwind) pass through.  errno is what the real call left.
 *
 * Stamps as in atp_hooks.c: a release (munmap) before the real call, the
 * rest after it returned.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/mman.h>

#include "atp_internal.h"

#define EXPORT __attribute__((visibility("default")))

/* One EXT record: w0, the call type, its words, [stack id] [duration]. */
static void rec_ext(struct atp_thread *t, unsigned xt, uint64_t ts, uint64_t dur, const uint64_t *w,
		    unsigned n)
{
	unsigned flags = g.timing ? ATR_FLAG_TIMED : 0u;
	uint32_t sid = 0;
	if (g.stacks && (sid = atp_stack_id(t, ts)) != 0)
		flags |= ATR_FLAG_STACK;
	unsigned tot = atr_ext_words(xt, flags);
	uint64_t *p = atp_reserve(t, tot, ts);
	if (!p)
		return;
	unsigned i = 1;
	p[i++] = xt;
	for (unsigned k = 0; k < n; k++)
		p[i++] = w[k];
	if (flags & ATR_FLAG_STACK)
		p[i++] = sid;
	if (flags & ATR_FLAG_TIMED)
		p[i] = dur;
	atp_commit(t, p, tot, atp_w0(ts, ATR_T_EXT | flags));
}

/* Record with the guard set and errno kept; ts the stamp, t0 the start. */
#define XREC(xt, ts, t0, ...)                                                                      \
	do {                                                                                       \
		int saved_ = errno;                                                                \
		uint64_t now_ = atp_now();                                                         \
		const uint64_t w_[] = {__VA_ARGS__};                                               \
		rec_ext(t, xt, (ts) ? (ts) : now_, now_ - (t0), w_, sizeof w_ / sizeof w_[0]);     \
		errno = saved_;                                                                    \
	} while (0)

#define U(x) ((uint64_t)(x))
#define A(x) ((uint64_t)(uintptr_t)(x))

/* Passed through: inside the tracer, not recording, or called by the
 * libraries the tracer loaded (libunwind's thread-exit cleanup). */
#define PASS(call)                                                                                 \
	if (ATP_UNLIKELY(t->guard | !g.recording) && atp_passthrough(t))                           \
		return call;                                                                       \
	if (ATP_UNLIKELY((uintptr_t)__builtin_return_address(0) - g.tlib_lo < g.tlib_len))         \
	return call

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	struct atp_thread *t = &atp_tls;
	PASS(g.real.mmap(addr, len, prot, flags, fd, off));
	t->guard = 1;
	uint64_t t0 = atp_now();
	void *r = g.real.mmap(addr, len, prot, flags, fd, off);
	int e = r == MAP_FAILED ? errno : 0;
	XREC(ATR_T_MMAP, 0, t0, A(r), U(len), A(addr), U((uint32_t)prot) | U((uint32_t)flags) << 32,
	     ATR_XRES(fd, e), U(off));
	t->guard = 0;
	return r;
}

/* 64-bit glibc exports both names for one function; so do we. */
EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
    __attribute__((alias("mmap")));

EXPORT int munmap(void *addr, size_t len)
{
	struct atp_thread *t = &atp_tls;
	PASS(g.real.munmap(addr, len));
	t->guard = 1;
	uint64_t t0 = atp_now(); /* a release: stamped before the real call */
	int r = g.real.munmap(addr, len);
	XREC(ATR_T_MUNMAP, t0, t0, A(addr), U(len), ATR_XRES(r, r ? errno : 0));
	t->guard = 0;
	return r;
}

EXPORT void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
	struct atp_thread *t = &atp_tls;
	void *na = NULL; /* new_address: read only when the flags say it was passed */
	if (flags & (MREMAP_FIXED | ATP_MREMAP_DONTUNMAP)) {
		va_list ap;
		va_start(ap, flags);
		na = va_arg(ap, void *);
		va_end(ap);
	}
	PASS(g.real.mremap(old, old_len, new_len, flags, na));
	t->guard = 1;
	uint64_t t0 = atp_now();
	void *r = g.real.mremap(old, old_len, new_len, flags, na);
	int e = r == MAP_FAILED ? errno : 0;
	XREC(ATR_T_MREMAP, 0, t0, A(r), U(new_len), A(old), U(old_len), ATR_XRES(flags, e), A(na));
	t->guard = 0;
	return r;
}

EXPORT int madvise(void *addr, size_t len, int advice)
{
	struct atp_thread *t = &atp_tls;
	PASS(g.real.madvise(addr, len, advice));
	t->guard = 1;
	uint64_t t0 = atp_now();
	int r = g.real.madvise(addr, len, advice);
	XREC(ATR_T_MADVISE, 0, t0, A(addr), U(len), U((uint32_t)advice),
	     ATR_XRES(r, r ? errno : 0));
	t->guard = 0;
	return r;
}

/* The break before and after comes from sbrk(0), which glibc answers from
 * its cached break without a syscall. */
EXPORT int brk(void *addr)
{
	struct atp_thread *t = &atp_tls;
	PASS(g.real.brk(addr));
	t->guard = 1;
	uint64_t t0 = atp_now();
	void *before = g.real.sbrk(0);
	int r = g.real.brk(addr);
	int e = r ? errno : 0;
	XREC(ATR_T_BRK_CALL, 0, t0, A(addr), A(before), A(g.real.sbrk(0)), ATR_XRES(r, e));
	t->guard = 0;
	return r;
}

EXPORT void *sbrk(intptr_t incr)
{
	struct atp_thread *t = &atp_tls;
	PASS(g.real.sbrk(incr));
	t->guard = 1;
	uint64_t t0 = atp_now();
	void *r = g.real.sbrk(incr);
	int e = r == (void *)-1 ? errno : 0;
	void *after = g.real.sbrk(0);
	void *before = e ? after : r;
	XREC(ATR_T_SBRK, 0, t0, U(incr), A(before), A(after), ATR_XRES(e ? -1 : 0, e));
	t->guard = 0;
	return r;
}

EXPORT int mallopt(int param, int value)
{
	struct atp_thread *t = &atp_tls;
	PASS(g.real.mallopt(param, value));
	t->guard = 1;
	uint64_t t0 = atp_now();
	int r = g.real.mallopt(param, value);
	XREC(ATR_T_MALLOPT, 0, t0, U((int64_t)param), U((int64_t)value), U((int64_t)r));
	t->guard = 0;
	return r;
}

EXPORT int malloc_trim(size_t pad)
{
	struct atp_thread *t = &atp_tls;
	PASS(g.real.malloc_trim(pad));
	t->guard = 1;
	uint64_t t0 = atp_now();
	int r = g.real.malloc_trim(pad);
	XREC(ATR_T_MALLOC_TRIM, 0, t0, U(pad), U((int64_t)r));
	t->guard = 0;
	return r;
}

EXPORT size_t malloc_usable_size(void *ptr)
{
	struct atp_thread *t = &atp_tls;
	if (ATP_UNLIKELY(atp_is_boot_ptr(ptr)))
		return atp_boot_size(ptr);
	PASS(g.real.malloc_usable_size(ptr));
	t->guard = 1;
	uint64_t t0 = atp_now();
	size_t r = g.real.malloc_usable_size(ptr);
	XREC(ATR_T_MALLOC_USABLE_SIZE, 0, t0, A(ptr), U(r));
	t->guard = 0;
	return r;
}
