/* attach_dl.c - loads MODULE with dlopen after LOAD_MS ms and calls its
 * malloc(777)/free pair every 0.5 ms until RUN_MS ms (test_attach.py, case
 * dlopen).  "ready" on stdout at the start; at the end the number of pairs
 * made, to stdout.  usage: attach_dl MODULE LOAD_MS RUN_MS */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int main(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	uint64_t load = strtoull(argv[2], NULL, 10), run = strtoull(argv[3], NULL, 10);
	void *(*mod_alloc)(void) = NULL;
	void (*mod_free)(void *) = NULL;
	long pairs = 0;
	uint64_t t0 = now_ms();
	printf("ready\n");
	fflush(stdout);
	while (now_ms() - t0 < run) {
		if (!mod_alloc && now_ms() - t0 >= load) {
			void *h = dlopen(argv[1], RTLD_NOW);
			if (!h) {
				fprintf(stderr, "attach_dl: %s\n", dlerror());
				return 3;
			}
			*(void **)&mod_alloc = dlsym(h, "attach_mod_alloc");
			*(void **)&mod_free = dlsym(h, "attach_mod_free");
			if (!mod_alloc || !mod_free)
				return 3;
		}
		if (mod_alloc) {
			void *p = mod_alloc();
			if (!p)
				return 3;
			mod_free(p);
			pairs++;
		}
		struct timespec ts = {0, 500000};
		nanosleep(&ts, NULL);
	}
	printf("%ld\n", pairs);
	return 0;
}
