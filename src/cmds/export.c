/* export.c - `alloctrace export TRACE --format folded|perfetto|pprof|massif|dj-wl|dj-trace`.
 *
 *   folded    flamegraph.pl / speedscope input (the flamegraph command's
 *             writer)
 *   perfetto  Chrome trace-event JSON (ui.perfetto.dev, chrome://tracing):
 *             counter tracks for the live heap, calls/s per thread and RSS,
 *             instant events for markers and control calls
 *   pprof     profile.proto, gzip'd: alloc_objects/alloc_space/
 *             inuse_objects/inuse_space per call stack (`pprof -http`)
 *   massif    valgrind massif's out format (ms_print, massif-visualizer):
 *             heap over time, the peak's and the end's allocation trees
 *   dj-wl     glibc dj/malloc workload for dj's trace_run (docs/DJ_COMPAT.md)
 *   dj-trace  glibc dj/malloc trace for dj's trace2wl
 * docs/EXPORT.md says what each holds and how it was checked.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "awl_workload.h"
#include "dj_workload.h"
#include "cmds/cmds.h"
#include "output/output.h"
#include "replay/rp_convert.h"
#include "util_msg.h"

#define EXPORT_BUCKETS 4000u /* perfetto / massif time resolution */

static void export_usage(FILE *out)
{
	fprintf(out,
		"usage: alloctrace export --format FORMAT [-o FILE] [--by KEY] [--pid PID]\n"
		"                         FILE_OR_DIR...\n"
		"Write a trace in another tool's format (docs/EXPORT.md):\n"
		"  folded    folded stacks for flamegraph.pl / speedscope (--by: calls,\n"
		"            bytes (default), peak, leaked, temporary); every process\n"
		"  perfetto  Chrome trace-event JSON for ui.perfetto.dev: live heap,\n"
		"            calls/s per thread and RSS counters, markers; every process\n"
		"  pprof     gzip'd profile.proto for `pprof`: alloc_objects, alloc_space,\n"
		"            inuse_objects, inuse_space (inuse = live at exit) per stack\n"
		"  massif    valgrind massif output for ms_print / massif-visualizer:\n"
		"            heap over time, detailed trees at the peak and at exit\n"
		"  dj-wl     a glibc dj/malloc workload for dj's trace_run (also from an\n"
		"            alloctrace workload); syncs where alloctrace's converter waits\n"
		"  dj-trace  a glibc dj/malloc trace for dj's trace2wl (docs/DJ_COMPAT.md);\n"
		"            dj-wl and dj-trace take the first process unless --pid\n"
		"Processes come the busiest first; pprof and massif hold one: the\n"
		"busiest unless --pid PID names another.\n"
		"  -o, --output FILE  output file (default: standard output)\n"
		"  --group stack|function|caller|module  folded only: one line per\n"
		"             allocating function, caller;function or module, with\n"
		"             report --group's self totals (default: per stack)\n"
		"%s",
		an_session_opts_usage);
}

/* ---- dj/malloc ---------------------------------------------------------------- */

static int is_awl(const char *path)
{
	char m[8];
	FILE *f = fopen(path, "rb");
	if (!f)
		return 0;
	int ok = fread(m, 1, 8, f) == 8 && !memcmp(m, AWL_MAGIC, 8);
	fclose(f);
	return ok;
}

/* dj-wl: the calls as alloctrace's converter places them (a trace is
 * converted first, into a temporary file), its WAITs as dj syncs. */
static int export_dj_wl(FILE *out, const char *in, long pid)
{
	char eb[1024], tmp[4096] = "";
	const char *wl = in;
	if (!is_awl(in)) {
		const char *td = getenv("TMPDIR");
		snprintf(tmp, sizeof(tmp), "%s/alloctrace-djexp.XXXXXX", td && *td ? td : "/tmp");
		int fd = mkstemp(tmp);
		if (fd < 0) {
			util_err("export: cannot create a temporary file in %s",
				 td && *td ? td : "/tmp");
			return 1;
		}
		close(fd);
		struct rp_convert_opts o = {.pid = pid > 0 ? (uint32_t)pid : 0, .quiet = 1};
		struct rp_convert_stats cs;
		if (rp_convert(in, tmp, &o, &cs, eb, sizeof(eb)) < 0) {
			util_err("export: %s", eb);
			unlink(tmp);
			return 1;
		}
		if (cs.anomalies)
			util_warn("export: %" PRIu64
				  " trace anomalies skipped (alloctrace convert lists them)",
				  cs.anomalies);
		wl = tmp;
	}
	awl_file *f;
	int rc = 1;
	struct dj_wl_stats st;
	if (awl_open(wl, &f, eb, sizeof(eb)) < 0) {
		util_err("export: %s", eb);
	} else if (out_dj_wl_write(out, f, &st, eb, sizeof(eb)) < 0) {
		util_err("export: %s", eb);
		awl_close(f);
	} else {
		fprintf(stderr,
			"export: dj workload: %" PRIu32 " threads, %" PRIu64 " calls, %" PRIu64
			" syncs (alloctrace's waits), %" PRIu64 " pointer slots",
			st.threads, st.calls[0], st.syncs_w, st.n_ptrs);
		if (st.dropped || st.sinks)
			fprintf(stderr,
				"; %" PRIu64 " drops not written, %" PRIu64
				" failed calls into scratch slots",
				st.dropped, st.sinks);
		fprintf(stderr, "\n");
		awl_close(f);
		rc = 0;
	}
	if (tmp[0])
		unlink(tmp);
	return rc;
}

/* dj-trace: one process (--pid, else the first) record by record. */
static int export_dj_trace(FILE *out, const char *in, long pid)
{
	char eb[1024];
	char **paths;
	size_t n;
	if (atr_list(in, &paths, &n, eb, sizeof(eb)) < 0) {
		util_err("export: %s", eb);
		return 1;
	}
	atr_file *f = NULL;
	for (size_t i = 0; i < n && !f; i++) {
		if (atr_open(paths[i], &f, eb, sizeof(eb)) < 0) {
			util_err("export: %s", eb);
			f = NULL;
			continue;
		}
		if (pid >= 0 && atr_get_info(f)->pid != (uint32_t)pid) {
			atr_close(f);
			f = NULL;
		}
	}
	atr_list_free(paths, n);
	if (!f) {
		if (pid >= 0)
			util_err("export: no trace of pid %ld", pid);
		return 1;
	}
	if (n > 1 && pid < 0)
		util_warn("export: %zu processes; writing the first, pid %u (--pid chooses)", n,
			  atr_get_info(f)->pid);
	if (atr_sample_rate(f)) {
		/* a dj trace is replayed call by call: a sample cannot be */
		util_err("export: %s is a sampled trace (record --sample %" PRIu64
			 "): dj-trace needs every call; record without --sample",
			 atr_get_info(f)->path, atr_sample_rate(f));
		atr_close(f);
		return 1;
	}
	struct out_dj_trace_stats st;
	int rc = 0;
	if (out_dj_trace_write(out, f, &st, eb, sizeof(eb)) < 0) {
		util_err("export: %s", eb);
		rc = 1;
	} else {
		fprintf(stderr,
			"export: dj trace: %" PRIu64 " records of %" PRIu32 " threads (pid %" PRIu32
			"), %" PRIu64 " ownership hints for dj's trace2wl\n",
			st.records, atr_get_info(f)->threads, atr_get_info(f)->pid, st.hints);
	}
	atr_close(f);
	return rc;
}

static int export_dj(const char *format, const char *in, const char *outpath, long pid)
{
	FILE *out = outpath ? fopen(outpath, "wb") : stdout;
	if (!out) {
		util_err("export: %s: %s", outpath, strerror(errno));
		return 1;
	}
	/* a half-written file goes on failure; a device (/dev/full) stays */
	struct stat ost;
	int regular = outpath && fstat(fileno(out), &ost) == 0 && S_ISREG(ost.st_mode);
	int rc =
	    !strcmp(format, "dj-wl") ? export_dj_wl(out, in, pid) : export_dj_trace(out, in, pid);
	if (fflush(out) != 0 || ferror(out)) {
		util_err("export: write error on %s", outpath ? outpath : "standard output");
		rc = 1;
	}
	if (out != stdout && fclose(out) != 0) {
		util_err("export: %s: %s", outpath, strerror(errno));
		rc = 1;
	}
	if (rc && regular)
		unlink(outpath);
	return rc;
}

/* ---- command ------------------------------------------------------------------ */

static int export_opts(int argc, char **argv, const struct option *opts,
		       struct an_session_opts *ro);

int cmd_export(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"format", required_argument, NULL, 'f'},
	    {"output", required_argument, NULL, 'o'},
	    {"by", required_argument, NULL, 'b'},
	    {"help", no_argument, NULL, 'h'},
	    REP_OPTIONS,
	    {NULL, 0, NULL, 0},
	};
	struct an_session_opts ro;
	an_session_opts_init(&ro);
	int rc = export_opts(argc, argv, opts, &ro);
	an_session_opts_free(&ro);
	return rc;
}

static int export_opts(int argc, char **argv, const struct option *opts, struct an_session_opts *ro)
{
	const char *format = NULL, *outpath = NULL;
	enum an_by by = AN_BY_BYTES;
	int c;
	optind = 1;
	while ((c = cmdu_getopt(argc, argv, "f:o:b:p:h", opts, NULL)) != -1) {
		int k = cmdu_session_opt(ro, c == 'p' ? REP_OPT_BASE + 1 : c, optarg, "export");
		if (k < 0)
			return 2;
		if (k > 0)
			continue;
		switch (c) {
		case 'f':
			format = optarg;
			break;
		case 'o':
			outpath = optarg;
			break;
		case 'b': {
			int b = cmdu_parse_by(optarg, "export");
			if (b < 0)
				return 2;
			by = (enum an_by)b;
			break;
		}
		case 'h':
			export_usage(stdout);
			return 0;
		default:
			export_usage(stderr);
			return 2;
		}
	}
	enum { F_FOLDED, F_PERFETTO, F_PPROF, F_MASSIF } fmt;
	if (format && (!strcmp(format, "dj-wl") || !strcmp(format, "dj-trace"))) {
		if (optind + 1 != argc) {
			util_err("export: --format %s takes one trace (or workload)", format);
			return 2;
		}
		return export_dj(format, argv[optind], outpath, ro->pid);
	}
	if (!format) {
		util_err("export: --format is required (folded, perfetto, pprof, massif)");
		return 2;
	}
	if (!strcmp(format, "folded"))
		fmt = F_FOLDED;
	else if (!strcmp(format, "perfetto") || !strcmp(format, "chrome"))
		fmt = F_PERFETTO;
	else if (!strcmp(format, "pprof"))
		fmt = F_PPROF;
	else if (!strcmp(format, "massif"))
		fmt = F_MASSIF;
	else {
		util_err("export: unknown --format '%s' (folded, perfetto, pprof, massif)", format);
		return 2;
	}
	if (ro->group != AN_GROUP_STACK && fmt != F_FOLDED) {
		util_err("export: --group applies to --format folded; %s",
			 fmt == F_PPROF ? "pprof groups by function itself (pprof -top, -peek)"
					: "perfetto and massif show memory over time, not totals");
		return 2;
	}
	if (optind >= argc) {
		util_err("export: no trace file or directory given");
		export_usage(stderr);
		return 2;
	}
	/* the trace files, the busiest first */
	char **all = NULL;
	size_t nall = 0;
	int rc = cmdu_session_list(argc - optind, argv + optind, ro, "export", &all, &nall);
	FILE *out = stdout;
	if (!rc && nall && outpath && !(out = fopen(outpath, "wb"))) {
		util_err("export: %s: %s", outpath, strerror(errno));
		rc = 1;
	}
	uint32_t tlb = fmt == F_FOLDED ? 0 : EXPORT_BUCKETS;
	if (rc || !nall) {
		if (!nall && !rc)
			util_err("export: no trace found");
		rc = 1;
	} else if (fmt == F_FOLDED) {
		for (size_t i = 0; i < nall; i++) {
			struct an_session cx;
			if (!all[i] || cmdu_session_open(all[i], &cx, 0, ro)) {
				rc = 1;
				continue;
			}
			int r = ro->group == AN_GROUP_STACK
				    ? out_print_folded(out, &cx, by)
				    : out_print_folded_group(out, &cx, by, ro->group);
			if (r < 0) {
				util_err("export: %s: %s", all[i], atr_errstr(r));
				rc = 1;
			}
			an_session_close(&cx);
		}
	} else if (fmt == F_PERFETTO) {
		struct an_session *cs = calloc(nall, sizeof(*cs));
		size_t n = 0;
		for (size_t i = 0; cs && i < nall; i++) {
			if (!all[i] || cmdu_session_open(all[i], &cs[n], tlb, ro))
				rc = 1;
			else
				n++;
		}
		if (!cs) {
			util_err("export: out of memory");
			rc = 1;
		} else if (n && out_perfetto_write(out, cs, n) < 0) {
			rc = 1; /* the write error is named below */
		}
		for (size_t i = 0; i < n; i++)
			an_session_close(&cs[i]);
		free(cs);
	} else {
		/* one process: --pid's (an_session_list kept only it), else the busiest */
		struct an_session cx;
		int found = 0;
		for (size_t i = 0; i < nall && !found; i++) {
			if (!all[i] || cmdu_session_open(all[i], &cx, tlb, ro)) {
				rc = 1;
				continue;
			}
			found = 1;
			if (nall > 1)
				util_warn(
				    "export: %zu processes; writing the busiest, pid %u (--pid "
				    "chooses)",
				    nall, atr_get_info(cx.f)->pid);
			int r =
			    fmt == F_PPROF ? out_pprof_write(out, &cx) : out_massif_write(out, &cx);
			/* a write error on out is named below */
			if (r < 0 && (r != ATR_E_WRITE || !ferror(out)))
				util_err("export: %s: %s", all[i], atr_errstr(r));
			rc |= r < 0;
			an_session_close(&cx);
		}
		if (!found)
			rc = 1;
	}
	if (out && (fflush(out) != 0 || ferror(out))) {
		util_err("export: write error on %s", outpath ? outpath : "standard output");
		rc = 1;
	}
	if (out && out != stdout && fclose(out) != 0) {
		util_err("export: %s: %s", outpath, strerror(errno));
		rc = 1;
	}
	atr_list_free(all, nall);
	return rc;
}
