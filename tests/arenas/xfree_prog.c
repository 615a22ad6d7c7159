/* xfree_prog.c - threads that free each other's blocks
 * (tests/arenas/test_arenas.py, case xfree).
 *
 *   xfree_prog
 *
 * NTHREADS threads, all alive at once (a barrier), fewer than glibc's
 * arena limit: glibc gives each its own arena for its whole life.  Each
 * allocates small blocks and frees blocks of its neighbour, which go into
 * its own tcache and come back from its next allocations: chunks of
 * another arena that do not move the thread.  `alloctrace arenas` must
 * show no move and one worker per non-main arena.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#define NTHREADS 4
#define SLOTS	 64
#define ROUNDS	 20000

static pthread_barrier_t bar;
static _Atomic(void *) box[NTHREADS][SLOTS];

static void *thread_main(void *arg)
{
	unsigned me = (unsigned)(uintptr_t)arg, next = (me + 1) % NTHREADS;
	pthread_barrier_wait(&bar);
	for (unsigned k = 0; k < ROUNDS; k++) {
		volatile char *p = malloc(32 + 16 * (k % 8));
		if (!p)
			abort();
		p[0] = 1;
		free(atomic_exchange(&box[me][k % SLOTS], (void *)p));
		free(atomic_exchange(&box[next][(k * 7) % SLOTS], NULL));
	}
	pthread_barrier_wait(&bar);
	return NULL;
}

int main(void)
{
	pthread_t th[NTHREADS];
	pthread_barrier_init(&bar, NULL, NTHREADS);
	for (unsigned i = 0; i < NTHREADS; i++)
		if (pthread_create(&th[i], NULL, thread_main, (void *)(uintptr_t)i))
			return 1;
	for (unsigned i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	for (unsigned i = 0; i < NTHREADS; i++)
		for (unsigned k = 0; k < SLOTS; k++)
			free(atomic_load(&box[i][k]));
	return 0;
}
