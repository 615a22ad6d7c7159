/* test_liveset.c - lv_set against a slow reference, its totals and rules,
 * and lv_ahead (order, payloads, errors). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "liveset/lv_ahead.h"
#include "liveset/lv_set.h"

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
	struct lv_set s;
	lv_init(&s, 0);
	struct lv_block *b, old;
	assert_null(lv_find(&s, 16));
	assert_int_equal(lv_died(&s, 16, NULL), 0);
	assert_int_equal(lv_born(&s, 16, 100, 7, &b, &old), 1);
	assert_int_equal(b->ptr, 16);
	assert_int_equal(b->when, 7);
	b->tag = 3;
	assert_int_equal(lv_born(&s, 32, 50, 8, NULL, NULL), 1);
	assert_int_equal(s.blocks, 2);
	assert_int_equal(s.bytes, 150);
	assert_int_equal(s.peak_bytes, 150);
	assert_int_equal(s.peak_ts, 8);
	/* 16 again: its release was missed; replaced, the peak does not count
	 * both */
	assert_int_equal(lv_born(&s, 16, 10, 9, &b, &old), 0);
	assert_int_equal(old.size, 100);
	assert_int_equal(old.tag, 3);
	assert_int_equal(b->tag, 0);
	assert_int_equal(s.dup_allocs, 1);
	assert_int_equal(s.blocks, 2);
	assert_int_equal(s.bytes, 60);
	assert_int_equal(s.peak_bytes, 150);
	/* address 0 (a corrupt trace) is an address like any other */
	assert_int_equal(lv_born(&s, 0, 5, 10, NULL, NULL), 1);
	assert_non_null(lv_find(&s, 0));
	assert_int_equal(lv_died(&s, 0, &old), 1);
	assert_int_equal(old.size, 5);
	assert_null(lv_find(&s, 0));
	struct lv_block d;
	assert_int_equal(lv_died(&s, 32, &d), 1);
	assert_int_equal(d.size, 50);
	assert_int_equal(s.blocks, 1);
	assert_int_equal(s.bytes, 10);
	lv_destroy(&s);
	assert_int_equal(s.blocks, 0);
}

/* Random births and deaths over a small address space (long clusters and
 * backward shifts), then a million live blocks (huge-page table), against
 * a direct-indexed reference; totals checked all along. */
static void run_random_set(unsigned naddr, unsigned steps, int sizes, uint64_t spacing,
			   int grow_helper)
{
	uint64_t *size = calloc(naddr, sizeof(*size));
	unsigned char *live = calloc(naddr, 1);
	assert_non_null(size);
	assert_non_null(live);
	struct lv_set s;
	if (sizes)
		lv_init_sizes(&s, 0);
	else
		lv_init(&s, 0);
	lv_set_grow_helper(&s, grow_helper);
	uint64_t blocks = 0, bytes = 0, peak = 0;
	for (unsigned i = 0; i < steps; i++) {
		uint64_t r = rng();
		unsigned k = (unsigned)(r % naddr);
		uint64_t ptr = (uint64_t)k * spacing + 0x7f0000000000ULL;
		if ((r >> 32) % 3) {
			uint64_t sz = (r >> 40) % 1000;
			struct lv_block *b, old;
			int rc = lv_born(&s, ptr, sz, i, sizes ? NULL : &b, &old);
			assert_int_equal(rc, live[k] ? 0 : 1);
			if (live[k]) {
				assert_int_equal(old.size, size[k]);
				assert_int_equal(old.tag, sizes ? 0 : (uint32_t)k);
				bytes -= size[k];
				blocks--;
			}
			if (!sizes)
				b->tag = k;
			live[k] = 1;
			size[k] = sz;
			bytes += sz;
			blocks++;
			if (bytes > peak)
				peak = bytes;
		} else {
			struct lv_block d;
			int rc = lv_died(&s, ptr, &d);
			assert_int_equal(rc, live[k]);
			if (live[k]) {
				assert_int_equal(d.size, size[k]);
				assert_int_equal(d.tag, sizes ? 0 : k);
				assert_int_equal(d.ptr, ptr);
				bytes -= size[k];
				blocks--;
				live[k] = 0;
			}
		}
		assert_int_equal(s.blocks, blocks);
		assert_int_equal(s.bytes, bytes);
		assert_int_equal(s.peak_bytes, peak);
	}
	for (unsigned k = 0; k < naddr; k++) {
		const struct lv_block *b = lv_find(&s, (uint64_t)k * spacing + 0x7f0000000000ULL);
		if (live[k]) {
			assert_non_null(b);
			assert_int_equal(b->size, size[k]);
		} else {
			assert_null(b);
		}
	}
	uint64_t sum;
	size_t max;
	lv_probes(&s, &sum, &max);
	assert_true(max <= LV_PROBE_LIMIT * 2);
	lv_destroy(&s);
	free(size);
	free(live);
}

static void run_random(unsigned naddr, unsigned steps)
{
	run_random_set(naddr, steps, 0, 16, 0);
}

static void test_random_small(void **state)
{
	(void)state;
	run_random(3000, 400000);
}

static void test_random_big(void **state)
{
	(void)state;
	run_random(1500000, 3000000);
}

/* The same with lv_set_grow_helper: the tables of 8 MiB and more double
 * while another thread faults in half of the new memory (convert's
 * setting); nothing may change. */
static void test_random_grow_helper(void **state)
{
	(void)state;
	run_random_set(1500000, 3000000, 0, 16, 1);
}

/* A zeroed set (passes embed one in a memset struct) is an empty full set:
 * nearby homes from its first table on, through a huge-page table. */
static void test_zeroed(void **state)
{
	(void)state;
	struct lv_set s;
	memset(&s, 0, sizeof(s));
	assert_null(lv_find(&s, 48));
	assert_int_equal(lv_died(&s, 48, NULL), 0);
	for (uint64_t i = 1; i <= 200000; i++) {
		struct lv_block *b;
		assert_int_equal(lv_born(&s, i * 48, i, i, &b, NULL), 1);
		b->tag = (uint32_t)i;
	}
	assert_int_equal(s.grain, LV_GRAIN);
	for (uint64_t i = 1; i <= 200000; i++) {
		struct lv_block d;
		assert_int_equal(lv_died(&s, i * 48, &d), 1);
		assert_int_equal(d.tag, (uint32_t)i);
		assert_int_equal(d.size, i);
	}
	assert_int_equal(s.blocks, 0);
	lv_destroy(&s);
}

/* A set of sizes (16-byte entries) against the same reference, through
 * its growth to a huge-page table. */
static void test_random_sizes(void **state)
{
	(void)state;
	run_random_set(3000, 400000, 1, 16, 0);
	run_random_set(1500000, 3000000, 1, 48, 0);
	struct lv_set s;
	lv_init_sizes(&s, 0);
	struct lv_block *b, old;
	assert_int_equal(lv_born(&s, 64, 7, 3, &b, NULL), 1);
	b->tag = 9; /* a copy: a set of sizes keeps no tag */
	assert_int_equal(lv_find(&s, 64)->tag, 0);
	assert_int_equal(lv_find(&s, 64)->size, 7);
	assert_int_equal(lv_born(&s, 64, 8, 4, NULL, &old), 0);
	assert_int_equal(old.size, 7);
	assert_int_equal(s.bytes, 8);
	lv_destroy(&s);
	assert_int_equal(s.lg, LV_LG_SIZES);
	lv_destroy(&s);
}

/* Addresses denser than the nearby homes allow (one block per 8 bytes):
 * blocks 1 byte apart, and pages whose homes all fall on entry 0 of a
 * 4096-entry table.  The set must switch to scattered homes, stay exact,
 * and keep its probes short. */
static void check_dense(const uint64_t *addr, size_t n, int scatter)
{
	struct lv_set s;
	lv_init(&s, 0);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(lv_born(&s, addr[i], i + 1, i, NULL, NULL), 1);
	assert_int_equal(s.blocks, n);
	if (scatter)
		assert_int_equal(s.grain, LV_SCATTER_GRAIN);
	uint64_t sum;
	size_t max;
	lv_probes(&s, &sum, &max);
	assert_true(max <= LV_PROBE_LIMIT * 2);
	print_message("dense: %zu blocks, grain %u, probes mean %.2f max %zu\n", n, s.grain,
		      (double)sum / (double)n, max);
	assert_true(sum <= 4 * n);
	for (size_t i = 0; i < n; i++) {
		const struct lv_block *b = lv_find(&s, addr[i]);
		assert_non_null(b);
		assert_int_equal(b->size, i + 1);
	}
	/* every other one dies, then all: backward shifts over the whole table */
	for (size_t i = 0; i < n; i += 2)
		assert_int_equal(lv_died(&s, addr[i], NULL), 1);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(lv_find(&s, addr[i]) != NULL, i % 2);
	for (size_t i = 1; i < n; i += 2)
		assert_int_equal(lv_died(&s, addr[i], NULL), 1);
	assert_int_equal(s.blocks, 0);
	assert_int_equal(s.bytes, 0);
	lv_destroy(&s);
}

static void test_dense(void **state)
{
	(void)state;
	size_t n = 200000;
	uint64_t *a = malloc(n * sizeof(*a));
	assert_non_null(a);
	for (size_t i = 0; i < n; i++)
		a[i] = 0x555555554000ULL + i;
	check_dense(a, n, 1);
	/* 8 bytes apart: the densest the nearby homes take without a pile-up */
	for (size_t i = 0; i < n; i++)
		a[i] = 0x555555554000ULL + 8 * i;
	check_dense(a, n, 0);
	/* every 4 KiB page of a 1 MiB range holds the same 40 blocks: pages
	 * over pages, in an order that is not the addresses' */
	for (size_t i = 0; i < n; i++)
		a[i] = 0x7f0000000000ULL + ((i * 2654435761u) % 256) * 4096 + (i / 256) % 40 * 16 +
		       (uint64_t)(i / 10240) * (1 << 20);
	check_dense(a, n, 0);
	/* 900 blocks whose nearby homes in a 4096-entry table (900 blocks
	 * stay below its limit of 1024) are all entry 0 */
	unsigned reg = lv_region(4096);
	size_t k = 0;
	for (uint64_t page = 0x7f0000000ULL; k < 900; page++) {
		uint64_t base = page << reg;
		size_t h = lv_hash(base, 4095, LV_NEARBY_HS, LV_GRAIN, reg);
		uint64_t off = (uint64_t)((4096 - h) & 4095) << LV_GRAIN;
		if (off < ((uint64_t)1 << reg)) {
			assert_int_equal(lv_hash(base + off, 4095, LV_NEARBY_HS, LV_GRAIN, reg), 0);
			a[k++] = base + off;
		}
	}
	check_dense(a, k, 1);
	free(a);
}

static struct atr_event call(unsigned type, uint64_t ptr, uint64_t ret, uint64_t size)
{
	struct atr_event e;
	memset(&e, 0, sizeof(e));
	e.type = (uint8_t)type;
	e.ptr = ptr;
	e.ret = ret;
	e.size = size;
	e.thread = 1;
	return e;
}

struct log {
	int born, died[4];
};

static void on_born(void *ctx, const struct atr_event *ev, struct lv_block *b)
{
	struct log *l = ctx;
	l->born++;
	b->tag = (uint32_t)ev->size;
}

static void on_died(void *ctx, const struct atr_event *ev, const struct lv_block *b,
		    enum lv_why why)
{
	(void)ev;
	struct log *l = ctx;
	assert_int_equal(b->tag, (uint32_t)b->size);
	l->died[why]++;
}

/* The rules of an_summary.h, and unknown frees counted by the trace's
 * status. */
static void test_rules(void **state)
{
	(void)state;
	static const struct lv_hooks h = {on_born, on_died};
	struct log l;
	memset(&l, 0, sizeof(l));
	struct lv_set s;
	lv_init(&s, 0);
	struct atr_event e[] = {
	    call(ATR_T_MALLOC, 0, 0x100, 10),
	    call(ATR_T_CALLOC, 0, 0x200, 20),
	    call(ATR_T_MALLOC, 0, 0, 30),	   /* failed: nothing */
	    call(ATR_T_REALLOC, 0x100, 0x100, 15), /* in place */
	    call(ATR_EV_REALLOC_RELEASE, 0x200, 0, 0),
	    call(ATR_T_REALLOC, 0x200, 0x300, 40), /* moved (released above) */
	    call(ATR_T_REALLOC, 0x300, 0, 50),	   /* failed: 0x300 stays */
	    call(ATR_T_REALLOC, 0x999, 0, 50),	   /* failed, not live: unknown */
	    call(ATR_T_FREE, 0, 0, 0),		   /* free(NULL) */
	    call(ATR_T_FREE, 0x555, 0, 0),	   /* unknown */
	    call(ATR_T_MALLOC, 0, 0x100, 5),	   /* 0x100 was live: replaced */
	    call(ATR_T_FREE, 0x300, 0, 0),
	    call(ATR_T_MARKER, 0, 0, 0), /* ignored */
	};
	for (size_t i = 0; i < sizeof(e) / sizeof(e[0]); i++)
		assert_int_equal(lv_event(&s, &e[i], &h, &l), 0);
	assert_int_equal(l.born, 5);
	assert_int_equal(l.died[LV_IN_PLACE], 1);
	assert_int_equal(l.died[LV_REALLOC_RELEASE], 1);
	assert_int_equal(l.died[LV_REPLACED], 1);
	assert_int_equal(l.died[LV_FREE], 1);
	assert_int_equal(s.unknown_frees, 2);
	assert_int_equal(s.dup_allocs, 1);
	assert_int_equal(s.blocks, 1);
	assert_int_equal(s.bytes, 5);
	/* 10 + 20, then 15 + 20, release: 15, + 40 = 55 */
	assert_int_equal(s.peak_bytes, 55);
	lv_destroy(&s);

	lv_init(&s, ATR_STATUS_FORK_CHILD);
	struct atr_event f = call(ATR_T_FREE, 0x10, 0, 0);
	lv_event(&s, &f, NULL, NULL);
	assert_int_equal(s.inherited_frees, 1);
	assert_int_equal(s.unknown_frees, 0);
	lv_destroy(&s);
	lv_init(&s, ATR_STATUS_ATTACHED | ATR_STATUS_FORK_CHILD);
	lv_event(&s, &f, NULL, NULL);
	assert_int_equal(s.pre_attach_frees, 1);
	lv_destroy(&s);
}

/* call() as a compact record of thread at ts */
static struct atr_call pcall(unsigned type, uint32_t thread, uint64_t ts, uint64_t ptr,
			     uint64_t ret)
{
	struct atr_event e = call(type, ptr, ret, 8);
	e.thread = thread;
	e.ts = ts;
	struct atr_call c;
	atr_event_call(&e, &c);
	return c;
}

/* Releases stamped ahead of another thread's allocation (lv_park.h): one
 * the allocation claims within the window, one its own thread's
 * allocation comes between (the other thread's then claims it, the block
 * stays its own thread's), one the window passes (counted when the next
 * call comes), one still parked at the end (counted by lv_settle), and the
 * same stream without parking.  Through lv_call and lv_calls alike. */
static void run_park(int batch, uint64_t window)
{
	struct atr_call c[] = {
	    pcall(ATR_T_FREE, 2, 1000, 0x100, 0),   /* B, ahead of A's malloc */
	    pcall(ATR_T_MALLOC, 1, 1050, 0, 0x100), /* A: claims it */
	    pcall(ATR_T_FREE, 2, 2000, 0x200, 0),   /* B, ahead again */
	    pcall(ATR_T_MALLOC, 2, 2010, 0, 0x200), /* B's own: no claim */
	    pcall(ATR_T_MALLOC, 1, 2050, 0, 0x200), /* A: claims it; B's stays */
	    pcall(ATR_T_FREE, 2, 3000, 0x300, 0),   /* never allocated */
	    pcall(ATR_T_MALLOC, 1, 3200, 0, 0x300), /* past the window */
	    pcall(ATR_T_FREE, 1, 4000, 0x400, 0),   /* still parked at the end */
	    /* the second shape: A's early free lands on B's block, B frees
	       it (not live), allocates the address again: that block's
	       free was A's */
	    pcall(ATR_T_MALLOC, 2, 5000, 0, 0x500),
	    pcall(ATR_T_FREE, 1, 5010, 0x500, 0),
	    pcall(ATR_T_FREE, 2, 5020, 0x500, 0),
	    pcall(ATR_T_MALLOC, 2, 5030, 0, 0x500),
	};
	size_t n = sizeof(c) / sizeof(c[0]);
	struct lv_set s;
	lv_init_sizes(&s, 0);
	lv_set_park(&s, window);
	if (batch) {
		assert_int_equal(lv_calls(&s, c, n), 0);
	} else {
		for (size_t i = 0; i < n; i++)
			assert_int_equal(lv_call(&s, &c[i]), 0);
	}
	lv_settle(&s);
	if (window) {
		assert_int_equal(s.park.reordered, 3);
		assert_int_equal(s.unknown_frees, 2); /* 0x300 and 0x400 */
		assert_int_equal(s.dup_allocs, 0);
		assert_int_equal(s.blocks, 2); /* B's 0x200, A's 0x300 */
		assert_non_null(lv_find(&s, 0x200));
		assert_non_null(lv_find(&s, 0x300));
		assert_null(lv_find(&s, 0x100));
		assert_null(lv_find(&s, 0x500));
	} else {
		assert_int_equal(s.park.reordered, 0);
		assert_int_equal(s.unknown_frees, 5);
		assert_int_equal(s.dup_allocs, 1); /* A's 0x200 on B's */
		assert_int_equal(s.blocks, 4);
	}
	assert_int_equal(s.park.n, 0);
	lv_destroy(&s);
}

static void test_park(void **state)
{
	(void)state;
	for (int batch = 0; batch < 2; batch++) {
		run_park(batch, 100);
		run_park(batch, 0);
	}
	/* lv_event: the claimed block is born and dies at once, through the
	 * hooks */
	static const struct lv_hooks h = {on_born, on_died};
	struct log l;
	memset(&l, 0, sizeof(l));
	struct lv_set s;
	lv_init(&s, 0);
	lv_set_park(&s, 100);
	struct atr_event f = call(ATR_T_FREE, 0x100, 0, 0), m = call(ATR_T_MALLOC, 0, 0x100, 8);
	f.thread = 2;
	f.ts = 1000;
	m.ts = 1040;
	assert_int_equal(lv_event(&s, &f, &h, &l), 0);
	assert_int_equal(s.unknown_frees, 0);
	assert_int_equal(lv_event(&s, &m, &h, &l), 0);
	assert_int_equal(l.born, 1);
	assert_int_equal(l.died[LV_FREE], 1);
	assert_int_equal(s.blocks, 0);
	lv_settle(&s);
	assert_int_equal(s.unknown_frees, 0);
	assert_int_equal(s.park.reordered, 1);
	lv_destroy(&s);
	/* a full table expires its oldest release to make room */
	struct lv_park p;
	lv_park_init(&p, 1000);
	struct atr_call x;
	for (uint32_t i = 0; i < LV_PARK_CAP; i++) {
		struct atr_call r = pcall(ATR_T_FREE, 1, 10 + i, 0x1000 + 16 * i, 0);
		assert_int_equal(lv_park_add(&p, &r, &x), 0);
	}
	struct atr_call r = pcall(ATR_T_FREE, 1, 100, 0x9000, 0);
	assert_int_equal(lv_park_add(&p, &r, &x), 1);
	assert_int_equal(x.ptr, 0x1000);
	assert_int_equal(p.oldest, 11);
	assert_int_equal(lv_park_claim(&p, 0x9000, 1, 150, &x), 0); /* same thread */
	assert_int_equal(lv_park_claim(&p, 0x9000, 2, 150, &x), 1);
	assert_int_equal(p.n, LV_PARK_CAP - 1);
}

/* lv_calls (a batch in one call, its common cases in registers) against
 * lv_call one record at a time: random streams of every kind of record
 * (frees of live and unknown blocks, free(NULL), failed allocations,
 * duplicates, reallocs in place, moved and failed, releases, address 0),
 * dense enough to grow the table and to switch it to scattered homes, in
 * batches of 1 to 80; the totals and every live block must agree. */
static void run_calls_batch(int sizes, uint64_t span, unsigned stride, size_t n, uint64_t window)
{
	struct lv_set a, b;
	if (sizes) {
		lv_init_sizes(&a, 0);
		lv_init_sizes(&b, 0);
	} else {
		lv_init(&a, 0);
		lv_init(&b, 0);
	}
	lv_set_park(&a, window);
	lv_set_park(&b, window);
	struct atr_call *c = calloc(n, sizeof(*c));
	assert_non_null(c);
	for (size_t i = 0; i < n; i++) {
		uint64_t r = rng(), p = (r >> 8) % span * stride, q = (r >> 40) % span * stride;
		c[i].ts = i;
		c[i].thread = 1 + (uint32_t)((r >> 12) % 3);
		c[i].size = 1 + (r >> 20) % 4000;
		switch (r % 16) {
		case 0:
		case 1:
		case 2:
		case 3:
		case 4:
			c[i].type = ATR_T_FREE;
			c[i].ptr = p;
			break;
		case 5:
			c[i].type = ATR_T_FREE; /* free(NULL) */
			break;
		case 6:
			c[i].type = ATR_T_REALLOC;
			c[i].ptr = p;
			c[i].ret = (r >> 60) & 1 ? p : (r >> 61) & 1 ? q : 0;
			break;
		case 7:
			c[i].type = ATR_EV_REALLOC_RELEASE;
			c[i].ptr = p;
			break;
		case 8:
			c[i].type = ATR_T_CALLOC;
			c[i].ret = (r >> 60) ? p : 0; /* some fail */
			break;
		case 9:
			c[i].type = ATR_T_MEMALIGN;
			c[i].ret = p; /* address 0 now and then (p is 0) */
			break;
		default:
			c[i].type = ATR_T_MALLOC;
			c[i].ret = p;
			break;
		}
	}
	for (size_t i = 0; i < n; i++)
		assert_int_equal(lv_call(&a, &c[i]), 0);
	for (size_t i = 0; i < n;) {
		size_t k = 1 + rng() % 80;
		k = k < n - i ? k : n - i;
		assert_int_equal(lv_calls(&b, &c[i], k), 0);
		i += k;
	}
	lv_settle(&a);
	lv_settle(&b);
	assert_int_equal(a.park.reordered, b.park.reordered);
	if (window)
		assert_true(a.park.reordered > 0);
	assert_int_equal(a.blocks, b.blocks);
	assert_int_equal(a.count, b.count);
	assert_int_equal(a.bytes, b.bytes);
	assert_int_equal(a.peak_bytes, b.peak_bytes);
	assert_int_equal(a.peak_ts, b.peak_ts);
	assert_int_equal(a.dup_allocs, b.dup_allocs);
	assert_int_equal(a.unknown_frees, b.unknown_frees);
	assert_int_equal(a.cap, b.cap);
	assert_int_equal(a.grain, b.grain);
	for (uint64_t k = 0; k < span; k++) {
		const struct lv_block *x = lv_find(&a, k * stride);
		uint64_t xs = x ? x->size : 0, xw = x ? x->when : 0;
		int xl = x != NULL;
		const struct lv_block *y = lv_find(&b, k * stride);
		assert_int_equal(xl, y != NULL);
		if (y) {
			assert_int_equal(xs, y->size);
			assert_int_equal(xw, y->when);
		}
	}
	free(c);
	lv_destroy(&a);
	lv_destroy(&b);
}

static void test_calls_batch(void **state)
{
	(void)state;
	for (int sizes = 0; sizes < 2; sizes++) {
		run_calls_batch(sizes, 5000, 48, 200000, 0);   /* growth, nearby homes */
		run_calls_batch(sizes, 300, 16, 50000, 0);     /* a small, busy set */
		run_calls_batch(sizes, 20000, 1, 200000, 0);   /* denser than 1 per 8 bytes */
		run_calls_batch(sizes, 4000, 4096, 100000, 0); /* one block per page */
		/* releases parked for 4 records: many claimed, some expired */
		run_calls_batch(sizes, 300, 16, 50000, 4);
		run_calls_batch(sizes, 5000, 48, 200000, 4);
	}
}

/* A source whose payload buffer is overwritten by every call, as the
 * reader's may be: lv_ahead must hand out its own copies. */
struct src {
	unsigned i, n;
	int err;
	struct atr_event ev;
	uint8_t buf[64];
};

static int src_next(void *p, const struct atr_event **ev)
{
	struct src *s = p;
	if (s->i == s->n)
		return s->err;
	memset(&s->ev, 0, sizeof(s->ev));
	s->ev.seq = s->i;
	s->ev.type = ATR_T_MARKER;
	s->ev.ret = s->i * 16 + 16;
	memset(s->buf, 'a' + (int)(s->i % 26), sizeof(s->buf));
	s->ev.payload = s->buf;
	s->ev.payload_len = 1 + s->i % 60;
	s->i++;
	*ev = &s->ev;
	return 1;
}

static void run_ahead(unsigned n, int err)
{
	struct src s = {.n = n, .err = err};
	struct lv_set set;
	lv_init(&set, 0);
	lv_born(&set, 16, 1, 0, NULL, NULL); /* something to prefetch into */
	struct lv_ahead a;
	lv_ahead_init(&a, src_next, &s, &set);
	const struct atr_event *ev;
	unsigned got = 0;
	int r;
	while ((r = lv_ahead_next(&a, &ev)) > 0) {
		assert_int_equal(ev->seq, got);
		assert_int_equal(ev->payload_len, 1 + got % 60);
		for (unsigned k = 0; k < ev->payload_len; k++)
			assert_int_equal(ev->payload[k], 'a' + (int)(got % 26));
		got++;
	}
	assert_int_equal(r, err);
	assert_int_equal(got, n);
	assert_int_equal(lv_ahead_next(&a, &ev), err); /* stays ended */
	lv_ahead_free(&a);
	lv_destroy(&set);
}

static void test_ahead(void **state)
{
	(void)state;
	run_ahead(0, 0);
	run_ahead(3, 0);
	run_ahead(LV_AHEAD, 0);
	run_ahead(1000, 0);
	run_ahead(5, ATR_E_RECORD);
	run_ahead(LV_AHEAD * 3 + 1, ATR_E_RECORD);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_basic),	 cmocka_unit_test(test_random_small),
	    cmocka_unit_test(test_random_big),	 cmocka_unit_test(test_random_grow_helper),
	    cmocka_unit_test(test_random_sizes), cmocka_unit_test(test_dense),
	    cmocka_unit_test(test_zeroed),	 cmocka_unit_test(test_rules),
	    cmocka_unit_test(test_ahead),	 cmocka_unit_test(test_calls_batch),
	    cmocka_unit_test(test_park),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
