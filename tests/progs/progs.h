/* progs.h - shared helpers of the deterministic test programs.
 *
 * Each program calls the malloc family only through the t_* wrappers below,
 * which count every call in a thread-local tally, and prints its expected
 * per-process counts as ONE JSON line (expect_print).  Nothing else in
 * these programs may allocate: no stdio on stdout (its buffer is malloc'd),
 * output goes through snprintf into a stack buffer and write(2).
 *
 * The programs are built with -O0 -fno-builtin, and every block is touched
 * through a volatile pointer, so the compiler cannot elide a malloc/free
 * pair.
 */
#ifndef PROGS_H
#define PROGS_H

#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
	F_MALLOC,
	F_FREE,
	F_CALLOC,
	F_REALLOC,
	F_REALLOCARRAY,
	F_MEMALIGN,
	F_POSIX_MEMALIGN,
	F_ALIGNED_ALLOC,
	F_VALLOC,
	F_PVALLOC,
	F_COUNT,
	F_FREE_NULL = F_COUNT, /* of the frees, those of NULL */
	F_SLOTS
};

static const char *const f_names[F_COUNT] = {
    "malloc",	"free",		  "calloc",	   "realloc", "reallocarray",
    "memalign", "posix_memalign", "aligned_alloc", "valloc",  "pvalloc",
};

struct tally {
	unsigned long c[F_SLOTS];
};

/* This thread's calls since the last reset. */
static __thread struct tally T;
/* Calls of threads that finished (tally_merge), guarded by tally_lock. */
static struct tally T_done;
static pthread_mutex_t tally_lock = PTHREAD_MUTEX_INITIALIZER;

__attribute__((unused)) static void tally_merge(void)
{
	pthread_mutex_lock(&tally_lock);
	for (int i = 0; i < F_SLOTS; i++)
		T_done.c[i] += T.c[i];
	memset(&T, 0, sizeof T);
	pthread_mutex_unlock(&tally_lock);
}

/* After fork (child): only what this process does from now on counts. */
__attribute__((unused)) static void tally_reset(void)
{
	memset(&T, 0, sizeof T);
	memset(&T_done, 0, sizeof T_done);
}

__attribute__((unused)) static void tally_add(int f, unsigned long n)
{
	T.c[f] += n;
}

/* ---- failing loudly ---------------------------------------------------- */

static const char *prog_name = "prog";

__attribute__((format(printf, 1, 2), noreturn, unused)) static void die(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n = snprintf(buf, sizeof buf, "%s[%d]: FAIL: ", prog_name, (int)getpid());
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof buf - 2)
		n = (int)sizeof buf - 2;
	buf[n++] = '\n';
	if (write(2, buf, (size_t)n) < 0) {
		/* nothing more to do */
	}
	_exit(1);
}

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond))                                                                       \
			die("%s:%d: %s", __FILE__, __LINE__, #cond);                               \
	} while (0)

#define CHECKF(cond, fmt, ...)                                                                     \
	do {                                                                                       \
		if (!(cond))                                                                       \
			die("%s:%d: %s: " fmt, __FILE__, __LINE__, #cond, __VA_ARGS__);            \
	} while (0)

/* ---- touching memory so nothing is optimised away --------------------- */

static volatile unsigned char sink;

__attribute__((unused)) static void touch(void *p, size_t n)
{
	if (!p || !n)
		return;
	volatile unsigned char *v = p;
	v[0] = (unsigned char)n;
	v[n - 1] = (unsigned char)(n >> 3);
	sink = v[0];
}

/* ---- counted wrappers ------------------------------------------------- */

__attribute__((unused, noinline)) static void *t_malloc(size_t n)
{
	T.c[F_MALLOC]++;
	void *p = malloc(n);
	touch(p, n);
	return p;
}

__attribute__((unused, noinline)) static void t_free(void *p)
{
	T.c[F_FREE]++;
	if (!p)
		T.c[F_FREE_NULL]++;
	free(p);
}

__attribute__((unused, noinline)) static void *t_calloc(size_t a, size_t b)
{
	T.c[F_CALLOC]++;
	void *p = calloc(a, b);
	if (p && a && b) {
		volatile unsigned char *v = p;
		for (size_t i = 0; i < a * b; i += 64)
			if (v[i] != 0)
				die("calloc memory not zero");
		touch(p, a * b);
	}
	return p;
}

__attribute__((unused, noinline)) static void *t_realloc(void *p, size_t n)
{
	T.c[F_REALLOC]++;
	void *r = realloc(p, n);
	touch(r, n);
	return r;
}

__attribute__((unused, noinline)) static void *t_reallocarray(void *p, size_t a, size_t b)
{
	T.c[F_REALLOCARRAY]++;
	void *r = reallocarray(p, a, b);
	if (r)
		touch(r, a * b);
	return r;
}

__attribute__((unused, noinline)) static void *t_memalign(size_t al, size_t n)
{
	T.c[F_MEMALIGN]++;
	void *p = memalign(al, n);
	touch(p, n);
	return p;
}

__attribute__((unused, noinline)) static int t_posix_memalign(void **out, size_t al, size_t n)
{
	T.c[F_POSIX_MEMALIGN]++;
	int rc = posix_memalign(out, al, n);
	if (rc == 0)
		touch(*out, n);
	return rc;
}

__attribute__((unused, noinline)) static void *t_aligned_alloc(size_t al, size_t n)
{
	T.c[F_ALIGNED_ALLOC]++;
	void *p = aligned_alloc(al, n);
	touch(p, n);
	return p;
}

__attribute__((unused, noinline)) static void *t_valloc(size_t n)
{
	T.c[F_VALLOC]++;
	void *p = valloc(n);
	touch(p, n);
	return p;
}

__attribute__((unused, noinline)) static void *t_pvalloc(size_t n)
{
	T.c[F_PVALLOC]++;
	void *p = pvalloc(n);
	touch(p, n);
	return p;
}

/* ---- output -------------------------------------------------------------- */

__attribute__((unused)) static void write_all(int fd, const char *s, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, s, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			die("write(%d) failed: %s", fd, strerror(errno));
		s += w;
		n -= (size_t)w;
	}
}

/* The expected counts of this process: this thread's tally plus the merged
 * tallies of finished threads.  extra: more JSON members (without braces,
 * may be "" or NULL), e.g. "\"threads\":11".  One write, so lines of
 * several processes sharing a pipe never interleave. */
__attribute__((unused)) static void expect_print_fd(int fd, const char *extra)
{
	char buf[16384];
	size_t n = 0;
	n += (size_t)snprintf(buf + n, sizeof buf - n,
			      "{\"prog\":\"%s\",\"pid\":%d,\"ppid\":%d,\"calls\":{", prog_name,
			      (int)getpid(), (int)getppid());
	for (int i = 0; i < F_COUNT; i++)
		n += (size_t)snprintf(buf + n, sizeof buf - n, "%s\"%s\":%lu", i ? "," : "",
				      f_names[i], T.c[i] + T_done.c[i]);
	n += (size_t)snprintf(buf + n, sizeof buf - n, "},\"free_null\":%lu%s%s}\n",
			      T.c[F_FREE_NULL] + T_done.c[F_FREE_NULL], extra && *extra ? "," : "",
			      extra ? extra : "");
	if (n >= sizeof buf)
		die("expectation line too long");
	write_all(fd, buf, n);
}

__attribute__((unused)) static void expect_print(const char *extra)
{
	expect_print_fd(1, extra);
}

#endif
