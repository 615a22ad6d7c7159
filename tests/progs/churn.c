/* churn.c - many short-lived threads, in waves: the tracer must keep exact
 * counts and reuse the staging blocks of exited threads (the trace stays
 * small).  Prints {"threads":N,"malloc":M,"free_own":F}: the program's own
 * malloc and free calls (glibc's thread bookkeeping adds callocs and frees
 * of its own, never mallocs).
 * usage: churn [WAVES] [PER_WAVE]   (default 50 waves of 20 threads) */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PER_THREAD 200

static volatile unsigned char sink;

static void *worker(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg;
	void *keep[8] = {0};
	for (unsigned i = 0; i < PER_THREAD; i++) {
		unsigned k = i % 8;
		free(keep[k]);
		keep[k] = malloc(16 + (i * 13 + id) % 700);
		if (!keep[k])
			abort();
		((volatile unsigned char *)keep[k])[0] = (unsigned char)i;
		sink = ((volatile unsigned char *)keep[k])[0];
	}
	for (unsigned k = 0; k < 8; k++)
		free(keep[k]);
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned waves = argc > 1 ? (unsigned)atoi(argv[1]) : 50;
	unsigned per = argc > 2 ? (unsigned)atoi(argv[2]) : 20;
	pthread_t th[256];
	pthread_attr_t attr;
	if (per > 256 || pthread_attr_init(&attr) || pthread_attr_setstacksize(&attr, 256 << 10))
		return 2;
	for (unsigned w = 0; w < waves; w++) {
		for (unsigned i = 0; i < per; i++)
			if (pthread_create(&th[i], &attr, worker, (void *)(uintptr_t)(w * per + i)))
				return 3;
		for (unsigned i = 0; i < per; i++)
			pthread_join(th[i], NULL);
	}
	/* own frees: PER_THREAD frees (the first 8 are free(NULL)) + 8 */
	char line[160];
	int n = snprintf(line, sizeof line, "{\"threads\":%u,\"malloc\":%u,\"free_own\":%u}\n",
			 waves * per + 1, waves * per * PER_THREAD, waves * per * (PER_THREAD + 8));
	if (write(1, line, (size_t)n) != n)
		return 4;
	return 0;
}
