/* an_timeline.c - see an_timeline.h. */
#include "an_timeline.h"

#include <stdlib.h>
#include <string.h>

int an_timeline_init(struct an_timeline *t, uint32_t max_buckets, uint32_t max_serial)
{
	memset(t, 0, sizeof(*t));
	if (!max_buckets)
		max_buckets = AN_TL_DEFAULT_BUCKETS;
	if (max_buckets < 2)
		max_buckets = 2;
	max_buckets &= ~1u;
	t->max_buckets = max_buckets;
	t->width = 1;
	/* one row per serial 1..max_serial (capped), plus "other" */
	t->nthreads = (max_serial < AN_TL_MAX_THREADS ? max_serial : AN_TL_MAX_THREADS) + 1;
	t->b = calloc(max_buckets, sizeof(*t->b));
	t->tcalls = calloc((size_t)max_buckets * t->nthreads, sizeof(*t->tcalls));
	if (!t->b || !t->tcalls) {
		an_timeline_free(t);
		return -1;
	}
	return 0;
}

void an_timeline_free(struct an_timeline *t)
{
	free(t->b);
	free(t->tcalls);
	free(t->marks);
	t->b = NULL;
	t->tcalls = NULL;
	t->marks = NULL;
	t->n = 0;
	t->nmarks = 0;
	t->capmarks = 0;
}

/* Double the bucket width: bucket j := buckets 2j and 2j+1. */
static void halve(struct an_timeline *t)
{
	uint32_t nn = (t->n + 1) / 2;
	for (uint32_t j = 0; j < nn; j++) {
		struct an_tl_bucket a = t->b[2 * j];
		if (2 * j + 1 < t->n) {
			const struct an_tl_bucket *c = &t->b[2 * j + 1];
			if (c->min < a.min)
				a.min = c->min;
			if (c->max > a.max)
				a.max = c->max;
			a.last = c->last;
			a.calls += c->calls;
			if (c->mapped_max > a.mapped_max)
				a.mapped_max = c->mapped_max;
			a.mapped_last = c->mapped_last;
		}
		t->b[j] = a;
	}
	memset(&t->b[nn], 0, (t->max_buckets - nn) * sizeof(*t->b));
	for (uint32_t i = 0; i < t->nthreads; i++) {
		uint64_t *row = &t->tcalls[(size_t)i * t->max_buckets];
		for (uint32_t j = 0; j < nn; j++)
			row[j] = row[2 * j] + (2 * j + 1 < t->n ? row[2 * j + 1] : 0);
		memset(&row[nn], 0, (t->max_buckets - nn) * sizeof(*row));
	}
	t->n = nn;
	t->width *= 2;
}

static uint32_t bucket_for(struct an_timeline *t, uint64_t ts)
{
	while (ts / t->width >= t->max_buckets && t->width < (UINT64_C(1) << 62))
		halve(t);
	uint64_t k = ts / t->width;
	if (k >= t->max_buckets)
		k = t->max_buckets - 1;
	if (t->n && k < t->n - 1)
		k = t->n - 1; /* never go back in time */
	while (t->n <= k) {
		struct an_tl_bucket *b = &t->b[t->n++];
		b->min = b->max = b->last = t->cur_live;
		b->calls = 0;
		b->mapped_max = b->mapped_last = t->cur_mapped;
	}
	return (uint32_t)k;
}

static void add_mark(struct an_timeline *t, const struct atr_event *ev)
{
	if (t->nmarks >= AN_TL_MAX_MARKS) {
		t->dropped_marks++;
		return;
	}
	if (t->nmarks == t->capmarks) {
		size_t nc = t->capmarks ? t->capmarks * 2 : 16;
		struct an_tl_mark *m = realloc(t->marks, nc * sizeof(*m));
		if (!m) {
			t->nomem = 1;
			return;
		}
		t->marks = m;
		t->capmarks = nc;
	}
	struct an_tl_mark *m = &t->marks[t->nmarks++];
	memset(m, 0, sizeof(*m));
	m->ts = ev->ts;
	m->type = ev->type;
	m->arg = ev->arg;
	m->thread = ev->thread;
	if (ev->type == ATR_T_MARKER && ev->payload) {
		size_t l = ev->payload_len > ATR_MARKER_MAX ? ATR_MARKER_MAX : ev->payload_len;
		memcpy(m->label, ev->payload, l);
		m->label[l] = 0;
	}
}

void an_timeline_event(struct an_timeline *t, const struct atr_event *ev, uint64_t live_bytes)
{
	if (!t->b)
		return;
	uint32_t k = bucket_for(t, ev->ts);
	struct an_tl_bucket *b = &t->b[k];
	if (live_bytes < b->min)
		b->min = live_bytes;
	if (live_bytes > b->max)
		b->max = live_bytes;
	b->last = live_bytes;
	t->cur_live = live_bytes;
	if (t->cur_mapped > b->mapped_max)
		b->mapped_max = t->cur_mapped;
	b->mapped_last = t->cur_mapped;
	if (ev->type >= 1 && ev->type <= ATR_T_CALL_LAST) {
		b->calls++;
		uint32_t row =
		    ev->thread >= 1 && ev->thread < t->nthreads ? ev->thread - 1 : t->nthreads - 1;
		t->tcalls[(size_t)row * t->max_buckets + k]++;
	} else if (ev->type == ATR_T_MARKER ||
		   (ev->type == ATR_T_CONTROL && ev->arg != ATR_CTL_SYNC)) {
		add_mark(t, ev);
	}
}
