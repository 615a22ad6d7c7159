/* util_ranges.c - see util_ranges.h. */
#include "util_ranges.h"

#include <stdlib.h>
#include <string.h>

void ur_destroy(struct ur_set *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

size_t ur_first_after(const struct ur_set *s, uint64_t a)
{
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->v[mid].end <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int room(struct ur_set *s)
{
	if (s->n < s->cap)
		return 0;
	size_t nc = s->cap ? s->cap * 2 : 8;
	struct ur_range *nv = realloc(s->v, nc * sizeof(*nv));
	if (!nv)
		return -1;
	s->v = nv;
	s->cap = nc;
	return 0;
}

static void put_at(struct ur_set *s, size_t i, const struct ur_range *r)
{
	memmove(&s->v[i + 1], &s->v[i], (s->n - i) * sizeof(*s->v));
	s->v[i] = *r;
	s->n++;
}

int ur_insert(struct ur_set *s, uint64_t start, uint64_t end, uint64_t tag, uint64_t off)
{
	if (room(s) < 0)
		return -1;
	struct ur_range r = {start, end, tag, off};
	put_at(s, ur_first_after(s, start), &r);
	return 0;
}

uint64_t ur_visit(struct ur_set *s, uint64_t a, uint64_t b, int cut,
		  void (*fn)(void *arg, const struct ur_range *part), void *arg)
{
	if (a >= b)
		return 0;
	size_t i = ur_first_after(s, a);
	if (cut && i < s->n && s->v[i].start < a && s->v[i].end > b) {
		/* a hole in the middle of one range: it becomes two */
		if (room(s) < 0)
			return UINT64_MAX;
		struct ur_range *r = &s->v[i];
		struct ur_range part = {a, b, r->tag, r->off + (a - r->start)};
		struct ur_range right = {b, r->end, r->tag, r->off + (b - r->start)};
		if (fn)
			fn(arg, &part);
		r->end = a;
		put_at(s, i + 1, &right);
		return b - a;
	}
	uint64_t got = 0;
	size_t del = i, ndel = 0; /* ranges wholly inside [a, b) */
	for (; i < s->n && s->v[i].start < b; i++) {
		struct ur_range *r = &s->v[i];
		uint64_t ps = r->start > a ? r->start : a, pe = r->end < b ? r->end : b;
		struct ur_range part = {ps, pe, r->tag, r->off + (ps - r->start)};
		got += pe - ps;
		if (fn)
			fn(arg, &part);
		if (!cut)
			continue;
		if (r->start < a) { /* keep its left end */
			r->end = a;
			del = i + 1;
		} else if (r->end > b) { /* keep its right end */
			r->off += b - r->start;
			r->start = b;
		} else {
			ndel++;
		}
	}
	if (ndel) {
		memmove(&s->v[del], &s->v[del + ndel], (s->n - del - ndel) * sizeof(*s->v));
		s->n -= ndel;
	}
	return got;
}

int ur_covered(const struct ur_set *s, uint64_t a, uint64_t b, uint64_t tag, uint64_t *off)
{
	if (a >= b)
		return 0;
	size_t i = ur_first_after(s, a);
	uint64_t at = a, want = 0;
	for (; i < s->n && at < b; i++) {
		const struct ur_range *r = &s->v[i];
		if (r->start > at || r->tag != tag)
			return 0;
		uint64_t o = r->off + (at - r->start);
		if (at == a)
			*off = o;
		else if (o != want)
			return 0;
		uint64_t e = r->end < b ? r->end : b;
		want = o + (e - at);
		at = e;
	}
	return at >= b;
}
