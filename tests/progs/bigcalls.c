/* bigcalls.c - 4 threads making every kind of call on blocks of
 * 100000-109999 bytes (sizes nothing else in alloctrace asks for), half of
 * them freed by another thread through a shared mailbox.  The trace of
 * its replay, recorded, must show each of these calls again
 * (tests/test_allocators.py): the replay makes every call under every
 * allocator.
 *
 * usage: bigcalls [ROUNDS]   (default 300)
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NTH 4
#define BOX 16

static pthread_mutex_t mx = PTHREAD_MUTEX_INITIALIZER;
static void *box[BOX];
static int rounds = 300;

static size_t sz(unsigned id, int j)
{
	return 100000 + (size_t)((id * 7919u + (unsigned)j * 104729u) % 10000u);
}

/* Leave p in the mailbox, free what another thread left there. */
static void post(void *p, int j)
{
	pthread_mutex_lock(&mx);
	void *old = box[j % BOX];
	box[j % BOX] = p;
	pthread_mutex_unlock(&mx);
	free(old);
}

static void *worker(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg;
	for (int j = 0; j < rounds; j++) {
		char *p = malloc(sz(id, j));
		p[0] = 1;
		switch (j % 6) {
		case 0:
			p = realloc(p, sz(id, j + 1));
			break;
		case 1: {
			void *q = calloc(10, sz(id, j) / 10);
			free(q);
			break;
		}
		case 2: {
			void *q = NULL;
			if (posix_memalign(&q, 64, sz(id, j)) == 0)
				post(q, j + 1);
			break;
		}
		case 3:
			free(aligned_alloc(4096, 102400));
			break;
		case 4:
			post(memalign(256, sz(id, j)), j + 3);
			break;
		default:
			break;
		}
		if (j % 2)
			post(p, j);
		else
			free(p);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		rounds = atoi(argv[1]);
	pthread_t th[NTH];
	for (unsigned i = 0; i < NTH; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)i) != 0)
			return 1;
	for (unsigned i = 0; i < NTH; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < BOX; i++)
		free(box[i]);
	return 0;
}
