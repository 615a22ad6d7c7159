/* arena_prog.c - a program whose glibc arenas, heaps and mmapped chunks are
 * known (tests/arenas/test_arenas.py).  Run with
 * GLIBC_TUNABLES=glibc.malloc.arena_max=N (N < threads + 1).
 *
 *   arena_prog XML EXPECT
 *
 * NTHREADS threads, all alive at once (a barrier), allocate small blocks
 * (never freed); the first of them served by a non-main arena also
 * allocates 70 MiB in 64 KiB blocks, more than one heap (64 MiB) holds.  Then the main thread walks
 * the dynamic mmap threshold through a known sequence, calls malloc_info(0, XML) and writes what
 * glibc's rule predicts to EXPECT (JSON).
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NTHREADS 6
#define MiB	 (1024UL * 1024UL)

static pthread_barrier_t bar;
static atomic_int big;

static void *thread_main(void *arg)
{
	(void)arg;
	volatile char *p = NULL;
	for (int i = 0; i < 200; i++) {
		p = malloc(1000 + (size_t)i);
		p[0] = 1;
	}
	pthread_barrier_wait(&bar);
	/* the first thread on a non-main arena (NON_MAIN_ARENA, 0x4, in the
	 * chunk's size word) needs a second heap */
	if ((((volatile size_t *)p)[-1] & 4) && atomic_exchange(&big, 1) == 0)
		for (int i = 0; i < 70 * 16; i++) {
			p = malloc(64 * 1024);
			p[0] = 1;
		}
	pthread_barrier_wait(&bar);
	return NULL;
}

/* glibc: request2size, then sysmalloc's mmap size (one more word, pages) */
static size_t mmap_chunk(size_t req)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t nb = (req + sizeof(size_t) + 15) & ~(size_t)15;
	return (nb + sizeof(size_t) + page - 1) & ~(page - 1);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: arena_prog XML EXPECT\n");
		return 2;
	}
	pthread_t th[NTHREADS];
	pthread_barrier_init(&bar, NULL, NTHREADS);
	for (long i = 0; i < NTHREADS; i++)
		pthread_create(&th[i], NULL, thread_main, (void *)i);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);

	size_t thr = 128 * 1024, live_n = 0, live_b = 0, changes = 0;
	volatile char *a = malloc(1 * MiB); /* mmapped (> 128 KiB) */
	a[0] = 1;
	free((void *)a); /* threshold -> chunk of 1 MiB */
	thr = mmap_chunk(1 * MiB), changes++;
	volatile char *b = malloc(200 * 1024); /* below: from the main heap */
	b[0] = 1;
	volatile char *c = malloc(40 * MiB); /* mmapped, above the max */
	c[0] = 1;
	free((void *)c); /* > 32 MiB: no change */
	volatile char *d1 = malloc(3 * MiB), *d2 = malloc(3 * MiB), *d3 = malloc(3 * MiB);
	d1[0] = d2[0] = d3[0] = 1;
	free((void *)d1); /* threshold -> chunk of 3 MiB */
	thr = mmap_chunk(3 * MiB), changes++;
	live_n += 2, live_b += 2 * mmap_chunk(3 * MiB);
	volatile char *e = malloc(2 * MiB); /* below now: sbrk */
	e[0] = 1;
	volatile char *f = malloc(5 * MiB); /* mmapped, stays */
	f[0] = 1;
	live_n += 1, live_b += mmap_chunk(5 * MiB);
	volatile char *g = realloc(NULL, 4 * MiB); /* mmapped; realloc(p, 0) frees */
	g[0] = 1;
	g = realloc((void *)g, 0); /* threshold -> chunk of 4 MiB */
	thr = mmap_chunk(4 * MiB), changes++;

	FILE *x = fopen(argv[1], "w");
	if (!x || malloc_info(0, x) != 0)
		return 1;
	fclose(x);
	FILE *o = fopen(argv[2], "w");
	if (!o)
		return 1;
	fprintf(o,
		"{\"threads\": %d, \"mmap_threshold\": %zu, \"threshold_changes\": %zu,"
		" \"mmap_live\": %zu, \"mmap_live_bytes\": %zu}\n",
		NTHREADS, thr, changes, live_n, live_b);
	fclose(o);
	return 0;
}
