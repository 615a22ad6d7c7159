/* test_hmap.c - util_hmap against a slow reference. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util_hmap.h"

static uint64_t rng_state = 88172645463325252ULL;
static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void test_basic(void **state)
{
	(void)state;
	struct util_hmap m;
	util_hmap_init(&m);
	uint64_t v = 0;
	assert_int_equal(util_hmap_lookup(&m, 5, &v), 0);
	assert_int_equal(util_hmap_remove(&m, 5, &v), 0);
	assert_int_equal(util_hmap_insert(&m, 5, 50, NULL), 1);
	assert_int_equal(util_hmap_insert(&m, 0, 7, NULL), 1); /* key 0 is a key */
	assert_int_equal(util_hmap_count(&m), 2);
	assert_int_equal(util_hmap_insert(&m, 5, 51, &v), 0);
	assert_int_equal(v, 50);
	assert_int_equal(util_hmap_lookup(&m, 5, &v), 1);
	assert_int_equal(v, 51);
	assert_int_equal(util_hmap_lookup(&m, 0, &v), 1);
	assert_int_equal(v, 7);
	assert_int_equal(util_hmap_remove(&m, 0, &v), 1);
	assert_int_equal(v, 7);
	assert_int_equal(util_hmap_lookup(&m, 0, NULL), 0);
	assert_int_equal(util_hmap_remove(&m, 5, NULL), 1);
	assert_int_equal(util_hmap_count(&m), 0);
	util_hmap_insert(&m, UINT64_MAX, 1, NULL);
	assert_int_equal(util_hmap_lookup(&m, UINT64_MAX, &v), 1);
	util_hmap_clear(&m);
	assert_int_equal(util_hmap_count(&m), 0);
	assert_int_equal(util_hmap_lookup(&m, UINT64_MAX, &v), 0);
	util_hmap_destroy(&m);
}

/* Random insert/remove/lookup over a small key space (many collisions and
 * backward shifts), checked against a direct-indexed reference. */
static void test_random_vs_reference(void **state)
{
	(void)state;
	enum { K = 5000 };
	static uint64_t ref[K];
	static unsigned char has[K];
	memset(has, 0, sizeof(has));
	struct util_hmap m = {0};
	size_t count = 0;
	for (int i = 0; i < 400000; i++) {
		uint64_t r = rng();
		unsigned k = (unsigned)(r % K);
		uint64_t key = (uint64_t)k * 16; /* pointer-like: aligned */
		uint64_t v;
		switch ((r >> 32) % 3) {
		case 0:
			assert_int_equal(util_hmap_insert(&m, key, r, NULL), !has[k]);
			count += !has[k];
			has[k] = 1;
			ref[k] = r;
			break;
		case 1:
			assert_int_equal(util_hmap_remove(&m, key, &v), has[k]);
			if (has[k])
				assert_true(v == ref[k]);
			count -= has[k];
			has[k] = 0;
			break;
		default:
			assert_int_equal(util_hmap_lookup(&m, key, &v), has[k]);
			if (has[k])
				assert_true(v == ref[k]);
		}
		assert_int_equal(util_hmap_count(&m), count);
	}
	for (unsigned k = 0; k < K; k++) {
		uint64_t v;
		assert_int_equal(util_hmap_lookup(&m, (uint64_t)k * 16, &v), has[k]);
	}
	util_hmap_destroy(&m);
}

/* Growth to a million keys and a full drain. */
static void test_large(void **state)
{
	(void)state;
	struct util_hmap m = {0};
	const uint64_t n = 1000000;
	for (uint64_t i = 1; i <= n; i++)
		assert_int_equal(util_hmap_insert(&m, 0x550000000000ULL + i * 32, i, NULL), 1);
	assert_int_equal(util_hmap_count(&m), n);
	for (uint64_t i = 1; i <= n; i += 7) {
		uint64_t v;
		assert_int_equal(util_hmap_lookup(&m, 0x550000000000ULL + i * 32, &v), 1);
		assert_true(v == i);
	}
	for (uint64_t i = 1; i <= n; i++)
		assert_int_equal(util_hmap_remove(&m, 0x550000000000ULL + i * 32, NULL), 1);
	assert_int_equal(util_hmap_count(&m), 0);
	assert_int_equal(util_hmap_lookup(&m, 0x550000000000ULL + 32, NULL), 0);
	util_hmap_destroy(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_basic),
	    cmocka_unit_test(test_random_vs_reference),
	    cmocka_unit_test(test_large),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
