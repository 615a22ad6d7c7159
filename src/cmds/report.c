/* report.c - `alloctrace report`: options, then one analysis session per
 * traced process, printed by src/output/ (out_report: text and JSON,
 * out_html: --html).  docs/REPORT.md. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/an_report.h"
#include "atr_reader.h"
#include "cmds/cmds.h"
#include "output/output.h"
#include "util_json.h"
#include "util_msg.h"

static void report_usage(FILE *out)
{
	fprintf(out,
		"usage: alloctrace report [--json | --html OUT.html] [--top N] [--by KEY]\n"
		"                         FILE_OR_DIR...\n"
		"Where a traced process allocates: summary, the hottest call paths,\n"
		"leaks (blocks live at exit) by call stack, the stacks holding memory at\n"
		"the peak, temporary allocations, size and lifetime histograms, threads.\n"
		"Stacks need `record --stacks`; without them everything is one stack.\n"
		"  --json     one JSON object {\"processes\": [...]} (docs/REPORT.md)\n"
		"  --html OUT one self-contained HTML page: heap (and RSS) over time,\n"
		"             calls/s per thread, histograms, flame graph, top tables\n"
		"  --top N    stacks per list (default 10, 0 = all)\n"
		"  --by KEY   order of the \"top\" list: calls (default), bytes, peak,\n"
		"             leaked, temporary\n"
		"  --group stack|function|caller|module  totals per call stack (default),\n"
		"             per allocating function (self and total), per function with\n"
		"             its callers, or per module\n"
		"%s",
		an_session_opts_usage);
}

/* --html: every process of every argument into one page. */
static int run_html(int argc, char **argv, const char *out, size_t top,
		    const struct an_session_opts *o)
{
	struct an_session *cs = NULL;
	size_t n = 0;
	char **paths;
	size_t np;
	int rc = cmdu_session_list(argc, argv, o, "report", &paths, &np);
	if (np && !(cs = calloc(np, sizeof(*cs)))) {
		util_err("report: out of memory");
		rc = 1;
		np = 0;
	}
	for (size_t i = 0; i < np; i++) {
		if (cmdu_session_open(paths[i], &cs[n], AN_TL_DEFAULT_BUCKETS, o))
			rc = 1;
		else
			n++;
	}
	atr_list_free(paths, np);
	if (n) {
		FILE *f = fopen(out, "w");
		if (!f) {
			util_err("report: %s: %s", out, strerror(errno));
			rc = 1;
		} else {
			int r = out_html_write(f, cs, n, top);
			if (r < 0) {
				util_err("report: %s: %s", out, atr_errstr(r));
				rc = 1;
			}
			if (fclose(f) != 0) {
				util_err("report: %s: write error: %s", out, strerror(errno));
				rc = 1;
			}
		}
	} else if (!rc) {
		util_err("report: no trace found");
		rc = 1;
	}
	for (size_t i = 0; i < n; i++)
		an_session_close(&cs[i]);
	free(cs);
	return rc;
}

static int report_opts(int argc, char **argv, struct an_session_opts *o)
{
	static const struct option opts[] = {
	    {"json", no_argument, NULL, 'j'},
	    {"top", required_argument, NULL, 't'},
	    {"by", required_argument, NULL, 'b'},
	    {"html", required_argument, NULL, 'H'},
	    {"help", no_argument, NULL, 'h'},
	    REP_OPTIONS,
	    {NULL, 0, NULL, 0},
	};
	enum an_by by = AN_BY_CALLS;
	size_t top = 10;
	int json = 0, c;
	const char *html = NULL;
	optind = 1;
	while ((c = cmdu_getopt(argc, argv, "jt:b:h", opts, NULL)) != -1) {
		int k = cmdu_session_opt(o, c, optarg, "report");
		if (k < 0)
			return 2;
		if (k > 0)
			continue;
		switch (c) {
		case 'H':
			html = optarg;
			break;
		case 'j':
			json = 1;
			break;
		case 't':
			if (cmdu_parse_top(optarg, "report", &top))
				return 2;
			break;
		case 'b': {
			int b = cmdu_parse_by(optarg, "report");
			if (b < 0)
				return 2;
			by = (enum an_by)b;
			break;
		}
		case 'h':
			report_usage(stdout);
			return 0;
		default:
			report_usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		util_err("report: no trace file or directory given");
		report_usage(stderr);
		return 2;
	}
	if (html && json) {
		util_err("report: --html and --json cannot be combined");
		return 2;
	}
	if (html)
		return run_html(argc - optind, argv + optind, html, top, o);
	struct json_writer w;
	if (json)
		cmdu_json_begin(&w, 1);
	/* the traces, the busiest first (an_session_list: --pid picks among them) */
	char **paths;
	size_t n;
	int rc = cmdu_session_list(argc - optind, argv + optind, o, "report", &paths, &n),
	    shown = 0;
	for (size_t i = 0; i < n; i++) {
		struct an_session cx;
		/* a timeline: the RSS account needs the heap at the RSS peak */
		if (cmdu_session_open(paths[i], &cx, AN_TL_DEFAULT_BUCKETS, o)) {
			rc = 1;
			continue;
		}
		if (json)
			out_print_report_json(&w, &cx, by, top);
		else if (out_print_report_text(&cx, by, top, !shown) < 0) {
			util_err("report: %s: out of memory (--group's table left out)", paths[i]);
			rc = 1;
		}
		shown++;
		an_session_close(&cx);
	}
	atr_list_free(paths, n);
	if (json)
		cmdu_json_end(&w, 1);
	return rc | cmdu_flush_stdout("report");
}

int cmd_report(int argc, char **argv)
{
	struct an_session_opts o;
	an_session_opts_init(&o);
	int rc = report_opts(argc, argv, &o);
	an_session_opts_free(&o);
	return rc;
}
