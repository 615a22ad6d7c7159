/* an_summary.c - see an_summary.h. */
#include "an_summary.h"

#include <stdlib.h>
#include <string.h>

#include "util_hmap.h"
#include "util_progress.h"

struct an_state {
	struct an_summary *s;
	struct util_hmap live;
	int nomem;
	int fork_child;
	int attached; /* ATR_STATUS_ATTACHED */
};

static void make_live(struct an_state *st, uint64_t ptr, uint64_t size, uint64_t ts)
{
	struct an_summary *s = st->s;
	uint64_t old;
	int r = util_hmap_insert(&st->live, ptr, size, &old);
	if (r < 0) {
		st->nomem = 1;
		return;
	}
	if (r == 0) {
		s->dup_allocs++;
		s->live_bytes -= old;
	} else {
		s->live_blocks++;
	}
	s->live_bytes += size;
	if (s->live_bytes > s->peak_live_bytes) {
		s->peak_live_bytes = s->live_bytes;
		s->peak_ts = ts;
	}
}

/* A release of a block that is not live. */
static void count_unknown(struct an_state *st)
{
	if (st->attached)
		st->s->pre_attach_frees++;
	else if (st->fork_child)
		st->s->inherited_frees++;
	else
		st->s->unknown_frees++;
}

/* p (non-NULL) is released. */
static void kill_ptr(struct an_state *st, uint64_t ptr)
{
	struct an_summary *s = st->s;
	uint64_t size;
	if (util_hmap_remove(&st->live, ptr, &size)) {
		s->live_bytes -= size;
		s->live_blocks--;
	} else {
		count_unknown(st);
	}
}

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

static void on_call(struct an_state *st, const struct atr_event *ev)
{
	struct an_summary *s = st->s;
	s->calls[ev->type]++;
	s->total_calls++;
	struct an_thread_stat *th = thread_of(s, ev->thread);
	if (th) {
		th->calls++;
		if (!th->tid)
			th->tid = ev->tid;
	}
	if (ev->type == ATR_T_FREE) {
		if (ev->ptr)
			kill_ptr(st, ev->ptr);
		else
			s->free_null++;
		return;
	}
	s->bytes_requested += ev->size;
	if (th)
		th->bytes += ev->size;
	if (ev->type == ATR_T_REALLOC || ev->type == ATR_T_REALLOCARRAY) {
		/* the iterator released a dying old block already, at the
		 * call's start stamp (ATR_EV_REALLOC_RELEASE) */
		if (!ev->ret) {
			if (ev->size != 0 || !ev->ptr)
				s->failed++;
			if (ev->ptr && ev->size != 0 &&
			    !util_hmap_lookup(&st->live, ev->ptr, NULL)) {
				count_unknown(st);
			}
			return;
		}
		if (ev->ptr && ev->ret == ev->ptr) {
			/* in place: the same block, a new size */
			uint64_t old;
			if (util_hmap_lookup(&st->live, ev->ptr, &old)) {
				kill_ptr(st, ev->ptr);
			} else {
				count_unknown(st);
			}
		}
		make_live(st, ev->ret, ev->size, ev->ts);
		return;
	}
	if (ev->ret)
		make_live(st, ev->ret, ev->size, ev->ts);
	else
		s->failed++;
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

	struct an_state st;
	memset(&st, 0, sizeof(st));
	st.s = s;
	st.fork_child = (atr_get_info(f)->status & ATR_STATUS_FORK_CHILD) != 0;
	st.attached = (atr_get_info(f)->status & ATR_STATUS_ATTACHED) != 0;
	atr_iter *it;
	int r = atr_iter_new(f, &it);
	if (r < 0)
		return r;
	struct atr_event ev;
	struct util_progress prog;
	util_progress_start(&prog, "info", atr_get_info(f)->records_hint);
	while ((r = atr_iter_next(it, &ev)) > 0) {
		util_progress_update(&prog, ev.seq);
		if (ev.type == ATR_EV_REALLOC_RELEASE) {
			kill_ptr(&st, ev.ptr);
			continue;
		}
		if (!s->records++)
			s->first_ts = ev.ts;
		s->last_ts = ev.ts;
		if (ev.type >= 1 && ev.type <= ATR_T_CALL_LAST) {
			on_call(&st, &ev);
		} else if (atr_is_xcall(ev.type)) {
			if (an_maps_event(&s->maps, &ev) < 0)
				st.nomem = 1;
			s->xcalls[ev.type - ATR_T_XCALL_FIRST]++;
			s->total_calls++;
			struct an_thread_stat *th = thread_of(s, ev.thread);
			if (th)
				th->calls++;
		} else if (ev.type == ATR_T_MARKER)
			s->markers++;
		if (st.nomem) {
			r = ATR_E_NOMEM;
			break;
		}
	}
	if (r == 0 && st.nomem)
		r = ATR_E_NOMEM;
	util_progress_done(&prog);
	atr_iter_free(it);
	util_hmap_destroy(&st.live);
	return r < 0 ? r : 0;
}

void an_summary_free(struct an_summary *s)
{
	free(s->threads);
	an_maps_free(&s->maps);
	s->threads = NULL;
	s->nthreads = 0;
}
