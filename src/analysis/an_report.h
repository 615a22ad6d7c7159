/* an_report.h - one streaming pass for `alloctrace report` / `flamegraph`.
 *
 * The live set is replayed in global order with the rules of an_summary.h
 * (ATR_EV_REALLOC_RELEASE kills a moved realloc's old block at its start
 * stamp).  Everything is accumulated per call stack (grouped by
 * atr_stack_canonical(); stack 0 = no stack recorded):
 *   calls, bytes    allocation calls (every type but free) and bytes
 *                   requested, failed calls included;
 *   live            blocks/bytes live now; at the end: leaked (live at exit);
 *   peak            live bytes of the stack when the process's live bytes
 *                   were at their peak: a lazy snapshot (each stack saves
 *                   its value the first time it changes after a new peak),
 *                   O(1) per event;
 *   temporary       blocks freed by the thread that allocated them with no
 *                   other allocation by that thread in between.
 * Plus histograms of requested sizes and of lifetimes (power-of-two
 * buckets) and per-thread calls, bytes and time inside the allocator
 * (TIMED records).  Memory: the live set plus one entry per stack.
 */
#ifndef AN_REPORT_H
#define AN_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "an_maps.h"
#include "an_timeline.h"
#include "atr_reader.h"

enum an_by { AN_BY_CALLS, AN_BY_BYTES, AN_BY_PEAK, AN_BY_LEAKED, AN_BY_TEMPORARY };

struct an_stack_stat {
	uint32_t stack; /* canonical stack id, 0 = none */
	uint64_t calls, bytes;
	uint64_t live_bytes, live_blocks; /* after the pass: leaked */
	uint64_t peak_bytes;		  /* after the pass: at the peak */
	uint64_t temporary;
	uint64_t at_peak, mod_epoch; /* internal: the lazy snapshot */
	int excluded;		     /* an_filter's stack_ok said no */
	int suppressed;		     /* its leaks match a suppression (set by
					the caller; an_report_rank by leaked
					skips it) */
};

/* bucket 0: value 0; bucket b >= 1: [2^(b-1), 2^b - 1] */
#define AN_HIST_BUCKETS 65

struct an_report_thread {
	uint32_t serial, tid;
	uint64_t calls, bytes;
	uint64_t alloc_ticks; /* durations of TIMED records */
	uint64_t first_ts, last_ts;
	int seen;
	uint64_t last_alloc; /* for "temporary" */
	int has_last;
};

struct an_report {
	uint64_t calls[ATR_T_CALL_LAST + 1];
	uint64_t total_calls, bytes_requested, failed, unknown_frees, inherited_frees, free_null;
	uint64_t reordered_releases;	  /* frees stamped ahead of another thread's
					     allocation of the block, put after it
					     (liveset/lv_park.h) */
	uint64_t pre_attach_frees;	  /* record -p: frees of blocks from before */
	uint64_t live_bytes, live_blocks; /* at the end */
	uint64_t peak_live_bytes, peak_ts;
	uint64_t first_ts, last_ts, records;
	uint64_t temporary;
	uint64_t size_hist[AN_HIST_BUCKETS];
	uint64_t life_hist[AN_HIST_BUCKETS]; /* nanoseconds */
	uint64_t freed_blocks;
	uint64_t excluded_calls;	/* allocation calls a filter left out */
	int window_open, window_closed; /* --from/--to labels: seen */
	int timing;			/* ATR_FEAT_TIMING */
	int stacks;			/* ATR_FEAT_STACKS */
	struct an_stack_stat *st;
	size_t nst;
	struct an_report_thread *threads;
	uint32_t nthreads;
	/* a sampled trace (record --sample): mean bytes between samples, and
	 * every count and byte total above is an estimate (the weights of
	 * struct atr_event); 0 = a full trace, exact */
	uint64_t sample_rate;
	/* the other traced calls: counts, and the program's own mappings */
	uint64_t xcalls[ATR_NXCALLS];
	struct an_maps maps;
};

/* What a pass keeps (report, flamegraph, diff, export: --thread, --from,
 * --to, --function, --module).  An allocation that is not kept is still
 * tracked, so that its free is neither counted nor taken for an unknown
 * one, but it adds to no total, list, histogram or peak. */
struct an_filter {
	const uint32_t *threads; /* kept threads: kernel tids, or serials | */
	size_t nthreads;	 /* AN_FILTER_SERIAL ("T3"); 0 = all */
	/* window: allocations from..to; the pass ends at "to" (leaks are then
	 * what is live there).  A label starts/ends it at the first marker
	 * with that text, else seconds since the trace began. */
	int have_from, have_to;
	double from_s, to_s;
	const char *from_label, *to_label;
	/* allocations whose (canonical) stack this returns 0 for are not kept */
	int (*stack_ok)(void *arg, uint32_t stack);
	void *stack_arg;
};
#define AN_FILTER_SERIAL 0x80000000u

/* Is ev's thread one flt keeps? */
static inline int an_filter_thread_kept(const struct an_filter *flt, const struct atr_event *ev)
{
	if (!flt || !flt->nthreads)
		return 1;
	for (size_t i = 0; i < flt->nthreads; i++) {
		uint32_t t = flt->threads[i];
		if ((t & AN_FILTER_SERIAL) ? (t & ~AN_FILTER_SERIAL) == ev->thread : t == ev->tid)
			return 1;
	}
	return 0;
}

/* Calls atr_stacks_load(f) first.  r is freed with an_report_free() in any
 * case.  0, or a negative atr_err (message via atr_last_error(f)). */
int an_report_compute(atr_file *f, struct an_report *r);
/* The same, also filling tl (an_timeline_init()ed by the caller; may be
 * NULL) during the pass: live heap bytes, calls per thread, markers. */
int an_report_compute_tl(atr_file *f, struct an_report *r, struct an_timeline *tl);
/* ... with a filter (NULL: keep everything). */
int an_report_compute_filtered(atr_file *f, struct an_report *r, struct an_timeline *tl,
			       const struct an_filter *flt);
void an_report_free(struct an_report *r);

uint64_t an_stack_value(const struct an_stack_stat *s, enum an_by by);
/* Indices into r->st of the stacks whose value is > 0, largest first (ties:
 * smaller stack id first).  *out is malloc'ed; returns the count or -1. */
long an_report_rank(const struct an_report *r, enum an_by by, size_t **out);
/* "calls" -> AN_BY_CALLS ...; -1 if unknown. */
int an_by_parse(const char *s);
const char *an_by_name(enum an_by by);

#endif
