/* an_maps.c - the program's own mappings over a trace (see an_maps.h). */
#include "an_maps.h"

#include <stdlib.h>
#include <string.h>

#define MAP_FAILED_ADDR	  UINT64_MAX /* (void *)-1 */
#define MREMAP_DONTUNMAP_ 4u	     /* linux/mman.h */

void an_maps_init(struct an_maps *m)
{
	memset(m, 0, sizeof *m);
}

void an_maps_free(struct an_maps *m)
{
	free(m->r);
	free(m->s);
	memset(m, 0, sizeof *m);
}

static uint64_t page_up(uint64_t n)
{
	return n > UINT64_MAX - (AN_MAPS_PAGE - 1)
		   ? UINT64_MAX & ~(uint64_t)(AN_MAPS_PAGE - 1)
		   : (n + AN_MAPS_PAGE - 1) & ~(uint64_t)(AN_MAPS_PAGE - 1);
}

/* First range whose end is above a. */
static size_t first_above(const struct an_maps *m, uint64_t a)
{
	size_t lo = 0, hi = m->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->r[mid].end <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct an_map_stack *stack_of(struct an_maps *m, uint32_t stack, int add)
{
	size_t lo = 0, hi = m->ns;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->s[mid].stack < stack)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < m->ns && m->s[lo].stack == stack)
		return &m->s[lo];
	if (!add)
		return NULL;
	if (m->ns == m->caps) {
		size_t nc = m->caps ? 2 * m->caps : 16;
		struct an_map_stack *ns = realloc(m->s, nc * sizeof *ns);
		if (!ns) {
			m->nomem = 1;
			return NULL;
		}
		m->s = ns;
		m->caps = nc;
	}
	memmove(&m->s[lo + 1], &m->s[lo], (m->ns - lo) * sizeof *m->s);
	memset(&m->s[lo], 0, sizeof *m->s);
	m->s[lo].stack = stack;
	m->ns++;
	return &m->s[lo];
}

const struct an_map_stack *an_maps_stack(const struct an_maps *m, uint32_t stack)
{
	return stack_of((struct an_maps *)m, stack, 0);
}

static void account(struct an_maps *m, uint32_t stack, int64_t delta)
{
	m->ranges_bytes += (uint64_t)delta;
	struct an_map_stack *s = stack_of(m, stack, 0);
	if (s)
		s->live += (uint64_t)delta;
}

/* Room for one more range at index i. */
static int open_slot(struct an_maps *m, size_t i)
{
	if (m->n == m->cap) {
		size_t nc = m->cap ? 2 * m->cap : 64;
		struct an_map_range *nr = realloc(m->r, nc * sizeof *nr);
		if (!nr) {
			m->nomem = 1;
			return -1;
		}
		m->r = nr;
		m->cap = nc;
	}
	memmove(&m->r[i + 1], &m->r[i], (m->n - i) * sizeof *m->r);
	m->n++;
	return 0;
}

/* Cut [a, b) out of the live ranges; the stack of the first piece cut
 * (0 if none) goes to *stack. */
static int cut(struct an_maps *m, uint64_t a, uint64_t b, uint32_t *stack)
{
	if (stack)
		*stack = 0;
	size_t i = first_above(m, a);
	int first = 1;
	while (i < m->n && m->r[i].start < b) {
		struct an_map_range *r = &m->r[i];
		if (first && stack)
			*stack = r->stack;
		first = 0;
		uint64_t lo = r->start > a ? r->start : a, hi = r->end < b ? r->end : b;
		account(m, r->stack, -(int64_t)(hi - lo));
		if (r->start < a && r->end > b) { /* a hole in the middle: split */
			if (open_slot(m, i + 1) < 0)
				return -1;
			r = &m->r[i];
			m->r[i + 1] = *r;
			m->r[i + 1].start = b;
			r->end = a;
			return 0;
		}
		if (r->start < a) {
			r->end = a;
			i++;
		} else if (r->end > b) {
			r->start = b;
			i++;
		} else {
			memmove(&m->r[i], &m->r[i + 1], (m->n - i - 1) * sizeof *m->r);
			m->n--;
		}
	}
	return 0;
}

static int add(struct an_maps *m, uint64_t a, uint64_t b, uint32_t stack)
{
	if (b <= a)
		return 0;
	if (cut(m, a, b, NULL) < 0) /* MAP_FIXED replaces what was there */
		return -1;
	size_t i = first_above(m, a);
	if (open_slot(m, i) < 0)
		return -1;
	m->r[i] = (struct an_map_range){a, b, stack};
	struct an_map_stack *s = stack_of(m, stack, 1);
	if (!s)
		return -1;
	account(m, stack, (int64_t)(b - a));
	return 0;
}

static void note_peak(struct an_maps *m, uint64_t ts)
{
	m->mapped = m->ranges_bytes + m->brk_bytes;
	if (m->mapped <= m->peak)
		return;
	m->peak = m->mapped;
	m->peak_ts = ts;
	for (size_t i = 0; i < m->ns; i++)
		m->s[i].at_peak = m->s[i].live;
}

int an_maps_event(struct an_maps *m, const struct atr_event *ev)
{
	if (m->nomem)
		return ATR_E_NOMEM;
	int rc = 0;
	uint32_t st;
	switch (ev->type) {
	case ATR_T_MMAP:
		if (ev->ret == MAP_FAILED_ADDR || ev->err) {
			m->failed++;
			return 0;
		}
		m->maps++;
		rc = add(m, ev->ret, ev->ret + page_up(ev->size), ev->stack_id);
		if (!rc) {
			struct an_map_stack *s = stack_of(m, ev->stack_id, 0);
			s->calls++;
			s->bytes += page_up(ev->size);
		}
		break;
	case ATR_T_MUNMAP:
		if (ev->result) {
			m->failed++;
			return 0;
		}
		m->unmaps++;
		rc = cut(m, ev->ptr, ev->ptr + page_up(ev->size), NULL);
		break;
	case ATR_T_MREMAP:
		if (ev->ret == MAP_FAILED_ADDR || ev->err) {
			m->failed++;
			return 0;
		}
		if (ev->mflags & MREMAP_DONTUNMAP_)
			st = ev->stack_id;
		else if (cut(m, ev->ptr, ev->ptr + page_up(ev->old_size), &st) < 0)
			return ATR_E_NOMEM;
		rc = add(m, ev->ret, ev->ret + page_up(ev->size), st ? st : ev->stack_id);
		break;
	case ATR_T_BRK_CALL:
	case ATR_T_SBRK:
		if (ev->result)
			return 0;
		m->brk_net += (int64_t)(ev->ret - ev->ptr);
		m->brk_bytes = m->brk_net > 0 ? (uint64_t)m->brk_net : 0;
		break;
	default:
		return 0;
	}
	if (rc < 0 || m->nomem)
		return ATR_E_NOMEM;
	note_peak(m, ev->ts);
	return 0;
}
