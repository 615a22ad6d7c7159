/* an_arenas.h - glibc arenas, heaps, sbrk and mmap thresholds from a trace
 * (`alloctrace arenas`, docs/ARENAS.md).
 *
 * Needs a trace recorded on glibc (ATR_FEAT_CHUNK_FLAGS): each allocation
 * carries its chunk's IS_MMAPPED and NON_MAIN_ARENA bits; HEAP records name
 * the arena (heap_info.ar_ptr) and size of each non-main heap a thread
 * allocates from, BRK records the program break.  One streaming pass;
 * memory grows with threads, arenas, heaps, live mmapped chunks and the
 * (capped) event lists, never with the trace.
 */
#ifndef AN_ARENAS_H
#define AN_ARENAS_H

#include <stdint.h>

#include "atr_reader.h"
#include "liveset/lv_set.h"
#include "util_hmap.h"

#define AN_ARENAS_LIST_CAP    100000u /* events kept per list; more are counted */
#define AN_ARENAS_NBUCKETS    496u    /* duration histogram: 8 per power of 2 */
#define AN_ARENAS_SLOW_FACTOR 10u     /* "long" call: > 10 x the thread's median */
/* glibc constants on 64-bit (malloc.c) */
#define AN_GLIBC_MMAP_THRESHOLD_INIT (128u << 10)  /* DEFAULT_MMAP_THRESHOLD_MIN */
#define AN_GLIBC_MMAP_THRESHOLD_MAX  (32ULL << 20) /* DEFAULT_MMAP_THRESHOLD_MAX */

struct an_arena_pt {
	uint64_t ts, v;
};

struct an_arena_heap {
	uint64_t start;
	uint32_t arena; /* index in an_arenas.arenas */
	uint32_t first_thread, first_tid;
	uint64_t first_ts;
	uint64_t size;		   /* heap_info.size last seen (0: unknown) */
	uint64_t extent;	   /* highest chunk end - start seen */
	struct an_arena_pt *sizes; /* (ts, heap_info.size) when it changed */
	uint32_t nsizes, capsizes;
	uint64_t sizes_dropped;
};

struct an_arena {
	uint64_t ar_ptr; /* 0: the main arena */
	int main;
	uint64_t first_ts; /* first allocation seen from it */
	uint32_t first_thread, first_tid;
	uint32_t *threads; /* serials of threads it served, first-use order */
	uint32_t nthreads, capthreads;
	uint32_t *heaps; /* indices in an_arenas.heaps */
	uint32_t nheaps, capheaps;
	uint64_t allocs; /* non-mmapped allocations it served */
};

struct an_arena_move {
	uint64_t ts;
	uint32_t thread, tid;
	int32_t from, to; /* arena indices; from = -1: first allocation */
};

struct an_arena_thresh {
	uint64_t ts;
	uint32_t thread, tid;
	uint64_t chunk, mmap, trim;
};

struct an_arena_hist {
	uint32_t arena;
	uint64_t calls;
	uint64_t *h; /* AN_ARENAS_NBUCKETS */
};

struct an_arena_thr {
	uint32_t serial, tid;
	int32_t cur; /* arena of its last non-mmapped allocation */
	int exited;
	uint64_t rel_ptr, rel_chunk; /* realloc release stash (realloc(p, 0)) */
	struct an_arena_hist *hist;
	uint32_t nhist;
	uint64_t timed_calls;
	uint64_t median; /* ticks, upper bound of the median's bucket */
};

/* Long calls of one thread on one shared arena (timing recorded). */
struct an_arena_wait {
	uint32_t thread, tid, arena;
	uint64_t calls, slow;
	uint64_t median, limit; /* ticks */
};

struct an_arenas {
	int timing;
	struct an_arena *arenas;
	uint32_t narenas, caparenas;
	struct an_arena_heap *heaps;
	uint32_t nheaps, capheaps;
	struct an_arena_thr *threads; /* by serial - 1 */
	uint32_t nthreads;
	struct an_arena_move *moves;
	uint32_t nmoves, capmoves;
	uint64_t moves_dropped;
	struct an_arena_thresh *thresh;
	uint32_t nthresh, capthresh;
	uint64_t thresh_dropped;
	struct an_arena_pt *brks; /* (ts, break) when it changed */
	uint32_t nbrks, capbrks;
	uint64_t brks_dropped;
	int have_brk;
	uint64_t brk0, brk;
	int64_t sbrk_bytes; /* brk - brk0 at the last BRK record */
	uint64_t mmap_threshold, trim_threshold;
	uint64_t mmap_served, mmap_served_bytes;
	uint64_t mmap_live, mmap_live_bytes, mmap_peak_bytes;
	uint64_t allocs, unknown_heap_allocs;
	struct an_arena_wait *waits;
	uint32_t nwaits;
	uint64_t last_ts;
	/* working state */
	struct lv_set mm;	    /* live mmapped chunks (size: the chunk's) */
	struct util_hmap heap_idx;  /* heap start -> index */
	struct util_hmap arena_idx; /* ar_ptr -> index */
	/* chunks freed into a thread's tcache may come back to that thread
	   whatever their arena: address -> the threads that freed it last
	   (an_arenas.c, FR_*), in two generations of AN_ARENAS_FREED_GEN
	   entries */
	struct util_hmap freed[2];
	uint64_t tcache_skipped; /* allocations not taken as arena evidence */
};

/* Entries per generation of an_arenas.freed: a chunk that stays in a
 * tcache while 2^19 to 2^20 other chunk addresses are freed is
 * forgotten. */
#define AN_ARENAS_FREED_GEN (1u << 19)
/* glibc's largest tcache request (tidx2usize(63), 64-bit): a larger
 * allocation never comes from a tcache. */
#define AN_GLIBC_TCACHE_MAX 1032u

/* 0, ATR_E_USAGE when the trace has no chunk flags (not glibc, or an older
 * recorder), or a negative atr_err.  Free a with an_arenas_free() in any
 * case. */
int an_arenas_compute(atr_file *f, struct an_arenas *a);
void an_arenas_free(struct an_arenas *a);

#endif
