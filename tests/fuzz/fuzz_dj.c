/* fuzz_dj.c - fuzz target for the dj/malloc readers (docs/DJ_COMPAT.md).
 *
 * Every input goes to both readers:
 *  - dj_trace (if it starts with a magic record): read to the end, then
 *    converted (rp_convert); the workload the converter writes must pass
 *    awl_verify;
 *  - dj_wl_translate_buffer: when it succeeds, the alloctrace workload it
 *    wrote must pass awl_open and awl_verify (property: whatever the dj
 *    workload, the translation is a consistent, race-free workload).
 * Corrupt input must give an error, never a crash.
 *
 * Built two ways (tests/fuzz/dj.cmake):
 *   fuzz_dj_replay  plain C with FUZZ_DJ_MAIN: seeds built in memory and
 *                   deterministic mutations (truncations, flipped bytes,
 *                   runs of 0xff that make bad varints, huge offsets and
 *                   indices), run by ctest
 *   fuzz_dj         libFuzzer (-DALLOCTRACE_FUZZ=ON, clang)
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "awl_workload.h"
#include "dj_format.h"
#include "dj_trace.h"
#include "dj_workload.h"
#include "fuzz_convert.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink;
static unsigned convert_every = 1, ntraces;

static void trace(const uint8_t *data, size_t size)
{
	dj_trace *t;
	char eb[512];
	if (dj_trace_open_buffer(data, size, "fuzz", &t, eb, sizeof(eb)) < 0) {
		sink += strlen(eb);
		return;
	}
	const struct atr_event *ev;
	int r;
	while ((r = dj_trace_next(t, &ev)) > 0)
		sink += ev->type + ev->ret;
	if (r < 0)
		sink += strlen(dj_trace_error(t));
	dj_trace_close(t);
	/* through the converter: its workload must verify (in the ctest
	   driver for every 8th input: the converter's buffers make it the
	   slow part under ASan) */
	if (convert_every > 1 && ++ntraces % convert_every)
		return;
	fuzz_convert_verify(data, size);
}

static void workload(const uint8_t *data, size_t size)
{
	int out = memfd_create("fuzz_djwl", 0);
	if (out < 0)
		abort();
	char op[64], eb[512];
	snprintf(op, sizeof(op), "/proc/self/fd/%d", out);
	struct dj_wl_stats st;
	if (dj_wl_translate_buffer(data, size, "fuzz", op, &st, eb, sizeof(eb)) == 0) {
		awl_file *f;
		if (awl_open(op, &f, eb, sizeof(eb)) < 0 || awl_verify(f, eb, sizeof(eb)) < 0) {
			fprintf(stderr, "dj translation wrote a bad workload: %s\n", eb);
			abort();
		}
		awl_close(f);
	} else {
		sink += strlen(eb);
	}
	close(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (dj_trace_detect(data, size))
		trace(data, size);
	workload(data, size);
	return 0;
}

#ifdef FUZZ_DJ_MAIN
/* ---- seeds */
static size_t put_rec(uint8_t *p, int32_t tid, uint32_t type, uint64_t p1, uint64_t p2,
		      uint64_t size, uint64_t size2)
{
	memset(p, 0, DJ_REC_SIZE);
	memcpy(p + DJ_R_THREAD, &tid, 4);
	memcpy(p + DJ_R_TYPE, &type, 4);
	memcpy(p + DJ_R_PTR1, &p1, 8);
	memcpy(p + DJ_R_PTR2, &p2, 8);
	memcpy(p + DJ_R_SIZE, &size, 8);
	memcpy(p + DJ_R_SIZE2, &size2, 8);
	return DJ_REC_SIZE;
}

static size_t seed_trace(uint8_t *b)
{
	size_t n = 0;
	n += put_rec(b + n, 100, DJ_T_MAGIC, DJ_MAGIC_PTR1, 0, 8, 0);
	n += put_rec(b + n, 100, DJ_T_MALLOC, 0, 0x1000, 10, 0);
	n += put_rec(b + n, 101, DJ_T_MALLOC, 0, 0x1000, 20, 0); /* inversion */
	n += put_rec(b + n, 100, DJ_T_FREE, 0x1000, 0, 0, 0);
	n += put_rec(b + n, 101, DJ_T_REALLOC, 0x1000, 0x2000, 30, 0);
	n += put_rec(b + n, 100, DJ_T_MEMALIGN, 0, 0x3000, 40, 64);
	n += put_rec(b + n, 101, DJ_T_POSIX_MEMALIGN, 0, 0x4000, 50, 128);
	n += put_rec(b + n, 100, DJ_T_FREE, 0x2000, 0, 0, 0);
	n += put_rec(b + n, 102, DJ_T_REALLOC | DJ_PATH_M_F_REALLOC, 0, 0, 60, 0);
	n += put_rec(b + n, 102, DJ_T_MALLOC, 0, 0x5000, 60, 0);
	n += put_rec(b + n, 101, DJ_T_CALLOC, 0, 0x6000, 70, 0);
	n += put_rec(b + n, 102, DJ_T_VALLOC, 0, 0x7000, 80, 0);
	n += put_rec(b + n, 102, DJ_T_PVALLOC, 0, 0x8000, 90, 0);
	n += put_rec(b + n, 0, DJ_T_UNUSED, 0, 0, 0, 0);
	return n;
}

static size_t seed_workload(uint8_t *b)
{
	/* 2 threads; thread 1 waits for thread 0's malloc, frees it, reallocs */
	static const uint8_t t0[] = {
	    DJ_C_MALLOC,   1, 0x81, 0x00, DJ_C_SYNC_W, 1,	  DJ_C_CALLOC, 2,	 5,
	    DJ_C_MEMALIGN, 3, 64,   9,	  DJ_C_NOP,    DJ_C_FREE, 2,	       DJ_C_DONE};
	static const uint8_t t1[] = {DJ_C_SYNC_R,
				     1,
				     DJ_C_FREE,
				     1,
				     DJ_C_REALLOC,
				     4,
				     0,
				     77,
				     DJ_C_REALLOC,
				     5,
				     4,
				     0x82,
				     0x01,
				     DJ_C_VALLOC,
				     6,
				     3,
				     DJ_C_PVALLOC,
				     7,
				     3,
				     DJ_C_POSIX_MEMALIGN,
				     8,
				     16,
				     3,
				     DJ_C_FREE,
				     5,
				     DJ_C_DONE};
	size_t hdr = 0;
	uint8_t h[32];
	h[hdr++] = DJ_C_ALLOC_PTRS;
	h[hdr++] = 9;
	h[hdr++] = DJ_C_ALLOC_SYNCS;
	h[hdr++] = 2;
	h[hdr++] = DJ_C_NTHREADS;
	h[hdr++] = 2;
	size_t len = hdr + 2 + 2 + 1;
	h[hdr++] = DJ_C_START_THREAD;
	h[hdr++] = (uint8_t)len;
	h[hdr++] = DJ_C_START_THREAD;
	h[hdr++] = (uint8_t)(len + sizeof(t0));
	h[hdr++] = DJ_C_DONE;
	memcpy(b, h, hdr);
	memcpy(b + hdr, t0, sizeof(t0));
	memcpy(b + hdr + sizeof(t0), t1, sizeof(t1));
	return hdr + sizeof(t0) + sizeof(t1);
}

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void mutate_and_run(const uint8_t *seed, size_t n, uint8_t *buf)
{
	size_t m = n;
	memcpy(buf, seed, n);
	switch (rnd() % 5) {
	case 0: /* truncate */
		m = (size_t)(rnd() % (n + 1));
		break;
	case 1: /* flip a few bytes */
		for (int k = 1 + (int)(rnd() % 4); k > 0; k--)
			buf[rnd() % n] ^= (uint8_t)(1u << (rnd() % 8));
		break;
	case 2: { /* a run of 0xff: bad varints */
		size_t at = (size_t)(rnd() % n), len = 1 + (size_t)(rnd() % 16);
		for (size_t i = at; i < at + len && i < n; i++)
			buf[i] = 0xff;
		break;
	}
	case 3: /* a random byte anywhere */
		buf[rnd() % n] = (uint8_t)rnd();
		break;
	default: /* a big value where a varint or a field starts */
		buf[rnd() % n] = 0x8f;
		buf[rnd() % n] = 0x7f;
		break;
	}
	LLVMFuzzerTestOneInput(buf, m);
}

int main(int argc, char **argv)
{
	long iters = argc > 1 ? atol(argv[1]) : 20000;
	convert_every = 8;
	uint8_t tr[64 * 16], wl[128], buf[64 * 16];
	size_t ntr = seed_trace(tr), nwl = seed_workload(wl);
	/* the seeds themselves must read cleanly */
	struct dj_wl_stats st;
	char eb[512];
	int out = memfd_create("seed", 0);
	char op[64];
	snprintf(op, sizeof(op), "/proc/self/fd/%d", out);
	if (dj_wl_translate_buffer(wl, nwl, "seed", op, &st, eb, sizeof(eb)) < 0 ||
	    st.calls[0] != 11 || st.waits < 1) {
		fprintf(stderr, "seed workload: %s (%llu calls)\n", eb,
			(unsigned long long)st.calls[0]);
		return 1;
	}
	close(out);
	dj_trace *t;
	if (dj_trace_open_buffer(tr, ntr, "seed", &t, eb, sizeof(eb)) < 0) {
		fprintf(stderr, "seed trace: %s\n", eb);
		return 1;
	}
	const struct atr_event *ev;
	unsigned calls = 0;
	while (dj_trace_next(t, &ev) > 0)
		calls += ev->type >= 1 && ev->type <= ATR_T_CALL_LAST;
	if (calls != 11 || dj_trace_get_stats(t)->inversions_fixed != 1) {
		fprintf(stderr, "seed trace: %u calls, %llu inversions fixed\n", calls,
			(unsigned long long)dj_trace_get_stats(t)->inversions_fixed);
		return 1;
	}
	dj_trace_close(t);
	/* truncations of both seeds (the trace's around every record
	   boundary, every 5th byte elsewhere), then random mutations */
	for (size_t m = 0; m <= ntr; m += m % DJ_REC_SIZE < 2 || m % DJ_REC_SIZE > 61 ? 1 : 5)
		LLVMFuzzerTestOneInput(tr, m);
	for (size_t m = 0; m <= nwl; m++)
		LLVMFuzzerTestOneInput(wl, m);
	for (long i = 0; i < iters; i++) {
		if (i & 1)
			mutate_and_run(tr, ntr, buf);
		else
			mutate_and_run(wl, nwl, buf);
	}
	printf("fuzz_dj: %ld mutations, no crash\n", iters);
	return 0;
}
#endif
