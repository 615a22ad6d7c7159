/* field_entropy.c - what is left to squeeze out of a v2 trace: the
 * empirical (order-0, plug-in) entropy of each field the compact encoding
 * writes (docs/TRACE_FORMAT.md, "Compact encoding"), per call, with the
 * same per-thread state as the encoder (previous timestamp, address bases,
 * the 8-entry move-to-front cache of addresses), each field conditioned on
 * the call type.  A per-thread coder that models each field on its own
 * cannot go below the sum; the file's bytes per call are beside it.
 *
 * build: cc -O2 -Isrc/format -o field_entropy bench/field_entropy.c \
 *          BUILD/src/libatr_format.a BUILD/src/libatr_util.a -lzstd -lm
 * usage: field_entropy TRACE.atr
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atr_format.h"
#include "atr_reader.h"

struct vals {
	uint64_t *v;
	size_t n, cap;
};

static void push(struct vals *a, uint64_t x)
{
	if (a->n == a->cap) {
		a->cap = a->cap ? 2 * a->cap : 1 << 16;
		a->v = realloc(a->v, a->cap * sizeof *a->v);
		if (!a->v) {
			perror("realloc");
			exit(1);
		}
	}
	a->v[a->n++] = x;
}

static int cmp64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Total bits of an ideal order-0 coder for the values (plug-in entropy
 * times count), and of one that knows only their bit lengths
 * (H(length) + the bits below the leading one, sent as they are). */
static size_t distinct;

static void bits(struct vals *a, double *plug, double *bucket)
{
	*plug = *bucket = 0;
	distinct = 0;
	if (!a->n)
		return;
	qsort(a->v, a->n, sizeof *a->v, cmp64);
	double n = (double)a->n, lc[65] = {0}, below = 0;
	for (size_t i = 0, j; i < a->n; i = j) {
		for (j = i; j < a->n && a->v[j] == a->v[i]; j++)
			;
		double c = (double)(j - i);
		distinct++;
		*plug -= c * log2(c / n);
	}
	for (size_t i = 0; i < a->n; i++) {
		int l = a->v[i] ? 64 - __builtin_clzll(a->v[i]) : 0;
		lc[l]++;
		below += l > 1 ? l - 1 : 0;
	}
	for (int l = 0; l <= 64; l++)
		if (lc[l])
			*bucket -= lc[l] * log2(lc[l] / n);
	*bucket += below;
}

static uint64_t zz(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

#define MAXT 4096
struct tstate {
	uint64_t prev_ts, abase, fbase, cache[8], achunk;
};

/* glibc's chunk size for a request (docs/TRACE_FORMAT.md, slack) */
static uint64_t chunk_of(uint64_t size)
{
	uint64_t c = (size + 8 + 15) & ~15ULL;
	return c < 32 ? 32 : c;
}

enum {
	F_TAG,
	F_DTS_M,
	F_DTS_F,
	F_ADDR_M,
	F_ADDR_F,
	F_SIZE,
	F_SLACK,
	F_N,
	F_ADDR_NEXT = F_N,
	F_THR,
	F_ALL
};
static const char *const fname[F_ALL] = {
    "tag (call type, cache hit) | thread", "timestamp delta, allocations", "timestamp delta, frees",
    "address, allocations (cache misses)", "address, frees (cache misses)", "size",
    "slack and chunk flags",
    /* not in the sum: what a predictor the format does not have would leave */
    "  alloc. address - (previous + its chunk)", "thread"};

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: field_entropy TRACE.atr\n");
		return 2;
	}
	char err[512];
	atr_file *f;
	if (atr_open(argv[1], &f, err, sizeof err) < 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	static struct tstate st[MAXT];
	struct vals v[F_ALL] = {{0}};
	uint64_t next_hits = 0;
	uint64_t calls = 0, meta = 0;
	atr_iter *it;
	if (atr_iter_new(f, &it) < 0)
		return 1;
	struct atr_event ev;
	int r;
	while ((r = atr_iter_next(it, &ev)) > 0) {
		if (ev.thread >= MAXT)
			continue;
		struct tstate *t = &st[ev.thread];
		int is_call = ev.type >= 1 && ev.type <= ATR_T_CALL_LAST;
		if (!is_call) {
			if (ev.type < 16) /* synthetic events */
				continue;
			meta++;
			t->prev_ts = ev.ts;
			continue;
		}
		calls++;
		int fr = ev.type == ATR_T_FREE;
		uint64_t addr = fr ? ev.ptr : ev.ret & ~6ULL;
		unsigned hit = 0;
		for (unsigned k = 0; addr && k < 8; k++)
			if (t->cache[k] == addr) {
				hit = k + 1;
				break;
			}
		push(&v[F_TAG], (uint64_t)ev.thread << 16 | (uint64_t)ev.type << 8 | hit);
		push(&v[F_THR], ev.thread);
		push(&v[fr ? F_DTS_F : F_DTS_M], zz((int64_t)(ev.ts - t->prev_ts)));
		t->prev_ts = ev.ts;
		if (!hit)
			push(&v[fr ? F_ADDR_F : F_ADDR_M],
			     addr ? zz((int64_t)(addr - (fr ? t->fbase : t->abase))) + 1 : 0);
		if (!hit && !fr && addr) {
			uint64_t d = zz((int64_t)(addr - (t->abase + t->achunk)));
			push(&v[F_ADDR_NEXT], d);
			next_hits += d == 0;
		}
		if (!fr && addr)
			t->achunk = chunk_of(ev.size);
		if (!fr) {
			push(&v[F_SIZE], ev.size);
			uint64_t slack = ev.usable == UINT64_MAX ? 0xffff : ev.usable - ev.size;
			push(&v[F_SLACK], slack << 2 | ev.chunk_flags);
		}
		if (addr) {
			unsigned from = hit ? hit - 1 : 7;
			memmove(t->cache + 1, t->cache, from * sizeof *t->cache);
			t->cache[0] = addr;
			if (fr)
				t->fbase = addr;
			else
				t->abase = addr;
		}
	}
	atr_iter_free(it);
	if (r < 0) {
		fprintf(stderr, "%s\n", atr_last_error(f));
		return 1;
	}
	double tp = 0, tb = 0, thp, thb;
	bits(&v[F_THR], &thp, &thb); /* the tag is counted given the thread */
	free(v[F_THR].v);
	printf("%s: %llu calls, %llu meta records\n", argv[1], (unsigned long long)calls,
	       (unsigned long long)meta);
	printf("%-38s %10s %10s %12s %12s\n", "field", "values", "distinct", "bits/call",
	       "(by length)");
	for (int k = 0; k < F_N; k++) {
		double p, b;
		size_t n = v[k].n;
		bits(&v[k], &p, &b);
		if (k == F_TAG)
			b = p -= thp;
		printf("%-38s %10zu %10zu %12.2f %12.2f\n", fname[k], n, distinct,
		       p / (double)calls, b / (double)calls);
		tp += p;
		tb += b;
		free(v[k].v);
	}
	printf("%-38s %10s %10s %12.2f %12.2f  = %.2f / %.2f bytes per call\n", "sum", "", "",
	       tp / calls, tb / calls, tp / calls / 8, tb / calls / 8);
	double p, b;
	size_t n = v[F_ADDR_NEXT].n;
	bits(&v[F_ADDR_NEXT], &p, &b);
	printf("%-38s %10zu %10zu %12.2f %12.2f  (%.1f%% exactly predicted)\n", fname[F_ADDR_NEXT],
	       n, distinct, p / (double)calls, b / (double)calls,
	       n ? 100.0 * (double)next_hits / (double)n : 0);
	free(v[F_ADDR_NEXT].v);
	atr_close(f);
	return 0;
}
