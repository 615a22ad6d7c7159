/* calls.c - each of the ten traced functions a known number of times,
 * with the edge cases: realloc(NULL, n), realloc(p, 0), failing realloc,
 * reallocarray overflow, posix_memalign EINVAL/ENOMEM, calloc overflow,
 * huge sizes for every allocator, free(NULL).
 *
 * errno: every call is made with a sentinel in errno; successful calls
 * must leave it alone (glibc does), failing ones must set what glibc sets.
 * The program asserts the documented values itself, and prints what it
 * observed in "errno" so the driver can compare a traced run with an
 * untraced one.
 *
 * glibc's reallocarray calls realloc itself (through the PLT); the tracer
 * implements reallocarray as its overflow check plus the real realloc, so
 * no nested call happens and "untraced_calls" must be 0.
 *
 * usage: calls [ROUNDS]   (default 200 rounds of ~30 calls each)
 */
#include "progs.h"

#define SENTINEL  4242
#define HUGE_SIZE (SIZE_MAX - 65536)

/* malloc_usable_size calls: "other_calls" of the expectation */
static unsigned long usable_calls;

/* reallocarray calls that reach glibc's nested realloc (no overflow) */
static unsigned long nested_realloc;

static void *reallocarray_ok(void *p, size_t a, size_t b)
{
	nested_realloc++;
	return t_reallocarray(p, a, b);
}

static char errno_json[1024];
static size_t errno_len;

static void note_errno(const char *what, int e)
{
	errno_len += (size_t)snprintf(errno_json + errno_len, sizeof errno_json - errno_len,
				      "%s\"%s\":%d", errno_len ? "," : "", what, e);
	if (errno_len >= sizeof errno_json)
		die("errno_json overflow");
}

static void check_sentinel(const char *what)
{
	if (errno != SENTINEL)
		die("%s changed errno from %d to %d (%s)", what, SENTINEL, errno, strerror(errno));
}

static void check_aligned(const void *p, size_t al, const char *what)
{
	if (((uintptr_t)p & (al - 1)) != 0)
		die("%s: %p not aligned to %zu", what, p, al);
}

static void one_round(unsigned i, size_t page)
{
	void *p, *q;
	errno = SENTINEL;

	p = t_malloc(i % 512 + 1);
	CHECK(p);
	check_sentinel("malloc");
	t_free(p);
	check_sentinel("free");

	p = t_malloc(0); /* glibc: a unique minimum-size block */
	CHECK(p);
	t_free(p);

	p = t_calloc(i % 16 + 1, 24);
	CHECK(p);
	check_sentinel("calloc");
	t_free(p);

	p = t_realloc(NULL, 100); /* counts as realloc */
	CHECK(p);
	p = t_realloc(p, 5000);
	CHECK(p);
	p = t_realloc(p, 10);
	CHECK(p);
	check_sentinel("realloc");
	t_free(p);

	p = reallocarray_ok(NULL, 10, 8);
	CHECK(p);
	p = reallocarray_ok(p, 100, 8);
	CHECK(p);
	check_sentinel("reallocarray");
	t_free(p);

	p = t_memalign(64, 100 + i % 100);
	CHECK(p);
	check_aligned(p, 64, "memalign");
	t_free(p);

	p = t_memalign(24, 100); /* not a power of two: glibc rounds up to 32 */
	CHECK(p);
	check_aligned(p, 32, "memalign(24)");
	t_free(p);

	q = NULL;
	CHECK(t_posix_memalign(&q, 128, 200) == 0);
	CHECK(q);
	check_aligned(q, 128, "posix_memalign");
	t_free(q);

	p = t_aligned_alloc(256, 512);
	CHECK(p);
	check_aligned(p, 256, "aligned_alloc");
	t_free(p);

	p = t_valloc(100);
	CHECK(p);
	check_aligned(p, page, "valloc");
	t_free(p);

	p = t_pvalloc(100);
	CHECK(p);
	check_aligned(p, page, "pvalloc");
	t_free(p);

	t_free(NULL);
	check_sentinel("free(NULL)");

	/* a large block (mmap'd by glibc) */
	p = t_malloc(300000);
	CHECK(p);
	p = t_realloc(p, 600000);
	CHECK(p);
	t_free(p);
	check_sentinel("large blocks");
}

static void edge_cases(size_t page)
{
	void *p, *r, *q;
	int rc;

	/* realloc(p, 0): glibc frees p and returns NULL */
	p = t_malloc(10);
	CHECK(p);
	errno = SENTINEL;
	r = t_realloc(p, 0);
	CHECK(r == NULL);
	note_errno("realloc_zero", errno);
	CHECK(errno == SENTINEL);

	/* failing realloc: NULL, ENOMEM, the old block intact */
	p = t_malloc(16);
	CHECK(p);
	memset(p, 0x5a, 16);
	errno = SENTINEL;
	r = t_realloc(p, HUGE_SIZE);
	CHECK(r == NULL);
	note_errno("realloc_huge", errno);
	CHECK(errno == ENOMEM);
	for (int k = 0; k < 16; k++)
		CHECK(((unsigned char *)p)[k] == 0x5a);
	t_free(p);

	/* realloc(NULL, huge) */
	errno = SENTINEL;
	r = t_realloc(NULL, HUGE_SIZE);
	CHECK(r == NULL);
	note_errno("realloc_null_huge", errno);
	CHECK(errno == ENOMEM);

	/* malloc(huge) */
	errno = SENTINEL;
	r = t_malloc(HUGE_SIZE);
	CHECK(r == NULL);
	note_errno("malloc_huge", errno);
	CHECK(errno == ENOMEM);

	/* reallocarray overflow, with and without an old block */
	errno = SENTINEL;
	r = t_reallocarray(NULL, SIZE_MAX / 4, 8);
	CHECK(r == NULL);
	note_errno("reallocarray_overflow", errno);
	CHECK(errno == ENOMEM);
	p = reallocarray_ok(NULL, 4, 4);
	CHECK(p);
	errno = SENTINEL;
	r = t_reallocarray(p, SIZE_MAX / 2, 3);
	CHECK(r == NULL);
	note_errno("reallocarray_overflow_old", errno);
	CHECK(errno == ENOMEM);
	t_free(p); /* still ours */

	/* calloc overflow */
	errno = SENTINEL;
	r = t_calloc(SIZE_MAX / 2 + 2, 2);
	CHECK(r == NULL);
	note_errno("calloc_overflow", errno);
	CHECK(errno == ENOMEM);
	errno = SENTINEL;
	r = t_calloc(1, HUGE_SIZE);
	CHECK(r == NULL);
	note_errno("calloc_huge", errno);
	CHECK(errno == ENOMEM);
	/* calloc(0, n) */
	errno = SENTINEL;
	p = t_calloc(0, 8);
	CHECK(p);
	check_sentinel("calloc(0,8)");
	t_free(p);

	/* posix_memalign: bad alignments give EINVAL and leave errno and *out
	 * alone; a huge size gives ENOMEM */
	q = (void *)&q;
	errno = SENTINEL;
	rc = t_posix_memalign(&q, 3, 16);
	CHECK(rc == EINVAL);
	CHECK(q == (void *)&q);
	note_errno("posix_memalign_einval_errno", errno);
	CHECK(errno == SENTINEL);
	rc = t_posix_memalign(&q, 0, 16);
	CHECK(rc == EINVAL);
	rc = t_posix_memalign(&q, 24, 16);
	CHECK(rc == EINVAL);
	CHECK(q == (void *)&q);
	errno = SENTINEL;
	rc = t_posix_memalign(&q, 64, HUGE_SIZE);
	CHECK(rc == ENOMEM);
	CHECK(q == (void *)&q);
	note_errno("posix_memalign_enomem_errno", errno);

	/* the other aligned allocators with a huge size */
	errno = SENTINEL;
	r = t_memalign(64, HUGE_SIZE);
	CHECK(r == NULL);
	note_errno("memalign_huge", errno);
	CHECK(errno == ENOMEM);
	errno = SENTINEL;
	r = t_memalign(SIZE_MAX / 2 + 2, 16); /* alignment too large */
	CHECK(r == NULL);
	note_errno("memalign_bad_align", errno);
	CHECK(errno == EINVAL);
	errno = SENTINEL;
	r = t_aligned_alloc(64, HUGE_SIZE);
	CHECK(r == NULL);
	note_errno("aligned_alloc_huge", errno);
	CHECK(errno == ENOMEM);
	errno = SENTINEL;
	r = t_valloc(HUGE_SIZE);
	CHECK(r == NULL);
	note_errno("valloc_huge", errno);
	CHECK(errno == ENOMEM);
	errno = SENTINEL;
	r = t_pvalloc(HUGE_SIZE);
	CHECK(r == NULL);
	note_errno("pvalloc_huge", errno);
	CHECK(errno == ENOMEM);

	/* pvalloc rounds the size up to a whole page */
	p = t_pvalloc(1);
	CHECK(p);
	check_aligned(p, page, "pvalloc(1)");
	CHECK(malloc_usable_size(p) >= page);
	usable_calls++; /* traced too (ATR_XCALLS) */
	t_free(p);

	/* free(NULL) keeps errno */
	errno = SENTINEL;
	t_free(NULL);
	note_errno("free_null", errno);
	CHECK(errno == SENTINEL);
}

int main(int argc, char **argv)
{
	prog_name = "calls";
	unsigned rounds = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 200;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	for (unsigned i = 0; i < rounds; i++)
		one_round(i, page);
	edge_cases(page);

	/* every function must have been called */
	for (int f = 0; f < F_COUNT; f++)
		CHECK(T.c[f] > 0);

	char extra[1200];
	(void)nested_realloc;
	snprintf(extra, sizeof extra,
		 "\"threads\":1,\"untraced_calls\":0,\"errno\":{%s},"
		 "\"other_calls\":{\"malloc_usable_size\":%lu}",
		 errno_json, usable_calls);
	expect_print(extra);
	return 0;
}
