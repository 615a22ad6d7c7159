/* an_session.h - one process's analysis, what report, flamegraph, export
 * and the output writers (src/output/) share: the an_report pass,
 * optionally with its timeline, symbolized frames, RSS samples, interned
 * strings, and the JSON fields report --json and the HTML page share. */
#ifndef AN_SESSION_H
#define AN_SESSION_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <regex.h>

#include "analysis/an_group.h"
#include "analysis/an_report.h"
#include "analysis/an_symbols.h"
#include "analysis/an_timeline.h"
#include "atr_reader.h"
#include "atr_rss.h"
#include "util_hmap.h"
#include "util_strtab.h"

/* The options every analysis command shares (docs/CLI.md, "Filters"). */
struct an_session_opts {
	enum an_names names;	  /* --names demangled|raw|short */
	enum an_group_kind group; /* --group (report) */
	long pid;		  /* --pid, -1 = every process */
	struct an_filter flt;	  /* --thread --from --to (+ stack_ok below) */
	uint32_t threads[64];
	const char *module; /* --module NAME: a frame in that module */
	regex_t fre;	    /* --function REGEX (POSIX extended) */
	int have_fre;
	char **supp; /* --suppress FILE: leak patterns */
	size_t nsupp;
	int any_filter;
};

#define REP_OPT_BASE 1000
/* Entries for a getopt_long table; handled by an_session_opt(). */
/* Entries for a getopt_long table; handled by an_session_opt().  REP_FILTER_OPTIONS
 * for every analysis command, REP_OPTIONS (adds --group) for report. */
#define REP_FILTER_OPTIONS                                                                         \
	{"names", required_argument, NULL, REP_OPT_BASE + 0},                                      \
	    {"pid", required_argument, NULL, REP_OPT_BASE + 1},                                    \
	    {"thread", required_argument, NULL, REP_OPT_BASE + 2},                                 \
	    {"from", required_argument, NULL, REP_OPT_BASE + 3},                                   \
	    {"to", required_argument, NULL, REP_OPT_BASE + 4},                                     \
	    {"module", required_argument, NULL, REP_OPT_BASE + 5},                                 \
	    {"function", required_argument, NULL, REP_OPT_BASE + 6},                               \
	{                                                                                          \
		"suppress", required_argument, NULL, REP_OPT_BASE + 7                              \
	}
#define REP_OPTIONS                                                                                \
	REP_FILTER_OPTIONS,                                                                        \
	{                                                                                          \
		"group", required_argument, NULL, REP_OPT_BASE + 8                                 \
	}
/* The usage lines of REP_OPTIONS. */
extern const char an_session_opts_usage[];

void an_session_opts_init(struct an_session_opts *o);
void an_session_opts_free(struct an_session_opts *o);
/* Option c of getopt_long: 1 taken, 0 not one of REP_OPTIONS, or a
 * negative atr_err (ATR_E_USAGE: a bad value; ATR_E_IO: an unreadable
 * --suppress file) with the message in errbuf. */
int an_session_opt(struct an_session_opts *o, int c, const char *arg, char *errbuf, size_t errlen);

/* Every trace file of the arguments, --pid applied, the busiest (most
 * records) first.  0, or a negative atr_err: the first argument that
 * failed (its message went to bad(arg, msg); the others are still listed),
 * ATR_E_NOMEM, or ATR_E_NOTFOUND (no trace of process o->pid).  Free with
 * atr_list_free. */
typedef void (*an_session_msg_fn)(void *arg, const char *msg);
int an_session_list(int argc, char **argv, const struct an_session_opts *o, char ***paths,
		    size_t *n, an_session_msg_fn bad, void *arg);

#define AN_SESSION_MAXWARN 4

struct an_session {
	atr_file *f;
	const struct an_session_opts *o;  /* NULL: defaults */
	uint64_t supp_bytes, supp_blocks; /* leaks --suppress hid */
	struct an_symbols *sym;
	struct an_report r;
	struct an_timeline tl;
	int have_tl;
	struct atr_rss rss; /* DIR/<pid>.rss when present (have_rss) */
	int have_rss;
	/* what the command should warn about: a --from/--to marker that is
	 * not in the trace, RSS samples that could not be read */
	char warn[AN_SESSION_MAXWARN][640];
	unsigned nwarn;
};

/* Open path and run the pass (with a timeline of at most tl_buckets
 * buckets when tl_buckets > 0, and the RSS samples next to the trace),
 * with options o (names, filters, suppressions; NULL: defaults; o stays
 * alive).  0 (warnings in c->warn), or a negative atr_err with the message
 * (naming path) in errbuf; c is then closed. */
int an_session_open(const char *path, struct an_session *c, uint32_t tl_buckets,
		    const struct an_session_opts *o, char *errbuf, size_t errlen);
void an_session_close(struct an_session *c);

/* --module/--function outside a report pass (convert): 1 if stack
 * (canonical) of f has the frames o selects.  The symbols of every file
 * asked about are kept in k until an_session_stack_cache_free(). */
struct an_session_stack_cache {
	const struct an_session_opts *o;
	struct an_session *ctx; /* one per file: f, sym */
	struct util_hmap *memo; /* per file: stack -> selected + 1 */
	size_t n;
};
int an_session_stack_selected(struct an_session_stack_cache *k, atr_file *f, uint32_t stack);
void an_session_stack_cache_free(struct an_session_stack_cache *k);

/* Call fn for every frame of stack, outermost first (inlined frames as
 * frames of their own, outside before inside); returns the frame count. */
typedef void (*an_session_frame_fn)(void *arg, const struct an_frame *fr);
unsigned an_session_frames_outer_first(struct an_session *c, uint32_t stack, an_session_frame_fn fn,
				       void *arg);

/* Trace-relative nanoseconds of an RSS sample (may be negative: before the
 * trace began). */
static inline int64_t an_session_rss_ns(const struct an_session *c, size_t i)
{
	return (int64_t)(c->rss.s[i].mono_ns - atr_get_info(c->f)->start_mono_ns);
}

/* Where the RSS went, at the sample of the highest RSS (needs the
 * timeline and the RSS samples): rss = heap + mapped + rest, heap the
 * requested bytes live then, mapped the program's own mappings then
 * (an_maps), rest what neither explains: the allocator's overhead (chunk
 * headers, free space it keeps, its metadata) plus code, stacks and
 * whatever else the process maps outside the traced calls.  rest may be
 * negative: mapped is address space, not resident pages.  0 when
 * computed, -1 when the trace has no RSS samples or no timeline. */
struct an_session_account {
	uint64_t t_ns; /* the sample's time since the trace began */
	uint64_t rss, heap, mapped;
	uint64_t tracer; /* the recorder's own memory in rss (0: not measured) */
	int64_t rest;
};
int an_session_rss_account(const struct an_session *c, struct an_session_account *a);

/* The JSON keys report --json and the HTML page share, in this order:
 * path, pid, exe, cmdline, stacks_recorded, timing_recorded ... */
struct json_writer;
void an_session_json_ident(struct json_writer *w, struct an_session *c);
/* ... and threads, calls{ten}, total_calls, bytes_requested,
 * failed_allocations, unknown_frees, peak_live_bytes. */
void an_session_json_counts(struct json_writer *w, struct an_session *c);

#endif
