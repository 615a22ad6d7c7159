/* output.h - the writers of every output format, one file each in
 * src/output/ (docs/EXPORT.md, docs/REPORT.md).  They read an analysis
 * session (analysis/an_session.h) and write to out; 0 or -1 (message
 * shown) unless said otherwise. */
#ifndef OUTPUT_H
#define OUTPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/an_session.h"
#include "awl_workload.h"

/* out_folded.c: folded stacks "exe;outer;...;inner VALUE" of every stack
 * with value > 0 (no error return: stdio errors show at fclose). */
void out_print_folded(FILE *out, struct an_session *c, enum an_by by);
/* The same stacks handed to fn as key "exe;outer;...;inner" and value,
 * heaviest first (flamegraph --svg).  0, or -1 (out of memory, or fn
 * returned non-zero). */
/* export --group function|caller|module: one line per allocating function
 * "exe;function VALUE" (its self totals), per caller and function
 * "exe;caller;function VALUE", or per module "exe;module VALUE", as
 * report --group totals them. */
int out_print_folded_group(FILE *out, struct an_session *c, enum an_by by, enum an_group_kind kind);
typedef int (*out_fold_fn)(void *arg, const char *key, uint64_t value);
int out_fold_stacks(struct an_session *c, enum an_by by, out_fold_fn fn, void *arg);

/* out_report.c: report's text (to stdout; first: the first process shown)
 * and its JSON object for one process (docs/REPORT.md). */
struct json_writer;
void out_print_report_text(struct an_session *c, enum an_by by, size_t top, int first);
void out_print_report_json(struct json_writer *w, struct an_session *c, enum an_by by, size_t top);

/* out_html.c: report --html, one self-contained page for n processes. */
int out_html_write(FILE *out, struct an_session *cs, size_t n, size_t top);

/* out_perfetto.c: Chrome JSON trace events for n processes. */
int out_perfetto_write(FILE *out, struct an_session *cs, size_t n);
/* out_pprof.c: profile.proto, gzipped when built with zlib. */
int out_pprof_write(FILE *out, struct an_session *c);
/* out_massif.c: valgrind massif's text format. */
int out_massif_write(FILE *out, struct an_session *c);

/* out_dj.c: glibc dj/malloc files (docs/DJ_COMPAT.md): a trace for dj's
 * trace2wl (one process, in the reader's global order), a workload for
 * dj's trace_run (from an alloctrace workload; syncs at its WAITs).  A
 * summary line on stderr. */
int out_dj_trace_write(FILE *out, atr_file *f);
int out_dj_wl_write(FILE *out, awl_file *wl);

#endif
