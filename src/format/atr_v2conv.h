/* atr_v2conv.h - rewrite a version-1 trace as version 2. */
#ifndef ATR_V2CONV_H
#define ATR_V2CONV_H

#include <stddef.h>
#include <stdint.h>

/* in: a whole v1 file.  level: zstd level (1..19), 0 = frames not
 * compressed (feature ZSTD clear).  On success *out (malloc'd) holds the
 * v2 file; -1 with err filled on failure. */
int atr_v1_to_v2(const uint8_t *in, size_t len, int level, uint8_t **out, size_t *outlen, char *err,
		 size_t errlen);

#endif
