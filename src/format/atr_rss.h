/* atr_rss.h - memory samples of a recorded process (docs/RSS_FORMAT.md).
 *
 * `alloctrace record` samples /proc/<pid>/statm of its direct child every
 * 10 ms (one fd kept open, pread) into DIR/<pid>.rss.  The file is a
 * 64-byte header followed by 24-byte samples, all little-endian; a file cut
 * short (the recorder killed) just ends after its last whole sample.
 */
#ifndef ATR_RSS_H
#define ATR_RSS_H

#include <stddef.h>
#include <stdint.h>

#define ATR_RSS_MAGIC	    "ALCTRSS\0" /* 8 bytes */
#define ATR_RSS_VERSION	    1u
#define ATR_RSS_HEADER_SIZE 64u
#define ATR_RSS_SAMPLE_SIZE 32u
#define ATR_RSS_SAMPLE_MIN  24u /* samples before the self field */

struct atr_rss_sample {
	uint64_t mono_ns; /* CLOCK_MONOTONIC when read */
	uint64_t vmsize;  /* bytes (statm size * page size) */
	uint64_t rss;	  /* bytes (statm resident * page size) */
	uint64_t self;	  /* bytes of rss that are the recorder's own (the
			     trace header's self_rss then); 0 unknown */
};

/* The program's own part of a sample's RSS: without the recorder's. */
static inline uint64_t atr_rss_program(const struct atr_rss_sample *s)
{
	return s->rss - (s->self < s->rss ? s->self : s->rss);
}

struct atr_rss {
	uint32_t pid, page_size;
	uint64_t interval_ns, start_mono_ns;
	struct atr_rss_sample *s;
	size_t n;
};

/* ---- writer (the recorder) ---- */
struct atr_rss_writer {
	int fd;		    /* the output file */
	int statm;	    /* /proc/<pid>/statm */
	int trace;	    /* the trace file of the process's image, -1: none yet */
	uint32_t trace_seq; /* its exec number */
	long page;
	uint64_t count;
	unsigned char buf[ATR_RSS_SAMPLE_SIZE * 128];
	size_t used;
};
/* Create path (O_EXCL) and open /proc/<pid>/statm; 0 or -errno. */
int atr_rss_writer_open(struct atr_rss_writer *w, const char *path, uint32_t pid,
			uint64_t interval_ns);
/* The trace file of the process's image exec_seq: each sample then
 * reads its header's self_rss.  Kept if w has one of a later image;
 * 0 or -errno (-ENOENT: the image's library has not created it yet). */
int atr_rss_writer_trace(struct atr_rss_writer *w, const char *trace_path, uint32_t exec_seq);
/* One sample now; 0, or -errno (the process is gone: ESRCH/ENOENT, or a
 * read of 0 bytes gives -ESRCH). */
int atr_rss_writer_sample(struct atr_rss_writer *w);
/* Flush and close; 0 or -errno. */
int atr_rss_writer_close(struct atr_rss_writer *w);

/* ---- reader ---- */
/* Read a whole file; 0, or -1 with errbuf set.  Free with atr_rss_free. */
int atr_rss_read(const char *path, struct atr_rss *out, char *errbuf, size_t errlen);
void atr_rss_free(struct atr_rss *r);
/* DIR/<pid>.rss next to a trace file path (whatever its exec number). */
int atr_rss_path_for_trace(const char *trace_path, uint32_t pid, char *out, size_t len);
/* The program's highest RSS in record's samples of its process. */
struct atr_rss_peak {
	uint64_t program; /* the highest atr_rss_program, bytes */
	uint64_t tracer;  /* the recorder's own in that sample */
	size_t samples;	  /* in the image's time */
	int self_known;	  /* some sample says the recorder's own (a recorder
			     that measured it) */
};
/* Of the samples taken from from_ns to to_ns (CLOCK_MONOTONIC, both
 * included; self_known of them all). */
void atr_rss_peak_in(const struct atr_rss *r, uint64_t from_ns, uint64_t to_ns,
		     struct atr_rss_peak *p);
typedef struct atr_file atr_file;
/* Of the samples taken while the trace's image ran (an image that exec'd,
 * or was killed, has no end stamp: its last record's, and one interval
 * more, but not past the start of the pid's next image; f walked then:
 * info.last_ts).  1 and *p, or 0: no samples (record --no-rss, a collector's trace, an
 * image with none in its time) or an unreadable file. */
int atr_rss_peak_of(const atr_file *f, struct atr_rss_peak *p);

#endif
