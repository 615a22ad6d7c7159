/* gaps.c - one thread with known gaps between calls (think-time test).
 *
 * usage: gaps [N [GAP_US]]   (default 400 250)
 *
 * N times: malloc, GAP_US microseconds of busy work on the block's cache
 * lines, free.  The traced run lasts about N * GAP_US; a replay that spends
 * the workload's think time must take about as long.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 400;
	long gap = argc > 2 ? atol(argv[2]) : 250;
	if (n < 1 || gap < 0)
		return 2;
	for (int i = 0; i < n; i++) {
		volatile char *p = malloc(4096);
		uint64_t end = now_ns() + (uint64_t)gap * 1000u;
		unsigned k = 0;
		while (now_ns() < end)
			for (int j = 0; j < 16; j++, k += 64)
				p[k & 4095]++;
		free((void *)p);
	}
	return 0;
}
