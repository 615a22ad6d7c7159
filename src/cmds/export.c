/* export.c - `alloctrace export TRACE --format folded|perfetto|pprof|massif`.
 *
 *   folded    flamegraph.pl / speedscope input (the flamegraph command's
 *             writer)
 *   perfetto  Chrome trace-event JSON (ui.perfetto.dev, chrome://tracing):
 *             counter tracks for the live heap, calls/s per thread and RSS,
 *             instant events for markers and control calls
 *   pprof     profile.proto, gzip'd: alloc_objects/alloc_space/
 *             inuse_objects/inuse_space per call stack (`pprof -http`)
 *   massif    valgrind massif's out format (ms_print, massif-visualizer):
 *             heap over time, the peak's and the end's allocation trees
 * docs/EXPORT.md says what each holds and how it was checked.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef ATR_HAVE_ZLIB
#include <zlib.h>
#endif

#include "cmds/cmds.h"
#include "cmds/rep_common.h"
#include "util_buf.h"
#include "util_hmap.h"
#include "util_json.h"
#include "util_msg.h"

#define EXPORT_BUCKETS 4000u /* perfetto / massif time resolution */

static void export_usage(FILE *out)
{
	fprintf(out, "usage: alloctrace export --format FORMAT [-o FILE] [--by KEY] [--pid PID]\n"
		     "                         FILE_OR_DIR...\n"
		     "Write a trace in another tool's format (docs/EXPORT.md):\n"
		     "  folded    folded stacks for flamegraph.pl / speedscope (--by: calls,\n"
		     "            bytes (default), peak, leaked, temporary); every process\n"
		     "  perfetto  Chrome trace-event JSON for ui.perfetto.dev: live heap,\n"
		     "            calls/s per thread and RSS counters, markers; every process\n"
		     "  pprof     gzip'd profile.proto for `pprof`: alloc_objects, alloc_space,\n"
		     "            inuse_objects, inuse_space (inuse = live at exit) per stack\n"
		     "  massif    valgrind massif output for ms_print / massif-visualizer:\n"
		     "            heap over time, detailed trees at the peak and at exit\n"
		     "pprof and massif hold one process: the first (the one started first)\n"
		     "unless --pid PID names another.\n"
		     "  -o FILE   output file (default: standard output)\n");
}

/* ---- perfetto (Chrome JSON trace events) ------------------------------------ */

static double us_of(const struct rep_ctx *c, uint64_t ticks, double base_us)
{
	return base_us + atr_ticks_to_ns(c->f, ticks) / 1e3;
}

static void ev_begin(struct json_writer *w, const char *ph, const char *name, uint32_t pid,
		     uint32_t tid, double ts)
{
	json_begin_object(w);
	json_key(w, "ph");
	json_string(w, ph);
	json_key(w, "name");
	json_string(w, name);
	json_key(w, "pid");
	json_u64(w, pid);
	json_key(w, "tid");
	json_u64(w, tid);
	if (ts >= 0) {
		json_key(w, "ts");
		json_double(w, ts);
	}
}

static void meta_name(struct json_writer *w, const char *what, uint32_t pid, uint32_t tid,
		      const char *name)
{
	ev_begin(w, "M", what, pid, tid, -1);
	json_key(w, "args");
	json_begin_object(w);
	json_key(w, "name");
	json_string(w, name);
	json_end_object(w);
	json_end_object(w);
}

static uint32_t tid_of_serial(const struct rep_ctx *c, uint32_t serial)
{
	for (uint32_t i = 0; i < c->r.nthreads; i++)
		if (c->r.threads[i].serial == serial)
			return c->r.threads[i].tid;
	return 0;
}

int rep_write_perfetto(FILE *out, struct rep_ctx *cs, size_t n)
{
	uint64_t t0 = UINT64_MAX;
	for (size_t i = 0; i < n; i++) {
		uint64_t s = atr_get_info(cs[i].f)->start_realtime_ns;
		if (s < t0)
			t0 = s;
	}
	struct json_writer w;
	json_init(&w, out, 0);
	json_begin_object(&w);
	json_key(&w, "displayTimeUnit");
	json_string(&w, "ms");
	json_key(&w, "otherData");
	json_begin_object(&w);
	json_key(&w, "generator");
	json_string(&w, "alloctrace export --format perfetto");
	json_end_object(&w);
	json_key(&w, "traceEvents");
	json_begin_array(&w);
	for (size_t i = 0; i < n; i++) {
		struct rep_ctx *c = &cs[i];
		const struct atr_info *in = atr_get_info(c->f);
		const struct an_timeline *tl = &c->tl;
		uint32_t pid = in->pid;
		double base = (double)(in->start_realtime_ns - t0) / 1e3;
		char name[512];
		snprintf(name, sizeof(name), "%s (pid %u)", *in->exe ? an_basename(in->exe) : "?",
			 pid);
		meta_name(&w, "process_name", pid, 0, name);
		for (uint32_t k = 0; k < c->r.nthreads; k++) {
			snprintf(name, sizeof(name), "T%u", c->r.threads[k].serial);
			meta_name(&w, "thread_name", pid, c->r.threads[k].tid, name);
		}
		/* live heap: each bucket's maximum at the bucket's start, then
		 * its last value at its end (so the peak is never lost) */
		for (uint32_t k = 0; k < tl->n; k++) {
			double ts = us_of(c, (uint64_t)k * tl->width, base);
			ev_begin(&w, "C", "live heap", pid, 0, ts);
			json_key(&w, "args");
			json_begin_object(&w);
			json_key(&w, "bytes");
			json_u64(&w, tl->b[k].max);
			json_end_object(&w);
			json_end_object(&w);
		}
		if (tl->n) {
			ev_begin(&w, "C", "live heap", pid, 0, us_of(c, c->r.last_ts, base));
			json_key(&w, "args");
			json_begin_object(&w);
			json_key(&w, "bytes");
			json_u64(&w, c->r.live_bytes);
			json_end_object(&w);
			json_end_object(&w);
		}
		/* calls per second: one arg (one track) per thread */
		double bucket_s = atr_ticks_to_ns(c->f, tl->width) / 1e9;
		for (uint32_t k = 0; k < tl->n && bucket_s > 0; k++) {
			ev_begin(&w, "C", "calls/s", pid, 0,
				 us_of(c, (uint64_t)k * tl->width, base));
			json_key(&w, "args");
			json_begin_object(&w);
			for (uint32_t row = 0; row < tl->nthreads; row++) {
				uint64_t cnt = an_timeline_tcalls(tl, row, k);
				int any = 0;
				for (uint32_t q = 0; q < tl->n && !any; q++)
					any = an_timeline_tcalls(tl, row, q) != 0;
				if (!any)
					continue;
				if (row == tl->nthreads - 1)
					snprintf(name, sizeof(name), "other threads");
				else
					snprintf(name, sizeof(name), "T%u", row + 1);
				json_key(&w, name);
				json_double(&w, (double)cnt / bucket_s);
			}
			json_end_object(&w);
			json_end_object(&w);
		}
		if (c->have_rss) {
			size_t stride = c->rss.n / 20000 + 1;
			for (size_t k = 0; k < c->rss.n; k += stride) {
				int64_t ns = rep_rss_ns(c, k);
				if (ns < 0)
					continue; /* sampled before the trace began */
				ev_begin(&w, "C", "memory", pid, 0, base + (double)ns / 1e3);
				json_key(&w, "args");
				json_begin_object(&w);
				json_key(&w, "rss");
				json_u64(&w, c->rss.s[k].rss);
				json_key(&w, "vmsize");
				json_u64(&w, c->rss.s[k].vmsize);
				json_end_object(&w);
				json_end_object(&w);
			}
		}
		for (size_t k = 0; k < tl->nmarks; k++) {
			const struct an_tl_mark *m = &tl->marks[k];
			static const char *const ctl[] = {"?",	    "start", "stop", "pause",
							  "resume", "sync",  "exit"};
			const char *label = m->type == ATR_T_MARKER  ? m->label
					    : m->arg <= ATR_CTL_EXIT ? ctl[m->arg]
								     : "control";
			ev_begin(&w, "i", label, pid, tid_of_serial(c, m->thread),
				 us_of(c, m->ts, base));
			json_key(&w, "s");
			json_string(&w, "p");
			json_key(&w, "cat");
			json_string(&w, m->type == ATR_T_MARKER ? "marker" : "control");
			json_end_object(&w);
		}
		ev_begin(&w, "i", "peak live heap", pid, 0, us_of(c, c->r.peak_ts, base));
		json_key(&w, "s");
		json_string(&w, "p");
		json_key(&w, "args");
		json_begin_object(&w);
		json_key(&w, "bytes");
		json_u64(&w, c->r.peak_live_bytes);
		json_end_object(&w);
		json_end_object(&w);
	}
	json_end_array(&w);
	json_end_object(&w);
	json_finish(&w);
	return 0;
}

/* ---- pprof (profile.proto) ---------------------------------------------------- */

/* protobuf wire format: varints and length-delimited fields */
struct pb {
	struct util_buf b;
	int nomem;
};

static void pb_raw(struct pb *p, const void *d, size_t n)
{
	if (util_buf_append(&p->b, d, n) < 0)
		p->nomem = 1;
}

static void pb_varint(struct pb *p, uint64_t v)
{
	unsigned char t[10];
	size_t n = 0;
	do {
		t[n] = (unsigned char)(v & 0x7f);
		v >>= 7;
		if (v)
			t[n] |= 0x80;
		n++;
	} while (v);
	pb_raw(p, t, n);
}

/* field with wire type 0 (varint); zero values are left out (proto3) */
static void pb_uint(struct pb *p, unsigned field, uint64_t v)
{
	if (!v)
		return;
	pb_varint(p, (uint64_t)field << 3);
	pb_varint(p, v);
}

static void pb_bytes(struct pb *p, unsigned field, const void *d, size_t n)
{
	pb_varint(p, (uint64_t)field << 3 | 2);
	pb_varint(p, n);
	pb_raw(p, d, n);
}

static void pb_msg(struct pb *p, unsigned field, struct pb *sub)
{
	if (sub->nomem)
		p->nomem = 1;
	pb_bytes(p, field, sub->b.data ? sub->b.data : "", sub->b.len);
	util_buf_free(&sub->b);
	sub->b = (struct util_buf){0};
}

/* packed repeated varints */
static void pb_packed(struct pb *p, unsigned field, const uint64_t *v, size_t n)
{
	struct pb s = {0};
	for (size_t i = 0; i < n; i++)
		pb_varint(&s, v[i]);
	pb_msg(p, field, &s);
}

struct pprof_state {
	struct rep_ctx *c;
	struct rep_strtab strs;
	struct util_hmap loc_by_ip;  /* ip -> location id */
	struct util_hmap fn_by_key;  /* (name idx << 32 | file idx) -> function id */
	struct util_hmap map_by_mod; /* module index -> mapping id */
	struct pb locs, fns, maps;
	uint64_t nloc, nfn, nmap;
	int nomem;
};

static int64_t str_id(struct pprof_state *s, const char *str)
{
	long i = rep_str_intern(&s->strs, str ? str : "");
	if (i < 0) {
		s->nomem = 1;
		return 0;
	}
	return i;
}

static uint64_t mapping_of(struct pprof_state *s, uint64_t ip, uint32_t stack)
{
	long m = atr_module_find(s->c->f, ip, stack);
	if (m < 0)
		return 0;
	uint64_t id;
	if (util_hmap_lookup(&s->map_by_mod, (uint64_t)m, &id))
		return id;
	const struct atr_module *md = atr_module_get(s->c->f, (size_t)m);
	id = ++s->nmap;
	if (util_hmap_insert(&s->map_by_mod, (uint64_t)m, id, NULL) < 0)
		s->nomem = 1;
	char bid[2 * 64 + 1] = "";
	for (uint32_t i = 0; i < md->build_id_len && i < 64; i++)
		snprintf(bid + 2 * i, 3, "%02x", md->build_id[i]);
	struct pb mp = {0};
	pb_uint(&mp, 1, id);
	pb_uint(&mp, 2, md->start);
	pb_uint(&mp, 3, md->start + md->size);
	/* ELF address = address - bias; pprof computes address - start + offset */
	pb_uint(&mp, 4, md->start - md->bias);
	pb_uint(&mp, 5, (uint64_t)str_id(s, md->path));
	pb_uint(&mp, 6, (uint64_t)str_id(s, bid));
	pb_uint(&mp, 7, 1);  /* has_functions */
	pb_uint(&mp, 8, 1);  /* has_filenames */
	pb_uint(&mp, 9, 1);  /* has_line_numbers */
	pb_uint(&mp, 10, 1); /* has_inline_frames */
	pb_msg(&s->maps, 3, &mp);
	return id;
}

static uint64_t function_of(struct pprof_state *s, const struct an_frame *fr)
{
	int64_t name = str_id(s, fr->function), file = str_id(s, fr->file ? fr->file : "");
	uint64_t key = (uint64_t)name << 32 | (uint64_t)file, id;
	if (util_hmap_lookup(&s->fn_by_key, key, &id))
		return id;
	id = ++s->nfn;
	if (util_hmap_insert(&s->fn_by_key, key, id, NULL) < 0)
		s->nomem = 1;
	struct pb f = {0};
	pb_uint(&f, 1, id);
	pb_uint(&f, 2, (uint64_t)name);
	pb_uint(&f, 3, (uint64_t)name); /* system_name */
	pb_uint(&f, 4, (uint64_t)file);
	pb_msg(&s->fns, 5, &f);
	return id;
}

static uint64_t location_of(struct pprof_state *s, uint64_t ip, uint32_t stack)
{
	uint64_t id;
	if (util_hmap_lookup(&s->loc_by_ip, ip, &id))
		return id;
	id = ++s->nloc;
	if (util_hmap_insert(&s->loc_by_ip, ip, id, NULL) < 0)
		s->nomem = 1;
	struct pb l = {0};
	pb_uint(&l, 1, id);
	pb_uint(&l, 2, mapping_of(s, ip, stack));
	pb_uint(&l, 3, ip ? ip - 1 : 0); /* the call instruction */
	const struct an_frame *fr;
	unsigned k = an_symbols_resolve(s->c->sym, ip, stack, &fr);
	/* Line entries: innermost (inlined) first, the caller last */
	for (unsigned j = 0; j < k; j++) {
		if (!fr[j].function)
			continue;
		struct pb ln = {0};
		pb_uint(&ln, 1, function_of(s, &fr[j]));
		pb_uint(&ln, 2, fr[j].line);
		pb_msg(&l, 4, &ln);
	}
	pb_msg(&s->locs, 4, &l);
	return id;
}

static int gzip_out(FILE *out, const void *data, size_t len)
{
#ifdef ATR_HAVE_ZLIB
	z_stream z;
	memset(&z, 0, sizeof(z));
	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -1;
	unsigned char buf[65536];
	z.next_in = (Bytef *)(uintptr_t)data;
	z.avail_in = (uInt)len; /* profiles stay far below 4 GiB */
	int rc;
	do {
		z.next_out = buf;
		z.avail_out = sizeof(buf);
		rc = deflate(&z, Z_FINISH);
		if (rc == Z_STREAM_ERROR)
			break;
		fwrite(buf, 1, sizeof(buf) - z.avail_out, out);
	} while (rc != Z_STREAM_END);
	deflateEnd(&z);
	return rc == Z_STREAM_END ? 0 : -1;
#else
	/* pprof reads an uncompressed profile too */
	return fwrite(data, 1, len, out) == len ? 0 : -1;
#endif
}

int rep_write_pprof(FILE *out, struct rep_ctx *c)
{
	struct pprof_state s;
	memset(&s, 0, sizeof(s));
	s.c = c;
	str_id(&s, ""); /* string_table[0] must be "" */
	struct pb prof = {0}, samples = {0};
	static const char *const types[4][2] = {{"alloc_objects", "count"},
						{"alloc_space", "bytes"},
						{"inuse_objects", "count"},
						{"inuse_space", "bytes"}};
	for (int i = 0; i < 4; i++) {
		struct pb vt = {0};
		pb_uint(&vt, 1, (uint64_t)str_id(&s, types[i][0]));
		pb_uint(&vt, 2, (uint64_t)str_id(&s, types[i][1]));
		pb_msg(&prof, 1, &vt);
	}
	uint64_t *lids = NULL;
	size_t lcap = 0;
	for (size_t i = 0; i < c->r.nst; i++) {
		const struct an_stack_stat *st = &c->r.st[i];
		if (!st->calls && !st->live_blocks)
			continue;
		const uint64_t *ips;
		uint32_t n = 0;
		if (!atr_stack_get(c->f, st->stack, &ips, &n))
			n = 0;
		if (n > lcap) {
			uint64_t *nl = realloc(lids, n * sizeof(*nl));
			if (!nl) {
				s.nomem = 1;
				break;
			}
			lids = nl;
			lcap = n;
		}
		for (uint32_t k = 0; k < n; k++) /* leaf first, as pprof wants */
			lids[k] = location_of(&s, ips[k], st->stack);
		struct pb sm = {0};
		pb_packed(&sm, 1, lids, n);
		uint64_t v[4] = {st->calls, st->bytes, st->live_blocks, st->live_bytes};
		pb_packed(&sm, 2, v, 4);
		pb_msg(&samples, 2, &sm);
	}
	free(lids);
	pb_raw(&prof, samples.b.data ? samples.b.data : "", samples.b.len);
	pb_raw(&prof, s.maps.b.data ? s.maps.b.data : "", s.maps.b.len);
	pb_raw(&prof, s.locs.b.data ? s.locs.b.data : "", s.locs.b.len);
	pb_raw(&prof, s.fns.b.data ? s.fns.b.data : "", s.fns.b.len);
	const struct atr_info *in = atr_get_info(c->f);
	int64_t dflt = str_id(&s, "alloc_space");
	struct pb pt = {0};
	pb_uint(&pt, 1, (uint64_t)str_id(&s, "space"));
	pb_uint(&pt, 2, (uint64_t)str_id(&s, "bytes"));
	int64_t comment = str_id(&s, "alloctrace export --format pprof; inuse = live at exit");
	/* the string table last: everything above interned its strings */
	for (size_t i = 0; i < s.strs.n; i++)
		pb_bytes(&prof, 6, s.strs.s[i], strlen(s.strs.s[i]));
	pb_uint(&prof, 9, in->start_realtime_ns);
	pb_uint(&prof, 10, c->r.records ? atr_ticks_to_ns_u64(c->f, c->r.last_ts) : 0);
	pb_msg(&prof, 11, &pt);
	pb_uint(&prof, 12, 1); /* period: every allocation is recorded */
	pb_packed(&prof, 13, (const uint64_t[]){(uint64_t)comment}, 1);
	pb_uint(&prof, 14, (uint64_t)dflt);
	int rc = 0;
	if (s.nomem || prof.nomem || samples.nomem || s.maps.nomem || s.locs.nomem || s.fns.nomem) {
		util_err("export: out of memory");
		rc = -1;
	} else if (gzip_out(out, prof.b.data, prof.b.len) < 0) {
		util_err("export: compression failed");
		rc = -1;
	}
	util_buf_free(&prof.b);
	util_buf_free(&samples.b);
	util_buf_free(&s.maps.b);
	util_buf_free(&s.locs.b);
	util_buf_free(&s.fns.b);
	util_hmap_destroy(&s.loc_by_ip);
	util_hmap_destroy(&s.fn_by_key);
	util_hmap_destroy(&s.map_by_mod);
	rep_str_free(&s.strs);
	return rc;
}

/* ---- massif ------------------------------------------------------------------ */

/* A caller tree: the root's children are the functions that called the
 * allocator, their children those functions' callers. */
struct mnode {
	uint32_t label; /* index in the string table */
	uint32_t first, next;
	uint64_t bytes;
};

struct mtree {
	struct mnode *n;
	size_t count, cap;
	struct rep_strtab labels;
	int nomem;
};

static uint32_t mt_new(struct mtree *t, uint32_t label)
{
	if (t->count == t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 1024;
		struct mnode *nn = realloc(t->n, nc * sizeof(*nn));
		if (!nn) {
			t->nomem = 1;
			return 0;
		}
		t->n = nn;
		t->cap = nc;
	}
	t->n[t->count] = (struct mnode){label, UINT32_MAX, UINT32_MAX, 0};
	return (uint32_t)t->count++;
}

static uint32_t mt_child(struct mtree *t, uint32_t parent, uint32_t label)
{
	for (uint32_t c = t->n[parent].first; c != UINT32_MAX; c = t->n[c].next)
		if (t->n[c].label == label)
			return c;
	uint32_t c = mt_new(t, label);
	if (t->nomem)
		return 0;
	t->n[c].next = t->n[parent].first;
	t->n[parent].first = c;
	return c;
}

static void mt_build(struct mtree *t, struct rep_ctx *c, int at_peak)
{
	mt_new(t, 0);
	for (size_t i = 0; i < c->r.nst && !t->nomem; i++) {
		const struct an_stack_stat *st = &c->r.st[i];
		uint64_t v = at_peak ? st->peak_bytes : st->live_bytes;
		if (!v)
			continue;
		t->n[0].bytes += v;
		const uint64_t *ips;
		uint32_t nf;
		uint32_t node = 0;
		if (!atr_stack_get(c->f, st->stack, &ips, &nf)) {
			long l = rep_str_intern(&t->labels, "0x0: (no stack recorded)");
			node = mt_child(t, node, l < 0 ? 0 : (uint32_t)l);
			t->n[node].bytes += v;
			continue;
		}
		for (uint32_t k = 0; k < nf && !t->nomem; k++) {
			const struct an_frame *fr;
			unsigned m = an_symbols_resolve(c->sym, ips[k], st->stack, &fr);
			for (unsigned j = 0; j < m; j++) {
				char lab[1024], b[256];
				const char *name = an_frame_name(&fr[j], b, sizeof(b));
				if (fr[j].file)
					snprintf(lab, sizeof(lab), "0x%" PRIX64 ": %s (%s:%u)",
						 ips[k], name, fr[j].file, fr[j].line);
				else if (fr[j].module)
					snprintf(lab, sizeof(lab), "0x%" PRIX64 ": %s (in %s)",
						 ips[k], name, fr[j].module);
				else
					snprintf(lab, sizeof(lab), "0x%" PRIX64 ": %s", ips[k],
						 name);
				for (char *q = lab; *q; q++)
					if (*q == '\n')
						*q = ' ';
				long l = rep_str_intern(&t->labels, lab);
				if (l < 0) {
					t->nomem = 1;
					break;
				}
				node = mt_child(t, node, (uint32_t)l);
				if (t->nomem)
					break;
				t->n[node].bytes += v;
			}
		}
	}
}

static struct mtree *mt_sort_tree;

static int mt_cmp(const void *a, const void *b)
{
	const struct mnode *x = &mt_sort_tree->n[*(const uint32_t *)a];
	const struct mnode *y = &mt_sort_tree->n[*(const uint32_t *)b];
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return x->label < y->label ? -1 : x->label > y->label;
}

static void mt_print(FILE *out, struct mtree *t, uint32_t node, unsigned depth)
{
	uint32_t nk = 0;
	for (uint32_t c = t->n[node].first; c != UINT32_MAX; c = t->n[c].next)
		nk++;
	uint32_t *kids = malloc(nk * sizeof(*kids) + 1);
	if (!kids) {
		nk = 0;
	} else {
		nk = 0;
		for (uint32_t c = t->n[node].first; c != UINT32_MAX; c = t->n[c].next)
			kids[nk++] = c;
		mt_sort_tree = t;
		qsort(kids, nk, sizeof(kids[0]), mt_cmp);
	}
	fprintf(out, "%*sn%u: %" PRIu64 " %s\n", (int)depth, "", nk, t->n[node].bytes,
		node == 0 ? "(heap allocation functions) malloc/new/new[], --alloc-fns, etc."
			  : t->labels.s[t->n[node].label]);
	for (uint32_t i = 0; i < nk; i++)
		mt_print(out, t, kids[i], depth + 1);
	free(kids);
}

static void massif_snapshot(FILE *out, unsigned num, double ms, uint64_t bytes, const char *tree,
			    struct rep_ctx *c, int at_peak)
{
	fprintf(out,
		"#-----------\nsnapshot=%u\n#-----------\ntime=%.3f\nmem_heap_B=%" PRIu64
		"\nmem_heap_extra_B=0\nmem_stacks_B=0\nheap_tree=%s\n",
		num, ms, bytes, tree);
	if (!strcmp(tree, "empty"))
		return;
	struct mtree t;
	memset(&t, 0, sizeof(t));
	mt_build(&t, c, at_peak);
	if (!t.nomem && t.count)
		mt_print(out, &t, 0, 0);
	else
		fprintf(out,
			"n0: %" PRIu64 " (heap allocation functions) malloc/new/new[], "
			"--alloc-fns, etc.\n",
			bytes);
	free(t.n);
	rep_str_free(&t.labels);
}

int rep_write_massif(FILE *out, struct rep_ctx *c)
{
	const struct atr_info *in = atr_get_info(c->f);
	const struct an_timeline *tl = &c->tl;
	fprintf(out, "desc: alloctrace export --format massif (requested bytes; no extra-heap or "
		     "stack data)\n");
	fprintf(out, "cmd: %s\n", *in->cmdline ? in->cmdline : in->exe);
	fprintf(out, "time_unit: ms\n");
	/* up to 100 snapshots: the live bytes at the end of evenly spaced
	 * groups of buckets, the peak (detailed) in its place, the end
	 * (detailed: what leaked) */
	unsigned groups = tl->n < 98 ? tl->n : 98, num = 0;
	double peak_ms = atr_ticks_to_ns(c->f, c->r.peak_ts) / 1e6;
	int peak_done = 0;
	massif_snapshot(out, num++, 0.0, 0, "empty", c, 0);
	for (unsigned g = 0; g < groups; g++) {
		uint32_t last = (uint32_t)(((uint64_t)(g + 1) * tl->n) / groups) - 1;
		uint64_t end_ticks = (uint64_t)(last + 1) * tl->width;
		if (end_ticks > c->r.last_ts)
			end_ticks = c->r.last_ts;
		double ms = atr_ticks_to_ns(c->f, end_ticks) / 1e6;
		if (!peak_done && peak_ms <= ms) {
			massif_snapshot(out, num++, peak_ms, c->r.peak_live_bytes, "peak", c, 1);
			peak_done = 1;
		}
		if (g == groups - 1)
			break; /* the end is the detailed one below */
		massif_snapshot(out, num++, ms, tl->b[last].last, "empty", c, 0);
	}
	if (!peak_done)
		massif_snapshot(out, num++, peak_ms, c->r.peak_live_bytes, "peak", c, 1);
	massif_snapshot(out, num++, atr_ticks_to_ns(c->f, c->r.last_ts) / 1e6, c->r.live_bytes,
			"detailed", c, 0);
	return ferror(out) ? -1 : 0;
}

/* ---- command ------------------------------------------------------------------ */

int cmd_export(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"format", required_argument, NULL, 'f'}, {"output", required_argument, NULL, 'o'},
	    {"by", required_argument, NULL, 'b'},     {"pid", required_argument, NULL, 'p'},
	    {"help", no_argument, NULL, 'h'},	      {NULL, 0, NULL, 0},
	};
	const char *format = NULL, *outpath = NULL;
	enum an_by by = AN_BY_BYTES;
	long want_pid = -1;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "f:o:b:p:h", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			format = optarg;
			break;
		case 'o':
			outpath = optarg;
			break;
		case 'b': {
			int b = an_by_parse(optarg);
			if (b < 0) {
				util_err("export: unknown --by '%s' (calls, bytes, peak, leaked, "
					 "temporary)",
					 optarg);
				return 2;
			}
			by = (enum an_by)b;
			break;
		}
		case 'p': {
			char *end;
			long v = strtol(optarg, &end, 10);
			if (*end || end == optarg || v < 0) {
				util_err("export: bad --pid '%s'", optarg);
				return 2;
			}
			want_pid = v;
			break;
		}
		case 'h':
			export_usage(stdout);
			return 0;
		default:
			export_usage(stderr);
			return 2;
		}
	}
	enum { F_FOLDED, F_PERFETTO, F_PPROF, F_MASSIF } fmt;
	if (!format) {
		util_err("export: --format is required (folded, perfetto, pprof, massif)");
		return 2;
	}
	if (!strcmp(format, "folded"))
		fmt = F_FOLDED;
	else if (!strcmp(format, "perfetto") || !strcmp(format, "chrome"))
		fmt = F_PERFETTO;
	else if (!strcmp(format, "pprof"))
		fmt = F_PPROF;
	else if (!strcmp(format, "massif"))
		fmt = F_MASSIF;
	else {
		util_err("export: unknown --format '%s' (folded, perfetto, pprof, massif)", format);
		return 2;
	}
	if (optind >= argc) {
		util_err("export: no trace file or directory given");
		export_usage(stderr);
		return 2;
	}
	/* the trace files, in order */
	char **all = NULL;
	size_t nall = 0;
	int rc = 0;
	for (int a = optind; a < argc; a++) {
		char **paths;
		size_t n;
		if (cmdu_list(argv[a], &paths, &n)) {
			rc = 1;
			continue;
		}
		char **na = realloc(all, (nall + n) * sizeof(*na));
		if (!na) {
			atr_list_free(paths, n);
			util_err("export: out of memory");
			rc = 1;
			break;
		}
		all = na;
		for (size_t i = 0; i < n; i++)
			all[nall++] = strdup(paths[i]);
		atr_list_free(paths, n);
	}
	FILE *out = stdout;
	if (!rc && nall && outpath && !(out = fopen(outpath, "wb"))) {
		util_err("export: %s: %s", outpath, strerror(errno));
		rc = 1;
	}
	uint32_t tlb = fmt == F_FOLDED ? 0 : EXPORT_BUCKETS;
	if (rc || !nall) {
		if (!nall && !rc)
			util_err("export: no trace found");
		rc = 1;
	} else if (fmt == F_FOLDED) {
		for (size_t i = 0; i < nall; i++) {
			struct rep_ctx cx;
			if (!all[i] || rep_open(all[i], &cx, 0)) {
				rc = 1;
				continue;
			}
			rep_print_folded(out, &cx, by);
			rep_close(&cx);
		}
	} else if (fmt == F_PERFETTO) {
		struct rep_ctx *cs = calloc(nall, sizeof(*cs));
		size_t n = 0;
		for (size_t i = 0; cs && i < nall; i++) {
			if (!all[i] || rep_open(all[i], &cs[n], tlb))
				rc = 1;
			else
				n++;
		}
		if (!cs) {
			util_err("export: out of memory");
			rc = 1;
		} else if (n && rep_write_perfetto(out, cs, n) < 0) {
			rc = 1;
		}
		for (size_t i = 0; i < n; i++)
			rep_close(&cs[i]);
		free(cs);
	} else {
		/* one process: --pid, else the first */
		struct rep_ctx cx;
		int found = 0;
		for (size_t i = 0; i < nall && !found; i++) {
			if (!all[i] || rep_open(all[i], &cx, tlb)) {
				rc = 1;
				continue;
			}
			if (want_pid >= 0 && atr_get_info(cx.f)->pid != (uint32_t)want_pid) {
				rep_close(&cx);
				continue;
			}
			found = 1;
			if (nall > 1 && want_pid < 0)
				util_warn("export: %zu processes; writing the first, pid %u (--pid "
					  "chooses)",
					  nall, atr_get_info(cx.f)->pid);
			if ((fmt == F_PPROF ? rep_write_pprof(out, &cx)
					    : rep_write_massif(out, &cx)) < 0)
				rc = 1;
			rep_close(&cx);
		}
		if (!found) {
			if (want_pid >= 0)
				util_err("export: no trace of pid %ld", want_pid);
			rc = 1;
		}
	}
	if (out && (fflush(out) != 0 || ferror(out))) {
		util_err("export: write error on %s", outpath ? outpath : "standard output");
		rc = 1;
	}
	if (out && out != stdout && fclose(out) != 0) {
		util_err("export: %s: %s", outpath, strerror(errno));
		rc = 1;
	}
	for (size_t i = 0; i < nall; i++)
		free(all[i]);
	free(all);
	return rc;
}
