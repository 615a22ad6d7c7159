/* zstd_sweep.c - recompress the frames of v2 traces recorded without zstd
 * (ALLOCTRACE_ZSTD_LEVEL=0: the compact encoding as is) with one set of
 * zstd parameters, one frame at a time as the recorder does, and print
 * what they take.  bench/zstd_sweep.py runs it under callgrind (toggled on
 * ZSTD_compress2 only) for the instructions of each parameter set.
 *
 * usage: zstd_sweep LEVEL STRATEGY WINDOWLOG TARGETLEN MINMATCH FILE...
 *        (0 for STRATEGY, WINDOWLOG, TARGETLEN, MINMATCH: the level's own)
 * prints: frames=N calls=N raw=BYTES unit=BYTES (unit: 64-byte header +
 *         payload padded to 8, what the trace file holds per frame)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "../src/format/atr_format.h"

static int set(ZSTD_CCtx *c, ZSTD_cParameter p, int v)
{
	size_t r = ZSTD_CCtx_setParameter(c, p, v);
	if (ZSTD_isError(r)) {
		fprintf(stderr, "zstd_sweep: parameter %d = %d: %s\n", (int)p, v,
			ZSTD_getErrorName(r));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 7) {
		fprintf(stderr,
			"usage: zstd_sweep LEVEL STRATEGY WINDOWLOG TARGETLEN MINMATCH FILE...\n");
		return 2;
	}
	int level = atoi(argv[1]), strat = atoi(argv[2]), wlog = atoi(argv[3]),
	    tlen = atoi(argv[4]), mm = atoi(argv[5]);
	ZSTD_CCtx *c = ZSTD_createCCtx();
	if (!c || set(c, ZSTD_c_compressionLevel, level) || set(c, ZSTD_c_checksumFlag, 1) ||
	    (strat && set(c, ZSTD_c_strategy, strat)) || (wlog && set(c, ZSTD_c_windowLog, wlog)) ||
	    (tlen && set(c, ZSTD_c_targetLength, tlen)) || (mm && set(c, ZSTD_c_minMatch, mm)))
		return 1;
	uint64_t frames = 0, calls = 0, raw = 0, unit = 0;
	for (int i = 6; i < argc; i++) {
		FILE *f = fopen(argv[i], "rb");
		if (!f) {
			perror(argv[i]);
			return 1;
		}
		fseek(f, 0, SEEK_END);
		size_t len = (size_t)ftell(f);
		fseek(f, 0, SEEK_SET);
		uint8_t *b = malloc(len);
		if (!b || fread(b, 1, len, f) != len) {
			fprintf(stderr, "zstd_sweep: %s: read failed\n", argv[i]);
			return 1;
		}
		fclose(f);
		uint64_t feat;
		memcpy(&feat, b + ATR_H_FEATURES, 8);
		if (feat & ATR_FEAT_ZSTD) {
			fprintf(stderr, "zstd_sweep: %s: frames are compressed already\n", argv[i]);
			return 1;
		}
		for (size_t off = ATR_HEADER_SIZE; off + 64 <= len; off += ATR_UNIT_ALIGN) {
			uint32_t mg, kind, cs, nc;
			memcpy(&mg, b + off + ATR_B_MAGIC, 4);
			memcpy(&kind, b + off + ATR_B_KIND, 4);
			memcpy(&cs, b + off + ATR_U_CSIZE, 4);
			memcpy(&nc, b + off + ATR_U_CALLS, 4);
			if (mg != ATR_BLOCK_MAGIC || kind != ATR_BLOCK_FRAME ||
			    cs > len - off - 64 ||
			    atr_unit_check(b + off) != *(const uint32_t *)(b + off + ATR_U_CHECK))
				continue;
			size_t cap = ZSTD_compressBound(cs);
			uint8_t *z = malloc(cap);
			size_t zl = ZSTD_compress2(c, z, cap, b + off + 64, cs);
			if (ZSTD_isError(zl)) {
				fprintf(stderr, "zstd_sweep: %s\n", ZSTD_getErrorName(zl));
				return 1;
			}
			free(z);
			frames++;
			calls += nc;
			raw += cs;
			unit += 64 + ((zl + 7) & ~(size_t)7);
			off += ((64 + (size_t)cs + 7) & ~(size_t)7) - ATR_UNIT_ALIGN;
		}
		free(b);
	}
	printf("frames=%llu calls=%llu raw=%llu unit=%llu\n", (unsigned long long)frames,
	       (unsigned long long)calls, (unsigned long long)raw, (unsigned long long)unit);
	ZSTD_freeCCtx(c);
	return 0;
}
