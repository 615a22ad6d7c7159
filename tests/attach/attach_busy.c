/* attach_busy.c - a single-threaded program that does nothing but malloc
 * and free (test_attach.py, case "single").  `record -p` mostly stops it
 * inside malloc, which takes no lock in a single-threaded process: the
 * remote dlopen must not run from there.  Each block carries its slot and
 * size in its head; exit status 0 only if all are intact at the end.
 * "ready" on stdout when the loop starts.  It runs until SIGUSR1 (so it
 * cannot end while `record -p` still steps it to a safe point on a loaded
 * machine), at most MAX_MS.  usage: attach_busy MAX_MS
 *
 * Built a second time -no-pie with ATT_TAKE_ADDRESS (attach_nopie, case
 * "nopie"): taking malloc's, free's and valloc's addresses in a non-PIE
 * program gives them canonical PLT entries (python3.11 on Debian is such a
 * program), which `record -p` must resolve to libc's functions and
 * redirect.  Every other call goes through those pointers; after SIGUSR2
 * each 1024th iteration also calls valloc, whose GOT entry is therefore
 * still unresolved (lazy binding) when `record -p` attaches.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define SLOTS 1024

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#ifdef ATT_TAKE_ADDRESS
/* taken in non-PIC code (an absolute address in an instruction), which is
 * what needs the canonical PLT entry; a data initializer would get a
 * dynamic relocation instead */
void *(*volatile att_malloc)(size_t);
void (*volatile att_free)(void *);
void *(*volatile att_valloc)(size_t);
#define ATT_MALLOC(n) ((i & 1) ? att_malloc(n) : malloc(n))
#define ATT_FREE(p)   ((i & 1) ? att_free(p) : free(p))
#else
#define ATT_MALLOC(n) malloc(n)
#define ATT_FREE(p)   free(p)
#endif

static volatile sig_atomic_t stop, use_valloc;

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		stop = 1;
	else
		use_valloc = 1;
}

int main(int argc, char **argv)
{
	static uint64_t *slot[SLOTS];
	static size_t size[SLOTS];
#ifdef ATT_TAKE_ADDRESS
	att_malloc = malloc;
	att_free = free;
	att_valloc = valloc;
#endif
	uint64_t run = (argc > 1 ? strtoull(argv[1], NULL, 10) : 1000) * 1000000ull;
	uint32_t x = 1;
	long bad = 0;
	uint64_t t0 = now_ns();
	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL) < 0 || sigaction(SIGUSR2, &sa, NULL) < 0)
		return 3;
	if (write(1, "ready\n", 6) != 6)
		return 3;
	for (unsigned long i = 0;; i++) {
		x = x * 1103515245u + 12345u;
		unsigned k = x % SLOTS;
		if (slot[k] && (slot[k][0] != k || slot[k][1] != size[k]))
			bad++;
		ATT_FREE(slot[k]);
		size[k] = 16 + (x >> 10) % 70000;
		slot[k] = ATT_MALLOC(size[k]);
		if (!slot[k])
			return 3;
		slot[k][0] = k;
		slot[k][1] = size[k];
#ifdef ATT_TAKE_ADDRESS
		if (use_valloc && (i & 1023) == 0)
			free(att_valloc(4096));
#endif
		if (stop || ((i & 1023) == 0 && now_ns() - t0 > run))
			break;
	}
	for (unsigned k = 0; k < SLOTS; k++) {
		if (slot[k] && (slot[k][0] != k || slot[k][1] != size[k]))
			bad++;
		free(slot[k]);
	}
	if (bad)
		fprintf(stderr, "attach_busy: %ld damaged blocks\n", bad);
	return bad ? 1 : 0;
}
