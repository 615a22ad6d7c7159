/* test_verdict.c - compare's verdict line (golden strings): change and
 * range from paired runs, rounding, the one-run form; the ideal-RSS
 * clause. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "output/out_compare.h"
#include "replay/rp_verdict.h"

static void line_of(const char *name, const double *wall, const double *bw, const double *rss,
		    const double *br, int runs, char *out, size_t len)
{
	struct rp_verdict v;
	rp_verdict_compute(wall, bw, rss, br, runs, 8.0, 0, &v);
	rp_verdict_line(out, len, name, &v);
}

static void test_golden(void **state)
{
	(void)state;
	char b[256];
	/* per-run time ratios 0.90, 0.93, 0.89, 0.91, 0.92: median -9%,
	   spread 0.04 -> +-2%; RSS 114/100 every run */
	const double bw[] = {100, 100, 100, 100, 100}, w[] = {90, 93, 89, 91, 92};
	const double br[] = {10, 10, 10, 10, 10}, r[] = {11.4, 11.4, 11.4, 11.4, 11.4};
	line_of("tcmalloc", w, bw, r, br, 5, b, sizeof(b));
	assert_string_equal(b, "tcmalloc: -9% time (+-2%), +14% Max RSS");
	/* slower and smaller; paired: run 2 was slow for both columns */
	const double bw2[] = {200, 400, 210}, w2[] = {250, 500, 252};
	const double br2[] = {64, 64, 64}, r2[] = {38.4, 38.0, 38.8};
	line_of("glibc+glibc.malloc.arena_max=1", w2, bw2, r2, br2, 3, b, sizeof(b));
	assert_string_equal(b, "glibc+glibc.malloc.arena_max=1: +25% time (+-3%), -40% Max RSS");
	/* no change rounds to +0%, never -0% */
	const double w3[] = {99.8, 100.2}, bw3[] = {100, 100}, r3[] = {10, 10};
	line_of("same", w3, bw3, r3, r3, 2, b, sizeof(b));
	assert_string_equal(b, "same: +0% time (+-0%), +0% Max RSS");
	/* one run: no range */
	const double w4[] = {120}, bw4[] = {100}, r4[] = {9}, br4[] = {10};
	line_of("mimalloc", w4, bw4, r4, br4, 1, b, sizeof(b));
	assert_string_equal(b, "mimalloc: +20% time (1 run: no range), -10% Max RSS");
	struct rp_verdict v;
	rp_verdict_compute(w, bw, r, br, 5, 8.0, 0, &v);
	assert_true(v.time_ms == 91 && v.rss_mib > 11.39 && v.rss_mib < 11.41 &&
		    v.ideal_mib == 8.0 && !v.rss_anchored);
}

/* With the traced program's Max RSS (40 MiB): the prediction is it plus
 * the replay's per-run differences (median 1.4 MiB), the change that
 * over 40: +4%, where the replay's own ratio is +14%. */
static void test_anchored(void **state)
{
	(void)state;
	char b[256];
	const double bw[] = {100, 100, 100, 100, 100}, w[] = {90, 93, 89, 91, 92};
	const double br[] = {10, 10.2, 9.8, 10, 10}, r[] = {11.4, 11.5, 11.3, 11.4, 11.6};
	struct rp_verdict v;
	rp_verdict_compute(w, bw, r, br, 5, 8.0, 40.0, &v);
	assert_true(v.rss_anchored);
	assert_true(v.rss_mib > 41.39 && v.rss_mib < 41.41);
	assert_true(v.replay_rss_mib > 11.39 && v.replay_rss_mib < 11.41);
	rp_verdict_line(b, sizeof(b), "tcmalloc", &v);
	assert_string_equal(b, "tcmalloc: -9% time (+-2%), +4% Max RSS");
	/* the first column against itself: no change, the traced RSS */
	rp_verdict_compute(bw, bw, br, br, 5, 8.0, 40.0, &v);
	assert_true(v.rss_mib == 40.0 && v.rss_change == 0);
	rp_verdict_line(b, sizeof(b), "glibc", &v);
	assert_string_equal(b, "glibc: +0% time (+-0%), +0% Max RSS");
}

/* The ideal RSS is a floor only for blocks that are written: below the
 * first column's Max RSS the clause says why. */
static void test_ideal(void **state)
{
	(void)state;
	char b[160];
	double rss[3] = {7.4, 7.6, 7.8};
	struct out_compare_col c;
	memset(&c, 0, sizeof(c));
	c.v[CMP_M_RSS] = rss;
	c.ideal_mib = 8.2;
	assert_string_equal(out_compare_ideal_text(&c, 3, b, sizeof(b)),
			    "ideal RSS (live bytes at their peak) 8.2 MiB, above it: pages of live "
			    "blocks never written are not resident");
	c.ideal_mib = 7.6;
	assert_string_equal(out_compare_ideal_text(&c, 3, b, sizeof(b)),
			    "the floor (ideal RSS) is 7.6 MiB");
}

/* The caution under the verdict: the first column's replay (median wall
 * time) against the traced run, only when think time was spent. */
static void test_caution(void **state)
{
	(void)state;
	char b[400];
	double wall[3] = {2900, 3100, 3000};
	struct out_compare_col c;
	memset(&c, 0, sizeof(c));
	c.spec = (char *)"glibc";
	c.v[CMP_M_WALL] = wall;
	c.trace_ms = 1250;
	c.wait_ms = 3 * 1900;
	c.think_ms = 3 * 1975;
	assert_string_equal(
	    out_compare_caution_text(&c, 3, b, sizeof(b)),
	    "caution: under glibc the replay took 2.4x the traced run (1250 ms) and "
	    "its threads spent 1900 ms waiting for one another's ops: the time "
	    "changes above may not hold for this program");
	c.trace_ms = 2500; /* 1.2x: no caution */
	assert_null(out_compare_caution_text(&c, 3, b, sizeof(b)));
	double shortw[3] = {20, 24, 22};
	c.v[CMP_M_WALL] = shortw;
	c.trace_ms = 5; /* 4.4x, but 17 ms: thread starts, not waits */
	assert_null(out_compare_caution_text(&c, 3, b, sizeof(b)));
	c.v[CMP_M_WALL] = wall;
	c.trace_ms = 1250;
	c.think_ms = 0; /* --think off: the wall time predicts nothing */
	assert_null(out_compare_caution_text(&c, 3, b, sizeof(b)));
	c.think_ms = 1;
	c.trace_ms = 0; /* a workload without the traced run's length */
	assert_null(out_compare_caution_text(&c, 3, b, sizeof(b)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_golden),
	    cmocka_unit_test(test_anchored),
	    cmocka_unit_test(test_ideal),
	    cmocka_unit_test(test_caution),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
