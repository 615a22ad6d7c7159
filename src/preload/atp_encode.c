/* atp_encode.c - turn a full staging block into a v2 FRAME: compact
 * encoding (src/format/atr_v2.c), then a zstd frame.
 *
 * Runs at flush, guard set: in the encoder thread (atp_offload.c) when the
 * thread that filled the block could hand it over, else in that thread
 * (bench/RESULTS.md, "Where compression runs" and "The encoder thread").
 * zstd never allocates here: each context lives in a workspace we mmap
 * (ZSTD_initStaticCCtx).  Contexts come from a small process-wide pool
 * taken with a try-lock per entry; a flush is once per thousands of calls,
 * never on the per-call path.
 */
#define _GNU_SOURCE
#define ZSTD_STATIC_LINKING_ONLY
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <zstd.h>

#include "atp_internal.h"
#include "atr_v2.h"

#define ATP_NZCTX 8 /* contexts: more than cores on the machines we target */

struct atp_zctx {
	atomic_flag busy;
	uint8_t *mem; /* NULL until first used */
	ZSTD_CCtx *cctx;
	uint8_t *enc, *out;
	size_t counted; /* its bytes in the header's self_rss */
	int held;	/* counted whole for an encode (zctx_hold) */
};

static struct atp_zctx zpool[ATP_NZCTX];
static size_t z_ws, z_enc_cap, z_out_cap, z_total;

void atp_encode_init(void)
{
	z_enc_cap = ATR_V2_ENC_BOUND((size_t)g.block_size);
	z_out_cap = ATR_BLOCK_HEADER_SIZE + ATR_UNIT_ALIGN +
		    (g.zstd_level ? ZSTD_compressBound(z_enc_cap) : z_enc_cap);
	z_ws = g.zstd_level ? ZSTD_estimateCCtxSize(g.zstd_level) : 0;
	size_t pg = 4096;
	z_total = ((z_ws + pg - 1) & ~(pg - 1)) + ((z_enc_cap + pg - 1) & ~(pg - 1)) +
		  ((z_out_cap + pg - 1) & ~(pg - 1));
}

/* In a fork child only the forking thread exists: nobody holds a context. */
void atp_encode_after_fork(void)
{
	for (int i = 0; i < ATP_NZCTX; i++)
		atomic_flag_clear(&zpool[i].busy);
}

static int zctx_setup(struct atp_zctx *z)
{
	void *m =
	    g.real.mmap(NULL, z_total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return -errno;
	size_t pg = 4096, ws = (z_ws + pg - 1) & ~(pg - 1);
	z->enc = (uint8_t *)m + ws;
	z->out = z->enc + ((z_enc_cap + pg - 1) & ~(pg - 1));
	if (g.zstd_level) {
		z->cctx = ZSTD_initStaticCCtx(m, ws);
		if (!z->cctx ||
		    ZSTD_isError(
			ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_compressionLevel, g.zstd_level)) ||
		    ZSTD_isError(ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_checksumFlag, 1)) ||
		    (g.zstd_level == 1 && ZSTD_isError(ZSTD_CCtx_setParameter(
					      z->cctx, ZSTD_c_minMatch, ATP_ZSTD_MINMATCH)))) {
			g.real.munmap(m, z_total);
			return -ENOMEM;
		}
	}
	z->mem = m;
	return 0;
}

/* The context's resident pages in the header's self_rss: all of it while
 * an encode may make more of them resident (zctx_hold: the RSS sampler
 * must never see a page of ours uncounted), then what mincore says
 * (zctx_count), until all are (zstd's workspace is sized for the worst
 * case and an encode writes as much of the buffers as its block needed). */
static void zctx_hold(struct atp_zctx *z)
{
	if (z->counted < z_total) {
		atp_self_rss_add(&g.self_other, (int64_t)(z_total - z->counted));
		z->counted = z_total;
		z->held = 1;
	}
}

static void zctx_count(struct atp_zctx *z)
{
	if (!z->held)
		return;
	unsigned char v[256];
	size_t pg = g.page ? g.page : 4096, res = 0;
	for (size_t off = 0; off < z_total; off += sizeof v * pg) {
		size_t len = z_total - off < sizeof v * pg ? z_total - off : sizeof v * pg;
		if (mincore(z->mem + off, len, v) != 0)
			return; /* held whole: an upper bound */
		for (size_t i = 0; i < (len + pg - 1) / pg; i++)
			res += (v[i] & 1) * pg;
	}
	/* from the whole context held to its resident pages */
	atp_self_rss_add(&g.self_other, (int64_t)res - (int64_t)z_total);
	z->counted = res;
	z->held = 0;
}

static struct atp_zctx *zctx_take(void)
{
	for (;;) {
		for (int i = 0; i < ATP_NZCTX; i++)
			if (!atomic_flag_test_and_set_explicit(&zpool[i].busy,
							       memory_order_acquire))
				return &zpool[i];
		sched_yield();
	}
}

static void zctx_give(struct atp_zctx *z)
{
	atomic_flag_clear_explicit(&z->busy, memory_order_release);
}

static void put_header(uint8_t *b, uint32_t serial, uint32_t tid, uint64_t seq, uint32_t used,
		       const struct atr_v2_meta *m, uint32_t csize)
{
	memset(b, 0, ATR_BLOCK_HEADER_SIZE);
	atr_put32(b + ATR_B_MAGIC, ATR_BLOCK_MAGIC);
	atr_put32(b + ATR_B_KIND, ATR_BLOCK_FRAME);
	atr_put32(b + ATR_B_THREAD, serial);
	atr_put32(b + ATR_B_TID, tid);
	atr_put64(b + ATR_B_SEQ, seq);
	atr_put32(b + ATR_B_USED, used);
	atr_put32(b + ATR_B_RECORDS, m->records);
	atr_put32(b + ATR_B_PID, (uint32_t)g.pid);
	atr_put32(b + ATR_U_CSIZE, csize);
	atr_put64(b + ATR_U_FIRST_TS, m->first_ts);
	atr_put64(b + ATR_U_LAST_TS, m->last_ts);
	atr_put32(b + ATR_U_CALLS, m->calls);
	atr_put32(b + ATR_U_CHECK, atr_unit_check(b));
}

int atp_encode_block(const uint8_t *recs, uint32_t used, uint32_t serial, uint32_t tid,
		     uint64_t seq, struct atp_frame *f)
{
	struct atp_zctx *z = zctx_take();
	if (!z->mem) {
		int rc = zctx_setup(z);
		if (rc) {
			zctx_give(z);
			return rc;
		}
	}
	zctx_hold(z);
	struct atr_v2_meta m;
	uint8_t *payload = z->out + ATR_BLOCK_HEADER_SIZE;
	size_t elen =
	    atr_v2_encode(recs, used, g.features, g.zstd_level ? z->enc : payload, z_enc_cap, &m);
	if (!elen) {
		zctx_give(z);
		return -EINVAL; /* our own records do not parse: a bug */
	}
	size_t clen = elen;
	if (g.zstd_level) {
		clen = ZSTD_compress2(z->cctx, payload, z_out_cap - ATR_BLOCK_HEADER_SIZE, z->enc,
				      elen);
		if (ZSTD_isError(clen)) {
			zctx_give(z);
			return -ENOMEM;
		}
	}
	/* pad to the unit alignment with zeros */
	size_t pad = (ATR_UNIT_ALIGN - clen % ATR_UNIT_ALIGN) % ATR_UNIT_ALIGN;
	memset(payload + clen, 0, pad);
	put_header(z->out, serial, tid, seq, used, &m, (uint32_t)clen);
	zctx_count(z);
	f->data = z->out;
	f->len = ATR_BLOCK_HEADER_SIZE + clen + pad;
	f->ctx = z;
	return 0;
}

void atp_encode_done(struct atp_frame *f)
{
	zctx_give(f->ctx);
	f->ctx = NULL;
}
