/* atr_compact.c - see atr_compact.h. */
#define _GNU_SOURCE
#define ZSTD_STATIC_LINKING_ONLY
#include "atr_compact.h"

#include <errno.h>
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

static int read_at(int fd, uint64_t off, void *dst, size_t len)
{
	size_t got = 0;
	while (got < len) {
		ssize_t r = pread(fd, (uint8_t *)dst + got, len - got, (off_t)(off + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

static int write_all(int fd, const void *src, size_t len)
{
	const uint8_t *p = src;
	while (len) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		len -= (size_t)w;
	}
	return 0;
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
	size_t pad = (ATR_UNIT_ALIGN - plen % ATR_UNIT_ALIGN) % ATR_UNIT_ALIGN;
	memset(payload + plen, 0, pad);
	memset(h, 0, ATR_BLOCK_HEADER_SIZE);
	memcpy(h, c->blk, ATR_U_CSIZE); /* magic .. pid: thread, tid, seq */
	atr_put32(h + ATR_B_KIND, ATR_BLOCK_FRAME);
	atr_put32(h + ATR_B_USED, (uint32_t)used);
	atr_put32(h + ATR_B_RECORDS, m.records);
	atr_put32(h + ATR_U_CSIZE, (uint32_t)plen);
	atr_put64(h + ATR_U_FIRST_TS, m.first_ts);
	atr_put64(h + ATR_U_LAST_TS, m.last_ts);
	atr_put32(h + ATR_U_CALLS, m.calls);
	atr_put32(h + ATR_U_CHECK, atr_unit_check(h));
	return (long)(ATR_BLOCK_HEADER_SIZE + plen + pad);
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
	return write_all(out, c->z, len);
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

int atr_compact(const char *path, uint64_t *before, uint64_t *after, char *err, size_t errlen)
{
	atr_file *f;
	int r = atr_open(path, &f, err, errlen);
	if (r < 0)
		return r;
	const struct atr_info *in = atr_get_info(f);
	uint32_t bs = in->block_size;
	uint64_t features = in->features, size = in->file_size;
	struct atr_unit_ref *u = NULL;
	size_t n = 0, nstaging = 0;
	if (in->version != 2 || in->truncated_blocks || size > ATR_COMPACT_MAX_BYTES) {
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
	if (nstaging > n || (!nstaging && nunits == n)) {
		free(u);
		return 0;
	}
	char tmp[4096];
	snprintf(tmp, sizeof tmp, "%s.compact", path);
	struct cbuf c = {0};
	c.ecap = ATR_V2_ENC_BOUND((size_t)bs);
	c.zcap = ATR_BLOCK_HEADER_SIZE + ZSTD_compressBound(c.ecap) + 8;
	if (c.zcap < ATR_BLOCK_HEADER_SIZE + c.ecap + 8)
		c.zcap = ATR_BLOCK_HEADER_SIZE + c.ecap + 8;
	c.blk = malloc(bs);
	c.enc = malloc(c.ecap);
	c.z = malloc(c.zcap);
	c.cc = ZSTD_createCCtx();
	uint8_t *hdr = malloc(ATR_HEADER_SIZE);
	int in_fd = open(path, O_RDONLY | O_CLOEXEC);
	int out_fd = -1;
	r = ATR_E_NOMEM;
	if (!c.blk || !c.enc || !c.z || !c.cc || !hdr) {
		snprintf(err, errlen, "%s: out of memory", path);
		goto out;
	}
	r = ATR_E_IO;
	if (in_fd < 0 || read_at(in_fd, 0, hdr, ATR_HEADER_SIZE) < 0 ||
	    (out_fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0) {
		snprintf(err, errlen, "%s: %s", in_fd < 0 || out_fd < 0 ? tmp : path,
			 strerror(errno));
		goto out;
	}
	ZSTD_CCtx_setParameter(c.cc, ZSTD_c_compressionLevel, 1);
	ZSTD_CCtx_setParameter(c.cc, ZSTD_c_checksumFlag, 1);
	atr_put64(hdr + ATR_H_BLOCKS, n);
	uint64_t hs = atr_get32(hdr + ATR_H_HEADER_SIZE);
	if (hs != ATR_HEADER_SIZE || write_all(out_fd, hdr, ATR_HEADER_SIZE) < 0) {
		snprintf(err, errlen, "%s: cannot write the header", tmp);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (!u[i].staging) {
			if (copy_frame(in_fd, out_fd, u[i].off, &c) < 0) {
				snprintf(err, errlen, "%s: cannot copy the frame at 0x%llx", path,
					 (unsigned long long)u[i].off);
				goto out;
			}
			continue;
		}
		long len = staging_frame(in_fd, u[i].off, bs, features, &c);
		if (len == 0) { /* a reader would call it damaged: keep it as it is */
			r = 0;
			goto out;
		}
		if (len < 0 || write_all(out_fd, c.z, (size_t)len) < 0) {
			snprintf(err, errlen, "%s: cannot write the staging block at 0x%llx", tmp,
				 (unsigned long long)u[i].off);
			goto out;
		}
	}
	if (close(out_fd) != 0) {
		out_fd = -1;
		snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
		goto out;
	}
	out_fd = -1;
	/* the same calls, threads and gaps, or the original stays */
	uint64_t a[3], b[3];
	char e2[256];
	if ((r = facts(path, a, err, errlen)) < 0 || (r = facts(tmp, b, e2, sizeof e2)) < 0 ||
	    memcmp(a, b, sizeof a) != 0) {
		if (r >= 0 || !err[0])
			snprintf(err, errlen, "%s: the compacted copy does not read the same",
				 path);
		r = ATR_E_RECORD;
		goto out;
	}
	struct stat st;
	if (rename(tmp, path) != 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		r = ATR_E_IO;
		goto out;
	}
	tmp[0] = 0;
	if (before)
		*before = size;
	if (after)
		*after = stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
	r = 1;
out:
	if (out_fd >= 0)
		close(out_fd);
	if (in_fd >= 0)
		close(in_fd);
	if (tmp[0])
		unlink(tmp);
	free(u);
	free(hdr);
	free(c.blk);
	free(c.enc);
	free(c.z);
	ZSTD_freeCCtx(c.cc);
	return r;
}
