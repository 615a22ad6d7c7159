/* rp_convert.h - trace -> workload (`alloctrace convert`, `trace2wl`).
 *
 * One streaming pass over the trace in global order (atr_iter):
 *  - pointers become slot indices; a slot freed by thread T is reused first
 *    by T (no synchronisation); a thread with no free slot of its own takes
 *    the oldest slot freed by another thread once enough are free (with a
 *    WAIT on that free), so the slot table stays near the live set;
 *  - a slot used by another thread than its last user gets a WAIT on that
 *    use (cross-thread free/realloc, stolen slots): the only
 *    synchronisation; address reuse by the traced allocator creates none;
 *  - the ideal RSS (peak live requested bytes) is computed with exactly the
 *    rules of an_summary.h, so it equals `alloctrace info`'s peak_live_bytes.
 * Memory is bounded by the live set and the number of threads.
 */
#ifndef RP_CONVERT_H
#define RP_CONVERT_H

#include <stddef.h>
#include <stdint.h>

#include "atr_reader.h"

struct rp_convert_opts {
	uint32_t pid; /* 0: the busiest process (most records) */
	int merge;    /* every process into one workload (threads
			 renumbered, addresses kept apart) */
	/* Allocations kept (docs/CLI.md, "convert"): a block whose allocation
	 * is not kept is left out with every later op on it, so the workload
	 * stays consistent (no unknown frees).  The window: allocations from
	 * --from on, the workload ends at --to (seconds since the trace began,
	 * or the first marker with that text). */
	int have_from, have_to;
	double from_s, to_s;
	const char *from_label, *to_label;
	/* 1 if call ev (an allocation, or free(NULL)) of file f is kept;
	 * ev->thread is its serial in its own process (NULL: all kept). */
	int (*keep)(void *arg, atr_file *f, const struct atr_event *ev);
	void *keep_arg;
	int keep_stacks; /* keep selects by stack: the stacks are loaded */
	int progress;	 /* 1: progress lines through note */
	int quiet;	 /* 1: no anomaly reports */
	int max_reports; /* anomalies reported per kind (default 10) */
	/* What convert has to say besides its result (it never prints):
	 * RP_NOTE_ANOMALY a line about one record, RP_NOTE_PROGRESS the
	 * progress line (each replaces the last; "" at the end clears it).
	 * NULL: nothing said. */
	void (*note)(void *arg, int kind, const char *msg);
	void *note_arg;
	uint64_t think_floor_ns; /* the recorder's share of each gap between
				    calls, not think time (RP_THINK_FLOOR_NS) */
	int no_joins;		 /* 1: no gap is taken as a wait for a thread's exit */
	int no_handoffs;	 /* 1: no blocked gap is taken as a wait for the
				    thread that ran before (think_handoff) */
	int no_share;		 /* 1: no gap is shared among threads outnumbering cores */
	int no_reorder;		 /* 1: a free of a block not live yet is an anomaly at
				    once, never put after another thread's
				    allocation (liveset/lv_park.h) */
	int no_cpu;		 /* 1: CPU records (the threads' CPU clocks) not used */
	int no_sampled;		 /* 1: sampled durations not used (est_update) */
	int no_fast;		 /* 1: every call through the handlers, none by
				    the fast path (tests: the same bytes) */
	int late_multi;		 /* 1: the slots' last uses kept only from the
				    second thread's start on (multi_on), as for
				    a trace whose thread count said one (tests) */
	/* 1: one thread; 2: the trace is read on a second thread (rp_pipe.h;
	 * not with keep, whose callback reads the source's state); 0: 2 if
	 * this process may run on two cores or more, else 1.  The workload is
	 * the same either way. */
	int threads;
};

enum { RP_NOTE_ANOMALY, RP_NOTE_PROGRESS };

/* Gaps between a call's return and the thread's next call shorter than
 * this add up until they reach it (THINK ops stay rare). */
#define RP_THINK_MIN_NS 1000u
/* `convert`'s default think_floor_ns: the median gap between the calls of
 * a tight malloc/free loop under `record` here (bench/replay/RESULTS.md). */
#define RP_THINK_FLOOR_NS 20u
/* A gap at least this long, during which another thread exited, is taken
 * as a wait for that exit (think_joined in rp_convert.c): as long as the
 * replay's think() spins at most before it sleeps (RP_THINK_SPIN_MAX_NS). */
#define RP_JOIN_MIN_NS 500000u
/* A gap of at least this long, while more threads made calls during it
 * than the traced process had CPUs (the trace header's ncpu), was partly
 * spent waiting for a core: only cpus / threads of it is think time. */
#define RP_SHARE_MIN_NS 100000u
/* A gap of a thread mostly off its CPU (its CPU record says so) that
 * ends at most this long after another thread's call, and in
 * the gap's second half, is a hand-off: a WAIT for that thread's ops
 * (think_handoff; bench/fidelity/RESULTS.md, "Hand-offs").  CPython's GIL
 * passes in 90 us (median; 320 us at most) on our VM. */
#define RP_HANDOFF_MAX_NS 1000000u

struct rp_convert_stats {
	uint32_t pid, nprocs;
	char trace_path[512];
	uint64_t records, calls, ops, waits, slots, threads, ideal_peak;
	/* the traced program's Max RSS (record's RSS samples of the process
	   while this image ran), bytes; 0: unknown (no .rss file, --merge) */
	uint64_t traced_rss;
	int traced_rss_self; /* record's samples said how much was the tracer's */
	uint64_t unknown_frees, double_frees, dup_allocs, unknown_reallocs, failed_allocs;
	uint64_t lost_records, anomalies, bytes_out;
	uint64_t reordered; /* frees stamped ahead of another thread's allocation
			       of the block, put after it (liveset/lv_park.h) */
	uint64_t think_ns;
	uint64_t joins;			 /* gaps taken as a wait for a thread's exit */
	uint64_t handoffs, handoff_ns;	 /* blocked gaps taken as a wait for the
					    thread that ran before, ns taken off */
	uint64_t shared_gaps, shared_ns; /* gaps shared (RP_SHARE_MIN_NS), ns taken off */
	uint64_t cpu_gaps, cpu_off_ns;	 /* gaps cut to the thread's CPU time
					    (CPU records), ns taken off */
	uint64_t recorder_ns;		 /* the recorder's flushes left out of
					    think time (RECORDER records) */
	uint64_t est_calls, est_ns;	 /* untimed calls given their type's typical
					    time (sampled durations), and its sum */
	uint64_t cpu_kept;		 /* ... kept: no more threads busy than CPUs */
	uint32_t max_live;
	uint32_t ncpu; /* the traced process's CPUs (trace header), 0 unknown */
	/* the other calls (workload v3, docs/WORKLOAD_FORMAT.md "Mappings") */
	uint64_t xcalls;	 /* extended call records read */
	uint64_t xops;		 /* extended ops written */
	uint64_t map_slots;	 /* mapping slot table */
	uint64_t file_maps;	 /* file-backed mmaps: not replayed */
	uint64_t map_unknown;	 /* unmaps/remaps/advice of ranges never mapped in the trace */
	uint64_t map_odd;	 /* mapping calls replayed as an unmap and a new mapping */
	uint64_t madvise_other;	 /* madvise with advice the replay does not repeat */
	uint64_t break_moves;	 /* brk, sbrk: not replayed */
	uint64_t usable_unknown; /* malloc_usable_size of a block never allocated in the trace */
	uint64_t touch_ops, touch_counted; /* TOUCH ops; those with a count */
	uint64_t touch_estimated;	   /* ... with an estimate instead (the
					      recorder's budget skipped them) */
	uint64_t touch_prior_pages;	   /* resident pages of glibc heap chunks
					      left out of their counts: earlier
					      blocks' (rp_convert.c, touch_own) */
	uint64_t excluded_calls;	   /* calls a filter left out */
	int window_open, window_closed;	   /* --from/--to labels: seen */
	uint32_t no_stacks;		   /* processes without stacks (--module, --function
					      keep none of their allocations) */
	/* a dj/malloc trace (docs/DJ_COMPAT.md) */
	int dj, dj_alloctrace_export;
	uint64_t dj_inversions_fixed, dj_inversions_pending, dj_reallocs_merged;
	uint64_t dj_unknown_records, dj_truncated_bytes, dj_hints;
	double seconds;
	int read_threads; /* 1: the trace was read on a second thread */
};

/* 0, or a negative atr_err with errbuf filled ("PATH: what was wrong"). */
int rp_convert(const char *trace, const char *out, const struct rp_convert_opts *o,
	       struct rp_convert_stats *st, char *errbuf, size_t errlen);

#endif
