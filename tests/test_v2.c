/* test_v2.c - trace format v2: every v1 trace of the fuzz corpus rewritten
 * as v2 (compressed and not) reads back event for event the same, through
 * a buffer and through a file; truncated, corrupted and garbage frames give
 * a clear error, never a crash (run under ASan by scripts/test.sh).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <zstd.h>

#include "atr_format.h"
#include "atr_reader.h"
#include "atr_v2.h"
#include "atr_v2conv.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_codec),
	    cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_truncated_and_flipped),
	    cmocka_unit_test(test_garbage_frame),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
