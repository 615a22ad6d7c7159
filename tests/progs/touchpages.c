/* touchpages.c - large blocks with known numbers of pages written
 * (RESIDENT records, the workload's TOUCH ops, replay --touch trace).
 *
 * usage: touchpages [N [PAGES]]   (default 64 128)
 *
 * mmap_threshold 64 KiB (fixed, so glibc's dynamic threshold never moves
 * blocks to the heap): N blocks of PAGES pages each are mmap'd chunks;
 * block i gets its first touched(i) = 1 + (7 i) % 8 pages written (page 0
 * holds the chunk header).  Then block 0 is reallocated to twice its size
 * (its old count is touched(0)) and its first 5 pages written, and every
 * block is freed in order.  Prints "touched KIB span KIB": what a replay
 * should write and what the blocks span.
 *
 * usage: touchpages N PAGES heap
 *
 * Chunks of glibc's heap instead (mmap and trim thresholds raised): N
 * times one block of PAGES pages at the same address, the first with
 * every page written, the others with only their first page written
 * (the earlier block's pages stay resident under them).  Prints the same.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE 4096

static int touched(int i)
{
	return 1 + (7 * i) % 8;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 64;
	int pages = argc > 2 ? atoi(argv[2]) : 128;
	if (n < 1 || n > 4096 || pages < 9)
		return 2;
	if (argc > 3 && strcmp(argv[3], "heap") == 0) {
		if (mallopt(M_MMAP_THRESHOLD, 32 << 20) != 1 ||
		    mallopt(M_TRIM_THRESHOLD, 1 << 30) != 1)
			return 3;
		size_t sz = (size_t)pages * PAGE - 64;
		long w = 0;
		for (int i = 0; i < n; i++) {
			volatile char *p = malloc(sz);
			if (!p)
				return 4;
			for (int j = 0; j < (i ? 1 : pages - 1); j++)
				p[(size_t)j * PAGE] = 1;
			w += (i ? 1 : pages - 1) * (PAGE / 1024);
			free((void *)p);
		}
		printf("touched %ld span %ld\n", w, (long)n * pages * (PAGE / 1024));
		return 0;
	}
	if (mallopt(M_MMAP_THRESHOLD, 64 << 10) != 1)
		return 3;
	/* the chunk (header included) fills exactly `pages` pages */
	size_t size = (size_t)pages * PAGE - 64;
	volatile char **b = malloc((size_t)n * sizeof(*b));
	if (!b)
		return 4;
	long kib = 0;
	for (int i = 0; i < n; i++) {
		b[i] = malloc(size);
		if (!b[i])
			return 4;
		for (int j = 0; j < touched(i); j++)
			b[i][(size_t)j * PAGE] = 1;
		kib += touched(i) * (PAGE / 1024);
	}
	volatile char *r = realloc((void *)b[0], 2 * size);
	if (!r)
		return 4;
	for (int j = 0; j < 5; j++)
		r[(size_t)j * PAGE] = 1;
	b[0] = r;
	for (int i = 0; i < n; i++)
		free((void *)b[i]);
	free(b);
	printf("touched %ld span %ld\n", kib, (long)n * pages * (PAGE / 1024));
	return 0;
}
