/* flamegraph.c - `alloctrace flamegraph`: folded stacks ("outer;...;inner
 * VALUE" per line, the input of FlameGraph's flamegraph.pl and of
 * speedscope) or, with --svg, a standalone SVG fed directly by the report
 * pass (src/output/out_folded.c, out_flamesvg.c). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/an_report.h"
#include "atr_reader.h"
#include "cmds/cmds.h"
#include "output/out_flamesvg.h"
#include "output/output.h"
#include "util_msg.h"

static void flame_usage(FILE *out)
{
	fprintf(out,
		"usage: alloctrace flamegraph [--by calls|bytes|leaked|peak|temporary] "
		"[--svg FILE] FILE_OR_DIR...\n"
		"Print folded stacks (\"outer;...;inner VALUE\" per line) for\n"
		"flamegraph.pl or speedscope.  Default --by bytes.\n"
		"  --svg FILE  write a standalone SVG flame graph to FILE instead\n"
		"%s",
		an_session_opts_usage);
}

static int write_svg(struct out_flame *fl, const char *path, enum an_by by, uint64_t sample_rate)
{
	FILE *out = fopen(path, "w");
	if (!out) {
		util_err("flamegraph: %s: %s", path, strerror(errno));
		return 1;
	}
	char title[128];
	if (sample_rate)
		snprintf(title, sizeof(title),
			 "alloctrace flame graph by %s, estimated (sampled every %" PRIu64
			 " bytes)",
			 an_by_name(by), sample_rate);
	else
		snprintf(title, sizeof(title), "alloctrace flame graph by %s", an_by_name(by));
	int r = out_flame_svg(fl, out, title, an_by_name(by));
	if (fclose(out) != 0 || r < 0) {
		util_err("flamegraph: %s: write error", path);
		return 1;
	}
	return 0;
}

struct flame_run {
	enum an_by by;
	const struct an_session_opts *o;
	struct out_flame *fl; /* --svg: every process merged into one graph */
	uint64_t sample_rate; /* a sampled trace was seen: its rate */
};

static int flame_add(void *arg, const char *key, uint64_t value)
{
	return out_flame_add(arg, key, value);
}

static int flame_one(struct flame_run *r, const char *path)
{
	struct an_session cx;
	int rc = 0;
	if (cmdu_session_open(path, &cx, 0, r->o))
		return 1;
	if (cx.r.sample_rate) {
		/* folded stacks have no room for a note: say it on stderr */
		util_warn("flamegraph: %s is sampled (every %" PRIu64
			  " bytes): the values are estimates",
			  path, cx.r.sample_rate);
		r->sample_rate = cx.r.sample_rate;
	}
	int k = r->fl ? out_fold_stacks(&cx, r->by, flame_add, r->fl)
		      : out_print_folded(stdout, &cx, r->by);
	if (k < 0) {
		util_err("flamegraph: %s", atr_errstr(k));
		rc = 1;
	}
	an_session_close(&cx);
	return rc;
}

static int flame_opts(int argc, char **argv, struct an_session_opts *o)
{
	static const struct option opts[] = {
	    {"by", required_argument, NULL, 'b'},
	    {"svg", required_argument, NULL, 'S'},
	    {"help", no_argument, NULL, 'h'},
	    REP_FILTER_OPTIONS,
	    {NULL, 0, NULL, 0},
	};
	struct flame_run r = {.by = AN_BY_BYTES, .o = o};
	const char *svg = NULL;
	int c;
	optind = 1;
	while ((c = cmdu_getopt(argc, argv, "b:h", opts, NULL)) != -1) {
		int k = cmdu_session_opt(o, c, optarg, "flamegraph");
		if (k < 0)
			return 2;
		if (k > 0)
			continue;
		switch (c) {
		case 'S':
			svg = optarg;
			break;
		case 'b': {
			int b = cmdu_parse_by(optarg, "flamegraph");
			if (b < 0)
				return 2;
			r.by = (enum an_by)b;
			break;
		}
		case 'h':
			flame_usage(stdout);
			return 0;
		default:
			flame_usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		util_err("flamegraph: no trace file or directory given");
		flame_usage(stderr);
		return 2;
	}
	if (svg && !(r.fl = out_flame_new())) {
		util_err("flamegraph: out of memory");
		return 1;
	}
	char **paths;
	size_t n;
	int rc = cmdu_session_list(argc - optind, argv + optind, o, "flamegraph", &paths, &n);
	for (size_t i = 0; i < n; i++)
		rc |= flame_one(&r, paths[i]);
	atr_list_free(paths, n);
	if (r.fl) {
		rc |= write_svg(r.fl, svg, r.by, r.sample_rate);
		out_flame_free(r.fl);
	}
	return rc | cmdu_flush_stdout("flamegraph");
}

int cmd_flamegraph(int argc, char **argv)
{
	struct an_session_opts o;
	an_session_opts_init(&o);
	int rc = flame_opts(argc, argv, &o);
	an_session_opts_free(&o);
	return rc;
}
