/* atr_compact.c - see atr_compact.h. */
#define _GNU_SOURCE
#define ZSTD_STATIC_LINKING_ONLY
#include "atr_compact.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "atr_format.h"
#include "atr_reader.h"
#include "atr_v2.h"
#include "plat_cpus.h"
#include "util_io.h"

static int read_at(int fd, uint64_t off, void *dst, size_t len)
{
	return util_pread_full(fd, dst, len, off) == (ssize_t)len ? 0 : -1;
}

/* Bytes of records a reader reads from a staging block (up to the first
 * zero word or the block end), or -1 if it would call the block corrupt
 * (cur_next's rules in atr_reader.c). */
static long staging_used(const uint8_t *b, uint32_t bs, int xcalls)
{
	uint64_t pos = ATR_BLOCK_HEADER_SIZE;
	while (pos + 8 <= bs) {
		uint64_t w0 = atr_get64(b + pos), need;
		if (!w0)
			break;
		unsigned type = (unsigned)(w0 & ATR_TYPE_MASK);
		unsigned flags = (unsigned)(w0 & ATR_FLAG_MASK);
		if (type >= 1 && type <= ATR_T_CALL_LAST) {
			need = 8ULL * atr_record_words(type, flags);
		} else if ((type == ATR_T_EXT && xcalls) || type >= ATR_T_THREAD_START) {
			if (pos + 16 > bs)
				return -1;
			uint64_t w1 = atr_get64(b + pos + 8);
			need = type == ATR_T_EXT ? 8ULL * atr_ext_words(w1, flags)
						 : 16 + (((w1 & 0xffffffffULL) + 7) & ~7ULL);
			if (!need)
				return -1;
		} else {
			return -1;
		}
		if (pos + need > bs)
			return -1;
		pos += need;
	}
	return (long)(pos - ATR_BLOCK_HEADER_SIZE);
}

/* The FRAME header at h for a payload of plen bytes at h + 64 (zero
 * padded here to a multiple of 8): magic .. pid from the unit at from,
 * then seq, used and what meta says.  Returns the unit's length. */
static size_t frame_header(uint8_t *h, const uint8_t *from, uint64_t seq, uint32_t used,
			   const struct atr_v2_meta *m, size_t plen)
{
	size_t pad = (ATR_UNIT_ALIGN - plen % ATR_UNIT_ALIGN) % ATR_UNIT_ALIGN;
	memset(h + ATR_BLOCK_HEADER_SIZE + plen, 0, pad);
	memset(h, 0, ATR_BLOCK_HEADER_SIZE);
	memcpy(h, from, ATR_U_CSIZE); /* magic .. pid: thread, tid */
	atr_put32(h + ATR_B_KIND, ATR_BLOCK_FRAME);
	atr_put64(h + ATR_B_SEQ, seq);
	atr_put32(h + ATR_B_USED, used);
	atr_put32(h + ATR_B_RECORDS, m->records);
	atr_put32(h + ATR_U_CSIZE, (uint32_t)plen);
	atr_put64(h + ATR_U_FIRST_TS, m->first_ts);
	atr_put64(h + ATR_U_LAST_TS, m->last_ts);
	atr_put32(h + ATR_U_CALLS, m->calls);
	atr_put32(h + ATR_U_CHECK, atr_unit_check(h));
	return ATR_BLOCK_HEADER_SIZE + plen + pad;
}

struct cbuf {
	uint8_t *blk, *enc, *z;
	size_t ecap, zcap;
	ZSTD_CCtx *cc;
};

/* The staging block at off as a FRAME unit (header, payload, padding) in
 * c->z; its length, 0 if the block does not encode (left alone), -1 on a
 * read or zstd failure. */
static long staging_frame(int fd, uint64_t off, uint32_t bs, uint64_t features, struct cbuf *c)
{
	if (read_at(fd, off, c->blk, bs) < 0)
		return -1;
	long used = staging_used(c->blk, bs, (features & ATR_FEAT_XCALLS) != 0);
	if (used < 0)
		return 0;
	struct atr_v2_meta m = {0};
	size_t elen = 0;
	if (used) {
		elen = atr_v2_encode(c->blk + ATR_BLOCK_HEADER_SIZE, (size_t)used, features, c->enc,
				     c->ecap, &m);
		if (!elen)
			return 0;
	}
	uint8_t *h = c->z, *payload = c->z + ATR_BLOCK_HEADER_SIZE;
	size_t plen = elen;
	if (features & ATR_FEAT_ZSTD) {
		plen = ZSTD_compress2(c->cc, payload, c->zcap - ATR_BLOCK_HEADER_SIZE - 8, c->enc,
				      elen);
		if (ZSTD_isError(plen))
			return -1;
	} else {
		memcpy(payload, c->enc, elen);
	}
	return (long)frame_header(h, c->blk, atr_get64(c->blk + ATR_B_SEQ), (uint32_t)used, &m,
				  plen);
}

/* Copy the FRAME at off (header and padded payload). */
static int copy_frame(int in, int out, uint64_t off, struct cbuf *c)
{
	uint8_t h[ATR_BLOCK_HEADER_SIZE];
	if (read_at(in, off, h, sizeof h) < 0)
		return -1;
	size_t len =
	    ATR_BLOCK_HEADER_SIZE + ((atr_get32(h + ATR_U_CSIZE) + (size_t)ATR_UNIT_ALIGN - 1) &
				     ~(size_t)(ATR_UNIT_ALIGN - 1));
	if (len > c->zcap || read_at(in, off, c->z, len) < 0)
		return -1;
	return util_write_all(out, c->z, len);
}

/* Level 0: every FRAME as it is, each STAGING unit a reader reads as the
 * recorder would have flushed it (level 1).  1, 0 (a staging block a
 * reader would call damaged: the file is left alone), or a negative
 * atr_err with err set. */
static int copy_units(int in_fd, int out_fd, const struct atr_unit_ref *u, size_t n, uint32_t bs,
		      uint64_t features, struct cbuf *c, char *err, size_t errlen, const char *path,
		      const char *tmp)
{
	c->ecap = ATR_V2_ENC_BOUND((size_t)bs);
	/* frames are copied through c->z: merged ones too */
	c->zcap = ATR_BLOCK_HEADER_SIZE +
		  ZSTD_compressBound(ATR_V2_ENC_BOUND((size_t)atr_frame_used_max(bs))) + 8;
	c->blk = malloc(bs);
	c->enc = malloc(c->ecap);
	c->z = malloc(c->zcap);
	c->cc = ZSTD_createCCtx();
	if (!c->blk || !c->enc || !c->z || !c->cc) {
		snprintf(err, errlen, "%s: out of memory", path);
		return ATR_E_NOMEM;
	}
	ZSTD_CCtx_setParameter(c->cc, ZSTD_c_compressionLevel, 1);
	ZSTD_CCtx_setParameter(c->cc, ZSTD_c_checksumFlag, 1);
	for (size_t i = 0; i < n; i++) {
		if (!u[i].staging) {
			if (copy_frame(in_fd, out_fd, u[i].off, c) < 0) {
				snprintf(err, errlen, "%s: cannot copy the frame at 0x%llx", path,
					 (unsigned long long)u[i].off);
				return ATR_E_IO;
			}
			continue;
		}
		long len = staging_frame(in_fd, u[i].off, bs, features, c);
		if (len == 0) /* a reader would call it damaged: keep it as it is */
			return 0;
		if (len < 0 || util_write_all(out_fd, c->z, (size_t)len) < 0) {
			snprintf(err, errlen, "%s: cannot write the staging block at 0x%llx", tmp,
				 (unsigned long long)u[i].off);
			return ATR_E_IO;
		}
	}
	return 1;
}

/* ---- recompression (level > 0) ----------------------------------------
 *
 * A thread's units in seq order are decoded back to version-1 records,
 * concatenated up to fmax bytes, and each run is encoded and compressed
 * again at the level asked for, as one FRAME: more zstd context and a
 * stronger match search than the recorder can afford at flush.  Each new
 * frame is decompressed and decoded again and compared with the records
 * it was made of before it is written. */

struct unit {
	uint64_t off, seq;
	uint32_t thread;
	int staging;
};

static int unit_cmp(const void *a, const void *b)
{
	const struct unit *x = a, *y = b;
	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* One output frame's work: encode, compress at the level, decode again
 * to check.  Independent of every other frame, so several run at once
 * (atr_compact's threads); the frames are written in the order they were
 * collected, so the file is the same bytes with any number of threads. */
struct rz_job {
	uint8_t *acc;		   /* its records (fmax) */
	size_t alen;		   /* their bytes */
	uint8_t tmpl[ATR_U_CSIZE]; /* magic .. pid of the run's first unit */
	uint64_t seq;
	uint8_t *out;  /* the FRAME (ocap) */
	size_t outlen; /* its bytes, once done */
	int state;     /* RZ_IDLE, RZ_QUEUED, RZ_RUNNING, RZ_DONE */
	int rc;	       /* 0, or -1 with err */
	uint64_t no;   /* its number in the order of collection */
	char err[512];
};
enum { RZ_IDLE = 0, RZ_QUEUED, RZ_RUNNING, RZ_DONE };

/* What compressing a frame needs besides the frame: one per thread that
 * compresses (a worker's argument) */
struct rz_tools {
	struct rz *z;
	uint8_t *enc, *chk; /* encoding (ecap), the frame decoded again (fmax) */
	ZSTD_CCtx *cc;
	ZSTD_DCtx *dc;
};

struct rz {
	uint64_t features;
	uint32_t bs;
	size_t fmax;   /* records per output frame, at most */
	size_t nunits; /* units the current run came from */
	uint8_t *in;   /* one input unit (icap) */
	uint8_t *ienc; /* an input frame decompressed (ecap) */
	ZSTD_DCtx *idc;
	size_t icap, ecap, ocap;
	/* jobs[no % njobs] holds frame number no; frames sub .. are being
	 * collected (sub) or compressed, wr is the next to write */
	struct rz_job *jobs, *cur;
	size_t njobs;
	uint64_t sub, wr;
	pthread_t *th;
	size_t want, nth;	/* workers asked for, running */
	struct rz_tools *tools; /* [0]: the caller's; [1 + i]: worker i's (want) */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop;
	int in_fd, out_fd;
	uint64_t seq, nout; /* seq of the next output frame; frames written */
	char *err;
	size_t errlen;
	const char *path;
};

static void job_run(const struct rz *z, struct rz_job *j, const struct rz_tools *t)
{
	struct atr_v2_meta m = {0}, m2 = {0};
	size_t elen = 0;
	j->rc = -1;
	if (j->alen && !(elen = atr_v2_encode(j->acc, j->alen, z->features, t->enc, z->ecap, &m))) {
		snprintf(j->err, sizeof j->err, "%s: thread %u: records do not encode", z->path,
			 (unsigned)atr_get32(j->tmpl + ATR_B_THREAD));
		return;
	}
	uint8_t *payload = j->out + ATR_BLOCK_HEADER_SIZE;
	size_t plen =
	    ZSTD_compress2(t->cc, payload, z->ocap - ATR_BLOCK_HEADER_SIZE - 8, t->enc, elen);
	if (ZSTD_isError(plen)) {
		snprintf(j->err, sizeof j->err, "%s: zstd: %s", z->path, ZSTD_getErrorName(plen));
		return;
	}
	/* read back what a reader will read */
	const char *why = "";
	size_t dlen = ZSTD_decompressDCtx(t->dc, t->enc, z->ecap, payload, plen);
	long got = ZSTD_isError(dlen)
		       ? -1
		       : atr_v2_decode(t->enc, dlen, z->features, t->chk, z->fmax, &m2, &why);
	if (got != (long)j->alen || memcmp(t->chk, j->acc, j->alen) != 0 ||
	    m2.records != m.records || m2.calls != m.calls) {
		snprintf(j->err, sizeof j->err,
			 "%s: thread %u: a recompressed frame does not decode to its records%s%s",
			 z->path, (unsigned)atr_get32(j->tmpl + ATR_B_THREAD), *why ? ": " : "",
			 why);
		return;
	}
	j->outlen = frame_header(j->out, j->tmpl, j->seq, (uint32_t)j->alen, &m, plen);
	j->rc = 0;
}

static void *rz_worker(void *arg)
{
	const struct rz_tools *t = arg;
	struct rz *z = t->z;
	pthread_mutex_lock(&z->mu);
	for (;;) {
		/* the oldest queued frame first: the writer waits for it */
		struct rz_job *j = NULL;
		for (size_t i = 0; i < z->njobs; i++)
			if (z->jobs[i].state == RZ_QUEUED && (!j || z->jobs[i].no < j->no))
				j = &z->jobs[i];
		if (!j) {
			if (z->stop)
				break;
			pthread_cond_wait(&z->cv, &z->mu);
			continue;
		}
		j->state = RZ_RUNNING;
		pthread_mutex_unlock(&z->mu);
		job_run(z, j, t);
		pthread_mutex_lock(&z->mu);
		j->state = RZ_DONE;
		pthread_cond_broadcast(&z->cv);
	}
	pthread_mutex_unlock(&z->mu);
	return NULL;
}

/* Write frame z->wr (compressed by then, or compressed here).  0, or -1
 * with err set. */
static int rz_write_next(struct rz *z)
{
	struct rz_job *j = &z->jobs[z->wr % z->njobs];
	if (z->nth) {
		pthread_mutex_lock(&z->mu);
		while (j->state != RZ_DONE)
			pthread_cond_wait(&z->cv, &z->mu);
		j->state = RZ_IDLE; /* the workers scan the states */
		pthread_mutex_unlock(&z->mu);
	} else {
		job_run(z, j, &z->tools[0]);
		j->state = RZ_IDLE;
	}
	z->wr++;
	if (j->rc < 0) {
		snprintf(z->err, z->errlen, "%s", j->err);
		return -1;
	}
	if (util_write_all(z->out_fd, j->out, j->outlen) < 0) {
		snprintf(z->err, z->errlen, "%s.compact: %s", z->path, strerror(errno));
		return -1;
	}
	z->nout++;
	return 0;
}

/* The run collected so far becomes frame z->sub: queued for a worker (or
 * compressed when it is written, without workers), and the next run
 * goes into a free job, writing the oldest frame first if none is. */
static int rz_flush(struct rz *z)
{
	if (!z->nunits)
		return 0;
	struct rz_job *j = z->cur;
	j->seq = z->seq;
	j->no = z->sub++;
	if (z->nth) {
		pthread_mutex_lock(&z->mu);
		j->state = RZ_QUEUED;
		pthread_cond_broadcast(&z->cv);
		pthread_mutex_unlock(&z->mu);
	} else {
		j->state = RZ_QUEUED;
	}
	z->seq++;
	z->nunits = 0;
	while (z->sub - z->wr >= z->njobs)
		if (rz_write_next(z) < 0)
			return -1;
	z->cur = &z->jobs[z->sub % z->njobs];
	z->cur->alen = 0;
	return 0;
}

/* Every frame collected so far written.  0, or -1 with err set. */
static int rz_drain(struct rz *z)
{
	while (z->wr < z->sub)
		if (rz_write_next(z) < 0)
			return -1;
	return 0;
}

/* Append the records of the unit u to the run (flushing it first if they
 * do not fit).  1, 0 (the unit does not read: the file is left alone), or
 * -1 with err set. */
static int rz_add(struct rz *z, const struct unit *u)
{
	size_t used;
	const uint8_t *src = NULL;
	if (read_at(z->in_fd, u->off, z->in, u->staging ? z->bs : ATR_BLOCK_HEADER_SIZE) < 0)
		goto ioerr;
	if (u->staging) {
		long n = staging_used(z->in, z->bs, (z->features & ATR_FEAT_XCALLS) != 0);
		if (n < 0)
			return 0;
		used = (size_t)n;
		src = z->in + ATR_BLOCK_HEADER_SIZE;
	} else {
		used = atr_get32(z->in + ATR_B_USED);
		uint32_t csize = atr_get32(z->in + ATR_U_CSIZE);
		if (used > z->fmax || csize > z->icap - ATR_BLOCK_HEADER_SIZE)
			return 0;
		if (z->cur->alen + used > z->fmax && rz_flush(z) < 0)
			return -1;
		if (read_at(z->in_fd, u->off + ATR_BLOCK_HEADER_SIZE, z->in + ATR_BLOCK_HEADER_SIZE,
			    csize) < 0)
			goto ioerr;
		const uint8_t *enc = z->in + ATR_BLOCK_HEADER_SIZE;
		size_t elen = csize;
		if (z->features & ATR_FEAT_ZSTD) {
			elen = ZSTD_decompressDCtx(z->idc, z->ienc, z->ecap, enc, csize);
			if (ZSTD_isError(elen))
				return 0;
			enc = z->ienc;
		}
		struct atr_v2_meta m;
		const char *why;
		if (atr_v2_decode(enc, elen, z->features, z->cur->acc + z->cur->alen, used, &m,
				  &why) != (long)used)
			return 0;
	}
	if (src) {
		if (z->cur->alen + used > z->fmax && rz_flush(z) < 0)
			return -1;
		memcpy(z->cur->acc + z->cur->alen, src, used);
	}
	if (!z->nunits)
		memcpy(z->cur->tmpl, z->in, sizeof z->cur->tmpl);
	z->cur->alen += used;
	z->nunits++;
	return 1;
ioerr:
	snprintf(z->err, z->errlen, "%s: cannot read the unit at 0x%llx", z->path,
		 (unsigned long long)u->off);
	return -1;
}

/* Every unit a reader reads (u[0..n-1], any order) recompressed at level,
 * thread by thread.  1 (written to z->out_fd), 0 (a unit does not read:
 * leave the file alone), or -1 with err set. */
static int recompress(struct rz *z, struct unit *u, size_t n, int level)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t h[ATR_BLOCK_HEADER_SIZE];
		if (read_at(z->in_fd, u[i].off, h, sizeof h) < 0) {
			snprintf(z->err, z->errlen, "%s: cannot read the unit at 0x%llx", z->path,
				 (unsigned long long)u[i].off);
			return -1;
		}
		u[i].thread = atr_get32(h + ATR_B_THREAD);
		u[i].seq = atr_get64(h + ATR_B_SEQ);
	}
	qsort(u, n, sizeof *u, unit_cmp);
	z->fmax = atr_frame_used_max(z->bs);
	/* an input frame may be a merged one (compacted before) */
	size_t ib = ZSTD_compressBound(ATR_V2_ENC_BOUND(z->fmax));
	z->icap = ATR_BLOCK_HEADER_SIZE + (ib > z->bs ? ib : z->bs);
	z->ecap = ATR_V2_ENC_BOUND(z->fmax);
	z->ocap = ATR_BLOCK_HEADER_SIZE + ZSTD_compressBound(z->ecap) + 8;
	z->in = malloc(z->icap);
	z->ienc = malloc(z->ecap);
	z->idc = ZSTD_createDCtx();
	/* one frame compressing per worker and one being collected */
	z->njobs = z->want + 1;
	z->jobs = calloc(z->njobs, sizeof *z->jobs);
	z->tools = calloc(1 + z->want, sizeof *z->tools);
	int bad = !z->in || !z->ienc || !z->idc || !z->jobs || !z->tools;
	for (size_t i = 0; !bad && i < z->njobs; i++) {
		struct rz_job *j = &z->jobs[i];
		j->acc = malloc(z->fmax);
		j->out = malloc(z->ocap);
		bad = !j->acc || !j->out;
	}
	for (size_t i = 0; !bad && i < 1 + z->want; i++) {
		struct rz_tools *t = &z->tools[i];
		t->z = z;
		t->enc = malloc(z->ecap);
		t->chk = malloc(z->fmax);
		t->cc = ZSTD_createCCtx();
		t->dc = ZSTD_createDCtx();
		bad = !t->enc || !t->chk || !t->cc || !t->dc;
		if (!bad) {
			ZSTD_CCtx_setParameter(t->cc, ZSTD_c_compressionLevel, level);
			ZSTD_CCtx_setParameter(t->cc, ZSTD_c_checksumFlag, 1);
		}
	}
	if (bad) {
		snprintf(z->err, z->errlen, "%s: out of memory", z->path);
		return -1;
	}
	z->cur = &z->jobs[0];
	if (z->want) {
		z->th = calloc(z->want, sizeof *z->th);
		/* fewer workers than asked still work; none: compress here */
		while (z->th && z->nth < z->want &&
		       pthread_create(&z->th[z->nth], NULL, rz_worker, &z->tools[1 + z->nth]) == 0)
			z->nth++;
	}
	for (size_t i = 0; i < n; i++) {
		if (!i || u[i].thread != u[i - 1].thread) {
			if (rz_flush(z) < 0)
				return -1;
			z->seq = u[i].seq; /* blocks lost before it stay lost */
		} else if (u[i].seq != u[i - 1].seq + 1) {
			/* blocks lost in between: the gap stays, as wide */
			if (rz_flush(z) < 0)
				return -1;
			z->seq += u[i].seq - u[i - 1].seq - 1;
		}
		int r = rz_add(z, &u[i]);
		if (r <= 0)
			return r;
	}
	return rz_flush(z) < 0 || rz_drain(z) < 0 ? -1 : 1;
}

static void rz_free(struct rz *z)
{
	if (z->nth) {
		pthread_mutex_lock(&z->mu);
		z->stop = 1;
		pthread_cond_broadcast(&z->cv);
		pthread_mutex_unlock(&z->mu);
		for (size_t i = 0; i < z->nth; i++)
			pthread_join(z->th[i], NULL);
	}
	free(z->th);
	for (size_t i = 0; z->jobs && i < z->njobs; i++) {
		free(z->jobs[i].acc);
		free(z->jobs[i].out);
	}
	free(z->jobs);
	/* the workers' too: they were allocated before the workers started */
	for (size_t i = 0; z->tools && i < 1 + z->want; i++) {
		struct rz_tools *t = &z->tools[i];
		free(t->enc);
		free(t->chk);
		ZSTD_freeCCtx(t->cc);
		ZSTD_freeDCtx(t->dc);
	}
	free(z->tools);
	free(z->in);
	free(z->ienc);
	ZSTD_freeDCtx(z->idc);
}

/* What a reader makes of a file: calls (from the index and the staging
 * blocks), threads, lost blocks. */
static int facts(const char *path, uint64_t v[3], char *err, size_t errlen)
{
	atr_file *f;
	int r = atr_open(path, &f, err, errlen);
	if (r < 0)
		return r;
	r = atr_count_calls_quick(f, &v[0]);
	if (r < 0)
		snprintf(err, errlen, "%s", atr_last_error(f));
	v[1] = atr_get_info(f)->threads;
	v[2] = atr_get_info(f)->lost_blocks;
	atr_close(f);
	return r;
}

int atr_compact(const char *path, int level, int threads, uint64_t *before, uint64_t *after,
		char *err, size_t errlen)
{
	if (level < 0 || level > ZSTD_maxCLevel()) {
		snprintf(err, errlen, "compaction level %d: not in 0..%d", level, ZSTD_maxCLevel());
		return ATR_E_USAGE;
	}
	atr_file *f;
	int r = atr_open(path, &f, err, errlen);
	if (r < 0)
		return r;
	const struct atr_info *in = atr_get_info(f);
	uint32_t bs = in->block_size;
	uint64_t features = in->features, size = in->file_size;
	struct atr_unit_ref *u = NULL;
	size_t n = 0, nstaging = 0;
	if (in->version != 2 || in->truncated_blocks) {
		atr_close(f);
		return 0;
	}
	r = atr_read_units(f, &u, &n);
	uint64_t nunits = in->blocks;
	atr_close(f);
	if (r < 0) {
		snprintf(err, errlen, "%s: out of memory", path);
		return r;
	}
	for (size_t i = 0; i < n; i++) {
		nstaging += u[i].staging != 0;
		if (u[i].staging && u[i].off + bs > size)
			nstaging = n + 1; /* cut by the end of the file: left alone */
	}
	/* a large file of frames gains little for a copy of all of it; one
	 * of raw blocks (record --encode later) is mostly staging units */
	if (size > ATR_COMPACT_MAX_BYTES && (uint64_t)nstaging * bs < size / 2)
		nstaging = n + 1;
	char tmp[4096];
	snprintf(tmp, sizeof tmp, "%s.compact", path);
	struct cbuf c = {0};
	if (threads <= 0) {
		unsigned nc = plat_usable_cpus(); /* taskset counts */
		threads = nc > ATR_COMPACT_THREADS_MAX ? ATR_COMPACT_THREADS_MAX : (int)nc;
	}
	struct rz z = {.features = features,
		       .bs = bs,
		       .mu = PTHREAD_MUTEX_INITIALIZER,
		       .cv = PTHREAD_COND_INITIALIZER,
		       /* with one thread the caller's compresses */
		       .want = threads > 1 ? (size_t)threads : 0,
		       .err = err,
		       .errlen = errlen,
		       .path = path};
	struct unit *uu = NULL;
	uint8_t *hdr = malloc(ATR_HEADER_SIZE);
	int in_fd = open(path, O_RDONLY | O_CLOEXEC);
	int out_fd = -1;
	r = ATR_E_NOMEM;
	if (!hdr) {
		snprintf(err, errlen, "%s: out of memory", path);
		goto out;
	}
	r = ATR_E_IO;
	if (in_fd < 0 || read_at(in_fd, 0, hdr, ATR_HEADER_SIZE) < 0) {
		snprintf(err, errlen, "%s: %s", path, in_fd < 0 ? strerror(errno) : "short read");
		goto out;
	}
	/* nothing to gain: no staging unit, nothing superseded, and the
	 * frames as asked (level 0: as written; else recompressed at level) */
	r = 0;
	if (nstaging > n || !n ||
	    (!nstaging && nunits == n &&
	     (!level || atr_get32(hdr + ATR_H_COMPACT_LEVEL) == (uint32_t)level)))
		goto out;
	r = ATR_E_IO;
	if ((out_fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0) {
		snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
		goto out;
	}
	uint64_t hs = atr_get32(hdr + ATR_H_HEADER_SIZE);
	if (hs != ATR_HEADER_SIZE || util_write_all(out_fd, hdr, ATR_HEADER_SIZE) < 0) {
		snprintf(err, errlen, "%s: cannot write the header", tmp);
		goto out;
	}
	if (level) {
		if (!(uu = malloc((n ? n : 1) * sizeof *uu))) {
			snprintf(err, errlen, "%s: out of memory", path);
			r = ATR_E_NOMEM;
			goto out;
		}
		for (size_t i = 0; i < n; i++)
			uu[i] = (struct unit){.off = u[i].off, .staging = u[i].staging};
		z.in_fd = in_fd;
		z.out_fd = out_fd;
		int k = recompress(&z, uu, n, level);
		if (k <= 0) {
			r = k < 0 ? ATR_E_RECORD : 0;
			goto out;
		}
		/* every frame is a zstd frame now */
		atr_put64(hdr + ATR_H_FEATURES, features | ATR_FEAT_ZSTD);
		atr_put32(hdr + ATR_H_COMPACT_LEVEL, (uint32_t)level);
		atr_put64(hdr + ATR_H_BLOCKS, z.nout);
	} else {
		atr_put64(hdr + ATR_H_BLOCKS, n);
		r = copy_units(in_fd, out_fd, u, n, bs, features, &c, err, errlen, path, tmp);
		if (r <= 0)
			goto out;
	}
	r = ATR_E_IO;
	if (pwrite(out_fd, hdr, ATR_HEADER_SIZE, 0) != (ssize_t)ATR_HEADER_SIZE) {
		snprintf(err, errlen, "%s: cannot write the header", tmp);
		goto out;
	}
	if (close(out_fd) != 0) {
		out_fd = -1;
		snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
		goto out;
	}
	out_fd = -1;
	/* the same calls, threads and gaps, or the original stays */
	uint64_t a[3], b[3];
	char e2[256] = "";
	if ((r = facts(path, a, err, errlen)) < 0 || (r = facts(tmp, b, e2, sizeof e2)) < 0 ||
	    memcmp(a, b, sizeof a) != 0) {
		if (r >= 0 || !err[0])
			snprintf(err, errlen, "%s: the compacted copy does not read the same%s%s",
				 path, r < 0 ? ": " : "", r < 0 ? e2 : "");
		r = ATR_E_RECORD;
		goto out;
	}
	struct stat st;
	r = 0;
	if (stat(tmp, &st) != 0 || (uint64_t)st.st_size > size)
		goto out; /* not smaller: the original stays */
	if (rename(tmp, path) != 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		r = ATR_E_IO;
		goto out;
	}
	tmp[0] = 0;
	if (before)
		*before = size;
	if (after)
		*after = (uint64_t)st.st_size;
	r = 1;
out:
	if (out_fd >= 0)
		close(out_fd);
	if (in_fd >= 0)
		close(in_fd);
	if (tmp[0])
		unlink(tmp);
	free(u);
	free(uu);
	free(hdr);
	free(c.blk);
	free(c.enc);
	free(c.z);
	ZSTD_freeCCtx(c.cc);
	rz_free(&z);
	return r;
}
