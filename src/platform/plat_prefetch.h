/* plat_prefetch.h - fetch a cache line ahead of its use, for writing.
 *
 * Not __builtin_prefetch: GCC 12's dead code elimination drops it when its
 * address has no other use (the replay's warm-up of a block before its
 * free, the live set's home entries), so the instruction is spelled out
 * where we know it.  A prefetch never faults: the address may be unmapped. */
#ifndef PLAT_PREFETCH_H
#define PLAT_PREFETCH_H

static inline void plat_prefetch(const void *p)
{
#if defined(__x86_64__) || defined(__i386__)
	__asm__ volatile("prefetcht0 %0" : : "m"(*(const char *)p));
#elif defined(__aarch64__)
	__asm__ volatile("prfm pstl1keep, %0" : : "Q"(*(const char *)p));
#else
	__builtin_prefetch(p, 1, 3);
#endif
}

#endif
