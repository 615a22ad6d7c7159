/* atr_calls.h - the one list of the traced functions: the malloc family
 * (ATR_CALLS) and the other calls (ATR_XCALLS, below).
 *
 * Everything that has one entry per traced function is expanded from
 * ATR_CALLS: the trace record types and layouts (atr_format.h), their names
 * and decoding (atr_reader.c), the preload library's table of real
 * functions, bootstrap and dlsym lists (atp_internal.h, atp_init.c), the
 * attacher's GOT table (att_attach.c), the workload op codes and field
 * counts (awl_workload.*), convert's type -> op mapping (rp_convert.c) and
 * the replayer's allocator table and dispatch (rp_replay.c).
 *
 * Columns of X(NAME, name, type, op, args, ret, params):
 *   NAME    suffix of ATR_T_NAME and AWL_OP_NAME
 *   name    the C function (and exported symbol, and printed name)
 *   type    trace record type (docs/TRACE_FORMAT.md); must be 1, 2, ... in
 *           list order (tables are indexed by it)
 *   op      workload op code (docs/WORKLOAD_FORMAT.md); same rule
 *   args    argument shape, ATR_ARGS_<args> below: the record's words after
 *           word 0, the workload op's fields and how replay calls it
 *   ret     return type, params parenthesized parameter types (the
 *           preload library's and the replayer's function pointers)
 *
 * The order is also the order of the pointer table that `record -p` reads
 * from the target (alloctrace_attach_impl): both sides expand this list.
 * Adding a function: a line here (next type and op number), its hook in
 * src/preload/atp_hooks.c and its boot forwarder in atp_init.c, and tests.
 * A new argument shape also needs its decoding (atr_reader.c), its ops
 * (rp_convert.c, rp_replay.c) and its text in dump.c.
 *
 * No dependencies: the preload library includes it.
 */
#ifndef ATR_CALLS_H
#define ATR_CALLS_H

/* clang-format off */
#define ATR_CALLS(X) \
	X(MALLOC,         malloc,          1,  1, SIZE,      void *, (size_t)) \
	X(FREE,           free,            2,  2, PTR,       void,   (void *)) \
	X(CALLOC,         calloc,          3,  3, NMEMB,     void *, (size_t, size_t)) \
	X(REALLOC,        realloc,         4,  4, OLD,       void *, (void *, size_t)) \
	X(REALLOCARRAY,   reallocarray,    5,  5, OLD_NMEMB, void *, (void *, size_t, size_t)) \
	X(MEMALIGN,       memalign,        6,  6, ALIGN,     void *, (size_t, size_t)) \
	X(POSIX_MEMALIGN, posix_memalign,  7,  7, ALIGN_OUT, int,    (void **, size_t, size_t)) \
	X(ALIGNED_ALLOC,  aligned_alloc,   8,  8, ALIGN,     void *, (size_t, size_t)) \
	X(VALLOC,         valloc,          9,  9, SIZE,      void *, (size_t)) \
	X(PVALLOC,        pvalloc,        10, 10, SIZE,      void *, (size_t))
/* clang-format on */

/* The other traced functions: the program's own mappings, break moves and
 * allocator controls.  They are no blocks of the heap, so they stay out of
 * the live sets and the workload's call ops (convert writes their own ops,
 * rp_convert.c); they are records, names, hooks, boot forwarders, exports
 * and entries of the attach table after the ATR_CALLS ones.
 *
 * Columns of X(NAME, name, type, words, ret, params):
 *   NAME    suffix of ATR_T_NAME
 *   type    the event type (atr_event.type): ATR_T_XCALL_FIRST, +1, ... in
 *           list order.  On disk the record is type ATR_T_EXT with this
 *           number in word 1 (docs/TRACE_FORMAT.md, "Extended calls").
 *   words   the record's words after word 1, one letter each, which also
 *           says how the compact encoding stores it: A an address (zigzag
 *           delta from the last allocation's), U unsigned, S signed
 *   ret, params as in ATR_CALLS
 * mmap64 is an alias of mmap on 64-bit glibc: one hook, two symbols, MMAP
 * records.  A hook in atp_hooks.c and a boot forwarder in atp_init.c per
 * line; the words' meaning in atr_reader.c (xcall_decode) and dump.c. */
/* clang-format off */
#define ATR_XCALLS(X) \
	X(MMAP,               mmap,               40, "AUAUUU", void *,  (void *, size_t, int, int, int, off_t)) \
	X(MUNMAP,             munmap,             41, "AUU",    int,     (void *, size_t)) \
	X(MREMAP,             mremap,             42, "AUAUUA", void *,  (void *, size_t, size_t, int, ...)) \
	X(MADVISE,            madvise,            43, "AUUU",   int,     (void *, size_t, int)) \
	X(BRK_CALL,           brk,                44, "AAAU",   int,     (void *)) \
	X(SBRK,               sbrk,               45, "SAAU",   void *,  (intptr_t)) \
	X(MALLOPT,            mallopt,            46, "SSS",    int,     (int, int)) \
	X(MALLOC_TRIM,        malloc_trim,        47, "US",     int,     (size_t)) \
	X(MALLOC_USABLE_SIZE, malloc_usable_size, 48, "AU",     size_t,  (void *))
/* clang-format on */

/* Position in ATR_XCALLS (1-based). */
#define ATR_XCALL_SEQ_(NAME, name, type, words, ret, params) ATR_XCALL_SEQ_##NAME,
enum atr_xcall_seq { ATR_XCALL_SEQ_NONE_ = 0, ATR_XCALLS(ATR_XCALL_SEQ_) ATR_NXCALLS_PLUS1_ };
#undef ATR_XCALL_SEQ_
#define ATR_NXCALLS ((unsigned)ATR_NXCALLS_PLUS1_ - 1u)

/* Argument shapes.  Trace words after word 0 / workload fields / call:
 *   SIZE       ret, size                 dst, size            f(size)
 *   PTR        ptr                       src                  f(ptr)
 *   NMEMB      ret, total, nmemb         dst, nmemb, elsize   f(nmemb, elsize)
 *   OLD        ret, size, old            src, dst, size       f(old, size)
 *   OLD_NMEMB  ret, total, old, nmemb    src, dst, nmemb, el  f(old, nmemb, el)
 *   ALIGN      ret, size, align          dst, align, size     f(align, size)
 *   ALIGN_OUT  like ALIGN; returns an error code (kept in the slack field
 *              when ret is 0) and the pointer through its first argument */
enum atr_args {
	ATR_ARGS_SIZE = 1,
	ATR_ARGS_PTR,
	ATR_ARGS_NMEMB,
	ATR_ARGS_OLD,
	ATR_ARGS_OLD_NMEMB,
	ATR_ARGS_ALIGN,
	ATR_ARGS_ALIGN_OUT,
};

/* Record words (with word 0, without optional words) per shape. */
#define ATR_ARGS_WORDS_SIZE	 3
#define ATR_ARGS_WORDS_PTR	 2
#define ATR_ARGS_WORDS_NMEMB	 4
#define ATR_ARGS_WORDS_OLD	 4
#define ATR_ARGS_WORDS_OLD_NMEMB 5
#define ATR_ARGS_WORDS_ALIGN	 4
#define ATR_ARGS_WORDS_ALIGN_OUT 4

/* Workload op fields per shape. */
#define ATR_ARGS_FIELDS_SIZE	  2
#define ATR_ARGS_FIELDS_PTR	  1
#define ATR_ARGS_FIELDS_NMEMB	  3
#define ATR_ARGS_FIELDS_OLD	  3
#define ATR_ARGS_FIELDS_OLD_NMEMB 4
#define ATR_ARGS_FIELDS_ALIGN	  3
#define ATR_ARGS_FIELDS_ALIGN_OUT 3

/* Position in the list (1-based): ATR_CALL_SEQ_MALLOC = 1, ... */
#define ATR_CALL_SEQ_(NAME, name, type, op, args, ret, params) ATR_CALL_SEQ_##NAME,
enum atr_call_seq { ATR_CALL_SEQ_NONE_ = 0, ATR_CALLS(ATR_CALL_SEQ_) ATR_NCALLS_PLUS1_ };
#undef ATR_CALL_SEQ_
#define ATR_NCALLS ((unsigned)ATR_NCALLS_PLUS1_ - 1u) /* functions in the list */

#endif
