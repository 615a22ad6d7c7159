/* fuzz_workload.c - fuzz target for the workload reader and the converter.
 *
 * Input starting with "ALCTRACE": a trace; it goes through rp_convert (via
 * memfds) and the workload it makes must pass awl_verify (property check:
 * whatever the trace, the converter writes a consistent workload).
 * Anything else: a workload; awl_open_buffer + awl_verify + every stream
 * decoded.  Corrupt input must give an error, never a crash.
 *
 * Built two ways (tests/fuzz/workload.cmake):
 *   fuzz_workload_replay  plain C with FUZZ_WORKLOAD_MAIN: seeds built
 *                         in memory + deterministic mutations, run by ctest
 *   fuzz_workload         libFuzzer (-DALLOCTRACE_FUZZ=ON, clang)
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "atr_format.h"
#include "awl_workload.h"
#include "fuzz_convert.h"
#include "replay/rp_convert.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink;

static void workload(const uint8_t *data, size_t size)
{
	awl_file *f;
	char eb[512];
	if (awl_open_buffer(data, size, "fuzz", &f, eb, sizeof(eb)) < 0) {
		sink += strlen(eb);
		return;
	}
	if (awl_verify(f, eb, sizeof(eb)) < 0)
		sink += strlen(eb);
	const struct awl_info *in = awl_get_info(f);
	for (uint32_t t = 0; t < in->nthreads && t < 64; t++) {
		struct awl_stream s;
		struct awl_op op;
		awl_stream_init(f, t, &s);
		while (awl_stream_next(&s, &op) > 0)
			sink += op.code + op.len;
		awl_stream_free(&s);
	}
	awl_close(f);
}

static void trace(const uint8_t *data, size_t size)
{
	fuzz_convert_verify(data, size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size >= 8 && !memcmp(data, ATR_MAGIC, 8))
		trace(data, size);
	else
		workload(data, size);
	return 0;
}

#ifdef FUZZ_WORKLOAD_MAIN
#include "atr_testwriter.h"

static uint64_t rs = 0x2545f4914f6cdd1dULL;
static uint64_t rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}

/* An extended call record (docs/TRACE_FORMAT.md, "Extended calls"). */
static void ext(struct atw *w, uint32_t s, uint64_t *ts, uint64_t xt, const uint64_t *args,
		unsigned n)
{
	uint64_t words[10] = {(*ts)++ << ATR_TS_SHIFT | ATR_T_EXT, xt};
	memcpy(words + 2, args, n * sizeof(*args));
	if (atw_raw(w, s, words, n + 2) < 0)
		abort();
}

/* The program's other calls: its mappings (a MAP_FIXED commit, a file
 * mapping, a move, advice, an unmap by another thread) and controls. */
static void add_xcalls(struct atw *w, uint32_t a, uint32_t c, uint64_t *ts, uint64_t live)
{
	const uint64_t base = 0x7f0000000000ULL, moved = 0x7f0000100000ULL;
	const uint64_t rw_anon = 3 | (uint64_t)0x22 << 32, fixed = 3 | (uint64_t)0x32 << 32;
	ext(w, a, ts, ATR_T_MMAP, (const uint64_t[]){base, 65536, 0, rw_anon, 0xffffffffu, 0}, 6);
	ext(w, a, ts, ATR_T_MMAP,
	    (const uint64_t[]){base + 8192, 8192, base + 8192, fixed, 0xffffffffu, 0}, 6);
	ext(w, a, ts, ATR_T_MMAP,
	    (const uint64_t[]){0x7f0000400000ULL, 4096, 0, 1 | (uint64_t)2 << 32, 3, 0}, 6);
	ext(w, a, ts, ATR_T_MUNMAP, (const uint64_t[]){base + 61440, 4096, 0}, 3);
	ext(w, a, ts, ATR_T_MREMAP, (const uint64_t[]){moved, 131072, base, 61440, 1, 0}, 6);
	ext(w, a, ts, ATR_T_MADVISE, (const uint64_t[]){moved, 8192, 4, 0}, 4);
	ext(w, a, ts, ATR_T_MALLOPT, (const uint64_t[]){(uint64_t)-3, 65536, 1}, 3);
	ext(w, a, ts, ATR_T_MALLOC_TRIM, (const uint64_t[]){0, 1}, 2);
	ext(w, c, ts, ATR_T_MALLOC_USABLE_SIZE, (const uint64_t[]){live, 24}, 2);
	ext(w, c, ts, ATR_T_MUNMAP, (const uint64_t[]){moved, 131072, 0}, 3);
	ext(w, c, ts, ATR_T_MUNMAP, (const uint64_t[]){0x7f0000400000ULL, 4096, 0}, 3);
}

static uint8_t *make_trace(int k, size_t *len)
{
	struct atw *w = atw_new(4096);
	if (k)
		atw_hdr_u64(w, ATR_H_FEATURES, ATR_FEAT_CLOCK_MONO_NS | ATR_FEAT_XCALLS);
	atw_hdr_u32(w, ATR_H_NCPU, 1); /* 3 threads busy: gaps cut by CPU records */
	if (k % 2 == 0) {	       /* RESIDENT records: TOUCH ops in the workload */
		atw_hdr_u64(w, ATR_H_RESIDENT_MIN, 16384);
		atw_hdr_u32(w, ATR_H_PAGE_SIZE, 4096);
	}
	uint32_t a = atw_thread(w, 1, 0), b = atw_thread(w, 2, 0), c = atw_thread(w, 3, 0);
	uint64_t ts = 1;
	if (k) {
		atw_malloc(w, a, ts++, 0x880000, 24, 0);
		add_xcalls(w, a, c, &ts, 0x880000);
	}
	for (int i = 0; i < 60 + 40 * k; i++) {
		uint64_t p = 0x10000 + 16 * (uint64_t)(i % 23);
		atw_malloc(w, a, ts++, p, (uint64_t)i * 13 % 500, 0);
		if (i % 3 == 0)
			atw_realloc(w, b, ts, p, p + 0x8000, 64, 3), ts += 4,
			    atw_free(w, c, ts++, p + 0x8000);
		else if (i % 5 == 0)
			atw_free(w, a, ts++, p);
		else
			atw_free(w, b, ts++, i % 7 ? p : 0x99);
		if (i % 11 == 0) {
			uint64_t f[3] = {p + 0x100000, atw_size(48, 16), 5};
			atw_call(w, c, ts++, ATR_T_CALLOC, 0, f, NULL);
		}
		if (i % 17 == 0)
			atw_marker(w, b, ts++, "m");
		if (i % 8 == 0) { /* a large block, released by free or a realloc */
			uint64_t q = 0x4000000 + 0x100000 * (uint64_t)(i % 5);
			uint64_t pay[2] = {q, 40};
			atw_malloc(w, a, ts++, q, 150000, 16);
			atw_meta(w, c, ts, ATR_T_RESIDENT, (uint32_t)(i % 41), pay, 16);
			if (i % 16)
				atw_free(w, c, ts++, q);
			else
				atw_realloc(w, c, ts, q, q + 0x80000, 70000, 2), ts += 3,
				    atw_free(w, a, ts++, q + 0x80000);
		}
		if (i % 9 == 0) {
			ts += 3000 + 1000 * (uint64_t)k; /* think time */
			/* CPU records: the gap's time off the CPU (think_cpu) */
			uint64_t cpu[3] = {(uint64_t)i * 700, 1, (uint64_t)i};
			atw_meta(w, a, ts, ATR_T_CPU, 0, cpu, 24);
		}
	}
	/* b exits; d starts after it (SPAWN, lifetime waits) and exits */
	atw_meta(w, b, ts++, ATR_T_THREAD_EXIT, 2, NULL, 0);
	uint32_t d = atw_thread(w, 4, ts++);
	for (int i = 0; i < 10 + k; i++) {
		atw_malloc(w, d, ts, 0x900000 + 32 * (uint64_t)i, 24, 0);
		ts += 2500;
		if (i % 2)
			atw_free(w, a, ts++, 0x900000 + 32 * (uint64_t)i);
	}
	atw_meta(w, d, ts++, ATR_T_THREAD_EXIT, 4, NULL, 0);
	uint8_t *buf;
	if (atw_build(w, &buf, len, 1) < 0)
		abort();
	atw_destroy(w);
	return buf;
}

static uint8_t *to_workload(const uint8_t *t, size_t tl, size_t *wl)
{
	int in = memfd_create("seed_trace", 0), out = memfd_create("seed_wl", 0);
	if (write(in, t, tl) != (ssize_t)tl)
		abort();
	char ip[64], op[64], eb[512];
	snprintf(ip, sizeof(ip), "/proc/self/fd/%d", in);
	snprintf(op, sizeof(op), "/proc/self/fd/%d", out);
	struct rp_convert_opts o = {.quiet = 1};
	struct rp_convert_stats st;
	if (rp_convert(ip, op, &o, &st, eb, sizeof(eb)) < 0) {
		fprintf(stderr, "seed: %s\n", eb);
		abort();
	}
	off_t n = lseek(out, 0, SEEK_END);
	uint8_t *b = malloc((size_t)n);
	if (!b || pread(out, b, (size_t)n, 0) != n)
		abort();
	*wl = (size_t)n;
	close(in);
	close(out);
	return b;
}

static void mutate(uint8_t *b, size_t *len)
{
	int nm = 1 + (int)(rnd() % 4);
	for (int m = 0; m < nm && *len; m++) {
		size_t n = *len, off = rnd() % n;
		switch (rnd() % 5) {
		case 0:
			b[off] ^= (uint8_t)(1u << (rnd() % 8));
			break;
		case 1:
			*len = rnd() % n;
			break;
		case 2:
			b[off] = (uint8_t)rnd();
			break;
		case 3: /* header fields, or the thread table at the end */
			if (rnd() % 2)
				off = rnd() % (n < AWL_H_END ? n : AWL_H_END);
			else
				off = n - 1 - rnd() % (n < 200 ? n : 200);
			b[off] ^= (uint8_t)(1u << (rnd() % 8));
			break;
		default: { /* a word of edge values */
			static const uint64_t v[] = {0,		 1,	     0x7f,	     0x80,
						     0xffffffff, UINT64_MAX, AWL_CHUNK_MAGIC};
			uint64_t x = v[rnd() % 7];
			size_t k = n - off < 8 ? n - off : 8;
			memcpy(b + off, &x, k);
			break;
		}
		}
	}
}

static void run(const uint8_t *p, size_t n)
{
	uint8_t *c = malloc(n ? n : 1);
	if (!c)
		abort();
	memcpy(c, p, n);
	LLVMFuzzerTestOneInput(c, n);
	free(c);
}

/* A committed workload (an old version: tests/fixtures). */
static uint8_t *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "%s: cannot open\n", path);
		abort();
	}
	uint8_t *b = malloc(1 << 20);
	*len = b ? fread(b, 1, 1 << 20, f) : 0;
	fclose(f);
	if (!b || !*len)
		abort();
	return b;
}

int main(int argc, char **argv)
{
	long iters = argc > 1 ? strtol(argv[1], NULL, 10) : 6000;
	enum { NS = 4 };
	uint8_t *tr[NS], *wl[NS];
	size_t tl[NS], wll[NS], maxl = 0;
	for (int k = 0; k < NS; k++) {
		tr[k] = make_trace(k, &tl[k]);
		if (k == NS - 1 && argc > 2) /* the version-1 fixture */
			wl[k] = read_file(argv[2], &wll[k]);
		else
			wl[k] = to_workload(tr[k], tl[k], &wll[k]);
		{ /* the seeds hold every op: SPAWN, THINK, exits */
			awl_file *f;
			char eb[256];
			if (awl_open_buffer(wl[k], wll[k], "seed", &f, eb, sizeof(eb)) < 0) {
				fprintf(stderr, "seed %d: %s\n", k, eb);
				abort();
			}
			const struct awl_info *in = awl_get_info(f);
			if (in->version == AWL_VERSION &&
			    (!in->think_ns || in->roots >= in->nthreads ||
			     !(in->features & AWL_FEAT_TOUCH) != (k % 2 != 0)))
				abort();
			/* and the other calls' ops, each kind */
			for (unsigned x = 0;
			     k && k < NS - 1 && x < AWL_OP_XLAST - AWL_OP_XFIRST + 1; x++)
				if (!in->xops[x]) {
					fprintf(stderr, "seed %d: no %s op\n", k,
						awl_op_name(AWL_OP_XFIRST + x));
					abort();
				}
			awl_close(f);
		}
		maxl = tl[k] > maxl ? tl[k] : maxl;
		maxl = wll[k] > maxl ? wll[k] : maxl;
		run(wl[k], wll[k]);
		run(tr[k], tl[k]);
	}
	uint8_t *work = malloc(maxl);
	if (!work)
		abort();
	for (long i = 0; i < iters; i++) {
		int k = (int)(i % NS);
		int use_trace = i % 10 == 0; /* traces are slower: fewer of them */
		size_t len = use_trace ? tl[k] : wll[k];
		memcpy(work, use_trace ? tr[k] : wl[k], len);
		mutate(work, &len);
		if (use_trace && len < 8)
			continue;
		run(work, len);
	}
	free(work);
	for (int k = 0; k < NS; k++) {
		free(tr[k]);
		free(wl[k]);
	}
	printf("fuzz_workload_replay: %d seeds, %ld mutations: no crash\n", NS, iters);
	return 0;
}
#endif
