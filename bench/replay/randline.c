/* randline.c - how many random cache lines a second one core of this
 * machine can fetch from a table the size of convert's live set, with the
 * prefetch distance convert uses: the floor under convert's speed at 1e6
 * live blocks, where every record lands on a random line of the table.
 *
 * Maps MIB MiB (MADV_HUGEPAGE, written once), then reads N random lines
 * in order, each read prefetched AHEAD reads before it (prefetcht0, as
 * lv_prefetch; AHEAD 0: no prefetch), and adds a little work per read
 * (WORK dependent multiply-adds, ~1 ns each: convert runs ~230
 * instructions a record besides its misses).  Prints ns per read for each
 * AHEAD, best of ROUNDS.  The indices are a precomputed random sequence:
 * convert's table puts the blocks of one page on nearby entries, so its
 * lines are less random than these (bench/replay/RESULTS.md).
 *
 *   gcc -O2 -o randline bench/replay/randline.c
 *   ./randline [MIB (64)] [LINES_PER_READ 1|2 (2)] [WORK (0)] [ROUNDS (3)]
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define N (4u << 20) /* reads per round */

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static inline void prefetch(const void *p)
{
#if defined(__x86_64__)
	__asm__ volatile("prefetcht0 %0" : : "m"(*(const char *)p));
#else
	__builtin_prefetch(p, 1, 3);
#endif
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
	int two = argc > 2 ? atoi(argv[2]) == 2 : 1;
	unsigned work = argc > 3 ? (unsigned)atoi(argv[3]) : 0;
	int rounds = argc > 4 ? atoi(argv[4]) : 3;
	size_t len = mib << 20, lines = len / 64;
	if (!lines || rounds < 1) {
		fprintf(stderr, "usage: %s [MIB] [1|2] [WORK] [ROUNDS]\n", argv[0]);
		return 2;
	}
	uint8_t *t = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint32_t *idx = malloc(N * sizeof *idx);
	if (t == MAP_FAILED || !idx)
		return 1;
	madvise(t, len, MADV_HUGEPAGE);
	memset(t, 1, len);
	uint64_t x = 88172645463325252ULL;
	for (unsigned i = 0; i < N; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		idx[i] = (uint32_t)(x % (lines - 1));
	}
	static const unsigned aheads[] = {0, 4, 8, 16, 32, 64};
	printf("table %zu MiB, %d line(s) per read, %u work steps; ns per read (best of %d)\n", mib,
	       two ? 2 : 1, work, rounds);
	uint64_t sink = 0;
	for (unsigned a = 0; a < sizeof aheads / sizeof aheads[0]; a++) {
		unsigned ah = aheads[a];
		double best = 1e9;
		for (int r = 0; r < rounds; r++) {
			double t0 = now();
			uint64_t acc = 0;
			for (unsigned i = 0; i < N; i++) {
				if (ah && i + ah < N) {
					prefetch(t + (size_t)idx[i + ah] * 64);
					if (two)
						prefetch(t + (size_t)idx[i + ah] * 64 + 64);
				}
				uint8_t *p = t + (size_t)idx[i] * 64;
				acc += p[0] + (two ? p[64] : 0);
				p[1] = (uint8_t)acc; /* the entry changes, as convert's do */
				for (unsigned w = 0; w < work; w++)
					acc = acc * 6364136223846793005ULL + 1;
			}
			sink += acc;
			double ns = (now() - t0) * 1e9 / N;
			if (ns < best)
				best = ns;
		}
		printf("  ahead %2u: %6.1f ns (%5.1f M reads/s)\n", ah, best, 1e3 / best);
	}
	return (int)(sink & 0); /* keeps acc */
}
