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
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#define ATR_ERRLEN 512

/* One entry of a thread's stream. */
struct atr_sblk {
	uint64_t idx; /* block index */
	int staging;
};

struct atr_thr {
	uint32_t serial, tid;
	uint64_t first, n; /* slice of f->stream */
};

struct atr_file {
	const uint8_t *base;
	size_t size;
	int mapped;
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
	char err[ATR_ERRLEN];
};

static inline uint32_t rd32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static inline uint64_t rd64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

const char *atr_errstr(int err)
{
	switch (err) {
	case ATR_OK:
		return "no error";
	case ATR_E_IO:
		return "I/O error";
	case ATR_E_MAGIC:
		return "not an alloctrace trace";
	case ATR_E_VERSION:
		return "unsupported format version";
	case ATR_E_HEADER:
		return "invalid file header";
	case ATR_E_FEATURES:
		return "unknown feature bits";
	case ATR_E_BLOCK:
		return "corrupt block";
	case ATR_E_RECORD:
		return "corrupt record";
	case ATR_E_NOMEM:
		return "out of memory";
	case ATR_E_NOTRACE:
		return "no trace files";
	case ATR_E_USAGE:
		return "bad argument";
	default:
		return "unknown error";
	}
}

static const char *const atr_names[32] = {
    [ATR_T_MALLOC] = "malloc",
    [ATR_T_FREE] = "free",
    [ATR_T_CALLOC] = "calloc",
    [ATR_T_REALLOC] = "realloc",
    [ATR_T_REALLOCARRAY] = "reallocarray",
    [ATR_T_MEMALIGN] = "memalign",
    [ATR_T_POSIX_MEMALIGN] = "posix_memalign",
    [ATR_T_ALIGNED_ALLOC] = "aligned_alloc",
    [ATR_T_VALLOC] = "valloc",
    [ATR_T_PVALLOC] = "pvalloc",
    [ATR_T_THREAD_START] = "thread_start",
    [ATR_T_THREAD_EXIT] = "thread_exit",
    [ATR_T_MARKER] = "marker",
    [ATR_T_CONTROL] = "control",
    [ATR_T_LOST] = "lost",
};

const char *atr_type_name(unsigned type)
{
	if (type < 32 && atr_names[type])
		return atr_names[type];
	if (type == ATR_EV_REALLOC_RELEASE)
		return "realloc_release";
	return "unknown";
}

unsigned atr_type_from_name(const char *name)
{
	if (!name)
		return 0;
	for (unsigned t = 1; t <= ATR_T_CALL_LAST; t++)
		if (strcmp(atr_names[t], name) == 0)
			return t;
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
	uint64_t seq, idx;
	uint32_t serial, tid, kind;
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
		c = cmp_u64(a->idx, b->idx);
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
	const uint8_t *h = f->base;
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
	in->version = rd32(h + ATR_H_VERSION);
	if (in->version != ATR_VERSION) {
		fmt_err(eb, el,
			"%s: unsupported trace format version %" PRIu32 " (this reader knows %u)",
			p, in->version, ATR_VERSION);
		return ATR_E_VERSION;
	}
	f->hs = rd32(h + ATR_H_HEADER_SIZE);
	if (f->hs < ATR_HEADER_SIZE || f->hs % 8 || f->hs > f->size) {
		fmt_err(eb, el, "%s: invalid header size %" PRIu32 " (file is %zu bytes)", p, f->hs,
			f->size);
		return ATR_E_HEADER;
	}
	in->features = rd64(h + ATR_H_FEATURES);
	if (in->features & ~(uint64_t)ATR_FEATURES_KNOWN) {
		fmt_err(eb, el,
			"%s: unknown feature bits 0x%" PRIx64 " (written by a newer alloctrace?)",
			p, (uint64_t)(in->features & ~(uint64_t)ATR_FEATURES_KNOWN));
		return ATR_E_FEATURES;
	}
	f->bs = rd32(h + ATR_H_BLOCK_SIZE);
	if (f->bs < ATR_BLOCK_SIZE_MIN || f->bs > ATR_BLOCK_SIZE_MAX || (f->bs & (f->bs - 1))) {
		fmt_err(eb, el,
			"%s: invalid block size %" PRIu32 " (must be a power of two in [%u, %u])",
			p, f->bs, ATR_BLOCK_SIZE_MIN, ATR_BLOCK_SIZE_MAX);
		return ATR_E_HEADER;
	}
	uint32_t clen = rd32(h + ATR_H_CMDLINE);
	if (clen > ATR_H_CMDLINE_MAX) {
		fmt_err(eb, el, "%s: invalid command line length %" PRIu32 " (max %u)", p, clen,
			(unsigned)ATR_H_CMDLINE_MAX);
		return ATR_E_HEADER;
	}
	in->block_size = f->bs;
	in->status = rd32(h + ATR_H_STATUS);
	in->pid = rd32(h + ATR_H_PID);
	in->ppid = rd32(h + ATR_H_PPID);
	in->exec_seq = rd32(h + ATR_H_EXEC_SEQ);
	in->start_realtime_ns = rd64(h + ATR_H_START_REALTIME);
	in->start_mono_ns = rd64(h + ATR_H_START_MONO);
	in->end_mono_ns = rd64(h + ATR_H_END_MONO);
	in->end_ticks = rd64(h + ATR_H_END_TICKS);
	in->header_lost = rd64(h + ATR_H_LOST);
	in->lost_records = in->header_lost;
	in->header_errno = rd32(h + ATR_H_ERRNO);
	in->untraced_calls = rd64(h + ATR_H_UNTRACED);
	in->file_size = f->size;

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
	uint64_t start_ticks = rd64(h + ATR_H_START_TICKS);
	uint64_t hint = rd64(h + ATR_H_TICKS_PER_SEC);
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

/* Build every thread's stream from the block headers. */
static int scan_blocks(atr_file *f, char *eb, size_t el)
{
	const char *p = f->path;
	uint64_t body = f->size - f->hs;
	f->nblocks = body / f->bs + (body % f->bs ? 1 : 0);
	struct atr_scan *sc = NULL;
	size_t nsc = 0, capsc = 0;
	uint8_t h[ATR_BLOCK_HEADER_SIZE];
	int ret = ATR_OK;

	for (uint64_t i = 0; i < f->nblocks; i++) {
		blk_header(f, i, h);
		uint32_t magic = rd32(h + ATR_B_MAGIC);
		if (!magic)
			continue;
		uint64_t off = blk_off(f, i);
		f->info.blocks++;
		if (magic != ATR_BLOCK_MAGIC) {
			fmt_err(eb, el,
				"%s: block %" PRIu64 " (offset 0x%" PRIx64
				"): bad block magic 0x%08" PRIx32,
				p, i, off, magic);
			ret = ATR_E_BLOCK;
			goto out;
		}
		uint32_t kind = rd32(h + ATR_B_KIND);
		if (kind == ATR_BLOCK_RETIRED)
			continue;
		if (kind != ATR_BLOCK_DATA && kind != ATR_BLOCK_STAGING) {
			fmt_err(eb, el,
				"%s: block %" PRIu64 " (offset 0x%" PRIx64
				"): unknown block kind %" PRIu32,
				p, i, off, kind);
			ret = ATR_E_BLOCK;
			goto out;
		}
		uint32_t serial = rd32(h + ATR_B_THREAD);
		if (!serial) {
			fmt_err(eb, el,
				"%s: block %" PRIu64 " (offset 0x%" PRIx64 "): thread serial 0", p,
				i, off);
			ret = ATR_E_BLOCK;
			goto out;
		}
		if (kind == ATR_BLOCK_DATA) {
			uint32_t used = rd32(h + ATR_B_USED);
			if (used > f->bs - ATR_BLOCK_HEADER_SIZE || used % 8) {
				fmt_err(eb, el,
					"%s: block %" PRIu64 " (offset 0x%" PRIx64
					"): invalid used size %" PRIu32 " (block size %" PRIu32 ")",
					p, i, off, used, f->bs);
				ret = ATR_E_BLOCK;
				goto out;
			}
			if (ATR_BLOCK_HEADER_SIZE + (uint64_t)used > blk_avail(f, i))
				f->info.truncated_blocks++;
			f->info.records_hint += rd32(h + ATR_B_RECORDS);
		}
		if (nsc == capsc) {
			size_t nc = capsc ? capsc * 2 : 64;
			struct atr_scan *ns = realloc(sc, nc * sizeof(*ns));
			if (!ns) {
				fmt_err(eb, el, "%s: out of memory", p);
				ret = ATR_E_NOMEM;
				goto out;
			}
			sc = ns;
			capsc = nc;
		}
		sc[nsc].seq = rd64(h + ATR_B_SEQ);
		sc[nsc].idx = i;
		sc[nsc].serial = serial;
		sc[nsc].tid = rd32(h + ATR_B_TID);
		sc[nsc].kind = kind;
		nsc++;
	}
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
		for (size_t k = i; k < j; k++) {
			if (!t->tid && sc[k].tid)
				t->tid = sc[k].tid;
			if (sc[k].kind == ATR_BLOCK_DATA) {
				if (have_data && sc[k].seq == last_seq) {
					fmt_err(
					    eb, el,
					    "%s: block %" PRIu64 " (offset 0x%" PRIx64
					    "): thread %" PRIu32
					    " has two data blocks with sequence number %" PRIu64,
					    p, sc[k].idx, blk_off(f, sc[k].idx), sc[k].serial,
					    sc[k].seq);
					ret = ATR_E_BLOCK;
					goto out;
				}
				/* sequence numbers start at 0: any gap is lost */
				uint64_t expect = have_data ? last_seq + 1 : 0;
				if (sc[k].seq > expect)
					f->info.lost_blocks += sc[k].seq - expect;
				have_data = 1;
				last_seq = sc[k].seq;
				f->stream[ns].idx = sc[k].idx;
				f->stream[ns].staging = 0;
				ns++;
			} else {
				/* sorted by seq: the last staging block wins
				 * (ties: the lowest index, the first seen) */
				if (!best_staging || sc[k].seq > best_staging->seq)
					best_staging = &sc[k];
			}
		}
		/* staging blocks other than the chosen one were superseded */
		for (size_t k = i; k < j; k++)
			if (sc[k].kind == ATR_BLOCK_STAGING && &sc[k] != best_staging)
				f->info.ignored_staging++;
		if (best_staging) {
			if (have_data && best_staging->seq <= last_seq) {
				f->info.ignored_staging++;
			} else {
				uint64_t expect = have_data ? last_seq + 1 : 0;
				if (best_staging->seq > expect)
					f->info.lost_blocks += best_staging->seq - expect;
				f->stream[ns].idx = best_staging->idx;
				f->stream[ns].staging = 1;
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
	if (f->size >= ATR_HEADER_SIZE) {
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
	free(f->cmdline);
	free(f->thr);
	free(f->tinfo);
	free(f->stream);
	free(f->path);
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

struct atr_cur {
	uint32_t t; /* thread index */
	uint32_t tid;
	uint64_t si; /* next stream entry to load */
	int loaded;  /* a block is current */
	int staging;
	uint64_t idx;	  /* current block */
	const uint8_t *b; /* its first byte */
	uint64_t pos;	  /* next record, block-relative */
	uint64_t end;	  /* readable end (file end or used/limit) */
	uint64_t lim;	  /* logical end: records may not cross it */
	uint64_t nrec;	  /* records decoded in the current block */
	uint64_t want;	  /* data block: header record count */
	uint64_t prev_ts;
	struct atr_event stash; /* a realloc waiting behind its release */
	int has_stash;
	/* statistics of this cursor's walk */
	uint64_t lost, inversions, records, calls, trunc_records, last_ts;
};

static void cur_init(const atr_file *f, struct atr_cur *c, uint32_t t)
{
	memset(c, 0, sizeof(*c));
	c->t = t;
	c->tid = f->thr[t].tid;
}

static int cur_corrupt(atr_file *f, const struct atr_cur *c, const char *what, uint64_t v)
{
	snprintf(f->err, sizeof(f->err),
		 "%s: block %" PRIu64 " (offset 0x%" PRIx64 "), record at block offset %" PRIu64
		 ": %s%" PRIu64,
		 f->path, c->idx, blk_off(f, c->idx), c->pos, what, v);
	return ATR_E_RECORD;
}

/* The block ended early because the file did: records the data block
 * header announced but which are missing are counted. */
static void cur_block_done(struct atr_cur *c)
{
	if (!c->staging && c->want > c->nrec)
		c->trunc_records += c->want - c->nrec;
	c->loaded = 0;
}

/* Decode the next record of the thread: 1 (ev filled), 0 end, < 0 error. */
static int cur_next(atr_file *f, struct atr_cur *c, struct atr_event *ev)
{
	const struct atr_thr *t = &f->thr[c->t];
	for (;;) {
		if (!c->loaded) {
			if (c->si >= t->n)
				return 0;
			const struct atr_sblk *sb = &f->stream[t->first + c->si++];
			c->idx = sb->idx;
			c->staging = sb->staging;
			c->b = f->base + blk_off(f, c->idx);
			uint64_t avail = blk_avail(f, c->idx);
			uint8_t h[ATR_BLOCK_HEADER_SIZE];
			blk_header(f, c->idx, h);
			c->lim = c->staging
				     ? f->bs
				     : ATR_BLOCK_HEADER_SIZE + (uint64_t)rd32(h + ATR_B_USED);
			c->want = c->staging ? 0 : rd32(h + ATR_B_RECORDS);
			c->end = c->lim < avail ? c->lim : avail;
			c->pos = ATR_BLOCK_HEADER_SIZE;
			c->nrec = 0;
			c->loaded = 1;
		}
		uint64_t pos = c->pos;
		if (pos + 8 > c->end) {
			cur_block_done(c);
			continue;
		}
		const uint8_t *r = c->b + pos;
		uint64_t w0 = rd64(r);
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
		} else if (type >= ATR_T_THREAD_START) {
			if (pos + 16 > c->lim)
				return cur_corrupt(
				    f, c, "meta record header overruns the block; type ", type);
			if (pos + 16 > c->end) {
				cur_block_done(c);
				continue;
			}
			uint64_t len = rd64(r + 8) & 0xffffffffULL;
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
		uint64_t ts = w0 >> ATR_TS_SHIFT;
		if (ts < c->prev_ts) {
			ts = c->prev_ts;
			c->inversions++;
		}
		c->prev_ts = ts;
		if (type >= ATR_T_THREAD_START && !atr_names[type])
			continue; /* unknown meta type: skipped (forward compatible) */

		memset(ev, 0, sizeof(*ev));
		ev->type = (uint8_t)type;
		ev->flags = (uint8_t)flags;
		ev->thread = t->serial;
		ev->ts = ts;
		if (ts > c->last_ts)
			c->last_ts = ts;
		c->records++;
		if (type <= ATR_T_CALL_LAST) {
			c->calls++;
			/* optional words: slack (WIDE), stack id (STACK), duration */
			unsigned k = atr_call_words(type);
			uint64_t slack_w = 0;
			if (flags & ATR_FLAG_WIDE)
				slack_w = rd64(r + 8 * k++);
			if (flags & ATR_FLAG_STACK)
				ev->stack_id = (uint32_t)rd64(r + 8 * k++);
			if (flags & ATR_FLAG_TIMED)
				ev->duration = rd64(r + 8 * k);
			if (type == ATR_T_FREE) {
				ev->ptr = rd64(r + 8);
			} else {
				ev->ret = rd64(r + 8);
				uint64_t sw = rd64(r + 16), slack;
				if (flags & ATR_FLAG_WIDE) {
					ev->size = sw;
					slack = slack_w;
				} else {
					ev->size = sw & ATR_SIZE_MASK;
					slack = sw >> ATR_SIZE_BITS;
					if (slack == ATR_SLACK_NARROW_UNKNOWN)
						slack = UINT64_MAX;
				}
				if (type == ATR_T_POSIX_MEMALIGN && !ev->ret) {
					ev->err = (int32_t)(uint32_t)slack;
				} else if (ev->ret) {
					if (slack == UINT64_MAX || ev->size + slack < ev->size)
						ev->usable = UINT64_MAX;
					else
						ev->usable = ev->size + slack;
				}
				switch (type) {
				case ATR_T_CALLOC:
					ev->nmemb = rd64(r + 24);
					break;
				case ATR_T_REALLOC:
					ev->ptr = rd64(r + 24);
					break;
				case ATR_T_REALLOCARRAY:
					ev->ptr = rd64(r + 24);
					ev->nmemb = rd64(r + 32);
					break;
				case ATR_T_MEMALIGN:
				case ATR_T_POSIX_MEMALIGN:
				case ATR_T_ALIGNED_ALLOC:
					ev->align = rd64(r + 24);
					break;
				default:
					break;
				}
			}
		} else {
			uint64_t w1 = rd64(r + 8);
			ev->arg = (uint32_t)(w1 >> 32);
			ev->payload_len = (uint32_t)w1;
			ev->payload = r + 16;
			if (type == ATR_T_THREAD_START && ev->arg)
				c->tid = ev->arg;
			if (type == ATR_T_LOST && ev->payload_len >= 8)
				c->lost += rd64(r + 16);
		}
		ev->tid = c->tid;
		return 1;
	}
}

/* cur_next plus the realloc split: a realloc whose old block dies becomes
 * a release at its start stamp and the realloc at its end stamp. */
static int cur_next_ev(atr_file *f, struct atr_cur *c, struct atr_event *ev)
{
	if (c->has_stash) {
		*ev = c->stash;
		c->has_stash = 0;
		return 1;
	}
	int r = cur_next(f, c, ev);
	if (r <= 0 || (ev->type != ATR_T_REALLOC && ev->type != ATR_T_REALLOCARRAY))
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
	memset(&rel, 0, sizeof(rel));
	rel.type = ATR_EV_REALLOC_RELEASE;
	rel.thread = ev->thread;
	rel.tid = ev->tid;
	rel.ts = ev->ts;
	rel.ptr = ev->ptr;
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
	f->info.truncated_records = trunc;
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

/* ---- merge iterator ---------------------------------------------------- */

struct atr_iter {
	atr_file *f;
	uint32_t n;
	struct atr_cur *cur;
	struct atr_event *pend; /* next event of each cursor */
	uint32_t *heap;		/* cursor indices, min by (ts, serial) */
	uint32_t hn;
	int started;
	int err; /* sticky */
	uint64_t seq;
};

static inline int heap_less(const struct atr_iter *it, uint32_t a, uint32_t b)
{
	const struct atr_event *x = &it->pend[a], *y = &it->pend[b];
	if (x->ts != y->ts)
		return x->ts < y->ts;
	return x->thread < y->thread;
}

static void heap_down(struct atr_iter *it, uint32_t i)
{
	for (;;) {
		uint32_t l = 2 * i + 1, m = i;
		if (l < it->hn && heap_less(it, it->heap[l], it->heap[m]))
			m = l;
		if (l + 1 < it->hn && heap_less(it, it->heap[l + 1], it->heap[m]))
			m = l + 1;
		if (m == i)
			return;
		uint32_t tmp = it->heap[i];
		it->heap[i] = it->heap[m];
		it->heap[m] = tmp;
		i = m;
	}
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
		it->pend = calloc(n ? n : 1, sizeof(*it->pend));
		it->heap = calloc(n ? n : 1, sizeof(*it->heap));
	}
	if (!it || !it->cur || !it->pend || !it->heap) {
		atr_iter_free(it);
		snprintf(f->err, sizeof(f->err), "%s: out of memory", f->path);
		return ATR_E_NOMEM;
	}
	for (uint32_t t = 0; t < n; t++)
		cur_init(f, &it->cur[t], t);
	*out = it;
	return ATR_OK;
}

static int iter_start(atr_iter *it)
{
	it->started = 1;
	for (uint32_t t = 0; t < it->n; t++) {
		int r = cur_next_ev(it->f, &it->cur[t], &it->pend[t]);
		if (r < 0)
			return r;
		if (r > 0)
			it->heap[it->hn++] = t;
	}
	for (uint32_t i = it->hn / 2; i-- > 0;)
		heap_down(it, i);
	return ATR_OK;
}

int atr_iter_next(atr_iter *it, struct atr_event *ev)
{
	if (!it || !ev)
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
			apply_walk(it->f, it->cur, it->n);
		}
		return 0;
	}
	uint32_t t = it->heap[0];
	*ev = it->pend[t];
	ev->seq = it->seq; /* synthetic events share the next record's seq */
	if (ev->type != ATR_EV_REALLOC_RELEASE)
		it->seq++;
	int r = cur_next_ev(it->f, &it->cur[t], &it->pend[t]);
	if (r < 0)
		return it->err = r;
	if (r == 0)
		it->heap[0] = it->heap[--it->hn];
	heap_down(it, 0);
	return 1;
}

void atr_iter_free(atr_iter *it)
{
	if (!it)
		return;
	free(it->cur);
	free(it->pend);
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
	e->start = rd64(h + ATR_H_START_REALTIME);
	e->pid = rd32(h + ATR_H_PID);
	e->exec_seq = rd32(h + ATR_H_EXEC_SEQ);
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
