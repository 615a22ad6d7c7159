/* rp_pipe.c - see rp_pipe.h. */
#define _GNU_SOURCE
#include "replay/rp_pipe.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

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

struct rp_pipe {
	struct rp_pipe_view v; /* first: rp_pipe_next reads it */
	lv_source_fn next;
	void *src;
	struct rp_batch *b; /* RP_PIPE_DEPTH of them, a ring */
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
	/* the converting thread's side: the batch in v, its ring index */
	struct rp_batch *cur;
	uint64_t taken;
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__asm__ volatile("pause");
#elif defined(__aarch64__)
	__asm__ volatile("yield");
#endif
}

/* Wakes the other side if it sleeps and ctr (now at v) reached what it
 * waits for (want), or always (want NULL). */
static void wake(struct rp_pipe *p, uint64_t v, _Atomic uint64_t *want)
{
	if (atomic_load(&p->sleeping) && (!want || v >= atomic_load(want))) {
		pthread_mutex_lock(&p->mu);
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
	}
}

/* Waits until *ctr >= want (or flag: the pipe is done / told to stop);
 * spins a little first. */
static void wait_for(struct rp_pipe *p, _Atomic uint64_t *ctr, uint64_t want, _Atomic int *flag,
		     _Atomic uint64_t *want_slot)
{
	for (unsigned k = 0; k < RP_PIPE_SPIN; k++) {
		if (atomic_load(ctr) >= want || atomic_load(flag))
			return;
		cpu_relax();
	}
	pthread_mutex_lock(&p->mu);
	atomic_store(want_slot, want);
	atomic_fetch_add(&p->sleeping, 1);
	while (atomic_load(ctr) < want && !atomic_load(flag))
		pthread_cond_wait(&p->cv, &p->mu);
	atomic_fetch_sub(&p->sleeping, 1);
	pthread_mutex_unlock(&p->mu);
}

/* Copies e's payload into the batch; 0, or ATR_E_NOMEM. */
static int keep_payload(struct rp_batch *b, struct atr_event *d, const struct atr_event *e)
{
	if (b->paylen + e->payload_len > b->paycap) {
		size_t nc = b->paycap ? b->paycap : 4096;
		while (nc < b->paylen + e->payload_len)
			nc *= 2;
		uint8_t *np = realloc(b->pay, nc);
		if (!np)
			return ATR_E_NOMEM;
		b->pay = np;
		b->paycap = nc;
	}
	memcpy(b->pay + b->paylen, e->payload, e->payload_len);
	d->payload = (const uint8_t *)(uintptr_t)b->paylen;
	b->paylen += e->payload_len;
	b->pidx[b->npay++] = (uint16_t)b->n;
	return 0;
}

static void *reader(void *arg)
{
	struct rp_pipe *p = arg;
	uint64_t prod = 0;
	int r = 1;
	while (r > 0) {
		uint64_t cons = atomic_load(&p->cons);
		if (prod - cons >= RP_PIPE_DEPTH) {
			wait_for(p, &p->cons, prod - RP_PIPE_DEPTH / 2, &p->stop, &p->r_want);
			if (atomic_load(&p->stop))
				break;
			continue;
		}
		if (atomic_load(&p->stop))
			break;
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
			*d = *e;
			if (e->payload && e->payload_len && keep_payload(b, d, e) < 0) {
				r = ATR_E_NOMEM;
				break;
			}
			b->n++;
		}
		for (unsigned k = 0; k < b->npay; k++) {
			struct atr_event *d = &b->ev[b->pidx[k]];
			d->payload = b->pay + (uintptr_t)d->payload;
		}
		if (r <= 0)
			p->rc = r; /* published by done's store below */
		if (b->n)
			atomic_store(&p->prod, ++prod);
		if (r <= 0)
			atomic_store(&p->done, 1);
		wake(p, prod, r <= 0 ? NULL : &p->c_want);
	}
	return NULL;
}

int rp_pipe_start(struct rp_pipe **out, lv_source_fn next, void *src, const struct lv_set *set)
{
	*out = NULL;
	struct rp_pipe *p = calloc(1, sizeof(*p));
	if (!p)
		return ATR_E_NOMEM;
	p->b = calloc(RP_PIPE_DEPTH, sizeof(*p->b));
	if (!p->b) {
		free(p);
		return ATR_E_NOMEM;
	}
	p->next = next;
	p->src = src;
	p->v.set = set;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	/* signals go to the caller's thread, as without the pipe */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int e = pthread_create(&p->th, NULL, reader, p);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e) {
		pthread_mutex_destroy(&p->mu);
		pthread_cond_destroy(&p->cv);
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
	if (p->cur) {
		p->cur = NULL;
		p->v.n = p->v.i = 0;
		atomic_store(&p->cons, ++p->taken);
		wake(p, p->taken, &p->r_want);
	}
	while (atomic_load(&p->prod) == p->taken) {
		if (atomic_load(&p->done)) {
			if (atomic_load(&p->prod) != p->taken)
				break; /* its last batch came with the end */
			return 0;
		}
		wait_for(p, &p->prod, p->taken + RP_PIPE_DEPTH / 2, &p->done, &p->c_want);
	}
	p->cur = &p->b[p->taken % RP_PIPE_DEPTH];
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
		return p->rc;
	return rp_pipe_next(p, ev);
}

void rp_pipe_stop(struct rp_pipe *p)
{
	if (!p)
		return;
	atomic_store(&p->stop, 1);
	pthread_mutex_lock(&p->mu);
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->th, NULL);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	for (unsigned k = 0; k < RP_PIPE_DEPTH; k++)
		free(p->b[k].pay);
	free(p->b);
	free(p);
}
