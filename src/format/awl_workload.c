/* awl_workload.c - see awl_workload.h and docs/WORKLOAD_FORMAT.md. */
#define _GNU_SOURCE
#include "awl_workload.h"
#include "atr_format.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util_hmap.h"
#include "util_io.h"
#include "util_ranges.h"

static void seterr(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void seterr(char *buf, size_t len, const char *fmt, ...)
{
	if (!buf || !len)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

const char *awl_op_name(unsigned code)
{
#define NAME_(NAME, name, type, op, args, ret, params) [AWL_OP_##NAME] = #name,
	static const char *const n[AWL_OP_CALL_LAST + 1] = {"?", ATR_CALLS(NAME_)};
#undef NAME_
	if (code <= AWL_OP_CALL_LAST)
		return n[code];
	switch (code) {
	case AWL_OP_WAIT:
		return "wait";
	case AWL_OP_DROP:
		return "drop";
	case AWL_OP_MARKER:
		return "marker";
	case AWL_OP_THREAD_START:
		return "thread_start";
	case AWL_OP_THREAD_EXIT:
		return "thread_exit";
	case AWL_OP_SPAWN:
		return "spawn";
	case AWL_OP_THINK:
		return "think";
	case AWL_OP_MALLOPT:
		return "mallopt";
	case AWL_OP_MALLOC_TRIM:
		return "malloc_trim";
	case AWL_OP_USABLE_SIZE:
		return "malloc_usable_size";
	case AWL_OP_MMAP:
		return "mmap";
	case AWL_OP_MMAP_FIXED:
		return "mmap_fixed";
	case AWL_OP_MUNMAP:
		return "munmap";
	case AWL_OP_MREMAP:
		return "mremap";
	case AWL_OP_MADVISE:
		return "madvise";
	case AWL_OP_TOUCH:
		return "touch";
	default:
		return "?";
	}
}

/* ============================================================= writer */

#define WBUF_SIZE (AWL_CHUNK_HDR + AWL_CHUNK_TARGET + 4096)

int awl_writer_open(const char *path, struct awl_writer **out, char *errbuf, size_t errlen)
{
	*out = NULL;
	struct awl_writer *w = calloc(1, sizeof(*w));
	if (!w) {
		seterr(errbuf, errlen, "%s: out of memory", path);
		return -1;
	}
	w->fp = fopen(path, "wb");
	if (!w->fp) {
		seterr(errbuf, errlen, "%s: %s", path, strerror(errno));
		free(w);
		return -1;
	}
	w->iobuf = malloc(1 << 20);
	if (w->iobuf)
		setvbuf(w->fp, w->iobuf, _IOFBF, 1 << 20);
	w->path = strdup(path);
	uint8_t hdr[AWL_HEADER_SIZE] = {0};
	memcpy(hdr, AWL_MAGIC, 8);
	atr_put32(hdr + AWL_H_VERSION, AWL_VERSION);
	atr_put32(hdr + AWL_H_HEADER_SIZE, AWL_HEADER_SIZE);
	if (fwrite(hdr, 1, sizeof(hdr), w->fp) != sizeof(hdr))
		w->ioerr = errno ? errno : EIO;
	w->off = AWL_HEADER_SIZE;
	*out = w;
	return 0;
}

int awl_writer_add_thread(struct awl_writer *w, uint32_t serial, uint32_t tid)
{
	if (w->nth >= AWL_MAX_THREADS)
		return -1;
	if (w->nth == w->cap) {
		uint32_t nc = w->cap ? w->cap * 2 : 16;
		struct awl_wthread *n = realloc(w->th, nc * sizeof(*n));
		if (!n)
			return -1;
		w->th = n;
		w->cap = nc;
	}
	struct awl_wthread *t = &w->th[w->nth];
	memset(t, 0, sizeof(*t));
	t->serial = serial;
	t->tid = tid;
	t->buf = malloc(WBUF_SIZE);
	if (!t->buf)
		return -1;
	t->len = AWL_CHUNK_HDR;
	return (int)w->nth++;
}

void awl_writer_set_start(struct awl_writer *w, uint32_t t, uint32_t parent, uint64_t spawn_op,
			  uint32_t live)
{
	w->th[t].parent = parent + 1;
	w->th[t].spawn_op = spawn_op;
	w->th[t].live_at_start = live;
}

void awl_writer_flush_thread(struct awl_writer *w, uint32_t ti)
{
	struct awl_wthread *t = &w->th[ti];
	if (t->len == AWL_CHUNK_HDR)
		return;
	atr_put32(t->buf, AWL_CHUNK_MAGIC);
	atr_put32(t->buf + 4, ti);
	atr_put32(t->buf + 8, (uint32_t)(t->len - AWL_CHUNK_HDR));
	atr_put32(t->buf + 12, (uint32_t)(t->ops - t->chunk_first));
	if (t->chunks == t->chunk_cap) {
		size_t nc = t->chunk_cap ? t->chunk_cap * 2 : 16;
		uint64_t *na = realloc(t->chunk_at, nc * sizeof(*na));
		if (!na) {
			w->ioerr = w->ioerr ? w->ioerr : ENOMEM;
		} else {
			t->chunk_at = na;
			t->chunk_cap = nc;
		}
	}
	if (t->chunks < t->chunk_cap)
		t->chunk_at[t->chunks] = w->off;
	if (fwrite(t->buf, 1, t->len, w->fp) != t->len && !w->ioerr)
		w->ioerr = errno ? errno : EIO;
	w->off += t->len;
	t->len = AWL_CHUNK_HDR;
	t->chunk_first = t->ops;
	t->chunks++;
	w->chunks++;
}

/* A mark: thread (16 bits), chunk index (31 bits), offset in the chunk
 * (17 bits: < WBUF_SIZE). */
#define MARK_OFF_BITS	17
#define MARK_CHUNK_BITS 31
_Static_assert(WBUF_SIZE <= (1u << MARK_OFF_BITS), "chunk offsets fit a mark");
_Static_assert(AWL_MAX_THREADS <= (1u << (64 - MARK_OFF_BITS - MARK_CHUNK_BITS)),
	       "thread indices fit a mark");

uint64_t awl_writer_mark(const struct awl_writer *w, uint32_t t, const uint8_t *p)
{
	const struct awl_wthread *th = &w->th[t];
	uint64_t chunk = th->chunks & ((1ULL << MARK_CHUNK_BITS) - 1);
	return (uint64_t)t << (MARK_OFF_BITS + MARK_CHUNK_BITS) | chunk << MARK_OFF_BITS |
	       (uint64_t)(p - th->buf);
}

/* Queued file patches go out once everything before them is in the file. */
static void patches_apply(struct awl_writer *w)
{
	if (!w->npatch)
		return;
	if (fflush(w->fp) != 0 && !w->ioerr)
		w->ioerr = errno ? errno : EIO;
	int fd = fileno(w->fp);
	for (size_t i = 0; i < w->npatch && !w->ioerr; i++) {
		const struct awl_wpatch *q = &w->patch[i];
		if (pwrite(fd, q->bytes, q->n, (off_t)q->off) != (ssize_t)q->n)
			w->ioerr = errno ? errno : EIO;
	}
	w->npatch = 0;
}

void awl_writer_patch(struct awl_writer *w, uint64_t mark, const uint8_t *bytes, size_t n)
{
	uint32_t t = (uint32_t)(mark >> (MARK_OFF_BITS + MARK_CHUNK_BITS));
	uint64_t chunk = (mark >> MARK_OFF_BITS) & ((1ULL << MARK_CHUNK_BITS) - 1);
	size_t off = (size_t)(mark & ((1u << MARK_OFF_BITS) - 1));
	if (t >= w->nth || n > sizeof(w->patch[0].bytes))
		return;
	struct awl_wthread *th = &w->th[t];
	if (chunk == (th->chunks & ((1ULL << MARK_CHUNK_BITS) - 1))) {
		if (off + n <= th->len)
			memcpy(th->buf + off, bytes, n); /* still in the buffer */
		return;
	}
	if (chunk >= th->chunks || chunk >= th->chunk_cap)
		return;
	if (!w->patch && !(w->patch = malloc(AWL_PATCH_QUEUE * sizeof(*w->patch)))) {
		w->ioerr = w->ioerr ? w->ioerr : ENOMEM;
		return;
	}
	if (w->npatch == AWL_PATCH_QUEUE)
		patches_apply(w);
	struct awl_wpatch *q = &w->patch[w->npatch++];
	q->off = th->chunk_at[chunk] + off;
	q->n = (uint8_t)n;
	memcpy(q->bytes, bytes, n);
}

uint64_t awl_writer_ops(const struct awl_writer *w)
{
	uint64_t n = 0;
	for (uint32_t i = 0; i < w->nth; i++)
		n += w->th[i].ops;
	return n;
}

uint64_t awl_writer_bytes(const struct awl_writer *w)
{
	return w->off;
}

int awl_writer_finish(struct awl_writer *w, const struct awl_summary_in *s, char *errbuf,
		      size_t errlen)
{
	for (uint32_t i = 0; i < w->nth; i++)
		awl_writer_flush_thread(w, i);
	patches_apply(w);
	uint64_t table = w->off;
	uint8_t rec[AWL_THREAD_REC];
	atr_put32(rec, AWL_TABLE_MAGIC);
	atr_put32(rec + 4, w->nth);
	if (fwrite(rec, 1, 8, w->fp) != 8 && !w->ioerr)
		w->ioerr = errno ? errno : EIO;
	uint32_t roots = 0;
	for (uint32_t i = 0; i < w->nth; i++) {
		roots += w->th[i].parent == 0;
		memset(rec, 0, sizeof(rec));
		atr_put32(rec, w->th[i].serial);
		atr_put32(rec + 4, w->th[i].tid);
		atr_put64(rec + 8, w->th[i].ops);
		atr_put64(rec + 16, w->th[i].calls);
		atr_put64(rec + 24, w->th[i].chunks);
		atr_put32(rec + 32, w->th[i].parent);
		atr_put32(rec + 36, w->th[i].live_at_start);
		atr_put64(rec + 40, w->th[i].spawn_op);
		if (fwrite(rec, 1, sizeof(rec), w->fp) != sizeof(rec) && !w->ioerr)
			w->ioerr = errno ? errno : EIO;
	}
	uint8_t hdr[AWL_HEADER_SIZE] = {0};
	memcpy(hdr, AWL_MAGIC, 8);
	atr_put32(hdr + AWL_H_VERSION, AWL_VERSION);
	atr_put32(hdr + AWL_H_HEADER_SIZE, AWL_HEADER_SIZE);
	atr_put32(hdr + AWL_H_FLAGS, AWL_FLAG_COMPLETE);
	atr_put32(hdr + AWL_H_THREADS, w->nth);
	atr_put64(hdr + AWL_H_SLOTS, s->slots);
	atr_put64(hdr + AWL_H_IDEAL_PEAK, s->ideal_peak);
	atr_put64(hdr + AWL_H_OPS, awl_writer_ops(w));
	atr_put64(hdr + AWL_H_WAITS, s->waits);
	atr_put64(hdr + AWL_H_CHUNKS, w->chunks);
	atr_put64(hdr + AWL_H_TABLE, table);
	atr_put64(hdr + AWL_H_ANOMALIES, s->anomalies);
	atr_put32(hdr + AWL_H_SRC_PID, s->src_pid);
	atr_put32(hdr + AWL_H_SRC_EXEC, s->src_exec);
	atr_put64(hdr + AWL_H_DURATION_NS, s->duration_ns);
	atr_put64(hdr + AWL_H_THINK_NS, s->think_ns);
	atr_put32(hdr + AWL_H_MAX_LIVE, s->max_live);
	atr_put32(hdr + AWL_H_ROOTS, roots);
	w->calls[0] = 0;
	for (unsigned i = 1; i <= AWL_OP_CALL_LAST; i++)
		w->calls[0] += w->calls[i];
	for (unsigned i = 0; i <= AWL_OP_CALL_LAST; i++)
		atr_put64(hdr + AWL_H_CALLS + 8 * i, w->calls[i]);
	atr_put64(hdr + AWL_H_FEATURES, s->features & AWL_FEATURES_KNOWN);
	atr_put64(hdr + AWL_H_MAP_SLOTS, s->map_slots);
	for (unsigned i = 0; i < AWL_NXOPS; i++)
		atr_put64(hdr + AWL_H_XOPS + 8 * i, w->xops[i]);
	atr_put64(hdr + AWL_H_FILE_MAPS, s->file_maps);
	atr_put64(hdr + AWL_H_MAP_UNKNOWN, s->map_unknown);
	atr_put64(hdr + AWL_H_MAP_ODD, s->map_odd);
	atr_put64(hdr + AWL_H_TRACED_RSS, s->traced_rss);
	if (fflush(w->fp) != 0 && !w->ioerr)
		w->ioerr = errno ? errno : EIO;
	if (!w->ioerr && (fseeko(w->fp, 0, SEEK_SET) != 0 ||
			  fwrite(hdr, 1, sizeof(hdr), w->fp) != sizeof(hdr) || fflush(w->fp) != 0))
		w->ioerr = errno ? errno : EIO;
	if (w->ioerr) {
		seterr(errbuf, errlen, "%s: write failed: %s", w->path ? w->path : "workload",
		       strerror(w->ioerr));
		return -1;
	}
	return 0;
}

void awl_writer_close(struct awl_writer *w)
{
	if (!w)
		return;
	if (w->fp)
		fclose(w->fp);
	for (uint32_t i = 0; i < w->nth; i++) {
		free(w->th[i].buf);
		free(w->th[i].chunk_at);
	}
	free(w->th);
	free(w->patch);
	free(w->iobuf);
	free(w->path);
	free(w);
}

/* ============================================================= reader */

struct awl_file {
	int fd;
	const uint8_t *mem; /* awl_open_buffer */
	uint64_t size;
	char *name;
	struct awl_info info;
	struct awl_thread *th;
};

static int rd(const awl_file *f, uint64_t off, void *buf, size_t n)
{
	if (off > f->size || n > f->size - off)
		return -1;
	if (f->mem) {
		memcpy(buf, f->mem + off, n);
		return 0;
	}
	return util_pread_full(f->fd, buf, n, off) == (ssize_t)n ? 0 : -1;
}

static int add_chunk(struct awl_thread *t, uint64_t off, uint32_t len, uint32_t ops)
{
	uint64_t n = t->nchunks;
	if ((n & (n - 1)) == 0) { /* grow at powers of two */
		uint64_t nc = n ? n * 2 : 4;
		uint64_t *o = realloc(t->chunk_off, nc * sizeof(*o));
		if (!o)
			return -1;
		t->chunk_off = o;
		uint32_t *l = realloc(t->chunk_len, nc * sizeof(*l));
		if (!l)
			return -1;
		t->chunk_len = l;
		uint32_t *p = realloc(t->chunk_ops, nc * sizeof(*p));
		if (!p)
			return -1;
		t->chunk_ops = p;
	}
	t->chunk_off[n] = off;
	t->chunk_len[n] = len;
	t->chunk_ops[n] = ops;
	t->nchunks = n + 1;
	if (len > t->max_chunk)
		t->max_chunk = len;
	return 0;
}

static int load(awl_file *f, char *eb, size_t el)
{
	const char *nm = f->name;
	uint8_t h[AWL_HEADER_SIZE] = {0};
	struct awl_info *in = &f->info;
	in->file_size = f->size;
	if (f->size < AWL_HEADER_MIN || rd(f, 0, h, AWL_HEADER_MIN) < 0) {
		seterr(eb, el, "%s: too short for a workload (%" PRIu64 " bytes)", nm, f->size);
		return -1;
	}
	if (memcmp(h, AWL_MAGIC, 8) != 0) {
		seterr(eb, el, "%s: not an alloctrace workload (bad magic)", nm);
		return -1;
	}
	in->version = atr_get32(h + AWL_H_VERSION);
	if (in->version < AWL_VERSION_MIN || in->version > AWL_VERSION) {
		seterr(eb, el,
		       "%s: workload version %" PRIu32
		       " not supported (this reader knows %u to %u)",
		       nm, in->version, AWL_VERSION_MIN, AWL_VERSION);
		return -1;
	}
	const uint64_t trec = in->version == 1 ? AWL_THREAD_REC_V1 : AWL_THREAD_REC;
	uint32_t hs = atr_get32(h + AWL_H_HEADER_SIZE);
	if (hs < (in->version >= 3 ? AWL_H_END : AWL_HEADER_MIN) || hs % 8 || hs > f->size) {
		seterr(eb, el, "%s: bad header size %" PRIu32, nm, hs);
		return -1;
	}
	if (in->version >= 3 && rd(f, 0, h, hs < AWL_H_END_RSS ? AWL_H_END : AWL_H_END_RSS) < 0) {
		seterr(eb, el, "%s: short read in the header", nm);
		return -1;
	}
	in->features = atr_get64(h + AWL_H_FEATURES);
	if (in->features & ~AWL_FEATURES_KNOWN) {
		seterr(eb, el, "%s: unknown feature bits 0x%" PRIx64, nm, in->features);
		return -1;
	}
	if ((in->features & AWL_FEAT_TOUCH) && in->version < 3) {
		seterr(eb, el, "%s: feature TOUCH in a version %" PRIu32 " workload", nm,
		       in->version);
		return -1;
	}
	in->flags = atr_get32(h + AWL_H_FLAGS);
	if (!(in->flags & AWL_FLAG_COMPLETE)) {
		seterr(eb, el, "%s: incomplete workload (the conversion did not finish)", nm);
		return -1;
	}
	in->nthreads = atr_get32(h + AWL_H_THREADS);
	in->slots = atr_get64(h + AWL_H_SLOTS);
	in->ideal_peak = atr_get64(h + AWL_H_IDEAL_PEAK);
	in->ops = atr_get64(h + AWL_H_OPS);
	in->waits = atr_get64(h + AWL_H_WAITS);
	in->chunks = atr_get64(h + AWL_H_CHUNKS);
	uint64_t table = atr_get64(h + AWL_H_TABLE);
	in->anomalies = atr_get64(h + AWL_H_ANOMALIES);
	in->src_pid = atr_get32(h + AWL_H_SRC_PID);
	in->src_exec = atr_get32(h + AWL_H_SRC_EXEC);
	in->duration_ns = atr_get64(h + AWL_H_DURATION_NS);
	for (unsigned i = 0; i <= AWL_OP_CALL_LAST; i++)
		in->calls[i] = atr_get64(h + AWL_H_CALLS + 8 * i);
	if (in->version >= 2) {
		in->think_ns = atr_get64(h + AWL_H_THINK_NS);
		in->max_live = atr_get32(h + AWL_H_MAX_LIVE);
		in->roots = atr_get32(h + AWL_H_ROOTS);
	} else {
		in->max_live = in->roots = in->nthreads;
	}
	if (in->version >= 3) {
		in->map_slots = atr_get64(h + AWL_H_MAP_SLOTS);
		for (unsigned i = 0; i < AWL_NXOPS; i++)
			in->xops[i] = atr_get64(h + AWL_H_XOPS + 8 * i);
		in->file_maps = atr_get64(h + AWL_H_FILE_MAPS);
		in->map_unknown = atr_get64(h + AWL_H_MAP_UNKNOWN);
		in->map_odd = atr_get64(h + AWL_H_MAP_ODD);
		if (hs >= AWL_H_END_RSS)
			in->traced_rss = atr_get64(h + AWL_H_TRACED_RSS);
	} else if (in->features) {
		seterr(eb, el, "%s: feature bits in a version %" PRIu32 " workload", nm,
		       in->version);
		return -1;
	}
	/* every slot is filled by some op, so slots <= ops */
	if (in->nthreads > AWL_MAX_THREADS || in->slots > AWL_MAX_SLOTS || in->slots > in->ops ||
	    in->map_slots > in->ops) {
		seterr(eb, el, "%s: implausible header (%" PRIu32 " threads, %" PRIu64 " slots)",
		       nm, in->nthreads, in->slots);
		return -1;
	}
	if (table < hs || table > f->size || f->size - table != 8 + trec * in->nthreads) {
		seterr(eb, el,
		       "%s: truncated or corrupt (thread table at %" PRIu64 ", file %" PRIu64
		       " bytes)",
		       nm, table, f->size);
		return -1;
	}
	uint8_t tb[AWL_THREAD_REC];
	if (rd(f, table, tb, 8) < 0 || atr_get32(tb) != AWL_TABLE_MAGIC ||
	    atr_get32(tb + 4) != in->nthreads) {
		seterr(eb, el, "%s: corrupt thread table at offset %" PRIu64, nm, table);
		return -1;
	}
	f->th = calloc(in->nthreads ? in->nthreads : 1, sizeof(*f->th));
	if (!f->th) {
		seterr(eb, el, "%s: out of memory", nm);
		return -1;
	}
	uint64_t sum_ops = 0, sum_calls = 0;
	uint32_t roots = 0;
	for (uint32_t i = 0; i < in->nthreads; i++) {
		if (rd(f, table + 8 + (uint64_t)i * trec, tb, trec) < 0) {
			seterr(eb, el, "%s: short read in thread table", nm);
			return -1;
		}
		f->th[i].serial = atr_get32(tb);
		f->th[i].tid = atr_get32(tb + 4);
		f->th[i].ops = atr_get64(tb + 8);
		f->th[i].calls = atr_get64(tb + 16);
		if (in->version >= 2) {
			f->th[i].parent = atr_get32(tb + 32);
			f->th[i].live_at_start = atr_get32(tb + 36);
			f->th[i].spawn_op = atr_get64(tb + 40);
		}
		roots += f->th[i].parent == 0;
		sum_ops += f->th[i].ops;
		sum_calls += f->th[i].calls;
	}
	for (uint32_t i = 0; i < in->nthreads; i++) {
		uint32_t p = f->th[i].parent;
		if (p > in->nthreads || p == i + 1 ||
		    (p && f->th[i].spawn_op >= f->th[p - 1].ops)) {
			seterr(eb, el,
			       "%s: thread %" PRIu32 " has a bad parent (%" PRIu32 ", op %" PRIu64
			       ")",
			       nm, i, p, f->th[i].spawn_op);
			return -1;
		}
	}
	if (roots != in->roots || in->max_live > in->nthreads || (in->nthreads && !roots)) {
		seterr(eb, el,
		       "%s: thread table does not match the header (%" PRIu32 " root threads)", nm,
		       roots);
		return -1;
	}
	if (sum_ops != in->ops || sum_calls != in->calls[0]) {
		seterr(eb, el,
		       "%s: thread table does not match the header (ops %" PRIu64 " vs %" PRIu64
		       ")",
		       nm, sum_ops, in->ops);
		return -1;
	}
	/* scan the chunks */
	uint64_t off = hs, nchunks = 0;
	uint64_t *ops_seen = calloc(in->nthreads ? in->nthreads : 1, sizeof(*ops_seen));
	if (!ops_seen) {
		seterr(eb, el, "%s: out of memory", nm);
		return -1;
	}
	int rc = 0;
	while (off < table) {
		uint8_t ch[AWL_CHUNK_HDR];
		if (table - off < AWL_CHUNK_HDR || rd(f, off, ch, sizeof(ch)) < 0) {
			seterr(eb, el, "%s: truncated chunk header at offset %" PRIu64, nm, off);
			rc = -1;
			break;
		}
		uint32_t t = atr_get32(ch + 4), len = atr_get32(ch + 8), ops = atr_get32(ch + 12);
		if (atr_get32(ch) != AWL_CHUNK_MAGIC || t >= in->nthreads || len == 0 ||
		    len > AWL_CHUNK_MAX || ops == 0 || ops > len ||
		    len > table - off - AWL_CHUNK_HDR) {
			seterr(eb, el, "%s: corrupt chunk at offset %" PRIu64, nm, off);
			rc = -1;
			break;
		}
		if (add_chunk(&f->th[t], off + AWL_CHUNK_HDR, len, ops) < 0) {
			seterr(eb, el, "%s: out of memory", nm);
			rc = -1;
			break;
		}
		ops_seen[t] += ops;
		nchunks++;
		off += AWL_CHUNK_HDR + (uint64_t)len;
	}
	for (uint32_t i = 0; rc == 0 && i < in->nthreads; i++)
		if (ops_seen[i] != f->th[i].ops) {
			seterr(eb, el,
			       "%s: thread %" PRIu32 " has %" PRIu64
			       " ops in chunks, table says %" PRIu64,
			       nm, i, ops_seen[i], f->th[i].ops);
			rc = -1;
		}
	if (rc == 0 && nchunks != in->chunks) {
		seterr(eb, el, "%s: %" PRIu64 " chunks, header says %" PRIu64, nm, nchunks,
		       in->chunks);
		rc = -1;
	}
	free(ops_seen);
	return rc;
}

static int open_common(awl_file *f, awl_file **out, char *eb, size_t el)
{
	if (load(f, eb, el) < 0) {
		awl_close(f);
		return -1;
	}
	*out = f;
	return 0;
}

int awl_open(const char *path, awl_file **out, char *errbuf, size_t errlen)
{
	*out = NULL;
	awl_file *f = calloc(1, sizeof(*f));
	if (!f) {
		seterr(errbuf, errlen, "%s: out of memory", path);
		return -1;
	}
	f->name = strdup(path);
	f->fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (f->fd < 0 || fstat(f->fd, &st) < 0) {
		seterr(errbuf, errlen, "%s: %s", path, strerror(errno));
		awl_close(f);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		seterr(errbuf, errlen, "%s: not a regular file", path);
		awl_close(f);
		return -1;
	}
	f->size = (uint64_t)st.st_size;
	return open_common(f, out, errbuf, errlen);
}

int awl_open_buffer(const void *data, size_t size, const char *name, awl_file **out, char *errbuf,
		    size_t errlen)
{
	*out = NULL;
	awl_file *f = calloc(1, sizeof(*f));
	if (!f) {
		seterr(errbuf, errlen, "%s: out of memory", name);
		return -1;
	}
	f->fd = -1;
	f->mem = data;
	f->size = size;
	f->name = strdup(name ? name : "buffer");
	return open_common(f, out, errbuf, errlen);
}

void awl_close(awl_file *f)
{
	if (!f)
		return;
	if (f->fd >= 0 && !f->mem)
		close(f->fd);
	if (f->th)
		for (uint32_t i = 0; i < f->info.nthreads; i++) {
			free(f->th[i].chunk_off);
			free(f->th[i].chunk_len);
			free(f->th[i].chunk_ops);
		}
	free(f->th);
	free(f->name);
	free(f);
}

const struct awl_info *awl_get_info(const awl_file *f)
{
	return &f->info;
}

const struct awl_thread *awl_get_thread(const awl_file *f, uint32_t t)
{
	return t < f->info.nthreads ? &f->th[t] : NULL;
}

/* ------------------------------------------------------------- streams */

static int op_nfields(const awl_file *f, unsigned code);

int awl_stream_init(awl_file *f, uint32_t t, struct awl_stream *s)
{
	memset(s, 0, sizeof(*s));
	s->f = f;
	s->t = t;
	for (unsigned k = 0; k < 32; k++)
		s->nf[k] = (signed char)(k == AWL_OP_MARKER ? -1 : op_nfields(f, k));
	return t < f->info.nthreads ? 0 : -1;
}

int awl_stream_init_buf(awl_file *f, uint32_t t, struct awl_stream *s, uint8_t *buf, size_t cap)
{
	if (awl_stream_init(f, t, s) < 0 || cap < f->th[t].max_chunk)
		return -1;
	s->buf = buf;
	s->cap = cap;
	s->own_buf = 1;
	return 0;
}

void awl_stream_free(struct awl_stream *s)
{
	if (!s->own_buf)
		free(s->buf);
	s->buf = NULL;
}

static int get_uv(struct awl_stream *s, uint64_t *v)
{
	uint64_t r = 0;
	for (unsigned sh = 0; sh < 64; sh += 7) {
		if (s->pos >= s->len)
			return -1;
		uint8_t b = s->buf[s->pos++];
		if (sh == 63 && b > 1)
			return -1;
		r |= (uint64_t)(b & 0x7f) << sh;
		if (!(b & 0x80)) {
			*v = r;
			return 0;
		}
	}
	return -1;
}

static int serr(struct awl_stream *s, const char *what)
{
	snprintf(s->err, sizeof(s->err), "%s: thread %" PRIu32 " op %" PRIu64 ": %s", s->f->name,
		 s->t, s->done, what);
	return -1;
}

/* Fields per op code; -1: unknown code. */
#define FIELDS_(NAME, name, type, op, args, ret, params) [AWL_OP_##NAME] = ATR_ARGS_FIELDS_##args,
static const signed char op_fields[32] = {
    [0] = -1,
    ATR_CALLS(FIELDS_)[AWL_OP_CALL_LAST + 1 ... AWL_OP_WAIT - 1] = -1,
    [AWL_OP_WAIT] = 2,
    [AWL_OP_DROP] = 1,
    [AWL_OP_MARKER] = 1,
    [AWL_OP_THREAD_START] = 1,
    [AWL_OP_THREAD_EXIT] = 0,
    [AWL_OP_SPAWN] = 1,
    [AWL_OP_THINK] = 1,
    [AWL_OP_TOUCH] = 1,
    [AWL_OP_MALLOPT] = 3,
    [AWL_OP_MALLOC_TRIM] = 2,
    [AWL_OP_USABLE_SIZE] = 2,
    [AWL_OP_MMAP] = 3,
    [AWL_OP_MMAP_FIXED] = 4,
    [AWL_OP_MUNMAP] = 3,
    [AWL_OP_MREMAP] = 5,
    [AWL_OP_MADVISE] = 4,
};
_Static_assert(AWL_OP_LAST < 32, "op_fields covers every op code");
#undef FIELDS_

/* Fields of op code (< 32) in file f, -1 if f may not hold it. */
static int op_nfields(const awl_file *f, unsigned code)
{
	int nf = op_fields[code];
	if (nf < 0 || (code >= AWL_OP_SPAWN && f->info.version < 2) ||
	    (code == AWL_OP_TOUCH && !(f->info.features & AWL_FEAT_TOUCH)) ||
	    (code >= AWL_OP_XFIRST && !(f->info.features & AWL_FEAT_XOPS)))
		return -1;
	return nf;
}

int awl_stream_next(struct awl_stream *s, struct awl_op *op)
{
	if (s->left_ops == 0) {
		const struct awl_thread *th = &s->f->th[s->t];
		if (s->pos != s->len)
			return serr(s, "chunk has bytes after its last op");
		if (s->chunk >= th->nchunks)
			return 0;
		size_t len = th->chunk_len[s->chunk];
		if (len > s->cap) {
			if (s->own_buf)
				return serr(s, "chunk larger than the decoder's buffer");
			uint8_t *nb = realloc(s->buf, len);
			if (!nb)
				return serr(s, "out of memory");
			s->buf = nb;
			s->cap = len;
		}
		if (rd(s->f, th->chunk_off[s->chunk], s->buf, len) < 0)
			return serr(s, "read failed");
		s->len = len;
		s->pos = 0;
		s->left_ops = th->chunk_ops[s->chunk];
		s->chunk++;
	}
	if (s->pos >= s->len)
		return serr(s, "chunk ends inside an op");
	op->a = op->b = op->c = op->d = op->e = 0;
	op->data = NULL;
	op->len = 0;
	op->code = s->buf[s->pos++];
	int nf = op->code < 32 ? op_nfields(s->f, op->code) : -1;
	if (nf < 0)
		return serr(s, "unknown op code");
	uint64_t *fl[5] = {&op->a, &op->b, &op->c, &op->d, &op->e};
	if (s->len - s->pos >= 50) {
		/* room for 5 varints of 10 bytes: no bounds check per byte */
		const uint8_t *p = s->buf + s->pos;
		for (int i = 0; i < nf; i++)
			if (!(p = awl_get_uv_fast(p, fl[i])))
				return serr(s, "bad varint");
		s->pos = (size_t)(p - s->buf);
	} else {
		for (int i = 0; i < nf; i++)
			if (get_uv(s, fl[i]) < 0)
				return serr(s, "bad varint");
	}
	if (op->code == AWL_OP_MARKER) {
		if (op->a > AWL_MARKER_MAX || op->a > s->len - s->pos)
			return serr(s, "bad marker length");
		op->len = (uint32_t)op->a;
		op->data = s->buf + s->pos;
		s->pos += op->len;
	}
	s->left_ops--;
	s->done++;
	return 1;
}

/* -------------------------------------------------------------- verify */

struct vthread {
	struct awl_stream s;
	struct awl_op op;
	int have, end, spawned;
	int touch;		 /* the last op was a TOUCH: an allocation must follow */
	struct util_hmap waited; /* thread -> ops waited for */
};

struct vslot {
	uint32_t thread; /* last user + 1, 0 = never used */
	uint8_t live;
	uint64_t idx; /* op index of the last use */
};

static int use_slot(struct vthread *vt, uint32_t t, struct vslot *slots, uint64_t slot,
		    uint64_t idx, int want_live, int make_live, char *eb, size_t el, const char *nm)
{
	struct vslot *v = &slots[slot];
	if (v->thread && v->thread - 1 != t) {
		uint64_t w = 0;
		if (!util_hmap_lookup(&vt[t].waited, v->thread - 1, &w) || w < v->idx + 1) {
			seterr(eb, el,
			       "%s: thread %" PRIu32 " op %" PRIu64 " uses slot %" PRIu64
			       " without waiting for thread %" PRIu32 " op %" PRIu64,
			       nm, t, idx, slot, v->thread - 1, v->idx);
			return -1;
		}
	}
	if (want_live >= 0 && v->live != want_live) {
		seterr(eb, el, "%s: thread %" PRIu32 " op %" PRIu64 ": slot %" PRIu64 " is %s", nm,
		       t, idx, slot, v->live ? "already in use" : "empty");
		return -1;
	}
	v->live = (uint8_t)make_live;
	v->thread = t + 1;
	v->idx = idx;
	return 0;
}

/* A mapping slot while verifying: its last use and what is mapped of it
 * (offsets from its start; off = start, so ranges of one mmap join). */
struct vmap {
	uint32_t thread; /* last user + 1, 0 = never used */
	uint64_t idx;
	uint64_t bytes; /* mapped; 0: the slot is free */
	struct ur_set r;
};

/* Thread t's op idx uses mapping slot m: the slot exists and a WAIT orders
 * it after the last use by another thread.  NULL with errbuf filled. */
static struct vmap *map_use(struct vthread *vt, uint32_t t, struct vmap *maps, uint64_t nmaps,
			    uint64_t m, uint64_t idx, char *eb, size_t el, const char *nm)
{
	if (m >= nmaps) {
		seterr(eb, el, "%s: thread %" PRIu32 " op %" PRIu64 ": mapping slot out of range",
		       nm, t, idx);
		return NULL;
	}
	struct vmap *v = &maps[m];
	if (v->thread && v->thread - 1 != t) {
		uint64_t w = 0;
		if (!util_hmap_lookup(&vt[t].waited, v->thread - 1, &w) || w < v->idx + 1) {
			seterr(eb, el,
			       "%s: thread %" PRIu32 " op %" PRIu64 " uses mapping slot %" PRIu64
			       " without waiting for thread %" PRIu32 " op %" PRIu64,
			       nm, t, idx, m, v->thread - 1, v->idx);
			return NULL;
		}
	}
	v->thread = t + 1;
	v->idx = idx;
	return v;
}

/* [off, off + len) must be mapped in v; cut: it is unmapped. */
static int map_range(struct vmap *v, uint64_t off, uint64_t len, int cut, uint32_t t, uint64_t idx,
		     char *eb, size_t el, const char *nm)
{
	uint64_t o;
	if (!len || len > AWL_MAX_MAP || off > AWL_MAX_MAP - len ||
	    !ur_covered(&v->r, off, off + len, 0, &o)) {
		seterr(eb, el,
		       "%s: thread %" PRIu32 " op %" PRIu64 ": range %" PRIu64 "+%" PRIu64
		       " is not mapped in its mapping slot",
		       nm, t, idx, off, len);
		return -1;
	}
	if (cut) {
		if (ur_visit(&v->r, off, off + len, 1, NULL, NULL) == UINT64_MAX) {
			seterr(eb, el, "%s: out of memory", nm);
			return -1;
		}
		v->bytes -= len;
	}
	return 0;
}

/* A new mapping of len bytes in the free slot v. */
static int map_new(struct vmap *v, uint64_t len, uint32_t t, uint64_t idx, char *eb, size_t el,
		   const char *nm)
{
	if (v->bytes || !len || len > AWL_MAX_MAP) {
		seterr(eb, el, "%s: thread %" PRIu32 " op %" PRIu64 ": %s", nm, t, idx,
		       v->bytes ? "mapping slot is in use" : "bad mapping length");
		return -1;
	}
	if (ur_insert(&v->r, 0, len, 0, 0) < 0) {
		seterr(eb, el, "%s: out of memory", nm);
		return -1;
	}
	v->bytes = len;
	return 0;
}

/* The extended ops (v3): slots, mapping slots and ranges.  0 or -1. */
static int verify_xop(awl_file *f, struct vthread *vt, uint32_t t, struct vslot *slots,
		      struct vmap *maps, const struct awl_op *op, uint64_t idx, char *eb, size_t el)
{
	const char *nm = f->name;
	const struct awl_info *in = &f->info;
	struct vmap *v = NULL;
	switch (op->code) {
	case AWL_OP_MALLOPT:
	case AWL_OP_MALLOC_TRIM:
		return 0;
	case AWL_OP_USABLE_SIZE:
		if (op->a > in->slots) {
			seterr(eb, el, "%s: thread %" PRIu32 " op %" PRIu64 ": slot out of range",
			       nm, t, idx);
			return -1;
		}
		return op->a ? use_slot(vt, t, slots, op->a - 1, idx, 1, 1, eb, el, nm) : 0;
	case AWL_OP_MMAP:
		if (!(v = map_use(vt, t, maps, in->map_slots, op->a, idx, eb, el, nm)))
			return -1;
		if (op->c & ~(uint64_t)AWL_MF_KNOWN) {
			seterr(eb, el, "%s: thread %" PRIu32 " op %" PRIu64 ": unknown mmap flags",
			       nm, t, idx);
			return -1;
		}
		return map_new(v, op->b, t, idx, eb, el, nm);
	case AWL_OP_MMAP_FIXED:
		if (!(v = map_use(vt, t, maps, in->map_slots, op->a, idx, eb, el, nm)))
			return -1;
		if (op->d & ~(uint64_t)AWL_MF_KNOWN) {
			seterr(eb, el, "%s: thread %" PRIu32 " op %" PRIu64 ": unknown mmap flags",
			       nm, t, idx);
			return -1;
		}
		return map_range(v, op->b, op->c, 0, t, idx, eb, el, nm);
	case AWL_OP_MUNMAP:
		if (!(v = map_use(vt, t, maps, in->map_slots, op->a, idx, eb, el, nm)))
			return -1;
		return map_range(v, op->b, op->c, 1, t, idx, eb, el, nm);
	case AWL_OP_MADVISE:
		if (!(v = map_use(vt, t, maps, in->map_slots, op->a, idx, eb, el, nm)))
			return -1;
		if (!awl_advice_replayed(op->d)) {
			seterr(eb, el,
			       "%s: thread %" PRIu32 " op %" PRIu64 ": advice %" PRIu64
			       " is not one a workload holds",
			       nm, t, idx, op->d);
			return -1;
		}
		return map_range(v, op->b, op->c, 0, t, idx, eb, el, nm);
	case AWL_OP_MREMAP:
		if (!(v = map_use(vt, t, maps, in->map_slots, op->a, idx, eb, el, nm)) ||
		    map_range(v, op->b, op->c, 1, t, idx, eb, el, nm) < 0 ||
		    !(v = map_use(vt, t, maps, in->map_slots, op->d, idx, eb, el, nm)))
			return -1;
		return map_new(v, op->e, t, idx, eb, el, nm);
	default:
		seterr(eb, el, "%s: thread %" PRIu32 " op %" PRIu64 ": unknown op code", nm, t,
		       idx);
		return -1;
	}
}

int awl_verify(awl_file *f, char *eb, size_t el)
{
	const struct awl_info *in = &f->info;
	uint32_t n = in->nthreads;
	struct vthread *vt = calloc(n ? n : 1, sizeof(*vt));
	struct vslot *slots = calloc(in->slots ? in->slots : 1, sizeof(*slots));
	struct vmap *maps = calloc(in->map_slots ? in->map_slots : 1, sizeof(*maps));
	int rc = 0;
	if (!vt || !slots || !maps) {
		seterr(eb, el, "%s: out of memory (%" PRIu64 " slots)", f->name, in->slots);
		free(vt);
		free(slots);
		free(maps);
		return -1;
	}
	for (uint32_t t = 0; t < n; t++) {
		awl_stream_init(f, t, &vt[t].s);
		vt[t].spawned = f->th[t].parent == 0;
	}
	uint64_t calls[AWL_OP_CALL_LAST + 1] = {0}, waits = 0, think = 0, xops[AWL_NXOPS] = {0};
	uint32_t ended = 0;
	while (rc == 0 && ended < n) {
		int progress = 0;
		for (uint32_t t = 0; rc == 0 && t < n; t++) {
			struct vthread *v = &vt[t];
			while (rc == 0 && !v->end && v->spawned) {
				if (!v->have) {
					int r = awl_stream_next_inl(&v->s, &v->op);
					if (r < 0) {
						seterr(eb, el, "%s", v->s.err);
						rc = -1;
						break;
					}
					if (r == 0) {
						if (v->touch) {
							seterr(eb, el,
							       "%s: thread %" PRIu32
							       " ends with a TOUCH",
							       f->name, t);
							rc = -1;
							break;
						}
						v->end = 1;
						ended++;
						progress = 1;
						break;
					}
					v->have = 1;
				}
				struct awl_op *op = &v->op;
				uint64_t idx = v->s.done - 1;
				const char *nm = f->name;
				if (v->touch && (op->code > AWL_OP_CALL_LAST ||
						 awl_op_args(op->code) == ATR_ARGS_PTR)) {
					seterr(eb, el,
					       "%s: thread %" PRIu32 " op %" PRIu64
					       ": a TOUCH not followed by an allocation",
					       nm, t, idx);
					rc = -1;
					break;
				}
				v->touch = op->code == AWL_OP_TOUCH;
				if (op->code == AWL_OP_WAIT) {
					if (op->a >= n || op->a == t || op->b > f->th[op->a].ops) {
						seterr(eb, el,
						       "%s: thread %" PRIu32 " op %" PRIu64
						       ": bad wait target",
						       nm, t, idx);
						rc = -1;
						break;
					}
					if (vt[op->a].s.done - (uint64_t)vt[op->a].have < op->b)
						break; /* blocked: the target op is not complete yet
							*/
					uint64_t old = 0;
					if (!util_hmap_lookup(&v->waited, op->a, &old) ||
					    old < op->b)
						if (util_hmap_insert(&v->waited, op->a, op->b,
								     NULL) < 0) {
							seterr(eb, el, "%s: out of memory", nm);
							rc = -1;
							break;
						}
					waits++;
				} else if (op->code == AWL_OP_SPAWN) {
					const struct awl_thread *c =
					    op->a < n ? &f->th[op->a] : NULL;
					if (!c || c->parent != t + 1 || c->spawn_op != idx ||
					    vt[op->a].spawned) {
						seterr(eb, el,
						       "%s: thread %" PRIu32 " op %" PRIu64
						       ": spawn of thread %" PRIu64
						       " does not match the thread table",
						       nm, t, idx, op->a);
						rc = -1;
						break;
					}
					vt[op->a].spawned = 1;
				} else if (op->code == AWL_OP_THINK) {
					if (__builtin_add_overflow(think, op->a, &think)) {
						seterr(eb, el,
						       "%s: thread %" PRIu32 " op %" PRIu64
						       ": think time overflows",
						       nm, t, idx);
						rc = -1;
						break;
					}
				} else if (op->code <= AWL_OP_CALL_LAST) {
					calls[op->code]++;
					calls[0]++;
					uint64_t src = 0, dst;
					unsigned shape = awl_op_args(op->code);
					int is_free = shape == ATR_ARGS_PTR;
					int has_src = is_free || shape == ATR_ARGS_OLD ||
						      shape == ATR_ARGS_OLD_NMEMB;
					if (has_src)
						src = op->a;
					dst = is_free ? 0 : has_src ? op->b : op->a;
					if (src > in->slots || dst > in->slots) {
						seterr(eb, el,
						       "%s: thread %" PRIu32 " op %" PRIu64
						       ": slot out of range",
						       nm, t, idx);
						rc = -1;
						break;
					}
					if (src && use_slot(vt, t, slots, src - 1, idx, 1, 0, eb,
							    el, nm) < 0) {
						rc = -1;
						break;
					}
					if (has_src && !is_free && src && !dst) {
						/* failed realloc: the block stays where it was,
						   unless the size was 0 (freed) */
						uint64_t sz =
						    shape == ATR_ARGS_OLD ? op->c : op->c * op->d;
						if (sz)
							slots[src - 1].live = 1;
					}
					if (dst && use_slot(vt, t, slots, dst - 1, idx, 0, 1, eb,
							    el, nm) < 0) {
						rc = -1;
						break;
					}
				} else if (op->code >= AWL_OP_XFIRST) {
					xops[op->code - AWL_OP_XFIRST]++;
					if (verify_xop(f, vt, t, slots, maps, op, idx, eb, el) <
					    0) {
						rc = -1;
						break;
					}
				} else if (op->code == AWL_OP_DROP) {
					if (op->a >= in->slots) {
						seterr(eb, el,
						       "%s: thread %" PRIu32 " op %" PRIu64
						       ": slot out of range",
						       nm, t, idx);
						rc = -1;
						break;
					}
					if (use_slot(vt, t, slots, op->a, idx, 1, 0, eb, el, nm) <
					    0) {
						rc = -1;
						break;
					}
				}
				v->have = 0;
				progress = 1;
			}
		}
		if (rc == 0 && !progress && ended < n) {
			uint32_t never = 0;
			while (never < n && (vt[never].spawned || !vt[f->th[never].parent - 1].end))
				never++;
			if (never < n)
				seterr(eb, el,
				       "%s: thread %" PRIu32
				       " is never spawned (its parent %" PRIu32
				       " ended without a SPAWN of it)",
				       f->name, never, f->th[never].parent - 1);
			else
				seterr(eb, el,
				       "%s: deadlock: every unfinished thread waits for another",
				       f->name);
			rc = -1;
		}
	}
	if (rc == 0) {
		for (unsigned i = 0; i <= AWL_OP_CALL_LAST; i++)
			if (calls[i] != in->calls[i]) {
				seterr(
				    eb, el,
				    "%s: %" PRIu64 " %s calls in the streams, header says %" PRIu64,
				    f->name, calls[i], i ? awl_op_name(i) : "total", in->calls[i]);
				rc = -1;
				break;
			}
		if (rc == 0 && waits != in->waits) {
			seterr(eb, el, "%s: %" PRIu64 " waits in the streams, header says %" PRIu64,
			       f->name, waits, in->waits);
			rc = -1;
		}
		for (unsigned i = 0; rc == 0 && i < AWL_NXOPS; i++)
			if (xops[i] != in->xops[i]) {
				seterr(
				    eb, el,
				    "%s: %" PRIu64 " %s ops in the streams, header says %" PRIu64,
				    f->name, xops[i], awl_op_name(AWL_OP_XFIRST + i), in->xops[i]);
				rc = -1;
			}
		if (rc == 0 && think != in->think_ns) {
			seterr(eb, el,
			       "%s: %" PRIu64
			       " ns of think time in the streams, header says %" PRIu64,
			       f->name, think, in->think_ns);
			rc = -1;
		}
	}
	for (uint32_t t = 0; t < n; t++) {
		awl_stream_free(&vt[t].s);
		util_hmap_destroy(&vt[t].waited);
	}
	for (uint64_t m = 0; m < in->map_slots; m++)
		ur_destroy(&maps[m].r);
	free(vt);
	free(slots);
	free(maps);
	return rc;
}
