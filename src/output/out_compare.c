/* out_compare.c - `alloctrace compare --html` and compare's statistics
 * (out_compare.h). */
#define _GNU_SOURCE
#include "output/out_compare.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util_fmt.h"

const char *const out_compare_metric_name[CMP_NMETRIC] = {
    "wall time (ms)",	    "thread CPU time (ms)",  "total call time (Mcycles)",
    "max RSS (MiB)",	    "RSS at end (MiB)",	     "malloc (cycles/call)",
    "calloc (cycles/call)", "realloc (cycles/call)", "free (cycles/call)",
    "others (cycles/call)"};
const char *const out_compare_metric_key[CMP_NMETRIC] = {
    "wall_ms",	     "thread_cpu_ms", "call_mcycles",	"max_rss_mib", "rss_end_mib",
    "malloc_cycles", "calloc_cycles", "realloc_cycles", "free_cycles", "other_cycles"};

static int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

void out_compare_stats(const double *v, int n, double *med, double *mn, double *mx)
{
	double s[256];
	for (int i = 0; i < n; i++)
		s[i] = v[i];
	qsort(s, (size_t)n, sizeof(double), cmpd);
	*mn = s[0];
	*mx = s[n - 1];
	*med = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

const char *out_compare_caution_text(const struct out_compare_col *c0, int runs, char *buf,
				     size_t len)
{
	double med, mn, mx;
	out_compare_stats(c0->v[CMP_M_WALL], runs, &med, &mn, &mx);
	/* a short run's replay is mostly the threads' start: 20 ms of slack */
	if (c0->trace_ms <= 0 || c0->think_ms <= 0 || med <= 1.5 * c0->trace_ms ||
	    med - c0->trace_ms < 20)
		return NULL;
	snprintf(buf, len,
		 "caution: under %s the replay took %.1fx the traced run (%.0f ms) and its threads "
		 "spent %.0f ms waiting for one another's ops: the time changes above may not hold "
		 "for this program",
		 c0->spec, med / c0->trace_ms, c0->trace_ms, c0->wait_ms / runs);
	return buf;
}

const char *out_compare_ideal_text(const struct out_compare_col *c0, int runs, char *buf,
				   size_t len)
{
	double med, mn, mx;
	out_compare_stats(c0->v[CMP_M_RSS], runs, &med, &mn, &mx);
	if (med < c0->ideal_mib)
		snprintf(buf, len,
			 "ideal RSS (live bytes at their peak) %.1f MiB, above it: pages of live "
			 "blocks never written are not resident",
			 c0->ideal_mib);
	else
		snprintf(buf, len, "the floor (ideal RSS) is %.1f MiB", c0->ideal_mib);
	return buf;
}

/* ---- compare --html: one page, inline SVG, no script ------------------- */

static const char *const palette[] = {"#3366cc", "#dc3912", "#109618", "#ff9900",
				      "#990099", "#0099c6", "#dd4477", "#66aa00"};

/* Horizontal bars: median per allocator, min-max whisker, ratio to the
 * first column. */
static void html_bars(FILE *o, struct out_compare_col *cols, int ncol, int runs, int m)
{
	double med[32], mn[32], mx[32], top = 0;
	for (int k = 0; k < ncol; k++) {
		out_compare_stats(cols[k].v[m], runs, &med[k], &mn[k], &mx[k]);
		if (mx[k] > top)
			top = mx[k];
	}
	if (top <= 0)
		return;
	int h = 30 + ncol * 26;
	fprintf(o, "<h3>");
	util_fputs_html(o, out_compare_metric_name[m], SIZE_MAX);
	fprintf(o, "</h3>\n<svg class=\"bars\" data-metric=\"%s\" width=\"800\" height=\"%d\">\n",
		out_compare_metric_key[m], h);
	for (int k = 0; k < ncol; k++) {
		double sc = 440.0 / top;
		int y = 10 + k * 26;
		fprintf(o, "<text x=\"0\" y=\"%d\">", y + 14);
		util_fputs_html(o, cols[k].spec, SIZE_MAX);
		fprintf(
		    o,
		    "</text><rect class=\"bar\" x=\"200\" y=\"%d\" width=\"%.1f\" height=\"18\" "
		    "fill=\"%s\"><title>median %.3f (min %.3f, max %.3f)</title></rect>",
		    y, med[k] * sc, palette[k % 8], med[k], mn[k], mx[k]);
		fprintf(o, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#000\"/>",
			200 + mn[k] * sc, 200 + mx[k] * sc, y + 9, y + 9);
		fprintf(o, "<text x=\"%.1f\" y=\"%d\">%.1f  x%.2f</text>\n", 206 + mx[k] * sc,
			y + 14, med[k], med[0] > 0 ? med[k] / med[0] : 0.0);
	}
	fputs("</svg>\n", o);
}

/* RSS over time of each allocator's first run (replay --timeline lines:
 * "ms vmsize_kb rss_kb ideal_kb"), overlaid, ideal RSS dashed. */
static void html_timelines(FILE *o, struct out_compare_col *cols, int ncol)
{
	double *t[32] = {0}, *r[32] = {0}, *id[32] = {0}, tmax = 0, rmax = 0;
	size_t n[32] = {0};
	for (int k = 0; k < ncol; k++) {
		FILE *f = cols[k].timeline ? fopen(cols[k].timeline, "r") : NULL;
		size_t cap = 0;
		double ms, vs, rs, is;
		char line[256];
		while (f && fgets(line, sizeof(line), f)) {
			if (sscanf(line, "%lf %lf %lf %lf", &ms, &vs, &rs, &is) != 4)
				continue; /* the "# ms vmsize_kb ..." header */
			if (n[k] == cap) {
				cap = cap ? cap * 2 : 256;
				double *a = realloc(t[k], cap * sizeof(double));
				double *b = realloc(r[k], cap * sizeof(double));
				double *c = realloc(id[k], cap * sizeof(double));
				if (a)
					t[k] = a;
				if (b)
					r[k] = b;
				if (c)
					id[k] = c;
				if (!a || !b || !c)
					break;
			}
			t[k][n[k]] = ms;
			r[k][n[k]] = rs / 1024.0;
			id[k][n[k]] = is / 1024.0;
			if (ms > tmax)
				tmax = ms;
			if (rs / 1024.0 > rmax)
				rmax = rs / 1024.0;
			n[k]++;
		}
		if (f)
			fclose(f);
	}
	fputs("<h3>RSS over time (first run of each allocator; dashed: ideal RSS)</h3>\n", o);
	if (tmax <= 0 || rmax <= 0) {
		fputs("<p>no RSS samples (runs shorter than one 10 ms sample)</p>\n", o);
	} else {
		fprintf(o,
			"<svg class=\"rss\" width=\"760\" height=\"320\">"
			"<line x1=\"60\" y1=\"290\" x2=\"740\" y2=\"290\" stroke=\"#888\"/>"
			"<line x1=\"60\" y1=\"10\" x2=\"60\" y2=\"290\" stroke=\"#888\"/>"
			"<text x=\"0\" y=\"20\">%.0f MiB</text><text x=\"0\" y=\"290\">0</text>"
			"<text x=\"700\" y=\"310\">%.0f ms</text>\n",
			rmax, tmax);
		for (int k = 0; k < ncol; k++) {
			if (!n[k])
				continue;
			for (int pass = 0; pass < 2; pass++) {
				fprintf(o,
					"<polyline class=\"%s\" fill=\"none\" stroke=\"%s\"%s "
					"points=\"",
					pass ? "ideal" : "line", palette[k % 8],
					pass ? " stroke-dasharray=\"4 3\" stroke-width=\"1\""
					     : " stroke-width=\"2\"");
				/* at most ~700 points: one per pixel column */
				size_t step = n[k] / 700 + 1;
				for (size_t i = 0; i < n[k]; i += step)
					fprintf(o, "%.1f,%.1f ", 60 + t[k][i] / tmax * 680,
						290 - (pass ? id[k][i] : r[k][i]) / rmax * 280);
				fputs("\"/>\n", o);
			}
		}
		fputs("</svg>\n<p>", o);
		for (int k = 0; k < ncol; k++) {
			fprintf(o, "<span style=\"color:%s\">&#9632; ", palette[k % 8]);
			util_fputs_html(o, cols[k].spec, SIZE_MAX);
			fputs("</span> &nbsp; ", o);
		}
		fputs("</p>\n", o);
	}
	for (int k = 0; k < ncol; k++) {
		free(t[k]);
		free(r[k]);
		free(id[k]);
	}
}

int out_compare_write_html(const char *path, const char *wl, struct out_compare_col *cols, int ncol,
			   int runs, char *eb, size_t el)
{
	FILE *o = fopen(path, "w");
	if (!o) {
		snprintf(eb, el, "%s: %s", path, strerror(errno));
		return ATR_E_IO;
	}
	fputs(
	    "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>alloctrace compare</title>"
	    "<style>body{font-family:sans-serif;margin:2em;max-width:900px}"
	    "svg text{font-size:12px;font-family:monospace}table{border-collapse:collapse}"
	    "td,th{padding:3px 8px;border-bottom:1px solid #ddd;text-align:right}"
	    "td:first-child,th:first-child{text-align:left}</style></head><body>\n"
	    "<h1>alloctrace compare</h1>\n<p>workload ",
	    o);
	util_fputs_html(o, wl, SIZE_MAX);
	fprintf(o, ", %d run%s per allocator; bars: median, whisker: min-max, xN: ratio to ", runs,
		runs == 1 ? "" : "s");
	util_fputs_html(o, cols[0].spec, SIZE_MAX);
	fputs("</p>\n", o);
	fputs("<h2>Verdict</h2>\n<p>predicted run time (replay wall time, think time included) and "
	      "Max RSS "
	      "against ",
	      o);
	util_fputs_html(o, cols[0].spec, SIZE_MAX);
	char ideal[160];
	fputs("; ", o);
	util_fputs_html(o, out_compare_ideal_text(&cols[0], runs, ideal, sizeof(ideal)), SIZE_MAX);
	if (cols[0].traced_rss_mib > 0)
		fprintf(o,
			"; Max RSS predicted for the program: the traced program's %.1f MiB "
			"(without the tracer's own memory) plus the replay's change (the bars "
			"below are the replay's own)",
			cols[0].traced_rss_mib);
	fputs("</p>\n<ul class=\"verdict\">\n", o);
	for (int k = 1; k < ncol; k++) {
		fputs("<li>", o);
		util_fputs_html(o, cols[k].verdict, SIZE_MAX);
		fputs("</li>\n", o);
	}
	fputs("</ul>\n", o);
	char caution[400];
	if (out_compare_caution_text(&cols[0], runs, caution, sizeof(caution))) {
		fputs("<p>", o);
		util_fputs_html(o, caution, SIZE_MAX);
		fputs("</p>\n", o);
	}
	static const int shown[] = {CMP_M_WALL, CMP_M_CPU, CMP_M_CALLS, CMP_M_RSS};
	for (size_t i = 0; i < sizeof(shown) / sizeof(shown[0]); i++)
		html_bars(o, cols, ncol, runs, shown[i]);
	html_timelines(o, cols, ncol);
	fputs("<h3>All metrics (median)</h3>\n<table><tr><th></th>", o);
	for (int k = 0; k < ncol; k++) {
		fputs("<th>", o);
		util_fputs_html(o, cols[k].spec, SIZE_MAX);
		fputs("</th>", o);
	}
	fputs("</tr>\n", o);
	for (int m = 0; m < CMP_NMETRIC; m++) {
		fputs("<tr><td>", o);
		util_fputs_html(o, out_compare_metric_name[m], SIZE_MAX);
		fputs("</td>", o);
		for (int k = 0; k < ncol; k++) {
			double med, mn, mx;
			out_compare_stats(cols[k].v[m], runs, &med, &mn, &mx);
			fprintf(o, "<td>%.1f</td>", med);
		}
		fputs("</tr>\n", o);
	}
	fputs("</table>\n</body></html>\n", o);
	if (fclose(o) != 0) {
		snprintf(eb, el, "%s: write error", path);
		return ATR_E_WRITE;
	}
	return 0;
}
