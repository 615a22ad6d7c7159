/* lv_ahead.h - reads a stream of events a few ahead of the pass, so that
 * the live set's entries of the coming events are fetched from memory
 * while the pass works on the current one.
 *
 * With a million live blocks every lookup of the live set misses the
 * cache and the TLB (~100 ns here); one at a time they cost more than all
 * the rest of a pass.  Prefetching the entries of the event LV_AHEAD
 * places ahead overlaps those misses.  The events are copied into a ring
 * (their payloads too: the reader keeps only the latest one valid), and
 * handed out in order, unchanged.
 */
#ifndef LV_AHEAD_H
#define LV_AHEAD_H

#include "atr_reader.h"
#include "liveset/lv_set.h"

/* Events ahead of the one handed out; at ~30 ns per event that is ~0.5 us,
 * several memory latencies. */
#define LV_AHEAD 16

/* The source: 1 and *ev, 0 at the end, or a negative error code; *ev stays
 * valid until the next call (atr_iter_next_ref's contract). */
typedef int (*lv_source_fn)(void *src, const struct atr_event **ev);

struct lv_ahead {
	lv_source_fn next;
	void *src;
	const struct lv_set *set;
	struct atr_event ring[LV_AHEAD];
	uint8_t *pay[LV_AHEAD];
	uint32_t paycap[LV_AHEAD];
	unsigned head, n;
	int end; /* the source ended */
	int rc;	 /* then: 0 or its error, handed out after the last event */
};

/* set: the live set whose entries to prefetch (NULL: none). */
void lv_ahead_init(struct lv_ahead *a, lv_source_fn next, void *src, const struct lv_set *set);
/* Like the source: 1 and *ev (valid until the next call), 0 at the end, or
 * the source's error (after the events before it); ATR_E_NOMEM. */
int lv_ahead_next(struct lv_ahead *a, const struct atr_event **ev);
void lv_ahead_free(struct lv_ahead *a);

/* The source for an atr_iter (src: the atr_iter *). */
int lv_source_iter(void *src, const struct atr_event **ev);

#endif
