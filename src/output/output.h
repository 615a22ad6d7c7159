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
void rep_print_folded(FILE *out, struct rep_ctx *c, enum an_by by);
/* The same stacks handed to fn as key "exe;outer;...;inner" and value,
 * heaviest first (flamegraph --svg).  0, or -1 (out of memory, or fn
 * returned non-zero). */
/* export --group function|caller|module: one line per allocating function
 * "exe;function VALUE" (its self totals), per caller and function
 * "exe;caller;function VALUE", or per module "exe;module VALUE", as
 * report --group totals them. */
int rep_print_folded_group(FILE *out, struct rep_ctx *c, enum an_by by, enum an_group_kind kind);
typedef int (*rep_fold_fn)(void *arg, const char *key, uint64_t value);
int rep_fold_stacks(struct rep_ctx *c, enum an_by by, rep_fold_fn fn, void *arg);

/* out_report.c: report's text (to stdout; first: the first process shown)
 * and its JSON object for one process (docs/REPORT.md). */
struct json_writer;
void rep_print_report_text(struct rep_ctx *c, enum an_by by, size_t top, int first);
void rep_print_report_json(struct json_writer *w, struct rep_ctx *c, enum an_by by, size_t top);

/* out_html.c: report --html, one self-contained page for n processes. */
int rep_write_html(FILE *out, struct rep_ctx *cs, size_t n, size_t top);

/* out_perfetto.c: Chrome JSON trace events for n processes. */
int rep_write_perfetto(FILE *out, struct rep_ctx *cs, size_t n);
/* out_pprof.c: profile.proto, gzipped when built with zlib. */
int rep_write_pprof(FILE *out, struct rep_ctx *c);
/* out_massif.c: valgrind massif's text format. */
int rep_write_massif(FILE *out, struct rep_ctx *c);

/* out_dj.c: glibc dj/malloc files (docs/DJ_COMPAT.md): a trace for dj's
 * trace2wl (one process, in the reader's global order), a workload for
 * dj's trace_run (from an alloctrace workload; syncs at its WAITs).  A
 * summary line on stderr. */
int rep_write_dj_trace(FILE *out, atr_file *f);
int rep_write_dj_wl(FILE *out, awl_file *wl);

#endif
