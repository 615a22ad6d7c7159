/* rp_pipe.h - reads a stream of events on a second thread (convert
 * --threads 2).
 *
 * Reading a trace (zstd, decoding frames into events, the merge of
 * --merge) is about two thirds of convert's instructions; the other third
 * (slots, waits, ops, the live set) depends on every earlier event.  The
 * pipe runs the source on its own thread and hands its events to the
 * converting thread in batches: a bounded ring of RP_PIPE_DEPTH batches of
 * RP_PIPE_BATCH events (their payloads copied with them), so memory stays
 * a few MB whatever the trace.  The events come out in the source's order,
 * unchanged, so the workload is the same byte for byte as without the
 * pipe.  Like lv_ahead, the pipe prefetches the live set's entries of the
 * events some places ahead, on the converting thread (whose cache they
 * are for).
 *
 * The source's state belongs to the pipe's thread from rp_pipe_start to
 * rp_pipe_stop: read its error message (or anything else) only after
 * rp_pipe_stop.  rp_cpipe_* below do the same for the reader's compact
 * records (convert's unfiltered narrow path), 2.3x fewer bytes per record
 * through the two cores' caches than events.
 */
#ifndef RP_PIPE_H
#define RP_PIPE_H

#include "atr_reader.h"
#include "liveset/lv_ahead.h"
#include "liveset/lv_set.h"

#define RP_PIPE_BATCH 512
/* A side that waits sleeps until half the ring is ready, and runs again
 * 25-40 us after its wake-up on the VM (bench/replay/wakeup.c).  With 8
 * batches, while the two sides kept close paces, they slept in turns,
 * one of them every ~170 us; 32 batches make the sleeps 4x rarer and
 * convert 10-16% faster (bench/replay/RESULTS.md, "The pipe's depth").
 * ~3 MB of batches. */
#define RP_PIPE_DEPTH 32

struct rp_pipe;

/* The converting thread's batch: the first member of struct rp_pipe, so
 * that rp_pipe_next's common case is inline. */
struct rp_pipe_view {
	const struct atr_event *ev; /* the batch being handed out */
	unsigned i, n;		    /* next event, events in it */
	const struct lv_set *set;
};

/* Starts reading src on a new thread; set: the live set whose entries to
 * prefetch (NULL: none).  0, or ATR_E_NOMEM (no memory or no thread: the
 * caller reads without the pipe). */
int rp_pipe_start(struct rp_pipe **out, lv_source_fn next, void *src, const struct lv_set *set);
/* rp_pipe_next past the end of a batch: the next one (its first event). */
int rp_pipe_next_batch(struct rp_pipe *p, const struct atr_event **ev);

static inline void rp_pipe_prefetch(const struct lv_set *set, const struct atr_event *e)
{
	if (e->ptr)
		lv_prefetch(set, e->ptr);
	if (e->ret && e->ret != e->ptr)
		lv_prefetch(set, e->ret);
}

/* Like the source: 1 and *ev (valid until the next call), 0 at the end, or
 * the source's error after the events before it; ATR_E_NOMEM. */
static inline int rp_pipe_next(struct rp_pipe *p, const struct atr_event **ev)
{
	struct rp_pipe_view *v = (struct rp_pipe_view *)(void *)p;
	if (__builtin_expect(v->i >= v->n, 0))
		return rp_pipe_next_batch(p, ev);
	unsigned i = v->i++;
	if (v->set && i + LV_AHEAD < v->n)
		rp_pipe_prefetch(v->set, &v->ev[i + LV_AHEAD]);
	*ev = &v->ev[i];
	return 1;
}
/* Stops the reading thread (it may be ahead: what it read is dropped),
 * waits for it and frees the pipe (NULL: nothing). */
void rp_pipe_stop(struct rp_pipe *p);

/* ---- the same for the reader's compact records (convert's narrow path)
 * The second thread runs atr_iter_next_calls and hands over what it
 * returns, unchanged: runs of compact records (88 bytes each, not the 200
 * of an event), each maybe followed by a full event (copied with its
 * payload), in batches of RP_CPIPE_CALLS records. */
#define RP_CPIPE_CALLS 1024
#define RP_CPIPE_SEGS  32

struct rp_cpipe;

/* Starts reading it on a new thread.  0, or ATR_E_NOMEM (the caller
 * reads without the pipe). */
int rp_cpipe_start(struct rp_cpipe **out, atr_iter *it);
/* As atr_iter_next_calls: 1 with *n compact records at *calls and, if *ev
 * is not NULL, the full event after them (both valid until the next
 * call); 0 at the end; the reader's error after the records before it.
 * *ahead (>= *n): the records from *calls on that are in memory already,
 * the later runs' of the batch, for a caller that fetches their data
 * ahead across runs (short runs: a thread's records between full events
 * such as glibc's HEAP records). */
int rp_cpipe_next(struct rp_cpipe *p, const struct atr_call **calls, size_t *n, size_t *ahead,
		  const struct atr_event **ev);
/* As rp_pipe_stop. */
void rp_cpipe_stop(struct rp_cpipe *p);

#endif
