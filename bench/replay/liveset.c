/* liveset.c - one thread keeping LIVE blocks alive, replacing a random one
 * per step (free + malloc of 16-512 bytes): a trace whose live set is
 * LIVE blocks, for convert's throughput on large live sets (issue 12).
 * With THREADS > 1, that many threads at once, each with LIVE/THREADS
 * blocks and STEPS/THREADS steps: glibc gives each an arena of several
 * heaps, and the trace's HEAP records cut the threads' runs of records
 * short (bench/replay/RESULTS.md, "Runs of a few records").
 *
 *   gcc -O2 -pthread -o liveset bench/replay/liveset.c && liveset LIVE STEPS [THREADS]
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static size_t live, steps;

static void *run(void *arg)
{
	uint64_t s = 88172645463325252ull + (uintptr_t)arg;
	void **v = calloc(live, sizeof(*v));
	if (!v)
		abort();
	for (size_t i = 0; i < live; i++)
		v[i] = malloc(16 + i % 497);
	for (size_t i = 0; i < steps; i++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		size_t k = (size_t)(s % live);
		free(v[k]);
		v[k] = malloc(16 + (size_t)(s >> 40) % 497);
	}
	for (size_t i = 0; i < live; i++)
		free(v[i]);
	free(v);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: %s LIVE STEPS [THREADS]\n", argv[0]);
		return 2;
	}
	int n = argc == 4 ? atoi(argv[3]) : 1;
	if (n < 1 || n > 64) {
		fprintf(stderr, "%s: 1 to 64 threads\n", argv[0]);
		return 2;
	}
	live = strtoull(argv[1], NULL, 10) / (size_t)n;
	steps = strtoull(argv[2], NULL, 10) / (size_t)n;
	if (!live)
		live = 1;
	if (n == 1) {
		run(NULL);
		return 0;
	}
	pthread_t t[64];
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, run, (void *)(uintptr_t)i);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	return 0;
}
