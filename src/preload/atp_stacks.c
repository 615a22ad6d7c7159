/* atp_stacks.c - call stacks for `record --stacks` (ALLOCTRACE_STACKS=1).
 *
 * Every allocation call (not free) unwinds the caller's stack with
 * libunwind's unw_backtrace(): DWARF CFI from .eh_frame, with libunwind's
 * per-thread cache of "how to step from this return address", because
 * Debian's libraries have no frame pointers (docs/STACKS.md has the
 * measurements).  Our own frames (the hook, this file) are dropped: every
 * leading return address inside liballoctrace.so.
 *
 * Deduplication is per thread and lock-free: the thread's table maps the
 * 128-bit hash of the return addresses (two independent 64-bit hashes) to
 * a stack id.  A miss takes a new id from one atomic counter (ids are
 * unique in the process) and writes a STACK record into the thread's own
 * stream, stamped like the call record that follows it, so every reader
 * sees a stack's frames before its first use.  The same frames seen by two
 * threads get two ids; the reader merges them by content.  A known stack
 * costs the unwind, the hash and one probe; nothing shared is written.
 *
 * The module map (MODULE records: address range, load bias, build-id,
 * path) is checked when a new stack is written: dl_iterate_phdr's
 * dlpi_adds/dlpi_subs counters tell whether anything was loaded or
 * unloaded since the last check; if so the map is diffed against what was
 * written and the differences are written.  All of that runs inside the
 * dl_iterate_phdr callback (under the loader's lock); our own little lock
 * is only ever try-locked there, so no lock order can deadlock: whoever
 * loses the race skips the check, the winner writes the map.
 *
 * Memory: tables come from mmap, never from the traced heap.  Everything
 * runs with the thread's guard set; libunwind's own allocations (if any)
 * pass through untraced.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>

#include "atp_internal.h"

#ifdef ATR_HAVE_LIBUNWIND
#include <dlfcn.h>
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#ifndef ATR_LIBUNWIND_SONAME
#define ATR_LIBUNWIND_SONAME "libunwind.so.8"
#endif
#define ATP_STR2(x) #x
#define ATP_STR(x)  ATP_STR2(x) /* the macro's expansion: the real symbol */

/* fork vs libunwind: a thread inside unw_backtrace may hold one of
 * libunwind's mutexes; a child forked then would wait on it forever (seen:
 * 1 run in 12 of `threads 4 fork`).  The prepare handler raises
 * fork_pending and waits until no thread is unwinding; a thread that sees
 * fork_pending records that one call without a stack rather than wait (the
 * forking thread itself may allocate in later prepare handlers). */
#ifdef ATR_HAVE_LIBUNWIND
static atomic_int unwinding, fork_pending;

static void fork_prepare(void)
{
	atomic_store(&fork_pending, 1);
	while (atomic_load(&unwinding))
		sched_yield();
}

static void fork_parent(void)
{
	atomic_store(&fork_pending, 0);
}
#endif

/* libunwind is dlopen'ed RTLD_LOCAL by our constructor, never linked:
 * libunwind.so.8 exports _Unwind_RaiseException & co. and backtrace(),
 * which would otherwise join the global scope ahead of libgcc_s and glibc
 * and change how the traced program throws C++ exceptions. */
static struct {
	int (*backtrace)(void **, int);
	int (*set_caching_policy)(unw_addr_space_t, unw_caching_policy_t);
	void (*flush_cache)(unw_addr_space_t, unw_word_t, unw_word_t);
	unw_addr_space_t *local_as;
} unw;
#endif

struct atp_stack_ent {
	uint64_t h1, h2; /* h1 == 0 && h2 == 0: empty */
	uint32_t id, pad;
};

#define STAB_MIN 1024u

/* unused without libunwind (the cross build) */
#define ATP_UNUSED __attribute__((unused))

static _Atomic uint32_t next_stack_id ATP_UNUSED;
static uintptr_t self_lo, self_hi; /* our own mapping */

/* ---- our own address range ------------------------------------------- */

extern const ElfW(Ehdr) __ehdr_start __attribute__((visibility("hidden")));

ATP_UNUSED static void find_self(void)
{
	const ElfW(Ehdr) *eh = &__ehdr_start;
	const ElfW(Phdr) *ph = (const ElfW(Phdr) *)((const char *)eh + eh->e_phoff);
	uintptr_t lo = UINTPTR_MAX, hi = 0, bias = 0;
	int have_bias = 0;
	for (unsigned i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type != PT_LOAD)
			continue;
		if (!have_bias && ph[i].p_offset == 0) {
			bias = (uintptr_t)eh - ph[i].p_vaddr;
			have_bias = 1;
		}
	}
	for (unsigned i = 0; have_bias && i < eh->e_phnum; i++) {
		if (ph[i].p_type != PT_LOAD)
			continue;
		if (bias + ph[i].p_vaddr < lo)
			lo = bias + ph[i].p_vaddr;
		if (bias + ph[i].p_vaddr + ph[i].p_memsz > hi)
			hi = bias + ph[i].p_vaddr + ph[i].p_memsz;
	}
	if (lo < hi) {
		self_lo = lo;
		self_hi = hi;
	}
}

static inline int in_self(uintptr_t ip)
{
	return ip - self_lo < self_hi - self_lo;
}

void atp_stacks_init(void)
{
#ifdef ATR_HAVE_LIBUNWIND
	if (g.stack_depth < 1)
		g.stack_depth = 1;
	if (g.stack_depth > ATR_STACK_DEPTH_MAX)
		g.stack_depth = ATR_STACK_DEPTH_MAX;
	if (g.stacks)
		find_self();
#else
	if (g.stacks)
		atp_message("stacks:", "this build has no libunwind;", "no call stacks recorded",
			    0);
	g.stacks = 0;
#endif
}

#ifdef ATR_HAVE_LIBUNWIND
/* The address range of the module holding addr (libunwind): its own
 * mappings are not the program's (atp_xhooks.c). */
static int tlib_cb(struct dl_phdr_info *info, size_t size, void *addr)
{
	(void)size;
	uintptr_t a = (uintptr_t)addr, lo = UINTPTR_MAX, hi = 0;
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t s = info->dlpi_addr + ph->p_vaddr;
		if (s < lo)
			lo = s;
		if (s + ph->p_memsz > hi)
			hi = s + ph->p_memsz;
	}
	if (a < lo || a >= hi)
		return 0;
	g.tlib_lo = lo;
	g.tlib_len = hi - lo;
	return 1;
}
#endif

void atp_stacks_load(void)
{
#ifdef ATR_HAVE_LIBUNWIND
	if (!g.stacks || unw.backtrace)
		return;
	struct atp_thread *t = &atp_tls;
	t->guard += ATP_GUARD_INTERNAL;
	void *h = dlopen(ATR_LIBUNWIND_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (h) {
		unw.set_caching_policy = (int (*)(unw_addr_space_t, unw_caching_policy_t))dlsym(
		    h, ATP_STR(unw_set_caching_policy));
		unw.flush_cache = (void (*)(unw_addr_space_t, unw_word_t, unw_word_t))dlsym(
		    h, ATP_STR(unw_flush_cache));
		unw.local_as = (unw_addr_space_t *)dlsym(h, ATP_STR(unw_local_addr_space));
		if (unw.set_caching_policy && unw.local_as)
			/* per-thread caches: no lock on libunwind's slow path */
			unw.set_caching_policy(*unw.local_as, UNW_CACHE_PER_THREAD);
		pthread_atfork(fork_prepare, fork_parent, NULL);
		/* published last: hooks test it without a lock */
		void *bt = dlsym(h, "unw_backtrace");
		if (bt)
			dl_iterate_phdr(tlib_cb, bt);
		__atomic_store_n(&unw.backtrace, (int (*)(void **, int))bt, __ATOMIC_RELEASE);
	}
	t->guard -= ATP_GUARD_INTERNAL;
	if (!h || !unw.backtrace)
		atp_message("stacks:", "cannot load " ATR_LIBUNWIND_SONAME ";",
			    "no call stacks recorded", 0);
#endif
}

/* ---- the per-thread table ---------------------------------------------- */

/* The tables count whole in the header's self_rss: at most half full,
 * with entries hashed all over them, their pages are all written. */
static struct atp_stack_ent *stab_alloc(uint32_t n)
{
	size_t len = (size_t)n * sizeof(struct atp_stack_ent);
	void *m =
	    g.real.mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	atp_self_rss_add(&g.self_other, (int64_t)len);
	return m;
}

static void stab_free(struct atp_stack_ent *e, uint32_t mask)
{
	if (e) {
		size_t len = ((size_t)mask + 1) * sizeof(*e);
		g.real.munmap(e, len);
		atp_self_rss_add(&g.self_other, -(int64_t)len);
	}
}

static void stab_put(struct atp_stack_ent *tab, uint32_t mask, uint64_t h1, uint64_t h2,
		     uint32_t id)
{
	uint32_t i = (uint32_t)h1 & mask;
	while (tab[i].h1 | tab[i].h2)
		i = (i + 1) & mask;
	tab[i].h1 = h1;
	tab[i].h2 = h2;
	tab[i].id = id;
}

/* Room for one more entry; 0 or -1. */
ATP_UNUSED static int stab_reserve(struct atp_thread *t)
{
	if (t->stab && (t->stab_used + 1) * 2 <= t->stab_mask + 1)
		return 0;
	uint32_t ncap = t->stab ? (t->stab_mask + 1) * 2 : STAB_MIN;
	if (ncap == 0)
		return -1;
	struct atp_stack_ent *n = stab_alloc(ncap);
	if (!n)
		return -1;
	if (t->stab) {
		for (uint32_t i = 0; i <= t->stab_mask; i++)
			if (t->stab[i].h1 | t->stab[i].h2)
				stab_put(n, ncap - 1, t->stab[i].h1, t->stab[i].h2, t->stab[i].id);
		stab_free(t->stab, t->stab_mask);
	}
	t->stab = n;
	t->stab_mask = ncap - 1;
	return 0;
}

void atp_stacks_thread_done(struct atp_thread *t)
{
	stab_free(t->stab, t->stab_mask);
	t->stab = NULL;
	t->stab_mask = t->stab_used = 0;
}

/* ---- the module map ---------------------------------------------------- */

struct atp_mod {
	uint64_t start, size, bias, name_hash;
	uint32_t seen;
};

static struct {
	atomic_flag lock;
	int valid;
	unsigned long long adds, subs;
	struct atp_mod *v;
	uint32_t n, cap;
} mods = {.lock = ATOMIC_FLAG_INIT};

struct mod_scan {
	struct atp_thread *t;
	uint64_t ts;
	int started, locked, scanning, have_counters;
	unsigned long long adds, subs;
};

static uint64_t str_hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;
	for (; s && *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static uint32_t build_id_of(const struct dl_phdr_info *info, uint8_t *out)
{
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		const uint8_t *end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
			size_t nsz = (nh->n_namesz + 3u) & ~3u, dsz = (nh->n_descsz + 3u) & ~3u;
			const uint8_t *name = p + sizeof(*nh), *desc = name + nsz;
			if (desc + dsz > end || desc + dsz < desc)
				break;
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    memcmp(name, "GNU", 4) == 0 && nh->n_descsz > 0) {
				uint32_t n = nh->n_descsz < ATR_MOD_BUILD_ID_MAX
						 ? nh->n_descsz
						 : ATR_MOD_BUILD_ID_MAX;
				memcpy(out, desc, n);
				return n;
			}
			p = desc + dsz;
		}
	}
	return 0;
}

static void write_module(struct mod_scan *sc, unsigned kind, const struct atp_mod *m,
			 const struct dl_phdr_info *info)
{
	uint8_t buf[ATR_MOD_DATA + ATR_MOD_BUILD_ID_MAX + ATR_MOD_PATH_MAX];
	uint32_t bl = 0, pl = 0;
	atr_put64(buf + ATR_MOD_START, m->start);
	atr_put64(buf + ATR_MOD_SIZE, m->size);
	atr_put64(buf + ATR_MOD_BIAS, m->bias);
	if (info) {
		bl = build_id_of(info, buf + ATR_MOD_DATA);
		const char *name = info->dlpi_name ? info->dlpi_name : "";
		size_t l = strlen(name);
		pl = (uint32_t)(l < ATR_MOD_PATH_MAX ? l : ATR_MOD_PATH_MAX);
		memcpy(buf + ATR_MOD_DATA + bl, name, pl);
	}
	atr_put32(buf + ATR_MOD_BUILD_ID_LEN, bl);
	atr_put32(buf + ATR_MOD_PATH_LEN, pl);
	atp_write_meta_at(sc->t, sc->ts, ATR_T_MODULE, kind, buf, ATR_MOD_DATA + bl + pl);
}

static int mods_grow(void)
{
	uint32_t ncap = mods.cap ? mods.cap * 2 : 256;
	void *m = g.real.mmap(NULL, (size_t)ncap * sizeof(struct atp_mod), PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return -1;
	atp_self_rss_add(&g.self_other, (int64_t)((size_t)ncap * sizeof(struct atp_mod)));
	if (mods.v) {
		memcpy(m, mods.v, (size_t)mods.n * sizeof(struct atp_mod));
		g.real.munmap(mods.v, (size_t)mods.cap * sizeof(struct atp_mod));
		atp_self_rss_add(&g.self_other,
				 -(int64_t)((size_t)mods.cap * sizeof(struct atp_mod)));
	}
	mods.v = m;
	mods.cap = ncap;
	return 0;
}

static int mod_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct mod_scan *sc = data;
	if (!sc->started) {
		sc->started = 1;
		if (atomic_flag_test_and_set_explicit(&mods.lock, memory_order_acquire))
			return 1; /* another thread is writing the map */
		sc->locked = 1;
		if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
			if (mods.valid && info->dlpi_adds == mods.adds &&
			    info->dlpi_subs == mods.subs)
				return 1; /* nothing changed */
			sc->adds = info->dlpi_adds;
			sc->subs = info->dlpi_subs;
			sc->have_counters = 1;
		}
		for (uint32_t i = 0; i < mods.n; i++)
			mods.v[i].seen = 0;
		sc->scanning = 1;
	}
	uint64_t lo = UINT64_MAX, hi = 0;
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uint64_t a = info->dlpi_addr + ph->p_vaddr;
		if (a < lo)
			lo = a;
		if (a + ph->p_memsz > hi)
			hi = a + ph->p_memsz;
	}
	if (lo >= hi)
		return 0;
	struct atp_mod m = {
	    .start = lo,
	    .size = hi - lo,
	    .bias = info->dlpi_addr,
	    .name_hash = str_hash(info->dlpi_name),
	    .seen = 1,
	};
	for (uint32_t i = 0; i < mods.n; i++) {
		struct atp_mod *o = &mods.v[i];
		if (o->start == m.start && o->size == m.size && o->bias == m.bias &&
		    o->name_hash == m.name_hash) {
			o->seen = 1;
			return 0;
		}
	}
	if (mods.n == mods.cap && mods_grow() != 0)
		return 0;
	mods.v[mods.n++] = m;
	write_module(sc, ATR_MOD_LOAD, &m, info);
	return 0;
}

/* Write what changed in the module map since the last check. */
ATP_UNUSED static void modules_check(struct atp_thread *t, uint64_t ts)
{
	struct mod_scan sc = {.t = t, .ts = ts};
	dl_iterate_phdr(mod_cb, &sc);
	if (sc.scanning) {
		for (uint32_t i = 0; i < mods.n;) {
			if (mods.v[i].seen) {
				i++;
				continue;
			}
			write_module(&sc, ATR_MOD_UNLOAD, &mods.v[i], NULL);
			mods.v[i] = mods.v[--mods.n];
		}
		mods.adds = sc.adds;
		mods.subs = sc.subs;
		mods.valid = sc.have_counters;
#ifdef ATR_HAVE_LIBUNWIND
		/* code may have gone: forget libunwind's cached unwind info */
		if (mods.valid && unw.flush_cache && unw.local_as)
			unw.flush_cache(*unw.local_as, 0, 0);
#endif
	}
	if (sc.locked)
		atomic_flag_clear_explicit(&mods.lock, memory_order_release);
}

void atp_stacks_after_fork_child(void)
{
	struct atp_thread *t = &atp_tls;
	atp_stacks_thread_done(t);
#ifdef ATR_HAVE_LIBUNWIND
	atomic_store(&fork_pending, 0);
	/* fork_prepare did not run (a handler-less fork path) while a thread
	 * was unwinding: libunwind may be locked here; no stacks then */
	if (atomic_exchange(&unwinding, 0) != 0 && unw.backtrace) {
		__atomic_store_n(&unw.backtrace, NULL, __ATOMIC_RELEASE);
		atp_message("stacks:", "forked while another thread was unwinding;",
			    "no call stacks in this child", 0);
	}
#endif
	/* the child's file has no module map yet; the lock holder may be a
	 * thread that does not exist here */
	mods.n = 0;
	mods.valid = 0;
	atomic_flag_clear(&mods.lock);
}

/* ---- capture ------------------------------------------------------------ */

#define K1 0x9e3779b97f4a7c15ULL
#define K2 0xc2b2ae3d27d4eb4fULL

static inline uint64_t rotl64(uint64_t x, unsigned r)
{
	return (x << r) | (x >> (64 - r));
}

static inline uint64_t fmix64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ULL;
	k ^= k >> 33;
	return k;
}

#ifdef ATR_HAVE_LIBUNWIND
static uint32_t stack_id(struct atp_thread *t, uint64_t ts, int (*bt)(void **, int), void **buf);
#endif

uint32_t atp_stack_id(struct atp_thread *t, uint64_t ts)
{
#ifdef ATR_HAVE_LIBUNWIND
	void *buf[ATR_STACK_DEPTH_MAX + 8];
	int (*bt)(void **, int) = __atomic_load_n(&unw.backtrace, __ATOMIC_ACQUIRE);
	if (ATP_UNLIKELY(!bt))
		return 0; /* before our constructor loaded libunwind */
	/* libunwind's own allocations are ours, not the program's: they pass
	 * through without counting as untraced calls */
	t->guard += ATP_GUARD_INTERNAL;
	int saved = errno; /* libunwind probes memory (msync), mmap may fail */
	atomic_fetch_add(&unwinding, 1);
	if (ATP_UNLIKELY(atomic_load(&fork_pending))) {
		atomic_fetch_sub(&unwinding, 1);
		errno = saved;
		t->guard -= ATP_GUARD_INTERNAL;
		return 0;
	}
	uint32_t id = stack_id(t, ts, bt, buf);
	atomic_fetch_sub_explicit(&unwinding, 1, memory_order_release);
	errno = saved;
	t->guard -= ATP_GUARD_INTERNAL;
	return id;
#else
	(void)t;
	(void)ts;
	return 0;
#endif
}

#ifdef ATR_HAVE_LIBUNWIND
static uint32_t stack_id(struct atp_thread *t, uint64_t ts, int (*bt)(void **, int), void **buf)
{
	int n = bt(buf, (int)g.stack_depth + 8);
	int skip = 0;
	while (skip < n && in_self((uintptr_t)buf[skip]))
		skip++;
	n -= skip;
	if (n > (int)g.stack_depth)
		n = (int)g.stack_depth;
	if (n <= 0)
		return 0;
	const uint64_t *ips = (const uint64_t *)(buf + skip);
	uint64_t h1 = K1 ^ (uint64_t)n, h2 = K2 + (uint64_t)n;
	for (int i = 0; i < n; i++) {
		h1 = rotl64(h1 ^ ips[i], 29) * K1;
		h2 = rotl64(h2 + ips[i], 31) * K2;
	}
	h1 = fmix64(h1);
	h2 = fmix64(h2 ^ h1);
	if (!(h1 | h2))
		h1 = 1;
	struct atp_stack_ent *tab = t->stab;
	if (ATP_LIKELY(tab != NULL)) {
		uint32_t i = (uint32_t)h1 & t->stab_mask;
		for (;;) {
			if (tab[i].h1 == h1 && tab[i].h2 == h2)
				return tab[i].id;
			if (!(tab[i].h1 | tab[i].h2))
				break;
			i = (i + 1) & t->stab_mask;
		}
	}
	/* a stack this thread has not written yet */
	if (stab_reserve(t) != 0)
		return 0;
	uint32_t id = atomic_fetch_add_explicit(&next_stack_id, 1, memory_order_relaxed) + 1;
	if (id == 0)
		return 0;
	modules_check(t, ts);
	if (atp_write_meta_at(t, ts, ATR_T_STACK, id, ips, (uint32_t)n * 8) != 0)
		return 0;
	stab_put(t->stab, t->stab_mask, h1, h2, id);
	t->stab_used++;
	return id;
}
#endif
