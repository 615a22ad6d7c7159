/* out_compare.h - `alloctrace compare`'s measurements (one column per
 * allocator, one value per run and metric) and the HTML page written from
 * them (out_compare.c). */
#ifndef OUT_COMPARE_H
#define OUT_COMPARE_H

#include <stddef.h>
#include <stdint.h>

#include "atr_err.h"

enum {
	CMP_M_WALL,
	CMP_M_CPU,
	CMP_M_CALLS,
	CMP_M_RSS,
	CMP_M_RSS_END,
	CMP_M_MALLOC,
	CMP_M_CALLOC,
	CMP_M_REALLOC,
	CMP_M_FREE,
	CMP_M_OTHER,
	CMP_NMETRIC
};
extern const char *const out_compare_metric_name[CMP_NMETRIC]; /* for people */
extern const char *const out_compare_metric_key[CMP_NMETRIC];  /* JSON keys */

struct out_compare_col {
	char *spec, *name;
	char *timeline; /* --html: RSS samples of the first run */
	char *tun[16];
	int ntun;
	double *v[CMP_NMETRIC]; /* runs */
	uint64_t count[4];
	double ideal_mib;      /* the workload's ideal RSS */
	double trace_ms;       /* the traced run, first to last record */
	double traced_rss_mib; /* the traced program's Max RSS; 0 unknown */
	double wait_ms;	       /* the replays' waits for other threads' ops, summed over runs */
	double think_ms;       /* think time spent, summed over runs */
	char verdict[256];     /* rp_verdict_line: "NAME: -9% time (+-2%), +14% Max RSS" */
};

/* Median, min and max of n (1..256) values. */
void out_compare_stats(const double *v, int n, double *med, double *mn, double *mx);

/* The verdict's ideal-RSS clause for the first column: "the floor (ideal
 * RSS) is N MiB", or, when the column's median Max RSS is below it (live
 * blocks with pages never written), a clause that says so.  Into buf. */
const char *out_compare_ideal_text(const struct out_compare_col *c0, int runs, char *buf,
				   size_t len);

/* When the first column's replay took more than 1.5x the traced run, and
 * 20 ms more (think time on), a caution that its time ratios may not hold for this
 * program, into buf; else NULL (bench/fidelity/RESULTS.md: python-threads). */
const char *out_compare_caution_text(const struct out_compare_col *c0, int runs, char *buf,
				     size_t len);

/* compare --html: one page, inline SVG, no script.  0, or ATR_E_IO /
 * ATR_E_WRITE with the message (path and cause) in errbuf. */
int out_compare_write_html(const char *path, const char *wl, struct out_compare_col *cols, int ncol,
			   int runs, char *errbuf, size_t errlen);

#endif
