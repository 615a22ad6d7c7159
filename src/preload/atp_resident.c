/* atp_resident.c - RESIDENT records: how many pages of a large block were
 * resident when the program released it (docs/TRACE_FORMAT.md).
 *
 * Under page-granular allocators (mmap'd chunks, jemalloc's page runs) a
 * large block costs RSS only for the pages the program touched; the
 * replay touches that many (docs/WORKLOAD_FORMAT.md, TOUCH).  Only blocks
 * of at least g.resident_min usable bytes pay a mincore() call, at their
 * release (free, or realloc before the real call).  Guard set; errno kept.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/mman.h>

#include "atp_internal.h"

/* mincore's vector: 256 pages (1 MiB of 4 KiB pages) per call keeps the
 * hook's stack small (it may run on a signal stack). */
#define ATP_RES_BATCH 256

void atp_resident_note(struct atp_thread *t, uint64_t ts, const void *ptr, uint64_t usable)
{
	if (ts < t->res_next)
		return; /* over the budget: convert estimates this block */
	int e = errno;
	uint64_t pg = g.page, lo = (uint64_t)(uintptr_t)ptr & ~(pg - 1);
	uint64_t hi = ((uint64_t)(uintptr_t)ptr + usable + pg - 1) & ~(pg - 1);
	uint64_t span = (hi - lo) / pg, res = 0;
	unsigned char v[ATP_RES_BATCH];
	for (uint64_t a = lo; a < hi;) {
		uint64_t n = (hi - a) / pg;
		if (n > ATP_RES_BATCH)
			n = ATP_RES_BATCH;
		if (mincore((void *)(uintptr_t)a, n * pg, v) != 0) {
			errno = e; /* not mapped as we think: no count */
			return;
		}
		for (uint64_t i = 0; i < n; i++)
			res += v[i] & 1;
		a += n * pg;
	}
	uint64_t pay[2] = {(uint64_t)(uintptr_t)ptr, span};
	atp_write_meta_at(t, ts, ATR_T_RESIDENT, res > UINT32_MAX ? UINT32_MAX : (uint32_t)res, pay,
			  sizeof pay);
	if (g.resident_wait) {
		uint64_t now = atp_now();
		t->res_next = now + (now - ts) * g.resident_wait;
	}
	errno = e;
}

/* Not glibc: a page-aligned block, sized by the allocator. */
uint64_t atp_resident_usable_other(const void *ptr)
{
	if (!g.resident_min || !g.real.usable_size)
		return 0;
	uint64_t u = g.real.usable_size((void *)(uintptr_t)ptr);
	return u >= g.resident_min ? u : 0;
}
