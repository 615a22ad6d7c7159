/* compare.c - `alloctrace compare WORKLOAD --allocators A,B,... [--runs N]`.
 *
 * Each allocator spec is NAME[+glibc.malloc.TUNABLE=VALUE...]; every run is
 * a separate `alloctrace replay --kv` process (fresh heap, fresh RSS).  Runs
 * are interleaved (A B C, A B C, ...) so drift hits every column alike. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmds/cmds.h"
#include "util_fmt.h"
#include "util_json.h"
#include "util_msg.h"

enum { M_WALL, M_CPU, M_CALLS, M_RSS, M_RSS_END, M_MALLOC, M_CALLOC, M_REALLOC, M_FREE, M_OTHER, NMETRIC };
static const char *const m_name[NMETRIC] = {"wall time (ms)",  "thread CPU time (ms)", "total call time (Mcycles)", "max RSS (MiB)",
					    "RSS at end (MiB)", "malloc (cycles/call)",	"calloc (cycles/call)",
					    "realloc (cycles/call)", "free (cycles/call)", "others (cycles/call)"};
static const char *const m_key[NMETRIC] = {"wall_ms",	   "thread_cpu_ms", "call_mcycles",    "max_rss_mib",
					   "rss_end_mib", "malloc_cycles", "calloc_cycles",
					   "realloc_cycles", "free_cycles", "other_cycles"};

struct col {
	char *spec, *name;
	char *timeline; /* --html: RSS samples of the first run */
	char *tun[16];
	int ntun;
	double *v[NMETRIC]; /* runs */
	uint64_t count[4];
};

static void compare_usage(FILE *out)
{
	fprintf(out, "usage: alloctrace compare WORKLOAD --allocators A,B,... [--runs N] [--touch M]\n"
		     "                          [--trim-interval N] [--timing serial|fast|off] [--json]\n"
		     "                          [--html FILE]\n"
		     "Replay WORKLOAD N times (default 3) under each allocator and print medians\n"
		     "(min-max) and ratios against the first column.  An allocator is glibc,\n"
		     "jemalloc, tcmalloc, mimalloc, PATH.so or none, optionally with glibc tunables:\n"
		     "  glibc+glibc.malloc.arena_max=1+glibc.malloc.trim_threshold=0\n"
		     "--html FILE also writes a self-contained page: bars of time and RSS per\n"
		     "allocator (median, min-max) and the RSS of each allocator's first run\n"
		     "over time.\n");
}

static int run_one(const char *wl, struct col *c, const char *touch, const char *trim, const char *timing,
		   const char *timeline, double *out)
{
	int pfd[2];
	if (pipe(pfd) < 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		close(pfd[0]);
		dup2(pfd[1], 1);
		close(pfd[1]);
		char *av[64];
		int n = 0;
		av[n++] = (char *)"alloctrace";
		av[n++] = (char *)"replay";
		av[n++] = (char *)wl;
		av[n++] = (char *)"--allocator";
		av[n++] = c->name;
		for (int i = 0; i < c->ntun; i++) {
			av[n++] = (char *)"--tunable";
			av[n++] = c->tun[i];
		}
		if (touch) {
			av[n++] = (char *)"--touch";
			av[n++] = (char *)touch;
		}
		if (trim) {
			av[n++] = (char *)"--trim-interval";
			av[n++] = (char *)trim;
		}
		if (timing) {
			av[n++] = (char *)"--timing";
			av[n++] = (char *)timing;
		}
		if (timeline) {
			av[n++] = (char *)"--timeline";
			av[n++] = (char *)timeline;
		}
		av[n++] = (char *)"--kv";
		av[n] = NULL;
		unsetenv("ALLOCTRACE_REPLAY_CHILD");
		execv("/proc/self/exe", av);
		_exit(127);
	}
	close(pfd[1]);
	FILE *f = fdopen(pfd[0], "r");
	char key[64];
	unsigned long long v;
	double other = 0, other_n = 0;
	for (int i = 0; i < NMETRIC; i++)
		out[i] = 0;
	while (f && fscanf(f, "%63s %llu", key, &v) == 2) {
		if (!strcmp(key, "wall_us"))
			out[M_WALL] = (double)v / 1000.0;
		else if (!strcmp(key, "thread_cpu_us"))
			out[M_CPU] = (double)v / 1000.0;
		else if (!strcmp(key, "total_call_cycles"))
			out[M_CALLS] = (double)v / 1e6;
		else if (!strcmp(key, "max_rss_kb"))
			out[M_RSS] = (double)v / 1024.0;
		else if (!strcmp(key, "rss_end_kb"))
			out[M_RSS_END] = (double)v / 1024.0;
		else if (!strcmp(key, "avg_malloc"))
			out[M_MALLOC] = (double)v;
		else if (!strcmp(key, "avg_calloc"))
			out[M_CALLOC] = (double)v;
		else if (!strcmp(key, "avg_realloc"))
			out[M_REALLOC] = (double)v;
		else if (!strcmp(key, "avg_free"))
			out[M_FREE] = (double)v;
		else if (!strncmp(key, "avg_", 4))
			other += (double)v, other_n++;
		else if (!strcmp(key, "count_malloc"))
			c->count[0] = v;
		else if (!strcmp(key, "count_calloc"))
			c->count[1] = v;
		else if (!strcmp(key, "count_realloc"))
			c->count[2] = v;
		else if (!strcmp(key, "count_free"))
			c->count[3] = v;
	}
	(void)other_n;
	out[M_OTHER] = other;
	if (f)
		fclose(f);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void stats(const double *v, int n, double *med, double *mn, double *mx)
{
	double s[256];
	for (int i = 0; i < n; i++)
		s[i] = v[i];
	qsort(s, (size_t)n, sizeof(double), cmpd);
	*mn = s[0];
	*mx = s[n - 1];
	*med = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* ---- compare --html: one page, inline SVG, no script ------------------- */

static const char *const palette[] = {"#3366cc", "#dc3912", "#109618", "#ff9900",
				      "#990099", "#0099c6", "#dd4477", "#66aa00"};

/* Horizontal bars: median per allocator, min-max whisker, ratio to the
 * first column. */
static void html_bars(FILE *o, struct col *cols, int ncol, int runs, int m)
{
	double med[32], mn[32], mx[32], top = 0;
	for (int k = 0; k < ncol; k++) {
		stats(cols[k].v[m], runs, &med[k], &mn[k], &mx[k]);
		if (mx[k] > top)
			top = mx[k];
	}
	if (top <= 0)
		return;
	int h = 30 + ncol * 26;
	fprintf(o, "<h3>");
	util_fputs_html(o, m_name[m], SIZE_MAX);
	fprintf(o, "</h3>\n<svg class=\"bars\" data-metric=\"%s\" width=\"800\" height=\"%d\">\n",
		m_key[m], h);
	for (int k = 0; k < ncol; k++) {
		double sc = 440.0 / top;
		int y = 10 + k * 26;
		fprintf(o, "<text x=\"0\" y=\"%d\">", y + 14);
		util_fputs_html(o, cols[k].spec, SIZE_MAX);
		fprintf(o, "</text><rect class=\"bar\" x=\"200\" y=\"%d\" width=\"%.1f\" height=\"18\" "
			   "fill=\"%s\"><title>median %.3f (min %.3f, max %.3f)</title></rect>",
			y, med[k] * sc, palette[k % 8], med[k], mn[k], mx[k]);
		fprintf(o, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#000\"/>",
			200 + mn[k] * sc, 200 + mx[k] * sc, y + 9, y + 9);
		fprintf(o, "<text x=\"%.1f\" y=\"%d\">%.1f  x%.2f</text>\n", 206 + mx[k] * sc, y + 14,
			med[k], med[0] > 0 ? med[k] / med[0] : 0.0);
	}
	fputs("</svg>\n", o);
}

/* RSS over time of each allocator's first run (replay --timeline lines:
 * "ms vmsize_kb rss_kb ideal_kb"), overlaid, ideal RSS dashed. */
static void html_timelines(FILE *o, struct col *cols, int ncol)
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
		fprintf(o, "<svg class=\"rss\" width=\"760\" height=\"320\">"
			   "<line x1=\"60\" y1=\"290\" x2=\"740\" y2=\"290\" stroke=\"#888\"/>"
			   "<line x1=\"60\" y1=\"10\" x2=\"60\" y2=\"290\" stroke=\"#888\"/>"
			   "<text x=\"0\" y=\"20\">%.0f MiB</text><text x=\"0\" y=\"290\">0</text>"
			   "<text x=\"700\" y=\"310\">%.0f ms</text>\n",
			rmax, tmax);
		for (int k = 0; k < ncol; k++) {
			if (!n[k])
				continue;
			for (int pass = 0; pass < 2; pass++) {
				fprintf(o, "<polyline class=\"%s\" fill=\"none\" stroke=\"%s\"%s points=\"",
					pass ? "ideal" : "line", palette[k % 8],
					pass ? " stroke-dasharray=\"4 3\" stroke-width=\"1\"" : " stroke-width=\"2\"");
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

static int write_html(const char *path, const char *wl, struct col *cols, int ncol, int runs)
{
	FILE *o = fopen(path, "w");
	if (!o) {
		util_err("compare: %s: %s", path, strerror(errno));
		return 1;
	}
	fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>alloctrace compare</title>"
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
	static const int shown[] = {M_WALL, M_CPU, M_CALLS, M_RSS};
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
	for (int m = 0; m < NMETRIC; m++) {
		fputs("<tr><td>", o);
		util_fputs_html(o, m_name[m], SIZE_MAX);
		fputs("</td>", o);
		for (int k = 0; k < ncol; k++) {
			double med, mn, mx;
			stats(cols[k].v[m], runs, &med, &mn, &mx);
			fprintf(o, "<td>%.1f</td>", med);
		}
		fputs("</tr>\n", o);
	}
	fputs("</table>\n</body></html>\n", o);
	if (fclose(o) != 0) {
		util_err("compare: %s: write error", path);
		return 1;
	}
	return 0;
}

int cmd_compare(int argc, char **argv)
{
	static const struct option opts[] = {
		{"allocators", required_argument, NULL, 'a'}, {"runs", required_argument, NULL, 'r'},
		{"touch", required_argument, NULL, 't'},      {"trim-interval", required_argument, NULL, 'I'},
		{"timing", required_argument, NULL, 'm'},
		{"json", no_argument, NULL, 'j'},	      {"help", no_argument, NULL, 'h'},
		{"html", required_argument, NULL, 'H'},
		{NULL, 0, NULL, 0},
	};
	const char *list = "glibc,jemalloc,tcmalloc,mimalloc", *touch = NULL, *trim = NULL, *timing = NULL;
	const char *html = NULL;
	char tldir[] = "/tmp/alloctrace-compare.XXXXXX";
	int runs = 3, json = 0, c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "a:r:jh", opts, NULL)) != -1) {
		switch (c) {
		case 'a':
			list = optarg;
			break;
		case 'r':
			runs = atoi(optarg);
			if (runs < 1 || runs > 256) {
				util_err("compare: --runs must be 1..256");
				return 2;
			}
			break;
		case 't':
			touch = optarg;
			break;
		case 'I':
			trim = optarg;
			break;
		case 'm':
			timing = optarg;
			break;
		case 'j':
			json = 1;
			break;
		case 'H':
			html = optarg;
			break;
		case 'h':
			compare_usage(stdout);
			return 0;
		default:
			compare_usage(stderr);
			return 2;
		}
	}
	if (optind + 1 != argc) {
		util_err("compare: need exactly one WORKLOAD");
		compare_usage(stderr);
		return 2;
	}
	const char *wl = argv[optind];
	if (access(wl, R_OK) != 0) {
		util_err("compare: %s: %s", wl, strerror(errno));
		return 1;
	}
	struct col cols[32];
	int ncol = 0, rc = 0;
	char *dup = strdup(list), *save = NULL;
	if (!dup)
		util_die_nomem();
	for (char *t = strtok_r(dup, ",", &save); t && ncol < 32; t = strtok_r(NULL, ",", &save)) {
		struct col *co = &cols[ncol++];
		memset(co, 0, sizeof(*co));
		co->spec = t;
		char *s2 = strdup(t), *sv = NULL;
		co->name = strtok_r(s2, "+", &sv);
		for (char *u = strtok_r(NULL, "+", &sv); u && co->ntun < 16; u = strtok_r(NULL, "+", &sv))
			co->tun[co->ntun++] = u;
		for (int m = 0; m < NMETRIC; m++)
			co->v[m] = calloc((size_t)runs, sizeof(double));
	}
	if (!ncol) {
		util_err("compare: no allocators given");
		free(dup);
		return 2;
	}
	if (html && !mkdtemp(tldir)) {
		util_err("compare: %s: %s", tldir, strerror(errno));
		html = NULL;
		rc = 1;
	}
	for (int k = 0; k < ncol && html; k++) {
		char pth[64];
		snprintf(pth, sizeof(pth), "%s/%d.tl", tldir, k);
		cols[k].timeline = strdup(pth);
	}
	for (int r = 0; r < runs && !rc; r++)
		for (int k = 0; k < ncol && !rc; k++) {
			double out[NMETRIC];
			if (isatty(2))
				fprintf(stderr, "\rcompare: run %d/%d %-30s", r + 1, runs, cols[k].spec);
			if (run_one(wl, &cols[k], touch, trim, timing, r == 0 ? cols[k].timeline : NULL,
				    out) < 0) {
				util_err("compare: replay under %s failed", cols[k].spec);
				rc = 1;
				break;
			}
			for (int m = 0; m < NMETRIC; m++)
				cols[k].v[m][r] = out[m];
		}
	if (isatty(2))
		fprintf(stderr, "\r%60s\r", "");
	if (!rc && json) {
		struct json_writer w;
		json_init(&w, stdout, 1);
		json_begin_object(&w);
		json_key(&w, "workload");
		json_string(&w, wl);
		json_key(&w, "runs");
		json_u64(&w, (uint64_t)runs);
		json_key(&w, "allocators");
		json_begin_array(&w);
		for (int k = 0; k < ncol; k++) {
			json_begin_object(&w);
			json_key(&w, "allocator");
			json_string(&w, cols[k].spec);
			for (int m = 0; m < NMETRIC; m++) {
				double med, mn, mx, b0, b1, b2;
				stats(cols[k].v[m], runs, &med, &mn, &mx);
				stats(cols[0].v[m], runs, &b0, &b1, &b2);
				json_key(&w, m_key[m]);
				json_begin_object(&w);
				json_key(&w, "median");
				json_double(&w, med);
				json_key(&w, "min");
				json_double(&w, mn);
				json_key(&w, "max");
				json_double(&w, mx);
				json_key(&w, "ratio");
				json_double(&w, b0 > 0 ? med / b0 : 0);
				json_end_object(&w);
			}
			json_end_object(&w);
		}
		json_end_array(&w);
		json_end_object(&w);
		json_finish(&w);
	} else if (!rc) {
		printf("compare %s: %d run%s each, median (min-max) and ratio to %s\n\n", wl, runs, runs == 1 ? "" : "s",
		       cols[0].spec);
		printf("%-26s", "");
		for (int k = 0; k < ncol; k++)
			printf(" %28.28s", cols[k].spec);
		printf("\n");
		for (int m = 0; m < NMETRIC; m++) {
			double b0, b1, b2;
			stats(cols[0].v[m], runs, &b0, &b1, &b2);
			int any = 0;
			for (int k = 0; k < ncol; k++)
				for (int r = 0; r < runs; r++)
					any |= cols[k].v[m][r] != 0;
			if (!any)
				continue;
			printf("%-26s", m_name[m]);
			for (int k = 0; k < ncol; k++) {
				double med, mn, mx;
				stats(cols[k].v[m], runs, &med, &mn, &mx);
				char cell[64];
				int prec = med < 100 ? 1 : 0;
				snprintf(cell, sizeof(cell), "%.*f (%.*f-%.*f) x%.2f", prec, med, prec, mn, prec, mx,
					 b0 > 0 ? med / b0 : 0.0);
				printf(" %28s", cell);
			}
			printf("\n");
		}
	}
	if (!rc && html)
		rc = write_html(html, wl, cols, ncol, runs);
	for (int k = 0; k < ncol; k++) {
		if (cols[k].timeline) {
			unlink(cols[k].timeline);
			free(cols[k].timeline);
		}
		free(cols[k].name);
		for (int m = 0; m < NMETRIC; m++)
			free(cols[k].v[m]);
	}
	free(dup);
	if (html || tldir[sizeof(tldir) - 2] != 'X')
		rmdir(tldir);
	return rc;
}
