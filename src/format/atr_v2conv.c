/* atr_v2conv.c - rewrite a version-1 trace as version 2 (atr_v2conv.h).
 *
 * Each v1 DATA block becomes a FRAME unit, encoded and compressed exactly
 * as the recorder does at flush; STAGING and RETIRED blocks are copied to
 * page-aligned offsets as they are.  Used by the tests (round trips
 * through both versions) and to make the v2 fuzz seeds.
 */
#define ZSTD_STATIC_LINKING_ONLY
#include "atr_v2conv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "atr_format.h"
#include "atr_v2.h"

struct obuf {
	uint8_t *p;
	size_t len, cap;
};

static int ob_reserve(struct obuf *o, size_t at, size_t n)
{
	if (at + n <= o->cap)
		return 0;
	size_t nc = o->cap ? o->cap : 65536;
	while (nc < at + n)
		nc *= 2;
	uint8_t *np = realloc(o->p, nc);
	if (!np)
		return -1;
	memset(np + o->cap, 0, nc - o->cap);
	o->p = np;
	o->cap = nc;
	return 0;
}

int atr_v1_to_v2(const uint8_t *in, size_t len, int level, uint8_t **out, size_t *outlen, char *err,
		 size_t errlen)
{
	*out = NULL;
	*outlen = 0;
	if (len < ATR_HEADER_SIZE || memcmp(in, ATR_MAGIC, 8) ||
	    atr_get32(in + ATR_H_VERSION) != ATR_VERSION_V1 ||
	    atr_get32(in + ATR_H_HEADER_SIZE) != ATR_HEADER_SIZE) {
		snprintf(err, errlen, "not a version 1 trace with a 4096-byte header");
		return -1;
	}
	uint32_t bs = atr_get32(in + ATR_H_BLOCK_SIZE);
	if (bs < ATR_BLOCK_SIZE_MIN || bs > ATR_BLOCK_SIZE_MAX || (bs & (bs - 1))) {
		snprintf(err, errlen, "bad block size");
		return -1;
	}
	uint64_t feat;
	memcpy(&feat, in + ATR_H_FEATURES, 8);
	if (level)
		feat |= ATR_FEAT_ZSTD;
	struct obuf o = {0};
	size_t ecap = ATR_V2_ENC_BOUND((size_t)bs), zcap = ZSTD_compressBound(ecap);
	uint8_t *enc = malloc(ecap), *z = malloc(zcap);
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	int rc = -1;
	if (!enc || !z || !cc || ob_reserve(&o, 0, ATR_HEADER_SIZE)) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, level ? level : 1);
	ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
	memcpy(o.p, in, ATR_HEADER_SIZE);
	atr_put32(o.p + ATR_H_VERSION, ATR_VERSION);
	atr_put64(o.p + ATR_H_FEATURES, feat);
	o.len = ATR_HEADER_SIZE;
	uint64_t nunits = 0;
	for (size_t off = ATR_HEADER_SIZE; off + ATR_BLOCK_HEADER_SIZE <= len; off += bs) {
		const uint8_t *b = in + off;
		size_t avail = len - off < bs ? len - off : bs;
		if (atr_get32(b + ATR_B_MAGIC) != ATR_BLOCK_MAGIC)
			continue;
		uint32_t kind = atr_get32(b + ATR_B_KIND);
		if (kind == ATR_BLOCK_STAGING || kind == ATR_BLOCK_RETIRED) {
			size_t at = (o.len + 4095) & ~(size_t)4095;
			if (ob_reserve(&o, at, bs)) {
				snprintf(err, errlen, "out of memory");
				goto out;
			}
			memcpy(o.p + at, b, avail);
			o.len = at + bs;
			nunits++;
			continue;
		}
		if (kind != ATR_BLOCK_DATA)
			continue;
		uint32_t used = atr_get32(b + ATR_B_USED);
		if (used > bs - ATR_BLOCK_HEADER_SIZE ||
		    ATR_BLOCK_HEADER_SIZE + (size_t)used > avail) {
			snprintf(err, errlen, "block at offset %zu: bad used size", off);
			goto out;
		}
		struct atr_v2_meta m;
		size_t elen = atr_v2_encode(b + ATR_BLOCK_HEADER_SIZE, used, feat, enc, ecap, &m);
		if (!elen && used) {
			snprintf(err, errlen, "block at offset %zu: records do not parse", off);
			goto out;
		}
		if (!used)
			m = (struct atr_v2_meta){0};
		const uint8_t *payload = enc;
		size_t plen = elen;
		if (level) {
			plen = ZSTD_compress2(cc, z, zcap, enc, elen);
			if (ZSTD_isError(plen)) {
				snprintf(err, errlen, "zstd: %s", ZSTD_getErrorName(plen));
				goto out;
			}
			payload = z;
		}
		size_t ulen = ATR_BLOCK_HEADER_SIZE +
			      ((plen + ATR_UNIT_ALIGN - 1) & ~(size_t)(ATR_UNIT_ALIGN - 1));
		if (ob_reserve(&o, o.len, ulen)) {
			snprintf(err, errlen, "out of memory");
			goto out;
		}
		uint8_t *h = o.p + o.len;
		memcpy(h, b, 36); /* magic .. pid */
		atr_put32(h + ATR_B_KIND, ATR_BLOCK_FRAME);
		atr_put32(h + ATR_B_RECORDS, m.records);
		atr_put32(h + ATR_U_CSIZE, (uint32_t)plen);
		atr_put64(h + ATR_U_FIRST_TS, m.first_ts);
		atr_put64(h + ATR_U_LAST_TS, m.last_ts);
		atr_put32(h + ATR_U_CALLS, m.calls);
		atr_put32(h + ATR_U_CHECK, atr_unit_check(h));
		memcpy(h + ATR_BLOCK_HEADER_SIZE, payload, plen);
		o.len += ulen;
		nunits++;
	}
	atr_put64(o.p + ATR_H_BLOCKS, nunits);
	*out = o.p;
	*outlen = o.len;
	o.p = NULL;
	rc = 0;
out:
	free(o.p);
	free(enc);
	free(z);
	ZSTD_freeCCtx(cc);
	return rc;
}
