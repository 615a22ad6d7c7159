/* out_report.c - `alloctrace report`'s text and JSON (docs/REPORT.md):
 * summary, hottest call paths, leaks, what held the peak, temporary
 * allocations, size and lifetime histograms, threads. */
#include "output/output.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/an_group.h"
#include "analysis/an_report.h"
#include "analysis/an_symbols.h"
#include "atr_reader.h"
#include "util_fmt.h"
#include "util_json.h"

#define TEXT_FRAMES 12

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

static void json_frames(struct json_writer *w, struct an_session *c, uint32_t stack)
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

static void text_frames(struct an_session *c, uint32_t stack)
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

static void json_stack_list(struct json_writer *w, struct an_session *c, enum an_by by, size_t top)
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

/* ---- the program's own mappings (an_maps) ------------------------------ */

/* Mapping stacks merged by canonical id, most bytes mapped first. */
struct map_row {
	uint32_t stack;
	uint64_t calls, bytes, at_peak, live;
};

static int map_row_cmp(const void *pa, const void *pb)
{
	const struct map_row *a = pa, *b = pb;
	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	return a->stack < b->stack ? -1 : a->stack > b->stack;
}

/* Rows with calls, sorted; *out malloc'ed.  Count, or -1. */
static long map_rows(struct an_session *c, struct map_row **out)
{
	const struct an_maps *m = &c->r.maps;
	struct map_row *v = malloc((m->ns ? m->ns : 1) * sizeof *v);
	if (!v)
		return -1;
	size_t n = 0;
	for (size_t i = 0; i < m->ns; i++) {
		const struct an_map_stack *s = &m->s[i];
		if (!s->calls)
			continue;
		uint32_t id = s->stack ? atr_stack_canonical(c->f, s->stack) : 0;
		size_t j = 0;
		while (j < n && v[j].stack != id)
			j++;
		if (j == n)
			v[n++] = (struct map_row){id, 0, 0, 0, 0};
		v[j].calls += s->calls;
		v[j].bytes += s->bytes;
		v[j].at_peak += s->at_peak;
		v[j].live += s->live;
	}
	qsort(v, n, sizeof *v, map_row_cmp);
	*out = v;
	return (long)n;
}

static void json_maps(struct json_writer *w, struct an_session *c, size_t top)
{
	const struct an_report *r = &c->r;
	const struct an_maps *m = &r->maps;
	json_key(w, "other_calls");
	json_begin_object(w);
	for (unsigned i = 0; i < ATR_NXCALLS; i++) {
		json_key(w, atr_type_name(ATR_T_XCALL_FIRST + i));
		json_u64(w, r->xcalls[i]);
	}
	json_end_object(w);
	json_key(w, "mapped");
	json_begin_object(w);
	json_key(w, "bytes_at_end");
	json_u64(w, m->mapped);
	json_key(w, "ranges_at_end");
	json_u64(w, m->n);
	json_key(w, "brk_bytes_at_end");
	json_u64(w, m->brk_bytes);
	json_key(w, "peak_bytes");
	json_u64(w, m->peak);
	json_key(w, "peak_ns");
	json_u64(w, ns(c->f, m->peak_ts));
	json_key(w, "stacks");
	json_begin_array(w);
	struct map_row *v;
	long n = map_rows(c, &v);
	for (long i = 0; i < n && (top == 0 || (size_t)i < top); i++) {
		json_begin_object(w);
		json_key(w, "stack_id");
		json_u64(w, v[i].stack);
		json_key(w, "calls");
		json_u64(w, v[i].calls);
		json_key(w, "bytes");
		json_u64(w, v[i].bytes);
		json_key(w, "at_peak_bytes");
		json_u64(w, v[i].at_peak);
		json_key(w, "live_bytes_at_end");
		json_u64(w, v[i].live);
		json_frames(w, c, v[i].stack);
		json_end_object(w);
	}
	if (n >= 0)
		free(v);
	json_end_array(w);
	json_end_object(w);
	struct an_session_account a;
	json_key(w, "rss_account");
	if (an_session_rss_account(c, &a) < 0) {
		json_null(w);
		return;
	}
	json_begin_object(w);
	json_key(w, "at_ns");
	json_u64(w, a.t_ns);
	json_key(w, "rss");
	json_u64(w, a.rss);
	json_key(w, "heap_live");
	json_u64(w, a.heap);
	json_key(w, "mapped");
	json_u64(w, a.mapped);
	json_key(w, "tracer");
	json_u64(w, a.tracer);
	json_key(w, "rest");
	json_i64(w, a.rest);
	json_end_object(w);
}

void out_print_report_json(struct json_writer *w, struct an_session *c, enum an_by by, size_t top)
{
	const struct an_report *r = &c->r;
	json_begin_object(w);
	an_session_json_ident(w, c);
	json_key(w, "distinct_stacks");
	json_u64(w, atr_stack_count(c->f));
	json_key(w, "modules");
	json_u64(w, atr_module_count(c->f));
	json_key(w, "duration_ns");
	json_u64(w, r->records ? ns(c->f, r->last_ts - r->first_ts) : 0);
	an_session_json_counts(w, c);
	if (atr_get_info(c->f)->status & ATR_STATUS_ATTACHED) {
		json_key(w, "pre_attach_frees");
		json_u64(w, r->pre_attach_frees);
	}
	json_key(w, "peak_live_ns");
	json_u64(w, ns(c->f, r->peak_ts));
	json_maps(w, c, top);
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

static void text_list(struct an_session *c, enum an_by by, size_t top, const char *title)
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

/* The program's mappings by stack, most bytes mapped first. */
static void text_maps(struct an_session *c, size_t top)
{
	struct map_row *v;
	long n = map_rows(c, &v);
	if (n <= 0) {
		if (n == 0)
			free(v);
		return;
	}
	char a[UTIL_FMT_BUF], b[UTIL_FMT_BUF], d[UTIL_FMT_BUF], e[UTIL_FMT_BUF];
	printf("\nprogram mappings by stack (mmap, %ld %s)\n", n, n == 1 ? "stack" : "stacks");
	for (long i = 0; i < n && (top == 0 || (size_t)i < top); i++) {
		printf("  #%ld  %s mapped in %s calls, %s at the mapped peak, %s at end\n", i + 1,
		       util_fmt_bytes(a, sizeof(a), v[i].bytes),
		       util_fmt_u64(b, sizeof(b), v[i].calls),
		       util_fmt_bytes(d, sizeof(d), v[i].at_peak),
		       util_fmt_bytes(e, sizeof(e), v[i].live));
		text_frames(c, v[i].stack);
	}
	if (top && n > (long)top)
		printf("  ... %ld more (--top 0 shows all)\n", n - (long)top);
	free(v);
}

int out_print_report_text(struct an_session *c, enum an_by by, size_t top, int first)
{
	int rc = 0;
	const struct atr_info *in = atr_get_info(c->f);
	const struct an_report *r = &c->r;
	char a[UTIL_FMT_BUF], b[UTIL_FMT_BUF];
	if (!first)
		printf("\n");
	printf("process %" PRIu32 "  (%s)  %s\n", in->pid, in->path, in->cmdline);
	printf("  %-18s %s\n", "duration",
	       util_fmt_ns(a, sizeof(a), r->records ? ns(c->f, r->last_ts - r->first_ts) : 0));
	printf("  %-18s %" PRIu32 "\n", "threads", in->threads);
	if (r->sample_rate)
		printf("  %-18s every %s bytes: counts and bytes below are ESTIMATES "
		       "(docs/SAMPLING.md)\n",
		       "sampled", util_fmt_u64(a, sizeof(a), r->sample_rate));
	printf("  %-18s %s", "calls", util_fmt_u64(a, sizeof(a), r->total_calls));
	for (unsigned t = 1; t <= ATR_T_CALL_LAST; t++)
		if (r->calls[t])
			printf("  %s %s", atr_type_name(t),
			       util_fmt_u64(b, sizeof(b), r->calls[t]));
	printf("\n");
	int any_x = 0;
	for (unsigned i = 0; i < ATR_NXCALLS; i++)
		if (r->xcalls[i]) {
			if (!any_x++)
				printf("  %-18s", "other calls");
			printf(" %s %s", atr_type_name(ATR_T_XCALL_FIRST + i),
			       util_fmt_u64(a, sizeof(a), r->xcalls[i]));
		}
	if (any_x)
		printf("\n");
	printf("  %-18s %s (%s)\n", "bytes requested",
	       util_fmt_u64(a, sizeof(a), r->bytes_requested),
	       util_fmt_bytes(b, sizeof(b), r->bytes_requested));
	uint64_t pns = ns(c->f, r->peak_ts);
	printf("  %-18s %s (%s) at %" PRIu64 ".%09" PRIu64 " s\n", "peak live bytes",
	       util_fmt_u64(a, sizeof(a), r->peak_live_bytes),
	       util_fmt_bytes(b, sizeof(b), r->peak_live_bytes), pns / 1000000000u,
	       pns % 1000000000u);
	printf("  %-18s %s bytes in %s blocks\n",
	       in->status & ATR_STATUS_SNAPSHOT ? "live (at snapshot)" : "leaked (at exit)",
	       util_fmt_u64(a, sizeof(a), r->live_bytes),
	       util_fmt_u64(b, sizeof(b), r->live_blocks));
	if (c->o && c->o->nsupp)
		printf("  %-18s %s bytes in %s blocks (--suppress)\n", "suppressed leaks",
		       util_fmt_u64(a, sizeof(a), c->supp_bytes),
		       util_fmt_u64(b, sizeof(b), c->supp_blocks));
	if (c->o && c->o->any_filter)
		printf("  %-18s %s allocation calls (not counted above)\n", "filtered out",
		       util_fmt_u64(a, sizeof(a), r->excluded_calls));
	const struct an_maps *m = &r->maps;
	if (m->maps || m->brk_net) {
		uint64_t mns = ns(c->f, m->peak_ts);
		printf("  %-18s %s at end in %zu ranges, peak %s at %" PRIu64 ".%09" PRIu64
		       " s (the program's own mmap/brk)\n",
		       "mapped", util_fmt_bytes(a, sizeof(a), m->mapped), m->n,
		       util_fmt_bytes(b, sizeof(b), m->peak), mns / 1000000000u, mns % 1000000000u);
	}
	struct an_session_account acc;
	if (an_session_rss_account(c, &acc) == 0) {
		char d[UTIL_FMT_BUF], e[UTIL_FMT_BUF], t[UTIL_FMT_BUF + 16] = "";
		if (acc.tracer)
			snprintf(t, sizeof(t), " + tracer %s",
				 util_fmt_bytes(e, sizeof(e), acc.tracer));
		/* rest < 0: live blocks with pages never written (large
		   blocks are mapped lazily), not a negative overhead */
		printf("  %-18s at peak RSS %s (%" PRIu64 ".%03" PRIu64 " s) = heap live %s + "
		       "mappings %s%s %s %s %s\n",
		       "RSS account", util_fmt_bytes(a, sizeof(a), acc.rss), acc.t_ns / 1000000000u,
		       acc.t_ns % 1000000000u / 1000000u, util_fmt_bytes(b, sizeof(b), acc.heap),
		       util_fmt_bytes(d, sizeof(d), acc.mapped), t, acc.rest < 0 ? "-" : "+",
		       util_fmt_bytes(e, sizeof(e),
				      acc.rest < 0 ? (uint64_t)-acc.rest : (uint64_t)acc.rest),
		       acc.rest < 0 ? "at least, not resident (allocated, never written)"
				    : "rest (allocator overhead, code, stacks)");
	}
	if (r->sample_rate)
		printf("  %-18s not known in a sampled trace\n", "temporary");
	else
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
			rc = ATR_E_NOMEM;
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
		text_list(c, by, top,
			  by == AN_BY_CALLS    ? "hottest call paths by calls"
			  : by == AN_BY_BYTES  ? "hottest call paths by bytes"
			  : by == AN_BY_PEAK   ? "live at the peak"
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
	text_maps(c, top);
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
	return rc;
}
