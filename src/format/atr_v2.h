/* atr_v2.h - the compact record encoding of trace format v2.
 *
 * A v2 FRAME holds one block of a thread's records.  The recorder keeps
 * writing version-1 records (8-byte words, atr_format.h) into its staging
 * block, where a kill -9 cannot lose them; at flush it encodes them with
 * atr_v2_encode() (varints, timestamp deltas, a move-to-front cache of
 * recent addresses, sizes without what the allocator's rounding implies)
 * and compresses the result.  atr_v2_decode() gives back the exact words.
 * docs/TRACE_FORMAT.md ("Compact encoding") is the byte-level spec.
 *
 * Both functions are pure: no allocation, no I/O, no globals, so the
 * preload library links this file too.  The decoder checks every byte.
 */
#ifndef ATR_V2_H
#define ATR_V2_H

#include <stddef.h>
#include <stdint.h>

/* Encoded bytes never exceed this for n bytes of v1 records. */
#define ATR_V2_ENC_BOUND(n) ((n) + (n) / 2 + 64)

struct atr_v2_meta {
	uint32_t records, calls;
	uint64_t first_ts, last_ts; /* smallest stamp, largest stamp or end */
};

/* Encode n bytes of v1 records (whole records, no terminator) into out.
 * features: the file's feature bits (they set the default flags and the
 * chunk-flag handling).  Returns the encoded size, or 0 if the input is
 * not a sequence of whole records or out is too small. */
size_t atr_v2_encode(const uint8_t *v1, size_t n, uint64_t features, uint8_t *out, size_t cap,
		     struct atr_v2_meta *meta);

/* Decode len bytes into at most cap bytes of v1 records.  Returns the
 * decoded size (>= 0), or -1 with *why set to a static message. */
long atr_v2_decode(const uint8_t *in, size_t len, uint64_t features, uint8_t *out, size_t cap,
		   struct atr_v2_meta *meta, const char **why);

#endif
