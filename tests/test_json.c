/* test_json.c - util_json writer and util_fmt numbers. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util_fmt.h"
#include "util_json.h"

struct mem {
	char *buf;
	size_t len;
	FILE *f;
};

static void mem_open(struct mem *m)
{
	m->buf = NULL;
	m->len = 0;
	m->f = open_memstream(&m->buf, &m->len);
	assert_non_null(m->f);
}

static char *mem_close(struct mem *m)
{
	fclose(m->f);
	return m->buf;
}

static void check_string(const char *in, size_t len, const char *want)
{
	struct mem m;
	mem_open(&m);
	json_write_string(m.f, in, len);
	char *got = mem_close(&m);
	assert_string_equal(got, want);
	free(got);
}

static void test_escapes(void **state)
{
	(void)state;
	check_string("plain", 5, "\"plain\"");
	check_string("a\"b\\c", 5, "\"a\\\"b\\\\c\"");
	check_string("\n\r\t\b\f", 5, "\"\\n\\r\\t\\b\\f\"");
	check_string("\x01\x1f\x7f", 3, "\"\\u0001\\u001f\\u007f\"");
	check_string("nul\0x", 5, "\"nul\\u0000x\"");
	check_string("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14,
		     "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
	/* invalid UTF-8: lone continuation, truncated sequence, overlong, surrogate */
	check_string("\x80", 1, "\"\\ufffd\"");
	check_string("\xc3", 1, "\"\\ufffd\"");
	check_string("\xc0\xaf", 2, "\"\\ufffd\\ufffd\"");
	check_string("\xed\xa0\x80", 3, "\"\\ufffd\\ufffd\\ufffd\"");
	check_string("\xff", 1, "\"\\ufffd\"");
	check_string("", 0, "\"\"");
}

static void test_structure(void **state)
{
	(void)state;
	struct mem m;
	mem_open(&m);
	struct json_writer w;
	json_init(&w, m.f, 0);
	json_begin_object(&w);
	json_key(&w, "a");
	json_u64(&w, UINT64_MAX);
	json_key(&w, "b");
	json_begin_array(&w);
	json_i64(&w, -5);
	json_bool(&w, 1);
	json_null(&w);
	json_begin_object(&w);
	json_end_object(&w);
	json_begin_array(&w);
	json_end_array(&w);
	json_double(&w, 0.5);
	json_double(&w, 1.0 / 0.0);
	json_end_array(&w);
	json_key(&w, "c\"");
	json_string(&w, "x");
	json_end_object(&w);
	json_finish(&w);
	char *got = mem_close(&m);
	assert_string_equal(got, "{\"a\":18446744073709551615,\"b\":[-5,true,null,{},[],0.5,null],"
				 "\"c\\\"\":\"x\"}\n");
	free(got);

	mem_open(&m);
	json_init(&w, m.f, 1);
	json_begin_object(&w);
	json_key(&w, "k");
	json_begin_array(&w);
	json_u64(&w, 1);
	json_u64(&w, 2);
	json_end_array(&w);
	json_key(&w, "e");
	json_begin_array(&w);
	json_end_array(&w);
	json_end_object(&w);
	json_finish(&w);
	got = mem_close(&m);
	assert_string_equal(got, "{\n  \"k\": [\n    1,\n    2\n  ],\n  \"e\": []\n}\n");
	free(got);
}

static void test_fmt(void **state)
{
	(void)state;
	char b[UTIL_FMT_BUF];
	assert_string_equal(util_fmt_u64(b, sizeof(b), 0), "0");
	assert_string_equal(util_fmt_u64(b, sizeof(b), 999), "999");
	assert_string_equal(util_fmt_u64(b, sizeof(b), 1000), "1,000");
	assert_string_equal(util_fmt_u64(b, sizeof(b), 1234567), "1,234,567");
	assert_string_equal(util_fmt_u64(b, sizeof(b), UINT64_MAX), "18,446,744,073,709,551,615");
	assert_string_equal(util_fmt_bytes(b, sizeof(b), 1023), "1023 B");
	assert_string_equal(util_fmt_bytes(b, sizeof(b), 1536), "1.5 KiB");
	assert_string_equal(util_fmt_ns(b, sizeof(b), 850), "850 ns");
	assert_string_equal(util_fmt_ns(b, sizeof(b), 12345678), "12.346 ms");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_escapes),
	    cmocka_unit_test(test_structure),
	    cmocka_unit_test(test_fmt),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
