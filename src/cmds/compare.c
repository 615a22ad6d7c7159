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

#include "clickhouse/ch_client.h"
#include "clickhouse/ch_results.h"
#include "clickhouse/ch_schema.h"
#include "cmds/cmds.h"
#include "output/out_compare.h"
#include "replay/rp_alloc.h"
#include "replay/rp_replay.h"
#include "replay/rp_verdict.h"
#include "util_fmt.h"
#include "util_json.h"
#include "util_msg.h"

static void compare_usage(FILE *out)
{
	fprintf(out,
		"usage: alloctrace compare WORKLOAD --allocators A,B,... [--runs N] [--touch M]\n"
		"                          [--trim-interval N] [--timing sample|serial|fast|off] "
		"[--json]\n"
		"                          [--no-mallopt] [--no-mappings] [--no-warm]\n"
		"                          [--think MODE] [--html FILE]\n"
		"Replay WORKLOAD N times (default 3) under each allocator and print medians\n"
		"(min-max) and ratios against the first column.  --no-mallopt, --no-mappings\n"
		"and --no-warm go to every replay (skip the program's mallopt/malloc_trim, its\n"
		"mappings; no block fetched before its free).\n"
		"An allocator is glibc,\n"
		"jemalloc, tcmalloc, mimalloc, PATH.so or none, optionally with glibc tunables:\n"
		"  glibc+glibc.malloc.arena_max=1+glibc.malloc.trim_threshold=0\n"
		"--html FILE also writes a self-contained page: bars of time and RSS per\n"
		"allocator (median, min-max) and the RSS of each allocator's first run\n"
		"over time.\n"
		"--clickhouse URL [--database DB] also stores every run in ClickHouse\n"
		"(table replay_runs, view replay_medians: docs/CLICKHOUSE.md).\n"
		"--touch trace|first|all|none is passed to every replay (default: trace\n"
		"for workloads with TOUCH ops, else first), and so is --think\n"
		"on|whole|share|off (default on).\n");
}

/* Replay options every run gets: --no-mallopt, --no-mappings, --no-warm,
 * --think. */
struct run_flags {
	int no_mallopt, no_maps, no_warm;
	const char *think; /* NULL: the replay's default */
};

static int run_one(const char *wl, struct out_compare_col *c, const char *touch, const char *trim,
		   const char *timing, const char *timeline, const struct run_flags *fl,
		   double *out)
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
		if (fl->no_mallopt)
			av[n++] = (char *)"--no-mallopt";
		if (fl->no_maps)
			av[n++] = (char *)"--no-mappings";
		if (fl->no_warm)
			av[n++] = (char *)"--no-warm";
		if (fl->think) {
			av[n++] = (char *)"--think";
			av[n++] = (char *)fl->think;
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
	for (int i = 0; i < CMP_NMETRIC; i++)
		out[i] = 0;
	while (f && fscanf(f, "%63s %llu", key, &v) == 2) {
		if (!strcmp(key, "wall_us"))
			out[CMP_M_WALL] = (double)v / 1000.0;
		else if (!strcmp(key, "thread_cpu_us"))
			out[CMP_M_CPU] = (double)v / 1000.0;
		else if (!strcmp(key, "total_call_cycles"))
			out[CMP_M_CALLS] = (double)v / 1e6;
		else if (!strcmp(key, "max_rss_kb"))
			out[CMP_M_RSS] = (double)v / 1024.0;
		else if (!strcmp(key, "rss_end_kb"))
			out[CMP_M_RSS_END] = (double)v / 1024.0;
		else if (!strcmp(key, "avg_malloc"))
			out[CMP_M_MALLOC] = (double)v;
		else if (!strcmp(key, "avg_calloc"))
			out[CMP_M_CALLOC] = (double)v;
		else if (!strcmp(key, "avg_realloc"))
			out[CMP_M_REALLOC] = (double)v;
		else if (!strcmp(key, "avg_free"))
			out[CMP_M_FREE] = (double)v;
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
		else if (!strcmp(key, "ideal_rss_peak_bytes"))
			c->ideal_mib = (double)v / 1048576.0;
		else if (!strcmp(key, "trace_duration_us"))
			c->trace_ms = (double)v / 1000.0;
		else if (!strcmp(key, "traced_rss_kb"))
			c->traced_rss_mib = (double)v / 1024.0;
		else if (!strcmp(key, "wait_us"))
			c->wait_ms += (double)v / 1000.0;
		else if (!strcmp(key, "think_us"))
			c->think_ms += (double)v / 1000.0;
	}
	(void)other_n;
	out[CMP_M_OTHER] = other;
	if (f)
		fclose(f);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* compare --clickhouse: every run of every column, one INSERT. */
static int store_clickhouse(const char *url, const char *db, const char *wl,
			    struct out_compare_col *cols, int ncol, int runs, const char *touch,
			    const char *trim, const char *timing, const struct run_flags *fl)
{
	char err[1024], opt[4][128];
	const char *opts[8];
	int nopt = 0;
	if (fl->no_mallopt)
		opts[nopt++] = "no-mallopt";
	if (fl->no_maps)
		opts[nopt++] = "no-mappings";
	if (fl->no_warm)
		opts[nopt++] = "no-warm";
	if (touch)
		snprintf(opt[0], sizeof(opt[0]), "touch=%s", touch), opts[nopt++] = opt[0];
	if (trim)
		snprintf(opt[1], sizeof(opt[0]), "trim-interval=%s", trim), opts[nopt++] = opt[1];
	if (timing)
		snprintf(opt[2], sizeof(opt[0]), "timing=%s", timing), opts[nopt++] = opt[2];
	if (fl->think)
		snprintf(opt[3], sizeof(opt[0]), "think=%s", fl->think), opts[nopt++] = opt[3];
	struct ch_replay_col cc[32];
	char libs[32][4096];
	for (int k = 0; k < ncol; k++) {
		if (rp_find_allocator(cols[k].name, libs[k], sizeof(libs[k]), err, sizeof(err)) < 0)
			libs[k][0] = 0;
		cc[k] = (struct ch_replay_col){.spec = cols[k].spec,
					       .allocator = cols[k].name,
					       .lib = libs[k],
					       .tunables = (const char *const *)cols[k].tun,
					       .ntunables = cols[k].ntun,
					       .values = (const double *const *)cols[k].v};
	}
	struct ch_replay_set set = {.workload = wl,
				    .options = opts,
				    .noptions = nopt,
				    .runs = runs,
				    .metrics = out_compare_metric_key,
				    .nmetrics = CMP_NMETRIC,
				    .cols = cc,
				    .ncols = ncol};
	uint64_t run_id;
	struct ch_client *ch = ch_open(url, NULL, err, sizeof(err));
	int rc = ch ? ch_results_store(ch, db, &set, &run_id, err, sizeof(err)) : -1;
	ch_close(ch);
	if (rc < 0) {
		util_err("compare: %s", err);
		return 1;
	}
	fprintf(stderr, "compare: %d runs stored in %s.replay_runs (run_id %" PRIu64 ")\n",
		runs * ncol, db, run_id);
	return 0;
}

int cmd_compare(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"allocators", required_argument, NULL, 'a'},
	    {"runs", required_argument, NULL, 'r'},
	    {"touch", required_argument, NULL, 't'},
	    {"trim-interval", required_argument, NULL, 'I'},
	    {"timing", required_argument, NULL, 'm'},
	    {"no-mallopt", no_argument, NULL, 'O'},
	    {"no-mappings", no_argument, NULL, 'M'},
	    {"no-warm", no_argument, NULL, 'W'},
	    {"think", required_argument, NULL, 'K'},
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {"html", required_argument, NULL, 'H'},
	    {"clickhouse", required_argument, NULL, 'C'},
	    {"database", required_argument, NULL, 'D'},
	    {NULL, 0, NULL, 0},
	};
	const char *list = "glibc,jemalloc,tcmalloc,mimalloc", *touch = NULL, *trim = NULL,
		   *timing = NULL;
	const char *html = NULL, *ch_url = NULL, *ch_db = "alloctrace";
	char tldir[] = "/tmp/alloctrace-compare.XXXXXX";
	int runs = 3, json = 0, c;
	struct run_flags fl = {0};
	optind = 1;
	while ((c = cmdu_getopt(argc, argv, "a:r:jh", opts, NULL)) != -1) {
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
		case 'O':
			fl.no_mallopt = 1;
			break;
		case 'M':
			fl.no_maps = 1;
			break;
		case 'W':
			fl.no_warm = 1;
			break;
		case 'K':
			if (rp_think_parse(optarg) < 0) {
				util_err("compare: bad --think '%s' (on, whole, share, off)",
					 optarg);
				return 2;
			}
			fl.think = optarg;
			break;
		case 'j':
			json = 1;
			break;
		case 'H':
			html = optarg;
			break;
		case 'C':
			ch_url = optarg;
			break;
		case 'D':
			ch_db = optarg;
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
	if (ch_url) { /* a wrong URL or schema is better known before the runs */
		char err[1024];
		struct ch_client *ch = ch_open(ch_url, NULL, err, sizeof(err));
		int bad = !ch || ch_schema_ensure(ch, ch_db, err, sizeof(err)) < 0;
		ch_close(ch);
		if (bad) {
			util_err("compare: %s", err);
			return 1;
		}
	}
	struct out_compare_col cols[32];
	int ncol = 0, rc = 0;
	char *dup = strdup(list), *save = NULL;
	if (!dup)
		util_die_nomem();
	for (char *t = strtok_r(dup, ",", &save); t && ncol < 32; t = strtok_r(NULL, ",", &save)) {
		struct out_compare_col *co = &cols[ncol++];
		memset(co, 0, sizeof(*co));
		co->spec = t;
		char *s2 = strdup(t), *sv = NULL;
		co->name = strtok_r(s2, "+", &sv);
		for (char *u = strtok_r(NULL, "+", &sv); u && co->ntun < 16;
		     u = strtok_r(NULL, "+", &sv))
			co->tun[co->ntun++] = u;
		for (int m = 0; m < CMP_NMETRIC; m++)
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
			double out[CMP_NMETRIC];
			if (isatty(2))
				fprintf(stderr, "\rcompare: run %d/%d %-30s", r + 1, runs,
					cols[k].spec);
			if (run_one(wl, &cols[k], touch, trim, timing,
				    r == 0 ? cols[k].timeline : NULL, &fl, out) < 0) {
				util_err("compare: replay under %s failed", cols[k].spec);
				rc = 1;
				break;
			}
			for (int m = 0; m < CMP_NMETRIC; m++)
				cols[k].v[m][r] = out[m];
		}
	if (isatty(2))
		fprintf(stderr, "\r%60s\r", "");
	struct rp_verdict *vd = calloc((size_t)ncol, sizeof(*vd));
	if (!vd)
		util_die_nomem();
	for (int k = 0; !rc && k < ncol; k++) {
		rp_verdict_compute(cols[k].v[CMP_M_WALL], cols[0].v[CMP_M_WALL],
				   cols[k].v[CMP_M_RSS], cols[0].v[CMP_M_RSS], runs,
				   cols[0].ideal_mib, cols[0].traced_rss_mib, &vd[k]);
		rp_verdict_line(cols[k].verdict, sizeof(cols[k].verdict), cols[k].spec, &vd[k]);
	}
	if (!rc && json) {
		struct json_writer w;
		json_init(&w, stdout, 1);
		json_begin_object(&w);
		json_key(&w, "workload");
		json_string(&w, wl);
		json_key(&w, "runs");
		json_u64(&w, (uint64_t)runs);
		json_key(&w, "ideal_rss_mib");
		json_double(&w, cols[0].ideal_mib);
		json_key(&w, "traced_run_ms");
		json_double(&w, cols[0].trace_ms);
		json_key(&w, "traced_max_rss_mib");
		if (cols[0].traced_rss_mib > 0)
			json_double(&w, cols[0].traced_rss_mib);
		else
			json_null(&w);
		char caution[400];
		json_key(&w, "caution");
		if (out_compare_caution_text(&cols[0], runs, caution, sizeof(caution)))
			json_string(&w, caution);
		else
			json_null(&w);
		json_key(&w, "allocators");
		json_begin_array(&w);
		for (int k = 0; k < ncol; k++) {
			json_begin_object(&w);
			json_key(&w, "allocator");
			json_string(&w, cols[k].spec);
			for (int m = 0; m < CMP_NMETRIC; m++) {
				double med, mn, mx, b0, b1, b2;
				out_compare_stats(cols[k].v[m], runs, &med, &mn, &mx);
				out_compare_stats(cols[0].v[m], runs, &b0, &b1, &b2);
				json_key(&w, out_compare_metric_key[m]);
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
			json_key(&w, "verdict");
			json_begin_object(&w);
			json_key(&w, "predicted_run_time_ms");
			json_double(&w, vd[k].time_ms);
			json_key(&w, "time_change_pct");
			json_double(&w, 100 * vd[k].time_change);
			json_key(&w, "time_range_pct");
			json_double(&w, 100 * vd[k].time_range);
			json_key(&w, "max_rss_mib");
			json_double(&w, vd[k].rss_mib);
			json_key(&w, "max_rss_change_pct");
			json_double(&w, 100 * vd[k].rss_change);
			json_key(&w, "max_rss_basis");
			json_string(&w, vd[k].rss_anchored ? "traced program" : "replay");
			json_key(&w, "replay_max_rss_mib");
			json_double(&w, vd[k].replay_rss_mib);
			json_key(&w, "line");
			json_string(&w, cols[k].verdict);
			json_end_object(&w);
			json_end_object(&w);
		}
		json_end_array(&w);
		json_end_object(&w);
		json_finish(&w);
	} else if (!rc) {
		printf("compare %s: %d run%s each, median (min-max) and ratio to %s\n\n", wl, runs,
		       runs == 1 ? "" : "s", cols[0].spec);
		printf("%-26s", "");
		for (int k = 0; k < ncol; k++)
			printf(" %28.28s", cols[k].spec);
		printf("\n");
		for (int m = 0; m < CMP_NMETRIC; m++) {
			double b0, b1, b2;
			out_compare_stats(cols[0].v[m], runs, &b0, &b1, &b2);
			int any = 0;
			for (int k = 0; k < ncol; k++)
				for (int r = 0; r < runs; r++)
					any |= cols[k].v[m][r] != 0;
			if (!any)
				continue;
			printf("%-26s", out_compare_metric_name[m]);
			for (int k = 0; k < ncol; k++) {
				double med, mn, mx;
				out_compare_stats(cols[k].v[m], runs, &med, &mn, &mx);
				char cell[64];
				int prec = med < 100 ? 1 : 0;
				snprintf(cell, sizeof(cell), "%.*f (%.*f-%.*f) x%.2f", prec, med,
					 prec, mn, prec, mx, b0 > 0 ? med / b0 : 0.0);
				printf(" %28s", cell);
			}
			printf("\n");
		}
		char ideal[160];
		char basis[160] = "";
		if (vd[0].rss_anchored)
			snprintf(basis, sizeof(basis),
				 " (the traced program's, without the tracer's own memory; the "
				 "replay's changes added to it)");
		printf("\nverdict: predicted run time (replay wall time, think time included%s) "
		       "and Max RSS%s\n"
		       "against %s: %.0f ms, %.1f MiB Max RSS; %s\n",
		       timing && !strcmp(timing, "off") ? "" : "; --timing off disturbs it least",
		       basis, cols[0].spec, vd[0].time_ms, vd[0].rss_mib,
		       out_compare_ideal_text(&cols[0], runs, ideal, sizeof(ideal)));
		for (int k = 1; k < ncol; k++)
			printf("  %s\n", cols[k].verdict);
		char caution[400];
		if (out_compare_caution_text(&cols[0], runs, caution, sizeof(caution)))
			printf("%s\n", caution);
	}
	free(vd);
	if (!rc && html) {
		char eb[4200];
		if (out_compare_write_html(html, wl, cols, ncol, runs, eb, sizeof(eb)) < 0) {
			util_err("compare: %s", eb);
			rc = 1;
		}
	}
	if (!rc && ch_url)
		rc =
		    store_clickhouse(ch_url, ch_db, wl, cols, ncol, runs, touch, trim, timing, &fl);
	for (int k = 0; k < ncol; k++) {
		if (cols[k].timeline) {
			unlink(cols[k].timeline);
			free(cols[k].timeline);
		}
		free(cols[k].name);
		for (int m = 0; m < CMP_NMETRIC; m++)
			free(cols[k].v[m]);
	}
	free(dup);
	if (html || tldir[sizeof(tldir) - 2] != 'X')
		rmdir(tldir);
	return rc;
}
