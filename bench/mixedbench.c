/* mixedbench.c - allocator calls that look like a real program's: sizes
 * from 16 B to 1 MiB (log-uniform), 20% calloc, 10% realloc, the rest
 * malloc, each after the free of the block in the same slot of a ring of
 * 256 live blocks per thread; every block is touched (first and last
 * byte).  Fixed-seed xorshift, so every run makes the same calls.
 *
 * usage: mixedbench THREADS CALLS_PER_THREAD
 * prints: calls=N (every malloc-family call the loop made, exact)
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS 256

static long per_thread;

struct res {
	uint64_t calls;
	uint64_t cpu_ns; /* the thread's CPU time (bench/callcost.py) */
	unsigned index;	 /* seeds the thread's generator */
};

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *worker(void *arg)
{
	struct res *r = arg;
	void *slot[SLOTS] = {0};
	uint64_t x = 0x9e3779b97f4a7c15ULL ^ ((uint64_t)(r->index + 1) * 0xd1b54a32d192ed03ULL);
	uint64_t calls = 0;
	while ((long)calls < per_thread) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		unsigned i = (unsigned)(x % SLOTS);
		unsigned op = (unsigned)((x >> 8) % 10);
		/* 16 B .. 1 MiB, log-uniform: 2^(4..20) times 1..2 */
		unsigned sh = 4 + (unsigned)((x >> 16) % 17);
		size_t size = ((size_t)1 << sh) + (size_t)((x >> 32) & (((size_t)1 << sh) - 1));
		if (size > (1u << 20))
			size = 1u << 20;
		if (op == 0 && slot[i]) {
			void *p = realloc(slot[i], size);
			calls++;
			if (!p)
				abort();
			slot[i] = p;
		} else {
			if (slot[i]) {
				free(slot[i]);
				calls++;
			}
			void *p = op <= 2 ? calloc(1, size) : malloc(size);
			calls++;
			if (!p)
				abort();
			slot[i] = p;
		}
		((volatile char *)slot[i])[0] = 1;
		((volatile char *)slot[i])[size - 1] = 1;
	}
	for (int i = 0; i < SLOTS; i++)
		if (slot[i]) {
			free(slot[i]);
			calls++;
		}
	r->calls = calls;
	r->cpu_ns = thread_cpu_ns();
	return NULL;
}

int main(int argc, char **argv)
{
	int nt = argc > 1 ? atoi(argv[1]) : 1;
	per_thread = argc > 2 ? atol(argv[2]) : 2000000;
	if (nt < 1 || nt > 64 || per_thread < 0)
		return 2;
	pthread_t th[64];
	struct res r[64];
	memset(r, 0, sizeof r);
	for (int t = 0; t < nt; t++)
		r[t].index = (unsigned)t;
	for (int t = 0; t < nt; t++)
		if (pthread_create(&th[t], NULL, worker, &r[t]))
			return 1;
	uint64_t calls = 0, cpu = 0;
	for (int t = 0; t < nt; t++) {
		pthread_join(th[t], NULL);
		calls += r[t].calls;
		cpu += r[t].cpu_ns;
	}
	printf("calls=%llu\n", (unsigned long long)calls);
	printf("worker_cpu_ns=%llu\n", (unsigned long long)cpu);
	return 0;
}
