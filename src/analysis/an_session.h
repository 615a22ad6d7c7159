/* an_session.h - one process's analysis, what report, flamegraph, export
 * and the output writers (src/output/) share: the an_report pass,
 * optionally with its timeline, symbolized frames, RSS samples, interned
 * strings, and the JSON fields report --json and the HTML page share. */
#ifndef AN_SESSION_H
#define AN_SESSION_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/an_report.h"
#include "analysis/an_symbols.h"
#include "analysis/an_timeline.h"
#include "atr_reader.h"
#include "atr_rss.h"

struct rep_ctx {
	atr_file *f;
	struct an_symbols *sym;
	struct an_report r;
	struct an_timeline tl;
	int have_tl;
	struct atr_rss rss; /* DIR/<pid>.rss when present (have_rss) */
	int have_rss;
};

/* Open path and run the pass (with a timeline of at most tl_buckets
 * buckets when tl_buckets > 0, and the RSS samples next to the trace).
 * 0, or 1 with the error shown (c is then closed). */
int rep_open(const char *path, struct rep_ctx *c, uint32_t tl_buckets);
void rep_close(struct rep_ctx *c);

/* Call fn for every frame of stack, outermost first (inlined frames as
 * frames of their own, outside before inside); returns the frame count. */
typedef void (*rep_frame_fn)(void *arg, const struct an_frame *fr);
unsigned rep_frames_outer_first(struct rep_ctx *c, uint32_t stack, rep_frame_fn fn, void *arg);

/* Interned strings: index of s (added if new), -1 on out of memory. */
struct rep_strtab {
	char **s;
	size_t n, cap;
	uint32_t *slots; /* open addressing: index + 1, 0 = empty */
	size_t nslots;
};
long rep_str_intern(struct rep_strtab *t, const char *s);
void rep_str_free(struct rep_strtab *t);

/* Trace-relative nanoseconds of an RSS sample (may be negative: before the
 * trace began). */
static inline int64_t rep_rss_ns(const struct rep_ctx *c, size_t i)
{
	return (int64_t)(c->rss.s[i].mono_ns - atr_get_info(c->f)->start_mono_ns);
}

/* The JSON keys report --json and the HTML page share, in this order:
 * path, pid, exe, cmdline, stacks_recorded, timing_recorded ... */
struct json_writer;
void rep_json_ident(struct json_writer *w, struct rep_ctx *c);
/* ... and threads, calls{ten}, total_calls, bytes_requested,
 * failed_allocations, unknown_frees, peak_live_bytes. */
void rep_json_counts(struct json_writer *w, struct rep_ctx *c);

#endif
