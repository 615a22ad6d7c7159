/* test_summary.c - an_summary: live set, peak, unknown frees. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/an_summary.h"
#include "atr_testwriter.h"

static void summarise(struct atw *w, struct an_summary *s)
{
	uint8_t *buf;
	size_t len;
	assert_int_equal(atw_build(w, &buf, &len, 1), 0);
	atw_destroy(w);
	atr_file *f;
	char err[256];
	assert_int_equal(atr_open_buffer(buf, len, "s.atr", &f, err, sizeof(err)), 0);
	assert_int_equal(an_summary_compute(f, s), 0);
	atr_close(f);
	free(buf);
}

static void test_live_set(void **state)
{
	(void)state;
	struct atw *w = atw_new(4096);
	uint32_t a = atw_thread(w, 10, 0);
	atw_malloc(w, a, 1, 0x100, 100, 0);	   /* live 100 */
	atw_malloc(w, a, 2, 0x200, 50, 0);	   /* live 150 */
	atw_free(w, a, 3, 0x100);		   /* live 50 */
	atw_free(w, a, 4, 0);			   /* free(NULL) */
	atw_free(w, a, 5, 0x999);		   /* unknown */
	atw_realloc(w, a, 6, 0, 0x300, 30, 1);	   /* = malloc: live 80 */
	atw_realloc(w, a, 8, 0x300, 0x300, 60, 1); /* in place: live 110 */
	atw_realloc(w, a, 10, 0x300, 0, 1000, 1);  /* fails: 0x300 stays */
	atw_realloc(w, a, 12, 0x200, 0, 0, 1);	   /* realloc(p, 0): frees: live 60 */
	atw_realloc(w, a, 14, 0x777, 0x400, 5, 1); /* unknown old, ret live: 65 */
	atw_malloc(w, a, 16, 0, 1ULL << 40, 0);	   /* failed */
	uint64_t pm[3] = {0, atw_size(8, 12), 64};
	atw_call(w, a, 17, ATR_T_POSIX_MEMALIGN, 0, pm, NULL); /* failed */
	atw_marker(w, a, 18, "m");
	struct an_summary s;
	summarise(w, &s);
	assert_int_equal(s.calls[ATR_T_MALLOC], 3);
	assert_int_equal(s.calls[ATR_T_FREE], 3);
	assert_int_equal(s.calls[ATR_T_REALLOC], 5);
	assert_int_equal(s.calls[ATR_T_POSIX_MEMALIGN], 1);
	assert_int_equal(s.total_calls, 12);
	assert_int_equal(s.free_null, 1);
	assert_int_equal(s.unknown_frees, 2);
	assert_int_equal(s.failed, 3);
	assert_int_equal(s.peak_live_bytes, 150);
	assert_int_equal(s.peak_ts, 2);
	assert_int_equal(s.live_bytes, 65);
	assert_int_equal(s.live_blocks, 2);
	assert_int_equal(s.markers, 1);
	assert_true(s.bytes_requested == 100 + 50 + 30 + 60 + 1000 + 0 + 5 + (1ULL << 40) + 8);
	assert_int_equal(s.nthreads, 1);
	assert_int_equal(s.threads[0].tid, 10);
	assert_int_equal(s.threads[0].calls, 12);
	assert_int_equal(s.first_ts, 0);
	assert_int_equal(s.last_ts, 18);
	an_summary_free(&s);
}

/* realloc's new block exists only at start + duration: a free of the same
 * address by another thread in between is the old owner's release. */
static void test_realloc_reuse_across_threads(void **state)
{
	(void)state;
	struct atw *w = atw_new(4096);
	uint32_t a = atw_thread(w, 1, 0);
	uint32_t b = atw_thread(w, 2, 0);
	atw_malloc(w, b, 1, 0x500, 10, 0);
	atw_malloc(w, a, 2, 0x600, 10, 0);
	atw_realloc(w, a, 10, 0x600, 0x500, 20, 10); /* start 10, returns at 20 */
	atw_free(w, b, 15, 0x500);		     /* b frees 0x500 at 15 */
	atw_free(w, a, 30, 0x500);		     /* a frees its realloc'd block */
	struct an_summary s;
	summarise(w, &s);
	assert_int_equal(s.unknown_frees, 0);
	assert_int_equal(s.live_blocks, 0);
	assert_int_equal(s.live_bytes, 0);
	assert_int_equal(s.nthreads, 2);
	assert_int_equal(s.threads[1].calls, 2);
	assert_int_equal(s.threads[1].bytes, 10);
	an_summary_free(&s);
}

static void test_fork_child_inherited(void **state)
{
	(void)state;
	struct atw *w = atw_new(4096);
	atw_hdr_u32(w, ATR_H_STATUS, ATR_STATUS_CLEAN_EXIT | ATR_STATUS_FORK_CHILD);
	uint32_t a = atw_thread(w, 1, 0);
	atw_free(w, a, 1, 0x100);		  /* from the parent's heap */
	atw_realloc(w, a, 2, 0x200, 0x300, 8, 1); /* same */
	atw_malloc(w, a, 4, 0x400, 8, 0);
	atw_free(w, a, 5, 0x400);
	struct an_summary s;
	summarise(w, &s);
	assert_int_equal(s.unknown_frees, 0);
	assert_int_equal(s.inherited_frees, 2);
	assert_int_equal(s.live_blocks, 1);
	an_summary_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_live_set),
	    cmocka_unit_test(test_realloc_reuse_across_threads),
	    cmocka_unit_test(test_fork_child_inherited),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
