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

#define V2_CACHE     8	  /* move-to-front cache of recent addresses */
#define V2_TAG_META  0x0u /* low nibble 0: meta record, its v1 byte follows */
#define V2_TAG_EXPL  0xfu /* low nibble 15: call, its v1 byte follows */
#define V2_SEC_CACHE 1u	  /* secondary pointer: 1..8 = cache hit */
#define V2_SEC_DELTA 9u	  /* secondary pointer: >= 9 = delta + 9 */

struct v2_state {
	uint64_t prev_ts;
	uint64_t base;	/* last allocation's address: allocations' deltas */
	uint64_t fbase; /* last free's address: frees' deltas */
	uint64_t cache[V2_CACHE];
	uint64_t cmask;		      /* chunk flag bits of ret (glibc) or 0 */
	unsigned dflt[ATR_T_EXT + 1]; /* default flags per call type */
	int xcalls;		      /* ATR_FEAT_XCALLS: EXT records allowed */
};

static void state_init(struct v2_state *s, uint64_t features)
{
	memset(s, 0, sizeof *s);
	s->cmask = (features & ATR_FEAT_CHUNK_FLAGS) ? ATR_CHUNK_MASK : 0;
	unsigned timed = (features & ATR_FEAT_TIMING) ? ATR_FLAG_TIMED : 0;
	unsigned stack = (features & ATR_FEAT_STACKS) ? ATR_FLAG_STACK : 0;
	for (unsigned t = 1; t <= ATR_T_EXT; t++)
		s->dflt[t] = timed | stack;
	s->xcalls = (features & ATR_FEAT_XCALLS) != 0;
	s->dflt[ATR_T_FREE] = timed;
	s->dflt[ATR_T_REALLOC] |= ATR_FLAG_TIMED;
	s->dflt[ATR_T_REALLOCARRAY] |= ATR_FLAG_TIMED;
}

static int cache_find(const struct v2_state *s, uint64_t p)
{
	for (int i = 0; i < V2_CACHE; i++)
		if (s->cache[i] == p)
			return i;
	return -1;
}

/* Move entry i (or, i < 0, a new entry) to the front. */
static void cache_use(struct v2_state *s, int i, uint64_t p)
{
	/* spelled out: GCC turns a loop into a call of memmove, one per
	 * record for at most 7 words */
	_Static_assert(V2_CACHE == 8, "cache_use spells out 8 entries");
	switch (i < 0 ? V2_CACHE - 1 : i) {
	case 7:
		s->cache[7] = s->cache[6];
		/* fall through */
	case 6:
		s->cache[6] = s->cache[5];
		/* fall through */
	case 5:
		s->cache[5] = s->cache[4];
		/* fall through */
	case 4:
		s->cache[4] = s->cache[3];
		/* fall through */
	case 3:
		s->cache[3] = s->cache[2];
		/* fall through */
	case 2:
		s->cache[2] = s->cache[1];
		/* fall through */
	case 1:
		s->cache[1] = s->cache[0];
		/* fall through */
	default:
		break;
	}
	s->cache[0] = p;
}

static inline uint64_t zz(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t unzz(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* glibc's usable size for a request, from the chunk flags: what the slack
 * field predicts, so a typical record stores slack 0. */
static uint16_t slack_pred(uint64_t size, unsigned cb, uint64_t cmask)
{
	if (!cmask)
		return 0;
	uint64_t csz = size + 8 + 15 < 32 ? 32 : (size + 8 + 15) & ~15ULL;
	uint64_t usable;
	if (cb & ATR_CHUNK_MMAPPED)
		usable = ((csz + 8 + 4095) & ~4095ULL) - 16;
	else
		usable = csz - 8;
	return (uint16_t)(usable - size);
}

/* ---- encoder ---------------------------------------------------------- */

struct wbuf {
	uint8_t *p, *end;
	int bad;
};

static inline void put_byte(struct wbuf *w, unsigned b)
{
	if (w->p < w->end)
		*w->p++ = (uint8_t)b;
	else
		w->bad = 1;
}

static inline void put_var(struct wbuf *w, uint64_t v)
{
	if (w->end - w->p < 10) {
		w->bad = 1;
		return;
	}
	while (v >= 0x80) {
		*w->p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*w->p++ = (uint8_t)v;
}

static inline uint64_t get64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8); /* v1 words are little-endian; so is every host we build for */
	return v;
}

static void put_secondary(struct wbuf *w, struct v2_state *s, uint64_t p)
{
	int i = p ? cache_find(s, p) : -1;
	if (!p)
		put_var(w, 0);
	else if (i >= 0)
		put_var(w, V2_SEC_CACHE + (unsigned)i);
	else
		put_var(w, zz((int64_t)(p - s->base)) + V2_SEC_DELTA);
}

/* A word of an extended call by its ATR_XCALLS letter: A an address as
 * a zigzag delta from the last allocation's (the base does not move), S a
 * signed value zigzagged, U as is. */
static void put_xword(struct wbuf *w, const struct v2_state *s, char letter, uint64_t v)
{
	if (letter == 'A')
		v = zz((int64_t)(v - s->base));
	else if (letter == 'S')
		v = zz((int64_t)v);
	put_var(w, v);
}

size_t atr_v2_encode(const uint8_t *v1, size_t n, uint64_t features, uint8_t *out, size_t cap,
		     struct atr_v2_meta *meta)
{
	struct v2_state s;
	state_init(&s, features);
	struct wbuf w = {out, out + cap, 0};
	struct atr_v2_meta m = {0, 0, UINT64_MAX, 0};
	size_t pos = 0;
	while (pos < n && !w.bad) {
		if (n - pos < 16)
			return 0;
		const uint8_t *r = v1 + pos;
		uint64_t w0 = get64(r);
		unsigned type = (unsigned)(w0 & ATR_TYPE_MASK);
		unsigned flags = (unsigned)(w0 & ATR_FLAG_MASK);
		uint64_t ts = w0 >> ATR_TS_SHIFT;
		if (ts < m.first_ts)
			m.first_ts = ts;
		if (ts > m.last_ts)
			m.last_ts = ts;
		if (type >= ATR_T_THREAD_START) {
			uint64_t w1 = get64(r + 8);
			uint64_t len = w1 & 0xffffffffu, need = 16 + ((len + 7) & ~7ULL);
			if (need > n - pos)
				return 0;
			put_byte(&w, V2_TAG_META);
			put_byte(&w, (unsigned)(w0 & 0xff));
			put_var(&w, zz((int64_t)(ts - s.prev_ts)));
			put_var(&w, w1);
			if ((size_t)(w.end - w.p) < len)
				return 0;
			memcpy(w.p, r + 16, len);
			w.p += len;
			s.prev_ts = ts;
			pos += need;
			m.records++;
			continue;
		}
		if (type == ATR_T_EXT && s.xcalls) {
			if (n - pos < 16)
				return 0;
			uint64_t xt = get64(r + 8);
			size_t need = 8 * (size_t)atr_ext_words(xt, flags);
			if (!need || need > n - pos)
				return 0;
			put_byte(&w, flags == s.dflt[type] ? type : V2_TAG_EXPL);
			if (flags != s.dflt[type])
				put_byte(&w, (unsigned)(w0 & 0xff));
			put_var(&w, zz((int64_t)(ts - s.prev_ts)));
			s.prev_ts = ts;
			put_var(&w, xt);
			const char *l = atr_xcall_letters((unsigned)xt);
			unsigned i = 2;
			for (; l[i - 2]; i++)
				put_xword(&w, &s, l[i - 2], get64(r + 8 * i));
			for (; 8 * (size_t)i < need; i++)
				put_var(&w, get64(r + 8 * i)); /* stack id, duration */
			pos += need;
			m.records++;
			m.calls++;
			continue;
		}
		if (type < 1 || type > ATR_T_CALL_LAST)
			return 0;
		unsigned k = atr_call_words(type);
		size_t need = 8 * (size_t)atr_record_words(type, flags);
		if (need > n - pos)
			return 0;
		uint64_t w1 = get64(r + 8);
		uint64_t p = type == ATR_T_FREE ? w1 : w1 & ~s.cmask;
		int ci = p ? cache_find(&s, p) : -1;
		unsigned lo = flags == s.dflt[type] ? type : V2_TAG_EXPL;
		put_byte(&w, lo | (ci >= 0 ? (unsigned)(ci + 1) << 4 : 0));
		if (lo == V2_TAG_EXPL)
			put_byte(&w, (unsigned)(w0 & 0xff));
		put_var(&w, zz((int64_t)(ts - s.prev_ts)));
		s.prev_ts = ts;
		uint64_t *dbase = type == ATR_T_FREE ? &s.fbase : &s.base;
		if (ci < 0)
			put_var(&w, p ? zz((int64_t)(p - *dbase)) + 1 : 0);
		if (type == ATR_T_FREE && p)
			s.fbase = p;
		unsigned opt = k; /* index of the first optional word */
		if (type == ATR_T_FREE) {
			if (flags & ATR_FLAG_WIDE)
				put_var(&w, get64(r + 8 * opt++));
		} else {
			uint64_t sw = get64(r + 16);
			unsigned cb = (unsigned)(w1 & s.cmask);
			if (flags & ATR_FLAG_WIDE) {
				put_var(&w, sw);
				put_var(&w, get64(r + 8 * opt++));
				put_var(&w, cb >> 1);
			} else {
				uint64_t size = sw & ATR_SIZE_MASK;
				uint16_t d = (uint16_t)((uint16_t)(sw >> ATR_SIZE_BITS) -
							slack_pred(size, cb, s.cmask));
				put_var(&w, size);
				put_var(&w, zz((int16_t)d) << 2 | (cb >> 1));
			}
			switch (type) {
			case ATR_T_REALLOC:
				put_secondary(&w, &s, get64(r + 24));
				break;
			case ATR_T_REALLOCARRAY:
				put_secondary(&w, &s, get64(r + 24));
				put_var(&w, get64(r + 32));
				break;
			case ATR_T_CALLOC:
			case ATR_T_MEMALIGN:
			case ATR_T_POSIX_MEMALIGN:
			case ATR_T_ALIGNED_ALLOC:
				put_var(&w, get64(r + 24));
				break;
			default:
				break;
			}
			if (p)
				s.base = p;
		}
		if (flags & ATR_FLAG_STACK)
			put_var(&w, get64(r + 8 * opt++));
		if (flags & ATR_FLAG_TIMED) {
			uint64_t dur = get64(r + 8 * opt);
			put_var(&w, dur);
			if ((type == ATR_T_REALLOC || type == ATR_T_REALLOCARRAY) &&
			    ts + dur > m.last_ts && ts + dur >= ts)
				m.last_ts = ts + dur;
		}
		if (p)
			cache_use(&s, ci, p);
		pos += need;
		m.records++;
		m.calls++;
	}
	if (w.bad || pos != n)
		return 0;
	if (!m.records)
		m.first_ts = 0;
	if (meta)
		*meta = m;
	return (size_t)(w.p - out);
}

/* ---- decoder ---------------------------------------------------------- */

struct rbuf {
	const uint8_t *p, *end;
	int bad;
};

static inline unsigned get_byte(struct rbuf *b)
{
	if (b->p < b->end)
		return *b->p++;
	b->bad = 1;
	return 0;
}

/* Most varints are 1-3 bytes: one and two without a loop. */
static inline uint64_t get_var_slow(struct rbuf *b)
{
	uint64_t v = 0;
	for (unsigned sh = 0; sh < 64; sh += 7) {
		if (b->p >= b->end) {
			b->bad = 1;
			return 0;
		}
		unsigned c = *b->p++;
		if (sh == 63 && c > 1) {
			b->bad = 1; /* more than 64 bits */
			return 0;
		}
		v |= (uint64_t)(c & 0x7f) << sh;
		if (!(c & 0x80))
			return v;
	}
	b->bad = 1;
	return 0;
}

/* With 8 bytes at hand, a varint of up to 8 bytes without a branch per
 * byte: the first byte without bit 7 ends it, the 7-bit groups are
 * gathered by shifts (addresses are 3-4 bytes, sizes 1-3: a loop
 * mispredicts).  Longer ones and the buffer's end take the loop. */
static inline uint64_t get_var(struct rbuf *b)
{
	if (__builtin_expect(b->end - b->p >= 8, 1)) {
		uint64_t w;
		memcpy(&w, b->p, 8); /* little-endian hosts only (atr_v2.h) */
		if (!(w & 0x80)) {
			b->p++;
			return w & 0x7f;
		}
		uint64_t stop = ~w & 0x8080808080808080ULL;
		if (__builtin_expect(stop != 0, 1)) {
			unsigned bits = (unsigned)__builtin_ctzll(stop) + 1; /* 8 * bytes */
			b->p += bits >> 3;
			if (bits < 64)
				w &= (1ULL << bits) - 1;
			return (w & 0x7f) | ((w >> 1) & 0x3f80) | ((w >> 2) & 0x1fc000) |
			       ((w >> 3) & 0xfe00000) | ((w >> 4) & 0x7f0000000ULL) |
			       ((w >> 5) & 0x3f800000000ULL) | ((w >> 6) & 0x1fc0000000000ULL) |
			       ((w >> 7) & 0xfe000000000000ULL);
		}
	}
	return get_var_slow(b);
}

static inline void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static long fail(const char **why, const char *msg)
{
	if (why)
		*why = msg;
	return -1;
}

static uint64_t get_xword(struct rbuf *b, const struct v2_state *s, char letter)
{
	uint64_t v = get_var(b);
	if (letter == 'A')
		return s->base + (uint64_t)unzz(v);
	if (letter == 'S')
		return (uint64_t)unzz(v);
	return v;
}

long atr_v2_decode(const uint8_t *in, size_t len, uint64_t features, uint8_t *out, size_t cap,
		   struct atr_v2_meta *meta, const char **why)
{
	struct v2_state s;
	state_init(&s, features);
	struct rbuf b = {in, in + len, 0};
	struct atr_v2_meta m = {0, 0, UINT64_MAX, 0};
	size_t pos = 0;
	while (b.p < b.end) {
		unsigned tag = get_byte(&b);
		unsigned lo = tag & 0xf, hi = tag >> 4;
		unsigned v1b = lo;
		if (lo == V2_TAG_META || lo == V2_TAG_EXPL)
			v1b = get_byte(&b);
		else if (lo > ATR_T_CALL_LAST && !(lo == ATR_T_EXT && s.xcalls))
			return fail(why, "unknown record tag");
		else
			v1b |= s.dflt[lo];
		unsigned type = v1b & ATR_TYPE_MASK, flags = v1b & ATR_FLAG_MASK;
		uint64_t ts = s.prev_ts + (uint64_t)unzz(get_var(&b));
		if (b.bad)
			return fail(why, "record cut short");
		if (ts > ATR_TS_MASK)
			return fail(why, "timestamp out of range");
		s.prev_ts = ts;
		if (ts < m.first_ts)
			m.first_ts = ts;
		if (ts > m.last_ts)
			m.last_ts = ts;
		uint64_t w0 = ts << ATR_TS_SHIFT | v1b;
		if (lo == V2_TAG_META) {
			if (type < ATR_T_THREAD_START || hi)
				return fail(why, "bad meta record tag");
			uint64_t w1 = get_var(&b);
			uint64_t plen = w1 & 0xffffffffu, need = 16 + ((plen + 7) & ~7ULL);
			if (b.bad)
				return fail(why, "record cut short");
			if ((uint64_t)(b.end - b.p) < plen)
				return fail(why, "meta payload cut short");
			if (need > cap - pos)
				return fail(why, "frame decodes to more than its block size");
			put64(out + pos, w0);
			put64(out + pos + 8, w1);
			if (need > 16)
				memset(out + pos + need - 8, 0, 8); /* padding */
			memcpy(out + pos + 16, b.p, plen);
			b.p += plen;
			pos += need;
			m.records++;
			continue;
		}
		if (type == ATR_T_EXT && s.xcalls) {
			uint64_t xt = get_var(&b);
			size_t need = 8 * (size_t)atr_ext_words(xt, flags);
			if (b.bad)
				return fail(why, "record cut short");
			if (!need || hi)
				return fail(why, "bad EXT record");
			if (need > cap - pos)
				return fail(why, "frame decodes to more than its block size");
			uint8_t *r = out + pos;
			const char *l = atr_xcall_letters((unsigned)xt);
			unsigned i = 2;
			for (; l[i - 2]; i++)
				put64(r + 8 * i, get_xword(&b, &s, l[i - 2]));
			for (; 8 * (size_t)i < need; i++)
				put64(r + 8 * i, get_var(&b));
			if (b.bad)
				return fail(why, "record cut short");
			put64(r, w0);
			put64(r + 8, xt);
			pos += need;
			m.records++;
			m.calls++;
			continue;
		}
		if (type < 1 || type > ATR_T_CALL_LAST)
			return fail(why, "bad call record type");
		if (hi > V2_CACHE)
			return fail(why, "bad address cache index");
		size_t need = 8 * (size_t)atr_record_words(type, flags);
		if (need > cap - pos)
			return fail(why, "frame decodes to more than its block size");
		uint8_t *r = out + pos;
		/* a fixed size is a few stores; a variable one a `rep stos` */
		if (need <= 64 && cap - pos >= 64)
			memset(r, 0, 64);
		else
			memset(r, 0, need);
		int ci = (int)hi - 1;
		uint64_t p;
		if (ci >= 0) {
			p = s.cache[ci];
			if (!p)
				return fail(why, "empty address cache entry");
		} else {
			uint64_t v = get_var(&b);
			p = v ? (type == ATR_T_FREE ? s.fbase : s.base) + (uint64_t)unzz(v - 1) : 0;
		}
		if (type == ATR_T_FREE && p)
			s.fbase = p;
		unsigned opt = atr_call_words(type);
		uint64_t w1 = p;
		if (type == ATR_T_FREE) {
			if (flags & ATR_FLAG_WIDE)
				put64(r + 8 * opt++, get_var(&b));
		} else {
			if ((p & s.cmask) != 0)
				return fail(why, "chunk flag bits in an address");
			unsigned cb;
			if (flags & ATR_FLAG_WIDE) {
				put64(r + 16, get_var(&b));
				put64(r + 8 * opt++, get_var(&b));
				uint64_t c = get_var(&b);
				if (c > 3)
					return fail(why, "bad chunk flags");
				cb = (unsigned)c << 1;
			} else {
				uint64_t size = get_var(&b), f = get_var(&b);
				if (size > ATR_SIZE_MASK || (f >> 2) > 0x1ffff)
					return fail(why, "bad size field");
				cb = (unsigned)(f & 3) << 1;
				uint16_t slack = (uint16_t)(slack_pred(size, cb, s.cmask) +
							    (uint16_t)unzz(f >> 2));
				put64(r + 16, size | (uint64_t)slack << ATR_SIZE_BITS);
			}
			if (cb & ~s.cmask)
				return fail(why, "chunk flags in a trace without them");
			w1 = p | cb;
			switch (type) {
			case ATR_T_REALLOC:
			case ATR_T_REALLOCARRAY: {
				uint64_t v = get_var(&b), old;
				if (v == 0)
					old = 0;
				else if (v < V2_SEC_DELTA) {
					old = s.cache[v - V2_SEC_CACHE];
					if (!old)
						return fail(why, "empty address cache entry");
				} else
					old = s.base + (uint64_t)unzz(v - V2_SEC_DELTA);
				put64(r + 24, old);
				if (type == ATR_T_REALLOCARRAY)
					put64(r + 32, get_var(&b));
				break;
			}
			case ATR_T_CALLOC:
			case ATR_T_MEMALIGN:
			case ATR_T_POSIX_MEMALIGN:
			case ATR_T_ALIGNED_ALLOC:
				put64(r + 24, get_var(&b));
				break;
			default:
				break;
			}
			if (p)
				s.base = p;
		}
		if (flags & ATR_FLAG_STACK)
			put64(r + 8 * opt++, get_var(&b));
		if (flags & ATR_FLAG_TIMED) {
			uint64_t dur = get_var(&b);
			put64(r + 8 * opt, dur);
			if ((type == ATR_T_REALLOC || type == ATR_T_REALLOCARRAY) &&
			    ts + dur > m.last_ts && ts + dur >= ts)
				m.last_ts = ts + dur;
		}
		if (b.bad)
			return fail(why, "record cut short");
		put64(r, w0);
		put64(r + 8, w1);
		if (p)
			cache_use(&s, ci, p);
		pos += need;
		m.records++;
		m.calls++;
	}
	if (!m.records)
		m.first_ts = 0;
	if (meta)
		*meta = m;
	return (long)pos;
}
