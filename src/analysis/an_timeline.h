/* an_timeline.h - a trace downsampled to a bounded number of time buckets.
 *
 * Filled during an_report's streaming pass (an_report_compute_tl): after
 * every event the live heap bytes are folded into the bucket of the event's
 * time (min, max, last), calls are counted per bucket and thread, markers
 * and control records are kept (the first AN_TL_MAX_MARKS).  Buckets start
 * one tick wide; when an event falls past the last bucket, the width doubles and neighbours merge
 * (min of mins, max of maxes, last of the later one, sums of counts), so memory and output stay
 * bounded by max_buckets whatever the trace length, and each pixel of a plot still sees the true
 * extremes of its time span.
 *
 * A bucket with no event carries the previous value (min = max = last =
 * the live bytes at its start).  Times are ticks since the trace's start.
 */
#ifndef AN_TIMELINE_H
#define AN_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "atr_reader.h"

#define AN_TL_DEFAULT_BUCKETS 2000u
#define AN_TL_MAX_MARKS	      4096u
#define AN_TL_MAX_THREADS     4096u /* threads beyond: counted as "other" */

struct an_tl_bucket {
	uint64_t min, max, last;	  /* live heap bytes */
	uint64_t calls;			  /* all threads */
	uint64_t mapped_max, mapped_last; /* the program's own mappings
					     (an_maps: mmap'd + brk bytes) */
};

struct an_tl_mark {
	uint64_t ts;   /* ticks */
	uint32_t type; /* ATR_T_MARKER or ATR_T_CONTROL */
	uint32_t arg;  /* ATR_CTL_* for control */
	uint32_t thread;
	char label[ATR_MARKER_MAX + 1];
};

struct an_timeline {
	uint32_t max_buckets; /* even, >= 2 */
	uint64_t width;	      /* ticks per bucket (a power of two) */
	uint32_t n;	      /* buckets used: [0, n) */
	struct an_tl_bucket *b;
	/* per thread (index = serial - 1, up to AN_TL_MAX_THREADS; the last
	 * row collects the rest): calls per bucket, row-major
	 * [thread][max_buckets] */
	uint32_t nthreads;
	uint64_t *tcalls;
	uint64_t cur_live;
	uint64_t cur_mapped; /* set by the caller before an_timeline_event():
				the program's mapped bytes after the event */
	struct an_tl_mark *marks;
	size_t nmarks, capmarks, dropped_marks;
	int nomem;
};

/* 0 or -1 (ENOMEM).  max_buckets 0 = AN_TL_DEFAULT_BUCKETS. */
int an_timeline_init(struct an_timeline *t, uint32_t max_buckets, uint32_t max_serial);
void an_timeline_free(struct an_timeline *t);
/* Called by an_report for every event, after its effect on the live set. */
void an_timeline_event(struct an_timeline *t, const struct atr_event *ev, uint64_t live_bytes);
/* Calls of thread row i (serial i + 1) in bucket k. */
static inline uint64_t an_timeline_tcalls(const struct an_timeline *t, uint32_t i, uint32_t k)
{
	return t->tcalls[(size_t)i * t->max_buckets + k];
}

#endif
