/* atn_stream.c - the collector's reader of the network trace stream
 * (docs/NET_FORMAT.md): an incremental parser that accepts bytes in any
 * pieces, checks every field before it is used and hands out whole,
 * validated units.  Frames are decompressed and decoded here too, so a
 * file the collector writes never holds a frame the reader would reject.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "atn_stream.h"
#include "atr_format.h"
#include "atr_v2.h"

int atn_rx_fail(struct atn_rx *rx, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(rx->err, sizeof rx->err, fmt, ap);
	va_end(ap);
	return -1;
}

struct atn_scratch {
	ZSTD_DCtx *dctx;
	uint8_t *dec, *rec;
	size_t dec_cap, rec_cap;
};

void atn_rx_init(struct atn_rx *rx)
{
	memset(rx, 0, sizeof *rx);
	rx->state = ATN_RX_HELLO;
	rx->need = ATN_HELLO_SIZE;
}

void atn_rx_free(struct atn_rx *rx)
{
	struct atn_scratch *s = rx->scratch;
	if (s) {
		ZSTD_freeDCtx(s->dctx);
		free(s->dec);
		free(s->rec);
		free(s);
	}
	free(rx->buf);
	rx->buf = NULL;
	rx->scratch = NULL;
}

static int want(struct atn_rx *rx, size_t n)
{
	if (n > rx->cap) {
		uint8_t *b = realloc(rx->buf, n);
		if (!b)
			return atn_rx_fail(rx, "out of memory (message of %zu bytes)", n);
		rx->buf = b;
		rx->cap = n;
	}
	rx->need = n;
	rx->have = 0;
	return 0;
}

static int check_hello(struct atn_rx *rx)
{
	const uint8_t *b = rx->buf;
	struct atn_hello *h = &rx->hello;
	if (memcmp(b + ATN_H_MAGIC, ATN_MAGIC, 8) != 0)
		return atn_rx_fail(rx, "not an alloctrace stream (bad magic)");
	h->version = atr_get32(b + ATN_H_VERSION);
	h->hello_size = atr_get32(b + ATN_H_HELLO_SIZE);
	h->features = atr_get64(b + ATN_H_FEATURES);
	h->trace_hdr_size = atr_get32(b + ATN_H_TRACE_HDR);
	h->flags = atr_get32(b + ATN_H_FLAGS);
	if (h->version != ATN_VERSION)
		return atn_rx_fail(rx, "stream version %u, this collector reads version %u",
				   h->version, ATN_VERSION);
	if (h->hello_size < ATN_HELLO_SIZE || h->hello_size > ATN_HELLO_SIZE_MAX ||
	    h->hello_size % 8)
		return atn_rx_fail(rx, "bad hello size %u", h->hello_size);
	if (h->features & ~ATN_FEATURES_KNOWN)
		return atn_rx_fail(rx, "unknown stream feature bits 0x%llx",
				   (unsigned long long)(h->features & ~ATN_FEATURES_KNOWN));
	if (h->flags & ~ATN_FLAGS_KNOWN)
		return atn_rx_fail(rx, "unknown hello flags 0x%x", h->flags & ~ATN_FLAGS_KNOWN);
	if (h->trace_hdr_size != ATR_HEADER_SIZE)
		return atn_rx_fail(rx, "trace header of %u bytes (expected %u)", h->trace_hdr_size,
				   ATR_HEADER_SIZE);
	memcpy(h->host, b + ATN_H_HOST, ATN_HOST_MAX);
	h->host[ATN_HOST_MAX] = 0;
	for (char *c = h->host; *c; c++)
		if (*c < 0x21 || *c > 0x7e)
			*c = '?'; /* printed in messages and never trusted */
	return 0;
}

/* The trace header: from the hello, or again (final fields) later. */
static int check_trace_hdr(struct atn_rx *rx, int first)
{
	const uint8_t *b = rx->buf;
	struct atn_hello *h = &rx->hello;
	if (memcmp(b + ATR_H_MAGIC, ATR_MAGIC, 8) != 0)
		return atn_rx_fail(rx, "trace header: bad magic");
	uint32_t v = atr_get32(b + ATR_H_VERSION), hs = atr_get32(b + ATR_H_HEADER_SIZE);
	uint32_t bs = atr_get32(b + ATR_H_BLOCK_SIZE), pid = atr_get32(b + ATR_H_PID);
	uint64_t feat = atr_get64(b + ATR_H_FEATURES), rt = atr_get64(b + ATR_H_START_REALTIME);
	if (v != ATR_VERSION)
		return atn_rx_fail(rx, "trace header: version %u (streams carry version %u)", v,
				   ATR_VERSION);
	if (hs != ATR_HEADER_SIZE)
		return atn_rx_fail(rx, "trace header: header_size %u", hs);
	if (feat & ~(uint64_t)ATR_FEATURES_KNOWN)
		return atn_rx_fail(rx, "trace header: unknown feature bits 0x%llx",
				   (unsigned long long)(feat & ~(uint64_t)ATR_FEATURES_KNOWN));
	if (bs < ATR_BLOCK_SIZE_MIN || bs > ATR_BLOCK_SIZE_MAX || (bs & (bs - 1)))
		return atn_rx_fail(rx, "trace header: bad block size %u", bs);
	if (pid == 0)
		return atn_rx_fail(rx, "trace header: pid 0");
	if (atr_get32(b + ATR_H_CMDLINE) > ATR_H_CMDLINE_MAX)
		return atn_rx_fail(rx, "trace header: cmdline length %u",
				   atr_get32(b + ATR_H_CMDLINE));
	if (first) {
		h->pid = pid;
		h->block_size = bs;
		h->trace_features = feat;
		h->start_realtime = rt;
	} else if (pid != h->pid || bs != h->block_size || feat != h->trace_features ||
		   rt != h->start_realtime) {
		return atn_rx_fail(rx,
				   "trace header update names another process or format "
				   "(pid %u, was %u)",
				   pid, h->pid);
	}
	return 0;
}

/* Largest UNIT payload a stream with this block size may carry. */
static size_t unit_max(const struct atn_hello *h)
{
	size_t f = ATR_BLOCK_HEADER_SIZE +
		   ZSTD_compressBound(ATR_V2_ENC_BOUND((size_t)h->block_size)) + ATR_UNIT_ALIGN;
	return f > h->block_size ? f : h->block_size;
}

/* Decompress and decode a frame: exactly what the reader will do. */
static int check_frame_payload(struct atn_rx *rx, const uint8_t *u, uint32_t csize, uint32_t used,
			       uint32_t nrec, uint32_t calls)
{
	struct atn_scratch *s = rx->scratch;
	if (!s) {
		s = rx->scratch = calloc(1, sizeof *s);
		if (!s)
			return atn_rx_fail(rx, "out of memory");
	}
	size_t dn = ATR_V2_ENC_BOUND((size_t)rx->hello.block_size);
	if (!s->dec && !(s->dec = malloc(dn)))
		return atn_rx_fail(rx, "out of memory");
	if (!s->rec && !(s->rec = malloc(rx->hello.block_size)))
		return atn_rx_fail(rx, "out of memory");
	const uint8_t *enc = u + ATR_BLOCK_HEADER_SIZE;
	size_t elen = csize;
	if (rx->hello.trace_features & ATR_FEAT_ZSTD) {
		if (!s->dctx && !(s->dctx = ZSTD_createDCtx()))
			return atn_rx_fail(rx, "out of memory");
		size_t r = ZSTD_decompressDCtx(s->dctx, s->dec, dn, enc, csize);
		if (ZSTD_isError(r))
			return atn_rx_fail(rx, "frame %llu: zstd: %s",
					   (unsigned long long)rx->units, ZSTD_getErrorName(r));
		enc = s->dec;
		elen = r;
	}
	struct atr_v2_meta m;
	const char *why = "";
	long got = atr_v2_decode(enc, elen, rx->hello.trace_features, s->rec, used, &m, &why);
	if (got < 0)
		return atn_rx_fail(rx, "frame %llu: records do not decode: %s",
				   (unsigned long long)rx->units, why);
	if ((uint64_t)got != used || m.records != nrec || m.calls != calls)
		return atn_rx_fail(rx, "frame %llu: decoded records disagree with its header",
				   (unsigned long long)rx->units);
	return 0;
}

static int check_unit(struct atn_rx *rx, const uint8_t *u, size_t len)
{
	const struct atn_hello *h = &rx->hello;
	unsigned long long k = (unsigned long long)rx->units;
	if (len < ATR_BLOCK_HEADER_SIZE)
		return atn_rx_fail(rx, "unit %llu: %zu bytes, shorter than a unit header", k, len);
	uint32_t magic = atr_get32(u + ATR_B_MAGIC), kind = atr_get32(u + ATR_B_KIND);
	if (magic != ATR_BLOCK_MAGIC)
		return atn_rx_fail(rx, "unit %llu: bad magic 0x%08x", k, magic);
	if (atr_get32(u + ATR_B_PID) != h->pid)
		return atn_rx_fail(rx, "unit %llu: pid %u in a stream of pid %u", k,
				   atr_get32(u + ATR_B_PID), h->pid);
	if (atr_get32(u + ATR_B_THREAD) == 0)
		return atn_rx_fail(rx, "unit %llu: thread serial 0", k);
	if (kind == ATR_BLOCK_STAGING || kind == ATR_BLOCK_RETIRED) {
		if (len > h->block_size || len % 8)
			return atn_rx_fail(rx,
					   "unit %llu: staging block of %zu bytes (block size %u)",
					   k, len, h->block_size);
		return 0;
	}
	if (kind != ATR_BLOCK_FRAME)
		return atn_rx_fail(rx, "unit %llu: unknown kind %u", k, kind);
	if (atr_get32(u + ATR_U_CHECK) != atr_unit_check(u))
		return atn_rx_fail(rx, "frame %llu: header check mismatch", k);
	uint32_t used = atr_get32(u + ATR_B_USED), csize = atr_get32(u + ATR_U_CSIZE);
	uint32_t nrec = atr_get32(u + ATR_B_RECORDS), calls = atr_get32(u + ATR_U_CALLS);
	if (used > h->block_size - ATR_BLOCK_HEADER_SIZE || used % 8 || calls > nrec ||
	    (uint64_t)nrec * 16 > used ||
	    csize > ZSTD_compressBound(ATR_V2_ENC_BOUND((size_t)h->block_size)))
		return atn_rx_fail(rx,
				   "frame %llu: invalid sizes (used %u, compressed %u, records %u, "
				   "calls %u, block size %u)",
				   k, used, csize, nrec, calls, h->block_size);
	size_t body = len - ATR_BLOCK_HEADER_SIZE;
	if (body < csize ||
	    body > ((size_t)csize + ATR_UNIT_ALIGN - 1) / ATR_UNIT_ALIGN * ATR_UNIT_ALIGN)
		return atn_rx_fail(rx, "frame %llu: message of %zu bytes for %u compressed bytes",
				   k, len, csize);
	return check_frame_payload(rx, u, csize, used, nrec, calls);
}

/* A message's header is in rx->buf: what comes next. */
static int msg_header(struct atn_rx *rx, const struct atn_rx_cb *cb, void *ctx)
{
	uint32_t type = atr_get32(rx->buf), len = atr_get32(rx->buf + 4);
	rx->msg_type = type;
	switch (type) {
	case ATN_MSG_UNIT:
		if (len < ATR_BLOCK_HEADER_SIZE || len > unit_max(&rx->hello))
			return atn_rx_fail(rx, "unit message of %u bytes (block size %u)", len,
					   rx->hello.block_size);
		break;
	case ATN_MSG_HEADER:
		if (len != rx->hello.trace_hdr_size)
			return atn_rx_fail(rx, "header message of %u bytes (expected %u)", len,
					   rx->hello.trace_hdr_size);
		break;
	case ATN_MSG_END:
		if (len != 0)
			return atn_rx_fail(rx, "end message with %u payload bytes", len);
		rx->state = ATN_RX_DONE;
		rx->need = rx->have = 0;
		rx->done = rx->pos;
		return cb->end ? cb->end(ctx) : 0;
	default:
		return atn_rx_fail(rx, "unknown message type %u", type);
	}
	rx->state = ATN_RX_PAYLOAD;
	return want(rx, len);
}

/* rx->buf holds rx->need bytes for the current state. */
static int complete(struct atn_rx *rx, const struct atn_rx_cb *cb, void *ctx)
{
	switch (rx->state) {
	case ATN_RX_HELLO:
		if (!rx->hello_rest) {
			if (check_hello(rx))
				return -1;
			if (rx->hello.hello_size > ATN_HELLO_SIZE) {
				/* a later version's longer hello: skip the rest */
				rx->hello_rest = 1;
				return want(rx, rx->hello.hello_size - ATN_HELLO_SIZE);
			}
		}
		rx->state = ATN_RX_TRACE_HDR;
		return want(rx, rx->hello.trace_hdr_size);
	case ATN_RX_TRACE_HDR:
		if (check_trace_hdr(rx, 1) || (cb->header && cb->header(ctx, rx->buf, 1)))
			return -1;
		rx->msg_base = rx->done = rx->pos;
		rx->state = ATN_RX_MSG_HDR;
		return want(rx, ATN_MSG_HEADER_SIZE);
	case ATN_RX_MSG_HDR:
		return msg_header(rx, cb, ctx);
	case ATN_RX_PAYLOAD:
		if (rx->msg_type == ATN_MSG_UNIT) {
			if (check_unit(rx, rx->buf, rx->need) ||
			    (cb->unit && cb->unit(ctx, rx->buf, rx->need)))
				return -1;
			rx->units++;
		} else {
			if (check_trace_hdr(rx, 0) || (cb->header && cb->header(ctx, rx->buf, 0)))
				return -1;
		}
		rx->done = rx->pos;
		rx->state = ATN_RX_MSG_HDR;
		return want(rx, ATN_MSG_HEADER_SIZE);
	case ATN_RX_DONE:
		break;
	}
	return atn_rx_fail(rx, "bytes after the end message");
}

int atn_rx_feed(struct atn_rx *rx, const uint8_t *p, size_t n, const struct atn_rx_cb *cb,
		void *ctx)
{
	if (rx->err[0])
		return -1;
	if (rx->state == ATN_RX_HELLO && !rx->buf && want(rx, ATN_HELLO_SIZE))
		return -1;
	rx->bytes += n;
	while (n) {
		if (rx->state == ATN_RX_DONE)
			return atn_rx_fail(rx, "bytes after the end message");
		size_t take = rx->need - rx->have;
		if (take > n)
			take = n;
		memcpy(rx->buf + rx->have, p, take);
		rx->have += take;
		rx->pos += take;
		p += take;
		n -= take;
		if (rx->have == rx->need && complete(rx, cb, ctx))
			return -1;
	}
	return 0;
}

/* ---- the collector's files ---- */

_Static_assert(ATN_FILE_HDR_SIZE == ATR_HEADER_SIZE, "the file header is a trace header");
#define ATN_PAGE 4096u /* staging blocks start at a page, as in a local file */

int atn_file_hdr_read(const uint8_t *h, struct atn_file_hdr *out)
{
	memset(out, 0, sizeof *out);
	if (memcmp(h + ATR_H_MAGIC, ATR_MAGIC, 8) != 0)
		return -1;
	out->pid = atr_get32(h + ATR_H_PID);
	out->exec_seq = atr_get32(h + ATR_H_EXEC_SEQ);
	out->block_size = atr_get32(h + ATR_H_BLOCK_SIZE);
	out->clean_exit = (atr_get32(h + ATR_H_STATUS) & ATR_STATUS_CLEAN_EXIT) != 0;
	out->start_realtime = atr_get64(h + ATR_H_START_REALTIME);
	memcpy(out->exe, h + ATR_H_EXE, sizeof out->exe - 1);
	return 0;
}

void atn_file_hdr_set_exec_seq(uint8_t *h, uint32_t exec_seq)
{
	atr_put32(h + ATR_H_EXEC_SEQ, exec_seq);
}

static uint64_t unit_key(const uint8_t *u)
{
	return (uint64_t)atr_get32(u + ATR_B_THREAD) << 40 ^ atr_get64(u + ATR_B_SEQ);
}

static uint64_t frame_span(uint64_t len)
{
	return (len + ATR_UNIT_ALIGN - 1) & ~(uint64_t)(ATR_UNIT_ALIGN - 1);
}

void atn_unit_of(const uint8_t *u, size_t len, uint32_t block_size, struct atn_unit *out)
{
	out->key = unit_key(u);
	out->frame = atr_get32(u + ATR_B_KIND) == ATR_BLOCK_FRAME;
	out->span = out->frame ? frame_span(len) : block_size;
}

uint64_t atn_unit_start(const struct atn_unit *u, uint64_t end)
{
	return u->frame ? end : (end + ATN_PAGE - 1) & ~(uint64_t)(ATN_PAGE - 1);
}

int64_t atn_file_units(int fd, uint64_t size, uint32_t block_size, atn_unit_fn fn, void *ctx)
{
	uint64_t off = ATR_HEADER_SIZE, end = off;
	while (off + ATR_BLOCK_HEADER_SIZE <= size) {
		uint8_t u[ATR_BLOCK_HEADER_SIZE];
		if (pread(fd, u, sizeof u, (off_t)off) != (ssize_t)sizeof u)
			break;
		if (atr_get64(u) == 0 && off % ATN_PAGE) {
			off = (off + ATN_PAGE - 1) &
			      ~(uint64_t)(ATN_PAGE - 1); /* the gap before a staging block */
			continue;
		}
		uint32_t kind = atr_get32(u + ATR_B_KIND);
		if (atr_get32(u + ATR_B_MAGIC) != ATR_BLOCK_MAGIC)
			break;
		struct atn_unit x = {.key = unit_key(u)};
		if ((kind == ATR_BLOCK_STAGING || kind == ATR_BLOCK_RETIRED) &&
		    off % ATN_PAGE == 0) {
			x.span = block_size;
		} else if (kind == ATR_BLOCK_FRAME &&
			   atr_get32(u + ATR_U_CHECK) == atr_unit_check(u)) {
			uint64_t len = ATR_BLOCK_HEADER_SIZE + (uint64_t)atr_get32(u + ATR_U_CSIZE);
			if (off + len > size)
				break;
			x.frame = 1;
			x.span = frame_span(len);
		} else {
			break;
		}
		int r = fn(ctx, &x, off);
		if (r)
			return r < 0 ? r : -1;
		off += x.span;
		end = off;
	}
	return (int64_t)end;
}
