/* html_prog.c - something worth drawing for tests/html: three phases
 * separated by markers, a growing and shrinking heap, worker threads with
 * different call rates, blocks of many sizes and lifetimes, and leaks. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloctrace.h"

#define NTHREADS 3

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static void *worker(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg;
	void *keep[64] = {0};
	for (unsigned i = 0; i < 4000u * (id + 1); i++) {
		unsigned k = i % 64;
		free(keep[k]);
		keep[k] = malloc(8 + (i * 37 + id) % 3000);
		if (i % 500 == 0)
			sleep_ms(1);
	}
	for (unsigned k = 0; k < 64; k++)
		free(keep[k]);
	return NULL;
}

__attribute__((noinline)) static void *grow(size_t n)
{
	return malloc(n);
}

static void *volatile leaked[10];

__attribute__((noinline)) static void leak_some(void)
{
	for (int i = 0; i < 10; i++)
		leaked[i] = malloc(1000 + (size_t)i); /* never freed: 10,045 bytes */
}

int main(void)
{
	alloctrace_marker("phase-1: grow");
	void *big[200];
	for (int i = 0; i < 200; i++) {
		big[i] = grow((size_t)(i + 1) * 1024);
		memset(big[i], 1, 16);
		if (i % 20 == 0)
			sleep_ms(2);
	}
	alloctrace_marker("phase-2: threads");
	pthread_t th[NTHREADS];
	for (unsigned t = 0; t < NTHREADS; t++)
		pthread_create(&th[t], NULL, worker, (void *)(uintptr_t)t);
	for (unsigned t = 0; t < NTHREADS; t++)
		pthread_join(th[t], NULL);
	alloctrace_marker("phase-3: shrink");
	for (int i = 199; i >= 0; i--) {
		free(big[i]);
		if (i % 40 == 0)
			sleep_ms(2);
	}
	leak_some();
	puts("html_prog done");
	return 0;
}
