/* wakeup.c - how long a thread asleep on a condition variable takes to run
 * again after another thread signals it: the cost convert's pipe pays
 * each time one side sleeps (src/replay/rp_pipe.c).
 *
 * Two threads pinned on CPUs 0 and 1.  Each round the sleeper waits on a
 * condition variable; the waker spins IDLE_US (its core busy, the
 * sleeper's idle, as in the pipe), stamps the clock and signals; the
 * sleeper stamps the clock when it runs.  Prints the median, 90th and
 * 99th percentiles and the maximum of those delays.
 *
 *   gcc -O2 -pthread -o wakeup bench/replay/wakeup.c
 *   ./wakeup [ROUNDS (2000)] [IDLE_US (500)]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int turn;	 /* 1: the sleeper may run; guarded by mu */
static int asleep;	 /* the sleeper is waiting; guarded by mu */
static double signalled; /* when the waker signalled; guarded by mu */
static int rounds;
static double *delay_us;

static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

static void pin(int cpu)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	pthread_setaffinity_np(pthread_self(), sizeof(s), &s);
}

static void *sleeper(void *arg)
{
	(void)arg;
	pin(1);
	for (int r = 0; r < rounds; r++) {
		pthread_mutex_lock(&mu);
		asleep = 1;
		while (!turn)
			pthread_cond_wait(&cv, &mu);
		delay_us[r] = now_us() - signalled;
		turn = 0;
		pthread_mutex_unlock(&mu);
	}
	return NULL;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	rounds = argc > 1 ? atoi(argv[1]) : 2000;
	double idle = argc > 2 ? atof(argv[2]) : 500;
	if (rounds < 1 || idle < 0) {
		fprintf(stderr, "usage: %s [ROUNDS] [IDLE_US]\n", argv[0]);
		return 2;
	}
	delay_us = calloc((size_t)rounds, sizeof(*delay_us));
	if (!delay_us)
		return 1;
	pin(0);
	pthread_t th;
	if (pthread_create(&th, NULL, sleeper, NULL))
		return 1;
	for (int r = 0; r < rounds; r++) {
		for (;;) { /* the sleeper is back in its wait */
			pthread_mutex_lock(&mu);
			int ready = asleep && !turn;
			pthread_mutex_unlock(&mu);
			if (ready)
				break;
		}
		double until = now_us() + idle;
		while (now_us() < until)
			;
		pthread_mutex_lock(&mu);
		asleep = 0;
		turn = 1;
		signalled = now_us();
		pthread_cond_signal(&cv);
		pthread_mutex_unlock(&mu);
	}
	pthread_join(th, NULL);
	qsort(delay_us, (size_t)rounds, sizeof(*delay_us), cmp);
	printf("wake-up after %.0f us idle, %d rounds: median %.1f us, p90 %.1f us, p99 %.1f us, "
	       "max %.1f us\n",
	       idle, rounds, delay_us[rounds / 2], delay_us[rounds * 9 / 10],
	       delay_us[rounds * 99 / 100], delay_us[rounds - 1]);
	return 0;
}
