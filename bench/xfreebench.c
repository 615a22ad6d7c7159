/* xfreebench.c - cross-thread frees: PAIRS producer/consumer pairs (8
 * threads by default); each producer mallocs blocks of 16..4096 bytes and
 * hands them through a lock-free ring to its consumer, which frees them.
 * Blocks of one thread's arena are freed by another thread: what glibc's
 * per-thread arenas and a tracer's HEAP bookkeeping see in servers.
 *
 * usage: xfreebench PAIRS BLOCKS_PER_PRODUCER
 * prints: calls=N (mallocs + frees made by the loop, exact)
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define RING 1024

struct pair {
	_Alignas(64) _Atomic uint64_t head;
	_Alignas(64) _Atomic uint64_t tail;
	void *ring[RING];
	long n;
	unsigned seed;
	uint64_t cpu_ns[2]; /* producer's and consumer's CPU time (bench/callcost.py) */
};

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *producer(void *arg)
{
	struct pair *p = arg;
	uint64_t x = 0x2545F4914F6CDD1DULL ^ p->seed;
	for (long i = 0; i < p->n; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		size_t size = 16 + (size_t)(x % 4081);
		char *b = malloc(size);
		if (!b)
			abort();
		b[0] = (char)i;
		uint64_t h = atomic_load_explicit(&p->head, memory_order_relaxed);
		while (h - atomic_load_explicit(&p->tail, memory_order_acquire) >= RING)
			sched_yield();
		p->ring[h % RING] = b;
		atomic_store_explicit(&p->head, h + 1, memory_order_release);
	}
	p->cpu_ns[0] = thread_cpu_ns();
	return NULL;
}

static void *consumer(void *arg)
{
	struct pair *p = arg;
	for (long i = 0; i < p->n; i++) {
		uint64_t t = atomic_load_explicit(&p->tail, memory_order_relaxed);
		while (atomic_load_explicit(&p->head, memory_order_acquire) == t)
			sched_yield();
		free(p->ring[t % RING]);
		atomic_store_explicit(&p->tail, t + 1, memory_order_release);
	}
	p->cpu_ns[1] = thread_cpu_ns();
	return NULL;
}

int main(int argc, char **argv)
{
	int np = argc > 1 ? atoi(argv[1]) : 4;
	long n = argc > 2 ? atol(argv[2]) : 1000000;
	if (np < 1 || np > 32 || n < 0)
		return 2;
	struct pair *pairs = calloc((size_t)np, sizeof *pairs);
	pthread_t th[64];
	for (int i = 0; i < np; i++) {
		pairs[i].n = n;
		pairs[i].seed = (unsigned)i * 7919u;
		if (pthread_create(&th[2 * i], NULL, producer, &pairs[i]) ||
		    pthread_create(&th[2 * i + 1], NULL, consumer, &pairs[i]))
			return 1;
	}
	uint64_t cpu = 0;
	for (int i = 0; i < 2 * np; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < np; i++)
		cpu += pairs[i].cpu_ns[0] + pairs[i].cpu_ns[1];
	printf("calls=%llu\n", (unsigned long long)(2ULL * (uint64_t)np * (uint64_t)n));
	printf("worker_cpu_ns=%llu\n", (unsigned long long)cpu);
	free(pairs);
	return 0;
}
