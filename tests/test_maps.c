/* test_maps.c - an_maps: the program's own mappings, cut and moved as the
 * kernel does (partial munmap, MAP_FIXED over a range, mremap), the break,
 * the peak and the per-stack figures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/an_maps.h"

#define PG  4096u
#define A0  0x7f0000000000ULL
#define BAD UINT64_MAX

static uint64_t now;

static struct atr_event ev(unsigned type)
{
	struct atr_event e;
	memset(&e, 0, sizeof e);
	e.type = (uint8_t)type;
	e.ts = ++now;
	return e;
}

static void mmap_(struct an_maps *m, uint64_t ret, uint64_t len, uint32_t stack)
{
	struct atr_event e = ev(ATR_T_MMAP);
	e.ret = ret;
	e.size = len;
	e.stack_id = stack;
	assert_int_equal(an_maps_event(m, &e), 0);
}

static void munmap_(struct an_maps *m, uint64_t addr, uint64_t len)
{
	struct atr_event e = ev(ATR_T_MUNMAP);
	e.ptr = addr;
	e.size = len;
	assert_int_equal(an_maps_event(m, &e), 0);
}

static void test_cut_and_replace(void **state)
{
	(void)state;
	struct an_maps m;
	an_maps_init(&m);
	mmap_(&m, A0, 10 * PG - 100, 1); /* rounds up to 10 pages */
	assert_int_equal(m.mapped, 10 * PG);
	munmap_(&m, A0 + 3 * PG, 2 * PG); /* a hole: two ranges */
	assert_int_equal(m.n, 2);
	assert_int_equal(m.mapped, 8 * PG);
	munmap_(&m, A0, PG); /* the front */
	assert_int_equal(m.mapped, 7 * PG);
	/* MAP_FIXED over the tail of the second range and beyond */
	mmap_(&m, A0 + 8 * PG, 4 * PG, 2);
	assert_int_equal(m.n, 3);
	assert_int_equal(m.mapped, 2 * PG + 3 * PG + 4 * PG);
	assert_int_equal(an_maps_stack(&m, 1)->live, 5 * PG);
	assert_int_equal(an_maps_stack(&m, 2)->live, 4 * PG);
	assert_int_equal(m.peak, 10 * PG);
	/* an unmap across everything, with gaps */
	munmap_(&m, A0, 100 * PG);
	assert_int_equal(m.n, 0);
	assert_int_equal(m.mapped, 0);
	assert_int_equal(an_maps_stack(&m, 1)->live, 0);
	assert_int_equal(an_maps_stack(&m, 1)->calls, 1);
	assert_int_equal(an_maps_stack(&m, 1)->bytes, 10 * PG);
	assert_int_equal(an_maps_stack(&m, 1)->at_peak, 10 * PG);
	assert_null(an_maps_stack(&m, 3));
	an_maps_free(&m);
}

static void test_mremap_brk_failures(void **state)
{
	(void)state;
	struct an_maps m;
	an_maps_init(&m);
	mmap_(&m, A0, 4 * PG, 7);
	struct atr_event e = ev(ATR_T_MREMAP); /* grow and move: keeps stack 7 */
	e.ptr = A0;
	e.old_size = 4 * PG;
	e.size = 16 * PG;
	e.ret = A0 + 100 * PG;
	e.mflags = 1;
	e.stack_id = 9;
	assert_int_equal(an_maps_event(&m, &e), 0);
	assert_int_equal(m.mapped, 16 * PG);
	assert_int_equal(an_maps_stack(&m, 7)->live, 16 * PG);
	assert_int_equal(m.peak, 16 * PG);
	e = ev(ATR_T_MMAP); /* failures change nothing */
	e.ret = BAD;
	e.size = PG;
	e.err = 12;
	assert_int_equal(an_maps_event(&m, &e), 0);
	e = ev(ATR_T_MUNMAP);
	e.ptr = A0 + 100 * PG;
	e.size = PG;
	e.result = -1;
	assert_int_equal(an_maps_event(&m, &e), 0);
	assert_int_equal(m.failed, 2);
	assert_int_equal(m.mapped, 16 * PG);
	/* the program's break: +3 pages, -1 page */
	e = ev(ATR_T_SBRK);
	e.ptr = 0x1000000;
	e.ret = 0x1000000 + 3 * PG;
	assert_int_equal(an_maps_event(&m, &e), 0);
	e = ev(ATR_T_BRK_CALL);
	e.ptr = 0x1000000 + 3 * PG;
	e.ret = 0x1000000 + 2 * PG;
	assert_int_equal(an_maps_event(&m, &e), 0);
	assert_int_equal(m.brk_bytes, 2 * PG);
	assert_int_equal(m.mapped, 18 * PG);
	assert_int_equal(m.peak, 19 * PG);
	/* other events are ignored */
	e = ev(ATR_T_MALLOC);
	e.ret = A0;
	e.size = 1 << 20;
	assert_int_equal(an_maps_event(&m, &e), 0);
	assert_int_equal(m.mapped, 18 * PG);
	an_maps_free(&m);
}

/* Many mappings unmapped in a scattered order: the ranges stay sorted and
 * disjoint and the bytes add up. */
static void test_many(void **state)
{
	(void)state;
	struct an_maps m;
	an_maps_init(&m);
	for (uint64_t i = 0; i < 2000; i++)
		mmap_(&m, A0 + i * 4 * PG, 2 * PG, (uint32_t)(i % 5));
	assert_int_equal(m.n, 2000);
	assert_int_equal(m.mapped, 4000 * PG);
	for (uint64_t i = 0; i < 2000; i += 3)
		munmap_(&m, A0 + ((i * 7) % 2000) * 4 * PG + PG, PG);
	uint64_t sum = 0;
	for (size_t i = 0; i < m.n; i++) {
		assert_true(m.r[i].start < m.r[i].end);
		if (i)
			assert_true(m.r[i - 1].end <= m.r[i].start);
		sum += m.r[i].end - m.r[i].start;
	}
	assert_int_equal(sum, m.mapped);
	uint64_t live = 0;
	for (size_t i = 0; i < m.ns; i++)
		live += m.s[i].live;
	assert_int_equal(live, m.mapped);
	an_maps_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cut_and_replace),
	    cmocka_unit_test(test_mremap_brk_failures),
	    cmocka_unit_test(test_many),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
