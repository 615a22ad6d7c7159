/* rp_dj.h - replaying glibc dj/malloc workloads and printing dj's layout
 * (docs/DJ_COMPAT.md). */
#ifndef RP_DJ_H
#define RP_DJ_H

#include <stddef.h>
#include <stdio.h>

#include "dj_workload.h"
#include "replay/rp_replay.h"

/* If path is not an alloctrace workload, translate it as a dj workload
 * into a temporary alloctrace workload (in a forked child: its memory does
 * not count in the replay's max RSS) and put that file's path in tmp.
 * 1 translated (the caller unlinks tmp), 0 an alloctrace workload (tmp
 * untouched), -1 error (errbuf: neither format, or what is wrong). */
int rp_dj_prepare(const char *path, char *tmp, size_t tmplen, struct dj_wl_stats *st, char *errbuf,
		  size_t errlen);

/* dj's trace_run stdout, 13 lines: cycles, usec wall time, usec across N
 * threads, Kb Max RSS, Kb Max Ideal RSS, blank, sizeof ticks_t, Avg malloc
 * / calloc / realloc / free time, Total call time, blank. */
void rp_dj_print(FILE *out, const struct rp_result *r);
/* dj's number format: %lld with a comma before every group of 3 digits. */
char *rp_dj_comma(char *buf, size_t len, long long v);

#endif
