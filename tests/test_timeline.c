/* test_timeline.c - an_timeline: bounded buckets that keep the extremes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/an_timeline.h"

static struct atr_event call(uint64_t ts, uint32_t thread)
{
	struct atr_event e;
	memset(&e, 0, sizeof(e));
	e.type = ATR_T_MALLOC;
	e.ts = ts;
	e.thread = thread;
	return e;
}

/* A million events with a sawtooth live value and one spike: whatever the
 * merging, the bucket count stays bounded, the spike survives in some
 * bucket's max, the dips in some min, the calls add up, and the last
 * bucket ends with the final value. */
static void test_bounded_extremes(void **state)
{
	(void)state;
	struct an_timeline t;
	assert_int_equal(an_timeline_init(&t, 100, 3), 0);
	uint64_t n = 1000000, live = 0, calls[4] = {0};
	for (uint64_t i = 0; i < n; i++) {
		live = 1000 + (i % 977) * 10;
		if (i == 777777)
			live = 5000000; /* the spike */
		if (i == 333333)
			live = 7; /* the dip */
		uint32_t th = 1 + (uint32_t)(i % 3);
		struct atr_event e = call(i * 13, th);
		an_timeline_event(&t, &e, live);
		calls[th]++;
	}
	assert_true(t.n <= 100);
	assert_true(t.n >= 50); /* the width doubles: at least half are used */
	uint64_t mx = 0, mn = UINT64_MAX, sum = 0, th1 = 0;
	for (uint32_t k = 0; k < t.n; k++) {
		if (t.b[k].max > mx)
			mx = t.b[k].max;
		if (t.b[k].min < mn)
			mn = t.b[k].min;
		assert_true(t.b[k].min <= t.b[k].last && t.b[k].last <= t.b[k].max);
		sum += t.b[k].calls;
		th1 += an_timeline_tcalls(&t, 0, k);
	}
	assert_int_equal(mx, 5000000);
	assert_int_equal(mn, 0); /* the heap before the first event */
	assert_int_equal(t.b[333333u * 13u / t.width].min, 7);
	assert_int_equal(sum, n);
	assert_int_equal(th1, calls[1]);
	assert_int_equal(t.b[t.n - 1].last, live);
	/* the spike is in the bucket that covers its time */
	uint32_t k = (uint32_t)(777777u * 13u / t.width);
	assert_int_equal(t.b[k].max, 5000000);
	an_timeline_free(&t);
}

/* Empty buckets carry the previous value; markers are kept. */
static void test_gaps_and_marks(void **state)
{
	(void)state;
	struct an_timeline t;
	assert_int_equal(an_timeline_init(&t, 8, 1), 0);
	struct atr_event e = call(0, 1);
	an_timeline_event(&t, &e, 100);
	struct atr_event m;
	memset(&m, 0, sizeof(m));
	m.type = ATR_T_MARKER;
	m.ts = 3;
	m.thread = 1;
	m.payload = (const uint8_t *)"phase";
	m.payload_len = 5;
	an_timeline_event(&t, &m, 100);
	e = call(7, 1);
	an_timeline_event(&t, &e, 50);
	assert_int_equal(t.width, 1);
	assert_int_equal(t.n, 8);
	for (uint32_t k = 1; k < 7; k++) {
		assert_int_equal(t.b[k].min, 100);
		assert_int_equal(t.b[k].max, 100);
		assert_int_equal(t.b[k].calls, 0);
	}
	assert_int_equal(t.b[7].min, 50);
	assert_int_equal(t.b[7].max, 100); /* the value entering the bucket */
	assert_int_equal(t.nmarks, 1);
	assert_string_equal(t.marks[0].label, "phase");
	/* past the end: the width doubles, neighbours merge */
	e = call(8, 1);
	an_timeline_event(&t, &e, 10);
	assert_int_equal(t.width, 2);
	assert_int_equal(t.n, 5);
	assert_int_equal(t.b[3].min, 50);
	assert_int_equal(t.b[3].last, 50);
	assert_int_equal(t.b[4].last, 10);
	assert_int_equal(t.b[0].calls, 1);
	an_timeline_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bounded_extremes),
	    cmocka_unit_test(test_gaps_and_marks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
