/* test_strtab.c - util_strtab: indices in order of first appearance, one
 * copy per distinct string, across growth. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "util_strtab.h"

static void test_intern(void **state)
{
	(void)state;
	struct util_strtab t = {0};
	assert_int_equal(util_str_intern(&t, ""), 0);
	assert_int_equal(util_str_intern(&t, "malloc"), 1);
	assert_int_equal(util_str_intern(&t, "free"), 2);
	assert_int_equal(util_str_intern(&t, "malloc"), 1);
	assert_int_equal(util_str_intern(&t, ""), 0);
	assert_int_equal(t.n, 3);
	assert_string_equal(t.s[2], "free");
	util_str_free(&t);
	assert_null(t.s);
	assert_int_equal(t.n, 0);
}

static void test_growth(void **state)
{
	(void)state;
	struct util_strtab t = {0};
	char b[32];
	for (int round = 0; round < 2; round++)
		for (long i = 0; i < 20000; i++) {
			snprintf(b, sizeof(b), "frame_%ld", i);
			assert_int_equal(util_str_intern(&t, b), i);
		}
	assert_int_equal(t.n, 20000);
	assert_string_equal(t.s[12345], "frame_12345");
	util_str_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_intern),
	    cmocka_unit_test(test_growth),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
