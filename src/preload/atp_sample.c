/* atp_sample.c - record --sample BYTES: Poisson byte sampling.
 *
 * Each thread counts down the bytes to its next sample point, drawn from an
 * exponential distribution with mean g.sample_rate: an allocation of s bytes
 * is sampled when it covers that point, with probability 1 - exp(-s/rate)
 * (the process is memoryless, so the draw after a sampled allocation starts
 * afresh at its end).  The fast path lives in atp_internal.h: subtract,
 * compare, return.
 *
 * The sampled live set is an open-addressing table of 4-pointer buckets:
 * free() and realloc() look a pointer up without a lock (one cache line);
 * the rare inserts and removals (one per sampled block) take a spinlock.
 * A full bucket doubles the table; the old table stays mapped (readers may
 * still be inside it), which costs at most the size of the final table.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "atp_internal.h"

#define SSET_MIN_BITS 10 /* 1024 buckets, 32 KiB */
#define SSET_MAX_BITS 28

_Atomic(struct atp_sset *) atp_sset_cur;
static atomic_flag sset_lock = ATOMIC_FLAG_INIT;
static uint64_t sset_seed;	      /* ALLOCTRACE_SAMPLE_SEED, 0 = from the clock */
static _Atomic uint64_t sset_nseeded; /* threads seeded so far */

static struct atp_sset *sset_new(unsigned bits)
{
	size_t len = sizeof(struct atp_sset) + ((size_t)ATP_SSET_WAYS << bits) * 8;
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	struct atp_sset *s = m;
	s->shift = 64 - bits;
	s->bits = bits;
	return s;
}

/* Put p in s's bucket; 0, or -1 if the bucket is full.  Lock held. */
static int sset_put(struct atp_sset *s, uint64_t p)
{
	_Atomic uint64_t *b = atp_sset_bucket(s, p);
	int empty = -1;
	for (int i = 0; i < ATP_SSET_WAYS; i++) {
		uint64_t v = atomic_load_explicit(&b[i], memory_order_relaxed);
		if (v == p)
			return 0;
		if (!v && empty < 0)
			empty = i;
	}
	if (empty < 0)
		return -1;
	atomic_store_explicit(&b[empty], p, memory_order_release);
	return 0;
}

static void lock(void)
{
	while (atomic_flag_test_and_set_explicit(&sset_lock, memory_order_acquire))
		sched_yield();
}

static void unlock(void)
{
	atomic_flag_clear_explicit(&sset_lock, memory_order_release);
}

void atp_sset_add(uint64_t p)
{
	lock();
	struct atp_sset *s = atomic_load_explicit(&atp_sset_cur, memory_order_relaxed);
	while (s && sset_put(s, p) < 0) {
		/* a full bucket: rehash into a table twice the size */
		struct atp_sset *n = NULL;
		for (unsigned bits = s->bits + 1; !n && bits <= SSET_MAX_BITS; bits++) {
			n = sset_new(bits);
			size_t nslots = (size_t)ATP_SSET_WAYS << s->bits;
			for (size_t i = 0; n && i < nslots; i++) {
				uint64_t v =
				    atomic_load_explicit(&s->slot[i], memory_order_relaxed);
				if (v && sset_put(n, v) < 0) {
					munmap(n,
					       sizeof(*n) + ((size_t)ATP_SSET_WAYS << n->bits) * 8);
					n = NULL;
				}
			}
		}
		if (!n) { /* out of memory: this block's free goes unrecorded */
			atp_lost(1);
			break;
		}
		atomic_store_explicit(&atp_sset_cur, n, memory_order_release);
		s = n;
	}
	unlock();
}

void atp_sset_del(uint64_t p)
{
	lock();
	struct atp_sset *s = atomic_load_explicit(&atp_sset_cur, memory_order_relaxed);
	_Atomic uint64_t *b = atp_sset_bucket(s, p);
	for (int i = 0; i < ATP_SSET_WAYS; i++)
		if (atomic_load_explicit(&b[i], memory_order_relaxed) == p)
			atomic_store_explicit(&b[i], 0, memory_order_relaxed);
	unlock();
}

/* splitmix64: seeds the per-thread xorshift generator */
static uint64_t mix(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* ln(x) for x in (0, 1]: exponent * ln 2 + 2 atanh((m-1)/(m+1)), m in
 * [1, 2); relative error below 1e-7 (no libm in the preload library). */
static double ln01(double x)
{
	uint64_t u;
	memcpy(&u, &x, 8);
	int e = (int)((u >> 52) & 0x7ff) - 1023;
	u = (u & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL;
	double m;
	memcpy(&m, &u, 8);
	double s = (m - 1) / (m + 1), s2 = s * s;
	double r =
	    s * (2 + s2 * (2.0 / 3 +
			   s2 * (2.0 / 5 + s2 * (2.0 / 7 + s2 * (2.0 / 9 + s2 * (2.0 / 11))))));
	return e * 0.69314718055994530942 + r;
}

/* Bytes to the next sample point: ceil(rate * Exp(1)), at least 1. */
static uint64_t draw(struct atp_thread *t)
{
	uint64_t x = t->rng; /* xorshift64* */
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	t->rng = x;
	uint64_t bits = (x * 0x2545f4914f6cdd1dULL) >> 11;
	double u = ((double)bits + 1) * (1.0 / 9007199254740992.0); /* (0, 1] */
	double d = -ln01(u) * (double)g.sample_rate;
	if (d >= 1.8e19)
		return UINT64_MAX;
	uint64_t c = (uint64_t)d + 1;
	return c;
}

int atp_sample_hit(struct atp_thread *t, size_t size)
{
	if (ATP_UNLIKELY(!t->rng)) {
		/* a new thread: seed, then count this allocation */
		/* a thread's serial is not known yet: number the threads in
		 * the order they first allocate */
		uint64_t k = atomic_fetch_add_explicit(&sset_nseeded, 1, memory_order_relaxed);
		uint64_t seed = sset_seed ? sset_seed * 0x100000001b3ULL + k
					  : plat_hw_ticks() ^ (uint64_t)(uintptr_t)t ^ k << 48;
		t->rng = mix(seed) | 1;
		uint64_t c = draw(t);
		if (size < c) {
			t->countdown = c - size;
			return 0;
		}
	}
	t->countdown = draw(t);
	return 1;
}

void atp_sample_init(uint64_t rate, uint64_t seed)
{
	sset_seed = seed;
	g.sample_rate = 0;
	if (!rate)
		return;
	struct atp_sset *s = sset_new(SSET_MIN_BITS);
	if (!s) {
		atp_message("--sample: cannot map the sampled set; tracing every call", NULL, NULL,
			    errno);
		return;
	}
	atomic_store(&atp_sset_cur, s);
	g.sample_rate = rate;
}

void atp_sample_after_fork_child(void)
{
	atomic_flag_clear(&sset_lock);
}
