/* an_summary.h - one pass over a trace: the numbers `alloctrace info` shows.
 *
 * The live set (pointer -> requested size; src/liveset/lv_set.h, whose
 * lv_event() applies these rules for every pass) is replayed in global
 * order:
 *   - malloc-like calls make ret live (a ret that is already live replaces
 *     it and is counted in dup_allocs: the trace missed its release);
 *   - free(p): p dies; p != NULL that is not live is an unknown free;
 *     free(NULL) is a call, nothing else;
 *   - realloc(NULL, n) is malloc(n); realloc(p, 0) = NULL frees p (glibc);
 *     a failed realloc (NULL, n > 0) leaves p live; a successful one kills
 *     p and makes ret live, even when ret == p.  An old p that is not live
 *     is an unknown free.  realloc stamps its start, so ret becomes live at
 *     start + duration (the timing word) to keep cross-thread reuse right.
 *   - in a fork child (ATR_STATUS_FORK_CHILD) a release of a block that is
 *     not live is counted as an inherited free instead: the child starts
 *     with a copy of its parent's heap.
 *   - likewise in an attached trace (ATR_STATUS_ATTACHED, `record -p`) it
 *     is a pre-attach free: the block was allocated before the attach.
 * Sizes are requested sizes; "bytes requested" sums every allocation call's
 * size, failed ones included.
 */
#ifndef AN_SUMMARY_H
#define AN_SUMMARY_H

#include <stdint.h>

#include "an_maps.h"
#include "atr_reader.h"

struct an_thread_stat {
	uint32_t serial, tid;
	uint64_t calls, bytes;
};

struct an_summary {
	uint64_t calls[ATR_T_CALL_LAST + 1]; /* by type; [0] unused */
	uint64_t total_calls;		     /* both kinds */
	/* the other traced calls (ATR_XCALLS) by event type - ATR_T_XCALL_FIRST */
	uint64_t xcalls[ATR_NXCALLS];
	uint64_t records;
	uint64_t bytes_requested;
	uint64_t failed; /* allocation calls that returned NULL */
	uint64_t unknown_frees;
	/* releases stamped ahead of the allocation they release, put after it
	 * (liveset/lv_park.h): not counted as unknown frees */
	uint64_t reordered_releases;
	uint64_t inherited_frees;  /* fork child: releases of inherited blocks */
	uint64_t pre_attach_frees; /* attached trace: releases of blocks
				      allocated before the attach */
	uint64_t free_null;
	uint64_t dup_allocs;
	uint64_t live_bytes, live_blocks;  /* at the end of the trace */
	uint64_t peak_live_bytes, peak_ts; /* peak_ts in ticks */
	uint64_t markers;
	uint64_t first_ts, last_ts; /* ticks; 0 when no records */
	struct an_thread_stat *threads;
	uint32_t nthreads;
	/* the program's own mappings (an_maps.h): at the end, the peak */
	struct an_maps maps;
};

/* Fill s (which the caller frees with an_summary_free() in any case).
 * Returns 0, or a negative atr_err (message via atr_last_error(f)). */
int an_summary_compute(atr_file *f, struct an_summary *s);
void an_summary_free(struct an_summary *s);

#endif
