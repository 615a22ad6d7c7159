/* test_reader.c - atr_reader on traces built by the test writer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "atr_reader.h"
#include "atr_testwriter.h"

#define MAXEV 4096

struct trace {
	uint8_t *buf;
	size_t len;
	atr_file *f;
	struct atr_event ev[MAXEV];
	size_t n;
	int rc; /* last iterator result */
	char err[512];
	struct atr_event rel[MAXEV]; /* ATR_EV_REALLOC_RELEASE events */
	size_t nrel;
};

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

/* Build, open, iterate everything.  Returns the atr_open result. */
static int load(struct trace *t, struct atw *w, int trim)
{
	memset(t, 0, sizeof(*t));
	assert_int_equal(atw_build(w, &t->buf, &t->len, trim), 0);
	atw_destroy(w);
	int r = atr_open_buffer(t->buf, t->len, "t.atr", &t->f, t->err, sizeof(t->err));
	if (r < 0)
		return r;
	atr_iter *it;
	assert_int_equal(atr_iter_new(t->f, &it), 0);
	while (t->n < MAXEV && (t->rc = atr_iter_next(it, &t->ev[t->n])) > 0) {
		if (t->ev[t->n].type == ATR_EV_REALLOC_RELEASE) {
			t->rel[t->nrel < MAXEV ? t->nrel : 0] = t->ev[t->n];
			t->nrel++;
			continue; /* kept apart: the tests index records */
		}
		t->n++;
	}
	atr_iter_free(it);
	return r;
}

static void unload(struct trace *t)
{
	atr_close(t->f);
	free(t->buf);
}

static void test_decode_every_type(void **state)
{
	(void)state;
	struct atw *w = atw_new(4096);
	uint32_t s = atw_thread(w, 4242, 1);
	assert_int_equal(atw_malloc(w, s, 10, 0x1000, 32, 8), 0);
	assert_int_equal(atw_free(w, s, 11, 0x1000), 0);
	uint64_t cal[3] = {0x2000, atw_size(40, 0), 5};
	assert_int_equal(atw_call(w, s, 12, ATR_T_CALLOC, 0, cal, NULL), 0);
	assert_int_equal(atw_realloc(w, s, 13, 0x2000, 0x3000, 100, 7), 0);
	uint64_t ra[4] = {0x4000, atw_size(60, 4), 0x3000, 3};
	uint64_t raopt[1] = {9};
	assert_int_equal(atw_call(w, s, 24, ATR_T_REALLOCARRAY, ATR_FLAG_TIMED, ra, raopt), 0);
	uint64_t ma[3] = {0x5000, atw_size(64, 0xffff), 64};
	assert_int_equal(atw_call(w, s, 35, ATR_T_MEMALIGN, 0, ma, NULL), 0);
	uint64_t pm[3] = {0, atw_size(16, 22), 3}; /* failed: EINVAL in slack */
	assert_int_equal(atw_call(w, s, 36, ATR_T_POSIX_MEMALIGN, 0, pm, NULL), 0);
	uint64_t aa[3] = {0x6000, 1ULL << 50, 4096};
	uint64_t aaopt[3] = {123, 77, 5}; /* WIDE slack, STACK id, TIMED */
	assert_int_equal(atw_call(w, s, 37, ATR_T_ALIGNED_ALLOC,
				  ATR_FLAG_WIDE | ATR_FLAG_STACK | ATR_FLAG_TIMED, aa, aaopt),
			 0);
	uint64_t va[2] = {0x7000, atw_size(4096, 0)};
	assert_int_equal(atw_call(w, s, 38, ATR_T_VALLOC, 0, va, NULL), 0);
	uint64_t pv[2] = {0x8000, atw_size(100, 3996)};
	uint64_t pvopt[1] = {11};
	assert_int_equal(atw_call(w, s, 39, ATR_T_PVALLOC, ATR_FLAG_STACK, pv, pvopt), 0);
	uint64_t fr[1] = {0x8000};
	uint64_t fropt[1] = {3};
	assert_int_equal(atw_call(w, s, 40, ATR_T_FREE, ATR_FLAG_TIMED, fr, fropt), 0);
	assert_int_equal(atw_marker(w, s, 41, "phase \"1\""), 0);
	assert_int_equal(atw_meta(w, s, 42, ATR_T_CONTROL, ATR_CTL_PAUSE, NULL, 0), 0);
	assert_int_equal(atw_meta(w, s, 43, ATR_T_THREAD_EXIT, 4242, NULL, 0), 0);
	uint64_t wm[2] = {0, 1ULL << 49}; /* failed malloc, WIDE */
	uint64_t wmopt[1] = {0};
	assert_int_equal(atw_call(w, s, 44, ATR_T_MALLOC, ATR_FLAG_WIDE, wm, wmopt), 0);

	struct trace t;
	assert_int_equal(load(&t, w, 1), 0);
	assert_int_equal(t.rc, 0);
	assert_int_equal(t.n, 16); /* the last record ends in a zero word: not trimmed */
	const struct atr_event *e = t.ev;
	assert_int_equal(e[0].type, ATR_T_THREAD_START);
	assert_int_equal(e[0].arg, 4242);
	assert_int_equal(e[0].tid, 4242);
	assert_int_equal(e[0].payload_len, 8);
	assert_int_equal(e[0].ts, 1);

	assert_int_equal(e[1].type, ATR_T_MALLOC);
	assert_int_equal(e[1].ret, 0x1000);
	assert_int_equal(e[1].size, 32);
	assert_int_equal(e[1].usable, 40);
	assert_int_equal(e[1].thread, 1);
	assert_int_equal(e[1].ts, 10);
	assert_int_equal(e[1].seq, 1);

	assert_int_equal(e[2].type, ATR_T_FREE);
	assert_int_equal(e[2].ptr, 0x1000);
	assert_int_equal(e[2].ret, 0);

	assert_int_equal(e[3].type, ATR_T_CALLOC);
	assert_int_equal(e[3].ret, 0x2000);
	assert_int_equal(e[3].size, 40);
	assert_int_equal(e[3].nmemb, 5);
	assert_int_equal(e[3].usable, 40);

	assert_int_equal(e[4].type, ATR_T_REALLOC);
	assert_int_equal(e[4].ptr, 0x2000);
	assert_int_equal(e[4].ret, 0x3000);
	assert_int_equal(e[4].size, 100);
	assert_true(e[4].usable == UINT64_MAX);
	assert_int_equal(e[4].duration, 7);
	assert_true(e[4].flags & ATR_FLAG_TIMED);
	assert_int_equal(e[4].ts, 20); /* the end stamp */
	/* both moved: their old blocks were released at the start stamps */
	assert_int_equal(t.nrel, 2);
	assert_int_equal(t.rel[0].ts, 13);
	assert_int_equal(t.rel[0].ptr, 0x2000);
	assert_int_equal(t.rel[1].ts, 24);
	assert_int_equal(t.rel[1].ptr, 0x3000);
	assert_int_equal(atr_get_info(t.f)->clock_inversions, 0);

	assert_int_equal(e[5].type, ATR_T_REALLOCARRAY);
	assert_int_equal(e[5].ptr, 0x3000);
	assert_int_equal(e[5].ret, 0x4000);
	assert_int_equal(e[5].size, 60);
	assert_int_equal(e[5].nmemb, 3);
	assert_int_equal(e[5].usable, 64);
	assert_int_equal(e[5].duration, 9);

	assert_int_equal(e[6].type, ATR_T_MEMALIGN);
	assert_int_equal(e[6].align, 64);
	assert_int_equal(e[6].size, 64);
	assert_true(e[6].usable == UINT64_MAX);

	assert_int_equal(e[7].type, ATR_T_POSIX_MEMALIGN);
	assert_int_equal(e[7].ret, 0);
	assert_int_equal(e[7].err, 22);
	assert_int_equal(e[7].align, 3);
	assert_int_equal(e[7].usable, 0);

	assert_int_equal(e[8].type, ATR_T_ALIGNED_ALLOC);
	assert_true(e[8].size == (1ULL << 50));
	assert_true(e[8].usable == (1ULL << 50) + 123);
	assert_int_equal(e[8].stack_id, 77);
	assert_int_equal(e[8].duration, 5);
	assert_int_equal(e[8].align, 4096);

	assert_int_equal(e[9].type, ATR_T_VALLOC);
	assert_int_equal(e[9].size, 4096);
	assert_int_equal(e[9].usable, 4096);
	assert_int_equal(e[10].type, ATR_T_PVALLOC);
	assert_int_equal(e[10].usable, 4096);
	assert_int_equal(e[10].stack_id, 11);
	assert_int_equal(e[11].type, ATR_T_FREE);
	assert_int_equal(e[11].ptr, 0x8000);
	assert_int_equal(e[11].duration, 3);
	assert_int_equal(e[12].type, ATR_T_MARKER);
	assert_int_equal(e[12].payload_len, 9);
	assert_memory_equal(e[12].payload, "phase \"1\"", 9);
	/* control and thread_exit */
	assert_int_equal(e[13].type, ATR_T_CONTROL);
	assert_int_equal(e[13].arg, ATR_CTL_PAUSE);
	assert_int_equal(e[14].type, ATR_T_THREAD_EXIT);
	assert_int_equal(e[15].type, ATR_T_MALLOC);
	assert_true(e[15].flags & ATR_FLAG_WIDE);
	assert_int_equal(e[15].ret, 0);
	assert_true(e[15].size == (1ULL << 49));
	assert_int_equal(e[15].usable, 0);
	assert_int_equal(atr_get_info(t.f)->truncated_records, 0);

	const struct atr_info *in = atr_get_info(t.f);
	assert_int_equal(in->walked, 1);
	assert_int_equal(in->threads, 1);
	assert_int_equal(in->pid, 1000);
	assert_string_equal(in->exe, "/usr/bin/test");
	assert_string_equal(in->cmdline, "test");
	unload(&t);
}

static void test_wide_failed_malloc(void **state)
{
	(void)state;
	struct atw *w = atw_new(4096);
	uint32_t s = atw_thread(w, 1, 0);
	assert_int_equal(atw_malloc(w, s, 5, 0, 1ULL << 49, 0), 0);
	assert_int_equal(atw_malloc(w, s, 6, 0x10, 100, 70000), 0); /* WIDE slack */
	struct trace t;
	assert_int_equal(load(&t, w, 1), 0);
	assert_int_equal(t.n, 3);
	assert_true(t.ev[1].size == (1ULL << 49));
	assert_int_equal(t.ev[1].ret, 0);
	assert_int_equal(t.ev[1].usable, 0);
	assert_int_equal(t.ev[2].usable, 70100);
	unload(&t);
}

static void test_merge_three_threads(void **state)
{
	(void)state;
	struct atw *w = atw_new(4096);
	uint32_t a = atw_thread(w, 11, 0);
	uint32_t b = atw_thread(w, 12, 0);
	uint32_t c = atw_thread(w, 13, 0);
	/* thread a: 10, 40, 70; b: 20, 40, 80; c: 5, 40, 60 */
	atw_malloc(w, a, 10, 0xa1, 1, 0);
	atw_malloc(w, a, 40, 0xa2, 1, 0);
	atw_malloc(w, a, 70, 0xa3, 1, 0);
	atw_malloc(w, b, 20, 0xb1, 1, 0);
	atw_malloc(w, b, 40, 0xb2, 1, 0);
	atw_flush(w, b); /* b's first records in a data block */
	atw_malloc(w, b, 80, 0xb3, 1, 0);
	atw_malloc(w, c, 5, 0xc1, 1, 0);
	atw_malloc(w, c, 40, 0xc2, 1, 0);
	atw_malloc(w, c, 60, 0xc3, 1, 0);
	struct trace t;
	assert_int_equal(load(&t, w, 1), 0);
	assert_int_equal(t.rc, 0);
	assert_int_equal(t.n, 12);
	/* three thread_start at ts 0, by serial */
	for (int i = 0; i < 3; i++) {
		assert_int_equal(t.ev[i].type, ATR_T_THREAD_START);
		assert_int_equal(t.ev[i].thread, (uint32_t)i + 1);
		assert_int_equal(t.ev[i].tid, 11u + (uint32_t)i);
	}
	static const uint64_t want[] = {0xc1, 0xa1, 0xb1, 0xa2, 0xb2, 0xc2, 0xc3, 0xa3, 0xb3};
	for (size_t i = 0; i < 9; i++) {
		assert_int_equal(t.ev[3 + i].ret, want[i]);
		assert_int_equal(t.ev[3 + i].seq, 3 + i);
		if (i)
			assert_true(t.ev[3 + i].ts >= t.ev[2 + i].ts);
	}
	assert_int_equal(atr_thread_count(t.f), 3);
	assert_int_equal(atr_thread(t.f, 1)->serial, 2);
	assert_int_equal(atr_thread(t.f, 1)->tid, 12);
	assert_int_equal(atr_thread(t.f, 1)->blocks, 2);
	assert_null(atr_thread(t.f, 3));
	unload(&t);
}

static void test_many_blocks_in_order(void **state)
{
	(void)state;
	struct atw *w = atw_new(4096);
	uint32_t a = atw_thread(w, 1, 0);
	uint32_t b = atw_thread(w, 2, 0);
	/* ~1500 records each: many auto-flushed data blocks, interleaved */
	for (uint64_t i = 1; i <= 1500; i++) {
		atw_malloc(w, a, 2 * i, 0x100000 + i, i, 0);
		atw_free(w, b, 2 * i + 1, 0x200000 + i);
	}
	struct trace t;
	assert_int_equal(load(&t, w, 1), 0);
	assert_int_equal(t.rc, 0);
	assert_int_equal(t.n, 3002);
	for (size_t i = 3; i < t.n; i++)
		assert_true(t.ev[i].ts > t.ev[i - 1].ts);
	uint64_t n, calls;
	assert_int_equal(atr_count_records(t.f, &n), 0);
	assert_int_equal(atr_count_calls(t.f, &calls), 0);
	assert_int_equal(n, 3002);
	assert_int_equal(calls, 3000);
	const struct atr_info *in = atr_get_info(t.f);
	assert_int_equal(in->lost_blocks, 0);
	assert_int_equal(in->last_ts, 3001);
	unload(&t);
}

static void test_staging_duplicate_ignored(void **state)
{
	(void)state;
	struct atw *w = atw_new(4096);
	uint32_t s = atw_thread(w, 1, 0);
	atw_malloc(w, s, 1, 0x10, 1, 0);
	atw_malloc(w, s, 2, 0x20, 1, 0);
	atw_flush_crash(w, s); /* DATA seq 0 + STAGING still seq 0 */
	struct trace t;
	assert_int_equal(load(&t, w, 1), 0);
	assert_int_equal(t.rc, 0);
	assert_int_equal(t.n, 3);
	assert_int_equal(atr_get_info(t.f)->ignored_staging, 1);
	unload(&t);
}

static void test_gap_counted_as_lost(void **state)
{
	(void)state;
	struct atw *w = atw_new(4096);
	uint32_t s = atw_thread(w, 1, 0);
	atw_malloc(w, s, 1, 0x10, 1, 0);
	atw_flush(w, s);		 /* seq 0 */
	atw_malloc(w, s, 2, 0x20, 1, 0); /* seq 1: write "fails" */
	atw_skip_seq(w, s);
	atw_malloc(w, s, 3, 0x30, 1, 0);
	atw_flush(w, s);		 /* seq 2 */
	atw_malloc(w, s, 4, 0x40, 1, 0); /* seq 3: skipped too */
	atw_skip_seq(w, s);
	atw_malloc(w, s, 5, 0x50, 1, 0); /* staging seq 4 */
	struct trace t;
	assert_int_equal(load(&t, w, 1), 0);
	assert_int_equal(t.rc, 0);
	assert_int_equal(t.n, 4);
	assert_int_equal(t.ev[1].ret, 0x10);
	assert_int_equal(t.ev[2].ret, 0x30);
	assert_int_equal(t.ev[3].ret, 0x50);
	assert_int_equal(atr_get_info(t.f)->lost_blocks, 2);
	unload(&t);

	/* the first block (seq 0) missing: counted too */
	w = atw_new(4096);
	s = atw_thread(w, 1, 0);
	atw_skip_seq(w, s);
	atw_malloc(w, s, 2, 0x20, 1, 0);
	assert_int_equal(load(&t, w, 1), 0);
	assert_int_equal(t.n, 1);
	assert_int_equal(atr_get_info(t.f)->lost_blocks, 1);
	unload(&t);
}

static void test_retired_staging(void **state)
{
	(void)state;
	struct atw *w = atw_new(4096);
	uint32_t s = atw_thread(w, 1, 0);
	atw_malloc(w, s, 1, 0x10, 1, 0);
	atw_retire(w, s); /* data seq 0, retired, new staging seq 1 */
	atw_malloc(w, s, 2, 0x20, 1, 0);
	struct trace t;
	assert_int_equal(load(&t, w, 1), 0);
	assert_int_equal(t.rc, 0);
	assert_int_equal(t.n, 3);
	assert_int_equal(t.ev[2].ret, 0x20);
	assert_int_equal(atr_get_info(t.f)->blocks, 3);
	unload(&t);
}

static void test_older_staging_loses(void **state)
{
	(void)state;
	struct atw *w = atw_new(4096);
	uint32_t s = atw_thread(w, 1, 0);
	atw_malloc(w, s, 1, 0x10, 1, 0);
	atw_retire(w, s);
	atw_malloc(w, s, 2, 0x20, 1, 0);
	/* turn the retired block back into a staging block (seq 0): it must
	 * lose against the data block with the same seq */
	uint8_t *blk = atw_block(w, 0);
	put32(blk + ATR_B_KIND, ATR_BLOCK_STAGING);
	struct trace t;
	assert_int_equal(load(&t, w, 1), 0);
	assert_int_equal(t.n, 3);
	assert_int_equal(atr_get_info(t.f)->ignored_staging, 1);
	unload(&t);
}

/* Feature INFLIGHT: a thread's STAGING unit seq 1 handed to the encoder
 * thread (no FRAME yet), FRAME seq 2 written after it by the thread, its
 * current STAGING unit seq 3.  Variant frame1: the FRAME of seq 1 was
 * written too (a crash before the unit was reused): never read twice.
 * Without the bit, the rule of one STAGING unit per thread applies. */
static void inflight_trace(struct trace *t, int frame1, int bit, uint64_t *calls)
{
	struct atw *w = atw_new(4096);
	uint32_t s = atw_thread(w, 1, 0);
	atw_malloc(w, s, 1, 0x10, 1, 0);
	atw_flush(w, s); /* DATA 0 at index 1; staging (index 0) seq 1 */
	atw_malloc(w, s, 2, 0x20, 1, 0);
	atw_retire(w, s); /* DATA 1 at 2; index 0 keeps seq 1; staging 3 seq 2 */
	atw_malloc(w, s, 3, 0x30, 1, 0);
	atw_flush(w, s); /* DATA 2 at 4; staging 3 seq 3 */
	atw_malloc(w, s, 4, 0x40, 1, 0);
	put32(atw_block(w, 0) + ATR_B_KIND, ATR_BLOCK_STAGING);
	if (!frame1)
		put32(atw_block(w, 2) + ATR_B_MAGIC, 0); /* never written */
	if (bit)
		atw_hdr_u64(w, ATR_H_FEATURES, ATR_FEAT_CLOCK_MONO_NS | ATR_FEAT_INFLIGHT);
	assert_int_equal(load(t, w, 1), 0);
	assert_int_equal(t->rc, 0);
	assert_int_equal(atr_count_calls_quick(t->f, calls), 0);
}

static void test_inflight_staging(void **state)
{
	(void)state;
	struct trace t;
	uint64_t calls;
	for (int frame1 = 0; frame1 <= 1; frame1++) {
		inflight_trace(&t, frame1, 1, &calls);
		assert_int_equal(t.n, 5); /* thread start + 4 mallocs, once each */
		for (int i = 1; i <= 4; i++)
			assert_int_equal(t.ev[i].ret, 0x10 * (uint64_t)i);
		assert_int_equal(calls, 4);
		assert_int_equal(atr_get_info(t.f)->lost_blocks, 0);
		assert_int_equal(atr_get_info(t.f)->ignored_staging, (uint64_t)frame1);
		unload(&t);
	}
	/* without the bit: only the last STAGING unit counts (version 1's rule) */
	inflight_trace(&t, 0, 0, &calls);
	assert_int_equal(t.n, 4);
	assert_int_equal(calls, 3);
	assert_int_equal(atr_get_info(t.f)->lost_blocks, 1);
	assert_int_equal(atr_get_info(t.f)->ignored_staging, 1);
	unload(&t);
}

static void test_truncated_file(void **state)
{
	(void)state;
	struct atw *w = atw_new(4096);
	uint32_t s = atw_thread(w, 1, 0);
	for (uint64_t i = 1; i <= 600; i++)
		atw_malloc(w, s, i, 0x1000 + i, 8, 0);
	atw_flush(w, s);
	uint8_t *buf;
	size_t len;
	assert_int_equal(atw_build(w, &buf, &len, 1), 0);
	atw_destroy(w);
	/* cut in the middle of the last data block's records */
	size_t cut = len - 1000;
	atr_file *f;
	char err[512];
	assert_int_equal(atr_open_buffer(buf, cut, "cut.atr", &f, err, sizeof(err)), 0);
	uint64_t n;
	assert_int_equal(atr_count_calls(f, &n), 0);
	assert_true(n < 600);
	assert_true(n > 400);
	const struct atr_info *in = atr_get_info(f);
	assert_int_equal(in->truncated_blocks, 1);
	assert_true(in->truncated_records > 0);
	assert_int_equal(n + in->truncated_records, 600);
	atr_close(f);
	/* an odd cut inside a record */
	assert_int_equal(atr_open_buffer(buf, cut - 3, "cut.atr", &f, err, sizeof(err)), 0);
	assert_int_equal(atr_count_calls(f, &n), 0);
	atr_close(f);
	/* inside the header */
	assert_int_equal(atr_open_buffer(buf, 4000, "short.atr", &f, err, sizeof(err)),
			 ATR_E_HEADER);
	assert_null(f);
	assert_non_null(strstr(err, "short.atr"));
	assert_int_equal(atr_open_buffer(buf, 0, "empty.atr", &f, err, sizeof(err)), ATR_E_HEADER);
	free(buf);
}

static int open_with(struct atw *w, void (*poke)(uint8_t *buf, size_t len), char *err, size_t el)
{
	uint8_t *buf;
	size_t len;
	assert_int_equal(atw_build(w, &buf, &len, 1), 0);
	atw_destroy(w);
	poke(buf, len);
	atr_file *f = NULL;
	int r = atr_open_buffer(buf, len, "bad.atr", &f, err, el);
	if (r == 0) {
		assert_non_null(f);
		atr_close(f);
	} else {
		assert_null(f);
	}
	free(buf);
	return r;
}

static struct atw *small_trace(void)
{
	struct atw *w = atw_new(4096);
	uint32_t s = atw_thread(w, 1, 0);
	atw_malloc(w, s, 1, 0x10, 1, 0);
	atw_flush(w, s);
	atw_malloc(w, s, 2, 0x20, 1, 0);
	return w;
}

static void poke_magic(uint8_t *b, size_t n)
{
	(void)n;
	b[0] = 'X';
}
static void poke_version(uint8_t *b, size_t n)
{
	(void)n;
	put32(b + ATR_H_VERSION, 3);
}
static void poke_features(uint8_t *b, size_t n)
{
	(void)n;
	put64(b + ATR_H_FEATURES, ATR_FEAT_CLOCK_MONO_NS | (1ULL << 40));
}
static void poke_bsize(uint8_t *b, size_t n)
{
	(void)n;
	put32(b + ATR_H_BLOCK_SIZE, 6000);
}
static void poke_hsize(uint8_t *b, size_t n)
{
	(void)n;
	put32(b + ATR_H_HEADER_SIZE, 4100);
}
static void poke_hsize_big(uint8_t *b, size_t n)
{
	put32(b + ATR_H_HEADER_SIZE, (uint32_t)n + 8);
}
static void poke_cmdline(uint8_t *b, size_t n)
{
	(void)n;
	put32(b + ATR_H_CMDLINE, 5000);
}
static void poke_block_magic(uint8_t *b, size_t n)
{
	(void)n;
	put32(b + ATR_HEADER_SIZE + 4096 + ATR_B_MAGIC, 0x12345678);
}
static void poke_block_kind(uint8_t *b, size_t n)
{
	(void)n;
	put32(b + ATR_HEADER_SIZE + ATR_B_KIND, 7);
}
static void poke_block_used(uint8_t *b, size_t n)
{
	(void)n;
	put32(b + ATR_HEADER_SIZE + 4096 + ATR_B_USED, 5000);
}

static void test_bad_headers(void **state)
{
	(void)state;
	char err[512];
	assert_int_equal(open_with(small_trace(), poke_magic, err, sizeof(err)), ATR_E_MAGIC);
	assert_non_null(strstr(err, "bad.atr"));
	assert_non_null(strstr(err, "magic"));
	assert_int_equal(open_with(small_trace(), poke_version, err, sizeof(err)), ATR_E_VERSION);
	assert_non_null(strstr(err, "version 3"));
	assert_int_equal(open_with(small_trace(), poke_features, err, sizeof(err)), ATR_E_FEATURES);
	assert_non_null(strstr(err, "feature"));
	assert_int_equal(open_with(small_trace(), poke_bsize, err, sizeof(err)), ATR_E_HEADER);
	assert_int_equal(open_with(small_trace(), poke_hsize, err, sizeof(err)), ATR_E_HEADER);
	assert_int_equal(open_with(small_trace(), poke_hsize_big, err, sizeof(err)), ATR_E_HEADER);
	assert_int_equal(open_with(small_trace(), poke_cmdline, err, sizeof(err)), ATR_E_HEADER);
	assert_int_equal(open_with(small_trace(), poke_block_magic, err, sizeof(err)), ATR_E_BLOCK);
	assert_non_null(strstr(err, "block 1"));
	assert_int_equal(open_with(small_trace(), poke_block_kind, err, sizeof(err)), ATR_E_BLOCK);
	assert_int_equal(open_with(small_trace(), poke_block_used, err, sizeof(err)), ATR_E_BLOCK);
	assert_string_equal(atr_errstr(ATR_E_MAGIC), "not an alloctrace trace");
}

/* Iterate a trace that opens fine but has a bad record. */
static int iter_error(struct atw *w, char *msg, size_t ml)
{
	struct trace t;
	int r = load(&t, w, 0); /* untrimmed: zero bytes stay zero bytes */
	assert_int_equal(r, 0);
	snprintf(msg, ml, "%s", atr_last_error(t.f));
	int rc = t.rc;
	uint64_t n;
	assert_int_equal(atr_count_records(t.f, &n), rc); /* the walk agrees */
	unload(&t);
	return rc;
}

static void test_unknown_call_type(void **state)
{
	(void)state;
	struct atw *w = atw_new(4096);
	uint32_t s = atw_thread(w, 1, 0);
	atw_malloc(w, s, 1, 0x10, 1, 0);
	uint64_t bad[2] = {(2ULL << ATR_TS_SHIFT) | 12, 0};
	atw_raw(w, s, bad, 2);
	char msg[512];
	assert_int_equal(iter_error(w, msg, sizeof(msg)), ATR_E_RECORD);
	assert_non_null(strstr(msg, "unknown record type 12"));
	assert_non_null(strstr(msg, "t.atr"));
	assert_non_null(strstr(msg, "block at offset 0x1000"));
	assert_non_null(strstr(msg, "offset"));
}

static void test_unknown_meta_skipped(void **state)
{
	(void)state;
	struct atw *w = atw_new(4096);
	uint32_t s = atw_thread(w, 1, 0);
	atw_malloc(w, s, 1, 0x10, 1, 0);
	assert_int_equal(atw_meta(w, s, 2, 30, 7, "abcdefghijk", 11), 0);
	atw_malloc(w, s, 3, 0x20, 1, 0);
	struct trace t;
	assert_int_equal(load(&t, w, 1), 0);
	assert_int_equal(t.rc, 0);
	assert_int_equal(t.n, 3);
	assert_int_equal(t.ev[2].ret, 0x20);
	unload(&t);
}

/* RESIDENT (type 27): not an event; its count goes to the free or
 * realloc of its block that follows (a moved realloc's release too), is
 * dropped before another call, and a malformed one is corrupt. */
static void test_resident(void **state)
{
	(void)state;
	struct atw *w = atw_new(4096);
	uint32_t s = atw_thread(w, 1, 0);
	atw_malloc(w, s, 1, 0x10000, 65536, 0);
	atw_malloc(w, s, 2, 0x30000, 65536, 0);
	uint64_t p1[2] = {0x10000, 17};
	atw_meta(w, s, 3, ATR_T_RESIDENT, 5, p1, 16);
	atw_meta(w, s, 3, ATR_T_MARKER, 0, "x", 1); /* meta records may come between */
	atw_free(w, s, 3, 0x10000);
	uint64_t p2[2] = {0x30000, 17};
	atw_meta(w, s, 4, ATR_T_RESIDENT, 17, p2, 16);
	atw_realloc(w, s, 4, 0x30000, 0x50000, 131072, 2);
	uint64_t p3[2] = {0x50000, 33};
	atw_meta(w, s, 8, ATR_T_RESIDENT, 2, p3, 16);
	atw_malloc(w, s, 9, 0x70000, 8, 0); /* not its release: dropped */
	atw_free(w, s, 10, 0x50000);
	struct trace t;
	assert_int_equal(load(&t, w, 1), 0);
	assert_int_equal(t.rc, 0);
	assert_int_equal(t.n, 8); /* start, 2 mallocs, marker, free, realloc, malloc, free */
	assert_int_equal(t.ev[4].type, ATR_T_FREE);
	assert_int_equal(t.ev[4].resident_pages, 5);
	assert_int_equal(t.ev[4].span_pages, 17);
	assert_int_equal(t.ev[5].type, ATR_T_REALLOC);
	assert_int_equal(t.ev[5].resident_pages, 17);
	assert_int_equal(t.nrel, 1);
	assert_int_equal(t.rel[0].ptr, 0x30000);
	assert_int_equal(t.rel[0].resident_pages, 17);
	assert_int_equal(t.rel[0].span_pages, 17);
	assert_int_equal(t.ev[7].type, ATR_T_FREE);
	assert_int_equal(t.ev[7].span_pages, 0);
	unload(&t);

	/* bad: short payload, count above the span, block 0 */
	static const uint64_t bad[3][3] = {{8, 0x10, 4}, {16, 0x10, 4}, {16, 0, 4}};
	for (int k = 0; k < 3; k++) {
		w = atw_new(4096);
		s = atw_thread(w, 1, 0);
		uint64_t pay[2] = {bad[k][1], bad[k][2]};
		atw_meta(w, s, 1, ATR_T_RESIDENT, k == 1 ? 5 : 1, pay, (uint32_t)bad[k][0]);
		atw_free(w, s, 1, 0x10);
		char msg[512];
		assert_int_equal(iter_error(w, msg, sizeof(msg)), ATR_E_RECORD);
		assert_non_null(strstr(msg, "bad RESIDENT record"));
	}
}

/* A meta record of type with a payload of good_len bytes reads as an
 * event with that payload; one of bad_len[0] or bad_len[1] bytes is
 * corrupt: "bad NAME record". */
static void check_meta_payload(uint32_t type, const char *name, const char *upper,
			       uint32_t good_len, const uint32_t bad_len[2])
{
	uint64_t pay[4] = {123456789, 3, 7, 4};
	struct atw *w = atw_new(4096);
	uint32_t s = atw_thread(w, 1, 0);
	atw_meta(w, s, 5, type, 0, pay, good_len);
	atw_malloc(w, s, 5, 0x1000, 16, 0);
	struct trace t;
	assert_int_equal(load(&t, w, 1), 0);
	assert_int_equal(t.rc, 0);
	assert_int_equal(t.n, 3); /* start, the record, malloc */
	assert_int_equal(t.ev[1].type, type);
	assert_int_equal(t.ev[1].payload_len, good_len);
	assert_memory_equal(t.ev[1].payload, pay, good_len);
	assert_string_equal(atr_type_name(type), name);
	assert_int_equal(t.ev[2].type, ATR_T_MALLOC);
	unload(&t);
	for (int k = 0; k < 2; k++) {
		w = atw_new(4096);
		s = atw_thread(w, 1, 0);
		atw_meta(w, s, 1, type, 0, pay, bad_len[k]);
		atw_free(w, s, 1, 0x10);
		char msg[512], want[64];
		assert_int_equal(iter_error(w, msg, sizeof(msg)), ATR_E_RECORD);
		snprintf(want, sizeof(want), "bad %s record", upper);
		assert_non_null(strstr(msg, want));
	}
}

/* CPU (type 28): an event with its 24-byte payload (CPU time, voluntary
 * and involuntary switches); any other payload length is corrupt. */
static void test_cpu_record(void **state)
{
	(void)state;
	check_meta_payload(ATR_T_CPU, "cpu", "CPU", 24, (const uint32_t[2]){8, 32});
}

/* RECORDER (type 29): an event with its 8-byte payload (the recorder's
 * flush, in ticks); any other payload length is corrupt. */
static void test_recorder_record(void **state)
{
	(void)state;
	check_meta_payload(ATR_T_RECORDER, "recorder", "RECORDER", 8, (const uint32_t[2]){0, 16});
}

/* ATR_FEAT_CHUNK_FLAGS: bits 1-2 of ret are glibc's chunk flags; the
 * reader masks them off ret and reports them; without the feature ret is
 * taken as it is. */
static void test_chunk_flags(void **state)
{
	(void)state;
	for (int feat = 0; feat < 2; feat++) {
		struct atw *w = atw_new(4096);
		if (feat)
			atw_hdr_u64(w, ATR_H_FEATURES,
				    ATR_FEAT_CLOCK_MONO_NS | ATR_FEAT_CHUNK_FLAGS);
		uint32_t s = atw_thread(w, 1, 0);
		atw_malloc(w, s, 1, 0x1000 | ATR_CHUNK_MMAPPED, 1, 0);
		atw_malloc(w, s, 2, 0x2000 | ATR_CHUNK_NON_MAIN, 1, 0);
		struct trace t;
		assert_int_equal(load(&t, w, 1), 0);
		assert_int_equal(t.rc, 0);
		assert_int_equal(t.n, 3);
		if (feat) {
			assert_int_equal(t.ev[1].ret, 0x1000);
			assert_int_equal(t.ev[1].chunk_flags, ATR_CHUNK_MMAPPED);
			assert_int_equal(t.ev[2].ret, 0x2000);
			assert_int_equal(t.ev[2].chunk_flags, ATR_CHUNK_NON_MAIN);
		} else {
			assert_int_equal(t.ev[1].ret, 0x1002);
			assert_int_equal(t.ev[1].chunk_flags, 0);
		}
		unload(&t);
	}
}

static void test_overrun_record(void **state)
{
	(void)state;
	struct atw *w = atw_new(4096);
	uint32_t s = atw_thread(w, 1, 0);
	atw_malloc(w, s, 1, 0x10, 1, 0);
	uint64_t bad[2] = {(2ULL << ATR_TS_SHIFT) | ATR_T_MARKER, 100000};
	atw_raw(w, s, bad, 2);
	char msg[512];
	assert_int_equal(iter_error(w, msg, sizeof(msg)), ATR_E_RECORD);
	assert_non_null(strstr(msg, "overruns"));

	/* in a data block: a call record crossing `used` */
	w = atw_new(4096);
	s = atw_thread(w, 1, 0);
	atw_malloc(w, s, 1, 0x10, 1, 0);
	atw_flush(w, s);
	uint8_t *d = atw_block(w, 1);
	uint32_t used;
	memcpy(&used, d + ATR_B_USED, 4);
	put32(d + ATR_B_USED, used - 8);
	assert_int_equal(iter_error(w, msg, sizeof(msg)), ATR_E_RECORD);
	assert_non_null(strstr(msg, "block at offset 0x2000")); /* block 1 */

	/* a zero word inside a data block */
	w = atw_new(4096);
	s = atw_thread(w, 1, 0);
	atw_malloc(w, s, 1, 0x10, 1, 0);
	atw_flush(w, s);
	d = atw_block(w, 1);
	memcpy(&used, d + ATR_B_USED, 4);
	put32(d + ATR_B_USED, used + 16);
	assert_int_equal(iter_error(w, msg, sizeof(msg)), ATR_E_RECORD);
}

static void test_clock_inversion(void **state)
{
	(void)state;
	struct atw *w = atw_new(4096);
	uint32_t a = atw_thread(w, 1, 0);
	uint32_t b = atw_thread(w, 2, 0);
	atw_malloc(w, a, 100, 0x10, 1, 0);
	atw_malloc(w, a, 50, 0x20, 1, 0); /* backwards: clamped to 100 */
	atw_malloc(w, b, 60, 0x30, 1, 0);
	atw_malloc(w, b, 100, 0x40, 1, 0);
	struct trace t;
	assert_int_equal(load(&t, w, 1), 0);
	assert_int_equal(t.n, 6);
	assert_int_equal(t.ev[2].ret, 0x30);
	assert_int_equal(t.ev[3].ret, 0x10);
	assert_int_equal(t.ev[4].ret, 0x20); /* keeps its thread's order */
	assert_int_equal(t.ev[4].ts, 100);
	assert_int_equal(t.ev[5].ret, 0x40);
	assert_int_equal(atr_get_info(t.f)->clock_inversions, 1);
	unload(&t);
}

static void test_lost_records(void **state)
{
	(void)state;
	struct atw *w = atw_new(4096);
	atw_hdr_u64(w, ATR_H_LOST, 5);
	uint32_t s = atw_thread(w, 1, 0);
	uint64_t n = 7;
	atw_meta(w, s, 1, ATR_T_LOST, 0, &n, 8);
	struct trace t;
	assert_int_equal(load(&t, w, 1), 0);
	assert_int_equal(t.n, 2);
	assert_int_equal(t.ev[1].type, ATR_T_LOST);
	const struct atr_info *in = atr_get_info(t.f);
	assert_int_equal(in->lost_records, 12);
	assert_int_equal(in->header_lost, 5);
	/* counting again does not count twice */
	uint64_t c;
	assert_int_equal(atr_count_records(t.f, &c), 0);
	assert_int_equal(in->lost_records, 12);
	unload(&t);
}

static double tps_of(struct atw *w)
{
	struct trace t;
	assert_int_equal(load(&t, w, 1), 0);
	double v = atr_get_info(t.f)->ticks_per_sec;
	if (atr_get_info(t.f)->ticks_guessed)
		v = -v;
	unload(&t);
	return v;
}

static void test_ticks_per_sec(void **state)
{
	(void)state;
	struct atw *w = atw_new(4096);
	assert_true(tps_of(w) == 1e9); /* MONO_NS */

	w = atw_new(4096);
	atw_hdr_u64(w, ATR_H_FEATURES, ATR_FEAT_CLOCK_TSC);
	atw_hdr_u64(w, ATR_H_TICKS_PER_SEC, 3000000000ULL);
	assert_true(tps_of(w) == 3e9); /* hint */

	w = atw_new(4096);
	atw_hdr_u64(w, ATR_H_FEATURES, ATR_FEAT_CLOCK_TSC);
	atw_hdr_u64(w, ATR_H_TICKS_PER_SEC, 3000000000ULL);
	atw_hdr_u64(w, ATR_H_START_TICKS, 1000);
	atw_hdr_u64(w, ATR_H_END_TICKS, 1000 + 250000000ULL);
	atw_hdr_u64(w, ATR_H_END_MONO, 1000000000ULL + 100000000ULL); /* 100 ms */
	double v = tps_of(w);
	assert_true(v > 2.4999e9 && v < 2.5001e9); /* measured */

	w = atw_new(4096);
	atw_hdr_u64(w, ATR_H_FEATURES, ATR_FEAT_CLOCK_TSC);
	atw_hdr_u64(w, ATR_H_TICKS_PER_SEC, 3000000000ULL);
	atw_hdr_u64(w, ATR_H_END_TICKS, 1000);
	atw_hdr_u64(w, ATR_H_END_MONO, 1000000000ULL + 1000000ULL); /* 1 ms: too short */
	assert_true(tps_of(w) == 3e9);

	w = atw_new(4096);
	atw_hdr_u64(w, ATR_H_FEATURES, ATR_FEAT_CLOCK_TSC);
	assert_true(tps_of(w) == -1e9); /* guessed */
}

static void test_exe_cmdline(void **state)
{
	(void)state;
	struct atw *w = atw_new(4096);
	uint8_t *h = atw_header(w);
	memset(h + ATR_H_EXE, 'x', 256); /* no NUL */
	static const char *const argv[] = {"prog", "-a", "b c"};
	atw_set_cmdline(w, 3, argv);
	struct trace t;
	assert_int_equal(load(&t, w, 1), 0);
	const struct atr_info *in = atr_get_info(t.f);
	assert_int_equal(strlen(in->exe), 255);
	assert_string_equal(in->cmdline, "prog -a b c");
	assert_int_equal(in->threads, 0);
	assert_int_equal(t.n, 0);
	assert_int_equal(t.rc, 0);
	unload(&t);
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(atr_type_name(ATR_T_MALLOC), "malloc");
	assert_string_equal(atr_type_name(ATR_T_POSIX_MEMALIGN), "posix_memalign");
	assert_string_equal(atr_type_name(ATR_T_MARKER), "marker");
	assert_string_equal(atr_type_name(12), "unknown");
	assert_string_equal(atr_type_name(999), "unknown");
	for (unsigned t = 1; t <= ATR_T_CALL_LAST; t++)
		assert_int_equal(atr_type_from_name(atr_type_name(t)), t);
	assert_int_equal(atr_type_from_name("marker"), 0);
	assert_int_equal(atr_type_from_name("nope"), 0);
}

static void test_files_and_list(void **state)
{
	(void)state;
	char dir[] = "/tmp/atr_test_XXXXXX";
	assert_non_null(mkdtemp(dir));
	char **paths;
	size_t n;
	char err[512];
	assert_int_equal(atr_list(dir, &paths, &n, err, sizeof(err)), ATR_E_NOTRACE);
	char p[600];
	/* written in the "wrong" order: list sorts by start time, then pid */
	static const uint32_t pids[3] = {300, 100, 200};
	static const uint64_t starts[3] = {5, 9, 5};
	for (int i = 0; i < 3; i++) {
		struct atw *w = atw_new(4096);
		atw_hdr_u32(w, ATR_H_PID, pids[i]);
		atw_hdr_u64(w, ATR_H_START_REALTIME, starts[i]);
		uint32_t s = atw_thread(w, pids[i], 0);
		atw_malloc(w, s, 1, 0x10, 1, 0);
		snprintf(p, sizeof(p), "%s/%u.atr", dir, pids[i]);
		assert_int_equal(atw_write_file(w, p, 1), 0);
		atw_destroy(w);
	}
	snprintf(p, sizeof(p), "%s/notes.txt", dir);
	FILE *fp = fopen(p, "w");
	assert_non_null(fp);
	fclose(fp);
	assert_int_equal(atr_list(dir, &paths, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 3);
	assert_non_null(strstr(paths[0], "/200.atr"));
	assert_non_null(strstr(paths[1], "/300.atr"));
	assert_non_null(strstr(paths[2], "/100.atr"));
	atr_file *f;
	assert_int_equal(atr_open(paths[0], &f, err, sizeof(err)), 0);
	assert_int_equal(atr_get_info(f)->pid, 200);
	uint64_t c;
	assert_int_equal(atr_count_calls(f, &c), 0);
	assert_int_equal(c, 1);
	atr_close(f);
	for (size_t i = 0; i < n; i++)
		unlink(paths[i]);
	atr_list_free(paths, n);
	/* a file lists itself; a missing path is an I/O error */
	assert_int_equal(atr_list(p, &paths, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 1);
	atr_list_free(paths, n);
	assert_int_equal(atr_open(p, &f, err, sizeof(err)), ATR_E_HEADER); /* empty file */
	unlink(p);
	assert_int_equal(atr_list(p, &paths, &n, err, sizeof(err)), ATR_E_IO);
	assert_int_equal(atr_open(p, &f, err, sizeof(err)), ATR_E_IO);
	assert_non_null(strstr(err, "No such file"));
	assert_int_equal(atr_open(dir, &f, err, sizeof(err)), ATR_E_IO);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_decode_every_type),
	    cmocka_unit_test(test_wide_failed_malloc),
	    cmocka_unit_test(test_merge_three_threads),
	    cmocka_unit_test(test_many_blocks_in_order),
	    cmocka_unit_test(test_staging_duplicate_ignored),
	    cmocka_unit_test(test_gap_counted_as_lost),
	    cmocka_unit_test(test_retired_staging),
	    cmocka_unit_test(test_older_staging_loses),
	    cmocka_unit_test(test_inflight_staging),
	    cmocka_unit_test(test_truncated_file),
	    cmocka_unit_test(test_bad_headers),
	    cmocka_unit_test(test_unknown_call_type),
	    cmocka_unit_test(test_unknown_meta_skipped),
	    cmocka_unit_test(test_resident),
	    cmocka_unit_test(test_recorder_record),
	    cmocka_unit_test(test_cpu_record),
	    cmocka_unit_test(test_chunk_flags),
	    cmocka_unit_test(test_overrun_record),
	    cmocka_unit_test(test_clock_inversion),
	    cmocka_unit_test(test_lost_records),
	    cmocka_unit_test(test_ticks_per_sec),
	    cmocka_unit_test(test_exe_cmdline),
	    cmocka_unit_test(test_names),
	    cmocka_unit_test(test_files_and_list),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
