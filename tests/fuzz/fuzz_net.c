/* fuzz_net.c - fuzz target for the collector's reader of the network
 * trace stream (docs/NET_FORMAT.md, src/format/atn_stream.c).
 *
 * Every input is fed to atn_rx_feed twice: at once, and in pieces whose
 * sizes come from the input itself (a socket splits a stream anywhere).
 * Both feeds must agree on success, on the units handed out and on the
 * error; corrupt input must give an error, never a crash.  The units of a
 * stream read well are laid out as the collector writes its file
 * (atn_unit_of, atn_unit_start) and read back by atn_file_units, which
 * must find them all where they were written, and a prefix of them in a
 * cut of the file.
 *
 * Built two ways (tests/fuzz/net.cmake):
 *   fuzz_net_replay  plain C with FUZZ_NET_MAIN: valid streams built in
 *                    memory (frames with and without zstd, staging
 *                    blocks, header updates) and deterministic mutations
 *                    (bit flips, truncations, edge values in length and
 *                    size fields, swapped messages), run by ctest
 *   fuzz_net         libFuzzer (-DALLOCTRACE_FUZZ=ON, clang)
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zstd.h>

#include "atn_stream.h"
#include "atr_format.h"
#include "atr_v2.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The file the collector would write of the units (atn_unit_of,
 * atn_unit_start), to scan back with atn_file_units. */
#define FILE_UNITS_MAX 256
struct file_image {
	uint8_t *p;
	uint64_t end, cap;
	uint32_t block_size;
	size_t n;
	struct atn_unit u[FILE_UNITS_MAX];
	uint64_t off[FILE_UNITS_MAX];
};

struct seen {
	uint64_t units, unit_bytes, headers;
	struct rx_file {
		struct atn_rx *rx;
		struct file_image *img;
	} file;
};

static void image_put(struct file_image *m, const uint8_t *u, size_t len)
{
	struct atn_unit x;
	atn_unit_of(u, len, m->block_size, &x);
	uint64_t at = atn_unit_start(&x, m->end);
	size_t i = 0;
	while (!x.frame && i < m->n && (m->u[i].frame || m->u[i].key != x.key))
		i++;
	if (!x.frame && i < m->n) {
		at = m->off[i]; /* a later copy of a staging block replaces it */
	} else {
		if (m->n == FILE_UNITS_MAX)
			return;
		m->u[m->n] = x;
		m->off[m->n++] = at;
		m->end = at + x.span;
	}
	if (m->end > m->cap) {
		uint64_t nc = m->end * 2;
		m->p = realloc(m->p, nc);
		if (!m->p)
			abort();
		memset(m->p + m->cap, 0, nc - m->cap);
		m->cap = nc;
	}
	memset(m->p + at, 0, x.frame ? len : m->block_size);
	memcpy(m->p + at, u, len);
}

struct scan_seen {
	const struct file_image *m;
	size_t n;
	int prefix; /* only a prefix of the units need be found */
};

static int scan_cb(void *ctx, const struct atn_unit *u, uint64_t off)
{
	struct scan_seen *s = ctx;
	const struct file_image *m = s->m;
	if (s->n >= m->n || m->off[s->n] != off || m->u[s->n].key != u->key ||
	    m->u[s->n].frame != u->frame || m->u[s->n].span != u->span) {
		fprintf(stderr,
			"fuzz_net: atn_file_units: unit %zu at %llu is not what was written\n",
			s->n, (unsigned long long)off);
		abort();
	}
	s->n++;
	return 0;
}

/* The units read back from the file as they were written, and from a cut
 * of it a prefix of them. */
static void image_check(struct file_image *m, uint64_t cut)
{
	static int fd = -1;
	if (fd < 0 && (fd = memfd_create("fuzz_net", 0)) < 0)
		abort();
	uint64_t size = m->n ? m->end : ATN_FILE_HDR_SIZE;
	if (size > m->cap)
		return; /* no unit: nothing was written */
	if (ftruncate(fd, 0) || pwrite(fd, m->p, size, 0) != (ssize_t)size)
		abort();
	struct scan_seen s = {.m = m};
	int64_t end = atn_file_units(fd, size, m->block_size, scan_cb, &s);
	if (end != (int64_t)size || s.n != m->n) {
		fprintf(stderr,
			"fuzz_net: atn_file_units found %zu of %zu units, end %lld of %llu\n", s.n,
			m->n, (long long)end, (unsigned long long)size);
		abort();
	}
	cut %= size + 1;
	s.n = 0;
	if (ftruncate(fd, (off_t)cut) ||
	    atn_file_units(fd, cut, m->block_size, scan_cb, &s) < ATN_FILE_HDR_SIZE)
		abort();
}

static int cb_header(void *ctx, const uint8_t *hdr, int first)
{
	struct seen *s = ctx;
	(void)first;
	s->headers += hdr[0];
	return 0;
}

static int cb_unit(void *ctx, const uint8_t *u, size_t len)
{
	struct seen *s = ctx;
	if (len < ATR_BLOCK_HEADER_SIZE)
		abort(); /* the reader promised a whole unit header */
	s->units++;
	s->unit_bytes += len + u[len - 1];
	if (s->file.img) {
		s->file.img->block_size = s->file.rx->hello.block_size;
		image_put(s->file.img, u, len);
	}
	return 0;
}

static const struct atn_rx_cb cbs = {.header = cb_header, .unit = cb_unit};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct atn_rx a, b;
	struct seen sa = {0}, sb = {0};
	struct file_image img = {.end = ATN_FILE_HDR_SIZE};
	atn_rx_init(&a);
	atn_rx_init(&b);
	sa.file.rx = &a;
	sa.file.img = &img;
	int ra = atn_rx_feed(&a, data, size, &cbs, &sa);
	int rb = 0;
	size_t off = 0, k = 0;
	while (off < size && rb == 0) {
		size_t piece = 1 + (data[k++ % size] % 97);
		if (piece > size - off)
			piece = size - off;
		rb = atn_rx_feed(&b, data + off, piece, &cbs, &sb);
		off += piece;
	}
	if (ra != rb || sa.units != sb.units || sa.unit_bytes != sb.unit_bytes ||
	    sa.headers != sb.headers || strcmp(a.err, b.err) != 0) {
		fprintf(stderr, "fuzz_net: whole and piecewise feeds disagree: %d/%d '%s' / '%s'\n",
			ra, rb, a.err, b.err);
		abort();
	}
	if (ra != 0 && !a.err[0])
		abort(); /* an error always says why */
	if (ra == 0)
		image_check(&img, size ? (uint64_t)data[size / 2] * 4099 + size : 0);
	free(img.p);
	atn_rx_free(&a);
	atn_rx_free(&b);
	return 0;
}

#ifdef FUZZ_NET_MAIN

static uint64_t rs = 0x2545f4914f6cdd1dULL;
static uint64_t rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

struct sbuf {
	uint8_t *p;
	size_t n, cap;
};

static uint8_t *grow(struct sbuf *s, size_t n)
{
	if (s->n + n > s->cap) {
		s->cap = (s->n + n) * 2;
		s->p = realloc(s->p, s->cap);
		if (!s->p)
			abort();
	}
	uint8_t *r = s->p + s->n;
	memset(r, 0, n);
	s->n += n;
	return r;
}

#define PID 4242u
#define BS  4096u

static void msg(struct sbuf *s, uint32_t type, const void *p, size_t len)
{
	uint8_t *h = grow(s, 8);
	put32(h, type);
	put32(h + 4, (uint32_t)len);
	if (len) /* END has no payload (and p is NULL then) */
		memcpy(grow(s, len), p, len);
}

static void trace_header(uint8_t *t, uint64_t feat, uint32_t status)
{
	memset(t, 0, ATR_HEADER_SIZE);
	memcpy(t, ATR_MAGIC, 8);
	put32(t + ATR_H_VERSION, ATR_VERSION);
	put32(t + ATR_H_HEADER_SIZE, ATR_HEADER_SIZE);
	put64(t + ATR_H_FEATURES, feat);
	put32(t + ATR_H_BLOCK_SIZE, BS);
	put32(t + ATR_H_STATUS, status);
	put32(t + ATR_H_PID, PID);
	put64(t + ATR_H_START_REALTIME, 1700000000000000000ull);
	memcpy(t + ATR_H_EXE, "/bin/fuzz", 9);
}

/* v1 records of one thread: mallocs, frees, a realloc */
static size_t records(uint8_t *out, unsigned n, uint64_t *ts, unsigned *calls)
{
	uint64_t *w = (uint64_t *)out;
	size_t k = 0;
	for (unsigned i = 0; i < n; i++) {
		uint64_t p = 0x10000 + 32 * (uint64_t)(i % 7);
		w[k++] = (++*ts << ATR_TS_SHIFT) | ATR_T_MALLOC;
		w[k++] = p;
		w[k++] = (uint64_t)(i * 13 % 500) | (uint64_t)8 << 48;
		w[k++] = (++*ts << ATR_TS_SHIFT) | ATR_T_FREE;
		w[k++] = p;
		*calls += 2;
	}
	return k * 8;
}

static void frame(struct sbuf *s, uint64_t feat, uint64_t seq, uint64_t *ts)
{
	uint8_t rec[BS], enc[ATR_V2_ENC_BOUND(BS)], z[ZSTD_COMPRESSBOUND(ATR_V2_ENC_BOUND(BS))];
	unsigned calls = 0;
	size_t used = records(rec, 20, ts, &calls);
	struct atr_v2_meta m;
	size_t elen = atr_v2_encode(rec, used, feat, enc, sizeof enc, &m);
	if (!elen)
		abort();
	const uint8_t *pay = enc;
	size_t plen = elen;
	if (feat & ATR_FEAT_ZSTD) {
		plen = ZSTD_compress(z, sizeof z, enc, elen, 1);
		if (ZSTD_isError(plen))
			abort();
		pay = z;
	}
	uint8_t u[64 + sizeof z + 8];
	memset(u, 0, sizeof u);
	put32(u + ATR_B_MAGIC, ATR_BLOCK_MAGIC);
	put32(u + ATR_B_KIND, ATR_BLOCK_FRAME);
	put32(u + ATR_B_THREAD, 1);
	put32(u + ATR_B_TID, PID);
	put64(u + ATR_B_SEQ, seq);
	put32(u + ATR_B_USED, (uint32_t)used);
	put32(u + ATR_B_RECORDS, m.records);
	put32(u + ATR_B_PID, PID);
	put32(u + ATR_U_CSIZE, (uint32_t)plen);
	put64(u + ATR_U_FIRST_TS, m.first_ts);
	put64(u + ATR_U_LAST_TS, m.last_ts);
	put32(u + ATR_U_CALLS, m.calls);
	put32(u + ATR_U_CHECK, atr_unit_check(u));
	memcpy(u + 64, pay, plen);
	msg(s, ATN_MSG_UNIT, u, 64 + ((plen + 7) & ~(size_t)7));
}

static void staging(struct sbuf *s, uint64_t seq, uint64_t *ts)
{
	uint8_t u[BS];
	unsigned calls = 0;
	memset(u, 0, sizeof u);
	put32(u + ATR_B_MAGIC, ATR_BLOCK_MAGIC);
	put32(u + ATR_B_KIND, ATR_BLOCK_STAGING);
	put32(u + ATR_B_THREAD, 1);
	put32(u + ATR_B_TID, PID);
	put64(u + ATR_B_SEQ, seq);
	put32(u + ATR_B_PID, PID);
	size_t used = records(u + 64, 5, ts, &calls);
	msg(s, ATN_MSG_UNIT, u, 64 + used + 8);
}

static void stream(struct sbuf *s, uint64_t feat, int end)
{
	uint8_t *h = grow(s, ATN_HELLO_SIZE);
	memcpy(h, ATN_MAGIC, 8);
	put32(h + ATN_H_VERSION, ATN_VERSION);
	put32(h + ATN_H_HELLO_SIZE, ATN_HELLO_SIZE);
	put32(h + ATN_H_TRACE_HDR, ATR_HEADER_SIZE);
	memcpy(h + ATN_H_HOST, "fuzzhost", 8);
	trace_header(grow(s, ATR_HEADER_SIZE), feat, 0);
	uint64_t ts = 0;
	frame(s, feat, 0, &ts);
	frame(s, feat, 1, &ts);
	staging(s, 2, &ts);
	uint8_t t[ATR_HEADER_SIZE];
	trace_header(t, feat, ATR_STATUS_CLEAN_EXIT);
	msg(s, ATN_MSG_HEADER, t, sizeof t);
	if (end)
		msg(s, ATN_MSG_END, NULL, 0);
}

static void mutate(const struct sbuf *seed, struct sbuf *m)
{
	m->n = 0;
	memcpy(grow(m, seed->n), seed->p, seed->n);
	unsigned k = 1 + (unsigned)(rnd() % 4);
	for (unsigned i = 0; i < k; i++) {
		/* half of the edits go past the hello and the trace header,
		 * into the messages */
		size_t skip = ATN_HELLO_SIZE + ATR_HEADER_SIZE;
		size_t at = (rnd() & 1) && m->n > skip ? skip + (size_t)(rnd() % (m->n - skip))
						       : (size_t)(rnd() % m->n);
		switch (rnd() % 6) {
		case 0: /* bit flip */
			m->p[at] ^= (uint8_t)(1u << (rnd() % 8));
			break;
		case 1: /* truncate */
			m->n = at;
			if (m->n == 0)
				return;
			break;
		case 2: { /* an edge value in some 32-bit field */
			static const uint32_t edge[] = {0,	    1,		7,	  63,
							64,	    4095,	4096,	  4097,
							0x7fffffff, 0xffffffff, 1u << 26, 65536};
			if (at + 4 <= m->n)
				put32(m->p + at, edge[rnd() % (sizeof edge / sizeof edge[0])]);
			break;
		}
		case 3: /* random byte */
			m->p[at] = (uint8_t)rnd();
			break;
		case 4: { /* duplicate a chunk (messages twice, or cut in half) */
			size_t len = (size_t)(rnd() % 256);
			if (at + len <= m->n) {
				size_t old = m->n;
				uint8_t *dst = grow(m, len);
				memmove(dst, m->p + at, len);
				(void)old;
			}
			break;
		}
		default: /* a field at a message boundary-ish offset */
			if (at + 8 <= m->n)
				put64(m->p + at, rnd());
			break;
		}
	}
}

int main(int argc, char **argv)
{
	unsigned iters = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 20000;
	struct sbuf seeds[3] = {{0}}, m = {0};
	stream(&seeds[0], ATR_FEAT_CLOCK_MONO_NS, 0);
	stream(&seeds[1], ATR_FEAT_CLOCK_MONO_NS | ATR_FEAT_ZSTD, 1);
	stream(&seeds[2], ATR_FEAT_CLOCK_TSC | ATR_FEAT_ZSTD | ATR_FEAT_CHUNK_FLAGS, 0);
	/* the seeds themselves must pass, whole and in pieces */
	for (int i = 0; i < 3; i++) {
		struct atn_rx rx;
		struct seen s = {0};
		atn_rx_init(&rx);
		if (atn_rx_feed(&rx, seeds[i].p, seeds[i].n, &cbs, &s) != 0 || s.units != 3) {
			fprintf(stderr, "fuzz_net: seed %d rejected: %s (%llu units)\n", i, rx.err,
				(unsigned long long)s.units);
			return 1;
		}
		atn_rx_free(&rx);
		LLVMFuzzerTestOneInput(seeds[i].p, seeds[i].n);
		for (size_t n = 0; n < seeds[i].n; n += 1 + seeds[i].n / 300)
			LLVMFuzzerTestOneInput(seeds[i].p, n); /* every truncation point */
	}
	unsigned rejected = 0;
	for (unsigned i = 0; i < iters; i++) {
		mutate(&seeds[i % 3], &m);
		struct atn_rx rx;
		atn_rx_init(&rx);
		struct seen s = {0};
		rejected += atn_rx_feed(&rx, m.p, m.n, &cbs, &s) != 0;
		atn_rx_free(&rx);
		LLVMFuzzerTestOneInput(m.p, m.n);
	}
	printf("fuzz_net: %u mutated streams, %u rejected with a message, no crash\n", iters,
	       rejected);
	for (int i = 0; i < 3; i++)
		free(seeds[i].p);
	free(m.p);
	return 0;
}

#endif
