/* dj_trace.h - reader of glibc dj/malloc traces (docs/DJ_COMPAT.md).
 *
 * A dj trace is an array of 64-byte records (dj_format.h) whose first
 * record is a magic record; dj_trace_detect() recognises it.  The reader
 * hands out the calls as struct atr_event (atr_reader.h), so everything
 * that reads alloctrace traces in global order (the converter) reads these
 * too:
 *  - threads by their real tid (dj's trace2wl hashed tids >> 3 and merged
 *    threads whose tids differ only in the low 3 bits), serials 1, 2, ...
 *    in order of appearance;
 *  - dj records are in the order the calls *entered* malloc, so a block can
 *    be returned before the record of its release by another thread (an
 *    inversion).  Allocations, realloc results included, are held back
 *    until the release of their address; the old block of a moving realloc
 *    is released at the realloc's record (ATR_EV_REALLOC_RELEASE, then the
 *    realloc itself when its result is free), as alloctrace's own reader
 *    orders them.  dj's trace2wl fixed this for malloc/calloc/valloc/pvalloc
 *    only;
 *  - a realloc that glibc turned into malloc/free (path bit m_f_realloc,
 *    the inner call in the thread's next record) is one realloc call.
 * Memory: the live set plus the held-back allocations; the file is mapped.
 * Corrupt input gives an error or a counted anomaly, never a crash
 * (fuzzed: tests/fuzz/fuzz_dj.c).
 */
#ifndef DJ_TRACE_H
#define DJ_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "atr_reader.h"

struct dj_trace_stats {
	uint64_t records;	     /* call records */
	uint32_t threads;	     /* distinct tids */
	uint32_t first_tid;	     /* thread of the magic record */
	uint64_t unused_records;     /* zero records (padding) */
	uint64_t unknown_records;    /* unknown type byte: skipped */
	uint64_t extra_magic;	     /* magic records after the first: skipped */
	uint64_t truncated_bytes;    /* a partial record at the end: ignored */
	uint64_t inversions_fixed;   /* allocations moved after their address's release */
	uint64_t inversions_pending; /* never released: left where they were */
	uint64_t reallocs_merged;    /* m_f_realloc realloc + inner malloc/free */
	uint64_t hints;		     /* alloctrace's ownership hints: skipped */
	int alloctrace_export;	     /* written by `alloctrace export --format dj-trace` */
};

typedef struct dj_trace dj_trace;

/* 1 if the bytes start with a dj trace's magic record (64-bit). */
int dj_trace_detect(const void *data, size_t size);
/* The same for a file: reads its first record.  0 on any error. */
int dj_trace_detect_path(const char *path);

/* 0, or -1 with errbuf filled ("PATH: what was wrong"). */
int dj_trace_open(const char *path, dj_trace **out, char *errbuf, size_t errlen);
/* On a caller-owned buffer kept alive until dj_trace_close(). */
int dj_trace_open_buffer(const void *data, size_t size, const char *name, dj_trace **out,
			 char *errbuf, size_t errlen);
/* 1 with *ev pointing to the reader's event (valid until the next call),
 * 0 at the end, -1 on error (dj_trace_error()). */
int dj_trace_next(dj_trace *t, const struct atr_event **ev);
const struct dj_trace_stats *dj_trace_get_stats(const dj_trace *t);
const char *dj_trace_error(const dj_trace *t);
void dj_trace_close(dj_trace *t);

/* Writer (`alloctrace export --format dj-trace`): one record per call, in
 * the order given (the reader's global order), for dj's trace2wl:
 *  - the thread field is tid << 3 (dj's trace2wl drops the low 3 bits of
 *    it, which merged threads); the magic record's pad says so
 *    (DJ_ALC_MARK) and this reader shifts it back;
 *  - posix_memalign, aligned_alloc, valloc and pvalloc are written as the
 *    memalign they are (dj's trace2wl gives posix_memalign blocks no sync,
 *    and its trace_run aborts on valloc and pvalloc); reallocarray as
 *    realloc, calloc with its total size;
 *  - before a realloc whose new address dj's trace2wl would give no owner
 *    (so no sync before another thread frees it: a race in its trace_run),
 *    a FREE of that address flagged DJ_PATH_ALC_HINT: dj's trace2wl takes
 *    ownership and writes nothing for it (it prints "invalid pointer"),
 *    this reader skips it. */
typedef struct dj_trace_writer dj_trace_writer;
int dj_trace_writer_open(FILE *fp, uint32_t first_tid, dj_trace_writer **out);
/* 1 written, 0 not a call (skipped), -1 write error. */
int dj_trace_writer_add(dj_trace_writer *w, const struct atr_event *ev);
uint64_t dj_trace_writer_records(const dj_trace_writer *w);
uint64_t dj_trace_writer_hints(const dj_trace_writer *w);
/* Frees w (fp stays open): 0, or -1 if a write failed (errno set). */
int dj_trace_writer_close(dj_trace_writer *w);

#endif
