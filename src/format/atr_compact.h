/* atr_compact.h - drop the staging blocks of a finished version-2 trace.
 *
 * While a process runs, each thread keeps a STAGING block of block_size
 * bytes (256 KiB) in its trace file, where a kill -9 cannot lose what it
 * holds; once the process is gone that space is waste (a process of a few
 * hundred calls leaves a 260 KiB file).  atr_compact() rewrites the file
 * with each STAGING block that a reader reads encoded as a FRAME, exactly
 * as the recorder would have flushed it, and without the superseded and
 * RETIRED ones: the same records, threads and counts
 * (docs/TRACE_FORMAT.md, "Compaction").  Once the program is gone, time is
 * cheap and nobody waits for it, so the frames are recompressed too: a
 * thread's records in frames four times a block, at a stronger zstd level
 * than the recorder can afford at flush.
 */
#ifndef ATR_COMPACT_H
#define ATR_COMPACT_H

#include <stddef.h>
#include <stdint.h>

/* Files larger than this are left alone when less than half of them is
 * staging units: then those are a small share, and rewriting costs a copy
 * of the whole file.  A file of raw blocks (record --encode later) is
 * compacted at any size: unit by unit, in memory a few MiB plus 24 bytes
 * per unit, on disk the compacted copy next to the original until the
 * rename. */
#define ATR_COMPACT_MAX_BYTES (1ULL << 30)

/* The level record and collect use by default (docs/CLI.md,
 * `--compact-level`): bench/RESULTS.md has the sweep it was chosen by. */
#define ATR_COMPACT_LEVEL_DEFAULT 9

/* Frames are compressed by this many threads at most (threads <= 0: one
 * per online CPU, up to this): ~5 MiB each at level 9 (two frames' worth
 * of buffers and a zstd context), the frames written in order, so the
 * file is the same bytes with any number (bench/RESULTS.md, "Compaction
 * on every core"). */
#define ATR_COMPACT_THREADS_MAX 8

/* Only for a file no process writes any more (the caller checks that its
 * pid is gone).  level 0: frames stay as written, staging blocks become
 * frames as the recorder would have flushed them.  level 1..22: besides,
 * each thread's records are recompressed at that zstd level in frames of
 * up to ATR_FRAME_MERGED bytes of records (docs/TRACE_FORMAT.md,
 * "Compaction"); the file header says so (ATR_H_COMPACT_LEVEL) and a file
 * compacted at that level already is left alone.  Writes PATH.compact,
 * checks it, renames it over path.  Returns 1 (compacted; *before and
 * *after are the file sizes), 0 (left alone: version 1, nothing to gain,
 * too big, or a file a reader would report as damaged: the evidence
 * stays), or a negative atr_err with err filled (the file is unchanged). */
int atr_compact(const char *path, int level, int threads, uint64_t *before, uint64_t *after,
		char *err, size_t errlen);

#endif
