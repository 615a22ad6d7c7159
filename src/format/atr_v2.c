/* atr_v2.c - compact encoding of a block of v1 records (see atr_v2.h).
 *
 * Per record: a tag byte (call type in the low nibble, a hit in the
 * address cache in the high nibble), the timestamp as a zigzag varint delta
 * from the previous record, then the record's fields as varints.  State
 * (previous stamp, address cache, delta base) starts afresh in every
 * block, so each frame decodes on its own.
 */
#include "atr_v2.h"

#include <string.h>

#include "atr_format.h"
#include "atr_v2dec.h"

/* ---- encoder ----------------------------------------------------------
 *
 * The recorder runs this at every flush, in the program's thread: it is
 * written for few instructions per record (bench/RESULTS.md, "Trace
 * format v2").  One room check per record for the most bytes the record
 * can take, then varints stored without checks; a record that may not
 * fit goes through a scratch buffer and is copied if it does.  The
 * address cache is shifted inline.  The bytes are the ones
 * docs/TRACE_FORMAT.md specifies (tests/test_v2.c re-encodes recorded
 * frames and compares them byte for byte). */

#define V2_ROOM 128 /* most bytes of one call or EXT record: 2 + 10 per varint */
_Static_assert(2 + 10 * 9 <= V2_ROOM,
	       "call record: ts, address, 3 size varints, 2 extras, stack, duration");
_Static_assert(2 + 10 * 10 <= V2_ROOM, "EXT record: ts, xt, 6 words, stack, duration");

static uint8_t *put_var_long(uint8_t *o, uint64_t v)
{
	do {
		*o++ = (uint8_t)(v | 0x80);
		v >>= 7;
	} while (v >= 0x80);
	*o++ = (uint8_t)v;
	return o;
}

/* Most varints are 1-3 bytes: those without a loop. */
static inline uint8_t *put_var(uint8_t *o, uint64_t v)
{
	if (v < 0x80) {
		o[0] = (uint8_t)v;
		return o + 1;
	}
	if (v < 0x4000) {
		o[0] = (uint8_t)(v | 0x80);
		o[1] = (uint8_t)(v >> 7);
		return o + 2;
	}
	if (v < 0x200000) {
		o[0] = (uint8_t)(v | 0x80);
		o[1] = (uint8_t)(v >> 7 | 0x80);
		o[2] = (uint8_t)(v >> 14);
		return o + 3;
	}
	return put_var_long(o, v);
}

/* Index of p (not 0) in the cache, or -1.  Entries are distinct (a hit
 * moves, a miss inserts), so the first match is the only one. */
static inline int enc_find(const uint64_t *c, uint64_t p)
{
#pragma GCC unroll 8
	for (int i = 0; i < V2_CACHE; i++)
		if (c[i] == p)
			return i;
	return -1;
}

/* cache_use() without a memmove call: nothing for a hit at the front
 * (the usual hit: a free, then a malloc that gets the block back). */
static inline void enc_use(uint64_t *c, int i, uint64_t p)
{
	if (i == 0)
		return;
	if (i < 0) {
		uint64_t a0 = c[0], a1 = c[1], a2 = c[2], a3 = c[3], a4 = c[4], a5 = c[5],
			 a6 = c[6];
		c[7] = a6, c[6] = a5, c[5] = a4, c[4] = a3, c[3] = a2, c[2] = a1, c[1] = a0;
	} else {
		for (int j = i; j > 0; j--)
			c[j] = c[j - 1];
	}
	c[0] = p;
}

/* A realloc's old pointer: 0, a cache index + 1, or a delta + 9. */
static inline uint8_t *put_secondary(uint8_t *o, const struct v2_state *s, uint64_t p)
{
	if (!p)
		return put_var(o, 0);
	int i = enc_find(s->cache, p);
	if (i >= 0)
		return put_var(o, V2_SEC_CACHE + (unsigned)i);
	return put_var(o, zz((int64_t)(p - s->base)) + V2_SEC_DELTA);
}

/* A word of an extended call by its ATR_XCALLS letter: A an address as
 * a zigzag delta from the last allocation's (the base does not move), S a
 * signed value zigzagged, U as is. */
static uint8_t *put_xword(uint8_t *o, const struct v2_state *s, char letter, uint64_t v)
{
	if (letter == 'A')
		v = zz((int64_t)(v - s->base));
	else if (letter == 'S')
		v = zz((int64_t)v);
	return put_var(o, v);
}

/* Extra words of an allocation after ret and the size word, by type:
 * 0 none, 1 a plain word, 2 an old pointer, 3 an old pointer and a word. */
static const uint8_t enc_extra[ATR_T_CALL_LAST + 1] = {
    [ATR_T_CALLOC] = 1,	       [ATR_T_MEMALIGN] = 1, [ATR_T_POSIX_MEMALIGN] = 1,
    [ATR_T_ALIGNED_ALLOC] = 1, [ATR_T_REALLOC] = 2,  [ATR_T_REALLOCARRAY] = 3,
};

/* A meta record: tag, v1 byte, stamp, word 1, the payload as is.
 * Returns the new end of out, or NULL if it does not fit. */
static uint8_t *enc_meta(uint8_t *o, uint8_t *oend, struct v2_state *s, uint64_t w0, uint64_t ts,
			 uint64_t w1, const uint8_t *payload, size_t len)
{
	uint8_t h[32], *q = h;
	*q++ = V2_TAG_META;
	*q++ = (uint8_t)w0;
	q = put_var(q, zz((int64_t)(ts - s->prev_ts)));
	q = put_var(q, w1);
	size_t hl = (size_t)(q - h);
	if ((size_t)(oend - o) < hl || (size_t)(oend - o) - hl < len)
		return NULL;
	memcpy(o, h, hl);
	memcpy(o + hl, payload, len);
	s->prev_ts = ts;
	return o + hl + len;
}

/* An EXT record of need bytes into q (room for V2_ROOM bytes). */
static uint8_t *enc_ext(uint8_t *q, struct v2_state *s, const uint8_t *r, size_t need, uint64_t ts,
			unsigned flags)
{
	uint64_t w0 = atr_get64(r), xt = atr_get64(r + 8);
	int dfl = flags == s->dflt[ATR_T_EXT];
	*q++ = dfl ? ATR_T_EXT : V2_TAG_EXPL;
	if (!dfl)
		*q++ = (uint8_t)w0;
	q = put_var(q, zz((int64_t)(ts - s->prev_ts)));
	s->prev_ts = ts;
	q = put_var(q, xt);
	const char *l = atr_xcall_letters((unsigned)xt);
	unsigned i = 2;
	for (; l[i - 2]; i++)
		q = put_xword(q, s, l[i - 2], atr_get64(r + 8 * i));
	for (; 8 * (size_t)i < need; i++)
		q = put_var(q, atr_get64(r + 8 * i)); /* stack id, duration */
	return q;
}

size_t atr_v2_encode(const uint8_t *v1, size_t n, uint64_t features, uint8_t *out, size_t cap,
		     struct atr_v2_meta *meta)
{
	struct v2_state s;
	state_init(&s, features);
	const uint64_t cmask = s.cmask;
	uint8_t *o = out, *const oend = out + cap;
	uint8_t scratch[V2_ROOM];
	struct atr_v2_meta m = {0, 0, UINT64_MAX, 0};
	size_t pos = 0;
	while (pos < n) {
		if (n - pos < 16)
			return 0;
		const uint8_t *r = v1 + pos;
		uint64_t w0 = atr_get64(r);
		unsigned type = (unsigned)(w0 & ATR_TYPE_MASK);
		unsigned flags = (unsigned)(w0 & ATR_FLAG_MASK);
		uint64_t ts = w0 >> ATR_TS_SHIFT;
		m.first_ts = ts < m.first_ts ? ts : m.first_ts;
		m.last_ts = ts > m.last_ts ? ts : m.last_ts;
		/* the record goes to o, or to scratch when it might not fit */
		uint8_t *d = (size_t)(oend - o) >= V2_ROOM ? o : scratch, *q = d;
		size_t need;
		if (__builtin_expect(type - 1 < ATR_T_CALL_LAST, 1)) {
			need = 8 * (size_t)atr_record_words(type, flags);
			if (need > n - pos)
				return 0;
			int free_ = type == ATR_T_FREE;
			uint64_t w1 = atr_get64(r + 8);
			uint64_t p = free_ ? w1 : w1 & ~cmask;
			int ci = p ? enc_find(s.cache, p) : -1;
			unsigned tag = flags == s.dflt[type] ? type : V2_TAG_EXPL;
			q[0] = (uint8_t)(tag | (unsigned)(ci + 1) << 4);
			q[1] = (uint8_t)w0;
			q += tag == V2_TAG_EXPL ? 2 : 1;
			q = put_var(q, zz((int64_t)(ts - s.prev_ts)));
			s.prev_ts = ts;
			if (ci < 0)
				q = put_var(q, p ? zz((int64_t)(p - (free_ ? s.fbase : s.base))) + 1
						 : 0);
			const uint8_t *opt = r + 8 * (size_t)atr_call_words(type);
			if (free_) {
				if (p)
					s.fbase = p;
				if (flags & ATR_FLAG_WIDE) {
					q = put_var(q, atr_get64(opt));
					opt += 8;
				}
			} else {
				uint64_t sw = atr_get64(r + 16);
				unsigned cb = (unsigned)(w1 & cmask);
				if (__builtin_expect(!(flags & ATR_FLAG_WIDE), 1)) {
					uint64_t size = sw & ATR_SIZE_MASK;
					uint16_t dv = (uint16_t)((uint16_t)(sw >> ATR_SIZE_BITS) -
								 slack_pred(size, cb, cmask));
					q = put_var(q, size);
					q = put_var(q, zz((int16_t)dv) << 2 | (cb >> 1));
				} else {
					q = put_var(q, sw);
					q = put_var(q, atr_get64(opt));
					opt += 8;
					q = put_var(q, cb >> 1);
				}
				unsigned x = enc_extra[type];
				if (x) {
					uint64_t e = atr_get64(r + 24);
					q = x == 1 ? put_var(q, e) : put_secondary(q, &s, e);
					if (x == 3)
						q = put_var(q, atr_get64(r + 32));
				}
				if (p)
					s.base = p;
			}
			if (flags & ATR_FLAG_STACK) {
				q = put_var(q, atr_get64(opt));
				opt += 8;
			}
			if (flags & ATR_FLAG_TIMED) {
				uint64_t dur = atr_get64(opt);
				q = put_var(q, dur);
				if ((type == ATR_T_REALLOC || type == ATR_T_REALLOCARRAY) &&
				    ts + dur > m.last_ts && ts + dur >= ts)
					m.last_ts = ts + dur;
			}
			if (p)
				enc_use(s.cache, ci, p);
			m.calls++;
		} else if (type >= ATR_T_THREAD_START) {
			uint64_t w1 = atr_get64(r + 8);
			uint64_t len = w1 & 0xffffffffu;
			need = 16 + ((len + 7) & ~7ULL);
			if (need > n - pos)
				return 0;
			o = enc_meta(o, oend, &s, w0, ts, w1, r + 16, len);
			if (!o)
				return 0;
			pos += need;
			m.records++;
			continue;
		} else if (type == ATR_T_EXT && s.xcalls) {
			need = 8 * (size_t)atr_ext_words(atr_get64(r + 8), flags);
			if (!need || need > n - pos)
				return 0;
			q = enc_ext(q, &s, r, need, ts, flags);
			m.calls++;
		} else {
			return 0;
		}
		if (__builtin_expect(d == scratch, 0)) {
			size_t k = (size_t)(q - d);
			if (k > (size_t)(oend - o))
				return 0;
			memcpy(o, d, k);
			q = o + k;
		}
		o = q;
		pos += need;
		m.records++;
	}
	if (!m.records)
		m.first_ts = 0;
	if (meta)
		*meta = m;
	return (size_t)(o - out);
}

static long fail(const char **why, const char *msg)
{
	if (why)
		*why = msg;
	return -1;
}

long atr_v2_decode(const uint8_t *in, size_t len, uint64_t features, uint8_t *out, size_t cap,
		   struct atr_v2_meta *meta, const char **why)
{
	struct v2_state s;
	state_init(&s, features);
	struct rbuf b = {in, in + len, 0};
	struct atr_v2_meta m = {0, 0, UINT64_MAX, 0};
	size_t pos = 0;
	const char *whyd = "";
	struct v2_rec r = {0};
	while (b.p < b.end) {
		size_t need = v2_dec_rec(&s, &b, &r, &whyd);
		if (!need)
			return fail(why, whyd);
		if (need > cap - pos)
			return fail(why, "frame decodes to more than its block size");
		uint64_t ts = r.ts;
		if (ts < m.first_ts)
			m.first_ts = ts;
		if (ts > m.last_ts)
			m.last_ts = ts;
		uint8_t *o = out + pos;
		unsigned flags = r.v1b & ATR_FLAG_MASK;
		atr_put64(o, ts << ATR_TS_SHIFT | r.v1b);
		pos += need;
		m.records++;
		if (r.type >= ATR_T_THREAD_START) {
			uint64_t plen = r.a & 0xffffffffu;
			atr_put64(o + 8, r.a);
			if (need > 16)
				memset(o + need - 8, 0, 8); /* padding */
			memcpy(o + 16, r.payload, plen);
			continue;
		}
		m.calls++;
		if (r.type == ATR_T_EXT) {
			atr_put64(o + 8, r.a);
			unsigned n = atr_xcall_words((unsigned)r.a), i = 2;
			for (unsigned k = 0; k < n; k++)
				atr_put64(o + 8 * i++, r.w[k]);
			if (flags & ATR_FLAG_STACK)
				atr_put64(o + 8 * i++, r.stack);
			if (flags & ATR_FLAG_TIMED)
				atr_put64(o + 8 * i, r.dur);
			continue;
		}
		/* a fixed size is a few stores; a variable one a `rep stos` */
		if (need <= 64 && cap - (pos - need) >= 64)
			memset(o, 0, 64);
		else
			memset(o, 0, need);
		atr_put64(o, ts << ATR_TS_SHIFT | r.v1b);
		unsigned opt = atr_call_words(r.type);
		if (r.type == ATR_T_FREE) {
			atr_put64(o + 8, r.a);
			if (flags & ATR_FLAG_WIDE)
				atr_put64(o + 8 * opt++, r.slack);
		} else {
			atr_put64(o + 8, r.a | r.cb);
			if (flags & ATR_FLAG_WIDE) {
				atr_put64(o + 16, r.size);
				atr_put64(o + 8 * opt++, r.slack);
			} else {
				atr_put64(o + 16, r.size | r.slack << ATR_SIZE_BITS);
			}
			switch (r.type) {
			case ATR_T_REALLOCARRAY:
				atr_put64(o + 32, r.y);
				/* fall through */
			case ATR_T_REALLOC:
			case ATR_T_CALLOC:
			case ATR_T_MEMALIGN:
			case ATR_T_POSIX_MEMALIGN:
			case ATR_T_ALIGNED_ALLOC:
				atr_put64(o + 24, r.x);
				break;
			default:
				break;
			}
		}
		if (flags & ATR_FLAG_STACK)
			atr_put64(o + 8 * opt++, r.stack);
		if (flags & ATR_FLAG_TIMED) {
			atr_put64(o + 8 * opt, r.dur);
			if ((r.type == ATR_T_REALLOC || r.type == ATR_T_REALLOCARRAY) &&
			    ts + r.dur > m.last_ts && ts + r.dur >= ts)
				m.last_ts = ts + r.dur;
		}
	}
	if (!m.records)
		m.first_ts = 0;
	if (meta)
		*meta = m;
	return (long)pos;
}
