/* xcalls.c - each of the other traced calls (ATR_XCALLS) a known number of
 * times, with failures: mmap (anonymous, file-backed, through mmap64, and
 * EINVAL), munmap (whole, partial, EINVAL), mremap (grow, EINVAL), madvise
 * (DONTNEED, WILLNEED, EINVAL), sbrk (0, +, -), brk, mallopt (known and
 * refused values), malloc_trim, malloc_usable_size.
 *
 * Besides the counts ("other_calls") the expectation line carries "xlog":
 * every call in order with what dump --json must show for it (arguments,
 * result, errno); the driver compares them (tests/run_progs.py).  errno
 * after each call is checked against glibc's documented value here.
 *
 * usage: xcalls
 */
#include "progs.h"

#include <fcntl.h>
#include <sys/mman.h>

enum { X_MMAP, X_MUNMAP, X_MREMAP, X_MADVISE, X_BRK, X_SBRK, X_MALLOPT, X_TRIM, X_USABLE, X_N };
static const char *const x_names[X_N] = {"mmap",    "munmap",	   "mremap",
					 "madvise", "brk",	   "sbrk",
					 "mallopt", "malloc_trim", "malloc_usable_size"};
static unsigned long xcount[X_N];

static char xlog[8192];
static size_t xlen;

__attribute__((format(printf, 2, 3))) static void note(int x, const char *fmt, ...)
{
	va_list ap;
	xcount[x]++;
	xlen += (size_t)snprintf(xlog + xlen, sizeof xlog - xlen, "%s{\"type\":\"%s\",",
				 xlen ? "," : "", x_names[x]);
	va_start(ap, fmt);
	xlen += (size_t)vsnprintf(xlog + xlen, sizeof xlog - xlen, fmt, ap);
	va_end(ap);
	xlen += (size_t)snprintf(xlog + xlen, sizeof xlog - xlen, "}");
	if (xlen >= sizeof xlog)
		die("xlog overflow");
}

#define P(p) ((unsigned long)(uintptr_t)(p))

/* One frame each, so a --stacks run shows these functions (noinline). */
__attribute__((noinline)) static void *x_mmap(size_t n, int use64)
{
	errno = 0;
	void *p = use64
		      ? mmap64(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
		      : mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(p != MAP_FAILED && errno == 0);
	touch(p, n);
	note(X_MMAP, "\"size\":%zu,\"prot\":3,\"flags\":34,\"fd\":-1,\"ret\":\"0x%lx\",\"err\":0",
	     n, P(p));
	return p;
}

__attribute__((noinline)) static void x_munmap(void *p, size_t n, int want_err)
{
	errno = 0;
	int r = munmap(p, n);
	CHECKF(want_err ? r == -1 && errno == want_err : r == 0, "r=%d errno=%d", r, errno);
	note(X_MUNMAP, "\"ptr\":\"0x%lx\",\"size\":%zu,\"result\":%d,\"err\":%d", P(p), n, r,
	     want_err);
}

int main(void)
{
	prog_name = "xcalls";
	long page = sysconf(_SC_PAGESIZE);

	/* the mappings */
	void *a = x_mmap(64 << 10, 0);
	void *b = x_mmap(1 << 20, 1);
	void *c = x_mmap(3 * (size_t)page, 0);
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	errno = 0;
	void *f = mmap(NULL, (size_t)page, PROT_READ, MAP_PRIVATE, fd, 0);
	CHECK(f != MAP_FAILED && ((const char *)f)[1] == 'E');
	note(X_MMAP, "\"size\":%ld,\"prot\":1,\"flags\":2,\"fd\":%d,\"offset\":0,\"ret\":\"0x%lx\"",
	     page, fd, P(f));
	close(fd);
	errno = 0;
	void *bad = mmap(NULL, 0, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(bad == MAP_FAILED && errno == EINVAL);
	note(X_MMAP, "\"size\":0,\"ret\":\"0x%lx\",\"err\":%d", P(bad), EINVAL);

	/* mremap: grow (may move), then a failure */
	errno = 0;
	void *a2 = mremap(a, 64 << 10, 128 << 10, MREMAP_MAYMOVE);
	CHECK(a2 != MAP_FAILED);
	touch(a2, 128 << 10);
	note(
	    X_MREMAP,
	    "\"ptr\":\"0x%lx\",\"old_size\":%d,\"size\":%d,\"flags\":1,\"ret\":\"0x%lx\",\"err\":0",
	    P(a), 64 << 10, 128 << 10, P(a2));
	errno = 0;
	void *r2 = mremap((char *)a2 + 1, 4096, 8192, 0);
	CHECK(r2 == MAP_FAILED && errno == EINVAL);
	note(X_MREMAP, "\"ptr\":\"0x%lx\",\"ret\":\"0x%lx\",\"err\":%d", P((char *)a2 + 1), P(r2),
	     EINVAL);

	/* madvise */
	errno = 0;
	CHECK(madvise(b, 1 << 20, MADV_DONTNEED) == 0);
	note(X_MADVISE, "\"ptr\":\"0x%lx\",\"size\":%d,\"advice\":%d,\"result\":0,\"err\":0", P(b),
	     1 << 20, MADV_DONTNEED);
	CHECK(madvise(c, (size_t)page, MADV_WILLNEED) == 0);
	note(X_MADVISE, "\"ptr\":\"0x%lx\",\"size\":%ld,\"advice\":%d,\"result\":0", P(c), page,
	     MADV_WILLNEED);
	errno = 0;
	CHECK(madvise(c, (size_t)page, 12345) == -1 && errno == EINVAL);
	note(X_MADVISE, "\"advice\":12345,\"result\":-1,\"err\":%d", EINVAL);

	/* munmap: partial, whole, failure */
	x_munmap((char *)c + page, (size_t)page, 0);
	x_munmap(c, (size_t)page, 0);
	x_munmap((char *)c + 2 * page, (size_t)page, 0);
	x_munmap(a2, 128 << 10, 0);
	x_munmap(b, 1 << 20, 0);
	x_munmap(f, (size_t)page, 0);
	x_munmap((char *)b + 1, (size_t)page, EINVAL);

	/* the break */
	errno = 0;
	void *br0 = sbrk(0);
	note(X_SBRK,
	     "\"increment\":0,\"break_before\":\"0x%lx\",\"break_after\":\"0x%lx\","
	     "\"result\":0",
	     P(br0), P(br0));
	void *br1 = sbrk(page);
	CHECK(br1 == br0);
	note(X_SBRK, "\"increment\":%ld,\"break_before\":\"0x%lx\",\"break_after\":\"0x%lx\"", page,
	     P(br0), P((char *)br0 + page));
	CHECK(sbrk(-page) == (char *)br0 + page);
	note(X_SBRK, "\"increment\":%ld,\"break_before\":\"0x%lx\",\"break_after\":\"0x%lx\"",
	     -page, P((char *)br0 + page), P(br0));
	CHECK(brk(br0) == 0);
	note(X_BRK,
	     "\"addr\":\"0x%lx\",\"break_before\":\"0x%lx\",\"break_after\":\"0x%lx\","
	     "\"result\":0",
	     P(br0), P(br0), P(br0));

	/* the allocator's controls */
	CHECK(mallopt(M_MMAP_THRESHOLD, 256 << 10) == 1);
	note(X_MALLOPT, "\"param\":%d,\"value\":%d,\"result\":1", M_MMAP_THRESHOLD, 256 << 10);
	CHECK(mallopt(M_ARENA_MAX, 2) == 1);
	note(X_MALLOPT, "\"param\":%d,\"value\":2,\"result\":1", M_ARENA_MAX);
	CHECK(mallopt(M_MXFAST, 4096) == 0); /* above MAX_FAST_SIZE: refused */
	note(X_MALLOPT, "\"param\":%d,\"value\":4096,\"result\":0", M_MXFAST);
	void *m = t_malloc(100);
	size_t us = malloc_usable_size(m);
	CHECK(us >= 100);
	note(X_USABLE, "\"ptr\":\"0x%lx\",\"usable\":%zu", P(m), us);
	CHECK(malloc_usable_size(NULL) == 0);
	note(X_USABLE, "\"ptr\":\"0x0\",\"usable\":0");
	t_free(m);
	int tr = malloc_trim(0);
	note(X_TRIM, "\"pad\":0,\"result\":%d", tr);
	tr = malloc_trim(1 << 20);
	note(X_TRIM, "\"pad\":%d,\"result\":%d", 1 << 20, tr);

	char extra[8192 + 512];
	size_t n = (size_t)snprintf(extra, sizeof extra, "\"other_calls\":{");
	for (int i = 0; i < X_N; i++)
		n += (size_t)snprintf(extra + n, sizeof extra - n, "%s\"%s\":%lu", i ? "," : "",
				      x_names[i], xcount[i]);
	n += (size_t)snprintf(extra + n, sizeof extra - n, "},\"xlog\":[%s]", xlog);
	if (n >= sizeof extra)
		die("expectation too long");
	expect_print(extra);
	return 0;
}
