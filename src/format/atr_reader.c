/* atr_reader.c - the trace reader (see atr_reader.h and atr_format.h).
 *
 * atr_open() maps the file, validates the header, and scans every block
 * header once to build each thread's stream: its DATA blocks in sequence
 * order, then its STAGING block if that one is newer.  Records are decoded
 * lazily by per-thread cursors; the iterator merges the cursors with a
 * min-heap keyed by (timestamp, thread serial).  Every read is checked
 * against the mapped size: nothing here may trust a byte of the file.
 */
#define _GNU_SOURCE
#include "atr_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

#include "atr_fileio.h"
#include "atr_v2.h"
#include "atr_v2dec.h"
#include "atr_zahead.h"
#include "util_hmap.h"
#include "util_io.h"

#define ATR_ERRLEN 512

/* One entry of a thread's stream. */
struct atr_sblk {
	uint64_t off; /* of the block (v1) or unit (v2) header */
	int staging;
	int indexed;		    /* v2 FRAME: the fields below are known */
	uint32_t calls, records;    /* v2 FRAME: from its header */
	uint64_t first_ts, last_ts; /* v2 FRAME: its time range (the index) */
};

struct atr_thr {
	uint32_t serial, tid;
	uint64_t first, n; /* slice of f->stream */
};

struct atr_file {
	const uint8_t *base; /* v1 mapped, or a caller's buffer; NULL: pread */
	size_t size;
	int mapped;
	int fd; /* v2 files are read with pread, never mapped whole */
	int v2; /* format version 2: units, FRAMEs */
	uint64_t features;
	ZSTD_DCtx *dctx;
	uint8_t *zbuf, *dbuf; /* a frame's payload and its decompressed bytes */
	size_t zcap, dcap;
	size_t zpop;	   /* bytes of zbuf populated (util_populate: ready) */
	struct za *za;	   /* atr_iter_set_helper: frames decompressed ahead */
	uint8_t **moddata; /* copies of MODULE payloads (build ids live here) */
	size_t nmoddata;
	uint64_t trunc_calls;	      /* v2: calls of frames cut off by the file end */
	uint8_t hdr[ATR_HEADER_SIZE]; /* v2: the file header (no mapping) */
	char *path;
	struct atr_info info;
	char exe[256];
	char *cmdline;
	uint32_t hs, bs;
	uint64_t nblocks;
	struct atr_thr *thr;
	struct atr_thread_info *tinfo;
	uint32_t nthr;
	struct atr_sblk *stream;
	uint64_t records, ncalls;
	int chunk_flags; /* ATR_FEAT_CHUNK_FLAGS: mask ret's low bits */
	int v2_words;	 /* atr_set_v2_words(): frames go through v1 words */
	int xcalls;	 /* ATR_FEAT_XCALLS: EXT records allowed */
	char err[ATR_ERRLEN];
	/* stack and module tables (atr_stacks_load) */
	int stacks_loaded;
	struct atr_stk *stk;
	size_t nstk, capstk;
	uint64_t *ips;
	size_t nips, capips;
	struct util_hmap stk_by_id;   /* id -> index in stk */
	struct util_hmap stk_by_hash; /* frame hash -> index of the first */
	struct atr_module *mods;
	size_t nmods;
};

struct atr_stk {
	uint32_t id, n, canon;
	uint64_t off; /* in ips */
	uint64_t ts;  /* earliest definition */
};

static const char *const atr_names[32] = {
#define NAME_(NAME, name, type, op, args, ret, params) [ATR_T_##NAME] = #name,
    ATR_CALLS(NAME_)
#undef NAME_
	[ATR_T_THREAD_START] = "thread_start",
    [ATR_T_THREAD_EXIT] = "thread_exit",
    [ATR_T_MARKER] = "marker",
    [ATR_T_CONTROL] = "control",
    [ATR_T_LOST] = "lost",
    [ATR_T_STACK] = "stack",
    [ATR_T_MODULE] = "module",
    [ATR_T_BRK] = "break", /* not "brk": that is the call */
    [ATR_T_HEAP] = "heap",
    [ATR_T_RESIDENT] = "resident", /* not an event: attached to the release */
    [ATR_T_CPU] = "cpu",
    [ATR_T_RECORDER] = "recorder",
};

static const char *const atr_xnames[ATR_NXCALLS] = {
#define XNAME_(NAME, name, type, words, ret, params) [type - ATR_T_XCALL_FIRST] = #name,
    ATR_XCALLS(XNAME_)
#undef XNAME_
};

const char *atr_type_name(unsigned type)
{
	if (type < 32 && atr_names[type])
		return atr_names[type];
	if (atr_is_xcall(type))
		return atr_xnames[type - ATR_T_XCALL_FIRST];
	if (type == ATR_EV_REALLOC_RELEASE)
		return "realloc_release";
	return "unknown";
}

const char *atr_ctl_name(uint32_t arg)
{
	switch (arg) {
	case ATR_CTL_START:
		return "start";
	case ATR_CTL_STOP:
		return "stop";
	case ATR_CTL_PAUSE:
		return "pause";
	case ATR_CTL_RESUME:
		return "resume";
	case ATR_CTL_SYNC:
		return "sync";
	case ATR_CTL_EXIT:
		return "exit";
	default:
		return NULL;
	}
}

unsigned atr_type_from_name(const char *name)
{
	if (!name)
		return 0;
	for (unsigned t = 1; t <= ATR_T_CALL_LAST; t++)
		if (strcmp(atr_names[t], name) == 0)
			return t;
	for (unsigned t = ATR_T_XCALL_FIRST; t <= ATR_T_XCALL_LAST; t++)
		if (strcmp(atr_xnames[t - ATR_T_XCALL_FIRST], name) == 0)
			return t;
	if (strcmp(name, "mmap64") == 0)
		return ATR_T_MMAP;
	return 0;
}

__attribute__((format(printf, 3, 4))) static void fmt_err(char *buf, size_t len, const char *fmt,
							  ...)
{
	if (!buf || !len)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

/* ---- open ------------------------------------------------------------ */

static int cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

/* Scan-time description of a block that belongs to a thread. */
struct atr_scan {
	uint64_t seq, off;
	uint32_t serial, tid, kind, calls, records;
	int indexed;
	uint64_t first_ts, last_ts;
};

static int scan_cmp(const void *pa, const void *pb)
{
	const struct atr_scan *a = pa, *b = pb;
	int c = cmp_u64(a->serial, b->serial);
	if (!c)
		c = cmp_u64(a->kind, b->kind); /* DATA (1) before STAGING (2) */
	if (!c)
		c = cmp_u64(a->seq, b->seq);
	if (!c)
		c = cmp_u64(a->off, b->off);
	return c;
}

static uint64_t blk_off(const atr_file *f, uint64_t idx)
{
	return (uint64_t)f->hs + idx * (uint64_t)f->bs;
}

/* Bytes of block idx present in the file (the rest reads as zero). */
static uint64_t blk_avail(const atr_file *f, uint64_t idx)
{
	uint64_t off = blk_off(f, idx);
	uint64_t left = f->size - off;
	return left < f->bs ? left : f->bs;
}

/* The 64-byte block header, zero-filled past the end of the file. */
static void blk_header(const atr_file *f, uint64_t idx, uint8_t h[ATR_BLOCK_HEADER_SIZE])
{
	uint64_t avail = blk_avail(f, idx);
	memset(h, 0, ATR_BLOCK_HEADER_SIZE);
	memcpy(h, f->base + blk_off(f, idx),
	       avail < ATR_BLOCK_HEADER_SIZE ? avail : ATR_BLOCK_HEADER_SIZE);
}

static int validate_header(atr_file *f, char *eb, size_t el)
{
	const uint8_t *h = f->base ? f->base : f->hdr;
	const char *p = f->path;
	if (f->size < ATR_HEADER_SIZE) {
		size_t m = f->size < 8 ? f->size : 8;
		if (!f->size || memcmp(h, ATR_MAGIC, m) == 0) {
			fmt_err(eb, el,
				"%s: file too short for a trace header (%zu bytes, need %u)", p,
				f->size, ATR_HEADER_SIZE);
			return ATR_E_HEADER;
		}
		fmt_err(eb, el, "%s: bad magic: not an alloctrace trace", p);
		return ATR_E_MAGIC;
	}
	if (memcmp(h + ATR_H_MAGIC, ATR_MAGIC, 8) != 0) {
		fmt_err(eb, el, "%s: bad magic: not an alloctrace trace", p);
		return ATR_E_MAGIC;
	}
	struct atr_info *in = &f->info;
	in->version = atr_get32(h + ATR_H_VERSION);
	if (in->version != ATR_VERSION && in->version != ATR_VERSION_V1) {
		fmt_err(eb, el,
			"%s: unsupported trace format version %" PRIu32
			" (this reader knows %u and %u)",
			p, in->version, ATR_VERSION_V1, ATR_VERSION);
		return ATR_E_VERSION;
	}
	f->v2 = in->version == ATR_VERSION;
	f->hs = atr_get32(h + ATR_H_HEADER_SIZE);
	if (f->hs < ATR_HEADER_SIZE || f->hs % 8 || f->hs > f->size) {
		fmt_err(eb, el, "%s: invalid header size %" PRIu32 " (file is %zu bytes)", p, f->hs,
			f->size);
		return ATR_E_HEADER;
	}
	in->features = atr_get64(h + ATR_H_FEATURES);
	uint64_t known = f->v2 ? ATR_FEATURES_KNOWN : ATR_FEATURES_KNOWN & ~(uint64_t)ATR_FEAT_ZSTD;
	if (in->features & ~known) {
		fmt_err(eb, el,
			"%s: unknown feature bits 0x%" PRIx64 " (written by a newer alloctrace?)",
			p, (uint64_t)(in->features & ~known));
		return ATR_E_FEATURES;
	}
	f->features = in->features;
	f->chunk_flags = (in->features & ATR_FEAT_CHUNK_FLAGS) != 0;
	in->sample_rate = atr_get64(h + ATR_H_SAMPLE_RATE);
	if (!(in->features & ATR_FEAT_SAMPLED) != !in->sample_rate) {
		fmt_err(eb, el,
			"%s: sample rate %" PRIu64 " does not match the SAMPLED feature bit", p,
			in->sample_rate);
		return ATR_E_HEADER;
	}
	f->xcalls = (in->features & ATR_FEAT_XCALLS) != 0;
	f->bs = atr_get32(h + ATR_H_BLOCK_SIZE);
	if (f->bs < ATR_BLOCK_SIZE_MIN || f->bs > ATR_BLOCK_SIZE_MAX || (f->bs & (f->bs - 1))) {
		fmt_err(eb, el,
			"%s: invalid block size %" PRIu32 " (must be a power of two in [%u, %u])",
			p, f->bs, ATR_BLOCK_SIZE_MIN, ATR_BLOCK_SIZE_MAX);
		return ATR_E_HEADER;
	}
	uint32_t clen = atr_get32(h + ATR_H_CMDLINE);
	if (clen > ATR_H_CMDLINE_MAX) {
		fmt_err(eb, el, "%s: invalid command line length %" PRIu32 " (max %u)", p, clen,
			(unsigned)ATR_H_CMDLINE_MAX);
		return ATR_E_HEADER;
	}
	in->block_size = f->bs;
	in->status = atr_get32(h + ATR_H_STATUS);
	in->pid = atr_get32(h + ATR_H_PID);
	in->ppid = atr_get32(h + ATR_H_PPID);
	in->exec_seq = atr_get32(h + ATR_H_EXEC_SEQ);
	in->start_realtime_ns = atr_get64(h + ATR_H_START_REALTIME);
	in->start_mono_ns = atr_get64(h + ATR_H_START_MONO);
	in->end_mono_ns = atr_get64(h + ATR_H_END_MONO);
	in->end_ticks = atr_get64(h + ATR_H_END_TICKS);
	in->header_lost = atr_get64(h + ATR_H_LOST);
	in->lost_records = in->header_lost;
	in->header_errno = atr_get32(h + ATR_H_ERRNO);
	in->untraced_calls = atr_get64(h + ATR_H_UNTRACED);
	in->file_size = f->size;
	in->resident_min = atr_get64(h + ATR_H_RESIDENT_MIN);
	in->page_size = atr_get32(h + ATR_H_PAGE_SIZE);
	in->res_budget = atr_get32(h + ATR_H_RES_BUDGET);
	in->ncpu = atr_get32(h + ATR_H_NCPU);
	in->timing_sample = atr_get32(h + ATR_H_TIMING_SAMPLE);
	in->cpu_gap_ns = atr_get32(h + ATR_H_CPU_GAP);
	if (in->res_budget >= 10000)
		in->res_budget = 0; /* every release counted */

	/* exe: NUL-terminated within 256 bytes, else truncated */
	const uint8_t *e = h + ATR_H_EXE;
	size_t n = 0;
	while (n < sizeof(f->exe) - 1 && e[n])
		n++;
	memcpy(f->exe, e, n);
	f->exe[n] = 0;
	in->exe = f->exe;

	/* cmdline: arguments split by NUL, joined by spaces */
	f->cmdline = malloc((size_t)clen + 1);
	if (!f->cmdline) {
		fmt_err(eb, el, "%s: out of memory", p);
		return ATR_E_NOMEM;
	}
	const uint8_t *c = h + ATR_H_CMDLINE + 4;
	while (clen && c[clen - 1] == 0)
		clen--;
	for (uint32_t i = 0; i < clen; i++)
		f->cmdline[i] = c[i] ? (char)c[i] : ' ';
	f->cmdline[clen] = 0;
	in->cmdline = f->cmdline;

	/* clock calibration */
	uint64_t start_ticks = atr_get64(h + ATR_H_START_TICKS);
	uint64_t hint = atr_get64(h + ATR_H_TICKS_PER_SEC);
	if (in->features & ATR_FEAT_CLOCK_MONO_NS) {
		in->ticks_per_sec = 1e9;
	} else if (in->end_mono_ns && in->end_ticks && in->end_mono_ns >= in->start_mono_ns &&
		   in->end_mono_ns - in->start_mono_ns >= 20000000ULL &&
		   in->end_ticks > start_ticks) {
		in->ticks_per_sec = (double)(in->end_ticks - start_ticks) /
				    (double)(in->end_mono_ns - in->start_mono_ns) * 1e9;
	} else if (hint) {
		in->ticks_per_sec = (double)hint;
	} else {
		in->ticks_per_sec = 1e9;
		in->ticks_guessed = 1;
	}
	return ATR_OK;
}

/* Copy len bytes at off into dst, zeros past the end of the file; returns
 * how many bytes the file has there. */
static size_t src_read(const atr_file *f, uint64_t off, void *dst, size_t len)
{
	return atr_read_at(f->base, f->fd, f->size, off, dst, len);
}

struct scan_list {
	struct atr_scan *sc;
	size_t n, cap;
};

static int scan_push(struct scan_list *l, const uint8_t *h, uint64_t off, uint32_t kind, int frame)
{
	if (l->n == l->cap) {
		size_t nc = l->cap ? l->cap * 2 : 64;
		struct atr_scan *ns = realloc(l->sc, nc * sizeof(*ns));
		if (!ns)
			return ATR_E_NOMEM;
		l->sc = ns;
		l->cap = nc;
	}
	struct atr_scan *e = &l->sc[l->n++];
	e->seq = atr_get64(h + ATR_B_SEQ);
	e->off = off;
	e->serial = atr_get32(h + ATR_B_THREAD);
	e->tid = atr_get32(h + ATR_B_TID);
	e->kind = kind;
	e->calls = kind == ATR_BLOCK_DATA ? atr_get32(h + ATR_U_CALLS) : 0; /* v2 only */
	e->indexed = frame;
	e->records = frame ? atr_get32(h + ATR_B_RECORDS) : 0;
	e->first_ts = frame ? atr_get64(h + ATR_U_FIRST_TS) : 0;
	e->last_ts = frame ? atr_get64(h + ATR_U_LAST_TS) : 0;
	return ATR_OK;
}

/* Version 1: fixed-size blocks at header_size + i * block_size. */
static int scan_v1(atr_file *f, struct scan_list *l, char *eb, size_t el)
{
	const char *p = f->path;
	uint64_t body = f->size - f->hs;
	f->nblocks = body / f->bs + (body % f->bs ? 1 : 0);
	uint8_t h[ATR_BLOCK_HEADER_SIZE];
	for (uint64_t i = 0; i < f->nblocks; i++) {
		blk_header(f, i, h);
		uint32_t magic = atr_get32(h + ATR_B_MAGIC);
		if (!magic)
			continue;
		uint64_t off = blk_off(f, i);
		f->info.blocks++;
		if (magic != ATR_BLOCK_MAGIC) {
			fmt_err(eb, el,
				"%s: block %" PRIu64 " (offset 0x%" PRIx64
				"): bad block magic 0x%08" PRIx32,
				p, i, off, magic);
			return ATR_E_BLOCK;
		}
		uint32_t kind = atr_get32(h + ATR_B_KIND);
		if (kind == ATR_BLOCK_RETIRED)
			continue;
		if (kind != ATR_BLOCK_DATA && kind != ATR_BLOCK_STAGING) {
			fmt_err(eb, el,
				"%s: block %" PRIu64 " (offset 0x%" PRIx64
				"): unknown block kind %" PRIu32,
				p, i, off, kind);
			return ATR_E_BLOCK;
		}
		if (!atr_get32(h + ATR_B_THREAD)) {
			fmt_err(eb, el,
				"%s: block %" PRIu64 " (offset 0x%" PRIx64 "): thread serial 0", p,
				i, off);
			return ATR_E_BLOCK;
		}
		if (kind == ATR_BLOCK_DATA) {
			uint32_t used = atr_get32(h + ATR_B_USED);
			if (used > f->bs - ATR_BLOCK_HEADER_SIZE || used % 8) {
				fmt_err(eb, el,
					"%s: block %" PRIu64 " (offset 0x%" PRIx64
					"): invalid used size %" PRIu32 " (block size %" PRIu32 ")",
					p, i, off, used, f->bs);
				return ATR_E_BLOCK;
			}
			if (ATR_BLOCK_HEADER_SIZE + (uint64_t)used > blk_avail(f, i))
				f->info.truncated_blocks++;
			f->info.records_hint += atr_get32(h + ATR_B_RECORDS);
		}
		if (scan_push(l, h, off, kind, 0) != ATR_OK) {
			fmt_err(eb, el, "%s: out of memory", p);
			return ATR_E_NOMEM;
		}
	}
	return ATR_OK;
}

/* Offset of the first non-zero 8-byte word at or after off (a hole: space
 * reserved by a writer that never wrote it, or an alignment gap), or the
 * file size. */
static uint64_t skip_zeros(const atr_file *f, uint64_t off)
{
	uint64_t buf[512];
	while (off < f->size) {
		size_t have = src_read(f, off, buf, sizeof buf);
		if (!have)
			return f->size;
		for (size_t i = 0; i < (have + 7) / 8; i++)
			if (buf[i])
				return off + 8 * i;
		off += (have + 7) & ~(size_t)7;
	}
	return f->size;
}

/* Version 2: units one after another, FRAMEs of any length (8-aligned),
 * STAGING/RETIRED blocks of block_size (page-aligned); zeros between. */
static int scan_v2(atr_file *f, struct scan_list *l, char *eb, size_t el)
{
	const char *p = f->path;
	uint8_t h[ATR_BLOCK_HEADER_SIZE];
	uint64_t off = f->hs;
	for (;;) {
		off = skip_zeros(f, off);
		if (off >= f->size)
			break;
		size_t have = src_read(f, off, h, sizeof h);
		uint32_t magic = atr_get32(h + ATR_B_MAGIC), kind = atr_get32(h + ATR_B_KIND);
		if (magic != ATR_BLOCK_MAGIC) {
			fmt_err(eb, el, "%s: unit at offset 0x%" PRIx64 ": bad magic 0x%08" PRIx32,
				p, off, magic);
			return ATR_E_BLOCK;
		}
		if (have < sizeof h) {
			f->info.truncated_blocks++;
			break;
		}
		f->info.blocks++;
		uint64_t len;
		if (kind == ATR_BLOCK_STAGING || kind == ATR_BLOCK_RETIRED) {
			len = f->bs;
		} else if (kind == ATR_BLOCK_FRAME) {
			uint32_t used = atr_get32(h + ATR_B_USED),
				 csize = atr_get32(h + ATR_U_CSIZE);
			uint32_t nrec = atr_get32(h + ATR_B_RECORDS),
				 calls = atr_get32(h + ATR_U_CALLS);
			if (atr_get32(h + ATR_U_CHECK) != atr_unit_check(h)) {
				fmt_err(eb, el,
					"%s: frame at offset 0x%" PRIx64 ": header check mismatch",
					p, off);
				return ATR_E_BLOCK;
			}
			if (used > atr_frame_used_max(f->bs) || used % 8 || calls > nrec ||
			    csize > ZSTD_compressBound(ATR_V2_ENC_BOUND((size_t)used)) ||
			    (uint64_t)nrec * 16 > used) {
				fmt_err(eb, el,
					"%s: frame at offset 0x%" PRIx64
					": invalid sizes (used %" PRIu32 ", compressed %" PRIu32
					", records %" PRIu32 ", calls %" PRIu32
					", block size %" PRIu32 ")",
					p, off, used, csize, nrec, calls, f->bs);
				return ATR_E_BLOCK;
			}
			len = ATR_BLOCK_HEADER_SIZE + (((uint64_t)csize + ATR_UNIT_ALIGN - 1) &
						       ~(uint64_t)(ATR_UNIT_ALIGN - 1));
			if (off + ATR_BLOCK_HEADER_SIZE + csize > f->size) {
				f->info.truncated_blocks++;
				f->trunc_calls += calls;
				break;
			}
			f->info.records_hint += nrec;
		} else {
			fmt_err(eb, el, "%s: unit at offset 0x%" PRIx64 ": unknown kind %" PRIu32,
				p, off, kind);
			return ATR_E_BLOCK;
		}
		if (kind != ATR_BLOCK_RETIRED) {
			if (!atr_get32(h + ATR_B_THREAD)) {
				fmt_err(eb, el, "%s: unit at offset 0x%" PRIx64 ": thread serial 0",
					p, off);
				return ATR_E_BLOCK;
			}
			if (scan_push(l, h, off, kind == ATR_BLOCK_FRAME ? ATR_BLOCK_DATA : kind,
				      kind == ATR_BLOCK_FRAME) != ATR_OK) {
				fmt_err(eb, el, "%s: out of memory", p);
				return ATR_E_NOMEM;
			}
		}
		off += len;
	}
	return ATR_OK;
}

static void stream_put(atr_file *f, uint64_t ns, const struct atr_scan *b, int staging)
{
	struct atr_sblk *sb = &f->stream[ns];
	sb->off = b->off;
	sb->staging = staging;
	sb->indexed = staging ? 0 : b->indexed;
	sb->calls = staging ? 0 : b->calls;
	sb->records = staging ? 0 : b->records;
	sb->first_ts = staging ? 0 : b->first_ts;
	sb->last_ts = staging ? 0 : b->last_ts;
}

/* Feature INFLIGHT: one thread's units (sorted: FRAMEs by seq, then
 * STAGING units by seq) into its stream: for every seq its FRAME, else its
 * STAGING unit (a block handed to the encoder thread, or the thread's
 * current one); a STAGING unit whose seq has a FRAME, or repeats another
 * STAGING unit's, was superseded.  Gaps in the seqs are lost blocks. */
static int merge_inflight(atr_file *f, const struct atr_scan *u, size_t n, uint64_t *ns, char *eb,
			  size_t el)
{
	size_t nd = 0;
	while (nd < n && u[nd].kind == ATR_BLOCK_DATA)
		nd++;
	size_t a = 0, b = nd;
	uint64_t expect = 0;
	while (a < nd || b < n) {
		const struct atr_scan *x;
		int staging;
		if (b >= n || (a < nd && u[a].seq <= u[b].seq)) {
			x = &u[a++];
			staging = 0;
			if (a < nd && u[a].seq == x->seq) {
				fmt_err(eb, el,
					"%s: block at offset 0x%" PRIx64 ": thread %" PRIu32
					" has two data blocks with sequence number %" PRIu64,
					f->path, u[a].off, x->serial, x->seq);
				return ATR_E_BLOCK;
			}
			/* the STAGING units of this seq were superseded */
			while (b < n && u[b].seq == x->seq) {
				f->info.ignored_staging++;
				b++;
			}
		} else {
			x = &u[b++];
			staging = 1;
			while (b < n && u[b].seq == x->seq) {
				f->info.ignored_staging++;
				b++;
			}
		}
		if (x->seq > expect)
			f->info.lost_blocks += x->seq - expect;
		expect = x->seq + 1;
		stream_put(f, (*ns)++, x, staging);
	}
	return ATR_OK;
}

/* Build every thread's stream from the block headers. */
static int scan_blocks(atr_file *f, char *eb, size_t el)
{
	const char *p = f->path;
	struct scan_list l = {0};
	int ret = f->v2 ? scan_v2(f, &l, eb, el) : scan_v1(f, &l, eb, el);
	struct atr_scan *sc = l.sc;
	size_t nsc = l.n;
	if (ret != ATR_OK)
		goto out;
	if (nsc)
		qsort(sc, nsc, sizeof(*sc), scan_cmp);

	/* count threads, allocate */
	uint32_t nthr = 0;
	for (size_t i = 0; i < nsc; i++)
		if (i == 0 || sc[i].serial != sc[i - 1].serial)
			nthr++;
	f->thr = calloc(nthr ? nthr : 1, sizeof(*f->thr));
	f->tinfo = calloc(nthr ? nthr : 1, sizeof(*f->tinfo));
	f->stream = calloc(nsc ? nsc : 1, sizeof(*f->stream));
	if (!f->thr || !f->tinfo || !f->stream) {
		fmt_err(eb, el, "%s: out of memory", p);
		ret = ATR_E_NOMEM;
		goto out;
	}

	uint64_t ns = 0;
	size_t i = 0;
	while (i < nsc) {
		size_t j = i;
		while (j < nsc && sc[j].serial == sc[i].serial)
			j++;
		struct atr_thr *t = &f->thr[f->nthr];
		struct atr_thread_info *ti = &f->tinfo[f->nthr];
		t->serial = sc[i].serial;
		t->first = ns;
		ti->serial = sc[i].serial;
		ti->blocks = j - i;
		int have_data = 0;
		uint64_t last_seq = 0;
		const struct atr_scan *best_staging = NULL;
		size_t v1_end = j; /* the units the rule of one STAGING unit takes */
		if (f->features & ATR_FEAT_INFLIGHT) {
			/* several STAGING units: merge by seq, the FRAME wins */
			ret = merge_inflight(f, sc + i, j - i, &ns, eb, el);
			if (ret != ATR_OK)
				goto out;
			for (size_t k = i; k < j && !t->tid; k++)
				t->tid = sc[k].tid;
			v1_end = i;
		}
		for (size_t k = i; k < v1_end; k++) {
			if (!t->tid && sc[k].tid)
				t->tid = sc[k].tid;
			if (sc[k].kind == ATR_BLOCK_DATA) {
				if (have_data && sc[k].seq == last_seq) {
					fmt_err(
					    eb, el,
					    "%s: block at offset 0x%" PRIx64 ": thread %" PRIu32
					    " has two data blocks with sequence number %" PRIu64,
					    p, sc[k].off, sc[k].serial, sc[k].seq);
					ret = ATR_E_BLOCK;
					goto out;
				}
				/* sequence numbers start at 0: any gap is lost */
				uint64_t expect = have_data ? last_seq + 1 : 0;
				if (sc[k].seq > expect)
					f->info.lost_blocks += sc[k].seq - expect;
				have_data = 1;
				last_seq = sc[k].seq;
				f->stream[ns].off = sc[k].off;
				f->stream[ns].staging = 0;
				f->stream[ns].calls = sc[k].calls;
				f->stream[ns].records = sc[k].records;
				f->stream[ns].indexed = sc[k].indexed;
				f->stream[ns].first_ts = sc[k].first_ts;
				f->stream[ns].last_ts = sc[k].last_ts;
				ns++;
			} else {
				/* sorted by seq: the last staging block wins
				 * (ties: the lowest index, the first seen) */
				if (!best_staging || sc[k].seq > best_staging->seq)
					best_staging = &sc[k];
			}
		}
		/* staging blocks other than the chosen one were superseded */
		for (size_t k = i; k < v1_end; k++)
			if (sc[k].kind == ATR_BLOCK_STAGING && &sc[k] != best_staging)
				f->info.ignored_staging++;
		if (best_staging) {
			if (have_data && best_staging->seq <= last_seq) {
				f->info.ignored_staging++;
			} else {
				uint64_t expect = have_data ? last_seq + 1 : 0;
				if (best_staging->seq > expect)
					f->info.lost_blocks += best_staging->seq - expect;
				f->stream[ns].off = best_staging->off;
				f->stream[ns].staging = 1;
				f->stream[ns].indexed = 0;
				ns++;
			}
		}
		t->n = ns - t->first;
		ti->tid = t->tid;
		if (t->n)
			f->nthr++;
		else
			ns = t->first;
		i = j;
	}
	f->info.threads = f->nthr;
out:
	free(sc);
	return ret;
}

static int open_common(atr_file *f, char *eb, size_t el)
{
	int ret = validate_header(f, eb, el);
	if (ret == ATR_OK)
		ret = scan_blocks(f, eb, el);
	return ret;
}

static atr_file *file_new(const char *name)
{
	atr_file *f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->path = strdup(name ? name : "(buffer)");
	if (!f->path) {
		free(f);
		return NULL;
	}
	f->fd = -1;
	f->info.path = f->path;
	f->info.exe = "";
	f->info.cmdline = "";
	return f;
}

int atr_open(const char *path, atr_file **out, char *errbuf, size_t errlen)
{
	if (!out)
		return ATR_E_USAGE;
	*out = NULL;
	if (!path) {
		fmt_err(errbuf, errlen, "no file name given");
		return ATR_E_USAGE;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fmt_err(errbuf, errlen, "%s: %s", path, strerror(errno));
		return ATR_E_IO;
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		fmt_err(errbuf, errlen, "%s: %s", path, strerror(errno));
		close(fd);
		return ATR_E_IO;
	}
	if (S_ISDIR(st.st_mode)) {
		fmt_err(errbuf, errlen, "%s: is a directory", path);
		close(fd);
		return ATR_E_IO;
	}
	if (!S_ISREG(st.st_mode)) {
		fmt_err(errbuf, errlen, "%s: not a regular file", path);
		close(fd);
		return ATR_E_IO;
	}
	atr_file *f = file_new(path);
	if (!f) {
		fmt_err(errbuf, errlen, "%s: out of memory", path);
		close(fd);
		return ATR_E_NOMEM;
	}
	f->size = (size_t)st.st_size;
	if (f->size >= ATR_HEADER_SIZE &&
	    pread(fd, f->hdr, ATR_HEADER_SIZE, 0) == ATR_HEADER_SIZE &&
	    !memcmp(f->hdr, ATR_MAGIC, 8) && atr_get32(f->hdr + ATR_H_VERSION) == ATR_VERSION) {
		/* v2: read piecewise, so memory stays small on any size */
		f->fd = fd;
		posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	} else if (f->size >= ATR_HEADER_SIZE) {
		void *m = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m == MAP_FAILED) {
			fmt_err(errbuf, errlen, "%s: mmap: %s", path, strerror(errno));
			close(fd);
			atr_close(f);
			return ATR_E_IO;
		}
		f->base = m;
		f->mapped = 1;
		madvise(m, f->size, MADV_SEQUENTIAL);
	} else {
		/* too short: read it to tell "not a trace" from "truncated" */
		uint8_t *b = malloc(f->size ? f->size : 1);
		ssize_t got = b ? pread(fd, b, f->size, 0) : -1;
		if (!b || got < 0) {
			fmt_err(errbuf, errlen, "%s: %s", path,
				b ? strerror(errno) : "out of memory");
			free(b);
			close(fd);
			atr_close(f);
			return b ? ATR_E_IO : ATR_E_NOMEM;
		}
		f->size = (size_t)got;
		f->base = b;
		int r = validate_header(f, errbuf, errlen);
		f->base = NULL;
		free(b);
		close(fd);
		atr_close(f);
		return r;
	}
	if (f->fd != fd)
		close(fd);
	int ret = open_common(f, errbuf, errlen);
	if (ret != ATR_OK) {
		atr_close(f);
		return ret;
	}
	*out = f;
	return ATR_OK;
}

int atr_open_buffer(const void *data, size_t size, const char *name, atr_file **out, char *errbuf,
		    size_t errlen)
{
	if (!out)
		return ATR_E_USAGE;
	*out = NULL;
	if (!data && size) {
		fmt_err(errbuf, errlen, "no buffer given");
		return ATR_E_USAGE;
	}
	atr_file *f = file_new(name);
	if (!f) {
		fmt_err(errbuf, errlen, "%s: out of memory", name ? name : "(buffer)");
		return ATR_E_NOMEM;
	}
	static const uint8_t empty[8];
	f->base = data ? data : empty;
	f->size = size;
	int ret = open_common(f, errbuf, errlen);
	if (ret != ATR_OK) {
		atr_close(f);
		return ret;
	}
	*out = f;
	return ATR_OK;
}

void atr_close(atr_file *f)
{
	if (!f)
		return;
	if (f->mapped)
		munmap((void *)f->base, f->size);
	if (f->fd >= 0)
		close(f->fd);
	ZSTD_freeDCtx(f->dctx);
	free(f->zbuf);
	free(f->dbuf);
	za_free(f->za);
	for (size_t i = 0; i < f->nmoddata; i++)
		free(f->moddata[i]);
	free(f->moddata);
	free(f->cmdline);
	free(f->thr);
	free(f->tinfo);
	free(f->stream);
	free(f->path);
	free(f->stk);
	free(f->ips);
	util_hmap_destroy(&f->stk_by_id);
	util_hmap_destroy(&f->stk_by_hash);
	for (size_t i = 0; i < f->nmods; i++)
		free((void *)f->mods[i].path);
	free(f->mods);
	free(f);
}

const struct atr_info *atr_get_info(const atr_file *f)
{
	return &f->info;
}

const char *atr_last_error(const atr_file *f)
{
	return f->err[0] ? f->err : "no error";
}

double atr_ticks_to_ns(const atr_file *f, uint64_t ticks)
{
	if (f->info.ticks_per_sec == 1e9)
		return (double)ticks;
	return (double)ticks * (1e9 / f->info.ticks_per_sec);
}

uint64_t atr_ticks_to_ns_u64(const atr_file *f, uint64_t ticks)
{
	if (f->info.ticks_per_sec == 1e9)
		return ticks;
	double ns = atr_ticks_to_ns(f, ticks);
	if (!(ns >= 0))
		return 0;
	return ns >= 18446744073709549568.0 ? UINT64_MAX : (uint64_t)ns;
}

uint32_t atr_thread_count(const atr_file *f)
{
	return f->nthr;
}

const struct atr_thread_info *atr_thread(const atr_file *f, uint32_t idx)
{
	return idx < f->nthr ? &f->tinfo[idx] : NULL;
}

/* ---- per-thread cursor ------------------------------------------------- */

#define CUR_RING 32 /* a power of two > ATR_PREFETCH_AHEAD */
_Static_assert(CUR_RING > ATR_PREFETCH_AHEAD && !(CUR_RING & (CUR_RING - 1)), "ring size");

struct atr_cur {
	uint32_t t; /* thread index */
	uint32_t tid;
	uint64_t si; /* next stream entry to load */
	int loaded;  /* a block is current */
	int staging;
	uint64_t off;	  /* current block's offset in the file */
	const uint8_t *b; /* its first byte */
	/* v2: decoded blocks (a FRAME's encoded bytes, or with v2_words its
	 * v1 words), two so that the event handed out last (its payload)
	 * stays valid while the next one is decoded (otherwise the next one
	 * goes to the same buffer) */
	uint8_t *buf[2];
	size_t cap[2];
	size_t pop[2]; /* bytes of each populated (ready) */
	int which;
	/* the buffer holding the payload of the event handed to the
	 * iterator last (-1: none; it stays valid while the next one is
	 * decoded, so no block is loaded into it, however many blocks
	 * without events come between), and of the last meta event made */
	int ew, pw;
	/* v2 FRAME read record by record (lazy): the decoder's state and
	 * input, and a ring of decoded records that runs up to
	 * ATR_PREFETCH_AHEAD records ahead of the one handed out (their
	 * addresses went to the prefetch hook) */
	int lazy;
	int rdone;		     /* every record of the frame is decoded and checked (or
					ferr: the record after the ring's does not decode) */
	const char *ferr, *ferr_why; /* frame_bad()'s words for that record:
					reported when the ring has run dry */
	/* the ring runs up to ahead records ahead of the one handed out,
	 * filled batch at a time: ATR_PREFETCH_AHEAD and CUR_RING for
	 * events; 0 and 1 on the narrow path, which decodes a run's records
	 * straight into the caller's array (cur_run) */
	uint32_t ahead, batch;
	struct v2_state vs;
	struct rbuf rb;
	uint64_t v1used;     /* v1 bytes of the records decoded (<= lim) */
	uint32_t want_calls; /* the frame header's call count */
	uint32_t ncalls_dec;
	uint32_t rh, rt; /* ring: next to hand out, next to fill */
	struct v2_rec ring[CUR_RING];
	uint64_t pos;  /* next record, block-relative */
	uint64_t end;  /* readable end (file end or used/limit) */
	uint64_t lim;  /* logical end: records may not cross it */
	uint64_t nrec; /* records decoded in the current block */
	uint64_t want; /* data block: header record count */
	uint64_t prev_ts;
	double wf_calls, wf_bytes; /* sampled: weights' carried fractions */
	struct atr_event stash;	   /* a realloc waiting behind its release */
	int has_stash;
	/* a RESIDENT record waiting for the release it precedes */
	int res_pending;
	uint32_t res_pages, res_span;
	uint64_t res_ptr;
	const struct atr_sel *sel; /* atr_iter_new_sel: time window */
	uint64_t skipped_blocks, skipped_records, decoded_blocks;
	/* atr_iter_set_prefetch: the record at block offset apos is alead
	 * records ahead of pos; its addresses went to pf */
	atr_prefetch_fn pf;
	void *pfctx;
	uint64_t apos;
	unsigned alead;
	/* statistics of this cursor's walk */
	uint64_t lost, inversions, records, calls, trunc_records, last_ts;
	/* the narrow path's light head (cur_head_light): the iterator's head
	 * event of this thread holds only its key (ts, thread); the record
	 * itself is the ring's next, not handed out yet */
	int hlight;
};

void atr_sample_weight(uint64_t rate, uint64_t size, double *calls, double *bytes)
{
	double p = rate ? -expm1(-(double)size / (double)rate) : 1.0;
	if (!(p > 0)) { /* size 0 is never sampled: count the call alone */
		*calls = 1;
		*bytes = 0;
		return;
	}
	*calls = 1 / p;
	*bytes = (double)size / p;
}

/* An allocation's weights (struct atr_event): 1 call and its size in a full
 * trace; in a sampled one 1/p and size/p, handed out as integers whose
 * remainders carry to the thread's next allocation, so sums are exact to
 * within one per thread and deterministic. */
static inline void cur_weigh(const atr_file *f, struct atr_cur *c, struct atr_event *ev)
{
	if (ev->type == ATR_T_FREE)
		return;
	if (__builtin_expect(!f->info.sample_rate, 1)) {
		ev->w_calls = 1;
		ev->w_bytes = ev->size;
		return;
	}
	double wc, wb;
	atr_sample_weight(f->info.sample_rate, ev->size, &wc, &wb);
	wc += c->wf_calls;
	wb += c->wf_bytes;
	double ic = floor(wc), ib = floor(wb);
	c->wf_calls = wc - ic;
	c->wf_bytes = wb - ib;
	ev->w_calls = ic < 1.8e19 ? (uint64_t)ic : UINT64_MAX;
	ev->w_bytes = ib < 1.8e19 ? (uint64_t)ib : UINT64_MAX;
}

void atr_set_v2_words(atr_file *f, int on)
{
	if (f)
		f->v2_words = on != 0;
}

uint64_t atr_sample_rate(const atr_file *f)
{
	return f->info.sample_rate;
}

static void cur_init(const atr_file *f, struct atr_cur *c, uint32_t t)
{
	memset(c, 0, sizeof(*c));
	c->t = t;
	c->tid = f->thr[t].tid;
	c->ahead = ATR_PREFETCH_AHEAD;
	c->batch = CUR_RING;
	c->ew = -1;
}

static void cur_free(struct atr_cur *c)
{
	free(c->buf[0]);
	free(c->buf[1]);
	c->buf[0] = c->buf[1] = NULL;
	c->cap[0] = c->cap[1] = 0;
	c->pop[0] = c->pop[1] = 0;
}

static int cur_corrupt(atr_file *f, const struct atr_cur *c, const char *what, uint64_t v)
{
	snprintf(f->err, sizeof(f->err),
		 "%s: block at offset 0x%" PRIx64 ", record at block offset %" PRIu64
		 ": %s%" PRIu64,
		 f->path, c->off, c->pos, what, v);
	return ATR_E_RECORD;
}

/* The first len bytes of a buffer (grown to them) about to be written
 * whole: its pages not mapped yet (beyond *pop, which realloc keeps valid)
 * are mapped in one system call, not one page fault each (on the benchmark
 * VM a fault costs ~10 us: a fifth of info's CPU on cc1plus's trace,
 * bench/RESULTS.md). */
static void ready(uint8_t *buf, size_t *pop, size_t len)
{
	if (len <= *pop)
		return;
	util_populate(buf + *pop, len - *pop);
	*pop = len;
}

static int frame_bad(atr_file *f, uint64_t off, const char *what, const char *why)
{
	snprintf(f->err, sizeof(f->err), "%s: frame at offset 0x%" PRIx64 ": %s%s", f->path, off,
		 what, why);
	return ATR_E_BLOCK;
}

/* The cursor's next frames (up to ZA_SLOTS) to the helper, if any. */
static void za_post_next(atr_file *f, const struct atr_cur *c)
{
	const struct atr_thr *t = &f->thr[c->t];
	if (c->sel)
		return; /* frames outside the window are never loaded */
	for (uint64_t k = c->si; k < t->n && k < c->si + ZA_SLOTS; k++) {
		const struct atr_sblk *sb = &f->stream[t->first + k];
		if (sb->staging)
			break;
		za_post(f->za, sb->off);
	}
}

/* v2 FRAME: its encoded records (decompressed) into the cursor's buffer w;
 * cur_next decodes them one by one (cur_fill). */
static int cur_load_lazy(atr_file *f, struct atr_cur *c, int w, uint32_t used, uint32_t csize,
			 uint32_t nrec, uint32_t calls)
{
	size_t elen = csize;
	/* at most the encoding bound of its records (a compacted frame may
	 * hold more than a block: atr_frame_used_max): a frame that claims
	 * more is corrupt (zstd stops at the buffer's end) */
	size_t n = ATR_V2_ENC_BOUND((size_t)used);
	if ((f->features & ATR_FEAT_ZSTD) && f->za &&
	    za_take(f->za, c->off, n, &c->buf[w], &c->cap[w], &c->pop[w], &elen)) {
		/* decompressed by the helper */
	} else if (f->features & ATR_FEAT_ZSTD) {
		if (atr_grow(&c->buf[w], &c->cap[w], n) ||
		    atr_grow(&f->zbuf, &f->zcap, csize ? csize : 1))
			return ATR_E_NOMEM;
		if (!f->dctx && !(f->dctx = ZSTD_createDCtx()))
			return ATR_E_NOMEM;
		ready(f->zbuf, &f->zpop, csize);
		src_read(f, c->off + ATR_BLOCK_HEADER_SIZE, f->zbuf, csize);
		unsigned long long cs = ZSTD_getFrameContentSize(f->zbuf, csize);
		if (cs <= n)
			ready(c->buf[w], &c->pop[w], (size_t)cs);
		size_t r = ZSTD_decompressDCtx(f->dctx, c->buf[w], n, f->zbuf, csize);
		if (ZSTD_isError(r))
			return frame_bad(f, c->off, "zstd: ", ZSTD_getErrorName(r));
		elen = r;
	} else {
		if (atr_grow(&c->buf[w], &c->cap[w], csize ? csize : 1))
			return ATR_E_NOMEM;
		src_read(f, c->off + ATR_BLOCK_HEADER_SIZE, c->buf[w], csize);
	}
	if (f->za)
		za_post_next(f, c);
	c->b = c->buf[w];
	c->rb.p = c->b;
	c->rb.end = c->b + elen;
	c->rb.bad = 0;
	state_init(&c->vs, f->features);
	c->lazy = 1;
	c->rdone = 0;
	c->ferr = NULL;
	c->rh = c->rt = 0;
	c->v1used = 0;
	c->lim = c->end = used;
	c->want = nrec;
	c->want_calls = calls;
	c->ncalls_dec = 0;
	return ATR_OK;
}

/* v2: read (and for a FRAME decompress and decode) the unit at c->off into
 * the cursor's buffer, as a v1 block: 64 header bytes, then records (a
 * FRAME without v2_words: cur_load_lazy).  The buffer of the frame before
 * is used again unless it holds the payload of the event handed out last
 * (ew): one buffer's pages and lines per thread, not two (xfreebench's
 * trace: max RSS 10.7 -> 7.6 MB, cachegrind's last-level write misses
 * -41% on a smaller one). */
static int cur_load_v2(atr_file *f, struct atr_cur *c)
{
	int w = c->which;
	if (w == c->ew)
		w ^= 1;
	c->which = w;
	c->lazy = 0;
	uint8_t h[ATR_BLOCK_HEADER_SIZE];
	if (c->staging) {
		if (atr_grow(&c->buf[w], &c->cap[w], f->bs))
			return ATR_E_NOMEM;
		c->end = src_read(f, c->off, c->buf[w], f->bs);
		c->b = c->buf[w];
		c->lim = f->bs;
		c->want = 0;
		return ATR_OK;
	}
	src_read(f, c->off, h, sizeof h);
	uint32_t used = atr_get32(h + ATR_B_USED), csize = atr_get32(h + ATR_U_CSIZE);
	uint32_t nrec = atr_get32(h + ATR_B_RECORDS), calls = atr_get32(h + ATR_U_CALLS);
	if (!f->v2_words)
		return cur_load_lazy(f, c, w, used, csize, nrec, calls);
	if (atr_grow(&c->buf[w], &c->cap[w], ATR_BLOCK_HEADER_SIZE + (size_t)used) ||
	    atr_grow(&f->zbuf, &f->zcap, csize ? csize : 1))
		return ATR_E_NOMEM;
	src_read(f, c->off + ATR_BLOCK_HEADER_SIZE, f->zbuf, csize);
	const uint8_t *enc = f->zbuf;
	size_t elen = csize;
	if (f->features & ATR_FEAT_ZSTD) {
		/* at most the encoding bound of its records: a frame that
		 * claims more is corrupt (zstd stops at the buffer's end) */
		size_t n = ATR_V2_ENC_BOUND((size_t)used);
		if (atr_grow(&f->dbuf, &f->dcap, n))
			return ATR_E_NOMEM;
		if (!f->dctx && !(f->dctx = ZSTD_createDCtx()))
			return ATR_E_NOMEM;
		size_t r = ZSTD_decompressDCtx(f->dctx, f->dbuf, n, f->zbuf, csize);
		if (ZSTD_isError(r))
			return frame_bad(f, c->off, "zstd: ", ZSTD_getErrorName(r));
		enc = f->dbuf;
		elen = r;
	}
	struct atr_v2_meta m;
	const char *why = "";
	memcpy(c->buf[w], h, sizeof h);
	long got = atr_v2_decode(enc, elen, f->features, c->buf[w] + ATR_BLOCK_HEADER_SIZE, used,
				 &m, &why);
	if (got < 0)
		return frame_bad(f, c->off, "records do not decode: ", why);
	if ((uint64_t)got != used || m.records != nrec || m.calls != calls)
		return frame_bad(f, c->off, "decoded records disagree with the frame header", "");
	c->b = c->buf[w];
	c->lim = c->end = ATR_BLOCK_HEADER_SIZE + (uint64_t)used;
	c->want = nrec;
	return ATR_OK;
}

/* The block ended early because the file did: records the data block
 * header announced but which are missing are counted. */
static void cur_block_done(struct atr_cur *c)
{
	if (!c->staging && c->want > c->nrec)
		c->trunc_records += c->want - c->nrec;
	c->loaded = 0;
}

/* The words of an extended call (after word 1, ATR_XCALLS order) into the
 * event's fields (atr_reader.h). */
static void xcall_decode(struct atr_event *ev, unsigned xt, const uint8_t *w)
{
	uint64_t a = atr_get64(w), b = 0, c = 0, d = 0, e = 0, g = 0;
	unsigned n = atr_xcall_words(xt);
	if (n > 1)
		b = atr_get64(w + 8);
	if (n > 2)
		c = atr_get64(w + 16);
	if (n > 3)
		d = atr_get64(w + 24);
	if (n > 4)
		e = atr_get64(w + 32);
	if (n > 5)
		g = atr_get64(w + 40);
	switch (xt) {
	case ATR_T_MMAP: /* ret, len, addr, prot | flags << 32, fd | errno << 32, offset */
		ev->ret = a;
		ev->size = b;
		ev->hint = c;
		ev->prot = (uint32_t)d;
		ev->mflags = (uint32_t)(d >> 32);
		ev->fd = (int32_t)(uint32_t)e;
		ev->err = (int32_t)(e >> 32);
		ev->offset = g;
		break;
	case ATR_T_MUNMAP: /* addr, len, res */
		ev->ptr = a;
		ev->size = b;
		ev->result = (int32_t)(uint32_t)c;
		ev->err = (int32_t)(c >> 32);
		break;
	case ATR_T_MREMAP: /* ret, new_len, old, old_len, flags | errno << 32, new_address */
		ev->ret = a;
		ev->size = b;
		ev->ptr = c;
		ev->old_size = d;
		ev->mflags = (uint32_t)e;
		ev->err = (int32_t)(e >> 32);
		ev->hint = g;
		break;
	case ATR_T_MADVISE: /* addr, len, advice, res */
		ev->ptr = a;
		ev->size = b;
		ev->param = (int32_t)(uint32_t)c;
		ev->result = (int32_t)(uint32_t)d;
		ev->err = (int32_t)(d >> 32);
		break;
	case ATR_T_BRK_CALL: /* addr, break before, break after, res */
	case ATR_T_SBRK:     /* increment, break before, break after, res */
		if (xt == ATR_T_BRK_CALL)
			ev->hint = a;
		else
			ev->value = (int64_t)a;
		ev->ptr = b;
		ev->ret = c;
		ev->result = (int32_t)(uint32_t)d;
		ev->err = (int32_t)(d >> 32);
		break;
	case ATR_T_MALLOPT: /* param, value, result */
		ev->param = (int32_t)a;
		ev->value = (int64_t)b;
		ev->result = (int64_t)c;
		break;
	case ATR_T_MALLOC_TRIM: /* pad, result */
		ev->size = a;
		ev->result = (int64_t)b;
		break;
	case ATR_T_MALLOC_USABLE_SIZE: /* ptr, result */
		ev->ptr = a;
		ev->usable = b;
		break;
	default:
		break;
	}
}

/* Walks the loaded block ahead of c->pos, up to ATR_PREFETCH_AHEAD
 * records, handing their block addresses to the prefetch hook.  Stops at
 * anything cur_next would look at twice (the end, a zero word, a record it
 * rejects): it only reads. */
static void cur_ahead(const atr_file *f, struct atr_cur *c)
{
	if (c->apos < c->pos) {
		c->apos = c->pos;
		c->alead = 0;
	}
	while (c->alead < ATR_PREFETCH_AHEAD) {
		uint64_t a = c->apos;
		if (a + 16 > c->end)
			return;
		const uint8_t *r = c->b + a;
		uint64_t w0 = atr_get64(r), w1 = atr_get64(r + 8), need;
		unsigned type = (unsigned)(w0 & ATR_TYPE_MASK);
		unsigned flags = (unsigned)(w0 & ATR_FLAG_MASK);
		if (type >= 1 && type <= ATR_T_CALL_LAST) {
			need = 8ULL * atr_record_words(type, flags);
			if (a + need > c->end)
				return;
			unsigned shape = atr_call_args(type);
			if (shape != ATR_ARGS_PTR && f->chunk_flags)
				w1 &= ~(uint64_t)ATR_CHUNK_MASK;
			if (w1)
				c->pf(c->pfctx, w1);
			if (shape == ATR_ARGS_OLD || shape == ATR_ARGS_OLD_NMEMB) {
				uint64_t old = atr_get64(r + 24);
				if (old && old != w1)
					c->pf(c->pfctx, old);
			}
		} else if (!w0) {
			return;
		} else if (type == ATR_T_EXT && f->xcalls) {
			need = 8ULL * atr_ext_words(w1, flags);
			if (!need)
				return;
		} else if (type >= ATR_T_THREAD_START) {
			need = 16 + (((w1 & 0xffffffffULL) + 7) & ~7ULL);
		} else {
			return;
		}
		c->apos = a + need;
		c->alead++;
	}
}

/* A call record after a RESIDENT record: the count is its block's if it
 * releases (free) or reallocates that block; else (the release's record
 * was lost) it is dropped. */
static void res_attach(struct atr_cur *c, struct atr_event *ev)
{
	c->res_pending = 0;
	unsigned shape = atr_call_args(ev->type);
	if ((shape == ATR_ARGS_PTR || shape == ATR_ARGS_OLD || shape == ATR_ARGS_OLD_NMEMB) &&
	    ev->ptr == c->res_ptr) {
		ev->resident_pages = c->res_pages;
		ev->span_pages = c->res_span;
	}
}

/* A record's stamp, clamped so that a thread's stamps never go back. */
static inline uint64_t cur_ts(struct atr_cur *c, uint64_t ts)
{
	if (ts < c->prev_ts) {
		ts = c->prev_ts;
		c->inversions++;
	}
	c->prev_ts = ts;
	return ts;
}

/* *ev = all zeros in 16-byte stores (a copy of a zero event loads as
 * much as it stores; memset may become `rep stos`). */
static inline void ev_clear(struct atr_event *ev)
{
	typedef uint64_t u64x2 __attribute__((vector_size(16), aligned(8), may_alias));
	typedef uint64_t u64a __attribute__((aligned(8), may_alias));
	_Static_assert(sizeof(struct atr_event) <= 256 && sizeof(struct atr_event) % 8 == 0,
		       "ev_clear: 16 stores at the most");
	const u64x2 z = {0, 0};
	u64x2 *q = (u64x2 *)(void *)ev;
#define EV_Z(i)                                                                                    \
	if (sizeof(struct atr_event) >= 16 * (i) + 16)                                             \
		q[i] = z;
	EV_Z(0) EV_Z(1) EV_Z(2) EV_Z(3) EV_Z(4) EV_Z(5) EV_Z(6) EV_Z(7);
	EV_Z(8) EV_Z(9) EV_Z(10) EV_Z(11) EV_Z(12) EV_Z(13) EV_Z(14) EV_Z(15);
#undef EV_Z
	if (sizeof(struct atr_event) % 16)
		*(u64a *)(void *)((char *)ev + sizeof(struct atr_event) - 8) = 0;
}

/* The fields every event has. */
static inline void ev_start(struct atr_cur *c, struct atr_event *ev, unsigned type, unsigned flags,
			    uint32_t serial, uint64_t ts)
{
	ev_clear(ev);
	ev->type = (uint8_t)type;
	ev->flags = (uint8_t)flags;
	ev->thread = serial;
	ev->ts = ts;
	if (ts > c->last_ts)
		c->last_ts = ts;
	c->records++;
}

/* A meta record (word 1 w1, its payload): 1 ev filled, 0 no event (a
 * RESIDENT record, an unknown type), < 0 error. */
static int ev_meta(atr_file *f, struct atr_cur *c, struct atr_event *ev, unsigned type,
		   unsigned flags, uint64_t ts, uint64_t w1, const uint8_t *payload)
{
	if (type == ATR_T_RESIDENT) {
		/* not an event: its count goes with the free or realloc
		   of the block that follows it (meta records between) */
		uint64_t span;
		if ((uint32_t)w1 != 16 || (span = atr_get64(payload + 8)) == 0 ||
		    (w1 >> 32) > span || !atr_get64(payload))
			return cur_corrupt(f, c, "bad RESIDENT record: word 1 ", w1);
		c->res_pending = 1;
		c->res_ptr = atr_get64(payload);
		c->res_pages = (uint32_t)(w1 >> 32);
		c->res_span = span > UINT32_MAX ? UINT32_MAX : (uint32_t)span;
		return 0;
	}
	if (!atr_names[type])
		return 0; /* unknown meta type: skipped (forward compatible) */
	if (type == ATR_T_CPU && (uint32_t)w1 != 24)
		return cur_corrupt(f, c, "bad CPU record: word 1 ", w1);
	if (type == ATR_T_RECORDER && (uint32_t)w1 != 8)
		return cur_corrupt(f, c, "bad RECORDER record: word 1 ", w1);
	ev_start(c, ev, type, flags, f->thr[c->t].serial, ts);
	ev->arg = (uint32_t)(w1 >> 32);
	ev->payload_len = (uint32_t)w1;
	ev->payload = payload;
	c->pw = c->which;
	if (type == ATR_T_THREAD_START && ev->arg)
		c->tid = ev->arg;
	if (type == ATR_T_LOST && ev->payload_len >= 8)
		c->lost += atr_get64(payload);
	ev->tid = c->tid;
	return 1;
}

/* An extended call xt: its words w (v1 layout), stack id, duration. */
static void ev_ext(atr_file *f, struct atr_cur *c, struct atr_event *ev, unsigned xt,
		   unsigned flags, uint64_t ts, const uint8_t *w, uint64_t stack, uint64_t dur)
{
	ev_start(c, ev, ATR_T_EXT, flags, f->thr[c->t].serial, ts);
	c->calls++;
	ev->type = (uint8_t)xt;
	ev->stack_id = (uint32_t)stack;
	ev->duration = dur;
	xcall_decode(ev, xt, w);
	ev->tid = c->tid;
}

/* A call of the malloc family: a the block (free) or ret without chunk
 * bits (cb), slack the usable bytes beyond size (UINT64_MAX unknown), x
 * and y the words after the size (atr_call_args shape), stack id and
 * duration 0 when the record has none. */
static inline __attribute__((always_inline)) void
ev_call(atr_file *f, struct atr_cur *c, struct atr_event *ev, unsigned type, unsigned flags,
	uint64_t ts, uint64_t a, unsigned cb, uint64_t size, uint64_t slack, uint64_t x, uint64_t y,
	uint64_t stack, uint64_t dur)
{
	ev_start(c, ev, type, flags, f->thr[c->t].serial, ts);
	c->calls++;
	ev->stack_id = (uint32_t)stack;
	ev->duration = dur;
	unsigned shape = atr_call_args(type);
	if (shape == ATR_ARGS_PTR) {
		ev->ptr = a;
	} else {
		ev->ret = a;
		ev->chunk_flags = (uint8_t)cb;
		ev->size = size;
		if (shape == ATR_ARGS_ALIGN_OUT && !ev->ret) {
			ev->err = (int32_t)(uint32_t)slack;
		} else if (ev->ret) {
			if (slack == UINT64_MAX || ev->size + slack < ev->size)
				ev->usable = UINT64_MAX;
			else
				ev->usable = ev->size + slack;
		}
		switch (shape) {
		case ATR_ARGS_NMEMB:
			ev->nmemb = x;
			break;
		case ATR_ARGS_OLD:
			ev->ptr = x;
			break;
		case ATR_ARGS_OLD_NMEMB:
			ev->ptr = x;
			ev->nmemb = y;
			break;
		case ATR_ARGS_ALIGN:
		case ATR_ARGS_ALIGN_OUT:
			ev->align = x;
			break;
		default:
			break;
		}
	}
	if (__builtin_expect(c->res_pending, 0))
		res_attach(c, ev);
	cur_weigh(f, c, ev);
	ev->tid = c->tid;
}

/* The block addresses of a call record to the prefetch hook (cur_ahead's
 * rule). */
static inline void cur_pf_rec(struct atr_cur *c, const struct v2_rec *q)
{
	if (q->type > ATR_T_CALL_LAST)
		return;
	if (q->a)
		c->pf(c->pfctx, q->a);
	unsigned shape = atr_call_args(q->type);
	if ((shape == ATR_ARGS_OLD || shape == ATR_ARGS_OLD_NMEMB) && q->x && q->x != q->a)
		c->pf(c->pfctx, q->x);
}

/* A record of a lazy frame does not decode (or the frame's totals
 * disagree with its header): nothing more is decoded, and the error is
 * reported when the records before it have been handed out (cur_next_lazy),
 * whichever path hands them out and however far ahead it decodes. */
static void cur_fail(struct atr_cur *c, const char *what, const char *why)
{
	c->ferr = what;
	c->ferr_why = why;
	c->rdone = 1;
}

/* Decode records of a lazy frame into the ring, once it holds no more
 * than c->ahead records after the next one: up to c->batch (for events
 * CUR_RING: the decoder's state stays in registers), so the records handed
 * out have been decoded, and their addresses handed to the prefetch hook,
 * ATR_PREFETCH_AHEAD to 2 * ATR_PREFETCH_AHEAD records before.  At the
 * frame's end its totals are checked against its header (atr_v2_decode's
 * checks). */
static void cur_fill(struct atr_cur *c)
{
	if (c->rt - c->rh > c->ahead)
		return;
	uint32_t rt = c->rt, stop = c->rh + c->batch;
	uint64_t v1used = c->v1used, lim = c->lim;
	uint32_t ncalls = c->ncalls_dec;
	struct rbuf b = c->rb;
	while (rt != stop) {
		struct v2_rec *q = &c->ring[rt & (CUR_RING - 1)];
		const char *why = "";
		size_t need;
		if (__builtin_expect(b.end - b.p >= V2_REC_MAX, 1)) {
			need = v2_dec_rec_f(&c->vs, &b, q, &why, 1);
		} else if (b.p < b.end) {
			need = v2_dec_rec_f(&c->vs, &b, q, &why, 0);
		} else {
			if (v1used != lim || c->nrec + (rt - c->rt) != c->want ||
			    ncalls != c->want_calls)
				cur_fail(c, "decoded records disagree with the frame header", "");
			else
				c->rdone = 1;
			break;
		}
		if (!need) {
			cur_fail(c, "records do not decode: ", why);
			break;
		}
		if (need > lim - v1used) {
			cur_fail(c, "records do not decode: ",
				 "frame decodes to more than its block size");
			break;
		}
		v1used += need;
		ncalls += q->type < ATR_T_THREAD_START;
		rt++;
		if (c->pf)
			cur_pf_rec(c, q);
	}
	c->nrec += rt - c->rt;
	c->rt = rt;
	c->rb = b;
	c->v1used = v1used;
	c->ncalls_dec = ncalls;
}

/* The next record of a lazy frame: 1 ev filled, 0 no event (the frame
 * ended: c->loaded is 0; or a record without an event), < 0 error. */
static inline __attribute__((always_inline)) int cur_next_lazy(atr_file *f, struct atr_cur *c,
							       struct atr_event *ev)
{
	if (!c->rdone)
		cur_fill(c);
	if (c->rh == c->rt) {
		if (c->ferr)
			return frame_bad(f, c->off, c->ferr, c->ferr_why);
		c->loaded = 0;
		return 0;
	}
	const struct v2_rec *q = &c->ring[c->rh++ & (CUR_RING - 1)];
	uint64_t ts = cur_ts(c, q->ts);
	unsigned type = q->type, flags = q->v1b & ATR_FLAG_MASK;
	if (__builtin_expect(type > ATR_T_CALL_LAST, 0)) {
		if (type >= ATR_T_THREAD_START)
			return ev_meta(f, c, ev, type, flags, ts, q->a, q->payload);
		ev_ext(f, c, ev, (unsigned)q->a, flags, ts, (const uint8_t *)q->w, q->stack,
		       q->dur);
		return 1;
	}
	uint64_t slack = q->slack;
	if (!(flags & ATR_FLAG_WIDE) && slack == ATR_SLACK_NARROW_UNKNOWN)
		slack = UINT64_MAX;
	ev_call(f, c, ev, type, flags, ts, q->a, q->cb, q->size, slack, q->x, q->y, q->stack,
		q->dur);
	return 1;
}

/* Decode the next record of the thread: 1 (ev filled), 0 end, < 0 error. */
static int cur_next(atr_file *f, struct atr_cur *c, struct atr_event *ev)
{
	const struct atr_thr *t = &f->thr[c->t];
	for (;;) {
		if (!c->loaded) {
			if (c->si >= t->n) {
				/* the buffer of the event handed out last stays */
				for (int x = 0; x < 2; x++)
					if (x != c->ew) {
						free(c->buf[x]);
						c->buf[x] = NULL;
						c->cap[x] = 0;
						c->pop[x] = 0;
					}
				return 0;
			}
			const struct atr_sblk *sb = &f->stream[t->first + c->si++];
			if (c->sel && sb->indexed) {
				/* the index says the whole frame is outside the
				 * window: never read or decompressed */
				if (sb->first_ts > c->sel->to_ts) {
					for (c->si--; c->si < t->n; c->si++) {
						c->skipped_blocks++;
						c->skipped_records +=
						    f->stream[t->first + c->si].records;
					}
					continue;
				}
				if (sb->last_ts < c->sel->from_ts) {
					c->skipped_blocks++;
					c->skipped_records += sb->records;
					continue;
				}
			}
			c->decoded_blocks++;
			c->off = sb->off;
			c->staging = sb->staging;
			c->lazy = 0;
			if (f->v2) {
				int r = cur_load_v2(f, c);
				if (r < 0) {
					if (r == ATR_E_NOMEM)
						snprintf(f->err, sizeof(f->err),
							 "%s: out of memory", f->path);
					return r;
				}
			} else {
				uint64_t idx = (c->off - f->hs) / f->bs;
				c->b = f->base + c->off;
				uint64_t avail = blk_avail(f, idx);
				uint8_t h[ATR_BLOCK_HEADER_SIZE];
				blk_header(f, idx, h);
				c->lim = c->staging ? f->bs
						    : ATR_BLOCK_HEADER_SIZE +
							  (uint64_t)atr_get32(h + ATR_B_USED);
				c->want = c->staging ? 0 : atr_get32(h + ATR_B_RECORDS);
				c->end = c->lim < avail ? c->lim : avail;
			}
			c->pos = ATR_BLOCK_HEADER_SIZE;
			c->nrec = 0;
			c->loaded = 1;
			c->apos = c->pos;
			c->alead = 0;
		}
		if (c->lazy) {
			int r = cur_next_lazy(f, c, ev);
			if (r)
				return r;
			continue;
		}
		if (c->pf)
			cur_ahead(f, c);
		uint64_t pos = c->pos;
		if (pos + 8 > c->end) {
			cur_block_done(c);
			continue;
		}
		const uint8_t *r = c->b + pos;
		uint64_t w0 = atr_get64(r);
		if (!w0) {
			if (c->staging) {
				cur_block_done(c);
				continue;
			}
			return cur_corrupt(f, c, "zero word inside a data block's records", 0);
		}
		unsigned type = (unsigned)(w0 & ATR_TYPE_MASK);
		unsigned flags = (unsigned)(w0 & ATR_FLAG_MASK);
		uint64_t need;
		if (type >= 1 && type <= ATR_T_CALL_LAST) {
			need = 8ULL * atr_record_words(type, flags);
		} else if (type == ATR_T_EXT && f->xcalls) {
			if (pos + 16 > c->lim)
				return cur_corrupt(f, c, "EXT record overruns the block; type ",
						   type);
			if (pos + 16 > c->end) {
				cur_block_done(c);
				continue;
			}
			need = 8ULL * atr_ext_words(atr_get64(r + 8), flags);
			if (!need)
				return cur_corrupt(f, c, "bad EXT record: call type or flags ",
						   (uint64_t)atr_get64(r + 8) | (uint64_t)flags
										    << 56);
		} else if (type >= ATR_T_THREAD_START) {
			if (pos + 16 > c->lim)
				return cur_corrupt(
				    f, c, "meta record header overruns the block; type ", type);
			if (pos + 16 > c->end) {
				cur_block_done(c);
				continue;
			}
			uint64_t len = atr_get64(r + 8) & 0xffffffffULL;
			need = 16 + ((len + 7) & ~7ULL);
		} else {
			return cur_corrupt(f, c, "unknown record type ", type);
		}
		if (pos + need > c->lim)
			return cur_corrupt(f, c, "record overruns the block; type ", type);
		if (pos + need > c->end) {
			/* cut short by the end of the file */
			cur_block_done(c);
			continue;
		}
		c->pos = pos + need;
		c->nrec++;
		c->alead -= c->alead > 0;
		uint64_t ts = cur_ts(c, w0 >> ATR_TS_SHIFT);
		if (type >= ATR_T_THREAD_START) {
			int m = ev_meta(f, c, ev, type, flags, ts, atr_get64(r + 8), r + 16);
			if (m)
				return m;
			continue;
		}
		if (type == ATR_T_EXT) {
			unsigned xt = (unsigned)atr_get64(r + 8), k = 2 + atr_xcall_words(xt);
			uint64_t stack = 0, dur = 0;
			if (flags & ATR_FLAG_STACK)
				stack = atr_get64(r + 8 * k++);
			if (flags & ATR_FLAG_TIMED)
				dur = atr_get64(r + 8 * k);
			ev_ext(f, c, ev, xt, flags, ts, r + 16, stack, dur);
			return 1;
		}
		/* optional words: slack (WIDE), stack id (STACK), duration */
		unsigned k = atr_call_words(type);
		uint64_t slack_w = 0, stack = 0, dur = 0;
		if (flags & ATR_FLAG_WIDE)
			slack_w = atr_get64(r + 8 * k++);
		if (flags & ATR_FLAG_STACK)
			stack = atr_get64(r + 8 * k++);
		if (flags & ATR_FLAG_TIMED)
			dur = atr_get64(r + 8 * k);
		unsigned shape = atr_call_args(type);
		uint64_t a = atr_get64(r + 8), size = 0, slack = 0, x = 0, y = 0;
		unsigned cb = 0;
		if (shape != ATR_ARGS_PTR) {
			if (f->chunk_flags) {
				cb = (unsigned)(a & ATR_CHUNK_MASK);
				a &= ~(uint64_t)ATR_CHUNK_MASK;
			}
			uint64_t sw = atr_get64(r + 16);
			if (flags & ATR_FLAG_WIDE) {
				size = sw;
				slack = slack_w;
			} else {
				size = sw & ATR_SIZE_MASK;
				slack = sw >> ATR_SIZE_BITS;
				if (slack == ATR_SLACK_NARROW_UNKNOWN)
					slack = UINT64_MAX;
			}
			if (shape != ATR_ARGS_SIZE)
				x = atr_get64(r + 24);
			if (shape == ATR_ARGS_OLD_NMEMB)
				y = atr_get64(r + 32);
		}
		ev_call(f, c, ev, type, flags, ts, a, cb, size, slack, x, y, stack, dur);
		return 1;
	}
}

/* cur_next plus the realloc split: a realloc whose old block dies becomes
 * a release at its start stamp and the realloc at its end stamp. */
static inline __attribute__((always_inline)) int cur_next_ev(atr_file *f, struct atr_cur *c,
							     struct atr_event *ev)
{
	if (c->has_stash) {
		*ev = c->stash;
		c->has_stash = 0;
		return 1;
	}
	int r = cur_next(f, c, ev);
	unsigned shape = r > 0 ? atr_call_args(ev->type) : 0;
	if (r <= 0 || (shape != ATR_ARGS_OLD && shape != ATR_ARGS_OLD_NMEMB))
		return r;
	uint64_t end = ev->ts + ev->duration;
	if (end < ev->ts)
		end = ev->ts;
	if (c->prev_ts < end)
		c->prev_ts = end; /* the thread's next record comes after it */
	int released = ev->ptr && ev->ret != ev->ptr && (ev->ret || ev->size == 0);
	if (!released) {
		ev->ts = end;
		return 1;
	}
	c->stash = *ev;
	c->stash.ts = end;
	c->has_stash = 1;
	struct atr_event rel;
	ev_clear(&rel);
	rel.type = ATR_EV_REALLOC_RELEASE;
	rel.thread = ev->thread;
	rel.tid = ev->tid;
	rel.ts = ev->ts;
	rel.ptr = ev->ptr;
	rel.resident_pages = ev->resident_pages; /* the old block's count, */
	rel.span_pages = ev->span_pages;	 /* on both events */
	*ev = rel;
	return 1;
}

static void apply_walk(atr_file *f, const struct atr_cur *cs, uint32_t n)
{
	uint64_t lost = 0, inv = 0, rec = 0, calls = 0, trunc = 0, last = 0;
	for (uint32_t i = 0; i < n; i++) {
		lost += cs[i].lost;
		inv += cs[i].inversions;
		rec += cs[i].records;
		calls += cs[i].calls;
		trunc += cs[i].trunc_records;
		if (cs[i].last_ts > last)
			last = cs[i].last_ts;
	}
	f->info.lost_records = f->info.header_lost + lost;
	f->info.clock_inversions = inv;
	f->info.records_hint = rec;
	f->info.calls = calls;
	f->info.truncated_records = trunc + f->trunc_calls;
	f->info.last_ts = last;
	f->info.walked = 1;
	f->records = rec;
	f->ncalls = calls;
}

static int walk(atr_file *f)
{
	if (f->info.walked)
		return ATR_OK;
	struct atr_cur c;
	struct atr_cur *all = calloc(f->nthr ? f->nthr : 1, sizeof(*all));
	if (!all) {
		snprintf(f->err, sizeof(f->err), "%s: out of memory", f->path);
		return ATR_E_NOMEM;
	}
	struct atr_event ev;
	for (uint32_t t = 0; t < f->nthr; t++) {
		cur_init(f, &c, t);
		int r;
		while ((r = cur_next(f, &c, &ev)) > 0)
			;
		cur_free(&c);
		if (r < 0) {
			free(all);
			return r;
		}
		all[t] = c;
	}
	apply_walk(f, all, f->nthr);
	free(all);
	return ATR_OK;
}

int atr_count_records(atr_file *f, uint64_t *count)
{
	int r = walk(f);
	if (r == ATR_OK && count)
		*count = f->records;
	return r;
}

int atr_count_calls(atr_file *f, uint64_t *count)
{
	int r = walk(f);
	if (r == ATR_OK && count)
		*count = f->ncalls;
	return r;
}

int atr_count_calls_quick(atr_file *f, uint64_t *count)
{
	if (!f->v2 || f->info.walked)
		return atr_count_calls(f, count);
	/* FRAMEs say how many calls they hold: decode only staging blocks */
	uint64_t n = 0;
	struct atr_cur c;
	struct atr_event ev;
	for (uint32_t t = 0; t < f->nthr; t++) {
		const struct atr_thr *th = &f->thr[t];
		for (uint64_t i = 0; i < th->n; i++) {
			const struct atr_sblk *sb = &f->stream[th->first + i];
			if (!sb->staging) {
				n += sb->calls;
				continue;
			}
			/* the cursor reads on to the thread's end: every
			 * block from here (several STAGING units with feature
			 * INFLIGHT), each once */
			cur_init(f, &c, t);
			c.si = i;
			int r;
			while ((r = cur_next(f, &c, &ev)) > 0)
				;
			cur_free(&c);
			if (r < 0)
				return r;
			n += c.calls;
			break;
		}
	}
	if (count)
		*count = n;
	return ATR_OK;
}

static int unit_cmp(const void *pa, const void *pb)
{
	const struct atr_unit_ref *a = pa, *b = pb;
	return cmp_u64(a->off, b->off);
}

int atr_read_units(const atr_file *f, struct atr_unit_ref **out, size_t *n)
{
	size_t k = 0, total = 0;
	for (uint32_t t = 0; t < f->nthr; t++)
		total += f->thr[t].n;
	struct atr_unit_ref *u = malloc((total ? total : 1) * sizeof(*u));
	if (!u)
		return ATR_E_NOMEM;
	for (uint32_t t = 0; t < f->nthr; t++)
		for (uint64_t i = 0; i < f->thr[t].n; i++) {
			const struct atr_sblk *sb = &f->stream[f->thr[t].first + i];
			u[k].off = sb->off;
			u[k++].staging = sb->staging;
		}
	qsort(u, k, sizeof(*u), unit_cmp);
	*out = u;
	*n = k;
	return ATR_OK;
}

/* ---- merge iterator ---------------------------------------------------- */

/* A heap entry: cursor t's head event's key (ts, thread), kept beside
 * its index so that the heap's comparisons load no event (xfreebench's
 * trace changes the root every few records). */
struct hent {
	uint64_t ts;
	uint32_t thr, t;
};

struct atr_iter {
	atr_file *f;
	uint32_t n;
	struct atr_cur *cur;
	struct atr_event *pend;	 /* n + 1 event buffers */
	struct atr_event **next; /* next event of each cursor (a pend buffer) */
	struct atr_event *spare; /* the buffer handed out last */
	struct hent *heap;	 /* the heads' keys, min by (ts, serial) */
	uint32_t hn;
	int narrow; /* atr_iter_next_calls was called: cursors decode no ring ahead */
	int started;
	int err; /* sticky */
	uint64_t seq;
	/* Merge fast path: the smallest key below the root (the root's
	 * smaller child), valid while the heap below the root is unchanged.
	 * A thread's next event that is still below it stays at the root
	 * without touching the heap (runs of one thread are the common case:
	 * mallocbench's two threads switch every 5 records on average). */
	int bvalid;
	uint64_t bts;
	uint32_t bthr;
	const struct atr_sel *sel; /* the caller's copy: see sel_copy */
	struct atr_sel sel_copy;
	uint32_t *serials;
};

static inline int heap_less(const struct hent *x, const struct hent *y)
{
	if (x->ts != y->ts)
		return x->ts < y->ts;
	return x->thr < y->thr;
}

/* The root's key after its cursor's head changed. */
static inline void heap_rekey(atr_iter *it)
{
	const struct atr_event *h = it->next[it->heap[0].t];
	it->heap[0].ts = h->ts;
	it->heap[0].thr = h->thread;
}

/* x placed at entry i and sifted down: the smaller child moves up into
 * the hole while it is below x (keys are unique: the thread is part of
 * it).  x comes in registers: a key just stored field by field and loaded
 * again whole waits for the stores (store-to-load forwarding fails: half
 * of heap_down's samples on xfreebench's trace). */
static void heap_down_x(struct atr_iter *it, uint32_t i, struct hent x)
{
	struct hent *h = it->heap;
	uint32_t n = it->hn;
	for (;;) {
		uint32_t l = 2 * i + 1, m = l;
		if (l >= n)
			break;
		if (l + 1 < n && heap_less(&h[l + 1], &h[l]))
			m = l + 1;
		if (!heap_less(&h[m], &x))
			break;
		h[i] = h[m];
		i = m;
	}
	h[i] = x;
}

static void heap_down(struct atr_iter *it, uint32_t i)
{
	heap_down_x(it, i, it->heap[i]);
}

int atr_iter_new(atr_file *f, atr_iter **out)
{
	if (!f || !out)
		return ATR_E_USAGE;
	*out = NULL;
	atr_iter *it = calloc(1, sizeof(*it));
	uint32_t n = f->nthr;
	if (it) {
		it->f = f;
		it->n = n;
		it->cur = calloc(n ? n : 1, sizeof(*it->cur));
		it->pend = calloc((size_t)n + 1, sizeof(*it->pend));
		it->next = calloc(n ? n : 1, sizeof(*it->next));
		it->heap = calloc(n ? n : 1, sizeof(*it->heap));
	}
	if (!it || !it->cur || !it->pend || !it->next || !it->heap) {
		atr_iter_free(it);
		snprintf(f->err, sizeof(f->err), "%s: out of memory", f->path);
		return ATR_E_NOMEM;
	}
	for (uint32_t t = 0; t < n; t++) {
		cur_init(f, &it->cur[t], t);
		it->next[t] = &it->pend[t];
	}
	it->spare = &it->pend[n];
	*out = it;
	return ATR_OK;
}

int atr_iter_new_sel(atr_file *f, const struct atr_sel *sel, atr_iter **out)
{
	int r = atr_iter_new(f, out);
	if (r < 0 || !sel)
		return r;
	atr_iter *it = *out;
	it->sel_copy = *sel;
	if (sel->nserials) {
		it->serials = malloc(sel->nserials * sizeof(*it->serials));
		if (!it->serials) {
			atr_iter_free(it);
			*out = NULL;
			snprintf(f->err, sizeof(f->err), "%s: out of memory", f->path);
			return ATR_E_NOMEM;
		}
		memcpy(it->serials, sel->serials, sel->nserials * sizeof(*it->serials));
		it->sel_copy.serials = it->serials;
	}
	it->sel = &it->sel_copy;
	for (uint32_t t = 0; t < it->n; t++)
		it->cur[t].sel = it->sel;
	return ATR_OK;
}

void atr_iter_set_prefetch(atr_iter *it, atr_prefetch_fn fn, void *ctx)
{
	for (uint32_t t = 0; it && t < it->n; t++) {
		it->cur[t].pf = fn;
		it->cur[t].pfctx = ctx;
	}
}

int atr_iter_set_helper(atr_iter *it)
{
	if (!it)
		return ATR_E_USAGE;
	atr_file *f = it->f;
	if (!f->v2 || f->v2_words || !(f->features & ATR_FEAT_ZSTD) || it->sel || f->za)
		return ATR_OK; /* nothing to help with, or helped already */
	if (!(f->za = za_new(f->base, f->fd, f->size)))
		return ATR_E_NOMEM;
	return ATR_OK;
}

int atr_iter_help(atr_iter *it)
{
	return it && it->f->za ? za_help(it->f->za) : 0;
}

void atr_iter_get_stats(const atr_iter *it, struct atr_iter_stats *st)
{
	memset(st, 0, sizeof(*st));
	for (uint32_t t = 0; it && t < it->n; t++) {
		st->blocks_skipped += it->cur[t].skipped_blocks;
		st->records_skipped += it->cur[t].skipped_records;
		st->blocks_decoded += it->cur[t].decoded_blocks;
	}
}

/* The next event of a cursor inside the iterator's selection. */
static inline __attribute__((always_inline)) int cur_next_sel(atr_file *f, struct atr_cur *c,
							      struct atr_event *ev)
{
	for (;;) {
		int r = cur_next_ev(f, c, ev);
		if (r > 0 && (!c->sel || (ev->ts >= c->sel->from_ts && ev->ts <= c->sel->to_ts)))
			c->ew = ev->payload_len ? c->pw : -1; /* kept: the thread's live event */
		if (r <= 0 || !c->sel)
			return r;
		if (ev->ts > c->sel->to_ts) {
			/* the thread's later events are later still: its
			 * remaining blocks are never read */
			const struct atr_thr *t = &f->thr[c->t];
			for (; c->si < t->n; c->si++) {
				c->skipped_blocks++;
				c->skipped_records += f->stream[t->first + c->si].records;
			}
			return 0;
		}
		if (ev->ts >= c->sel->from_ts)
			return 1;
	}
}

static int sel_thread(const atr_file *f, const struct atr_sel *sel, uint32_t t)
{
	if (!sel || !sel->nserials)
		return 1;
	for (size_t i = 0; i < sel->nserials; i++)
		if (sel->serials[i] == f->thr[t].serial)
			return 1;
	return 0;
}

static int iter_start(atr_iter *it)
{
	it->started = 1;
	for (uint32_t t = 0; t < it->n; t++) {
		if (!sel_thread(it->f, it->sel, t)) {
			const struct atr_thr *th = &it->f->thr[t];
			it->cur[t].skipped_blocks += th->n;
			for (uint64_t k = 0; k < th->n; k++)
				it->cur[t].skipped_records += it->f->stream[th->first + k].records;
			continue;
		}
		int r = cur_next_sel(it->f, &it->cur[t], it->next[t]);
		if (r < 0)
			return r;
		if (r > 0)
			it->heap[it->hn++] = (struct hent){it->next[t]->ts, it->next[t]->thread, t};
	}
	for (uint32_t i = it->hn / 2; i-- > 0;)
		heap_down(it, i);
	return ATR_OK;
}

/* The key (ts, serial) below the bound (bts, bthr)? */
static inline int key_below(uint64_t ts, uint32_t thr, uint64_t bts, uint32_t bthr)
{
	return ts < bts || (ts == bts && thr < bthr);
}

/* The bound a head stays the smallest below: the key of the heap's
 * second smallest (hn > 1), kept until the heap changes. */
static inline void iter_bound(atr_iter *it)
{
	if (it->bvalid)
		return;
	const struct hent *m = &it->heap[1];
	if (it->hn > 2 && heap_less(&it->heap[2], m))
		m = &it->heap[2];
	it->bts = m->ts;
	it->bthr = m->thr;
	it->bvalid = 1;
}

int atr_iter_next_ref(atr_iter *it, const struct atr_event **out)
{
	if (!it || !out)
		return ATR_E_USAGE;
	if (it->err)
		return it->err;
	if (!it->started) {
		int r = iter_start(it);
		if (r < 0)
			return it->err = r;
	}
	if (!it->hn) {
		if (it->started != 2) {
			it->started = 2;
			if (!it->sel) /* a partial walk says nothing about the file */
				apply_walk(it->f, it->cur, it->n);
		}
		return 0;
	}
	/* hand out the root's buffer, decode its thread's next event into
	 * the buffer handed out last time (no copy of the event) */
	uint32_t t = it->heap[0].t;
	if (it->cur[t].hlight) {
		/* a light head (atr_iter_next_calls): its event now, with the
		 * same key (its record is the ring's next) */
		it->cur[t].hlight = 0;
		int r = cur_next_sel(it->f, &it->cur[t], it->next[t]);
		if (r <= 0)
			return it->err = r < 0 ? r : ATR_E_RECORD;
	}
	struct atr_event *ev = it->next[t];
	ev->seq = it->seq; /* synthetic events share the next record's seq */
	if (ev->type != ATR_EV_REALLOC_RELEASE)
		it->seq++;
	it->next[t] = it->spare;
	it->spare = ev;
	int r = cur_next_sel(it->f, &it->cur[t], it->next[t]);
	if (r < 0)
		return it->err = r;
	*out = ev;
	if (r > 0)
		heap_rekey(it);
	if (r > 0 && it->hn > 1) {
		iter_bound(it);
		const struct atr_event *x = it->next[t];
		if (key_below(x->ts, x->thread, it->bts, it->bthr))
			return 1; /* still the smallest: the heap is unchanged */
	}
	if (r == 0)
		it->heap[0] = it->heap[--it->hn];
	if (it->hn > 1)
		heap_down(it, 0);
	it->bvalid = 0;
	return 1;
}

int atr_iter_next(atr_iter *it, struct atr_event *ev)
{
	if (!it || !ev)
		return ATR_E_USAGE;
	const struct atr_event *p;
	int r = atr_iter_next_ref(it, &p);
	if (r > 0)
		*ev = *p;
	return r;
}

/* ---- the narrow path (atr_iter_next_calls) ---------------------------- */

/* A full event as a compact record, if it is one (a call, or a release,
 * without a resident count). */
static inline int call_of_event(const struct atr_event *ev, struct atr_call *o)
{
	if (!((ev->type >= 1 && ev->type <= ATR_T_CALL_LAST) ||
	      ev->type == ATR_EV_REALLOC_RELEASE) ||
	    ev->span_pages)
		return 0;
	atr_event_call(ev, o);
	return 1;
}

/* A run of compact records being written (cur_run): the output, the
 * bound, and the thread's counters while they stay in registers. */
struct run {
	struct atr_call *o;
	size_t n, room;
	uint64_t bts;
	uint32_t bthr;
	/* serial | tid << 32 (struct atr_call's thread, tid): stored and
	 * loaded whole (two 4-byte stores read back as one 8-byte load wait
	 * for the stores: a fifth of cur_run's samples on xfreebench) */
	uint64_t thr;
	uint64_t prev, last, inv, taken;
};

/* The call record q as compact records (cur_next_lazy, cur_next_ev and
 * ev_call's work), if its key stays below the bound and there is room
 * (a realloc that releases its old block takes two): 1, else 0 and
 * nothing changed. */
static inline __attribute__((always_inline)) int run_take(struct run *u, const struct v2_rec *q)
{
	unsigned type = q->type;
	uint64_t qts = q->ts, ts = qts < u->prev ? u->prev : qts;
	unsigned shape = atr_call_args(type);
	int rea = shape == ATR_ARGS_OLD || shape == ATR_ARGS_OLD_NMEMB;
	uint64_t tend = ts;
	if (rea) {
		tend = ts + q->dur;
		if (tend < ts)
			tend = ts;
	}
	if (!key_below(tend, (uint32_t)u->thr, u->bts, u->bthr))
		return 0;
	int released = rea && q->x && q->a != q->x && (q->a || q->size == 0);
	if (released && u->n + 2 > u->room)
		return 0;
	u->inv += qts < u->prev;
	u->prev = ts;
	if (ts > u->last)
		u->last = ts;
	u->taken++;
	unsigned flags = q->v1b & ATR_FLAG_MASK;
	struct atr_call *e = &u->o[u->n++];
	e->ts = ts;
	memcpy(&e->thread, &u->thr, 8);
	e->type = (uint8_t)type;
	e->flags = (uint8_t)flags;
	e->stack_id = (uint32_t)q->stack;
	e->duration = q->dur;
	e->err = 0;
	e->nmemb = e->align = 0;
	if (shape == ATR_ARGS_PTR) {
		e->ptr = q->a;
		e->ret = e->size = e->chunk_flags = 0;
		e->usable = 0;
		return 1;
	}
	e->ret = q->a;
	e->ptr = 0;
	e->chunk_flags = (uint8_t)q->cb;
	e->size = q->size;
	uint64_t slack = q->slack;
	if (!(flags & ATR_FLAG_WIDE) && slack == ATR_SLACK_NARROW_UNKNOWN)
		slack = UINT64_MAX;
	e->usable = 0;
	if (shape == ATR_ARGS_ALIGN_OUT && !e->ret)
		e->err = (int32_t)(uint32_t)slack;
	else if (e->ret)
		e->usable =
		    slack == UINT64_MAX || e->size + slack < e->size ? UINT64_MAX : e->size + slack;
	switch (shape) {
	case ATR_ARGS_NMEMB:
		e->nmemb = q->x;
		break;
	case ATR_ARGS_ALIGN:
	case ATR_ARGS_ALIGN_OUT:
		e->align = q->x;
		break;
	case ATR_ARGS_OLD:
		e->ptr = q->x;
		break;
	case ATR_ARGS_OLD_NMEMB:
		e->ptr = q->x;
		e->nmemb = q->y;
		break;
	default:
		break;
	}
	if (!rea)
		return 1;
	/* cur_next_ev's realloc split */
	if (u->prev < tend)
		u->prev = tend;
	e->ts = tend;
	if (!released)
		return 1;
	u->o[u->n] = *e;
	*e = (struct atr_call){.type = ATR_EV_REALLOC_RELEASE,
			       .thread = (uint32_t)u->thr,
			       .tid = (uint32_t)(u->thr >> 32),
			       .ts = ts,
			       .ptr = q->x};
	u->n++;
	return 1;
}

/* The narrow decoder's state while it runs (run_loop): the frame's
 * decoder state, the run's output and counters, all in registers. */
struct nar {
	const uint8_t *p;
	uint64_t prev_ts, base, fbase, cmask;
	uint64_t *win; /* the address cache (struct v2_state) */
	unsigned wh;
	uint64_t v1room; /* v1 bytes the frame may still decode to */
	struct atr_call *o, *oend;
	uint64_t tlim; /* a record is taken while its (end) stamp <= tlim */
	uint64_t prev, last, inv;
	uint64_t thr;	/* thread | tid << 32 (struct atr_call's order) */
	uint32_t taken; /* records decoded (and taken) */
};

/* get_var_f(b, 1) for the narrow decoder: a varint of up to 8 bytes; a
 * longer one sets *odd (the record is left to v2_dec_rec_f). */
static inline __attribute__((always_inline)) uint64_t nar_var(const uint8_t **pp, unsigned *odd)
{
	const uint8_t *p = *pp;
	uint64_t w;
	memcpy(&w, p, 8); /* little-endian hosts only (atr_v2.h) */
	if (!(w & 0x80)) {
		*pp = p + 1;
		return w & 0x7f;
	}
	uint64_t stop = ~w & 0x8080808080808080ULL;
	if (__builtin_expect(!stop, 0)) {
		*odd = 1;
		return 0;
	}
	unsigned bits = (unsigned)__builtin_ctzll(stop) + 1; /* 8 * bytes */
	*pp = p + (bits >> 3);
	return var_gather(w, bits);
}

/* A default-flag call record of type T (a constant: each type gets its own
 * copy, without the tests of the others) at z->p (its tag; V2_REC_MAX
 * bytes at least before the frame's end), decoded as v2_dec_rec_f does
 * and written as run_take would.  Its checks are ORed into one test at the
 * end, before the decoder's state changes: a record that fails any of
 * them is left undecoded (returns 0) to cur_fill, which gives the same
 * record or the same error.  Returns 1 taken, -1 decoded but not taken
 * (the bound, no room for a realloc's two records: written to the ring's
 * next entry, as cur_fill would decode it). */
static inline __attribute__((always_inline)) int nar_rec(struct atr_cur *c, struct nar *z,
							 const unsigned T, unsigned hi, int pf)
{
	const unsigned shape = atr_call_args(T);
	const int rea = shape == ATR_ARGS_OLD || shape == ATR_ARGS_OLD_NMEMB;
	const uint8_t *p = z->p + 1;
	unsigned flags = c->vs.dflt[T], odd = 0;
	uint64_t qts = z->prev_ts + (uint64_t)unzz(nar_var(&p, &odd));
	odd |= qts > ATR_TS_MASK;
	uint64_t a, size = 0, slack = 0, x = 0, y = 0, stack = 0, dur = 0;
	unsigned cb = 0;
	if (hi) {
		a = z->win[z->wh + ((hi - 1) & (V2_CACHE - 1))];
		odd |= (hi > V2_CACHE) | !a;
	} else {
		uint64_t v = nar_var(&p, &odd);
		a = v ? (T == ATR_T_FREE ? z->fbase : z->base) + (uint64_t)unzz(v - 1) : 0;
	}
	if (T != ATR_T_FREE) {
		size = nar_var(&p, &odd);
		uint64_t f = nar_var(&p, &odd);
		cb = (unsigned)(f & 3) << 1;
		odd |= (size > ATR_SIZE_MASK) | ((f >> 2) > 0x1ffff) | ((a & z->cmask) != 0) |
		       ((cb & ~z->cmask) != 0);
		slack = (uint16_t)(slack_pred(size, cb, z->cmask) + (uint16_t)unzz(f >> 2));
		if (rea) {
			uint64_t v = nar_var(&p, &odd);
			if (v == 0) {
				x = 0;
			} else if (v < V2_SEC_DELTA) {
				x = z->win[z->wh + (unsigned)(v - V2_SEC_CACHE)];
				odd |= !x;
			} else {
				x = z->base + (uint64_t)unzz(v - V2_SEC_DELTA);
			}
			if (T == ATR_T_REALLOCARRAY)
				y = nar_var(&p, &odd);
		} else if (shape != ATR_ARGS_SIZE) {
			x = nar_var(&p, &odd);
		}
	}
	if (flags & ATR_FLAG_STACK)
		stack = nar_var(&p, &odd);
	if (flags & ATR_FLAG_TIMED)
		dur = nar_var(&p, &odd);
	size_t need = c->vs.dneed[T];
	odd |= need > z->v1room;
	/* run_take: the bound, the room */
	uint64_t ts = qts < z->prev ? z->prev : qts, tend = ts;
	if (rea) {
		tend = ts + dur;
		if (tend < ts)
			tend = ts;
	}
	int released = rea && x && a != x && (a || size == 0);
	if (__builtin_expect(odd, 0))
		return 0;
	int keep = tend > z->tlim;
	if (rea)
		keep |= released && z->oend - z->o < 2;
	/* decoded: the decoder's state moves on */
	z->p = p;
	z->prev_ts = qts;
	z->v1room -= need;
	if (a) {
		if (T == ATR_T_FREE)
			z->fbase = a;
		else
			z->base = a;
		cache_use_w(z->win, &z->wh, (int)hi - 1, a);
	}
	if (pf) {
		if (a)
			c->pf(c->pfctx, a);
		if (rea && x && x != a)
			c->pf(c->pfctx, x);
	}
	if (__builtin_expect(keep, 0)) {
		/* not taken (the thread's next head): to the ring, as
		 * cur_fill would decode it (the fields a call has: payload
		 * and w are a meta or EXT record's) */
		struct v2_rec *q = &c->ring[(c->rt + z->taken) & (CUR_RING - 1)];
		q->ts = qts;
		q->v1b = T | flags;
		q->type = T;
		q->cb = cb;
		q->a = a;
		q->size = size;
		q->slack = slack;
		q->x = x;
		q->y = y;
		q->stack = stack;
		q->dur = dur;
		return -1;
	}
	z->taken++;
	z->inv += qts < z->prev;
	if (ts > z->last)
		z->last = ts;
	z->prev = tend; /* >= ts */
	struct atr_call *e = z->o++;
	e->ts = tend;
	memcpy(&e->thread, &z->thr, 8);
	e->stack_id = (uint32_t)stack;
	e->duration = dur;
	e->type = (uint8_t)T;
	e->flags = (uint8_t)flags;
	e->chunk_flags = (uint8_t)cb;
	e->err = 0;
	e->size = size;
	e->nmemb = shape == ATR_ARGS_NMEMB ? x : shape == ATR_ARGS_OLD_NMEMB ? y : 0;
	e->align = shape == ATR_ARGS_ALIGN || shape == ATR_ARGS_ALIGN_OUT ? x : 0;
	if (shape == ATR_ARGS_PTR) {
		e->ptr = a;
		e->ret = 0;
		e->usable = 0;
		return 1;
	}
	e->ptr = rea ? x : 0;
	e->ret = a;
	/* a narrow slack (default flags are never WIDE) */
	e->usable = !a ? 0 : slack == ATR_SLACK_NARROW_UNKNOWN ? UINT64_MAX : size + slack;
	if (shape == ATR_ARGS_ALIGN_OUT && !a)
		e->err = slack == ATR_SLACK_NARROW_UNKNOWN ? -1 : (int32_t)slack;
	if (rea && released) {
		/* cur_next_ev's realloc split: the release at the start */
		*z->o++ = *e;
		*e = (struct atr_call){.type = ATR_EV_REALLOC_RELEASE,
				       .thread = (uint32_t)z->thr,
				       .tid = (uint32_t)(z->thr >> 32),
				       .ts = ts,
				       .ptr = x};
	}
	return 1;
}

/* run_direct's loop, pf a constant (with or without the prefetch hook):
 * 1 if it stopped at a record it decoded but did not take (now the ring's
 * next: the bound, or no room for a realloc's two records), else 0. */
static inline __attribute__((always_inline)) int run_loop(struct atr_cur *c, struct run *u, int pf)
{
	struct v2_state *s = &c->vs;
	struct nar z = {.p = c->rb.p,
			.prev_ts = s->prev_ts,
			.base = s->base,
			.fbase = s->fbase,
			.cmask = s->cmask,
			.win = s->win,
			.wh = s->wh,
			.v1room = c->lim - c->v1used,
			.o = u->o + u->n,
			.oend = u->o + u->room,
			.prev = u->prev,
			.last = u->last,
			.thr = u->thr};
	/* key_below(ts, serial, bts, bthr) as one comparison */
	if ((uint32_t)u->thr < u->bthr)
		z.tlim = u->bts;
	else if (u->bts)
		z.tlim = u->bts - 1;
	else
		return 0; /* nothing is taken */
	if (c->rb.end - z.p < V2_REC_MAX)
		return 0;
	const uint8_t *safe = c->rb.end - V2_REC_MAX;
	int kept = 0;
	while (z.o < z.oend && z.p <= safe) {
		unsigned tag = *z.p;
		int r;
		switch (tag & 0xfu) {
#define NAR_CASE(NAME, name, type, op, args, ret, params)                                          \
	case type:                                                                                 \
		r = nar_rec(c, &z, type, tag >> 4, pf);                                            \
		break;
			ATR_CALLS(NAR_CASE)
#undef NAR_CASE
		default:
			r = 0;
			break;
		}
		if (r <= 0) {
			kept = r < 0;
			break;
		}
	}
	uint32_t k = z.taken + kept;
	s->prev_ts = z.prev_ts;
	s->base = z.base;
	s->fbase = z.fbase;
	s->wh = z.wh;
	c->rb.p = z.p;
	c->v1used = c->lim - z.v1room;
	c->ncalls_dec += k;
	c->nrec += k;
	c->rh = c->rt + z.taken;
	c->rt += k; /* the record kept, if any */
	u->taken += z.taken;
	u->inv += z.inv;
	u->prev = z.prev;
	u->last = z.last;
	u->n = (size_t)(z.o - u->o);
	return kept;
}

/* Records of a lazy frame decoded straight into the run (no ring), while
 * they are calls with default flags at least V2_REC_MAX bytes before the
 * frame's end that decode and are taken (nar_rec); cur_fill decodes the
 * others into the ring. */
static int run_direct(struct atr_cur *c, struct run *u)
{
	if (c->rb.end - c->rb.p < V2_REC_MAX || (*c->rb.p & 0xfu) - 1u >= ATR_T_CALL_LAST)
		return 0;
	if (c->pf)
		return run_loop(c, u, 1);
	return run_loop(c, u, 0);
}

/* Compact records of cursor c's v2 frame (after the head handed out),
 * from its ring and, once the ring is empty, straight from the frame
 * (run_direct): the calls whose key stays below (bts, bthr), as
 * cur_next_ev and ev_call would make their events.  Stops at anything
 * else (meta and extended records, a RESIDENT count waiting, the frame's
 * end or a record that does not decode), leaving it to cur_next.  Returns
 * the records written (<= room); *seq counts the calls among them. */
static size_t cur_run(atr_file *f, struct atr_cur *c, struct atr_call *o, size_t room, uint64_t bts,
		      uint32_t bthr, uint64_t *seq)
{
	struct run u = {.o = o,
			.room = room,
			.bts = bts,
			.bthr = bthr,
			.thr = f->thr[c->t].serial | (uint64_t)c->tid << 32,
			.prev = c->prev_ts,
			.last = c->last_ts};
	while (u.n < room && !c->res_pending) {
		if (c->rh == c->rt) {
			if (c->rdone)
				break;
			/* stopped at a record run_take would not take either */
			if (run_direct(c, &u) || u.n == room)
				break;
			cur_fill(c);
			if (c->rh == c->rt)
				break; /* the frame's end, or a bad record */
		}
		uint32_t rh = c->rh, end = c->rdone ? c->rt : c->rt - c->ahead;
		if (rh == end)
			break;
		while (rh != end && u.n < room) {
			const struct v2_rec *q = &c->ring[rh & (CUR_RING - 1)];
			if (q->type - 1 >= ATR_T_CALL_LAST || !run_take(&u, q))
				break;
			rh++;
		}
		int all = rh == end;
		c->rh = rh;
		if (!all)
			break;
		if (c->ahead)
			cur_fill(c);
	}
	c->prev_ts = u.prev;
	c->last_ts = u.last;
	c->inversions += u.inv;
	c->records += u.taken;
	c->calls += u.taken;
	*seq += u.taken;
	return u.n;
}

/* The thread's next head as a light head, if its next record is a call
 * that cur_run takes as it is (not a realloc, which may split, nor after
 * a RESIDENT record): only the key the heap orders by (cur_next's clamped
 * stamp and the thread) goes into the head event; the record stays the
 * ring's next, for cur_run (atr_iter_next_calls) or, should the head be
 * handed out as an event, cur_next_sel (atr_iter_next_ref).  A thread
 * switch then costs no event (xfreebench's trace switches threads every
 * few records).  1 done, else 0 (cur_next_sel makes the event). */
static inline int cur_head_light(const atr_file *f, struct atr_cur *c, struct atr_event *head)
{
	if (!c->loaded || !c->lazy || c->has_stash || c->res_pending || c->sel)
		return 0;
	if (c->rh == c->rt) {
		if (c->rdone)
			return 0;
		cur_fill(c);
		if (c->rh == c->rt)
			return 0;
	}
	const struct v2_rec *q = &c->ring[c->rh & (CUR_RING - 1)];
	if (q->type - 1u >= ATR_T_CALL_LAST)
		return 0;
	unsigned shape = atr_call_args(q->type);
	if (shape == ATR_ARGS_OLD || shape == ATR_ARGS_OLD_NMEMB)
		return 0;
	head->ts = q->ts < c->prev_ts ? c->prev_ts : q->ts;
	head->thread = f->thr[c->t].serial;
	head->type = (uint8_t)q->type;
	c->ew = -1; /* as cur_next_sel for a call */
	c->hlight = 1;
	return 1;
}

int atr_iter_next_calls(atr_iter *it, struct atr_call *out, size_t cap, size_t *n,
			const struct atr_event **ev)
{
	if (!it || !out || !n || !ev)
		return ATR_E_USAGE;
	*n = 0;
	*ev = NULL;
	if (it->err)
		return it->err;
	atr_file *f = it->f;
	if (it->sel || f->info.sample_rate || !cap) {
		int r = atr_iter_next_ref(it, ev);
		if (r <= 0)
			*ev = NULL;
		return r;
	}
	if (!it->narrow) {
		it->narrow = 1;
		for (uint32_t t = 0; t < it->n; t++) {
			it->cur[t].ahead = 0;
			it->cur[t].batch = 1;
		}
	}
	if (!it->started) {
		int r = iter_start(it);
		if (r < 0)
			return it->err = r;
	}
	size_t k = 0;
	while (k < cap && it->hn) {
		uint32_t t = it->heap[0].t;
		struct atr_event *head = it->next[t];
		struct atr_cur *c = &it->cur[t];
		/* the bound: the smallest head of the other threads */
		uint64_t bts = UINT64_MAX;
		uint32_t bthr = UINT32_MAX;
		if (it->hn > 1) {
			iter_bound(it);
			bts = it->bts;
			bthr = it->bthr;
		}
		size_t got = 0;
		if (c->hlight) {
			/* the head is the ring's next record: cur_run takes it
			 * (the smallest key) and the run after it */
			got = cur_run(f, c, out + k, cap - k, bts, bthr, &it->seq);
			c->hlight = 0;
			if (!got) {
				/* not expected: its event, as atr_iter_next_ref does */
				int r = cur_next_sel(f, c, head);
				if (r <= 0) {
					it->err = r < 0 ? r : ATR_E_RECORD;
					if (!k)
						return it->err;
					*n = k;
					return 1;
				}
			}
		}
		if (got) {
			k += got;
		} else {
			if (!call_of_event(head, &out[k]))
				break; /* a full event: atr_iter_next_ref below */
			if (head->type != ATR_EV_REALLOC_RELEASE)
				it->seq++;
			k++;
			if (c->loaded && c->lazy && !c->has_stash)
				k += cur_run(f, c, out + k, cap - k, bts, bthr, &it->seq);
		}
		/* the thread's next event into the head's buffer, as
		 * atr_iter_next_ref does after handing one out (or its key
		 * alone: cur_head_light) */
		int r = cur_head_light(f, c, head) ? 1 : cur_next_sel(f, c, head);
		if (r < 0) {
			/* atr_iter_next_ref drops the event before the error */
			k--;
			it->err = r;
			if (!k)
				return r;
			*n = k;
			return 1;
		}
		struct hent x;
		if (r > 0) {
			x = (struct hent){head->ts, head->thread, t};
			if (it->hn > 1 && key_below(x.ts, x.thr, bts, bthr)) {
				it->heap[0] = x;
				continue; /* still the smallest */
			}
		} else {
			x = it->heap[--it->hn];
		}
		if (it->hn > 1)
			heap_down_x(it, 0, x);
		else
			it->heap[0] = x;
		it->bvalid = 0;
	}
	*n = k;
	if (k == cap)
		return 1;
	int r = atr_iter_next_ref(it, ev);
	if (r <= 0)
		*ev = NULL;
	if (r < 0 && !k)
		return r;
	return k || r > 0 ? 1 : 0;
}

void atr_iter_free(atr_iter *it)
{
	if (!it)
		return;
	for (uint32_t t = 0; it->cur && t < it->n; t++)
		cur_free(&it->cur[t]);
	free(it->serials);
	free(it->cur);
	free(it->pend);
	free(it->next);
	free(it->heap);
	free(it);
}

/* ---- listing ----------------------------------------------------------- */
struct atr_lent {
	char *path;
	uint64_t start;
	uint32_t pid, exec_seq;
};

static int lent_cmp(const void *pa, const void *pb)
{
	const struct atr_lent *a = pa, *b = pb;
	int c = cmp_u64(a->start, b->start);
	if (!c)
		c = cmp_u64(a->pid, b->pid);
	if (!c)
		c = cmp_u64(a->exec_seq, b->exec_seq);
	if (!c)
		c = strcmp(a->path, b->path);
	return c;
}

/* Sort key from the header; unreadable files sort first (key 0) and fail
 * properly when opened. */
static void lent_key(struct atr_lent *e)
{
	uint8_t h[ATR_H_EXEC_SEQ + 4];
	memset(h, 0, sizeof(h));
	int fd = open(e->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = pread(fd, h, sizeof(h), 0);
	close(fd);
	if (n != (ssize_t)sizeof(h) || memcmp(h, ATR_MAGIC, 8) != 0)
		return;
	e->start = atr_get64(h + ATR_H_START_REALTIME);
	e->pid = atr_get32(h + ATR_H_PID);
	e->exec_seq = atr_get32(h + ATR_H_EXEC_SEQ);
}

int atr_list(const char *path, char ***paths, size_t *n, char *errbuf, size_t errlen)
{
	if (!path || !paths || !n) {
		fmt_err(errbuf, errlen, "no path given");
		return ATR_E_USAGE;
	}
	*paths = NULL;
	*n = 0;
	struct stat st;
	if (stat(path, &st) < 0) {
		fmt_err(errbuf, errlen, "%s: %s", path, strerror(errno));
		return ATR_E_IO;
	}
	if (!S_ISDIR(st.st_mode)) {
		char **one = malloc(sizeof(*one));
		if (!one || !(one[0] = strdup(path))) {
			free(one);
			fmt_err(errbuf, errlen, "%s: out of memory", path);
			return ATR_E_NOMEM;
		}
		*paths = one;
		*n = 1;
		return ATR_OK;
	}
	DIR *d = opendir(path);
	if (!d) {
		fmt_err(errbuf, errlen, "%s: %s", path, strerror(errno));
		return ATR_E_IO;
	}
	struct atr_lent *v = NULL;
	size_t nv = 0, cap = 0;
	int ret = ATR_OK;
	struct dirent *de;
	size_t plen = strlen(path);
	int slash = plen && path[plen - 1] == '/';
	while ((de = readdir(d)) != NULL) {
		size_t l = strlen(de->d_name);
		if (l < 5 || strcmp(de->d_name + l - 4, ".atr") != 0)
			continue;
		if (nv == cap) {
			size_t nc = cap ? cap * 2 : 16;
			struct atr_lent *nvv = realloc(v, nc * sizeof(*nvv));
			if (!nvv) {
				ret = ATR_E_NOMEM;
				break;
			}
			v = nvv;
			cap = nc;
		}
		struct atr_lent *e = &v[nv];
		memset(e, 0, sizeof(*e));
		if (asprintf(&e->path, "%s%s%s", path, slash ? "" : "/", de->d_name) < 0) {
			ret = ATR_E_NOMEM;
			break;
		}
		struct stat fst;
		if (stat(e->path, &fst) < 0 || !S_ISREG(fst.st_mode)) {
			free(e->path);
			continue;
		}
		nv++;
		lent_key(e);
	}
	closedir(d);
	char **out = NULL;
	if (ret == ATR_OK && nv == 0) {
		fmt_err(errbuf, errlen, "%s: no trace files (*.atr) in this directory", path);
		ret = ATR_E_NOTRACE;
	}
	if (ret == ATR_OK) {
		qsort(v, nv, sizeof(*v), lent_cmp);
		out = malloc(nv * sizeof(*out));
		if (!out)
			ret = ATR_E_NOMEM;
	}
	if (ret == ATR_E_NOMEM)
		fmt_err(errbuf, errlen, "%s: out of memory", path);
	if (ret != ATR_OK) {
		for (size_t i = 0; i < nv; i++)
			free(v[i].path);
		free(v);
		return ret;
	}
	for (size_t i = 0; i < nv; i++)
		out[i] = v[i].path;
	free(v);
	*paths = out;
	*n = nv;
	return ATR_OK;
}

void atr_list_free(char **paths, size_t n)
{
	if (!paths)
		return;
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
}

/* ---- stacks and modules -------------------------------------------------- */

struct atr_modev {
	uint64_t ts;
	uint32_t kind, serial;
	uint64_t start, size, bias;
	uint32_t bl, pl;
	const uint8_t *data; /* build-id then path (f->moddata) */
};

static int modev_cmp(const void *pa, const void *pb)
{
	const struct atr_modev *a = pa, *b = pb;
	int c = cmp_u64(a->ts, b->ts);
	if (!c)
		c = cmp_u64(a->serial, b->serial);
	/* a load and an unload at the same stamp: unload first */
	if (!c)
		c = cmp_u64(a->kind, b->kind);
	return c;
}

static uint64_t frames_hash(const uint64_t *ips, uint32_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ n;
	for (uint32_t i = 0; i < n; i++) {
		h ^= ips[i];
		h *= 0xff51afd7ed558ccdULL;
		h ^= h >> 32;
	}
	return h;
}

static int add_stack(atr_file *f, uint32_t id, const uint8_t *payload, uint32_t len, uint64_t ts)
{
	uint64_t idx;
	if (util_hmap_lookup(&f->stk_by_id, id, &idx)) {
		if (ts < f->stk[idx].ts)
			f->stk[idx].ts = ts;
		return 0; /* defined again by another thread (or a later life) */
	}
	uint32_t n = len / 8;
	if (f->nstk == f->capstk) {
		size_t nc = f->capstk ? f->capstk * 2 : 256;
		struct atr_stk *ns = realloc(f->stk, nc * sizeof(*ns));
		if (!ns)
			return ATR_E_NOMEM;
		f->stk = ns;
		f->capstk = nc;
	}
	if (f->nips + n > f->capips) {
		size_t nc = f->capips ? f->capips * 2 : 4096;
		while (nc < f->nips + n)
			nc *= 2;
		uint64_t *ni = realloc(f->ips, nc * sizeof(*ni));
		if (!ni)
			return ATR_E_NOMEM;
		f->ips = ni;
		f->capips = nc;
	}
	struct atr_stk *st = &f->stk[f->nstk];
	st->id = id;
	st->n = n;
	st->off = f->nips;
	st->ts = ts;
	st->canon = id;
	for (uint32_t i = 0; i < n; i++)
		f->ips[f->nips + i] = atr_get64(payload + 8 * i);
	uint64_t h = frames_hash(f->ips + f->nips, n), first;
	if (util_hmap_lookup(&f->stk_by_hash, h, &first)) {
		const struct atr_stk *o = &f->stk[first];
		if (o->n == n && !memcmp(f->ips + o->off, f->ips + st->off, n * sizeof(uint64_t)))
			st->canon = o->id;
	} else if (util_hmap_insert(&f->stk_by_hash, h, f->nstk, NULL) < 0) {
		return ATR_E_NOMEM;
	}
	if (util_hmap_insert(&f->stk_by_id, id, f->nstk, NULL) < 0)
		return ATR_E_NOMEM;
	f->nips += n;
	f->nstk++;
	return 0;
}

static int build_modules(atr_file *f, struct atr_modev *ev, size_t nev)
{
	if (nev)
		qsort(ev, nev, sizeof(*ev), modev_cmp);
	size_t nload = 0;
	for (size_t i = 0; i < nev; i++)
		nload += ev[i].kind == ATR_MOD_LOAD;
	f->mods = calloc(nload ? nload : 1, sizeof(*f->mods));
	if (!f->mods)
		return ATR_E_NOMEM;
	for (size_t i = 0; i < nev; i++) {
		const struct atr_modev *e = &ev[i];
		/* the newest still-mapped module with the same range */
		struct atr_module *same = NULL;
		for (size_t k = f->nmods; k-- > 0;) {
			struct atr_module *m = &f->mods[k];
			if (m->unload_ts == UINT64_MAX && m->start == e->start &&
			    m->size == e->size && m->bias == e->bias) {
				same = m;
				break;
			}
		}
		if (e->kind != ATR_MOD_LOAD) {
			if (same)
				same->unload_ts = e->ts;
			continue;
		}
		if (same && same->build_id_len == e->bl && !memcmp(same->build_id, e->data, e->bl))
			continue; /* written twice (two threads raced): one is enough */
		struct atr_module *m = &f->mods[f->nmods];
		char *path;
		if (e->pl) {
			path = malloc((size_t)e->pl + 1);
			if (path) {
				memcpy(path, e->data + e->bl, e->pl);
				path[e->pl] = 0;
			}
		} else {
			path = strdup(f->exe);
			m->main_program = 1;
		}
		if (!path)
			return ATR_E_NOMEM;
		m->path = path;
		m->start = e->start;
		m->size = e->size;
		m->bias = e->bias;
		m->build_id = e->data;
		m->build_id_len = e->bl;
		m->load_ts = e->ts;
		m->unload_ts = UINT64_MAX;
		f->nmods++;
	}
	return 0;
}

int atr_stacks_load(atr_file *f)
{
	if (!f)
		return ATR_E_USAGE;
	if (f->stacks_loaded)
		return f->stacks_loaded < 0 ? f->stacks_loaded : ATR_OK;
	struct atr_modev *mev = NULL;
	size_t nmev = 0, capmev = 0;
	int r = ATR_OK;
	struct atr_cur c;
	struct atr_event ev;
	for (uint32_t t = 0; t < f->nthr && r == ATR_OK; t++) {
		cur_init(f, &c, t);
		int k;
		while ((k = cur_next(f, &c, &ev)) > 0) {
			if (ev.type == ATR_T_STACK) {
				if (!ev.arg || !ev.payload_len || ev.payload_len % 8 ||
				    ev.payload_len > 8 * 4096u)
					continue; /* not a usable definition */
				r = add_stack(f, ev.arg, ev.payload, ev.payload_len, ev.ts);
				if (r)
					break;
			} else if (ev.type == ATR_T_MODULE) {
				if (ev.payload_len < ATR_MOD_DATA)
					continue;
				const uint8_t *p = ev.payload;
				uint32_t bl = atr_get32(p + ATR_MOD_BUILD_ID_LEN);
				uint32_t pl = atr_get32(p + ATR_MOD_PATH_LEN);
				if (bl > ATR_MOD_BUILD_ID_MAX || pl > ATR_MOD_PATH_MAX ||
				    ATR_MOD_DATA + (uint64_t)bl + pl > ev.payload_len)
					continue;
				if (nmev == capmev) {
					size_t nc = capmev ? capmev * 2 : 64;
					struct atr_modev *nm = realloc(mev, nc * sizeof(*nm));
					if (!nm) {
						r = ATR_E_NOMEM;
						break;
					}
					mev = nm;
					capmev = nc;
				}
				/* a copy: the payload's buffer is reused, and
				 * the module table keeps the build id */
				if (f->nmoddata % 64 == 0) {
					uint8_t **nd =
					    realloc(f->moddata, (f->nmoddata + 64) * sizeof(*nd));
					if (!nd) {
						r = ATR_E_NOMEM;
						break;
					}
					f->moddata = nd;
				}
				uint8_t *copy = malloc((size_t)bl + pl + 1);
				if (!copy) {
					r = ATR_E_NOMEM;
					break;
				}
				memcpy(copy, p + ATR_MOD_DATA, (size_t)bl + pl);
				f->moddata[f->nmoddata++] = copy;
				struct atr_modev *m = &mev[nmev++];
				m->ts = ev.ts;
				m->serial = ev.thread;
				m->kind = ev.arg == ATR_MOD_LOAD ? ATR_MOD_LOAD : ATR_MOD_UNLOAD;
				m->start = atr_get64(p + ATR_MOD_START);
				m->size = atr_get64(p + ATR_MOD_SIZE);
				m->bias = atr_get64(p + ATR_MOD_BIAS);
				m->bl = bl;
				m->pl = pl;
				m->data = copy;
			}
		}
		cur_free(&c);
		if (k < 0 && r == ATR_OK)
			r = k;
	}
	if (r == ATR_OK)
		r = build_modules(f, mev, nmev);
	free(mev);
	if (r == ATR_E_NOMEM)
		snprintf(f->err, sizeof(f->err), "%s: out of memory", f->path);
	f->stacks_loaded = r == ATR_OK ? 1 : r;
	return r;
}

size_t atr_stack_count(const atr_file *f)
{
	return f->nstk;
}

static const struct atr_stk *stk_of(const atr_file *f, uint32_t id)
{
	uint64_t idx;
	if (!id || !util_hmap_lookup(&f->stk_by_id, id, &idx))
		return NULL;
	return &f->stk[idx];
}

int atr_stack_get(const atr_file *f, uint32_t id, const uint64_t **ips, uint32_t *n)
{
	const struct atr_stk *s = stk_of(f, id);
	if (!s) {
		if (ips)
			*ips = NULL;
		if (n)
			*n = 0;
		return 0;
	}
	if (ips)
		*ips = f->ips + s->off;
	if (n)
		*n = s->n;
	return 1;
}

uint32_t atr_stack_canonical(const atr_file *f, uint32_t id)
{
	const struct atr_stk *s = stk_of(f, id);
	return s ? s->canon : 0;
}

size_t atr_module_count(const atr_file *f)
{
	return f->nmods;
}

const struct atr_module *atr_module_get(const atr_file *f, size_t i)
{
	return i < f->nmods ? &f->mods[i] : NULL;
}

long atr_module_find(const atr_file *f, uint64_t ip, uint32_t stack_id)
{
	const struct atr_stk *s = stk_of(f, stack_id);
	uint64_t ts = s ? s->ts : UINT64_MAX;
	long any = -1;
	for (size_t i = f->nmods; i-- > 0;) {
		const struct atr_module *m = &f->mods[i];
		if (ip - m->start >= m->size)
			continue;
		if (m->load_ts <= ts && ts < m->unload_ts)
			return (long)i;
		if (any < 0)
			any = (long)i;
	}
	return any;
}

void atr_mark_snapshot(void *buf, uint64_t off, size_t n)
{
	/* the copy is a snapshot, not a process that died */
	if (off <= ATR_H_STATUS && ATR_H_STATUS + 4 <= off + n) {
		uint8_t *st = (uint8_t *)buf + (ATR_H_STATUS - off);
		atr_put32(st, atr_get32(st) | ATR_STATUS_SNAPSHOT);
	}
}
