/* util_progress.c - see util_progress.h. */
#include "util_progress.h"
#include "plat_clock.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

void util_progress_start(struct util_progress *p, const char *label, uint64_t total)
{
	p->label = label;
	p->total = total;
	p->t0 = p->last = plat_mono_s();
	p->on = isatty(2) && !getenv("ALLOCTRACE_NO_PROGRESS");
}

void util_progress_show(struct util_progress *p, uint64_t done)
{
	double t = plat_mono_s();
	if (t - p->last < 0.5)
		return;
	p->last = t;
	double rate = (double)done / (t - p->t0) / 1e6;
	if (p->total)
		fprintf(stderr, "\r%s: %" PRIu64 " records (%.0f%%), %.1f M/s   ", p->label, done,
			100.0 * (double)done / (double)p->total, rate);
	else
		fprintf(stderr, "\r%s: %" PRIu64 " records, %.1f M/s   ", p->label, done, rate);
}

void util_progress_done(struct util_progress *p)
{
	if (p->on && p->last > p->t0)
		fprintf(stderr, "\r%70s\r", "");
}
