/* test_suggest.c - util_edit_distance and util_suggest ("did you mean"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "util_suggest.h"

static const char *const cmds[] = {"record", "info",	"dump",	  "report",  "flamegraph", "export",
				   "diff",   "convert", "replay", "compare", "arenas"};
#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

static void test_distance(void **state)
{
	(void)state;
	assert_int_equal(util_edit_distance("", ""), 0);
	assert_int_equal(util_edit_distance("abc", ""), 3);
	assert_int_equal(util_edit_distance("", "abc"), 3);
	assert_int_equal(util_edit_distance("record", "record"), 0);
	assert_int_equal(util_edit_distance("recrod", "record"), 1);  /* swap */
	assert_int_equal(util_edit_distance("recod", "record"), 1);   /* delete */
	assert_int_equal(util_edit_distance("reccord", "record"), 1); /* insert */
	assert_int_equal(util_edit_distance("rekord", "record"), 1);  /* substitute */
	assert_int_equal(util_edit_distance("REPORT", "report"), 0);  /* case */
	assert_int_equal(util_edit_distance("kitten", "sitting"), 3);
	assert_int_equal(util_edit_distance("ca", "abc"), 3); /* OSA, not full Damerau */
	char longw[100];
	memset(longw, 'a', sizeof(longw) - 1);
	longw[99] = 0;
	assert_true(util_edit_distance(longw, "a") == (size_t)-1);
}

static void test_suggest(void **state)
{
	(void)state;
	assert_string_equal(util_suggest("recrod", cmds, NCMDS), "record");
	assert_string_equal(util_suggest("reprot", cmds, NCMDS), "report");
	assert_string_equal(util_suggest("replya", cmds, NCMDS), "replay");
	assert_string_equal(util_suggest("inof", cmds, NCMDS), "info");
	assert_string_equal(util_suggest("flamegrph", cmds, NCMDS), "flamegraph");
	assert_string_equal(util_suggest("flam", cmds, NCMDS), "flamegraph"); /* unique prefix */
	assert_string_equal(util_suggest("arena", cmds, NCMDS), "arenas");
	assert_null(util_suggest("xyzzy", cmds, NCMDS));
	assert_null(util_suggest("", cmds, NCMDS));
	assert_null(util_suggest("re", cmds, NCMDS));	   /* prefix of four */
	assert_null(util_suggest("ls", cmds, NCMDS));	   /* too short to be a typo of anything */
	assert_null(util_suggest("bananas", cmds, NCMDS)); /* 2 from arenas, but not a typo */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_distance),
	    cmocka_unit_test(test_suggest),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
