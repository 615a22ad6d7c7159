/* thread_waves.c - a stress program whose threads come and go: TOTAL
 * threads over the run, at most PAR alive at once (main joins the oldest
 * before it creates the next).  Each thread makes ITERS rounds of:
 * allocate a block (16 B - 1 KiB, every 64th 64 KiB), write it, swap it
 * into a shared array of blocks (freeing what another thread left there:
 * cross-thread frees, as in larson), and free one of its own 32 recent
 * blocks; a little work between calls.  Deterministic per thread (its own
 * PRNG), not in timing.
 *
 * Stands in for larson / xmalloc-test / mimalloc's test-stress (sources
 * not available here: only Debian packages, and Debian packages none of
 * them).
 *
 *   gcc -O2 -pthread -o thread_waves bench/replay/thread_waves.c
 *   thread_waves TOTAL PAR ITERS      e.g. 200 8 20000
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHARED 4096
#define RING   32

static _Atomic(void *) shared[SHARED];
static long iters;

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void *worker(void *arg)
{
	uint64_t s = 0x9e3779b97f4a7c15ull * ((uintptr_t)arg + 1);
	void *ring[RING] = {0};
	volatile uint64_t sink = 0;
	for (long i = 0; i < iters; i++) {
		uint64_t r = next(&s);
		size_t sz = (r & 63) == 0 ? 65536 : 16 + (size_t)(r >> 8) % 1008;
		char *p = malloc(sz);
		if (!p)
			abort();
		memset(p, (int)i, sz < 256 ? sz : 256);
		/* work between calls: a few hundred ns */
		for (int k = 0; k < 40; k++)
			sink += (uint64_t)p[k % (sz < 256 ? sz : 256)] * (uint64_t)k;
		if (r & 256) {
			void *old = atomic_exchange(&shared[(r >> 20) % SHARED], p);
			free(old); /* often another thread's block */
		} else {
			unsigned k = (unsigned)(r >> 40) % RING;
			free(ring[k]);
			ring[k] = p;
		}
	}
	for (int k = 0; k < RING; k++)
		free(ring[k]);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s TOTAL PAR ITERS\n", argv[0]);
		return 2;
	}
	long total = atol(argv[1]), par = atol(argv[2]);
	iters = atol(argv[3]);
	if (total < 1 || par < 1 || par > total || iters < 1)
		return 2;
	pthread_t *th = calloc((size_t)total, sizeof(*th));
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, 256 << 10);
	long joined = 0;
	for (long t = 0; t < total; t++) {
		if (t - joined >= par)
			pthread_join(th[joined++], NULL);
		if (pthread_create(&th[t], &at, worker, (void *)(uintptr_t)t) != 0) {
			perror("pthread_create");
			return 1;
		}
	}
	while (joined < total)
		pthread_join(th[joined++], NULL);
	for (int i = 0; i < SHARED; i++)
		free(atomic_load(&shared[i]));
	free(th);
	return 0;
}
