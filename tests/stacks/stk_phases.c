/* stk_phases: two threads and markers for the filter tests
 * (tests/stacks/test_stacks.py "filters").
 *
 *   marker "start"
 *   main -> p1 -> malloc(100)        10 times, leaked
 *   marker "phase 2"
 *   thread 2: worker -> malloc(200)  20 times, each freed at once
 *   main -> p3 -> malloc(300)        30 times, leaked
 *   marker "end"
 *   main -> p4 -> malloc(50)          5 times, leaked
 *
 * Built -O0 -fno-inline -g like stk_prog.
 */
#include <alloctrace.h>
#include <pthread.h>
#include <stdlib.h>

static void *keep[64];

void p1(void);
void p3(void);
void p4(void);
void *worker(void *arg);

void p1(void)
{
	for (int i = 0; i < 10; i++)
		keep[i] = malloc(100);
}

void *worker(void *arg)
{
	for (int i = 0; i < 20; i++)
		free(malloc(200));
	return arg;
}

void p3(void)
{
	for (int i = 0; i < 30; i++)
		keep[10 + i] = malloc(300);
}

void p4(void)
{
	for (int i = 0; i < 5; i++)
		keep[40 + i] = malloc(50);
}

int main(void)
{
	pthread_t t;
	alloctrace_marker("start");
	p1();
	alloctrace_marker("phase 2");
	if (pthread_create(&t, NULL, worker, NULL) != 0 || pthread_join(t, NULL) != 0)
		return 1;
	p3();
	alloctrace_marker("end");
	p4();
	return keep[0] == keep[1];
}
