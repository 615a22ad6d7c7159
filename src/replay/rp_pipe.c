/* rp_pipe.c - see rp_pipe.h. */
#define _GNU_SOURCE
#include "replay/rp_pipe.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "plat_cpus.h"

/* Polls before the waiting side sleeps.  The side that waits is the
 * faster one, and it sleeps until half the ring is ready (RP_PIPE_DEPTH /
 * 2 batches filled for the converting thread, emptied for the reader): a
 * wake-up per few batches, not per batch, and the slower side never
 * waits.  A long spin would only burn a shared core. */
#define RP_PIPE_SPIN 100

struct rp_batch {
	struct atr_event ev[RP_PIPE_BATCH];
	unsigned n;
	/* the events' payloads, one after the other; pidx: the events that
	 * have one (their payload field holds the offset until the batch is
	 * published) */
	uint8_t *pay;
	size_t paylen, paycap;
	uint16_t pidx[RP_PIPE_BATCH];
	unsigned npay;
};

/* The hand-off between the reading thread and the converting one, both
 * pipes': batches published and handed back, and who sleeps on what. */
struct rp_ring {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* batches published and batches handed back, in total */
	_Atomic uint64_t prod, cons;
	_Atomic int done; /* the source ended: rc is its result */
	_Atomic int stop; /* the reader is told to stop */
	_Atomic int sleeping;
	/* what a sleeper waits for: prod >= c_want (the converting thread),
	 * cons >= r_want (the reader) */
	_Atomic uint64_t c_want, r_want;
	int rc;
	/* the converting thread's work while it waits for a batch (NULL:
	 * none): 1 if it did some */
	int (*help)(void *);
	void *help_arg;
	uint64_t taken; /* the converting thread's: batches it took */
	int have_cur;	/* it holds batch taken % RP_PIPE_DEPTH */
};

struct rp_pipe {
	struct rp_pipe_view v; /* first: rp_pipe_next reads it */
	lv_source_fn next;
	void *src;
	struct rp_batch *b; /* RP_PIPE_DEPTH of them, a ring */
	struct rp_ring r;
	/* the converting thread's side: the batch in v */
	struct rp_batch *cur;
};

/* Wakes the other side if it sleeps and ctr (now at v) reached what it
 * waits for (want), or always (want NULL). */
static void wake(struct rp_ring *p, uint64_t v, _Atomic uint64_t *want)
{
	if (atomic_load(&p->sleeping) && (!want || v >= atomic_load(want))) {
		pthread_mutex_lock(&p->mu);
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
	}
}

/* Waits until *ctr >= want (or flag: the pipe is done / told to stop);
 * spins a little first. */
static void wait_for(struct rp_ring *p, _Atomic uint64_t *ctr, uint64_t want, _Atomic int *flag,
		     _Atomic uint64_t *want_slot)
{
	for (unsigned k = 0; k < RP_PIPE_SPIN; k++) {
		if (atomic_load(ctr) >= want || atomic_load(flag))
			return;
		plat_cpu_relax();
	}
	pthread_mutex_lock(&p->mu);
	atomic_store(want_slot, want);
	atomic_fetch_add(&p->sleeping, 1);
	while (atomic_load(ctr) < want && !atomic_load(flag))
		pthread_cond_wait(&p->cv, &p->mu);
	atomic_fetch_sub(&p->sleeping, 1);
	pthread_mutex_unlock(&p->mu);
}

/* The reading thread: room for batch prod?  1, or 0 when told to stop
 * (after waiting for the converting thread to hand back half the ring). */
static int ring_room(struct rp_ring *p, uint64_t prod)
{
	for (;;) {
		if (atomic_load(&p->stop))
			return 0;
		if (prod - atomic_load(&p->cons) < RP_PIPE_DEPTH)
			return 1;
		wait_for(p, &p->cons, prod - RP_PIPE_DEPTH / 2, &p->stop, &p->r_want);
	}
}

/* The reading thread published batch prod - 1 (if filled), r: the
 * source's result after it (<= 0: the end). */
static void ring_publish(struct rp_ring *p, uint64_t prod, int filled, int r)
{
	if (r <= 0)
		p->rc = r; /* published by done's store below */
	if (filled)
		atomic_store(&p->prod, prod);
	if (r <= 0)
		atomic_store(&p->done, 1);
	wake(p, prod, r <= 0 ? NULL : &p->c_want);
}

/* The converting thread: hands back the batch it holds and takes the
 * next one; 1, or 0 when the source has ended. */
static int ring_take(struct rp_ring *p)
{
	if (p->have_cur) {
		p->have_cur = 0;
		atomic_store(&p->cons, ++p->taken);
		wake(p, p->taken, &p->r_want);
	}
	while (atomic_load(&p->prod) == p->taken) {
		if (atomic_load(&p->done)) {
			if (atomic_load(&p->prod) != p->taken)
				break; /* its last batch came with the end */
			return 0;
		}
		if (p->help && p->help(p->help_arg))
			continue;
		wait_for(p, &p->prod, p->taken + RP_PIPE_DEPTH / 2, &p->done, &p->c_want);
	}
	p->have_cur = 1;
	return 1;
}

/* Starts fn(arg) as the reading thread, signals blocked (they go to the
 * caller's thread, as without a pipe).  0, or ATR_E_NOMEM. */
static int ring_start(struct rp_ring *p, void *(*fn)(void *), void *arg)
{
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int e = pthread_create(&p->th, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e) {
		pthread_mutex_destroy(&p->mu);
		pthread_cond_destroy(&p->cv);
		return ATR_E_NOMEM;
	}
	return 0;
}

static void ring_stop(struct rp_ring *p)
{
	atomic_store(&p->stop, 1);
	pthread_mutex_lock(&p->mu);
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->th, NULL);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
}

/* Copies len bytes (a multiple of 8, dst 8-aligned) into a batch.  On
 * x86-64 with non-temporal stores: the batch's lines were last read by the
 * converting thread, and a plain store must first take each line back from
 * that core's cache.  On this VM the two vCPUs sometimes sit on cores that
 * share no cache (bench/replay/pingpong.c: a round trip of ~40-160 ns most
 * minutes, ~350-550 ns in others), and then those transfers made
 * --threads 2 3x slower than one thread (bench/replay/RESULTS.md,
 * "Convert's pipe with streaming stores").  Streaming stores write whole
 * lines without reading them; the converting thread's sequential reads
 * are prefetched.  The writer calls batch_fence() before publishing. */
static void batch_out(void *dst, const void *src, size_t len)
{
#if defined(__x86_64__)
	typedef long long word __attribute__((may_alias));
	char *d = dst, *e = d + len;
	const char *q = src;
	if (d < e && ((uintptr_t)d & 8)) {
		_mm_stream_si64((word *)(void *)d, *(const word *)(const void *)q);
		d += 8, q += 8;
	}
	for (; e - d >= 16; d += 16, q += 16)
		_mm_stream_si128((__m128i *)(void *)d,
				 _mm_loadu_si128((const __m128i *)(const void *)q));
	if (d < e)
		_mm_stream_si64((word *)(void *)d, *(const word *)(const void *)q);
#else
	memcpy(dst, src, len);
#endif
}

static void batch_fence(void)
{
#if defined(__x86_64__)
	_mm_sfence(); /* the streamed stores before the publishing store */
#endif
}

/* Appends e's payload to *pay (grown as needed) and leaves its offset in
 * d->payload; 0, or ATR_E_NOMEM. */
static int copy_payload(uint8_t **pay, size_t *paylen, size_t *paycap, struct atr_event *d,
			const struct atr_event *e)
{
	if (*paylen + e->payload_len > *paycap) {
		size_t nc = *paycap ? *paycap : 4096;
		while (nc < *paylen + e->payload_len)
			nc *= 2;
		uint8_t *np = realloc(*pay, nc);
		if (!np)
			return ATR_E_NOMEM;
		*pay = np;
		*paycap = nc;
	}
	memcpy(*pay + *paylen, e->payload, e->payload_len);
	d->payload = (const uint8_t *)(uintptr_t)*paylen;
	*paylen += e->payload_len;
	return 0;
}

/* Copies e's payload into the batch; 0, or ATR_E_NOMEM. */
static int keep_payload(struct rp_batch *b, struct atr_event *d, const struct atr_event *e)
{
	if (copy_payload(&b->pay, &b->paylen, &b->paycap, d, e) < 0)
		return ATR_E_NOMEM;
	b->pidx[b->npay++] = (uint16_t)b->n;
	return 0;
}

static void *reader(void *arg)
{
	struct rp_pipe *p = arg;
	uint64_t prod = 0;
	int r = 1;
	while (r > 0 && ring_room(&p->r, prod)) {
		struct rp_batch *b = &p->b[prod % RP_PIPE_DEPTH];
		b->n = 0;
		b->paylen = 0;
		b->npay = 0;
		while (b->n < RP_PIPE_BATCH) {
			const struct atr_event *e;
			r = p->next(p->src, &e);
			if (r <= 0)
				break;
			struct atr_event *d = &b->ev[b->n];
			_Static_assert(sizeof(*d) % 8 == 0, "events in 8-byte words");
			batch_out(d, e, sizeof(*d));
			if (e->payload && e->payload_len && keep_payload(b, d, e) < 0) {
				r = ATR_E_NOMEM;
				break;
			}
			b->n++;
		}
		batch_fence();
		for (unsigned k = 0; k < b->npay; k++) {
			struct atr_event *d = &b->ev[b->pidx[k]];
			d->payload = b->pay + (uintptr_t)d->payload;
		}
		if (b->n)
			prod++;
		ring_publish(&p->r, prod, b->n != 0, r);
	}
	return NULL;
}

/* A zeroed pipe of psize bytes and its ring of RP_PIPE_DEPTH batches of
 * bsize bytes (*b), or NULL. */
static void *pipe_alloc(size_t psize, size_t bsize, void **b)
{
	void *p = calloc(1, psize);
	*b = p ? calloc(RP_PIPE_DEPTH, bsize) : NULL;
	if (!*b) {
		free(p);
		return NULL;
	}
	return p;
}

int rp_pipe_start(struct rp_pipe **out, lv_source_fn next, void *src, const struct lv_set *set)
{
	*out = NULL;
	void *b;
	struct rp_pipe *p = pipe_alloc(sizeof(*p), sizeof(struct rp_batch), &b);
	if (!p)
		return ATR_E_NOMEM;
	p->b = b;
	p->next = next;
	p->src = src;
	p->v.set = set;
	if (ring_start(&p->r, reader, p) < 0) {
		free(p->b);
		free(p);
		return ATR_E_NOMEM;
	}
	*out = p;
	return 0;
}

/* The next batch, after handing back the current one: 1, or 0 when the
 * source has ended. */
static int next_batch(struct rp_pipe *p)
{
	p->cur = NULL;
	p->v.n = p->v.i = 0;
	if (!ring_take(&p->r))
		return 0;
	p->cur = &p->b[p->r.taken % RP_PIPE_DEPTH];
	p->v.ev = p->cur->ev;
	p->v.i = 0;
	p->v.n = p->cur->n;
	if (p->v.set)
		for (unsigned k = 0; k < LV_AHEAD && k < p->v.n; k++)
			rp_pipe_prefetch(p->v.set, &p->v.ev[k]);
	return 1;
}

int rp_pipe_next_batch(struct rp_pipe *p, const struct atr_event **ev)
{
	if (!next_batch(p))
		return p->r.rc;
	return rp_pipe_next(p, ev);
}

void rp_pipe_stop(struct rp_pipe *p)
{
	if (!p)
		return;
	ring_stop(&p->r);
	for (unsigned k = 0; k < RP_PIPE_DEPTH; k++)
		free(p->b[k].pay);
	free(p->b);
	free(p);
}

/* ---- the compact records' pipe ---- */

/* A batch: runs of compact records, run k ending at end[k] and followed
 * by ev[k] if has_ev[k]; the events' payloads in pay. */
struct rp_cbatch {
	struct atr_call calls[RP_CPIPE_CALLS];
	unsigned n, nrun;
	uint32_t end[RP_CPIPE_SEGS];
	uint8_t has_ev[RP_CPIPE_SEGS];
	uint8_t has_pay[RP_CPIPE_SEGS]; /* ev[k].payload: an offset in pay */
	struct atr_event ev[RP_CPIPE_SEGS];
	uint8_t *pay;
	size_t paylen, paycap;
};

/* Fewer free records than this end a batch (the reader hands out up to
 * the room it is given: small runs cost a hand-off each). */
#define RP_CPIPE_MIN_ROOM 64

struct rp_cpipe {
	atr_iter *it;
	struct rp_cbatch *b; /* RP_PIPE_DEPTH of them */
	struct rp_ring r;
	/* the converting thread's side: the batch it holds, the next run */
	struct rp_cbatch *cur;
	unsigned run, pos;
};

/* Records the reader decodes per call: into a buffer of its own (in L1),
 * then streamed into the batch (batch_out). */
#define RP_CPIPE_CHUNK 64

static void *creader(void *arg)
{
	struct rp_cpipe *p = arg;
	uint64_t prod = 0;
	int r = 1;
	struct atr_call chunk[RP_CPIPE_CHUNK];
	while (r > 0 && ring_room(&p->r, prod)) {
		struct rp_cbatch *b = &p->b[prod % RP_PIPE_DEPTH];
		b->n = b->nrun = 0;
		b->paylen = 0;
		while (b->nrun < RP_CPIPE_SEGS && RP_CPIPE_CALLS - b->n >= RP_CPIPE_MIN_ROOM) {
			size_t n, room = RP_CPIPE_CALLS - b->n;
			const struct atr_event *e;
			r = atr_iter_next_calls(
			    p->it, chunk, room < RP_CPIPE_CHUNK ? room : RP_CPIPE_CHUNK, &n, &e);
			if (r > 0 || n) {
				_Static_assert(sizeof(chunk[0]) % 8 == 0,
					       "records in 8-byte words");
				batch_out(&b->calls[b->n], chunk, n * sizeof(chunk[0]));
				/* records with no event between them: one run */
				unsigned k =
				    b->nrun && !b->has_ev[b->nrun - 1] ? b->nrun - 1 : b->nrun++;
				b->n += (unsigned)n;
				b->end[k] = b->n;
				b->has_ev[k] = r > 0 && e != NULL;
				b->has_pay[k] = 0;
				if (r > 0 && e) {
					struct atr_event *d = &b->ev[k];
					*d = *e;
					if (e->payload && e->payload_len) {
						if (copy_payload(&b->pay, &b->paylen, &b->paycap, d,
								 e) < 0)
							r = ATR_E_NOMEM;
						else
							b->has_pay[k] = 1;
					}
				}
			}
			if (r <= 0)
				break;
		}
		batch_fence();
		for (unsigned k = 0; k < b->nrun; k++)
			if (b->has_pay[k])
				b->ev[k].payload = b->pay + (uintptr_t)b->ev[k].payload;
		if (b->nrun)
			prod++;
		ring_publish(&p->r, prod, b->nrun != 0, r);
	}
	return NULL;
}

/* While the ring is empty the converting thread decompresses a frame the
 * reader will need (atr_iter_help): zstd is ~30% of the reading thread's
 * time, and at small live sets the reading thread bounds convert. */
static int cpipe_help(void *it)
{
	return atr_iter_help(it);
}

int rp_cpipe_start(struct rp_cpipe **out, atr_iter *it)
{
	*out = NULL;
	void *b;
	struct rp_cpipe *p = pipe_alloc(sizeof(*p), sizeof(struct rp_cbatch), &b);
	if (!p)
		return ATR_E_NOMEM;
	p->b = b;
	p->it = it;
	if (atr_iter_set_helper(it) == ATR_OK) {
		p->r.help = cpipe_help;
		p->r.help_arg = it;
	}
	if (ring_start(&p->r, creader, p) < 0) {
		free(p->b);
		free(p);
		return ATR_E_NOMEM;
	}
	*out = p;
	return 0;
}

int rp_cpipe_next(struct rp_cpipe *p, const struct atr_call **calls, size_t *n, size_t *ahead,
		  const struct atr_event **ev)
{
	if (!p->cur || p->run >= p->cur->nrun) {
		p->cur = NULL;
		if (!ring_take(&p->r))
			return p->r.rc;
		p->cur = &p->b[p->r.taken % RP_PIPE_DEPTH];
		p->run = p->pos = 0;
	}
	struct rp_cbatch *b = p->cur;
	unsigned k = p->run++;
	*calls = &b->calls[p->pos];
	*n = b->end[k] - p->pos;
	*ahead = b->n - p->pos;
	*ev = b->has_ev[k] ? &b->ev[k] : NULL;
	p->pos = b->end[k];
	return 1;
}

void rp_cpipe_stop(struct rp_cpipe *p)
{
	if (!p)
		return;
	ring_stop(&p->r);
	for (unsigned k = 0; k < RP_PIPE_DEPTH; k++)
		free(p->b[k].pay);
	free(p->b);
	free(p);
}
