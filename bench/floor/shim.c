/* shim.c - the least a malloc tracer can do: interpose malloc and free,
 * store one word per call in a thread-local ring, and (with -DSTAMP) read
 * the TSC once per call.  bench/floor/floor.sh compares mallocbench's CPU
 * per call untraced, with this shim without and with the stamp, and with
 * liballoctrace.so: the floor under issue 9's "<= 12 ns per call".
 * x86-64 only (rdtsc); glibc's __libc_malloc/__libc_free. */
#include <stddef.h>
#include <stdint.h>
#include <x86intrin.h>

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);

static __thread uint64_t ring[512];
static __thread unsigned pos;

#ifdef STAMP
#define STAMP_NOW() __rdtsc()
#else
#define STAMP_NOW() ((uint64_t)pos)
#endif

__attribute__((visibility("default"))) void *malloc(size_t n)
{
	void *r = __libc_malloc(n);
	ring[pos++ & 511] = STAMP_NOW() ^ (uint64_t)(uintptr_t)r ^ n;
	return r;
}

__attribute__((visibility("default"))) void free(void *p)
{
	ring[pos++ & 511] = STAMP_NOW() ^ (uint64_t)(uintptr_t)p;
	__libc_free(p);
}
