/* smp_prog.c - a deterministic program whose allocation totals are known,
 * for the sampling tests (test_sampling.py).
 *
 * Twelve call sites (one function each, so twelve stacks) allocate
 * (12 - i) MiB each in blocks of their own size and keep them; then every
 * site frees its blocks except sites 0 and 3, which leak theirs.  Peak live
 * = 78 MiB + the small phase; leaked = 21 MiB.  Then realloc chains, calloc,
 * aligned calls and two threads add traffic that ends freed.
 *
 * Usage: smp_prog [grow SECONDS]; "grow" prints its pid, then leaks 1 MiB
 * (four 256 KiB blocks) every 100 ms for SECONDS (the snapshot test watches
 * it). */
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NSITES 12
#define MIB    (1u << 20)

static const size_t site_size[NSITES] = {64,   256, 1024, 4096, 300,  40,
					 2000, 128, 512,  96,	8192, 700};
static void **blocks[NSITES];
static size_t nblocks[NSITES];

#define SITE(i)                                                                                    \
	static __attribute__((noinline)) void site##i(void)                                        \
	{                                                                                          \
		size_t n = (size_t)(NSITES - i) * MIB / site_size[i];                              \
		blocks[i] = calloc(n, sizeof(void *));                                             \
		nblocks[i] = n;                                                                    \
		for (size_t k = 0; k < n; k++)                                                     \
			blocks[i][k] = malloc(site_size[i]);                                       \
	}
SITE(0)
SITE(1)
SITE(2)
SITE(3)
SITE(4)
SITE(5)
SITE(6)
SITE(7)
SITE(8)
SITE(9)
SITE(10)
SITE(11)
static void (*const sites[NSITES])(void) = {site0, site1, site2, site3, site4,	site5,
					    site6, site7, site8, site9, site10, site11};

static __attribute__((noinline)) void *chains(void *arg)
{
	(void)arg;
	for (int c = 0; c < 200; c++) {
		void *p = NULL;
		for (size_t s = 16; s <= 16384; s *= 2)
			p = realloc(p, s);
		free(p);
		void *q = calloc(100, 10);
		void *a = memalign(64, 3000);
		void *b = aligned_alloc(256, 5120);
		void *d = NULL;
		if (posix_memalign(&d, 128, 777))
			abort();
		free(q);
		free(a);
		free(b);
		free(d);
	}
	return NULL;
}

static __attribute__((noinline)) void grow_one(void **keep, int i)
{
	keep[i] = malloc(MIB / 4);
	memset(keep[i], 1, MIB / 4);
}

int main(int argc, char **argv)
{
	if (argc > 2 && !strcmp(argv[1], "grow")) {
		/* a growing leak: 1 MiB (four blocks) every 100 ms */
		int secs = atoi(argv[2]);
		printf("pid %d\n", (int)getpid());
		fflush(stdout);
		void **keep = calloc((size_t)secs * 40 + 1, sizeof(void *));
		for (int i = 0; i < secs * 40; i++) {
			grow_one(keep, i);
			if (i % 4 == 3)
				usleep(100000);
		}
		return 0;
	}
	for (int i = 0; i < NSITES; i++)
		sites[i]();
	for (int i = 0; i < NSITES; i++) {
		if (i == 0 || i == 3)
			continue; /* leaked */
		for (size_t k = 0; k < nblocks[i]; k++)
			free(blocks[i][k]);
		free(blocks[i]);
		blocks[i] = NULL;
	}
	pthread_t th[2];
	for (int t = 0; t < 2; t++)
		pthread_create(&th[t], NULL, chains, NULL);
	chains(NULL);
	for (int t = 0; t < 2; t++)
		pthread_join(th[t], NULL);
	printf("done\n");
	return 0;
}
