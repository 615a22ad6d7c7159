/* fuzz_replay.c - runs the reader fuzz target without libFuzzer.
 *
 *   fuzz_reader_replay [FILE_OR_DIR...]      replay files (e.g. the corpus),
 *                                            then 20000 deterministic
 *                                            mutations of built-in traces
 *   fuzz_reader_replay --write-seeds DIR     write the built-in traces
 *   fuzz_reader_replay --iterations N ...    another mutation count
 *
 * Mutations: bit flips, truncations, word overwrites with edge values,
 * block header rewrites, from a fixed-seed PRNG: every run is the same.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "atr_format.h"
#include "atr_testwriter.h"
#include "fuzz_reader.h"

static uint64_t rs = 0x9e3779b97f4a7c15ULL;
static uint64_t rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}

struct seed {
	uint8_t *buf;
	size_t len;
};

#define NSEEDS 6

static void add_calls(struct atw *w, uint32_t s, uint64_t *ts, int n)
{
	for (int i = 0; i < n; i++) {
		uint64_t p = 0x10000 + 16 * (uint64_t)(i % 50);
		atw_malloc(w, s, ++*ts, p, (uint64_t)(i * 7 % 300), (uint32_t)(i % 20));
		if (i % 3 == 0)
			atw_realloc(w, s, ++*ts, p, p + 0x8000, 64, 3);
		if (i % 5 == 0) {
			uint64_t f[3] = {p + 0x100000, atw_size(48, 16), 5};
			atw_call(w, s, ++*ts, ATR_T_CALLOC, 0, f, NULL);
		}
		if (i % 7 == 0) {
			uint64_t f[3] = {i % 14 ? p + 0x200000 : 0, atw_size(100, 12), 64};
			uint64_t o[3] = {5, 9, 11};
			atw_call(w, s, ++*ts, ATR_T_POSIX_MEMALIGN, ATR_FLAG_STACK | ATR_FLAG_TIMED,
				 f, o);
		}
		if (i % 11 == 0) {
			uint64_t f[4] = {p + 0x300000, 1ULL << 50, p, 3};
			uint64_t o[2] = {UINT64_MAX, 4};
			atw_call(w, s, ++*ts, ATR_T_REALLOCARRAY, ATR_FLAG_WIDE | ATR_FLAG_TIMED, f,
				 o);
		}
		atw_free(w, s, ++*ts, i % 4 ? p : 0);
		if (i % 40 == 0)
			atw_marker(w, s, ++*ts, "phase");
	}
}

static void build_seeds(struct seed *sd)
{
	for (int k = 0; k < NSEEDS; k++) {
		struct atw *w = atw_new(4096);
		uint64_t ts = 0;
		switch (k) {
		case 0: { /* one thread, staging only */
			uint32_t s = atw_thread(w, 100, 0);
			add_calls(w, s, &ts, 20);
			break;
		}
		case 1: { /* three threads, several data blocks */
			uint32_t a = atw_thread(w, 1, 0), b = atw_thread(w, 2, 0),
				 c = atw_thread(w, 3, 0);
			uint64_t ta = 0, tb = 0, tc = 0;
			add_calls(w, a, &ta, 60);
			add_calls(w, b, &tb, 40);
			add_calls(w, c, &tc, 10);
			break;
		}
		case 2: { /* crash leftover, gap, retired */
			uint32_t s = atw_thread(w, 7, 0);
			add_calls(w, s, &ts, 5);
			atw_flush(w, s);
			add_calls(w, s, &ts, 5);
			atw_skip_seq(w, s);
			add_calls(w, s, &ts, 5);
			atw_retire(w, s);
			add_calls(w, s, &ts, 5);
			atw_flush_crash(w, s);
			break;
		}
		case 3: { /* meta records, unknown meta, lost */
			uint32_t s = atw_thread(w, 9, 0);
			uint64_t n = 3;
			atw_meta(w, s, 1, ATR_T_LOST, 0, &n, 8);
			atw_meta(w, s, 2, 25, 1, "future", 6);
			atw_meta(w, s, 3, ATR_T_CONTROL, ATR_CTL_PAUSE, NULL, 0);
			atw_meta(w, s, 4, ATR_T_THREAD_EXIT, 9, NULL, 0);
			ts = 5;
			add_calls(w, s, &ts, 3);
			atw_hdr_u64(w, ATR_H_LOST, 2);
			break;
		}
		case 4: { /* TSC clock, calibration fields */
			atw_hdr_u64(w, ATR_H_FEATURES, ATR_FEAT_CLOCK_TSC | ATR_FEAT_TIMING);
			atw_hdr_u64(w, ATR_H_TICKS_PER_SEC, 2000000000ULL);
			atw_hdr_u64(w, ATR_H_END_MONO, 2000000000ULL);
			atw_hdr_u64(w, ATR_H_END_TICKS, 2500000000ULL);
			uint32_t s = atw_thread(w, 5, 0);
			add_calls(w, s, &ts, 8);
			uint32_t t = atw_thread(w, 6, 0);
			uint64_t t2 = 0;
			add_calls(w, t, &t2, 8);
			break;
		}
		default: { /* empty process */
			break;
		}
		}
		if (atw_build(w, &sd[k].buf, &sd[k].len, k != 1) < 0)
			abort();
		atw_destroy(w);
	}
}

static void run(const uint8_t *p, size_t n)
{
	/* exact-size copy: ASan catches any read past the end */
	uint8_t *c = malloc(n ? n : 1);
	if (!c)
		abort();
	memcpy(c, p, n);
	LLVMFuzzerTestOneInput(c, n);
	free(c);
}

static uint64_t edge(void)
{
	static const uint64_t v[] = {0,
				     1,
				     0xff,
				     0xffff,
				     0xffffffff,
				     0x100000000ULL,
				     UINT64_MAX,
				     ATR_BLOCK_MAGIC,
				     4096,
				     4095,
				     0x7fffffffffffffffULL};
	return rnd() % 2 ? v[rnd() % (sizeof(v) / sizeof(v[0]))] : rnd();
}

static void mutate(uint8_t *b, size_t *len)
{
	int nmut = 1 + (int)(rnd() % 4);
	for (int m = 0; m < nmut && *len; m++) {
		size_t n = *len;
		size_t off;
		switch (rnd() % 6) {
		case 0: /* bit flip anywhere */
			off = rnd() % n;
			b[off] ^= (uint8_t)(1u << (rnd() % 8));
			break;
		case 1: /* bit flip in the header's fields */
			off = rnd() % (n < 128 ? n : 128);
			b[off] ^= (uint8_t)(1u << (rnd() % 8));
			break;
		case 2: /* truncate */
			*len = rnd() % n;
			break;
		case 3: { /* overwrite an aligned word */
			off = (rnd() % n) & ~(size_t)7;
			uint64_t v = edge();
			size_t k = n - off < 8 ? n - off : 8;
			memcpy(b + off, &v, k);
			break;
		}
		case 4: { /* rewrite a block header field */
			if (n <= ATR_HEADER_SIZE)
				break;
			size_t nb = (n - ATR_HEADER_SIZE) / 4096 + 1;
			off = ATR_HEADER_SIZE + (rnd() % nb) * 4096 + (rnd() % 9) * 4;
			if (off + 4 <= n) {
				uint32_t v = (uint32_t)edge();
				if (rnd() % 2)
					v = (uint32_t)(rnd() % 5);
				memcpy(b + off, &v, 4);
			}
			break;
		}
		default: { /* word 0 of a record: type/flags bits */
			off = ((rnd() % n) & ~(size_t)7);
			b[off] = (uint8_t)rnd();
			break;
		}
		}
	}
}

static int replay_path(const char *path)
{
	struct stat st;
	if (stat(path, &st) < 0) {
		perror(path);
		return 1;
	}
	if (S_ISDIR(st.st_mode)) {
		DIR *d = opendir(path);
		if (!d) {
			perror(path);
			return 1;
		}
		struct dirent *de;
		int rc = 0;
		while ((de = readdir(d)) != NULL) {
			if (de->d_name[0] == '.')
				continue;
			char p[4096];
			snprintf(p, sizeof(p), "%s/%s", path, de->d_name);
			rc |= replay_path(p);
		}
		closedir(d);
		return rc;
	}
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return 1;
	}
	size_t cap = (size_t)st.st_size + 1, n;
	uint8_t *b = malloc(cap);
	if (!b)
		abort();
	n = fread(b, 1, cap, f);
	fclose(f);
	run(b, n);
	free(b);
	return 0;
}

int main(int argc, char **argv)
{
	struct seed sd[NSEEDS];
	long iters = 20000;
	int rc = 0, files = 0;
	build_seeds(sd);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--write-seeds") && i + 1 < argc) {
			for (int k = 0; k < NSEEDS; k++) {
				char p[4096];
				snprintf(p, sizeof(p), "%s/seed%d", argv[i + 1], k);
				FILE *f = fopen(p, "wb");
				if (!f || fwrite(sd[k].buf, 1, sd[k].len, f) != sd[k].len) {
					perror(p);
					return 1;
				}
				fclose(f);
			}
			return 0;
		}
		if (!strcmp(argv[i], "--iterations") && i + 1 < argc) {
			iters = strtol(argv[++i], NULL, 10);
			continue;
		}
		rc |= replay_path(argv[i]);
		files++;
	}
	for (int k = 0; k < NSEEDS; k++)
		run(sd[k].buf, sd[k].len);
	size_t maxlen = 0;
	for (int k = 0; k < NSEEDS; k++)
		if (sd[k].len > maxlen)
			maxlen = sd[k].len;
	uint8_t *work = malloc(maxlen);
	if (!work)
		abort();
	for (long i = 0; i < iters; i++) {
		const struct seed *s = &sd[i % NSEEDS];
		size_t len = s->len;
		memcpy(work, s->buf, len);
		mutate(work, &len);
		run(work, len);
	}
	free(work);
	for (int k = 0; k < NSEEDS; k++)
		free(sd[k].buf);
	printf("fuzz_reader_replay: %d path(s), %d seeds, %ld mutations: no crash\n", files, NSEEDS,
	       iters);
	return rc;
}
