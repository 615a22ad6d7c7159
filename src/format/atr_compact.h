/* atr_compact.h - drop the staging blocks of a finished version-2 trace.
 *
 * While a process runs, each thread keeps a STAGING block of block_size
 * bytes (256 KiB) in its trace file, where a kill -9 cannot lose what it
 * holds; once the process is gone that space is waste (a process of a few
 * hundred calls leaves a 260 KiB file).  atr_compact() rewrites the file
 * with each STAGING block that a reader reads encoded as a FRAME, exactly
 * as the recorder would have flushed it, and without the superseded and
 * RETIRED ones: the same records, threads and counts
 * (docs/TRACE_FORMAT.md, "Compaction").
 */
#ifndef ATR_COMPACT_H
#define ATR_COMPACT_H

#include <stddef.h>
#include <stdint.h>

/* Files larger than this are left alone: their staging blocks are a small
 * share of them, and rewriting costs a copy of the whole file. */
#define ATR_COMPACT_MAX_BYTES (1ULL << 30)

/* Only for a file no process writes any more (the caller checks that its
 * pid is gone).  Writes PATH.compact, checks it, renames it over path.
 * Returns 1 (compacted; *before and *after are the file sizes), 0 (left
 * alone: version 1, nothing to gain, too big, or a file a reader would
 * report as damaged: the evidence stays), or a negative atr_err with err
 * filled (the file is unchanged). */
int atr_compact(const char *path, uint64_t *before, uint64_t *after, char *err, size_t errlen);

#endif
