/* test_ranges.c - util_ranges: cuts anywhere keep tags and offsets, as the
 * kernel keeps a mapping's parts; coverage needs one tag and no gap. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "util_ranges.h"

struct seen {
	struct ur_range r[8];
	int n;
};

static void note(void *arg, const struct ur_range *p)
{
	struct seen *s = arg;
	s->r[s->n++] = *p;
}

static void test_cut(void **state)
{
	(void)state;
	struct ur_set s = {0};
	assert_int_equal(ur_insert(&s, 0x3000, 0x5000, 2, 0), 0);
	assert_int_equal(ur_insert(&s, 0x1000, 0x3000, 1, 0), 0);
	assert_int_equal(ur_insert(&s, 0x8000, 0x9000, 3, 0), 0);
	uint64_t off = 0;
	assert_true(ur_covered(&s, 0x1000, 0x3000, 1, &off));
	assert_false(ur_covered(&s, 0x1000, 0x4000, 1, &off)); /* two tags */
	assert_false(ur_covered(&s, 0x4000, 0x9000, 2, &off)); /* a gap */
	/* a hole in the middle of tag 1: two parts with their offsets */
	struct seen sn = {0};
	assert_int_equal(ur_visit(&s, 0x1800, 0x2000, 1, note, &sn), 0x800);
	assert_int_equal(sn.n, 1);
	assert_int_equal(sn.r[0].off, 0x800);
	assert_int_equal(s.n, 4);
	assert_true(ur_covered(&s, 0x2000, 0x3000, 1, &off));
	assert_int_equal(off, 0x1000);
	assert_false(ur_covered(&s, 0x1000, 0x2000, 1, &off));
	/* a cut over the tail of one, all of another and the head of a third */
	sn.n = 0;
	assert_int_equal(ur_visit(&s, 0x2800, 0x8800, 1, note, &sn), 0x800 + 0x2000 + 0x800);
	assert_int_equal(sn.n, 3);
	assert_int_equal(sn.r[0].tag, 1);
	assert_int_equal(sn.r[0].off, 0x1800);
	assert_int_equal(sn.r[1].tag, 2);
	assert_int_equal(sn.r[2].tag, 3);
	assert_int_equal(sn.r[2].off, 0);
	assert_int_equal(s.n, 3); /* [1000,1800) [2000,2800) [8800,9000) */
	assert_int_equal(s.v[2].start, 0x8800);
	assert_int_equal(s.v[2].off, 0x800);
	/* looking does not cut; nothing there is 0 */
	assert_int_equal(ur_visit(&s, 0, 0x10000, 0, NULL, NULL), 0x800 + 0x800 + 0x800);
	assert_int_equal(ur_visit(&s, 0x4000, 0x8000, 1, NULL, NULL), 0);
	assert_int_equal(s.n, 3);
	ur_destroy(&s);
	assert_int_equal(s.n, 0);
}

static void test_many(void **state)
{
	(void)state;
	struct ur_set s = {0};
	for (uint64_t i = 0; i < 1000; i++)
		assert_int_equal(
		    ur_insert(&s, (999 - i) * 0x2000, (999 - i) * 0x2000 + 0x1000, i, 0), 0);
	for (size_t i = 1; i < s.n; i++)
		assert_true(s.v[i - 1].end <= s.v[i].start);
	assert_int_equal(ur_visit(&s, 0, 1000 * 0x2000, 1, NULL, NULL), 1000 * 0x1000);
	assert_int_equal(s.n, 0);
	ur_destroy(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cut),
	    cmocka_unit_test(test_many),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
