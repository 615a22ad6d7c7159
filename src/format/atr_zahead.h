/* atr_zahead.h - v2 frames decompressed ahead by a helper thread
 * (internal to src/format: the reader uses it, atr_iter_help drives it).
 *
 * zstd is a third of the reading thread's instructions on a convert
 * (bench/replay/RESULTS.md), and the reading thread bounds convert when
 * live sets are small, while the converting thread waits for it.  So the
 * reader posts the next frames of the thread it reads, and the converting
 * thread, instead of waiting, decompresses one (za_help); the reader then
 * takes the bytes (za_take) or, if nobody has started on them, does the
 * work itself.  The bytes are the same either way: nothing else changes.
 *
 * A slot moves FREE -> POSTED (reader) -> BUSY (helper) -> DONE (helper)
 * -> FREE (reader), or POSTED -> FREE (the reader takes its frame back).
 * Each side writes a slot's fields only in its own states and publishes
 * them with the state's store.  Any number of readers' frames, one helper
 * thread at a time.
 */
#ifndef ATR_ZAHEAD_H
#define ATR_ZAHEAD_H

#include <stddef.h>
#include <stdint.h>

/* Frames posted at a time: the helper takes the latest, so that the reader
 * seldom needs a frame the helper is still on. */
#define ZA_SLOTS 2

struct za;

/* A helper for the file read from base (mapped, or NULL) or fd, size bytes
 * long; NULL if out of memory. */
struct za *za_new(const uint8_t *base, int fd, uint64_t size);
void za_free(struct za *z);

/* The reader: the FRAME unit at file offset off may be needed soon (a
 * slot is taken if one is free and none holds off already). */
void za_post(struct za *z, uint64_t off);

/* The reader needs the FRAME at off, decompressed to at most bound bytes:
 * 1 when a helper did it (*buf, *cap and *pop swapped with its buffer,
 * *len its bytes), else 0 (not posted, taken back before a helper began,
 * or the helper failed: the reader does the work, and reports any error
 * itself).  Waits for a helper that is on it. */
int za_take(struct za *z, uint64_t off, size_t bound, uint8_t **buf, size_t *cap, size_t *pop,
	    size_t *len);

/* The helper: decompresses the latest frame posted, if any: 1 done, 0
 * nothing posted. */
int za_help(struct za *z);

#endif
