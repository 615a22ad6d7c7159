/* attach_x.c - a target of `alloctrace record -p` that makes the other
 * traced calls (test_attach.py, case "xcalls"): in a loop until SIGUSR1,
 * mmap (every other one through mmap64, which has its own GOT entry) and
 * munmap of 64 KiB, malloc_usable_size of a block, and every 16th
 * iteration mallopt(M_TRIM_THRESHOLD) and malloc_trim(0).  "ready" on
 * stdout when the loop starts; at the end one line of counts:
 * "mmap N munmap N usable N mallopt N trim N".  usage: attach_x MAX_MS
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int main(int argc, char **argv)
{
	uint64_t max_ms = argc > 1 ? strtoull(argv[1], NULL, 10) : 20000, end = now_ms() + max_ms;
	unsigned long n_mmap = 0, n_munmap = 0, n_usable = 0, n_mallopt = 0, n_trim = 0;
	signal(SIGUSR1, on_signal);
	void *blk = malloc(100);
	printf("ready\n");
	fflush(stdout);
	for (unsigned i = 0; !stop && now_ms() < end; i++) {
		void *p = i & 1 ? mmap64(NULL, 65536, PROT_READ | PROT_WRITE,
					 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
				: mmap(NULL, 65536, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return 1;
		n_mmap++;
		((volatile char *)p)[0] = 1;
		if (munmap(p, 65536) != 0)
			return 1;
		n_munmap++;
		if (malloc_usable_size(blk) < 100)
			return 1;
		n_usable++;
		if (i % 16 == 0) {
			mallopt(M_TRIM_THRESHOLD, 256 << 10);
			malloc_trim(0);
			n_mallopt++;
			n_trim++;
		}
		usleep(100);
	}
	free(blk);
	printf("mmap %lu munmap %lu usable %lu mallopt %lu trim %lu\n", n_mmap, n_munmap, n_usable,
	       n_mallopt, n_trim);
	return 0;
}
