/* pingpong.c - the round trip of one cache line between two threads pinned
 * to CPUs 0 and 1, in ns (median of 5 runs of 100,000 round trips).  On a
 * VM this says how far apart the two vCPUs sit right now: on the machine of
 * bench/replay/RESULTS.md ~40-130 ns (near) or ~350-550 ns (far), changing
 * from minute to minute.  bench/replay/pipe_ab.sh labels its runs with it.
 *   gcc -O2 -pthread -o pingpong pingpong.c && ./pingpong */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define N 100000
static _Atomic long ping __attribute__((aligned(64)));
static _Atomic long pong __attribute__((aligned(64)));

static void pin(int cpu)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	pthread_setaffinity_np(pthread_self(), sizeof(s), &s);
}

static void *echo(void *arg)
{
	long base = *(long *)arg;
	pin(1);
	for (long i = base + 1; i <= base + N; i++) {
		while (atomic_load(&ping) != i)
			;
		atomic_store(&pong, i);
	}
	return NULL;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(void)
{
	double ns[5];
	pin(0);
	for (int r = 0; r < 5; r++) {
		long base = (long)r * N;
		pthread_t t;
		pthread_create(&t, NULL, echo, &base);
		double t0 = now();
		for (long i = base + 1; i <= base + N; i++) {
			atomic_store(&ping, i);
			while (atomic_load(&pong) != i)
				;
		}
		ns[r] = (now() - t0) * 1e9 / N;
		pthread_join(t, NULL);
	}
	qsort(ns, 5, sizeof(ns[0]), cmp);
	printf("%.0f\n", ns[2]);
	return 0;
}
