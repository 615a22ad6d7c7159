/* an_summary.c - see an_summary.h. */
#include "an_summary.h"

#include <stdlib.h>
#include <string.h>

#include "liveset/lv_set.h"
#include "util_progress.h"

static int cmp_serial(const void *a, const void *b)
{
	const struct an_thread_stat *x = a, *y = b;
	return x->serial < y->serial ? -1 : x->serial > y->serial;
}

static struct an_thread_stat *thread_of(struct an_summary *s, uint32_t serial)
{
	struct an_thread_stat key = {.serial = serial};
	return bsearch(&key, s->threads, s->nthreads, sizeof(key), cmp_serial);
}

/* The threads by serial (serials are 1-based and dense: a table, else
 * thread_of): a batch of xfreebench's trace switches threads every few
 * records. */
struct th_index {
	struct an_thread_stat **by; /* by[serial] (NULL: not in the trace), or NULL */
	uint32_t n;		    /* entries of by */
};

static int th_index_init(struct th_index *x, struct an_summary *s)
{
	x->by = NULL;
	x->n = 0;
	uint32_t max = 0;
	for (uint32_t i = 0; i < s->nthreads; i++)
		max = s->threads[i].serial > max ? s->threads[i].serial : max;
	if (max > 4 * s->nthreads + 64)
		return 0; /* sparse: thread_of */
	x->by = calloc((size_t)max + 1, sizeof(*x->by));
	if (!x->by)
		return ATR_E_NOMEM;
	x->n = max + 1;
	for (uint32_t i = 0; i < s->nthreads; i++)
		x->by[s->threads[i].serial] = &s->threads[i];
	return 0;
}

static inline struct an_thread_stat *thread_at(struct an_summary *s, const struct th_index *x,
					       uint32_t serial)
{
	if (x->by)
		return serial < x->n ? x->by[serial] : NULL;
	return thread_of(s, serial);
}

/* An allocation that failed (a failed realloc(p, 0) freed p: not a
 * failure). */
static inline int call_failed(unsigned type, uint64_t ptr, uint64_t ret, uint64_t size)
{
	return !ret && (size != 0 || !ptr || (type != ATR_T_REALLOC && type != ATR_T_REALLOCARRAY));
}

/* The counters of a call (the live set follows it in lv_event or
 * lv_call): its type, tid, block freed, block returned, size. */
static inline void count_call(struct an_summary *s, struct an_thread_stat *th, unsigned type,
			      uint32_t tid, uint64_t ptr, uint64_t ret, uint64_t size)
{
	s->calls[type]++;
	s->total_calls++;
	if (th) {
		th->calls++;
		if (!th->tid)
			th->tid = tid;
	}
	if (type == ATR_T_FREE) {
		s->free_null += !ptr;
		return;
	}
	s->bytes_requested += size;
	if (th)
		th->bytes += size;
	s->failed += call_failed(type, ptr, ret, size);
}

/* count_call() for a batch of compact records (not their live set), the
 * counters in registers: a thread's are added when the batch moves on to
 * another thread (a batch is mostly runs of one thread). */
static void count_calls(struct an_summary *s, const struct atr_call *calls, size_t n,
			const struct th_index *x)
{
	/* the first record that counts (a release does not): it sets the
	 * trace's first stamp, and its thread differs from serial's start */
	size_t i0 = 0;
	while (i0 < n && calls[i0].type == ATR_EV_REALLOC_RELEASE)
		i0++;
	if (i0 == n)
		return;
	if (!s->records)
		s->first_ts = calls[i0].ts;
	uint64_t free_null = s->free_null;
	uint64_t requested = s->bytes_requested, failed = s->failed, last_ts = s->last_ts;
	uint64_t by_type[ATR_T_CALL_LAST + 1] = {0};
	struct an_thread_stat *th = NULL;
	uint32_t serial = calls[i0].thread ^ 1;
	uint64_t th_calls = 0, th_bytes = 0;
	for (size_t i = i0; i < n; i++) {
		const struct atr_call *cl = &calls[i];
		unsigned type = cl->type;
		if (type == ATR_EV_REALLOC_RELEASE)
			continue;
		last_ts = cl->ts;
		by_type[type]++;
		if (cl->thread != serial) {
			if (th) {
				th->calls += th_calls;
				th->bytes += th_bytes;
			}
			th_calls = th_bytes = 0;
			serial = cl->thread;
			th = thread_at(s, x, serial);
			if (th && !th->tid)
				th->tid = cl->tid;
		}
		th_calls++;
		if (type == ATR_T_FREE) {
			free_null += !cl->ptr;
			continue;
		}
		requested += cl->size;
		th_bytes += cl->size;
		failed += call_failed(type, cl->ptr, cl->ret, cl->size);
	}
	if (th) {
		th->calls += th_calls;
		th->bytes += th_bytes;
	}
	uint64_t total = 0;
	for (unsigned t = 1; t <= ATR_T_CALL_LAST; t++) {
		s->calls[t] += by_type[t];
		total += by_type[t];
	}
	s->total_calls += total; /* the records counted: every one a call */
	s->records += total;
	s->free_null = free_null;
	s->bytes_requested = requested;
	s->failed = failed;
	s->last_ts = last_ts;
}

int an_summary_compute(atr_file *f, struct an_summary *s)
{
	memset(s, 0, sizeof(*s));
	uint32_t nt = atr_thread_count(f);
	s->threads = calloc(nt ? nt : 1, sizeof(*s->threads));
	if (!s->threads)
		return ATR_E_NOMEM;
	for (uint32_t i = 0; i < nt; i++) {
		const struct atr_thread_info *ti = atr_thread(f, i);
		s->threads[i].serial = ti->serial;
		s->threads[i].tid = ti->tid;
	}
	s->nthreads = nt;
	qsort(s->threads, nt, sizeof(*s->threads), cmp_serial);

	struct th_index x;
	int r = th_index_init(&x, s);
	if (r < 0)
		return r;
	struct lv_set live;
	lv_init_sizes(&live, atr_get_info(f)->status);
	lv_set_park(&live, lv_park_ticks(f));
	atr_iter *it;
	r = atr_iter_new(f, &it);
	if (r < 0) {
		free(x.by);
		return r;
	}
	/* the reader prefetches the live set's entries once its table no
	 * longer fits in the caches (lv_prefetch_pays) */
	int pf = 0;
	const struct atr_event *ev;
	struct util_progress prog;
	util_progress_start(&prog, "info", atr_get_info(f)->records_hint);
	/* the calls as compact records (atr_iter_next_calls), anything else as
	 * a full event */
	struct atr_call calls[64];
	size_t n;
	uint64_t shown = 0;
	while ((r = atr_iter_next_calls(it, calls, 64, &n, &ev)) > 0) {
		/* the counters first, in a loop of their own (no call in it:
		 * they stay in registers), then the live set */
		count_calls(s, calls, n, &x);
		if ((r = lv_calls(&live, calls, n)) < 0)
			goto out;
		if (__builtin_expect(lv_prefetch_pays(&live) != pf, 0)) {
			pf = !pf;
			atr_iter_set_prefetch(it, pf ? lv_prefetch_hook : NULL, &live);
		}
		if (n && (s->records ^ shown) >> 20) {
			shown = s->records;
			util_progress_update(&prog, shown & ~(uint64_t)0xfffff);
		}
		if (!ev)
			continue;
		util_progress_update(&prog, ev->seq);
		if (ev->type != ATR_EV_REALLOC_RELEASE) {
			if (!s->records++)
				s->first_ts = ev->ts;
			s->last_ts = ev->ts;
			if (ev->type >= 1 && ev->type <= ATR_T_CALL_LAST) {
				count_call(s, thread_at(s, &x, ev->thread), ev->type, ev->tid,
					   ev->ptr, ev->ret, ev->size);
			} else if (atr_is_xcall(ev->type)) {
				if (an_maps_event(&s->maps, ev) < 0) {
					r = ATR_E_NOMEM;
					break;
				}
				s->xcalls[ev->type - ATR_T_XCALL_FIRST]++;
				s->total_calls++;
				struct an_thread_stat *th = thread_at(s, &x, ev->thread);
				if (th)
					th->calls++;
			} else if (ev->type == ATR_T_MARKER) {
				s->markers++;
			}
		}
		if ((r = lv_event(&live, ev, NULL, NULL)) < 0)
			break;
	}
out:
	util_progress_done(&prog);
	atr_iter_free(it);
	free(x.by);
	lv_settle(&live);
	s->reordered_releases = live.park.reordered;
	s->unknown_frees = live.unknown_frees;
	s->inherited_frees = live.inherited_frees;
	s->pre_attach_frees = live.pre_attach_frees;
	s->dup_allocs = live.dup_allocs;
	s->live_bytes = live.bytes;
	s->live_blocks = live.blocks;
	s->peak_live_bytes = live.peak_bytes;
	s->peak_ts = live.peak_ts;
	lv_destroy(&live);
	return r < 0 ? r : 0;
}

void an_summary_free(struct an_summary *s)
{
	free(s->threads);
	an_maps_free(&s->maps);
	s->threads = NULL;
	s->nthreads = 0;
}
