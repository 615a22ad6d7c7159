/* report.c - `alloctrace report` and `alloctrace flamegraph`.
 *
 * report: summary, hottest call paths, leaks, what held the peak,
 * temporary allocations, size and lifetime histograms, threads; text or
 * JSON (docs/REPORT.md).  flamegraph: folded stacks ("root;...;leaf N"),
 * the input of FlameGraph's flamegraph.pl and of speedscope.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/an_report.h"
#include "analysis/an_symbols.h"
#include "atr_reader.h"
#include "output/out_flamesvg.h"
#include "cmds/cmds.h"
#include "output/output.h"
#include "util_fmt.h"
#include "util_json.h"
#include "util_msg.h"

#define TEXT_FRAMES 12

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
		"             leaked, temporary\n");
}

static void flame_usage(FILE *out)
{
	fprintf(out, "usage: alloctrace flamegraph [--by calls|bytes|leaked|peak|temporary] "
		     "[--svg FILE] FILE_OR_DIR...\n"
		     "Print folded stacks (\"outer;...;inner VALUE\" per line) for\n"
		     "flamegraph.pl or speedscope.  Default --by bytes.\n"
		     "  --svg FILE  write a standalone SVG flame graph to FILE instead\n");
}

/* ---- frames ------------------------------------------------------------- */

static void json_frame(struct json_writer *w, const struct an_frame *fr)
{
	char b[32];
	json_begin_object(w);
	json_key(w, "function");
	if (fr->function)
		json_string(w, fr->function);
	else
		json_null(w);
	json_key(w, "file");
	if (fr->file)
		json_string(w, fr->file);
	else
		json_null(w);
	json_key(w, "line");
	if (fr->line)
		json_u64(w, fr->line);
	else
		json_null(w);
	json_key(w, "module");
	if (fr->module)
		json_string(w, fr->module);
	else
		json_null(w);
	json_key(w, "address");
	snprintf(b, sizeof(b), "0x%" PRIx64, fr->ip);
	json_string(w, b);
	json_key(w, "offset");
	snprintf(b, sizeof(b), "0x%" PRIx64, fr->offset);
	json_string(w, b);
	json_key(w, "inlined");
	json_bool(w, fr->inlined);
	json_end_object(w);
}

static void json_frames(struct json_writer *w, struct rep_ctx *c, uint32_t stack)
{
	const uint64_t *ips;
	uint32_t n;
	json_key(w, "stack_id");
	json_u64(w, stack);
	json_key(w, "frames");
	json_begin_array(w);
	if (atr_stack_get(c->f, stack, &ips, &n))
		for (uint32_t i = 0; i < n; i++) {
			const struct an_frame *fr;
			unsigned k = an_symbols_resolve(c->sym, ips[i], stack, &fr);
			for (unsigned j = 0; j < k; j++)
				json_frame(w, &fr[j]);
		}
	json_end_array(w);
}

static void text_frames(struct rep_ctx *c, uint32_t stack)
{
	const uint64_t *ips;
	uint32_t n;
	if (!atr_stack_get(c->f, stack, &ips, &n)) {
		printf("      (no stack recorded)\n");
		return;
	}
	unsigned shown = 0, total = 0;
	for (uint32_t i = 0; i < n; i++) {
		const struct an_frame *fr;
		unsigned k = an_symbols_resolve(c->sym, ips[i], stack, &fr);
		for (unsigned j = 0; j < k; j++, total++) {
			if (shown >= TEXT_FRAMES)
				continue;
			char b[256];
			printf("      %s", an_frame_name(&fr[j], b, sizeof(b)));
			if (fr[j].file)
				printf("  %s:%u", an_basename(fr[j].file), fr[j].line);
			if (fr[j].function && fr[j].module)
				printf("  [%s]", an_basename(fr[j].module));
			if (fr[j].inlined)
				printf("  (inlined)");
			printf("\n");
			shown++;
		}
	}
	if (total > shown)
		printf("      ... %u more frames\n", total - shown);
}

/* ---- JSON ---------------------------------------------------------------- */

static void json_stack_list(struct json_writer *w, struct rep_ctx *c, enum an_by by, size_t top)
{
	size_t *idx;
	long n = an_report_rank(&c->r, by, &idx);
	json_begin_array(w);
	for (long i = 0; i < n && (top == 0 || (size_t)i < top); i++) {
		const struct an_stack_stat *st = &c->r.st[idx[i]];
		json_begin_object(w);
		json_key(w, "calls");
		json_u64(w, st->calls);
		json_key(w, "bytes");
		json_u64(w, st->bytes);
		json_key(w, "peak_bytes");
		json_u64(w, st->peak_bytes);
		json_key(w, "leaked_bytes");
		json_u64(w, st->live_bytes);
		json_key(w, "leaked_blocks");
		json_u64(w, st->live_blocks);
		json_key(w, "temporary");
		json_u64(w, st->temporary);
		if (by == AN_BY_LEAKED) {
			json_key(w, "blocks");
			json_u64(w, st->live_blocks);
		} else if (by == AN_BY_TEMPORARY) {
			json_key(w, "count");
			json_u64(w, st->temporary);
		}
		json_frames(w, c, st->stack);
		json_end_object(w);
	}
	json_end_array(w);
	free(idx);
}

static void json_hist(struct json_writer *w, const uint64_t *h, const char *lo, const char *hi)
{
	json_begin_array(w);
	for (unsigned b = 0; b < AN_HIST_BUCKETS; b++) {
		if (!h[b])
			continue;
		json_begin_object(w);
		json_key(w, lo);
		json_u64(w, b ? UINT64_C(1) << (b - 1) : 0);
		json_key(w, hi);
		json_u64(w, b == 0 ? 0 : b == 64 ? UINT64_MAX : (UINT64_C(1) << b) - 1);
		json_key(w, "count");
		json_u64(w, h[b]);
		json_end_object(w);
	}
	json_end_array(w);
}

static uint64_t ns(const atr_file *f, uint64_t t)
{
	return atr_ticks_to_ns_u64(f, t);
}

static void print_json(struct json_writer *w, struct rep_ctx *c, enum an_by by, size_t top)
{
	const struct an_report *r = &c->r;
	json_begin_object(w);
	rep_json_ident(w, c);
	json_key(w, "distinct_stacks");
	json_u64(w, atr_stack_count(c->f));
	json_key(w, "modules");
	json_u64(w, atr_module_count(c->f));
	json_key(w, "duration_ns");
	json_u64(w, r->records ? ns(c->f, r->last_ts - r->first_ts) : 0);
	rep_json_counts(w, c);
	if (atr_get_info(c->f)->status & ATR_STATUS_ATTACHED) {
		json_key(w, "pre_attach_frees");
		json_u64(w, r->pre_attach_frees);
	}
	json_key(w, "peak_live_ns");
	json_u64(w, ns(c->f, r->peak_ts));
	json_key(w, "top_by");
	json_string(w, an_by_name(by));
	json_key(w, "top");
	json_stack_list(w, c, by, top);
	json_key(w, "top_by_calls");
	json_stack_list(w, c, AN_BY_CALLS, top);
	json_key(w, "top_by_bytes");
	json_stack_list(w, c, AN_BY_BYTES, top);
	json_key(w, "leaks");
	json_begin_object(w);
	json_key(w, "blocks");
	json_u64(w, r->live_blocks);
	json_key(w, "bytes");
	json_u64(w, r->live_bytes);
	json_key(w, "stacks");
	json_stack_list(w, c, AN_BY_LEAKED, top);
	json_end_object(w);
	json_key(w, "peak");
	json_begin_object(w);
	json_key(w, "bytes");
	json_u64(w, r->peak_live_bytes);
	json_key(w, "ns");
	json_u64(w, ns(c->f, r->peak_ts));
	json_key(w, "stacks");
	json_stack_list(w, c, AN_BY_PEAK, top);
	json_end_object(w);
	json_key(w, "temporary");
	json_begin_object(w);
	json_key(w, "count");
	json_u64(w, r->temporary);
	json_key(w, "stacks");
	json_stack_list(w, c, AN_BY_TEMPORARY, top);
	json_end_object(w);
	json_key(w, "size_histogram");
	json_hist(w, r->size_hist, "min", "max");
	json_key(w, "lifetime_histogram");
	json_hist(w, r->life_hist, "min_ns", "max_ns");
	json_key(w, "freed_blocks");
	json_u64(w, r->freed_blocks);
	json_key(w, "thread_stats");
	json_begin_array(w);
	for (uint32_t i = 0; i < r->nthreads; i++) {
		const struct an_report_thread *t = &r->threads[i];
		uint64_t run = t->seen ? ns(c->f, t->last_ts - t->first_ts) : 0;
		json_begin_object(w);
		json_key(w, "serial");
		json_u64(w, t->serial);
		json_key(w, "tid");
		json_u64(w, t->tid);
		json_key(w, "calls");
		json_u64(w, t->calls);
		json_key(w, "bytes");
		json_u64(w, t->bytes);
		json_key(w, "run_ns");
		json_u64(w, run);
		json_key(w, "alloc_ns");
		if (r->timing)
			json_u64(w, ns(c->f, t->alloc_ticks));
		else
			json_null(w);
		json_key(w, "alloc_share");
		if (r->timing && run)
			json_double(w, (double)ns(c->f, t->alloc_ticks) / (double)run);
		else
			json_null(w);
		json_end_object(w);
	}
	json_end_array(w);
	json_end_object(w);
}

/* ---- text ---------------------------------------------------------------- */

static void text_list(struct rep_ctx *c, enum an_by by, size_t top, const char *title)
{
	size_t *idx;
	long n = an_report_rank(&c->r, by, &idx);
	char a[UTIL_FMT_BUF], b[UTIL_FMT_BUF];
	printf("\n%s (%ld stacks)\n", title, n < 0 ? 0 : n);
	for (long i = 0; i < n && (top == 0 || (size_t)i < top); i++) {
		const struct an_stack_stat *st = &c->r.st[idx[i]];
		switch (by) {
		case AN_BY_CALLS:
		case AN_BY_BYTES:
			printf("  #%ld  %s calls, %s bytes\n", i + 1,
			       util_fmt_u64(a, sizeof(a), st->calls),
			       util_fmt_u64(b, sizeof(b), st->bytes));
			break;
		case AN_BY_LEAKED:
			printf("  #%ld  %s bytes in %s blocks\n", i + 1,
			       util_fmt_u64(a, sizeof(a), st->live_bytes),
			       util_fmt_u64(b, sizeof(b), st->live_blocks));
			break;
		case AN_BY_PEAK:
			printf("  #%ld  %s bytes at the peak\n", i + 1,
			       util_fmt_u64(a, sizeof(a), st->peak_bytes));
			break;
		case AN_BY_TEMPORARY:
			printf("  #%ld  %s temporary of %s calls\n", i + 1,
			       util_fmt_u64(a, sizeof(a), st->temporary),
			       util_fmt_u64(b, sizeof(b), st->calls));
			break;
		}
		text_frames(c, st->stack);
	}
	free(idx);
}

static void text_hist(const uint64_t *h, const char *unit)
{
	uint64_t max = 0;
	for (unsigned b = 0; b < AN_HIST_BUCKETS; b++)
		if (h[b] > max)
			max = h[b];
	for (unsigned b = 0; b < AN_HIST_BUCKETS; b++) {
		if (!h[b])
			continue;
		char lo[32], cnt[UTIL_FMT_BUF];
		if (b == 0)
			snprintf(lo, sizeof(lo), "0");
		else
			snprintf(lo, sizeof(lo), "%" PRIu64 "..", UINT64_C(1) << (b - 1));
		int bar = (int)(40.0 * (double)h[b] / (double)max + 0.5);
		printf("  %22s %-3s %14s  %.*s\n", lo, unit, util_fmt_u64(cnt, sizeof(cnt), h[b]), bar,
		       "########################################");
	}
}

static void print_text(struct rep_ctx *c, enum an_by by, size_t top, int first)
{
	const struct atr_info *in = atr_get_info(c->f);
	const struct an_report *r = &c->r;
	char a[UTIL_FMT_BUF], b[UTIL_FMT_BUF];
	if (!first)
		printf("\n");
	printf("process %" PRIu32 "  (%s)  %s\n", in->pid, in->path, in->cmdline);
	printf("  %-18s %s\n", "duration",
	       util_fmt_ns(a, sizeof(a), r->records ? ns(c->f, r->last_ts - r->first_ts) : 0));
	printf("  %-18s %" PRIu32 "\n", "threads", in->threads);
	printf("  %-18s %s", "calls", util_fmt_u64(a, sizeof(a), r->total_calls));
	for (unsigned t = 1; t <= ATR_T_CALL_LAST; t++)
		if (r->calls[t])
			printf("  %s %s", atr_type_name(t), util_fmt_u64(b, sizeof(b), r->calls[t]));
	printf("\n");
	printf("  %-18s %s (%s)\n", "bytes requested", util_fmt_u64(a, sizeof(a), r->bytes_requested),
	       util_fmt_bytes(b, sizeof(b), r->bytes_requested));
	uint64_t pns = ns(c->f, r->peak_ts);
	printf("  %-18s %s (%s) at %" PRIu64 ".%09" PRIu64 " s\n", "peak live bytes",
	       util_fmt_u64(a, sizeof(a), r->peak_live_bytes),
	       util_fmt_bytes(b, sizeof(b), r->peak_live_bytes), pns / 1000000000u,
	       pns % 1000000000u);
	printf("  %-18s %s bytes in %s blocks\n", "leaked (at exit)",
	       util_fmt_u64(a, sizeof(a), r->live_bytes), util_fmt_u64(b, sizeof(b), r->live_blocks));
	printf("  %-18s %s\n", "temporary", util_fmt_u64(a, sizeof(a), r->temporary));
	printf("  %-18s %s\n", "failed allocs", util_fmt_u64(a, sizeof(a), r->failed));
	if (atr_get_info(c->f)->status & ATR_STATUS_ATTACHED)
		printf("  %-18s %s (blocks allocated before the attach)\n", "pre-attach frees",
		       util_fmt_u64(a, sizeof(a), r->pre_attach_frees));
	printf("  %-18s %zu%s\n", "distinct stacks", atr_stack_count(c->f),
	       r->stacks ? "" : " (recorded without --stacks)");
	text_list(c, by, top, by == AN_BY_CALLS ? "hottest call paths by calls"
			      : by == AN_BY_BYTES ? "hottest call paths by bytes"
			      : by == AN_BY_PEAK ? "live at the peak"
			      : by == AN_BY_LEAKED ? "leaks (live at exit)"
						   : "temporary allocations");
	if (by != AN_BY_BYTES)
		text_list(c, AN_BY_BYTES, top, "hottest call paths by bytes");
	if (by != AN_BY_LEAKED)
		text_list(c, AN_BY_LEAKED, top, "leaks (live at exit)");
	if (by != AN_BY_PEAK)
		text_list(c, AN_BY_PEAK, top, "live at the peak");
	if (by != AN_BY_TEMPORARY)
		text_list(c, AN_BY_TEMPORARY, top, "temporary allocations");
	printf("\nrequested sizes\n");
	text_hist(r->size_hist, "B");
	printf("\nlifetimes of freed blocks\n");
	text_hist(r->life_hist, "ns");
	printf("\n  %-8s %10s %14s %18s %12s %8s\n", "thread", "tid", "calls", "bytes", "run",
	       "in alloc");
	for (uint32_t i = 0; i < r->nthreads; i++) {
		const struct an_report_thread *t = &r->threads[i];
		uint64_t run = t->seen ? ns(c->f, t->last_ts - t->first_ts) : 0;
		char rb[32], share[16] = "-";
		if (r->timing && run)
			snprintf(share, sizeof(share), "%.1f%%",
				 100.0 * (double)ns(c->f, t->alloc_ticks) / (double)run);
		printf("  T%-7" PRIu32 " %10" PRIu32 " %14s %18s %12s %8s\n", t->serial, t->tid,
		       util_fmt_u64(a, sizeof(a), t->calls), util_fmt_u64(b, sizeof(b), t->bytes),
		       util_fmt_ns(rb, sizeof(rb), run), share);
	}
}

/* ---- commands --------------------------------------------------------------- */

/* --html: every process of every argument into one page. */
static int run_html(int argc, char **argv, const char *out, size_t top)
{
	struct rep_ctx *cs = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;
	for (int a = 0; a < argc; a++) {
		char **paths;
		size_t np;
		if (cmdu_list(argv[a], &paths, &np)) {
			rc = 1;
			continue;
		}
		for (size_t i = 0; i < np; i++) {
			if (n == cap) {
				size_t nc = cap ? cap * 2 : 8;
				struct rep_ctx *ncs = realloc(cs, nc * sizeof(*ncs));
				if (!ncs) {
					util_err("report: out of memory");
					rc = 1;
					break;
				}
				cs = ncs;
				cap = nc;
			}
			if (rep_open(paths[i], &cs[n], AN_TL_DEFAULT_BUCKETS))
				rc = 1;
			else
				n++;
		}
		atr_list_free(paths, np);
	}
	if (n) {
		FILE *f = fopen(out, "w");
		if (!f) {
			util_err("report: %s: %s", out, strerror(errno));
			rc = 1;
		} else {
			if (rep_write_html(f, cs, n, top) < 0)
				rc = 1;
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
		rep_close(&cs[i]);
	free(cs);
	return rc;
}

/* flamegraph --svg: the folded lines of a process, merged into fl. */
static int fold_into(struct out_flame *fl, struct rep_ctx *c, enum an_by by)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	if (!m) {
		util_err("flamegraph: out of memory");
		return 1;
	}
	rep_print_folded(m, c, by);
	if (fclose(m) != 0) {
		free(buf);
		util_err("flamegraph: out of memory");
		return 1;
	}
	int rc = 0;
	for (char *line = buf, *nl; line && *line; line = nl ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		if (nl)
			*nl = 0;
		char *sp = strrchr(line, ' '); /* "key VALUE"; frames hold no spaces */
		if (!sp)
			continue;
		*sp = 0;
		if (out_flame_add(fl, line, strtoull(sp + 1, NULL, 10)) < 0) {
			util_err("flamegraph: out of memory");
			rc = 1;
			break;
		}
	}
	free(buf);
	return rc;
}

static int write_svg(struct out_flame *fl, const char *path, enum an_by by)
{
	FILE *out = fopen(path, "w");
	if (!out) {
		util_err("flamegraph: %s: %s", path, strerror(errno));
		return 1;
	}
	char title[64];
	snprintf(title, sizeof(title), "alloctrace flame graph by %s", an_by_name(by));
	int r = out_flame_svg(fl, out, title, an_by_name(by));
	if (fclose(out) != 0 || r < 0) {
		util_err("flamegraph: %s: write error", path);
		return 1;
	}
	return 0;
}

static int run(int argc, char **argv, int flame)
{
	/* one table each, so that --list-options, completion and "did you
	 * mean" see only what the command takes */
	static const struct option report_opts[] = {
	    {"json", no_argument, NULL, 'j'},	    {"top", required_argument, NULL, 't'},
	    {"by", required_argument, NULL, 'b'},   {"html", required_argument, NULL, 'H'},
	    {"help", no_argument, NULL, 'h'},	    {NULL, 0, NULL, 0},
	};
	static const struct option flame_opts[] = {
	    {"by", required_argument, NULL, 'b'},
	    {"svg", required_argument, NULL, 'S'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int json = 0, c;
	const char *html = NULL, *svg = NULL;
	struct out_flame *fl = NULL;
	enum an_by by = flame ? AN_BY_BYTES : AN_BY_CALLS;
	size_t top = 10;
	void (*usage)(FILE *) = flame ? flame_usage : report_usage;
	optind = 1;
	while ((c = cmdu_getopt(argc, argv, flame ? "b:h" : "jt:b:h", flame ? flame_opts : report_opts,
				NULL)) != -1) {
		switch (c) {
		case 'H':
			if (flame) {
				usage(stderr);
				return 2;
			}
			html = optarg;
			break;
		case 'S':
			if (!flame) {
				usage(stderr);
				return 2;
			}
			svg = optarg;
			break;
		case 'j':
			if (flame) {
				usage(stderr);
				return 2;
			}
			json = 1;
			break;
		case 't': {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);
			if (*end || end == optarg || flame) {
				util_err("%s: bad --top '%s'", flame ? "flamegraph" : "report", optarg);
				return 2;
			}
			top = v;
			break;
		}
		case 'b': {
			int b = an_by_parse(optarg);
			if (b < 0) {
				util_err("%s: unknown --by '%s' (calls, bytes, peak, leaked, temporary)",
					 flame ? "flamegraph" : "report", optarg);
				return 2;
			}
			by = (enum an_by)b;
			break;
		}
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		util_err("%s: no trace file or directory given", flame ? "flamegraph" : "report");
		usage(stderr);
		return 2;
	}
	if (html && json) {
		util_err("report: --html and --json cannot be combined");
		return 2;
	}
	if (html)
		return run_html(argc - optind, argv + optind, html, top);
	if (svg && !(fl = out_flame_new())) {
		util_err("flamegraph: out of memory");
		return 1;
	}
	int rc = 0, shown = 0;
	struct json_writer w;
	if (json) {
		json_init(&w, stdout, 1);
		json_begin_object(&w);
		json_key(&w, "processes");
		json_begin_array(&w);
	}
	for (int a = optind; a < argc; a++) {
		char **paths;
		size_t n;
		if (cmdu_list(argv[a], &paths, &n)) {
			rc = 1;
			continue;
		}
		for (size_t i = 0; i < n; i++) {
			struct rep_ctx cx;
			if (rep_open(paths[i], &cx, 0)) {
				rc = 1;
				continue;
			} else if (fl) {
				rc |= fold_into(fl, &cx, by);
			} else if (flame) {
				rep_print_folded(stdout, &cx, by);
			} else if (json) {
				print_json(&w, &cx, by, top);
			} else {
				print_text(&cx, by, top, !shown);
			}
			shown++;
			rep_close(&cx);
		}
		atr_list_free(paths, n);
	}
	if (json) {
		json_end_array(&w);
		json_end_object(&w);
		json_finish(&w);
	}
	if (fl) {
		rc |= write_svg(fl, svg, by);
		out_flame_free(fl);
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		util_err("%s: write error on standard output", flame ? "flamegraph" : "report");
		rc = 1;
	}
	return rc;
}

int cmd_report(int argc, char **argv)
{
	return run(argc, argv, 0);
}

int cmd_flamegraph(int argc, char **argv)
{
	return run(argc, argv, 1);
}
