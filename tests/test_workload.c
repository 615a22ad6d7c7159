/* test_workload.c - convert + replay: exact counts, ideal RSS equal to the
 * trace's peak live bytes, cross-thread order, bad input. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "analysis/an_report.h"
#include "analysis/an_summary.h"
#include "atr_format.h"
#include "atr_reader.h"
#include "atr_rss.h"
#include "atr_testwriter.h"
#include "awl_workload.h"
#include "plat_cpus.h"
#include "replay/rp_convert.h"
#include "replay/rp_replay.h"

/* failed calls of the trace are replayed: let ASan return NULL too */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "allocator_may_return_null=1";
}

static char tmpdir[256];

static void path_in(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", tmpdir, name);
}

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_workload.XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void convert_ok(const char *trace, const char *wl, struct rp_convert_stats *st)
{
	struct rp_convert_opts o = {.quiet = 1};
	char eb[512];
	int rc = rp_convert(trace, wl, &o, st, eb, sizeof(eb));
	if (rc)
		print_error("convert: %s\n", eb);
	assert_int_equal(rc, 0);
}

static void summary_of(const char *trace, struct an_summary *s)
{
	atr_file *f;
	char eb[256];
	assert_int_equal(atr_open(trace, &f, eb, sizeof(eb)), 0);
	assert_int_equal(an_summary_compute(f, s), 0);
	atr_close(f);
}

/* The workload's calls by type equal the trace's; ideal peak equals
 * an_summary's peak_live_bytes; replays (dry and real) make every call. */
static void check_exact(const char *trace, const char *wl, int real_replay)
{
	struct rp_convert_stats st;
	convert_ok(trace, wl, &st);
	struct an_summary s;
	summary_of(trace, &s);
	awl_file *f;
	char eb[512];
	assert_int_equal(awl_open(wl, &f, eb, sizeof(eb)), 0);
	const struct awl_info *in = awl_get_info(f);
	assert_int_equal(in->ideal_peak, s.peak_live_bytes);
	assert_int_equal(st.ideal_peak, s.peak_live_bytes);
	/* frees of unknown blocks and double frees are skipped, nothing else */
	uint64_t skipped = st.unknown_frees + st.double_frees;
	s.calls[ATR_T_FREE] -= skipped;
	assert_int_equal(in->calls[0], s.total_calls - skipped);
	for (unsigned t = 1; t <= ATR_T_CALL_LAST; t++)
		assert_int_equal(in->calls[t], s.calls[t]);
	assert_int_equal(awl_verify(f, eb, sizeof(eb)), 0);
	awl_close(f);
	for (int mode = 0; mode < 1 + real_replay; mode++) {
		struct rp_opts o = {.touch = RP_TOUCH_FIRST, .dry_run = mode == 0};
		struct rp_result *r = calloc(1, sizeof(*r));
		assert_non_null(r);
		int rc = rp_replay(wl, &o, r, eb, sizeof(eb));
		if (rc)
			print_error("replay: %s\n", eb);
		assert_int_equal(rc, 0);
		for (unsigned t = 1; t <= ATR_T_CALL_LAST; t++)
			assert_int_equal(r->st[t].count, s.calls[t]);
		assert_int_equal(r->ideal_peak, s.peak_live_bytes);
		free(r);
	}
	an_summary_free(&s);
}

/* Every call type and every odd case, two threads. */
static void test_all_calls(void **state)
{
	(void)state;
	char trace[300], wl[300];
	path_in(trace, sizeof(trace), "all.atr");
	path_in(wl, sizeof(wl), "all.wl");
	struct atw *w = atw_new(4096);
	uint32_t a = atw_thread(w, 11, 1), b = atw_thread(w, 12, 2);
	uint64_t ts = 10;
	atw_malloc(w, a, ts++, 0x1000, 100, 8);
	atw_free(w, a, ts++, 0); /* free(NULL) */
	uint64_t cf[3] = {0x2000, atw_size(4 * 40, 0), 4};
	atw_call(w, a, ts++, ATR_T_CALLOC, 0, cf, NULL);
	atw_realloc(w, a, ts, 0, 0x3000, 50, 2); /* realloc(NULL) */
	ts += 3;
	atw_realloc(w, a, ts, 0x3000, 0x3000, 80, 2); /* in place */
	ts += 3;
	atw_realloc(w, a, ts, 0x3000, 0x4000, 5000, 2); /* moved */
	ts += 3;
	atw_realloc(w, a, ts, 0x4000, 0, 1ULL << 46, 2); /* failed: stays */
	ts += 3;
	atw_realloc(w, a, ts, 0x4000, 0, 0, 2); /* realloc(p, 0) frees */
	ts += 3;
	uint64_t ma[3] = {0x5000, atw_size(300, 0), 64};
	atw_call(w, a, ts++, ATR_T_MEMALIGN, 0, ma, NULL);
	uint64_t pm[3] = {0x6000, atw_size(200, 0), 128};
	atw_call(w, a, ts++, ATR_T_POSIX_MEMALIGN, 0, pm, NULL);
	uint64_t pmf[3] = {0, atw_size(200, 22 /* EINVAL */), 24};
	atw_call(w, a, ts++, ATR_T_POSIX_MEMALIGN, 0, pmf, NULL);
	uint64_t aa[3] = {0x7000, atw_size(256, 0), 256};
	atw_call(w, a, ts++, ATR_T_ALIGNED_ALLOC, 0, aa, NULL);
	uint64_t va[2] = {0x8000, atw_size(10, 0)};
	atw_call(w, a, ts++, ATR_T_VALLOC, 0, va, NULL);
	uint64_t pv[2] = {0x9000, atw_size(5000, 0)};
	atw_call(w, a, ts++, ATR_T_PVALLOC, 0, pv, NULL);
	uint64_t ra[4] = {0xa000, atw_size(3 * 100, 0), 0x9000, 3};
	uint64_t rad[1] = {2};
	atw_call(w, a, ts, ATR_T_REALLOCARRAY, ATR_FLAG_TIMED, ra, rad); /* moved */
	ts += 3;
	atw_malloc(w, a, ts++, 0, 1ULL << 46, UINT64_MAX); /* failed malloc */
	atw_free(w, a, ts++, 0xdead0);			   /* never allocated */
	atw_free(w, a, ts++, 0x1000);
	atw_free(w, a, ts++, 0x1000);	       /* double free */
	atw_malloc(w, a, ts++, 0x5000, 64, 0); /* address still live */
	atw_marker(w, a, ts++, "phase 2");
	/* thread b frees what a allocated: cross-thread */
	atw_free(w, b, ts++, 0x2000);
	atw_free(w, b, ts++, 0x6000);
	atw_malloc(w, b, ts++, 0xb000, 1 << 20, 0);
	atw_realloc(w, b, ts, 0x7000, 0xc000, 1000, 2); /* b reallocs a's block */
	ts += 3;
	atw_free(w, a, ts++, 0xb000); /* a frees b's */
	atw_meta(w, b, ts++, ATR_T_THREAD_EXIT, 12, NULL, 0);
	assert_int_equal(atw_write_file(w, trace, 1), 0);
	atw_destroy(w);
	check_exact(trace, wl, 1);

	struct rp_convert_stats st;
	struct rp_convert_opts o = {.quiet = 1};
	char eb[256];
	assert_int_equal(rp_convert(trace, wl, &o, &st, eb, sizeof(eb)), 0);
	assert_int_equal(st.unknown_frees, 1);
	assert_int_equal(st.double_frees, 1);
	assert_int_equal(st.dup_allocs, 1);
	assert_true(st.waits >= 3);
}

/* Thread 2 frees and reallocs blocks of thread 1 and thread 1 reuses what
 * 2 freed; replayed naively (each thread at full speed) thread 2 would
 * free blocks before they exist or thread 1 would realloc freed blocks.
 * ASan builds catch any use after free; the counters catch the rest. */
static void test_cross_thread_order(void **state)
{
	(void)state;
	char trace[300], wl[300];
	path_in(trace, sizeof(trace), "cross.atr");
	path_in(wl, sizeof(wl), "cross.wl");
	struct atw *w = atw_new(1 << 16);
	uint32_t a = atw_thread(w, 21, 0), b = atw_thread(w, 22, 0);
	uint64_t ts = 10;
	for (int i = 0; i < 2000; i++) {
		uint64_t p = 0x100000 + (uint64_t)(i % 7) * 0x1000;
		atw_malloc(w, a, ts++, p, 64 + (uint64_t)i % 300, 0);
		/* a lot of work in a before b may touch p */
		for (int k = 0; k < 5; k++) {
			atw_malloc(w, a, ts++, 0x900000 + (uint64_t)k * 64, 32, 0);
			atw_free(w, a, ts++, 0x900000 + (uint64_t)k * 64);
		}
		if (i % 2) {
			atw_realloc(w, b, ts, p, p + 0x80000, 4000, 3);
			ts += 4;
			atw_free(w, b, ts++, p + 0x80000);
		} else {
			atw_free(w, b, ts++, p);
		}
	}
	assert_int_equal(atw_write_file(w, trace, 1), 0);
	atw_destroy(w);
	struct rp_convert_stats st;
	convert_ok(trace, wl, &st);
	assert_true(st.waits >= 2000);
	assert_true(st.slots < 100); /* the table is as big as the live set */
	for (int rep = 0; rep < 20; rep++) {
		struct rp_opts o = {.touch = RP_TOUCH_FIRST};
		struct rp_result *r = calloc(1, sizeof(*r));
		char eb[256];
		assert_int_equal(rp_replay(wl, &o, r, eb, sizeof(eb)), 0);
		assert_int_equal(r->st[AWL_OP_FREE].count, 2000 + 5 * 2000);
		assert_int_equal(r->st[AWL_OP_REALLOC].count, 1000);
		assert_int_equal(r->unexpected_fail, 0);
		assert_int_equal(r->unexpected_ok, 0);
		free(r);
	}
	check_exact(trace, wl, 1);
}

/* Frees stamped ahead of another thread's allocation of the block (the
 * recorder's unfenced clock read, docs/TRACE_FORMAT.md "Order"), in three
 * shapes by round: b frees the block a hands it 100 ns before a's stamp of
 * its allocation; the same, and b's own next malloc gets the address back
 * before a's stamp; or a's early free lands on b's previous block of the
 * address, which b then frees (not live: a double free in stamp order),
 * allocates again and hands over.  convert puts each free where it
 * belongs (a WAIT for the allocation): no anomalies, every call in the
 * workload and made by the replay; info counts no unknown frees.  A free
 * of a block nobody allocates stays an unknown free; --no-reorder reads
 * the stamps' order. */
static void test_reordered_free(void **state)
{
	(void)state;
	enum { ROUNDS = 300 };
	char trace[300], wl[300], eb[512];
	path_in(trace, sizeof(trace), "reorder.atr");
	path_in(wl, sizeof(wl), "reorder.wl");
	struct atw *w = atw_new(1 << 14);
	uint32_t a = atw_thread(w, 31, 0), b = atw_thread(w, 32, 0);
	for (uint64_t i = 0; i < ROUNDS; i++) {
		uint64_t base = 1000 + i * 100000, x = 0x200000 + (i % 7) * 0x100;
		switch (i % 3) {
		case 0:
			atw_free(w, b, base + 100, x);
			atw_malloc(w, a, base + 200, x, 32, 8);
			break;
		case 1:
			atw_free(w, b, base + 100, x);
			atw_malloc(w, b, base + 150, x, 32, 8);
			atw_malloc(w, a, base + 200, x, 32, 8);
			atw_free(w, b, base + 60000, x);
			break;
		case 2:
			atw_malloc(w, b, base + 50, x, 32, 8);
			atw_free(w, a, base + 100, x); /* really after b's next malloc */
			atw_free(w, b, base + 110, x);
			atw_malloc(w, b, base + 150, x, 32, 8);
			break;
		}
	}
	atw_free(w, b, ROUNDS * 100000 + 5000, 0x7000); /* never allocated */
	assert_int_equal(atw_write_file(w, trace, 1), 0);
	atw_destroy(w);
	struct rp_convert_stats st;
	struct rp_convert_opts o = {.quiet = 1};
	assert_int_equal(rp_convert(trace, wl, &o, &st, eb, sizeof(eb)), 0);
	assert_int_equal(st.reordered, ROUNDS);
	assert_int_equal(st.unknown_frees, 1);
	assert_int_equal(st.double_frees + st.dup_allocs, 0);
	assert_true(st.waits >= ROUNDS / 3);
	struct an_summary sm;
	summary_of(trace, &sm);
	assert_int_equal(sm.unknown_frees, 1);
	assert_int_equal(sm.reordered_releases, ROUNDS);
	assert_int_equal(sm.dup_allocs, 0);
	assert_int_equal(sm.live_blocks, 0);
	an_summary_free(&sm);
	{ /* report: the same */
		atr_file *f;
		assert_int_equal(atr_open(trace, &f, eb, sizeof(eb)), 0);
		struct an_report r;
		assert_int_equal(an_report_compute(f, &r), 0);
		assert_int_equal(r.unknown_frees, 1);
		assert_int_equal(r.reordered_releases, ROUNDS);
		assert_int_equal(r.live_blocks, 0);
		an_report_free(&r);
		atr_close(f);
	}
	check_exact(trace, wl, 1);
	o.no_reorder = 1;
	assert_int_equal(rp_convert(trace, wl, &o, &st, eb, sizeof(eb)), 0);
	assert_int_equal(st.reordered, 0);
	assert_true(st.unknown_frees + st.double_frees + st.dup_allocs >= ROUNDS / 2);
}

/* A trace that is truncated or corrupt, and a workload that is truncated
 * or corrupt: clear errors, no crash. */
static void test_bad_input(void **state)
{
	(void)state;
	char trace[300], wl[300], bad[300];
	path_in(trace, sizeof(trace), "bad.atr");
	path_in(wl, sizeof(wl), "bad.wl");
	path_in(bad, sizeof(bad), "bad2.wl");
	struct atw *w = atw_new(4096);
	uint32_t a = atw_thread(w, 31, 0), b = atw_thread(w, 32, 0);
	uint64_t ts = 1;
	for (int i = 0; i < 300; i++) {
		atw_malloc(w, a, ts++, 0x1000 + (uint64_t)i * 16, 10, 0);
		atw_free(w, b, ts++, 0x1000 + (uint64_t)i * 16);
	}
	assert_int_equal(atw_write_file(w, trace, 1), 0);
	atw_destroy(w);
	struct rp_convert_stats st;
	convert_ok(trace, wl, &st);
	FILE *f = fopen(wl, "rb");
	assert_non_null(f);
	static uint8_t buf[1 << 16];
	size_t n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	assert_true(n > AWL_HEADER_SIZE);
	char eb[512];
	struct rp_opts o = {.touch = RP_TOUCH_FIRST};
	struct rp_result *r = calloc(1, sizeof(*r));
	/* truncations */
	size_t cuts[] = {0, 7, 100, AWL_HEADER_SIZE, AWL_HEADER_SIZE + 5, n / 2, n - 1};
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		f = fopen(bad, "wb");
		fwrite(buf, 1, cuts[i], f);
		fclose(f);
		eb[0] = 0;
		assert_true(atr_isError(rp_replay(bad, &o, r, eb, sizeof(eb))));
		assert_true(strlen(eb) > 10);
	}
	/* flipped bytes in ops: either rejected or verified consistent */
	for (size_t off = AWL_HEADER_SIZE + AWL_CHUNK_HDR; off < n - 40; off += 7) {
		uint8_t save = buf[off];
		buf[off] ^= 0x5a;
		awl_file *af;
		if (awl_open_buffer(buf, n, "mut", &af, eb, sizeof(eb)) == 0) {
			(void)awl_verify(af, eb, sizeof(eb));
			awl_close(af);
		}
		buf[off] = save;
	}
	/* a bad magic names the problem */
	memcpy(buf, "NOTAWORK", 8);
	awl_file *af;
	assert_int_equal(awl_open_buffer(buf, n, "x.wl", &af, eb, sizeof(eb)), -1);
	assert_non_null(strstr(eb, "not an alloctrace workload"));
	free(r);
	/* a truncated trace: convert reports an error or converts what is there */
	f = fopen(trace, "rb");
	size_t tn = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	f = fopen(bad, "wb");
	fwrite(buf, 1, 100, f);
	fclose(f);
	struct rp_convert_opts co = {.quiet = 1};
	char out[300];
	path_in(out, sizeof(out), "never.wl");
	assert_true(atr_isError(rp_convert(bad, out, &co, &st, eb, sizeof(eb))));
	assert_true(access(out, F_OK) != 0);
	(void)tn;
}

/* Byte for byte equal files. */
static int same_bytes(const char *a, const char *b)
{
	FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
	int same = fa && fb;
	while (same) {
		int x = fgetc(fa), y = fgetc(fb);
		same = x == y;
		if (x == EOF)
			break;
	}
	if (fa)
		fclose(fa);
	if (fb)
		fclose(fb);
	return same;
}

/* rp_convert with o's options on 1 and 2 threads and by default: the same
 * result, the same error text, the same workload bytes (or none on an
 * error). */
/* Two conversions of trace with o's options, *knob = v0 and v1 (a field
 * of o): their workloads wl[k] (named name.tagK.wl), errors, results and
 * stats. */
static void convert_two(const char *trace, const char *name, const char *tag,
			struct rp_convert_opts *o, int *knob, int v0, int v1, char wl[2][400],
			char eb[2][512], int rc[2], struct rp_convert_stats st[2])
{
	for (int k = 0; k < 2; k++) {
		char n[40];
		snprintf(n, sizeof(n), "%.20s.%s%d.wl", name, tag, k);
		path_in(wl[k], 400, n);
		*knob = k ? v1 : v0;
		eb[k][0] = 0;
		rc[k] = rp_convert(trace, wl[k], o, &st[k], eb[k], 512);
	}
}

static int convert_both(const char *trace, const char *name, struct rp_convert_opts *o)
{
	char wl[2][400], eb[2][512];
	int rc[2];
	struct rp_convert_stats st[2];
	convert_two(trace, name, "t", o, &o->threads, 1, 2, wl, eb, rc, st);
	for (int k = 0; k < 2; k++)
		assert_int_equal(st[k].read_threads, k);
	assert_int_equal(rc[0], rc[1]);
	assert_string_equal(eb[0], eb[1]);
	/* the default: a second thread where two cores are usable */
	char wd[400], nm[40], ed[512] = "";
	struct rp_convert_stats sd;
	snprintf(nm, sizeof(nm), "%.20s.tdefault.wl", name);
	path_in(wd, sizeof(wd), nm);
	o->threads = 0;
	assert_int_equal(rp_convert(trace, wd, o, &sd, ed, sizeof(ed)), rc[0]);
	o->threads = 2; /* as convert_two left it */
	assert_int_equal(sd.read_threads, plat_usable_cpus() >= 2);
	assert_string_equal(ed, eb[0]);
	if (rc[0]) {
		assert_true(access(wl[0], F_OK) != 0 && access(wl[1], F_OK) != 0);
		return rc[0];
	}
	assert_int_equal(st[0].records, st[1].records);
	assert_int_equal(st[0].waits, st[1].waits);
	assert_true(same_bytes(wl[0], wl[1]));
	assert_true(same_bytes(wl[0], wd));
	return 0;
}

/* Three threads, blocks freed and reallocated by other threads than their
 * allocator, a marker every 1000 rounds; corrupt_at: an unknown record
 * type there (0: none). */
static void pipe_trace(const char *path, int rounds, int corrupt_at)
{
	struct atw *w = atw_new(1 << 14);
	uint32_t a = atw_thread(w, 41, 0), b = atw_thread(w, 42, 0), c = atw_thread(w, 43, 0);
	uint64_t ts = 10;
	for (int i = 0; i < rounds; i++) {
		uint64_t p = 0x10000000 + (uint64_t)i * 0x40;
		atw_malloc(w, a, ts++, p, 16 + (uint64_t)i % 200, 8);
		if (i >= 50 && i % 3 == 0) {
			uint64_t q = 0x10000000 + (uint64_t)(i - 50) * 0x40;
			atw_realloc(w, c, ts, q, q + 0x8000000, 300, 2);
			ts += 3;
			atw_free(w, b, ts++, q + 0x8000000);
		} else if (i >= 50) {
			atw_free(w, b, ts++, 0x10000000 + (uint64_t)(i - 50) * 0x40);
		}
		if (i % 1000 == 0) {
			char m[32];
			snprintf(m, sizeof(m), "m%d", i / 1000);
			atw_marker(w, c, ts++, m);
		}
		/* a run of markers longer than a batch: one ends a batch; some
		 * longer than the batch's first payload buffer */
		for (int k = 0; i == 9000 && k < 700; k++) {
			char m[3000];
			memset(m, 'a' + k % 26, sizeof(m) - 1);
			m[k % 7 ? 8 : sizeof(m) - 1] = 0;
			assert_int_equal(atw_marker(w, c, ts++, m), 0);
		}
		if (i == corrupt_at && corrupt_at) {
			uint64_t bad = ts++ << ATR_TS_SHIFT | 13; /* between EXT and metas */
			assert_int_equal(atw_raw(w, a, &bad, 1), 0);
		}
	}
	assert_int_equal(atw_write_file(w, path, 1), 0);
	atw_destroy(w);
}

/* convert --threads 2 (the trace read on a second thread, rp_pipe.h)
 * writes what --threads 1 writes: many batches of events, cross-thread
 * frees and reallocs, markers (their payloads travel with the events),
 * --from/--to at markers (the reader is stopped while ahead), --merge; a
 * corrupt record after many batches fails the same way in both. */
static void test_pipe_same(void **state)
{
	(void)state;
	char trace[300], bad[300];
	path_in(trace, sizeof(trace), "pipe.atr");
	path_in(bad, sizeof(bad), "pipebad.atr");
	pipe_trace(trace, 30000, 0);
	struct rp_convert_opts o = {.quiet = 1};
	assert_int_equal(convert_both(trace, "pipe", &o), 0);
	o.have_from = o.have_to = 1;
	o.from_label = "m3";
	o.to_label = "m17";
	assert_int_equal(convert_both(trace, "pipewin", &o), 0);
	struct rp_convert_opts m = {.quiet = 1, .merge = 1};
	assert_int_equal(convert_both(trace, "pipemerge", &m), 0);
	pipe_trace(bad, 30000, 20000);
	struct rp_convert_opts q = {.quiet = 1};
	int rc = convert_both(bad, "pipebad", &q);
	assert_true(atr_isError(rc));
	/* the error is the reader's, with the file's name */
	char eb[512];
	struct rp_convert_stats st;
	char out[300];
	path_in(out, sizeof(out), "pipebad.wl");
	q.threads = 2;
	assert_int_equal(rp_convert(bad, out, &q, &st, eb, sizeof(eb)), rc);
	assert_non_null(strstr(eb, "pipebad.atr"));
	assert_non_null(strstr(eb, "unknown record type"));
}

/* rp_convert with o's options by the fast path and with every call
 * through the handlers (no_fast): the same result, stats and bytes. */
static void convert_fast_same(const char *trace, const char *name, struct rp_convert_opts *o)
{
	char wl[2][400], eb[2][512];
	int rc[2];
	struct rp_convert_stats st[2];
	convert_two(trace, name, "f", o, &o->no_fast, 0, 1, wl, eb, rc, st);
	o->no_fast = 0;
	assert_int_equal(rc[0], 0);
	assert_int_equal(rc[1], 0);
	st[0].seconds = st[1].seconds = 0;
	assert_memory_equal(&st[0], &st[1], sizeof(st[0]));
	assert_true(same_bytes(wl[0], wl[1]));
}

/* Two threads: a allocates, b frees a's blocks (WAITs in the fast path's
 * free) and allocates into its own slots, a allocates into slots stolen
 * from b (WAITs in its malloc); gaps that add up to THINK ops, gaps past
 * the join threshold after b's exit, timed and untimed calls (sampled
 * durations), an allocation of a live block, unknown and NULL frees,
 * calls of other types between them. */
static void fast_trace(const char *path, int sampled)
{
	struct atw *w = atw_new(1 << 14);
	if (sampled)
		atr_put32(atw_header(w) + ATR_H_TIMING_SAMPLE, 4);
	uint32_t a = atw_thread(w, 51, 1), b = atw_thread(w, 52, 1);
	uint64_t ts = 1000;
	for (uint64_t i = 0; i < 3000; i++) {
		uint64_t p = 0x20000000 + i * 0x40;
		/* gaps of 0.1 .. 12.8 us */
		ts += 100ull << (i % 8);
		int tm = i % 5 == 0;
		uint64_t mf[3] = {p, atw_size(24 + i % 300, 8), 0}, md = 150, fd = 90;
		atw_call(w, a, ts, ATR_T_MALLOC, tm ? ATR_FLAG_TIMED : 0, mf, tm ? &md : NULL);
		if (i % 97 == 5)
			atw_malloc(w, a, ts += 10, p, 32, 8); /* still live */
		if (i >= 100 && i < 2000) {
			uint64_t ff[1] = {p - 100 * 0x40};
			atw_call(w, b, ts += 50, ATR_T_FREE, i % 3 ? 0 : ATR_FLAG_TIMED, ff,
				 i % 3 ? NULL : &fd);
			if (i % 4 == 0)
				atw_malloc(w, b, ts += 20, 0x40000000 + i * 0x40, 40, 8);
		}
		if (i % 211 == 7)
			atw_free(w, a, ts += 10, 0x7000); /* never allocated */
		if (i % 173 == 3)
			atw_free(w, b, ts += 10, 0);
		if (i % 157 == 11) {
			uint64_t cf[3] = {0x50000000 + i * 0x40, atw_size(64, 8), 4};
			atw_call(w, a, ts += 10, ATR_T_CALLOC, 0, cf, NULL);
		}
		if (i == 2000)
			atw_meta(w, b, ts += 10, ATR_T_THREAD_EXIT, 0, NULL, 0);
		if (i == 2001)
			ts += 50000000; /* 50 ms: a join of b's exit */
	}
	assert_int_equal(atw_write_file(w, path, 0), 0);
	atw_destroy(w);
}

/* The fast path of conv_direct (frees and mallocs of a thread's run with
 * the thread's state in registers) writes what the handlers write. */
static void test_fast_same(void **state)
{
	(void)state;
	char trace[300];
	path_in(trace, sizeof(trace), "fpipe.atr");
	pipe_trace(trace, 5000, 0);
	struct rp_convert_opts o = {.quiet = 1};
	convert_fast_same(trace, "fpipe", &o);
	o.threads = 2;
	convert_fast_same(trace, "fpipe2", &o);
	for (int sampled = 0; sampled < 2; sampled++) {
		path_in(trace, sizeof(trace), "fast.atr");
		fast_trace(trace, sampled);
		struct rp_convert_opts f = {.quiet = 1};
		convert_fast_same(trace, "fast", &f);
		f.no_joins = 1;
		f.think_floor_ns = 500;
		convert_fast_same(trace, "fastfloor", &f);
		struct rp_convert_opts t = {.quiet = 1, .threads = 2};
		convert_fast_same(trace, "fast2", &t);
	}
}

/* A trace whose thread count says one but that has a second thread
 * (convert's multi_on: the slots' last uses kept from that thread's start
 * on, late_multi forces it): the same workload as when the count is
 * right, on the fast path and through the handlers, one reading thread
 * or two. */
static void test_late_multi(void **state)
{
	(void)state;
	char trace[300];
	path_in(trace, sizeof(trace), "late.atr");
	fast_trace(trace, 0);
	for (int nf = 0; nf < 2; nf++)
		for (int th = 1; th <= 2; th++) {
			struct rp_convert_opts o = {.quiet = 1, .no_fast = nf, .threads = th};
			char wl[2][400], eb[2][512];
			int rc[2];
			struct rp_convert_stats st[2];
			convert_two(trace, "late", "m", &o, &o.late_multi, 0, 1, wl, eb, rc, st);
			assert_int_equal(rc[0], 0);
			assert_int_equal(rc[1], 0);
			assert_true(st[0].waits > 0);
			st[0].seconds = st[1].seconds = 0;
			assert_memory_equal(&st[0], &st[1], sizeof(st[0]));
			assert_true(same_bytes(wl[0], wl[1]));
		}
}

/* Blocks of 4 GiB and more (convert keeps sizes below it in its live
 * set's entries, bigger ones apart): born and freed by malloc, realloc
 * in place and moved, a failed realloc that keeps one, an allocation of
 * a live address, on one thread and across two; the ideal peak is the
 * summary's and the fast path writes what the handlers write. */
static void test_big_blocks(void **state)
{
	(void)state;
	const uint64_t G = 1ULL << 30;
	for (int two = 0; two < 2; two++) {
		char trace[300], wl[300];
		path_in(trace, sizeof(trace), two ? "big2.atr" : "big.atr");
		path_in(wl, sizeof(wl), two ? "big2.wl" : "big.wl");
		struct atw *w = atw_new(1 << 14);
		uint32_t a = atw_thread(w, 61, 1), b = two ? atw_thread(w, 62, 1) : a;
		uint64_t ts = 1000;
		atw_malloc(w, a, ts++, 0x10000, 5 * G, 8);
		atw_malloc(w, a, ts++, 0x20000, 100, 8);
		atw_realloc(w, a, ts, 0x20000, 0x20000, 6 * G, 2); /* in place, to big */
		ts += 3;
		atw_realloc(w, a, ts, 0x10000, 0x30000, 64, 2); /* moved, to small */
		ts += 3;
		atw_malloc(w, a, ts++, 0x30000, 7 * G, 8);	  /* 0x30000 still live */
		atw_realloc(w, a, ts, 0x20000, 0, 1ULL << 46, 2); /* failed: stays */
		ts += 3;
		for (uint64_t i = 0; i < 300; i++) { /* the fast path, big ones in it */
			uint64_t p = 0x100000 + i * 0x40;
			atw_malloc(w, a, ts++, p, i % 50 ? 16 + i : (4 + i % 3) * G, 0);
			atw_free(w, b, ts++, p);
		}
		atw_free(w, b, ts++, 0x20000);
		atw_malloc(w, b, ts++, 0x40000, UINT32_MAX, 0); /* the escape itself */
		atw_malloc(w, b, ts++, 0x50000, UINT32_MAX - 1ULL, 0);
		atw_free(w, a, ts++, 0x40000);
		atw_free(w, a, ts++, 0x30000);
		assert_int_equal(atw_write_file(w, trace, 1), 0);
		atw_destroy(w);
		check_exact(trace, wl, 0);
		struct rp_convert_opts o = {.quiet = 1};
		convert_fast_same(trace, two ? "bigf2" : "bigf", &o);
	}
}

/* Paths of the built tool and a test program; 0 (and a note that the
 * test is skipped) if any is missing. */
static int built(const char *prog, char *tool, size_t tl, char *pp, size_t pl)
{
	char exe[1024];
	ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(k > 0);
	exe[k] = 0;
	*strrchr(exe, '/') = 0;
	snprintf(tool, tl, "%s/alloctrace", exe);
	snprintf(pp, pl, "%s/tests/progs/%s", exe, prog);
	char lib[1200];
	snprintf(lib, sizeof(lib), "%s/liballoctrace.so", exe);
	if (!access(tool, X_OK) && !access(pp, X_OK) && !access(lib, R_OK))
		return 1;
	print_message("skipped: alloctrace or tests/progs/%s not built\n", prog);
	return 0;
}

/* Record `prog args` with the environment assignments env ("" for none)
 * and return the first process's trace file. */
/* env: NAME=VALUE words before `alloctrace`; opts: options of record */
static void record_prog_opts(const char *tool, const char *prog, const char *args, const char *name,
			     const char *env, const char *opts, char *trace, size_t tl)
{
	char dir[300], cmd[4096];
	path_in(dir, sizeof(dir), name);
	snprintf(cmd, sizeof(cmd), "%s '%s' record %s -o '%s' -- '%s' %s >/dev/null 2>&1", env,
		 tool, opts, dir, prog, args);
	assert_int_equal(system(cmd), 0);
	char **paths;
	size_t n;
	char eb[256];
	assert_int_equal(atr_list(dir, &paths, &n, eb, sizeof(eb)), 0);
	assert_true(n >= 1);
	snprintf(trace, tl, "%s", paths[0]);
	atr_list_free(paths, n);
}

static void record_prog_env(const char *tool, const char *prog, const char *args, const char *name,
			    const char *env, char *trace, size_t tl)
{
	record_prog_opts(tool, prog, args, name, env, "", trace, tl);
}

static void record_prog(const char *tool, const char *prog, const char *args, const char *name,
			char *trace, size_t tl)
{
	record_prog_env(tool, prog, args, name, "", trace, tl);
}

/* Threads created in waves (tests/progs/waves): the workload has every
 * thread, each started by a SPAWN at the point the trace shows, and the
 * replay creates and joins them so that every thread starts with exactly
 * as many threads alive as in the traced program. */
static void test_recorded_waves(void **state)
{
	(void)state;
	char tool[1200], prog[1200], trace[1024], wl[300];
	if (!built("waves", tool, sizeof(tool), prog, sizeof(prog)))
		skip();
	enum { WAVES = 5, K = 6 };
	record_prog(tool, prog, "5 6 150", "waves", trace, sizeof(trace));
	path_in(wl, sizeof(wl), "waves.wl");
	check_exact(trace, wl, 1);
	/* each thread's set-up runs after its first call's stamp: a RECORDER
	   record before that call says how long (convert's think time) */
	{
		atr_file *af;
		char e2[256];
		assert_int_equal(atr_open(trace, &af, e2, sizeof(e2)), 0);
		atr_iter *it;
		assert_int_equal(atr_iter_new(af, &it), 0);
		enum { MAXT = WAVES * K + 8 };
		int called[MAXT] = {0}, set_up[MAXT] = {0};
		const struct atr_event *ev;
		while (atr_iter_next_ref(it, &ev) > 0) {
			assert_true(ev->thread < MAXT);
			if (ev->type == ATR_T_RECORDER && !called[ev->thread])
				set_up[ev->thread] = 1;
			if (ev->type >= 1 && ev->type <= ATR_T_CALL_LAST)
				called[ev->thread] = 1;
		}
		atr_iter_free(it);
		int nt = 0;
		for (int t = 0; t < MAXT; t++) {
			assert_int_equal(set_up[t], called[t]);
			nt += called[t];
		}
		assert_int_equal(nt, WAVES * K + 1);
		atr_close(af);
	}
	awl_file *f;
	char eb[512];
	assert_int_equal(awl_open(wl, &f, eb, sizeof(eb)), 0);
	const struct awl_info *in = awl_get_info(f);
	assert_int_equal(in->version, AWL_VERSION);
	assert_int_equal(in->nthreads, WAVES * K + 1);
	assert_int_equal(in->roots, 1);
	assert_int_equal(in->max_live, K + 1);
	for (uint32_t t = 1; t < in->nthreads; t++) {
		const struct awl_thread *th = awl_get_thread(f, t);
		assert_true(th->parent != 0);
		assert_true(th->live_at_start >= 2 && th->live_at_start <= K + 1);
	}
	awl_close(f);
	for (int rep = 0; rep < 3; rep++) {
		struct rp_opts o = {
		    .touch = RP_TOUCH_FIRST, .timing = RP_TIMING_OFF, .think = RP_THINK_OFF};
		struct rp_result *r = calloc(1, sizeof(*r));
		assert_int_equal(rp_replay(wl, &o, r, eb, sizeof(eb)), 0);
		assert_int_equal(r->threads_created, WAVES * K + 1);
		assert_int_equal(r->max_live_threads, K + 1);
		assert_int_equal(r->overlap_checked, WAVES * K);
		assert_int_equal(r->overlap_diff, 0);
		/* every decoder buffer was mapped while its thread lived: at
		   most K + 1 of them at once */
		assert_true(r->decoder_peak_bytes > 0);
		assert_true(r->decoder_peak_bytes <= (uint64_t)(K + 1) * (AWL_CHUNK_TARGET + 8192));
		free(r);
	}
}

/* A workload of version 1 (committed: tests/fixtures/v1_three_threads.wl,
 * from a synthetic 3-thread trace with cross-thread frees) still replays:
 * all threads start together, every call is made. */
static void test_v1_fixture(void **state)
{
	(void)state;
	char wl[1200];
	snprintf(wl, sizeof(wl), "%s/tests/fixtures/v1_three_threads.wl", ATR_SOURCE_DIR);
	awl_file *f;
	char eb[512];
	assert_int_equal(awl_open(wl, &f, eb, sizeof(eb)), 0);
	assert_int_equal(awl_get_info(f)->version, 1);
	assert_int_equal(awl_get_info(f)->roots, 3);
	assert_int_equal(awl_verify(f, eb, sizeof(eb)), 0);
	awl_close(f);
	struct rp_opts o = {.touch = RP_TOUCH_FIRST};
	struct rp_result *r = calloc(1, sizeof(*r));
	int rc = rp_replay(wl, &o, r, eb, sizeof(eb));
	if (rc)
		print_error("replay: %s\n", eb);
	assert_int_equal(rc, 0);
	assert_int_equal(r->version, 1);
	assert_int_equal(r->threads_created, 3);
	assert_int_equal(r->st[AWL_OP_MALLOC].count, 60);
	assert_int_equal(r->st[AWL_OP_CALLOC].count, 60);
	assert_int_equal(r->st[AWL_OP_REALLOC].count, 60);
	assert_int_equal(r->st[AWL_OP_POSIX_MEMALIGN].count, 20);
	assert_int_equal(r->st[AWL_OP_FREE].count, 200);
	assert_int_equal(r->unexpected_fail + r->unexpected_ok, 0);
	free(r);
}

/* A program with known gaps (tests/progs/gaps: 300 x 300 us of work
 * between malloc and free): the workload carries the think time, and a
 * replay that spends it lasts as long as the traced run (10%).  Wall
 * time on a shared machine: best of 5; the think time spent, which the
 * replay controls, every time. */
/* The bound: the replay's wall time within 10% of the traced run.
 * The ASan+UBSan build slows the replay's own bookkeeping (not the
 * program's, which ran unsanitized): 20-32% measured on a loaded machine. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_UNDEFINED__)
#define THINK_BOUND 0.40
#else
#define THINK_BOUND 0.10
#endif

/* The traced program's Max RSS in the workload: the highest of record's
 * RSS samples while the process ran (tests/progs/gaps: ~60 ms, some
 * samples); none with --no-rss. */
static void test_traced_rss(void **state)
{
	(void)state;
	char tool[1024], prog[1024], trace[512], wl[300], eb[512];
	if (!built("gaps", tool, sizeof(tool), prog, sizeof(prog)))
		return;
	for (int rss = 1; rss >= 0; rss--) {
		record_prog_opts(tool, prog, "240 250", rss ? "trss" : "trss0", "",
				 rss ? "" : "--no-rss", trace, sizeof(trace));
		path_in(wl, sizeof(wl), "trss.wl");
		struct rp_convert_stats st;
		convert_ok(trace, wl, &st);
		awl_file *f;
		assert_int_equal(awl_open(wl, &f, eb, sizeof(eb)), 0);
		uint64_t got = awl_get_info(f)->traced_rss;
		awl_close(f);
		assert_int_equal(got, st.traced_rss);
		if (!rss) {
			assert_int_equal(got, 0);
			break;
		}
		/* the samples' highest, read here from the .rss file */
		atr_file *af;
		assert_int_equal(atr_open(trace, &af, eb, sizeof(eb)), 0);
		const struct atr_info *in = atr_get_info(af);
		char rp[1024];
		struct atr_rss r;
		assert_int_equal(atr_rss_path_for_trace(trace, in->pid, rp, sizeof(rp)), 0);
		assert_int_equal(atr_rss_read(rp, &r, eb, sizeof(eb)), 0);
		uint64_t m = 0, self = 0;
		for (size_t i = 0; i < r.n; i++)
			if (r.s[i].mono_ns >= in->start_mono_ns &&
			    (!in->end_mono_ns || r.s[i].mono_ns <= in->end_mono_ns)) {
				if (r.s[i].rss - r.s[i].self > m)
					m = r.s[i].rss - r.s[i].self;
				if (r.s[i].self > self)
					self = r.s[i].self;
			}
		assert_true(r.n >= 2);
		assert_true(m > 0);
		assert_int_equal(got, m);
		/* the header page and the first 16 KiB of main's block */
		assert_true(self >= 4096 + (16 << 10));
		assert_true(st.traced_rss_self);
		atr_rss_free(&r);
		atr_close(af);
	}
	/* a fork child (sh runs gaps in one: a command follows): record
	   samples it too, from when its trace file appears (~200 ms: the
	   directory is read every 20 ms, also on a loaded machine) */
	char dir[300], cmd[3000];
	path_in(dir, sizeof(dir), "trssfork");
	snprintf(cmd, sizeof(cmd),
		 "'%s' record -o '%s' -- /bin/sh -c \"'%s' 800 250; true\" >/dev/null 2>&1", tool,
		 dir, prog);
	assert_int_equal(system(cmd), 0);
	char **paths;
	size_t n;
	assert_int_equal(atr_list(dir, &paths, &n, eb, sizeof(eb)), 0);
	int found = 0;
	for (size_t i = 0; i < n; i++) {
		atr_file *af;
		assert_int_equal(atr_open(paths[i], &af, eb, sizeof(eb)), 0);
		const struct atr_info *in = atr_get_info(af);
		const char *exe = strrchr(in->exe, '/');
		if (exe && !strcmp(exe, "/gaps")) {
			found = 1;
			assert_true(in->ppid != 0);
			struct rp_convert_stats st;
			convert_ok(paths[i], wl, &st);
			assert_true(st.traced_rss > 0);
		}
		atr_close(af);
	}
	atr_list_free(paths, n);
	assert_true(found);
}

/* RSS files of every sample size the format allows: 24 (recorders
 * before the self field: self 0, the program's RSS is the RSS), 32, and
 * larger (a later field ignored); smaller ones are rejected. */
static void write_rss_file(const char *path, uint32_t ssize, uint32_t n)
{
	unsigned char b[64 + 3 * 64];
	memset(b, 0, sizeof(b));
	memcpy(b, ATR_RSS_MAGIC, 8);
	atr_put32(b + 8, ATR_RSS_VERSION);
	atr_put32(b + 12, 64);
	atr_put32(b + 16, ssize);
	atr_put32(b + 20, 77);
	atr_put32(b + 24, 4096);
	atr_put64(b + 32, 10000000);
	for (uint32_t i = 0; i < n; i++) {
		unsigned char *s = b + 64 + i * ssize;
		atr_put64(s, 1000 + i);
		atr_put64(s + 8, 1 << 20);
		atr_put64(s + 16, (uint64_t)(i + 1) << 16);
		if (ssize >= 32)
			atr_put64(s + 24, (uint64_t)(3 - i) << 15); /* 3/2, 1, 1/2 of 64 KiB */
		if (ssize >= 40)
			atr_put64(s + 32, UINT64_MAX);
	}
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(b, 1, 64 + n * ssize, f), 64 + n * ssize);
	fclose(f);
}

static void test_rss_sizes(void **state)
{
	(void)state;
	char p[300], eb[256];
	path_in(p, sizeof(p), "sizes.rss");
	static const uint32_t sizes[] = {24, 32, 40};
	for (size_t k = 0; k < 3; k++) {
		write_rss_file(p, sizes[k], 3);
		struct atr_rss r;
		assert_int_equal(atr_rss_read(p, &r, eb, sizeof(eb)), 0);
		assert_int_equal(r.n, 3);
		for (uint32_t i = 0; i < 3; i++) {
			assert_int_equal(r.s[i].rss, (uint64_t)(i + 1) << 16);
			uint64_t self = sizes[k] >= 32 ? (uint64_t)(3 - i) << 15 : 0;
			assert_int_equal(r.s[i].self, self);
			/* the first sample's self is more than its RSS: none left */
			uint64_t prog = i == 0 && self ? 0 : r.s[i].rss - self;
			assert_int_equal(atr_rss_program(&r.s[i]), prog);
		}
		/* the program's highest: the last sample's */
		struct atr_rss_peak pk;
		atr_rss_peak_in(&r, 0, UINT64_MAX, &pk);
		assert_int_equal(pk.program, (3u << 16) - (sizes[k] >= 32 ? 1u << 15 : 0));
		atr_rss_free(&r);
	}
	write_rss_file(p, 23, 3);
	struct atr_rss r;
	assert_int_equal(atr_rss_read(p, &r, eb, sizeof(eb)), -1);
	assert_non_null(strstr(eb, "unsupported"));
}

/* An image that exec'd has no end stamp: its samples end where the next
 * image of its pid starts, not one interval after its last record (which
 * took the next image's first samples for its own: `sh -c 'sleep 0.1;
 * exec python3 ...'` gave sh 7.4 MiB, python's early RSS, for its 2.2). */
static void test_rss_exec_window(void **state)
{
	(void)state;
	char dir[300], t[2][400], rp[400], eb[256];
	path_in(dir, sizeof(dir), "execwin");
	assert_int_equal(mkdir(dir, 0700), 0);
	const uint64_t base = 1000000000ull, ms = 1000000ull;
	for (uint32_t img = 0; img < 2; img++) {
		snprintf(t[img], sizeof(t[img]), img ? "%s/4242.1.atr" : "%s/4242.atr", dir);
		struct atw *w = atw_new(1 << 14);
		uint8_t *h = atw_header(w);
		atr_put32(h + ATR_H_PID, 4242);
		atr_put32(h + ATR_H_EXEC_SEQ, img);
		/* image 1 starts 52 ms in; image 0 exec'd: no clean exit, no end */
		atr_put64(h + ATR_H_START_MONO, base + (img ? 52 * ms : 0));
		if (!img)
			atr_put32(h + ATR_H_STATUS, 0);
		uint32_t a = atw_thread(w, 4242, 1000);
		/* image 0's last record at 45 ms: with one interval, to 55 ms */
		assert_int_equal(atw_malloc(w, a, img ? 2000 : 45 * ms, 0x10000, 64, 8), 0);
		assert_int_equal(atw_write_file(w, t[img], 0), 0);
		atw_destroy(w);
	}
	/* samples at 20 ms (1 MiB, image 0's), 54 and 60 ms (9 and 8 MiB) */
	static const uint64_t at[3] = {20, 54, 60}, mib[3] = {1, 9, 8};
	unsigned char b[64 + 3 * 32];
	memset(b, 0, sizeof(b));
	memcpy(b, ATR_RSS_MAGIC, 8);
	atr_put32(b + 8, ATR_RSS_VERSION);
	atr_put32(b + 12, 64);
	atr_put32(b + 16, 32);
	atr_put32(b + 20, 4242);
	atr_put32(b + 24, 4096);
	atr_put64(b + 32, 10 * ms);
	for (int i = 0; i < 3; i++) {
		atr_put64(b + 64 + i * 32, base + at[i] * ms);
		atr_put64(b + 64 + i * 32 + 16, mib[i] << 20);
		atr_put64(b + 64 + i * 32 + 24, 4096);
	}
	snprintf(rp, sizeof(rp), "%s/4242.rss", dir);
	FILE *fp = fopen(rp, "wb");
	assert_non_null(fp);
	assert_int_equal(fwrite(b, 1, sizeof(b), fp), sizeof(b));
	fclose(fp);
	static const uint64_t want[2] = {1, 9};
	static const size_t nwant[2] = {1, 2};
	for (int img = 0; img < 2; img++) {
		atr_file *f;
		assert_int_equal(atr_open(t[img], &f, eb, sizeof(eb)), 0);
		struct atr_rss_peak p;
		assert_int_equal(atr_count_records(f, NULL), 0); /* last_ts */
		assert_int_equal(atr_rss_peak_of(f, &p), 1);
		assert_int_equal(p.program, (want[img] << 20) - 4096);
		assert_int_equal(p.tracer, 4096);
		assert_int_equal(p.samples, nwant[img]);
		assert_true(p.self_known);
		atr_close(f);
	}
}

/* The Max RSS of prog run untraced.  Not a child of ours: a fork of
 * this (ASan-sized) process would carry our Max RSS into its own through
 * the exec.  A shell starts it in the background and exits; the program,
 * orphaned, comes to us as the subreaper, and its rusage is its own. */
static uint64_t untraced_maxrss(const char *prog, const char *args)
{
	char cmd[2048];
	snprintf(cmd, sizeof(cmd), "'%s' %s >/dev/null &", prog, args);
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	pid_t sh = fork();
	assert_true(sh >= 0);
	if (sh == 0) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	int st;
	assert_int_equal(waitpid(sh, &st, 0), sh);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	struct rusage ru;
	pid_t p = wait4(-1, &st, 0, &ru);
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 0), 0);
	assert_true(p > 0);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	return (uint64_t)ru.ru_maxrss << 10;
}

/* The recorder's own memory left out of the traced Max RSS: 48 threads
 * alive at once, each making 40,000 calls with 1,000 blocks live (tests/
 * progs/waves), hold ~0.5 MiB of staging blocks each, most of the traced
 * Max RSS.  The program's Max RSS from record's samples (convert's)
 * must be close to the untraced run's Max RSS, much closer than the
 * samples' own (2026-11-25: untraced 15.8 MB, traced 28.6-29.2, the
 * program's 16.2-17.8). */
static void test_tracer_rss(void **state)
{
	(void)state;
	char tool[1024], prog[1024], trace[512], wl[300], eb[512];
	if (!built("waves", tool, sizeof(tool), prog, sizeof(prog)))
		return;
	const char *args = "1 48 1000 20";
	uint64_t untraced[3];
	for (int k = 0; k < 3; k++)
		untraced[k] = untraced_maxrss(prog, args);
	/* the median of three */
	uint64_t lo = untraced[0] < untraced[1] ? untraced[0] : untraced[1];
	uint64_t hi = untraced[0] < untraced[1] ? untraced[1] : untraced[0];
	uint64_t real = untraced[2] < lo ? lo : untraced[2] > hi ? hi : untraced[2];
	record_prog_opts(tool, prog, args, "tself", "", "", trace, sizeof(trace));
	path_in(wl, sizeof(wl), "tself.wl");
	struct rp_convert_stats st;
	convert_ok(trace, wl, &st);
	assert_true(st.traced_rss_self);
	atr_file *af;
	assert_int_equal(atr_open(trace, &af, eb, sizeof(eb)), 0);
	char rp[1024];
	struct atr_rss r;
	assert_int_equal(atr_rss_path_for_trace(trace, atr_get_info(af)->pid, rp, sizeof(rp)), 0);
	atr_close(af);
	assert_int_equal(atr_rss_read(rp, &r, eb, sizeof(eb)), 0);
	uint64_t raw = 0, self = 0;
	for (size_t i = 0; i < r.n; i++) {
		raw = r.s[i].rss > raw ? r.s[i].rss : raw;
		self = r.s[i].self > self ? r.s[i].self : self;
	}
	atr_rss_free(&r);
	double prog_err = fabs((double)st.traced_rss - (double)real);
	print_message("tracer rss: untraced %.1f MB, traced %.1f MB, the program's %.1f MB "
		      "(tracer up to %.1f MB)\n",
		      (double)real / 1e6, (double)raw / 1e6, (double)st.traced_rss / 1e6,
		      (double)self / 1e6);
	/* 48 blocks of which 16 KiB or more were written */
	assert_true(self >= 48 * (16 << 10));
	/* without the tracer's part the estimate is much closer */
	assert_true((double)raw - (double)real > 2 * prog_err);
	assert_true(prog_err < 0.25 * (double)real);
}

static void test_think_time(void **state)
{
	(void)state;
	char tool[1200], prog[1200], trace[1024], wl[300];
	if (!built("gaps", tool, sizeof(tool), prog, sizeof(prog)))
		skip();
	/* RECORDER records: a 4 KiB staging block fills every ~170 records */
	{
		char tr4[1024], eb4[256];
		record_prog_opts(tool, prog, "200 10", "gaps4", "", "--buffer-kb 4", tr4,
				 sizeof(tr4));
		atr_file *f4;
		assert_int_equal(atr_open(tr4, &f4, eb4, sizeof(eb4)), 0);
		atr_iter *i4;
		assert_int_equal(atr_iter_new(f4, &i4), 0);
		struct atr_event e4;
		uint64_t nrec = 0, most = 0;
		while (atr_iter_next(i4, &e4) > 0)
			if (e4.type == ATR_T_RECORDER) {
				uint64_t v;
				memcpy(&v, e4.payload, 8);
				assert_true(v > 0);
				most = v > most ? v : most;
				nrec++;
			}
		/* each flush took less than the whole traced run */
		assert_true(most < atr_get_info(f4)->last_ts);
		atr_iter_free(i4);
		atr_close(f4);
		assert_true(nrec >= 1);
	}
	/* one call in ~8 timed (default 128): enough to see both types */
	record_prog_env(tool, prog, "300 300", "gaps", "ALLOCTRACE_TIMING_SAMPLE=8", trace,
			sizeof(trace));
	path_in(wl, sizeof(wl), "gaps.wl");
	check_exact(trace, wl, 0);
	awl_file *f;
	char eb[512];
	/* the recorder's CPU records: the baseline, then one before each call
	   that ends a gap of more than 200 us (each free here); the thread's
	   CPU time never goes back nor ahead of the clock */
	atr_file *af;
	assert_int_equal(atr_open(trace, &af, eb, sizeof(eb)), 0);
	atr_iter *it;
	assert_int_equal(atr_iter_new(af, &it), 0);
	struct atr_event ev;
	uint64_t ncpu_rec = 0, cpu_prev = 0, cpu_first = 0, ts_first = 0, timed[2] = {0, 0};
	while (atr_iter_next(it, &ev) > 0) {
		if ((ev.type == ATR_T_MALLOC || ev.type == ATR_T_FREE) && (ev.ptr || ev.ret) &&
		    (ev.flags & ATR_FLAG_TIMED))
			timed[ev.type == ATR_T_FREE]++;
		if (ev.type != ATR_T_CPU)
			continue;
		uint64_t v[3];
		assert_int_equal(ev.payload_len, 24);
		memcpy(v, ev.payload, sizeof v);
		assert_true(v[0] >= cpu_prev);
		if (!ncpu_rec++) {
			cpu_first = v[0];
			ts_first = ev.ts;
		}
		assert_true(v[0] - cpu_first <=
			    atr_ticks_to_ns_u64(af, ev.ts - ts_first) + 1000000);
		cpu_prev = v[0];
	}
	atr_iter_free(it);
	/* sampled durations: one call in 4..11 of 600 (its malloc-free loop
	   must not alias: both types get some) */
	assert_int_equal(atr_get_info(af)->timing_sample, 8);
	assert_true(timed[0] >= 10 && timed[1] >= 10);
	assert_true(timed[0] + timed[1] >= 600 / 12 && timed[0] + timed[1] <= 600 / 4 + 1);
	atr_close(af);
	assert_true(ncpu_rec >= 301 && ncpu_rec <= 601); /* + gaps a preemption made */
	assert_int_equal(awl_open(wl, &f, eb, sizeof(eb)), 0);
	uint64_t dur = awl_get_info(f)->duration_ns, think = awl_get_info(f)->think_ns;
	awl_close(f);
	/* 299 gaps of >= 300 us between a malloc's return and the free */
	assert_true(think >= 299ull * 300000);
	assert_true(think <= dur);
	double best = 1e9;
	uint64_t best_think = UINT64_MAX; /* a loaded machine stretches some reps */
	for (int rep = 0; rep < 5 && (best > THINK_BOUND || best_think > think + think / 5);
	     rep++) {
		struct rp_opts o = {.touch = RP_TOUCH_FIRST, .timing = RP_TIMING_OFF};
		struct rp_result *r = calloc(1, sizeof(*r));
		assert_int_equal(rp_replay(wl, &o, r, eb, sizeof(eb)), 0);
		double err = ((double)r->wall_ns - (double)dur) / (double)dur;
		print_message("think: traced %.1f ms, replay %.1f ms (%+.1f%%)\n",
			      (double)dur / 1e6, (double)r->wall_ns / 1e6, 100 * err);
		if (fabs(err) < best)
			best = fabs(err);
		/* the replay's own work between calls came out of the gaps */
		assert_true(r->think_ns + r->think_own_ns >= think);
		assert_true(r->think_own_ns < think / 100);
		if (r->think_ns < best_think)
			best_think = r->think_ns;
		assert_int_equal(r->think_shared, 0); /* one thread: never more than cores */
		free(r);
	}
	assert_true(best <= THINK_BOUND);
	assert_true(best_think <= think + think / 5);
	/* --think whole: every gap in full, nothing taken out */
	{
		struct rp_opts o = {
		    .touch = RP_TOUCH_FIRST, .timing = RP_TIMING_OFF, .think = RP_THINK_WHOLE};
		struct rp_result *r = calloc(1, sizeof(*r));
		assert_int_equal(rp_replay(wl, &o, r, eb, sizeof(eb)), 0);
		assert_true(r->think_ns >= think);
		assert_int_equal(r->think_own_ns, 0);
		free(r);
	}
	/* --think off: the calls only, far shorter (best of 3: one
	 * preemption on a loaded machine is longer than the whole replay) */
	uint64_t best_off = UINT64_MAX;
	for (int rep = 0; rep < 3 && best_off >= dur / 4; rep++) {
		struct rp_opts o = {
		    .touch = RP_TOUCH_FIRST, .timing = RP_TIMING_OFF, .think = RP_THINK_OFF};
		struct rp_result *r = calloc(1, sizeof(*r));
		assert_int_equal(rp_replay(wl, &o, r, eb, sizeof(eb)), 0);
		if (r->wall_ns < best_off)
			best_off = r->wall_ns;
		assert_int_equal(r->think_ns, 0);
		free(r);
	}
	assert_true(best_off < dur / 4);
}

/* A gap during which another thread exited, ending soon after the exit,
 * is a wait for that exit (a join), not think time: convert writes a WAIT
 * for everything the exited thread did, and only the rest of the gap as
 * think time; a gap that ends long after an exit stays think time.
 * --no-joins (no_joins) keeps every gap. */
static void test_join_gap(void **state)
{
	(void)state;
	char trace[300], wl[300], eb[512];
	path_in(trace, sizeof(trace), "join.atr");
	path_in(wl, sizeof(wl), "join.wl");
	struct atw *w = atw_new(4096);
	uint32_t a = atw_thread(w, 11, 1);
	atw_malloc(w, a, 10, 0x1000, 16, 8);
	uint32_t b = atw_thread(w, 12, 20);
	atw_malloc(w, b, 30, 0x2000, 16, 8);
	atw_free(w, b, 1999000, 0x2000);
	atw_meta(w, b, 2000000, ATR_T_THREAD_EXIT, 12, NULL, 0);
	/* a: waits 2 ms, calls 5 us after b's exit: a join */
	atw_malloc(w, a, 2005000, 0x3000, 16, 8);
	uint32_t c = atw_thread(w, 13, 2006000);
	atw_malloc(w, c, 2006100, 0x4000, 16, 8);
	atw_free(w, c, 2006200, 0x4000);
	atw_meta(w, c, 2100000, ATR_T_THREAD_EXIT, 13, NULL, 0);
	/* a: 3 ms more, 2.9 ms of it after c's exit: work, not a join */
	atw_free(w, a, 5000000, 0x3000);
	atw_free(w, a, 5000100, 0x1000);
	assert_int_equal(atw_write_file(w, trace, 0), 0);
	atw_destroy(w);
	struct rp_convert_stats st;
	for (int no_joins = 0; no_joins < 2; no_joins++) {
		struct rp_convert_opts o = {.quiet = 1, .no_joins = no_joins};
		assert_int_equal(rp_convert(trace, wl, &o, &st, eb, sizeof(eb)), 0);
		assert_int_equal(st.joins, no_joins ? 0 : 1);
		awl_file *f;
		assert_int_equal(awl_open(wl, &f, eb, sizeof(eb)), 0);
		assert_int_equal(awl_verify(f, eb, sizeof(eb)), 0);
		/* thread a's stream: the WAIT for all 5 of b's ops, then think */
		struct awl_stream s;
		struct awl_op op;
		assert_int_equal(awl_stream_init(f, 0, &s), 0);
		uint64_t think = 0, wait_b = 0;
		while (awl_stream_next(&s, &op) > 0) {
			if (op.code == AWL_OP_THINK)
				think += op.a;
			if (op.code == AWL_OP_WAIT && op.a == 1 && !think)
				wait_b = op.b;
		}
		awl_stream_free(&s);
		uint64_t b_ops = awl_get_thread(f, 1)->ops;
		awl_close(f);
		/* (gaps less the think floor, 20 ns each) */
		if (no_joins) {
			assert_int_equal(wait_b, 0);
			assert_true(think > 2005000 - 10 - 100 + 2995000 - 100);
		} else {
			assert_int_equal(wait_b, b_ops);
			assert_true(think >= 5000 + 2995000 - 100 && think <= 5000 + 2995000);
		}
		struct rp_opts ro = {.touch = RP_TOUCH_FIRST, .dry_run = 1, .think = RP_THINK_OFF};
		struct rp_result *r = calloc(1, sizeof(*r));
		assert_int_equal(rp_replay(wl, &ro, r, eb, sizeof(eb)), 0);
		assert_int_equal(r->st[AWL_OP_MALLOC].count, 4);
		assert_int_equal(r->st[AWL_OP_FREE].count, 4);
		free(r);
	}
}

/* A long gap (>= RP_SHARE_MIN_NS) while more threads made calls during it
 * than the trace's ncpu: only ncpu / threads of it is think time; short
 * gaps, traces without ncpu and --no-share (no_share) keep it whole. */
static void test_share_gap(void **state)
{
	(void)state;
	char trace[300], wl[300], eb[512];
	path_in(trace, sizeof(trace), "share.atr");
	path_in(wl, sizeof(wl), "share.wl");
	for (int ncpu = 0; ncpu < 2; ncpu++) {
		struct atw *w = atw_new(4096);
		atr_put32(atw_header(w) + ATR_H_NCPU, (uint32_t)ncpu);
		uint32_t a = atw_thread(w, 11, 1);
		atw_malloc(w, a, 10, 0x1000, 16, 8);
		uint32_t b = atw_thread(w, 12, 20);
		atw_malloc(w, b, 500000, 0x2000, 16, 8);
		atw_free(w, b, 600000, 0x2000);		  /* b's gap: a made no call in it */
		atw_malloc(w, a, 1000010, 0x3000, 16, 8); /* 1 ms; b called in it */
		atw_free(w, a, 1050010, 0x3000);	  /* 50 us: too short */
		atw_free(w, a, 1050110, 0x1000);
		assert_int_equal(atw_write_file(w, trace, 0), 0);
		atw_destroy(w);
		for (int no_share = 0; no_share < 2; no_share++) {
			struct rp_convert_stats st;
			struct rp_convert_opts o = {.quiet = 1, .no_share = no_share};
			assert_int_equal(rp_convert(trace, wl, &o, &st, eb, sizeof(eb)), 0);
			int shared = ncpu && !no_share;
			assert_int_equal(st.shared_gaps, shared);
			assert_int_equal(st.ncpu, ncpu);
			awl_file *f;
			assert_int_equal(awl_open(wl, &f, eb, sizeof(eb)), 0);
			uint64_t think[2] = {0, 0};
			for (uint32_t t = 0; t < 2; t++) {
				struct awl_stream s;
				struct awl_op op;
				assert_int_equal(awl_stream_init(f, t, &s), 0);
				while (awl_stream_next(&s, &op) > 0)
					if (op.code == AWL_OP_THINK)
						think[t] += op.a;
				awl_stream_free(&s);
			}
			awl_close(f);
			/* no think floor here (opts: 0); the last 100 ns stay below
			 * 1 us: no op */
			uint64_t first = 1000000, rest = 50000;
			if (shared) {
				assert_true(think[0] >= first / 2 + rest - 1 &&
					    think[0] <= first / 2 + rest + 1);
				assert_true(st.shared_ns >= first - first / 2 - 1 &&
					    st.shared_ns <= first - first / 2 + 1);
			} else {
				assert_true(think[0] >= first + rest - 1 &&
					    think[0] <= first + rest + 1);
			}
			assert_int_equal(think[1], 100000);
		}
	}
}

/* A long gap that a CPU record closes (docs/TRACE_FORMAT.md, "CPU time"),
 * while more threads made calls than the trace's ncpu: only the time the
 * thread was on its CPU is think time (stamps - CPU time since its CPU
 * record before are taken off); with no more busy threads than CPUs the
 * gap stays whole; --no-cpu (no_cpu) shares it as before. */
static void test_cpu_gap(void **state)
{
	(void)state;
	char trace[300], wl[300], eb[512];
	path_in(trace, sizeof(trace), "cpu.atr");
	path_in(wl, sizeof(wl), "cpu.wl");
	for (uint32_t ncpu = 1; ncpu <= 2; ncpu++) {
		struct atw *w = atw_new(4096);
		atr_put32(atw_header(w) + ATR_H_NCPU, ncpu);
		uint32_t a = atw_thread(w, 11, 1);
		uint64_t c0[3] = {40000, 0, 0}, c1[3] = {340000, 0, 5};
		atw_meta(w, a, 10, ATR_T_CPU, 0, c0, 24); /* the baseline */
		atw_malloc(w, a, 10, 0x1000, 16, 8);
		uint32_t b = atw_thread(w, 12, 20);
		atw_malloc(w, b, 200000, 0x2000, 16, 8);
		atw_free(w, b, 300000, 0x2000);
		/* a: 1 ms, 300 us of it on the CPU; b called in it, in its first
		   half (not a hand-off: test_handoff_gap) */
		atw_meta(w, a, 1000010, ATR_T_CPU, 0, c1, 24);
		atw_malloc(w, a, 1000010, 0x3000, 16, 8);
		atw_free(w, a, 1050010, 0x3000); /* 50 us: no CPU record */
		atw_free(w, a, 1050110, 0x1000);
		assert_int_equal(atw_write_file(w, trace, 0), 0);
		atw_destroy(w);
		for (int no_cpu = 0; no_cpu < 2; no_cpu++) {
			struct rp_convert_stats st;
			struct rp_convert_opts o = {.quiet = 1, .no_cpu = no_cpu};
			assert_int_equal(rp_convert(trace, wl, &o, &st, eb, sizeof(eb)), 0);
			int cut = ncpu == 1 && !no_cpu, shared = ncpu == 1 && no_cpu;
			assert_int_equal(st.cpu_gaps, cut);
			assert_int_equal(st.cpu_off_ns, cut ? 700000 : 0);
			assert_int_equal(st.cpu_kept, ncpu == 2 && !no_cpu);
			assert_int_equal(st.shared_gaps, shared);
			awl_file *f;
			assert_int_equal(awl_open(wl, &f, eb, sizeof(eb)), 0);
			assert_int_equal(awl_verify(f, eb, sizeof(eb)), 0);
			struct awl_stream s;
			struct awl_op op;
			uint64_t think = 0;
			assert_int_equal(awl_stream_init(f, 0, &s), 0);
			while (awl_stream_next(&s, &op) > 0)
				if (op.code == AWL_OP_THINK)
					think += op.a;
			awl_stream_free(&s);
			awl_close(f);
			/* no think floor (opts: 0); the last 100 ns make no op */
			uint64_t gap = cut ? 300000 : shared ? 500000 : 1000000;
			assert_true(think >= gap + 50000 - 1 && think <= gap + 50000 + 1);
		}
	}
}

/* A hand-off (think_handoff): thread a is off its CPU for most of its gap
 * (its CPU record says so) while b runs, and resumes 50 us after b's last
 * call, as a thread does when b hands it a lock or the GIL.  a's stream:
 * the on-CPU time that does not fit after the wake-up as think time, a
 * WAIT for all of b's ops, the wake-up (50 us) as think time.  Not a
 * hand-off: a on its CPU for most of the gap (it worked), b's last call in
 * the gap's first half, more than RP_HANDOFF_MAX_NS before a's call,
 * --no-handoffs. */
static void test_handoff_gap(void **state)
{
	(void)state;
	char trace[300], wl[300], eb[512];
	path_in(trace, sizeof(trace), "handoff.atr");
	path_in(wl, sizeof(wl), "handoff.wl");
	enum { HANDOFF, NO_HANDOFFS, WORKED, EARLY, LATE, NVAR };
	for (int v = 0; v < NVAR; v++) {
		/* a's gap: 1 ms (LATE: 5 ms), 60 us of it on the CPU (WORKED:
		   900 us) */
		uint64_t resume = v == LATE ? 5000010 : 1000010;
		uint64_t b_last = v == EARLY ? 400000 : v == LATE ? 3000000 : resume - 50000;
		struct atw *w = atw_new(4096);
		atr_put32(atw_header(w) + ATR_H_NCPU, 2);
		uint32_t a = atw_thread(w, 11, 1);
		uint64_t c0[3] = {40000, 3, 0}, c1[3] = {v == WORKED ? 940000 : 100000, 4, 0};
		atw_meta(w, a, 10, ATR_T_CPU, 0, c0, 24); /* the baseline */
		atw_malloc(w, a, 10, 0x1000, 16, 8);
		uint32_t b = atw_thread(w, 12, 20);
		atw_malloc(w, b, 100000, 0x2000, 16, 8);
		atw_free(w, b, b_last, 0x2000);
		atw_meta(w, a, resume, ATR_T_CPU, 0, c1, 24);
		atw_free(w, a, resume, 0x1000);
		assert_int_equal(atw_write_file(w, trace, 0), 0);
		atw_destroy(w);
		struct rp_convert_stats st;
		struct rp_convert_opts o = {.quiet = 1, .no_handoffs = v == NO_HANDOFFS};
		assert_int_equal(rp_convert(trace, wl, &o, &st, eb, sizeof(eb)), 0);
		uint64_t full = resume - 10;
		assert_int_equal(st.handoffs, v == HANDOFF);
		assert_int_equal(st.handoff_ns, v == HANDOFF ? full - 60000 : 0);
		assert_int_equal(st.cpu_kept, v != HANDOFF);
		awl_file *f;
		assert_int_equal(awl_open(wl, &f, eb, sizeof(eb)), 0);
		assert_int_equal(awl_verify(f, eb, sizeof(eb)), 0);
		struct awl_stream s;
		struct awl_op op;
		uint64_t think[2] = {0, 0}, wait_b = 0;
		assert_int_equal(awl_stream_init(f, 0, &s), 0);
		while (awl_stream_next(&s, &op) > 0) {
			if (op.code == AWL_OP_THINK)
				think[wait_b != 0] += op.a;
			if (op.code == AWL_OP_WAIT && op.a == 1)
				wait_b = op.b;
		}
		awl_stream_free(&s);
		uint64_t b_ops = awl_get_thread(f, 1)->ops;
		awl_close(f);
		if (v == HANDOFF) {
			assert_int_equal(wait_b, b_ops);
			assert_int_equal(think[0], 10000);
			assert_int_equal(think[1], 50000);
		} else {
			/* b's free of a's block is not a's concern: no WAIT */
			assert_int_equal(wait_b, 0);
			assert_int_equal(think[0], full);
		}
		struct rp_opts ro = {.touch = RP_TOUCH_FIRST, .dry_run = 1, .think = RP_THINK_OFF};
		struct rp_result *r = calloc(1, sizeof(*r));
		assert_int_equal(rp_replay(wl, &ro, r, eb, sizeof(eb)), 0);
		assert_int_equal(r->st[AWL_OP_MALLOC].count, 2);
		assert_int_equal(r->st[AWL_OP_FREE].count, 2);
		free(r);
	}
}

/* Two threads taking turns on a token (tests/progs/turns: the way
 * CPython's threads take turns on the GIL): each gap of a thread between
 * its turns is blocked time that the other thread's last call ended.
 * convert takes them as hand-offs (a WAIT for the other thread) instead of
 * think time; --no-handoffs keeps them as think time, which is then about
 * the whole traced run.  Every call is still replayed. */
static void test_recorded_turns(void **state)
{
	(void)state;
	char tool[1200], prog[1200], trace[1024], wl[300], eb[512];
	if (!built("turns", tool, sizeof(tool), prog, sizeof(prog)))
		skip();
	enum { TURNS = 40, CALLS = 10000 };
	record_prog(tool, prog, "40 10000", "turns", trace, sizeof(trace));
	path_in(wl, sizeof(wl), "turns.wl");
	atr_file *af;
	assert_int_equal(atr_open(trace, &af, eb, sizeof(eb)), 0);
	uint32_t ncpu = atr_get_info(af)->ncpu;
	atr_close(af);
	uint64_t think[2] = {0, 0}, handoff_ns = 0, dur = 0;
	for (int no = 0; no < 2; no++) {
		struct rp_convert_stats st;
		struct rp_convert_opts o = {.quiet = 1, .no_handoffs = no};
		assert_int_equal(rp_convert(trace, wl, &o, &st, eb, sizeof(eb)), 0);
		think[no] = st.think_ns;
		if (!no)
			handoff_ns = st.handoff_ns;
		print_message("turns: %s: %" PRIu64 " hand-offs, think time %.1f ms\n",
			      no ? "--no-handoffs" : "default", st.handoffs,
			      (double)st.think_ns / 1e6);
		if (no)
			assert_int_equal(st.handoffs, 0);
		else if (ncpu >= 2) /* one CPU: the gaps were shared (think_cpu) */
			assert_true(st.handoffs >= (2 * TURNS - 2) * 3 / 4 &&
				    st.handoffs <= 2 * TURNS);
		struct rp_opts ro = {.touch = RP_TOUCH_FIRST, .dry_run = 1, .think = RP_THINK_OFF};
		struct rp_result *r = calloc(1, sizeof(*r));
		assert_int_equal(rp_replay(wl, &ro, r, eb, sizeof(eb)), 0);
		/* (+ glibc's own: thread starts and exits free a few blocks) */
		uint64_t m = r->st[AWL_OP_MALLOC].count, fr = r->st[AWL_OP_FREE].count;
		assert_true(m >= 2 * TURNS * CALLS && m <= 2 * TURNS * CALLS + 16);
		assert_true(fr >= 2 * TURNS * CALLS + 1 && fr <= 2 * TURNS * CALLS + 17);
		free(r);
		awl_file *f;
		assert_int_equal(awl_open(wl, &f, eb, sizeof(eb)), 0);
		dur = awl_get_info(f)->duration_ns;
		awl_close(f);
	}
	/* each thread waited through about half the run for the other: the
	   hand-offs took that out of think time (on a loaded machine the
	   turns' own gaps hold preemptions, which stay) */
	if (ncpu >= 2)
		assert_true(handoff_ns >= dur / 3 && think[0] < think[1]);
}

/* The recorded worst case of stamp order (bench/handoff.c: two threads
 * swap fresh blocks through one slot and free what they get at once):
 * some frees come stamped ahead of the other thread's allocation.  Where
 * the stamp order shows many (the threads overlapped), convert puts at
 * least 9 in 10 of them after their allocation, and the workload makes
 * every call. */
static void test_recorded_handoff(void **state)
{
	(void)state;
	char tool[1200], prog[1200], trace[1024], wl[300], eb[512];
	if (!built("handoff", tool, sizeof(tool), prog, sizeof(prog)))
		skip();
	record_prog(tool, prog, "2 1 200000", "handoff", trace, sizeof(trace));
	path_in(wl, sizeof(wl), "handoff.wl");
	uint64_t bad[2], reordered = 0;
	for (int no = 0; no < 2; no++) {
		struct rp_convert_stats st;
		struct rp_convert_opts o = {.quiet = 1, .no_reorder = no};
		assert_int_equal(rp_convert(trace, wl, &o, &st, eb, sizeof(eb)), 0);
		bad[no] = st.unknown_frees + st.double_frees + st.dup_allocs;
		if (!no)
			reordered = st.reordered;
		print_message("handoff: %s: %" PRIu64 " anomalies, %" PRIu64 " reordered\n",
			      no ? "--no-reorder" : "default", bad[no], st.reordered);
	}
	if (bad[1] >= 50)
		assert_true(bad[0] * 10 <= bad[1] && reordered * 2 >= bad[1] / 2);
	check_exact(trace, wl, 1);
}

/* replay --timing sample (the commands' default): about one call in
 * RP_TIMING_SAMPLE_EVERY of a thread is timed, at random distances, so a
 * malloc-free loop has both its mallocs and its frees timed; every call is
 * counted, and the totals are the timed calls' mean times the count.
 * serial times every call, off none. */
static void test_timing_sample(void **state)
{
	(void)state;
	char trace[300], wl[300], eb[512];
	path_in(trace, sizeof(trace), "tsample.atr");
	path_in(wl, sizeof(wl), "tsample.wl");
	enum { N = 20000 };
	struct atw *w = atw_new(4096);
	uint32_t a = atw_thread(w, 11, 1);
	for (uint64_t i = 0; i < N; i++) {
		atw_malloc(w, a, 10 + 2 * i, 0x10000, 16 + i % 512, 8);
		atw_free(w, a, 11 + 2 * i, 0x10000);
	}
	assert_int_equal(atw_write_file(w, trace, 0), 0);
	atw_destroy(w);
	struct rp_convert_stats st;
	struct rp_convert_opts co = {.quiet = 1};
	assert_int_equal(rp_convert(trace, wl, &co, &st, eb, sizeof(eb)), 0);
	const enum rp_timing modes[] = {RP_TIMING_SAMPLE, RP_TIMING_SERIAL, RP_TIMING_OFF};
	for (unsigned m = 0; m < 3; m++) {
		struct rp_opts o = {
		    .touch = RP_TOUCH_FIRST, .timing = modes[m], .think = RP_THINK_OFF};
		struct rp_result *r = calloc(1, sizeof(*r));
		assert_int_equal(rp_replay(wl, &o, r, eb, sizeof(eb)), 0);
		const struct rp_callstat *ma = &r->st[AWL_OP_MALLOC], *fr = &r->st[AWL_OP_FREE];
		assert_int_equal(ma->count, N);
		assert_int_equal(fr->count, N);
		uint64_t timed = ma->timed + fr->timed, hist = 0;
		for (unsigned b = 0; b < RP_HIST_BUCKETS; b++)
			hist += ma->hist[b];
		assert_int_equal(hist, ma->timed);
		if (modes[m] == RP_TIMING_SAMPLE) {
			/* distances from [16, 48): 2N / 48 .. 2N / 16 timed */
			assert_true(timed >= 2 * N / (RP_TIMING_SAMPLE_EVERY * 3 / 2) &&
				    timed <= 2 * N / (RP_TIMING_SAMPLE_EVERY / 2));
			assert_true(ma->timed >= timed / 4 && fr->timed >= timed / 4);
			assert_int_equal(rp_stat_avg(ma), ma->sum / ma->timed);
			double want = (double)ma->sum * N / (double)ma->timed;
			assert_true(fabs((double)rp_stat_total(ma) - want) <= 1.0);
		} else if (modes[m] == RP_TIMING_SERIAL) {
			assert_int_equal(timed, 2 * N);
			assert_int_equal(rp_stat_total(ma), ma->sum);
		} else {
			assert_int_equal(timed, 0);
			assert_int_equal(rp_stat_total(ma), 0);
		}
		free(r);
	}
}

/* Sampled durations (docs/TRACE_FORMAT.md): a malloc stamped at its end
 * (100 ns), 1000 ns of work, a free stamped at its start (200 ns), 500 ns
 * of work, 100 times; every 4th malloc and free timed, from the first.  With the header's
 * timing_sample the untimed calls are taken to last their type's typical
 * time, so every gap is the work alone; without it (a recorder that
 * timed nothing, or TIMING) an untimed call's time stays in its gap. */
static void test_sampled_durations(void **state)
{
	(void)state;
	char trace[300], wl[300], eb[512];
	path_in(trace, sizeof(trace), "sampled.atr");
	path_in(wl, sizeof(wl), "sampled.wl");
	const uint64_t T = 1800;
	/* 0: the header says no sampling; 1: it does; 2: it does, --no-sampled */
	for (int mode = 0; mode < 3; mode++) {
		int sampled = mode == 1;
		struct atw *w = atw_new(1 << 16);
		atr_put32(atw_header(w) + ATR_H_TIMING_SAMPLE, mode ? 4 : 0);
		uint32_t a = atw_thread(w, 11, 1);
		uint64_t expect = 0;
		for (uint64_t i = 0; i < 100; i++) {
			uint64_t base = 10000 + i * T, p = 0x1000 + i * 0x100;
			int tm = i % 4 == 0, tf = i % 4 == 0; /* the first timed, as recorded */
			uint64_t mf[3] = {p, atw_size(64, 8), 0}, md = 100, fd = 200;
			assert_int_equal(atw_call(w, a, base + 100, ATR_T_MALLOC,
						  tm ? ATR_FLAG_TIMED : 0, mf, tm ? &md : NULL),
					 0);
			uint64_t ff[1] = {p};
			assert_int_equal(atw_call(w, a, base + 1100, ATR_T_FREE,
						  tf ? ATR_FLAG_TIMED : 0, ff, tf ? &fd : NULL),
					 0);
			expect += 1000; /* malloc's end to free's start: stamped both */
			if (i == 99)
				break;
			/* to the next malloc's start: its end stamp less its time,
			   free's start stamp plus its time, timed or estimated */
			int nm = (i + 1) % 4 == 0;
			expect += sampled || (nm && tf) ? 500 : nm ? 700 : tf ? 600 : 800;
		}
		assert_int_equal(atw_write_file(w, trace, 0), 0);
		atw_destroy(w);
		struct rp_convert_stats st;
		struct rp_convert_opts o = {.quiet = 1, .no_sampled = mode == 2};
		assert_int_equal(rp_convert(trace, wl, &o, &st, eb, sizeof(eb)), 0);
		/* 75 untimed mallocs (100 ns) and 75 frees (200 ns) estimated */
		assert_int_equal(st.est_calls, sampled ? 150 : 0);
		assert_int_equal(st.est_ns, sampled ? 75 * 100 + 75 * 200 : 0);
		awl_file *f;
		assert_int_equal(awl_open(wl, &f, eb, sizeof(eb)), 0);
		uint64_t think = awl_get_info(f)->think_ns;
		awl_close(f);
		/* no think floor (opts: 0); THINK ops of >= 1 us: the last < 1 us
		   is not written */
		assert_true(think <= expect && think + 1000 > expect);
		assert_int_equal(expect,
				 sampled ? 149500 : 100000 + 99 * 800 - 25 * 200 - 24 * 100);
	}
}

/* Sampled durations are heavy-tailed: the untimed calls take the mean
 * of their type's timed ones (here mallocs of 100, 100, 100 and 900 ns:
 * 300, where the median said 100).  Not samples: a call of a block of
 * resident_min bytes or more (the recorder times every one; a 10 ms free
 * of a large block would make every free after it ~0.3 ms), and a call
 * longer than the CPU-record gap. */
static void test_sampled_mean(void **state)
{
	(void)state;
	char trace[300], wl[300], eb[512];
	path_in(trace, sizeof(trace), "smean.atr");
	path_in(wl, sizeof(wl), "smean.wl");
	/* 0: resident_min and cpu_gap set; 1: neither (an older recorder's
	   trace: its large free and long malloc are samples) */
	uint64_t est[2];
	for (int mode = 0; mode < 2; mode++) {
		struct atw *w = atw_new(1 << 16);
		atr_put32(atw_header(w) + ATR_H_TIMING_SAMPLE, 4);
		if (mode == 0) {
			atr_put64(atw_header(w) + ATR_H_RESIDENT_MIN, 16384);
			atr_put32(atw_header(w) + ATR_H_CPU_GAP, 200000);
		}
		uint32_t a = atw_thread(w, 11, 1);
		uint64_t big = 0x900000, ts = 10000;
		uint64_t bf[3] = {big, atw_size(1 << 20, 8), 0}, bd = 3000;
		atw_call(w, a, ts, ATR_T_MALLOC, ATR_FLAG_TIMED, bf, &bd);
		for (uint64_t i = 0; i < 400; i++) {
			uint64_t p = 0x1000 + i * 0x100;
			int t = i % 4 == 0;
			uint64_t mf[3] = {p, atw_size(64, 8), 0}, ff[1] = {p}, fd = 200;
			/* timed mallocs: 100, 100, 100, 900, ...; one of 500 us */
			uint64_t md = i == 200 ? 500000 : i % 16 == 12 ? 900 : 100;
			ts += 1000 + md;
			atw_call(w, a, ts, ATR_T_MALLOC, t ? ATR_FLAG_TIMED : 0, mf,
				 t ? &md : NULL);
			ts += 1000;
			atw_call(w, a, ts, ATR_T_FREE, t ? ATR_FLAG_TIMED : 0, ff, t ? &fd : NULL);
			if (i == 100) { /* the large block's 10 ms free */
				uint64_t f2[1] = {big}, d2 = 10000000;
				ts += 1000;
				atw_call(w, a, ts, ATR_T_FREE, ATR_FLAG_TIMED, f2, &d2);
				ts += d2;
			}
		}
		assert_int_equal(atw_write_file(w, trace, 0), 0);
		atw_destroy(w);
		struct rp_convert_stats st;
		struct rp_convert_opts o = {.quiet = 1};
		assert_int_equal(rp_convert(trace, wl, &o, &st, eb, sizeof(eb)), 0);
		assert_int_equal(st.est_calls, 2 * 300); /* the untimed ones */
		est[mode] = st.est_ns;
	}
	/* 300 untimed mallocs at ~300 ns (the window's mean moves about it)
	   and 300 frees at 200 ns */
	print_message("sampled mean: estimated %" PRIu64 " ns, %" PRIu64 " ns without the header's "
		      "sizes and gap\n",
		      est[0], est[1]);
	assert_true(est[0] >= 300 * 250 + 300 * 200 && est[0] <= 300 * 350 + 300 * 200);
	/* the median would have said 100 a malloc */
	assert_true(est[0] > 300 * 100 + 300 * 200 + 300 * 100);
	/* learned as samples, the large free and the long malloc weigh on
	   the calls after them */
	assert_true(est[1] > est[0] * 10);
}

/* A RECORDER record before a call: the recorder's flush ran after that
 * call's stamp, so it comes off the gap after the call, not before. */
static void test_recorder_gap(void **state)
{
	(void)state;
	char trace[300], wl[300], eb[512];
	path_in(trace, sizeof(trace), "recorder.atr");
	path_in(wl, sizeof(wl), "recorder.wl");
	struct atw *w = atw_new(4096);
	uint32_t a = atw_thread(w, 11, 1);
	uint64_t flush = 3000;
	atw_malloc(w, a, 1000, 0x1000, 16, 8);
	atw_meta(w, a, 2000, ATR_T_RECORDER, 0, &flush, 8);
	atw_malloc(w, a, 2000, 0x2000, 16, 8); /* gap 1000 */
	atw_free(w, a, 10000, 0x1000);	       /* gap 8000 - 3000 */
	atw_free(w, a, 11000, 0x2000);	       /* gap 1000 */
	assert_int_equal(atw_write_file(w, trace, 0), 0);
	atw_destroy(w);
	struct rp_convert_stats st;
	convert_ok(trace, wl, &st);
	assert_int_equal(st.recorder_ns, 3000);
	awl_file *f;
	assert_int_equal(awl_open(wl, &f, eb, sizeof(eb)), 0);
	assert_int_equal(awl_get_info(f)->think_ns, 1000 + 5000 + 1000);
	awl_close(f);
}

/* More threads thinking at once than there are cores: `--think share`
 * spends each thread's share of a gap (cores / running threads), as
 * work; `--think on` every gap in full. */
static void test_think_shared(void **state)
{
	(void)state;
	cpu_set_t cs;
	int ncpu = sched_getaffinity(0, sizeof(cs), &cs) == 0 ? CPU_COUNT(&cs) : 2;
	int n = 2 * ncpu + 2;
	if (n > 64) {
		print_message("skipped: %d cores\n", ncpu);
		skip();
	}
	char trace[300], wl[300], eb[512];
	path_in(trace, sizeof(trace), "shared.atr");
	path_in(wl, sizeof(wl), "shared.wl");
	struct atw *w = atw_new(1 << 16);
	uint32_t t[64];
	for (int i = 0; i < n; i++)
		t[i] = atw_thread(w, 100 + (uint32_t)i, 1 + (uint64_t)i);
	for (int k = 0; k < 20; k++)
		for (int i = 0; i < n; i++) {
			uint64_t ts = 1000 + (uint64_t)k * 200000, p = 0x10000 * (uint64_t)(i + 1);
			atw_malloc(w, t[i], ts + (uint64_t)i, p, 32, 8);
			atw_free(w, t[i], ts + 100000 + (uint64_t)i, p);
		}
	assert_int_equal(atw_write_file(w, trace, 0), 0);
	atw_destroy(w);
	struct rp_convert_stats st;
	struct rp_convert_opts co = {.quiet = 1};
	assert_int_equal(rp_convert(trace, wl, &co, &st, eb, sizeof(eb)), 0);
	assert_true(st.think_ns >= (uint64_t)n * 39 * 99000);
	for (int mode = 0; mode < 2; mode++) {
		struct rp_opts o = {.touch = RP_TOUCH_FIRST,
				    .timing = RP_TIMING_OFF,
				    .think = mode ? RP_THINK_ON : RP_THINK_SHARE};
		struct rp_result *r = calloc(1, sizeof(*r));
		assert_int_equal(rp_replay(wl, &o, r, eb, sizeof(eb)), 0);
		assert_int_equal(r->st[AWL_OP_MALLOC].count, (uint64_t)n * 20);
		assert_int_equal(r->st[AWL_OP_FREE].count, (uint64_t)n * 20);
		print_message("think %s: %d threads on %d cores: %" PRIu64 " of %" PRIu64
			      " gaps as a share, %.1f ms wall\n",
			      mode ? "on" : "share", n, ncpu, r->think_shared, (uint64_t)n * 39,
			      (double)r->wall_ns / 1e6);
		if (mode)
			assert_int_equal(r->think_shared, 0);
		else
			assert_true(r->think_shared > 0);
		free(r);
	}
}

/* The replay's own work between calls comes out of the think time under
 * --think on (measured on about one call in 32), not under whole, share
 * or off: 20,000 malloc/free pairs, 2 us between any two calls. */
static void test_own_work(void **state)
{
	(void)state;
	char trace[300], wl[300], eb[512];
	path_in(trace, sizeof(trace), "own.atr");
	path_in(wl, sizeof(wl), "own.wl");
	struct atw *w = atw_new(1 << 20);
	uint32_t t = atw_thread(w, 100, 1);
	for (uint64_t k = 0; k < 20000; k++) {
		uint64_t ts = 1000 + k * 4000, p = 0x10000 + 64 * (k % 512);
		atw_malloc(w, t, ts, p, 32, 8);
		atw_free(w, t, ts + 2000, p);
	}
	assert_int_equal(atw_write_file(w, trace, 0), 0);
	atw_destroy(w);
	struct rp_convert_stats st;
	struct rp_convert_opts co = {.quiet = 1};
	assert_int_equal(rp_convert(trace, wl, &co, &st, eb, sizeof(eb)), 0);
	assert_true(st.think_ns >= 39999ull * 1900);
	const enum rp_think modes[] = {RP_THINK_ON, RP_THINK_WHOLE, RP_THINK_SHARE, RP_THINK_OFF};
	for (int m = 0; m < 4; m++) {
		struct rp_opts o = {
		    .touch = RP_TOUCH_FIRST, .timing = RP_TIMING_OFF, .think = modes[m]};
		struct rp_result *r = calloc(1, sizeof(*r));
		assert_int_equal(rp_replay(wl, &o, r, eb, sizeof(eb)), 0);
		assert_int_equal(r->st[AWL_OP_MALLOC].count, 20000);
		assert_int_equal(r->st[AWL_OP_FREE].count, 20000);
		print_message("think mode %d: %.1f ms spent, %.1f ms own work, workload %.1f ms\n",
			      m, (double)r->think_ns / 1e6, (double)r->think_own_ns / 1e6,
			      (double)st.think_ns / 1e6);
		if (modes[m] == RP_THINK_ON) {
			assert_true(r->think_own_ns > 0);
			assert_true(r->think_own_ns < st.think_ns / 2);
			assert_true(r->think_ns + r->think_own_ns >= st.think_ns);
		} else {
			assert_int_equal(r->think_own_ns, 0);
		}
		if (modes[m] == RP_THINK_OFF)
			assert_int_equal(r->think_ns, 0);
		else if (modes[m] != RP_THINK_ON)
			assert_true(r->think_ns >= st.think_ns);
		free(r);
	}
}

/* A real program: tests/progs/threads under `alloctrace record`. */
static void test_recorded_threads(void **state)
{
	(void)state;
	char tool[1200], prog[1200], trace[1024], wl[300], cmd[16384];
	if (!built("threads", tool, sizeof(tool), prog, sizeof(prog)))
		skip();
	record_prog(tool, prog, "4", "rec", trace, sizeof(trace));
	path_in(wl, sizeof(wl), "threads.wl");
	check_exact(trace, wl, 1);
	/* the same workload when the trace is read on a second thread */
	struct rp_convert_opts po = {.quiet = 1};
	assert_int_equal(convert_both(trace, "threads", &po), 0);
	/* the command line agrees: ideal_rss_peak_bytes == peak_live_bytes */
	snprintf(cmd, sizeof(cmd),
		 "'%s' info --json '%s' | grep -o '\"peak_live_bytes\": [0-9]*' | grep -o "
		 "'[0-9]*$' > '%s/a' && "
		 "'%s' replay --json '%s' | grep -o '\"ideal_rss_peak_bytes\": [0-9]*' | grep -o "
		 "'[0-9]*$' > '%s/b' && "
		 "cmp -s '%s/a' '%s/b'",
		 tool, trace, tmpdir, tool, wl, tmpdir, tmpdir, tmpdir);
	assert_int_equal(system(cmd), 0);
}

/* An extended call record (docs/TRACE_FORMAT.md, "Extended calls"). */
static void ext(struct atw *w, uint32_t s, uint64_t *ts, uint64_t xt, const uint64_t *args,
		unsigned n)
{
	uint64_t words[10] = {(*ts)++ << ATR_TS_SHIFT | ATR_T_EXT, xt};
	memcpy(words + 2, args, n * sizeof(*args));
	assert_int_equal(atw_raw(w, s, words, n + 2), 0);
}

/* The mapping model's odd cases: a MAP_FIXED over parts of two mappings
 * unmaps both parts and makes a new mapping (map_odd); one munmap over
 * three mappings' parts ends all three; a munmap of a range never mapped
 * counts in map_unknown; the workload verifies. */
static void test_mapping_model(void **state)
{
	(void)state;
	char trace[300], wl[300];
	path_in(trace, sizeof(trace), "maps.atr");
	path_in(wl, sizeof(wl), "maps.wl");
	struct atw *w = atw_new(4096);
	atw_hdr_u64(w, ATR_H_FEATURES, ATR_FEAT_CLOCK_MONO_NS | ATR_FEAT_XCALLS);
	uint32_t a = atw_thread(w, 21, 1);
	uint64_t ts = 10;
	const uint64_t A = 0x7f0000000000ULL, B = A + 65536, anon = 3 | (uint64_t)0x22 << 32;
	ext(w, a, &ts, ATR_T_MMAP, (const uint64_t[]){A, 65536, 0, anon, 0xffffffffu, 0}, 6);
	ext(w, a, &ts, ATR_T_MMAP, (const uint64_t[]){B, 65536, 0, anon, 0xffffffffu, 0}, 6);
	ext(w, a, &ts, ATR_T_MMAP,
	    (const uint64_t[]){A + 32768, 65536, A + 32768, 3 | (uint64_t)0x32 << 32, 0xffffffffu,
			       0},
	    6);
	ext(w, a, &ts, ATR_T_MUNMAP, (const uint64_t[]){A, 131072, 0}, 3);
	ext(w, a, &ts, ATR_T_MUNMAP, (const uint64_t[]){0x7e0000000000ULL, 4096, 0}, 3);
	assert_int_equal(atw_flush(w, a), 0);
	assert_int_equal(atw_write_file(w, trace, 0), 0);
	atw_destroy(w);
	struct rp_convert_stats st;
	convert_ok(trace, wl, &st);
	awl_file *f;
	char eb[512];
	assert_int_equal(awl_open(wl, &f, eb, sizeof(eb)), 0);
	assert_int_equal(awl_verify(f, eb, sizeof(eb)), 0);
	const struct awl_info *in = awl_get_info(f);
	assert_int_equal(in->features, AWL_FEAT_XOPS);
	assert_int_equal(st.xcalls, 5);
	assert_int_equal(in->xops[AWL_OP_MMAP - AWL_OP_XFIRST], 3);
	assert_int_equal(in->xops[AWL_OP_MMAP_FIXED - AWL_OP_XFIRST], 0);
	/* A's and B's halves under the fixed mapping, then A's, the new
	   one's and B's remaining parts */
	assert_int_equal(in->xops[AWL_OP_MUNMAP - AWL_OP_XFIRST], 5);
	assert_int_equal(in->map_odd, 1);
	assert_int_equal(in->map_unknown, 1);
	assert_int_equal(in->file_maps, 0);
	assert_int_equal(in->map_slots, 3);
	awl_close(f);
}

/* An op of nf fields (a, b, c) into thread t's stream. */
static void put_op(struct awl_writer *w, uint32_t t, unsigned code, int nf, uint64_t a, uint64_t b,
		   uint64_t c)
{
	uint8_t *p = awl_writer_reserve(w, t, 40);
	*p++ = (uint8_t)code;
	uint64_t v[3] = {a, b, c};
	for (int i = 0; i < nf; i++)
		p = awl_put_uv(p, v[i]);
	awl_writer_commit(w, t, p);
	if (code >= 1 && code <= AWL_OP_CALL_LAST)
		awl_writer_count_call(w, t, code);
}

/* The replay fetches, in a think time, the blocks that the ops up to the
 * next THINK free or reallocate (rp_result.warmed): not a block those ops
 * allocate first, nothing past a WAIT or after the stream's end, none
 * with --no-warm or --think off; the calls made are the same either way. */
static void test_warm(void **state)
{
	(void)state;
	char wl[300], eb[512];
	path_in(wl, sizeof(wl), "warm.wl");
	struct awl_writer *w;
	assert_int_equal(awl_writer_open(wl, &w, eb, sizeof(eb)), 0);
	assert_int_equal(awl_writer_add_thread(w, 1, 1), 0);
	assert_int_equal(awl_writer_add_thread(w, 2, 2), 1);
	/* thread 0: slots 1..3 (fields: slot + 1) */
	for (int i = 1; i <= 3; i++)
		put_op(w, 0, AWL_OP_MALLOC, 2, (uint64_t)i + 1, 64, 0);
	put_op(w, 0, AWL_OP_MALLOC, 2, 4 + 1, 64, 0); /* slot 4: DROPped */
	put_op(w, 0, AWL_OP_THINK, 1, 2000, 0, 0);
	put_op(w, 0, AWL_OP_FREE, 1, 1 + 1, 0, 0); /* warmed */
	put_op(w, 0, AWL_OP_DROP, 1, 4, 0, 0);	   /* warmed */
	put_op(w, 0, AWL_OP_MALLOC, 2, 5 + 1, 64, 0);
	put_op(w, 0, AWL_OP_FREE, 1, 5 + 1, 0, 0); /* allocated inside: not */
	put_op(w, 0, AWL_OP_THINK, 1, 2000, 0, 0);
	put_op(w, 0, AWL_OP_REALLOC, 3, 2 + 1, 6 + 1, 128); /* warmed */
	put_op(w, 0, AWL_OP_SPAWN, 1, 1, 0, 0);		    /* ends the window */
	uint64_t spawn_op = awl_writer_thread_ops(w, 0) - 1;
	put_op(w, 0, AWL_OP_FREE, 1, 3 + 1, 0, 0); /* past it: not */
	put_op(w, 0, AWL_OP_MALLOC, 2, 7 + 1, 64, 0);
	uint64_t t0_ops = awl_writer_thread_ops(w, 0);
	put_op(w, 0, AWL_OP_THINK, 1, 2000, 0, 0);
	put_op(w, 0, AWL_OP_FREE, 1, 6 + 1, 0, 0); /* warmed; the stream ends */
	/* thread 1: frees thread 0's slot 7 after a WAIT for its malloc */
	awl_writer_set_start(w, 1, 0, spawn_op, 2);
	put_op(w, 1, AWL_OP_THINK, 1, 2000, 0, 0);
	put_op(w, 1, AWL_OP_WAIT, 2, 0, t0_ops, 0); /* ends the window */
	put_op(w, 1, AWL_OP_FREE, 1, 7 + 1, 0, 0);  /* not */
	struct awl_summary_in sum = {.slots = 8, .waits = 1, .think_ns = 4 * 2000, .max_live = 2};
	assert_int_equal(awl_writer_finish(w, &sum, eb, sizeof(eb)), 0);
	awl_writer_close(w);
	awl_file *f;
	assert_int_equal(awl_open(wl, &f, eb, sizeof(eb)), 0);
	if (awl_verify(f, eb, sizeof(eb)) != 0)
		fail_msg("%s", eb);
	awl_close(f);
	for (int mode = 0; mode < 3; mode++) { /* warm, --no-warm, --think off */
		struct rp_opts o = {.touch = RP_TOUCH_FIRST,
				    .timing = RP_TIMING_OFF,
				    .no_warm = mode == 1,
				    .think = mode == 2 ? RP_THINK_OFF : RP_THINK_ON};
		struct rp_result *r = calloc(1, sizeof(*r));
		assert_int_equal(rp_replay(wl, &o, r, eb, sizeof(eb)), 0);
		assert_int_equal(r->warmed, mode == 0 ? 4 : 0);
		assert_int_equal(r->st[AWL_OP_MALLOC].count, 6);
		assert_int_equal(r->st[AWL_OP_FREE].count, 5);
		assert_int_equal(r->st[AWL_OP_REALLOC].count, 1);
		assert_int_equal(r->unexpected_fail + r->unexpected_ok, 0);
		free(r);
	}
}

/* awl_writer_mark/patch: a field rewritten after its chunk went to the
 * file (convert's TOUCH counts) lands in the right bytes, as does one
 * still in the buffer. */
static void test_writer_patch(void **state)
{
	(void)state;
	char wl[300], eb[512];
	path_in(wl, sizeof(wl), "patch.wl");
	struct awl_writer *w;
	assert_int_equal(awl_writer_open(wl, &w, eb, sizeof(eb)), 0);
	assert_int_equal(awl_writer_add_thread(w, 1, 1), 0);
	enum { N = 40000 };
	uint64_t marks[N];
	for (int i = 0; i < N; i++) {
		uint8_t *p = awl_writer_reserve(w, 0, 32);
		*p++ = AWL_OP_TOUCH;
		marks[i] = awl_writer_mark(w, 0, p);
		for (int k = 0; k < 5; k++) /* 6 bytes, padded 0 */
			*p++ = 0x80;
		*p++ = 0;
		awl_writer_commit(w, 0, p);
		p = awl_writer_reserve(w, 0, 32);
		*p++ = AWL_OP_MALLOC;
		p = awl_put_uv(p, (uint64_t)i + 1);
		p = awl_put_uv(p, 100000);
		awl_writer_commit(w, 0, p);
		awl_writer_count_call(w, 0, AWL_OP_MALLOC);
	}
	for (int i = 0; i < N; i++) { /* value i + 1, padded to 6 bytes */
		uint8_t v[6];
		uint64_t x = (uint64_t)i + 1;
		for (int k = 0; k < 5; k++, x >>= 7)
			v[k] = (uint8_t)((x & 0x7f) | 0x80);
		v[5] = (uint8_t)x;
		awl_writer_patch(w, marks[i], v, sizeof(v));
	}
	struct awl_summary_in s = {.slots = N + 1, .features = AWL_FEAT_TOUCH};
	assert_int_equal(awl_writer_finish(w, &s, eb, sizeof(eb)), 0);
	awl_writer_close(w);
	awl_file *f;
	assert_int_equal(awl_open(wl, &f, eb, sizeof(eb)), 0);
	assert_true(awl_get_info(f)->chunks > 3); /* most patches went to the file */
	assert_int_equal(awl_verify(f, eb, sizeof(eb)), 0);
	struct awl_stream st;
	struct awl_op op;
	assert_int_equal(awl_stream_init(f, 0, &st), 0);
	int i = 0;
	while (awl_stream_next(&st, &op) > 0)
		if (op.code == AWL_OP_TOUCH)
			assert_int_equal(op.a, (uint64_t)++i);
	assert_int_equal(i, N);
	awl_stream_free(&st);
	awl_close(f);
}

/* Max RSS (KiB) of `alloctrace replay --kv WL` with glibc's mmap threshold
 * at 64 KiB (extra: more options). */
static long replay_rss(const char *tool, const char *wl, const char *extra)
{
	char cmd[2048], line[256];
	snprintf(cmd, sizeof(cmd),
		 "'%s' replay --kv --timing off --tunable glibc.malloc.mmap_threshold=65536 %s "
		 "'%s'",
		 tool, extra, wl);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	long kb = -1;
	while (fgets(line, sizeof(line), p))
		if (sscanf(line, "max_rss_kb %ld", &kb) == 1)
			break;
	while (fgets(line, sizeof(line), p))
		;
	assert_int_equal(pclose(p), 0);
	assert_true(kb > 0);
	return kb;
}

/* tests/progs/touchpages: 64 mmap'd blocks of 128 pages, block i with
 * 1 + (7 i) % 8 pages written.  The trace carries exactly those resident
 * counts, the workload the same in TOUCH ops, and a replay under glibc
 * with mmap'd chunks writes what the program wrote: its Max RSS above a
 * --touch none replay stays within the program's pages, where --touch
 * first writes all 32 MiB. */
static void test_touch_resident(void **state)
{
	(void)state;
	enum { N = 64, PAGES = 128 };
	char tool[1200], prog[1200], trace[1024], wl[300];
	if (!built("touchpages", tool, sizeof(tool), prog, sizeof(prog)))
		skip();
	/* every release counted: no time budget */
	record_prog_env(tool, prog, "64 128", "touch", "ALLOCTRACE_RESIDENT_BUDGET=100", trace,
			sizeof(trace));
	/* the trace: block i's free says touched(i) of 128; block 0's
	   realloc says 1, the new block's free 5 of 256 */
	atr_file *af;
	char eb[512];
	assert_int_equal(atr_open(trace, &af, eb, sizeof(eb)), 0);
	assert_true(atr_get_info(af)->resident_min > 0);
	atr_iter *it;
	assert_int_equal(atr_iter_new(af, &it), 0);
	struct atr_event ev;
	int frees = 0, reallocs = 0;
	long touched_kib = 0;
	while (atr_iter_next(it, &ev) > 0) {
		if (ev.type == ATR_T_REALLOC) {
			assert_int_equal(ev.resident_pages, 1);
			assert_int_equal(ev.span_pages, PAGES);
			reallocs++;
		} else if (ev.type == ATR_T_FREE && ev.span_pages) {
			int i = frees++;
			unsigned want = i == 0 ? 5 : 1 + (7 * i) % 8;
			assert_int_equal(ev.resident_pages, want);
			assert_int_equal(ev.span_pages, i == 0 ? 2 * PAGES : PAGES);
			touched_kib += 4 * (1 + (7 * i) % 8);
		}
	}
	atr_iter_free(it);
	atr_close(af);
	assert_int_equal(reallocs, 1);
	assert_int_equal(frees, N);
	/* the workload: a TOUCH before each large allocation, KiB + 1 */
	path_in(wl, sizeof(wl), "touch.wl");
	struct rp_convert_stats st;
	convert_ok(trace, wl, &st); /* (check_exact would count its mallopt) */
	assert_int_equal(st.touch_ops, N + 1);
	assert_int_equal(st.touch_counted, N + 1);
	awl_file *f;
	assert_int_equal(awl_open(wl, &f, eb, sizeof(eb)), 0);
	assert_int_equal(awl_verify(f, eb, sizeof(eb)), 0);
	assert_true(awl_get_info(f)->features & AWL_FEAT_TOUCH);
	struct awl_stream s;
	struct awl_op op;
	assert_int_equal(awl_stream_init(f, 0, &s), 0);
	int touches = 0, after = 0;
	uint64_t want[N + 1];
	for (int i = 0; i < N; i++)
		want[i] = 4 * (uint64_t)(1 + (7 * i) % 8) + 1;
	want[0] = 4 * 1 + 1; /* block 0 before its realloc */
	want[N] = 4 * 5 + 1; /* the realloc's new block */
	while (awl_stream_next(&s, &op) > 0) {
		if (after) {
			assert_true(op.code == AWL_OP_MALLOC || op.code == AWL_OP_REALLOC);
			after = 0;
		}
		if (op.code == AWL_OP_TOUCH) {
			assert_true(touches <= N);
			assert_int_equal(op.a, want[touches]);
			touches++;
			after = 1;
		}
	}
	awl_stream_free(&s);
	awl_close(f);
	assert_int_equal(touches, N + 1);
	/* the replays: each a process of its own (Max RSS) */
	long none = replay_rss(tool, wl, "--touch none");
	long tr = replay_rss(tool, wl, ""); /* the default: trace */
	long first = replay_rss(tool, wl, "--touch first");
	print_message("touch: Max RSS none %ld KiB, trace %ld KiB (program wrote %ld), first %ld "
		      "KiB\n",
		      none, tr, touched_kib, first);
	assert_true(tr - none <= touched_kib + 1024);
	assert_true(first - none >= N * PAGES * 4 * 3 / 4);
}

/* The same program under a tiny RESIDENT budget (0.01% of the thread's
 * time: a release is counted with a probability that makes its counts
 * cost that share): the
 * header says so, the first large release (block 0's realloc) is always
 * counted, and convert gives every TOUCH of a release it skipped the
 * resident share of the counted blocks of its size class, so every block
 * of the 64 alike gets a count or an estimate, within the block's pages. */
static void test_touch_budget(void **state)
{
	(void)state;
	enum { N = 64, PAGES = 128 };
	char tool[1200], prog[1200], trace[1024], wl[300];
	if (!built("touchpages", tool, sizeof(tool), prog, sizeof(prog)))
		skip();
	record_prog_env(tool, prog, "64 128", "touchb", "ALLOCTRACE_RESIDENT_BUDGET=0.01", trace,
			sizeof(trace));
	atr_file *af;
	char eb[512];
	assert_int_equal(atr_open(trace, &af, eb, sizeof(eb)), 0);
	assert_int_equal(atr_get_info(af)->res_budget, 1);
	atr_iter *it;
	assert_int_equal(atr_iter_new(af, &it), 0);
	struct atr_event ev;
	uint64_t counted = 0, first_realloc = 0;
	while (atr_iter_next(it, &ev) > 0) {
		if (ev.type == ATR_T_FREE && ev.span_pages)
			counted++;
		if (ev.type == ATR_T_REALLOC && ev.span_pages)
			first_realloc = ev.span_pages == PAGES && ev.resident_pages == 1;
	}
	atr_iter_free(it);
	atr_close(af);
	assert_true(first_realloc);
	counted++; /* the realloc's */
	assert_true(counted <= N + 1);
	path_in(wl, sizeof(wl), "touchb.wl");
	struct rp_convert_stats st;
	convert_ok(trace, wl, &st);
	assert_int_equal(st.touch_ops, N + 1);
	assert_int_equal(st.touch_counted, counted);
	/* the 63 frees of blocks of block 0's class: counted or estimated;
	   the realloc's new block (twice as large) only if counted */
	assert_true(st.touch_counted + st.touch_estimated >= N);
	awl_file *f;
	assert_int_equal(awl_open(wl, &f, eb, sizeof(eb)), 0);
	struct awl_stream s;
	struct awl_op op;
	assert_int_equal(awl_stream_init(f, 0, &s), 0);
	uint64_t known = 0;
	while (awl_stream_next(&s, &op) > 0)
		if (op.code == AWL_OP_TOUCH && op.a) {
			known++;
			assert_true(op.a >= 1 && op.a <= 4 * (2 * PAGES + 1) + 1);
		}
	awl_stream_free(&s);
	awl_close(f);
	assert_int_equal(known, st.touch_counted + st.touch_estimated);
}

/* tests/progs/touchpages heap: 16 blocks of 64 pages of glibc's heap at
 * one address, the first with 63 pages written, the others with 1.  The
 * trace counts 64 resident pages at every release (the first block's
 * pages stay resident under the others).  The first block's count is
 * its own (its pages were fresh): 64 pages.  The others' counts cannot
 * tell one page written from 64 (every page was resident before), so
 * their TOUCH ops take the share of their size class's blocks whose
 * counts could tell, here the first block's: 64 pages too, what a
 * program that fills its buffers needs (git's pack-objects,
 * bench/fidelity/RESULTS.md), not this one, which writes one. */
static void test_touch_heap(void **state)
{
	(void)state;
	enum { N = 16, PAGES = 64 };
	char tool[1200], prog[1200], trace[1024], wl[300];
	if (!built("touchpages", tool, sizeof(tool), prog, sizeof(prog)))
		skip();
	record_prog_env(tool, prog, "16 64 heap", "touchh", "ALLOCTRACE_RESIDENT_BUDGET=100", trace,
			sizeof(trace));
	atr_file *af;
	char eb[512];
	assert_int_equal(atr_open(trace, &af, eb, sizeof(eb)), 0);
	atr_iter *it;
	assert_int_equal(atr_iter_new(af, &it), 0);
	struct atr_event ev;
	int frees = 0;
	while (atr_iter_next(it, &ev) > 0)
		if (ev.type == ATR_T_FREE && ev.span_pages) {
			assert_true(ev.resident_pages >= PAGES - 1);
			frees++;
		}
	atr_iter_free(it);
	atr_close(af);
	assert_int_equal(frees, N);
	path_in(wl, sizeof(wl), "touchh.wl");
	struct rp_convert_stats st;
	convert_ok(trace, wl, &st);
	assert_int_equal(st.touch_ops, N);
	assert_int_equal(st.touch_counted, N);
	assert_true(st.touch_prior_pages <= (uint64_t)N); /* none set aside but rounding */
	awl_file *f;
	assert_int_equal(awl_open(wl, &f, eb, sizeof(eb)), 0);
	struct awl_stream s;
	struct awl_op op;
	assert_int_equal(awl_stream_init(f, 0, &s), 0);
	int touches = 0;
	while (awl_stream_next(&s, &op) > 0)
		if (op.code == AWL_OP_TOUCH) {
			assert_true(op.a >= 4 * (PAGES - 1) + 1);
			touches++;
		}
	awl_stream_free(&s);
	awl_close(f);
	assert_int_equal(touches, N);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_all_calls),
	    cmocka_unit_test(test_cross_thread_order),
	    cmocka_unit_test(test_bad_input),
	    cmocka_unit_test(test_recorded_threads),
	    cmocka_unit_test(test_recorded_waves),
	    cmocka_unit_test(test_v1_fixture),
	    cmocka_unit_test(test_think_time),
	    cmocka_unit_test(test_mapping_model),
	    cmocka_unit_test(test_touch_resident),
	    cmocka_unit_test(test_writer_patch),
	    cmocka_unit_test(test_warm),
	    cmocka_unit_test(test_touch_budget),
	    cmocka_unit_test(test_join_gap),
	    cmocka_unit_test(test_share_gap),
	    cmocka_unit_test(test_cpu_gap),
	    cmocka_unit_test(test_handoff_gap),
	    cmocka_unit_test(test_sampled_durations),
	    cmocka_unit_test(test_sampled_mean),
	    cmocka_unit_test(test_recorder_gap),
	    cmocka_unit_test(test_think_shared),
	    cmocka_unit_test(test_pipe_same),
	    cmocka_unit_test(test_touch_heap),
	    cmocka_unit_test(test_fast_same),
	    cmocka_unit_test(test_timing_sample),
	    cmocka_unit_test(test_big_blocks),
	    cmocka_unit_test(test_traced_rss),
	    cmocka_unit_test(test_tracer_rss),
	    cmocka_unit_test(test_rss_sizes),
	    cmocka_unit_test(test_rss_exec_window),
	    cmocka_unit_test(test_late_multi),
	    cmocka_unit_test(test_recorded_turns),
	    cmocka_unit_test(test_reordered_free),
	    cmocka_unit_test(test_recorded_handoff),
	    cmocka_unit_test(test_own_work),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
