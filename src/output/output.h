/* output.h - the writers of every output format, one file each in
 * src/output/ (docs/EXPORT.md, docs/REPORT.md).  They read an analysis
 * session (analysis/an_session.h) and write to out.  Errors as every
 * library's (atr_err.h): 0, or a negative atr_err whose atr_errstr() is the
 * whole story (ATR_E_NOMEM, ATR_E_WRITE: out's error flag is set) unless an
 * errbuf is taken; they print nothing, the command says which command and
 * which file. */
#ifndef OUTPUT_H
#define OUTPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/an_session.h"
#include "awl_workload.h"

/* out_folded.c: folded stacks "exe;outer;...;inner VALUE" of every stack
 * with value > 0.  0 or ATR_E_NOMEM (stdio errors show at fclose). */
int out_print_folded(FILE *out, struct an_session *c, enum an_by by);
/* export --group function|caller|module: one line per allocating function
 * "exe;function VALUE" (its self totals), per caller and function
 * "exe;caller;function VALUE", or per module "exe;module VALUE", as
 * report --group totals them.  0 or ATR_E_NOMEM. */
int out_print_folded_group(FILE *out, struct an_session *c, enum an_by by, enum an_group_kind kind);
/* The stacks of out_print_folded handed to fn as key "exe;outer;...;inner"
 * and value, heaviest first (flamegraph --svg).  fn returns 0, or a
 * negative atr_err that stops the walk and is returned; else 0 or
 * ATR_E_NOMEM. */
typedef int (*out_fold_fn)(void *arg, const char *key, uint64_t value);
int out_fold_stacks(struct an_session *c, enum an_by by, out_fold_fn fn, void *arg);

/* out_report.c: report's text (to stdout; first: the first process shown)
 * and its JSON object for one process (docs/REPORT.md).  The text: 0, or
 * ATR_E_NOMEM when a part was left out (the rest is printed). */
struct json_writer;
int out_print_report_text(struct an_session *c, enum an_by by, size_t top, int first);
void out_print_report_json(struct json_writer *w, struct an_session *c, enum an_by by, size_t top);

/* out_html.c: report --html, one self-contained page for n processes:
 * 0, ATR_E_NOMEM or ATR_E_WRITE. */
int out_html_write(FILE *out, struct an_session *cs, size_t n, size_t top);

/* out_perfetto.c: Chrome JSON trace events for n processes: 0 or
 * ATR_E_WRITE. */
int out_perfetto_write(FILE *out, struct an_session *cs, size_t n);
/* out_pprof.c: profile.proto, gzipped when built with zlib: 0,
 * ATR_E_NOMEM or ATR_E_WRITE. */
int out_pprof_write(FILE *out, struct an_session *c);
/* out_massif.c: valgrind massif's text format: 0 or ATR_E_WRITE. */
int out_massif_write(FILE *out, struct an_session *c);

/* out_dj.c: glibc dj/malloc files (docs/DJ_COMPAT.md): a trace for dj's
 * trace2wl (one process, in the reader's global order), a workload for
 * dj's trace_run (from an alloctrace workload; syncs at its WAITs).  0 with
 * what was written in *st (the command's summary line), or a negative
 * atr_err with the message in errbuf. */
struct out_dj_trace_stats {
	uint64_t records, hints; /* ownership hints for dj's trace2wl */
};
int out_dj_trace_write(FILE *out, atr_file *f, struct out_dj_trace_stats *st, char *errbuf,
		       size_t errlen);
struct dj_wl_stats;
int out_dj_wl_write(FILE *out, awl_file *wl, struct dj_wl_stats *st, char *errbuf, size_t errlen);

#endif
