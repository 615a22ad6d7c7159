/* atp_internal.h - shared state of the preload library (liballoctrace.so).
 *
 * Rules for everything in src/preload/: no stdio, no locks and no syscalls
 * on the hot path, never call the malloc family except through g.real
 * while the thread's guard is set, save errno around anything that can
 * change it.  See docs/INTERNALS.md ("The recorder").
 */
#ifndef ATP_INTERNAL_H
#define ATP_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdatomic.h>
#include <sys/types.h>

#include "atr_format.h"
#include "plat_clock.h"

#define ATP_HIDDEN	__attribute__((visibility("hidden")))
#define ATP_LIKELY(x)	__builtin_expect(!!(x), 1)
#define ATP_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define ATP_BARRIER()	__asm__ __volatile__("" ::: "memory")
#define ATP_PATH_MAX	4096
#define ATP_MAX_SLOTS	4096 /* threads whose record count sync() sees live */
/* Added to a thread's guard around our own work that may allocate
 * (libunwind, dlopen): those calls pass through and are not counted as
 * untraced calls of the program. */
#define ATP_GUARD_INTERNAL     0x10000u
#define ATP_ZSTD_LEVEL_DEFAULT 1  /* bench/RESULTS.md: level 1 vs 3 */
#define ATP_MAX_SPARE	       64 /* retired staging blocks kept for reuse */
#define ATP_MREMAP_DONTUNMAP   4  /* Linux 5.7; older headers lack it */
/* Full staging blocks a thread may have waiting for the encoder thread
 * (atp_offload.c); with all of them waiting it encodes the next itself. */
#define ATP_INFLIGHT 2
/* Level 1's minimum match (zstd's own is 5 for blocks this size): 3-42%
 * fewer instructions for 0.3-3% more bytes (bench/RESULTS.md, "zstd's
 * share"). */
#define ATP_ZSTD_MINMATCH 7
/* Releases of blocks this large get a RESIDENT record (bench/RESULTS.md:
 * 4 pages, where jemalloc's page runs begin; the cost is one mincore per
 * such release) */
#define ATP_RESIDENT_MIN_DEFAULT (16u << 10)
/* ALLOCTRACE_LATER_MAX: raw blocks up to 4 GiB of file (~200 M calls) */
#define ATP_LATER_MAX_DEFAULT (UINT64_C(4) << 30)
/* ... but their mincore calls take at most this share of a thread's time,
 * in basis points (0.5%: a mincore costs ~2 us here, bench/RESULTS.md;
 * the blocks skipped get an estimate from convert) */
#define ATP_RESIDENT_BUDGET_DEFAULT 50u
/* A CPU record before a record that ends a gap longer than this (us):
 * its two system calls stay under ~1% of the gap (atp_cpu_note) */
#define ATP_CPU_GAP_US_DEFAULT 200u
/* One call in this many of a thread carries its duration (atp_timed;
 * bench/replay/RESULTS.md, "Think time: CPU records merged, sampled
 * durations, waits that yield"). */
#define ATP_TIMING_SAMPLE_DEFAULT 128u

/* The real functions, in ATR_CALLS order, then the other calls in
 * ATR_XCALLS order (record -p exchanges them with the target in this
 * order, see alloctrace_attach_impl). */
#define ATP_REAL_(NAME, name, type, op, args, ret, params) ret(*name) params;
#define ATP_XREAL_(NAME, name, type, words, ret, params)   ret(*name) params;
struct atp_real {
	ATR_CALLS(ATP_REAL_)
	size_t (*usable_size)(void *);
	/* the other traced calls (not in the attach table) */
	ATR_XCALLS(ATP_XREAL_)
};
#undef ATP_REAL_
#undef ATP_XREAL_
_Static_assert(offsetof(struct atp_real, usable_size) == ATR_NCALLS * sizeof(void *),
	       "struct atp_real: one pointer per traced function, then the rest");
_Static_assert(offsetof(struct atp_real, mmap) == (ATR_NCALLS + 1) * sizeof(void *) &&
		   sizeof(struct atp_real) == (ATR_NCALLS + 1 + ATR_NXCALLS) * sizeof(void *),
	       "struct atp_real: the other calls last, mmap first");
/* record -p's table (alloctrace_attach_impl): the ATR_CALLS functions, the
 * ATR_XCALLS ones, then mmap64 (an alias of mmap with its own GOT
 * entries). */
#define ATP_ATTACH_NREAL (ATR_NCALLS + ATR_NXCALLS + 1)

enum atp_state {
	ATP_UNINIT = 0,
	ATP_INITIALIZING = 1,
	ATP_READY = 2,
	ATP_DISABLED = 3, /* secure mode, bad settings, or no file */
};

enum atp_clock { ATP_CLOCK_MONO = 0, ATP_CLOCK_TSC = 1, ATP_CLOCK_CNTVCT = 2 };

/* Per-thread state, initial-exec TLS: reached with one fs-relative access. */
struct atp_thread {
	uint64_t *cur;	     /* where the next record goes */
	uint64_t *end;	     /* records must end at or before this word; the
				word at end is kept for the terminator */
	uint64_t cpu_last;   /* stamp of the last record reserved (CPU records) */
	uint8_t *block;	     /* mapped staging block (NULL: none) */
	uint64_t seq;	     /* sequence number of the staging block */
	uint64_t *counter;   /* records written by this thread (sync()) */
	uint64_t nrec_block; /* records in the staging block */
	uint32_t serial, tid;
	uint32_t guard; /* inside the tracer: pass calls through */
	uint32_t state; /* enum atp_thread_state */
	uint32_t dtor_rounds;
	uint32_t slot;	    /* index in atp_slots, or ATP_MAX_SLOTS */
	uint64_t own_count; /* counter when no slot was free */
	/* --stacks: this thread's stacks (hash -> id), see atp_stacks.c */
	struct atp_stack_ent *stab; /* mmap'd open-addressing table or NULL */
	uint32_t stab_mask, stab_used;
	/* glibc: the non-main heap this thread allocated from last, and the
	 * end of it that the last HEAP record showed (atp_hooks.c) */
	uint64_t heap_lo, heap_hi;
	/* --sample (atp_sample.c): bytes to the next sample point (0: draw
	 * first) and the generator's state (0: not seeded) */
	uint64_t countdown, rng;
	/* ALLOCTRACE_COLLECTOR: calls of this thread's dropped frames that
	 * no delivered LOST record counts yet */
	uint64_t net_lost;
	/* RESIDENT budget (atp_resident.c): the first large release's
	 * stamp, the large releases since, the mean count's cost (ticks,
	 * 1/8 steps) and the generator that picks the counted ones */
	uint64_t res_t0, res_n, res_cost, res_rng;
	/* sampled durations (atp_timed): calls left before the next timed
	   one, and the generator that draws that distance */
	uint32_t untimed;
	uint64_t trng;
	/* the staging block's real end (end is where the pages counted in
	   the header's self_rss end: atp_writer.c's touch_more) and its
	   bytes counted */
	uint64_t *block_end;
	uint32_t touched;
};

enum atp_off_state { ATP_OFF_NONE = 0, ATP_OFF_STARTING, ATP_OFF_RUNNING, ATP_OFF_STOPPED };

enum atp_thread_state { ATP_T_NEW = 0, ATP_T_ACTIVE = 1, ATP_T_EXITED = 2, ATP_T_DEAD = 3 };

struct atp_slot {
	_Alignas(64) uint64_t count; /* written by the owner only */
	_Atomic uint32_t used;
	uint8_t *block; /* the owner's staging block (the collector gets it at exit) */
};

/* A staging block handed to the encoder thread (atp_offload.c), one of a
 * slot's ATP_INFLIGHT.  Only the slot's owner fills it (EMPTY or FREE ->
 * QUEUED); whoever encodes it claims it (QUEUED -> BUSY) and gives it back
 * (BUSY -> FREE, or HELD after a write failure: never reused). */
enum atp_fl_state { ATP_FL_EMPTY = 0, ATP_FL_FREE, ATP_FL_QUEUED, ATP_FL_BUSY, ATP_FL_HELD };
struct atp_flight {
	_Atomic uint32_t state;
	uint32_t used; /* bytes of records after the header */
	uint32_t serial, tid;
	uint64_t seq;
	uint8_t *block;	  /* a staging block of the file (NULL: EMPTY) */
	uint32_t touched; /* its bytes counted in self_rss */
};

struct atp_global {
	struct atp_real real;
	_Atomic int state;
	volatile int recording; /* 1: record calls; 0: paused/stopped */
	int clock;		/* enum atp_clock */
	int timing;		/* ALLOCTRACE_TIMING */
	uint32_t time_every;	/* ALLOCTRACE_TIMING_SAMPLE: time every n-th
				   call of a thread (0: none; with timing: 1) */
	uint64_t timed_min;	/* with time_every: calls of this many bytes or
				   more are timed too (resident_min; else
				   UINT64_MAX) */
	int no_children;
	int glibc;	 /* real allocator is glibc: usable size from
			    the chunk header, chunk flags, BRK records */
	int arena_heaps; /* glibc heap_info readable: HEAP records */
	uint64_t brk0;	 /* glibc: program break at init */
	int quiet;
	int start_on; /* record from the start */
	int deferred; /* dlopen'ed, not preloaded: no init until
			 alloctrace_attach_impl (`record -p`) */
	int attach;   /* initialised by alloctrace_attach_impl */
	/* attach: record's settings ("NAME=VALUE\0...\0"), read instead of
	 * the environment; hook targets that replace dlsym's (0: none) */
	char attach_env[512];
	void *attach_real[ATP_ATTACH_NREAL];
	int stacks;	      /* ALLOCTRACE_STACKS: a stack id per allocation */
	uint32_t stack_depth; /* ALLOCTRACE_STACK_DEPTH */
	/* libunwind's code (--stacks): its mmap/munmap calls are ours, not
	 * the program's, even at thread exit where no guard is set */
	uintptr_t tlib_lo, tlib_len;
	uint32_t block_size;
	int zstd_level; /* ALLOCTRACE_ZSTD_LEVEL; 0: frames not compressed */
	/* ALLOCTRACE_ENCODE=later: a full staging block is copied to the file
	 * as a STAGING unit of its own, not encoded (atp_writer.c) */
	int encode_later;
	/* ... until the file's reserved space reaches this many bytes
	 * (ALLOCTRACE_LATER_MAX, at most a quarter of the free space at
	 * open): then full blocks are encoded in the thread again */
	uint64_t later_max;
	uint64_t later_max_env;
	int net;	      /* ALLOCTRACE_COLLECTOR: frames go to a collector (atp_net.c) */
	uint32_t open_status; /* status bits the header starts with */
	_Atomic uint64_t net_unreported; /* sum of the threads' net_lost */
	uint64_t features;		 /* the header's feature bits */
	uint64_t page;			 /* staging blocks are mapped: page-aligned */
	_Atomic uint64_t next_off;	 /* end of the space reserved in the file */
	uint64_t t0;			 /* clock value of tick 0 */
	uint64_t ticks_hint;
	pid_t pid;
	uint32_t exec_seq;
	uint8_t *hdr;	   /* mapped file header (MAP_SHARED) */
	uint64_t ino, dev; /* the trace file, to detect replacement */
	_Atomic uint64_t next_block;
	_Atomic uint32_t next_serial;
	_Atomic uint64_t exited_records; /* counts of exited threads */
	_Atomic int failed;		 /* a write failed: recording stopped */
	char path[ATP_PATH_MAX];
	/* naming inputs, kept for fork children */
	char dir[ATP_PATH_MAX];	 /* ALLOCTRACE_DIR, or "" */
	char file[ATP_PATH_MAX]; /* ALLOCTRACE_FILE / MTRACE_CTL_FILE, or "" */
	uint64_t sample_rate;	 /* ALLOCTRACE_SAMPLE: mean bytes between samples,
				    0 = trace every call */
	/* ALLOCTRACE_RESIDENT_MIN: releases of blocks of at least this many
	 * usable bytes get a RESIDENT record (0: none); resident_cmin is the
	 * glibc chunk size that may hold one (UINT64_MAX: none) */
	uint64_t resident_min, resident_cmin;
	/* ALLOCTRACE_RESIDENT_BUDGET: the share of a thread's time its
	 * mincore calls may take, in basis points (10000: every large release
	 * is counted); a large release is counted with the probability that
	 * keeps the thread's counting within resident_wait parts of its time
	 * to one (atp_resident_note) */
	uint32_t resident_budget, resident_wait;
	/* ALLOCTRACE_CPU_GAP_US: a record that comes more than cpu_gap ticks
	 * after the thread's previous one (and its first) gets a CPU record
	 * first (atp_cpu_note); INT64_MAX: never.  cpu_gap_ns: the header's */
	uint64_t cpu_gap;
	uint32_t cpu_gap_ns;
	/* ALLOCTRACE_OFFLOAD (atp_offload.c): full blocks are encoded by a
	 * helper thread.  atp_flights[s]: slot s's blocks handed over (apart
	 * from atp_slots: the helper writes them, the owner writes
	 * atp_slots[s].count) */
	int offload;		       /* 1: hand full blocks over */
	_Atomic int off_state;	       /* enum atp_off_state */
	_Atomic uint32_t off_seq;      /* hand-offs so far: the helper's futex word */
	_Atomic uint32_t off_sleeping; /* the helper waits on off_seq */
	_Atomic uint32_t slot_hi;      /* slots claimed so far (high-water mark) */
	/* staging blocks of exited threads: still written by the calls glibc
	 * makes after the last key destructor, then reused by a new thread
	 * once the kernel says the old one is gone.  Thread start and exit
	 * only, never the hot path. */
	atomic_flag spare_lock;
	uint32_t nspare;
	struct atp_zombie {
		uint8_t *block;
		uint32_t tid;
		uint32_t touched;
	} spare[ATP_MAX_SPARE];
	/* the header's self_rss but for the header page: the staging blocks'
	   pages counted (the parent's are gone in a fork child) and the
	   rest (zstd contexts) */
	_Atomic uint64_t self_staging, self_other;
};

extern struct atp_global g ATP_HIDDEN;
/* Per-thread slots and their blocks in flight, apart from g: g has
 * initial values (the boot table), so it is file-backed .data whose
 * pages count in the process's RSS once mapped (the kernel maps file
 * pages around a fault); zero-initialised arrays are .bss, whose pages
 * cost nothing until written (a scan of the slots, sync()'s count,
 * reads the zero page).  576 KiB of g's 604 were these two (with 48
 * threads the library's resident pages went 452 -> 128 KiB). */
extern struct atp_slot atp_slots[ATP_MAX_SLOTS] ATP_HIDDEN;
extern struct atp_flight atp_flights[ATP_MAX_SLOTS][ATP_INFLIGHT] ATP_HIDDEN;
extern __thread struct atp_thread atp_tls ATP_HIDDEN __attribute__((tls_model("initial-exec")));

/* atp_control.c: the exported control API (include/alloctrace.h) */
int alloctrace_start_impl(void);
int alloctrace_stop_impl(void);
int alloctrace_pause_impl(void);
int alloctrace_resume_impl(void);
uint64_t alloctrace_sync_impl(void);
int alloctrace_marker_impl(const char *label);
int alloctrace_attach_impl(const char *dir, uint64_t ticks_per_sec, void **real,
			   const char *settings);

/* atp_init.c */
void atp_init(void) ATP_HIDDEN;
size_t atp_boot_size(const void *p) ATP_HIDDEN;

extern char atp_boot_pool[] ATP_HIDDEN;
#define ATP_BOOT_POOL_SIZE (256u << 10)
static inline int atp_is_boot_ptr(const void *p)
{
	return (const char *)p >= atp_boot_pool &&
	       (const char *)p < atp_boot_pool + ATP_BOOT_POOL_SIZE;
}
void atp_thread_registered(struct atp_thread *t) ATP_HIDDEN;
/* Should this call bypass the tracer?  Also runs init for a call that comes
 * before our constructor, so the program's very first call is recorded. */
int atp_passthrough(struct atp_thread *t) ATP_HIDDEN;

/* atp_writer.c */
int atp_open_trace(void) ATP_HIDDEN;
uint64_t *atp_reserve_slow(struct atp_thread *t, unsigned nwords, uint64_t ts) ATP_HIDDEN;
/* A CPU record stamped ts: the thread's CPU time (a system call), before
 * the record that ends a gap of more than g.cpu_gap ticks (atp_writer.c) */
void atp_cpu_note(struct atp_thread *t, uint64_t ts) ATP_HIDDEN;
void atp_thread_finish(struct atp_thread *t) ATP_HIDDEN;
void atp_spares_forget(void) ATP_HIDDEN;
void atp_fail(const char *what, int err) ATP_HIDDEN;
void atp_fail_at(const char *what, const char *name, int err) ATP_HIDDEN;
void atp_lost(uint64_t n) ATP_HIDDEN;
int atp_write_meta(struct atp_thread *t, unsigned type, uint32_t arg, const void *payload,
		   uint32_t len) ATP_HIDDEN;
/* The same with the record's timestamp given (a meta record that must sort
 * before a call record stamped ts). */
int atp_write_meta_at(struct atp_thread *t, uint64_t ts, unsigned type, uint32_t arg,
		      const void *payload, uint32_t len) ATP_HIDDEN;
uint64_t atp_record_count(void) ATP_HIDDEN;
/* glibc: a BRK record (initial and current program break), stamped ts. */
void atp_write_brk(struct atp_thread *t, uint64_t ts) ATP_HIDDEN;
/* glibc: a HEAP record for the non-main heap holding chunk r (live), if it
 * is not the one this thread's last HEAP record showed. */
void atp_heap_note(struct atp_thread *t, uint64_t ts, const void *r, uint64_t chunk_end) ATP_HIDDEN;
void atp_hdr_set_status(uint32_t bits) ATP_HIDDEN;
/* Bytes, records and call records up to the terminator of a staging block. */
void atp_staging_extent(const uint8_t *b, uint32_t bs, uint32_t *used, uint32_t *nrec,
			uint32_t *calls) ATP_HIDDEN;
/* Every staging block in use or parked (at most cap), for the collector. */
size_t atp_staging_blocks(uint8_t **out, size_t cap) ATP_HIDDEN;
void atp_hdr_clear_status(uint32_t bits) ATP_HIDDEN;
/* A staging block's records as a FRAME in the file (or to the collector):
 * 0 written, 1 dropped (collector buffer full), < 0 -errno; *calls. */
int atp_flush_block(const uint8_t *b, uint32_t serial, uint32_t tid, uint64_t seq, uint32_t used,
		    uint32_t *calls) ATP_HIDDEN;
/* A new staging block of the file, mapped (0 or -errno). */
int atp_new_staging(uint8_t **out) ATP_HIDDEN;
/* Make block b (empty, or its records already in a FRAME) t's STAGING
 * block with t->seq; every step leaves a header a reader accepts.
 * touched: b's bytes counted in self_rss already (0 for a new block). */
void atp_staging_retarget(struct atp_thread *t, uint8_t *b, uint32_t touched) ATP_HIDDEN;
/* d bytes more (or fewer) of the recorder's own memory resident: part
 * (&g.self_staging or &g.self_other) and the header's self_rss. */
void atp_self_rss_add(_Atomic uint64_t *part, int64_t d) ATP_HIDDEN;
/* The header's self_rss when it is written: the header page and both
 * parts. */
uint64_t atp_self_rss(void) ATP_HIDDEN;

/* atp_offload.c: full staging blocks encoded by a helper thread */
/* 0: t's full block (used bytes of records) was handed over and t has
 * a fresh staging block with t->seq + 1; -1: not (the caller encodes). */
int atp_offload_handoff(struct atp_thread *t, uint32_t used) ATP_HIDDEN;
/* The library destructor: encode what is still handed over, hand over
 * nothing more. */
void atp_offload_drain(void) ATP_HIDDEN;
void atp_offload_after_fork_child(void) ATP_HIDDEN;

/* atp_encode.c: a staging block's records as a v2 FRAME unit */
struct atp_frame {
	const uint8_t *data; /* header + payload, padded */
	size_t len;
	struct atp_zctx *ctx;
};
void atp_encode_init(void) ATP_HIDDEN;
void atp_encode_after_fork(void) ATP_HIDDEN;
int atp_encode_block(const uint8_t *recs, uint32_t used, uint32_t serial, uint32_t tid,
		     uint64_t seq, struct atp_frame *f) ATP_HIDDEN;
void atp_encode_done(struct atp_frame *f) ATP_HIDDEN; /* gives the context back */

/* atp_net.c: ALLOCTRACE_COLLECTOR (docs/NET_FORMAT.md) */
int atp_net_config(const char *spec, uint64_t buffer_kb, uint64_t timeout_ms) ATP_HIDDEN;
int atp_net_open(void) ATP_HIDDEN;	   /* connect, send the hello with g.hdr */
const char *atp_net_name(void) ATP_HIDDEN; /* "tcp://ADDR:PORT" */
/* The spool file of an earlier image of this pid: send its staging blocks
 * and header as the rest of that image's stream, then delete it. */
void atp_net_ship_file(const char *path) ATP_HIDDEN;
/* 0 queued, 1 dropped (buffer full, or the stream is over): count it lost */
int atp_net_send(uint32_t type, const void *payload, size_t len) ATP_HIDDEN;
/* The end of the stream: the staging blocks and the final header. */
void atp_net_fini(uint8_t *const *blocks, size_t nblocks) ATP_HIDDEN;
/* The same for `record -p` detaching; the connection closes. */
void atp_net_stop(uint8_t *const *blocks, size_t nblocks) ATP_HIDDEN;
void atp_net_after_fork_child(void) ATP_HIDDEN;
/* The count of a LOST record that starts a staging block, else 0. */
uint64_t atp_first_lost(const uint8_t *block) ATP_HIDDEN;

/* atp_stacks.c (--stacks) */
/* Settings read at init (guard set); disables stacks if unsupported. */
void atp_stacks_init(void) ATP_HIDDEN;
/* From our constructor: load libunwind (RTLD_LOCAL).  Calls before it get
 * no stack. */
void atp_stacks_load(void) ATP_HIDDEN;
/* The id of the caller's stack (0: none), writing its STACK record (and
 * MODULE records when the module map changed) stamped ts first if this
 * thread has not used it yet.  Guard set. */
uint32_t atp_stack_id(struct atp_thread *t, uint64_t ts) ATP_HIDDEN;
/* Thread exit / fork child: drop the thread's table (its stacks are
 * written again in the child's file or in a later life of the thread). */
void atp_stacks_thread_done(struct atp_thread *t) ATP_HIDDEN;
void atp_stacks_after_fork_child(void) ATP_HIDDEN;

/* atp_sample.c (--sample): see there.  The set of sampled live blocks:
 * buckets of ATP_SSET_WAYS pointers, 0 = empty slot. */
#define ATP_SSET_WAYS 4
struct atp_sset {
	uint32_t shift, bits; /* bucket = hash >> shift; 2^bits buckets */
	uint64_t pad[7];      /* slots start on a cache line */
	_Atomic uint64_t slot[];
};
extern _Atomic(struct atp_sset *) atp_sset_cur ATP_HIDDEN;
void atp_sample_init(uint64_t rate, uint64_t seed) ATP_HIDDEN;
void atp_sample_after_fork_child(void) ATP_HIDDEN;
/* The allocation reached the sample point (size >= countdown): 1 if it is
 * sampled (a new thread's first allocation may not be); draws the next. */
int atp_sample_hit(struct atp_thread *t, size_t size) ATP_HIDDEN;
void atp_sset_add(uint64_t p) ATP_HIDDEN; /* guard set */
void atp_sset_del(uint64_t p) ATP_HIDDEN; /* guard set */

static inline _Atomic uint64_t *atp_sset_bucket(struct atp_sset *s, uint64_t p)
{
	return &s->slot[(size_t)(((p >> 4) * 0x9e3779b97f4a7c15ULL) >> s->shift) * ATP_SSET_WAYS];
}

/* Is p (not NULL) a sampled live block?  No lock: one cache line. */
static inline int atp_sset_has(uint64_t p)
{
	struct atp_sset *s = atomic_load_explicit(&atp_sset_cur, memory_order_acquire);
	_Atomic uint64_t *b = atp_sset_bucket(s, p);
	uint64_t b0 = atomic_load_explicit(&b[0], memory_order_relaxed);
	uint64_t b1 = atomic_load_explicit(&b[1], memory_order_relaxed);
	uint64_t b2 = atomic_load_explicit(&b[2], memory_order_relaxed);
	uint64_t b3 = atomic_load_explicit(&b[3], memory_order_relaxed);
	return (b0 == p) | (b1 == p) | (b2 == p) | (b3 == p);
}

/* The unsampled fast path: 1 (not sampled) with the countdown moved on. */
static inline int atp_sample_skip(struct atp_thread *t, size_t size)
{
	if (ATP_LIKELY(size < t->countdown)) {
		t->countdown -= size;
		return 1;
	}
	return !atp_sample_hit(t, size);
}

/* atp_resident.c: the RESIDENT record (pages of ptr resident, mincore)
 * before the release of a block of usable bytes; guard set. */
void atp_resident_note(struct atp_thread *t, uint64_t ts, const void *ptr,
		       uint64_t usable) ATP_HIDDEN;
uint64_t atp_resident_usable_other(const void *ptr) ATP_HIDDEN;

/* The usable size of ptr (not NULL) if its release gets a RESIDENT
 * record, else 0.  glibc: the chunk header word, which free reads
 * anyway: no lookup, one compare on the small-block path.  Other
 * allocators: only page-aligned blocks are asked (their large blocks are
 * page runs; a small block is rarely page-aligned). */
static inline uint64_t atp_resident_size(const void *ptr)
{
	if (ATP_LIKELY(g.glibc)) {
		size_t h = ((const size_t *)ptr)[-1];
		if (ATP_LIKELY((h & ~(size_t)7) < g.resident_cmin))
			return 0;
		uint64_t u = (h & ~(size_t)7) - ((h & 2) ? 2 * sizeof(size_t) : sizeof(size_t));
		return u >= g.resident_min ? u : 0;
	}
	if (ATP_LIKELY((uintptr_t)ptr & (g.page - 1)))
		return 0;
	return atp_resident_usable_other(ptr);
}

/* atp_util.c: no-libc-allocation helpers */
size_t atp_strlcpy(char *dst, const char *src, size_t n) ATP_HIDDEN;
size_t atp_strlcat(char *dst, const char *src, size_t n) ATP_HIDDEN;
char *atp_utoa(uint64_t v, char *buf) ATP_HIDDEN; /* returns buf; buf >= 21 */
void atp_message(const char *a, const char *b, const char *c, int err) ATP_HIDDEN;
uint64_t atp_mono_ns(void) ATP_HIDDEN; /* out of line: keeps the hooks' fast path frameless */

/* The clock every record uses (src/platform/plat_clock.h). */
static inline uint64_t atp_now(void)
{
	if (ATP_LIKELY(g.clock != ATP_CLOCK_MONO))
		return plat_hw_ticks();
	return atp_mono_ns();
}

/* ATR_FLAG_TIMED if this call is timed: every call with --timing, else
 * about one call in time_every of the thread (sampled durations: convert
 * takes the allocator's typical time out of the gaps around the others,
 * docs/TRACE_FORMAT.md "Sampled durations").  A countdown: a thread's
 * first call finds it 0 and draws it, so no "initialised?" test.  The
 * distance to the next timed call is drawn from [n/2, 3n/2): a fixed one
 * aliases with the program's own period (a loop of malloc and free timed
 * every 32nd call times only its mallocs). */
static inline unsigned atp_timed(struct atp_thread *t)
{
	if (ATP_LIKELY(t->untimed != 0)) {
		t->untimed--;
		return g.timing ? ATR_FLAG_TIMED : 0u;
	}
	uint32_t n = g.time_every;
	if (!n) {
		t->untimed = UINT32_MAX;
		return g.timing ? ATR_FLAG_TIMED : 0u;
	}
	/* a thread's first call (the generator unseeded) is not timed: it
	   sets up the thread's arena and caches, unlike the others */
	unsigned first = t->trng == 0;
	t->trng = t->trng * 6364136223846793005ull + 1442695040888963407ull;
	t->untimed = n / 2 + (uint32_t)((t->trng >> 33) % n);
	return first ? 0u : ATR_FLAG_TIMED;
}

/* atp_timed for a call of size bytes (an allocation's request, the
 * usable size of a freed block or 0): large ones are always timed.  They
 * are rare, and they are where an allocator's long calls are (glibc's
 * free of a large chunk consolidates its fastbins: one free took 160 ms of
 * perl's 1.7 s), which one call in time_every would seldom see. */
static inline unsigned atp_timed_size(struct atp_thread *t, uint64_t size)
{
	if (ATP_UNLIKELY(size >= g.timed_min))
		return ATR_FLAG_TIMED;
	return atp_timed(t);
}

/* Word 0 of a record.  Ticks before t0 (unsynchronised clocks) clamp to 0. */
static inline uint64_t atp_w0(uint64_t now, unsigned type_flags)
{
	uint64_t d = now - g.t0;
	if (ATP_UNLIKELY((int64_t)d < 0))
		d = 0;
	return (d << ATR_TS_SHIFT) | type_flags;
}

/* Room for n words (a record stamped ts) in the staging block, or NULL.
 * ts lets a thread's first record be preceded by an earlier THREAD_START. */
static inline uint64_t *atp_reserve(struct atp_thread *t, unsigned n, uint64_t ts)
{
	if (ATP_UNLIKELY((int64_t)(ts - t->cpu_last) > (int64_t)g.cpu_gap))
		atp_cpu_note(t, ts);
	t->cpu_last = ts;
	uint64_t *p = t->cur;
	if (ATP_UNLIKELY(p + n > t->end))
		return atp_reserve_slow(t, n, ts);
	return p;
}

/* Publish a record whose words 1..n-1 are written: the terminator goes
 * first and word 0 last, so a reader (or a kill -9) never sees half a
 * record. */
static inline void atp_commit(struct atp_thread *t, uint64_t *p, unsigned n, uint64_t w0)
{
	p[n] = 0;
	ATP_BARRIER();
	p[0] = w0;
	t->cur = p + n;
	t->nrec_block++;
	++*t->counter;
}

#endif
