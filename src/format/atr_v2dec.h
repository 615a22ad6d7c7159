/* atr_v2dec.h - the v2 record decoder as inline functions (internal to
 * src/format: atr_v2.c and the reader include it).
 *
 * v2_dec_rec() decodes one record of a frame into a struct v2_rec: the
 * record's fields, not its version-1 words.  atr_v2_decode() (atr_v2.c)
 * writes those words from it; the reader (atr_reader.c) turns it into an
 * event directly, record by record, while it walks a frame (no
 * intermediate block of words).  Both run the same checks, so a frame is
 * rejected by both or by neither.  The state and the varint helpers are
 * the encoder's too.  docs/TRACE_FORMAT.md ("Compact encoding") is the
 * byte-level spec.
 */
#ifndef ATR_V2DEC_H
#define ATR_V2DEC_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "atr_format.h"

#define V2_CACHE     8	  /* move-to-front cache of recent addresses */
#define V2_TAG_META  0x0u /* low nibble 0: meta record, its v1 byte follows */
#define V2_TAG_EXPL  0xfu /* low nibble 15: call, its v1 byte follows */
#define V2_SEC_CACHE 1u	  /* secondary pointer: 1..8 = cache hit */
#define V2_SEC_DELTA 9u	  /* secondary pointer: >= 9 = delta + 9 */

struct v2_state {
	uint64_t prev_ts;
	uint64_t base;		  /* last allocation's address: allocations' deltas */
	uint64_t fbase;		  /* last free's address: frees' deltas */
	uint64_t cache[V2_CACHE]; /* the encoder's cache, front first */
	/* the decoder's: entry i is win[wh + i]; a new entry goes in front
	 * by moving wh down (the old ones stay put), the window moves back
	 * to the top every V2_CACHE new entries */
	uint64_t win[2 * V2_CACHE];
	unsigned wh;
	uint64_t cmask;			     /* chunk flag bits of ret (glibc) or 0 */
	unsigned dflt[ATR_T_EXT + 1];	     /* default flags per call type */
	unsigned dneed[ATR_T_CALL_LAST + 1]; /* v1 bytes of a call with them */
	int xcalls;			     /* ATR_FEAT_XCALLS: EXT records allowed */
};

static inline void state_init(struct v2_state *s, uint64_t features)
{
	memset(s, 0, sizeof *s);
	s->wh = V2_CACHE;
	s->cmask = (features & ATR_FEAT_CHUNK_FLAGS) ? ATR_CHUNK_MASK : 0;
	unsigned timed = (features & ATR_FEAT_TIMING) ? ATR_FLAG_TIMED : 0;
	unsigned stack = (features & ATR_FEAT_STACKS) ? ATR_FLAG_STACK : 0;
	for (unsigned t = 1; t <= ATR_T_EXT; t++)
		s->dflt[t] = timed | stack;
	s->xcalls = (features & ATR_FEAT_XCALLS) != 0;
	s->dflt[ATR_T_FREE] = timed;
	s->dflt[ATR_T_REALLOC] |= ATR_FLAG_TIMED;
	s->dflt[ATR_T_REALLOCARRAY] |= ATR_FLAG_TIMED;
	for (unsigned t = 1; t <= ATR_T_CALL_LAST; t++)
		s->dneed[t] = 8 * atr_record_words(t, s->dflt[t]);
}

/* The decoder's cache entry i (0..7). */
static inline uint64_t cache_get(const struct v2_state *s, unsigned i)
{
	return s->win[s->wh + i];
}

/* Move entry i (or, i < 0, a new entry) to the front of the window win
 * whose head is *wh (the decoder's: struct v2_state's win and wh, or a
 * copy of wh in a register). */
static inline __attribute__((always_inline)) void cache_use_w(uint64_t *win, unsigned *wh, int i,
							      uint64_t p)
{
	if (i < 0) {
		if (__builtin_expect(!*wh, 0)) {
			memcpy(win + V2_CACHE, win, V2_CACHE * sizeof win[0]);
			*wh = V2_CACHE;
		}
		win[--*wh] = p;
		return;
	}
	/* spelled out: GCC turns a loop into a call of memmove, one per
	 * record for at most 7 words */
	_Static_assert(V2_CACHE == 8, "cache_use spells out 8 entries");
	uint64_t *c = win + *wh;
	switch (i) {
	case 7:
		c[7] = c[6];
		/* fall through */
	case 6:
		c[6] = c[5];
		/* fall through */
	case 5:
		c[5] = c[4];
		/* fall through */
	case 4:
		c[4] = c[3];
		/* fall through */
	case 3:
		c[3] = c[2];
		/* fall through */
	case 2:
		c[2] = c[1];
		/* fall through */
	case 1:
		c[1] = c[0];
		/* fall through */
	default:
		break;
	}
	c[0] = p;
}

/* Move entry i (or, i < 0, a new entry) to the front (the decoder). */
static inline void cache_use(struct v2_state *s, int i, uint64_t p)
{
	cache_use_w(s->win, &s->wh, i, p);
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
static inline uint16_t slack_pred(uint64_t size, unsigned cb, uint64_t cmask)
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

/* ---- reading varints ----------------------------------------------------- */

struct rbuf {
	const uint8_t *p, *end;
	int bad;
};

/* The longest record that is not a meta record (those check their
 * payload's length themselves): tag, v1 byte and 10 varints of up to 10
 * bytes (EXT: stamp, call type, 6 words, stack, duration), plus the 8
 * bytes get_var reads at once.  With as many bytes left, a record is
 * decoded without a bound check per byte or varint (fast). */
#define V2_REC_MAX 128

static inline unsigned get_byte_f(struct rbuf *b, int fast)
{
	if (fast || b->p < b->end)
		return *b->p++;
	b->bad = 1;
	return 0;
}

static inline unsigned get_byte(struct rbuf *b)
{
	return get_byte_f(b, 0);
}

/* A varint the fast path below does not take (longer than 8 bytes, or
 * near the buffer's end), byte by byte: its value, the position after it
 * and whether it was bad.  Out of line, and it takes no pointer to the
 * caller's struct rbuf, which then stays in registers. */
struct var_slow {
	uint64_t v;
	const uint8_t *p;
	int bad;
};

static __attribute__((noinline, unused)) struct var_slow get_var_slow(const uint8_t *p,
								      const uint8_t *end)
{
	struct var_slow r = {0, p, 1};
	uint64_t v = 0;
	for (unsigned sh = 0; sh < 64; sh += 7) {
		if (r.p >= end)
			return r;
		unsigned c = *r.p++;
		if (sh == 63 && c > 1)
			return r; /* more than 64 bits */
		v |= (uint64_t)(c & 0x7f) << sh;
		if (!(c & 0x80)) {
			r.v = v;
			r.bad = 0;
			return r;
		}
	}
	return r;
}

/* The value of a varint of 2 to 8 bytes from its first 8 bytes w
 * (little-endian load) and bits = 8 * its length (the first byte without
 * bit 7 ends it).  Shared by get_var_f and the reader's narrow decoder
 * (atr_reader.c, nar_var), which find the length themselves. */
static inline __attribute__((always_inline)) uint64_t var_gather(uint64_t w, unsigned bits)
{
	if (__builtin_expect(bits <= 32, 1)) {
		/* 2-4 bytes (most addresses, sizes, stamps): two steps in
		 * 32 bits, the masks as immediates */
		uint32_t x = (uint32_t)w & (0xffffffffu >> (32 - bits));
		x = (x & 0x007f007fu) | ((x & 0x7f007f00u) >> 1);
		return (x & 0x3fffu) | ((x & 0x3fff0000u) >> 2);
	}
	if (bits < 64)
		w &= (1ULL << bits) - 1;
	/* pairs of 7-bit groups into 14 bits, pairs of those into 28, then
	 * 56: three steps, not seven shifts */
	w = (w & 0x007f007f007f007fULL) | ((w & 0x7f007f007f007f00ULL) >> 1);
	w = (w & 0x00003fff00003fffULL) | ((w & 0x3fff00003fff0000ULL) >> 2);
	return (w & 0x000000000fffffffULL) | ((w & 0x0fffffff00000000ULL) >> 4);
}

/* With 8 bytes at hand, a varint of up to 8 bytes without a branch per
 * byte: the first byte without bit 7 ends it, the 7-bit groups are
 * gathered by shifts (addresses are 3-4 bytes, sizes 1-3: a loop
 * mispredicts).  Longer ones and the buffer's end take the loop. */
static inline __attribute__((always_inline)) uint64_t get_var_f(struct rbuf *b, int fast)
{
	if (fast || __builtin_expect(b->end - b->p >= 8, 1)) {
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
			return var_gather(w, bits);
		}
	}
	struct var_slow r = get_var_slow(b->p, b->end);
	b->p = r.p;
	b->bad |= r.bad;
	return r.v;
}

static inline uint64_t get_var(struct rbuf *b)
{
	return get_var_f(b, 0);
}

static inline uint64_t get_xword(struct rbuf *b, const struct v2_state *s, char letter, int fast)
{
	uint64_t v = get_var_f(b, fast);
	if (letter == 'A')
		return s->base + (uint64_t)unzz(v);
	if (letter == 'S')
		return (uint64_t)unzz(v);
	return v;
}

/* One decoded record.  Fields that do not apply are 0. */
struct v2_rec {
	uint64_t ts;
	unsigned v1b;	/* the version-1 byte: type | flags */
	unsigned type;	/* v1b & ATR_TYPE_MASK (ATR_T_EXT: an extended call) */
	unsigned cb;	/* allocations: chunk flag bits of ret (ATR_CHUNK_*) */
	uint64_t a;	/* free: the block; allocations: ret without the chunk
			   bits; meta: word 1; EXT: the call type */
	uint64_t size;	/* allocations: the size */
	uint64_t slack; /* allocations: the v1 slack (narrow: 16 bits) */
	uint64_t x;	/* realloc*: old block; calloc: nmemb; memalign &
			   co.: alignment */
	uint64_t y;	/* reallocarray: nmemb */
	uint64_t stack, dur;
	uint64_t w[6];		/* EXT: the call's words (v1 layout) */
	const uint8_t *payload; /* meta: the payload (word 1's low 32 bits long) */
};

/* A record's stamp (after its tag and v1 byte) and head fields: 1, or 0
 * with *why set. */
static inline __attribute__((always_inline)) int dec_head(struct v2_state *s, struct rbuf *b,
							  struct v2_rec *r, unsigned v1b,
							  unsigned type, const char **why, int fast)
{
	uint64_t ts = s->prev_ts + (uint64_t)unzz(get_var_f(b, fast));
	if (b->bad)
		return *why = "record cut short", 0;
	if (ts > ATR_TS_MASK)
		return *why = "timestamp out of range", 0;
	s->prev_ts = ts;
	r->ts = ts;
	r->v1b = v1b;
	r->type = type;
	return 1;
}

/* v2_dec_rec(); fast: at least V2_REC_MAX bytes are left (the same
 * result, without the bound checks). */
static inline __attribute__((always_inline)) size_t
v2_dec_rec_f(struct v2_state *s, struct rbuf *b, struct v2_rec *r, const char **why, int fast)
{
	unsigned tag = get_byte_f(b, fast);
	unsigned lo = tag & 0xf, hi = tag >> 4;
	unsigned v1b = lo, type, flags;
	size_t v1n; /* the return value of a call */
	if (__builtin_expect(lo - 1u < ATR_T_CALL_LAST, 1)) {
		/* a call with its type's default flags (nearly every record):
		 * none of the tests below for the other tags */
		type = lo;
		flags = s->dflt[lo];
		v1b = lo | flags;
		if (!dec_head(s, b, r, v1b, type, why, fast))
			return 0;
		r->stack = r->dur = 0;
		v1n = s->dneed[lo];
		goto call;
	}
	if (lo == V2_TAG_META || lo == V2_TAG_EXPL)
		v1b = get_byte_f(b, fast);
	else if (lo > ATR_T_CALL_LAST && !(lo == ATR_T_EXT && s->xcalls))
		return *why = "unknown record tag", 0;
	else
		v1b |= s->dflt[lo];
	type = v1b & ATR_TYPE_MASK;
	flags = v1b & ATR_FLAG_MASK;
	if (!dec_head(s, b, r, v1b, type, why, fast))
		return 0;
	if (lo == V2_TAG_META) {
		if (type < ATR_T_THREAD_START || hi)
			return *why = "bad meta record tag", 0;
		uint64_t w1 = get_var_f(b, fast);
		uint64_t plen = w1 & 0xffffffffu;
		if (b->bad)
			return *why = "record cut short", 0;
		if ((uint64_t)(b->end - b->p) < plen)
			return *why = "meta payload cut short", 0;
		r->a = w1;
		r->payload = b->p;
		b->p += plen;
		return 16 + ((plen + 7) & ~7ULL);
	}
	r->stack = r->dur = 0;
	if (type == ATR_T_EXT && s->xcalls) {
		uint64_t xt = get_var_f(b, fast);
		size_t need = 8 * (size_t)atr_ext_words(xt, flags);
		if (b->bad)
			return *why = "record cut short", 0;
		if (!need || hi)
			return *why = "bad EXT record", 0;
		const char *l = atr_xcall_letters((unsigned)xt);
		unsigned i = 0;
		for (; l[i]; i++)
			r->w[i] = get_xword(b, s, l[i], fast);
		if (flags & ATR_FLAG_STACK)
			r->stack = get_var_f(b, fast);
		if (flags & ATR_FLAG_TIMED)
			r->dur = get_var_f(b, fast);
		if (b->bad)
			return *why = "record cut short", 0;
		r->a = xt;
		return need;
	}
	if (type < 1 || type > ATR_T_CALL_LAST)
		return *why = "bad call record type", 0;
	v1n = 8 * (size_t)atr_record_words(type, flags);
call:;
	if (hi > V2_CACHE)
		return *why = "bad address cache index", 0;
	int ci = (int)hi - 1;
	uint64_t p;
	if (ci >= 0) {
		p = cache_get(s, (unsigned)ci);
		if (!p)
			return *why = "empty address cache entry", 0;
	} else {
		uint64_t v = get_var_f(b, fast);
		p = v ? (type == ATR_T_FREE ? s->fbase : s->base) + (uint64_t)unzz(v - 1) : 0;
	}
	r->a = p;
	r->cb = 0;
	if (type == ATR_T_FREE) {
		if (p)
			s->fbase = p;
		if (flags & ATR_FLAG_WIDE)
			r->slack = get_var_f(b, fast); /* a free's slack word: kept, unused */
	} else {
		if ((p & s->cmask) != 0)
			return *why = "chunk flag bits in an address", 0;
		unsigned cb;
		if (flags & ATR_FLAG_WIDE) {
			r->size = get_var_f(b, fast);
			r->slack = get_var_f(b, fast);
			uint64_t c = get_var_f(b, fast);
			if (c > 3)
				return *why = "bad chunk flags", 0;
			cb = (unsigned)c << 1;
		} else {
			uint64_t size = get_var_f(b, fast), f = get_var_f(b, fast);
			if (size > ATR_SIZE_MASK || (f >> 2) > 0x1ffff)
				return *why = "bad size field", 0;
			cb = (unsigned)(f & 3) << 1;
			r->size = size;
			r->slack =
			    (uint16_t)(slack_pred(size, cb, s->cmask) + (uint16_t)unzz(f >> 2));
		}
		if (cb & ~s->cmask)
			return *why = "chunk flags in a trace without them", 0;
		r->cb = cb;
		switch (type) {
		case ATR_T_REALLOC:
		case ATR_T_REALLOCARRAY: {
			uint64_t v = get_var_f(b, fast), old;
			if (v == 0)
				old = 0;
			else if (v < V2_SEC_DELTA) {
				old = cache_get(s, (unsigned)(v - V2_SEC_CACHE));
				if (!old)
					return *why = "empty address cache entry", 0;
			} else
				old = s->base + (uint64_t)unzz(v - V2_SEC_DELTA);
			r->x = old;
			if (type == ATR_T_REALLOCARRAY)
				r->y = get_var_f(b, fast);
			break;
		}
		case ATR_T_CALLOC:
		case ATR_T_MEMALIGN:
		case ATR_T_POSIX_MEMALIGN:
		case ATR_T_ALIGNED_ALLOC:
			r->x = get_var_f(b, fast);
			break;
		default:
			break;
		}
		if (p)
			s->base = p;
	}
	if (flags & ATR_FLAG_STACK)
		r->stack = get_var_f(b, fast);
	if (flags & ATR_FLAG_TIMED)
		r->dur = get_var_f(b, fast);
	if (b->bad)
		return *why = "record cut short", 0;
	if (p)
		cache_use(s, ci, p);
	return v1n;
}

/* Decode the record at b->p.  Returns the size of its version-1 form in
 * bytes (> 0), or 0 with *why set. */
static inline __attribute__((always_inline)) size_t v2_dec_rec(struct v2_state *s, struct rbuf *b,
							       struct v2_rec *r, const char **why)
{
	if (__builtin_expect(b->end - b->p >= V2_REC_MAX, 1))
		return v2_dec_rec_f(s, b, r, why, 1);
	return v2_dec_rec_f(s, b, r, why, 0);
}

#endif
