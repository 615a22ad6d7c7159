/* turns.c - two threads that take turns, as CPython's threads take turns
 * on the GIL: a token (mutex and condition) passes between them, and only
 * its holder runs.
 *
 * usage: turns [TURNS [CALLS]]   (default 40 3000)
 *
 * Each turn its holder makes CALLS malloc/free pairs (the last block it
 * allocates goes with the token: the other thread frees it, a cross-thread
 * free), then hands the token over and blocks until it comes back.  So
 * each thread's gaps between turns are blocked time (voluntary switches)
 * that ends right after the other thread's last call: convert's hand-offs
 * (docs/WORKLOAD_FORMAT.md, "Think time").  Nothing else here allocates.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int holder; /* 0 or 1: whose turn it is */
static int turns = 40, calls = 3000;
static void *passed; /* the block that goes with the token */

static void *worker(void *arg)
{
	int me = (int)(uintptr_t)arg;
	for (int t = 0; t < turns; t++) {
		pthread_mutex_lock(&mu);
		while (holder != me)
			pthread_cond_wait(&cv, &mu);
		pthread_mutex_unlock(&mu);
		free(passed); /* the other thread's block (NULL at first) */
		void *last = NULL;
		for (int i = 0; i < calls; i++) {
			void *p = malloc(16 + (size_t)((i * 37 + me * 11) % 700));
			*(volatile char *)p = (char)i;
			if (i == calls - 1) {
				last = p;
				break;
			}
			free(p);
		}
		pthread_mutex_lock(&mu);
		passed = last;
		holder = !me;
		pthread_cond_broadcast(&cv);
		pthread_mutex_unlock(&mu);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		turns = atoi(argv[1]);
	if (argc > 2)
		calls = atoi(argv[2]);
	if (turns < 1 || calls < 1)
		return 2;
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, 256 << 10);
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		if (pthread_create(&th[i], &at, worker, (void *)(uintptr_t)i))
			return 1;
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	free(passed);
	return 0;
}
