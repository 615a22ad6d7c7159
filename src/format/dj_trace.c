/* dj_trace.c - see dj_trace.h. */
#define _GNU_SOURCE
#include "dj_trace.h"
#include "atr_format.h"

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

/* Allocations held back at most (a trace that lost its frees must not grow
 * the reader without bound); beyond, they pass through unfixed. */
#define DJ_MAX_HELD (1u << 20)

struct dj_trace {
	const uint8_t *data;
	size_t size, map_size;
	int mapped;
	char *name;
	uint64_t nrec, pos; /* records, next record */
	struct dj_trace_stats st;
	struct util_hmap serial; /* tid -> serial */
	struct util_hmap live;	 /* address -> 1 */
	struct util_hmap held;	 /* address -> pool index of a held allocation */
	uint64_t *mfr;		 /* serial -> pool index + 1 of a held m_f realloc */
	uint32_t nmfr;
	struct atr_event *pool; /* held events */
	uint32_t *pool_free;
	size_t npool, pool_cap, nfree;
	struct atr_event *q; /* events ready, a ring */
	size_t qhead, qn, qcap;
	struct atr_event cur;
	int flushed;
	char err[256];
};

static int magic_ok(const uint8_t *r)
{
	return (atr_get32(r + DJ_R_TYPE) & 0xff) == DJ_T_MAGIC &&
	       atr_get64(r + DJ_R_PTR1) == DJ_MAGIC_PTR1;
}

int dj_trace_detect(const void *data, size_t size)
{
	return size >= DJ_REC_SIZE && magic_ok(data) &&
	       atr_get64((const uint8_t *)data + DJ_R_SIZE) == 8;
}

int dj_trace_detect_path(const char *path)
{
	uint8_t r[DJ_REC_SIZE];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = pread(fd, r, sizeof(r), 0);
	close(fd);
	return n == (ssize_t)sizeof(r) && dj_trace_detect(r, sizeof(r));
}

static int fail(dj_trace *t, char *eb, size_t el, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(dj_trace *t, char *eb, size_t el, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(t->err, sizeof(t->err), fmt, ap);
	va_end(ap);
	if (eb && el)
		snprintf(eb, el, "%s", t->err);
	return -1;
}

static int setup(dj_trace *t, char *eb, size_t el)
{
	const char *nm = t->name;
	if (t->size < DJ_REC_SIZE)
		return fail(t, eb, el, "%s: too short for a dj trace (%zu bytes)", nm, t->size);
	if (!magic_ok(t->data))
		return fail(t, eb, el, "%s: not a dj/malloc trace (no magic record)", nm);
	uint64_t psize = atr_get64(t->data + DJ_R_SIZE);
	if (psize != 8)
		return fail(t, eb, el,
			    "%s: dj trace of a %" PRIu64
			    "-byte-pointer process: only 64-bit traces are read",
			    nm, psize);
	t->nrec = t->size / DJ_REC_SIZE;
	t->st.truncated_bytes = t->size % DJ_REC_SIZE;
	t->st.first_tid = atr_get32(t->data + DJ_R_THREAD);
	t->st.alloctrace_export = atr_get64(t->data + DJ_R_PAD) == DJ_ALC_MARK;
	if (t->st.alloctrace_export)
		t->st.first_tid >>= 3;
	t->pos = 1;
	return 0;
}

int dj_trace_open_buffer(const void *data, size_t size, const char *name, dj_trace **out, char *eb,
			 size_t el)
{
	*out = NULL;
	dj_trace *t = calloc(1, sizeof(*t));
	if (!t) {
		snprintf(eb, el, "%s: out of memory", name);
		return -1;
	}
	t->data = data;
	t->size = size;
	t->name = strdup(name ? name : "buffer");
	if (setup(t, eb, el) < 0) {
		dj_trace_close(t);
		return -1;
	}
	*out = t;
	return 0;
}

int dj_trace_open(const char *path, dj_trace **out, char *eb, size_t el)
{
	*out = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		snprintf(eb, el, "%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode) || st.st_size < (off_t)DJ_REC_SIZE) {
		snprintf(eb, el, "%s: %s", path,
			 S_ISREG(st.st_mode) ? "too short for a dj trace" : "not a regular file");
		close(fd);
		return -1;
	}
	void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED) {
		snprintf(eb, el, "%s: mmap: %s", path, strerror(errno));
		return -1;
	}
	madvise(m, (size_t)st.st_size, MADV_SEQUENTIAL);
	if (dj_trace_open_buffer(m, (size_t)st.st_size, path, out, eb, el) < 0) {
		munmap(m, (size_t)st.st_size);
		return -1;
	}
	(*out)->mapped = 1;
	(*out)->map_size = (size_t)st.st_size;
	return 0;
}

void dj_trace_close(dj_trace *t)
{
	if (!t)
		return;
	if (t->mapped)
		munmap((void *)t->data, t->map_size);
	util_hmap_destroy(&t->serial);
	util_hmap_destroy(&t->live);
	util_hmap_destroy(&t->held);
	free(t->mfr);
	free(t->pool);
	free(t->pool_free);
	free(t->q);
	free(t->name);
	free(t);
}

const struct dj_trace_stats *dj_trace_get_stats(const dj_trace *t)
{
	return &t->st;
}

const char *dj_trace_error(const dj_trace *t)
{
	return t->err;
}

/* ------------------------------------------------------------ queues */
static int q_push(dj_trace *t, const struct atr_event *ev)
{
	if (t->qn == t->qcap) {
		size_t nc = t->qcap ? t->qcap * 2 : 16;
		struct atr_event *nq = malloc(nc * sizeof(*nq));
		if (!nq)
			return fail(t, NULL, 0, "%s: out of memory", t->name);
		for (size_t i = 0; i < t->qn; i++)
			nq[i] = t->q[(t->qhead + i) & (t->qcap - 1)];
		free(t->q);
		t->q = nq;
		t->qhead = 0;
		t->qcap = nc;
	}
	t->q[(t->qhead + t->qn++) & (t->qcap - 1)] = *ev;
	return 0;
}

/* An event held back in the pool; returns its index or -1. */
static long pool_put(dj_trace *t, const struct atr_event *ev)
{
	size_t i;
	if (t->nfree) {
		i = t->pool_free[--t->nfree];
	} else {
		if (t->npool == t->pool_cap) {
			size_t nc = t->pool_cap ? t->pool_cap * 2 : 64;
			struct atr_event *np = realloc(t->pool, nc * sizeof(*np));
			if (!np)
				return fail(t, NULL, 0, "%s: out of memory", t->name);
			t->pool = np;
			uint32_t *nf = realloc(t->pool_free, nc * sizeof(*nf));
			if (!nf)
				return fail(t, NULL, 0, "%s: out of memory", t->name);
			t->pool_free = nf;
			t->pool_cap = nc;
		}
		i = t->npool++;
	}
	t->pool[i] = *ev;
	return (long)i;
}

static void pool_drop(dj_trace *t, size_t i)
{
	t->pool[i].type = 0;
	t->pool_free[t->nfree++] = (uint32_t)i;
}

/* ------------------------------------------------------------ ordering */
/* ev's block (ev->ret != 0) becomes live, or waits for the release of its
 * address if that is still live (an inversion). */
static int acquire(dj_trace *t, const struct atr_event *ev)
{
	uint64_t a = ev->ret;
	if (util_hmap_lookup(&t->live, a, NULL)) {
		uint64_t old;
		if (util_hmap_lookup(&t->held, a, &old)) {
			/* two allocations wait for the same address: the trace lost a
			   release; the older one goes as it is (the converter drops
			   the block it replaces) */
			if (q_push(t, &t->pool[old]) < 0)
				return -1;
			pool_drop(t, old);
			util_hmap_remove(&t->held, a, NULL);
			t->st.inversions_pending++;
		}
		if (util_hmap_count(&t->held) < DJ_MAX_HELD) {
			long i = pool_put(t, ev);
			if (i < 0 || util_hmap_insert(&t->held, a, (uint64_t)i, NULL) < 0)
				return fail(t, NULL, 0, "%s: out of memory", t->name);
			return 0;
		}
		t->st.inversions_pending++;
		return q_push(t, ev);
	}
	if (util_hmap_insert(&t->live, a, 1, NULL) < 0)
		return fail(t, NULL, 0, "%s: out of memory", t->name);
	return q_push(t, ev);
}

/* Address a was released: an allocation waiting for it goes now. */
static int released(dj_trace *t, uint64_t a)
{
	uint64_t i;
	if (!util_hmap_remove(&t->held, a, &i))
		return 0;
	struct atr_event ev = t->pool[i];
	pool_drop(t, i);
	t->st.inversions_fixed++;
	if (util_hmap_insert(&t->live, a, 1, NULL) < 0)
		return fail(t, NULL, 0, "%s: out of memory", t->name);
	return q_push(t, &ev);
}

static int dispatch(dj_trace *t, struct atr_event *ev)
{
	switch (ev->type) {
	case ATR_T_FREE:
		if (ev->ptr && util_hmap_remove(&t->live, ev->ptr, NULL)) {
			if (q_push(t, ev) < 0)
				return -1;
			return released(t, ev->ptr);
		}
		return q_push(t, ev); /* the converter counts it */
	case ATR_T_REALLOC:
		if (!ev->ptr)
			return ev->ret ? acquire(t, ev) : q_push(t, ev);
		if (ev->ret == ev->ptr || (!ev->ret && ev->size))
			return q_push(t, ev); /* in place, or failed: nothing moves */
		if (util_hmap_remove(&t->live, ev->ptr, NULL)) {
			struct atr_event rel = *ev;
			rel.type = ATR_EV_REALLOC_RELEASE;
			rel.ret = 0;
			rel.size = 0;
			if (q_push(t, &rel) < 0 || released(t, ev->ptr) < 0)
				return -1;
		}
		return ev->ret ? acquire(t, ev) : q_push(t, ev);
	default:
		return ev->ret ? acquire(t, ev) : q_push(t, ev);
	}
}

static uint32_t serial_of(dj_trace *t, uint32_t tid)
{
	uint64_t s;
	if (util_hmap_lookup(&t->serial, tid, &s))
		return (uint32_t)s;
	s = util_hmap_count(&t->serial) + 1;
	if (util_hmap_insert(&t->serial, tid, s, NULL) < 0)
		return 0;
	t->st.threads = (uint32_t)s;
	return (uint32_t)s;
}

/* The held m_f realloc of a serial, or NULL. */
static struct atr_event *mfr_get(dj_trace *t, uint32_t s)
{
	return s < t->nmfr && t->mfr[s] ? &t->pool[t->mfr[s] - 1] : NULL;
}

static int mfr_hold(dj_trace *t, uint32_t s, const struct atr_event *ev)
{
	if (s >= t->nmfr) {
		uint32_t nn = t->nmfr ? t->nmfr : 16;
		while (nn <= s)
			nn *= 2;
		uint64_t *nm = realloc(t->mfr, nn * sizeof(*nm));
		if (!nm)
			return fail(t, NULL, 0, "%s: out of memory", t->name);
		memset(nm + t->nmfr, 0, (nn - t->nmfr) * sizeof(*nm));
		t->mfr = nm;
		t->nmfr = nn;
	}
	long i = pool_put(t, ev);
	if (i < 0)
		return -1;
	t->mfr[s] = (uint64_t)i + 1;
	return 0;
}

static int mfr_release(dj_trace *t, uint32_t s)
{
	struct atr_event ev = t->pool[t->mfr[s] - 1];
	pool_drop(t, t->mfr[s] - 1);
	t->mfr[s] = 0;
	return dispatch(t, &ev);
}

static const uint8_t type_map[9] = {
    [DJ_T_MALLOC] = ATR_T_MALLOC,     [DJ_T_CALLOC] = ATR_T_CALLOC,
    [DJ_T_FREE] = ATR_T_FREE,	      [DJ_T_REALLOC] = ATR_T_REALLOC,
    [DJ_T_MEMALIGN] = ATR_T_MEMALIGN, [DJ_T_VALLOC] = ATR_T_VALLOC,
    [DJ_T_PVALLOC] = ATR_T_PVALLOC,   [DJ_T_POSIX_MEMALIGN] = ATR_T_POSIX_MEMALIGN,
};

static int one_record(dj_trace *t, uint64_t idx)
{
	const uint8_t *r = t->data + idx * DJ_REC_SIZE;
	uint32_t word = atr_get32(r + DJ_R_TYPE), type = word & 0xff;
	if (type == DJ_T_UNUSED) {
		t->st.unused_records++;
		return 0;
	}
	if (type == DJ_T_MAGIC) {
		t->st.extra_magic++;
		return 0;
	}
	if (type > DJ_T_POSIX_MEMALIGN) {
		t->st.unknown_records++;
		return 0;
	}
	uint32_t tid = atr_get32(r + DJ_R_THREAD);
	if (t->st.alloctrace_export) {
		if (word & DJ_PATH_ALC_HINT) {
			t->st.hints++;
			return 0;
		}
		tid >>= 3;
	}
	uint32_t s = serial_of(t, tid);
	if (!s)
		return fail(t, NULL, 0, "%s: out of memory", t->name);
	struct atr_event ev;
	memset(&ev, 0, sizeof(ev));
	ev.type = type_map[type];
	ev.thread = s;
	ev.tid = tid;
	ev.ts = idx;
	ev.seq = t->st.records++;
	ev.usable = UINT64_MAX;
	uint64_t p1 = atr_get64(r + DJ_R_PTR1), p2 = atr_get64(r + DJ_R_PTR2),
		 size = atr_get64(r + DJ_R_SIZE);
	uint64_t size2 = atr_get64(r + DJ_R_SIZE2);
	ev.size = size;
	switch (type) {
	case DJ_T_FREE:
		ev.ptr = p1;
		ev.size = 0;
		break;
	case DJ_T_REALLOC:
		ev.ptr = p1;
		ev.ret = p2;
		break;
	case DJ_T_CALLOC:
		ev.ret = p2;
		ev.nmemb = size; /* dj records the total: replayed as calloc(size, 1) */
		break;
	case DJ_T_MEMALIGN:
		ev.ret = p2;
		ev.align = size2;
		break;
	case DJ_T_POSIX_MEMALIGN:
		ev.err = (int32_t)p1;
		ev.ret = p1 ? 0 : p2;
		ev.align = size2;
		break;
	default:
		ev.ret = p2;
		break;
	}
	struct atr_event *h = mfr_get(t, s);
	if (h) {
		/* the realloc glibc turned into malloc/free: this record is its
		   inner call, or the realloc was complete by itself */
		int inner = (!h->ptr && type == DJ_T_MALLOC) ||
			    (h->ptr && !h->size && type == DJ_T_FREE && p1 == h->ptr);
		if (inner) {
			struct atr_event m = *h;
			pool_drop(t, t->mfr[s] - 1);
			t->mfr[s] = 0;
			m.ret = type == DJ_T_MALLOC ? p2 : 0;
			t->st.records--; /* one call, not two */
			t->st.reallocs_merged++;
			return dispatch(t, &m);
		}
		if (mfr_release(t, s) < 0)
			return -1;
	}
	if (type == DJ_T_REALLOC && (word & DJ_PATH_M_F_REALLOC) && !p2 && (!p1 || !size))
		return mfr_hold(t, s, &ev);
	return dispatch(t, &ev);
}

static int by_seq(const void *a, const void *b)
{
	uint64_t x = ((const struct atr_event *)a)->seq, y = ((const struct atr_event *)b)->seq;
	return x < y ? -1 : x > y;
}

/* At the end: held m_f reallocs, then allocations that never saw the
 * release of their address, in trace order. */
static int flush_all(dj_trace *t)
{
	for (uint32_t s = 0; s < t->nmfr; s++)
		if (t->mfr[s] && mfr_release(t, s) < 0)
			return -1;
	size_t n = 0;
	for (size_t i = 0; i < t->npool; i++)
		if (t->pool[i].type)
			t->pool[n++] = t->pool[i];
	/* the pool lost the trace order: sort by record */
	if (n > 1)
		qsort(t->pool, n, sizeof(*t->pool), by_seq);
	for (size_t i = 0; i < n; i++) {
		t->st.inversions_pending++;
		if (q_push(t, &t->pool[i]) < 0)
			return -1;
	}
	t->npool = t->nfree = 0;
	util_hmap_clear(&t->held);
	return 0;
}

int dj_trace_next(dj_trace *t, const struct atr_event **ev)
{
	while (!t->qn) {
		if (t->pos < t->nrec) {
			if (one_record(t, t->pos++) < 0)
				return -1;
			continue;
		}
		if (t->flushed)
			return 0;
		t->flushed = 1;
		if (flush_all(t) < 0)
			return -1;
	}
	t->cur = t->q[t->qhead];
	t->qhead = (t->qhead + 1) & (t->qcap - 1);
	t->qn--;
	*ev = &t->cur;
	return 1;
}

/* ------------------------------------------------------------- writer */
struct dj_trace_writer {
	FILE *fp;
	uint64_t records, hints, page;
	struct util_hmap owned; /* addresses dj's trace2wl gives an owner */
	int err;
};

static void put_rec(dj_trace_writer *w, uint32_t thread, uint32_t type, uint64_t p1, uint64_t p2,
		    uint64_t size, uint64_t size2, uint64_t pad0)
{
	uint8_t r[DJ_REC_SIZE] = {0};
	atr_put32(r + DJ_R_THREAD, thread);
	atr_put32(r + DJ_R_TYPE, type);
	atr_put64(r + DJ_R_PTR1, p1);
	atr_put64(r + DJ_R_PTR2, p2);
	atr_put64(r + DJ_R_SIZE, size);
	atr_put64(r + DJ_R_SIZE2, size2);
	atr_put64(r + DJ_R_PAD, pad0);
	if (fwrite(r, 1, sizeof(r), w->fp) != sizeof(r))
		w->err = errno ? errno : EIO;
}

int dj_trace_writer_open(FILE *fp, uint32_t first_tid, dj_trace_writer **out)
{
	*out = NULL;
	dj_trace_writer *w = calloc(1, sizeof(*w));
	if (!w)
		return -1;
	w->fp = fp;
	w->page = (uint64_t)sysconf(_SC_PAGESIZE);
	put_rec(w, first_tid << 3, DJ_T_MAGIC, DJ_MAGIC_PTR1, 0, 8, 0, DJ_ALC_MARK);
	*out = w;
	return 0;
}

static void own(dj_trace_writer *w, uint64_t a)
{
	if (a && util_hmap_insert(&w->owned, a, 1, NULL) < 0)
		w->err = ENOMEM;
}

int dj_trace_writer_add(dj_trace_writer *w, const struct atr_event *ev)
{
	uint32_t th = ev->tid << 3;
	uint64_t size = ev->size;
	/* dj's trace2wl gives an address an owner (the thread whose later
	   use by another thread gets a sync) at malloc, calloc, memalign and
	   free, never at realloc: a realloc's new address gets a hint first */
	switch (ev->type) {
	case ATR_T_MALLOC:
		put_rec(w, th, DJ_T_MALLOC, 0, ev->ret, size, 0, 0);
		own(w, ev->ret);
		break;
	case ATR_T_CALLOC:
		put_rec(w, th, DJ_T_CALLOC, 0, ev->ret, size, 0, 0);
		own(w, ev->ret);
		break;
	case ATR_T_FREE:
		put_rec(w, th, DJ_T_FREE, ev->ptr, 0, 0, 0, 0);
		own(w, ev->ptr);
		break;
	case ATR_T_REALLOC:
	case ATR_T_REALLOCARRAY:
		if (ev->ret && ev->ret != ev->ptr && !util_hmap_lookup(&w->owned, ev->ret, NULL)) {
			put_rec(w, th, DJ_T_FREE | DJ_PATH_ALC_HINT, ev->ret, 0, 0, 0, 0);
			own(w, ev->ret);
			w->hints++;
		}
		put_rec(w, th, DJ_T_REALLOC, ev->ptr, ev->ret, size, 0, 0);
		break;
	case ATR_T_MEMALIGN:
	case ATR_T_POSIX_MEMALIGN:
	case ATR_T_ALIGNED_ALLOC:
		put_rec(w, th, DJ_T_MEMALIGN, 0, ev->ret, size, ev->align, 0);
		own(w, ev->ret);
		break;
	case ATR_T_VALLOC:
	case ATR_T_PVALLOC:
		if (ev->type == ATR_T_PVALLOC && size <= UINT64_MAX - w->page)
			size = (size + w->page - 1) / w->page * w->page;
		put_rec(w, th, DJ_T_MEMALIGN, 0, ev->ret, size, w->page, 0);
		own(w, ev->ret);
		break;
	default:
		return 0;
	}
	w->records++;
	return w->err ? -1 : 1;
}

uint64_t dj_trace_writer_records(const dj_trace_writer *w)
{
	return w->records;
}

uint64_t dj_trace_writer_hints(const dj_trace_writer *w)
{
	return w->hints;
}

int dj_trace_writer_close(dj_trace_writer *w)
{
	if (!w)
		return 0;
	int err = w->err;
	util_hmap_destroy(&w->owned);
	free(w);
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}
