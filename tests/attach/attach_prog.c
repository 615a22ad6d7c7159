/* attach_prog.c - the target of `alloctrace record -p` (test_attach.py).
 *
 * NTHREADS threads run for RUN_MS ms a deterministic mix of malloc, calloc,
 * realloc and free over a ring of blocks filled with a pattern; blocks of
 * the ring are allocated before the attach and freed during it.  Every call
 * is counted by the 100 ms window of the CLOCK_MONOTONIC time read just
 * before it.  "ready" on stdout once the threads run; at the end every
 * block's pattern is checked and the per-window counts are written to
 * OUT: "window_ns N", then "start_ns malloc calloc realloc free" per window.
 * Exit status 0 only if every check passed.
 * usage: attach_prog OUT [RUN_MS]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NTHREADS  3
#define RING	  64
#define WINDOW_NS 100000000ull
#define MAXWIN	  100

enum { C_MALLOC, C_CALLOC, C_REALLOC, C_FREE, C_N };

static uint64_t t0, run_ns;
static uint64_t counts[NTHREADS][MAXWIN][C_N];

struct blk {
	unsigned char *p;
	size_t n;
	unsigned char fill;
};

struct worker {
	int id;
	int bad;
	struct blk ring[RING];
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int check(const struct blk *b)
{
	for (size_t i = 0; i < b->n; i++)
		if (b->p[i] != b->fill)
			return 0;
	return 1;
}

static void count(int id, uint64_t t, int what)
{
	uint64_t w = (t - t0) / WINDOW_NS;
	if (w >= MAXWIN)
		w = MAXWIN - 1;
	counts[id][w][what]++;
}

static void *run(void *arg)
{
	struct worker *wk = arg;
	uint32_t x = 12345u + (uint32_t)wk->id * 7919u;
	for (uint64_t it = 0;; it++) {
		uint64_t t = now_ns();
		if (t - t0 >= run_ns)
			break;
		x = x * 1103515245u + 12345u;
		struct blk *b = &wk->ring[it % RING];
		size_t n = 1 + (x >> 8) % 300;
		unsigned char fill = (unsigned char)(x >> 24);
		if (!check(b))
			wk->bad++;
		switch (it % 4) {
		case 0: /* free + malloc */
			count(wk->id, t, C_FREE);
			free(b->p);
			t = now_ns();
			count(wk->id, t, C_MALLOC);
			b->p = malloc(n);
			break;
		case 1: /* free + calloc */
			count(wk->id, t, C_FREE);
			free(b->p);
			t = now_ns();
			count(wk->id, t, C_CALLOC);
			b->p = calloc(1, n);
			if (b->p)
				for (size_t i = 0; i < n; i++)
					wk->bad += b->p[i] != 0;
			break;
		default: /* realloc */
			count(wk->id, t, C_REALLOC);
			b->p = realloc(b->p, n);
			break;
		}
		if (!b->p) {
			wk->bad++;
			b->n = 0;
			continue;
		}
		b->n = n;
		b->fill = fill;
		memset(b->p, fill, n);
		if (it % 64 == 63) {
			struct timespec ts = {0, 200000};
			nanosleep(&ts, NULL);
		}
	}
	for (int i = 0; i < RING; i++) {
		if (!check(&wk->ring[i]))
			wk->bad++;
		free(wk->ring[i].p);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	run_ns = (argc > 2 ? strtoull(argv[2], NULL, 10) : 2000) * 1000000ull;
	static struct worker wk[NTHREADS];
	pthread_t th[NTHREADS];
	/* blocks allocated before any attach: freed by the loop */
	for (int i = 0; i < NTHREADS; i++) {
		wk[i].id = i;
		for (int j = 0; j < RING; j++) {
			struct blk *b = &wk[i].ring[j];
			b->n = 16 + (size_t)j;
			b->fill = (unsigned char)j;
			b->p = malloc(b->n);
			if (!b->p)
				return 3;
			memset(b->p, b->fill, b->n);
		}
	}
	t0 = now_ns();
	for (int i = 0; i < NTHREADS; i++)
		if (pthread_create(&th[i], NULL, run, &wk[i]) != 0)
			return 3;
	if (write(1, "ready\n", 6) != 6)
		return 3;
	int bad = 0;
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(th[i], NULL);
		bad += wk[i].bad;
	}
	FILE *f = fopen(argv[1], "w");
	if (!f)
		return 4;
	fprintf(f, "window_ns %llu\n", (unsigned long long)WINDOW_NS);
	unsigned nwin = (unsigned)((run_ns + WINDOW_NS - 1) / WINDOW_NS);
	for (unsigned w = 0; w < nwin && w < MAXWIN; w++) {
		uint64_t c[C_N] = {0};
		for (int i = 0; i < NTHREADS; i++)
			for (int k = 0; k < C_N; k++)
				c[k] += counts[i][w][k];
		fprintf(f, "%llu %llu %llu %llu %llu\n", (unsigned long long)(t0 + w * WINDOW_NS),
			(unsigned long long)c[0], (unsigned long long)c[1],
			(unsigned long long)c[2], (unsigned long long)c[3]);
	}
	if (fclose(f) != 0)
		return 4;
	if (bad) {
		fprintf(stderr, "attach_prog: %d inconsistencies\n", bad);
		return 1;
	}
	return 0;
}
