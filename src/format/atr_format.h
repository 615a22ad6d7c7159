/* atr_format.h - the bytes of an alloctrace trace file (format version 1).
 *
 * This header and docs/TRACE_FORMAT.md describe the same thing; change both
 * together.  Only src/format/ and the preload writer include it.
 *
 * Layout: a 4096-byte file header, then fixed-size blocks (block_size from
 * the header) at header_size + i * block_size.  Each block starts with a
 * 64-byte block header followed by records.  Everything is little-endian.
 */
#ifndef ATR_FORMAT_H
#define ATR_FORMAT_H

#include <stdint.h>
#include <string.h>

#include "atr_calls.h"

#define ATR_MAGIC	       "ALCTRACE" /* 8 bytes, no NUL */
#define ATR_VERSION	       2u	  /* what the recorder writes */
#define ATR_VERSION_V1	       1u	  /* still read */
#define ATR_HEADER_SIZE	       4096u
#define ATR_BLOCK_MAGIC	       0x4b4c4254u /* "TBLK" read as LE u32 */
#define ATR_BLOCK_HEADER_SIZE  64u
#define ATR_BLOCK_SIZE_MIN     4096u
#define ATR_BLOCK_SIZE_MAX     (64u << 20)
#define ATR_BLOCK_SIZE_DEFAULT (256u << 10)

/* Feature bits (header.features).  A reader must reject a file with bits
 * set that it does not know (ATR_FEATURES_KNOWN). */
enum {
	ATR_FEAT_CLOCK_TSC = 1u << 0,	  /* timestamps are TSC ticks (x86) */
	ATR_FEAT_CLOCK_CNTVCT = 1u << 1,  /* aarch64 virtual counter */
	ATR_FEAT_CLOCK_MONO_NS = 1u << 2, /* CLOCK_MONOTONIC nanoseconds */
	ATR_FEAT_TIMING = 1u << 3,	  /* call records may carry a duration */
	ATR_FEAT_STACKS = 1u << 4,	  /* stack ids are meaningful */
	ATR_FEAT_CHUNK_FLAGS = 1u << 5,	  /* glibc: bits 1-2 of an allocation's
					     ret word carry its chunk flags
					     (ATR_CHUNK_*); see below */
	ATR_FEAT_ZSTD = 1u << 6,	  /* v2: FRAME payloads are zstd frames
					     (else the compact encoding as is) */
	ATR_FEAT_SAMPLED = 1u << 7,	  /* record --sample: Poisson byte sampling
					     at ATR_H_SAMPLE_RATE; see below */
	ATR_FEAT_XCALLS = 1u << 8,	  /* EXT records (type 11) may appear:
					     the calls of ATR_XCALLS */
	ATR_FEAT_INFLIGHT = 1u << 9,	  /* v2: a thread may have several STAGING
					     units; per seq the FRAME wins */
};
#define ATR_FEATURES_KNOWN 0x3ffULL

/* ATR_FEAT_SAMPLED (docs/TRACE_FORMAT.md, "Sampled traces"): every
 * allocation record is a sampled allocation (an allocation of s bytes is
 * sampled with probability 1 - exp(-s / rate)), every free record the free
 * of a sampled block.  Failed allocations and free(NULL) are not recorded. */

/* ATR_FEAT_CHUNK_FLAGS (glibc only, docs/ARENAS.md): the returned-pointer
 * word of every allocation record holds ret | (chunk size word & 6), the
 * IS_MMAPPED and NON_MAIN_ARENA bits of glibc's chunk header.  glibc's
 * results are 16-byte aligned, so the bits are free; readers mask them off
 * (atr_event.ret is always the true pointer, atr_event.chunk_flags the
 * bits).  ARENAS_HEAP_MAX: non-main heaps are aligned to this (glibc's
 * HEAP_MAX_SIZE on 64-bit). */
#define ATR_CHUNK_MMAPPED  0x2u
#define ATR_CHUNK_NON_MAIN 0x4u
#define ATR_CHUNK_MASK	   0x6u
#define ATR_ARENA_HEAP_MAX (64ULL << 20)

/* header.status bits, set while the process runs. */
enum {
	ATR_STATUS_CLEAN_EXIT = 1u << 0,  /* library destructor ran */
	ATR_STATUS_TRUNCATED = 1u << 1,	  /* writing failed: trace cut short */
	ATR_STATUS_STOPPED = 1u << 2,	  /* recording was stopped by the API */
	ATR_STATUS_NO_CHILDREN = 1u << 3, /* --no-children */
	ATR_STATUS_FORK_CHILD = 1u << 4,  /* a fork child: it may free blocks
					     inherited from its parent */
	ATR_STATUS_ATTACHED = 1u << 5,	  /* `record -p`: attached to a running
					     process, which frees blocks
					     allocated before the attach */
	ATR_STATUS_SNAPSHOT = 1u << 6,	  /* a copy by `alloctrace snapshot` of
					     a running process's trace: its
					     end is the copy, not an exit */
};

/* File header field offsets (all little-endian). */
enum {
	ATR_H_MAGIC = 0,	   /* char[8] "ALCTRACE" */
	ATR_H_VERSION = 8,	   /* u32 */
	ATR_H_HEADER_SIZE = 12,	   /* u32, 4096 */
	ATR_H_FEATURES = 16,	   /* u64 */
	ATR_H_BLOCK_SIZE = 24,	   /* u32 */
	ATR_H_STATUS = 28,	   /* u32, ATR_STATUS_* */
	ATR_H_PID = 32,		   /* u32 */
	ATR_H_PPID = 36,	   /* u32 */
	ATR_H_START_REALTIME = 40, /* u64 ns since the epoch at start */
	ATR_H_START_MONO = 48,	   /* u64 CLOCK_MONOTONIC ns at start */
	ATR_H_START_TICKS = 56,	   /* u64 raw clock value at start (tick 0) */
	ATR_H_TICKS_PER_SEC = 64,  /* u64 calibration hint, 0 if unknown */
	ATR_H_BLOCKS = 72,	   /* u64 blocks allocated so far */
	ATR_H_LOST = 80,	   /* u64 records lost (write errors) */
	ATR_H_ERRNO = 88,	   /* u32 errno of the first write failure */
	ATR_H_EXEC_SEQ = 92,	   /* u32 n-th image of this pid (exec) */
	ATR_H_UNTRACED = 96,	   /* u64 calls passed through untraced
				      (re-entrant, e.g. from signal handlers) */
	ATR_H_END_MONO = 104,	   /* u64 CLOCK_MONOTONIC ns at destructor */
	ATR_H_END_TICKS = 112,	   /* u64 raw clock at destructor */
	ATR_H_SAMPLE_RATE = 120,   /* u64 ATR_FEAT_SAMPLED: mean bytes between
				      samples (>= 1); 0 without the feature */
	ATR_H_RESIDENT_MIN = 128,  /* u64 RESIDENT records are written for releases
				      of blocks of at least this many usable
				      bytes; 0: none (older recorders) */
	ATR_H_PAGE_SIZE = 136,	   /* u32 the recorder's page size (RESIDENT
				      counts are in these pages); 0 unknown */
	ATR_H_RES_BUDGET = 140,	   /* u32 basis points of a thread's time
				      RESIDENT counting may take: 1..9999,
				      some releases have none; 0 or 10000:
				      all have one */
	ATR_H_NCPU = 144,	   /* u32 CPUs the traced process could run on
				      at start (its affinity); 0 unknown */
	ATR_H_CPU_GAP = 148,	   /* u32 ns: a CPU record (ATR_T_CPU) precedes
				      every record that came more than this
				      after the thread's previous one, and
				      its first; 0: none */
	ATR_H_TIMING_SAMPLE = 152, /* u32 without TIMING: the recorder timed
				      every n-th call of a thread (sampled
				      durations); 0: none */
	ATR_H_SELF_RSS = 160,	   /* u64 bytes of the recorder's own memory
				      in the process's resident set, kept up
				      to date while it runs; 0 unknown */
	ATR_H_COMPACT_LEVEL = 252, /* u32 zstd level compaction recompressed the
				      frames at (atr_compact.h); 0: as written */
	ATR_H_EXE = 256,	   /* char[256] executable path, NUL-terminated */
	ATR_H_CMDLINE = 512,	   /* u32 length, then bytes (args split by NUL) */
	ATR_H_CMDLINE_MAX = 4096 - 512 - 4,
};

/* Block header field offsets. */
enum {
	ATR_B_MAGIC = 0,     /* u32 ATR_BLOCK_MAGIC */
	ATR_B_KIND = 4,	     /* u32 ATR_BLOCK_* */
	ATR_B_THREAD = 8,    /* u32 thread serial (1, 2, ... in creation order) */
	ATR_B_TID = 12,	     /* u32 kernel thread id */
	ATR_B_SEQ = 16,	     /* u64 block sequence number within the thread */
	ATR_B_USED = 24,     /* u32 bytes of records (data blocks only) */
	ATR_B_RECORDS = 28,  /* u32 records in the block (data blocks only) */
	ATR_B_PID = 32,	     /* u32 pid of the writing process */
	ATR_B_RESERVED = 36, /* zero up to byte 64 */
};

/* Version 2 unit header (docs/TRACE_FORMAT.md): the same first 36 bytes as
 * a v1 block header, then: */
enum {
	ATR_U_CSIZE = 36,    /* u32 FRAME: payload bytes after the header */
	ATR_U_FIRST_TS = 40, /* u64 FRAME: smallest timestamp in the frame */
	ATR_U_LAST_TS = 48,  /* u64 FRAME: largest timestamp (or realloc end) */
	ATR_U_CALLS = 56,    /* u32 FRAME: call records in the frame */
	ATR_U_CHECK = 60,    /* u32 FRAME: atr_unit_check() of bytes 0..59 */
};
#define ATR_UNIT_ALIGN 8u /* every unit starts at a multiple of this */

/* v2: the records of one FRAME (its `used`) are at most
 * atr_frame_used_max(block_size) bytes: a recorder's frame holds one
 * staging block (block_size - 64), compaction merges a thread's frames
 * into frames of up to ATR_FRAME_MERGED bytes (atr_compact.h).  What a
 * reader holds per thread stays bounded by this. */
#define ATR_FRAME_MERGED (1u << 20)
static inline uint32_t atr_frame_used_max(uint32_t block_size)
{
	return (block_size > ATR_FRAME_MERGED ? block_size : ATR_FRAME_MERGED) -
	       ATR_BLOCK_HEADER_SIZE;
}

/* Fields of headers and records: little-endian on disk, as is every host
 * we build for (memcpy: no alignment assumed).  Every file format of
 * src/format/ (traces, workloads, dj/malloc files, RSS samples, the
 * network stream) reads and writes its fields through these. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "atr_get/put copy host words");
static inline uint32_t atr_get32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static inline uint64_t atr_get64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

static inline void atr_put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static inline void atr_put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

/* FNV-1a of a v2 unit header's bytes 0..59: lets a reader that skips a
 * hole (space reserved by a writer killed before it wrote) trust the next
 * header it finds. */
static inline uint32_t atr_unit_check(const uint8_t *h)
{
	uint32_t x = 2166136261u;
	for (unsigned i = 0; i < ATR_U_CHECK; i++)
		x = (x ^ h[i]) * 16777619u;
	return x ? x : 1u;
}

enum {
	ATR_BLOCK_FREE = 0,    /* never written (all zero) */
	ATR_BLOCK_DATA = 1,    /* a full or flushed block of records */
	ATR_BLOCK_STAGING = 2, /* a thread's live buffer: records end at the
				  first zero word or at the block end */
	ATR_BLOCK_RETIRED = 3, /* staging buffer no longer in use */
	ATR_BLOCK_FRAME = 4,   /* v2: a compressed block of records */
};

/* Record word 0: bits 0-4 type, bits 5-7 flags, bits 8-63 timestamp
 * (clock ticks since header.start_ticks, 56 bits).  Word 0 is never 0. */
#define ATR_TYPE_MASK  0x1fu
#define ATR_FLAG_TIMED 0x20u /* last word: ticks spent inside the call */
#define ATR_FLAG_WIDE                                                                              \
	0x40u		     /* size word is the full size; a slack word                           \
				follows it */
#define ATR_FLAG_STACK 0x80u /* a stack-id word precedes the timing word */
#define ATR_FLAG_MASK  0xe0u
#define ATR_TS_SHIFT   8
#define ATR_TS_MASK    ((1ULL << 56) - 1)

/* Size word of allocation records (unless WIDE): bits 0-47 requested bytes,
 * bits 48-63 slack = usable size - requested, 0xffff when unknown.  When
 * size >= 2^48 or slack >= 0xffff the record is WIDE: the size word is the
 * size and the next word the slack (UINT64_MAX when unknown).  A failed
 * posix_memalign (ret 0) keeps its error code in the slack field. */
#define ATR_SIZE_BITS		 48
#define ATR_SIZE_MASK		 ((1ULL << ATR_SIZE_BITS) - 1)
#define ATR_SLACK_NARROW_UNKNOWN 0xffffu

/* Call record types: one per traced function, numbered in atr_calls.h.
 * FREE is never WIDE or STACK; REALLOC and REALLOCARRAY are always TIMED. */
#define ATR_T_CALL_(NAME, name, type, op, args, ret, params) ATR_T_##NAME = type,
enum atr_type {
	ATR_T_END = 0, /* not a record: end of records in a block */
	/* call records: w0, then the words of the argument shape, then the
	 * optional words (slack if WIDE, stack id if STACK, duration if
	 * TIMED) */
	ATR_CALLS(ATR_T_CALL_) ATR_T_CALL_LAST = ATR_NCALLS,
	/* extended call record (ATR_FEAT_XCALLS): word 1 is the call's
	 * event type (ATR_T_MMAP, ...), its words follow (ATR_XCALLS), then
	 * the optional words; never WIDE */
	ATR_T_EXT = 11,
	/* meta records: word 1 = payload length in bytes (low 32 bits) and an
	 * argument (high 32 bits); the payload follows, padded to 8 bytes.
	 * Readers skip meta types they do not know. */
	ATR_T_THREAD_START = 16, /* arg = tid; payload: u64 pthread_self */
	ATR_T_THREAD_EXIT = 17,	 /* arg = tid */
	ATR_T_MARKER = 18,	 /* payload: label bytes (no NUL) */
	ATR_T_CONTROL = 19,	 /* arg = ATR_CTL_* */
	ATR_T_LOST = 22,	 /* payload: u64 records lost here */
	ATR_T_STACK = 23,	 /* arg = stack id; payload: u64 return addresses,
				    innermost (the allocator's caller) first */
	ATR_T_MODULE = 24,	 /* arg = ATR_MOD_*; payload: struct below */
	ATR_T_BRK = 25,		 /* glibc: payload u64 initial program break,
				    u64 current break (sbrk(0)); at thread
				    start, each block flush and exit */
	ATR_T_HEAP = 26,	 /* glibc: the thread allocated from a non-main
				    heap other than (or beyond the size of) the
				    one it used last; payload u64 heap start,
				    u64 heap_info.ar_ptr, u64 heap_info.size */
	ATR_T_RESIDENT = 27,	 /* arg = pages of the block resident when it
				    was released (saturated at 2^32-1);
				    payload u64 the block, u64 pages it spans;
				    right before that free or realloc record */
	ATR_T_CPU = 28,		 /* payload u64 the thread's CPU time in ns
				    (its CPU clock), u64 voluntary and u64
				    involuntary context switches (getrusage)
				    at the record's stamp; right before the record
				    that ends a long gap (ATR_H_CPU_GAP) */
	ATR_T_RECORDER = 29,	 /* payload u64 ticks the recorder spent
				    flushing the thread's staging block to
				    make room for the call record that follows
				    (stamped like it): program time after that
				    call, not the program's own */
	ATR_T_META_LAST = 31,
};
#undef ATR_T_CALL_

/* Event types of the other traced calls (atr_event.type; on disk EXT
 * records): ATR_T_XCALL_FIRST, ... in ATR_XCALLS order.  Above the record
 * types (0..31) and the reader's synthetic events (32..39). */
#define ATR_T_XCALL_FIRST				   40u
#define ATR_T_XCALL_(NAME, name, type, words, ret, params) ATR_T_##NAME = type,
enum atr_xtype { ATR_XCALLS(ATR_T_XCALL_) ATR_T_XCALL_LAST = ATR_T_XCALL_FIRST + ATR_NXCALLS - 1 };
#undef ATR_T_XCALL_
#define ATR_T_XCHECK_(NAME, name, type, words, ret, params)                                        \
	_Static_assert(ATR_T_##NAME == ATR_T_XCALL_FIRST - 1 + (int)ATR_XCALL_SEQ_##NAME,          \
		       "event type of " #name " out of order");
ATR_XCALLS(ATR_T_XCHECK_)
#undef ATR_T_XCHECK_
_Static_assert(ATR_T_XCALL_LAST < 256, "event types are bytes");

/* mmap and mremap keep the call's errno in the high 32 bits of the word
 * of their flags/fd; the int-returning calls' result word is the result
 * (low 32 bits, two's complement) with errno in the high 32 bits. */
#define ATR_XRES(res, err) ((uint64_t)(uint32_t)(res) | (uint64_t)(uint32_t)(err) << 32)

/* Types are 1..ATR_NCALLS in list order: tables are indexed by them. */
#define ATR_T_CHECK_(NAME, name, type, op, args, ret, params)                                      \
	_Static_assert(ATR_T_##NAME == (int)ATR_CALL_SEQ_##NAME,                                   \
		       "trace type of " #name " out of order");
ATR_CALLS(ATR_T_CHECK_)
#undef ATR_T_CHECK_
_Static_assert(ATR_T_CALL_LAST < ATR_T_EXT && ATR_T_EXT < ATR_T_THREAD_START,
	       "call types run into EXT or the meta types");

enum atr_ctl {
	ATR_CTL_START = 1,
	ATR_CTL_STOP = 2,
	ATR_CTL_PAUSE = 3,
	ATR_CTL_RESUME = 4,
	ATR_CTL_SYNC = 5,
	ATR_CTL_EXIT = 6, /* library destructor ran (calls may still follow) */
};

#define ATR_MARKER_MAX 255u

/* Call stacks (record --stacks, ATR_FEAT_STACKS).  A STACK record defines
 * a stack id before the first call record of the same thread that uses it;
 * ids are unique in the process, a stack may be defined in several
 * threads' streams (always with the same id for identical frames within a
 * thread; two threads may use different ids for the same frames). */
#define ATR_STACK_DEPTH_DEFAULT 64u
#define ATR_STACK_DEPTH_MAX	256u

/* MODULE record argument. */
enum atr_mod_kind {
	ATR_MOD_UNLOAD = 0, /* the module was unmapped (dlclose) */
	ATR_MOD_LOAD = 1,   /* mapped at start or by dlopen */
};

/* MODULE record payload (little-endian):
 *   0  u64 start   lowest address of its PT_LOAD segments
 *   8  u64 size    extent of the PT_LOAD segments (end - start)
 *  16  u64 bias    load bias: address = ELF virtual address + bias
 *  24  u32 build_id_len (0..ATR_MOD_BUILD_ID_MAX)
 *  28  u32 path_len (0..ATR_MOD_PATH_MAX; 0 = the main program: use the
 *                    header's exe)
 *  32  build-id bytes, then path bytes (no NUL) */
enum {
	ATR_MOD_START = 0,
	ATR_MOD_SIZE = 8,
	ATR_MOD_BIAS = 16,
	ATR_MOD_BUILD_ID_LEN = 24,
	ATR_MOD_PATH_LEN = 28,
	ATR_MOD_DATA = 32,
	ATR_MOD_BUILD_ID_MAX = 64,
	ATR_MOD_PATH_MAX = 1024,
};

/* Words of a call record of type t including word 0, without optional
 * words; 0 for anything that is not a call type. */
#define ATR_WORDS_(NAME, name, type, op, args, ret, params) ATR_ARGS_WORDS_##args,
static inline unsigned atr_call_words(unsigned t)
{
	static const unsigned char w[ATR_T_CALL_LAST + 1] = {0, ATR_CALLS(ATR_WORDS_)};
	return t <= ATR_T_CALL_LAST ? w[t] : 0;
}
#undef ATR_WORDS_

/* Argument shape (enum atr_args) of call type t; 0 if not a call type. */
#define ATR_ARGS_(NAME, name, type, op, args, ret, params) ATR_ARGS_##args,
static inline unsigned atr_call_args(unsigned t)
{
	static const unsigned char a[ATR_T_CALL_LAST + 1] = {0, ATR_CALLS(ATR_ARGS_)};
	return t <= ATR_T_CALL_LAST ? a[t] : 0;
}
#undef ATR_ARGS_

/* Words of an extended call after word 1 (its ATR_XCALLS letters); 0 if
 * xt is not an extended call type. */
#define ATR_XWORDS_(NAME, name, type, words, ret, params) [type - ATR_T_XCALL_FIRST] = words,
static inline const char *atr_xcall_letters(unsigned xt)
{
	static const char *const l[ATR_NXCALLS] = {ATR_XCALLS(ATR_XWORDS_)};
	return xt >= ATR_T_XCALL_FIRST && xt <= ATR_T_XCALL_LAST ? l[xt - ATR_T_XCALL_FIRST] : "";
}
#undef ATR_XWORDS_
static inline unsigned atr_xcall_words(unsigned xt)
{
	const char *l = atr_xcall_letters(xt);
	unsigned n = 0;
	while (l[n])
		n++;
	return n;
}
/* Is t an event type of a traced call (malloc family or extended)? */
static inline int atr_is_xcall(unsigned t)
{
	return t >= ATR_T_XCALL_FIRST && t <= ATR_T_XCALL_LAST;
}

/* Total words of an EXT record whose word 1 is xt; 0 if xt is unknown or
 * the flags are not allowed (WIDE). */
static inline unsigned atr_ext_words(uint64_t xt, unsigned flags)
{
	if (xt > ATR_T_XCALL_LAST || !atr_is_xcall((unsigned)xt) || (flags & ATR_FLAG_WIDE))
		return 0;
	return 2 + atr_xcall_words((unsigned)xt) + !!(flags & ATR_FLAG_STACK) +
	       !!(flags & ATR_FLAG_TIMED);
}

/* Total words of a call record: type and flags from word 0. */
static inline unsigned atr_record_words(unsigned t, unsigned flags)
{
	return atr_call_words(t) + !!(flags & ATR_FLAG_WIDE) + !!(flags & ATR_FLAG_STACK) +
	       !!(flags & ATR_FLAG_TIMED);
}

#endif
