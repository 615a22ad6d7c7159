/* rp_replay.c - see rp_replay.h. */
#define _GNU_SOURCE
#include "replay/rp_replay.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/futex.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "plat_clock.h"
#include "plat_cpus.h"
#include "plat_prefetch.h"

/* ------------------------------------------------------------- clock */
/* The hardware ticks where they are a usable clock (plat_clock.h), else
 * CLOCK_MONOTONIC: use_hw is set once by clock_init() before any thread. */
static int use_hw = -1;

uint64_t rp_ticks(void)
{
	if (__builtin_expect(use_hw > 0, 1))
		return plat_hw_ticks();
	return plat_mono_ns();
}

static const char *clock_init(void)
{
	if (use_hw < 0)
		use_hw = plat_hw_ticks_usable();
#if defined(__x86_64__) || defined(__i386__)
	return use_hw ? "tsc" : "clock_gettime";
#elif defined(__aarch64__)
	return "cntvct";
#else
	return "clock_gettime";
#endif
}

/* The clock around one call.  A plain rdtsc does not wait for the call:
 * on this AMD EPYC, back-to-back reads cost ~24 ticks and every malloc and
 * free of glibc, jemalloc, tcmalloc and mimalloc measured exactly that
 * (the call runs in the shadow of the rdtsc latency), so per-call numbers
 * told allocators apart only by noise, and `--allocator none` "cost" as
 * much per call as glibc.  RP_TIMING_SERIAL fences the reads
 * (plat_hw_ticks_fenced()), so the call runs between them, and subtracts
 * the fenced floor measured at start (timer_floor()). */
static inline uint64_t tick_fenced(void)
{
	if (__builtin_expect(use_hw > 0, 1))
		return plat_hw_ticks_fenced();
	return plat_mono_ns();
}

static inline uint64_t tick(enum rp_timing mode)
{
	if (mode == RP_TIMING_SERIAL || mode == RP_TIMING_SAMPLE)
		return tick_fenced();
	if (mode == RP_TIMING_FAST)
		return rp_ticks();
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Median of back-to-back reads in this mode: what an empty call measures. */
static uint64_t timer_floor(enum rp_timing mode)
{
	enum { N = 4001 };
	static uint64_t d[N];
	if (mode == RP_TIMING_OFF)
		return 0;
	for (int i = 0; i < 1000; i++) {
		uint64_t a = tick(mode);
		d[0] = tick(mode) - a;
	}
	for (int i = 0; i < N; i++) {
		uint64_t a = tick(mode);
		d[i] = tick(mode) - a;
	}
	qsort(d, N, sizeof(d[0]), cmp_u64);
	return d[N / 2];
}

/* ---------------------------------------------------------- histogram */
static inline unsigned bucket_of(uint64_t v)
{
	if (v < 16)
		return (unsigned)v;
	unsigned e = 63u - (unsigned)__builtin_clzll(v);
	return 16 + (e - 4) * 8 + (unsigned)((v >> (e - 3)) & 7);
}
static uint64_t bucket_low(unsigned b)
{
	if (b < 16)
		return b;
	unsigned e = (b - 16) / 8 + 4, sub = (b - 16) % 8;
	return (uint64_t)(8 + sub) << (e - 3);
}

uint64_t rp_percentile(const struct rp_callstat *s, double pct)
{
	if (!s->timed)
		return 0;
	uint64_t want = (uint64_t)((double)s->timed * pct / 100.0);
	if (want >= s->timed)
		want = s->timed - 1;
	uint64_t acc = 0;
	for (unsigned b = 0; b < RP_HIST_BUCKETS; b++) {
		acc += s->hist[b];
		if (acc > want) {
			uint64_t v = bucket_low(b);
			return v > s->max ? s->max : v;
		}
	}
	return s->max;
}

uint64_t rp_stat_avg(const struct rp_callstat *s)
{
	return s->timed ? s->sum / s->timed : 0;
}

uint64_t rp_stat_total(const struct rp_callstat *s)
{
	if (!s->timed || s->timed == s->count)
		return s->sum;
	return (uint64_t)((double)s->sum * (double)s->count / (double)s->timed + 0.5);
}

static inline void stat_add(struct rp_callstat *s, uint64_t d)
{
	s->count++;
	s->timed++;
	s->sum += d;
	if (d > s->max)
		s->max = d;
	s->hist[bucket_of(d)]++;
}

/* ---------------------------------------------------------- allocator */
#define FN_(NAME, name, type, op, args, ret, params) ret(*name) params;
struct alloc_fns {
	ATR_CALLS(FN_)
	int (*trim)(size_t);
	/* the program's controls: NULL when the allocator under test does
	   not export them (glibc's would act on another heap) */
	int (*mallopt)(int, int);
	int (*malloc_trim)(size_t);
	size_t (*usable)(void *);
};
#undef FN_
static struct alloc_fns A;

static void *emu_reallocarray(void *p, size_t n, size_t s)
{
	size_t t;
	if (__builtin_mul_overflow(n, s, &t)) {
		errno = ENOMEM;
		return NULL;
	}
	return A.realloc(p, t);
}
static void *emu_memalign(size_t al, size_t n)
{
	void *p = NULL;
	return A.posix_memalign(&p, al < sizeof(void *) ? sizeof(void *) : al, n) ? NULL : p;
}
static void *emu_valloc(size_t n)
{
	return emu_memalign((size_t)sysconf(_SC_PAGESIZE), n);
}
static void *emu_pvalloc(size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	return emu_memalign(pg, (n + pg - 1) & ~(pg - 1));
}

static const char *lib_of(void *fn)
{
	Dl_info di;
	if (fn && dladdr(fn, &di) && di.dli_fname)
		return di.dli_fname;
	return "";
}

/* Resolve the allocator's entry points; any that come from another library
 * than malloc's (e.g. glibc's pvalloc under an allocator that lacks it)
 * would mix heaps, so they are emulated with the allocator's own calls. */
static uint64_t resolve_allocator(void)
{
	uint64_t emulated = 0;
#define R(NAME, name, type, op, args, ret, params)                                                 \
	A.name = (__typeof__(A.name))dlsym(RTLD_DEFAULT, #name);
	ATR_CALLS(R)
#undef R
	A.trim = malloc_trim;
	if (!A.malloc || !A.free || !A.calloc || !A.realloc || !A.posix_memalign) {
		A.malloc = malloc;
		A.free = free;
		A.calloc = calloc;
		A.realloc = realloc;
		A.posix_memalign = posix_memalign;
	}
	const char *ml = lib_of((void *)A.malloc);
#define SAME(n) (A.n && !strcmp(lib_of((void *)A.n), ml))
	if (!SAME(reallocarray)) {
		A.reallocarray = emu_reallocarray;
		emulated |= 1u << AWL_OP_REALLOCARRAY;
	}
	if (!SAME(memalign)) {
		A.memalign = emu_memalign;
		emulated |= 1u << AWL_OP_MEMALIGN;
	}
	if (!SAME(aligned_alloc)) {
		A.aligned_alloc = emu_memalign;
		emulated |= 1u << AWL_OP_ALIGNED_ALLOC;
	}
	if (!SAME(valloc)) {
		A.valloc = emu_valloc;
		emulated |= 1u << AWL_OP_VALLOC;
	}
	if (!SAME(pvalloc)) {
		A.pvalloc = emu_pvalloc;
		emulated |= 1u << AWL_OP_PVALLOC;
	}
	A.mallopt = (int (*)(int, int))dlsym(RTLD_DEFAULT, "mallopt");
	A.malloc_trim = (int (*)(size_t))dlsym(RTLD_DEFAULT, "malloc_trim");
	A.usable = (size_t(*)(void *))dlsym(RTLD_DEFAULT, "malloc_usable_size");
	if (!SAME(mallopt))
		A.mallopt = NULL;
	if (!SAME(malloc_trim))
		A.malloc_trim = NULL;
	if (!SAME(usable))
		A.usable = NULL;
#undef SAME
	return emulated;
}

/* ------------------------------------------------------------ threads */
struct prog {
	_Atomic uint64_t done; /* ops completed */
	_Atomic uint32_t fut;  /* futex word, bumped when waiters are woken */
	_Atomic uint32_t waiters;
	_Atomic int64_t live;	  /* requested bytes live, this thread's view */
	_Atomic uint64_t wake_at; /* smallest op count a sleeper waits for */
	char pad[64 - 32];
};

struct slot {
	void *p;
	uint64_t size;
};

/* A mapping slot: where the replay mapped it (NULL: its mmap failed, or
 * not made), and its AWL_MF_* flags. */
struct mslot {
	uint8_t *base;
	uint32_t mf;
};

/* Per workload thread, for the whole run: small (1000s of threads). */
struct rthread {
	struct replay *rp;
	uint32_t t;
	int exited;		/* its THREAD_EXIT op ran (or its stream ended) */
	int on_main;		/* runs on the replay's main thread (no pthread) */
	_Atomic uint32_t ended; /* on_main: its run_thread returned */
	pthread_t th;
	_Atomic uint32_t jstate; /* JS_*: who joins it (join_ended, reap) */
};
enum { JS_FREE, JS_JOINING, JS_JOINED };

/* Ops decoded at a THINK, up to RP_AHEAD, the next THINK or the first op
 * that is not a call (a WAIT among them), run from here before the
 * stream's next: the frees among them are warmed while the think time
 * runs (the program's calls that close together: gaps under
 * RP_THINK_MIN_NS add up to one THINK). */
#define RP_AHEAD 16
struct ahead {
	struct awl_op q[RP_AHEAD];
	int n, i;
	int end, end_r; /* the stream ended (end_r: 0 or an error) after q */
};

/* A running replay thread's own state, in a mapping of the pool; merged
 * into the result when the thread ends, so memory follows the live
 * threads. */
struct rlocal {
	struct rp_callstat st[RP_NTYPES + 1]; /* ~47 KiB: a page or two per type */
	uint32_t used;			      /* bit k: st[k] written (lstat_add) */
	uint32_t hist_used;		      /* bit k: st[k].hist too */
	struct rp_xstat x[RP_NXOPS];
	uint64_t map_bytes, usable_trace, usable_bytes;
	uint64_t ops, waits, sleeps, wait_ns, unexpected_ok, unexpected_fail;
	uint64_t create_ns, think_ns, think_debt, think_shared, think_own, warmed;
	size_t wpos;
	uint8_t *wset; /* think working set (RP_THINK_WSET bytes) */
	struct ahead ah;
};

/* The state's pages are touched only for the call types a thread makes
 * (L->used): on this VM's kernel even a read of an untouched anonymous
 * page makes it resident (no shared zero page), and reading or zeroing
 * every type's histogram cost ~47 KiB of RSS per live replay thread. */
static inline void lstat_add(struct rlocal *L, unsigned k, uint64_t d)
{
	L->used |= 1u << k;
	L->hist_used |= 1u << k;
	stat_add(&L->st[k], d);
}

/* A call counted without its duration (--timing off: all 0): its
 * histogram, two or three pages, stays untouched. */
static inline void lstat_count(struct rlocal *L, unsigned k)
{
	L->used |= 1u << k;
	L->st[k].count++;
}
_Static_assert(RP_NTYPES < 32, "rlocal.used has a bit per type");

/* A state mapping taken from the pool: zeroes what the thread before
 * wrote, not every page. */
static void rlocal_clear(struct rlocal *L)
{
	for (unsigned k = 0; k <= RP_NTYPES; k++)
		if (L->hist_used >> k & 1)
			memset(&L->st[k], 0, sizeof(L->st[k]));
		else if (L->used >> k & 1)
			memset(&L->st[k], 0, offsetof(struct rp_callstat, hist));
	_Static_assert(offsetof(struct rlocal, st) == 0, "st first: the rest is zeroed whole");
	memset(&L->used, 0, sizeof(*L) - offsetof(struct rlocal, used));
}

/* Mappings kept for reuse per kind (struct replay.pool). */
#define RP_POOL_MAX 64
enum { POOL_STATE, POOL_DECODER };

struct replay {
	awl_file *f;
	const struct rp_opts *o;
	struct slot *slots;
	size_t slots_bytes;
	struct mslot *maps;
	size_t maps_bytes;
	struct prog *prog;
	struct rthread *th;
	uint32_t n;
	uint32_t version;
	_Atomic uint32_t go;
	_Atomic int abort;
	_Atomic int stop_sampler;
	size_t page;
	enum rp_touch touch;  /* o->touch, AUTO resolved */
	uint64_t timer_floor; /* ticks an empty timed region measures */
	unsigned spin, ncpu;
	uint64_t step_ps; /* think work: picoseconds per step (calibrate_think) */
	int warm;	  /* fetch the blocks a THINK's next ops free, within it */
	/* RP_THINK_ON: picoseconds per rp_ticks() tick (0: the replay's own
	   work is not taken out of think time), and what two back-to-back
	   reads measure */
	uint64_t own_tick_ps, own_floor;
	int think_share; /* RP_THINK_SHARE: scale gaps while oversubscribed */
	int membar;	 /* membarrier(PRIVATE_EXPEDITED) registered */
	pthread_attr_t attr;
	_Atomic uint32_t running; /* replay threads between start and end */
	_Atomic uint32_t live;	  /* between spawn and exit op, as the trace counts */
	_Atomic uint32_t max_live;
	_Atomic uint64_t spawned; /* threads created (counted before the create) */
	_Atomic uint64_t overlap_checked, overlap_diff;
	_Atomic uint64_t dec_bytes, dec_peak;	  /* decoder buffers */
	_Atomic uint64_t state_bytes, state_peak; /* stats + think sets */
	/* a finished thread's mappings (its state, its decoder buffer), for
	   the next thread to start: unmapping them cost a TLB shootdown on
	   every core per thread exit; so many are mapped as threads were
	   alive at once.  Under lock. */
	struct pooled {
		void *p;
		size_t len;
	} pool[2][RP_POOL_MAX]; /* [POOL_STATE], [POOL_DECODER] */
	uint32_t npool[2];
	_Atomic uint64_t exit_ns;
	_Atomic uint64_t joined; /* threads joined, by the reaper or a waiter */
	/* finished threads, for the reaper (main) */
	pthread_mutex_t lock; /* also guards res and err */
	uint32_t *zombies;
	size_t nz;
	_Atomic uint32_t zseq; /* futex word: bumped per finished thread */
	struct rp_result *res;
	int err; /* the first failure's atr_err, 0 none */
	char errmsg[200];
};

static void add_peak(_Atomic uint64_t *cur, _Atomic uint64_t *peak, uint64_t n)
{
	uint64_t d = atomic_fetch_add(cur, n) + n, m = atomic_load(peak);
	while (d > m && !atomic_compare_exchange_weak(peak, &m, d))
		;
}

/* A private anonymous mapping of at least *len bytes for kind (*len: its
 * size), from the pool if one is there (*reused set: its old contents
 * are kept), else a new one counted in *bytes and *peak.  NULL if mmap
 * fails. */
static void *pool_get(struct replay *rp, int kind, size_t *len, int *reused,
		      _Atomic uint64_t *bytes, _Atomic uint64_t *peak)
{
	void *p = NULL;
	pthread_mutex_lock(&rp->lock);
	struct pooled *pl = rp->pool[kind];
	uint32_t best = UINT32_MAX;
	for (uint32_t i = 0; i < rp->npool[kind]; i++)
		if (pl[i].len >= *len && (best == UINT32_MAX || pl[i].len < pl[best].len))
			best = i;
	if (best != UINT32_MAX) {
		p = pl[best].p;
		*len = pl[best].len;
		pl[best] = pl[--rp->npool[kind]];
	}
	pthread_mutex_unlock(&rp->lock);
	*reused = p != NULL;
	if (p)
		return p;
	p = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	add_peak(bytes, peak, *len);
	return p;
}

/* Back to kind's pool; unmapped (and uncounted from *bytes) when it is
 * full. */
static void pool_put(struct replay *rp, int kind, void *p, size_t len, _Atomic uint64_t *bytes)
{
	pthread_mutex_lock(&rp->lock);
	if (rp->npool[kind] < RP_POOL_MAX) {
		rp->pool[kind][rp->npool[kind]].p = p;
		rp->pool[kind][rp->npool[kind]++].len = len;
		p = NULL;
	}
	pthread_mutex_unlock(&rp->lock);
	if (p) {
		munmap(p, len);
		atomic_fetch_sub(bytes, len);
	}
}

static long futex(_Atomic uint32_t *uaddr, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, (uint32_t *)uaddr, op, val, ts, NULL, 0);
}

/* A sleeper registers (waiters, wake_at) and then re-reads `done`; the
 * publisher stores `done` and then reads `waiters`.  That store-load pair
 * needs a full barrier on both sides; membarrier() puts the publisher's
 * half on the sleeper (the slow path), so publishing stays a plain store
 * and a load per op.  Without membarrier the publisher fences. */
static int membarrier_register(void)
{
#ifdef SYS_membarrier
	/* MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED = 16, ..._PRIVATE_EXPEDITED = 8 */
	return syscall(SYS_membarrier, 16, 0, 0) == 0;
#else
	return 0;
#endif
}
static void membarrier_now(void)
{
#ifdef SYS_membarrier
	syscall(SYS_membarrier, 8, 0, 0);
#endif
}

static void abort_all(struct replay *rp, int code, const char *msg)
{
	pthread_mutex_lock(&rp->lock);
	if (!rp->err) {
		rp->err = code;
		snprintf(rp->errmsg, sizeof(rp->errmsg), "%s", msg);
	}
	pthread_mutex_unlock(&rp->lock);
	atomic_store(&rp->abort, 1);
	for (uint32_t i = 0; i < rp->n; i++) {
		struct prog *p = &rp->prog[i];
		atomic_store(&p->done, UINT64_MAX);
		atomic_fetch_add(&p->fut, 1);
		futex(&p->fut, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL);
	}
}

static void wait_for(struct replay *rp, struct rlocal *me, uint32_t t, uint64_t need)
{
	struct prog *p = &rp->prog[t];
	if (atomic_load_explicit(&p->done, memory_order_acquire) >= need)
		return;
	me->waits++;
	uint64_t t0 = plat_mono_ns();
	/* Spin only while every running replay thread can have a core: with
	   more threads than cores the thread we wait for may need ours, so
	   yield it instead (RP_WAIT_YIELDS). */
	int spin = atomic_load_explicit(&rp->running, memory_order_relaxed) <= rp->ncpu;
	for (unsigned i = 0, n = spin ? rp->spin : RP_WAIT_YIELDS; i < n; i++) {
		if (spin)
			plat_cpu_relax();
		else
			sched_yield();
		if (atomic_load_explicit(&p->done, memory_order_acquire) >= need) {
			me->wait_ns += plat_mono_ns() - t0;
			return;
		}
	}
	atomic_fetch_add(&p->waiters, 1);
	while (atomic_load_explicit(&p->done, memory_order_acquire) < need) {
		uint32_t v = atomic_load(&p->fut);
		uint64_t w = atomic_load(&p->wake_at);
		while (need < w && !atomic_compare_exchange_weak(&p->wake_at, &w, need))
			;
		if (rp->membar)
			membarrier_now();
		if (atomic_load(&p->done) >= need)
			break;
		/* a guard only: the futex is woken when done reaches wake_at */
		struct timespec ts = {0, 100000000};
		me->sleeps++;
		futex(&p->fut, FUTEX_WAIT_PRIVATE, v, &ts);
	}
	atomic_fetch_sub(&p->waiters, 1);
	me->wait_ns += plat_mono_ns() - t0;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static long thread_nivcsw(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_THREAD, &ru) != 0)
		return 0;
	return ru.ru_nivcsw;
}

static inline void publish(struct replay *rp, uint32_t t, uint64_t done)
{
	struct prog *p = &rp->prog[t];
	atomic_store_explicit(&p->done, done, memory_order_release);
	if (rp->membar)
		atomic_signal_fence(memory_order_seq_cst);
	else
		atomic_thread_fence(memory_order_seq_cst);
	if (__builtin_expect(atomic_load_explicit(&p->waiters, memory_order_relaxed) != 0, 0) &&
	    done >= atomic_load_explicit(&p->wake_at, memory_order_relaxed)) {
		atomic_store(&p->wake_at, UINT64_MAX);
		atomic_fetch_add(&p->fut, 1);
		futex(&p->fut, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL);
	}
}

/* kib: a TOUCH op's field before this allocation (KiB + 1 the program had
 * resident of the block; 0: none or unknown). */
static inline void touch(struct replay *rp, void *p, uint64_t size, uint64_t kib)
{
	if (!p || !size)
		return;
	volatile char *c = p;
	if (rp->touch == RP_TOUCH_TRACE && kib) {
		/* the first pages the block overlaps, as many as were resident */
		uint64_t n = ((kib - 1) * 1024 + rp->page - 1) / rp->page;
		uintptr_t a = (uintptr_t)p, end = a + size, q = (a & ~(uintptr_t)(rp->page - 1));
		if (!n)
			return;
		c[0] = 1;
		while (--n && (q += rp->page) < end)
			*(volatile char *)q = 1;
	} else if (rp->touch == RP_TOUCH_ALL) {
		memset(p, 0x5a, size);
	} else if (rp->touch != RP_TOUCH_NONE) {
		for (uint64_t i = 0; i < size; i += rp->page)
			c[i] = 1;
		c[size - 1] = 1;
	}
}

static inline uint64_t mul_sat(uint64_t a, uint64_t b)
{
	uint64_t r;
	return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

/* One step of think work: 16 cache lines of the working set written. */
static inline size_t think_step(volatile uint8_t *w, size_t pos)
{
	for (int i = 0; i < 16; i++) {
		w[pos]++;
		pos = (pos + 64) & (RP_THINK_WSET - 1);
	}
	return pos;
}

/* Picoseconds per think_step on this machine: the fastest of a few
 * timed runs (the others were preempted). */
static uint64_t calibrate_think(void)
{
	static uint8_t w[RP_THINK_WSET];
	uint64_t best = UINT64_MAX;
	size_t pos = 0;
	for (int r = 0; r < 7; r++) {
		uint64_t t0 = plat_mono_ns();
		for (int i = 0; i < 4096; i++)
			pos = think_step(w, pos);
		uint64_t d = plat_mono_ns() - t0;
		if (d < best)
			best = d;
	}
	best = best * 1000 / 4096;
	return best ? best : 1;
}

/* A block that an op after a THINK frees or reallocates, fetched while
 * the think time runs.  The program had just used it (read its fields,
 * dropped its last reference), so the allocator found its header and
 * first line in the cache; the replay, which has not touched it since its
 * allocation, would pay that miss inside the call (perl: free 7x the
 * program's, bench/fidelity/RESULTS.md "The allocator's time in sampled
 * traces; blocks warmed before their free").  The slot is this thread's
 * to read: the ops ahead stop at a WAIT, so a block from another thread
 * was published before, and a slot no op ahead frees is not read. */
static inline void warm_next(const struct replay *rp, struct rlocal *me, const struct awl_op *op)
{
	const char *p;
	if (op->code == AWL_OP_DROP)
		p = rp->slots[op->a].p;
	else {
		unsigned args = awl_op_args(op->code);
		if ((args != ATR_ARGS_PTR && args != ATR_ARGS_OLD && args != ATR_ARGS_OLD_NMEMB) ||
		    !op->a)
			return;
		p = rp->slots[op->a - 1].p;
	}
	if (p) {
		/* prefetches: the header below p may be unmapped */
		plat_prefetch(p - 8);
		plat_prefetch(p);
		me->warmed++;
	}
}

static void read_ahead(const struct replay *rp, struct rlocal *me, struct awl_stream *s)
{
	struct ahead *a = &me->ah;
	a->n = a->i = 0;
	while (a->n < RP_AHEAD) {
		struct awl_op *op = &a->q[a->n];
		int r = awl_stream_next_inl(s, op);
		if (r <= 0) {
			a->end = 1;
			a->end_r = r;
			break;
		}
		a->n++;
		warm_next(rp, me, op);
		if (op->code != AWL_OP_DROP && op->code != AWL_OP_TOUCH &&
		    (op->code < 1 || op->code > AWL_OP_CALL_LAST))
			break;
	}
}

static inline int next_op(struct awl_stream *s, struct ahead *a, struct awl_op *op)
{
	if (a->i < a->n) {
		*op = a->q[a->i++];
		return 1;
	}
	if (__builtin_expect(a->end, 0)) {
		a->end = 0;
		return a->end_r;
	}
	return awl_stream_next_inl(s, op);
}

/* A gap while more replay threads run than there are cores: the traced
 * thread, one of as many, had about cores/running of a core then (the
 * rest of the gap it waited for one, and so will this replay's thread:
 * the replay runs as many threads as the trace did).  So only that
 * share is spent, as work counted in steps rather than on the clock,
 * since being preempted here is that waiting, not work done; past
 * RP_THINK_SPIN_MAX_NS of work the rest is slept, as in think(). */
static void think_shared(struct replay *rp, struct rlocal *me, uint64_t ns, uint32_t run)
{
	uint64_t t0 = plat_mono_ns();
	ns = ns / run * rp->ncpu + ns % run * rp->ncpu / run;
	uint64_t work = ns > RP_THINK_SPIN_MAX_NS ? RP_THINK_SPIN_MAX_NS : ns;
	uint64_t steps = work * 1000 / rp->step_ps;
	volatile uint8_t *w = me->wset;
	size_t pos = me->wpos;
	for (uint64_t i = 0; i < steps; i++)
		pos = think_step(w, pos);
	me->wpos = pos;
	if (ns > work) {
		uint64_t rest = ns - work;
		struct timespec ts = {(time_t)(rest / 1000000000u), (long)(rest % 1000000000u)};
		while (nanosleep(&ts, &ts) == EINTR)
			;
	}
	me->think_ns += plat_mono_ns() - t0;
	me->think_shared++;
}

/* The traced thread's time between calls: written through a per-thread
 * working set, a cache line at a time, until the clock says it is spent
 * (the first RP_THINK_SPIN_MAX_NS of it; the rest is slept).  With ahead
 * (the thread's stream), the ops up to the next THINK are read first and
 * the blocks they free fetched, within the gap (read_ahead).
 * (Not the thread's own blocks: another thread may free them meanwhile,
 * the workload orders only the calls.)  Overshoot, and the replay's own
 * work between calls (own_credit), are paid back by the next THINKs. */
static void think(struct replay *rp, struct rlocal *me, uint64_t ns, struct awl_stream *ahead)
{
	if (rp->think_share) {
		uint32_t run = atomic_load_explicit(&rp->running, memory_order_relaxed);
		if (run > rp->ncpu) {
			if (ahead)
				read_ahead(rp, me, ahead);
			think_shared(rp, me, ns, run);
			return;
		}
	}
	uint64_t t0 = 0;
	if (ahead) { /* inside the gap: its misses are the think time's */
		t0 = plat_mono_ns();
		read_ahead(rp, me, ahead);
	}
	if (ns <= me->think_debt) {
		me->think_debt -= ns;
		if (ahead) { /* behind already: the read-ahead makes it later */
			uint64_t d = plat_mono_ns() - t0;
			me->think_debt += d;
			me->think_ns += d;
		}
		return;
	}
	if (!ahead)
		t0 = plat_mono_ns();
	uint64_t end = t0 + ns - me->think_debt, now;
	uint64_t spin_end = end - t0 > RP_THINK_SPIN_MAX_NS ? t0 + RP_THINK_SPIN_MAX_NS : end;
	volatile uint8_t *w = me->wset;
	size_t pos = me->wpos;
	do
		pos = think_step(w, pos);
	while ((now = plat_mono_ns()) < spin_end);
	if (now < end) {
		/* a long gap: the traced thread more likely waited (I/O, a lock,
		   a join) than computed; sleep, leave the core to others */
		struct timespec ts = {(time_t)(end / 1000000000u), (long)(end % 1000000000u)};
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
		now = plat_mono_ns();
	}
	me->wpos = pos;
	me->think_debt = now - end;
	me->think_ns += now - t0;
}

const char *const rp_think_names[4] = {"on", "off", "share", "whole"};

int rp_think_parse(const char *s)
{
	for (int k = 0; k < (int)(sizeof(rp_think_names) / sizeof(rp_think_names[0])); k++)
		if (!strcmp(s, rp_think_names[k]))
			return k;
	return -1;
}

/* Whether this call of the thread is sampled, about one call in every
 * (--timing sample's timed calls, the own work's samples).  A countdown
 * drawn from [every/2, 3*every/2): a fixed period aliases with the
 * workload's own (a malloc-free loop timed every 32nd call would time only
 * its mallocs). */
static inline int sample_due(uint32_t *left, uint64_t *rng, uint32_t every)
{
	if (__builtin_expect(--*left != 0, 1))
		return 0;
	*rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
	*left = every / 2 + (uint32_t)((*rng >> 33) % every);
	return 1;
}

/* The replay's own work between two calls (decoding the next op, the
 * slot table, the stats, a TOUCH's page writes) runs where the traced
 * thread did its own work: under RP_THINK_ON it comes out of the thread's
 * next THINKs, or the replay would be slower than the program by its own
 * cost per op (bench/replay/RESULTS.md, "The replay's own work").  It is
 * measured on about one call in RP_OWN_SAMPLE_EVERY, from the call's
 * return to the next call (one clock read each), and the mean so far is
 * charged for every op. */
struct own {
	uint64_t mark; /* the sampled call's return, or 0 */
	uint64_t sum, n, rng, at_think, cap;
	uint32_t left;
	int set; /* mark set by this op's call */
};

static inline void own_credit(struct rlocal *me, uint64_t ns)
{
	me->think_debt += ns;
	me->think_own += ns;
}

/* At a call's return: start a sample now and then. */
static inline __attribute__((always_inline)) void own_start(const struct replay *rp, struct own *w)
{
	if (rp->own_tick_ps && sample_due(&w->left, &w->rng, RP_OWN_SAMPLE_EVERY)) {
		w->mark = rp_ticks();
		w->set = 1;
	}
}

/* Before a call: end the sample the previous op's call started. */
static inline __attribute__((always_inline)) void own_end(struct own *w)
{
	if (__builtin_expect(w->mark != 0, 0)) {
		uint64_t d = rp_ticks() - w->mark;
		if (d < w->cap) {
			w->sum += d;
			w->n++;
		}
		w->mark = 0;
	}
}

/* At a THINK: the ops since the last one at the mean own work per op. */
static inline void own_think(const struct replay *rp, struct rlocal *me, struct own *w)
{
	if (w->n) {
		uint64_t per = w->sum / w->n;
		per = per > rp->own_floor ? per - rp->own_floor : 0;
		own_credit(me, (me->ops - w->at_think) * per * rp->own_tick_ps / 1000);
	}
	w->at_think = me->ops;
}

static void *run_thread(void *arg);

/* Joins thread x (once, whoever comes first: a waiter or the reaper)
 * and returns 1, or returns 0 if another does (join_ended waits for it
 * then). */
static int join_once(struct replay *rp, struct rthread *x)
{
	uint32_t s = JS_FREE;
	if (!atomic_compare_exchange_strong(&x->jstate, &s, JS_JOINING))
		return 0;
	uint64_t a = plat_mono_ns();
	if (x->on_main) /* no pthread to join: it ends when it says so */
		while (!atomic_load(&x->ended))
			futex(&x->ended, FUTEX_WAIT_PRIVATE, 0, NULL);
	else
		pthread_join(x->th, NULL);
	atomic_fetch_add_explicit(&rp->exit_ns, plat_mono_ns() - a, memory_order_relaxed);
	atomic_store(&x->jstate, JS_JOINED);
	futex(&x->jstate, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL);
	atomic_fetch_add(&rp->joined, 1);
	atomic_fetch_add(&rp->zseq, 1); /* the reaper counts it */
	futex(&rp->zseq, FUTEX_WAKE_PRIVATE, 1, NULL);
	return 1;
}

/* A WAIT for thread t's last op (its exit): wait on until the thread has
 * gone, as the program's pthread_join did.  glibc hands a thread's arena
 * to the next new thread only in the thread's own exit, after its last
 * op: a thread SPAWNed right after the wait found no free arena and made
 * one more than the program ever had (9-10 against its 8 in
 * bench/replay/threads.sh), and more replay threads overlapped. */
static void join_ended(struct replay *rp, uint32_t t)
{
	struct rthread *x = &rp->th[t];
	if (join_once(rp, x))
		return;
	uint32_t s;
	while ((s = atomic_load(&x->jstate)) != JS_JOINED)
		futex(&x->jstate, FUTEX_WAIT_PRIVATE, s, NULL);
}

static void lifecycle_exit(struct replay *rp, struct rthread *me)
{
	if (!me->exited) {
		me->exited = 1;
		atomic_fetch_sub(&rp->live, 1);
	}
}

static void note_live(struct replay *rp, uint32_t live)
{
	uint32_t m = atomic_load(&rp->max_live);
	while (live > m && !atomic_compare_exchange_weak(&rp->max_live, &m, live))
		;
}

/* Start workload thread c (a SPAWN op, or a root at the start). */
static int start_thread(struct replay *rp, struct rlocal *me, uint32_t c)
{
	struct rthread *ct = &rp->th[c];
	const struct awl_thread *at = awl_get_thread(rp->f, c);
	uint32_t live = atomic_fetch_add(&rp->live, 1) + 1;
	note_live(rp, live);
	if (me && at->live_at_start) {
		atomic_fetch_add_explicit(&rp->overlap_checked, 1, memory_order_relaxed);
		if (live != at->live_at_start)
			atomic_fetch_add_explicit(&rp->overlap_diff, 1, memory_order_relaxed);
	}
	atomic_fetch_add(&rp->spawned, 1);
	atomic_fetch_add(&rp->running, 1);
	uint64_t a = plat_mono_ns();
	int e = pthread_create(&ct->th, &rp->attr, run_thread, ct);
	if (me)
		me->create_ns += plat_mono_ns() - a;
	if (e) {
		atomic_fetch_sub(&rp->spawned, 1);
		atomic_fetch_sub(&rp->running, 1);
		char m[160];
		snprintf(m, sizeof(m), "cannot create replay thread %" PRIu32 " of %" PRIu32 ": %s",
			 c, rp->n, strerror(e));
		abort_all(rp, ATR_E_NOMEM, m);
		return -1;
	}
	return 0;
}

/* Thread teardown: merge this thread's numbers, hand it to the reaper. */
static void finish_thread(struct replay *rp, struct rthread *me, struct rlocal *L, uint64_t ns,
			  uint64_t cpu_ns, long nivcsw)
{
	struct rp_result *r = rp->res;
	pthread_mutex_lock(&rp->lock);
	r->ops += L->ops;
	r->waits += L->waits;
	r->sleeps += L->sleeps;
	r->wait_ns += L->wait_ns;
	r->thread_ns_sum += ns;
	r->thread_cpu_ns_sum += cpu_ns;
	r->invol_switches += (uint64_t)(nivcsw > 0 ? nivcsw : 0);
	r->unexpected_ok += L->unexpected_ok;
	r->unexpected_fail += L->unexpected_fail;
	r->thread_create_ns += L->create_ns;
	r->think_ns += L->think_ns;
	r->think_shared += L->think_shared;
	r->think_own_ns += L->think_own;
	r->warmed += L->warmed;
	r->map_bytes += L->map_bytes;
	r->usable_trace += L->usable_trace;
	r->usable_bytes += L->usable_bytes;
	for (unsigned k = 0; k < RP_NXOPS; k++) {
		r->x[k].ops += L->x[k].ops;
		r->x[k].done += L->x[k].done;
		r->x[k].skipped += L->x[k].skipped;
		r->x[k].na += L->x[k].na;
		r->x[k].failed += L->x[k].failed;
		r->x[k].unlike += L->x[k].unlike;
	}
	for (unsigned k = 0; k <= RP_NTYPES; k++) {
		if (!(L->used >> k & 1))
			continue; /* not read: its pages stay untouched */
		struct rp_callstat *d = &r->st[k], *s = &L->st[k];
		d->count += s->count;
		d->timed += s->timed;
		d->sum += s->sum;
		if (s->max > d->max)
			d->max = s->max;
		if (L->hist_used >> k & 1)
			for (unsigned b = 0; b < RP_HIST_BUCKETS; b++)
				d->hist[b] += s->hist[b];
		if (k && k < RP_NTYPES)
			r->total_cycles += rp_stat_total(s);
	}
	rp->zombies[rp->nz++] = me->t;
	pthread_mutex_unlock(&rp->lock);
	atomic_fetch_add(&rp->zseq, 1);
	futex(&rp->zseq, FUTEX_WAKE_PRIVATE, 1, NULL);
}

static int map_prot(uint32_t mf)
{
	return (mf & AWL_MF_READ ? PROT_READ : 0) | (mf & AWL_MF_WRITE ? PROT_WRITE : 0);
}

static int map_flags(uint32_t mf)
{
	return MAP_ANONYMOUS | (mf & AWL_MF_SHARED ? MAP_SHARED : MAP_PRIVATE) |
	       (mf & AWL_MF_NORESERVE ? MAP_NORESERVE : 0) |
	       (mf & AWL_MF_POPULATE ? MAP_POPULATE : 0);
}

/* A mapping the program wrote to gets the blocks' --touch policy. */
static void touch_map(struct replay *rp, uint32_t mf, uint8_t *p, uint64_t len)
{
	if (mf & AWL_MF_WRITE)
		touch(rp, p, len, 0);
}

/* One of the program's other calls (workload v3; verified: slots and
 * ranges are the replay's own). */
static void run_xop(struct replay *rp, struct rlocal *L, const struct awl_op *op)
{
	struct rp_xstat *x = &L->x[op->code - AWL_OP_XFIRST];
	const struct rp_opts *o = rp->o;
	x->ops++;
	if (op->code <= AWL_OP_MALLOC_TRIM ? o->no_mallopt
					   : op->code != AWL_OP_USABLE_SIZE && o->no_maps) {
		x->skipped++;
		return;
	}
	if (o->dry_run)
		return;
	struct mslot *m = op->code >= AWL_OP_MMAP ? &rp->maps[op->a] : NULL;
	uint8_t *p;
	switch (op->code) {
	case AWL_OP_MALLOPT:
		if (!A.mallopt) {
			x->na++;
			return;
		}
		x->unlike +=
		    A.mallopt((int)awl_unzz(op->a), (int)awl_unzz(op->b)) != awl_unzz(op->c);
		break;
	case AWL_OP_MALLOC_TRIM:
		if (!A.malloc_trim) {
			x->na++;
			return;
		}
		x->unlike += (A.malloc_trim((size_t)op->a) != 0) != (op->b != 0);
		break;
	case AWL_OP_USABLE_SIZE:
		if (!A.usable) {
			x->na++;
			return;
		}
		L->usable_bytes += A.usable(op->a ? rp->slots[op->a - 1].p : NULL);
		L->usable_trace += op->b;
		break;
	case AWL_OP_MMAP:
		p = mmap(NULL, op->b, map_prot((uint32_t)op->c), map_flags((uint32_t)op->c), -1, 0);
		m->base = p == MAP_FAILED ? NULL : p;
		m->mf = (uint32_t)op->c;
		if (!m->base) {
			x->failed++;
			return;
		}
		L->map_bytes += op->b;
		touch_map(rp, m->mf, p, op->b);
		break;
	case AWL_OP_MMAP_FIXED:
		if (!m->base || mmap(m->base + op->b, op->c, map_prot((uint32_t)op->d),
				     map_flags((uint32_t)op->d) | MAP_FIXED, -1, 0) == MAP_FAILED) {
			/* the range may be gone: the slot is not used again */
			m->base = NULL;
			x->failed++;
			return;
		}
		touch_map(rp, (uint32_t)op->d, m->base + op->b, op->c);
		break;
	case AWL_OP_MUNMAP:
		if (!m->base || munmap(m->base + op->b, op->c) != 0) {
			x->failed++;
			return;
		}
		break;
	case AWL_OP_MADVISE:
		if (!m->base || madvise(m->base + op->b, op->c, (int)op->d) != 0) {
			x->failed++;
			return;
		}
		break;
	case AWL_OP_MREMAP: {
		struct mslot *d = &rp->maps[op->d];
		uint32_t mf = m->mf;
		p = m->base ? mremap(m->base + op->b, op->c, op->e, MREMAP_MAYMOVE) : MAP_FAILED;
		d->base = p == MAP_FAILED ? NULL : p;
		d->mf = mf;
		if (!d->base) {
			x->failed++;
			return;
		}
		if (op->e > op->c) {
			L->map_bytes += op->e - op->c;
			touch_map(rp, mf, p + op->c, op->e - op->c);
		}
		break;
	}
	default:
		return;
	}
	x->done++;
}

static void *run_thread(void *arg)
{
	struct rthread *me = arg;
	struct replay *rp = me->rp;
	struct prog *mine = &rp->prog[me->t];
	int dry = rp->o->dry_run;
	const enum rp_timing tm = rp->o->timing;
	const int time_all = tm == RP_TIMING_SERIAL || tm == RP_TIMING_FAST;
	uint64_t s_rng = me->t + 1;
	uint32_t s_left = 1;
	sample_due(&s_left, &s_rng, RP_TIMING_SAMPLE_EVERY); /* the first countdown */
	const uint64_t floor_ticks = rp->timer_floor;
	const int thinking = rp->o->think != RP_THINK_OFF;
	uint64_t trim_every = rp->o->trim_interval, next_trim = trim_every;
	/* stats and the think working set: mapped (zero pages cost nothing
	   until touched), apart from the allocator, back to the pool with
	   the thread */
	size_t lsize = (sizeof(struct rlocal) + RP_THINK_WSET + rp->page - 1) & ~(rp->page - 1);
	int reused;
	struct rlocal *L =
	    pool_get(rp, POOL_STATE, &lsize, &reused, &rp->state_bytes, &rp->state_peak);
	if (L && reused)
		rlocal_clear(L);
	if (!L) {
		abort_all(rp, ATR_E_NOMEM, "out of memory for a replay thread's state");
		atomic_fetch_sub(&rp->running, 1);
		pthread_mutex_lock(&rp->lock);
		rp->zombies[rp->nz++] = me->t;
		pthread_mutex_unlock(&rp->lock);
		atomic_fetch_add(&rp->zseq, 1);
		futex(&rp->zseq, FUTEX_WAKE_PRIVATE, 1, NULL);
		return NULL;
	}
	L->wset = (uint8_t *)L + ((sizeof(struct rlocal) + 63) & ~(size_t)63);
	struct awl_op op;
	struct ahead *ah = rp->warm && thinking ? &L->ah : NULL; /* read at THINKs only */
	int r = 0;
	while (!atomic_load_explicit(&rp->go, memory_order_acquire))
		futex(&rp->go, FUTEX_WAIT_PRIVATE, 0, NULL);
	uint64_t t_start = plat_mono_ns(), c_start = thread_cpu_ns();
	long sw_start = thread_nivcsw();
	int64_t live = 0;
	uint64_t pending_kib = 0;
	struct own own = {.rng = me->t + 1,
			  .left = RP_OWN_SAMPLE_EVERY / 2,
			  .cap = rp->own_tick_ps ? RP_OWN_SAMPLE_MAX_NS * 1000ull / rp->own_tick_ps
						 : 0};
	/* the decoder's buffer: its own mapping, not the allocator's, back
	   to the pool when the thread ends */
	const struct awl_thread *at = awl_get_thread(rp->f, me->t);
	size_t cap = ((size_t)(at->max_chunk ? at->max_chunk : 1) + rp->page - 1) & ~(rp->page - 1);
	uint8_t *buf = pool_get(rp, POOL_DECODER, &cap, &reused, &rp->dec_bytes, &rp->dec_peak);
	struct awl_stream s;
	if (!buf) {
		abort_all(rp, ATR_E_NOMEM, "out of memory for a decoder buffer");
		buf = NULL;
		r = -1;
		memset(&s, 0, sizeof(s));
	} else {
		awl_stream_init_buf(rp->f, me->t, &s, buf, cap);
	}
	while (buf && !atomic_load_explicit(&rp->abort, memory_order_relaxed) &&
	       (r = ah ? next_op(&s, ah, &op) : awl_stream_next_inl(&s, &op)) > 0) {
		uint64_t t0 = 0, t1 = 0;
		int timed = 0;
		uint64_t touch_kib = pending_kib; /* a TOUCH just before: its count */
		pending_kib = 0;
		void *res = NULL;
		struct slot *dst = NULL, *src = NULL;
		uint64_t size = 0;
		switch (op.code) {
		case AWL_OP_WAIT:
			wait_for(rp, L, (uint32_t)op.a, op.b);
			if (op.b >= awl_get_thread(rp->f, (uint32_t)op.a)->ops &&
			    !atomic_load(&rp->abort))
				join_ended(rp, (uint32_t)op.a);
			goto next;
		case AWL_OP_THINK:
			if (thinking) {
				own_think(rp, L, &own);
				think(rp, L, op.a, ah ? &s : NULL);
			}
			goto next;
		case AWL_OP_SPAWN:
			start_thread(rp, L, (uint32_t)op.a);
			goto next;
		case AWL_OP_THREAD_EXIT:
			lifecycle_exit(rp, me);
			goto next;
		case AWL_OP_DROP:
			src = &rp->slots[op.a];
			if (!dry)
				A.free(src->p);
			live -= (int64_t)src->size;
			src->p = NULL;
			src->size = 0;
			goto next;
		case AWL_OP_MARKER:
		case AWL_OP_THREAD_START:
			goto next;
		case AWL_OP_MALLOPT:
		case AWL_OP_MALLOC_TRIM:
		case AWL_OP_USABLE_SIZE:
		case AWL_OP_MMAP:
		case AWL_OP_MMAP_FIXED:
		case AWL_OP_MUNMAP:
		case AWL_OP_MREMAP:
		case AWL_OP_MADVISE:
			run_xop(rp, L, &op);
			goto next;
		case AWL_OP_TOUCH: /* for the allocation that follows */
			pending_kib = op.a;
			goto next;
			/* one case per traced function (atr_calls.h), by argument shape */
#define DST(f) (f ? &rp->slots[f - 1] : NULL)
#define T0_                                                                                        \
	own_end(&own);                                                                             \
	timed = time_all ||                                                                        \
		(tm == RP_TIMING_SAMPLE && sample_due(&s_left, &s_rng, RP_TIMING_SAMPLE_EVERY));   \
	t0 = timed ? tick(tm) : 0
#define T1_                                                                                        \
	t1 = timed ? tick(tm) : 0;                                                                 \
	own_start(rp, &own)
#define CALL_PTR(name)                                                                             \
	src = DST(op.a);                                                                           \
	{                                                                                          \
		void *p = src ? src->p : NULL;                                                     \
		T0_;                                                                               \
		if (!dry)                                                                          \
			A.name(p);                                                                 \
		T1_;                                                                               \
	}                                                                                          \
	if (src) {                                                                                 \
		live -= (int64_t)src->size;                                                        \
		src->p = NULL;                                                                     \
		src->size = 0;                                                                     \
	}
#define CALL_SIZE(name)                                                                            \
	size = op.b;                                                                               \
	T0_;                                                                                       \
	if (!dry)                                                                                  \
		res = A.name(size);                                                                \
	T1_;                                                                                       \
	dst = DST(op.a);
#define CALL_NMEMB(name)                                                                           \
	size = mul_sat(op.b, op.c);                                                                \
	T0_;                                                                                       \
	if (!dry)                                                                                  \
		res = A.name(op.b, op.c);                                                          \
	T1_;                                                                                       \
	dst = DST(op.a);
#define CALL_ALIGN(name)                                                                           \
	size = op.c;                                                                               \
	T0_;                                                                                       \
	if (!dry)                                                                                  \
		res = A.name(op.b, size);                                                          \
	T1_;                                                                                       \
	dst = DST(op.a);
#define CALL_ALIGN_OUT(name)                                                                       \
	size = op.c;                                                                               \
	T0_;                                                                                       \
	if (!dry && A.name(&res, op.b, size) != 0)                                                 \
		res = NULL;                                                                        \
	T1_;                                                                                       \
	dst = DST(op.a);
#define CALL_OLD(name)                                                                             \
	src = DST(op.a);                                                                           \
	dst = DST(op.b);                                                                           \
	size = op.c;                                                                               \
	void *old = src ? src->p : NULL;                                                           \
	T0_;                                                                                       \
	if (!dry)                                                                                  \
		res = A.name(old, op.c);                                                           \
	T1_;                                                                                       \
	goto moved;
#define CALL_OLD_NMEMB(name)                                                                       \
	src = DST(op.a);                                                                           \
	dst = DST(op.b);                                                                           \
	size = mul_sat(op.c, op.d);                                                                \
	void *old = src ? src->p : NULL;                                                           \
	T0_;                                                                                       \
	if (!dry)                                                                                  \
		res = A.name(old, op.c, op.d);                                                     \
	T1_;                                                                                       \
	goto moved;
#define CASE_(NAME, name, type, opc, args, ret, params)                                            \
	case AWL_OP_##NAME: {                                                                      \
		CALL_##args(name)                                                                  \
	} break;
			ATR_CALLS(CASE_)
#undef CASE_
#undef CALL_PTR
#undef CALL_SIZE
#undef CALL_NMEMB
#undef CALL_ALIGN
#undef CALL_ALIGN_OUT
#undef CALL_OLD
#undef CALL_OLD_NMEMB
#undef DST
#undef T0_
#undef T1_
		moved: /* realloc and reallocarray */
			if (dry)
				res = dst ? (void *)1 : NULL;
			if (src && (res || size == 0)) {
				/* the old block is gone (moved, or freed by size 0) */
				live -= (int64_t)src->size;
				src->p = NULL;
				src->size = 0;
			}
			if (!dst && res) {
				/* the traced call returned NULL, this one did not */
				if (src && size) {
					src->p = res; /* the block stays live, as in the trace */
					src->size = size;
					live += (int64_t)size;
					res = NULL;
					L->unexpected_ok++;
				}
			}
			break;
		default:
			goto next;
		}
		if (!timed) /* no duration: the count is all */
			lstat_count(L, op.code);
		else
			lstat_add(L, op.code, t1 - t0 > floor_ticks ? t1 - t0 - floor_ticks : 0);
		if (awl_op_args(op.code) != ATR_ARGS_PTR) { /* an allocation */
			if (dry) {
				if (dst) {
					dst->p = NULL;
					dst->size = size;
					live += (int64_t)size;
				}
			} else if (dst) {
				dst->p = res;
				dst->size = size;
				live += (int64_t)size;
				if (res) {
					uint64_t a = rp->own_tick_ps ? rp_ticks() : 0;
					touch(rp, res, size, touch_kib);
					if (a)
						own_credit(L, (rp_ticks() - a) * rp->own_tick_ps /
								  1000);
				} else
					L->unexpected_fail++;
			} else if (res) {
				/* traced call failed, this one succeeded: let it go */
				L->unexpected_ok++;
				A.free(res);
			}
		}
	next:
		if (!own.set)
			own.mark = 0; /* not a call: no sample */
		own.set = 0;
		L->ops++;
		publish(rp, me->t, L->ops);
		atomic_store_explicit(&mine->live, live, memory_order_relaxed);
		if (trim_every && L->ops >= next_trim) {
			next_trim += trim_every;
			uint64_t a = tick(tm);
			if (!dry)
				A.trim(0);
			uint64_t d = tick(tm) - a;
			lstat_add(L, RP_TRIM, d > floor_ticks ? d - floor_ticks : 0);
		}
	}
	if (r < 0 && buf)
		abort_all(rp, ATR_E_RECORD, s.err);
	/* no THREAD_EXIT op: the traced thread lived to the end (main) */
	uint64_t t_end = plat_mono_ns();
	if (buf)
		pool_put(rp, POOL_DECODER, buf, cap, &rp->dec_bytes);
	atomic_fetch_sub(&rp->running, 1);
	finish_thread(rp, me, L, t_end - t_start, thread_cpu_ns() - c_start,
		      thread_nivcsw() - sw_start);
	pool_put(rp, POOL_STATE, L, lsize, &rp->state_bytes);
	atomic_fetch_add_explicit(&rp->exit_ns, plat_mono_ns() - t_end, memory_order_relaxed);
	return NULL;
}

/* ------------------------------------------------------------ sampler */
static void statm(int fd, uint64_t *vm_kb, uint64_t *rss_kb)
{
	char b[256];
	*vm_kb = *rss_kb = 0;
	ssize_t n = pread(fd, b, sizeof(b) - 1, 0);
	if (n <= 0)
		return;
	b[n] = 0;
	unsigned long long vm = 0, rss = 0;
	if (sscanf(b, "%llu %llu", &vm, &rss) == 2) {
		uint64_t pk = (uint64_t)sysconf(_SC_PAGESIZE) / 1024;
		*vm_kb = vm * pk;
		*rss_kb = rss * pk;
	}
}

struct sampler {
	struct replay *rp;
	FILE *out;
	int fd;
	uint64_t t0;
};

static void *run_sampler(void *arg)
{
	struct sampler *s = arg;
	struct replay *rp = s->rp;
	unsigned ms = rp->o->timeline_ms ? rp->o->timeline_ms : 10;
	for (;;) {
		uint64_t vm, rss;
		statm(s->fd, &vm, &rss);
		int64_t ideal = 0;
		for (uint32_t i = 0; i < rp->n; i++)
			ideal += atomic_load_explicit(&rp->prog[i].live, memory_order_relaxed);
		fprintf(s->out, "%.3f %" PRIu64 " %" PRIu64 " %" PRId64 "\n",
			(double)(plat_mono_ns() - s->t0) / 1e6, vm, rss, ideal / 1024);
		if (atomic_load(&rp->stop_sampler))
			break;
		struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
		nanosleep(&ts, NULL);
	}
	return NULL;
}

/* --------------------------------------------------------------- main */
/* This process image's peak RSS: VmHWM (getrusage's ru_maxrss also holds
 * the peak of the image before execve, `alloctrace replay`'s, which maps
 * the whole tool: ~3 MB that are not the replay's). */
static uint64_t maxrss_kb(void)
{
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		char b[4096];
		ssize_t n = read(fd, b, sizeof(b) - 1);
		close(fd);
		b[n > 0 ? n : 0] = 0;
		const char *h = strstr(b, "\nVmHWM:");
		unsigned long long kb;
		if (h && sscanf(h + 7, "%llu", &kb) == 1)
			return kb;
	}
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (uint64_t)ru.ru_maxrss;
}

/* awl_verify in a child: 0, or ATR_E_RECORD (the workload is invalid) or
 * ATR_E_PROCESS (the child died) with the message in eb. */
static int verify_forked(awl_file *f, char *eb, size_t el)
{
	int pfd[2];
	if (pipe(pfd) < 0)
		return awl_verify(f, eb, el) < 0 ? ATR_E_RECORD : 0;
	pid_t pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return awl_verify(f, eb, el) < 0 ? ATR_E_RECORD : 0;
	}
	if (pid == 0) {
		close(pfd[0]);
		char b[512] = "";
		int rc = awl_verify(f, b, sizeof(b));
		if (rc < 0 && write(pfd[1], b, strlen(b)) < 0)
			_exit(3);
		_exit(rc < 0 ? 1 : 0);
	}
	close(pfd[1]);
	char b[512];
	ssize_t n = 0, k;
	while ((k = read(pfd[0], b + n, sizeof(b) - 1 - (size_t)n)) > 0)
		n += k;
	b[n < 0 ? 0 : n] = 0;
	close(pfd[0]);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	snprintf(eb, el, "%s", n > 0 ? b : "workload verification failed");
	return WIFEXITED(st) ? ATR_E_RECORD : ATR_E_PROCESS;
}

/* Joins threads as they finish (those a waiter has not joined:
 * join_ended), until every started one is joined; batch: room for rp->n
 * indices (NULL: one at a time).  It runs on a thread of its own that
 * never calls malloc (batch is the caller's): a thread that allocates
 * gets an arena of its own from glibc, one more than the program had. */
static void reap(struct replay *rp, uint32_t *batch)
{
	for (;;) {
		uint32_t z = atomic_load(&rp->zseq);
		pthread_mutex_lock(&rp->lock);
		size_t k = rp->nz;
		if (batch)
			memcpy(batch, rp->zombies, k * sizeof(*batch));
		rp->nz = 0;
		pthread_mutex_unlock(&rp->lock);
		for (size_t i = 0; i < k; i++)
			join_once(rp, &rp->th[batch ? batch[i] : 0]);
		if (atomic_load(&rp->joined) >= atomic_load(&rp->spawned))
			break;
		if (!k)
			futex(&rp->zseq, FUTEX_WAIT_PRIVATE, z, NULL);
	}
}

struct reaper {
	struct replay *rp;
	uint32_t *batch;
};

static void *run_reaper(void *arg)
{
	struct reaper *r = arg;
	reap(r->rp, r->batch);
	return NULL;
}

int rp_replay(const char *path, const struct rp_opts *o, struct rp_result *res, char *eb, size_t el)
{
	memset(res, 0, sizeof(*res));
	res->clock = clock_init();
	awl_file *f;
	int rc = awl_open(path, &f, eb, el);
	if (rc < 0)
		return rc;
	if ((rc = verify_forked(f, eb, el)) < 0) {
		awl_close(f);
		return rc;
	}
	const struct awl_info *in = awl_get_info(f);
	res->emulated = o->dry_run ? 0 : resolve_allocator();
	struct replay rp;
	memset(&rp, 0, sizeof(rp));
	rp.f = f;
	rp.o = o;
	rp.n = in->nthreads;
	rp.version = in->version;
	rp.res = res;
	rp.page = (size_t)sysconf(_SC_PAGESIZE);
	res->has_touch = (in->features & AWL_FEAT_TOUCH) != 0;
	rp.touch = o->touch != RP_TOUCH_AUTO ? o->touch
		   : res->has_touch	     ? RP_TOUCH_TRACE
					     : RP_TOUCH_FIRST;
	res->touch = rp.touch;
	rp.timer_floor = timer_floor(o->timing);
	rp.spin = o->spin == UINT_MAX ? 0 : o->spin ? o->spin : RP_SPIN_DEFAULT;
	rp.ncpu = plat_usable_cpus();
	rp.think_share = o->think == RP_THINK_SHARE;
	rp.warm = !o->no_warm;
	if (o->think == RP_THINK_ON) {
		/* ticks per second: 2 ms of spinning, once */
		uint64_t tps = use_hw > 0 ? plat_ticks_per_sec(2000000u, 0) : 1000000000u;
		rp.own_tick_ps = tps ? 1000000000000ull / tps : 0;
		rp.own_floor = timer_floor(RP_TIMING_FAST);
	}
	if (rp.think_share)
		rp.step_ps = calibrate_think();
	/* off by default: on our VM each membarrier() (an IPI to every CPU
	 * running the process) cost ~17 us and doubled the CPU of a
	 * 201-thread replay; a fence per op is cheaper (docs/REPLAY.md) */
	rp.membar = o->membarrier && membarrier_register();
	pthread_mutex_init(&rp.lock, NULL);
	res->timer_floor = rp.timer_floor;
	res->timing = o->timing;
	res->version = (int)in->version;
	res->trace_max_live = in->max_live;
	res->think_trace_ns = in->think_ns;
	res->trace_duration_ns = in->duration_ns;
	/* the replay's own tables: mapped, apart from the allocator's heap */
	rp.slots_bytes =
	    ((in->slots ? in->slots : 1) * sizeof(*rp.slots) + rp.page - 1) & ~(rp.page - 1);
	rp.slots =
	    mmap(NULL, rp.slots_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (rp.slots == MAP_FAILED)
		rp.slots = NULL;
	res->slot_table_bytes = rp.slots_bytes;
	res->xops = (in->features & AWL_FEAT_XOPS) != 0;
	rp.maps_bytes =
	    ((in->map_slots ? in->map_slots : 1) * sizeof(*rp.maps) + rp.page - 1) & ~(rp.page - 1);
	rp.maps =
	    mmap(NULL, rp.maps_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (rp.maps == MAP_FAILED)
		rp.maps = NULL;
	rp.prog = aligned_alloc(64, sizeof(struct prog) * (rp.n ? rp.n : 1));
	rp.th = calloc(rp.n ? rp.n : 1, sizeof(*rp.th));
	rp.zombies = calloc(rp.n ? rp.n : 1, sizeof(*rp.zombies));
	if (!rp.slots || !rp.maps || !rp.prog || !rp.th || !rp.zombies) {
		snprintf(eb, el, "%s: out of memory for %" PRIu64 " slots", path, in->slots);
		if (rp.slots)
			munmap(rp.slots, rp.slots_bytes);
		if (rp.maps)
			munmap(rp.maps, rp.maps_bytes);
		free(rp.prog);
		free(rp.th);
		free(rp.zombies);
		awl_close(f);
		return ATR_E_NOMEM;
	}
	memset(rp.prog, 0, sizeof(struct prog) * (rp.n ? rp.n : 1));
	for (uint32_t i = 0; i < rp.n; i++) {
		atomic_store(&rp.prog[i].wake_at, UINT64_MAX);
		rp.th[i].rp = &rp;
		rp.th[i].t = i;
	}
	res->threads = rp.n;
	res->ideal_peak = in->ideal_peak;
	res->traced_rss = in->traced_rss;
	pthread_attr_init(&rp.attr);
	pthread_attr_setstacksize(&rp.attr, 256 << 10);
	/* the reaper's room, taken here: it never calls malloc (reap) */
	uint32_t *batch = malloc(sizeof(*batch) * (rp.n ? rp.n : 1));
	/* The program's first thread replays on this thread, the process's
	   main thread: glibc serves its main thread from the main arena (the
	   brk heap), as it served the program's, where a thread of its own
	   gets an arena of its own (python3's workload replayed 5-8% slower
	   so, bench/fidelity/RESULTS.md, "The first thread on the main
	   thread"); other allocators keep a main-thread heap too.  A reaper
	   thread joins the others meanwhile. */
	struct rthread *t0 = rp.n && awl_get_thread(f, 0)->parent == 0 ? &rp.th[0] : NULL;
	uint64_t c_create = plat_mono_ns();
	for (uint32_t i = 0; i < rp.n && !rc; i++) {
		if (awl_get_thread(f, i)->parent != 0)
			continue;
		if (&rp.th[i] == t0) {
			t0->on_main = 1;
			note_live(&rp, atomic_fetch_add(&rp.live, 1) + 1);
			atomic_fetch_add(&rp.spawned, 1);
			atomic_fetch_add(&rp.running, 1);
		} else if (start_thread(&rp, NULL, i) < 0) {
			rc = ATR_E_NOMEM; /* rp.errmsg says what */
		}
	}
	struct reaper rpr = {.rp = &rp, .batch = batch};
	pthread_t rth;
	int reaper = t0 && pthread_create(&rth, NULL, run_reaper, &rpr) == 0;
	res->thread_create_ns += plat_mono_ns() - c_create;
	struct sampler smp = {.rp = &rp, .fd = -1};
	pthread_t sth;
	int sampling = 0;
	if (rc == 0 && o->timeline) {
		smp.out = fopen(o->timeline, "w");
		smp.fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
		if (!smp.out || smp.fd < 0) {
			snprintf(eb, el, "%s: %s", o->timeline, strerror(errno));
			abort_all(&rp, ATR_E_IO, eb);
		} else {
			fprintf(smp.out, "# ms vmsize_kb rss_kb ideal_kb\n");
			smp.t0 = plat_mono_ns();
			sampling = pthread_create(&sth, NULL, run_sampler, &smp) == 0;
		}
	}
	res->rss_before_kb = maxrss_kb();
	uint64_t w0 = plat_mono_ns(), c0 = rp_ticks();
	atomic_store_explicit(&rp.go, 1, memory_order_release);
	futex(&rp.go, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL);
	if (t0) {
		run_thread(t0);
		atomic_store(&t0->ended, 1);
		futex(&t0->ended, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL);
	}
	if (reaper)
		pthread_join(rth, NULL);
	else
		reap(&rp, batch);
	free(batch);
	uint64_t c1 = rp_ticks(), w1 = plat_mono_ns();
	pthread_attr_destroy(&rp.attr);
	if (sampling) {
		atomic_store(&rp.stop_sampler, 1);
		pthread_join(sth, NULL);
	}
	if (smp.out)
		fclose(smp.out);
	if (smp.fd >= 0) {
		statm(smp.fd, &res->vmsize_end_kb, &res->vmrss_end_kb);
		close(smp.fd);
	} else {
		int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			statm(fd, &res->vmsize_end_kb, &res->vmrss_end_kb);
			close(fd);
		}
	}
	res->rss_after_kb = maxrss_kb();
	res->wall_ns = w1 - w0;
	res->cycles = c1 - c0;
	res->ticks_per_ns = res->wall_ns ? (double)res->cycles / (double)res->wall_ns : 1.0;
	res->threads_created = atomic_load(&rp.spawned);
	res->max_live_threads = atomic_load(&rp.max_live);
	res->overlap_checked = atomic_load(&rp.overlap_checked);
	res->overlap_diff = atomic_load(&rp.overlap_diff);
	res->decoder_peak_bytes = atomic_load(&rp.dec_peak);
	res->thread_state_peak_bytes = atomic_load(&rp.state_peak);
	res->thread_exit_ns += atomic_load(&rp.exit_ns);
	if (rp.err) {
		snprintf(eb, el, "%s", rp.errmsg);
		rc = rp.err;
	}
	/* Blocks still live were measured as live at the end; release them
	   now (untimed) so that leak checkers stay quiet. */
	if (!o->dry_run)
		for (uint64_t i = 0; i < in->slots; i++)
			if (rp.slots[i].p)
				A.free(rp.slots[i].p);
	munmap(rp.slots, rp.slots_bytes);
	munmap(rp.maps, rp.maps_bytes);
	for (int k = 0; k < 2; k++)
		for (uint32_t i = 0; i < rp.npool[k]; i++)
			munmap(rp.pool[k][i].p, rp.pool[k][i].len);
	pthread_mutex_destroy(&rp.lock);
	free(rp.prog);
	free(rp.th);
	free(rp.zombies);
	awl_close(f);
	return rc;
}
