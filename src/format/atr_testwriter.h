/* atr_testwriter.h - builds trace files in memory for tests and fuzz seeds.
 *
 * Test-only: it follows the writer rules of atr_format.h (a staging block
 * per thread, flushed into DATA blocks with increasing sequence numbers)
 * and lets a test break them on purpose (poke bytes, skip sequence
 * numbers, leave a crash-time staging duplicate).  Not async-signal-safe,
 * not fast, not used by the recorder.
 *
 *   struct atw *w = atw_new(4096);
 *   uint32_t t1 = atw_thread(w, 1234, 0);      // THREAD_START at tick 0
 *   atw_malloc(w, t1, 10, 0x1000, 32, 8);      // ret, size, slack
 *   atw_free(w, t1, 20, 0x1000);
 *   atw_build(w, &buf, &len, 1);
 */
#ifndef ATR_TESTWRITER_H
#define ATR_TESTWRITER_H

#include <stddef.h>
#include <stdint.h>

struct atw;

/* A writer with a valid header: features ATR_FEAT_CLOCK_MONO_NS, pid 1000,
 * ppid 1, status CLEAN_EXIT, exe "/usr/bin/test", cmdline "test". */
struct atw *atw_new(uint32_t block_size);
void atw_destroy(struct atw *w);

/* Header field access (offsets ATR_H_*), for tests that need odd values. */
void atw_hdr_u32(struct atw *w, unsigned off, uint32_t v);
void atw_hdr_u64(struct atw *w, unsigned off, uint64_t v);
void atw_set_exe(struct atw *w, const char *exe);
void atw_set_cmdline(struct atw *w, int argc, const char *const *argv);

/* A new thread (serial 1, 2, ...): reserves its staging block and writes
 * THREAD_START (arg tid, payload pthread_self = 0x7f00 + serial). */
uint32_t atw_thread(struct atw *w, uint32_t tid, uint64_t ts);

/* Narrow size word: bits 0-47 size, bits 48-63 slack (0xffff unknown). */
static inline uint64_t atw_size(uint64_t size, uint32_t slack16)
{
	return (size & ((1ULL << 48) - 1)) | (uint64_t)(slack16 & 0xffffu) << 48;
}

/* A call record: f[] holds the fixed words after word 0 in the order of
 * atr_format.h (atr_call_words(type) - 1 of them), opt[] the optional words
 * the flags (ATR_FLAG_WIDE/STACK/TIMED) call for, in that order.  All
 * return 0, or -1 on bad arguments. */
int atw_call(struct atw *w, uint32_t serial, uint64_t ts, unsigned type, unsigned flags,
	     const uint64_t *f, const uint64_t *opt);
/* malloc: narrow or WIDE as the writer would choose (slack UINT64_MAX =
 * unknown). */
int atw_malloc(struct atw *w, uint32_t serial, uint64_t ts, uint64_t ret, uint64_t size,
	       uint64_t slack);
int atw_free(struct atw *w, uint32_t serial, uint64_t ts, uint64_t ptr);
/* realloc: always TIMED (dur), slack unknown. */
int atw_realloc(struct atw *w, uint32_t serial, uint64_t ts, uint64_t old, uint64_t ret,
		uint64_t size, uint64_t dur);
/* A meta record (type 16..31), payload padded to 8 bytes. */
int atw_meta(struct atw *w, uint32_t serial, uint64_t ts, unsigned type, uint32_t arg,
	     const void *payload, uint32_t len);
int atw_marker(struct atw *w, uint32_t serial, uint64_t ts, const char *label);
/* Raw words appended to the thread's staging block as one record. */
int atw_raw(struct atw *w, uint32_t serial, const uint64_t *words, unsigned n);

/* Write the staging block out as a DATA block (seq k) and reset the
 * staging block to seq k + 1.  Happens by itself when a record does not
 * fit.  atw_flush_crash() writes the DATA block but does not reset the
 * staging block (a crash between the two steps). */
int atw_flush(struct atw *w, uint32_t serial);
int atw_flush_crash(struct atw *w, uint32_t serial);
/* Drop the staging block's records as if their write had failed: the
 * sequence number advances without a DATA block. */
int atw_skip_seq(struct atw *w, uint32_t serial);
/* Flush, mark the staging block RETIRED and take a new one (next seq). */
int atw_retire(struct atw *w, uint32_t serial);

/* Blocks in file order, to poke bytes for corruption tests. */
size_t atw_block_count(const struct atw *w);
uint8_t *atw_block(struct atw *w, size_t idx);
size_t atw_staging_index(const struct atw *w, uint32_t serial);
uint8_t *atw_header(struct atw *w); /* the 4096-byte header */

/* The file image (malloc'd; free() it).  trim != 0 cuts trailing zero
 * bytes like a file whose last block was written with pwrite(): never
 * those of the last block's records (its staging position or the used
 * bytes of a DATA block), which may end in zero words. */
int atw_build(struct atw *w, uint8_t **buf, size_t *len, int trim);
int atw_write_file(struct atw *w, const char *path, int trim);

/* ---- the reader's two v2 paths (tests/test_v2.c, tests/v2paths.c, the
 * reader's fuzz target) ---- */
struct atr_event;
typedef struct atr_file atr_file;
/* 1 when every field of the two events is equal (payloads by content). */
int atw_same_event(const struct atr_event *x, const struct atr_event *y);
/* Iterates words (atr_set_v2_words(words, 1): frames decoded whole into
 * v1 words) and lazy (the default path) of the same bytes side by side.
 * Returns 1 when they agree: the same events, then the same end, or,
 * where words fails (a whole frame is checked before its first event),
 * lazy may give more events of that frame first and then fails with the
 * same code (or with ATR_E_RECORD: one of those records is rejected as an
 * event before the frame's bad record).  0 with why explained otherwise.
 * *events: events compared. */
int atw_v2_paths_agree(atr_file *words, atr_file *lazy, uint64_t *events, char *why, size_t len);
/* Iterates full (atr_iter_next_ref) and narrow (atr_iter_next_calls, each
 * compact record made an event by atr_call_event, batches of 1 to 37
 * records, every seventh time one event of atr_iter_next_ref instead) of
 * the same bytes side by side.  1 when they agree: the same
 * events, the same end or error, the same walk statistics
 * (atr_get_info); 0 with why explained otherwise. */
int atw_calls_path_agree(atr_file *full, atr_file *narrow, uint64_t *events, char *why, size_t len);
/* The same with frames decompressed by a helper (atr_iter_set_helper):
 * ATW_HELP_INLINE, by atr_iter_help calls between the batches (every
 * frame posted is decompressed before the reader needs it); ATW_HELP_THREAD,
 * by a thread that calls it all the time (whatever the timing, the events
 * are the same).  *helped: the frames the helper decompressed. */
enum { ATW_HELP_NONE, ATW_HELP_INLINE, ATW_HELP_THREAD };
int atw_calls_path_agree_helped(atr_file *full, atr_file *narrow, int help, uint64_t *events,
				uint64_t *helped, char *why, size_t len);

#endif
