/* ch_load.c - see ch_load.h; the tables are explained in
 * docs/CLICKHOUSE.md. */
#define _GNU_SOURCE
#include "ch_load.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "analysis/an_report.h"
#include "analysis/an_symbols.h"
#include "atr_reader.h"
#include "atr_rss.h"
#include "ch_rowbin.h"
#include "ch_schema.h"
#include "liveset/lv_set.h"
#include "util_hmap.h"
#include "util_progress.h"
#include "plat_clock.h"

#ifndef ALLOCTRACE_VERSION_STRING
#define ALLOCTRACE_VERSION_STRING "0.1.0"
#endif

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}
#define FNV_INIT 0xcbf29ce484222325ull

static uint64_t fnv_u64(uint64_t h, uint64_t v)
{
	return fnv(h, &v, sizeof(v));
}

int ch_trace_id(const char *path, uint64_t *id, char *err, size_t errlen)
{
	char **paths;
	size_t n;
	if (atr_list(path, &paths, &n, err, errlen) < 0)
		return -1;
	uint64_t h = FNV_INIT;
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		atr_file *f;
		if (atr_open(paths[i], &f, err, errlen) < 0) {
			rc = -1;
			break;
		}
		const struct atr_info *in = atr_get_info(f);
		h = fnv_u64(h, in->pid);
		h = fnv_u64(h, in->ppid);
		h = fnv_u64(h, in->exec_seq);
		h = fnv_u64(h, in->start_realtime_ns);
		h = fnv_u64(h, in->start_mono_ns);
		h = fnv_u64(h, in->file_size);
		atr_close(f);
	}
	atr_list_free(paths, n);
	*id = h;
	return rc;
}

/* ---- one load ------------------------------------------------------------ */

struct thr {
	uint64_t last_alloc;
	int has_last;
};

struct loader {
	struct ch_client *c;
	const char *db;
	const struct ch_load_opts *o;
	uint64_t trace_id, load_id;
	struct ch_batch b[CH_T_COUNT];
	char *tname[CH_T_COUNT]; /* "db.events" or "db.events_all" */
	char *err;
	size_t errlen;
	uint64_t rows;
	/* the process being loaded */
	atr_file *f;
	uint32_t proc;
	struct lv_set live;	 /* the live blocks; tag = canonical stack */
	struct util_hmap stacks; /* canonical ids used */
	struct util_hmap thr_ix; /* thread serial -> index in thr */
	struct thr *thr;
	uint64_t live_bytes, live_blocks, peak, peak_seq, peak_ts;
	int nomem;
};

static int nomem(struct loader *L)
{
	snprintf(L->err, L->errlen, "out of memory");
	return -1;
}

/* Put the key columns (trace_id, load_id, proc) of a row. */
static void put_key(struct loader *L, struct ch_batch *b)
{
	ch_put_u64(b, L->trace_id);
	ch_put_u64(b, L->load_id);
	ch_put_u32(b, L->proc);
}

static int flush(struct loader *L, enum ch_table t)
{
	struct ch_batch *b = &L->b[t];
	uint64_t n = b->rows;
	if (b->nomem)
		return nomem(L);
	if (ch_batch_flush(b, L->c) < 0) {
		snprintf(L->err, L->errlen, "%s (inserting into %s)", ch_error(L->c), L->tname[t]);
		return -1;
	}
	L->rows += n;
	return 0;
}

static int row_done(struct loader *L, enum ch_table t)
{
	struct ch_batch *b = &L->b[t];
	b->rows++;
	if (b->nomem)
		return nomem(L);
	return ch_batch_full(b) ? flush(L, t) : 0;
}

/* ---- live set: the rules of an_report.c, so the SQL over events gives
 * report's numbers ---- */

/* Releases ptr if live: 1 and *stack, *size of the block, else 0. */
static int kill_ptr(struct loader *L, uint64_t ptr, uint32_t *stack, uint64_t *size)
{
	struct lv_block b;
	if (!lv_died(&L->live, ptr, &b))
		return 0;
	*stack = b.tag;
	*size = b.size;
	L->live_bytes -= b.size;
	L->live_blocks--;
	return 1;
}

/* Makes ret live; 1 and the replaced block's *stack, *size if ret was live
 * already (the trace missed its release), else 0. */
static int make_live(struct loader *L, uint64_t ret, uint64_t size, uint32_t stack,
		     uint32_t *rstack, uint64_t *rsize)
{
	int replaced = kill_ptr(L, ret, rstack, rsize);
	struct lv_block *b;
	if (lv_born(&L->live, ret, size, 0, &b, NULL) < 0) {
		L->nomem = 1;
		return replaced;
	}
	b->tag = stack;
	L->live_bytes += size;
	L->live_blocks++;
	return replaced;
}

static struct thr *thread_of(struct loader *L, uint32_t serial)
{
	uint64_t i;
	return util_hmap_lookup(&L->thr_ix, serial, &i) ? &L->thr[i] : NULL;
}

static uint32_t canon(struct loader *L, uint32_t id)
{
	uint32_t s = id ? atr_stack_canonical(L->f, id) : 0;
	if (s && util_hmap_insert(&L->stacks, s, 1, NULL) < 0)
		L->nomem = 1;
	return s;
}

static const char *event_text(const struct atr_event *ev, char *buf, size_t len)
{
	switch (ev->type) {
	case ATR_T_MARKER:
		snprintf(buf, len, "%.*s", (int)ev->payload_len, (const char *)ev->payload);
		return buf;
	case ATR_T_CONTROL: {
		const char *n = atr_ctl_name(ev->arg);
		return n ? n : "";
	}
	default:
		return "";
	}
}

struct proc_totals {
	uint64_t records, calls, first_ts, last_ts;
};

static int load_events(struct loader *L, struct proc_totals *pt)
{
	const struct atr_info *in = atr_get_info(L->f);
	uint32_t nt = atr_thread_count(L->f);
	L->thr = calloc(nt ? nt : 1, sizeof(*L->thr));
	if (!L->thr)
		return nomem(L);
	for (uint32_t i = 0; i < nt; i++)
		if (util_hmap_insert(&L->thr_ix, atr_thread(L->f, i)->serial, i, NULL) < 0)
			return nomem(L);
	atr_iter *it;
	int rc = atr_iter_new(L->f, &it);
	if (rc < 0) {
		snprintf(L->err, L->errlen, "%s", atr_last_error(L->f));
		return -1;
	}
	struct ch_batch *b = &L->b[CH_T_EVENTS];
	const struct atr_event *ev;
	struct util_progress prog;
	util_progress_start(&prog, "load", in->records_hint);
	uint64_t seq = 0;
	char text[256];
	while ((rc = atr_iter_next_ref(it, &ev)) > 0) {
		util_progress_update(&prog, seq);
		uint32_t stack = 0, rstack = 0;
		uint64_t rsize = 0;
		int born = 0, released = 0, temporary = 0;
		if (ev->type == ATR_EV_REALLOC_RELEASE) {
			released = kill_ptr(L, ev->ptr, &rstack, &rsize);
		} else {
			if (!pt->records++)
				pt->first_ts = ev->ts;
			pt->last_ts = ev->ts;
		}
		if (ev->type >= 1 && ev->type <= ATR_T_CALL_LAST) {
			struct thr *th = thread_of(L, ev->thread);
			pt->calls++;
			if (ev->type == ATR_T_FREE) {
				if (ev->ptr) {
					int temp = th && th->has_last && th->last_alloc == ev->ptr;
					released = kill_ptr(L, ev->ptr, &rstack, &rsize);
					temporary = temp && released;
					if (th && temp)
						th->has_last = 0;
				}
			} else {
				stack = canon(L, ev->stack_id);
				if (th) {
					th->last_alloc = ev->ret;
					th->has_last = ev->ret != 0;
				}
				int re =
				    ev->type == ATR_T_REALLOC || ev->type == ATR_T_REALLOCARRAY;
				if (ev->ret) {
					if (re && ev->ptr && ev->ret == ev->ptr)
						released = kill_ptr(L, ev->ptr, &rstack, &rsize);
					uint32_t s2;
					uint64_t z2;
					if (make_live(L, ev->ret, ev->size, stack, &s2, &z2)) {
						released = 1;
						rstack = s2;
						rsize = z2;
					}
					born = 1;
					if (L->live_bytes > L->peak) {
						L->peak = L->live_bytes;
						L->peak_seq = seq;
						L->peak_ts = ev->ts;
					}
				}
			}
		}
		const char *t = ev->type >= ATR_T_THREAD_START && ev->type <= ATR_T_META_LAST
				    ? event_text(ev, text, sizeof(text))
				    : "";
		if (ch_batch_reserve(b, 160) < 0)
			break;
		put_key(L, b);
		ch_put_u64(b, seq);
		ch_put_u64(b, ev->ts);
		ch_put_u32(b, ev->thread);
		ch_put_u8(b, ev->type);
		ch_put_u8(b, ev->flags);
		ch_put_u8(b, ev->chunk_flags);
		ch_put_u64(b, ev->size);
		ch_put_u64(b, ev->nmemb);
		ch_put_u64(b, ev->align);
		ch_put_u64(b, ev->ptr);
		ch_put_u64(b, ev->ret);
		ch_put_u64(b, ev->usable);
		ch_put_u32(b, stack);
		ch_put_u64(b, ev->duration);
		ch_put_u8(b, (uint8_t)born);
		ch_put_u8(b, (uint8_t)released);
		ch_put_u32(b, rstack);
		ch_put_u64(b, rsize);
		ch_put_u8(b, (uint8_t)temporary);
		ch_put_u64(b, L->live_bytes);
		ch_put_str(b, t);
		seq++;
		if (L->nomem || row_done(L, CH_T_EVENTS) < 0) {
			rc = L->nomem ? nomem(L) : -1;
			break;
		}
	}
	util_progress_done(&prog);
	if (rc < 0 && !L->err[0])
		snprintf(L->err, L->errlen, "%s", atr_last_error(L->f));
	if (b->nomem)
		rc = nomem(L);
	atr_iter_free(it);
	return rc < 0 ? -1 : 0;
}

/* --events none: the per-stack and per-thread numbers of an_report. */
static int load_aggregates(struct loader *L, struct proc_totals *pt)
{
	struct an_report r;
	int rc = an_report_compute(L->f, &r);
	if (rc < 0) {
		snprintf(L->err, L->errlen, "%s", atr_last_error(L->f));
		an_report_free(&r);
		return -1;
	}
	const atr_file *f = L->f;
	pt->records = r.records;
	pt->calls = r.total_calls;
	pt->first_ts = r.first_ts;
	pt->last_ts = r.last_ts;
	L->peak = r.peak_live_bytes;
	L->peak_ts = r.peak_ts;
	L->peak_seq = 0; /* no events: unknown */
	L->live_bytes = r.live_bytes;
	L->live_blocks = r.live_blocks;
	struct ch_batch *b = &L->b[CH_T_STACK_STATS];
	for (size_t i = 0; i < r.nst && !rc; i++) {
		const struct an_stack_stat *s = &r.st[i];
		if (s->stack && util_hmap_insert(&L->stacks, s->stack, 1, NULL) < 0)
			L->nomem = 1;
		if (ch_batch_reserve(b, 80) < 0)
			break;
		put_key(L, b);
		ch_put_u32(b, s->stack);
		ch_put_u64(b, s->calls);
		ch_put_u64(b, s->bytes);
		ch_put_u64(b, s->peak_bytes);
		ch_put_u64(b, s->live_bytes);
		ch_put_u64(b, s->live_blocks);
		ch_put_u64(b, s->temporary);
		rc = row_done(L, CH_T_STACK_STATS);
	}
	b = &L->b[CH_T_THREAD_STATS];
	for (uint32_t i = 0; i < r.nthreads && !rc; i++) {
		const struct an_report_thread *t = &r.threads[i];
		if (ch_batch_reserve(b, 80) < 0)
			break;
		put_key(L, b);
		ch_put_u32(b, t->serial);
		ch_put_u32(b, t->tid);
		ch_put_u64(b, t->calls);
		ch_put_u64(b, t->bytes);
		ch_put_u64(b, t->seen ? atr_ticks_to_ns_u64(f, t->last_ts - t->first_ts) : 0);
		ch_put_u64(b, r.timing ? atr_ticks_to_ns_u64(f, t->alloc_ticks) : 0);
		rc = row_done(L, CH_T_THREAD_STATS);
	}
	an_report_free(&r);
	if (L->nomem || L->b[CH_T_STACK_STATS].nomem || L->b[CH_T_THREAD_STATS].nomem)
		return nomem(L);
	return rc;
}

/* Frames of the stacks used, symbolized, and a key equal across traces
 * for equal frames. */
static int load_stacks(struct loader *L)
{
	struct an_symbols *sym = an_symbols_new(L->f);
	if (!sym)
		return nomem(L);
	struct ch_batch *bs = &L->b[CH_T_STACKS], *bf = &L->b[CH_T_FRAMES];
	int rc = 0;
	for (size_t i = 0; i < L->stacks.cap && !rc; i++) {
		uint64_t id = L->stacks.slots[i].key;
		if (!id)
			continue;
		const uint64_t *ips;
		uint32_t n;
		if (!atr_stack_get(L->f, (uint32_t)id, &ips, &n))
			continue;
		/* frames first: the stack row needs their names (RowBinary
		 * strings collected in fa) and key */
		struct util_buf fa = {0};
		size_t nn = 0;
		uint64_t key = FNV_INIT;
		uint32_t fno = 0;
		for (uint32_t k = 0; k < n && !rc; k++) {
			const struct an_frame *fr;
			unsigned m = an_symbols_resolve(sym, ips[k], (uint32_t)id, &fr);
			for (unsigned j = 0; j < m && !rc; j++) {
				char nb[512];
				const char *name = an_frame_name(&fr[j], nb, sizeof(nb));
				size_t len = strlen(name);
				unsigned char leb[10];
				size_t nl = 0;
				for (uint64_t v = len;; v >>= 7) {
					leb[nl++] =
					    (unsigned char)((v & 0x7f) | (v >> 7 ? 0x80 : 0));
					if (!(v >> 7))
						break;
				}
				if (util_buf_append(&fa, leb, nl) < 0 ||
				    util_buf_append(&fa, name, len) < 0) {
					rc = nomem(L);
					break;
				}
				key = fnv(key, name, len + 1);
				nn++;
				if (ch_batch_reserve(bf, 64) < 0) {
					rc = nomem(L);
					break;
				}
				put_key(L, bf);
				ch_put_u32(bf, (uint32_t)id);
				ch_put_u32(bf, fno++);
				ch_put_str(bf, fr[j].function);
				ch_put_str(bf, fr[j].file);
				if (ch_batch_reserve(bf, 40) < 0) {
					rc = nomem(L);
					break;
				}
				ch_put_u32(bf, fr[j].line);
				ch_put_str(bf, fr[j].module);
				if (ch_batch_reserve(bf, 40) < 0) {
					rc = nomem(L);
					break;
				}
				ch_put_u64(bf, fr[j].ip);
				ch_put_u64(bf, fr[j].offset);
				ch_put_u8(bf, (uint8_t)fr[j].inlined);
				rc = row_done(L, CH_T_FRAMES);
			}
		}
		if (!rc && ch_batch_reserve(bs, 64) < 0)
			rc = nomem(L);
		if (!rc) {
			put_key(L, bs);
			ch_put_u32(bs, (uint32_t)id);
			ch_put_u64(bs, key);
			ch_put_u64_array(bs, ips, n);
			if (ch_batch_reserve(bs, 16 + fa.len) == 0) {
				ch_put_leb(bs, nn);
				memcpy(bs->p + bs->len, fa.data ? fa.data : "", fa.len);
				bs->len += fa.len;
			}
			rc = row_done(L, CH_T_STACKS);
		}
		util_buf_free(&fa);
	}
	an_symbols_free(sym);
	return rc;
}

static int load_modules_threads_rss(struct loader *L)
{
	const atr_file *f = L->f;
	const struct atr_info *in = atr_get_info(f);
	struct ch_batch *b = &L->b[CH_T_MODULES];
	int rc = 0;
	for (size_t i = 0; i < atr_module_count(f) && !rc; i++) {
		const struct atr_module *m = atr_module_get(f, i);
		char bid[2 * 64 + 1] = "";
		for (uint32_t k = 0; k < m->build_id_len && k < 64; k++)
			snprintf(bid + 2 * k, 3, "%02x", m->build_id[k]);
		if (ch_batch_reserve(b, 64) < 0)
			return nomem(L);
		put_key(L, b);
		ch_put_u64(b, m->start);
		ch_put_u64(b, m->size);
		ch_put_u64(b, m->bias);
		ch_put_str(b, bid);
		ch_put_str(b, m->path);
		if (ch_batch_reserve(b, 32) < 0)
			return nomem(L);
		ch_put_u64(b, atr_ticks_to_ns_u64(f, m->load_ts));
		ch_put_u64(b, m->unload_ts == UINT64_MAX ? UINT64_MAX
							 : atr_ticks_to_ns_u64(f, m->unload_ts));
		ch_put_u8(b, (uint8_t)m->main_program);
		rc = row_done(L, CH_T_MODULES);
	}
	b = &L->b[CH_T_THREADS];
	for (uint32_t i = 0; i < atr_thread_count(f) && !rc; i++) {
		if (ch_batch_reserve(b, 40) < 0)
			return nomem(L);
		put_key(L, b);
		ch_put_u32(b, atr_thread(f, i)->serial);
		ch_put_u32(b, atr_thread(f, i)->tid);
		rc = row_done(L, CH_T_THREADS);
	}
	/* RSS samples `record` took of this process, if any */
	char rp[PATH_MAX], rerr[256];
	struct atr_rss rs;
	if (!rc && atr_rss_path_for_trace(in->path, in->pid, rp, sizeof(rp)) == 0 &&
	    access(rp, R_OK) == 0 && atr_rss_read(rp, &rs, rerr, sizeof(rerr)) == 0) {
		b = &L->b[CH_T_RSS];
		for (size_t i = 0; i < rs.n && !rc; i++) {
			if (ch_batch_reserve(b, 48) < 0) {
				rc = nomem(L);
				break;
			}
			put_key(L, b);
			ch_put_i64(b, (int64_t)(rs.s[i].mono_ns - in->start_mono_ns));
			ch_put_u64(b, rs.s[i].vmsize);
			ch_put_u64(b, rs.s[i].rss);
			rc = row_done(L, CH_T_RSS);
		}
		atr_rss_free(&rs);
	}
	return rc;
}

static int load_process_row(struct loader *L, const struct proc_totals *pt)
{
	const atr_file *f = L->f;
	const struct atr_info *in = atr_get_info(f);
	struct ch_batch *b = &L->b[CH_T_PROCESSES];
	if (ch_batch_reserve(b, 64) < 0)
		return nomem(L);
	put_key(L, b);
	ch_put_u32(b, in->pid);
	ch_put_u32(b, in->ppid);
	ch_put_u32(b, in->exec_seq);
	ch_put_str(b, in->path);
	ch_put_str(b, in->exe);
	ch_put_str(b, in->cmdline);
	if (ch_batch_reserve(b, 200) < 0)
		return nomem(L);
	ch_put_u32(b, in->status);
	ch_put_u64(b, in->features);
	ch_put_u64(b, in->start_realtime_ns);
	ch_put_u64(b, in->start_mono_ns);
	ch_put_f64(b, in->ticks_per_sec);
	ch_put_f64(b, in->ticks_per_sec == 1e9 ? 1.0 : 1e9 / in->ticks_per_sec);
	ch_put_u32(b, in->threads);
	ch_put_u64(b, pt->records);
	ch_put_u64(b, pt->calls);
	ch_put_u64(b, in->lost_records);
	ch_put_u64(b, in->untraced_calls);
	ch_put_u64(b, pt->records ? atr_ticks_to_ns_u64(f, pt->last_ts - pt->first_ts) : 0);
	ch_put_u64(b, L->peak);
	ch_put_u64(b, L->peak_seq);
	ch_put_u64(b, atr_ticks_to_ns_u64(f, L->peak_ts));
	ch_put_u64(b, L->live_bytes);
	ch_put_u64(b, L->live_blocks);
	return row_done(L, CH_T_PROCESSES);
}

static void reset_process(struct loader *L)
{
	lv_destroy(&L->live);
	util_hmap_destroy(&L->stacks);
	util_hmap_destroy(&L->thr_ix);
	free(L->thr);
	L->thr = NULL;
	L->live_bytes = L->live_blocks = L->peak = L->peak_seq = L->peak_ts = 0;
	L->nomem = 0;
}

static int load_process(struct loader *L, const char *path)
{
	char e2[512];
	if (atr_open(path, &L->f, e2, sizeof(e2)) < 0) {
		snprintf(L->err, L->errlen, "%s", e2);
		return -1;
	}
	reset_process(L);
	struct proc_totals pt = {0};
	int rc = atr_stacks_load(L->f);
	if (rc < 0) {
		snprintf(L->err, L->errlen, "%s", atr_last_error(L->f));
	} else {
		rc = L->o->events ? load_events(L, &pt) : load_aggregates(L, &pt);
		if (!rc)
			rc = load_stacks(L);
		if (!rc)
			rc = load_modules_threads_rss(L);
		if (!rc)
			rc = load_process_row(L, &pt);
	}
	reset_process(L);
	atr_close(L->f);
	L->f = NULL;
	return rc < 0 ? -1 : 0;
}

/* ---- statements over the loaded rows -------------------------------------- */

static int loads_row(struct loader *L, const char *name, const char *source, uint32_t nproc,
		     uint64_t event_rows, uint64_t calls, uint32_t started, int complete)
{
	struct ch_batch *b = &L->b[CH_T_LOADS];
	char host[256] = "";
	gethostname(host, sizeof(host) - 1);
	if (ch_batch_reserve(b, 32) < 0)
		return nomem(L);
	ch_put_u64(b, L->trace_id);
	ch_put_u64(b, L->load_id);
	ch_put_str(b, name);
	if (ch_batch_reserve(b, 16) < 0)
		return nomem(L);
	ch_put_leb(b, L->o->nlabels);
	for (size_t i = 0; i < L->o->nlabels; i++)
		ch_put_str(b, L->o->labels[i]);
	ch_put_str(b, host);
	ch_put_str(b, source);
	ch_put_str(b, L->o->events ? "all" : "none");
	if (ch_batch_reserve(b, 64) < 0)
		return nomem(L);
	ch_put_u32(b, nproc);
	ch_put_u64(b, event_rows);
	ch_put_u64(b, calls);
	ch_put_u32(b, started);
	ch_put_u32(b, (uint32_t)time(NULL));
	ch_put_u8(b, (uint8_t)complete);
	ch_put_str(b, ALLOCTRACE_VERSION_STRING);
	b->rows++;
	return flush(L, CH_T_LOADS);
}

/* With --events all, stack_stats and thread_stats are computed by the
 * server from the events just loaded, with the queries of
 * docs/CLICKHOUSE.md.  FROM reads the table the rows went to (events_all
 * with --cluster: the query then runs on every shard); the joined tables
 * stay local: a trace lives on one shard whole. */
static int derive_stats(struct loader *L)
{
	const char *db = L->db;
	char w[128];
	snprintf(w, sizeof(w), "trace_id = %" PRIu64 " AND load_id = %" PRIu64, L->trace_id,
		 L->load_id);
	if (ch_execf(
		L->c,
		"INSERT INTO %s (%s) "
		"SELECT trace_id, load_id, proc, d.1 AS stk, sum(d.2), sum(d.3), "
		"toUInt64(sumIf(d.4, seq <= peak_seq)), toUInt64(sum(d.4)), toUInt64(sum(d.5)),"
		" sum(d.6) "
		"FROM %s ANY INNER JOIN (SELECT trace_id, load_id, proc, peak_seq FROM "
		"%s.processes WHERE %s) USING (trace_id, load_id, proc) "
		"ARRAY JOIN [(stack, toUInt64(type BETWEEN 1 AND 10 AND type != 2),"
		" if(type BETWEEN 1 AND 10 AND type != 2, size, 0), toInt64(born * size),"
		" toInt64(born), toUInt64(0)),"
		" (released_stack, toUInt64(0), toUInt64(0), -toInt64(released * released_bytes),"
		" -toInt64(released), toUInt64(temporary))] AS d "
		"WHERE %s GROUP BY trace_id, load_id, proc, stk",
		L->tname[CH_T_STACK_STATS], ch_table_columns(CH_T_STACK_STATS),
		L->tname[CH_T_EVENTS], db, w, w) < 0 ||
	    ch_execf(
		L->c,
		"INSERT INTO %s (%s) "
		"SELECT trace_id, load_id, proc, thread, any(tid), countIf(type BETWEEN 1 AND 10),"
		" sumIf(size, type BETWEEN 1 AND 10 AND type != 2),"
		" toUInt64((max(ts) - min(ts)) * any(ns_per_tick)),"
		" toUInt64(sumIf(duration, bitAnd(flags, 32) != 0 AND type BETWEEN 1 AND 10) *"
		" any(ns_per_tick)) "
		"FROM %s ANY INNER JOIN (SELECT trace_id, load_id, proc, serial AS thread, tid,"
		" ns_per_tick FROM %s.threads ANY INNER JOIN (SELECT trace_id, load_id, proc,"
		" ns_per_tick FROM %s.processes WHERE %s) USING (trace_id, load_id, proc)"
		" WHERE %s) USING (trace_id, load_id, proc, thread) "
		"WHERE %s AND type != 32 GROUP BY trace_id, load_id, proc, thread",
		L->tname[CH_T_THREAD_STATS], ch_table_columns(CH_T_THREAD_STATS),
		L->tname[CH_T_EVENTS], db, db, w, w, w) < 0) {
		snprintf(L->err, L->errlen, "%s (deriving stack_stats/thread_stats)",
			 ch_error(L->c));
		return -1;
	}
	return 0;
}

/* Rows of this trace's other loads: older complete ones, or half-loaded
 * ones.  Invisible through complete_loads already; this frees the space. */
static void delete_other_loads(struct loader *L)
{
	char sql[256];
	unsigned long long n = 0;
	snprintf(sql, sizeof(sql),
		 "SELECT count() FROM %s.loads WHERE trace_id = %" PRIu64
		 " AND load_id != %" PRIu64,
		 L->db, L->trace_id, L->load_id);
	if (ch_query_u64(L->c, sql, &n) < 0 || !n)
		return;
	for (int t = 0; t < CH_T_COUNT; t++) {
		if (t == CH_T_REPLAY_RUNS)
			continue;
		if (ch_execf(L->c,
			     "ALTER TABLE %s.%s DELETE WHERE trace_id = %" PRIu64
			     " AND load_id != %" PRIu64,
			     L->db, ch_table_name((enum ch_table)t), L->trace_id, L->load_id) < 0) {
			fprintf(
			    stderr,
			    "alloctrace: warning: could not delete the older rows of trace %" PRIu64
			    " (they stay invisible): %s\n",
			    L->trace_id, ch_error(L->c));
			return;
		}
	}
}

int ch_load_trace(struct ch_client *c, const char *db, const char *path,
		  const struct ch_load_opts *o, struct ch_load_result *res, char *err,
		  size_t errlen)
{
	memset(res, 0, sizeof(*res));
	double t0 = plat_mono_s();
	struct loader L;
	memset(&L, 0, sizeof(L));
	L.c = c;
	L.db = db;
	L.o = o;
	L.err = err;
	L.errlen = errlen;
	err[0] = 0;
	if (ch_trace_id(path, &L.trace_id, err, errlen) < 0)
		return -1;
	res->trace_id = L.trace_id;
	char sql[512];
	unsigned long long done = 0;
	snprintf(sql, sizeof(sql),
		 "SELECT count() FROM %s.loads%s WHERE trace_id = %" PRIu64 " AND complete = 1", db,
		 o->distributed ? "_all" : "", L.trace_id);
	if (ch_query_u64(c, sql, &done) < 0) {
		snprintf(err, errlen, "%s", ch_error(c));
		return -1;
	}
	if (done && !o->replace) {
		res->skipped = 1;
		res->seconds = plat_mono_s() - t0;
		return 0;
	}
	char real[PATH_MAX];
	const char *name = o->name ? o->name : realpath(path, real) ? real : path;
	char **paths;
	size_t n;
	if (atr_list(path, &paths, &n, err, errlen) < 0)
		return -1;
	/* microseconds, then a random low part: increasing, and unique
	 * between two loaders in the same microsecond */
	struct timeval tv;
	gettimeofday(&tv, NULL);
	uint64_t rnd = fnv_u64(fnv_u64(FNV_INIT, (uint64_t)getpid()), (uint64_t)tv.tv_usec);
	L.load_id = (((uint64_t)tv.tv_sec * 1000000u + (uint64_t)tv.tv_usec) << 12) | (rnd & 0xfff);
	res->load_id = L.load_id;
	for (int t = 0; t < CH_T_COUNT; t++) {
		if (asprintf(&L.tname[t], "%s.%s%s", db, ch_table_name((enum ch_table)t),
			     o->distributed ? "_all" : "") < 0)
			L.tname[t] = NULL;
		if (!L.tname[t]) {
			atr_list_free(paths, n);
			return nomem(&L);
		}
		ch_batch_init(&L.b[t], L.tname[t], ch_table_columns((enum ch_table)t));
	}
	uint32_t started = (uint32_t)time(NULL);
	int rc = loads_row(&L, name, path, (uint32_t)n, 0, 0, started, 0);
	uint64_t calls = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		L.proc = (uint32_t)i;
		rc = load_process(&L, paths[i]);
		for (int t = 0; t < CH_T_COUNT && !rc; t++)
			if (t != CH_T_LOADS)
				rc = flush(&L, (enum ch_table)t);
	}
	if (!rc && o->events)
		rc = derive_stats(&L);
	res->event_rows = L.b[CH_T_EVENTS].sent_rows;
	if (!rc) {
		snprintf(sql, sizeof(sql),
			 "SELECT sum(calls) FROM %s WHERE trace_id = %" PRIu64
			 " AND load_id = %" PRIu64,
			 L.tname[CH_T_PROCESSES], L.trace_id, L.load_id);
		unsigned long long cl = 0;
		if (ch_query_u64(c, sql, &cl) < 0) {
			snprintf(err, errlen, "%s", ch_error(c));
			rc = -1;
		}
		calls = cl;
	}
	/* the last row: the load is complete */
	if (!rc)
		rc = loads_row(&L, name, path, (uint32_t)n, res->event_rows, calls, started, 1);
	if (!rc && !o->distributed)
		delete_other_loads(&L);
	res->rows = L.rows;
	res->calls = calls;
	res->processes = (uint32_t)n;
	for (int t = 0; t < CH_T_COUNT; t++) {
		res->bytes_sent += L.b[t].sent_bytes;
		ch_batch_free(&L.b[t]);
		free(L.tname[t]);
	}
	atr_list_free(paths, n);
	res->seconds = plat_mono_s() - t0;
	return rc;
}
