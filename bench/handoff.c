/* handoff.c - the worst case for the cross-thread order of the trace's
 * stamps: THREADS threads each make ITERS rounds of
 *
 *     p = malloc(16..64); old = atomic_exchange(&slot[r % SLOTS], p); free(old);
 *
 * with nothing between the calls.  With few slots, `old` is most often the
 * block another thread allocated (and stamped) a few ns before, and its
 * address comes to this thread through a cross-core cache miss that the
 * free's stamp must not overtake (docs/TRACE_FORMAT.md "Order").  The
 * frees do not branch on the pointer (free(NULL) is a call like any), so
 * nothing but the stamp's own ordering keeps its clock read after the
 * exchange.  glibc's tcache gives the freed address back to the freeing
 * thread's next malloc: addresses are reused at once.  Deterministic per
 * thread (its own PRNG), not in timing: it prints how many blocks went
 * from one thread to another (handoffs=N), which depends on how much the
 * threads overlapped.
 *
 *   gcc -O2 -pthread -o handoff bench/handoff.c
 *   handoff THREADS SLOTS ITERS          e.g. 2 1 1000000
 *
 * bench/handoff.sh records it N times and counts the inversions.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_SLOTS 4096

static _Atomic(void *) slot[MAX_SLOTS];
static long iters, nslots;
static atomic_int ready, nthreads;
static atomic_long handoffs;

static void *worker(void *arg)
{
	uint64_t s = 0x9e3779b97f4a7c15ull * ((uintptr_t)arg + 1);
	/* start together, so that the threads overlap from the first round */
	atomic_fetch_add(&ready, 1);
	while (atomic_load(&ready) < atomic_load(&nthreads))
		;
	long foreign = 0;
	void *mine[64] = {0}; /* the block this thread last left in slot k (k & 63) */
	for (long i = 0; i < iters; i++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		void *p = malloc(16 + (size_t)(s & 48));
		if (!p)
			abort();
		uint64_t k = (s >> 8) % (uint64_t)nslots;
		void *old = atomic_exchange(&slot[k], p);
		free(old);
		/* after the free, so that no branch on `old` precedes it: a
		 * block another thread left (slots >= 64 count approximately) */
		foreign += old && old != mine[k & 63];
		mine[k & 63] = p;
	}
	atomic_fetch_add(&handoffs, foreign);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s THREADS SLOTS ITERS\n", argv[0]);
		return 2;
	}
	long n = atol(argv[1]);
	nslots = atol(argv[2]);
	iters = atol(argv[3]);
	if (n < 1 || n > 256 || nslots < 1 || nslots > MAX_SLOTS || iters < 1)
		return 2;
	atomic_store(&nthreads, (int)n);
	pthread_t th[256];
	for (long t = 0; t < n; t++)
		if (pthread_create(&th[t], NULL, worker, (void *)(uintptr_t)t) != 0) {
			perror("pthread_create");
			return 1;
		}
	for (long t = 0; t < n; t++)
		pthread_join(th[t], NULL);
	for (long i = 0; i < nslots; i++)
		free(atomic_load(&slot[i]));
	printf("handoffs=%ld\n", atomic_load(&handoffs));
	return 0;
}
