/* awl_workload.h - alloctrace workload files (docs/WORKLOAD_FORMAT.md).
 *
 * A workload is what `alloctrace convert` makes of a trace and what
 * `alloctrace replay` runs: one op stream per traced thread, pointers
 * replaced by slot indices, cross-thread dependencies as explicit WAIT ops.
 *
 * Layout (all little-endian):
 *   header (AWL_HEADER_SIZE bytes), then chunks, then the thread table.
 *   chunk:  u32 magic "AWCK", u32 thread index, u32 bytes, u32 ops, bytes
 *   table:  u32 magic "AWTH", u32 threads, then per thread 48 bytes
 *           (32 in version 1)
 * Ops never straddle chunks.  The header's COMPLETE flag is set last.
 * Version 2 adds thread lifetimes (SPAWN ops, a parent per thread) and
 * think time (THINK ops); version 1 files still read (all threads start
 * with the replay, no think time).
 *
 * Writer: awl_writer_*; reader: awl_open(), awl_stream_*(), awl_verify().
 * The reader validates everything it touches: corrupt input gives an error
 * message, never a crash (fuzzed by tests/fuzz/fuzz_workload.c).
 */
#ifndef AWL_WORKLOAD_H
#define AWL_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "atr_calls.h"

#define AWL_MAGIC	  "ALCWORKL" /* 8 bytes, no NUL */
#define AWL_VERSION	  3u	     /* written; readers also take 1 and 2 */
#define AWL_VERSION_MIN	  1u
#define AWL_HEADER_SIZE	  384u	      /* written; versions 1 and 2: 256 */
#define AWL_HEADER_MIN	  256u	      /* readers accept any multiple of 8 from here */
#define AWL_CHUNK_MAGIC	  0x4b435741u /* "AWCK" */
#define AWL_TABLE_MAGIC	  0x48545741u /* "AWTH" */
#define AWL_CHUNK_HDR	  16u
#define AWL_CHUNK_MAX	  (1u << 20)  /* largest chunk payload a reader accepts */
#define AWL_CHUNK_TARGET  (64u << 10) /* what the writer makes */
#define AWL_THREAD_REC_V1 32u
#define AWL_THREAD_REC	  48u /* version 2 */
#define AWL_MARKER_MAX	  255u
#define AWL_MAX_THREADS	  65536u
#define AWL_MAX_SLOTS	  (1ULL << 40)

/* header.features: a reader rejects bits it does not know */
#define AWL_FEAT_XOPS                                                                              \
	1ULL /* v3: the trace recorded the other calls (ops 24..31 may                             \
		appear, their counts in the header are exact) */
/* v3: TOUCH ops carry the trace's resident pages of large blocks (replay
 * --touch trace) */
#define AWL_FEAT_TOUCH	   2ULL
#define AWL_FEATURES_KNOWN (AWL_FEAT_XOPS | AWL_FEAT_TOUCH)
/* header.flags */
#define AWL_FLAG_COMPLETE 1u

/* Header field offsets. */
enum {
	AWL_H_MAGIC = 0,	/* char[8] */
	AWL_H_VERSION = 8,	/* u32 */
	AWL_H_HEADER_SIZE = 12, /* u32 */
	AWL_H_FEATURES = 16,	/* u64 */
	AWL_H_FLAGS = 24,	/* u32 AWL_FLAG_* */
	AWL_H_THREADS = 28,	/* u32 */
	AWL_H_SLOTS = 32,	/* u64 slot table size */
	AWL_H_IDEAL_PEAK = 40,	/* u64 peak live requested bytes */
	AWL_H_OPS = 48,		/* u64 ops in all streams */
	AWL_H_WAITS = 56,	/* u64 WAIT ops */
	AWL_H_CHUNKS = 64,	/* u64 */
	AWL_H_TABLE = 72,	/* u64 offset of the thread table */
	AWL_H_ANOMALIES = 80,	/* u64 trace anomalies the converter skipped */
	AWL_H_SRC_PID = 88,	/* u32 */
	AWL_H_SRC_EXEC = 92,	/* u32 */
	AWL_H_DURATION_NS = 96, /* u64 duration of the traced process */
	AWL_H_CALLS = 104,	/* u64[11]: calls by op code 1..10 ([0] = total) */
	AWL_H_THINK_NS = 192,	/* v2: u64 sum of THINK ops */
	AWL_H_MAX_LIVE = 200,	/* v2: u32 most threads alive at once in the trace */
	AWL_H_ROOTS = 204,	/* v2: u32 threads started by the replay itself */
	AWL_H_END_V2 = 208,	/* zero up to header_size in versions 1 and 2 */
	/* 208..215 reserved (zero) */
	AWL_H_MAP_SLOTS = 216,	 /* v3: u64 size of the replay's mapping slot table */
	AWL_H_XOPS = 224,	 /* v3: u64[16]: ops of code 24 + i (AWL_OP_XFIRST) */
	AWL_H_FILE_MAPS = 352,	 /* v3: u64 file-backed mmaps not replayed */
	AWL_H_MAP_UNKNOWN = 360, /* v3: u64 unmaps/remaps/advice on ranges the
				    trace never mapped */
	AWL_H_MAP_ODD = 368,	 /* v3: u64 mapping calls replayed approximately
				    (docs/WORKLOAD_FORMAT.md, "Mappings") */
	AWL_H_END = 376,	 /* the least header_size of v3 */
	AWL_H_TRACED_RSS = 376,	 /* v3, header_size >= 384: u64 the traced
				    program's Max RSS, bytes (0: unknown; zero
				    in workloads written before it) */
	AWL_H_END_RSS = 384,	 /* zero up to header_size */
};

/* Op codes (first byte of an op), then LEB128 varints.
 * "slot+1" fields: 0 means NULL (free/realloc input) or "the traced call
 * returned NULL" (allocation output). */
#define AWL_OP_CALL_(NAME, name, type, op, args, ret, params) AWL_OP_##NAME = op,
enum awl_opcode {
	/* one op per traced function, numbered in atr_calls.h; the fields
	 * follow its argument shape (ATR_ARGS_*):
	 *   SIZE dst+1, size               PTR src+1
	 *   NMEMB dst+1, nmemb, elsize     OLD src+1, dst+1, size
	 *   OLD_NMEMB src+1, dst+1, nmemb, elsize
	 *   ALIGN, ALIGN_OUT dst+1, align, size */
	ATR_CALLS(AWL_OP_CALL_) AWL_OP_CALL_LAST = ATR_NCALLS,
	AWL_OP_WAIT = 16,	  /* thread index, ops: wait until that thread
				     has completed that many ops */
	AWL_OP_DROP = 17,	  /* slot: free it, not a call (the trace lost
				     its release) */
	AWL_OP_MARKER = 18,	  /* len, bytes */
	AWL_OP_THREAD_START = 19, /* tid */
	AWL_OP_THREAD_EXIT = 20,  /* the traced thread exited here (late
				     destructor calls may follow) */
	AWL_OP_SPAWN = 21,	  /* v2: thread index: start that thread now */
	AWL_OP_THINK = 22,	  /* v2: ns the traced thread spent between
				     the last call's return and the next call */
	AWL_OP_TOUCH = 23,	  /* v3: KiB + 1 (0: unknown) the program had
				     resident of the block the next op (an
				     allocation) returns */
	/* v3 (AWL_FEAT_XOPS): the other calls of the program (ATR_XCALLS);
	 * "map" is a slot of the mapping slot table, off/len a range inside
	 * what that slot's mmap mapped */
	AWL_OP_MALLOPT = 24,	 /* param, value, result (zigzag) */
	AWL_OP_MALLOC_TRIM = 25, /* pad, result */
	AWL_OP_USABLE_SIZE = 26, /* src+1 (0: NULL), usable size traced */
	AWL_OP_MMAP = 27,	 /* map, len, mflags (AWL_MF_*) */
	AWL_OP_MMAP_FIXED = 28,	 /* map, off, len, mflags: a new mapping over
				    a mapped part of map (MAP_FIXED) */
	AWL_OP_MUNMAP = 29,	 /* map, off, len */
	AWL_OP_MREMAP = 30,	 /* map, off, old len, dst map, new len */
	AWL_OP_MADVISE = 31,	 /* map, off, len, advice */
	AWL_OP_LAST = 31,
};
#define AWL_OP_XFIRST 24u
#define AWL_OP_XLAST  31u /* 24..39 are this group's */
#define AWL_NXOPS     16u /* header counters (AWL_H_XOPS) */

/* mflags of MMAP and MMAP_FIXED: what the replay maps (anonymous, private
 * unless SHARED) */
#define AWL_MF_READ	 1u
#define AWL_MF_WRITE	 2u
#define AWL_MF_SHARED	 4u
#define AWL_MF_NORESERVE 8u
#define AWL_MF_POPULATE	 16u
#define AWL_MF_KNOWN	 31u
/* The advice a MADVISE op may carry (Linux numbers): the ones that change
 * what is resident. */
static inline int awl_advice_replayed(uint64_t advice)
{
	return advice == 4 /* MADV_DONTNEED */ || advice == 8 /* MADV_FREE */ ||
	       advice == 14 /* MADV_HUGEPAGE */ || advice == 15 /* MADV_NOHUGEPAGE */;
}
/* Largest mapping (and offset) a workload may hold: user address space. */
#define AWL_MAX_MAP (1ULL << 47)

#undef AWL_OP_CALL_

/* Ops are 1..ATR_NCALLS in list order (tables are indexed by them), and
 * the header's per-call counters must fit before AWL_H_END. */
#define AWL_OP_CHECK_(NAME, name, type, op, args, ret, params)                                     \
	_Static_assert(AWL_OP_##NAME == (int)ATR_CALL_SEQ_##NAME,                                  \
		       "workload op of " #name " out of order");
ATR_CALLS(AWL_OP_CHECK_)
#undef AWL_OP_CHECK_
_Static_assert(AWL_OP_CALL_LAST < AWL_OP_WAIT, "call ops run into the other ops");
_Static_assert(AWL_H_CALLS + 8 * (AWL_OP_CALL_LAST + 1) <= AWL_H_THINK_NS,
	       "header call counters overrun the header fields");
_Static_assert(AWL_H_XOPS + 8 * AWL_NXOPS <= AWL_H_FILE_MAPS, "xop counters overrun");
_Static_assert(AWL_H_END_RSS <= AWL_HEADER_SIZE && AWL_HEADER_SIZE % 8 == 0, "header size");

/* Argument shape (enum atr_args) of a call op; 0 for other ops. */
#define AWL_ARGS_(NAME, name, type, op, args, ret, params) [AWL_OP_##NAME] = ATR_ARGS_##args,
static inline unsigned awl_op_args(unsigned code)
{
	static const unsigned char a[AWL_OP_CALL_LAST + 1] = {ATR_CALLS(AWL_ARGS_)};
	return code <= AWL_OP_CALL_LAST ? a[code] : 0;
}
#undef AWL_ARGS_

struct awl_op {
	uint8_t code;
	uint64_t a, b, c, d, e; /* fields in the order above */
	const uint8_t *data;	/* marker bytes (valid until the next op) */
	uint32_t len;
};

/* ------------------------------------------------------------ varints */
static inline uint8_t *awl_put_uv(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

/* awl_put_uv where the buffer has a byte of room past the value: a value
 * below 2^14 (an op's slots and most sizes) is written without a branch
 * on its length (1 or 2 bytes: sizes of 16-512 bytes mispredicted a
 * fifth of the time); the byte after a 1-byte value is overwritten by
 * what follows.  Ops reserved by awl_writer_reserve have that room. */
static inline uint8_t *awl_put_uv_room(uint8_t *p, uint64_t v)
{
	if (__builtin_expect(v < 0x4000, 1)) {
		uint64_t two = v >= 0x80;
		p[0] = (uint8_t)(v | two << 7);
		p[1] = (uint8_t)(v >> 7);
		return p + 1 + two;
	}
	return awl_put_uv(p, v);
}

/* ------------------------------------------------------------- writer */
/* The writer's state is public only so that the per-op calls below can be
 * inlined (convert makes ~4 of them per record); use the functions. */
struct awl_wthread {
	uint32_t serial, tid;
	uint32_t parent;	/* index + 1; 0: started by the replay */
	uint32_t live_at_start; /* threads alive when it started (itself included) */
	uint64_t spawn_op;	/* op index of the SPAWN in the parent's stream */
	uint64_t ops, calls, chunks;
	uint64_t chunk_first; /* ops before the chunk in buf */
	size_t len;
	uint8_t *buf;	    /* AWL_CHUNK_HDR + AWL_CHUNK_TARGET + 4096 */
	uint64_t *chunk_at; /* file offsets of its chunks (awl_writer_patch) */
	size_t chunk_cap;
};

/* A file patch waiting for the stdio buffer to be flushed. */
struct awl_wpatch {
	uint64_t off;
	uint8_t n, bytes[15];
};
#define AWL_PATCH_QUEUE 4096

struct awl_writer {
	FILE *fp;
	char *path;
	char *iobuf;
	uint64_t off; /* bytes written so far */
	struct awl_wthread *th;
	uint32_t nth, cap;
	uint64_t chunks;
	uint64_t calls[AWL_OP_CALL_LAST + 1]; /* [0] set by awl_writer_finish */
	uint64_t xops[AWL_NXOPS];
	int ioerr;
	struct awl_wpatch *patch; /* AWL_PATCH_QUEUE of them, or NULL */
	size_t npatch;
};

/* Creates (truncates) path.  0, or -1 with errbuf filled. */
int awl_writer_open(const char *path, struct awl_writer **out, char *errbuf, size_t errlen);
/* A new thread stream; returns its index (0, 1, ...), -1 on error. */
int awl_writer_add_thread(struct awl_writer *w, uint32_t serial, uint32_t tid);
/* Thread t is started by parent's op spawn_op (a SPAWN op the caller
 * writes); live: threads alive in the trace once it started. */
void awl_writer_set_start(struct awl_writer *w, uint32_t t, uint32_t parent, uint64_t spawn_op,
			  uint32_t live);
/* Write thread t's pending ops as a chunk (awl_writer_reserve does it). */
void awl_writer_flush_thread(struct awl_writer *w, uint32_t t);

/* Thread t's stream, for the *_th forms below (a caller that writes
 * several ops, or counts, in a row computes it once); valid until the
 * next awl_writer_add_thread. */
static inline struct awl_wthread *awl_writer_th(struct awl_writer *w, uint32_t t)
{
	return &w->th[t];
}
static inline uint8_t *awl_writer_reserve_th(struct awl_writer *w, struct awl_wthread *th,
					     size_t max_bytes)
{
	if (__builtin_expect(th->len + max_bytes > AWL_CHUNK_HDR + AWL_CHUNK_TARGET, 0))
		awl_writer_flush_thread(w, (uint32_t)(th - w->th));
	return th->buf + th->len;
}
static inline void awl_writer_commit_th(struct awl_wthread *th, uint8_t *end)
{
	th->len = (size_t)(end - th->buf);
	th->ops++; /* the chunk's and the file's counts follow from it */
}
/* Room for max_bytes (<= 4096) in thread t's buffer; write the op there
 * and call awl_writer_commit() with the end pointer. */
static inline uint8_t *awl_writer_reserve(struct awl_writer *w, uint32_t t, size_t max_bytes)
{
	return awl_writer_reserve_th(w, &w->th[t], max_bytes);
}
static inline void awl_writer_commit(struct awl_writer *w, uint32_t t, uint8_t *end)
{
	awl_writer_commit_th(&w->th[t], end);
}
/* Ops appended to thread t so far (= index of the next op). */
static inline uint64_t awl_writer_thread_ops(const struct awl_writer *w, uint32_t t)
{
	return w->th[t].ops;
}
/* Count a call of trace type 1..10 in thread t. */
static inline void awl_writer_count_call_th(struct awl_writer *w, struct awl_wthread *th,
					    unsigned op)
{
	if (op >= 1 && op <= AWL_OP_CALL_LAST) {
		w->calls[op]++; /* calls[0]: their sum, at the end */
		th->calls++;
	}
}
static inline void awl_writer_count_call(struct awl_writer *w, uint32_t t, unsigned op)
{
	awl_writer_count_call_th(w, &w->th[t], op);
}

/* Count an op of code AWL_OP_XFIRST.. (the header's per-op counters). */
static inline void awl_writer_count_xop(struct awl_writer *w, unsigned op)
{
	if (op >= AWL_OP_XFIRST && op < AWL_OP_XFIRST + AWL_NXOPS)
		w->xops[op - AWL_OP_XFIRST]++;
}
/* Bytes written for thread t up to p (in the buffer awl_writer_reserve
 * gave) as a mark: awl_writer_patch(mark, bytes, n) rewrites the n bytes
 * there later, in the buffer or in the file, whichever holds them then
 * (convert fills in a TOUCH op's count when the block is released). */
uint64_t awl_writer_mark(const struct awl_writer *w, uint32_t t, const uint8_t *p);
void awl_writer_patch(struct awl_writer *w, uint64_t mark, const uint8_t *bytes, size_t n);

struct awl_summary_in {
	uint64_t slots, ideal_peak, waits, anomalies, duration_ns, think_ns;
	uint32_t src_pid, src_exec, max_live;
	uint64_t features; /* AWL_FEAT_* */
	uint64_t map_slots, file_maps, map_unknown, map_odd;
	uint64_t traced_rss; /* the traced program's Max RSS, bytes; 0: unknown */
};
/* Flush, write the thread table and the final header.  0 or -1. */
int awl_writer_finish(struct awl_writer *w, const struct awl_summary_in *s, char *errbuf,
		      size_t errlen);
/* Frees w (closes and keeps whatever was written; a file without
 * awl_writer_finish() lacks the COMPLETE flag). */
void awl_writer_close(struct awl_writer *w);
uint64_t awl_writer_bytes(const struct awl_writer *w);
uint64_t awl_writer_ops(const struct awl_writer *w);

/* ------------------------------------------------------------- reader */
struct awl_thread {
	uint32_t serial, tid;
	uint64_t ops, calls, nchunks;
	uint32_t parent;	/* index + 1; 0: a root (started by the replay) */
	uint32_t live_at_start; /* threads alive in the trace once it started */
	uint64_t spawn_op;	/* index of the SPAWN op in the parent's stream */
	uint32_t max_chunk;	/* largest chunk payload: the decoder's buffer */
	uint64_t *chunk_off;	/* payload offsets */
	uint32_t *chunk_len, *chunk_ops;
};

struct awl_info {
	uint32_t version, flags, nthreads;
	uint64_t features, slots, ideal_peak, ops, waits, chunks, anomalies, duration_ns;
	uint64_t think_ns;	  /* v2 */
	uint32_t max_live, roots; /* v2; version 1: threads, threads */
	uint32_t src_pid, src_exec;
	uint64_t calls[AWL_OP_CALL_LAST + 1]; /* [0] total */
	uint64_t file_size;
	/* v3; 0 in older versions */
	uint64_t map_slots, file_maps, map_unknown, map_odd;
	uint64_t xops[AWL_NXOPS]; /* ops of code AWL_OP_XFIRST + i */
	uint64_t traced_rss;	  /* the traced program's Max RSS, bytes; 0: unknown */
};

typedef struct awl_file awl_file;

/* Open and validate the structure (header, every chunk header, thread
 * table).  0, or -1 with errbuf filled ("PATH: what was wrong"). */
int awl_open(const char *path, awl_file **out, char *errbuf, size_t errlen);
/* The same on a caller-owned buffer (kept alive until awl_close). */
int awl_open_buffer(const void *data, size_t size, const char *name, awl_file **out, char *errbuf,
		    size_t errlen);
void awl_close(awl_file *f);
const struct awl_info *awl_get_info(const awl_file *f);
const struct awl_thread *awl_get_thread(const awl_file *f, uint32_t t);

/* Sequential decoding of one thread's ops. */
struct awl_stream {
	awl_file *f;
	uint32_t t;
	uint64_t chunk; /* next chunk index */
	uint8_t *buf;	/* current chunk payload */
	size_t cap, len, pos;
	int own_buf;	   /* buf is the caller's (awl_stream_init_buf) */
	uint32_t left_ops; /* ops left in the current chunk */
	uint64_t done;	   /* ops returned */
	/* fields per op code in this file (its version and features), -1:
	   not a valid code here, or one awl_stream_next decodes (MARKER) */
	signed char nf[32];
	char err[160];
};
int awl_stream_init(awl_file *f, uint32_t t, struct awl_stream *s);
/* The same decoding into the caller's buffer of cap >= the thread's
 * max_chunk bytes (the replay maps its own, outside the allocator). */
int awl_stream_init_buf(awl_file *f, uint32_t t, struct awl_stream *s, uint8_t *buf, size_t cap);
/* 1 with *op filled, 0 at the end of the stream, -1 on corrupt data
 * (message in s->err). */
int awl_stream_next(struct awl_stream *s, struct awl_op *op);
void awl_stream_free(struct awl_stream *s);

/* A varint from p with at least 10 bytes readable (at most 10 bytes, no
 * bits past 64).  NULL if malformed. */
static inline const uint8_t *awl_get_uv_fast(const uint8_t *p, uint64_t *v)
{
	uint8_t b = *p++;
	if (b < 0x80) {
		*v = b;
		return p;
	}
	uint64_t r = b & 0x7f;
	for (unsigned sh = 7; sh < 64; sh += 7) {
		b = *p++;
		if (sh == 63 && b > 1)
			return NULL;
		r |= (uint64_t)(b & 0x7f) << sh;
		if (!(b & 0x80)) {
			*v = r;
			return p;
		}
	}
	return NULL;
}

/* awl_stream_next, with the usual op (inside a chunk, far from its end,
 * no marker bytes) decoded inline: the replay and the verifier call it
 * once per op.  Anything else, a bad varint included, goes to
 * awl_stream_next, which decodes it again and says what is wrong. */
static inline int awl_stream_next_inl(struct awl_stream *s, struct awl_op *op)
{
	/* 1 code byte and 5 varints of 10 bytes at most */
	if (__builtin_expect(s->left_ops != 0 && s->len - s->pos >= 51, 1)) {
		const uint8_t *p = s->buf + s->pos;
		uint8_t code = *p++;
		int nf = s->nf[code & 31];
		if (__builtin_expect(code < 32 && nf >= 0, 1)) {
			/* straight into the fields (a local array read back
			   in 16-byte loads stalled on its 8-byte stores) */
			op->a = op->b = op->c = op->d = op->e = 0;
			if ((nf > 0 && !(p = awl_get_uv_fast(p, &op->a))) ||
			    (nf > 1 && !(p = awl_get_uv_fast(p, &op->b))) ||
			    (nf > 2 && !(p = awl_get_uv_fast(p, &op->c))) ||
			    (nf > 3 && !(p = awl_get_uv_fast(p, &op->d))) ||
			    (nf > 4 && !(p = awl_get_uv_fast(p, &op->e))))
				return awl_stream_next(s, op);
			op->code = code;
			op->data = NULL;
			op->len = 0;
			s->pos = (size_t)(p - s->buf);
			s->left_ops--;
			s->done++;
			return 1;
		}
	}
	return awl_stream_next(s, op);
}

/* Zigzag (signed fields of MALLOPT and MALLOC_TRIM). */
static inline uint64_t awl_zz(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}
static inline int64_t awl_unzz(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* Decode every stream in a dependency-respecting order and check it:
 * opcodes and fields, slots < slots, WAIT targets, SPAWNs (each non-root
 * thread spawned once, at the op its table entry names, and running only
 * after it), no deadlock, and that
 * every use of a slot by another thread than its last user is preceded by
 * a WAIT on that use, so a multi-threaded replay cannot race on a slot.
 * v3: mapping ops only touch ranges that their mapping slot's mmap mapped
 * and that are still mapped, so the replay never unmaps or overwrites
 * memory it did not map for that slot.
 * 0, or -1 with errbuf filled. */
int awl_verify(awl_file *f, char *errbuf, size_t errlen);

const char *awl_op_name(unsigned code);

#endif
