/* atr_testwriter.c - see atr_testwriter.h. */
#include "atr_testwriter.h"

#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atr_format.h"
#include "atr_reader.h"

struct atw_thr {
	uint32_t serial, tid;
	size_t staging; /* block index */
	uint64_t seq;
	uint32_t pos, nrec;
};

struct atw {
	uint32_t bs;
	uint8_t hdr[ATR_HEADER_SIZE];
	uint8_t **blk;
	size_t nblk, capblk;
	struct atw_thr *thr;
	uint32_t nthr;
};

void atw_hdr_u32(struct atw *w, unsigned off, uint32_t v)
{
	if (off + 4 <= ATR_HEADER_SIZE)
		atr_put32(w->hdr + off, v);
}

void atw_hdr_u64(struct atw *w, unsigned off, uint64_t v)
{
	if (off + 8 <= ATR_HEADER_SIZE)
		atr_put64(w->hdr + off, v);
}

void atw_set_exe(struct atw *w, const char *exe)
{
	memset(w->hdr + ATR_H_EXE, 0, 256);
	size_t n = strlen(exe);
	memcpy(w->hdr + ATR_H_EXE, exe, n > 255 ? 255 : n);
}

void atw_set_cmdline(struct atw *w, int argc, const char *const *argv)
{
	uint8_t *p = w->hdr + ATR_H_CMDLINE + 4;
	uint32_t len = 0;
	memset(p, 0, ATR_H_CMDLINE_MAX);
	for (int i = 0; i < argc; i++) {
		size_t n = strlen(argv[i]) + 1;
		if (len + n > ATR_H_CMDLINE_MAX)
			break;
		memcpy(p + len, argv[i], n);
		len += (uint32_t)n;
	}
	atr_put32(w->hdr + ATR_H_CMDLINE, len);
}

struct atw *atw_new(uint32_t block_size)
{
	struct atw *w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->bs = block_size;
	memcpy(w->hdr + ATR_H_MAGIC, ATR_MAGIC, 8);
	atr_put32(w->hdr + ATR_H_VERSION, ATR_VERSION_V1);
	atr_put32(w->hdr + ATR_H_HEADER_SIZE, ATR_HEADER_SIZE);
	atr_put64(w->hdr + ATR_H_FEATURES, ATR_FEAT_CLOCK_MONO_NS);
	atr_put32(w->hdr + ATR_H_BLOCK_SIZE, block_size);
	atr_put32(w->hdr + ATR_H_STATUS, ATR_STATUS_CLEAN_EXIT);
	atr_put32(w->hdr + ATR_H_PID, 1000);
	atr_put32(w->hdr + ATR_H_PPID, 1);
	atr_put64(w->hdr + ATR_H_START_REALTIME, 1700000000000000000ULL);
	atr_put64(w->hdr + ATR_H_START_MONO, 1000000000ULL);
	atw_set_exe(w, "/usr/bin/test");
	static const char *const argv[] = {"test"};
	atw_set_cmdline(w, 1, argv);
	return w;
}

void atw_destroy(struct atw *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->nblk; i++)
		free(w->blk[i]);
	free(w->blk);
	free(w->thr);
	free(w);
}

static size_t new_block(struct atw *w)
{
	if (w->nblk == w->capblk) {
		size_t nc = w->capblk ? w->capblk * 2 : 16;
		uint8_t **nb = realloc(w->blk, nc * sizeof(*nb));
		if (!nb)
			abort();
		w->blk = nb;
		w->capblk = nc;
	}
	uint8_t *b = calloc(1, w->bs);
	if (!b)
		abort();
	w->blk[w->nblk] = b;
	return w->nblk++;
}

static void staging_header(struct atw *w, struct atw_thr *t)
{
	uint8_t *b = w->blk[t->staging];
	atr_put32(b + ATR_B_MAGIC, ATR_BLOCK_MAGIC);
	atr_put32(b + ATR_B_KIND, ATR_BLOCK_STAGING);
	atr_put32(b + ATR_B_THREAD, t->serial);
	atr_put32(b + ATR_B_TID, t->tid);
	atr_put64(b + ATR_B_SEQ, t->seq);
	atr_put32(b + ATR_B_PID, 1000);
}

static struct atw_thr *thr_get(struct atw *w, uint32_t serial)
{
	return serial >= 1 && serial <= w->nthr ? &w->thr[serial - 1] : NULL;
}

uint32_t atw_thread(struct atw *w, uint32_t tid, uint64_t ts)
{
	struct atw_thr *nt = realloc(w->thr, (w->nthr + 1) * sizeof(*nt));
	if (!nt)
		abort();
	w->thr = nt;
	struct atw_thr *t = &w->thr[w->nthr++];
	memset(t, 0, sizeof(*t));
	t->serial = w->nthr;
	t->tid = tid;
	t->staging = new_block(w);
	t->pos = ATR_BLOCK_HEADER_SIZE;
	staging_header(w, t);
	uint64_t self = 0x7f00 + t->serial;
	atw_meta(w, t->serial, ts, ATR_T_THREAD_START, tid, &self, 8);
	return t->serial;
}

static void flush(struct atw *w, struct atw_thr *t, int reset, int write)
{
	uint8_t *s = w->blk[t->staging];
	if (write) {
		size_t d = new_block(w);
		s = w->blk[t->staging]; /* w->blk may have moved */
		uint8_t *b = w->blk[d];
		memcpy(b, s, t->pos);
		atr_put32(b + ATR_B_KIND, ATR_BLOCK_DATA);
		atr_put32(b + ATR_B_USED, t->pos - ATR_BLOCK_HEADER_SIZE);
		atr_put32(b + ATR_B_RECORDS, t->nrec);
	}
	if (!reset)
		return;
	memset(s + ATR_BLOCK_HEADER_SIZE, 0, w->bs - ATR_BLOCK_HEADER_SIZE);
	t->seq++;
	t->pos = ATR_BLOCK_HEADER_SIZE;
	t->nrec = 0;
	staging_header(w, t);
}

int atw_flush(struct atw *w, uint32_t serial)
{
	struct atw_thr *t = thr_get(w, serial);
	if (!t)
		return -1;
	flush(w, t, 1, 1);
	return 0;
}

int atw_flush_crash(struct atw *w, uint32_t serial)
{
	struct atw_thr *t = thr_get(w, serial);
	if (!t)
		return -1;
	flush(w, t, 0, 1);
	return 0;
}

int atw_skip_seq(struct atw *w, uint32_t serial)
{
	struct atw_thr *t = thr_get(w, serial);
	if (!t)
		return -1;
	flush(w, t, 1, 0);
	return 0;
}

int atw_retire(struct atw *w, uint32_t serial)
{
	struct atw_thr *t = thr_get(w, serial);
	if (!t)
		return -1;
	flush(w, t, 0, 1);
	atr_put32(w->blk[t->staging] + ATR_B_KIND, ATR_BLOCK_RETIRED);
	t->staging = new_block(w);
	t->seq++;
	t->pos = ATR_BLOCK_HEADER_SIZE;
	t->nrec = 0;
	staging_header(w, t);
	return 0;
}

int atw_raw(struct atw *w, uint32_t serial, const uint64_t *words, unsigned n)
{
	struct atw_thr *t = thr_get(w, serial);
	if (!t || (uint64_t)n * 8 > w->bs - ATR_BLOCK_HEADER_SIZE)
		return -1;
	if (t->pos + (uint64_t)n * 8 > w->bs)
		flush(w, t, 1, 1);
	memcpy(w->blk[t->staging] + t->pos, words, (size_t)n * 8);
	t->pos += n * 8;
	t->nrec++;
	return 0;
}

int atw_call(struct atw *w, uint32_t serial, uint64_t ts, unsigned type, unsigned flags,
	     const uint64_t *f, const uint64_t *opt)
{
	unsigned n = atr_call_words(type);
	if (!n || (flags & ~ATR_FLAG_MASK))
		return -1;
	unsigned tot = atr_record_words(type, flags);
	uint64_t words[16];
	words[0] = (ts << ATR_TS_SHIFT) | type | flags;
	memcpy(words + 1, f, (n - 1) * sizeof(uint64_t));
	if (tot > n)
		memcpy(words + n, opt, (tot - n) * sizeof(uint64_t));
	return atw_raw(w, serial, words, tot);
}

int atw_malloc(struct atw *w, uint32_t serial, uint64_t ts, uint64_t ret, uint64_t size,
	       uint64_t slack)
{
	if (!ret)
		slack = 0;
	if (size <= ((1ULL << 48) - 1) && (slack < 0xffff || slack == UINT64_MAX)) {
		uint64_t f[2] = {ret,
				 atw_size(size, slack == UINT64_MAX ? 0xffffu : (uint32_t)slack)};
		return atw_call(w, serial, ts, ATR_T_MALLOC, 0, f, NULL);
	}
	uint64_t f[2] = {ret, size};
	return atw_call(w, serial, ts, ATR_T_MALLOC, ATR_FLAG_WIDE, f, &slack);
}

int atw_free(struct atw *w, uint32_t serial, uint64_t ts, uint64_t ptr)
{
	return atw_call(w, serial, ts, ATR_T_FREE, 0, &ptr, NULL);
}

int atw_realloc(struct atw *w, uint32_t serial, uint64_t ts, uint64_t old, uint64_t ret,
		uint64_t size, uint64_t dur)
{
	uint64_t f[3] = {ret, atw_size(size, 0xffffu), old};
	return atw_call(w, serial, ts, ATR_T_REALLOC, ATR_FLAG_TIMED, f, &dur);
}

int atw_meta(struct atw *w, uint32_t serial, uint64_t ts, unsigned type, uint32_t arg,
	     const void *payload, uint32_t len)
{
	if (type < 16 || type > 31 || len > w->bs)
		return -1;
	unsigned n = 2 + (len + 7) / 8;
	uint64_t *words = calloc(n, 8);
	if (!words)
		return -1;
	words[0] = (ts << ATR_TS_SHIFT) | type;
	words[1] = (uint64_t)arg << 32 | len;
	if (len)
		memcpy(words + 2, payload, len);
	int r = atw_raw(w, serial, words, n);
	free(words);
	return r;
}

int atw_marker(struct atw *w, uint32_t serial, uint64_t ts, const char *label)
{
	return atw_meta(w, serial, ts, ATR_T_MARKER, 0, label, (uint32_t)strlen(label));
}

size_t atw_block_count(const struct atw *w)
{
	return w->nblk;
}

uint8_t *atw_block(struct atw *w, size_t idx)
{
	return idx < w->nblk ? w->blk[idx] : NULL;
}

size_t atw_staging_index(const struct atw *w, uint32_t serial)
{
	return serial >= 1 && serial <= w->nthr ? w->thr[serial - 1].staging : (size_t)-1;
}

uint8_t *atw_header(struct atw *w)
{
	return w->hdr;
}

/* Where the records of the last block end in the file image: after its
 * staging position, or after its used bytes if it is a DATA block; the
 * header's end if nothing is known. */
static size_t last_records_end(const struct atw *w)
{
	if (!w->nblk)
		return ATR_HEADER_SIZE;
	size_t last = w->nblk - 1, at = ATR_HEADER_SIZE + last * (size_t)w->bs;
	for (uint32_t i = 0; i < w->nthr; i++)
		if (w->thr[i].staging == last)
			return at + w->thr[i].pos;
	const uint8_t *b = w->blk[last];
	uint32_t used = atr_get32(b + ATR_B_USED);
	if (atr_get32(b + ATR_B_KIND) != ATR_BLOCK_DATA || used > w->bs - ATR_BLOCK_HEADER_SIZE)
		return ATR_HEADER_SIZE;
	return at + ATR_BLOCK_HEADER_SIZE + used;
}

int atw_build(struct atw *w, uint8_t **buf, size_t *len, int trim)
{
	atr_put64(w->hdr + ATR_H_BLOCKS, w->nblk);
	size_t total = ATR_HEADER_SIZE + w->nblk * (size_t)w->bs;
	uint8_t *b = malloc(total);
	if (!b)
		return -1;
	memcpy(b, w->hdr, ATR_HEADER_SIZE);
	for (size_t i = 0; i < w->nblk; i++)
		memcpy(b + ATR_HEADER_SIZE + i * w->bs, w->blk[i], w->bs);
	if (trim) {
		/* a pwrite()n last block ends after its records, which may end
		 * in zero words (an EXT record's result 0): never cut into them */
		size_t keep = last_records_end(w);
		while (total > keep && b[total - 1] == 0)
			total--;
		total = (total + 7) & ~(size_t)7;
	}
	*buf = b;
	*len = total;
	return 0;
}

int atw_write_file(struct atw *w, const char *path, int trim)
{
	uint8_t *b;
	size_t n;
	if (atw_build(w, &b, &n, trim) < 0)
		return -1;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	int r = -1;
	if (fd >= 0) {
		r = write(fd, b, n) == (ssize_t)n ? 0 : -1;
		if (close(fd) < 0)
			r = -1;
	}
	free(b);
	return r;
}

int atw_same_event(const struct atr_event *x, const struct atr_event *y)
{
	return x->type == y->type && x->flags == y->flags && x->thread == y->thread &&
	       x->tid == y->tid && x->ts == y->ts && x->seq == y->seq && x->ptr == y->ptr &&
	       x->ret == y->ret && x->size == y->size && x->nmemb == y->nmemb &&
	       x->align == y->align && x->usable == y->usable && x->stack_id == y->stack_id &&
	       x->err == y->err && x->duration == y->duration && x->arg == y->arg &&
	       x->payload_len == y->payload_len &&
	       (!x->payload_len || !memcmp(x->payload, y->payload, x->payload_len)) &&
	       x->chunk_flags == y->chunk_flags && x->resident_pages == y->resident_pages &&
	       x->span_pages == y->span_pages && x->w_calls == y->w_calls &&
	       x->w_bytes == y->w_bytes && x->hint == y->hint && x->old_size == y->old_size &&
	       x->offset == y->offset && x->prot == y->prot && x->mflags == y->mflags &&
	       x->fd == y->fd && x->param == y->param && x->value == y->value &&
	       x->result == y->result;
}

int atw_v2_paths_agree(atr_file *words, atr_file *lazy, uint64_t *events, char *why, size_t len)
{
	atr_iter *ia = NULL, *ib = NULL;
	int ok = 1;
	*events = 0;
	snprintf(why, len, "agree");
	if (atr_iter_new(words, &ia) || atr_iter_new(lazy, &ib)) {
		snprintf(why, len, "no iterator");
		ok = 0;
		goto out;
	}
	const struct atr_event *x, *y;
	int ra, rb;
	do {
		ra = atr_iter_next_ref(ia, &x);
		rb = atr_iter_next_ref(ib, &y);
		if (ra > 0 && (rb <= 0 || !atw_same_event(x, y))) {
			snprintf(why, len, "event %" PRIu64 " differs (lazy path: %d)", *events,
				 rb);
			ok = 0;
			goto out;
		}
		*events += ra > 0;
	} while (ra > 0);
	if (ra == 0 && rb != 0) {
		snprintf(why, len, "words path ends after %" PRIu64 " events, lazy path: %d",
			 *events, rb);
		ok = 0;
		goto out;
	}
	while (ra < 0 && rb > 0)
		rb = atr_iter_next_ref(ib, &y);
	/* the frame words rejected whole (ATR_E_BLOCK) may hold, before the
	 * record that does not decode, one whose event lazy rejects
	 * (ATR_E_RECORD: a RESIDENT record's bad count) */
	if (ra < 0 && rb != ra && !(ra == ATR_E_BLOCK && rb == ATR_E_RECORD)) {
		snprintf(why, len, "words path fails with %d (%s), lazy path with %d", ra,
			 atr_last_error(words), rb);
		ok = 0;
	}
out:
	atr_iter_free(ia);
	atr_iter_free(ib);
	return ok;
}

/* The helper thread of atw_calls_path_agree_helped's ATW_HELP_THREAD. */
struct helper {
	atr_iter *it;
	_Atomic int stop;
	uint64_t helped;
};

static void *helper_run(void *arg)
{
	struct helper *h = arg;
	while (!atomic_load(&h->stop))
		if (atr_iter_help(h->it))
			h->helped++;
		else
			sched_yield();
	return NULL;
}

int atw_calls_path_agree(atr_file *full, atr_file *narrow, uint64_t *events, char *why, size_t len)
{
	uint64_t helped;
	return atw_calls_path_agree_helped(full, narrow, ATW_HELP_NONE, events, &helped, why, len);
}

int atw_calls_path_agree_helped(atr_file *full, atr_file *narrow, int help, uint64_t *events,
				uint64_t *helped, char *why, size_t len)
{
	atr_iter *ia = NULL, *ib = NULL;
	int ok = 0, ra, rb = 1;
	struct helper h = {0};
	pthread_t th;
	int started = 0;
	*events = *helped = 0;
	snprintf(why, len, "agree");
	if (atr_iter_new(full, &ia) || atr_iter_new(narrow, &ib)) {
		snprintf(why, len, "no iterator");
		goto out;
	}
	if (help != ATW_HELP_NONE && atr_iter_set_helper(ib) != ATR_OK) {
		snprintf(why, len, "no helper");
		goto out;
	}
	if (help == ATW_HELP_THREAD) {
		h.it = ib;
		if (pthread_create(&th, NULL, helper_run, &h)) {
			snprintf(why, len, "no helper thread");
			goto out;
		}
		started = 1;
	}
	struct atr_call calls[37];
	struct atr_event ce;
	memset(&ce, 0, sizeof(ce));
	size_t n = 0, i = 0;
	uint64_t seq = 0, batches = 0;
	const struct atr_event *x, *y = NULL;
	for (;;) {
		ra = atr_iter_next_ref(ia, &x);
		/* the narrow path's next event */
		if (i == n && y) {
			rb = 1; /* the full event after a batch, handed out below */
		} else if (i == n && batches++ % 7 == 3) {
			/* now and then one event of atr_iter_next_ref between
			 * batches (a thread's light head handed out as an
			 * event: cur_head_light) */
			rb = atr_iter_next_ref(ib, &y);
			n = i = 0;
		} else if (i == n) {
			size_t cap = 1 + (size_t)(batches % 37);
			/* every frame posted so far, decompressed by the "helper"
			 * between two batches: the reader takes them all */
			while (help == ATW_HELP_INLINE && atr_iter_help(ib))
				++*helped;
			rb = atr_iter_next_calls(ib, calls, cap, &n, &y);
			i = 0;
			if (rb > 0 && n > cap) {
				snprintf(why, len, "batch of %zu records for room for %zu", n, cap);
				goto out;
			}
			if (rb > 0 && !n && !y) {
				snprintf(why, len, "an empty batch");
				goto out;
			}
		}
		const struct atr_event *e = NULL;
		if (rb > 0 && i < n) {
			atr_call_event(&calls[i++], &ce);
			ce.seq = seq;
			e = &ce;
		} else if (rb > 0) {
			e = y;
			y = NULL;
			seq = e->seq;
		}
		if (e)
			seq += e->type != ATR_EV_REALLOC_RELEASE;
		if (ra <= 0 || rb <= 0)
			break;
		if (!atw_same_event(x, e)) {
			snprintf(why, len,
				 "event %" PRIu64 " differs (type %u vs %u, ts %" PRIu64
				 " vs %" PRIu64 ")",
				 *events, x->type, e->type, x->ts, e->ts);
			goto out;
		}
		++*events;
	}
	if (ra != rb) {
		snprintf(why, len, "after %" PRIu64 " events: full path %d, narrow path %d",
			 *events, ra, rb);
		goto out;
	}
	const struct atr_info *p = atr_get_info(full), *q = atr_get_info(narrow);
	if (p->walked != q->walked || p->records_hint != q->records_hint || p->calls != q->calls ||
	    p->clock_inversions != q->clock_inversions || p->last_ts != q->last_ts ||
	    p->lost_records != q->lost_records || p->truncated_records != q->truncated_records) {
		snprintf(why, len, "walk statistics differ");
		goto out;
	}
	ok = 1;
out:
	if (started) {
		atomic_store(&h.stop, 1);
		pthread_join(th, NULL);
		*helped = h.helped;
	}
	atr_iter_free(ia);
	atr_iter_free(ib);
	return ok;
}
