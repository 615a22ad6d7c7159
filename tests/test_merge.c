/* test_merge.c - the reader's merge iterator (its fast path that keeps one
 * thread at the root while its events stay below the other threads') against
 * a brute-force merge, and atr_iter_next_ref against atr_iter_next. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "atr_reader.h"
#include "atr_testwriter.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

struct rec {
	uint64_t ts, ret;
	uint32_t serial, idx; /* idx: order within the thread */
};

static int rec_cmp(const void *pa, const void *pb)
{
	const struct rec *a = pa, *b = pb;
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	if (a->serial != b->serial)
		return a->serial < b->serial ? -1 : 1;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* nthr threads; runs of 1..maxrun records per thread with timestamps that
 * often tie across threads. */
static void one_case(unsigned nthr, unsigned per_thread, unsigned maxrun)
{
	struct atw *w = atw_new(4096);
	size_t n = (size_t)nthr * per_thread;
	struct rec *want = calloc(n, sizeof(*want));
	assert_non_null(want);
	uint64_t ts[16] = {0};
	unsigned left[16], idx[16] = {0};
	for (unsigned t = 0; t < nthr; t++) {
		assert_int_equal(atw_thread(w, 100 + t, 0), t + 1);
		left[t] = per_thread;
	}
	size_t k = 0;
	uint64_t clock = 1;
	while (k < n) {
		unsigned t = (unsigned)(rng() % nthr);
		unsigned run = 1 + (unsigned)(rng() % maxrun);
		for (unsigned i = 0; i < run && left[t]; i++, left[t]--) {
			clock += rng() % 3; /* 0: a tie with the previous record */
			if (clock < ts[t])
				clock = ts[t];
			ts[t] = clock;
			uint64_t ret = ((uint64_t)(t + 1) << 32) | idx[t];
			assert_int_equal(atw_malloc(w, t + 1, clock, ret, 16, 0), 0);
			if (rng() % 7 == 0)
				atw_flush(w, t + 1); /* streams over several blocks */
			want[k++] = (struct rec){clock, ret, t + 1, idx[t]++};
		}
	}
	qsort(want, n, sizeof(*want), rec_cmp);
	uint8_t *buf;
	size_t len;
	assert_int_equal(atw_build(w, &buf, &len, 1), 0);
	atw_destroy(w);
	char eb[256];
	atr_file *f;
	assert_int_equal(atr_open_buffer(buf, len, "m.atr", &f, eb, sizeof(eb)), 0);
	atr_iter *a, *b;
	assert_int_equal(atr_iter_new(f, &a), 0);
	assert_int_equal(atr_iter_new(f, &b), 0);
	struct atr_event ev, prev_copy;
	const struct atr_event *p, *prev = NULL;
	size_t got = 0;
	int ra, rb;
	for (;;) {
		ra = atr_iter_next(a, &ev);
		rb = atr_iter_next_ref(b, &p);
		assert_int_equal(ra, rb);
		if (ra <= 0)
			break;
		assert_memory_equal(&ev, p, sizeof(ev));
		prev = p;
		prev_copy = *p;
		if (ev.type != ATR_T_MALLOC)
			continue;
		assert_true(got < n);
		assert_int_equal(ev.ret, want[got].ret);
		assert_int_equal(ev.ts, want[got].ts);
		assert_int_equal(ev.thread, want[got].serial);
		got++;
	}
	assert_int_equal(ra, 0);
	assert_int_equal(got, n);
	/* the call that found the end left the last reference alone */
	assert_memory_equal(prev, &prev_copy, sizeof(prev_copy));
	assert_int_equal(atr_iter_next_ref(b, &p), 0);
	atr_iter_free(a);
	atr_iter_free(b);
	atr_close(f);
	free(buf);
	free(want);
}

static void test_merge_random(void **state)
{
	(void)state;
	static const unsigned cfg[][3] = {
	    {1, 300, 4}, {2, 400, 1}, {2, 400, 8}, {3, 300, 5},
	    {5, 200, 3}, {9, 100, 2}, {16, 60, 6},
	};
	for (size_t i = 0; i < sizeof(cfg) / sizeof(cfg[0]); i++)
		for (int rep = 0; rep < 5; rep++)
			one_case(cfg[i][0], cfg[i][1], cfg[i][2]);
}

static void test_ref_usage(void **state)
{
	(void)state;
	assert_int_equal(atr_iter_next_ref(NULL, NULL), ATR_E_USAGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_merge_random),
	    cmocka_unit_test(test_ref_usage),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
