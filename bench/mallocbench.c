/*
 * mallocbench: deterministic, malloc-bound microbenchmark for measuring
 * per-call overhead of malloc tracers.
 *
 *   usage: mallocbench THREADS ITERS_PER_THREAD
 *
 * Each thread keeps a ring of RING live blocks.  Setup mallocs all RING
 * slots, then iteration i works on slot (i % RING):
 *
 *   i % 32 == 31  -> realloc(slot, size)              (1 call)
 *   i % 32 == 15  -> free(slot); calloc(1, size)      (2 calls)
 *   otherwise     -> free(slot); malloc(size)         (2 calls)
 *
 * Teardown frees all RING slots.  Sizes are 16..512 bytes drawn from a
 * xorshift64 generator with a fixed per-thread seed, so every run makes
 * exactly the same sequence of calls.  The operation kind depends only on
 * i, so the call counts have a closed form (computed by expected_counts()
 * and cross-checked against the counters kept in the loop).
 *
 * Output (stdout, after all threads joined), one "key=value" per line:
 *   threads, iters_per_thread, malloc, calloc, realloc, free, calls,
 *   checksum
 * "calls" is the total number of allocator entry points called by the
 * benchmark itself (malloc+calloc+realloc+free).  Calls made by libc/ld.so
 * start-up and by pthread_create are not included (a few dozen at most).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RING	 64u
#define MIN_SIZE 16u
#define MAX_SIZE 512u

struct counts {
	uint64_t malloc_n, calloc_n, realloc_n, free_n;
};

struct worker {
	pthread_t tid;
	unsigned index;
	uint64_t iters;
	struct counts c;
	uint64_t checksum;
	int failed;
	uint64_t cpu_ns; /* the thread's CPU time (bench/callcost.py) */
};

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t xorshift64(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x;
}

static inline size_t pick_size(uint64_t *s)
{
	return MIN_SIZE + (size_t)(xorshift64(s) % (MAX_SIZE - MIN_SIZE + 1u));
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	unsigned char *ring[RING];
	uint64_t seed = 0x9E3779B97F4A7C15ull ^ ((uint64_t)(w->index + 1) * 0xD1B54A32D192ED03ull);
	uint64_t nmalloc = 0, ncalloc = 0, nrealloc = 0, nfree = 0, sum = 0;

	if (seed == 0)
		seed = 1;

	for (unsigned k = 0; k < RING; k++) {
		size_t sz = pick_size(&seed);
		ring[k] = malloc(sz);
		nmalloc++;
		if (!ring[k]) {
			w->failed = 1;
			return NULL;
		}
		ring[k][0] = (unsigned char)k;
		ring[k][sz - 1] = (unsigned char)sz;
	}

	for (uint64_t i = 0; i < w->iters; i++) {
		unsigned slot = (unsigned)(i % RING);
		unsigned char *p = ring[slot];
		size_t sz = pick_size(&seed);
		unsigned kind = (unsigned)(i & 31u);

		/* Read the block before giving it back so the compiler cannot
		 * treat malloc/free pairs as dead. */
		sum += p[0];

		if (kind == 31u) {
			unsigned char *q = realloc(p, sz);
			nrealloc++;
			if (!q) {
				w->failed = 1;
				break;
			}
			p = q;
		} else {
			free(p);
			nfree++;
			if (kind == 15u) {
				p = calloc(1, sz);
				ncalloc++;
			} else {
				p = malloc(sz);
				nmalloc++;
			}
			if (!p) {
				w->failed = 1;
				ring[slot] = NULL;
				break;
			}
		}
		p[0] = (unsigned char)i;
		p[sz - 1] = (unsigned char)(i >> 8);
		ring[slot] = p;
	}

	for (unsigned k = 0; k < RING; k++) {
		if (ring[k]) {
			sum += ring[k][0];
			free(ring[k]);
			nfree++;
		}
	}

	w->c.malloc_n = nmalloc;
	w->c.calloc_n = ncalloc;
	w->c.realloc_n = nrealloc;
	w->c.free_n = nfree;
	w->checksum = sum;
	w->cpu_ns = thread_cpu_ns();
	return NULL;
}

/* Closed-form call counts for one thread doing `iters` iterations. */
static struct counts expected_counts(uint64_t iters)
{
	struct counts c;
	uint64_t full = iters / 32u, rem = iters % 32u;
	uint64_t nrealloc = full + (rem > 31u ? 1u : 0u); /* rem <= 31: never */
	uint64_t ncalloc = full + (rem > 15u ? 1u : 0u);

	c.realloc_n = nrealloc;
	c.calloc_n = ncalloc;
	c.malloc_n = RING + (iters - nrealloc - ncalloc);
	c.free_n = (iters - nrealloc) + RING;
	return c;
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || !*s)
		return -1;
	v = strtoull(s, &end, 10);
	if (*end != '\0')
		return -1;
	*out = (uint64_t)v;
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t nthreads, iters;
	struct worker *w;
	struct counts tot = {0, 0, 0, 0}, exp1, exp;
	uint64_t checksum = 0, cpu = 0;
	int failed = 0;

	if (argc != 3 || parse_u64(argv[1], &nthreads) || parse_u64(argv[2], &iters) ||
	    nthreads < 1 || nthreads > 1024) {
		fprintf(stderr, "usage: %s THREADS ITERS_PER_THREAD\n", argv[0]);
		return 2;
	}

	w = calloc(nthreads, sizeof(*w));
	if (!w) {
		perror("calloc");
		return 1;
	}

	for (uint64_t t = 0; t < nthreads; t++) {
		w[t].index = (unsigned)t;
		w[t].iters = iters;
		if (nthreads == 1)
			continue; /* single-threaded: run on the main thread */
		if (pthread_create(&w[t].tid, NULL, worker_main, &w[t]) != 0) {
			perror("pthread_create");
			return 1;
		}
	}
	if (nthreads == 1)
		worker_main(&w[0]);
	else
		for (uint64_t t = 0; t < nthreads; t++)
			pthread_join(w[t].tid, NULL);

	for (uint64_t t = 0; t < nthreads; t++) {
		tot.malloc_n += w[t].c.malloc_n;
		tot.calloc_n += w[t].c.calloc_n;
		tot.realloc_n += w[t].c.realloc_n;
		tot.free_n += w[t].c.free_n;
		checksum += w[t].checksum;
		cpu += w[t].cpu_ns;
		failed |= w[t].failed;
	}
	free(w);

	exp1 = expected_counts(iters);
	exp.malloc_n = exp1.malloc_n * nthreads;
	exp.calloc_n = exp1.calloc_n * nthreads;
	exp.realloc_n = exp1.realloc_n * nthreads;
	exp.free_n = exp1.free_n * nthreads;

	printf("threads=%llu\n", (unsigned long long)nthreads);
	printf("worker_cpu_ns=%llu\n", (unsigned long long)cpu);
	printf("iters_per_thread=%llu\n", (unsigned long long)iters);
	printf("malloc=%llu\n", (unsigned long long)tot.malloc_n);
	printf("calloc=%llu\n", (unsigned long long)tot.calloc_n);
	printf("realloc=%llu\n", (unsigned long long)tot.realloc_n);
	printf("free=%llu\n", (unsigned long long)tot.free_n);
	printf("calls=%llu\n",
	       (unsigned long long)(tot.malloc_n + tot.calloc_n + tot.realloc_n + tot.free_n));
	printf("checksum=%llu\n", (unsigned long long)checksum);

	if (failed) {
		fprintf(stderr, "mallocbench: allocation failed\n");
		return 1;
	}
	if (memcmp(&tot, &exp, sizeof(tot)) != 0) {
		fprintf(stderr, "mallocbench: call counts differ from closed form\n");
		return 1;
	}
	return 0;
}
