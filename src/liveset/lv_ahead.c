/* lv_ahead.c - see lv_ahead.h. */
#include "liveset/lv_ahead.h"

#include <stdlib.h>
#include <string.h>

void lv_ahead_init(struct lv_ahead *a, lv_source_fn next, void *src, const struct lv_set *set)
{
	memset(a, 0, sizeof(*a));
	a->next = next;
	a->src = src;
	a->set = set;
}

void lv_ahead_free(struct lv_ahead *a)
{
	for (unsigned i = 0; i < LV_AHEAD; i++)
		free(a->pay[i]);
	memset(a, 0, sizeof(*a));
}

int lv_source_iter(void *src, const struct atr_event **ev)
{
	return atr_iter_next_ref(src, ev);
}

/* Reads one more event into the ring's tail. */
static int fill_one(struct lv_ahead *a)
{
	const struct atr_event *e;
	int r = a->next(a->src, &e);
	if (r <= 0) {
		a->end = 1;
		a->rc = r;
		return 0;
	}
	unsigned i = (a->head + a->n) % LV_AHEAD;
	struct atr_event *d = &a->ring[i];
	*d = *e;
	if (e->payload && e->payload_len) {
		if (e->payload_len > a->paycap[i]) {
			uint8_t *np = realloc(a->pay[i], e->payload_len);
			if (!np) {
				a->end = 1;
				a->rc = ATR_E_NOMEM;
				return 0;
			}
			a->pay[i] = np;
			a->paycap[i] = e->payload_len;
		}
		memcpy(a->pay[i], e->payload, e->payload_len);
		d->payload = a->pay[i];
	}
	if (a->set) {
		if (e->ptr)
			lv_prefetch(a->set, e->ptr);
		if (e->ret && e->ret != e->ptr)
			lv_prefetch(a->set, e->ret);
	}
	a->n++;
	return 1;
}

int lv_ahead_next(struct lv_ahead *a, const struct atr_event **ev)
{
	while (a->n < LV_AHEAD && !a->end)
		fill_one(a);
	if (!a->n)
		return a->rc;
	*ev = &a->ring[a->head];
	a->head = (a->head + 1) % LV_AHEAD;
	a->n--;
	return 1;
}
