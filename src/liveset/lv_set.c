/* lv_set.c - see lv_set.h. */
#define _GNU_SOURCE
#include "liveset/lv_set.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "util_io.h"

/* Tables up to this many entries (512 KiB) stay at most 1/4 full: probes
 * and backward shifts then mostly stop at the first entry without a
 * mispredicted branch.  Bigger ones go to 1/2: linear probing at 3/4
 * would walk ~8 entries (4 cache lines) per insert. */
#define LV_SMALL_CAP 16384u
/* Entries of the old table ahead whose new home grow() prefetches. */
#define LV_GROW_AHEAD 16
/* Tables from this size to LV_HUGE_BYTES are populated when allocated. */
#define LV_POPULATE_BYTES (16u << 10)
/* Tables from this size on are mapped with MADV_HUGEPAGE. */
#define LV_HUGE_BYTES (2u << 20)

static inline size_t lv_limit(size_t cap)
{
	return cap <= LV_SMALL_CAP ? cap / 4 : cap / 2;
}

void lv_init(struct lv_set *s, uint32_t status)
{
	memset(s, 0, sizeof(*s));
	s->status = status;
	s->lg = LV_LG_FULL;
	s->hs = LV_NEARBY_HS;
	s->grain = LV_GRAIN;
	s->region = LV_GRAIN;
}

void lv_init_sizes(struct lv_set *s, uint32_t status)
{
	lv_init(s, status);
	s->lg = LV_LG_SIZES;
}

static void tab_free(void *t, size_t map_len)
{
	if (map_len)
		munmap(t, map_len);
	else
		free(t);
}

/* A zeroed table of len bytes; *map_len 0 when malloc'ed. */
static void *tab_alloc(size_t len, size_t *map_len)
{
	*map_len = 0;
	if (len < LV_HUGE_BYTES) {
		/* a growth writes all over it: its pages mapped at once
		 * (util_populate; a fault each was 10 us on the VM, a third
		 * of info's page faults on cc1plus's trace) */
		if (len < LV_POPULATE_BYTES)
			return calloc(1, len);
		void *t = malloc(len); /* calloc would fault them in as it zeroes */
		if (t) {
			util_populate(t, len);
			memset(t, 0, len);
		}
		return t;
	}
	/* 2 MiB aligned, so that every page of it can be a huge page */
	size_t over = len + LV_HUGE_BYTES;
	uint8_t *p = mmap(NULL, over, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	uintptr_t a = ((uintptr_t)p + LV_HUGE_BYTES - 1) & ~(uintptr_t)(LV_HUGE_BYTES - 1);
	size_t head = a - (uintptr_t)p, tail = over - head - len;
	if (head)
		munmap(p, head);
	if (tail)
		munmap((uint8_t *)a + len, tail);
	madvise((void *)a, len, MADV_HUGEPAGE); /* a hint: fine if refused */
	*map_len = len;
	return (void *)a;
}

void lv_destroy(struct lv_set *s)
{
	if (s->tab)
		tab_free(s->tab, s->map_len);
	uint32_t status = s->status;
	unsigned lg = s->lg;
	lv_init(s, status);
	s->lg = lg;
}

/* The mapped table of s moved to a 2 MiB-aligned mapping of len bytes (its
 * tail zero), or NULL: the pages move, nothing is copied, and only the tail
 * is new memory (a table that doubled into a new mapping had the kernel
 * zero 3x the old one at once: a fifth of convert's time on python3's
 * trace, bench/replay/RESULTS.md). */
static void *tab_extend(struct lv_set *s, size_t len)
{
	size_t over = len + LV_HUGE_BYTES;
	uint8_t *p =
	    mmap(NULL, over, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	uintptr_t a = ((uintptr_t)p + LV_HUGE_BYTES - 1) & ~(uintptr_t)(LV_HUGE_BYTES - 1);
	void *t = mremap(s->tab, s->map_len, len, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)a);
	if (t == MAP_FAILED) {
		munmap(p, over);
		return NULL;
	}
	/* what of the reservation mremap did not replace */
	size_t head = a - (uintptr_t)p, tail = over - head - len;
	if (head)
		munmap(p, head);
	if (tail)
		munmap((uint8_t *)a + len, tail);
	madvise(t, len, MADV_HUGEPAGE);
	return t;
}

/* The entries of the table's first ocap entries placed again by n's homes,
 * in place (n.tab holds them, its other entries are empty).  An entry
 * placed is marked in done; one taken from its place leaves it empty, and
 * the entry it is placed over, if not done yet, is placed in turn.  An
 * entry only steps over done ones, which never move again, so every
 * entry ends with no empty one between its home and itself. */
static int rehash_in_place(const struct lv_set *n, size_t ocap, size_t *maxd)
{
	size_t mask = n->cap - 1;
	uint64_t *done = calloc((n->cap + 63) / 64, sizeof(uint64_t));
	if (!done)
		return ATR_E_NOMEM;
	for (size_t i = 0; i < ocap; i++) {
		if (i + LV_GROW_AHEAD < ocap) {
			uint64_t ap = lv_ent(n, i + LV_GROW_AHEAD)->ptr;
			if (ap)
				lv_prefetch_line(lv_ent(n, lv_home(n, ap)));
		}
		struct lv_block *e = lv_ent(n, i), x = {0}, y = {0};
		if (!e->ptr || (done[i / 64] >> (i % 64) & 1))
			continue;
		lv_copy(n, &x, e, 1);
		e->ptr = 0;
		for (size_t j = lv_home(n, x.ptr);;) {
			e = lv_ent(n, j);
			if (e->ptr && (done[j / 64] >> (j % 64) & 1)) {
				j = (j + 1) & mask;
				continue;
			}
			int taken = e->ptr != 0;
			if (taken)
				lv_copy(n, &y, e, 1);
			lv_copy(n, e, &x, 0);
			done[j / 64] |= (uint64_t)1 << (j % 64);
			size_t d = (j - lv_home(n, x.ptr)) & mask;
			*maxd = d > *maxd ? d : *maxd;
			if (!taken)
				break;
			x = y;
			j = lv_home(n, x.ptr);
		}
	}
	free(done);
	return 0;
}

/* rehash_in_place for a table that doubled (n->cap = 2 * ocap) and keeps
 * its nearby homes (same grain and region): an entry's new home is its
 * old one or that plus ocap.  With the entries before the first empty one
 * set aside (the cluster that wraps around the old table's end), a walk
 * up the old table takes each entry out and places it from its new home:
 * below ocap it lands between that home and where it was (every entry
 * there was placed already, and none is placed over an entry not yet
 * walked), above it among entries placed already; the ones set aside go
 * in last.  No marks and no chains of displaced entries (rehash_in_place:
 * 48 instructions per record of info on python3's trace, in growths). */
static int rehash_doubled(const struct lv_set *n, size_t ocap, size_t *maxd)
{
	size_t mask = n->cap - 1, p = 0;
	while (p < ocap && lv_ent(n, p)->ptr)
		p++;
	struct lv_block *aside = NULL;
	if (p) {
		if (p == ocap)
			return 1; /* a full table: not from lv_limit's loads */
		aside = malloc(p * sizeof(*aside));
		if (!aside)
			return ATR_E_NOMEM;
		for (size_t i = 0; i < p; i++) {
			lv_copy(n, &aside[i], lv_ent(n, i), 1);
			lv_ent(n, i)->ptr = 0;
		}
	}
	size_t far = *maxd, nlate = 0, late_cap = 0;
	struct lv_block *late = NULL;
	int r = 0;
	for (size_t i = p + 1; i <= ocap + p + nlate; i++) {
		struct lv_block *e, x;
		if (i < ocap) {
			e = lv_ent(n, i);
			if (!e->ptr)
				continue;
			lv_copy(n, &x, e, 1);
			e->ptr = 0;
		} else if (i > ocap + p) {
			x = late[i - ocap - p - 1];
		} else if (i > ocap) {
			x = aside[i - ocap - 1];
		} else {
			continue;
		}
		size_t h = lv_home(n, x.ptr), j = h;
		int wait = 0;
		while (lv_ent(n, j)->ptr) {
			j = (j + 1) & mask;
			/* a home near the end whose run wrapped past the first
			 * empty entry, over entries not walked yet: placed at
			 * the end (never seen on a real trace) */
			wait |= i < ocap && j == p + 1;
		}
		if (wait) {
			if (nlate == late_cap) {
				late_cap = late_cap ? 2 * late_cap : 16;
				struct lv_block *t = realloc(late, late_cap * sizeof(*late));
				if (!t) {
					r = ATR_E_NOMEM;
					break;
				}
				late = t;
			}
			late[nlate++] = x;
			continue;
		}
		lv_copy(n, lv_ent(n, j), &x, 0);
		far = ((j - h) & mask) > far ? (j - h) & mask : far;
	}
	*maxd = far;
	free(aside);
	free(late);
	return r;
}

/* lv_set_grow_helper: the upper half of a grown table's new tail (tables
 * that double from LV_POP_TAIL bytes on) faulted in by a thread of its own while
 * the rehash walks up to it.  The kernel zeroes the new pages: in a
 * convert after a few idle seconds on the benchmark VM, whose host takes
 * freed memory back, 40% of the samples were that zeroing under rehash;
 * two threads fault fresh huge pages in ~1.4x as fast as one
 * (bench/replay/RESULTS.md, "The table's new half"). */
#define LV_POP_TAIL (8u << 20)
struct tail_pop {
	pthread_t th;
	void *p;
	size_t len;
};

static void *tail_pop_run(void *arg)
{
	struct tail_pop *t = arg;
	util_populate(t->p, t->len);
	return NULL;
}

static int tail_pop_start(struct tail_pop *t, void *tab, size_t old_len, size_t new_len)
{
	size_t tail = new_len - old_len;
	if (tail < LV_POP_TAIL)
		return 0;
	size_t half = (tail / 2) & ~(size_t)(LV_HUGE_BYTES - 1);
	t->p = (uint8_t *)tab + new_len - half;
	t->len = half;
	/* signals stay with the caller's threads */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int e = pthread_create(&t->th, NULL, tail_pop_run, t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return e == 0;
}

/* The table again with ncap entries, homes by (grain, region); *maxd: the
 * farthest an entry landed from its home. */
static int rehash(struct lv_set *s, size_t ncap, unsigned grain, unsigned region, size_t *maxd)
{
	*maxd = 0;
	if (ncap > (SIZE_MAX / 2) >> lv_lg(s))
		return ATR_E_NOMEM;
	size_t nlen = ncap << lv_lg(s);
	struct lv_set n = *s;
	n.grain = grain;
	n.region = region;
	n.cap = ncap;
	n.hs = grain == LV_SCATTER_GRAIN ? 64u - (unsigned)__builtin_ctzll((unsigned long long)ncap)
					 : LV_NEARBY_HS;
	n.limit = lv_limit(ncap);
	/* a mapped table grows where it is (or moves to a bigger mapping
	 * without a copy), a table that changes homes is rehashed in place */
	if (ncap == s->cap || (s->map_len && (n.tab = tab_extend(s, nlen)))) {
		n.map_len = ncap == s->cap ? s->map_len : nlen;
		int r = 1;
		struct tail_pop tp;
		int helped = ncap != s->cap && s->grow_helper &&
			     tail_pop_start(&tp, n.tab, s->map_len, nlen);
		if (ncap == 2 * s->cap && s->grain == grain && s->region == region && s->hs == n.hs)
			r = rehash_doubled(&n, s->cap, maxd);
		if (helped)
			pthread_join(tp.th, NULL);
		if (r > 0)
			r = rehash_in_place(&n, s->cap, maxd);
		if (r < 0 && ncap == s->cap)
			return r; /* nothing moved yet: s as it was */
		/* the table moved (its new tail is zero): the old entries
		 * stay at their old homes */
		if (r < 0) {
			s->tab = n.tab;
			s->map_len = nlen;
			return r;
		}
		*s = n;
		return 0;
	}
	n.tab = tab_alloc(nlen, &n.map_len);
	if (!n.tab)
		return ATR_E_NOMEM;
	size_t mask = ncap - 1;
	/* the old table is read in order, the new one written at random:
	 * its entries are fetched LV_GROW_AHEAD old entries ahead (1e6
	 * blocks would otherwise wait for 1e6 misses one after another) */
	for (size_t i = 0; i < s->cap; i++) {
		if (i + LV_GROW_AHEAD < s->cap) {
			uint64_t ap = lv_ent(s, i + LV_GROW_AHEAD)->ptr;
			if (ap)
				lv_prefetch_line(lv_ent(&n, lv_home(&n, ap)));
		}
		const struct lv_block *b = lv_ent(s, i);
		if (!b->ptr)
			continue;
		size_t h = lv_home(&n, b->ptr), j = h;
		while (lv_ent(&n, j)->ptr)
			j = (j + 1) & mask;
		lv_copy(s, lv_ent(&n, j), b, 0);
		*maxd = ((j - h) & mask) > *maxd ? (j - h) & mask : *maxd;
	}
	if (s->tab)
		tab_free(s->tab, s->map_len);
	*s = n;
	return 0;
}

static int grow(struct lv_set *s)
{
	/* nearby homes again at each size (pages overlap less in a bigger
	 * table), unless they pile up at once */
	size_t ncap = s->cap ? s->cap * 2 : 64, maxd;
	int r = rehash(s, ncap, LV_GRAIN, lv_region(ncap), &maxd);
	if (r == 0 && maxd > LV_PROBE_LIMIT)
		rehash(s, ncap, LV_SCATTER_GRAIN, 0, &maxd); /* a failure keeps them */
	return r;
}

void lv_prefetch_hook(void *set, uint64_t ptr)
{
	lv_prefetch(set, ptr);
}

struct lv_block *lv_find(struct lv_set *s, uint64_t ptr)
{
	if (!ptr)
		return s->has_zero ? &s->zero : NULL;
	if (!s->cap)
		return NULL;
	size_t mask = s->cap - 1;
	for (size_t j = lv_home(s, ptr);; j = (j + 1) & mask) {
		struct lv_block *b = lv_ent(s, j);
		if (b->ptr == ptr) {
			if (lv_lg(s) == LV_LG_FULL)
				return b;
			lv_copy(s, &s->found, b, 1);
			return &s->found;
		}
		if (!b->ptr)
			return NULL;
	}
}

static inline void account_born(struct lv_set *s, uint64_t size, uint64_t ts)
{
	s->blocks++;
	s->bytes += size;
	if (s->bytes > s->peak_bytes) {
		s->peak_bytes = s->bytes;
		s->peak_ts = ts;
	}
}

int lv_born_slow(struct lv_set *s, uint64_t ptr, uint64_t size, uint64_t ts, struct lv_block **blk,
		 struct lv_block *old)
{
	struct lv_block *b;
	int rc = 1;
	if (!ptr) {
		b = &s->zero;
		if (!s->has_zero) {
			s->has_zero = 1;
			s->count++;
			goto fresh;
		}
		goto replace;
	}
	if (s->count + 1 > lv_limit(s->cap) && grow(s) < 0)
		return ATR_E_NOMEM;
	size_t mask = s->cap - 1, j0 = lv_home(s, ptr), maxd;
	for (size_t j = j0;; j = (j + 1) & mask) {
		b = lv_ent(s, j);
		if (b->ptr == ptr)
			goto replace;
		if (!b->ptr) {
			if (((j - j0) & mask) > LV_PROBE_LIMIT && s->grain != LV_SCATTER_GRAIN &&
			    rehash(s, s->cap, LV_SCATTER_GRAIN, 0, &maxd) == 0) {
				/* the nearby homes pile up: addresses denser than
				 * one block per 8 bytes, or pages that overlap */
				mask = s->cap - 1;
				j = j0 = lv_home(s, ptr);
				for (; lv_ent(s, j)->ptr; j = (j + 1) & mask)
					;
				b = lv_ent(s, j);
			}
			s->count++;
			goto fresh;
		}
	}
replace:
	if (old)
		lv_copy(s, old, b, 1);
	s->dup_allocs++;
	s->blocks--;
	s->bytes -= b->size;
	rc = 0;
fresh:
	b->ptr = ptr;
	b->size = size;
	if (lv_lg(s) == LV_LG_FULL) {
		b->when = ts;
		b->tag = b->owner = 0;
	} else if (blk) { /* a set of sizes keeps no more: a copy */
		lv_copy(s, &s->found, b, 1);
		b = &s->found;
	}
	account_born(s, size, ts);
	if (blk)
		*blk = b;
	return rc;
}

int lv_died_slow(struct lv_set *s, uint64_t ptr, struct lv_block *out)
{
	if (!ptr) {
		if (!s->has_zero)
			return 0;
		if (out)
			*out = s->zero;
		s->has_zero = 0;
		s->count--;
		s->blocks--;
		s->bytes -= s->zero.size;
		memset(&s->zero, 0, sizeof(s->zero));
		return 1;
	}
	if (!s->cap)
		return 0;
	return lv_died(s, ptr, out); /* not reached: lv_died takes these */
}

void lv_probes(const struct lv_set *s, uint64_t *sum, size_t *max)
{
	*sum = 0;
	*max = 0;
	for (size_t j = 0; j < s->cap; j++) {
		const struct lv_block *b = lv_ent(s, j);
		if (!b->ptr)
			continue;
		size_t d = (j - lv_home(s, b->ptr)) & (s->cap - 1);
		*sum += d;
		if (d > *max)
			*max = d;
	}
}

void lv_unknown(struct lv_set *s)
{
	if (s->status & ATR_STATUS_ATTACHED)
		s->pre_attach_frees++;
	else if (s->status & ATR_STATUS_FORK_CHILD)
		s->inherited_frees++;
	else
		s->unknown_frees++;
}

void lv_set_park(struct lv_set *s, uint64_t window)
{
	lv_park_init(&s->park, window);
}

/* The releases parked longer than the window at now are counted, but
 * those whose thread allocated the address again: that block's release
 * was the early one (lv_park.h, the second shape). */
static void park_expire(struct lv_set *s, uint64_t now)
{
	struct atr_call x;
	uint64_t own;
	while (lv_park_expire(&s->park, now, &x, &own)) {
		if (own && lv_died(s, x.ptr, NULL))
			s->park.reordered++;
		else
			lv_unknown(s);
	}
}

void lv_settle(struct lv_set *s)
{
	park_expire(s, UINT64_MAX);
}

/* A release (r) of a block that is not live: parked, or counted. */
static void release_unknown(struct lv_set *s, const struct atr_call *r)
{
	struct atr_call x;
	if (lv_park_add(&s->park, r, &x))
		lv_unknown(s);
}

/* An allocation of ptr (thread, ts) that a parked release claims: the
 * block is born and released at once, the set does not change. */
static inline int park_claims(struct lv_set *s, uint64_t ptr, uint32_t thread, uint64_t ts)
{
	struct atr_call x;
	return __builtin_expect(s->park.n != 0, 0) && lv_park_claim(&s->park, ptr, thread, ts, &x);
}

/* ---- the shared rules ---- */

static int rule_kill(struct lv_set *s, const struct atr_event *ev, uint64_t ptr,
		     const struct lv_hooks *h, void *ctx, enum lv_why why)
{
	struct lv_block b;
	if (!lv_died(s, ptr, &b)) {
		struct atr_call r;
		atr_event_call(ev, &r);
		r.ptr = ptr;
		release_unknown(s, &r);
		return 0;
	}
	if (h && h->died)
		h->died(ctx, ev, &b, why);
	return 1;
}

static int rule_born(struct lv_set *s, const struct atr_event *ev, const struct lv_hooks *h,
		     void *ctx)
{
	struct lv_block *b, old;
	if (park_claims(s, ev->ret, ev->thread, ev->ts)) {
		/* born, and released by the parked release at once */
		struct lv_block z = {.ptr = ev->ret, .size = ev->size, .when = ev->ts};
		if (h && h->born)
			h->born(ctx, ev, &z);
		if (h && h->died)
			h->died(ctx, ev, &z, LV_FREE);
		return 0;
	}
	int r = lv_born(s, ev->ret, ev->size, ev->ts, &b, &old);
	if (r < 0)
		return r;
	if (h && h->born)
		h->born(ctx, ev, b);
	if (r == 0 && h && h->died)
		h->died(ctx, ev, &old, LV_REPLACED);
	return 0;
}

int lv_event(struct lv_set *s, const struct atr_event *ev, const struct lv_hooks *h, void *ctx)
{
	if (lv_park_due(&s->park, ev->ts))
		park_expire(s, ev->ts);
	if (ev->type == ATR_EV_REALLOC_RELEASE) {
		rule_kill(s, ev, ev->ptr, h, ctx, LV_REALLOC_RELEASE);
		return 0;
	}
	if (ev->type < 1 || ev->type > ATR_T_CALL_LAST)
		return 0;
	switch (atr_call_args(ev->type)) {
	case ATR_ARGS_PTR: /* free */
		if (ev->ptr)
			rule_kill(s, ev, ev->ptr, h, ctx, LV_FREE);
		return 0;
	case ATR_ARGS_OLD:
	case ATR_ARGS_OLD_NMEMB: /* realloc, reallocarray */
		if (!ev->ret) {
			/* failed: the old block stays (realloc(p, 0) released it
			 * by an ATR_EV_REALLOC_RELEASE) */
			if (ev->ptr && ev->size != 0 && !lv_find(s, ev->ptr))
				lv_unknown(s);
			return 0;
		}
		if (ev->ptr && ev->ret == ev->ptr)
			rule_kill(s, ev, ev->ptr, h, ctx, LV_IN_PLACE);
		return rule_born(s, ev, h, ctx);
	default:
		return ev->ret ? rule_born(s, ev, h, ctx) : 0;
	}
}

static inline __attribute__((always_inline)) void
kill_call(struct lv_set *s, const struct atr_call *c, uint64_t ptr, unsigned lg)
{
	if (!lv_died_lg(s, ptr, NULL, lg)) {
		struct atr_call r = *c;
		r.ptr = ptr;
		release_unknown(s, &r);
	}
}

/* lv_call for entries of 1 << lg bytes (a constant: each size its own
 * copy, without the test of the other) */
static inline __attribute__((always_inline)) int call_lg(struct lv_set *s, const struct atr_call *c,
							 unsigned lg)
{
	if (lv_park_due(&s->park, c->ts))
		park_expire(s, c->ts);
	if (c->type == ATR_EV_REALLOC_RELEASE) {
		kill_call(s, c, c->ptr, lg);
		return 0;
	}
	switch (atr_call_args(c->type)) {
	case ATR_ARGS_PTR:
		if (c->ptr)
			kill_call(s, c, c->ptr, lg);
		return 0;
	case ATR_ARGS_OLD:
	case ATR_ARGS_OLD_NMEMB:
		if (!c->ret) {
			if (c->ptr && c->size != 0 && !lv_find(s, c->ptr))
				lv_unknown(s);
			return 0;
		}
		if (c->ptr && c->ret == c->ptr)
			kill_call(s, c, c->ptr, lg);
		break;
	default:
		if (!c->ret)
			return 0;
		break;
	}
	if (park_claims(s, c->ret, c->thread, c->ts))
		return 0;
	int r = lv_born_lg(s, c->ret, c->size, c->ts, NULL, NULL, lg);
	return r < 0 ? r : 0;
}

int lv_call(struct lv_set *s, const struct atr_call *c)
{
	if (s->lg == LV_LG_SIZES)
		return call_lg(s, c, LV_LG_SIZES);
	return call_lg(s, c, LV_LG_FULL);
}

/* lv_calls with entries of 1 << lg bytes: the common cases (a free of a
 * live block, an allocation of a block that is not live into a table with
 * room, no long probe) with the table's geometry and the totals in
 * registers: a store to an entry may alias the set's fields, so through
 * lv_died_lg / lv_born_lg the compiler loads and stores them around every
 * record (~15 instructions per record of info).  Anything else (address
 * 0, a realloc or release, a free of a block that is not live, a replaced
 * block, a growth) goes to call_lg with the set written back. */
static inline __attribute__((always_inline)) int
calls_lg(struct lv_set *s, const struct atr_call *c, size_t n, const unsigned lg)
{
	size_t i = 0;
	while (i < n) {
		uint8_t *tab = s->tab;
		size_t mask = s->cap - 1, count = s->count, limit = s->limit;
		unsigned hs = s->hs, grain = s->grain, region = s->region;
		uint64_t blocks = s->blocks, bytes = s->bytes, peak = s->peak_bytes,
			 peak_ts = s->peak_ts;
		/* a parked release: every record through call_lg, which
		   expires it on time (before a free may release the block it
		   would end) and whose allocations may claim it */
		uint32_t parked = s->park.n;
#define ENT(j) ((struct lv_block *)(tab + ((j) << lg)))
#define HOME(p)                                                                                    \
	(region == LV_REGION ? lv_hash(p, mask, LV_NEARBY_HS, LV_GRAIN, LV_REGION)                 \
			     : lv_hash(p, mask, hs, grain, region))
		for (; tab && !parked && i < n; i++) {
			const struct atr_call *x = &c[i];
			unsigned shape =
			    x->type == ATR_EV_REALLOC_RELEASE ? 0 : atr_call_args(x->type);
			if (shape == ATR_ARGS_PTR) {
				uint64_t ptr = x->ptr;
				if (!ptr)
					continue;
				size_t j = HOME(ptr);
				struct lv_block *b;
				for (;; j = (j + 1) & mask) {
					b = ENT(j);
					if (b->ptr == ptr || !b->ptr)
						break;
				}
				if (!b->ptr)
					break; /* not live: lv_unknown */
				count--;
				blocks--;
				bytes -= b->size;
				/* lv_died_lg's backward shift */
				size_t hole = j, k = j;
				for (;;) {
					k = (k + 1) & mask;
					const struct lv_block *kb = ENT(k);
					if (!kb->ptr)
						break;
					size_t home = HOME(kb->ptr);
					if (((k - home) & mask) >= ((k - hole) & mask)) {
						lv_copy_lg(ENT(hole), kb, 0, lg);
						hole = k;
					}
				}
				ENT(hole)->ptr = 0;
				continue;
			}
			if (!shape || shape == ATR_ARGS_OLD || shape == ATR_ARGS_OLD_NMEMB)
				break;
			uint64_t ptr = x->ret;
			if (!ptr)
				continue;
			if (count + 1 > limit)
				break;
			size_t j0 = HOME(ptr), j = j0;
			struct lv_block *b;
			for (;; j = (j + 1) & mask) {
				b = ENT(j);
				if (b->ptr == ptr || !b->ptr)
					break;
			}
			if (b->ptr || ((j - j0) & mask) > LV_PROBE_LIMIT)
				break; /* replaced, or homes piling up: lv_born_slow */
			count++;
			b->ptr = ptr;
			b->size = x->size;
			if (lg == LV_LG_FULL) {
				b->when = x->ts;
				b->tag = b->owner = 0;
			}
			blocks++;
			bytes += x->size;
			if (bytes > peak) {
				peak = bytes;
				peak_ts = x->ts;
			}
		}
#undef ENT
#undef HOME
		s->count = count;
		s->blocks = blocks;
		s->bytes = bytes;
		s->peak_bytes = peak;
		s->peak_ts = peak_ts;
		if (i < n) {
			int r = call_lg(s, &c[i], lg);
			if (r < 0)
				return r;
			i++;
		}
	}
	return 0;
}

int lv_calls(struct lv_set *s, const struct atr_call *c, size_t n)
{
	int r =
	    s->lg == LV_LG_SIZES ? calls_lg(s, c, n, LV_LG_SIZES) : calls_lg(s, c, n, LV_LG_FULL);
	if (n && lv_park_due(&s->park, c[n - 1].ts))
		park_expire(s, c[n - 1].ts);
	return r;
}
