/* rp_verdict.c - see rp_verdict.h. */
#include "replay/rp_verdict.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Median of the per-run ratios a[i]/b[i] (runs with b[i] <= 0 skipped)
 * and half their spread. */
static void ratios(const double *a, const double *b, int n, double *change, double *range)
{
	double *r = malloc(sizeof(*r) * (size_t)(n > 0 ? n : 1));
	int k = 0;
	for (int i = 0; r && i < n; i++)
		if (b[i] > 0)
			r[k++] = a[i] / b[i];
	*change = *range = 0;
	if (k) {
		double m = median(r, k); /* sorts r */
		*change = m - 1;
		*range = (r[k - 1] - r[0]) / 2;
	}
	free(r);
}

void rp_verdict_compute(const double *wall, const double *base_wall, const double *rss,
			const double *base_rss, int runs, double ideal_mib, double traced_mib,
			struct rp_verdict *v)
{
	double tmp[256];
	int n = runs < 256 ? runs : 256;
	v->runs = runs;
	for (int i = 0; i < n; i++)
		tmp[i] = wall[i];
	v->time_ms = n ? median(tmp, n) : 0;
	for (int i = 0; i < n; i++)
		tmp[i] = rss[i];
	v->replay_rss_mib = v->rss_mib = n ? median(tmp, n) : 0;
	double unused;
	ratios(wall, base_wall, n, &v->time_change, &v->time_range);
	ratios(rss, base_rss, n, &v->rss_change, &unused);
	v->rss_anchored = traced_mib > 0 && n > 0;
	if (v->rss_anchored) {
		for (int i = 0; i < n; i++)
			tmp[i] = rss[i] - base_rss[i];
		double d = median(tmp, n);
		v->rss_mib = traced_mib + d;
		v->rss_change = d / traced_mib;
	}
	v->ideal_mib = ideal_mib;
}

/* A percentage rounded to an integer, signed; never "-0". */
static long pct(double x)
{
	long p = lround(x * 100);
	return p == 0 ? 0 : p;
}

int rp_verdict_line(char *buf, size_t len, const char *name, const struct rp_verdict *v)
{
	if (v->runs > 1)
		return snprintf(buf, len, "%s: %+ld%% time (+-%ld%%), %+ld%% Max RSS", name,
				pct(v->time_change), labs(pct(v->time_range)), pct(v->rss_change));
	return snprintf(buf, len, "%s: %+ld%% time (1 run: no range), %+ld%% Max RSS", name,
			pct(v->time_change), pct(v->rss_change));
}
