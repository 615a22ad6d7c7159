/* djprog.c - blocks that change threads after a moving realloc or a
 * posix_memalign: the calls dj's trace2wl left unsynchronised
 * (docs/DJ_COMPAT.md).  Producers grow a block with realloc until it
 * moves, or get one from posix_memalign, and hand it to a consumer that
 * frees it. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAIRS  2
#define ROUNDS 2000
#define QLEN   64

struct queue {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	void *v[QLEN];
	unsigned head, n;
};

static struct queue q[PAIRS];

static void put(struct queue *x, void *p)
{
	pthread_mutex_lock(&x->mu);
	while (x->n == QLEN)
		pthread_cond_wait(&x->cv, &x->mu);
	x->v[(x->head + x->n++) % QLEN] = p;
	pthread_cond_broadcast(&x->cv);
	pthread_mutex_unlock(&x->mu);
}

static void *get(struct queue *x)
{
	pthread_mutex_lock(&x->mu);
	while (!x->n)
		pthread_cond_wait(&x->cv, &x->mu);
	void *p = x->v[x->head];
	x->head = (x->head + 1) % QLEN;
	x->n--;
	pthread_cond_broadcast(&x->cv);
	pthread_mutex_unlock(&x->mu);
	return p;
}

static void *producer(void *arg)
{
	struct queue *x = arg;
	for (int i = 0; i < ROUNDS; i++) {
		void *p;
		if (i % 3 == 0) {
			if (posix_memalign(&p, 64, 100 + (size_t)i % 500))
				abort();
		} else {
			p = malloc(16);
			void *g = NULL;
			size_t n = 32;
			/* grow until the block moves */
			while (p) {
				memset(p, 1, 16);
				g = realloc(p, n);
				if (!g)
					abort();
				if (g != p) {
					p = g;
					break;
				}
				p = g;
				n *= 2;
			}
		}
		put(x, p);
	}
	put(x, NULL);
	return NULL;
}

static void *consumer(void *arg)
{
	struct queue *x = arg;
	void *p;
	while ((p = get(x)))
		free(p);
	return NULL;
}

int main(void)
{
	pthread_t t[2 * PAIRS];
	for (int i = 0; i < PAIRS; i++) {
		pthread_mutex_init(&q[i].mu, NULL);
		pthread_cond_init(&q[i].cv, NULL);
		pthread_create(&t[2 * i], NULL, producer, &q[i]);
		pthread_create(&t[2 * i + 1], NULL, consumer, &q[i]);
	}
	for (int i = 0; i < 2 * PAIRS; i++)
		pthread_join(t[i], NULL);
	printf("djprog: %d blocks handed over\n", PAIRS * ROUNDS);
	return 0;
}
