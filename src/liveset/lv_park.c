/* lv_park.c - releases stamped ahead of the allocation they release
 * (lv_park.h). */
#include "lv_park.h"

#include <string.h>

void lv_park_init(struct lv_park *p, uint64_t window)
{
	memset(p, 0, sizeof(*p));
	p->oldest = UINT64_MAX;
	p->window = window;
}

uint64_t lv_park_ticks(const atr_file *f)
{
	if (!f)
		return 0;
	double tpn = atr_get_info(f)->ticks_per_sec / 1e9;
	uint64_t t = (uint64_t)((double)LV_PARK_WINDOW_NS * (tpn > 0 ? tpn : 1.0) + 0.5);
	return t ? t : 1;
}

static void remove_at(struct lv_park *p, uint32_t i)
{
	p->n--;
	p->e[i] = p->e[p->n];
	p->own[i] = p->own[p->n];
	p->oldest = UINT64_MAX;
	for (uint32_t j = 0; j < p->n; j++)
		if (p->e[j].ts < p->oldest)
			p->oldest = p->e[j].ts;
}

static uint32_t oldest_at(const struct lv_park *p)
{
	uint32_t k = 0;
	for (uint32_t j = 1; j < p->n; j++)
		if (p->e[j].ts < p->e[k].ts)
			k = j;
	return k;
}

int lv_park_add(struct lv_park *p, const struct atr_call *r, struct atr_call *expired)
{
	if (!p->window) {
		*expired = *r;
		return 1;
	}
	int full = p->n == LV_PARK_CAP;
	if (full) {
		uint32_t k = oldest_at(p);
		*expired = p->e[k];
		remove_at(p, k);
	}
	p->own[p->n] = 0;
	p->e[p->n++] = *r;
	if (r->ts < p->oldest)
		p->oldest = r->ts;
	return full;
}

int lv_park_claim(struct lv_park *p, uint64_t ptr, uint32_t thread, uint64_t ts,
		  struct atr_call *out)
{
	for (uint32_t i = 0; i < p->n; i++) {
		const struct atr_call *e = &p->e[i];
		if (e->ptr == ptr && e->thread != thread && ts >= e->ts &&
		    ts - e->ts <= p->window) {
			*out = *e;
			remove_at(p, i);
			p->reordered++;
			return 1;
		}
	}
	/* none: the allocation may be the second shape's (lv_park.h) */
	for (uint32_t i = 0; i < p->n; i++) {
		const struct atr_call *e = &p->e[i];
		if (e->ptr == ptr && e->thread == thread && !p->own[i] && ts >= e->ts &&
		    ts - e->ts <= p->window)
			p->own[i] = ts ? ts : 1;
	}
	return 0;
}

int lv_park_expire(struct lv_park *p, uint64_t now, struct atr_call *out, uint64_t *own)
{
	if (!lv_park_due(p, now))
		return 0;
	uint32_t k = oldest_at(p);
	*out = p->e[k];
	*own = p->own[k];
	remove_at(p, k);
	return 1;
}
