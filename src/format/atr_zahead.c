/* atr_zahead.c - see atr_zahead.h. */
#define _GNU_SOURCE /* plat_cpus.h: sched_getaffinity */
#include "atr_zahead.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "atr_fileio.h"
#include "atr_format.h"
#include "atr_v2.h"
#include "plat_cpus.h"
#include "util_io.h" /* util_populate */

enum { ZA_FREE, ZA_POSTED, ZA_BUSY, ZA_DONE };

struct za_slot {
	_Atomic int state;
	/* the reader's, set before POSTED */
	uint64_t off, seq;
	/* the helper's, set before DONE (buf: the reader's while FREE) */
	uint8_t *buf;
	size_t cap, pop;
	size_t len, bound;
	int ok;
};

struct za {
	struct za_slot slot[ZA_SLOTS];
	uint64_t seq; /* the reader's: posts so far */
	const uint8_t *base;
	int fd;
	uint64_t size;
	/* the helper's */
	ZSTD_DCtx *dctx;
	uint8_t *zbuf;
	size_t zcap, zpop;
};

struct za *za_new(const uint8_t *base, int fd, uint64_t size)
{
	struct za *z = calloc(1, sizeof *z);
	if (!z)
		return NULL;
	z->base = base;
	z->fd = fd;
	z->size = size;
	return z;
}

void za_free(struct za *z)
{
	if (!z)
		return;
	for (unsigned i = 0; i < ZA_SLOTS; i++)
		free(z->slot[i].buf);
	ZSTD_freeDCtx(z->dctx);
	free(z->zbuf);
	free(z);
}

void za_post(struct za *z, uint64_t off)
{
	struct za_slot *free_slot = NULL;
	for (unsigned i = 0; i < ZA_SLOTS; i++) {
		struct za_slot *s = &z->slot[i];
		int st = atomic_load_explicit(&s->state, memory_order_acquire);
		if (st == ZA_FREE) {
			if (!free_slot)
				free_slot = s;
		} else if (s->off == off) {
			return;
		}
	}
	if (!free_slot)
		return;
	free_slot->off = off;
	free_slot->seq = ++z->seq;
	atomic_store_explicit(&free_slot->state, ZA_POSTED, memory_order_release);
}

int za_take(struct za *z, uint64_t off, size_t bound, uint8_t **buf, size_t *cap, size_t *pop,
	    size_t *len)
{
	for (unsigned i = 0; i < ZA_SLOTS; i++) {
		struct za_slot *s = &z->slot[i];
		int st = atomic_load_explicit(&s->state, memory_order_acquire);
		if (st == ZA_FREE || s->off != off)
			continue;
		if (st == ZA_POSTED) {
			int want = ZA_POSTED;
			if (atomic_compare_exchange_strong_explicit(&s->state, &want, ZA_FREE,
								    memory_order_acq_rel,
								    memory_order_acquire))
				return 0; /* nobody began: the reader's own */
			st = want;
		}
		/* a frame takes up to ~0.5 ms, which the reader would spend
		 * itself; a helper that lost its CPU gets the reader's */
		for (unsigned spins = 0; st == ZA_BUSY; spins++) {
			if (spins < 4096)
				plat_cpu_relax();
			else
				sched_yield();
			st = atomic_load_explicit(&s->state, memory_order_acquire);
		}
		int got = s->ok && s->bound == bound;
		if (got) {
			uint8_t *b = *buf;
			size_t c = *cap, p = *pop;
			*buf = s->buf;
			*cap = s->cap;
			*pop = s->pop;
			*len = s->len;
			s->buf = b;
			s->cap = c;
			s->pop = p;
		}
		atomic_store_explicit(&s->state, ZA_FREE, memory_order_release);
		return got;
	}
	return 0;
}

/* The slot's frame into its buffer: 1, or 0 (the reader finds out why). */
static int za_run(struct za *z, struct za_slot *s)
{
	uint8_t h[ATR_BLOCK_HEADER_SIZE];
	atr_read_at(z->base, z->fd, z->size, s->off, h, sizeof h);
	uint32_t used = atr_get32(h + ATR_B_USED), csize = atr_get32(h + ATR_U_CSIZE);
	size_t n = ATR_V2_ENC_BOUND((size_t)used);
	s->bound = n;
	if (atr_grow(&s->buf, &s->cap, n) || atr_grow(&z->zbuf, &z->zcap, csize ? csize : 1))
		return 0;
	if (!z->dctx && !(z->dctx = ZSTD_createDCtx()))
		return 0;
	if (csize > z->zpop) {
		util_populate(z->zbuf + z->zpop, csize - z->zpop);
		z->zpop = csize;
	}
	atr_read_at(z->base, z->fd, z->size, s->off + ATR_BLOCK_HEADER_SIZE, z->zbuf, csize);
	unsigned long long cs = ZSTD_getFrameContentSize(z->zbuf, csize);
	if (cs <= n && cs > s->pop) {
		util_populate(s->buf + s->pop, (size_t)cs - s->pop);
		s->pop = (size_t)cs;
	}
	size_t r = ZSTD_decompressDCtx(z->dctx, s->buf, n, z->zbuf, csize);
	if (ZSTD_isError(r))
		return 0;
	s->len = r;
	return 1;
}

int za_help(struct za *z)
{
	struct za_slot *best = NULL;
	for (unsigned i = 0; i < ZA_SLOTS; i++) {
		struct za_slot *s = &z->slot[i];
		if (atomic_load_explicit(&s->state, memory_order_acquire) == ZA_POSTED &&
		    (!best || s->seq > best->seq))
			best = s;
	}
	if (!best)
		return 0;
	int want = ZA_POSTED;
	if (!atomic_compare_exchange_strong_explicit(&best->state, &want, ZA_BUSY,
						     memory_order_acq_rel, memory_order_acquire))
		return 0; /* the reader took it back */
	best->ok = za_run(z, best);
	atomic_store_explicit(&best->state, ZA_DONE, memory_order_release);
	return 1;
}
