/* attach_fp.c - floating-point state across `record -p` (test_attach.py,
 * case fpu).  The same long chain of double arithmetic runs twice, the
 * second time while being attached to; its values live in SSE registers
 * the whole time, so a remote call that did not restore them would change
 * the result.  "ready" on stdout between the two; exit 0 if the results
 * are bit-identical.  usage: attach_fp [ITERATIONS] */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static double spin(long n)
{
	double a = 1.0, b = 0.5, c = 0.25, d = 0.125;
	for (long i = 0; i < n; i++) {
		a = a * 0.9999999 + b * 1e-7;
		b = b * 0.99999991 + c * 1e-7;
		c = c * 0.9999998 + d * 1e-7;
		d = d * 0.9999997 + a * 1e-7;
	}
	return a + b + c + d;
}

int main(int argc, char **argv)
{
	volatile long n = argc > 1 ? atol(argv[1]) : 200000000L;
	void *p = malloc(16); /* bind malloc/free before the attach */
	free(p);
	double r1 = spin(n);
	printf("ready\n");
	fflush(stdout);
	double r2 = spin(n);
	if (r1 != r2) {
		fprintf(stderr, "attach_fp: %.17g != %.17g\n", r1, r2);
		return 1;
	}
	return 0;
}
