/* atp_hooks.c - the interposed malloc family: the hot path.
 *
 * errno: the fast path never touches it; the slow path (atp_writer.c)
 * saves and restores it, so callers see what the real allocator set.
 *
 * Ordering rule (docs/TRACE_FORMAT.md, "Order"): a block's release is
 * stamped before the real free runs and an allocation after the real
 * allocator returned, so offline merging by timestamp never shows an
 * address handed out while still live.  realloc stamps both sides.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>

#include "atp_internal.h"

#define EXPORT __attribute__((visibility("default")))

/* Write an allocation record: w0, ret, size word, extras, [slack] [stack]
 * [dur], with ret's chunk flags and the slack known: any size and slack,
 * --stacks.  The general case, out of line. */
static __attribute__((noinline)) void rec_alloc_write(struct atp_thread *t, unsigned type,
						      unsigned flags, uint64_t ts, uint64_t dur,
						      uint64_t rv, size_t size, uint64_t slack,
						      unsigned nextra, uint64_t e1, uint64_t e2)
{
	/* unknown slack (UINT64_MAX) shifts into 0xffff, the narrow unknown */
	int narrow =
	    size <= ATR_SIZE_MASK && (slack < ATR_SLACK_NARROW_UNKNOWN || slack == UINT64_MAX);
	if (!narrow)
		flags |= ATR_FLAG_WIDE;
	/* --stacks: the STACK record (if new) goes before this one */
	uint32_t sid = 0;
	if (ATP_UNLIKELY(g.stacks) && (sid = atp_stack_id(t, ts)) != 0)
		flags |= ATR_FLAG_STACK;
	unsigned tot = atr_record_words(type, flags);
	uint64_t *p = atp_reserve(t, tot, ts);
	if (ATP_UNLIKELY(!p))
		return;
	unsigned i = 3;
	p[1] = rv;
	p[2] = ATP_LIKELY(narrow) ? (uint64_t)size | slack << ATR_SIZE_BITS : (uint64_t)size;
	if (nextra > 0)
		p[i++] = e1;
	if (nextra > 1)
		p[i++] = e2;
	if (!narrow)
		p[i++] = slack;
	if (flags & ATR_FLAG_STACK)
		p[i++] = sid;
	if (flags & ATR_FLAG_TIMED)
		p[i] = dur;
	atp_commit(t, p, tot, atp_w0(ts, type | flags));
}

/* An allocation record.  ts is the ordering stamp (docs/TRACE_FORMAT.md,
 * "Order").  fail is what a failed call (r == NULL) stores in the slack
 * field (posix_memalign's error code, else 0).
 *
 * glibc: the chunk header (size field one word before the block, low 3
 * bits flags, IS_MMAPPED = 2: mmapped chunks lose one more word) gives the
 * usable size without a call, and its IS_MMAPPED and NON_MAIN_ARENA bits
 * ride in ret's low bits (ATR_FEAT_CHUNK_FLAGS); a chunk of a non-main heap
 * other than (or beyond) the one this thread used last gets a HEAP record
 * first.  The header word is read once, here.
 *
 * Inlined into the hot hooks (malloc, calloc, realloc), where type and the
 * extras are constants: the usual record (narrow, slack known, no stack id)
 * is written right here, anything else by rec_alloc_write. */
static inline __attribute__((always_inline)) void
rec_alloc_inl(struct atp_thread *t, unsigned type, unsigned flags, uint64_t ts, uint64_t dur,
	      void *r, size_t size, uint64_t fail, unsigned nextra, uint64_t e1, uint64_t e2)
{
	uint64_t rv = (uint64_t)(uintptr_t)r, slack = fail;
	if (ATP_LIKELY(g.glibc) && r) {
		size_t h = ((size_t *)r)[-1];
		size_t usable = (h & ~(size_t)7) - ((h & 2) ? 2 * sizeof(size_t) : sizeof(size_t));
		slack = usable >= size ? usable - size : UINT64_MAX;
		rv |= h & ATR_CHUNK_MASK;
		if ((h & ATR_CHUNK_MASK) == ATR_CHUNK_NON_MAIN) {
			uint64_t cend =
			    (uint64_t)(uintptr_t)r - 2 * sizeof(size_t) + (h & ~(size_t)7);
			if (ATP_UNLIKELY((rv & ~(ATR_ARENA_HEAP_MAX - 1)) != t->heap_lo ||
					 cend > t->heap_hi))
				atp_heap_note(t, ts, r, cend);
		}
	} else if (r) {
		size_t usable = g.real.usable_size ? g.real.usable_size(r) : 0;
		slack = g.real.usable_size && usable >= size ? usable - size : UINT64_MAX;
	}
	if (ATP_LIKELY(size <= ATR_SIZE_MASK && slack < ATR_SLACK_NARROW_UNKNOWN && !g.stacks)) {
		unsigned tot = atr_call_words(type) + !!(flags & ATR_FLAG_TIMED);
		uint64_t *p = atp_reserve(t, tot, ts);
		if (ATP_UNLIKELY(!p))
			return;
		p[1] = rv;
		p[2] = (uint64_t)size | slack << ATR_SIZE_BITS;
		if (nextra > 0)
			p[3] = e1;
		if (nextra > 1)
			p[4] = e2;
		if (flags & ATR_FLAG_TIMED)
			p[tot - 1] = dur;
		atp_commit(t, p, tot, atp_w0(ts, type | flags));
		return;
	}
	rec_alloc_write(t, type, flags, ts, dur, rv, size, slack, nextra, e1, e2);
}

/* The same for the other calls: one shared copy. */
static __attribute__((noinline)) void rec_alloc(struct atp_thread *t, unsigned type, unsigned flags,
						uint64_t ts, uint64_t dur, void *r, size_t size,
						uint64_t fail, unsigned nextra, uint64_t e1,
						uint64_t e2)
{
	rec_alloc_inl(t, type, flags, ts, dur, r, size, fail, nextra, e1, e2);
}

/* realloc: a large old block's resident pages, before the real call may
 * move or free it (the count is the old block's, whatever happens). */
static inline void resident_before(struct atp_thread *t, uint64_t ts, void *ptr)
{
	if (ptr) {
		uint64_t u = atp_resident_size(ptr);
		if (ATP_UNLIKELY(u))
			atp_resident_note(t, ts, ptr, u);
	}
}

/* --sample (atp_sample.c, docs/TRACE_FORMAT.md "Sampled traces"): every
 * hook first calls the real function, then atp_sample_skip() (subtract,
 * compare: no clock, no store to the trace).  A sampled allocation is
 * recorded as usual (with its stack) and enters the sampled set; only frees
 * of blocks in that set are recorded.  Failed calls are not recorded. */
static void sampled_alloc(struct atp_thread *t, unsigned type, void *r, size_t size,
			  unsigned nextra, uint64_t e1)
{
	int e = errno;
	t->guard = 1;
	uint64_t t1 = atp_now();
	rec_alloc(t, type, 0, t1, 0, r, size, 0, nextra, e1, 0);
	atp_sset_add((uint64_t)(uintptr_t)r);
	t->guard = 0;
	errno = e;
}

#define SAMPLED(call, size, type, nextra, e1)                                                      \
	do {                                                                                       \
		void *r_ = (call);                                                                 \
		if (ATP_LIKELY(atp_sample_skip(t, (size))) || !r_)                                 \
			return r_;                                                                 \
		sampled_alloc(t, type, r_, (size), nextra, e1);                                    \
		return r_;                                                                         \
	} while (0)

/* A free record stamped ts: the release of a sampled block. */
static void sampled_free_rec(struct atp_thread *t, uint64_t ts, void *ptr)
{
	uint64_t *p = atp_reserve(t, 2, ts);
	if (ATP_LIKELY(p != NULL)) {
		p[1] = (uint64_t)(uintptr_t)ptr;
		atp_commit(t, p, 2, atp_w0(ts, ATR_T_FREE));
	}
}

/* realloc/reallocarray: the old block leaves the sampled set before the
 * real call (its address may be handed out again at once); the new one is
 * sampled by its size like any allocation.  Recorded: a realloc record
 * when the new block is sampled (old pointer 0 if the old block was not),
 * else a free when a sampled old block died. */
static void *sampled_realloc(struct atp_thread *t, unsigned type, void *ptr, size_t size,
			     size_t nmemb)
{
	if (ATP_LIKELY(!ptr || !atp_sset_has((uint64_t)(uintptr_t)ptr))) {
		void *r = g.real.realloc(ptr, size);
		if (ATP_LIKELY(atp_sample_skip(t, size)) || !r)
			return r;
		int e = errno;
		t->guard = 1;
		uint64_t t1 = atp_now();
		rec_alloc(t, type, ATR_FLAG_TIMED, t1, 0, r, size, 0, type == ATR_T_REALLOC ? 1 : 2,
			  0, nmemb);
		atp_sset_add((uint64_t)(uintptr_t)r);
		t->guard = 0;
		errno = e;
		return r;
	}
	t->guard = 1;
	uint64_t t0 = atp_now();
	atp_sset_del((uint64_t)(uintptr_t)ptr);
	resident_before(t, t0, ptr);
	void *r = g.real.realloc(ptr, size);
	int e = errno;
	uint64_t t1 = atp_now();
	if (r && !atp_sample_skip(t, size)) {
		rec_alloc(t, type, ATR_FLAG_TIMED, t0, t1 - t0, r, size, 0,
			  type == ATR_T_REALLOC ? 1 : 2, (uint64_t)(uintptr_t)ptr, nmemb);
		atp_sset_add((uint64_t)(uintptr_t)r);
	} else if (r || size == 0) {
		sampled_free_rec(t, t0, ptr); /* moved or freed: the old block died */
	} else {
		atp_sset_add((uint64_t)(uintptr_t)ptr); /* failed: still live */
	}
	t->guard = 0;
	errno = e;
	return r;
}

/* malloc, free and calloc: the sampled fast path first, in a function of
 * its own so that it saves no more registers than it needs; everything
 * else (full tracing, pass-through, init) in *_any. */
#define FAST_SAMPLING(t)                                                                           \
	(ATP_LIKELY(g.sample_rate != 0) && ATP_LIKELY(!((t)->guard | !g.recording)))

static __attribute__((noinline)) void *sampled_hit(struct atp_thread *t, unsigned type, void *r,
						   size_t size, unsigned nextra, uint64_t e1)
{
	if (atp_sample_hit(t, size) && r)
		sampled_alloc(t, type, r, size, nextra, e1);
	return r;
}

static __attribute__((noinline)) void sampled_free(struct atp_thread *t, void *ptr)
{
	int e = errno;
	t->guard = 1;
	atp_sset_del((uint64_t)(uintptr_t)ptr);
	uint64_t ts = atp_now(), u = atp_resident_size(ptr);
	if (u)
		atp_resident_note(t, ts, ptr, u);
	sampled_free_rec(t, ts, ptr);
	g.real.free(ptr);
	t->guard = 0;
	errno = e;
}

static __attribute__((noinline)) void *malloc_any(size_t size);
static __attribute__((noinline)) void free_any(void *ptr);
static __attribute__((noinline)) void *calloc_any(size_t nmemb, size_t size);

EXPORT void *malloc(size_t size)
{
	struct atp_thread *t = &atp_tls;
	if (FAST_SAMPLING(t)) {
		void *r = g.real.malloc(size);
		if (ATP_LIKELY(size < t->countdown)) {
			t->countdown -= size;
			return r;
		}
		return sampled_hit(t, ATR_T_MALLOC, r, size, 0, 0);
	}
	return malloc_any(size);
}

EXPORT void free(void *ptr)
{
	struct atp_thread *t = &atp_tls;
	if (FAST_SAMPLING(t) && !atp_is_boot_ptr(ptr)) {
		if (ATP_LIKELY(!ptr || !atp_sset_has((uint64_t)(uintptr_t)ptr))) {
			g.real.free(ptr);
			return;
		}
		sampled_free(t, ptr);
		return;
	}
	free_any(ptr);
}

EXPORT void *calloc(size_t nmemb, size_t size)
{
	struct atp_thread *t = &atp_tls;
	size_t tot;
	if (FAST_SAMPLING(t) && !__builtin_mul_overflow(nmemb, size, &tot)) {
		void *r = g.real.calloc(nmemb, size);
		if (ATP_LIKELY(tot < t->countdown)) {
			t->countdown -= tot;
			return r;
		}
		return sampled_hit(t, ATR_T_CALLOC, r, tot, 1, nmemb);
	}
	return calloc_any(nmemb, size);
}

static void *malloc_any(size_t size)
{
	struct atp_thread *t = &atp_tls;
	if (ATP_UNLIKELY(t->guard | !g.recording) && atp_passthrough(t))
		return g.real.malloc(size);
	if (g.sample_rate)
		SAMPLED(g.real.malloc(size), size, ATR_T_MALLOC, 0, 0);
	t->guard = 1;
	unsigned timed = atp_timed_size(t, size); /* read once: the real call is opaque */
	uint64_t t0 = timed ? atp_now() : 0;
	void *r = g.real.malloc(size);
	uint64_t t1 = atp_now();
	rec_alloc_inl(t, ATR_T_MALLOC, timed, t1, t1 - t0, r, size, 0, 0, 0, 0);
	t->guard = 0;
	return r;
}

static void free_any(void *ptr)
{
	struct atp_thread *t = &atp_tls;
	if (ATP_UNLIKELY(atp_is_boot_ptr(ptr)))
		return;
	if (ATP_UNLIKELY(t->guard | !g.recording) && atp_passthrough(t)) {
		g.real.free(ptr);
		return;
	}
	if (g.sample_rate) {
		if (ATP_LIKELY(!ptr || !atp_sset_has((uint64_t)(uintptr_t)ptr)))
			g.real.free(ptr);
		else
			sampled_free(t, ptr);
		return;
	}
	t->guard = 1;
	uint64_t t0 = atp_now(), u = 0;
	if (ptr) {
		u = atp_resident_size(ptr);
		if (ATP_UNLIKELY(u))
			atp_resident_note(t, t0, ptr, u);
	}
	if (ATP_LIKELY(!atp_timed_size(t, u))) {
		uint64_t *p = atp_reserve(t, 2, t0);
		if (ATP_LIKELY(p != NULL)) {
			p[1] = (uint64_t)(uintptr_t)ptr;
			atp_commit(t, p, 2, atp_w0(t0, ATR_T_FREE));
		}
		g.real.free(ptr);
	} else {
		g.real.free(ptr);
		uint64_t t1 = atp_now();
		uint64_t *p = atp_reserve(t, 3, t0);
		if (p) {
			p[1] = (uint64_t)(uintptr_t)ptr;
			p[2] = t1 - t0;
			atp_commit(t, p, 3, atp_w0(t0, ATR_T_FREE | ATR_FLAG_TIMED));
		}
	}
	t->guard = 0;
}

static void *calloc_any(size_t nmemb, size_t size)
{
	struct atp_thread *t = &atp_tls;
	if (ATP_UNLIKELY(t->guard | !g.recording) && atp_passthrough(t))
		return g.real.calloc(nmemb, size);
	if (g.sample_rate) {
		size_t tot;
		if (__builtin_mul_overflow(nmemb, size, &tot))
			tot = SIZE_MAX;
		SAMPLED(g.real.calloc(nmemb, size), tot, ATR_T_CALLOC, 1, nmemb);
	}
	t->guard = 1;
	size_t total;
	if (__builtin_mul_overflow(nmemb, size, &total))
		total = SIZE_MAX;
	unsigned timed = atp_timed_size(t, total);
	uint64_t t0 = timed ? atp_now() : 0;
	void *r = g.real.calloc(nmemb, size);
	uint64_t t1 = atp_now();
	rec_alloc_inl(t, ATR_T_CALLOC, timed, t1, t1 - t0, r, total, 0, 1, nmemb, 0);
	t->guard = 0;
	return r;
}

/* realloc and reallocarray always carry both stamps: word 0 holds the
 * start (the old block's release) and the timing word the duration, so
 * start + duration is when the new block existed. */
EXPORT void *realloc(void *ptr, size_t size)
{
	struct atp_thread *t = &atp_tls;
	if (ATP_UNLIKELY(atp_is_boot_ptr(ptr))) {
		/* a block from the bootstrap pool: move it to the real heap */
		void *r = malloc(size);
		size_t old = atp_boot_size(ptr);
		if (r)
			__builtin_memcpy(r, ptr, old < size ? old : size);
		return r;
	}
	if (ATP_UNLIKELY(t->guard | !g.recording) && atp_passthrough(t))
		return g.real.realloc(ptr, size);
	if (g.sample_rate)
		return sampled_realloc(t, ATR_T_REALLOC, ptr, size, 0);
	t->guard = 1;
	uint64_t t0 = atp_now();
	resident_before(t, t0, ptr);
	void *r = g.real.realloc(ptr, size);
	uint64_t t1 = atp_now();
	rec_alloc_inl(t, ATR_T_REALLOC, ATR_FLAG_TIMED, t0, t1 - t0, r, size, 0, 1,
		      (uint64_t)(uintptr_t)ptr, 0);
	t->guard = 0;
	return r;
}

/* reallocarray is realloc behind an overflow check; calling the real
 * realloc ourselves keeps glibc's own nested realloc call out of sight. */
EXPORT void *reallocarray(void *ptr, size_t nmemb, size_t size)
{
	struct atp_thread *t = &atp_tls;
	if (ATP_UNLIKELY(t->guard | !g.recording) && atp_passthrough(t))
		return g.real.reallocarray(ptr, nmemb, size);
	size_t total;
	if (g.sample_rate) {
		if (__builtin_mul_overflow(nmemb, size, &total)) {
			errno = ENOMEM;
			return NULL;
		}
		return sampled_realloc(t, ATR_T_REALLOCARRAY, ptr, total, nmemb);
	}
	t->guard = 1;
	void *r;
	uint64_t t0 = atp_now();
	if (__builtin_mul_overflow(nmemb, size, &total)) {
		total = SIZE_MAX;
		r = NULL;
		errno = ENOMEM;
	} else {
		resident_before(t, t0, ptr);
		r = g.real.realloc(ptr, total);
	}
	uint64_t t1 = atp_now();
	rec_alloc(t, ATR_T_REALLOCARRAY, ATR_FLAG_TIMED, t0, t1 - t0, r, total, 0, 2,
		  (uint64_t)(uintptr_t)ptr, nmemb);
	t->guard = 0;
	return r;
}

#define ALIGNED_HOOK(name, type)                                                                   \
	EXPORT void *name(size_t align, size_t size)                                               \
	{                                                                                          \
		struct atp_thread *t = &atp_tls;                                                   \
		if (ATP_UNLIKELY(t->guard | !g.recording) && atp_passthrough(t))                   \
			return g.real.name(align, size);                                           \
		if (g.sample_rate)                                                                 \
			SAMPLED(g.real.name(align, size), size, type, 1, align);                   \
		t->guard = 1;                                                                      \
		unsigned timed = atp_timed_size(t, size);                                          \
		uint64_t t0 = timed ? atp_now() : 0;                                               \
		void *r = g.real.name(align, size);                                                \
		uint64_t t1 = atp_now();                                                           \
		rec_alloc(t, type, timed, t1, t1 - t0, r, size, 0, 1, align, 0);                   \
		t->guard = 0;                                                                      \
		return r;                                                                          \
	}

ALIGNED_HOOK(memalign, ATR_T_MEMALIGN)
ALIGNED_HOOK(aligned_alloc, ATR_T_ALIGNED_ALLOC)

EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
	struct atp_thread *t = &atp_tls;
	if (ATP_UNLIKELY(t->guard | !g.recording) && atp_passthrough(t))
		return g.real.posix_memalign(out, align, size);
	if (g.sample_rate) {
		int rc = g.real.posix_memalign(out, align, size);
		if (ATP_LIKELY(atp_sample_skip(t, size)) || rc)
			return rc;
		sampled_alloc(t, ATR_T_POSIX_MEMALIGN, *out, size, 1, align);
		return rc;
	}
	t->guard = 1;
	unsigned timed = atp_timed_size(t, size);
	uint64_t t0 = timed ? atp_now() : 0;
	void *r = NULL;
	int rc = g.real.posix_memalign(&r, align, size);
	uint64_t t1 = atp_now();
	if (rc == 0)
		*out = r;
	else
		r = NULL;
	/* a failure keeps its error code where the slack would be */
	rec_alloc(t, ATR_T_POSIX_MEMALIGN, timed, t1, t1 - t0, r, size, rc == 0 ? 0 : (uint64_t)rc,
		  1, align, 0);
	t->guard = 0;
	return rc;
}

#define PAGE_HOOK(name, type)                                                                      \
	EXPORT void *name(size_t size)                                                             \
	{                                                                                          \
		struct atp_thread *t = &atp_tls;                                                   \
		if (ATP_UNLIKELY(t->guard | !g.recording) && atp_passthrough(t))                   \
			return g.real.name(size);                                                  \
		if (g.sample_rate)                                                                 \
			SAMPLED(g.real.name(size), size, type, 0, 0);                              \
		t->guard = 1;                                                                      \
		unsigned timed = atp_timed_size(t, size);                                          \
		uint64_t t0 = timed ? atp_now() : 0;                                               \
		void *r = g.real.name(size);                                                       \
		uint64_t t1 = atp_now();                                                           \
		rec_alloc(t, type, timed, t1, t1 - t0, r, size, 0, 0, 0, 0);                       \
		t->guard = 0;                                                                      \
		return r;                                                                          \
	}

PAGE_HOOK(valloc, ATR_T_VALLOC)
PAGE_HOOK(pvalloc, ATR_T_PVALLOC)
