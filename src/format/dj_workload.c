/* dj_workload.c - see dj_workload.h. */
#define _GNU_SOURCE
#include "dj_workload.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dj_format.h"
#include "util_hmap.h"

#define NONE UINT32_MAX

static void seterr(char *eb, size_t el, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void seterr(char *eb, size_t el, const char *fmt, ...)
{
	if (!eb || !el)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(eb, el, fmt, ap);
	va_end(ap);
}

/* dj's varint: most significant group first, 0x80 on all but the last
 * byte.  0, -1 (too long / overflows 64 bits) or -2 (runs past the end). */
static int get_vi(const uint8_t *d, size_t n, size_t *pos, uint64_t *v)
{
	uint64_t r = 0;
	for (unsigned i = 0; i < DJ_VARINT_MAX; i++) {
		if (*pos >= n)
			return -2;
		uint8_t c = d[(*pos)++];
		r |= c & 0x7f;
		if (!(c & 0x80)) {
			*v = r;
			return 0;
		}
		if (r >> 57)
			return -1;
		r <<= 7;
	}
	return -1;
}

static size_t put_vi(uint8_t *p, uint64_t v)
{
	uint8_t g[DJ_VARINT_MAX];
	size_t n = 0;
	do {
		g[n++] = v & 0x7f;
		v >>= 7;
	} while (v);
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(g[n - 1 - i] | (i + 1 < n ? 0x80 : 0));
	return n;
}

/* ------------------------------------------------------------ header */
struct hdr {
	uint64_t n_ptrs, n_syncs, nthreads;
	uint64_t *off;
	size_t end;
};

static const char *vi_why(int r)
{
	return r == -2 ? "truncated" : "bad varint";
}

/* The header in dj's trace2wl order.  0, or -1 with why filled. */
static int parse_header(const uint8_t *d, size_t n, struct hdr *h, int want_off, char *why,
			size_t wl)
{
	static const uint8_t order[3] = {DJ_C_ALLOC_PTRS, DJ_C_ALLOC_SYNCS, DJ_C_NTHREADS};
	uint64_t *v[3] = {&h->n_ptrs, &h->n_syncs, &h->nthreads};
	size_t pos = 0;
	memset(h, 0, sizeof(*h));
	for (int i = 0; i < 3; i++) {
		if (pos >= n || d[pos] != order[i]) {
			seterr(why, wl, "header byte %zu is not %s", pos,
			       i == 0	? "ALLOC_PTRS"
			       : i == 1 ? "ALLOC_SYNCS"
					: "NTHREADS");
			return -1;
		}
		pos++;
		int r = get_vi(d, n, &pos, v[i]);
		if (r < 0) {
			seterr(why, wl, "header: %s at offset %zu", vi_why(r), pos);
			return -1;
		}
	}
	if (h->nthreads == 0 || h->nthreads > AWL_MAX_THREADS) {
		seterr(why, wl, "header: %" PRIu64 " threads (1 .. %u)", h->nthreads,
		       AWL_MAX_THREADS);
		return -1;
	}
	if (want_off && !(h->off = calloc(h->nthreads, sizeof(*h->off)))) {
		seterr(why, wl, "out of memory");
		return -1;
	}
	for (uint64_t t = 0; t < h->nthreads; t++) {
		uint64_t o;
		if (pos >= n || d[pos] != DJ_C_START_THREAD) {
			seterr(why, wl,
			       "header: START_THREAD %" PRIu64 " of %" PRIu64
			       " missing at offset %zu",
			       t + 1, h->nthreads, pos);
			return -1;
		}
		pos++;
		int r = get_vi(d, n, &pos, &o);
		if (r < 0) {
			seterr(why, wl, "header: %s at offset %zu", vi_why(r), pos);
			return -1;
		}
		if (h->off)
			h->off[t] = o;
	}
	if (pos >= n || d[pos] != DJ_C_DONE) {
		seterr(why, wl, "header: no DONE after the START_THREADs (offset %zu)", pos);
		return -1;
	}
	h->end = pos + 1;
	return 0;
}

int dj_wl_detect(const void *data, size_t size)
{
	struct hdr h;
	return parse_header(data, size, &h, 0, NULL, 0) == 0;
}

static int map_file(const char *path, const uint8_t **d, size_t *n, char *eb, size_t el)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		seterr(eb, el, "%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode) || st.st_size == 0) {
		seterr(eb, el, "%s: %s", path,
		       S_ISREG(st.st_mode) ? "empty file" : "not a regular file");
		close(fd);
		return -1;
	}
	void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED) {
		seterr(eb, el, "%s: mmap: %s", path, strerror(errno));
		return -1;
	}
	*d = m;
	*n = (size_t)st.st_size;
	return 0;
}

int dj_wl_detect_path(const char *path)
{
	const uint8_t *d;
	size_t n;
	if (map_file(path, &d, &n, NULL, 0) < 0)
		return 0;
	int r = dj_wl_detect(d, n);
	munmap((void *)d, n);
	return r;
}

/* -------------------------------------------------------- translation */
struct ix {
	uint64_t slot1; /* alloctrace slot + 1, 0 = not assigned yet */
	uint64_t size;	/* requested bytes while live */
	uint64_t idx;	/* op index of the last use */
	uint32_t owner; /* last user (thread), NONE */
	uint8_t live;
};

struct sync {
	uint32_t thread1; /* writer + 1, 0 = not written yet */
	uint64_t n;	  /* its op count at SYNC_W */
};

struct tth {
	size_t pos;
	int done;
	struct util_hmap waited; /* thread -> ops waited for */
};

struct tr {
	const uint8_t *d;
	size_t n;
	const char *name;
	struct hdr h;
	struct ix *ix;
	struct sync *sy;
	struct tth *th;
	struct awl_writer *w;
	struct dj_wl_stats *st;
	uint64_t live;
	int nomem;
	char *eb;
	size_t el;
};

static int terr(struct tr *x, uint32_t t, size_t at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int terr(struct tr *x, uint32_t t, size_t at, const char *fmt, ...)
{
	char what[160];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	seterr(x->eb, x->el, "%s: dj workload: thread %" PRIu32 " at offset %zu: %s", x->name, t,
	       at, what);
	return -1;
}

static void put_wait(struct tr *x, uint32_t t, uint32_t owner, uint64_t need)
{
	uint64_t have = 0;
	if (util_hmap_lookup(&x->th[t].waited, owner, &have) && have >= need)
		return;
	if (util_hmap_insert(&x->th[t].waited, owner, need, NULL) < 0) {
		x->nomem = 1;
		return;
	}
	uint8_t *p = awl_writer_reserve(x->w, t, 32);
	*p++ = AWL_OP_WAIT;
	p = awl_put_uv(p, owner);
	p = awl_put_uv(p, need);
	awl_writer_commit(x->w, t, p);
	x->st->waits++;
}

/* Before thread t uses index p: a WAIT on its last use by another thread,
 * unless a sync already ordered it. */
static void order_use(struct tr *x, uint32_t t, uint64_t p)
{
	struct ix *e = &x->ix[p];
	if (e->owner == NONE || e->owner == t)
		return;
	uint64_t have = 0;
	if (util_hmap_lookup(&x->th[t].waited, e->owner, &have) && have >= e->idx + 1)
		return;
	x->st->races_fixed++;
	put_wait(x, t, e->owner, e->idx + 1);
}

static uint64_t slot1_of(struct tr *x, uint64_t p)
{
	if (!x->ix[p].slot1)
		x->ix[p].slot1 = ++x->st->slots;
	return x->ix[p].slot1;
}

static void live_add(struct tr *x, uint64_t size)
{
	x->live += size;
	if (x->live > x->st->ideal_peak)
		x->st->ideal_peak = x->live;
}

/* The block in index p dies (freed, or dropped). */
static void kill(struct tr *x, uint64_t p)
{
	x->live -= x->ix[p].size;
	x->ix[p].size = 0;
	x->ix[p].live = 0;
}

static void mark(struct tr *x, uint32_t t, uint64_t p, uint64_t idx)
{
	x->ix[p].owner = t;
	x->ix[p].idx = idx;
}

/* A block of sz bytes is now in index p (op idx of thread t). */
static void born(struct tr *x, uint32_t t, uint64_t p, uint64_t sz, uint64_t idx)
{
	x->ix[p].live = 1;
	x->ix[p].size = sz;
	live_add(x, sz);
	mark(x, t, p, idx);
}

/* Allocation target p2 still holds a block: dj's trace_run frees it first. */
static void drop_live(struct tr *x, uint32_t t, uint64_t p2)
{
	if (!p2 || !x->ix[p2].live)
		return;
	order_use(x, t, p2);
	uint64_t idx = awl_writer_thread_ops(x->w, t);
	uint8_t *p = awl_writer_reserve(x->w, t, 16);
	*p++ = AWL_OP_DROP;
	p = awl_put_uv(p, x->ix[p2].slot1 - 1);
	awl_writer_commit(x->w, t, p);
	kill(x, p2);
	mark(x, t, p2, idx);
	x->st->overwrites++;
}

static void call_done(struct tr *x, uint32_t t, uint8_t *p, unsigned type)
{
	awl_writer_commit(x->w, t, p);
	awl_writer_count_call(x->w, t, type);
	x->st->calls[type]++;
	x->st->calls[0]++;
}

/* Run thread t until it blocks, ends or fails: 1 progress, 0 blocked at
 * once, -1 error. */
static int run(struct tr *x, uint32_t t)
{
	struct tth *th = &x->th[t];
	const uint8_t *d = x->d;
	size_t n = x->n;
	int progress = 0;
	while (!th->done) {
		size_t at = th->pos, pos = at;
		if (pos >= n)
			return terr(x, t, at, "the stream runs past the end of the file (no DONE)");
		uint8_t code = d[pos++];
		uint64_t a[3] = {0, 0, 0};
		int nf;
		switch (code) {
		case DJ_C_NOP:
		case DJ_C_DONE:
			nf = 0;
			break;
		case DJ_C_FREE:
		case DJ_C_SYNC_W:
		case DJ_C_SYNC_R:
			nf = 1;
			break;
		case DJ_C_MALLOC:
		case DJ_C_CALLOC:
		case DJ_C_VALLOC:
		case DJ_C_PVALLOC:
			nf = 2;
			break;
		case DJ_C_REALLOC:
		case DJ_C_MEMALIGN:
		case DJ_C_POSIX_MEMALIGN:
			nf = 3;
			break;
		case DJ_C_ALLOC_PTRS:
		case DJ_C_ALLOC_SYNCS:
		case DJ_C_NTHREADS:
		case DJ_C_START_THREAD:
			return terr(x, t, at, "header op %u inside a thread's stream", code);
		default:
			return terr(x, t, at, "unknown op %u", code);
		}
		for (int i = 0; i < nf; i++) {
			int r = get_vi(d, n, &pos, &a[i]);
			if (r < 0)
				return terr(x, t, at, "%s",
					    r == -2 ? "op runs past the end of the file"
						    : "bad varint");
		}
		/* pointer indices (0 is NULL): the first field, and realloc's p1 */
		if (code != DJ_C_NOP && code != DJ_C_DONE && code != DJ_C_SYNC_W &&
		    code != DJ_C_SYNC_R) {
			uint64_t hi = code == DJ_C_REALLOC && a[1] > a[0] ? a[1] : a[0];
			if (hi && hi >= x->h.n_ptrs)
				return terr(x, t, at,
					    "pointer index %" PRIu64 " past ALLOC_PTRS %" PRIu64,
					    hi, x->h.n_ptrs);
		}
		if ((code == DJ_C_SYNC_W || code == DJ_C_SYNC_R) && a[0] > x->h.n_syncs)
			return terr(x, t, at, "sync %" PRIu64 " past ALLOC_SYNCS %" PRIu64, a[0],
				    x->h.n_syncs);
		if (code == DJ_C_SYNC_R) {
			struct sync *s = &x->sy[a[0]];
			if (!s->thread1)
				return progress; /* blocked until someone writes it */
			x->st->syncs_r++;
			if (s->thread1 - 1 != t)
				put_wait(x, t, s->thread1 - 1, s->n);
		}
		uint64_t idx = awl_writer_thread_ops(x->w, t);
		uint8_t *p;
		switch (code) {
		case DJ_C_DONE:
			th->done = 1;
			break;
		case DJ_C_NOP:
			x->st->nops++;
			break;
		case DJ_C_SYNC_W:
			x->st->syncs_w++;
			if (!x->sy[a[0]].thread1) {
				x->sy[a[0]].thread1 = t + 1;
				x->sy[a[0]].n = idx;
			}
			break;
		case DJ_C_SYNC_R:
			break;
		case DJ_C_FREE: {
			uint64_t p1 = a[0], src = 0;
			if (p1 && x->ix[p1].live) {
				order_use(x, t, p1);
				src = x->ix[p1].slot1;
				idx = awl_writer_thread_ops(x->w, t);
			} else {
				x->st->null_frees++;
			}
			p = awl_writer_reserve(x->w, t, 32);
			*p++ = AWL_OP_FREE;
			p = awl_put_uv(p, src);
			call_done(x, t, p, AWL_OP_FREE);
			if (src) {
				kill(x, p1);
				mark(x, t, p1, idx);
			}
			break;
		}
		case DJ_C_REALLOC: {
			uint64_t p2 = a[0], p1 = a[1], sz = a[2], src = 0, dst = 0;
			if (p2 != p1)
				drop_live(x, t, p2);
			if (p1 && x->ix[p1].live) {
				order_use(x, t, p1);
				src = x->ix[p1].slot1;
			}
			if (p2) {
				if (p2 != p1 || !src)
					order_use(x, t, p2);
				dst = slot1_of(x, p2);
			}
			idx = awl_writer_thread_ops(x->w, t);
			p = awl_writer_reserve(x->w, t, 48);
			*p++ = AWL_OP_REALLOC;
			p = awl_put_uv(p, src);
			p = awl_put_uv(p, dst);
			p = awl_put_uv(p, sz);
			call_done(x, t, p, AWL_OP_REALLOC);
			if (src) {
				if (dst || !sz)
					kill(x, p1);
				mark(x, t, p1, idx);
			}
			if (dst)
				born(x, t, p2, sz, idx);
			break;
		}
		default: { /* the allocations */
			uint64_t p2 = a[0], align = 0, sz = a[1];
			unsigned type = AWL_OP_MALLOC;
			if (code == DJ_C_CALLOC)
				type = AWL_OP_CALLOC;
			else if (code == DJ_C_VALLOC)
				type = AWL_OP_VALLOC;
			else if (code == DJ_C_PVALLOC)
				type = AWL_OP_PVALLOC;
			else if (code == DJ_C_MEMALIGN || code == DJ_C_POSIX_MEMALIGN) {
				type =
				    code == DJ_C_MEMALIGN ? AWL_OP_MEMALIGN : AWL_OP_POSIX_MEMALIGN;
				align = a[1];
				sz = a[2];
			}
			uint64_t dst = 0;
			drop_live(x, t, p2);
			if (p2) {
				order_use(x, t, p2);
				dst = slot1_of(x, p2);
			}
			idx = awl_writer_thread_ops(x->w, t);
			p = awl_writer_reserve(x->w, t, 48);
			*p++ = (uint8_t)type;
			p = awl_put_uv(p, dst);
			if (type == AWL_OP_CALLOC) {
				p = awl_put_uv(p, sz); /* dj calls calloc(size, 1) */
				p = awl_put_uv(p, 1);
			} else if (align || type == AWL_OP_MEMALIGN ||
				   type == AWL_OP_POSIX_MEMALIGN) {
				p = awl_put_uv(p, align);
				p = awl_put_uv(p, sz);
			} else {
				p = awl_put_uv(p, sz);
			}
			call_done(x, t, p, type);
			if (dst)
				born(x, t, p2, sz, idx);
			break;
		}
		}
		if (x->nomem)
			return terr(x, t, at, "out of memory");
		if (code != DJ_C_DONE)
			x->st->ops++;
		th->pos = pos;
		progress = 1;
	}
	return progress;
}

static int translate(struct tr *x)
{
	const char *nm = x->name;
	char why[200];
	if (parse_header(x->d, x->n, &x->h, 1, why, sizeof(why)) < 0) {
		seterr(x->eb, x->el,
		       "%s: not an alloctrace workload (bad magic) nor a dj/malloc workload (%s)",
		       nm, why);
		return -1;
	}
	struct hdr *h = &x->h;
	/* every index and sync appears in the streams: a header that claims
	   more than the file could hold is corrupt (and must not make us
	   allocate it) */
	if (h->n_ptrs > x->n + 1 || h->n_syncs > x->n) {
		seterr(x->eb, x->el,
		       "%s: dj workload: implausible header (%" PRIu64 " pointers, %" PRIu64
		       " syncs in a %zu-byte file)",
		       nm, h->n_ptrs, h->n_syncs, x->n);
		return -1;
	}
	for (uint64_t t = 0; t < h->nthreads; t++)
		if (h->off[t] < h->end || h->off[t] >= x->n) {
			seterr(x->eb, x->el,
			       "%s: dj workload: thread %" PRIu64 " starts at offset %" PRIu64
			       ", outside the streams (%zu .. %zu)",
			       nm, t, h->off[t], h->end, x->n);
			return -1;
		}
	x->st->n_ptrs = h->n_ptrs;
	x->st->n_syncs = h->n_syncs;
	x->st->threads = (uint32_t)h->nthreads;
	x->ix = calloc(h->n_ptrs ? h->n_ptrs : 1, sizeof(*x->ix));
	x->sy = calloc(h->n_syncs + 1, sizeof(*x->sy));
	x->th = calloc(h->nthreads, sizeof(*x->th));
	if (!x->ix || !x->sy || !x->th) {
		seterr(x->eb, x->el, "%s: out of memory", nm);
		return -1;
	}
	for (uint64_t i = 0; i < h->n_ptrs; i++)
		x->ix[i].owner = NONE;
	for (uint32_t t = 0; t < h->nthreads; t++) {
		x->th[t].pos = h->off[t];
		if (awl_writer_add_thread(x->w, t + 1, 0) != (int)t) {
			seterr(x->eb, x->el, "%s: out of memory", nm);
			return -1;
		}
	}
	uint64_t left = h->nthreads;
	while (left) {
		int any = 0;
		for (uint32_t t = 0; t < h->nthreads; t++) {
			if (x->th[t].done)
				continue;
			int r = run(x, t);
			if (r < 0)
				return -1;
			any |= r;
			if (x->th[t].done)
				left--;
		}
		if (!any) {
			for (uint32_t t = 0; t < h->nthreads; t++)
				if (!x->th[t].done) {
					size_t pos = x->th[t].pos + 1;
					uint64_t k = 0;
					get_vi(x->d, x->n, &pos, &k);
					return terr(x, t, x->th[t].pos,
						    "deadlock: SYNC_R %" PRIu64
						    " is never written by a thread that can run",
						    k);
				}
		}
	}
	return 0;
}

static int translate_common(const uint8_t *d, size_t n, const char *name, const char *out,
			    struct dj_wl_stats *st, char *eb, size_t el)
{
	memset(st, 0, sizeof(*st));
	struct tr x = {.d = d, .n = n, .name = name, .st = st, .eb = eb, .el = el};
	if (awl_writer_open(out, &x.w, eb, el) < 0)
		return -1;
	int rc = translate(&x);
	if (rc == 0) {
		struct awl_summary_in s = {
		    .slots = st->slots, .ideal_peak = st->ideal_peak, .waits = st->waits};
		rc = awl_writer_finish(x.w, &s, eb, el);
	}
	awl_writer_close(x.w);
	if (x.th)
		for (uint64_t t = 0; t < x.h.nthreads; t++)
			util_hmap_destroy(&x.th[t].waited);
	free(x.th);
	free(x.ix);
	free(x.sy);
	free(x.h.off);
	if (rc)
		unlink(out);
	return rc;
}

int dj_wl_translate_buffer(const void *data, size_t size, const char *name, const char *out,
			   struct dj_wl_stats *st, char *eb, size_t el)
{
	return translate_common(data, size, name ? name : "buffer", out, st, eb, el);
}

int dj_wl_translate(const char *in, const char *out, struct dj_wl_stats *st, char *eb, size_t el)
{
	const uint8_t *d;
	size_t n;
	memset(st, 0, sizeof(*st));
	if (map_file(in, &d, &n, eb, el) < 0)
		return -1;
	madvise((void *)d, n, MADV_SEQUENTIAL);
	int rc = translate_common(d, n, in, out, st, eb, el);
	munmap((void *)d, n);
	return rc;
}

/* ------------------------------------------------------------- writer */
struct wout {
	FILE *fp; /* NULL: only count */
	uint64_t n;
};

static void w_byte(struct wout *o, uint8_t b)
{
	if (o->fp)
		putc(b, o->fp);
	o->n++;
}

static void w_vi(struct wout *o, uint64_t v)
{
	uint8_t b[DJ_VARINT_MAX];
	size_t n = put_vi(b, v);
	if (o->fp)
		fwrite(b, 1, n, o->fp);
	o->n += n;
}

static uint64_t mul_sat(uint64_t a, uint64_t b)
{
	uint64_t r;
	return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

/* Sync points of one thread: the op counts other threads wait for. */
struct spts {
	uint64_t *n;
	size_t len, cap;
	uint64_t base; /* sync id of n[0] is base + 1 */
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t sync_id(const struct spts *s, uint64_t n)
{
	size_t lo = 0, hi = s->len;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (s->n[mid] < n)
			lo = mid + 1;
		else
			hi = mid;
	}
	return s->base + lo + 1;
}

/* One thread's dj stream (to o), or -1 on a decoding error. */
static int write_stream(awl_file *f, uint32_t t, const struct spts *sp, uint64_t slots,
			uint64_t page, struct wout *o, struct dj_wl_stats *st, int count, char *eb,
			size_t el)
{
	struct awl_stream s;
	struct awl_op op;
	int r;
	uint64_t k = 0, sink = slots + 1 + t;
	size_t c = 0;
	const struct spts *mine = &sp[t];
	awl_stream_init(f, t, &s);
	for (;;) {
		while (c < mine->len && mine->n[c] <= k) {
			w_byte(o, DJ_C_SYNC_W);
			w_vi(o, mine->base + c + 1);
			c++;
		}
		if ((r = awl_stream_next(&s, &op)) <= 0)
			break;
		k++;
		uint64_t idx;
		if (op.code >= AWL_OP_MALLOC && op.code <= AWL_OP_CALL_LAST && count) {
			st->calls[op.code]++;
			st->calls[0]++;
		}
		switch (op.code) {
		case AWL_OP_WAIT:
			if (op.b) {
				w_byte(o, DJ_C_SYNC_R);
				w_vi(o, sync_id(&sp[op.a], op.b));
			}
			break;
		case AWL_OP_FREE:
			w_byte(o, DJ_C_FREE);
			w_vi(o, op.a);
			break;
		case AWL_OP_MALLOC:
		case AWL_OP_CALLOC:
			w_byte(o, op.code == AWL_OP_MALLOC ? DJ_C_MALLOC : DJ_C_CALLOC);
			w_vi(o, op.a ? op.a : sink);
			w_vi(o, op.code == AWL_OP_MALLOC ? op.b : mul_sat(op.b, op.c));
			st->sinks += count && !op.a;
			break;
		case AWL_OP_REALLOC:
		case AWL_OP_REALLOCARRAY:
			w_byte(o, DJ_C_REALLOC);
			w_vi(o, op.b ? op.b : sink);
			w_vi(o, op.a);
			w_vi(o, op.code == AWL_OP_REALLOC ? op.c : mul_sat(op.c, op.d));
			st->sinks += count && !op.b;
			break;
		case AWL_OP_MEMALIGN:
		case AWL_OP_POSIX_MEMALIGN:
		case AWL_OP_ALIGNED_ALLOC:
		case AWL_OP_VALLOC:
		case AWL_OP_PVALLOC:
			/* dj's trace_run runs memalign only (it aborts on valloc
			   and pvalloc): the others become the memalign they are */
			idx = op.a ? op.a : sink;
			st->sinks += count && !op.a;
			w_byte(o, DJ_C_MEMALIGN);
			w_vi(o, idx);
			if (op.code == AWL_OP_VALLOC || op.code == AWL_OP_PVALLOC) {
				uint64_t sz = op.b;
				if (op.code == AWL_OP_PVALLOC)
					sz = sz > UINT64_MAX - page ? sz
								    : (sz + page - 1) / page * page;
				w_vi(o, page);
				w_vi(o, sz);
			} else {
				w_vi(o, op.b);
				w_vi(o, op.c);
			}
			break;
		case AWL_OP_DROP:
			st->dropped += count; /* dj has no such op: its next
						  allocation into the slot frees it */
			break;
		default: /* markers, thread start/exit */
			break;
		}
	}
	w_byte(o, DJ_C_DONE);
	if (r < 0)
		seterr(eb, el, "%s", s.err);
	awl_stream_free(&s);
	return r < 0 ? -1 : 0;
}

/* The header, the streams starting at offset hlen with lengths len[]. */
static void write_header(struct wout *o, uint64_t n_ptrs, uint64_t n_syncs, uint32_t nth,
			 const uint64_t *len, uint64_t hlen)
{
	uint64_t off = hlen;
	w_byte(o, DJ_C_ALLOC_PTRS);
	w_vi(o, n_ptrs);
	w_byte(o, DJ_C_ALLOC_SYNCS);
	w_vi(o, n_syncs);
	w_byte(o, DJ_C_NTHREADS);
	w_vi(o, nth);
	for (uint32_t t = 0; t < nth; t++) {
		w_byte(o, DJ_C_START_THREAD);
		w_vi(o, off);
		off += len[t];
	}
	w_byte(o, DJ_C_DONE);
}

int dj_wl_write(awl_file *f, FILE *fp, struct dj_wl_stats *st, char *eb, size_t el)
{
	memset(st, 0, sizeof(*st));
	if (awl_verify(f, eb, el) < 0)
		return -1;
	const struct awl_info *in = awl_get_info(f);
	uint32_t nth = in->nthreads;
	int rc = -1;
	struct spts *sp = calloc(nth ? nth : 1, sizeof(*sp));
	uint64_t *len = calloc(nth ? nth : 1, sizeof(*len));
	if (!sp || !len) {
		seterr(eb, el, "out of memory");
		goto out;
	}
	/* pass 1: every op count some thread waits for */
	for (uint32_t t = 0; t < nth; t++) {
		struct awl_stream s;
		struct awl_op op;
		int r;
		awl_stream_init(f, t, &s);
		while ((r = awl_stream_next(&s, &op)) > 0) {
			if (op.code != AWL_OP_WAIT || !op.b)
				continue;
			struct spts *p = &sp[op.a];
			if (p->len == p->cap) {
				size_t nc = p->cap ? p->cap * 2 : 16;
				uint64_t *nn = realloc(p->n, nc * sizeof(*nn));
				if (!nn) {
					awl_stream_free(&s);
					seterr(eb, el, "out of memory");
					goto out;
				}
				p->n = nn;
				p->cap = nc;
			}
			p->n[p->len++] = op.b;
		}
		awl_stream_free(&s);
		if (r < 0) {
			seterr(eb, el, "%s", s.err);
			goto out;
		}
	}
	uint64_t ids = 0;
	for (uint32_t t = 0; t < nth; t++) {
		struct spts *p = &sp[t];
		if (p->len > 1)
			qsort(p->n, p->len, sizeof(*p->n), cmp_u64);
		size_t u = 0;
		for (size_t i = 0; i < p->len; i++)
			if (!u || p->n[u - 1] != p->n[i])
				p->n[u++] = p->n[i];
		p->len = u;
		p->base = ids;
		ids += u;
	}
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	/* pass 2: the length of each stream (the header holds offsets) */
	for (uint32_t t = 0; t < nth; t++) {
		struct wout o = {NULL, 0};
		if (write_stream(f, t, sp, in->slots, page, &o, st, 0, eb, el) < 0)
			goto out;
		len[t] = o.n;
	}
	/* dj's trace_run allocates ALLOC_SYNCS entries and uses ids 1..n:
	   one more keeps id n inside (dj's trace2wl writes one too few) */
	uint64_t n_ptrs = in->slots + 1 + nth, n_syncs = ids + 1, hlen = 0;
	/* the offsets depend on the header's own length: until it is stable */
	for (;;) {
		struct wout m = {NULL, 0};
		write_header(&m, n_ptrs, n_syncs, nth, len, hlen);
		if (m.n == hlen)
			break;
		hlen = m.n;
	}
	struct wout o = {fp, 0};
	write_header(&o, n_ptrs, n_syncs, nth, len, hlen);
	for (uint32_t t = 0; t < nth; t++) {
		uint64_t before = o.n;
		if (write_stream(f, t, sp, in->slots, page, &o, st, 1, eb, el) < 0)
			goto out;
		if (o.n - before != len[t]) {
			seterr(eb, el, "thread %" PRIu32 " changed length between passes", t);
			goto out;
		}
	}
	st->n_ptrs = n_ptrs;
	st->n_syncs = n_syncs;
	st->threads = nth;
	st->syncs_w = st->syncs_r = ids;
	st->slots = in->slots;
	st->ideal_peak = in->ideal_peak;
	if (fflush(fp) != 0 || ferror(fp)) {
		seterr(eb, el, "write failed: %s", strerror(errno));
		goto out;
	}
	rc = 0;
out:
	if (sp)
		for (uint32_t t = 0; t < nth; t++)
			free(sp[t].n);
	free(sp);
	free(len);
	return rc;
}
