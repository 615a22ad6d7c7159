/* dj_format.h - constants of glibc's dj/malloc trace tools (docs/DJ_COMPAT.md).
 *
 * Written from the dj/malloc branch's malloc/mtrace.h, trace2wl.c and
 * trace_run.c (read, not copied).  Two formats:
 *
 * Trace (what a dj/malloc glibc writes to /tmp/mtrace.out.PID): no header,
 * an array of 64-byte native-endian records; the first is a magic record
 * (type 255, ptr1 0x1234, size sizeof(void *)).  Records are in the order
 * the calls *entered* the allocator (one global counter).
 *
 * Workload (what dj's trace2wl writes and trace_run runs): opcode bytes,
 * each followed by unsigned varints written most-significant 7-bit group
 * first, 0x80 set on every byte but the last (not LEB128).  No magic: a
 * header (ALLOC_PTRS n, ALLOC_SYNCS n, NTHREADS n, one START_THREAD offset
 * per thread, DONE), then each thread's op stream, each ending in DONE.
 */
#ifndef DJ_FORMAT_H
#define DJ_FORMAT_H

/* ---- trace records (64 bytes, little-endian on the machines we read) */
#define DJ_REC_SIZE 64u
enum {
	DJ_R_THREAD = 0, /* int32: the thread's tid */
	DJ_R_TYPE = 4,	 /* u32: bits 0-7 type, 8.. path bits */
	DJ_R_PTR1 = 8,	 /* free/realloc: old block; posix_memalign: result code */
	DJ_R_PTR2 = 16,	 /* returned block */
	DJ_R_SIZE = 24,	 /* requested bytes (calloc: the total) */
	DJ_R_SIZE2 = 32, /* memalign/posix_memalign: alignment; free/realloc:
			    internal size of the old chunk */
	DJ_R_SIZE3 = 40, /* internal size of the new chunk */
	DJ_R_PAD = 48,	 /* 2 x u64, zero */
};
/* path bits of the type word (after the 8 type bits) */
#define DJ_PATH_M_F_REALLOC                                                                        \
	(1u << 14) /* realloc became malloc/free: the                                              \
		      next record(s) of the thread */
/* alloctrace's own (a bit dj never sets): an ownership hint, not a call.
 * A FREE of a realloc's new address, written just before the realloc, so
 * that dj's trace2wl gives the address an owner and syncs its later use by
 * another thread (its realloc acquires only addresses that have one). */
#define DJ_PATH_ALC_HINT (1u << 31)

enum dj_type {
	DJ_T_UNUSED = 0, /* zero padding at the end of a trace */
	DJ_T_MALLOC = 1,
	DJ_T_CALLOC = 2,
	DJ_T_FREE = 3,
	DJ_T_REALLOC = 4,
	DJ_T_MEMALIGN = 5, /* size2 = alignment */
	DJ_T_VALLOC = 6,
	DJ_T_PVALLOC = 7,
	DJ_T_POSIX_MEMALIGN = 8, /* ptr1 = result code, size2 = alignment */
	DJ_T_MAGIC = 255,	 /* first record: ptr1 0x1234, size 8 */
};
#define DJ_MAGIC_PTR1 0x1234u

/* alloctrace's own mark in the pad words of the magic record of a trace it
 * exported (dj's tools ignore them): "ALCTDJ\0\1". */
#define DJ_ALC_MARK 0x0100444a54434c41ULL

/* ---- workload op codes */
enum dj_op {
	DJ_C_NOP = 0,
	DJ_C_DONE = 1,
	DJ_C_MALLOC = 2,	  /* p2, size */
	DJ_C_CALLOC = 3,	  /* p2, size (calloc(size, 1)) */
	DJ_C_REALLOC = 4,	  /* p2, p1, size */
	DJ_C_FREE = 5,		  /* p1 */
	DJ_C_SYNC_W = 6,	  /* sync id */
	DJ_C_SYNC_R = 7,	  /* sync id */
	DJ_C_ALLOC_PTRS = 8,	  /* count (header) */
	DJ_C_ALLOC_SYNCS = 9,	  /* count (header) */
	DJ_C_NTHREADS = 10,	  /* count (header) */
	DJ_C_START_THREAD = 11,	  /* file offset of the thread's stream (header) */
	DJ_C_MEMALIGN = 12,	  /* p2, alignment, size */
	DJ_C_VALLOC = 13,	  /* p2, size (dj's trace_run aborts on it) */
	DJ_C_PVALLOC = 14,	  /* p2, size (dj's trace_run aborts on it) */
	DJ_C_POSIX_MEMALIGN = 15, /* p2, alignment, size (never written by dj) */
};

/* A varint of a size_t has at most 10 groups of 7 bits. */
#define DJ_VARINT_MAX 10u

#endif
