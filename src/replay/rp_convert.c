/* rp_convert.c - see rp_convert.h. */
#define _GNU_SOURCE
#include "replay/rp_convert.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "atr_reader.h"
#include "atr_rss.h"
#include "awl_workload.h"
#include "plat_clock.h"
#include "plat_cpus.h"
#include "dj_trace.h"
#include "liveset/lv_ahead.h"
#include "liveset/lv_set.h"
#include "replay/rp_pipe.h"
#include "util_hmap.h"
#include "util_ranges.h"

/* The reader's synthetic "old block of a realloc released" event (the
 * realloc itself then comes at its end stamp).  Handled whether or not
 * this reader emits it. */
#define RP_EV_REALLOC_RELEASE 32
/* Steal another thread's free slot only when this many are free. */
#define RP_STEAL_MIN 64
#define RP_NONE	     UINT32_MAX
/* Thread serials are dense from 1 (by_serial is indexed by them): one
 * above this is a corrupt trace, not a 2^31-entry table. */
#define RP_MAX_SERIAL (1u << 24)
#define RECENT_FREES  4096
/* The slot of a block a filter left out (a realloc's old block): it and
 * every later op on it are left out (struct rp_convert_opts). */
#define RP_EXCLUDED UINT32_MAX /* a tag: slots are below it */
/* The per-record path: inlined into the loop (a call's prologue and
 * epilogue were a fifth of convert's own instructions); its rare cases
 * stay out of line (RP_COLD). */
#define RP_HOT	static inline __attribute__((always_inline))
#define RP_COLD static __attribute__((noinline, cold))

/* A free slot and its last use (the WAIT its next user may need). */
struct fslot {
	uint64_t when; /* op index of the last use */
	uint32_t slot;
	uint32_t owner; /* workload thread of the last use, RP_NONE */
};

struct deque {
	struct fslot *v;
	size_t head, n, cap; /* cap power of two */
};

/* Called when full.  realloc keeps the entries where they are (a big
 * array is moved by mremap, not copied: a thread that frees 1e6 blocks in
 * a row grows its queue to 16 MB); the ones that had wrapped around to the
 * front move to just past the old end, so every entry keeps its index
 * (head + i) & (cap - 1). */
static int dq_grow(struct deque *d)
{
	size_t nc = d->cap ? d->cap * 2 : 16;
	struct fslot *nv = realloc(d->v, nc * sizeof(*nv));
	if (!nv)
		return -1;
	if (d->head)
		memcpy(nv + d->cap, nv, d->head * sizeof(*nv));
	d->v = nv;
	d->cap = nc;
	return 0;
}
static inline int dq_push(struct deque *d, struct fslot x)
{
	if (__builtin_expect(d->n == d->cap, 0) && dq_grow(d) < 0)
		return -1;
	d->v[(d->head + d->n++) & (d->cap - 1)] = x;
	return 0;
}
static struct fslot dq_pop_back(struct deque *d)
{
	return d->v[(d->head + --d->n) & (d->cap - 1)];
}
static struct fslot dq_pop_front(struct deque *d)
{
	struct fslot x = d->v[d->head];
	d->head = (d->head + 1) & (d->cap - 1);
	d->n--;
	return x;
}

/* Sampled durations of one call type (est_add): the last EST_WIN, and
 * their mean (ticks; 0: none yet). */
#define EST_WIN 32
#define EST_MIN 3 /* a thread's own samples before its mean is used */
struct rp_est {
	uint32_t v[EST_WIN];
	uint32_t n;   /* samples in v (at most EST_WIN) */
	uint32_t pos; /* where the next one goes */
	uint32_t typ;
	uint64_t sum; /* of v */
};

struct cthread {
	uint32_t widx;	      /* workload thread index */
	int exited;	      /* its THREAD_EXIT was seen */
	uint32_t alive_pos;   /* index in conv.alive while not exited */
	uint64_t last_seq;    /* global index of its latest record */
	int have_ret;	      /* ret_ts valid */
	uint64_t ret_ts;      /* when its latest call returned (ticks) */
	uint64_t think_ticks; /* gap not yet written as a THINK op */
	/* CPU records (think_cpu): the latest one's CPU time (ns) and stamp;
	   off_ticks: the time the thread was off its CPU between the one
	   before and it, for the gap that ends at the next call */
	int have_cpu, cpu_pending;
	uint64_t cpu_ns, cpu_ts, off_ticks;
	/* sampled durations (est_add): the thread's typical time in each
	   call type, once it has EST_MIN samples of it */
	struct rp_est est[ATR_NCALLS + 1];
	/* RECORDER records (ticks): seen before the thread's next call, and
	   the recorder's time in the gap after that call (think_before) */
	uint64_t rec_next, rec_gap;
	struct util_hmap waited; /* owner -> ops waited for, but wc_owner's */
	/* the latest owner waited for and its count (not yet in waited): a
	 * thread mostly waits for one other (a producer), and then neither a
	 * lookup nor an insert is needed */
	int wc_valid;
	uint32_t wc_owner;
	uint64_t wc_need;
	struct deque freeq;
};

struct conv {
	const struct rp_convert_opts *o;
	struct rp_convert_stats *st;
	struct awl_writer *w;
	struct cthread *th;
	uint32_t nth, thcap;
	uint32_t *by_serial; /* serial -> cthread index (RP_NONE) */
	uint32_t nserial;
	/* the live blocks: ptr -> slot and size, in 16-byte entries (a set
	   of sizes' layout, ent_pack); a big size in big, the slot's last
	   use (owner, when) in use while the process has more than one thread
	   (multi); a free slot carries its last use in a freeq instead.  The
	   set's own totals count the packed words: bytes and peak are
	   convert's (the ideal RSS). */
	struct lv_set live;
	struct util_hmap big; /* ptr -> size, for sizes from ENT_BIG on */
	struct slot_use {
		uint64_t when;
		uint32_t owner, pad;
	} * use;
	uint64_t use_cap;
	int multi;
	uint64_t bytes, peak;
	/* REALLOC_RELEASEs waiting for their realloc: rel_key() -> the old
	   block.  A thread can have several (a dj trace's realloc waits for
	   the release of its result's address, dj_trace.h). */
	struct lv_set rel;
	uint64_t nslots, total_free;
	uint32_t steal_cursor;
	uint64_t recent[RECENT_FREES];
	size_t recent_pos;
	uint64_t reports[8];
	int nomem;
	uint32_t bad_serial; /* a thread serial no process has (corrupt trace) */
	atr_file *f;
	/* thread lifetimes: a start (SPAWN) waits for the start before it and
	   for the exits since; an exit (THREAD_EXIT) for the latest start.  So
	   every thread starts with the threads alive that were alive in the
	   trace; exits among themselves stay unordered. */
	uint32_t sp_thread; /* workload index of the latest SPAWN, RP_NONE */
	uint64_t sp_idx;    /* its op index */
	struct {
		uint32_t w;
		uint64_t idx;
	} * exits; /* exits since that SPAWN */
	uint32_t nexits, exits_cap;
	uint32_t spawner; /* cthread that made the latest SPAWN, RP_NONE */
	uint32_t nlive, max_live;
	uint32_t *alive; /* threads not exited (cthread indices), nlive of them */
	uint32_t alive_cap;
	uint64_t think_total;
	uint64_t est_calls, est_ticks;	       /* st's, est_ns in ticks: stored at the end */
	uint64_t floor_ticks, min_ticks;       /* think_floor_ns, RP_THINK_MIN_NS */
	uint64_t gap_ticks;		       /* the smaller of floor_ticks, join_ticks */
	int est_on;			       /* the trace has sampled durations */
	uint64_t timed_lo;		       /* est_on: timed calls of blocks this large or more
						  are not samples (est_size) */
	uint64_t est_cap;		       /* est_on: longer samples are not learned (ticks) */
	struct rp_est est_all[ATR_NCALLS + 1]; /* est over every thread: a
						  thread's calls before its own */
	uint64_t share_ticks;		       /* RP_SHARE_MIN_NS; UINT64_MAX/2: off */
	uint32_t ncpu;			       /* the traced process's CPUs (header) */
	int use_cpu;			       /* CPU records count (not --no-cpu) */
	double tpn;			       /* ticks per ns */
	/* the latest THREAD_EXIT (think_joined): its thread, its stamp */
	uint32_t last_exit;
	uint64_t last_exit_ts, join_ticks; /* join_ticks: RP_JOIN_MIN_NS */
	uint64_t handoff_ticks;		   /* RP_HANDOFF_MAX_NS; 0: no hand-offs */
	/* filters (rp_convert_opts: window, keep) */
	int filtered, in_window;
	uint64_t from_ts, to_ts;
	struct util_hmap excl; /* blocks left out: ptr -> 1 */
	/* the program's mappings (v3 ops): the traced address space as the
	   kernel keeps it, each range tagged with its mapping slot (or
	   RP_MAP_FILE, RP_MAP_OUT); only what is mapped now */
	struct ur_set maps;
	struct mslot *ms; /* mapping slots: last use, bytes mapped */
	uint32_t nms, mscap;
	uint32_t *mfree; /* free mapping slots */
	uint32_t nmfree, mfreecap;
	uint64_t page;
	int xops; /* an extended op was written */
	/* TOUCH ops (the trace has RESIDENT records): a block of at least
	   touch_min usable bytes gets one before its allocation, its count
	   filled in at its release (awl_writer_patch); releases of blocks of
	   at least touch_lo requested bytes look their slot up */
	uint64_t touch_min, touch_lo, page_kib;
	struct util_hmap touch; /* slot -> writer mark of the count */
	/* the recorder counted under a time budget (atr_info.res_budget):
	   a large release without a count gets the resident share of the
	   counted ones of its power-of-two size class so far */
	int touch_est;
	uint64_t est_res[64], est_span[64];
	/* glibc's heap (every process has CHUNK_FLAGS): a RESIDENT count of
	   a chunk that is not mmap'd includes the pages earlier blocks at
	   its addresses left resident; heap_res keeps, per page of the
	   traced address space, the share of it resident (of TOUCH_ONE)
	   after the last large block over it was released, and a count
	   loses what its pages held before (touch_own) */
	int touch_heap;
	struct util_hmap heap_res; /* page number -> share of TOUCH_ONE */
	/* the compact records being converted (conv_direct) and the record
	   number of the first (report's call_seq) */
	const struct atr_call *batch;
	uint64_t seq_base;
	/* the records' first and latest stamps, the progress line's state */
	uint64_t first_ts, last_ts, total_hint;
	double t0, last_prog;
};

/* A call without RESIDENT counts (touch_release estimates its pages). */
static const struct atr_event rp_no_res;

/* A mapping slot: its last use (the WAIT its next user may need), the
 * bytes of it still mapped (0: free) and the replay's mmap flags. */
struct mslot {
	uint32_t owner;
	uint32_t mf;
	uint64_t when, bytes;
};
#define RP_MAP_FILE UINT64_MAX	     /* a file-backed mapping: not replayed */
#define RP_MAP_OUT  (UINT64_MAX - 1) /* a mapping a filter left out */

enum { REP_UNKNOWN, REP_DOUBLE, REP_DUP, REP_UREALLOC };

/* The record number of call k: its event's (ev), or for a compact record
 * of the batch being converted the iterator's count (src_next_narrow's). */
static uint64_t call_seq(const struct conv *c, const struct atr_call *k, const struct atr_event *ev)
{
	if (ev)
		return ev->seq;
	uint64_t seq = c->seq_base;
	for (const struct atr_call *q = c->batch; q < k; q++)
		seq += q->type != RP_EV_REALLOC_RELEASE;
	return seq;
}

/* An anomaly of call k (ev: its full event, NULL for a compact record). */
static void report(struct conv *c, int kind, const struct atr_call *k, const struct atr_event *ev,
		   const char *what)
{
	int max = c->o->max_reports ? c->o->max_reports : 10;
	if (c->o->quiet || !c->o->note || c->reports[kind]++ >= (uint64_t)max)
		return;
	char m[512];
	snprintf(m, sizeof(m),
		 "convert: %s: record #%" PRIu64 " thread %" PRIu32 " (tid %" PRIu32
		 ") %s ptr=0x%" PRIx64 " ret=0x%" PRIx64 " size=%" PRIu64 "%s",
		 what, call_seq(c, k, ev), k->thread, k->tid, atr_type_name(k->type), k->ptr,
		 k->ret, k->size,
		 c->reports[kind] == (uint64_t)max ? " (further ones not shown)" : "");
	c->o->note(c->o->note_arg, RP_NOTE_ANOMALY, m);
}

/* ------------------------------------------------------------ threads */
/* A WAIT in thread ti for owner's first need ops, unless done already. */
static void emit_wait_ops(struct conv *c, uint32_t ti, uint32_t owner, uint64_t need)
{
	uint32_t wi = c->th[ti].widx;
	uint64_t have = 0;
	struct cthread *t = &c->th[ti];
	if (t->wc_valid && t->wc_owner == owner) {
		if (t->wc_need >= need)
			return;
	} else {
		if (util_hmap_lookup(&t->waited, owner, &have) && have >= need)
			return;
		if (t->wc_valid &&
		    util_hmap_insert(&t->waited, t->wc_owner, t->wc_need, NULL) < 0) {
			c->nomem = 1;
			return;
		}
		t->wc_valid = 1;
		t->wc_owner = owner;
	}
	t->wc_need = need;
	uint8_t *p = awl_writer_reserve(c->w, wi, 32);
	*p++ = AWL_OP_WAIT;
	p = awl_put_uv_room(p, owner);
	p = awl_put_uv_room(p, need);
	awl_writer_commit(c->w, wi, p);
	c->st->waits++;
}

/* Thread ti's next op is a SPAWN (spawn) or its THREAD_EXIT: the waits
 * that keep starts and exits in the trace's order; returns its index. */
static uint64_t lifecycle_op(struct conv *c, uint32_t ti, int spawn)
{
	uint32_t wi = c->th[ti].widx;
	if (c->sp_thread != RP_NONE && c->sp_thread != wi)
		emit_wait_ops(c, ti, c->sp_thread, c->sp_idx + 1);
	if (spawn) {
		for (uint32_t k = 0; k < c->nexits; k++)
			if (c->exits[k].w != wi)
				emit_wait_ops(c, ti, c->exits[k].w, c->exits[k].idx + 1);
		c->nexits = 0;
	}
	uint64_t idx = awl_writer_thread_ops(c->w, wi);
	if (spawn) {
		c->sp_thread = wi;
		c->sp_idx = idx;
	} else {
		if (c->nexits == c->exits_cap) {
			uint32_t nc = c->exits_cap ? c->exits_cap * 2 : 16;
			void *ne = realloc(c->exits, nc * sizeof(*c->exits));
			if (!ne) {
				c->nomem = 1;
				return idx;
			}
			c->exits = ne;
			c->exits_cap = nc;
		}
		c->exits[c->nexits].w = wi;
		c->exits[c->nexits++].idx = idx;
	}
	return idx;
}

/* Thread nt (new, not the first) starts.  The trace does not say who
 * created it: the thread that spawned the previous one does, while it is
 * alive (threads are mostly created by one thread: main, a pool); else
 * the thread that ran last and has not exited (the creator usually made
 * the last call, e.g. glibc's calloc of the new thread's DTV).  Taking
 * the last active thread every time made chains (each new thread created
 * the next one), a wake-up per start in the replay. */
static void spawn(struct conv *c, uint32_t nt)
{
	uint32_t par = RP_NONE;
	if (c->spawner != RP_NONE && !c->th[c->spawner].exited)
		par = c->spawner;
	else {
		for (uint32_t k = 0; k < c->nlive; k++) {
			uint32_t i = c->alive[k];
			if (i != nt && (par == RP_NONE || c->th[i].last_seq > c->th[par].last_seq))
				par = i;
		}
		for (uint32_t i = 0; i < nt && c->nlive <= 1; i++) /* all others exited */
			if (i != nt && (par == RP_NONE || c->th[i].last_seq > c->th[par].last_seq))
				par = i;
	}
	c->spawner = par;
	uint64_t idx = lifecycle_op(c, par, 1);
	uint32_t pw = c->th[par].widx;
	uint8_t *p = awl_writer_reserve(c->w, pw, 16);
	*p++ = AWL_OP_SPAWN;
	p = awl_put_uv_room(p, c->th[nt].widx);
	awl_writer_commit(c->w, pw, p);
	awl_writer_set_start(c->w, c->th[nt].widx, pw, idx, c->nlive);
}

static void multi_on(struct conv *c);

/* A serial not seen yet (thread_of). */
RP_COLD uint32_t thread_new(struct conv *c, uint32_t s, uint32_t tid)
{
	if (s >= RP_MAX_SERIAL) {
		c->bad_serial = s;
		c->nomem = 1;
		return RP_NONE;
	}
	if (s >= c->nserial) {
		uint32_t nn = c->nserial ? c->nserial : 64;
		while (nn <= s)
			nn *= 2;
		uint32_t *nb = realloc(c->by_serial, nn * sizeof(*nb));
		if (!nb) {
			c->nomem = 1;
			return RP_NONE;
		}
		for (uint32_t i = c->nserial; i < nn; i++)
			nb[i] = RP_NONE;
		c->by_serial = nb;
		c->nserial = nn;
	}
	if (c->nth == c->thcap) {
		uint32_t nc = c->thcap ? c->thcap * 2 : 16;
		struct cthread *nt = realloc(c->th, nc * sizeof(*nt));
		if (!nt) {
			c->nomem = 1;
			return RP_NONE;
		}
		c->th = nt;
		c->thcap = nc;
	}
	int wi = awl_writer_add_thread(c->w, s, tid);
	if (wi < 0) {
		c->nomem = 1;
		return RP_NONE;
	}
	struct cthread *t = &c->th[c->nth];
	memset(t, 0, sizeof(*t));
	t->widx = (uint32_t)wi;
	c->by_serial[s] = c->nth;
	if (c->nlive == c->alive_cap) {
		uint32_t nc = c->alive_cap ? c->alive_cap * 2 : 16;
		uint32_t *na = realloc(c->alive, nc * sizeof(*na));
		if (!na) {
			c->nomem = 1;
			return RP_NONE;
		}
		c->alive = na;
		c->alive_cap = nc;
	}
	t->alive_pos = c->nlive;
	c->alive[c->nlive++] = c->nth;
	if (c->nlive > c->max_live)
		c->max_live = c->nlive;
	if (c->nth) {
		if (!c->multi)
			multi_on(c);
		spawn(c, c->nth);
	}
	return c->nth++;
}

/* The thread of serial s (tid: its tid, for a new one). */
RP_HOT uint32_t thread_of(struct conv *c, uint32_t s, uint32_t tid)
{
	if (__builtin_expect(s < c->nserial && c->by_serial[s] != RP_NONE, 1))
		return c->by_serial[s];
	return thread_new(c, s, tid);
}

/* -------------------------------------------------------------- slots */
static struct fslot slot_new_slow(struct conv *c, uint32_t ti)
{
	if (c->total_free >= RP_STEAL_MIN) {
		uint32_t v = c->steal_cursor % c->nth;
		for (uint32_t k = 0; k < c->nth; k++, v = v + 1 == c->nth ? 0 : v + 1) {
			if (v != ti && c->th[v].freeq.n) {
				c->steal_cursor = v + 1;
				c->total_free--;
				return dq_pop_front(&c->th[v].freeq);
			}
		}
	}
	if (c->nslots >= UINT32_MAX)
		c->nomem = 1; /* 4 G blocks live at once */
	return (struct fslot){.slot = (uint32_t)c->nslots++, .owner = RP_NONE};
}

/* A free slot for thread ti: its own latest, else another's, else a new one. */
static inline struct fslot slot_new(struct conv *c, uint32_t ti)
{
	struct cthread *t = &c->th[ti];
	if (__builtin_expect(t->freeq.n != 0, 1)) {
		c->total_free--;
		return dq_pop_back(&t->freeq);
	}
	return slot_new_slow(c, ti);
}

/* slot is free after thread ti's op idx. */
static inline void slot_release(struct conv *c, uint32_t ti, uint64_t slot, uint64_t idx)
{
	struct fslot f = {.when = idx, .slot = (uint32_t)slot, .owner = c->th[ti].widx};
	if (dq_push(&c->th[ti].freeq, f) < 0)
		c->nomem = 1;
	else
		c->total_free++;
}

/* ---------------------------------------------------------------- ops */
static void emit_wait_slow(struct conv *c, uint32_t ti, uint32_t owner, uint64_t when)
{
	emit_wait_ops(c, ti, owner, when + 1);
}

/* A WAIT before thread ti uses a slot that another thread (owner) used
 * last, at op when. */
static inline void emit_wait_for(struct conv *c, uint32_t ti, uint32_t owner, uint64_t when)
{
	if (__builtin_expect(owner != RP_NONE && owner != c->th[ti].widx, 0))
		emit_wait_slow(c, ti, owner, when);
}

/* --------------------------------------------------------- TOUCH ops */
/* The count field of a TOUCH op: a varint padded to this many bytes, so
 * that it can be filled in later in place (42 bits of KiB). */
#define RP_TOUCH_WIDTH 6
/* The writer mark of a heap chunk's TOUCH has this bit set (marks are
 * byte offsets, far below it); a share of a page resident, fixed point. */
#define TOUCH_HEAP (1ULL << 63)
#define TOUCH_ONE  256u
/* Heap chunks spanning more pages (1 GiB of 4 KiB pages) keep their
 * counts: the model's cost is a lookup per page. */
#define TOUCH_HEAP_PAGES (1ULL << 18)

static void put_uv_fixed(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < RP_TOUCH_WIDTH - 1; i++, v >>= 7)
		p[i] = (uint8_t)((v & 0x7f) | 0x80);
	p[RP_TOUCH_WIDTH - 1] = (uint8_t)(v & 0x7f);
}

/* Thread ti's next op allocates a block of usable bytes into slot: a
 * large one gets a TOUCH op first, its count unknown (0) until the
 * block's release says how many pages the program had resident.  heap:
 * a chunk of glibc's heap (not mmap'd). */
RP_COLD void touch_place_op(struct conv *c, uint32_t ti, uint64_t slot, int heap)
{
	uint32_t wi = c->th[ti].widx;
	uint8_t *p = awl_writer_reserve(c->w, wi, 1 + RP_TOUCH_WIDTH);
	*p++ = AWL_OP_TOUCH;
	uint64_t mark = awl_writer_mark(c->w, wi, p);
	put_uv_fixed(p, 0);
	awl_writer_commit(c->w, wi, p + RP_TOUCH_WIDTH);
	if (util_hmap_insert(&c->touch, slot, mark | (heap ? TOUCH_HEAP : 0), NULL) < 0)
		c->nomem = 1;
	c->st->touch_ops++;
}

/* An allocation of usable bytes into slot (chunk_flags: its event's). */
RP_HOT void touch_place(struct conv *c, uint32_t ti, uint64_t slot, uint64_t usable,
			unsigned chunk_flags)
{
	if (__builtin_expect(c->touch_min != 0, 0) && usable >= c->touch_min)
		touch_place_op(c, ti, slot, c->touch_heap && !(chunk_flags & ATR_CHUNK_MMAPPED));
}

/* The size class of a block of size bytes: its pages written per page
 * spanned, of the blocks counted so far; the pages of a span of pages,
 * rounded (UINT64_MAX: none counted yet). */
static uint64_t touch_share(const struct conv *c, uint64_t size, uint64_t span)
{
	int k = 63 - __builtin_clzll(size | 1);
	if (!c->est_span[k])
		return UINT64_MAX;
	return (span * c->est_res[k] + c->est_span[k] / 2) / c->est_span[k];
}

/* The count field (KiB + 1) for a block of size bytes released without a
 * count: its size class's share (0: none counted yet). */
static uint64_t touch_estimate(const struct conv *c, uint64_t size)
{
	uint64_t pg = c->page_kib * 1024, w = touch_share(c, size, (size + pg - 1) / pg + 1);
	if (!c->touch_est || w == UINT64_MAX)
		return 0;
	return w * c->page_kib + 1;
}

/* A heap chunk over the pages [first, first + span): what heap_res says
 * was resident there (TOUCH_ONE a page) before it ... */
static uint64_t heap_before(const struct conv *c, uint64_t first, uint64_t span)
{
	uint64_t before = 0, v;
	for (uint64_t i = 0; i < span; i++)
		if (util_hmap_lookup(&c->heap_res, first + i, &v))
			before += v;
	return before < span * TOUCH_ONE ? before : span * TOUCH_ONE;
}

/* ... and what is after its release: now (TOUCH_ONE a page), spread. */
static void heap_after(struct conv *c, uint64_t first, uint64_t span, uint64_t now)
{
	uint64_t share = now / span < TOUCH_ONE ? now / span : TOUCH_ONE;
	for (uint64_t i = 0; i < span; i++)
		if (util_hmap_insert(&c->heap_res, first + i, share, NULL) < 0)
			c->nomem = 1;
}

/* The pages a heap chunk of size bytes over span pages from lo wrote,
 * res of them resident at its release, of which `before` (TOUCH_ONE a
 * page) were before its allocation: if the pages it wrote fell
 * independently of those, res = w + before - w x before / span, so
 * w = (res - before) / (1 - before / span); at least 1 (its header's
 * page) when res is not 0, at most res.  With more than 3/4 of its pages
 * resident before, the count says little (any w gives res near span: a
 * program that fills its buffers and one that writes a byte of each look
 * the same), so the size class's share of the chunks that said more
 * (else that formula).  *informative: 1 if the count said more. */
static uint64_t touch_own(struct conv *c, uint64_t size, uint64_t lo, uint64_t span, uint64_t res,
			  int *informative)
{
	uint64_t first = lo / (c->page_kib * 1024), before = heap_before(c, first, span);
	uint64_t room = span * TOUCH_ONE - before, w;
	*informative = room * 4 >= span * TOUCH_ONE;
	if (!*informative && (w = touch_share(c, size, span)) != UINT64_MAX) {
		w = w > res ? res : w < 1 && res ? 1 : w;
	} else if (res * TOUCH_ONE <= before) {
		w = res != 0;
	} else if (room >= TOUCH_ONE) {
		w = ((res * TOUCH_ONE - before) * span + room / 2) / room;
		w = w < 1 ? 1 : w > res ? res : w;
	} else {
		w = touch_share(c, size, span);
		w = w > res ? res : w;
	}
	heap_after(c, first, span, res * TOUCH_ONE);
	c->st->touch_prior_pages += res - w;
	return w;
}

/* Block b dies (released by ev, NULL: dropped): its TOUCH, if it has one,
 * gets ev's resident count, or an estimate when the recorder skipped it.
 * The size classes' shares are of the pages the blocks wrote. */
RP_COLD void touch_release_op(struct conv *c, const struct lv_block *b, const struct atr_event *ev)
{
	uint64_t mark;
	if (!util_hmap_remove(&c->touch, b->tag, &mark))
		return;
	uint64_t kib, pg = c->page_kib * 1024, lo = b->ptr & ~(pg - 1);
	int heap = (mark & TOUCH_HEAP) != 0 && b->size / pg < TOUCH_HEAP_PAGES;
	mark &= ~TOUCH_HEAP;
	if (ev && ev->span_pages) {
		uint64_t w = ev->resident_pages;
		int informative = 1;
		if (heap) {
			/* the pages the block can span (a span the trace
			   overstates must not make the model walk it) */
			uint64_t span = ev->span_pages, most = b->size / pg + 3;
			span = span < most ? span : most;
			w = touch_own(c, b->size, lo, span, w < span ? w : span, &informative);
		}
		kib = w * c->page_kib + 1;
		if (informative) {
			int k = 63 - __builtin_clzll(b->size | 1);
			c->est_res[k] += w;
			c->est_span[k] += ev->span_pages;
		}
		c->st->touch_counted++;
	} else {
		kib = ev ? touch_estimate(c, b->size) : 0;
		if (!kib)
			return; /* no count: the replay touches it as --touch first */
		if (heap) {	/* w more pages written, where they fell independently */
			uint64_t span = b->size / pg + 2, first = lo / pg;
			uint64_t before = heap_before(c, first, span), w = (kib - 1) / c->page_kib;
			heap_after(c, first, span, before + w * (span * TOUCH_ONE - before) / span);
		}
		c->st->touch_estimated++;
	}
	uint8_t v[RP_TOUCH_WIDTH];
	put_uv_fixed(v, kib < (1ULL << 42) ? kib : (1ULL << 42) - 1);
	awl_writer_patch(c->w, mark, v, sizeof(v));
}

RP_HOT void touch_release(struct conv *c, const struct lv_block *b, const struct atr_event *ev)
{
	if (__builtin_expect(c->touch_min != 0, 0) && b->size >= c->touch_lo)
		touch_release_op(c, b, ev);
}

RP_HOT uint64_t usable_of(const struct atr_call *k)
{
	return k->usable != UINT64_MAX && k->usable ? k->usable : k->size;
}

/* ------------------------------------------------ the live set's entries */
/* An entry's second word: the slot in the high half, the size in the low
 * half, ENT_BIG for sizes from it on (the size in c->big).  16 bytes an
 * entry instead of a full one's 32: half the table to fault in and fewer
 * lines a call at 1e6 live blocks (bench/replay/RESULTS.md, "Entries of
 * 16 bytes"). */
#define ENT_BIG UINT32_MAX
RP_HOT uint64_t ent_pack(uint32_t slot, uint64_t size)
{
	return (uint64_t)slot << 32 | (size < ENT_BIG ? size : ENT_BIG);
}

/* Slot's last use: thread owner's op when (kept while c->multi). */
RP_COLD void use_grow(struct conv *c, uint64_t slot)
{
	uint64_t nc = c->use_cap ? c->use_cap : 1024;
	while (nc <= slot)
		nc *= 2;
	struct slot_use *nu = realloc(c->use, nc * sizeof(*nu));
	if (!nu) {
		c->nomem = 1;
		return;
	}
	for (uint64_t i = c->use_cap; i < nc; i++)
		nu[i] = (struct slot_use){.owner = RP_NONE};
	c->use = nu;
	c->use_cap = nc;
}

RP_HOT void use_set(struct conv *c, uint32_t slot, uint32_t owner, uint64_t when)
{
	if (__builtin_expect(slot >= c->use_cap, 0)) {
		use_grow(c, slot);
		if (c->nomem)
			return;
	}
	c->use[slot].when = when;
	c->use[slot].owner = owner;
}

/* The process's second thread starts although its trace named one
 * (multi was off): the blocks live now were allocated before the start,
 * which the SPAWN orders, so their slots need no WAIT (owner RP_NONE). */
static void multi_on(struct conv *c)
{
	c->multi = 1;
	if (c->nslots)
		use_grow(c, c->nslots - 1);
	for (uint64_t i = 0; i < c->use_cap; i++)
		c->use[i] = (struct slot_use){.owner = RP_NONE};
}

/* The block of entry word w at ptr, as the handlers see it. */
RP_HOT void ent_view(const struct conv *c, uint64_t ptr, uint64_t w, struct lv_block *b)
{
	uint64_t big;
	b->ptr = ptr;
	b->tag = (uint32_t)(w >> 32);
	b->size = (uint32_t)w;
	if (__builtin_expect(b->size == ENT_BIG, 0) && util_hmap_lookup(&c->big, ptr, &big))
		b->size = big;
	if (c->multi) {
		b->owner = c->use[b->tag].owner;
		b->when = c->use[b->tag].when;
	} else {
		b->owner = RP_NONE;
		b->when = 0;
	}
}

/* The live bytes' peak (the ideal RSS), as lv_born counts it. */
RP_HOT void bytes_born(struct conv *c, uint64_t size)
{
	c->bytes += size;
	if (c->bytes > c->peak)
		c->peak = c->bytes;
}

/* An allocation returned a block that is still live (old: its entry
 * before): the trace missed its release, its old slot is dropped. */
RP_COLD void addr_dropped(struct conv *c, uint32_t ti, const struct atr_call *k,
			  const struct atr_event *ev, const struct lv_block *old)
{
	c->st->dup_allocs++;
	report(c, REP_DUP, k, ev,
	       "allocation returned a block that is still live (old one dropped)");
	touch_release(c, old, NULL);
	uint32_t wi = c->th[ti].widx;
	emit_wait_for(c, ti, old->owner, old->when);
	uint8_t *p = awl_writer_reserve(c->w, wi, 16);
	*p++ = AWL_OP_DROP;
	p = awl_put_uv_room(p, old->tag);
	uint64_t didx = awl_writer_thread_ops(c->w, wi);
	awl_writer_commit(c->w, wi, p);
	slot_release(c, ti, old->tag, didx);
}

/* addr_insert's end (ptr born in slot by thread ti's op idx, r:
 * lv_born's result, ow: the old entry's word when r is 0), also the
 * fast path's for a block that was live already. */
RP_COLD void addr_born_rest(struct conv *c, uint32_t ti, const struct atr_call *k,
			    const struct atr_event *ev, uint64_t ptr, uint32_t slot, uint64_t size,
			    uint64_t idx, int r, uint64_t ow)
{
	struct lv_block old;
	if (r == 0) {
		ent_view(c, ptr, ow, &old);
		c->bytes -= old.size;
		if ((uint32_t)ow == ENT_BIG)
			util_hmap_remove(&c->big, ptr, NULL);
	}
	if (size >= ENT_BIG && util_hmap_insert(&c->big, ptr, size, NULL) < 0) {
		c->nomem = 1;
		return;
	}
	bytes_born(c, size);
	if (c->multi)
		use_set(c, slot, c->th[ti].widx, idx);
	if (r == 0)
		addr_dropped(c, ti, k, ev, &old);
}

/* ptr becomes live in slot, used last by thread ti's op idx (an_summary's
 * make_live).  A ptr that is still live means the trace missed its
 * release: its old slot is dropped. */
RP_HOT void addr_insert(struct conv *c, uint32_t ti, const struct atr_call *k,
			const struct atr_event *ev, uint64_t ptr, uint64_t slot, uint64_t size,
			uint64_t idx)
{
	struct lv_block *b, old;
	int r = lv_born_word(&c->live, ptr, ent_pack((uint32_t)slot, size), &b, &old);
	if (__builtin_expect(r < 0, 0)) {
		c->nomem = 1;
		return;
	}
	if (__builtin_expect(r == 0 || size >= ENT_BIG, 0)) {
		addr_born_rest(c, ti, k, ev, ptr, (uint32_t)slot, size, idx, r, old.size);
		return;
	}
	bytes_born(c, size);
	if (c->multi)
		use_set(c, (uint32_t)slot, c->th[ti].widx, idx);
}

static void unknown_free(struct conv *c, const struct atr_call *k, const struct atr_event *ev,
			 uint64_t ptr)
{
	for (size_t i = 0; i < RECENT_FREES; i++)
		if (c->recent[i] == ptr) {
			c->st->double_frees++;
			report(c, REP_DOUBLE, k, ev, "double free (skipped)");
			return;
		}
	c->st->unknown_frees++;
	report(c, REP_UNKNOWN, k, ev, "free of a block never allocated in the trace (skipped)");
}

/* A free of a block that is not live (k): parked for the allocation by
 * another thread it may have been stamped ahead of (liveset/lv_park.h),
 * else counted. */
static void release_unknown(struct conv *c, const struct atr_call *k, const struct atr_event *ev)
{
	struct atr_call x;
	if (!c->live.park.window)
		unknown_free(c, k, ev, k->ptr);
	else if (lv_park_add(&c->live.park, k, &x))
		unknown_free(c, &x, NULL, x.ptr);
}

RP_COLD void own_block_freed(struct conv *c, const struct atr_call *x);

/* The parked frees older than the window at now are counted, but those
 * whose thread allocated the address again (liveset/lv_park.h, the second
 * shape): that thread frees that block now. */
static void park_expire(struct conv *c, uint64_t now)
{
	struct atr_call x;
	uint64_t own;
	while (lv_park_expire(&c->live.park, now, &x, &own)) {
		if (own)
			own_block_freed(c, &x);
		else
			unknown_free(c, &x, NULL, x.ptr);
	}
}

/* ptr's entry if it is live (*j: its index), else NULL. */
RP_HOT struct lv_block *ent_find(const struct conv *c, uint64_t ptr, size_t *j)
{
	if (!ptr || !c->live.cap)
		return NULL;
	return lv_lookup_lg(&c->live, ptr, j, LV_LG_SIZES);
}

/* ent_find, and the block into *b if it is live (a copy: its last use
 * changes by use_set). */
RP_HOT struct lv_block *ent_get(const struct conv *c, uint64_t ptr, size_t *j, struct lv_block *b)
{
	struct lv_block *e = ent_find(c, ptr, j);
	if (e)
		ent_view(c, ptr, e->size, b);
	return e;
}

static int addr_peek(struct conv *c, uint64_t ptr, struct lv_block *b)
{
	size_t j;
	return ent_get(c, ptr, &j, b) != NULL;
}

/* ptr (non-NULL) dies: 1 and its block (slot, last use) in *b, or 0 if it
 * was not live. */
RP_HOT int addr_take(struct conv *c, uint64_t ptr, struct lv_block *b)
{
	size_t j;
	struct lv_block *e = ent_get(c, ptr, &j, b);
	if (!e)
		return 0;
	if (__builtin_expect((uint32_t)e->size == ENT_BIG, 0))
		util_hmap_remove(&c->big, ptr, NULL);
	c->bytes -= b->size;
	lv_remove_word(&c->live, j, e);
	c->recent[c->recent_pos++ % RECENT_FREES] = ptr;
	return 1;
}

/* Thread ti's stream in the writer (valid until a thread is added): the
 * per-record handlers write and count their op through it. */
RP_HOT struct awl_wthread *wstream(struct conv *c, uint32_t ti)
{
	return awl_writer_th(c->w, c->th[ti].widx);
}

RP_HOT uint8_t *op_begin(struct conv *c, uint32_t ti, unsigned code)
{
	uint8_t *p = awl_writer_reserve(c->w, c->th[ti].widx, 64);
	*p++ = (uint8_t)code;
	return p;
}

/* callop: the call's op code (counted in the header), 0 for other ops */
RP_HOT void op_end(struct conv *c, uint32_t ti, uint8_t *p, unsigned callop)
{
	uint32_t wi = c->th[ti].widx;
	awl_writer_commit(c->w, wi, p);
	if (callop)
		awl_writer_count_call(c->w, wi, callop);
}

/* The workload op of each trace call type (atr_calls.h). */
#define OP_OF_(NAME, name, type, op, args, ret, params) [ATR_T_##NAME] = AWL_OP_##NAME,
static const uint8_t op_of_type[ATR_T_CALL_LAST + 1] = {ATR_CALLS(OP_OF_)};
#undef OP_OF_
/* A call's argument shape (atr_calls.h) decides both the record's words
 * and the op's fields. */

/* A FREE op of block b (already taken out of the live set) for a call
 * (ev: its full event, with the RESIDENT counts if any; NULL: none). */
RP_HOT void free_block(struct conv *c, uint32_t ti, const struct lv_block *b,
		       const struct atr_event *ev)
{
	touch_release(c, b, ev ? ev : &rp_no_res);
	emit_wait_for(c, ti, b->owner, b->when);
	struct awl_wthread *wt = wstream(c, ti);
	uint64_t idx = wt->ops;
	uint8_t *p = awl_writer_reserve_th(c->w, wt, 64);
	*p++ = AWL_OP_FREE;
	p = awl_put_uv_room(p, (uint64_t)b->tag + 1);
	awl_writer_commit_th(wt, p);
	awl_writer_count_call_th(c->w, wt, AWL_OP_FREE);
	slot_release(c, ti, b->tag, idx);
}

/* Thread ti's allocation of block k->ret (slot, its op idx) claims the
 * parked free x, stamped ahead of it by x's thread: that thread frees the
 * block now, after a WAIT for the allocation.  Returns 0 (the free counted
 * as unknown) if that thread's stream has ended. */
RP_COLD int release_claimed(struct conv *c, uint32_t ti, const struct atr_call *k,
			    const struct atr_call *x, uint32_t slot, uint64_t idx)
{
	uint32_t bi = thread_of(c, x->thread, x->tid);
	if (bi == RP_NONE || c->th[bi].exited) {
		unknown_free(c, x, NULL, x->ptr);
		return 0;
	}
	struct lv_block b = {
	    .ptr = k->ret, .size = k->size, .when = idx, .tag = slot, .owner = c->th[ti].widx};
	free_block(c, bi, &b, NULL);
	c->recent[c->recent_pos++ % RECENT_FREES] = k->ret;
	c->st->reordered++;
	return 1;
}

/* A parked free x that no other thread's allocation claimed, whose own
 * thread allocated the address again: the early free another thread made
 * was that block's, and was spent on the block before (lv_park.h, the
 * second shape).  x's thread frees the block now, if it is still live;
 * else x is an unknown free after all. */
RP_COLD void own_block_freed(struct conv *c, const struct atr_call *x)
{
	uint32_t bi = thread_of(c, x->thread, x->tid);
	struct lv_block b;
	if (bi == RP_NONE || c->th[bi].exited || !addr_take(c, x->ptr, &b)) {
		unknown_free(c, x, NULL, x->ptr);
		return;
	}
	free_block(c, bi, &b, NULL);
	c->st->reordered++;
}

/* The handlers of a call take it as a compact record k; ev is its full
 * event when it came as one (the RESIDENT counts, the record number),
 * else NULL. */
RP_HOT void on_free(struct conv *c, uint32_t ti, const struct atr_call *k,
		    const struct atr_event *ev)
{
	if (__builtin_expect(!k->ptr, 0)) {
		uint8_t *p = op_begin(c, ti, AWL_OP_FREE);
		p = awl_put_uv_room(p, 0);
		op_end(c, ti, p, AWL_OP_FREE);
		return;
	}
	struct lv_block b;
	if (!addr_take(c, k->ptr, &b)) {
		release_unknown(c, k, ev);
		return;
	}
	free_block(c, ti, &b, ev);
}

static void split_array(uint64_t total, uint64_t nmemb, uint64_t *n, uint64_t *el)
{
	*n = nmemb;
	*el = nmemb ? total / nmemb : total;
	if (!nmemb)
		*n = 0;
}

/* shape: atr_call_args(k->type) */
RP_HOT void on_alloc(struct conv *c, uint32_t ti, const struct atr_call *k,
		     const struct atr_event *ev, unsigned shape)
{
	struct fslot f = {0};
	int ok = k->ret != 0;
	if (ok) {
		f = slot_new(c, ti);
		if (c->nomem)
			return;
		emit_wait_for(c, ti, f.owner, f.when);
		touch_place(c, ti, f.slot, usable_of(k), k->chunk_flags);
	} else {
		c->st->failed_allocs++;
	}
	struct awl_wthread *wt = wstream(c, ti);
	uint64_t idx = wt->ops;
	uint64_t dst = ok ? (uint64_t)f.slot + 1 : 0;
	unsigned op = op_of_type[k->type];
	uint8_t *p = awl_writer_reserve_th(c->w, wt, 64);
	*p++ = (uint8_t)op;
	p = awl_put_uv_room(p, dst);
	if (shape == ATR_ARGS_SIZE) {
		p = awl_put_uv_room(p, k->size);
	} else if (shape == ATR_ARGS_NMEMB) {
		uint64_t n, el;
		split_array(k->size, k->nmemb, &n, &el);
		p = awl_put_uv_room(p, n);
		p = awl_put_uv_room(p, el);
	} else { /* ATR_ARGS_ALIGN, ATR_ARGS_ALIGN_OUT */
		p = awl_put_uv_room(p, k->align);
		p = awl_put_uv_room(p, k->size);
	}
	awl_writer_commit_th(wt, p);
	awl_writer_count_call_th(c->w, wt, op);
	struct atr_call x;
	if (ok && __builtin_expect(c->live.park.n != 0, 0) &&
	    lv_park_claim(&c->live.park, k->ret, k->thread, k->ts, &x) &&
	    release_claimed(c, ti, k, &x, f.slot, idx))
		return;
	if (ok)
		addr_insert(c, ti, k, ev, k->ret, f.slot, k->size, idx);
}

/* rel: the old block if a REALLOC_RELEASE took it already (released). */
static void on_realloc(struct conv *c, uint32_t ti, const struct atr_call *k,
		       const struct atr_event *ev, int released, const struct lv_block *rel)
{
	struct cthread *t = &c->th[ti];
	uint32_t wi = t->widx;
	uint64_t src = 0, dst = 0; /* slot + 1 */
	struct lv_block sb = {0};
	int kept = 0; /* a failed realloc's old block (sb), still live */
	int ok = k->ret != 0;
	if (released) {
		sb = *rel;
		src = (uint64_t)sb.tag + 1;
	} else if (k->ptr) {
		if (!ok && k->size) {
			/* failed realloc: the old block stays live */
			kept = addr_peek(c, k->ptr, &sb);
			if (kept) {
				src = (uint64_t)sb.tag + 1;
			} else {
				c->st->unknown_reallocs++;
				report(c, REP_UREALLOC, k, ev,
				       "realloc of a block never allocated (replayed as "
				       "realloc(NULL))");
			}
		} else if (addr_take(c, k->ptr, &sb)) {
			src = (uint64_t)sb.tag + 1;
			touch_release(c, &sb,
				      ev ? ev : &rp_no_res); /* in place, or realloc(p, 0) */
		} else {
			c->st->unknown_reallocs++;
			report(c, REP_UREALLOC, k, ev,
			       "realloc of a block never allocated (replayed as realloc(NULL))");
		}
	}
	if (!ok)
		c->st->failed_allocs += k->ptr == 0 || k->size != 0;
	if (src)
		emit_wait_for(c, ti, sb.owner, sb.when);
	int frees_src = src && (ok || k->size == 0);
	if (ok) {
		if (frees_src) {
			dst = src; /* the slot freed is this thread's latest: reused */
		} else {
			struct fslot f = slot_new(c, ti);
			if (c->nomem)
				return;
			emit_wait_for(c, ti, f.owner, f.when);
			dst = (uint64_t)f.slot + 1;
		}
		touch_place(c, ti, dst - 1, usable_of(k), k->chunk_flags);
	}
	uint64_t idx = awl_writer_thread_ops(c->w, wi);
	unsigned op = op_of_type[k->type];
	uint8_t *p = op_begin(c, ti, op);
	p = awl_put_uv_room(p, src);
	p = awl_put_uv_room(p, dst);
	if (atr_call_args(k->type) == ATR_ARGS_OLD) {
		p = awl_put_uv_room(p, k->size);
	} else {
		uint64_t n, el;
		split_array(k->size, k->nmemb, &n, &el);
		p = awl_put_uv_room(p, n);
		p = awl_put_uv_room(p, el);
	}
	op_end(c, ti, p, op);
	if (kept) { /* still live, used last by this op */
		if (c->multi)
			use_set(c, sb.tag, wi, idx);
	} else if (frees_src && !ok) {
		slot_release(c, ti, src - 1, idx);
	}
	if (ok)
		addr_insert(c, ti, k, ev, k->ret, dst - 1, k->size, idx);
}

static uint64_t rel_key(uint32_t ti, uint64_t ptr)
{
	return ptr ^ ((uint64_t)ti << 48);
}

static void on_release(struct conv *c, uint32_t ti, const struct atr_call *k,
		       const struct atr_event *ev)
{
	struct lv_block b, *rb;
	if (k->ptr && util_hmap_remove(&c->excl, k->ptr, NULL)) {
		/* a left-out block: its realloc is left out or allocates anew */
		if (lv_born(&c->rel, rel_key(ti, k->ptr), 0, 0, &rb, NULL) < 0) {
			c->nomem = 1;
			return;
		}
		rb->tag = RP_EXCLUDED;
		return;
	}
	if (k->ptr && addr_take(c, k->ptr, &b)) {
		touch_release(c, &b, ev ? ev : &rp_no_res); /* the realloc's old block */
		if (lv_born(&c->rel, rel_key(ti, k->ptr), b.size, b.when, &rb, NULL) < 0) {
			c->nomem = 1;
			return;
		}
		rb->tag = b.tag;
		rb->owner = b.owner;
	}
}

/* A CPU record of thread ti (docs/TRACE_FORMAT.md, "CPU time"): the
 * recorder wrote one before each record that ended a gap of more than its
 * cpu_gap, so between two of them every gap but the last was short, and
 * the time the thread was off its CPU (wall - CPU time) lies in that last
 * gap (think_cpu). */
static void cpu_sample(struct conv *c, uint32_t ti, const struct atr_event *ev)
{
	struct cthread *t = &c->th[ti];
	uint64_t v[3];
	memcpy(v, ev->payload, sizeof v);
	if (t->have_cpu && ev->ts >= t->cpu_ts && v[0] >= t->cpu_ns) {
		uint64_t wall = ev->ts - t->cpu_ts;
		double cpu = (double)(v[0] - t->cpu_ns) * c->tpn;
		t->off_ticks = (double)wall > cpu ? wall - (uint64_t)cpu : 0;
		t->cpu_pending = 1;
	}
	t->have_cpu = 1;
	t->cpu_ns = v[0];
	t->cpu_ts = ev->ts;
}

static void on_meta(struct conv *c, uint32_t ti, const struct atr_event *ev)
{
	uint8_t *p;
	switch (ev->type) {
	case ATR_T_THREAD_START:
		p = op_begin(c, ti, AWL_OP_THREAD_START);
		p = awl_put_uv_room(p, ev->arg);
		op_end(c, ti, p, 0);
		break;
	case ATR_T_THREAD_EXIT:
		if (c->th[ti].exited)
			break; /* once per thread */
		lifecycle_op(c, ti, 0);
		p = op_begin(c, ti, AWL_OP_THREAD_EXIT);
		op_end(c, ti, p, 0);
		c->th[ti].exited = 1;
		c->last_exit = ti;
		c->last_exit_ts = ev->ts;
		{
			uint32_t pos = c->th[ti].alive_pos, last = c->alive[--c->nlive];
			c->alive[pos] = last;
			c->th[last].alive_pos = pos;
		}
		break;
	case ATR_T_MARKER: {
		uint32_t len = ev->payload_len > AWL_MARKER_MAX ? AWL_MARKER_MAX : ev->payload_len;
		p = awl_writer_reserve(c->w, c->th[ti].widx, 16 + len);
		*p++ = AWL_OP_MARKER;
		p = awl_put_uv_room(p, len);
		if (len && ev->payload)
			memcpy(p, ev->payload, len);
		else
			memset(p, 0, len);
		op_end(c, ti, p + len, 0);
		break;
	}
	case ATR_T_LOST: {
		uint64_t n = 0;
		if (ev->payload && ev->payload_len >= 8)
			memcpy(&n, ev->payload, 8);
		c->st->lost_records += n;
		break;
	}
	case ATR_T_CPU:
		if (c->use_cpu && ev->payload && ev->payload_len >= 8)
			cpu_sample(c, ti, ev);
		break;
	case ATR_T_RECORDER:
		if (ev->payload && ev->payload_len >= 8) {
			uint64_t v;
			memcpy(&v, ev->payload, 8);
			c->th[ti].rec_next += v;
		}
		break;
	default:
		break;
	}
}

/* ------------------------------------------------------ extended calls */
/* Thread ti's next op uses mapping slot m: the WAIT for its last use by
 * another thread (map_wait), then the op's index becomes its last use
 * (map_mark); map_op_begin does both for an op on one slot. */
static void map_wait(struct conv *c, uint32_t ti, uint32_t m)
{
	emit_wait_for(c, ti, c->ms[m].owner, c->ms[m].when);
}

static void map_mark(struct conv *c, uint32_t ti, uint32_t m)
{
	c->ms[m].owner = c->th[ti].widx;
	c->ms[m].when = awl_writer_thread_ops(c->w, c->th[ti].widx);
}

static void map_op_begin(struct conv *c, uint32_t ti, uint32_t m)
{
	map_wait(c, ti, m);
	map_mark(c, ti, m);
}

static void xop_end(struct conv *c, uint32_t ti, uint8_t *p, unsigned code)
{
	op_end(c, ti, p, 0);
	awl_writer_count_xop(c->w, code);
	c->xops = 1;
}

/* A free mapping slot for thread ti (WAIT for its last use included). */
static uint32_t map_slot_new(struct conv *c, uint32_t ti)
{
	uint32_t m;
	if (c->nmfree) {
		m = c->mfree[--c->nmfree];
	} else {
		if (c->nms == c->mscap) {
			uint32_t nc = c->mscap ? c->mscap * 2 : 16;
			struct mslot *n = realloc(c->ms, nc * sizeof(*n));
			if (!n || c->nms == RP_NONE - 1) {
				if (n)
					c->ms = n;
				c->nomem = 1;
				return 0;
			}
			c->ms = n;
			c->mscap = nc;
		}
		m = c->nms++;
		c->ms[m] = (struct mslot){.owner = RP_NONE};
	}
	return m;
}

static void map_slot_free(struct conv *c, uint32_t m)
{
	if (c->nmfree == c->mfreecap) {
		uint32_t nc = c->mfreecap ? c->mfreecap * 2 : 16;
		uint32_t *n = realloc(c->mfree, nc * sizeof(*n));
		if (!n) {
			c->nomem = 1;
			return;
		}
		c->mfree = n;
		c->mfreecap = nc;
	}
	c->mfree[c->nmfree++] = m;
}

struct map_ctx {
	struct conv *c;
	uint32_t ti;
	uint64_t advice;
	int slots; /* parts of mapping slots were met */
};

static int is_map_slot(uint64_t tag)
{
	return tag < RP_NONE;
}

/* The op (code) on a part of a mapping, begun: its slot, offset and
 * length written; NULL if the part is no slot's (a file, left out). */
static uint8_t *part_op(struct map_ctx *x, const struct ur_range *r, unsigned code)
{
	if (!is_map_slot(r->tag))
		return NULL;
	x->slots = 1;
	uint32_t m = (uint32_t)r->tag;
	map_op_begin(x->c, x->ti, m);
	uint8_t *p = op_begin(x->c, x->ti, code);
	p = awl_put_uv_room(p, m);
	p = awl_put_uv_room(p, r->off);
	return awl_put_uv_room(p, r->end - r->start);
}

/* A part of a mapping the program unmapped (munmap, or a new mapping
 * over it): a MUNMAP op if it is a slot's. */
static void unmap_part(void *arg, const struct ur_range *r)
{
	struct map_ctx *x = arg;
	uint8_t *p = part_op(x, r, AWL_OP_MUNMAP);
	if (!p)
		return;
	struct mslot *m = &x->c->ms[r->tag];
	xop_end(x->c, x->ti, p, AWL_OP_MUNMAP);
	m->bytes -= r->end - r->start;
	if (!m->bytes)
		map_slot_free(x->c, (uint32_t)r->tag);
}

static void advise_part(void *arg, const struct ur_range *r)
{
	struct map_ctx *x = arg;
	uint8_t *p = part_op(x, r, AWL_OP_MADVISE);
	if (p)
		xop_end(x->c, x->ti, awl_put_uv_room(p, x->advice), AWL_OP_MADVISE);
}

/* [a, b) is unmapped by the program (cut from the model, MUNMAP ops for
 * the slots' parts); the bytes of it the model knew. */
static uint64_t map_cut(struct conv *c, uint32_t ti, uint64_t a, uint64_t b, int *slots)
{
	struct map_ctx x = {.c = c, .ti = ti};
	uint64_t got = ur_visit(&c->maps, a, b, 1, unmap_part, &x);
	if (got == UINT64_MAX) {
		c->nomem = 1;
		got = 0;
	}
	if (slots)
		*slots = x.slots;
	return got;
}

/* A new mapping [a, a + len) of the model: a slot (an MMAP op) if tag is
 * RP_NONE, else a range of that tag (file, left out). */
static void map_add(struct conv *c, uint32_t ti, uint64_t a, uint64_t len, uint64_t tag,
		    uint32_t mf)
{
	if (tag == RP_NONE) {
		uint32_t m = map_slot_new(c, ti);
		if (c->nomem)
			return;
		map_op_begin(c, ti, m);
		uint8_t *p = op_begin(c, ti, AWL_OP_MMAP);
		p = awl_put_uv_room(p, m);
		p = awl_put_uv_room(p, len);
		p = awl_put_uv_room(p, mf);
		xop_end(c, ti, p, AWL_OP_MMAP);
		c->ms[m].bytes = len;
		c->ms[m].mf = mf;
		tag = m;
	}
	if (ur_insert(&c->maps, a, a + len, tag, 0) < 0)
		c->nomem = 1;
}

static uint64_t page_up(const struct conv *c, uint64_t n)
{
	return n > UINT64_MAX - c->page ? UINT64_MAX & ~(c->page - 1)
					: (n + c->page - 1) & ~(c->page - 1);
}

/* Linux's mmap and mremap flags (the trace holds the program's). */
#define RP_MAP_SHARED	       0x01
#define RP_MAP_FIXED	       0x10
#define RP_MAP_ANONYMOUS       0x20
#define RP_MAP_NORESERVE       0x4000
#define RP_MAP_POPULATE	       0x8000
#define RP_MAP_FIXED_NOREPLACE 0x100000
#define RP_MREMAP_DONTUNMAP    4

/* The slot at address a, if a range of a mapping slot holds a; else
 * RP_NONE. */
static uint64_t map_tag_at(const struct conv *c, uint64_t a)
{
	size_t i = ur_first_after(&c->maps, a);
	if (i < c->maps.n && c->maps.v[i].start <= a)
		return c->maps.v[i].tag;
	return RP_NONE;
}

static void on_mmap(struct conv *c, uint32_t ti, const struct atr_event *ev, int replayed)
{
	if (ev->ret == UINT64_MAX || !ev->size)
		return; /* failed: the replay makes no call */
	uint64_t a = ev->ret, len = page_up(c, ev->size), tag;
	int anon = (ev->mflags & RP_MAP_ANONYMOUS) != 0;
	int fixed = (ev->mflags & RP_MAP_FIXED) && !(ev->mflags & RP_MAP_FIXED_NOREPLACE);
	uint32_t mf = (ev->prot & 1 ? AWL_MF_READ : 0) | (ev->prot & 2 ? AWL_MF_WRITE : 0) |
		      ((ev->mflags & 3) == RP_MAP_SHARED ? AWL_MF_SHARED : 0) |
		      (ev->mflags & RP_MAP_NORESERVE ? AWL_MF_NORESERVE : 0) |
		      (ev->mflags & RP_MAP_POPULATE ? AWL_MF_POPULATE : 0);
	if (len > AWL_MAX_MAP || a > UINT64_MAX - len) {
		c->st->map_unknown++; /* no kernel maps that: a corrupt record */
		return;
	}
	if (!anon)
		c->st->file_maps++;
	if (fixed && anon && replayed && is_map_slot(tag = map_tag_at(c, a))) {
		uint64_t off;
		if (ur_covered(&c->maps, a, a + len, tag, &off)) {
			/* over a part of one of its own mappings (a reservation
			   being committed): the same in the replay's mapping */
			uint32_t m = (uint32_t)tag;
			map_op_begin(c, ti, m);
			uint8_t *p = op_begin(c, ti, AWL_OP_MMAP_FIXED);
			p = awl_put_uv_room(p, m);
			p = awl_put_uv_room(p, off);
			p = awl_put_uv_room(p, len);
			p = awl_put_uv_room(p, mf);
			xop_end(c, ti, p, AWL_OP_MMAP_FIXED);
			return;
		}
	}
	/* the kernel unmaps what was there */
	int slots = 0;
	map_cut(c, ti, a, a + len, &slots);
	if (slots && fixed)
		c->st->map_odd++; /* over parts of several mappings: a new one */
	else if (slots)
		c->st->map_unknown++; /* the model missed an unmap */
	tag = !replayed ? RP_MAP_OUT : anon ? RP_NONE : RP_MAP_FILE;
	map_add(c, ti, a, len, tag, mf);
}

static void on_mremap(struct conv *c, uint32_t ti, const struct atr_event *ev, int replayed)
{
	if (ev->ret == UINT64_MAX || !ev->size)
		return;
	uint64_t a = ev->ptr, olen = page_up(c, ev->old_size), b = ev->ret;
	uint64_t nlen = page_up(c, ev->size), tag = map_tag_at(c, a), off;
	if (nlen > AWL_MAX_MAP || a > UINT64_MAX - olen || b > UINT64_MAX - nlen) {
		c->st->map_unknown++;
		return;
	}
	if (olen && is_map_slot(tag) && ur_covered(&c->maps, a, a + olen, tag, &off) &&
	    !(ev->mflags & RP_MREMAP_DONTUNMAP)) {
		uint32_t s = (uint32_t)tag;
		/* the old range leaves the model first: whatever else the new
		   range covers is unmapped by the kernel (MREMAP_FIXED) */
		if (ur_visit(&c->maps, a, a + olen, 1, NULL, NULL) == UINT64_MAX) {
			c->nomem = 1;
			return;
		}
		map_cut(c, ti, b, b + nlen, NULL);
		if (c->nomem)
			return;
		map_wait(c, ti, s);
		c->ms[s].bytes -= olen;
		uint32_t d = c->ms[s].bytes ? map_slot_new(c, ti) : s;
		if (c->nomem)
			return;
		map_wait(c, ti, d);
		map_mark(c, ti, s);
		map_mark(c, ti, d);
		uint8_t *p = op_begin(c, ti, AWL_OP_MREMAP);
		p = awl_put_uv_room(p, s);
		p = awl_put_uv_room(p, off);
		p = awl_put_uv_room(p, olen);
		p = awl_put_uv_room(p, d);
		p = awl_put_uv_room(p, nlen);
		xop_end(c, ti, p, AWL_OP_MREMAP);
		c->ms[d].bytes = nlen;
		c->ms[d].mf = c->ms[s].mf;
		if (ur_insert(&c->maps, b, b + nlen, d, 0) < 0)
			c->nomem = 1;
		return;
	}
	/* not one piece of one mapping of the program (or MREMAP_DONTUNMAP,
	   or a shared mapping duplicated with old_size 0) */
	uint32_t mf = is_map_slot(tag) ? c->ms[tag].mf : AWL_MF_READ | AWL_MF_WRITE;
	int slots = 0, dontunmap = (ev->mflags & RP_MREMAP_DONTUNMAP) || !olen;
	uint64_t known = 0;
	if (!dontunmap)
		known = map_cut(c, ti, a, a + olen, &slots);
	else
		known = olen ? ur_visit(&c->maps, a, a + olen, 0, NULL, NULL)
			     : (uint64_t)is_map_slot(tag);
	map_cut(c, ti, b, b + nlen, NULL);
	if (is_map_slot(tag) || slots) {
		c->st->map_odd++; /* replayed as the unmap and a new mapping */
		map_add(c, ti, b, nlen, replayed ? RP_NONE : RP_MAP_OUT, mf);
	} else if (known) { /* a file mapping (or one left out) moved */
		map_add(c, ti, b, nlen, tag == RP_NONE ? RP_MAP_FILE : tag, mf);
	} else {
		c->st->map_unknown++;
	}
}

static void on_xcall(struct conv *c, uint32_t ti, const struct atr_event *ev)
{
	struct cthread *t = &c->th[ti];
	/* mappings a filter leaves out stay in the model (their unmaps are
	   no anomaly), without ops */
	int replayed = c->in_window && !c->o->keep;
	uint8_t *p;
	switch (ev->type) {
	case ATR_T_MMAP:
		on_mmap(c, ti, ev, replayed);
		break;
	case ATR_T_MREMAP:
		on_mremap(c, ti, ev, replayed);
		break;
	case ATR_T_MUNMAP:
		if (ev->result == 0 && ev->size &&
		    !map_cut(c, ti, ev->ptr, ev->ptr + page_up(c, ev->size), NULL) && !c->nomem)
			c->st->map_unknown++;
		break;
	case ATR_T_MADVISE: {
		if (ev->result != 0 || !ev->size)
			break;
		if (!awl_advice_replayed((uint64_t)ev->param)) {
			c->st->madvise_other++;
			break;
		}
		struct map_ctx x = {.c = c, .ti = ti, .advice = (uint64_t)ev->param};
		if (!ur_visit(&c->maps, ev->ptr, ev->ptr + page_up(c, ev->size), 0,
			      replayed ? advise_part : NULL, &x))
			c->st->map_unknown++;
		break;
	}
	case ATR_T_MALLOPT:
		if (!c->in_window)
			break;
		p = op_begin(c, ti, AWL_OP_MALLOPT);
		p = awl_put_uv_room(p, awl_zz(ev->param));
		p = awl_put_uv_room(p, awl_zz(ev->value));
		p = awl_put_uv_room(p, awl_zz(ev->result));
		xop_end(c, ti, p, AWL_OP_MALLOPT);
		break;
	case ATR_T_MALLOC_TRIM:
		if (!c->in_window)
			break;
		p = op_begin(c, ti, AWL_OP_MALLOC_TRIM);
		p = awl_put_uv_room(p, ev->size);
		p = awl_put_uv_room(p, ev->result != 0);
		xop_end(c, ti, p, AWL_OP_MALLOC_TRIM);
		break;
	case ATR_T_MALLOC_USABLE_SIZE: {
		uint64_t src = 0;
		if (!c->in_window || (ev->ptr && util_hmap_lookup(&c->excl, ev->ptr, NULL)))
			break; /* a block left out */
		struct lv_block b;
		if (addr_peek(c, ev->ptr, &b)) {
			emit_wait_for(c, ti, b.owner, b.when);
			if (c->multi)
				use_set(c, b.tag, t->widx, awl_writer_thread_ops(c->w, t->widx));
			src = (uint64_t)b.tag + 1;
		} else if (ev->ptr) {
			c->st->usable_unknown++; /* replayed as malloc_usable_size(NULL) */
		}
		p = op_begin(c, ti, AWL_OP_USABLE_SIZE);
		p = awl_put_uv_room(p, src);
		p = awl_put_uv_room(p, ev->usable);
		xop_end(c, ti, p, AWL_OP_USABLE_SIZE);
		break;
	}
	default: /* brk, sbrk: the replay's allocator owns its break */
		c->st->break_moves++;
		break;
	}
}

/* A long gap (>= RP_JOIN_MIN_NS) in thread ti ending at start, during
 * which another thread exited, in its first half: ti is taken to have
 * waited for that exit (pthread_join, or a pool waiting for its workers)
 * rather than to have worked.  The gap up to the exit becomes a WAIT for
 * every op the exited thread has made so far (a real dependency, which
 * the replay honours at its own speed); only the rest stays think time.
 * Returns the stamp the think time counts from. */
static uint64_t think_joined(struct conv *c, uint32_t ti, uint64_t ret, uint64_t start)
{
	uint32_t x = c->last_exit;
	if (x == RP_NONE || x == ti || start - ret < c->join_ticks || c->last_exit_ts <= ret ||
	    c->last_exit_ts > start || (start - c->last_exit_ts) * 2 > start - ret)
		return ret;
	uint32_t xw = c->th[x].widx;
	emit_wait_ops(c, ti, xw, awl_writer_thread_ops(c->w, xw));
	c->st->joins++;
	return c->last_exit_ts;
}

/* 1 + the other live threads of ti that made a call since from. */
static uint32_t busy_threads(const struct conv *c, uint32_t ti, uint64_t from)
{
	uint32_t k = 1;
	for (uint32_t i = 0; i < c->nlive; i++) {
		const struct cthread *x = &c->th[c->alive[i]];
		k += c->alive[i] != ti && x->have_ret && x->ret_ts > from;
	}
	return k;
}

/* A long gap of thread ti (since its call returned at t->ret_ts) while
 * the process had more threads than CPUs: the threads that made a call
 * during it ran then, so ti had about ncpu / (1 + their number) of a core
 * and waited for one the rest of the gap, which is not think time (the
 * replay's threads wait for cores by themselves).  A thread that sleeps
 * (I/O, a lock) while others run is shared too: its gap is mostly slept
 * in the replay anyway (past RP_THINK_SPIN_MAX_NS), only shorter. */
static uint64_t think_share(struct conv *c, uint32_t ti, uint64_t gap)
{
	uint32_t k = busy_threads(c, ti, c->th[ti].ret_ts);
	if (k <= c->ncpu)
		return gap;
	uint64_t kept = gap / k * c->ncpu + gap % k * c->ncpu / k;
	c->st->shared_gaps++;
	c->st->shared_ns += atr_ticks_to_ns_u64(c->f, gap - kept);
	return kept;
}

/* Thread ti's pending think time and add more, as a THINK op now (if
 * any: at least min_ticks, or before a WAIT). */
static void think_flush(struct conv *c, uint32_t ti, uint64_t add)
{
	struct cthread *t = &c->th[ti];
	uint64_t ns = atr_ticks_to_ns_u64(c->f, t->think_ticks + add);
	t->think_ticks = 0;
	if (ns) {
		uint8_t *p = op_begin(c, ti, AWL_OP_THINK);
		p = awl_put_uv_room(p, ns);
		op_end(c, ti, p, 0);
		c->think_total += ns;
	}
}

/* A gap of thread ti ending at start (full: all of it, gap: the part left
 * after a join and the floor) that a CPU record closed, with no more
 * threads busy than CPUs, in which ti was off its CPU for at least half of
 * it: blocked, or runnable while another process had the core (a thread
 * that would have blocked had it run: the voluntary switch counts cannot
 * tell, tests/progs/turns on a loaded machine).  If another thread's call returned in the
 * gap's second half, at most handoff_ticks before start, that thread woke
 * ti: it handed over a lock, CPython's GIL, a queue's item.  Kept as think
 * time, the blocked part would be spent whole in the replay and then the
 * wait for that thread's blocks on top (the program waited once); so it
 * becomes a WAIT for that thread's ops so far, which the replay honours at
 * its own speed, and only the time ti was on its CPU stays think time:
 * what fits after the wake-up after the WAIT, the rest before it.
 * Returns the think time after the WAIT, UINT64_MAX if not a hand-off. */
static uint64_t think_handoff(struct conv *c, uint32_t ti, uint64_t start, uint64_t full,
			      uint64_t gap)
{
	struct cthread *t = &c->th[ti];
	if (!c->handoff_ticks || t->off_ticks * 2 < full)
		return UINT64_MAX;
	uint32_t x = RP_NONE;
	uint64_t xr = 0;
	for (uint32_t i = 0; i < c->nlive; i++) {
		const struct cthread *o = &c->th[c->alive[i]];
		if (c->alive[i] != ti && o->have_ret && o->ret_ts > xr) {
			x = c->alive[i];
			xr = o->ret_ts;
		}
	}
	uint64_t since = xr < start ? start - xr : 0; /* the wake-up */
	if (x == RP_NONE || xr <= start - full || since > c->handoff_ticks || since * 2 > full)
		return UINT64_MAX;
	uint64_t on = full > t->off_ticks ? full - t->off_ticks : 0;
	if (on > gap)
		on = gap;
	uint64_t after = since < on ? since : on;
	think_flush(c, ti, on - after);
	uint32_t xw = c->th[x].widx;
	emit_wait_ops(c, ti, xw, awl_writer_thread_ops(c->w, xw));
	c->st->handoffs++;
	c->st->handoff_ns += atr_ticks_to_ns_u64(c->f, gap - on);
	return after;
}

/* A gap of thread ti that a CPU record closed (full: the whole gap since
 * its previous call, gap: the part left after a join and the floor).  If
 * more of the process's threads made calls during it than the process had
 * CPUs, they kept the cores busy: the time the thread was off its CPU it
 * waited for a core or for them (the allocator's lock), which the replay's
 * threads do by themselves, so only its time on the CPU is think time.
 * Otherwise returns UINT64_MAX and the gap stays as without the clock:
 * the thread blocked on its own (I/O, a sleep) or another process had the
 * core, and neither is the replay's to meet. */
static uint64_t think_cpu(struct conv *c, uint32_t ti, uint64_t start, uint64_t full, uint64_t gap)
{
	struct cthread *t = &c->th[ti];
	t->cpu_pending = 0;
	if (!c->ncpu || busy_threads(c, ti, t->ret_ts) <= c->ncpu) {
		uint64_t h = think_handoff(c, ti, start, full, gap);
		if (h != UINT64_MAX)
			return h;
		c->st->cpu_kept++;
		return UINT64_MAX;
	}
	uint64_t on = full > t->off_ticks ? full - t->off_ticks : 0;
	if (on >= gap)
		return gap;
	c->st->cpu_gaps++;
	c->st->cpu_off_ns += atr_ticks_to_ns_u64(c->f, gap - on);
	return on;
}

/* A sampled duration d (ticks) joins the window of its call type's last
 * EST_WIN samples, whose mean is the type's typical time.  The mean, not
 * the median: an allocator's time is heavy-tailed (glibc's free now and
 * then consolidates its fastbins for milliseconds, malloc sorts its
 * unsorted bin), and that time, which the replay's allocator spends again,
 * belongs to the calls, not to the gaps around them.  With the median,
 * perl's untimed calls came to 0.16 s of the 0.35-0.40 s that timing every
 * call measures, and the rest went into think time that the replay spent
 * on top of its own consolidations (bench/fidelity/RESULTS.md, "The
 * allocator's time in sampled traces").  Each sample stands for the
 * untimed calls around it (timing_sample of them); one that waited on a
 * lock counts at that weight, as it would if every call were timed, up to
 * the CPU-record gap (est_cap: a longer wait in an untimed call is the
 * CPU record's to judge). */
static void est_add(struct rp_est *e, uint64_t d)
{
	uint32_t x = d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
	if (e->n == EST_WIN)
		e->sum -= e->v[e->pos];
	else
		e->n++;
	e->v[e->pos] = x;
	e->pos = (e->pos + 1) % EST_WIN;
	e->sum += x;
	e->typ = (uint32_t)(e->sum / e->n);
}

RP_HOT void think_gap_at(struct conv *c, uint32_t ti, uint64_t start, uint64_t ret);

/* A timed call of thread ti teaches its type's typical time (think_before). */
RP_COLD void est_learn(struct conv *c, uint32_t ti, unsigned type, uint64_t duration)
{
	est_add(&c->th[ti].est[type], duration);
	est_add(&c->est_all[type], duration);
}

/* Sampled durations (est_on) for a call of thread ti that is not a
 * realloc, stamped ts: a timed call teaches the typical time of its type,
 * an untimed one is taken to have lasted that long (an allocation is
 * stamped at its end, a free at its start): *start and *ret move. */
RP_HOT uint32_t est_of(const struct conv *c, const struct cthread *t, unsigned type)
{
	return t->est[type].n >= EST_MIN ? t->est[type].typ : c->est_all[type].typ;
}

RP_HOT void est_times(struct conv *c, uint32_t ti, unsigned type, uint64_t ts, uint64_t duration,
		      unsigned flags, uint64_t size, uint64_t *start, uint64_t *ret)
{
	if (flags & ATR_FLAG_TIMED) {
		if (size < c->timed_lo && duration < c->est_cap)
			est_learn(c, ti, type, duration);
		return;
	}
	uint32_t e = est_of(c, &c->th[ti], type);
	if (type == ATR_T_FREE)
		*ret = ts + e;
	else if (ts >= e)
		*start = ts - e;
	c->est_calls++;
	c->est_ticks += e;
}

/* Thread ti makes a call (ev): the time since its previous call returned,
 * less the recorder's own share (think_floor_ns per gap), is think time;
 * gaps add up until they reach RP_THINK_MIN_NS and go out as a THINK op
 * before the call. */
RP_HOT void think_before(struct conv *c, uint32_t ti, unsigned type, int rea, uint64_t ts,
			 uint64_t duration, unsigned flags, uint64_t size)
{
	/* rea: the reader stamps a realloc with its end (docs/TRACE_FORMAT.md),
	   and the extended calls but munmap */
	uint64_t start = rea && ts >= duration ? ts - duration : ts;
	uint64_t ret = rea || !(flags & ATR_FLAG_TIMED) ? ts : ts + duration;
	if (__builtin_expect(c->est_on, 0) && !rea && type <= ATR_NCALLS)
		est_times(c, ti, type, ts, duration, flags, size, &start, &ret);
	think_gap_at(c, ti, start, ret);
}

/* think_before once the call's start and return are known. */
RP_HOT void think_gap_at(struct conv *c, uint32_t ti, uint64_t start, uint64_t ret)
{
	struct cthread *t = &c->th[ti];
	/* gap_ticks: the smaller of join_ticks and floor_ticks (a gap that
	   passes neither is no think time: most gaps between calls) */
	if (t->have_ret && start > t->ret_ts + c->gap_ticks) {
		uint64_t ret0 = t->ret_ts; /* the whole gap's start (think_cpu) */
		if (start > t->ret_ts + c->join_ticks)
			t->ret_ts = think_joined(c, ti, t->ret_ts, start);
		if (start > t->ret_ts + c->floor_ticks) {
			/* in ticks: no conversion per call */
			uint64_t gap = start - t->ret_ts - c->floor_ticks;
			uint64_t g;
			if (__builtin_expect(t->cpu_pending, 0) &&
			    (g = think_cpu(c, ti, start, start > ret0 ? start - ret0 : 0, gap)) !=
				UINT64_MAX)
				gap = g;
			else if (gap >= c->share_ticks && c->nlive > c->ncpu)
				gap = think_share(c, ti, gap);
			if (__builtin_expect(t->rec_gap != 0, 0)) {
				/* the recorder's flush after the previous call */
				c->st->recorder_ns +=
				    atr_ticks_to_ns_u64(c->f, gap < t->rec_gap ? gap : t->rec_gap);
				gap = gap > t->rec_gap ? gap - t->rec_gap : 0;
			}
			t->think_ticks += gap;
			if (t->think_ticks >= c->min_ticks)
				think_flush(c, ti, 0);
		}
	}
	t->cpu_pending = 0;
	t->rec_gap = t->rec_next; /* a flush before this call's record ran after its stamp */
	t->rec_next = 0;
	t->have_ret = 1;
	t->ret_ts = ret;
}

/* Records of a trace file, to find the busiest process: the block
 * headers' count misses the staging blocks, so small traces are counted
 * exactly (as the analysis commands order them). */
static uint64_t busy_records(atr_file *f)
{
	uint64_t n = atr_get_info(f)->records_hint;
	if (n < 1000000)
		atr_count_records(f, &n);
	return n;
}

/* Pointers of process fi live at fi << RP_MERGE_SHIFT: user-space
 * addresses are below 2^47 (x86-64 and aarch64 without a hint). */
#define RP_MERGE_SHIFT 47

/* One process of a --merge: its events with times on the first file's
 * clock, addresses and thread serials moved into their own ranges. */
struct msrc {
	atr_file *f;
	atr_iter *it;
	const struct atr_event *head; /* NULL: at its end */
	uint64_t ts;		      /* head's merged time */
	double scale;		      /* ticks of file 0 per tick of this one */
	uint64_t off;		      /* its start on file 0's clock */
	uint32_t fi;
	/* its threads (new serial, tid): when its records end, they exit */
	struct {
		uint32_t serial, tid;
	} * thr;
	size_t nthr, ended;
	const struct lv_set *pf_set; /* the prefetch hook's (msrc_prefetch) */
};

/* The live set's entry of a block of this process, at its merged address. */
static void msrc_prefetch(void *ctx, uint64_t addr)
{
	const struct msrc *m = ctx;
	lv_prefetch(m->pf_set, addr | (uint64_t)m->fi << RP_MERGE_SHIFT);
}

/* Where the events come from: an alloctrace trace (one process, or all of
 * them with --merge), or a dj/malloc trace (dj_trace.h: recognised by its
 * magic record). */
struct source {
	atr_file *f; /* the process converted; with --merge the first one
			(its clock is the workload's) */
	atr_iter *it;
	dj_trace *dj;
	struct msrc *m;
	size_t nm;
	size_t *heap, hn; /* m indices by head time */
	struct msrc *last;
	struct util_hmap serials; /* fi << 32 | serial -> new serial */
	uint32_t nserials;
	struct atr_event cur;
	uint32_t orig_thread; /* the latest event's serial in its process */
	int bad;	      /* a pointer outside the merge's range */
	/* the latest event's serial in its process and its file (the
	 * filters' keep() wants them; a dj trace, read ahead by lv_ahead, has
	 * no filters) */
	struct src_orig {
		uint32_t thread;
		atr_file *f;
	} orig;
	/* one process, one thread: its calls as compact records
	 * (atr_iter_next_calls), each handed out as the event calls_ev (the
	 * fields a call does not use stay 0), then the full event that
	 * followed them (calls_next) */
	int narrow;
	struct atr_call calls[256];
	size_t ncalls, icall;
	const struct atr_event *calls_next;
	struct atr_event calls_ev;
	uint64_t calls_seq; /* the events' seq: the iterator's count */
};

static int pick_trace(const char *trace, const struct rp_convert_opts *o,
		      struct rp_convert_stats *st, atr_file **out, char *eb, size_t el)
{
	char **paths;
	size_t n;
	int rc = atr_list(trace, &paths, &n, eb, el);
	if (rc < 0)
		return rc;
	rc = ATR_E_USAGE;
	int err = 0; /* the first process that could not be opened */
	uint64_t best = 0;
	st->nprocs = (uint32_t)n;
	*out = NULL;
	for (size_t i = 0; i < n; i++) {
		atr_file *f;
		int r = atr_open(paths[i], &f, eb, el);
		if (r < 0) {
			rc = r;
			if (!o->pid)
				break; /* every process must be readable to pick one */
			continue;
		}
		if ((!o->pid || atr_get_info(f)->pid == o->pid) && atr_sample_rate(f)) {
			/* replay needs every call; a sampled trace holds a few */
			snprintf(eb, el,
				 "%s: a sampled trace (record --sample %" PRIu64
				 ") holds only sampled calls and cannot be replayed; record "
				 "without --sample to convert",
				 paths[i], atr_sample_rate(f));
			atr_close(f);
			if (*out)
				atr_close(*out);
			*out = NULL;
			atr_list_free(paths, n);
			return ATR_E_USAGE;
		}
		uint64_t recs = o->pid ? 0 : busy_records(f);
		if (o->pid ? atr_get_info(f)->pid == o->pid : !*out || recs > best) {
			if (*out)
				atr_close(*out);
			*out = f;
			best = recs;
			st->pid = atr_get_info(f)->pid;
			snprintf(st->trace_path, sizeof(st->trace_path), "%s", paths[i]);
			rc = 0;
			if (o->pid)
				break;
			continue;
		}
		atr_close(f);
	}
	if (rc == 0 && *out && !o->pid && st->nprocs > 1 && err) {
		/* an unreadable process: do not pick among the others */
		atr_close(*out);
		*out = NULL;
		rc = err;
	}
	if (rc < 0 && !o->pid && err)
		rc = err;
	if (rc < 0 && o->pid) {
		rc = ATR_E_USAGE;
		snprintf(eb, el, "%s: no process %" PRIu32 " in this trace", trace, o->pid);
	}
	atr_list_free(paths, n);
	return rc;
}

static int heap_less(const struct source *sc, size_t a, size_t b)
{
	const struct msrc *x = &sc->m[sc->heap[a]], *y = &sc->m[sc->heap[b]];
	return x->ts != y->ts ? x->ts < y->ts : x->fi < y->fi;
}

static void heap_swap(struct source *sc, size_t a, size_t b)
{
	size_t t = sc->heap[a];
	sc->heap[a] = sc->heap[b];
	sc->heap[b] = t;
}

static void msrc_heap_down(struct source *sc, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		if (l < sc->hn && heap_less(sc, l, m))
			m = l;
		if (l + 1 < sc->hn && heap_less(sc, l + 1, m))
			m = l + 1;
		if (m == i)
			return;
		heap_swap(sc, i, m);
		i = m;
	}
}

static void msrc_heap_up(struct source *sc, size_t i)
{
	while (i > 0 && heap_less(sc, i, (i - 1) / 2)) {
		heap_swap(sc, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

/* Next event of m into its head; 1, 0 at its end, -1 on error. */
static int msrc_advance(struct msrc *m)
{
	int r = atr_iter_next_ref(m->it, &m->head);
	if (r <= 0) {
		m->head = NULL;
		return r;
	}
	m->ts = m->off + (uint64_t)((double)m->head->ts * m->scale);
	return 1;
}

/* --merge: open every process of the trace. */
static int merge_open(struct source *sc, const char *trace, int stacks, struct rp_convert_stats *st,
		      char *eb, size_t el)
{
	char **paths;
	size_t n;
	int rc = atr_list(trace, &paths, &n, eb, el);
	if (rc < 0)
		return rc;
	rc = 0;
	sc->m = calloc(n ? n : 1, sizeof(*sc->m));
	sc->heap = calloc(n ? n : 1, sizeof(*sc->heap));
	if (!sc->m || !sc->heap) {
		snprintf(eb, el, "%s: out of memory", trace);
		rc = ATR_E_NOMEM;
	}
	if (!rc && n > ((size_t)1 << (63 - RP_MERGE_SHIFT))) {
		snprintf(eb, el, "%s: --merge takes at most %zu processes", trace,
			 (size_t)1 << (63 - RP_MERGE_SHIFT));
		rc = ATR_E_USAGE;
	}
	uint64_t t0 = UINT64_MAX;
	for (size_t i = 0; i < n && !rc; i++) {
		struct msrc *m = &sc->m[sc->nm];
		if ((rc = atr_open(paths[i], &m->f, eb, el)) < 0 ||
		    (rc = atr_iter_new(m->f, &m->it)) < 0) {
			if (m->f && !eb[0])
				snprintf(eb, el, "%s", atr_last_error(m->f));
			if (m->f)
				atr_close(m->f);
			m->f = NULL;
			break;
		}
		m->fi = (uint32_t)sc->nm++;
		if (atr_sample_rate(m->f)) {
			snprintf(eb, el,
				 "%s: a sampled trace (record --sample %" PRIu64
				 ") holds only sampled calls and cannot be replayed; record "
				 "without --sample to convert",
				 paths[i], atr_sample_rate(m->f));
			rc = ATR_E_USAGE;
			break;
		}
		if (stacks && !(atr_get_info(m->f)->features & ATR_FEAT_STACKS))
			st->no_stacks++;
		if (stacks && (rc = atr_stacks_load(m->f)) < 0) {
			snprintf(eb, el, "%s", atr_last_error(m->f));
			break;
		}
		if (atr_get_info(m->f)->start_mono_ns < t0)
			t0 = atr_get_info(m->f)->start_mono_ns;
	}
	if (!rc && !sc->nm) {
		snprintf(eb, el, "%s: no trace file", trace);
		rc = ATR_E_NOTRACE;
	}
	if (!rc) {
		sc->f = sc->m[0].f;
		const struct atr_info *ref = atr_get_info(sc->f);
		double tps0 = ref->ticks_per_sec > 0 ? ref->ticks_per_sec : 1e9;
		st->nprocs = (uint32_t)sc->nm;
		st->pid = ref->pid;
		snprintf(st->trace_path, sizeof(st->trace_path), "%s", trace);
		for (size_t i = 0; i < sc->nm && !rc; i++) {
			struct msrc *m = &sc->m[i];
			const struct atr_info *in = atr_get_info(m->f);
			m->scale = in->ticks_per_sec > 0 ? tps0 / in->ticks_per_sec : 1.0;
			m->off = (uint64_t)((double)(in->start_mono_ns - t0) * tps0 / 1e9);
			int r = msrc_advance(m);
			if (r < 0) {
				snprintf(eb, el, "%s", atr_last_error(m->f));
				rc = r;
			} else if (r > 0) {
				sc->heap[sc->hn] = i;
				msrc_heap_up(sc, sc->hn++);
			}
		}
	}
	atr_list_free(paths, n);
	return rc;
}

/* The merged stream's next event (copied: times, addresses and serials
 * rewritten).  The payload stays valid until the next call, as with one
 * file: its iterator moves on only then.  When a process's records end,
 * its threads exit there (a process's main thread writes no THREAD_EXIT;
 * without this every process would stay alive to the end of the
 * workload). */
static int merge_next(struct source *sc, const struct atr_event **ev)
{
	struct atr_event *e = &sc->cur;
	if (sc->last && !sc->last->head) {
		struct msrc *m = sc->last;
		if (m->ended < m->nthr) {
			memset(e, 0, sizeof(*e));
			e->type = ATR_T_THREAD_EXIT;
			e->thread = m->thr[m->ended].serial;
			e->tid = m->thr[m->ended++].tid;
			e->ts = m->ts;
			*ev = e;
			return 1;
		}
		sc->heap[0] = sc->heap[--sc->hn];
		msrc_heap_down(sc, 0);
		sc->last = NULL;
	}
	if (sc->last) {
		int r = msrc_advance(sc->last);
		if (r < 0)
			return r;
		if (r == 0)
			return merge_next(sc, ev); /* its threads exit */
		msrc_heap_down(sc, 0);
		sc->last = NULL;
	}
	if (!sc->hn)
		return 0;
	struct msrc *m = &sc->m[sc->heap[0]];
	sc->last = m;
	*e = *m->head;
	e->ts = m->ts;
	e->duration = (uint64_t)((double)e->duration * m->scale);
	uint64_t hi = (uint64_t)m->fi << RP_MERGE_SHIFT;
	/* a failed mmap or mremap returns MAP_FAILED: no address */
	int failed_map = atr_is_xcall(e->type) && e->ret == UINT64_MAX;
	if ((e->ptr | (failed_map ? 0 : e->ret)) >> RP_MERGE_SHIFT)
		sc->bad = 1;
	if (e->ptr)
		e->ptr |= hi;
	if (e->ret && !failed_map)
		e->ret |= hi;
	sc->orig_thread = e->thread;
	uint64_t key = (uint64_t)m->fi << 32 | e->thread, v;
	if (!util_hmap_lookup(&sc->serials, key, &v)) {
		v = ++sc->nserials;
		void *nt = realloc(m->thr, (m->nthr + 1) * sizeof(*m->thr));
		if (!nt)
			return ATR_E_NOMEM;
		m->thr = nt;
		if (util_hmap_insert(&sc->serials, key, v, NULL) < 0)
			return ATR_E_NOMEM;
		m->thr[m->nthr].serial = (uint32_t)v;
		m->thr[m->nthr++].tid = e->tid;
	}
	e->thread = (uint32_t)v;
	*ev = e;
	return 1;
}

static void src_close(struct source *sc);

static int src_open(struct source *sc, const char *trace, const struct rp_convert_opts *o,
		    struct rp_convert_stats *st, char *eb, size_t el)
{
	memset(sc, 0, sizeof(*sc));
	eb[0] = 0;
	if (dj_trace_detect_path(trace)) {
		if (o->merge || o->keep || o->have_from || o->have_to) {
			snprintf(eb, el,
				 "%s: a dj/malloc trace has one process and no threads' "
				 "stacks or times to select by: --merge and the filters do "
				 "not apply",
				 trace);
			return ATR_E_USAGE;
		}
		int r = dj_trace_open(trace, &sc->dj, eb, el);
		if (r < 0)
			return r; /* dj's -1: ATR_E_IO */
		st->dj = 1;
		st->nprocs = 1;
		snprintf(st->trace_path, sizeof(st->trace_path), "%s", trace);
		return 0;
	}
	if (o->merge) {
		int r = merge_open(sc, trace, o->keep_stacks, st, eb, el);
		if (r < 0)
			src_close(sc);
		return r;
	}
	int r = pick_trace(trace, o, st, &sc->f, eb, el);
	if (r < 0)
		return r;
	/* --module/--function: stack filters need the frames */
	if (o->keep_stacks && !(atr_get_info(sc->f)->features & ATR_FEAT_STACKS))
		st->no_stacks = 1;
	if ((o->keep_stacks && (r = atr_stacks_load(sc->f)) < 0) ||
	    (r = atr_iter_new(sc->f, &sc->it)) < 0) {
		snprintf(eb, el, "%s", atr_last_error(sc->f));
		atr_close(sc->f);
		return r;
	}
	return 0;
}

/* The next event of one process by the narrow path. */
static inline int src_next_narrow(struct source *sc, const struct atr_event **ev)
{
	while (sc->icall == sc->ncalls) {
		if (sc->calls_next) {
			*ev = sc->calls_next;
			sc->calls_next = NULL;
			sc->calls_seq = (*ev)->seq + ((*ev)->type != ATR_EV_REALLOC_RELEASE);
			sc->orig.thread = (*ev)->thread;
			return 1;
		}
		sc->icall = 0;
		int r =
		    atr_iter_next_calls(sc->it, sc->calls, sizeof(sc->calls) / sizeof(sc->calls[0]),
					&sc->ncalls, &sc->calls_next);
		if (r <= 0)
			return r;
	}
	struct atr_event *e = &sc->calls_ev;
	atr_call_event(&sc->calls[sc->icall++], e);
	e->seq = sc->calls_seq;
	sc->calls_seq += e->type != ATR_EV_REALLOC_RELEASE;
	sc->orig.thread = e->thread;
	*ev = e;
	return 1;
}

static int src_next(void *src, const struct atr_event **ev)
{
	struct source *sc = src;
	int r;
	uint32_t th;
	atr_file *f;
	if (sc->narrow)
		return src_next_narrow(sc, ev);
	if (sc->m) {
		r = merge_next(sc, ev);
		if (r <= 0)
			return r;
		th = sc->orig_thread;
		f = sc->last->f;
	} else {
		r = sc->dj ? dj_trace_next(sc->dj, ev) : atr_iter_next_ref(sc->it, ev);
		if (r <= 0)
			return r;
		th = (*ev)->thread;
		f = sc->f;
	}
	sc->orig.thread = th;
	sc->orig.f = f;
	return r;
}

static const char *src_error(const struct source *sc)
{
	if (sc->m)
		return sc->last ? atr_last_error(sc->last->f) : "out of memory";
	return sc->dj ? dj_trace_error(sc->dj) : atr_last_error(sc->f);
}

/* The serial in its process and the file of the event handed out last. */
static const struct src_orig *src_orig_of(const struct source *sc)
{
	return &sc->orig;
}

static void src_close(struct source *sc)
{
	if (sc->dj) {
		dj_trace_close(sc->dj);
		return;
	}
	if (sc->m) {
		for (size_t i = 0; i < sc->nm; i++) {
			atr_iter_free(sc->m[i].it);
			atr_close(sc->m[i].f);
			free(sc->m[i].thr);
		}
		free(sc->m);
		free(sc->heap);
		util_hmap_destroy(&sc->serials);
		return;
	}
	atr_iter_free(sc->it);
	atr_close(sc->f);
}

/* ------------------------------------------------------------ filters */
static uint64_t secs_ticks(const atr_file *f, double sec)
{
	double t = sec * atr_get_info(f)->ticks_per_sec;
	return t <= 0 ? 0 : t >= 1.8e19 ? UINT64_MAX : (uint64_t)t;
}

/* --from/--to: 1 when ev is past --to (the conversion ends
 * there: blocks live then stay live), else opens the window at --from. */
static int is_marker(const struct atr_event *ev, const char *label)
{
	size_t n = strlen(label);
	return ev->type == ATR_T_MARKER && ev->payload_len == n && !memcmp(ev->payload, label, n);
}

static int window_edge(struct conv *c, const struct atr_event *ev)
{
	const struct rp_convert_opts *o = c->o;
	if (o->have_to && (o->to_label ? is_marker(ev, o->to_label) : ev->ts > c->to_ts)) {
		c->st->window_closed = 1;
		return 1;
	}
	if (!c->in_window && (o->from_label ? is_marker(ev, o->from_label) : ev->ts >= c->from_ts))
		c->in_window = c->st->window_open = 1;
	return 0;
}

/* Is allocation ev (or realloc: its new block, or free(NULL)) kept? */
static int alloc_kept(struct conv *c, const struct source *sc, const struct atr_event *ev)
{
	if (!c->in_window)
		return 0;
	if (!c->o->keep)
		return 1;
	const struct src_orig *so = src_orig_of(sc);
	struct atr_event e = *ev;
	e.thread = so->thread;
	return c->o->keep(c->o->keep_arg, so->f, &e);
}

static void exclude(struct conv *c, uint64_t ptr)
{
	if (ptr && util_hmap_insert(&c->excl, ptr, 1, NULL) < 0)
		c->nomem = 1;
}

/* Filtered conversion: one call.  Returns 1 if it goes to the workload as
 * it is; 0 if it was handled here (left out, or a realloc turned into the
 * free of its kept old block). */
static int filter_call(struct conv *c, const struct source *sc, uint32_t ti,
		       const struct atr_call *k, const struct atr_event *ev, int *rel,
		       struct lv_block *rb)
{
	unsigned shape = atr_call_args(ev->type);
	int keep;
	if (shape == ATR_ARGS_PTR) {
		if (!ev->ptr) /* free(NULL): as report counts it */
			keep = alloc_kept(c, sc, ev);
		else
			keep = !util_hmap_remove(&c->excl, ev->ptr, NULL);
		c->st->excluded_calls += !keep;
		return keep;
	}
	int kept = alloc_kept(c, sc, ev);
	if (shape != ATR_ARGS_OLD && shape != ATR_ARGS_OLD_NMEMB) {
		if (!kept) {
			exclude(c, ev->ret);
			c->st->excluded_calls++;
		}
		return kept;
	}
	/* realloc: the old block is kept, left out, NULL or unknown */
	int old_out =
	    *rel ? rb->tag == RP_EXCLUDED : ev->ptr && util_hmap_lookup(&c->excl, ev->ptr, NULL);
	int moved = ev->ret || (ev->ptr && ev->size == 0);
	if (kept) {
		if (old_out) {
			if (!ev->ret) {
				c->st->excluded_calls++;
				return 0; /* failed: the left-out block stays */
			}
			/* the program's old block is not in the workload: a
			 * new allocation there */
			if (!*rel)
				util_hmap_remove(&c->excl, ev->ptr, NULL);
			*rel = 0;
			struct atr_call e = *k;
			e.ptr = 0;
			on_realloc(c, ti, &e, ev, 0, NULL);
			return 0;
		}
		return 1;
	}
	int freed = 0;
	if (old_out) {
		if (!*rel && moved)
			util_hmap_remove(&c->excl, ev->ptr, NULL);
	} else if (moved && ev->ptr) {
		/* a kept block ends here: its free */
		if (*rel || addr_take(c, ev->ptr, rb)) {
			free_block(c, ti, rb, ev);
			freed = 1;
		}
	}
	c->st->excluded_calls += !freed;
	if (ev->ret)
		exclude(c, ev->ret);
	return 0;
}

/* TOUCH ops when every process converted has RESIDENT records with the
 * same page size (docs/WORKLOAD_FORMAT.md). */
static void touch_setup(struct conv *c, const struct source *sc)
{
	uint64_t min = 0;
	uint32_t page = 0;
	int heap = 1;
	size_t n = sc->m ? sc->nm : sc->f ? 1 : 0;
	for (size_t i = 0; i < n; i++) {
		const struct atr_info *in = atr_get_info(sc->m ? sc->m[i].f : sc->f);
		if (!in->resident_min || in->page_size < 1024 || in->page_size % 1024 ||
		    (page && in->page_size != page))
			return;
		page = in->page_size;
		heap &= (in->features & ATR_FEAT_CHUNK_FLAGS) != 0;
		if (in->resident_min > min)
			min = in->resident_min;
		if (in->res_budget)
			c->touch_est = 1;
	}
	c->touch_min = min;
	c->touch_heap = heap;
	c->touch_lo = min / 2; /* usable <= 2 x requested for any allocator we know */
	c->page_kib = page / 1024;
}

/* The progress line, every 4 M records (at most twice a second). */
RP_COLD void progress(struct conv *c)
{
	const struct rp_convert_opts *o = c->o;
	uint64_t n = c->st->records;
	double now = plat_mono_s();
	if (now - c->last_prog <= 0.5)
		return;
	char m[128];
	c->last_prog = now;
	if (c->total_hint)
		snprintf(m, sizeof(m), "convert: %" PRIu64 " records (%.0f%%), %.1f M/s", n,
			 100.0 * (double)n / (double)c->total_hint,
			 (double)n / (now - c->t0) / 1e6);
	else
		snprintf(m, sizeof(m), "convert: %" PRIu64 " records", n);
	o->note(o->note_arg, RP_NOTE_PROGRESS, m);
}

/* The size that tells a timed call k a sample from one the recorder
 * timed for its size (c->timed_lo): a free's block, an allocation's
 * request; 0 when it does not matter. */
static uint64_t est_size(struct conv *c, const struct atr_call *k, unsigned shape)
{
	if (!c->est_on || !(k->flags & ATR_FLAG_TIMED))
		return 0;
	if (shape != ATR_ARGS_PTR)
		return k->size;
	size_t j;
	struct lv_block b;
	return ent_get(c, k->ptr, &j, &b) ? b.size : 0;
}

/* Call k of thread ti (a malloc-family call or the release of a realloc's
 * old block; ev: its full event, NULL for a compact record, which only
 * the unfiltered conversion takes: filtered says which). */
RP_HOT void conv_call(struct conv *c, const struct source *sc, uint32_t ti,
		      const struct atr_call *k, const struct atr_event *ev, int filtered)
{
	if (lv_park_due(&c->live.park, k->ts))
		park_expire(c, k->ts);
	if (k->type == RP_EV_REALLOC_RELEASE) {
		on_release(c, ti, k, ev);
		return;
	}
	unsigned shape = atr_call_args(k->type);
	if (c->in_window) /* no think time before --from */
		think_before(c, ti, k->type, shape == ATR_ARGS_OLD || shape == ATR_ARGS_OLD_NMEMB,
			     k->ts, k->duration, k->flags, est_size(c, k, shape));
	if (!filtered && shape == ATR_ARGS_PTR) {
		on_free(c, ti, k, ev);
		return;
	}
	if (!filtered && shape != ATR_ARGS_OLD && shape != ATR_ARGS_OLD_NMEMB) {
		on_alloc(c, ti, k, ev, shape);
		return;
	}
	struct lv_block rb = {0};
	int rel = 0;
	if (shape == ATR_ARGS_OLD || shape == ATR_ARGS_OLD_NMEMB)
		rel = k->ptr && lv_died(&c->rel, rel_key(ti, k->ptr), &rb);
	if (filtered && !filter_call(c, sc, ti, k, ev, &rel, &rb))
		; /* left out, or written as what is left of it */
	else if (shape == ATR_ARGS_PTR)
		on_free(c, ti, k, ev);
	else if (shape == ATR_ARGS_OLD || shape == ATR_ARGS_OLD_NMEMB)
		on_realloc(c, ti, k, ev, rel, &rb);
	else
		on_alloc(c, ti, k, ev, shape);
}

/* One event: 1 to go on, 0 when the conversion ends here (--to, out of
 * memory, a corrupt thread serial). */
static int conv_event(struct conv *c, const struct source *sc, const struct atr_event *ev)
{
	const struct rp_convert_opts *o = c->o;
	struct rp_convert_stats *st = c->st;
	if (ev->type != RP_EV_REALLOC_RELEASE) {
		if (!st->records++)
			c->first_ts = ev->ts;
		c->last_ts = ev->ts;
	}
	if ((o->have_from || o->have_to) && ev->type != RP_EV_REALLOC_RELEASE && window_edge(c, ev))
		return 0; /* --to */
	uint32_t ti = thread_of(c, ev->thread, ev->tid);
	if (c->nomem || c->bad_serial)
		return 0;
	c->th[ti].last_seq = st->records;
	if ((ev->type >= 1 && ev->type <= ATR_T_CALL_LAST) || ev->type == RP_EV_REALLOC_RELEASE) {
		struct atr_call k;
		atr_event_call(ev, &k);
		st->calls += ev->type != RP_EV_REALLOC_RELEASE;
		conv_call(c, sc, ti, &k, ev, c->filtered);
	} else if (atr_is_xcall(ev->type)) {
		st->xcalls++;
		if (c->in_window)
			think_before(c, ti, ev->type, ev->type != ATR_T_MUNMAP, ev->ts,
				     ev->duration, ev->flags, 0);
		on_xcall(c, ti, ev);
	} else {
		on_meta(c, ti, ev);
	}
	if (c->nomem)
		return 0;
	if (o->progress && o->note && (st->records & 0x3fffff) == 0)
		progress(c);
	return 1;
}

/* A compact record's live-set entries into the cache, some records ahead. */
static inline void call_prefetch(const struct lv_set *set, const struct atr_call *k)
{
	if (k->ptr)
		lv_prefetch_lg(set, k->ptr, LV_LG_SIZES);
	if (k->ret && k->ret != k->ptr)
		lv_prefetch_lg(set, k->ret, LV_LG_SIZES);
}

/* A release's slot's last use into the cache (c->multi), fewer records
 * ahead than call_prefetch: the entry's line, which names the slot, has
 * come by then.  Without it the use's line missed on every free at 1e6
 * live blocks (bench/replay/RESULTS.md, "Entries of 16 bytes"). */
static inline void use_prefetch(const struct conv *c, const struct atr_call *k)
{
	size_t j;
	const struct lv_block *e = ent_find(c, k->ptr, &j);
	if (e)
		lv_prefetch_line(&c->use[e->size >> 32]);
}

/* The fast path of conv_direct: the frees and mallocs of a thread's run
 * of records (no TOUCH op, a known block) converted with its stream's
 * cursor, op count and latest return in registers; think time that only
 * adds up, a THINK op, sampled durations and new slots inline; a WAIT, a
 * join or a shared gap by the handlers' own code, with the run's state
 * stored around it (frun_store, frun_reload); any other record goes
 * through conv_call, which writes the same bytes. */
struct frun {
	struct cthread *t;
	struct awl_wthread *wt;
	uint8_t *p, *lim; /* the stream's cursor and the end of its chunk */
	uint64_t ops, calls, ret_ts;
	/* blocks from these sizes take touch_release / touch_place (their
	   TOUCH ops: conv_call's) */
	uint64_t touch_lo, touch_min;
	uint64_t share_min; /* gaps from this long go to think_share */
	/* sampled durations (est_on): the typical free and malloc (est_of) */
	uint32_t e_free, e_malloc;
	uint32_t widx;
	int on; /* the thread's pending think-time state is clear */
};

/* Thread ti's run state; ok: the conversion's options allow the fast path. */
static inline __attribute__((always_inline)) void frun_load(struct conv *c, struct frun *r,
							    uint32_t ti, int ok)
{
	struct cthread *t = &c->th[ti];
	struct awl_wthread *wt = awl_writer_th(c->w, t->widx);
	r->t = t;
	r->wt = wt;
	r->widx = t->widx;
	/* a parked free: every call through conv_call, whose allocations
	   may claim it */
	r->on =
	    ok && t->have_ret && !t->rec_next && !t->rec_gap && !t->cpu_pending && !c->live.park.n;
	r->p = wt->buf + wt->len;
	r->lim = wt->buf + AWL_CHUNK_HDR + AWL_CHUNK_TARGET;
	r->ops = wt->ops;
	r->calls = wt->calls;
	r->ret_ts = t->ret_ts;
	/* sizes from ENT_BIG on are conv_call's too */
	r->touch_lo = c->touch_min && c->touch_lo < ENT_BIG ? c->touch_lo : ENT_BIG;
	r->touch_min = c->touch_min ? c->touch_min : UINT64_MAX;
	if (c->est_on && c->timed_lo < r->touch_lo) {
		/* calls the recorder may have timed for their size: est_size */
		r->touch_lo = c->timed_lo;
		r->touch_min = c->timed_lo < r->touch_min ? c->timed_lo : r->touch_min;
	}
	r->share_min = c->nlive > c->ncpu ? c->share_ticks : UINT64_MAX;
	if (c->est_on) {
		r->e_free = est_of(c, t, ATR_T_FREE);
		r->e_malloc = est_of(c, t, ATR_T_MALLOC);
	}
}

static inline __attribute__((always_inline)) void frun_store(const struct frun *r)
{
	r->wt->len = (size_t)(r->p - r->wt->buf);
	r->wt->ops = r->ops;
	r->wt->calls = r->calls;
	r->t->ret_ts = r->ret_ts;
}

/* Room for an op at r->p, as awl_writer_reserve_th(w, th, 64) makes it
 * (the chunks end where the handlers would end them). */
static inline __attribute__((always_inline)) void frun_room(struct conv *c, struct frun *r)
{
	if (__builtin_expect(r->p + 64 > r->lim, 0)) {
		frun_store(r);
		awl_writer_flush_thread(c->w, r->widx);
		r->p = r->wt->buf + r->wt->len;
	}
}

/* think_before out of line: the fast path's calls that end a gap of
 * more than gap_ticks (frun_call). */
RP_COLD void think_gap(struct conv *c, uint32_t ti, uint64_t start, uint64_t ret)
{
	think_gap_at(c, ti, start, ret);
}

/* After a handler wrote to the run's stream or moved its think-time
 * stamps (frun_store before it). */
static inline __attribute__((always_inline)) void frun_reload(struct frun *r)
{
	struct awl_wthread *wt = r->wt;
	r->p = wt->buf + wt->len;
	r->lim = wt->buf + AWL_CHUNK_HDR + AWL_CHUNK_TARGET;
	r->ops = wt->ops;
	r->calls = wt->calls;
	r->ret_ts = r->t->ret_ts;
}

/* think_before for a call of the run's thread that starts at ts, more
 * than gap_ticks after its latest return: a gap that only adds to the
 * thread's think time stays here; a join, a shared gap or a THINK op to
 * write go to think_before. */
static inline __attribute__((always_inline)) void
frun_think(struct conv *c, struct frun *r, uint32_t ti, uint64_t start, uint64_t ret)
{
	uint64_t since = start - r->ret_ts; /* > gap_ticks */
	if (since <= c->join_ticks) {
		if (since <= c->floor_ticks)
			return;
		uint64_t g = since - c->floor_ticks;
		if (g < r->share_min) {
			uint64_t tt = r->t->think_ticks + g;
			if (tt < c->min_ticks) {
				r->t->think_ticks = tt;
				return;
			}
			/* think_before's THINK op */
			uint64_t ns = atr_ticks_to_ns_u64(c->f, tt);
			r->t->think_ticks = 0;
			if (ns) {
				frun_room(c, r);
				uint8_t *p = r->p;
				*p++ = AWL_OP_THINK;
				r->p = awl_put_uv_room(p, ns);
				r->ops++;
				c->think_total += ns;
			}
			return;
		}
	}
	frun_store(r);
	think_gap(c, ti, start, ret);
	frun_reload(r);
}

/* think_before for call k (of type) of the run's thread. */
static inline __attribute__((always_inline)) void frun_times(struct conv *c, struct frun *r,
							     uint32_t ti, const struct atr_call *k,
							     unsigned type, uint64_t gap)
{
	uint64_t ts = k->ts, start = ts;
	uint64_t ret = k->flags & ATR_FLAG_TIMED ? ts + k->duration : ts;
	if (__builtin_expect(c->est_on, 0)) {
		/* est_times with the run's typical free and malloc */
		if (k->flags & ATR_FLAG_TIMED) {
			if (k->duration < c->est_cap) /* sizes: frun_load */
				est_learn(c, ti, type, k->duration);
			r->e_free = est_of(c, r->t, ATR_T_FREE);
			r->e_malloc = est_of(c, r->t, ATR_T_MALLOC);
		} else {
			uint32_t e = type == ATR_T_FREE ? r->e_free : r->e_malloc;
			if (type == ATR_T_FREE)
				ret = ts + e;
			else if (ts >= e)
				start = ts - e;
			c->est_calls++;
			c->est_ticks += e;
		}
	}
	if (__builtin_expect(start > r->ret_ts + gap, 0))
		frun_think(c, r, ti, start, ret);
	r->ret_ts = ret;
}

/* Call k of the run's thread ti on the fast path: 1 done, 0 for conv_call
 * (nothing changed).  gap: c->gap_ticks.  The rare steps (a gap that may
 * be think time, a WAIT for another thread's last use) are the handlers'
 * own, with the run's state stored around them. */
static inline __attribute__((always_inline)) int
frun_call(struct conv *c, struct frun *r, uint32_t ti, const struct atr_call *k, uint64_t gap)
{
	/* free (the one call of shape ATR_ARGS_PTR) and malloc: by type, no
	   table lookup of the shape */
	unsigned type = k->type;
	struct lv_set *live = &c->live;
	if (type == ATR_T_FREE) {
		uint64_t ptr = k->ptr;
		size_t j;
		struct lv_block *b;
		if (!ptr || !live->cap || !(b = lv_lookup_lg(live, ptr, &j, LV_LG_SIZES)))
			return 0;
		uint64_t w = b->size;
		uint32_t size = (uint32_t)w; /* ENT_BIG: conv_call's */
		if (size >= r->touch_lo)
			return 0;
		/* think_before, then free_block */
		frun_times(c, r, ti, k, ATR_T_FREE, gap);
		uint32_t tag = (uint32_t)(w >> 32);
		c->bytes -= size;
		lv_remove_word(live, j, b);
		if (c->multi) {
			const struct slot_use *u = &c->use[tag];
			if (__builtin_expect(u->owner != RP_NONE && u->owner != r->widx, 0)) {
				frun_store(r);
				emit_wait_slow(c, ti, u->owner, u->when);
				frun_reload(r);
			}
		}
		c->recent[c->recent_pos++ % RECENT_FREES] = ptr;
		frun_room(c, r);
		uint64_t idx = r->ops++;
		uint8_t *p = r->p;
		*p++ = AWL_OP_FREE;
		r->p = awl_put_uv_room(p, (uint64_t)tag + 1);
		r->calls++;
		c->w->calls[AWL_OP_FREE]++;
		struct fslot f = {.when = idx, .slot = tag, .owner = r->widx};
		if (dq_push(&r->t->freeq, f) < 0)
			c->nomem = 1;
		else
			c->total_free++;
		return 1;
	}
	struct deque *q = &r->t->freeq;
	if (type != ATR_T_MALLOC || !k->ret || usable_of(k) >= r->touch_min || k->size >= ENT_BIG)
		return 0;
	/* think_before, then on_alloc */
	frun_times(c, r, ti, k, ATR_T_MALLOC, gap);
	struct fslot f;
	if (__builtin_expect(q->n != 0, 1)) {
		f = q->v[(q->head + --q->n) & (q->cap - 1)];
		c->total_free--;
	} else {
		f = slot_new_slow(c, ti);
		if (c->nomem)
			return 1;
	}
	if (__builtin_expect(f.owner != RP_NONE && f.owner != r->widx, 0)) {
		frun_store(r);
		emit_wait_slow(c, ti, f.owner, f.when);
		frun_reload(r);
	}
	frun_room(c, r);
	uint64_t idx = r->ops++;
	unsigned op = op_of_type[type];
	uint8_t *p = r->p;
	*p++ = (uint8_t)op;
	p = awl_put_uv_room(p, (uint64_t)f.slot + 1);
	r->p = awl_put_uv_room(p, k->size);
	r->calls++;
	c->w->calls[op]++;
	struct lv_block *b, old;
	int got = lv_born_word(live, k->ret, ent_pack(f.slot, k->size), &b, &old);
	if (__builtin_expect(got <= 0, 0)) {
		if (got < 0) {
			c->nomem = 1;
			return 1;
		}
		frun_store(r);
		addr_born_rest(c, ti, k, NULL, k->ret, f.slot, k->size, idx, 0, old.size);
		frun_reload(r);
		return 1;
	}
	bytes_born(c, k->size);
	if (c->multi)
		use_set(c, f.slot, r->widx, idx);
	return 1;
}

/* The unfiltered conversion of one process on this thread: its calls as
 * the reader's compact records (atr_iter_next_calls), each handed to the
 * handlers as it is; the records that come as full events go through
 * conv_event.  Returns 0 (the end, or the conversion stopped: c says why)
 * or the reader's error. */
static int conv_direct(struct conv *c, struct source *sc, struct rp_cpipe *pipe)
{
	struct rp_convert_stats *st = c->st;
	const size_t cap = sizeof(sc->calls) / sizeof(sc->calls[0]);
	int prog = c->o->progress && c->o->note;
	const struct atr_call *run_end = NULL; /* the previous run's end */
	for (;;) {
		size_t n, ahead;
		const struct atr_event *next;
		const struct atr_call *calls = sc->calls;
		int r = pipe ? rp_cpipe_next(pipe, &calls, &n, &ahead, &next)
			     : atr_iter_next_calls(sc->it, sc->calls, cap, &n, &next);
		if (r <= 0)
			return r;
		if (!pipe)
			ahead = n;
		/* the counters stay in registers through the batch: every
		   record but a release is a call (records, calls) */
		uint64_t before = st->records, nrec = before, lost = 0;
		c->batch = calls;
		c->seq_base = sc->calls_seq;
		for (size_t j = 0; !before && j < n; j++)
			if (calls[j].type != RP_EV_REALLOC_RELEASE) {
				c->first_ts = calls[j].ts;
				break;
			}
		/* the live set's entries LV_AHEAD records ahead (the reader's
		   prefetch hook fetched a whole batch's at once as it decoded
		   it, more misses at a time than the core takes: the prefetch
		   instruction stalled), across the runs of a pipe's batch: a
		   run that follows the previous one there had its first
		   records' fetched during it (runs of a few records between
		   glibc's HEAP records: bench/replay/RESULTS.md, "Runs of a
		   few records") */
		size_t i;
		if (calls != run_end)
			for (i = 0; i < LV_AHEAD && i < ahead; i++)
				call_prefetch(&c->live, &calls[i]);
		run_end = calls + n;
		/* the reader hands out a thread's records in runs: its index
		   is looked up, and its last_seq stored, once per run */
		uint32_t serial = UINT32_MAX, ti = RP_NONE;
		int fast_ok = c->in_window && !c->o->no_fast;
		/* the slots' last uses fetched ahead when they miss the
		   caches, as the live set's entries (xfreebench's 1e4 live
		   blocks: the second lookup per free cost 6%) */
		int multi =
		    c->multi && c->live.cap && c->use_cap * sizeof(*c->use) >= LV_PREFETCH_BYTES;
		uint64_t gap = c->gap_ticks;
		struct frun fr = {0};
		for (i = 0; i < n; i++) {
			const struct atr_call *k = &calls[i];
			if (i + LV_AHEAD < ahead)
				call_prefetch(&c->live, &calls[i + LV_AHEAD]);
			if (multi && i + LV_AHEAD / 2 < ahead)
				use_prefetch(c, &calls[i + LV_AHEAD / 2]);
			nrec += k->type != RP_EV_REALLOC_RELEASE;
			if (__builtin_expect(k->thread != serial, 0)) {
				if (ti != RP_NONE) {
					frun_store(&fr);
					c->th[ti].last_seq =
					    nrec - (k->type != RP_EV_REALLOC_RELEASE);
				}
				serial = k->thread;
				ti = thread_of(c, k->thread, k->tid);
				if (__builtin_expect(ti == RP_NONE || c->nomem, 0)) {
					lost = k->type != RP_EV_REALLOC_RELEASE; /* not converted */
					ti = RP_NONE;
					break;
				}
				frun_load(c, &fr, ti, fast_ok);
			}
			if (!fr.on || !frun_call(c, &fr, ti, k, gap)) {
				frun_store(&fr);
				conv_call(c, sc, ti, k, NULL, 0);
				frun_load(c, &fr, ti, fast_ok);
			}
			if (__builtin_expect(c->nomem, 0))
				break;
		}
		if (ti != RP_NONE) {
			frun_store(&fr);
			c->th[ti].last_seq = nrec;
		}
		/* the latest stamp: the last call counted */
		for (size_t j = i < n ? i + 1 : n; j-- > 0;)
			if (calls[j].type != RP_EV_REALLOC_RELEASE) {
				c->last_ts = calls[j].ts;
				break;
			}
		st->records = nrec;
		st->calls += nrec - before - lost;
		if (i < n)
			return 0;
		sc->calls_seq += nrec - before;
		if (prog && (nrec >> 22) != (before >> 22))
			progress(c);
		if (next) {
			sc->calls_seq = next->seq + (next->type != ATR_EV_REALLOC_RELEASE);
			if (!conv_event(c, sc, next))
				return 0;
		}
	}
}

/* The traced program's Max RSS: the highest of record's RSS samples of
 * f's process while its image ran (docs/RSS_FORMAT.md), bytes; 0 if
 * there are none.  compare anchors its Max RSS change there: the
 * replay's own RSS lacks the program's code and data, which made the
 * changes of small programs too big (bench/fidelity/RESULTS.md). */
static uint64_t traced_rss(atr_file *f, int *self)
{
	struct atr_rss_peak p;
	if (!atr_rss_peak_of(f, &p)) /* none: record --no-rss */
		return 0;
	*self = p.self_known;
	return p.program;
}

int rp_convert(const char *trace, const char *out, const struct rp_convert_opts *o,
	       struct rp_convert_stats *st, char *eb, size_t el)
{
	memset(st, 0, sizeof(*st));
	double t0 = plat_mono_s();
	struct source sc;
	int rc = src_open(&sc, trace, o, st, eb, el);
	if (rc < 0)
		return rc;
	const struct atr_info *in = sc.f ? atr_get_info(sc.f) : NULL;
	struct conv c;
	memset(&c, 0, sizeof(c));
	c.o = o;
	c.st = st;
	c.f = sc.f;
	c.sp_thread = RP_NONE;
	c.spawner = RP_NONE;
	c.last_exit = RP_NONE;
	long pg = sysconf(_SC_PAGESIZE);
	c.page = pg > 0 ? (uint64_t)pg : 4096;
	lv_init_sizes(&c.live, 0); /* convert counts unknown frees itself */
	util_hmap_init(&c.big);
	/* the slots' last uses are kept from the process's second thread on */
	c.multi = !o->late_multi && (!sc.f || sc.nm || sc.dj || atr_thread_count(sc.f) > 1);
	if (!o->no_reorder)
		lv_set_park(&c.live, lv_park_ticks(sc.f));
	lv_init(&c.rel, 0);
	/* the live set's entries of coming events are fetched ahead: by
	 * conv_direct (unfiltered, one process), else by the reader while it
	 * walks its decoded blocks, by lv_ahead for a dj trace, by the pipe
	 * (below); c.live has full entries (the handlers' _lg forms) */
	struct lv_ahead ah;
	lv_ahead_init(&ah, src_next, &sc, &c.live);
	c.filtered = o->keep || o->have_from || o->have_to;
	c.in_window = !o->have_from;
	c.to_ts = UINT64_MAX;
	touch_setup(&c, &sc);
	if (sc.f) {
		if (o->have_from && !o->from_label)
			c.from_ts = secs_ticks(sc.f, o->from_s);
		if (o->have_to && !o->to_label)
			c.to_ts = secs_ticks(sc.f, o->to_s);
	}
	if (in) {
		double tpn = in->ticks_per_sec > 0 ? in->ticks_per_sec / 1e9 : 1.0;
		c.tpn = tpn;
		c.use_cpu = !o->no_cpu;
		c.floor_ticks = (uint64_t)((double)o->think_floor_ns * tpn + 0.5);
		c.min_ticks = (uint64_t)((double)RP_THINK_MIN_NS * tpn + 0.5);
		if (!c.min_ticks)
			c.min_ticks = 1;
		c.join_ticks =
		    o->no_joins ? UINT64_MAX / 2 : (uint64_t)((double)RP_JOIN_MIN_NS * tpn + 0.5);
		c.handoff_ticks =
		    o->no_handoffs ? 0 : (uint64_t)((double)RP_HANDOFF_MAX_NS * tpn + 0.5);
		c.ncpu = in->ncpu;
		c.st->ncpu = c.ncpu;
		c.est_on =
		    in->timing_sample != 0 && !(in->features & ATR_FEAT_TIMING) && !o->no_sampled;
		/* the recorder times every call of resident_min bytes or more
		   (requested by an allocation, usable by a free): half of it
		   covers a free's requested size (usable <= 2 x requested for
		   any allocator we know, as touch_lo) */
		c.timed_lo = in->resident_min ? in->resident_min / 2 : UINT64_MAX;
		/* a call longer than the CPU-record gap mostly waited (a lock,
		   a preemption): in an untimed call the CPU record after it
		   judges that wait (think_cpu), so a sampled one does not
		   spread it over its neighbours too */
		c.est_cap =
		    in->cpu_gap_ns ? (uint64_t)((double)in->cpu_gap_ns * tpn + 0.5) : UINT64_MAX;
		c.share_ticks = o->no_share || !c.ncpu
				    ? UINT64_MAX / 2
				    : (uint64_t)((double)RP_SHARE_MIN_NS * tpn + 0.5);
	} else {
		/* a dj trace has no clock (ts is the record number): no think time */
		c.floor_ticks = UINT64_MAX / 2;
		c.min_ticks = UINT64_MAX;
		c.join_ticks = UINT64_MAX / 2;
		c.share_ticks = UINT64_MAX / 2;
	}
	c.gap_ticks = c.floor_ticks < c.join_ticks ? c.floor_ticks : c.join_ticks;
	if ((rc = awl_writer_open(out, &c.w, eb, el)) < 0) {
		src_close(&sc);
		return rc;
	}
	int r;
	const struct atr_event *ev = NULL;
	/* the reader writes the file's info when it ends: read before */
	c.total_hint = in ? in->records_hint : 0;
	c.t0 = c.last_prog = t0;
	/* the trace is read on this thread; or on a second thread
	 * (rp_pipe.h), and the live set's entries are prefetched on this one
	 * (the reader's hook would touch the live set from the other thread).
	 * From here to rp_pipe_stop the source is the pipe's. */
	struct rp_pipe *pipe = NULL;
	struct rp_cpipe *cpipe = NULL;
	int nthreads = o->threads;
	if (!nthreads) /* two where two cores are free to run them: faster in
			  wall time on every trace of bench/replay/convspeed.sh
			  (bench/replay/RESULTS.md, "Convert's pipe with streaming
			  stores") */
		nthreads = plat_usable_cpus() >= 2 ? 2 : 1;
	/* a table of 8 MiB or more that doubles: half its new pages faulted
	 * in by another thread (convert on big live sets a fifth faster after
	 * idle time on the benchmark VM) */
	lv_set_grow_helper(&c.live, nthreads > 1);
	if (nthreads > 1 && sc.it && !c.filtered && rp_cpipe_start(&cpipe, sc.it) == 0) {
		/* the narrow path's records on the second thread */
		st->read_threads = 1;
		sc.narrow = 1;
		sc.orig.f = sc.f;
	} else if (nthreads > 1 && !o->keep &&
		   rp_pipe_start(&pipe, sc.it ? lv_source_iter : src_next,
				 sc.it ? (void *)sc.it : &sc, &c.live) == 0)
		st->read_threads = 1;
	else {
		pipe = NULL;
		if (sc.it) {
			if (c.filtered) /* conv_direct prefetches by itself */
				atr_iter_set_prefetch(sc.it, lv_prefetch_hook, &c.live);
			sc.narrow = 1;
			sc.orig.f = sc.f;
		}
		for (size_t i = 0; i < sc.nm; i++) {
			sc.m[i].pf_set = &c.live;
			atr_iter_set_prefetch(sc.m[i].it, msrc_prefetch, &sc.m[i]);
		}
	}
	if (pipe || !sc.narrow || c.filtered) {
		while ((r = pipe	? rp_pipe_next(pipe, &ev)
			    : sc.narrow ? src_next_narrow(&sc, &ev)
			    : sc.dj	? lv_ahead_next(&ah, &ev)
					: src_next(&sc, &ev)) > 0 &&
		       conv_event(&c, &sc, ev))
			;
	} else {
		r = conv_direct(&c, &sc, cpipe);
	}
	/* the source is this thread's again */
	rp_pipe_stop(pipe);
	rp_cpipe_stop(cpipe);
	if (o->progress && o->note)
		o->note(o->note_arg, RP_NOTE_PROGRESS, "");
	rc = 0;
	if (r < 0 && r != ATR_E_NOMEM) {
		snprintf(eb, el, "%s", src_error(&sc));
		rc = r;
	} else if (r < 0) {
		snprintf(eb, el, "%s: out of memory", trace);
		rc = ATR_E_NOMEM;
	} else if (sc.bad) {
		snprintf(eb, el, "%s: --merge: a pointer above 2^%d, cannot keep processes apart",
			 trace, RP_MERGE_SHIFT);
		rc = ATR_E_USAGE;
	} else if (c.bad_serial) {
		snprintf(eb, el, "%s: thread serial %" PRIu32 " is implausible (corrupt trace)",
			 trace, c.bad_serial);
		rc = ATR_E_RECORD;
	} else if (c.nomem) {
		snprintf(eb, el, "%s: out of memory", trace);
		rc = ATR_E_NOMEM;
	}
	park_expire(&c, UINT64_MAX);
	st->ideal_peak = c.peak;
	st->slots = c.nslots;
	st->threads = c.nth;
	st->think_ns = c.think_total;
	st->est_calls = c.est_calls;
	if (c.f)
		st->est_ns = atr_ticks_to_ns_u64(c.f, c.est_ticks);
	st->max_live = c.max_live;
	if (in)
		st->lost_records += in->header_lost + in->lost_blocks;
	if (sc.dj) {
		const struct dj_trace_stats *ds = dj_trace_get_stats(sc.dj);
		st->records = ds->records;
		st->dj_inversions_fixed = ds->inversions_fixed;
		st->dj_inversions_pending = ds->inversions_pending;
		st->dj_reallocs_merged = ds->reallocs_merged;
		st->dj_unknown_records = ds->unknown_records + ds->extra_magic;
		st->dj_truncated_bytes = ds->truncated_bytes;
		st->dj_hints = ds->hints;
		st->dj_alloctrace_export = ds->alloctrace_export;
		st->pid = 0;
	}
	st->anomalies = st->unknown_frees + st->double_frees + st->dup_allocs +
			st->unknown_reallocs + st->dj_unknown_records + st->usable_unknown;
	st->map_slots = c.nms;
	st->xops = 0;
	for (unsigned i = 0; i < AWL_NXOPS; i++)
		st->xops += c.w->xops[i];
	if (rc == 0 && in && !sc.nm)
		st->traced_rss = traced_rss(sc.f, &st->traced_rss_self);
	if (rc == 0) {
		struct awl_summary_in s = {
		    .slots = c.nslots,
		    .ideal_peak = c.peak,
		    .waits = st->waits,
		    .anomalies = st->anomalies,
		    .duration_ns =
			in && st->records ? atr_ticks_to_ns_u64(sc.f, c.last_ts - c.first_ts) : 0,
		    .src_pid = in ? in->pid : 0,
		    .src_exec = in ? in->exec_seq : 0,
		    .think_ns = c.think_total,
		    .max_live = c.max_live,
		    .features =
			((in && (in->features & ATR_FEAT_XCALLS)) || c.xops ? AWL_FEAT_XOPS : 0) |
			(c.touch_min ? AWL_FEAT_TOUCH : 0),
		    .map_slots = c.nms,
		    .file_maps = st->file_maps,
		    .map_unknown = st->map_unknown,
		    .map_odd = st->map_odd,
		    .traced_rss = st->traced_rss,
		};
		int fr = awl_writer_finish(c.w, &s, eb, el);
		if (fr < 0)
			rc = fr;
	}
	st->bytes_out = awl_writer_bytes(c.w);
	st->ops = awl_writer_ops(c.w);
	awl_writer_close(c.w);
	for (uint32_t i = 0; i < c.nth; i++) {
		util_hmap_destroy(&c.th[i].waited);
		free(c.th[i].freeq.v);
	}
	free(c.th);
	free(c.alive);
	free(c.exits);
	free(c.by_serial);
	lv_ahead_free(&ah);
	lv_destroy(&c.live);
	util_hmap_destroy(&c.big);
	free(c.use);
	lv_destroy(&c.rel);
	util_hmap_destroy(&c.excl);
	ur_destroy(&c.maps);
	free(c.ms);
	free(c.mfree);
	util_hmap_destroy(&c.touch);
	util_hmap_destroy(&c.heap_res);
	src_close(&sc);
	st->seconds = plat_mono_s() - t0;
	if (rc)
		unlink(out);
	return rc;
}
