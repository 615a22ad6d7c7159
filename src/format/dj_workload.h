/* dj_workload.h - glibc dj/malloc workload files (docs/DJ_COMPAT.md):
 * read (translated into an alloctrace workload) and written.
 *
 * Reading: a dj workload has no magic; dj_wl_detect() recognises its header
 * (ALLOC_PTRS, ALLOC_SYNCS, NTHREADS, one START_THREAD per thread, DONE).
 * dj_wl_translate() checks every byte and writes the same calls as an
 * alloctrace workload (docs/WORKLOAD_FORMAT.md) that `replay` runs:
 *  - pointer index p becomes a slot (numbered in order of first use), index
 *    0 is NULL (dj's trace2wl writes 0 for NULL);
 *  - SYNC_R k becomes a WAIT for the op count of the thread that wrote
 *    SYNC_W k; syncs are kept, none is dropped;
 *  - the streams are run once in an order that honours the syncs; a slot
 *    used by another thread than its last user without a sync in between
 *    (dj's trace2wl left such races after moving reallocs and
 *    posix_memalign) gets a WAIT on that use: counted as races_fixed;
 *  - an allocation into a slot that is still live frees the old block
 *    first, as dj's trace_run does (a DROP op, not a call); a free of an
 *    empty slot is free(NULL), as in dj's trace_run.
 * Corrupt input (truncated streams, bad varints, offsets or indices past
 * the end, unknown ops, a SYNC_R nobody writes) is an error message, never
 * a crash (fuzzed: tests/fuzz/fuzz_dj.c).
 *
 * Writing: dj_wl_write() turns an alloctrace workload into a dj workload
 * whose syncs are alloctrace's WAITs (so dj's trace_run does not race).
 */
#ifndef DJ_WORKLOAD_H
#define DJ_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "awl_workload.h"

struct dj_wl_stats {
	uint64_t n_ptrs, n_syncs; /* from the header */
	uint32_t threads;
	uint64_t ops;			      /* dj ops in the streams (DONE excluded) */
	uint64_t calls[AWL_OP_CALL_LAST + 1]; /* by alloctrace call type, [0] total */
	uint64_t syncs_w, syncs_r, nops;      /* SYNC_W, SYNC_R, NOP ops */
	uint64_t waits;			      /* WAIT ops written */
	uint64_t races_fixed;		      /* WAITs added for unsynchronised slot use */
	uint64_t overwrites;		      /* allocations into a live slot (DROP) */
	uint64_t null_frees;		      /* frees of an empty slot or index 0 */
	uint64_t slots, ideal_peak;
	uint64_t dropped; /* (dj_wl_write) DROPs not written: dj has no such op */
	uint64_t sinks;	  /* (dj_wl_write) failed allocations written into a
			     per-thread scratch index */
};

/* 1 if the bytes start like a dj workload header. */
int dj_wl_detect(const void *data, size_t size);
/* The same for a file (mapped, only its header is read). */
int dj_wl_detect_path(const char *path);

/* Translate the dj workload `in` into an alloctrace workload at `out`.
 * 0, or -1 with errbuf filled ("PATH: what was wrong"); out is removed on
 * error. */
int dj_wl_translate(const char *in, const char *out, struct dj_wl_stats *st, char *errbuf,
		    size_t errlen);
int dj_wl_translate_buffer(const void *data, size_t size, const char *name, const char *out,
			   struct dj_wl_stats *st, char *errbuf, size_t errlen);

/* Write the alloctrace workload f (verified first) as a dj workload to
 * out.  0, or -1 with errbuf filled. */
int dj_wl_write(awl_file *f, FILE *out, struct dj_wl_stats *st, char *errbuf, size_t errlen);

#endif
