/* out_html.c - `alloctrace report --html`: one self-contained page.
 *
 * The page is the CSS and JS of src/output/assets/ (compiled in at build
 * time, see src/CMakeLists.txt) plus one JSON object per process, embedded
 * in a <script type="application/json"> element.  Its size is bounded by the
 * number of time buckets (an_timeline: at most 2000), threads shown (8 plus
 * "other"), markers and distinct stacks; never by the trace length.
 * docs/REPORT.md describes what the page shows.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/out_assets.h"
#include "analysis/an_group.h"
#include "output/output.h"
#include "util_fmt.h"
#include "util_json.h"
#include "util_strtab.h"

#define HTML_THREADS	8  /* threads drawn one by one; the rest summed */
#define HTML_TOP_FRAMES 40 /* frames listed per stack in the tables */

static double tns(const struct an_session *c, uint64_t ticks)
{
	return atr_ticks_to_ns(c->f, ticks);
}

static void u64_array(struct json_writer *w, const uint64_t *v, size_t n, size_t stride)
{
	json_begin_array(w);
	for (size_t i = 0; i < n; i++)
		json_u64(w, v[i * stride]);
	json_end_array(w);
}

/* ---- frames --------------------------------------------------------------- */

struct name_arg {
	struct util_strtab *names;
	struct json_writer *w;
	int nomem;
};

static void frame_name_idx(void *arg, const struct an_frame *fr)
{
	struct name_arg *a = arg;
	char b[256];
	long i = util_str_intern(a->names, an_frame_name(fr, b, sizeof(b)));
	if (i < 0) {
		a->nomem = 1;
		i = 0;
	}
	json_u64(a->w, (uint64_t)i);
}

/* "function  file:line  [module] (inlined)", innermost first */
static void json_frame_lines(struct json_writer *w, struct an_session *c, uint32_t stack)
{
	const uint64_t *ips;
	uint32_t n;
	unsigned shown = 0, total = 0;
	json_begin_array(w);
	if (atr_stack_get(c->f, stack, &ips, &n)) {
		for (uint32_t i = 0; i < n; i++) {
			const struct an_frame *fr;
			unsigned k = an_symbols_resolve(c->sym, ips[i], stack, &fr);
			for (unsigned j = 0; j < k; j++, total++) {
				if (shown >= HTML_TOP_FRAMES)
					continue;
				char b[256], line[1024];
				int l = snprintf(line, sizeof(line), "%s",
						 an_frame_name(&fr[j], b, sizeof(b)));
				if (fr[j].file && l >= 0 && (size_t)l < sizeof(line))
					l += snprintf(line + l, sizeof(line) - (size_t)l, "  %s:%u",
						      an_basename(fr[j].file), fr[j].line);
				if (fr[j].function && fr[j].module && l >= 0 &&
				    (size_t)l < sizeof(line))
					l += snprintf(line + l, sizeof(line) - (size_t)l, "  [%s]",
						      an_basename(fr[j].module));
				if (fr[j].inlined && l >= 0 && (size_t)l < sizeof(line))
					snprintf(line + l, sizeof(line) - (size_t)l, "  (inlined)");
				json_string(w, line);
				shown++;
			}
		}
		if (total > shown) {
			char more[64];
			snprintf(more, sizeof(more), "... %u more frames", total - shown);
			json_string(w, more);
		}
	} else {
		json_string(w, "(no stack recorded)");
	}
	json_end_array(w);
}

static void json_top(struct json_writer *w, struct an_session *c, enum an_by by, size_t top)
{
	size_t *idx;
	long n = an_report_rank(&c->r, by, &idx);
	json_key(w, an_by_name(by));
	json_begin_object(w);
	json_key(w, "total");
	json_u64(w, n < 0 ? 0 : (uint64_t)n);
	json_key(w, "rows");
	json_begin_array(w);
	for (long i = 0; i < n && (top == 0 || (size_t)i < top); i++) {
		const struct an_stack_stat *st = &c->r.st[idx[i]];
		json_begin_object(w);
		json_key(w, "calls");
		json_u64(w, st->calls);
		json_key(w, "bytes");
		json_u64(w, st->bytes);
		json_key(w, "peak");
		json_u64(w, st->peak_bytes);
		json_key(w, "leaked");
		json_u64(w, st->live_bytes);
		json_key(w, "leaked_blocks");
		json_u64(w, st->live_blocks);
		json_key(w, "temporary");
		json_u64(w, st->temporary);
		json_key(w, "frames");
		json_frame_lines(w, c, st->stack);
		json_end_object(w);
	}
	json_end_array(w);
	json_end_object(w);
	free(idx);
}

/* "functions": {"total": N, "rows": [[name, module, "file:line" | null,
 * self calls, self bytes, self peak, self leaked, total calls, total
 * bytes, total leaked], ...]}: report --group function, the sortable
 * table (rows by self calls, --top of them; 0 = all). */
static void json_functions(struct json_writer *w, struct an_session *c, size_t top)
{
	struct an_group g;
	json_key(w, "functions");
	json_begin_object(w);
	if (an_group_build(&g, AN_GROUP_FUNCTION, c->f, &c->r, c->sym) < 0) {
		json_key(w, "total");
		json_u64(w, 0);
		json_key(w, "rows");
		json_begin_array(w);
		json_end_array(w);
		json_end_object(w);
		return;
	}
	size_t *idx;
	long n = an_group_rank(&g, AN_BY_CALLS, &idx);
	json_key(w, "total");
	json_u64(w, n < 0 ? 0 : (uint64_t)n);
	json_key(w, "rows");
	json_begin_array(w);
	for (long i = 0; i < n && (top == 0 || (size_t)i < top); i++) {
		const struct an_group_row *r = &g.rows[idx[i]];
		char loc[512];
		json_begin_array(w);
		json_string(w, g.names.s[r->name]);
		json_string(w, g.names.s[r->module]);
		if (r->file != UINT32_MAX) {
			snprintf(loc, sizeof(loc), "%s:%u", an_basename(g.names.s[r->file]),
				 r->line);
			json_string(w, loc);
		} else {
			json_null(w);
		}
		json_u64(w, r->self.calls);
		json_u64(w, r->self.bytes);
		json_u64(w, r->self.peak_bytes);
		json_u64(w, r->self.leaked_bytes);
		json_u64(w, r->total.calls);
		json_u64(w, r->total.bytes);
		json_u64(w, r->total.leaked_bytes);
		json_end_array(w);
	}
	json_end_array(w);
	json_end_object(w);
	free(idx);
	an_group_free(&g);
}

static void json_hist(struct json_writer *w, const uint64_t *h)
{
	json_begin_array(w);
	for (unsigned b = 0; b < AN_HIST_BUCKETS; b++) {
		if (!h[b])
			continue;
		json_begin_array(w);
		json_u64(w, b);
		json_u64(w, h[b]);
		json_end_array(w);
	}
	json_end_array(w);
}

/* ---- time series ----------------------------------------------------------- */

static int cmp_calls_desc(const void *a, const void *b, void *arg)
{
	const uint64_t *tot = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	if (tot[x] != tot[y])
		return tot[x] > tot[y] ? -1 : 1;
	return x < y ? -1 : x > y;
}

static void json_threads_series(struct json_writer *w, struct an_session *c)
{
	const struct an_timeline *t = &c->tl;
	uint32_t rows = t->nthreads;
	uint64_t *tot = calloc(rows, sizeof(*tot));
	uint32_t *ord = calloc(rows, sizeof(*ord));
	uint64_t *other = calloc(t->n ? t->n : 1, sizeof(*other));
	if (!tot || !ord || !other) {
		free(tot);
		free(ord);
		free(other);
		json_key(w, "thread_series");
		json_begin_array(w);
		json_end_array(w);
		return;
	}
	uint32_t nz = 0;
	for (uint32_t i = 0; i < rows; i++) {
		for (uint32_t k = 0; k < t->n; k++)
			tot[i] += an_timeline_tcalls(t, i, k);
		if (tot[i])
			ord[nz++] = i;
	}
	qsort_r(ord, nz, sizeof(*ord), cmp_calls_desc, tot);
	json_key(w, "thread_series");
	json_begin_array(w);
	uint32_t others = 0;
	for (uint32_t j = 0; j < nz; j++) {
		uint32_t i = ord[j];
		int last_row = i == rows - 1; /* "other" row of the timeline */
		if (j >= HTML_THREADS || last_row) {
			for (uint32_t k = 0; k < t->n; k++)
				other[k] += an_timeline_tcalls(t, i, k);
			others++;
			continue;
		}
		uint32_t tid = 0;
		for (uint32_t q = 0; q < c->r.nthreads; q++)
			if (c->r.threads[q].serial == i + 1)
				tid = c->r.threads[q].tid;
		char name[64];
		snprintf(name, sizeof(name), "T%u (tid %u)", i + 1, tid);
		json_begin_object(w);
		json_key(w, "name");
		json_string(w, name);
		json_key(w, "calls");
		json_u64(w, tot[i]);
		json_key(w, "counts");
		u64_array(w, &t->tcalls[(size_t)i * t->max_buckets], t->n, 1);
		json_end_object(w);
	}
	if (others) {
		char name[64];
		uint64_t sum = 0;
		for (uint32_t k = 0; k < t->n; k++)
			sum += other[k];
		snprintf(name, sizeof(name), "%u other thread%s", others, others == 1 ? "" : "s");
		json_begin_object(w);
		json_key(w, "name");
		json_string(w, name);
		json_key(w, "calls");
		json_u64(w, sum);
		json_key(w, "counts");
		u64_array(w, other, t->n, 1);
		json_end_object(w);
	}
	json_end_array(w);
	free(tot);
	free(ord);
	free(other);
}

/* RSS samples folded into the heap's buckets: max RSS and VmSize per
 * bucket, -1 where no sample fell. */
static void json_rss(struct json_writer *w, struct an_session *c, double bucket_ns)
{
	json_key(w, "rss");
	if (!c->have_rss || bucket_ns <= 0) {
		json_null(w);
		return;
	}
	const struct an_timeline *t = &c->tl;
	uint32_t nb = t->n ? t->n : 1;
	/* samples after the last record still count (the program's exit) */
	int64_t last_ns = an_session_rss_ns(c, c->rss.n - 1);
	if (last_ns > 0 && (double)last_ns / bucket_ns >= nb) {
		double need = (double)last_ns / bucket_ns + 1;
		nb = need > t->max_buckets * 1.05 ? (uint32_t)(t->max_buckets * 1.05)
						  : (uint32_t)need;
	}
	int64_t *rss = malloc(nb * sizeof(*rss)), *vm = malloc(nb * sizeof(*vm));
	if (!rss || !vm) {
		free(rss);
		free(vm);
		json_null(w);
		return;
	}
	for (uint32_t k = 0; k < nb; k++)
		rss[k] = vm[k] = -1;
	uint64_t peak_rss = 0, peak_vm = 0;
	for (size_t i = 0; i < c->rss.n; i++) {
		int64_t ns = an_session_rss_ns(c, i);
		if (ns < 0)
			ns = 0;
		double kb = (double)ns / bucket_ns;
		uint32_t k = kb >= nb ? nb - 1 : (uint32_t)kb;
		/* the program's: the tracer's own memory left out */
		uint64_t prog = atr_rss_program(&c->rss.s[i]);
		if ((int64_t)prog > rss[k])
			rss[k] = (int64_t)prog;
		if ((int64_t)c->rss.s[i].vmsize > vm[k])
			vm[k] = (int64_t)c->rss.s[i].vmsize;
		if (prog > peak_rss)
			peak_rss = prog;
		if (c->rss.s[i].vmsize > peak_vm)
			peak_vm = c->rss.s[i].vmsize;
	}
	json_begin_object(w);
	json_key(w, "samples");
	json_u64(w, c->rss.n);
	json_key(w, "interval_ns");
	json_u64(w, c->rss.interval_ns);
	json_key(w, "peak_rss");
	json_u64(w, peak_rss);
	json_key(w, "peak_vmsize");
	json_u64(w, peak_vm);
	json_key(w, "rss_max");
	json_begin_array(w);
	for (uint32_t k = 0; k < nb; k++)
		json_i64(w, rss[k]);
	json_end_array(w);
	json_key(w, "vmsize_max");
	json_begin_array(w);
	for (uint32_t k = 0; k < nb; k++)
		json_i64(w, vm[k]);
	json_end_array(w);
	json_end_object(w);
	free(rss);
	free(vm);
}

static void json_timeline(struct json_writer *w, struct an_session *c)
{
	const struct an_timeline *t = &c->tl;
	double bucket_ns = tns(c, t->width);
	json_key(w, "timeline");
	json_begin_object(w);
	json_key(w, "bucket_ns");
	json_double(w, bucket_ns);
	json_key(w, "n");
	json_u64(w, t->n);
	json_key(w, "min");
	u64_array(w, &t->b[0].min, t->n, sizeof(*t->b) / sizeof(uint64_t));
	json_key(w, "max");
	u64_array(w, &t->b[0].max, t->n, sizeof(*t->b) / sizeof(uint64_t));
	json_key(w, "last");
	u64_array(w, &t->b[0].last, t->n, sizeof(*t->b) / sizeof(uint64_t));
	json_key(w, "calls");
	u64_array(w, &t->b[0].calls, t->n, sizeof(*t->b) / sizeof(uint64_t));
	/* the program's own mappings (an_maps), null when it made none */
	json_key(w, "mapped_last");
	if (c->r.maps.peak)
		u64_array(w, &t->b[0].mapped_last, t->n, sizeof(*t->b) / sizeof(uint64_t));
	else
		json_null(w);
	json_key(w, "mapped_peak");
	json_u64(w, c->r.maps.peak);
	json_threads_series(w, c);
	json_key(w, "marks");
	json_begin_array(w);
	for (size_t i = 0; i < t->nmarks; i++) {
		const struct an_tl_mark *m = &t->marks[i];
		const char *ctl = atr_ctl_name(m->arg);
		if (!ctl)
			ctl = "control";
		json_begin_object(w);
		json_key(w, "ns");
		json_double(w, tns(c, m->ts));
		json_key(w, "kind");
		json_string(w, m->type == ATR_T_MARKER ? "marker" : ctl);
		json_key(w, "label");
		json_string(w, m->type == ATR_T_MARKER ? m->label : ctl);
		json_key(w, "thread");
		json_u64(w, m->thread);
		json_end_object(w);
	}
	json_end_array(w);
	json_key(w, "dropped_marks");
	json_u64(w, t->dropped_marks);
	json_end_object(w);
	json_rss(w, c, bucket_ns);
}

/* ---- one process -------------------------------------------------------------- */

static int json_process(struct json_writer *w, struct an_session *c, size_t top)
{
	const struct atr_info *in = atr_get_info(c->f);
	const struct an_report *r = &c->r;
	json_begin_object(w);
	an_session_json_ident(w, c);
	json_key(w, "start_realtime_ns");
	json_u64(w, in->start_realtime_ns);
	json_key(w, "end_ns");
	json_double(w, tns(c, r->last_ts));
	json_key(w, "first_ns");
	json_double(w, tns(c, r->first_ts));
	an_session_json_counts(w, c);
	json_key(w, "peak_live_ns");
	json_double(w, tns(c, r->peak_ts));
	json_key(w, "leaked_bytes");
	json_u64(w, r->live_bytes);
	json_key(w, "leaked_blocks");
	json_u64(w, r->live_blocks);
	json_key(w, "temporary");
	json_u64(w, r->temporary);
	json_key(w, "freed_blocks");
	json_u64(w, r->freed_blocks);
	json_key(w, "distinct_stacks");
	json_u64(w, atr_stack_count(c->f));
	json_key(w, "lost_records");
	json_u64(w, in->lost_records);
	json_key(w, "status");
	json_u64(w, in->status);
	json_timeline(w, c);
	json_key(w, "size_hist");
	json_hist(w, r->size_hist);
	json_key(w, "life_hist");
	json_hist(w, r->life_hist);
	json_key(w, "thread_stats");
	json_begin_array(w);
	for (uint32_t i = 0; i < r->nthreads; i++) {
		const struct an_report_thread *t = &r->threads[i];
		double run = t->seen ? tns(c, t->last_ts - t->first_ts) : 0;
		json_begin_array(w);
		json_u64(w, t->serial);
		json_u64(w, t->tid);
		json_u64(w, t->calls);
		json_u64(w, t->bytes);
		json_double(w, run);
		if (r->timing)
			json_double(w, tns(c, t->alloc_ticks));
		else
			json_null(w);
		json_end_array(w);
	}
	json_end_array(w);

	/* flame graph input: every stack with any value, frames as indices
	 * into "names", outermost first */
	struct util_strtab names = {0};
	struct name_arg na = {&names, w, 0};
	json_key(w, "stacks");
	json_begin_array(w);
	for (size_t i = 0; i < r->nst; i++) {
		const struct an_stack_stat *st = &r->st[i];
		if (!st->calls && !st->bytes && !st->peak_bytes && !st->live_bytes)
			continue;
		json_begin_array(w);
		json_u64(w, st->calls);
		json_u64(w, st->bytes);
		json_u64(w, st->peak_bytes);
		json_u64(w, st->live_bytes);
		json_begin_array(w);
		an_session_frames_outer_first(c, st->stack, frame_name_idx, &na);
		json_end_array(w);
		json_end_array(w);
	}
	json_end_array(w);
	json_key(w, "names");
	json_begin_array(w);
	for (size_t i = 0; i < names.n; i++)
		json_string(w, names.s[i]);
	json_end_array(w);
	util_str_free(&names);

	json_key(w, "top");
	json_begin_object(w);
	json_top(w, c, AN_BY_CALLS, top);
	json_top(w, c, AN_BY_BYTES, top);
	json_top(w, c, AN_BY_LEAKED, top);
	json_top(w, c, AN_BY_PEAK, top);
	json_top(w, c, AN_BY_TEMPORARY, top);
	json_end_object(w);
	json_functions(w, c, top);
	json_end_object(w);
	return na.nomem ? -1 : 0;
}
int out_html_write(FILE *out, struct an_session *cs, size_t n, size_t top)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	if (!mem)
		return ATR_E_NOMEM;
	struct json_writer w;
	json_init(&w, mem, 0);
	json_begin_object(&w);
	json_key(&w, "generator");
	json_string(&w, "alloctrace report --html");
	json_key(&w, "processes");
	json_begin_array(&w);
	int rc = 0;
	for (size_t i = 0; i < n; i++)
		if (json_process(&w, &cs[i], top) < 0)
			rc = -1;
	json_end_array(&w);
	json_end_object(&w);
	if (fclose(mem) != 0 || rc < 0) {
		free(buf);
		return ATR_E_NOMEM;
	}

	const struct atr_info *in0 = atr_get_info(cs[0].f);
	const char *exe = an_basename(in0->exe);
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	      "<meta name=\"generator\" content=\"alloctrace\">\n<title>alloctrace: ",
	      out);
	util_fputs_html(out, *exe ? exe : "trace", SIZE_MAX);
	fprintf(out, " (pid %" PRIu32 "%s)</title>\n<style>\n", in0->pid, n > 1 ? " and more" : "");
	fwrite(out_asset_report_css, 1, out_asset_report_css_len, out);
	fputs("</style>\n</head>\n<body data-status=\"loading\">\n"
	      "<div id=\"atr-status\" hidden>loading</div>\n"
	      "<noscript>This report draws its charts with JavaScript.</noscript>\n"
	      "<div id=\"app\"></div>\n"
	      "<script type=\"application/json\" id=\"atr-data\">",
	      out);
	/* '<' never occurs in JSON outside strings; inside, \u003c keeps
	 * "</script>" and "<!--" out of the element */
	for (size_t i = 0; i < len; i++) {
		if (buf[i] == '<')
			fputs("\\u003c", out);
		else
			putc(buf[i], out);
	}
	free(buf);
	fputs("</script>\n<script>\n", out);
	fwrite(out_asset_report_js, 1, out_asset_report_js_len, out);
	fputs("</script>\n</body>\n</html>\n", out);
	return ferror(out) ? ATR_E_WRITE : 0;
}
