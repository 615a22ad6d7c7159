/* firsttouch.c - what the first write to fresh memory costs on this
 * machine, against memory the process has touched before.
 *
 * Maps MIB MiB (2 MiB aligned, MADV_HUGEPAGE or MADV_NOHUGEPAGE), writes
 * one byte per 4 KiB page (the first touch: the kernel's fault and
 * zeroing, and on a VM whose host backs guest memory lazily, the host's
 * too), then memsets it all (memory already there), unmaps it, and does
 * it again ROUNDS times: the later rounds get back the pages the first
 * one freed.  On our VM the first round of a fresh process wrote huge
 * pages at ~0.7 GB/s and the later ones at ~13 GB/s (bench/replay/
 * RESULTS.md, "The pipe's depth"): a table that grows into fresh memory
 * pays the first figure, a benchmark run right after another pays less.
 *
 *   gcc -O2 -o firsttouch bench/replay/firsttouch.c
 *   ./firsttouch [MIB (64)] [HUGE 0|1 (1)] [ROUNDS (3)]
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define HUGE_BYTES (2UL << 20)

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
	int huge = argc > 2 ? atoi(argv[2]) : 1;
	int rounds = argc > 3 ? atoi(argv[3]) : 3;
	size_t len = mib << 20;
	if (!len || rounds < 1) {
		fprintf(stderr, "usage: %s [MIB] [HUGE 0|1] [ROUNDS]\n", argv[0]);
		return 2;
	}
	for (int r = 0; r < rounds; r++) {
		size_t over = len + HUGE_BYTES;
		char *m =
		    mmap(NULL, over, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
		char *p = (char *)(((uintptr_t)m + HUGE_BYTES - 1) & ~(uintptr_t)(HUGE_BYTES - 1));
		madvise(p, len, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
		double t0 = now();
		for (size_t o = 0; o < len; o += 4096)
			((volatile char *)p)[o] = 1;
		double t1 = now();
		memset(p, 2, len);
		double t2 = now();
		printf("round %d: %zu MiB, %s pages: first touch %.1f ms (%.2f GB/s), "
		       "then memset %.1f ms (%.2f GB/s)\n",
		       r + 1, mib, huge ? "huge" : "4 KiB", (t1 - t0) * 1e3,
		       (double)len / (t1 - t0) / 1e9, (t2 - t1) * 1e3,
		       (double)len / (t2 - t1) / 1e9);
		munmap(m, over);
	}
	return 0;
}
