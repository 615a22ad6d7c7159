/* test_dj_print.c - golden test of trace_run's stdout (dj/malloc's 13
 * lines, docs/DJ_COMPAT.md) and of dj's number format. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "replay/rp_dj.h"

static char *print(const struct rp_result *r)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	rp_dj_print(f, r);
	fclose(f);
	return buf;
}

static void stat_set(struct rp_result *r, unsigned type, uint64_t count, uint64_t sum)
{
	r->st[type].count = count;
	r->st[type].sum = sum;
}

static void test_layout(void **state)
{
	(void)state;
	struct rp_result *r = calloc(1, sizeof(*r));
	assert_non_null(r);
	r->cycles = 582870939;
	r->wall_ns = 278087999;
	r->thread_cpu_ns_sum = 104839999;
	r->threads = 4;
	r->rss_before_kb = 2448;
	r->rss_after_kb = 15760;
	r->ideal_peak = 9315 * 1024 - 1; /* rounds down, as dj's does */
	stat_set(r, AWL_OP_MALLOC, 803, 803 * 100);
	stat_set(r, AWL_OP_MEMALIGN, 799, 799 * 200); /* counted as malloc */
	stat_set(r, AWL_OP_POSIX_MEMALIGN, 1, 301);
	stat_set(r, AWL_OP_CALLOC, 363, 15102252);
	stat_set(r, AWL_OP_REALLOC, 362, 362 * 5000);
	stat_set(r, AWL_OP_REALLOCARRAY, 1, 5362); /* counted as realloc */
	stat_set(r, AWL_OP_FREE, 1672, 1672 * 51);
	char *out = print(r);
	const char *want = "582,870,939 cycles\n"
			   "278,087 usec wall time\n"
			   "104,839 usec across 4 threads\n"
			   "13,312 Kb Max RSS (2,448 -> 15,760)\n"
			   "9,314 Kb Max Ideal RSS\n"
			   "\n"
			   "sizeof ticks_t is 8\n"
			   "Avg malloc time:    149 in      1,603 calls\n"
			   "Avg calloc time: 41,604 in        363 calls\n"
			   "Avg realloc time: 5,000 in        363 calls\n"
			   "Avg free time:       51 in      1,672 calls\n"
			   "Total call time: 17,243,287 cycles\n"
			   "\n";
	assert_string_equal(out, want);
	free(out);
	free(r);
}

/* No calls of a kind: dj prints its count as 1; one thread: "thread". */
static void test_empty(void **state)
{
	(void)state;
	struct rp_result *r = calloc(1, sizeof(*r));
	assert_non_null(r);
	r->threads = 1;
	r->rss_before_kb = r->rss_after_kb = 1000;
	char *out = print(r);
	const char *want = "0 cycles\n"
			   "0 usec wall time\n"
			   "0 usec across 1 thread\n"
			   "0 Kb Max RSS (1,000 -> 1,000)\n"
			   "0 Kb Max Ideal RSS\n"
			   "\n"
			   "sizeof ticks_t is 8\n"
			   "Avg malloc time:      0 in          1 calls\n"
			   "Avg calloc time:      0 in          1 calls\n"
			   "Avg realloc time:     0 in          1 calls\n"
			   "Avg free time:        0 in          1 calls\n"
			   "Total call time: 0 cycles\n"
			   "\n";
	assert_string_equal(out, want);
	free(out);
	free(r);
}

static void test_comma(void **state)
{
	(void)state;
	char b[40];
	assert_string_equal(rp_dj_comma(b, sizeof(b), 0), "0");
	assert_string_equal(rp_dj_comma(b, sizeof(b), 999), "999");
	assert_string_equal(rp_dj_comma(b, sizeof(b), 1000), "1,000");
	assert_string_equal(rp_dj_comma(b, sizeof(b), 123456789), "123,456,789");
	assert_string_equal(rp_dj_comma(b, sizeof(b), 9223372036854775807LL),
			    "9,223,372,036,854,775,807");
	/* dj counts the sign as a digit */
	assert_string_equal(rp_dj_comma(b, sizeof(b), -12), "-12");
	assert_string_equal(rp_dj_comma(b, sizeof(b), -123), "-,123");
	assert_string_equal(rp_dj_comma(b, sizeof(b), -1234), "-1,234");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_layout),
	    cmocka_unit_test(test_empty),
	    cmocka_unit_test(test_comma),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
