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

#include "analysis/an_group.h"
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
		"             leaked, temporary\n"
		"  --group stack|function|caller|module  totals per call stack (default),\n"
		"             per allocating function (self and total), per function with\n"
		"             its callers, or per module\n"
		"%s",
		rep_opts_usage);
}

static void flame_usage(FILE *out)
{
	fprintf(out,
		"usage: alloctrace flamegraph [--by calls|bytes|leaked|peak|temporary] "
		"[--svg FILE] FILE_OR_DIR...\n"
		"Print folded stacks (\"outer;...;inner VALUE\" per line) for\n"
		"flamegraph.pl or speedscope.  Default --by bytes.\n"
		"  --svg FILE  write a standalone SVG flame graph to FILE instead\n"
		"%s",
		rep_opts_usage);
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
		printf("      (no stack recorded%s)\n",
		       c->r.stacks ? "" : ": record with --stacks to see call paths");
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

/* ---- --group ------------------------------------------------------------ */

static void json_gval(struct json_writer *w, const char *key, const struct an_group_val *v)
{
	json_key(w, key);
	json_begin_object(w);
	json_key(w, "calls");
	json_u64(w, v->calls);
	json_key(w, "bytes");
	json_u64(w, v->bytes);
	json_key(w, "peak_bytes");
	json_u64(w, v->peak_bytes);
	json_key(w, "leaked_bytes");
	json_u64(w, v->leaked_bytes);
	json_key(w, "leaked_blocks");
	json_u64(w, v->leaked_blocks);
	json_key(w, "temporary");
	json_u64(w, v->temporary);
	json_end_object(w);
}

/* "groups": {"group": KIND, "by": KEY, "stacks": N, "rows": [...]} */
static void json_group(struct json_writer *w, const struct an_group *g, enum an_by by, size_t top)
{
	size_t *idx;
	long n = an_group_rank(g, by, &idx);
	json_key(w, "groups");
	json_begin_object(w);
	json_key(w, "group");
	json_string(w, an_group_name(g->kind));
	json_key(w, "by");
	json_string(w, an_by_name(by));
	json_key(w, "stacks");
	json_u64(w, g->stacks);
	json_key(w, "count");
	json_u64(w, n < 0 ? 0 : (uint64_t)n);
	json_key(w, "rows");
	json_begin_array(w);
	for (long i = 0; i < n && (top == 0 || (size_t)i < top); i++) {
		const struct an_group_row *row = &g->rows[idx[i]];
		json_begin_object(w);
		json_key(w, g->kind == AN_GROUP_MODULE ? "module" : "function");
		json_string(w, g->names.s[row->name]);
		if (g->kind != AN_GROUP_MODULE) {
			json_key(w, "module");
			json_string(w, g->names.s[row->module]);
			json_key(w, "file");
			if (row->file != UINT32_MAX)
				json_string(w, g->names.s[row->file]);
			else
				json_null(w);
			json_key(w, "line");
			if (row->line)
				json_u64(w, row->line);
			else
				json_null(w);
		}
		json_gval(w, "self", &row->self);
		json_gval(w, "total", &row->total);
		if (g->kind == AN_GROUP_CALLER) {
			json_key(w, "callers");
			json_begin_array(w);
			for (size_t k = 0; k < row->ncallers && (top == 0 || k < top); k++) {
				json_begin_object(w);
				json_key(w, "function");
				json_string(w, g->names.s[row->callers[k].name]);
				json_gval(w, "self", &row->callers[k].v);
				json_end_object(w);
			}
			json_end_array(w);
		}
		json_end_object(w);
	}
	json_end_array(w);
	json_end_object(w);
	free(idx);
}

static void text_group(const struct an_group *g, enum an_by by, size_t top)
{
	size_t *idx;
	long n = an_group_rank(g, by, &idx);
	const char *what = g->kind == AN_GROUP_MODULE ? "modules" : "functions";
	char cn[UTIL_FMT_BUF], cs[UTIL_FMT_BUF];
	printf("\n%s by %s (%s %s in %s stacks; self: allocating there, total: there or in what "
	       "it calls)\n",
	       g->kind == AN_GROUP_MODULE ? "allocating modules" : "allocating functions",
	       an_by_name(by), util_fmt_u64(cn, sizeof(cn), n < 0 ? 0 : (uint64_t)n), what,
	       util_fmt_u64(cs, sizeof(cs), g->stacks));
	printf("  %4s %12s %11s %11s %11s %12s %11s  %s\n", "#", "self calls", "self bytes",
	       "self peak", "self leaked", "total calls", "total bytes",
	       g->kind == AN_GROUP_MODULE ? "module" : "function");
	for (long i = 0; i < n && (top == 0 || (size_t)i < top); i++) {
		const struct an_group_row *row = &g->rows[idx[i]];
		char a[UTIL_FMT_BUF], b[UTIL_FMT_BUF], pk[UTIL_FMT_BUF], l[UTIL_FMT_BUF],
		    tc[UTIL_FMT_BUF], tb[UTIL_FMT_BUF];
		printf("  %4ld %12s %11s %11s %11s %12s %11s  %s", i + 1,
		       util_fmt_u64(a, sizeof(a), row->self.calls),
		       util_fmt_bytes(b, sizeof(b), row->self.bytes),
		       util_fmt_bytes(pk, sizeof(pk), row->self.peak_bytes),
		       util_fmt_bytes(l, sizeof(l), row->self.leaked_bytes),
		       util_fmt_u64(tc, sizeof(tc), row->total.calls),
		       util_fmt_bytes(tb, sizeof(tb), row->total.bytes), g->names.s[row->name]);
		if (g->kind != AN_GROUP_MODULE) {
			if (row->file != UINT32_MAX)
				printf("  %s:%u", an_basename(g->names.s[row->file]), row->line);
			printf("  [%s]", g->names.s[row->module]);
		}
		printf("\n");
		if (g->kind != AN_GROUP_CALLER)
			continue;
		for (size_t k = 0; k < row->ncallers && (top == 0 || k < top); k++) {
			const struct an_group_caller *cl = &row->callers[k];
			if (!an_group_value(&cl->v, by))
				continue;
			printf("  %4s %12s %11s %11s %11s %12s %11s    <- %s\n", "",
			       util_fmt_u64(a, sizeof(a), cl->v.calls),
			       util_fmt_bytes(b, sizeof(b), cl->v.bytes),
			       util_fmt_bytes(pk, sizeof(pk), cl->v.peak_bytes),
			       util_fmt_bytes(l, sizeof(l), cl->v.leaked_bytes), "", "",
			       g->names.s[cl->name]);
		}
		if (top && row->ncallers > top)
			printf("  %4s %12s ... %zu more callers\n", "", "", row->ncallers - top);
	}
	if (top && n > (long)top)
		printf("  ... %ld more (--top 0 shows all)\n", n - (long)top);
	free(idx);
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
	if (c->o && c->o->nsupp) {
		json_key(w, "suppressed_blocks");
		json_u64(w, c->supp_blocks);
		json_key(w, "suppressed_bytes");
		json_u64(w, c->supp_bytes);
	}
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
	if (c->o && c->o->group != AN_GROUP_STACK) {
		struct an_group g;
		if (an_group_build(&g, c->o->group, c->f, r, c->sym) == 0) {
			an_group_sort_callers(&g, by);
			json_group(w, &g, by, top);
			an_group_free(&g);
		}
	}
	if (c->o && c->o->any_filter) {
		json_key(w, "filtered_out_calls");
		json_u64(w, r->excluded_calls);
	}
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
	printf("\n%s (%s %s)\n", title, util_fmt_u64(a, sizeof(a), n < 0 ? 0 : (uint64_t)n),
	       n == 1 ? "stack" : "stacks");
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
	if (top && n > (long)top)
		printf("  ... %ld more (--top 0 shows all)\n", n - (long)top);
	free(idx);
}

/* "850 ns", "1.0 us", "2.1 s": the bounds of a lifetime bucket. */
static void fmt_ns_short(char *b, size_t len, uint64_t ns)
{
	if (ns < 1000)
		snprintf(b, len, "%" PRIu64 " ns", ns);
	else if (ns < 1000000)
		snprintf(b, len, "%.1f us", (double)ns / 1e3);
	else if (ns < 1000000000)
		snprintf(b, len, "%.1f ms", (double)ns / 1e6);
	else
		snprintf(b, len, "%.1f s", (double)ns / 1e9);
}

/* Power-of-two buckets with their bounds in human units (KiB, ms). */
static void text_hist(const uint64_t *h, int ns)
{
	uint64_t max = 0;
	for (unsigned b = 0; b < AN_HIST_BUCKETS; b++)
		if (h[b] > max)
			max = h[b];
	for (unsigned b = 0; b < AN_HIST_BUCKETS; b++) {
		if (!h[b])
			continue;
		char lo[UTIL_FMT_BUF], hi[UTIL_FMT_BUF], cnt[UTIL_FMT_BUF];
		uint64_t l = b ? UINT64_C(1) << (b - 1) : 0;
		uint64_t u = b == 0 ? 0 : b == 64 ? UINT64_MAX : (UINT64_C(1) << b) - 1;
		if (ns) {
			fmt_ns_short(lo, sizeof(lo), l);
			fmt_ns_short(hi, sizeof(hi), u);
		} else {
			util_fmt_bytes(lo, sizeof(lo), l);
			util_fmt_bytes(hi, sizeof(hi), u);
		}
		int bar = (int)(40.0 * (double)h[b] / (double)max + 0.5);
		printf("  %12s .. %-12s %14s  %.*s\n", lo, b ? hi : lo,
		       util_fmt_u64(cnt, sizeof(cnt), h[b]), bar,
		       "########################################");
	}
}

/* Stacks with allocations (what the lists count), the no-stack group
 * included. */
static size_t used_stacks(const struct an_report *r)
{
	size_t n = 0;
	for (size_t i = 0; i < r->nst; i++)
		n += r->st[i].calls > 0;
	return n;
}

static const struct an_report *thr_r;

static int thr_cmp(const void *pa, const void *pb)
{
	const struct an_report_thread *a = &thr_r->threads[*(const uint32_t *)pa];
	const struct an_report_thread *b = &thr_r->threads[*(const uint32_t *)pb];
	if (a->calls != b->calls)
		return a->calls > b->calls ? -1 : 1;
	return a->serial < b->serial ? -1 : a->serial > b->serial;
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
	if (c->o && c->o->nsupp)
		printf("  %-18s %s bytes in %s blocks (--suppress)\n", "suppressed leaks",
		       util_fmt_u64(a, sizeof(a), c->supp_bytes),
		       util_fmt_u64(b, sizeof(b), c->supp_blocks));
	if (c->o && c->o->any_filter)
		printf("  %-18s %s allocation calls (not counted above)\n", "filtered out",
		       util_fmt_u64(a, sizeof(a), r->excluded_calls));
	printf("  %-18s %s\n", "temporary", util_fmt_u64(a, sizeof(a), r->temporary));
	printf("  %-18s %s\n", "failed allocs", util_fmt_u64(a, sizeof(a), r->failed));
	if (atr_get_info(c->f)->status & ATR_STATUS_ATTACHED)
		printf("  %-18s %s (blocks allocated before the attach)\n", "pre-attach frees",
		       util_fmt_u64(a, sizeof(a), r->pre_attach_frees));
	if (r->stacks)
		printf("  %-18s %s with allocations (%s recorded)\n", "call stacks",
		       util_fmt_u64(a, sizeof(a), used_stacks(r)),
		       util_fmt_u64(b, sizeof(b), atr_stack_count(c->f)));
	else
		printf("  %-18s none recorded: `alloctrace record --stacks` shows where "
		       "allocations come from\n",
		       "call stacks");
	if (c->o && c->o->group != AN_GROUP_STACK) {
		struct an_group g;
		if (an_group_build(&g, c->o->group, c->f, r, c->sym) < 0) {
			util_err("report: out of memory");
		} else {
			an_group_sort_callers(&g, by);
			text_group(&g, by, top);
			if (by != AN_BY_LEAKED && r->live_blocks) {
				an_group_sort_callers(&g, AN_BY_LEAKED);
				text_group(&g, AN_BY_LEAKED, top);
			}
			an_group_free(&g);
		}
	} else {
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
	}
	printf("\nrequested sizes\n");
	text_hist(r->size_hist, 0);
	printf("\nlifetimes of freed blocks\n");
	text_hist(r->life_hist, 1);
	/* the busiest threads first, --top of them */
	uint32_t *order = malloc((r->nthreads ? r->nthreads : 1) * sizeof(*order));
	uint32_t nshow = r->nthreads;
	if (order) {
		for (uint32_t i = 0; i < r->nthreads; i++)
			order[i] = i;
		thr_r = r;
		qsort(order, r->nthreads, sizeof(*order), thr_cmp);
		if (top && nshow > top)
			nshow = (uint32_t)top;
	}
	printf("\nthreads (%" PRIu32 ", the busiest first)\n", r->nthreads);
	printf("  %-8s %10s %14s %12s %12s %8s\n", "thread", "tid", "calls", "bytes", "run",
	       "in alloc");
	for (uint32_t i = 0; i < nshow; i++) {
		const struct an_report_thread *t = &r->threads[order ? order[i] : i];
		uint64_t run = t->seen ? ns(c->f, t->last_ts - t->first_ts) : 0;
		char rb[32], share[16] = "-";
		if (r->timing && run)
			snprintf(share, sizeof(share), "%.1f%%",
				 100.0 * (double)ns(c->f, t->alloc_ticks) / (double)run);
		printf("  T%-7" PRIu32 " %10" PRIu32 " %14s %12s %12s %8s\n", t->serial, t->tid,
		       util_fmt_u64(a, sizeof(a), t->calls), util_fmt_bytes(b, sizeof(b), t->bytes),
		       util_fmt_ns(rb, sizeof(rb), run), share);
	}
	if (nshow < r->nthreads)
		printf("  ... %" PRIu32 " more threads (--top 0 shows all)\n", r->nthreads - nshow);
	free(order);
}

/* ---- commands --------------------------------------------------------------- */

/* --html: every process of every argument into one page. */
static int run_html(int argc, char **argv, const char *out, size_t top, const struct rep_opts *o)
{
	struct rep_ctx *cs = NULL;
	size_t n = 0;
	char **paths;
	size_t np;
	int rc = rep_list(argc, argv, o, "report", &paths, &np);
	if (np && !(cs = calloc(np, sizeof(*cs)))) {
		util_err("report: out of memory");
		rc = 1;
		np = 0;
	}
	for (size_t i = 0; i < np; i++) {
		if (rep_open_opts(paths[i], &cs[n], AN_TL_DEFAULT_BUCKETS, o))
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

static int run_opts(int argc, char **argv, int flame, const struct option *opts,
		    struct rep_opts *o);

static int run(int argc, char **argv, int flame)
{
	/* one table each, so that --list-options, completion and "did you
	 * mean" see only what the command takes */
	static const struct option report_opts[] = {
	    {"json", no_argument, NULL, 'j'},	    {"top", required_argument, NULL, 't'},
	    {"by", required_argument, NULL, 'b'},   {"html", required_argument, NULL, 'H'},
	    {"help", no_argument, NULL, 'h'},	    REP_OPTIONS,
	    {NULL, 0, NULL, 0},
	};
	static const struct option flame_opts[] = {
	    {"by", required_argument, NULL, 'b'},
	    {"svg", required_argument, NULL, 'S'},
	    {"help", no_argument, NULL, 'h'},
	    REP_FILTER_OPTIONS,
	    {NULL, 0, NULL, 0},
	};
	struct rep_opts o;
	rep_opts_init(&o);
	int rc = run_opts(argc, argv, flame, flame ? flame_opts : report_opts, &o);
	rep_opts_free(&o);
	return rc;
}

static int run_opts(int argc, char **argv, int flame, const struct option *opts,
		    struct rep_opts *o)
{
	int json = 0, c;
	const char *html = NULL, *svg = NULL;
	struct out_flame *fl = NULL;
	enum an_by by = flame ? AN_BY_BYTES : AN_BY_CALLS;
	size_t top = 10;
	void (*usage)(FILE *) = flame ? flame_usage : report_usage;
	optind = 1;
	while ((c = cmdu_getopt(argc, argv, flame ? "b:h" : "jt:b:h", opts, NULL)) != -1) {
		int k = rep_opt(o, c, optarg, flame ? "flamegraph" : "report");
		if (k < 0)
			return 2;
		if (k > 0)
			continue;
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
		return run_html(argc - optind, argv + optind, html, top, o);
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
	char **paths;
	size_t n;
	rc = rep_list(argc - optind, argv + optind, o, flame ? "flamegraph" : "report", &paths, &n);
	for (size_t i = 0; i < n; i++) {
		struct rep_ctx cx;
		if (rep_open_opts(paths[i], &cx, 0, o)) {
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
