/* an_report.c - see an_report.h. */
#include "an_report.h"

#include <stdlib.h>
#include <string.h>

#include "liveset/lv_set.h"
#include "util_hmap.h"
#include "util_progress.h"

/* The live blocks (lv_set): size = the bytes it stands for (estimated in a
 * sampled trace), when = allocation time, owner = the calls it stands for
 * (1 unless sampled; W_BIG: in big_w), tag = index in r->st, or for an
 * allocation a filter left out: */
#define ST_EXCLUDED (UINT32_MAX - 1)

struct rstate {
	atr_file *f;
	const struct an_filter *flt;
	uint64_t from_ts, to_ts; /* window in ticks (to_ts UINT64_MAX: none) */
	int in_window;
	struct an_report *r;
	struct lv_set live;	   /* its own totals: excluded blocks count there */
	struct util_hmap big_w;	   /* ptr -> calls, for weights >= W_BIG */
	struct util_hmap by_stack; /* canonical id -> index in r->st */
	size_t capst;
	uint64_t epoch;
	int nomem, fork_child, attached;
	uint32_t last_id, last_idx; /* one-entry cache */
	int have_last;
};

static inline unsigned bucket(uint64_t v)
{
	return v ? 64u - (unsigned)__builtin_clzll(v) : 0u;
}

static int cmp_serial(const void *a, const void *b)
{
	const struct an_report_thread *x = a, *y = b;
	return x->serial < y->serial ? -1 : x->serial > y->serial;
}

static struct an_report_thread *thread_of(struct an_report *r, uint32_t serial)
{
	struct an_report_thread key = {.serial = serial};
	return bsearch(&key, r->threads, r->nthreads, sizeof(key), cmp_serial);
}

static uint32_t stat_of(struct rstate *s, uint32_t stack_id)
{
	if (s->have_last && s->last_id == stack_id)
		return s->last_idx;
	uint32_t canon = stack_id ? atr_stack_canonical(s->f, stack_id) : 0;
	uint64_t idx;
	if (!util_hmap_lookup(&s->by_stack, canon, &idx)) {
		struct an_report *r = s->r;
		if (r->nst == s->capst) {
			size_t nc = s->capst ? s->capst * 2 : 256;
			struct an_stack_stat *n = realloc(r->st, nc * sizeof(*n));
			if (!n) {
				s->nomem = 1;
				return UINT32_MAX;
			}
			r->st = n;
			s->capst = nc;
		}
		idx = r->nst;
		if (util_hmap_insert(&s->by_stack, canon, idx, NULL) < 0) {
			s->nomem = 1;
			return UINT32_MAX;
		}
		memset(&r->st[idx], 0, sizeof(r->st[idx]));
		r->st[idx].stack = canon;
		r->st[idx].excluded =
		    s->flt && s->flt->stack_ok && !s->flt->stack_ok(s->flt->stack_arg, canon);
		r->nst++;
	}
	s->have_last = 1;
	s->last_id = stack_id;
	s->last_idx = (uint32_t)idx;
	return (uint32_t)idx;
}

/* The lazy peak snapshot: a stack's value at the last peak is saved the
 * first time it changes after that peak. */
static inline void touch(struct rstate *s, struct an_stack_stat *st)
{
	if (st->mod_epoch != s->epoch) {
		st->at_peak = st->live_bytes;
		st->mod_epoch = s->epoch;
	}
}

#define W_BIG UINT32_MAX

/* The calls block b (of ptr) stands for. */
static uint64_t blk_w(const struct rstate *s, const struct lv_block *b)
{
	uint64_t w = b->owner;
	if (w == W_BIG)
		util_hmap_lookup(&s->big_w, b->ptr, &w);
	return w;
}

static void make_live(struct rstate *s, uint64_t ptr, uint64_t size, uint64_t wcalls, uint64_t ts,
		      uint32_t sti, uint32_t thread)
{
	struct an_report *r = s->r;
	struct lv_block *b, old;
	struct atr_call x;
	if (__builtin_expect(s->live.park.n != 0, 0) &&
	    lv_park_claim(&s->live.park, ptr, thread, ts, &x)) {
		/* a release stamped ahead of this allocation ends it at once
		   (liveset/lv_park.h) */
		if (sti != ST_EXCLUDED) {
			r->freed_blocks += wcalls;
			r->life_hist[0] += wcalls;
		}
		return;
	}
	int rc = lv_born(&s->live, ptr, size, ts, &b, &old);
	if (rc < 0) {
		s->nomem = 1;
		return;
	}
	uint64_t oldw = rc == 0 ? blk_w(s, &old) : 0;
	b->tag = sti;
	b->owner = wcalls < W_BIG ? (uint32_t)wcalls : W_BIG;
	if (wcalls >= W_BIG && util_hmap_insert(&s->big_w, ptr, wcalls, NULL) < 0)
		s->nomem = 1;
	if (rc == 0 && old.tag != ST_EXCLUDED) {
		/* the trace missed its release: replace it */
		struct an_stack_stat *os = &r->st[old.tag];
		touch(s, os);
		os->live_bytes -= old.size;
		os->live_blocks -= oldw;
		r->live_bytes -= old.size;
		r->live_blocks -= oldw;
	}
	if (sti == ST_EXCLUDED)
		return;
	struct an_stack_stat *st = &r->st[sti];
	touch(s, st);
	st->live_bytes += size;
	st->live_blocks += wcalls;
	r->live_bytes += size;
	r->live_blocks += wcalls;
	if (r->live_bytes > r->peak_live_bytes) {
		r->peak_live_bytes = r->live_bytes;
		r->peak_ts = ts;
		s->epoch++; /* every stack's current value is the snapshot now */
	}
}

/* A release of a block that is not live: from before an attach, inherited
 * at fork, or truly unknown (same rules as an_summary.c). */
static void count_unknown(struct rstate *s)
{
	if (s->attached)
		s->r->pre_attach_frees++;
	else if (s->fork_child)
		s->r->inherited_frees++;
	else
		s->r->unknown_frees++;
}

/* Returns the dead block's stack index, or UINT32_MAX if ptr was not live
 * (its release is parked for the allocation by another thread it may have
 * been stamped ahead of: liveset/lv_park.h). */
static uint32_t kill_ptr(struct rstate *s, const struct atr_event *ev)
{
	struct an_report *r = s->r;
	struct lv_block b;
	uint64_t ptr = ev->ptr, ts = ev->ts;
	if (!lv_died(&s->live, ptr, &b)) {
		struct atr_call c = {.ts = ts, .ptr = ptr, .thread = ev->thread}, x;
		if (lv_park_add(&s->live.park, &c, &x))
			count_unknown(s);
		return UINT32_MAX;
	}
	uint64_t w = blk_w(s, &b);
	if (b.owner == W_BIG)
		util_hmap_remove(&s->big_w, ptr, NULL);
	uint32_t sti = b.tag;
	if (sti == ST_EXCLUDED)
		return sti;
	struct an_stack_stat *st = &r->st[sti];
	touch(s, st);
	st->live_bytes -= b.size;
	st->live_blocks -= w;
	r->live_bytes -= b.size;
	r->live_blocks -= w;
	r->freed_blocks += w;
	uint64_t life = ts >= b.when ? atr_ticks_to_ns_u64(s->f, ts - b.when) : 0;
	r->life_hist[bucket(life)] += w;
	return sti;
}

/* The releases parked longer than the window at now are counted, but
 * those whose thread allocated the address again: that block's release
 * was the early one (liveset/lv_park.h, the second shape), and it ends
 * now if it is still live. */
static void park_expire(struct rstate *s, uint64_t now)
{
	struct atr_call x;
	uint64_t own;
	while (lv_park_expire(&s->live.park, now, &x, &own)) {
		if (own && lv_find(&s->live, x.ptr)) {
			struct atr_event ev = {
			    .type = ATR_T_FREE, .ptr = x.ptr, .ts = own, .thread = x.thread};
			kill_ptr(s, &ev);
			s->live.park.reordered++;
		} else {
			count_unknown(s);
		}
	}
}

static int thread_kept(const struct an_filter *flt, const struct atr_event *ev)
{
	return an_filter_thread_kept(flt, ev);
}

/* An allocation a filter leaves out: tracked only (see struct an_filter). */
static void on_excluded(struct rstate *s, const struct atr_event *ev)
{
	s->r->excluded_calls++;
	if (ev->type == ATR_T_REALLOC || ev->type == ATR_T_REALLOCARRAY) {
		if (!ev->ret)
			return;
		if (ev->ptr && ev->ret == ev->ptr)
			kill_ptr(s, ev);
	}
	if (ev->ret)
		make_live(s, ev->ret, ev->w_bytes, ev->w_calls, ev->ts, ST_EXCLUDED, ev->thread);
}

static void on_call(struct rstate *s, const struct atr_event *ev)
{
	struct an_report *r = s->r;
	if (ev->type != ATR_T_FREE) {
		uint32_t sti = ST_EXCLUDED;
		if (s->in_window && thread_kept(s->flt, ev)) {
			sti = stat_of(s, ev->stack_id);
			if (sti == UINT32_MAX)
				return; /* out of memory */
		}
		if (sti == ST_EXCLUDED || r->st[sti].excluded) {
			on_excluded(s, ev);
			return;
		}
	}
	struct an_report_thread *th = thread_of(r, ev->thread);
	if (ev->type == ATR_T_FREE && s->flt) {
		/* a filtered pass counts only the frees of blocks it keeps (and
		 * free(NULL) in its window and threads, unless it selects
		 * stacks: free(NULL) has none) */
		const struct lv_block *b;
		if (!ev->ptr) {
			if (!s->in_window || !thread_kept(s->flt, ev) || s->flt->stack_ok)
				return;
		} else if (!(b = lv_find(&s->live, ev->ptr)) || b->tag == ST_EXCLUDED) {
			kill_ptr(s, ev);
			return;
		}
	}
	/* a sampled free stands for the calls its block stood for */
	uint64_t w = ev->w_calls;
	if (ev->type == ATR_T_FREE) {
		const struct lv_block *b = r->sample_rate ? lv_find(&s->live, ev->ptr) : NULL;
		w = b ? blk_w(s, b) : 1;
	}
	r->calls[ev->type] += w;
	r->total_calls += w;
	if (th) {
		th->calls += w;
		if (!th->tid)
			th->tid = ev->tid;
		if (ev->flags & ATR_FLAG_TIMED)
			th->alloc_ticks += ev->duration;
	}
	if (ev->type == ATR_T_FREE) {
		if (!ev->ptr) {
			r->free_null++;
			return;
		}
		/* sampled: the allocations in between are unknown, so not counted */
		int temp = th && th->has_last && th->last_alloc == ev->ptr && !r->sample_rate;
		uint32_t sti = kill_ptr(s, ev);
		if (temp && sti != UINT32_MAX && sti != ST_EXCLUDED) {
			r->temporary += w;
			r->st[sti].temporary += w;
		}
		if (th && temp)
			th->has_last = 0;
		return;
	}
	uint32_t sti = stat_of(s, ev->stack_id);
	if (sti == UINT32_MAX)
		return;
	struct an_stack_stat *st = &r->st[sti];
	st->calls += ev->w_calls;
	st->bytes += ev->w_bytes;
	r->bytes_requested += ev->w_bytes;
	r->size_hist[bucket(ev->size)] += ev->w_calls;
	if (th) {
		th->bytes += ev->w_bytes;
		th->last_alloc = ev->ret;
		th->has_last = ev->ret != 0;
	}
	if (ev->type == ATR_T_REALLOC || ev->type == ATR_T_REALLOCARRAY) {
		if (!ev->ret) {
			if (ev->size != 0 || !ev->ptr)
				r->failed++;
			if (ev->ptr && ev->size != 0 && !lv_find(&s->live, ev->ptr))
				count_unknown(s);
			return;
		}
		if (ev->ptr && ev->ret == ev->ptr)
			kill_ptr(s, ev); /* in place: a new size */
		make_live(s, ev->ret, ev->w_bytes, ev->w_calls, ev->ts, sti, ev->thread);
		return;
	}
	if (ev->ret)
		make_live(s, ev->ret, ev->w_bytes, ev->w_calls, ev->ts, sti, ev->thread);
	else
		r->failed++;
}

/* --from/--to given as a label: 1 if ev is the marker with that text. */
static int is_marker(const struct atr_event *ev, const char *label)
{
	size_t n = strlen(label);
	return ev->type == ATR_T_MARKER && ev->payload_len == n && !memcmp(ev->payload, label, n);
}

static uint64_t secs_to_ticks(const atr_file *f, double sec)
{
	double t = sec * atr_get_info(f)->ticks_per_sec;
	return t <= 0 ? 0 : t >= 1.8e19 ? UINT64_MAX : (uint64_t)t;
}

int an_report_compute(atr_file *f, struct an_report *r)
{
	return an_report_compute_tl(f, r, NULL);
}

int an_report_compute_tl(atr_file *f, struct an_report *r, struct an_timeline *tl)
{
	return an_report_compute_filtered(f, r, tl, NULL);
}

int an_report_compute_filtered(atr_file *f, struct an_report *r, struct an_timeline *tl,
			       const struct an_filter *flt)
{
	memset(r, 0, sizeof(*r));
	int rc = atr_stacks_load(f);
	if (rc < 0)
		return rc;
	const struct atr_info *in = atr_get_info(f);
	r->timing = (in->features & ATR_FEAT_TIMING) != 0;
	r->stacks = (in->features & ATR_FEAT_STACKS) != 0;
	r->sample_rate = in->sample_rate;
	uint32_t nt = atr_thread_count(f);
	r->threads = calloc(nt ? nt : 1, sizeof(*r->threads));
	if (!r->threads)
		return ATR_E_NOMEM;
	for (uint32_t i = 0; i < nt; i++) {
		r->threads[i].serial = atr_thread(f, i)->serial;
		r->threads[i].tid = atr_thread(f, i)->tid;
	}
	r->nthreads = nt;
	qsort(r->threads, nt, sizeof(*r->threads), cmp_serial);

	struct rstate s;
	memset(&s, 0, sizeof(s));
	s.f = f;
	s.r = r;
	lv_init(&s.live, in->status);
	lv_set_park(&s.live, lv_park_ticks(f));
	s.epoch = 1;
	s.fork_child = (in->status & ATR_STATUS_FORK_CHILD) != 0;
	s.attached = (in->status & ATR_STATUS_ATTACHED) != 0;
	s.flt = flt;
	s.in_window = !flt || !flt->have_from;
	s.from_ts = flt && flt->have_from && !flt->from_label ? secs_to_ticks(f, flt->from_s) : 0;
	s.to_ts = flt && flt->have_to && !flt->to_label ? secs_to_ticks(f, flt->to_s) : UINT64_MAX;
	if (stat_of(&s, 0) == UINT32_MAX) { /* stack 0 always exists */
		rc = ATR_E_NOMEM;
		goto out;
	}
	atr_iter *it;
	rc = atr_iter_new(f, &it);
	if (rc < 0)
		goto out;
	atr_iter_set_prefetch(it, lv_prefetch_hook, &s.live);
	const struct atr_event *ev;
	struct util_progress prog;
	util_progress_start(&prog, "report", in->records_hint);
	while ((rc = atr_iter_next_ref(it, &ev)) > 0) {
		util_progress_update(&prog, ev->seq);
		if (lv_park_due(&s.live.park, ev->ts))
			park_expire(&s, ev->ts);
		if (flt) {
			if (flt->have_to &&
			    (flt->to_label ? is_marker(ev, flt->to_label) : ev->ts > s.to_ts)) {
				r->window_closed = 1;
				break;
			}
			if (!s.in_window && (flt->from_label ? is_marker(ev, flt->from_label)
							     : ev->ts >= s.from_ts))
				s.in_window = r->window_open = 1;
		}
		if (ev->type == ATR_EV_REALLOC_RELEASE) {
			kill_ptr(&s, ev);
		} else {
			if (!r->records++)
				r->first_ts = ev->ts;
			r->last_ts = ev->ts;
			struct an_report_thread *th = thread_of(r, ev->thread);
			if (th) {
				if (!th->seen)
					th->first_ts = ev->ts;
				th->seen = 1;
				th->last_ts = ev->ts;
			}
			if (ev->type >= 1 && ev->type <= ATR_T_CALL_LAST) {
				on_call(&s, ev);
			} else if (atr_is_xcall(ev->type)) {
				r->xcalls[ev->type - ATR_T_XCALL_FIRST]++;
				if (an_maps_event(&r->maps, ev) < 0)
					s.nomem = 1;
			}
		}
		if (tl) {
			tl->cur_mapped = r->maps.mapped;
			an_timeline_event(tl, ev, r->live_bytes);
		}
		if (s.nomem || (tl && tl->nomem))
			break;
	}
	util_progress_done(&prog);
	atr_iter_free(it);
	park_expire(&s, UINT64_MAX);
	r->reordered_releases = s.live.park.reordered;
	if (rc > 0)
		rc = 0; /* ended at --to */
	if (tl && tl->nomem)
		s.nomem = 1;
	if (s.nomem)
		rc = ATR_E_NOMEM;
	if (rc == 0)
		for (size_t i = 0; i < r->nst; i++) {
			struct an_stack_stat *st = &r->st[i];
			st->peak_bytes = st->mod_epoch == s.epoch ? st->at_peak : st->live_bytes;
		}
out:
	lv_destroy(&s.live);
	util_hmap_destroy(&s.big_w);
	util_hmap_destroy(&s.by_stack);
	return rc < 0 ? rc : 0;
}

void an_report_free(struct an_report *r)
{
	an_maps_free(&r->maps);
	free(r->st);
	free(r->threads);
	r->st = NULL;
	r->threads = NULL;
	r->nst = 0;
	r->nthreads = 0;
}

uint64_t an_stack_value(const struct an_stack_stat *s, enum an_by by)
{
	switch (by) {
	case AN_BY_CALLS:
		return s->calls;
	case AN_BY_BYTES:
		return s->bytes;
	case AN_BY_PEAK:
		return s->peak_bytes;
	case AN_BY_LEAKED:
		return s->live_bytes;
	case AN_BY_TEMPORARY:
		return s->temporary;
	}
	return 0;
}

static const struct an_report *rank_r;
static enum an_by rank_by;

static int rank_cmp(const void *pa, const void *pb)
{
	const struct an_stack_stat *a = &rank_r->st[*(const size_t *)pa];
	const struct an_stack_stat *b = &rank_r->st[*(const size_t *)pb];
	uint64_t va = an_stack_value(a, rank_by), vb = an_stack_value(b, rank_by);
	if (va != vb)
		return va > vb ? -1 : 1;
	return a->stack < b->stack ? -1 : a->stack > b->stack;
}

long an_report_rank(const struct an_report *r, enum an_by by, size_t **out)
{
	size_t *v = malloc((r->nst ? r->nst : 1) * sizeof(*v));
	*out = v;
	if (!v)
		return -1;
	size_t n = 0;
	for (size_t i = 0; i < r->nst; i++)
		if (an_stack_value(&r->st[i], by) > 0 &&
		    !(by == AN_BY_LEAKED && r->st[i].suppressed))
			v[n++] = i;
	rank_r = r;
	rank_by = by;
	qsort(v, n, sizeof(*v), rank_cmp);
	return (long)n;
}

static const char *const by_names[] = {"calls", "bytes", "peak", "leaked", "temporary"};

int an_by_parse(const char *s)
{
	for (int i = 0; i < 5; i++)
		if (!strcmp(s, by_names[i]))
			return i;
	return -1;
}

const char *an_by_name(enum an_by by)
{
	return (unsigned)by < 5 ? by_names[by] : "?";
}
