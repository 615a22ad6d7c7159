/* lv_park.h - releases stamped ahead of the allocation they release.
 *
 * The recorder stamps a free with a plain read of the tick counter, which
 * the CPU may run before the load that gave the program the block has
 * returned.  A thread that frees a block it has just received from another
 * thread can so stamp the free a few hundred ns before the other thread's
 * stamp of the allocation (docs/TRACE_FORMAT.md, "Order"): merged by
 * timestamp, the free comes first, of a block that is not live yet.
 *
 * A pass that finds a release of a block that is not live parks it here
 * instead of counting it at once.  An allocation of that address by
 * another thread stamped at most `window` ticks after it is the block the
 * release released: the pass applies the allocation, then the parked
 * release (a lifetime of zero), and counts nothing.  A parked release that
 * no such allocation claims within the window is counted as the pass
 * always did (an unknown or double free).  The same thread's allocation of
 * the address does not claim it: a release stamped early can be followed
 * by its own thread's allocation of the same address (glibc's tcache hands
 * it back at once) before the other thread's stamp.
 *
 * A second shape: the early release lands on the address's previous
 * block, still live because its own thread is about to release it; that
 * thread's release then finds the address not live (it is parked), and
 * the thread allocates the address again (from its tcache) and hands the
 * new block over, whose release was the early one, already spent.  So a
 * parked release whose own thread allocated the address again within the
 * window (lv_park_claim marks it) and that nothing claimed is that spent
 * release's block: when the window passes, the pass releases that block if
 * it is still live, and counts nothing.
 *
 * The table is small: in a correct program only inverted releases are
 * parked, and each waits for the window at most.
 */
#ifndef LV_PARK_H
#define LV_PARK_H

#include <stddef.h>
#include <stdint.h>

#include "atr_reader.h"

/* How far a release may be stamped ahead of the allocation it releases:
 * the inversions measured were 0-315 ns on our VM (bench/RESULTS.md, "The
 * reader-side repair, built ...").  A longer window lets a later block of the
 * address, allocated by another thread, claim a free it did not follow. */
#define LV_PARK_WINDOW_NS 2000u
/* Releases parked at once; one more expires the oldest. */
#define LV_PARK_CAP 32u

struct lv_park {
	uint64_t window;		/* ticks; 0: parking off (every release counted at once) */
	uint32_t n;			/* entries in use */
	uint64_t oldest;		/* the smallest stamp among them (UINT64_MAX: none) */
	uint64_t reordered;		/* releases claimed by an allocation: put after it */
	struct atr_call e[LV_PARK_CAP]; /* the releases, as their compact records */
	uint64_t own[LV_PARK_CAP];	/* the stamp of the releasing thread's own
					   allocation of the address since (0: none) */
};

/* window in ticks (0: parking off). */
void lv_park_init(struct lv_park *p, uint64_t window);
/* LV_PARK_WINDOW_NS in the ticks of trace f (0 without one: a dj trace). */
uint64_t lv_park_ticks(const atr_file *f);

/* Parks release r (a free or a realloc's release of a block that is not
 * live).  The table full, its oldest entry goes to *expired first and 1 is
 * returned: the caller counts it as not parked; else 0.  Parking off
 * (window 0): r itself goes to *expired, 1. */
int lv_park_add(struct lv_park *p, const struct atr_call *r, struct atr_call *expired);

/* An allocation of ptr by thread at ts: the parked release it claims
 * (another thread's, stamped at most the window before ts) to *out,
 * removed: 1.  Else 0, and it marks that thread's own parked release of
 * ptr (the second shape above).  Call only while p->n. */
int lv_park_claim(struct lv_park *p, uint64_t ptr, uint32_t thread, uint64_t ts,
		  struct atr_call *out);

/* A parked release older than the window at now (every one, now
 * UINT64_MAX: the end of the stream) to *out, removed, and the stamp of
 * its thread's own allocation of the address since to *own (0: none): 1;
 * else 0.  Call until it returns 0.  With *own set, the pass releases the
 * address's live block (if any) as reordered; else it counts the release. */
int lv_park_expire(struct lv_park *p, uint64_t now, struct atr_call *out, uint64_t *own);

/* Is anything due at now? (the hot paths' test before lv_park_expire) */
static inline int lv_park_due(const struct lv_park *p, uint64_t now)
{
	return p->n && now > p->oldest + p->window;
}

#endif
