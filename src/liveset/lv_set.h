/* lv_set.h - the live set: which blocks are allocated at a point of a trace.
 *
 * Every pass that follows blocks (info's summary, report, arenas' mmapped
 * chunks, convert, ClickHouse's load) keeps its per-block data in this one
 * map: address -> struct lv_block (32 bytes: the address, the requested
 * size and two user words), with the live totals, the peak and the count of
 * releases of blocks that are not live.  A pass that needs the sizes alone
 * (info's summary) takes a set of sizes (lv_init_sizes: 16-byte entries,
 * half the memory and the cache lines).  lv_event() applies the rules every
 * pass shares (an_summary.h spells them out); a pass with rules of its own
 * (report's filters, convert's slots) calls lv_born() / lv_died() itself.
 *
 * Built for traces with millions of live blocks: open addressing, linear
 * probing with backward-shift deletion (no tombstones), nearby homes (the
 * blocks of one 4 KiB page on consecutive entries in address order, one
 * per 8 bytes, each page at a hashed offset: allocators hand out blocks in
 * clusters, so successive events fall on lines that are in the cache
 * already; lv_hash), falling back to a Fibonacci hash of the whole
 * address when an insertion lands more than LV_PROBE_LIMIT entries past its
 * home (addresses denser than one per 8 bytes, pages that pile up) until
 * the table grows, big tables on transparent huge pages (a table of 1e6
 * blocks is 64 MiB: 4 KiB pages would miss the TLB on every access), and
 * lv_prefetch() so that a caller reading ahead (lv_ahead.h, the reader's
 * prefetch hook) overlaps the cache misses of successive events.  Memory
 * is proportional to the peak number of live blocks (at most 4x their
 * entry's 32 or 16 bytes), never to the trace.
 */
#ifndef LV_SET_H
#define LV_SET_H

#include <stddef.h>
#include <stdint.h>

#include "atr_reader.h"
#include "liveset/lv_park.h"
#include "plat_prefetch.h"

/* One live block.  size is the requested size (the totals use it); when,
 * tag and owner are the pass's own (report: allocation time and stack
 * index; convert's realloc releases: the op index and thread of the
 * slot's last use and the slot; convert's live set is a set of sizes
 * whose size word it packs itself, rp_convert.c's ent_pack). */
struct lv_block {
	uint64_t ptr;
	uint64_t size;
	uint64_t when;
	uint32_t tag, owner;
};

struct lv_set {
	void *tab;		    /* cap entries of 1 << lg bytes; ptr 0: empty */
	unsigned lg;		    /* LV_LG_FULL, or LV_LG_SIZES (lv_init_sizes) */
	size_t cap;		    /* power of two, or 0 */
	unsigned hs, grain, region; /* lv_hash's: nearby or scattered mode */
	size_t count;		    /* entries, the out-of-line address 0 included */
	size_t map_len;		    /* bytes mapped for tab (0: malloc'ed) */
	int has_zero;		    /* address 0 (only a corrupt trace makes it live) */
	struct lv_block zero;
	struct lv_block found; /* a set of sizes' lv_find and lv_born's blk */
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
	/* releases of blocks not live yet, waiting for the allocation they
	 * release (lv_park.h; lv_set_park: off in a zeroed set) */
	struct lv_park park;
	int grow_helper; /* lv_set_grow_helper */
};

/* log2 of an entry's bytes: a whole struct lv_block, or its ptr and size */
#define LV_LG_FULL  5
#define LV_LG_SIZES 4

/* status: atr_get_info(f)->status, which says how to count unknown frees.
 * A zeroed struct lv_set is lv_init(s, 0)'s empty set too. */
void lv_init(struct lv_set *s, uint32_t status);
/* A set that keeps no when/tag/owner (16-byte entries: half the memory and
 * twice the entries per cache line of lv_init's): the blocks it hands out
 * (lv_find, lv_died's *out, lv_born's *old) have them 0, and lv_born's blk
 * must be NULL.  For passes that need the sizes alone (info's summary). */
void lv_init_sizes(struct lv_set *s, uint32_t status);
void lv_destroy(struct lv_set *s);

/* The home of an address: ((ptr >> grain) + H(ptr >> region)) & mask, H
 * a multiplicative hash: bits from hs on of the product.  Nearby mode
 * (grain LV_GRAIN 3, region lv_region(cap): LV_REGION 12 from 32768
 * entries on, hs 32): the blocks of one 4 KiB page land on consecutive
 * entries in address order, one entry per 8 bytes, each page at a hashed
 * offset.  Scattered mode (grain 63, region 0, hs 64 - log2(cap)): a
 * Fibonacci hash of the whole address (ptr >> 63 adds a 0 or 1 to it: as
 * good a home).  The pages' offsets take the bits from 32 on, not the top
 * ones: the top bits of consecutive pages step by the golden ratio of the
 * table, and with the pages' own 512 entries piled up past LV_PROBE_LIMIT
 * on python3's trace (bench/replay/RESULTS.md). */
#define LV_GRAIN	 3
#define LV_REGION	 12
#define LV_NEARBY_HS	 32
#define LV_SCATTER_GRAIN 63
/* An insertion that would land this many entries past its home switches
 * the set to scattered mode (lv_born_slow rehashes it) until the table
 * grows; so does a growth that placed an entry as far: at a load of 1/2
 * scattered homes reach ~60 only among millions of blocks. */
#define LV_PROBE_LIMIT 64
static inline size_t lv_hash(uint64_t ptr, size_t mask, unsigned hs, unsigned grain,
			     unsigned region)
{
	return (size_t)((ptr >> grain) + (((ptr >> region) * 0x9e3779b97f4a7c15ULL) >> hs)) & mask;
}

/* A page's span of entries (1 << (region - LV_GRAIN)): cap / 64, at most
 * 512 (a 4 KiB page at one entry per 8 bytes): in a small table the pages
 * of a dense heap would overlap (tables that fit in the cache gain
 * nothing from nearby homes). */
static inline unsigned lv_region(size_t cap)
{
	unsigned lg = (unsigned)__builtin_ctzll((unsigned long long)cap);
	unsigned span = lg > 6 ? lg - 6 : 0;
	return LV_GRAIN + (span < LV_REGION - LV_GRAIN ? span : LV_REGION - LV_GRAIN);
}

static inline size_t lv_home(const struct lv_set *s, uint64_t ptr)
{
	/* nearby homes of whole pages (tables from 32768 entries: every big
	   one, unless it switched to scattered homes) by constant shifts:
	   ~3 homes are taken per event, more in a removal's backward shift */
	if (__builtin_expect(s->region == LV_REGION, 1))
		return lv_hash(ptr, s->cap - 1, LV_NEARBY_HS, LV_GRAIN, LV_REGION);
	return lv_hash(ptr, s->cap - 1, s->hs, s->grain, s->region);
}

/* log2 of the entries' bytes (a zeroed set is a full one) */
static inline unsigned lv_lg(const struct lv_set *s)
{
	return s->lg == LV_LG_SIZES ? LV_LG_SIZES : LV_LG_FULL;
}

/* Entry j: entries are 1 << lv_lg(s) bytes, 32 or 16 (a set of sizes, whose
 * entries end after size). */
static inline struct lv_block *lv_ent_lg(const struct lv_set *s, size_t j, unsigned lg)
{
	return (struct lv_block *)((char *)s->tab + (j << lg));
}

static inline struct lv_block *lv_ent(const struct lv_set *s, size_t j)
{
	return lv_ent_lg(s, j, lv_lg(s));
}

/* Copies entry src to d (an entry or a whole block): the pass's words only
 * in a full set; a block read from a set of sizes gets them 0. */
static inline void lv_copy_lg(struct lv_block *d, const struct lv_block *src, int d_whole,
			      unsigned lg)
{
	d->ptr = src->ptr;
	d->size = src->size;
	if (lg == LV_LG_FULL) {
		d->when = src->when;
		d->tag = src->tag;
		d->owner = src->owner;
	} else if (d_whole) {
		d->when = 0;
		d->tag = d->owner = 0;
	}
}

static inline void lv_copy(const struct lv_set *s, struct lv_block *d, const struct lv_block *src,
			   int d_whole)
{
	lv_copy_lg(d, src, d_whole, lv_lg(s));
}

/* Brings ptr's home entry into the cache: call it some events before the
 * lookup (lv_ahead does). */
static inline void lv_prefetch_line(const void *p)
{
	plat_prefetch(p);
}

/* The home entry's line and the line after it: a removal's backward shift
 * reads the entries after the block's, an insertion steps on past a taken
 * home (at 1e6 live blocks the unfetched next line was a fifth of
 * convert's samples; fetching it always beat fetching it only when the
 * home is a line's last entry: bench/replay/RESULTS.md).  With 32-byte
 * entries a third line paid at 1e6 live blocks; convert's 16-byte ones
 * are better off without it (bench/replay/RESULTS.md, "A third line",
 * "Entries of 16 bytes"). */
static inline __attribute__((always_inline)) void lv_prefetch_lg(const struct lv_set *s,
								 uint64_t ptr, unsigned lg)
{
	if (!s->cap)
		return;
	size_t j = lv_home(s, ptr), per_line = (size_t)64 >> lg;
	lv_prefetch_line(lv_ent_lg(s, j, lg));
	lv_prefetch_line(lv_ent_lg(s, ((j | (per_line - 1)) + 1) & (s->cap - 1), lg));
}

static inline void lv_prefetch(const struct lv_set *s, uint64_t ptr)
{
	lv_prefetch_lg(s, ptr, lv_lg(s));
}

/* lv_prefetch as an atr_prefetch_fn (atr_iter_set_prefetch; set: the
 * struct lv_set *). */
void lv_prefetch_hook(void *set, uint64_t ptr);

/* A table from this size on misses the core's caches: prefetching its
 * entries pays.  Below it the hook is an indirect call and a hash per
 * address for lines that are in the cache already (info on xfreebench's
 * and cc1plus's traces, 512 KiB tables: bench/RESULTS.md). */
#define LV_PREFETCH_BYTES (2u << 20)

/* Does s's table have LV_PREFETCH_BYTES or more (a pass sets the reader's
 * prefetch hook while it does)? */
static inline int lv_prefetch_pays(const struct lv_set *s)
{
	return ((uint64_t)s->cap << lv_lg(s)) >= LV_PREFETCH_BYTES;
}

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
static inline __attribute__((always_inline)) int
lv_born_in(struct lv_set *s, uint64_t ptr, uint64_t size, uint64_t ts, struct lv_block **blk,
	   struct lv_block *old, unsigned lg, int totals)
{
	if (__builtin_expect(!ptr || s->count + 1 > s->limit, 0))
		return lv_born_slow(s, ptr, size, ts, blk, old);
	size_t mask = s->cap - 1;
	struct lv_block *b;
	size_t j0 = lv_home(s, ptr);
	for (size_t j = j0;; j = (j + 1) & mask) {
		b = lv_ent_lg(s, j, lg);
		if (b->ptr == ptr) /* live already: replaced */
			return lv_born_slow(s, ptr, size, ts, blk, old);
		if (!b->ptr) {
			if (__builtin_expect(((j - j0) & mask) > LV_PROBE_LIMIT, 0))
				return lv_born_slow(s, ptr, size, ts, blk, old);
			break;
		}
	}
	s->count++;
	b->ptr = ptr;
	b->size = size;
	if (lg == LV_LG_FULL) {
		b->when = ts;
		b->tag = b->owner = 0;
	}
	if (totals) {
		s->blocks++;
		s->bytes += size;
		if (s->bytes > s->peak_bytes) {
			s->peak_bytes = s->bytes;
			s->peak_ts = ts;
		}
	}
	if (blk)
		*blk = b;
	return 1;
}

static inline __attribute__((always_inline)) int lv_born_lg(struct lv_set *s, uint64_t ptr,
							    uint64_t size, uint64_t ts,
							    struct lv_block **blk,
							    struct lv_block *old, unsigned lg)
{
	return lv_born_in(s, ptr, size, ts, blk, old, lg, 1);
}

/* A set of words: a set of sizes whose size word is the pass's own
 * (convert packs a slot and a size into it, rp_convert.c's ent_pack).
 * lv_born_word and lv_remove_word keep no totals: the pass keeps its
 * own, and the set's blocks, bytes and peak mean nothing (lv_born_slow,
 * for a growth or a live address, still adds the words up). */
static inline __attribute__((always_inline)) int lv_born_word(struct lv_set *s, uint64_t ptr,
							      uint64_t word, struct lv_block **blk,
							      struct lv_block *old)
{
	return lv_born_in(s, ptr, word, 0, blk, old, LV_LG_SIZES, 0);
}

static inline int lv_born(struct lv_set *s, uint64_t ptr, uint64_t size, uint64_t ts,
			  struct lv_block **blk, struct lv_block *old)
{
	/* each entry size its own copy: constant strides and copies */
	if (s->lg == LV_LG_SIZES)
		return lv_born_lg(s, ptr, size, ts, blk, old, LV_LG_SIZES);
	return lv_born_lg(s, ptr, size, ts, blk, old, LV_LG_FULL);
}

/* ptr's entry (ptr not 0, a set with a table: s->cap), or NULL if it is
 * not live; *at: its index.  With lv_remove_at, lv_died in two steps
 * for a pass that looks at the block before it decides. */
static inline __attribute__((always_inline)) struct lv_block *
lv_lookup_lg(const struct lv_set *s, uint64_t ptr, size_t *at, unsigned lg)
{
	size_t mask = s->cap - 1;
	for (size_t j = lv_home(s, ptr);; j = (j + 1) & mask) {
		struct lv_block *b = lv_ent_lg(s, j, lg);
		if (b->ptr == ptr) {
			*at = j;
			return b;
		}
		if (!b->ptr)
			return NULL;
	}
}

static inline __attribute__((always_inline)) void
lv_remove_in(struct lv_set *s, size_t j, const struct lv_block *b, unsigned lg, int totals)
{
	size_t mask = s->cap - 1;
	s->count--;
	if (totals) {
		s->blocks--;
		s->bytes -= b->size;
	}
	/* backward shift: pull later members of the cluster into the hole
	 * when their home is not cyclically within (hole, k] */
	size_t hole = j, k = j;
	for (;;) {
		k = (k + 1) & mask;
		const struct lv_block *kb = lv_ent_lg(s, k, lg);
		if (!kb->ptr)
			break;
		size_t home = lv_home(s, kb->ptr);
		if (((k - home) & mask) >= ((k - hole) & mask)) {
			lv_copy_lg(lv_ent_lg(s, hole, lg), kb, 0, lg);
			hole = k;
		}
	}
	lv_ent_lg(s, hole, lg)->ptr = 0;
}

/* Removes entry j (b, lv_lookup_lg's) from the set: its block dies. */
static inline __attribute__((always_inline)) void
lv_remove_at(struct lv_set *s, size_t j, const struct lv_block *b, unsigned lg)
{
	lv_remove_in(s, j, b, lg, 1);
}

/* lv_remove_at in a set of words (lv_born_word). */
static inline __attribute__((always_inline)) void lv_remove_word(struct lv_set *s, size_t j,
								 const struct lv_block *b)
{
	lv_remove_in(s, j, b, LV_LG_SIZES, 0);
}

/* ptr dies: 1 and its block in *out (if out), or 0 if it was not live
 * (nothing is counted: see lv_unknown). */
static inline __attribute__((always_inline)) int lv_died_lg(struct lv_set *s, uint64_t ptr,
							    struct lv_block *out, unsigned lg)
{
	if (__builtin_expect(!ptr || !s->cap, 0))
		return lv_died_slow(s, ptr, out);
	size_t j;
	struct lv_block *b = lv_lookup_lg(s, ptr, &j, lg);
	if (!b)
		return 0;
	if (out)
		lv_copy_lg(out, b, 1, lg);
	lv_remove_at(s, j, b, lg);
	return 1;
}

static inline int lv_died(struct lv_set *s, uint64_t ptr, struct lv_block *out)
{
	if (s->lg == LV_LG_SIZES)
		return lv_died_lg(s, ptr, out, LV_LG_SIZES);
	return lv_died_lg(s, ptr, out, LV_LG_FULL);
}

/* How far the entries sit past their homes: the sum and the maximum (for
 * tests and measurements). */
void lv_probes(const struct lv_set *s, uint64_t *sum, size_t *max);

/* Counts a release of a block that is not live (by the trace's status). */
void lv_unknown(struct lv_set *s);

/* lv_event / lv_call(s) park a release of a block that is not live for
 * the allocation by another thread it may have been stamped ahead of
 * (lv_park.h) instead of counting it at once.  window: in ticks
 * (lv_park_ticks), 0 off.
 * A pass that parks calls lv_settle at its end, before it reads
 * unknown_frees: the releases still parked are counted then. */
void lv_set_park(struct lv_set *s, uint64_t window);
void lv_settle(struct lv_set *s);

/* on: when a table of 8 MiB or more doubles, a second thread faults in
 * half of the new memory while the table is rehashed (for a pass that may
 * use two cores: convert with its second thread).  Off in a zeroed set. */
static inline void lv_set_grow_helper(struct lv_set *s, int on)
{
	s->grow_helper = on;
}

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
 *   - a release of a block that is not live is counted by lv_unknown
 *     (parked first, with lv_set_park: an allocation of its address by
 *     another thread within the window comes first and the release
 *     follows it at once, counted as nothing; the second shape of
 *     lv_park.h ends its block when the window passes, without a hook).
 * Other events are ignored.  Returns 0 or ATR_E_NOMEM. */
int lv_event(struct lv_set *s, const struct atr_event *ev, const struct lv_hooks *h, void *ctx);
/* The same rules for a compact record (atr_iter_next_calls), no hooks. */
int lv_call(struct lv_set *s, const struct atr_call *c);
/* lv_call for each of n records in order (a batch of atr_iter_next_calls:
 * one call, the entry size tested once): 0 or ATR_E_NOMEM. */
int lv_calls(struct lv_set *s, const struct atr_call *c, size_t n);

#endif
