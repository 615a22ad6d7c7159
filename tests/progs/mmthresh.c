/* mmthresh.c - a program whose other calls are known exactly, for the
 * replay of workload version 3 (tests/test_xreplay.py):
 *
 *   mallopt(M_TOP_PAD, 0) and malloc_trim(0) (no spare top chunk, which
 *   glibc would serve a block above the threshold from), mallopt(
 *   M_MMAP_THRESHOLD, 64 KiB) (glibc: fixed threshold from here), then BIG
 *   blocks of 100 KiB (above it: mmapped chunks, below glibc's
 *   default of 128 KiB), SMALL of 32 KiB (below both) and HUGE of 200 KiB
 *   (above both); malloc_usable_size of two blocks;
 *   its own mappings: a 1 MiB PROT_NONE reservation with 128 KiB committed
 *   inside it by MAP_FIXED, a 256 KiB mapping that another thread unmaps,
 *   a 64 KiB mapping grown to 192 KiB by mremap, advised MADV_DONTNEED and
 *   unmapped, the reservation unmapped whole;
 *   every block freed, then malloc_trim(0).
 *
 * The expectation line carries "other_calls" (per traced function), the
 * mmapped chunks glibc made ("mmapped": counted by their chunk headers'
 * IS_MMAPPED bit; BIG + HUGE), those glibc's default threshold would make
 * ("mmapped_default": HUGE) and "xops": the ops a workload must hold.
 *
 * usage: mmthresh
 */
#include "progs.h"

#include <sys/mman.h>

enum { BIG = 20, SMALL = 20, HUGE = 5 };

static void *unmap_arg;

static void *unmapper(void *arg)
{
	(void)arg;
	CHECK(munmap(unmap_arg, 256 << 10) == 0);
	return NULL;
}

int main(void)
{
	prog_name = "mmthresh";
	void *big[BIG], *small[SMALL], *huge[HUGE];
	CHECK(mallopt(M_TOP_PAD, 0) == 1);
	malloc_trim(0);
	CHECK(mallopt(M_MMAP_THRESHOLD, 64 << 10) == 1);
	for (int i = 0; i < BIG; i++) {
		big[i] = t_malloc(100 << 10);
		touch(big[i], 100 << 10);
	}
	for (int i = 0; i < SMALL; i++) {
		small[i] = t_malloc(32 << 10);
		touch(small[i], 32 << 10);
	}
	for (int i = 0; i < HUGE; i++) {
		huge[i] = t_malloc(200 << 10);
		touch(huge[i], 200 << 10);
	}
	int mmapped = 0; /* glibc: IS_MMAPPED (2) in the chunk's size word */
	for (int i = 0; i < BIG; i++)
		mmapped += (((size_t *)big[i])[-1] & 2) != 0;
	for (int i = 0; i < SMALL; i++)
		mmapped += (((size_t *)small[i])[-1] & 2) != 0;
	for (int i = 0; i < HUGE; i++)
		mmapped += (((size_t *)huge[i])[-1] & 2) != 0;
	CHECKF(mmapped == BIG + HUGE, "%d mmapped chunks", mmapped);
	size_t us = malloc_usable_size(small[0]) + malloc_usable_size(big[0]);
	CHECK(us >= (132 << 10));

	/* a reservation, and a part of it committed */
	char *r =
	    mmap(NULL, 1 << 20, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	CHECK(r != MAP_FAILED);
	CHECK(mmap(r + (256 << 10), 128 << 10, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == r + (256 << 10));
	touch(r + (256 << 10), 128 << 10);
	/* mapped here, unmapped by another thread */
	unmap_arg =
	    mmap(NULL, 256 << 10, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(unmap_arg != MAP_FAILED);
	touch(unmap_arg, 256 << 10);
	pthread_t th;
	CHECK(pthread_create(&th, NULL, unmapper, NULL) == 0);
	CHECK(pthread_join(th, NULL) == 0);
	/* glibc's own calls around a thread (tests/progs/threads.c): the
	   DTV's calloc, two free(NULL) at its exit */
	tally_add(F_CALLOC, 1);
	tally_add(F_FREE, 2);
	tally_add(F_FREE_NULL, 2);
	/* grown, advised, unmapped */
	char *g = mmap(NULL, 64 << 10, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(g != MAP_FAILED);
	touch(g, 64 << 10);
	g = mremap(g, 64 << 10, 192 << 10, MREMAP_MAYMOVE);
	CHECK(g != MAP_FAILED);
	touch(g, 192 << 10);
	CHECK(madvise(g, 192 << 10, MADV_DONTNEED) == 0);
	CHECK(munmap(g, 192 << 10) == 0);
	CHECK(munmap(r, 1 << 20) == 0);

	for (int i = 0; i < BIG; i++)
		t_free(big[i]);
	for (int i = 0; i < SMALL; i++)
		t_free(small[i]);
	for (int i = 0; i < HUGE; i++)
		t_free(huge[i]);
	malloc_trim(0);

	char extra[1024];
	snprintf(extra, sizeof extra,
		 "\"other_calls\":{\"mmap\":4,\"munmap\":3,\"mremap\":1,\"madvise\":1,"
		 "\"mallopt\":2,\"malloc_trim\":2,\"malloc_usable_size\":2},"
		 "\"threads\":2,\"mmapped\":%d,\"mmapped_default\":%d,"
		 "\"xops\":{\"mallopt\":2,\"malloc_trim\":2,\"malloc_usable_size\":2,\"mmap\":3,"
		 "\"mmap_fixed\":1,\"munmap\":3,\"mremap\":1,\"madvise\":1}",
		 mmapped, HUGE);
	expect_print(extra);
	return 0;
}
