/* waves.c - threads created in waves: W waves of K threads, main joins a
 * wave before it creates the next one.
 *
 * usage: waves [WAVES [THREADS [CALLS [ROUNDS]]]]   (default 4 5 200 0)
 *
 * Each thread allocates CALLS blocks, meets the others of its wave at a
 * barrier (so all K are alive at once, as the trace shows), frees them and
 * exits.  With ROUNDS, before it frees them, it frees and allocates each
 * block again ROUNDS times: many records with the same live heap, all
 * threads alive (the tracer's own memory against the program's).  In the trace: W*K + 1 threads, at
 * most K + 1 alive at once, and no thread of one wave alive with one of another.  Nothing else here
 * allocates (no stdio); threads get 256 KiB stacks (see threads.c on
 * glibc's stack cache).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_barrier_t bar;
static int calls = 200, rounds;

static void *worker(void *arg)
{
	uintptr_t id = (uintptr_t)arg;
	void **v = __builtin_alloca(sizeof(void *) * (size_t)calls);
	for (int i = 0; i < calls; i++) {
		v[i] = malloc(16 + (size_t)((id * 7 + (uintptr_t)i * 13) % 500));
		*(volatile char *)v[i] = 1;
	}
	pthread_barrier_wait(&bar);
	for (int r = 0; r < rounds; r++)
		for (int i = 0; i < calls; i++) {
			free(v[i]);
			v[i] = malloc(16 + (size_t)((id * 7 + (uintptr_t)i * 13) % 500));
			*(volatile char *)v[i] = 1;
		}
	for (int i = 0; i < calls; i++)
		free(v[i]);
	return NULL;
}

int main(int argc, char **argv)
{
	int waves = argc > 1 ? atoi(argv[1]) : 4, k = argc > 2 ? atoi(argv[2]) : 5;
	if (argc > 3)
		calls = atoi(argv[3]);
	if (argc > 4)
		rounds = atoi(argv[4]);
	if (waves < 1 || k < 1 || k > 1024 || calls < 1 || calls > 100000 || rounds < 0)
		return 2;
	/* main's own first call: it is the root thread of the workload */
	free(malloc(1));
	pthread_t th[1024];
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, 256 << 10);
	for (int w = 0; w < waves; w++) {
		pthread_barrier_init(&bar, NULL, (unsigned)k);
		for (int i = 0; i < k; i++)
			if (pthread_create(&th[i], &at, worker, (void *)(uintptr_t)(w * k + i)) !=
			    0)
				return 1;
		for (int i = 0; i < k; i++)
			pthread_join(th[i], NULL);
		pthread_barrier_destroy(&bar);
	}
	return 0;
}
