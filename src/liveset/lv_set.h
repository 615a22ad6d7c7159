/* lv_set.h - the live set: which blocks are allocated at a point of a trace.
 *
 * Every pass that follows blocks (info's summary, report, arenas' mmapped
 * chunks, convert, ClickHouse's load) keeps its per-block data in this one
 * map: address -> struct lv_block (32 bytes: the address, the requested
 * size and two user words), with the live totals, the peak and the count of
 * releases of blocks that are not live.  lv_event() applies the rules every
 * pass shares (an_summary.h spells them out); a pass with rules of its own
 * (report's filters, convert's slots) calls lv_born() / lv_died() itself.
 *
 * Built for traces with millions of live blocks: open addressing, linear
 * probing with backward-shift deletion (no tombstones), Fibonacci hashing,
 * one cache line holds two blocks, big tables on transparent huge pages
 * (a table of 1e6 blocks is 64 MiB: 4 KiB pages would miss the TLB on
 * every access), and lv_prefetch() so that a caller reading ahead (lv_ahead.h)
 * overlaps the cache misses of successive events.  Memory is proportional
 * to the peak number of live blocks (at most 4x their 32 bytes), never to
 * the trace.
 */
#ifndef LV_SET_H
#define LV_SET_H

#include <stddef.h>
#include <stdint.h>

#include "atr_reader.h"

/* One live block.  size is the requested size (the totals use it); when,
 * tag and owner are the pass's own (report: allocation time and stack
 * index; convert: the op index and thread of the slot's last use and the
 * slot). */
struct lv_block {
	uint64_t ptr;
	uint64_t size;
	uint64_t when;
	uint32_t tag, owner;
};

struct lv_set {
	struct lv_block *tab; /* cap entries; ptr 0 marks an empty one */
	size_t cap;	      /* power of two, or 0 */
	unsigned shift;	      /* 64 - log2(cap) */
	size_t count;	      /* entries, the out-of-line address 0 included */
	size_t map_len;	      /* bytes mapped for tab (0: malloc'ed) */
	int has_zero;	      /* address 0 (only a corrupt trace makes it live) */
	struct lv_block zero;
	/* totals over the live blocks */
	uint64_t blocks, bytes;
	uint64_t peak_bytes, peak_ts;
	/* allocations that returned a block still live (its release is missing
	 * from the trace: the old block is replaced) */
	uint64_t dup_allocs;
	/* releases of blocks that are not live (lv_unknown): in an attached
	 * trace they were allocated before the attach, in a fork child
	 * inherited from the parent, else unknown */
	uint64_t unknown_frees, inherited_frees, pre_attach_frees;
	uint32_t status; /* the trace's ATR_STATUS_* (0: none known) */
	size_t limit;	 /* entries before the table grows (0: no table) */
};

/* status: atr_get_info(f)->status, which says how to count unknown frees. */
void lv_init(struct lv_set *s, uint32_t status);
void lv_destroy(struct lv_set *s);

static inline size_t lv_home(const struct lv_set *s, uint64_t ptr)
{
	return (size_t)((ptr * 0x9e3779b97f4a7c15ULL) >> s->shift);
}

/* Brings ptr's home entry into the cache: call it some events before the
 * lookup (lv_ahead does). */
static inline void lv_prefetch_line(const void *p)
{
	/* GCC 12's dead code elimination drops __builtin_prefetch here (its
	 * address has no other use): spelled out where we know the insn */
#if defined(__x86_64__) || defined(__i386__)
	__asm__ volatile("prefetcht0 %0" : : "m"(*(const char *)p));
#elif defined(__aarch64__)
	__asm__ volatile("prfm pstl1keep, %0" : : "Q"(*(const char *)p));
#else
	__builtin_prefetch(p, 1, 3);
#endif
}

/* Entries per 64-byte cache line (big tables are 2 MiB-aligned). */
#define LV_LINE_ENTRIES (64 / sizeof(struct lv_block))

/* The home entry's line and the line after it: a removal's backward shift
 * reads the entries after the block's, an insertion steps on past a taken
 * home (at 1e6 live blocks the unfetched next line was a fifth of
 * convert's samples; fetching it always beat fetching it only when the
 * home is a line's last entry: bench/replay/RESULTS.md). */
static inline void lv_prefetch(const struct lv_set *s, uint64_t ptr)
{
	if (!s->cap)
		return;
	size_t j = lv_home(s, ptr);
	lv_prefetch_line(&s->tab[j]);
	lv_prefetch_line(&s->tab[((j | (LV_LINE_ENTRIES - 1)) + 1) & (s->cap - 1)]);
}

/* lv_prefetch as an atr_prefetch_fn (atr_iter_set_prefetch; set: the
 * struct lv_set *). */
void lv_prefetch_hook(void *set, uint64_t ptr);

/* ptr's block if it is live, else NULL; valid until the next change. */
struct lv_block *lv_find(struct lv_set *s, uint64_t ptr);

/* lv_born in every case, lv_died for address 0 and an empty set; the
 * inline versions below take the common case (a table with room, a new
 * block, address not 0) and leave the rest to these. */
int lv_born_slow(struct lv_set *s, uint64_t ptr, uint64_t size, uint64_t ts, struct lv_block **blk,
		 struct lv_block *old);
int lv_died_slow(struct lv_set *s, uint64_t ptr, struct lv_block *out);

/* ptr becomes live (size requested at ts): *blk (if blk) receives its block
 * (ptr, size set, when = ts, tag = owner = 0; valid until the next change).
 * Returns 1, or 0 if ptr was live already: the old block is replaced (copied
 * to *old if old, counted in dup_allocs); ATR_E_NOMEM.  Inline: a pass
 * makes one or two of these calls per event. */
static inline int lv_born(struct lv_set *s, uint64_t ptr, uint64_t size, uint64_t ts,
			  struct lv_block **blk, struct lv_block *old)
{
	if (__builtin_expect(!ptr || s->count + 1 > s->limit, 0))
		return lv_born_slow(s, ptr, size, ts, blk, old);
	size_t mask = s->cap - 1;
	struct lv_block *b;
	for (size_t j = lv_home(s, ptr);; j = (j + 1) & mask) {
		b = &s->tab[j];
		if (b->ptr == ptr) /* live already: replaced */
			return lv_born_slow(s, ptr, size, ts, blk, old);
		if (!b->ptr)
			break;
	}
	s->count++;
	*b = (struct lv_block){.ptr = ptr, .size = size, .when = ts};
	s->blocks++;
	s->bytes += size;
	if (s->bytes > s->peak_bytes) {
		s->peak_bytes = s->bytes;
		s->peak_ts = ts;
	}
	if (blk)
		*blk = b;
	return 1;
}

/* ptr dies: 1 and its block in *out (if out), or 0 if it was not live
 * (nothing is counted: see lv_unknown). */
static inline int lv_died(struct lv_set *s, uint64_t ptr, struct lv_block *out)
{
	if (__builtin_expect(!ptr || !s->cap, 0))
		return lv_died_slow(s, ptr, out);
	size_t mask = s->cap - 1;
	size_t j = lv_home(s, ptr);
	for (;; j = (j + 1) & mask) {
		const struct lv_block *b = &s->tab[j];
		if (b->ptr == ptr)
			break;
		if (!b->ptr)
			return 0;
	}
	if (out)
		*out = s->tab[j];
	s->count--;
	s->blocks--;
	s->bytes -= s->tab[j].size;
	/* backward shift: pull later members of the cluster into the hole
	 * when their home is not cyclically within (hole, k] */
	size_t hole = j, k = j;
	for (;;) {
		k = (k + 1) & mask;
		uint64_t kp = s->tab[k].ptr;
		if (!kp)
			break;
		size_t home = lv_home(s, kp);
		if (((k - home) & mask) >= ((k - hole) & mask)) {
			s->tab[hole] = s->tab[k];
			hole = k;
		}
	}
	s->tab[hole].ptr = 0;
	return 1;
}

/* Counts a release of a block that is not live (by the trace's status). */
void lv_unknown(struct lv_set *s);

/* ---- the shared rules ---- */

enum lv_why {
	LV_FREE,	    /* free(ptr) */
	LV_REALLOC_RELEASE, /* the old block of a realloc that moved or freed it
			       (the reader's ATR_EV_REALLOC_RELEASE, at the
			       call's start) */
	LV_IN_PLACE,	    /* a realloc that returned the same address: the old
			       size dies, the new one is born */
	LV_REPLACED,	    /* an allocation returned a block that was live */
};

struct lv_hooks {
	/* b was born by ev: the pass fills when/tag/owner (optional) */
	void (*born)(void *ctx, const struct atr_event *ev, struct lv_block *b);
	/* b died (optional); b is a copy */
	void (*died)(void *ctx, const struct atr_event *ev, const struct lv_block *b,
		     enum lv_why why);
};

/* Applies one event of the merged stream (atr_iter_next order):
 *   - malloc-like calls make ret live (LV_REPLACED if it was);
 *   - free(p != NULL) kills p; free(NULL) changes nothing;
 *   - ATR_EV_REALLOC_RELEASE kills the old block of a realloc at its start;
 *   - a realloc that returned p in place kills p and makes it live again
 *     with the new size; a failed realloc (NULL, size > 0) leaves p live;
 *     a successful one makes ret live;
 *   - a release of a block that is not live is counted by lv_unknown.
 * Other events are ignored.  Returns 0 or ATR_E_NOMEM. */
int lv_event(struct lv_set *s, const struct atr_event *ev, const struct lv_hooks *h, void *ctx);
/* The same rules for a compact record (atr_iter_next_calls), no hooks. */
int lv_call(struct lv_set *s, const struct atr_call *c);

#endif
