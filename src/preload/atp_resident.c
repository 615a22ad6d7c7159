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

/* Whether this large release, stamped ts, is counted.  Each one is
 * picked at random with the probability that keeps the thread's counting
 * within its budget: the time since its first large release over
 * resident_wait times what counting them all would cost (their number,
 * the mean count).  Not "none for a while after a count": that counts the
 * releases that come alone and skips those that come in bursts, and on
 * git repack the counted share of resident pages was 0.90 where counting
 * every release gave 0.975 (bench/fidelity/RESULTS.md, "git-repack's
 * Max RSS and the RESIDENT budget"), so convert's estimates for the rest
 * were low. */
static int res_pick(struct atp_thread *t, uint64_t ts)
{
	if (g.resident_wait == 0)
		return 1; /* every release */
	if (!t->res_n++) {
		t->res_t0 = ts;
		return 1;
	}
	double all = (double)t->res_n * (double)(t->res_cost >> 3) * g.resident_wait;
	if (all <= 0 || (double)(ts - t->res_t0) >= all)
		return 1;
	double p = (double)(ts - t->res_t0) / all;
	t->res_rng = t->res_rng * 6364136223846793005ull + 1442695040888963407ull;
	return (double)(t->res_rng >> 11) * 0x1.0p-53 < p;
}

void atp_resident_note(struct atp_thread *t, uint64_t ts, const void *ptr, uint64_t usable)
{
	if (!res_pick(t, ts))
		return; /* convert estimates this block */
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
		/* the mean cost, in eighths of a tick: c/8 steps */
		uint64_t c = (atp_now() - ts) << 3;
		t->res_cost = t->res_cost ? t->res_cost - (t->res_cost >> 3) + (c >> 3) : c;
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
