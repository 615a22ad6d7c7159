/* killme.c - allocates until killed.  Each iteration is one malloc and one
 * free; after every REPORT iterations it appends "ITER n" to OUTFILE with
 * write(2), after the calls, so the driver knows at least n of each are in
 * the trace when it sends SIGKILL.  The first line is "PID n".  Gives up by
 * itself after 30 s.  With ITERS it stops after that many iterations and
 * prints its expectation line (progs.h) instead.
 *
 * With "thread" after ITERS (0: until killed) a second thread that only
 * sleeps is started first: the process is multi-threaded, so the tracer
 * hands full blocks to its encoder thread (atp_offload.c).
 *
 * usage: killme OUTFILE [ITERS [thread]]
 */
#include "progs.h"

#include <fcntl.h>
#include <pthread.h>
#include <time.h>

#define REPORT 1000

static void *idle(void *arg)
{
	(void)arg;
	for (;;) {
		struct timespec ts = {1, 0};
		nanosleep(&ts, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	prog_name = "killme";
	if (argc < 2 || argc > 4 || (argc == 4 && strcmp(argv[3], "thread") != 0))
		die("usage: killme OUTFILE [ITERS [thread]]");
	pthread_t th;
	if (argc == 4 && pthread_create(&th, NULL, idle, NULL) != 0)
		die("pthread_create failed");
	unsigned long iters = argc >= 3 ? strtoul(argv[2], NULL, 10) : 0;
	int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
	if (fd < 0)
		die("open %s: %s", argv[1], strerror(errno));
	char line[64];
	int n = snprintf(line, sizeof line, "PID %d\n", (int)getpid());
	write_all(fd, line, (size_t)n);

	time_t start = time(NULL);
	for (unsigned long i = 1; !iters || i <= iters; i++) {
		void *p = t_malloc(16 + i % 1000);
		CHECK(p);
		t_free(p);
		if (i % REPORT == 0) {
			n = snprintf(line, sizeof line, "ITER %lu\n", i);
			write_all(fd, line, (size_t)n);
			/* ~1000 iterations a millisecond: a few MB of trace */
			struct timespec ts = {0, 1000000};
			nanosleep(&ts, NULL);
			if (time(NULL) - start > 30)
				die("not %s within 30 s", iters ? "done" : "killed");
		}
	}
	expect_print(NULL);
	return 0;
}
