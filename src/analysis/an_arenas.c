/* an_arenas.c - glibc arenas, heaps, sbrk and thresholds (docs/ARENAS.md). */
#include "analysis/an_arenas.h"

#include <stdlib.h>
#include <string.h>

static int grow(void **p, uint32_t *cap, uint32_t n, size_t elem)
{
	if (n < *cap)
		return 0;
	uint32_t nc = *cap ? *cap * 2 : 8;
	void *q = realloc(*p, (size_t)nc * elem);
	if (!q)
		return -1;
	*p = q;
	*cap = nc;
	return 0;
}

#define PUSH(arr, n, cap) grow((void **)&(arr), &(cap), (n), sizeof(*(arr)))

static unsigned dbucket(uint64_t d)
{
	if (d < 8)
		return (unsigned)d;
	unsigned e = 63u - (unsigned)__builtin_clzll(d);
	return 8u + (e - 3u) * 8u + (unsigned)((d >> (e - 3u)) & 7u);
}

static uint64_t bucket_lo(unsigned b)
{
	if (b < 8)
		return b;
	unsigned e = (b - 8u) / 8u + 3u, m = (b - 8u) % 8u;
	return (uint64_t)(8u + m) << (e - 3u);
}

static struct an_arena_thr *thr_of(struct an_arenas *a, const struct atr_event *ev)
{
	uint32_t s = ev->thread;
	if (s == 0)
		return NULL;
	if (s > a->nthreads) {
		struct an_arena_thr *t = realloc(a->threads, (size_t)s * sizeof(*t));
		if (!t)
			return NULL;
		memset(t + a->nthreads, 0, (size_t)(s - a->nthreads) * sizeof(*t));
		for (uint32_t i = a->nthreads; i < s; i++) {
			t[i].serial = i + 1;
			t[i].cur = -1;
		}
		a->threads = t;
		a->nthreads = s;
	}
	struct an_arena_thr *t = &a->threads[s - 1];
	if (ev->tid)
		t->tid = ev->tid;
	return t;
}

/* Index of the arena with this ar_ptr (key; main: 0), created if new. */
static int arena_get(struct an_arenas *a, uint64_t key, const struct atr_event *ev)
{
	uint64_t v;
	if (util_hmap_lookup(&a->arena_idx, key, &v))
		return (int)v;
	if (PUSH(a->arenas, a->narenas, a->caparenas))
		return -1;
	struct an_arena *ar = &a->arenas[a->narenas];
	memset(ar, 0, sizeof(*ar));
	ar->ar_ptr = key;
	ar->main = key == 0;
	ar->first_ts = ev ? ev->ts : 0;
	ar->first_thread = ev ? ev->thread : 0;
	ar->first_tid = ev ? ev->tid : 0;
	if (util_hmap_insert(&a->arena_idx, key, a->narenas, NULL) < 0)
		return -1;
	return (int)a->narenas++;
}

static int arena_add_thread(struct an_arena *ar, uint32_t serial)
{
	for (uint32_t i = ar->nthreads; i-- > 0;)
		if (ar->threads[i] == serial)
			return 0;
	if (PUSH(ar->threads, ar->nthreads, ar->capthreads))
		return -1;
	ar->threads[ar->nthreads++] = serial;
	return 0;
}

static void push_pt(struct an_arena_pt **arr, uint32_t *n, uint32_t *cap, uint64_t *dropped,
		    uint64_t ts, uint64_t v)
{
	if (*n >= AN_ARENAS_LIST_CAP || grow((void **)arr, cap, *n, sizeof(**arr))) {
		(*dropped)++;
		return;
	}
	(*arr)[*n].ts = ts;
	(*arr)[(*n)++].v = v;
}

/* A HEAP record: heap start, ar_ptr, heap_info.size. */
static int on_heap(struct an_arenas *a, const struct atr_event *ev, uint64_t start, uint64_t ar_ptr,
		   uint64_t size)
{
	int ai = arena_get(a, ar_ptr ? ar_ptr : 1, ev); /* 0 is main */
	if (ai < 0)
		return -1;
	uint64_t v;
	struct an_arena_heap *h = NULL;
	if (util_hmap_lookup(&a->heap_idx, start, &v) && a->heaps[v].arena == (uint32_t)ai) {
		h = &a->heaps[v];
	} else {
		/* new, or the address now holds another arena's heap */
		if (PUSH(a->heaps, a->nheaps, a->capheaps))
			return -1;
		h = &a->heaps[a->nheaps];
		memset(h, 0, sizeof(*h));
		h->start = start;
		h->arena = (uint32_t)ai;
		h->first_ts = ev->ts;
		h->first_thread = ev->thread;
		h->first_tid = ev->tid;
		struct an_arena *ar = &a->arenas[ai];
		if (PUSH(ar->heaps, ar->nheaps, ar->capheaps))
			return -1;
		ar->heaps[ar->nheaps++] = a->nheaps;
		if (util_hmap_insert(&a->heap_idx, start, a->nheaps, NULL) < 0)
			return -1;
		a->nheaps++;
	}
	if (size && size != h->size) {
		push_pt(&h->sizes, &h->nsizes, &h->capsizes, &h->sizes_dropped, ev->ts, size);
		h->size = size;
	}
	return 0;
}

/* Arena index of a non-mmapped chunk at p with these flags, or -1. */
static int arena_of(struct an_arenas *a, uint64_t p, unsigned cflags, const struct atr_event *ev)
{
	if (!(cflags & ATR_CHUNK_NON_MAIN))
		return arena_get(a, 0, ev);
	uint64_t start = p & ~(ATR_ARENA_HEAP_MAX - 1), v;
	if (util_hmap_lookup(&a->heap_idx, start, &v))
		return (int)a->heaps[v].arena;
	/* no HEAP record (recorder could not read heap_info): the heap is
	 * its own arena as far as we know */
	a->unknown_heap_allocs++;
	if (on_heap(a, ev, start, start | 1, 0))
		return -1;
	return (int)a->heaps[a->nheaps - 1].arena;
}

/* Arena a free/realloc of p touched (for contention), -1: mmapped/none. */
static int arena_of_ptr(struct an_arenas *a, uint64_t p)
{
	uint64_t v;
	if (!p || lv_find(&a->mm, p))
		return -1;
	if (util_hmap_lookup(&a->heap_idx, p & ~(ATR_ARENA_HEAP_MAX - 1), &v))
		return (int)a->heaps[v].arena;
	uint64_t m;
	return util_hmap_lookup(&a->arena_idx, 0, &m) ? (int)m : -1;
}

static void note_time(struct an_arenas *a, struct an_arena_thr *t, int arena, uint64_t dur)
{
	if (!a->timing || !t)
		return;
	t->timed_calls++;
	uint32_t key = arena < 0 ? UINT32_MAX : (uint32_t)arena;
	struct an_arena_hist *h = NULL;
	for (uint32_t i = 0; i < t->nhist; i++)
		if (t->hist[i].arena == key) {
			h = &t->hist[i];
			break;
		}
	if (!h) {
		struct an_arena_hist *n = realloc(t->hist, (t->nhist + 1) * sizeof(*n));
		if (!n)
			return;
		t->hist = n;
		h = &n[t->nhist];
		h->arena = key;
		h->calls = 0;
		h->h = calloc(AN_ARENAS_NBUCKETS, sizeof(uint64_t));
		if (!h->h)
			return;
		t->nhist++;
	}
	h->calls++;
	h->h[dbucket(dur)]++;
}

/* glibc free(): an mmapped chunk above the threshold (and <= the max)
 * moves both thresholds (unless set by the user: not visible here). */
static void mm_freed(struct an_arenas *a, const struct atr_event *ev, uint64_t chunk)
{
	if (chunk > a->mmap_threshold && chunk <= AN_GLIBC_MMAP_THRESHOLD_MAX) {
		a->mmap_threshold = chunk;
		a->trim_threshold = 2 * chunk;
		if (a->nthresh >= AN_ARENAS_LIST_CAP || PUSH(a->thresh, a->nthresh, a->capthresh)) {
			a->thresh_dropped++;
			return;
		}
		struct an_arena_thresh *x = &a->thresh[a->nthresh++];
		x->ts = ev->ts;
		x->thread = ev->thread;
		x->tid = ev->tid;
		x->chunk = chunk;
		x->mmap = a->mmap_threshold;
		x->trim = a->trim_threshold;
	}
}

static int mm_remove(struct an_arenas *a, uint64_t p, uint64_t *chunk)
{
	struct lv_block b;
	if (!p || !lv_died(&a->mm, p, &b))
		return 0;
	*chunk = b.size;
	a->mmap_live--;
	a->mmap_live_bytes -= *chunk;
	return 1;
}

/* An entry of an_arenas.freed: the serial of the thread that freed the
 * chunk last; of the one that freed it before, when no allocation of it
 * came in between in the records' order (FR_PREV); whether an allocation
 * by another thread came since the last free (FR_TAKEN). */
#define FR_LAST(v) ((uint32_t)(v))
#define FR_PREV(v) ((uint32_t)((v) >> 32) & 0x7fffffffu)
#define FR_TAKEN   (1ull << 63)

static int freed_find(struct an_arenas *a, uint64_t p, uint64_t *v)
{
	return util_hmap_lookup(&a->freed[0], p, v)   ? 0
	       : util_hmap_lookup(&a->freed[1], p, v) ? 1
						      : -1;
}

static int freed_put(struct an_arenas *a, uint64_t p, uint64_t v)
{
	if (util_hmap_count(&a->freed[0]) >= AN_ARENAS_FREED_GEN) {
		struct util_hmap old = a->freed[1];
		a->freed[1] = a->freed[0];
		util_hmap_clear(&old);
		a->freed[0] = old;
	}
	util_hmap_remove(&a->freed[1], p, NULL);
	return util_hmap_insert(&a->freed[0], p, v, NULL) < 0 ? -1 : 0;
}

/* A chunk released by thread `thread`: it may go to that thread's tcache.
 * Two frees of a chunk with no allocation between them mean that the
 * allocation between them comes later in the records' order: a thread
 * that allocates a block and hands it on is stamped at its return, the
 * thread that frees it at its entry, and the counter read that is not
 * fenced can put the free ~100 ns early (docs/TRACE_FORMAT.md, "Order").
 * The earlier freer is kept for that allocation. */
static int note_freed(struct an_arenas *a, uint64_t p, uint32_t thread)
{
	if (!p)
		return 0;
	uint64_t v, nv = thread;
	if (freed_find(a, p, &v) >= 0 && !(v & FR_TAKEN))
		nv |= (uint64_t)(FR_LAST(v) & 0x7fffffffu) << 32;
	return freed_put(a, p, nv);
}

/* Does this allocation say which arena its thread uses?  Not if it may
 * have come from the thread's tcache, which holds chunks of any arena
 * that the thread freed (a cross-thread free puts another arena's chunk
 * there), nor if it is a realloc of a block, which glibc serves from the
 * block's own arena.  calloc and blocks above the tcache's largest size
 * never come from a tcache; a chunk last freed by another thread cannot
 * be in this one's. */
static int arena_evidence(struct an_arenas *a, const struct atr_event *ev)
{
	uint64_t v = 0;
	int g = freed_find(a, ev->ret, &v), mine = 0;
	if (g >= 0) {
		if (FR_LAST(v) == ev->thread) {
			/* the chunk came back to the thread that freed it */
			util_hmap_remove(&a->freed[g], ev->ret, NULL);
			mine = 1;
		} else if (FR_PREV(v) == ev->thread) {
			/* freed by this thread, allocated again, handed on and
			   freed by the last one, whose record came first */
			util_hmap_insert(&a->freed[g], ev->ret, FR_LAST(v), NULL);
			mine = 1;
		} else {
			/* kept: the chunk's next free replaces it */
			util_hmap_insert(&a->freed[g], ev->ret, FR_LAST(v) | FR_TAKEN, NULL);
		}
	}
	if ((ev->type == ATR_T_REALLOC || ev->type == ATR_T_REALLOCARRAY) && ev->ptr)
		return 0;
	if (!mine || ev->type == ATR_T_CALLOC)
		return 1;
	uint64_t req = ev->usable != UINT64_MAX ? ev->usable : ev->size;
	return req > AN_GLIBC_TCACHE_MAX;
}

static int on_alloc(struct an_arenas *a, const struct atr_event *ev, struct an_arena_thr *t)
{
	uint64_t p = ev->ret;
	if (!p)
		return 0;
	a->allocs++;
	unsigned cf = ev->chunk_flags;
	if (cf & ATR_CHUNK_MMAPPED) {
		/* mmapped chunk: usable = chunk size - 2 words */
		uint64_t chunk = ev->usable != UINT64_MAX ? ev->usable + 16 : ev->size + 16;
		a->mmap_served++;
		a->mmap_served_bytes += chunk;
		struct lv_block old;
		int r = lv_born(&a->mm, p, chunk, ev->ts, NULL, &old);
		if (r < 0)
			return -1;
		if (r == 0)
			a->mmap_live_bytes -= old.size;
		else
			a->mmap_live++;
		a->mmap_live_bytes += chunk;
		if (a->mmap_live_bytes > a->mmap_peak_bytes)
			a->mmap_peak_bytes = a->mmap_live_bytes;
		return -2; /* no arena */
	}
	int ai = arena_of(a, p, cf, ev);
	if (ai < 0)
		return -1;
	struct an_arena *ar = &a->arenas[ai];
	ar->allocs++;
	int evidence = arena_evidence(a, ev);
	if (!evidence)
		a->tcache_skipped++;
	if (!ar->first_thread) {
		ar->first_ts = ev->ts;
		ar->first_thread = ev->thread;
		ar->first_tid = ev->tid;
	}
	/* a thread joins an arena's list when it moves there (below) */
	if (evidence && (!t || t->cur != ai) && arena_add_thread(ar, ev->thread))
		return -1;
	if (!ar->main && ev->usable != UINT64_MAX) {
		uint64_t v;
		if (util_hmap_lookup(&a->heap_idx, p & ~(ATR_ARENA_HEAP_MAX - 1), &v)) {
			/* chunk end = p - 16 + usable + 8 */
			uint64_t ext = p + ev->usable - 8 - a->heaps[v].start;
			if (ext > a->heaps[v].extent && ext <= ATR_ARENA_HEAP_MAX)
				a->heaps[v].extent = ext;
		}
	}
	if (evidence && t && t->cur != ai) {
		if (a->nmoves < AN_ARENAS_LIST_CAP && !PUSH(a->moves, a->nmoves, a->capmoves)) {
			struct an_arena_move *m = &a->moves[a->nmoves++];
			m->ts = ev->ts;
			m->thread = ev->thread;
			m->tid = ev->tid;
			m->from = t->cur;
			m->to = ai;
		} else {
			a->moves_dropped++;
		}
		t->cur = ai;
	}
	return ai;
}

static int step(struct an_arenas *a, const struct atr_event *ev)
{
	struct an_arena_thr *t = thr_of(a, ev);
	if (ev->ts > a->last_ts)
		a->last_ts = ev->ts;
	uint64_t chunk;
	switch (ev->type) {
	case ATR_T_HEAP:
		if (ev->payload_len >= 24) {
			uint64_t w[3];
			memcpy(w, ev->payload, sizeof w);
			if (on_heap(a, ev, w[0], w[1], w[2]))
				return -1;
		}
		return 0;
	case ATR_T_BRK:
		if (ev->payload_len >= 16) {
			uint64_t w[2];
			memcpy(w, ev->payload, sizeof w);
			if (!a->have_brk || w[1] != a->brk)
				push_pt(&a->brks, &a->nbrks, &a->capbrks, &a->brks_dropped, ev->ts,
					w[1]);
			a->have_brk = 1;
			a->brk0 = w[0];
			a->brk = w[1];
			a->sbrk_bytes = (int64_t)(w[1] - w[0]);
		}
		return 0;
	case ATR_T_THREAD_EXIT:
		if (t)
			t->exited = 1;
		return 0;
	case ATR_T_FREE: {
		int ai = arena_of_ptr(a, ev->ptr);
		if (mm_remove(a, ev->ptr, &chunk))
			mm_freed(a, ev, chunk);
		else if (note_freed(a, ev->ptr, ev->thread))
			return -1;
		if (ev->ptr && (ev->flags & ATR_FLAG_TIMED))
			note_time(a, t, ai, ev->duration);
		return 0;
	}
	case ATR_EV_REALLOC_RELEASE:
		if (t) {
			t->rel_ptr = ev->ptr;
			t->rel_chunk = mm_remove(a, ev->ptr, &chunk) ? chunk : 0;
		}
		return 0;
	case ATR_T_REALLOC:
	case ATR_T_REALLOCARRAY: {
		int old_mmapped = t && t->rel_ptr == ev->ptr && t->rel_chunk;
		if (ev->ptr && !ev->ret && ev->size == 0) {
			/* realloc(p, 0) is free(p) in glibc */
			if (old_mmapped)
				mm_freed(a, ev, t->rel_chunk);
		} else if (ev->ret && ev->ret == ev->ptr) {
			mm_remove(a, ev->ptr, &chunk); /* resized in place (mremap) */
		}
		/* a moved or freed heap chunk went through _int_free: maybe
		   into this thread's tcache */
		if (ev->ptr && ev->ret != ev->ptr && !old_mmapped && (ev->ret || ev->size == 0) &&
		    note_freed(a, ev->ptr, ev->thread))
			return -1;
		if (t)
			t->rel_ptr = t->rel_chunk = 0;
		int ai = on_alloc(a, ev, t);
		if (ai == -1)
			return -1;
		if (ev->flags & ATR_FLAG_TIMED)
			note_time(a, t,
				  ai >= 0   ? ai
				  : ev->ret ? -1
					    : arena_of_ptr(a, ev->ptr),
				  ev->duration);
		return 0;
	}
	default:
		break;
	}
	if (ev->type >= ATR_T_MALLOC && ev->type <= ATR_T_CALL_LAST) {
		int ai = on_alloc(a, ev, t);
		if (ai == -1)
			return -1;
		if (ev->flags & ATR_FLAG_TIMED)
			note_time(a, t, ai, ev->duration);
	}
	return 0;
}

/* Per thread: median of all its timed calls; per (thread, shared arena):
 * calls in buckets that start above SLOW_FACTOR x that median. */
static int finish_waits(struct an_arenas *a)
{
	if (!a->timing)
		return 0;
	for (uint32_t i = 0; i < a->nthreads; i++) {
		struct an_arena_thr *t = &a->threads[i];
		if (!t->timed_calls)
			continue;
		uint64_t half = (t->timed_calls + 1) / 2, seen = 0;
		for (unsigned b = 0; b < AN_ARENAS_NBUCKETS && seen < half; b++) {
			for (uint32_t k = 0; k < t->nhist; k++)
				seen += t->hist[k].h[b];
			if (seen >= half)
				t->median = b + 1 < AN_ARENAS_NBUCKETS ? bucket_lo(b + 1) - 1
								       : bucket_lo(b);
		}
		uint64_t limit = t->median * AN_ARENAS_SLOW_FACTOR;
		for (uint32_t k = 0; k < t->nhist; k++) {
			struct an_arena_hist *h = &t->hist[k];
			if (h->arena == UINT32_MAX || h->arena >= a->narenas ||
			    a->arenas[h->arena].nthreads < 2)
				continue;
			uint64_t slow = 0;
			for (unsigned b = 0; b < AN_ARENAS_NBUCKETS; b++)
				if (bucket_lo(b) > limit)
					slow += h->h[b];
			struct an_arena_wait *w = realloc(a->waits, (a->nwaits + 1) * sizeof(*w));
			if (!w)
				return -1;
			a->waits = w;
			w[a->nwaits++] = (struct an_arena_wait){
			    .thread = t->serial,
			    .tid = t->tid,
			    .arena = h->arena,
			    .calls = h->calls,
			    .slow = slow,
			    .median = t->median,
			    .limit = limit,
			};
		}
	}
	return 0;
}

int an_arenas_compute(atr_file *f, struct an_arenas *a)
{
	memset(a, 0, sizeof(*a));
	const struct atr_info *in = atr_get_info(f);
	if (!(in->features & ATR_FEAT_CHUNK_FLAGS))
		return ATR_E_USAGE;
	a->timing = (in->features & ATR_FEAT_TIMING) != 0;
	a->mmap_threshold = AN_GLIBC_MMAP_THRESHOLD_INIT;
	a->trim_threshold = 2 * AN_GLIBC_MMAP_THRESHOLD_INIT;
	if (arena_get(a, 0, NULL) < 0)
		return ATR_E_NOMEM;
	atr_iter *it;
	int r = atr_iter_new(f, &it);
	if (r < 0)
		return r;
	const struct atr_event *ev;
	while ((r = atr_iter_next_ref(it, &ev)) > 0) {
		if (step(a, ev)) {
			r = ATR_E_NOMEM;
			break;
		}
	}
	atr_iter_free(it);
	if (r < 0)
		return r;
	if (finish_waits(a))
		return ATR_E_NOMEM;
	return 0;
}

void an_arenas_free(struct an_arenas *a)
{
	for (uint32_t i = 0; i < a->narenas; i++) {
		free(a->arenas[i].threads);
		free(a->arenas[i].heaps);
	}
	free(a->arenas);
	for (uint32_t i = 0; i < a->nheaps; i++)
		free(a->heaps[i].sizes);
	free(a->heaps);
	for (uint32_t i = 0; i < a->nthreads; i++) {
		for (uint32_t k = 0; k < a->threads[i].nhist; k++)
			free(a->threads[i].hist[k].h);
		free(a->threads[i].hist);
	}
	free(a->threads);
	free(a->moves);
	free(a->thresh);
	free(a->brks);
	free(a->waits);
	lv_destroy(&a->mm);
	util_hmap_destroy(&a->heap_idx);
	util_hmap_destroy(&a->arena_idx);
	util_hmap_destroy(&a->freed[0]);
	util_hmap_destroy(&a->freed[1]);
	memset(a, 0, sizeof(*a));
}
