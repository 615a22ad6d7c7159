/* test_v2.c - trace format v2: every v1 trace of the fuzz corpus rewritten
 * as v2 (compressed and not) reads back event for event the same, through
 * a buffer and through a file; truncated, corrupted and garbage frames give
 * a clear error, never a crash (run under ASan by scripts/test.sh).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <zstd.h>

#include "atr_format.h"
#include "atr_reader.h"
#include "atr_v2.h"
#include "atr_testwriter.h"
#include "atr_v2conv.h"
#include "atr_compact.h"

static uint8_t *slurp(const char *name, size_t *len)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/%s", ATR_CORPUS_DIR, name);
	FILE *fp = fopen(path, "rb");
	assert_non_null(fp);
	fseek(fp, 0, SEEK_END);
	long n = ftell(fp);
	fseek(fp, 0, SEEK_SET);
	uint8_t *b = malloc((size_t)n);
	assert_int_equal(fread(b, 1, (size_t)n, fp), (size_t)n);
	fclose(fp);
	*len = (size_t)n;
	return b;
}

/* Walk every event; returns the count, or the (negative) error. */
static long walk_all(atr_file *f, struct atr_event **evs, uint8_t **payloads, size_t *plen)
{
	atr_iter *it;
	if (atr_iter_new(f, &it))
		return -100;
	struct atr_event ev;
	long n = 0;
	int r;
	size_t cap = 0, pcap = 0;
	while ((r = atr_iter_next(it, &ev)) > 0) {
		if (evs) {
			if ((size_t)n == cap) {
				cap = cap ? 2 * cap : 1024;
				*evs = realloc(*evs, cap * sizeof(**evs));
			}
			if (*plen + ev.payload_len > pcap) {
				pcap = (*plen + ev.payload_len) * 2 + 4096;
				*payloads = realloc(*payloads, pcap);
			}
			if (ev.payload_len)
				memcpy(*payloads + *plen, ev.payload, ev.payload_len);
			*plen += ev.payload_len;
			ev.payload = NULL;
			(*evs)[n] = ev;
		}
		n++;
	}
	atr_iter_free(it);
	return r < 0 ? r : n;
}

static void same_events(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen,
			const char *bfile)
{
	char err[512];
	atr_file *fa, *fb;
	assert_int_equal(atr_open_buffer(a, alen, "a", &fa, err, sizeof err), 0);
	if (bfile)
		assert_int_equal(atr_open(bfile, &fb, err, sizeof err), 0);
	else
		assert_int_equal(atr_open_buffer(b, blen, "b", &fb, err, sizeof err), 0);
	assert_int_equal(atr_get_info(fb)->version, 2);
	struct atr_event *ea = NULL, *eb = NULL;
	uint8_t *pa = NULL, *pb = NULL;
	size_t la = 0, lb = 0;
	long na = walk_all(fa, &ea, &pa, &la), nb = walk_all(fb, &eb, &pb, &lb);
	assert_true(na > 0);
	assert_int_equal(na, nb);
	assert_int_equal(la, lb);
	for (long i = 0; i < na; i++) {
		const struct atr_event *x = &ea[i], *y = &eb[i];
		assert_int_equal(x->type, y->type);
		assert_int_equal(x->flags, y->flags);
		assert_int_equal(x->thread, y->thread);
		assert_int_equal(x->tid, y->tid);
		assert_int_equal(x->ts, y->ts);
		assert_int_equal(x->seq, y->seq);
		assert_int_equal(x->ptr, y->ptr);
		assert_int_equal(x->ret, y->ret);
		assert_int_equal(x->size, y->size);
		assert_int_equal(x->nmemb, y->nmemb);
		assert_int_equal(x->align, y->align);
		assert_int_equal(x->usable, y->usable);
		assert_int_equal(x->stack_id, y->stack_id);
		assert_int_equal(x->err, y->err);
		assert_int_equal(x->duration, y->duration);
		assert_int_equal(x->arg, y->arg);
		assert_int_equal(x->payload_len, y->payload_len);
		assert_int_equal(x->chunk_flags, y->chunk_flags);
		assert_int_equal(x->hint, y->hint);
		assert_int_equal(x->old_size, y->old_size);
		assert_int_equal(x->offset, y->offset);
		assert_int_equal(x->prot, y->prot);
		assert_int_equal(x->mflags, y->mflags);
		assert_int_equal(x->fd, y->fd);
		assert_int_equal(x->param, y->param);
		assert_int_equal(x->value, y->value);
		assert_int_equal(x->result, y->result);
	}
	if (la)
		assert_memory_equal(pa, pb, la);
	uint64_t ca, cb;
	assert_int_equal(atr_count_calls(fa, &ca), 0);
	assert_int_equal(atr_count_calls(fb, &cb), 0);
	assert_int_equal(ca, cb);
	assert_int_equal(atr_get_info(fa)->lost_records, atr_get_info(fb)->lost_records);
	assert_int_equal(atr_get_info(fa)->threads, atr_get_info(fb)->threads);
	/* stacks and modules come through too */
	assert_int_equal(atr_stacks_load(fa), 0);
	assert_int_equal(atr_stacks_load(fb), 0);
	assert_int_equal(atr_stack_count(fa), atr_stack_count(fb));
	assert_int_equal(atr_module_count(fa), atr_module_count(fb));
	for (size_t i = 0; i < atr_module_count(fa); i++) {
		const struct atr_module *x = atr_module_get(fa, i), *y = atr_module_get(fb, i);
		assert_string_equal(x->path, y->path);
		assert_int_equal(x->build_id_len, y->build_id_len);
		if (x->build_id_len)
			assert_memory_equal(x->build_id, y->build_id, x->build_id_len);
	}
	free(ea);
	free(eb);
	free(pa);
	free(pb);
	atr_close(fa);
	atr_close(fb);
}

/* seed2 ends inside a data block (a v1 file cut short): not convertible */
static const char *const corpus[] = {"real-mt-timing", "seed-stacks", "real-v1-calls", "seed1",
				     "seed4"};

static void test_round_trip(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof corpus / sizeof *corpus; i++) {
		size_t len;
		uint8_t *v1 = slurp(corpus[i], &len);
		for (int level = 0; level <= 3; level += 3) {
			uint8_t *v2;
			size_t l2;
			char err[256];
			if (atr_v1_to_v2(v1, len, level, &v2, &l2, err, sizeof err))
				fail_msg("%s: %s", corpus[i], err);
			same_events(v1, len, v2, l2, NULL);
			/* record's count: from frame headers and staging blocks */
			atr_file *f1, *f2;
			uint64_t c1, c2;
			assert_int_equal(atr_open_buffer(v1, len, "a", &f1, err, sizeof err), 0);
			assert_int_equal(atr_open_buffer(v2, l2, "b", &f2, err, sizeof err), 0);
			assert_int_equal(atr_count_calls(f1, &c1), 0);
			assert_int_equal(atr_count_calls_quick(f2, &c2), 0);
			assert_int_equal(c1, c2);
			atr_close(f1);
			atr_close(f2);
			/* the file path: pread, no mapping */
			char tmp[] = "/tmp/atr-test-v2.XXXXXX";
			int fd = mkstemp(tmp);
			assert_true(fd >= 0);
			assert_int_equal(write(fd, v2, l2), (ssize_t)l2);
			close(fd);
			same_events(v1, len, NULL, 0, tmp);
			unlink(tmp);
			free(v2);
		}
		free(v1);
	}
}

static uint8_t *slurp_path(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	assert_non_null(fp);
	fseek(fp, 0, SEEK_END);
	long n = ftell(fp);
	fseek(fp, 0, SEEK_SET);
	uint8_t *b = malloc((size_t)n + 1);
	assert_int_equal(fread(b, 1, (size_t)n, fp), (size_t)n);
	fclose(fp);
	*len = (size_t)n;
	return b;
}

/* Compaction (atr_compact.h): the staging blocks become FRAMEs (and at a
 * level > 0 every frame is recompressed), the file shrinks, and every
 * event, count, stack and module reads as in the v1 original.  A compacted file has nothing left to
 * gain; a version-1 file is left alone. */
static void test_compact(void **state)
{
	(void)state;
	int compacted = 0;
	for (size_t i = 0; i < sizeof corpus / sizeof *corpus; i++) {
		size_t len;
		uint8_t *v1 = slurp(corpus[i], &len);
		static const int clevels[] = {0, 3, 19};
		for (int k = 0; k < 6; k++) {
			int level = k & 1, clevel = clevels[k / 2];
			uint8_t *v2;
			size_t l2;
			char err[512] = "";
			if (atr_v1_to_v2(v1, len, level, &v2, &l2, err, sizeof err))
				fail_msg("%s: %s", corpus[i], err);
			char tmp[] = "/tmp/atr-test-compact.XXXXXX";
			int fd = mkstemp(tmp);
			assert_true(fd >= 0);
			assert_int_equal(write(fd, v2, l2), (ssize_t)l2);
			close(fd);
			uint64_t before = 0, after = 0;
			/* compressing in the caller's thread and on 3 */
			int r = atr_compact(tmp, clevel, k % 3 ? 3 : 1, &before, &after, err,
					    sizeof err);
			if (r < 0)
				fail_msg("%s: %s", corpus[i], err);
			if (r == 1) {
				compacted++;
				assert_int_equal(before, l2);
				assert_true(clevel ? after <= before : after < before);
			}
			same_events(v1, len, NULL, 0, tmp);
			/* nothing left to gain at that level */
			assert_int_equal(atr_compact(tmp, clevel, 0, NULL, NULL, err, sizeof err),
					 0);
			unlink(tmp);
			free(v2);
		}
		/* version 1: left alone */
		char tmp[] = "/tmp/atr-test-compact.XXXXXX";
		int fd = mkstemp(tmp);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, v1, len), (ssize_t)len);
		close(fd);
		char err[512];
		assert_int_equal(atr_compact(tmp, 0, 0, NULL, NULL, err, sizeof err), 0);
		unlink(tmp);
		free(v1);
	}
	assert_true(compacted > 0);
}

/* Three threads of many small blocks (4 KiB), one with a lost block in
 * the middle and every one with records left in its staging block. */
static uint8_t *many_blocks_v1(int n, size_t *len)
{
	struct atw *w = atw_new(4096);
	uint32_t t[3];
	for (int k = 0; k < 3; k++)
		t[k] = atw_thread(w, 500 + (uint32_t)k, 10 + (uint64_t)k);
	for (int i = 0; i < n; i++) {
		uint32_t s = t[i % 3];
		uint64_t ts = 100 + (uint64_t)i * 7, p = 0x100000ULL + (uint64_t)(i % 997) * 4096;
		assert_int_equal(
		    atw_malloc(w, s, ts, p, 16 + (uint64_t)(i * 37 % 4000), UINT64_MAX), 0);
		if (i % 2)
			assert_int_equal(atw_free(w, s, ts + 3, p), 0);
		if (i == n / 2)
			assert_int_equal(atw_skip_seq(w, t[1]), 0);
	}
	uint8_t *buf;
	assert_int_equal(atw_build(w, &buf, len, 1), 0);
	atw_destroy(w);
	return buf;
}

static char *write_tmp(const uint8_t *b, size_t len)
{
	char *tmp = strdup("/tmp/atr-test-merge.XXXXXX");
	int fd = mkstemp(tmp);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, b, len), (ssize_t)len);
	close(fd);
	return tmp;
}

/* The events of thread serial 2 in a time window, and the iterator's
 * frame counts. */
static long window(atr_file *f, struct atr_event *ev, long cap, struct atr_iter_stats *st)
{
	static const uint32_t two = 2;
	struct atr_sel sel = {.serials = &two, .nserials = 1, .from_ts = 20000, .to_ts = 40000};
	atr_iter *it;
	assert_int_equal(atr_iter_new_sel(f, &sel, &it), 0);
	long n = 0;
	int r;
	struct atr_event e;
	while ((r = atr_iter_next(it, &e)) > 0) {
		assert_true(n < cap);
		ev[n++] = e;
	}
	assert_int_equal(r, 0);
	atr_iter_get_stats(it, st);
	atr_iter_free(it);
	return n;
}

/* Recompression merges a thread's frames (fewer units), keeps the lost
 * block where it was, and seeking by thread and time gives the same
 * events while skipping other threads' frames. */
static void test_compact_merge(void **state)
{
	(void)state;
	size_t len, l2;
	uint8_t *v1 = many_blocks_v1(30000, &len), *v2;
	char err[512] = "";
	assert_int_equal(atr_v1_to_v2(v1, len, 1, &v2, &l2, err, sizeof err), 0);
	char *tmp = write_tmp(v2, l2), *tmp1 = write_tmp(v2, l2);
	uint64_t before, after;
	assert_int_equal(atr_compact(tmp, 3, 3, &before, &after, err, sizeof err), 1);
	assert_true(after < before);
	/* frames compressed by 3 threads are written in order: the bytes of
	 * the caller's thread alone */
	assert_int_equal(atr_compact(tmp1, 3, 1, NULL, NULL, err, sizeof err), 1);
	size_t ln, ln1;
	uint8_t *c3 = slurp_path(tmp, &ln), *c1 = slurp_path(tmp1, &ln1);
	assert_int_equal(ln, ln1);
	assert_memory_equal(c3, c1, ln);
	free(c3);
	free(c1);
	unlink(tmp1);
	free(tmp1);
	same_events(v1, len, NULL, 0, tmp);
	atr_file *a, *b;
	assert_int_equal(atr_open_buffer(v2, l2, "v2", &a, err, sizeof err), 0);
	assert_int_equal(atr_open(tmp, &b, err, sizeof err), 0);
	const struct atr_info *ia = atr_get_info(a), *ib = atr_get_info(b);
	assert_int_equal(ia->lost_blocks, 1);
	assert_int_equal(ib->lost_blocks, 1);
	assert_true(ib->blocks * 10 < ia->blocks); /* 4 KiB blocks -> 1 MiB frames */
	assert_true(ib->blocks >= 4);		   /* threads 1, 3; 2 on both sides of its gap */
	enum { CAP = 20000 };
	struct atr_event *ea = malloc(CAP * sizeof *ea), *eb = malloc(CAP * sizeof *eb);
	struct atr_iter_stats sa, sb;
	long na = window(a, ea, CAP, &sa), nb = window(b, eb, CAP, &sb);
	assert_true(na > 100);
	assert_int_equal(na, nb);
	for (long i = 0; i < na; i++) {
		assert_int_equal(ea[i].thread, 2);
		assert_int_equal(ea[i].ts, eb[i].ts);
		assert_int_equal(ea[i].type, eb[i].type);
		assert_int_equal(ea[i].ptr, eb[i].ptr);
		assert_int_equal(ea[i].ret, eb[i].ret);
		assert_int_equal(ea[i].size, eb[i].size);
	}
	assert_true(sb.blocks_skipped > 0); /* threads 1 and 3 never decompressed */
	free(ea);
	free(eb);
	atr_close(a);
	atr_close(b);
	/* the header says so; the same level again has nothing to gain */
	uint8_t h[ATR_HEADER_SIZE];
	FILE *fp = fopen(tmp, "rb");
	assert_int_equal(fread(h, 1, sizeof h, fp), sizeof h);
	fclose(fp);
	assert_int_equal(atr_get32(h + ATR_H_COMPACT_LEVEL), 3);
	assert_int_equal(atr_compact(tmp, 3, 0, NULL, NULL, err, sizeof err), 0);
	assert_int_equal(atr_compact(tmp, 30, 0, NULL, NULL, err, sizeof err), ATR_E_USAGE);
	/* merged frames recompressed again at another level */
	assert_int_equal(atr_compact(tmp, 12, 2, NULL, NULL, err, sizeof err), 1);
	same_events(v1, len, NULL, 0, tmp);
	unlink(tmp);
	free(tmp);
	free(v1);
	free(v2);
}

/* A frame whose payload is damaged: the file is not replaced (the
 * evidence stays, byte for byte).  A compactor killed (-9) half-way
 * leaves the original as it was; the next compaction goes through. */
static void test_compact_damaged_and_killed(void **state)
{
	(void)state;
	size_t len, l2, lc;
	uint8_t *v1 = many_blocks_v1(60000, &len), *v2;
	char err[512] = "";
	assert_int_equal(atr_v1_to_v2(v1, len, 1, &v2, &l2, err, sizeof err), 0);
	/* the first FRAME after the header: flip a byte of its payload */
	uint64_t off = ATR_HEADER_SIZE;
	while (atr_get32(v2 + off + ATR_B_KIND) != ATR_BLOCK_FRAME)
		off += 4096; /* staging blocks of 4 KiB come first */
	uint32_t cs = atr_get32(v2 + off + ATR_U_CSIZE);
	v2[off + ATR_BLOCK_HEADER_SIZE + cs / 2] ^= 0x40;
	char *tmp = write_tmp(v2, l2);
	int r = atr_compact(tmp, 3, 0, NULL, NULL, err, sizeof err);
	assert_true(r <= 0);
	uint8_t *c = slurp_path(tmp, &lc);
	assert_int_equal(lc, l2);
	assert_memory_equal(c, v2, l2);
	free(c);
	unlink(tmp);
	free(tmp);
	v2[off + ATR_BLOCK_HEADER_SIZE + cs / 2] ^= 0x40;

	tmp = write_tmp(v2, l2);
	char part[4096];
	snprintf(part, sizeof part, "%s.compact", tmp);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (!pid)
		_exit(atr_compact(tmp, 19, 0, NULL, NULL, err, sizeof err) == 1 ? 0 : 1);
	struct stat st;
	struct timespec ms = {0, 1000000};
	for (int i = 0; i < 20000 && stat(part, &st) != 0; i++)
		nanosleep(&ms, NULL);
	kill(pid, SIGKILL);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status)); /* killed while it wrote the copy */
	c = slurp_path(tmp, &lc);
	assert_int_equal(lc, l2);
	assert_memory_equal(c, v2, l2);
	free(c);
	same_events(v1, len, NULL, 0, tmp);
	assert_int_equal(atr_compact(tmp, 3, 0, NULL, NULL, err, sizeof err), 1);
	same_events(v1, len, NULL, 0, tmp);
	assert_int_not_equal(stat(part, &st), 0);
	unlink(tmp);
	free(tmp);
	free(v1);
	free(v2);
}

/* EXT records (ATR_XCALLS): each call's words come out in the event's
 * fields, through v1 and through v2 (compressed and not); a file without
 * the XCALLS feature bit, an unknown call type or a WIDE flag is
 * rejected. */
#define EXT_W0(ts, fl) ((uint64_t)(ts) << ATR_TS_SHIFT | ATR_T_EXT | (fl))
static uint8_t *xcalls_v1(uint64_t features, uint64_t bad_word1, unsigned bad_flags, size_t *len)
{
	struct atw *w = atw_new(4096);
	atw_hdr_u64(w, ATR_H_FEATURES, features);
	uint32_t t = atw_thread(w, 77, 10);
	const uint64_t base = 0x7f0000001000ULL, fail = UINT64_MAX;
	const uint64_t recs[][10] = {
	    /* n, w0 flags, xt, words..., then stack id / duration */
	    {9, ATR_FLAG_STACK, ATR_T_MMAP, base, 65536, 0, 3 | 34ULL << 32, 0xffffffffu, 0, 5},
	    {9, ATR_FLAG_TIMED, ATR_T_MMAP, fail, 0, 0x1000, 1 | 2ULL << 32,
	     3 | (uint64_t)EINVAL << 32, 8192, 777},
	    {5, 0, ATR_T_MUNMAP, base + 4096, 4096, 0},
	    {8, 0, ATR_T_MREMAP, base + 0x100000, 131072, base, 65536, 1 | 0ULL << 32, 0},
	    {6, 0, ATR_T_MADVISE, base, 8192, 4, ATR_XRES(-1, EINVAL)},
	    {6, 0, ATR_T_BRK_CALL, 0x5000, 0x4000, 0x5000, 0},
	    {6, 0, ATR_T_SBRK, (uint64_t)-4096, 0x5000, 0x4000, 0},
	    {5, 0, ATR_T_MALLOPT, (uint64_t)-3, 262144, 1},
	    {4, 0, ATR_T_MALLOC_TRIM, 128, 1},
	    {4, 0, ATR_T_MALLOC_USABLE_SIZE, 0x5010, 24},
	};
	uint64_t ts = 20;
	for (size_t i = 0; i < sizeof recs / sizeof *recs; i++) {
		uint64_t words[12];
		unsigned n = (unsigned)recs[i][0];
		words[0] = EXT_W0(ts++, recs[i][1]);
		for (unsigned k = 1; k < n; k++)
			words[k] = recs[i][k + 1];
		if (i == 4 && bad_word1) {
			words[1] = bad_word1;
		}
		if (i == 4 && bad_flags)
			words[0] |= bad_flags;
		assert_int_equal(atw_raw(w, t, words, n), 0);
	}
	assert_int_equal(atw_flush(w, t), 0);
	uint8_t *buf;
	assert_int_equal(atw_build(w, &buf, len, 1), 0);
	atw_destroy(w);
	return buf;
}

static void test_xcalls(void **state)
{
	(void)state;
	const uint64_t feat = ATR_FEAT_CLOCK_MONO_NS | ATR_FEAT_XCALLS | ATR_FEAT_STACKS;
	size_t len;
	uint8_t *v1 = xcalls_v1(feat, 0, 0, &len);
	char err[256];
	atr_file *f;
	assert_int_equal(atr_open_buffer(v1, len, "x", &f, err, sizeof err), 0);
	struct atr_event *ev = NULL;
	uint8_t *pl = NULL;
	size_t plen = 0;
	long n = walk_all(f, &ev, &pl, &plen);
	assert_int_equal(n, 11); /* thread start + 10 calls */
	const struct atr_event *e = ev + 1;
	assert_int_equal(e[0].type, ATR_T_MMAP);
	assert_string_equal(atr_type_name(e[0].type), "mmap");
	assert_int_equal(e[0].ret, 0x7f0000001000ULL);
	assert_int_equal(e[0].size, 65536);
	assert_int_equal(e[0].prot, 3);
	assert_int_equal(e[0].mflags, 34);
	assert_int_equal(e[0].fd, -1);
	assert_int_equal(e[0].stack_id, 5);
	assert_int_equal(e[1].ret, UINT64_MAX);
	assert_int_equal(e[1].hint, 0x1000);
	assert_int_equal(e[1].fd, 3);
	assert_int_equal(e[1].err, EINVAL);
	assert_int_equal(e[1].offset, 8192);
	assert_int_equal(e[1].duration, 777);
	assert_int_equal(e[2].type, ATR_T_MUNMAP);
	assert_int_equal(e[2].ptr, 0x7f0000002000ULL);
	assert_int_equal(e[2].result, 0);
	assert_int_equal(e[3].type, ATR_T_MREMAP);
	assert_int_equal(e[3].ptr, 0x7f0000001000ULL);
	assert_int_equal(e[3].old_size, 65536);
	assert_int_equal(e[3].size, 131072);
	assert_int_equal(e[3].mflags, 1);
	assert_int_equal(e[4].param, 4);
	assert_int_equal(e[4].result, -1);
	assert_int_equal(e[4].err, EINVAL);
	assert_int_equal(e[5].type, ATR_T_BRK_CALL);
	assert_string_equal(atr_type_name(e[5].type), "brk");
	assert_int_equal(e[5].hint, 0x5000);
	assert_int_equal(e[5].ptr, 0x4000);
	assert_int_equal(e[5].ret, 0x5000);
	assert_int_equal(e[6].value, -4096);
	assert_int_equal(e[6].ret, 0x4000);
	assert_int_equal(e[7].param, -3);
	assert_int_equal(e[7].value, 262144);
	assert_int_equal(e[7].result, 1);
	assert_int_equal(e[8].size, 128);
	assert_int_equal(e[9].ptr, 0x5010);
	assert_int_equal(e[9].usable, 24);
	assert_int_equal(atr_type_from_name("mmap64"), ATR_T_MMAP);
	assert_int_equal(atr_type_from_name("malloc_trim"), ATR_T_MALLOC_TRIM);
	uint64_t calls;
	assert_int_equal(atr_count_calls(f, &calls), 0);
	assert_int_equal(calls, 10);
	atr_close(f);
	free(ev);
	free(pl);
	for (int level = 0; level <= 3; level += 3) {
		uint8_t *v2;
		size_t l2;
		if (atr_v1_to_v2(v1, len, level, &v2, &l2, err, sizeof err))
			fail_msg("xcalls: %s", err);
		same_events(v1, len, v2, l2, NULL);
		free(v2);
	}
	free(v1);
	/* rejected: no feature bit, unknown call type, WIDE */
	const struct {
		uint64_t feat, word1;
		unsigned flags;
	} bad[] = {{feat & ~(uint64_t)ATR_FEAT_XCALLS, 0, 0},
		   {feat, ATR_T_XCALL_LAST + 1, 0},
		   {feat, 12, 0},
		   {feat, 0, ATR_FLAG_WIDE}};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		uint8_t *b = xcalls_v1(bad[i].feat, bad[i].word1, bad[i].flags, &len);
		assert_int_equal(atr_open_buffer(b, len, "bad", &f, err, sizeof err), 0);
		assert_true(walk_all(f, NULL, NULL, NULL) < 0);
		atr_close(f);
		free(b);
	}
}

/* A file that ends in an EXT record whose last words are zero (munmap's
 * result 0), written with trim as a file whose last block was written with
 * pwrite(): the trim keeps the block's records whole and every record reads
 * back, whether the record ends a staging block or a DATA block. */
static void test_xcall_last_trim(void **state)
{
	(void)state;
	for (int flushed = 0; flushed <= 1; flushed++) {
		struct atw *w = atw_new(4096);
		atw_hdr_u64(w, ATR_H_FEATURES, ATR_FEAT_CLOCK_MONO_NS | ATR_FEAT_XCALLS);
		uint32_t t = atw_thread(w, 77, 10);
		const uint64_t base = 0x7f0000001000ULL;
		const uint64_t mm[] = {EXT_W0(20, 0),	ATR_T_MMAP,  base, 8192, 0,
				       3 | 34ULL << 32, 0xffffffffu, 0};
		const uint64_t un[] = {EXT_W0(21, 0), ATR_T_MUNMAP, base, 8192, ATR_XRES(0, 0)};
		assert_int_equal(atw_raw(w, t, mm, 8), 0);
		assert_int_equal(atw_raw(w, t, un, 5), 0);
		if (flushed)
			assert_int_equal(atw_flush(w, t), 0);
		char tmp[] = "/tmp/atr-test-xtrim.XXXXXX";
		int fd = mkstemp(tmp);
		assert_true(fd >= 0);
		close(fd);
		assert_int_equal(atw_write_file(w, tmp, 1), 0);
		atw_destroy(w);
		char err[256];
		atr_file *f;
		assert_int_equal(atr_open(tmp, &f, err, sizeof err), 0);
		struct atr_event *ev = NULL;
		uint8_t *pl = NULL;
		size_t plen = 0;
		long n = walk_all(f, &ev, &pl, &plen);
		assert_int_equal(n, 3); /* thread start, mmap, munmap */
		assert_int_equal(ev[1].type, ATR_T_MMAP);
		assert_int_equal(ev[1].ret, base);
		assert_int_equal(ev[2].type, ATR_T_MUNMAP);
		assert_int_equal(ev[2].ptr, base);
		assert_int_equal(ev[2].size, 8192);
		assert_int_equal(ev[2].result, 0);
		assert_int_equal(atr_get_info(f)->truncated_records, 0);
		atr_close(f);
		free(ev);
		free(pl);
		unlink(tmp);
	}
}

/* Whatever happens to the bytes: an error code or events, never a crash. */
static int open_and_walk(const uint8_t *b, size_t len, char *err, size_t errlen)
{
	atr_file *f;
	int r = atr_open_buffer(b, len, "v2.atr", &f, err, errlen);
	if (r)
		return r;
	long n = walk_all(f, NULL, NULL, NULL);
	if (n < 0)
		snprintf(err, errlen, "%s", atr_last_error(f));
	atr_close(f);
	return n < 0 ? (int)n : 0;
}

/* The reader's two v2 paths agree on these bytes (atw_v2_paths_agree):
 * returns the events compared, -1 if the bytes do not open. */
static long paths_agree(const uint8_t *b, size_t len)
{
	char err[512];
	atr_file *fa, *fb;
	if (atr_open_buffer(b, len, "words.atr", &fa, err, sizeof err))
		return -1;
	assert_int_equal(atr_open_buffer(b, len, "lazy.atr", &fb, err, sizeof err), 0);
	atr_set_v2_words(fa, 1);
	uint64_t n;
	if (!atw_v2_paths_agree(fa, fb, &n, err, sizeof err))
		fail_msg("v2 paths: %s", err);
	atr_close(fa);
	atr_close(fb);
	return (long)n;
}

static uint8_t *v2_of(const char *name, int level, size_t *l2)
{
	size_t len;
	uint8_t *v1 = slurp(name, &len), *v2;
	char err[256];
	assert_int_equal(atr_v1_to_v2(v1, len, level, &v2, l2, err, sizeof err), 0);
	free(v1);
	return v2;
}

/* Offset of the first FRAME unit. */
static size_t first_frame(const uint8_t *b, size_t len)
{
	for (size_t off = ATR_HEADER_SIZE; off + 64 <= len; off += 8) {
		uint32_t m, k;
		memcpy(&m, b + off, 4);
		memcpy(&k, b + off + 4, 4);
		if (m == ATR_BLOCK_MAGIC && k == ATR_BLOCK_FRAME)
			return off;
	}
	fail();
	return 0;
}

static void test_truncated_and_flipped(void **state)
{
	(void)state;
	char err[512];
	size_t l2;
	uint8_t *v2 = v2_of("real-mt-timing", 3, &l2);
	uint8_t *copy = malloc(l2);
	for (size_t cut = 0; cut < l2; cut += 61) {
		memcpy(copy, v2, cut);
		open_and_walk(copy, cut, err, sizeof err);
	}
	for (size_t pos = ATR_HEADER_SIZE; pos < l2; pos += 7) {
		memcpy(copy, v2, l2);
		copy[pos] ^= (uint8_t)(1u << (pos % 8));
		open_and_walk(copy, l2, err, sizeof err);
		paths_agree(copy, l2);
	}
	/* a frame cut short by the end of the file: counted, not an error */
	size_t ff = first_frame(v2, l2);
	uint32_t cs;
	memcpy(&cs, v2 + ff + ATR_U_CSIZE, 4);
	atr_file *f;
	assert_int_equal(atr_open_buffer(v2, ff + 64 + cs / 2, "cut.atr", &f, err, sizeof err), 0);
	assert_int_equal(atr_get_info(f)->truncated_blocks, 1);
	atr_close(f);
	/* a damaged frame header: named by offset */
	memcpy(copy, v2, l2);
	copy[ff + ATR_U_FIRST_TS] ^= 1;
	assert_int_equal(open_and_walk(copy, l2, err, sizeof err), ATR_E_BLOCK);
	assert_non_null(strstr(err, "check mismatch"));
	/* a damaged zstd payload (header intact) */
	memcpy(copy, v2, l2);
	copy[ff + 64 + cs / 2] ^= 0x55;
	assert_int_equal(open_and_walk(copy, l2, err, sizeof err), ATR_E_BLOCK);
	assert_non_null(strstr(err, "frame at offset"));
	/* a bad offset: garbage where a unit should start */
	memcpy(copy, v2, l2);
	memset(copy + ff, 0xee, 4);
	assert_int_equal(open_and_walk(copy, l2, err, sizeof err), ATR_E_BLOCK);
	assert_non_null(strstr(err, "bad magic"));
	free(copy);
	free(v2);
}

/* A well-formed zstd frame whose content is not a valid encoding. */
static void test_garbage_frame(void **state)
{
	(void)state;
	size_t l2;
	uint8_t *v2 = v2_of("real-mt-timing", 3, &l2);
	size_t ff = first_frame(v2, l2);
	uint32_t cs;
	memcpy(&cs, v2 + ff + ATR_U_CSIZE, 4);
	uint8_t junk[4096];
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	for (size_t i = 0; i < sizeof junk; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		junk[i] = (uint8_t)x;
	}
	char err[512];
	for (size_t n = 1; n <= sizeof junk; n *= 4) {
		uint8_t z[8192];
		size_t zl = ZSTD_compress(z, sizeof z, junk, n, 1);
		assert_false(ZSTD_isError(zl));
		size_t len = ff + 64 + ((zl + 7) & ~(size_t)7);
		uint8_t *b = calloc(1, len);
		memcpy(b, v2, ff + 64);
		memcpy(b + ff + 64, z, zl);
		uint32_t c = (uint32_t)zl;
		memcpy(b + ff + ATR_U_CSIZE, &c, 4);
		c = atr_unit_check(b + ff);
		memcpy(b + ff + ATR_U_CHECK, &c, 4);
		assert_int_equal(open_and_walk(b, len, err, sizeof err), ATR_E_BLOCK);
		assert_non_null(strstr(err, "frame at offset"));
		free(b);
	}
	free(v2);
}

/* The codec alone: random words never crash the decoder; encode/decode of
 * hand-made records (every type, flags, WIDE, chunk flags) is exact. */
static void test_codec(void **state)
{
	(void)state;
	uint64_t w[64];
	size_t n = 0;
	uint64_t feats[] = {0, ATR_FEAT_CHUNK_FLAGS,
			    ATR_FEAT_TIMING | ATR_FEAT_STACKS | ATR_FEAT_CHUNK_FLAGS};
	for (size_t fi = 0; fi < 3; fi++) {
		uint64_t cm = (feats[fi] & ATR_FEAT_CHUNK_FLAGS) ? 4 : 0;
		n = 0;
		w[n++] = 10ULL << 8 | ATR_T_MALLOC;
		w[n++] = 0x5555aaaa0010 | cm;
		w[n++] = 24 | 8ULL << 48;
		w[n++] = 11ULL << 8 | ATR_T_FREE;
		w[n++] = 0x5555aaaa0010;
		w[n++] = 9ULL << 8 | ATR_T_MALLOC | ATR_FLAG_WIDE; /* goes back in time */
		w[n++] = 0;
		w[n++] = 1ULL << 50;
		w[n++] = UINT64_MAX;
		w[n++] = 12ULL << 8 | ATR_T_REALLOCARRAY | ATR_FLAG_TIMED;
		w[n++] = 0x5555aaaa1000;
		w[n++] = 64 | 0xffffULL << 48;
		w[n++] = 0x5555aaaa0010;
		w[n++] = 8;
		w[n++] = 77;
		w[n++] = 13ULL << 8 | ATR_T_MARKER;
		w[n++] = 3 | 5ULL << 32;
		w[n++] = 0x636261; /* "abc" padded */
		w[n++] = 14ULL << 8 | ATR_T_POSIX_MEMALIGN;
		w[n++] = 0;
		w[n++] = 100 | 22ULL << 48;
		w[n++] = 3;
		uint8_t enc[2048], dec[1024];
		struct atr_v2_meta m, m2;
		size_t el = atr_v2_encode((uint8_t *)w, n * 8, feats[fi], enc, sizeof enc, &m);
		assert_true(el > 0);
		assert_int_equal(m.records, 6);
		assert_int_equal(m.calls, 5);
		assert_int_equal(m.first_ts, 9);
		assert_int_equal(m.last_ts, 12 + 77);
		const char *why = NULL;
		assert_int_equal(atr_v2_decode(enc, el, feats[fi], dec, sizeof dec, &m2, &why),
				 (long)(n * 8));
		assert_memory_equal(dec, w, n * 8);
		assert_memory_equal(&m, &m2, sizeof m);
		/* every prefix and every byte flip: an error or a result, no crash */
		for (size_t cut = 0; cut < el; cut++)
			atr_v2_decode(enc, cut, feats[fi], dec, sizeof dec, &m2, &why);
		for (size_t i = 0; i < el * 8; i++) {
			enc[i / 8] ^= (uint8_t)(1u << (i % 8));
			atr_v2_decode(enc, el, feats[fi], dec, sizeof dec, &m2, &why);
			enc[i / 8] ^= (uint8_t)(1u << (i % 8));
		}
		/* too small an output: an error */
		assert_int_equal(atr_v2_decode(enc, el, feats[fi], dec, n * 8 - 8, &m2, &why), -1);
	}
}

/* The encoder gives back the very bytes of frames the recorder wrote
 * (the v2 files of the corpus): decode, re-encode, compare.  Too small an
 * output fails cleanly at every size near the end (the path where a record
 * might not fit). */
static const char *const v2_corpus[] = {"v2-real-mt-timing", "v2-real-xcalls", "v2-seed-stacks",
					"v2-seed1-raw"};

static void test_reencode(void **state)
{
	(void)state;
	size_t frames = 0;
	for (size_t i = 0; i < sizeof v2_corpus / sizeof *v2_corpus; i++) {
		size_t len;
		uint8_t *b = slurp(v2_corpus[i], &len);
		uint64_t feat;
		memcpy(&feat, b + ATR_H_FEATURES, 8);
		for (size_t off = ATR_HEADER_SIZE; off + 64 <= len; off += ATR_UNIT_ALIGN) {
			uint32_t mg, kind, used, cs, chk;
			memcpy(&mg, b + off + ATR_B_MAGIC, 4);
			memcpy(&kind, b + off + ATR_B_KIND, 4);
			memcpy(&used, b + off + ATR_B_USED, 4);
			memcpy(&cs, b + off + ATR_U_CSIZE, 4);
			memcpy(&chk, b + off + ATR_U_CHECK, 4);
			if (mg != ATR_BLOCK_MAGIC || kind != ATR_BLOCK_FRAME ||
			    chk != atr_unit_check(b + off) || cs > len - off - 64)
				continue;
			const uint8_t *pl = b + off + 64;
			uint8_t *enc = malloc(ATR_V2_ENC_BOUND(used));
			size_t elen = cs;
			if (feat & ATR_FEAT_ZSTD) {
				elen = ZSTD_decompress(enc, ATR_V2_ENC_BOUND(used), pl, cs);
				assert_false(ZSTD_isError(elen));
			} else {
				memcpy(enc, pl, cs);
			}
			uint8_t *v1 = malloc(used + 64), *again = malloc(ATR_V2_ENC_BOUND(used));
			struct atr_v2_meta m, m2;
			const char *why = NULL;
			assert_int_equal(atr_v2_decode(enc, elen, feat, v1, used, &m, &why),
					 (long)used);
			assert_int_equal(
			    atr_v2_encode(v1, used, feat, again, ATR_V2_ENC_BOUND(used), &m2),
			    elen);
			assert_memory_equal(again, enc, elen);
			assert_memory_equal(&m, &m2, sizeof m);
			assert_int_equal(atr_v2_encode(v1, used, feat, again, elen, &m2), elen);
			assert_memory_equal(again, enc, elen);
			for (size_t cap = elen > 200 ? elen - 200 : 0; cap < elen; cap++)
				assert_int_equal(atr_v2_encode(v1, used, feat, again, cap, &m2), 0);
			free(enc);
			free(v1);
			free(again);
			frames++;
			off += ((64 + (size_t)cs + 7) & ~(size_t)7) - ATR_UNIT_ALIGN;
		}
		free(b);
	}
	assert_true(frames >= 4);
}

/* The frames read record by record give the events of the frames decoded
 * whole into v1 words (atr_set_v2_words): the corpus's v2 traces and the
 * v1 ones rewritten (zstd and raw), and every byte of a raw-frame trace
 * flipped (no zstd check in the way: the decoder sees the damage). */
static void test_words_path(void **state)
{
	(void)state;
	static const char *const v2s[] = {"v2-real-mt-timing", "v2-real-resident", "v2-real-xcalls",
					  "v2-seed-stacks", "v2-seed1-raw"};
	for (size_t i = 0; i < sizeof v2s / sizeof *v2s; i++) {
		size_t len;
		uint8_t *b = slurp(v2s[i], &len);
		assert_true(paths_agree(b, len) > 0);
		free(b);
	}
	for (size_t i = 0; i < sizeof corpus / sizeof *corpus; i++) {
		for (int level = 0; level <= 3; level += 3) {
			size_t l2;
			uint8_t *v2 = v2_of(corpus[i], level, &l2);
			assert_true(paths_agree(v2, l2) > 0);
			free(v2);
		}
	}
	size_t l2;
	uint8_t *v2 = v2_of("real-mt-timing", 0, &l2);
	uint8_t *copy = malloc(l2);
	size_t ff = first_frame(v2, l2);
	long rejected = 0;
	for (size_t pos = ff + 64; pos < l2; pos += 3) {
		memcpy(copy, v2, l2);
		copy[pos] ^= (uint8_t)(1u << (pos % 8));
		char err[512];
		rejected += open_and_walk(copy, l2, err, sizeof err) < 0;
		paths_agree(copy, l2);
	}
	assert_true(rejected > 0);
	free(copy);
	free(v2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_codec),
	    cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_xcalls),
	    cmocka_unit_test(test_xcall_last_trim),
	    cmocka_unit_test(test_truncated_and_flipped),
	    cmocka_unit_test(test_garbage_frame),
	    cmocka_unit_test(test_compact),
	    cmocka_unit_test(test_reencode),
	    cmocka_unit_test(test_compact_merge),
	    cmocka_unit_test(test_compact_damaged_and_killed),
	    cmocka_unit_test(test_words_path),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
