/* convert.c - `alloctrace convert TRACE -o WORKLOAD` and the seed's
 * `trace2wl OUT [IN]`. */
#define _GNU_SOURCE
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/an_session.h"
#include "cmds/cmds.h"
#include "replay/rp_convert.h"
#include "util_fmt.h"
#include "util_msg.h"

static void convert_usage(FILE *out)
{
	fprintf(
	    out,
	    "usage: alloctrace convert TRACE -o WORKLOAD [--pid PID | --merge] [filters]\n"
	    "                          [--think-floor NS] [--no-joins] [--no-share] [--no-cpu]\n"
	    "                          [--no-handoffs] [--no-sampled] [--no-reorder]\n"
	    "                          [--threads N] [--quiet] [--no-progress]\n"
	    "Turn a trace (a directory from `record -o`, one .atr file, or a glibc dj/malloc\n"
	    "trace, docs/DJ_COMPAT.md) into a workload\n"
	    "for `alloctrace replay` (format: docs/WORKLOAD_FORMAT.md).  One process per\n"
	    "workload: the busiest (most records) unless --pid picks another, or all of\n"
	    "them with --merge.\n"
	    "  -o, --output FILE  workload to write\n"
	    "  -p, --pid PID      the traced process to convert\n"
	    "      --merge        every process in one workload (threads renumbered)\n"
	    "      --think-floor NS  the recorder's own share of each gap between two calls\n"
	    "                     of a thread, not counted as think time (default %u)\n"
	    "      --no-joins     keep every gap as think time (default: a gap of 500 us\n"
	    "                     or more ending soon after another thread's exit is a\n"
	    "                     wait for that exit)\n"
	    "      --no-handoffs  keep those gaps as think time (default: a long gap in\n"
	    "                     which the thread was mostly off its CPU, with no more\n"
	    "                     threads busy than CPUs, ending within 1 ms after another\n"
	    "                     thread's call, is a wait for that thread: a lock or the\n"
	    "                     GIL handed over)\n"
	    "      --no-share     keep long gaps whole (default: a gap of 100 us or more\n"
	    "                     while more threads made calls than the traced process\n"
	    "                     had CPUs counts only CPUs / threads of it as think time)\n"
	    "      --no-cpu       ignore the threads' CPU times in the trace (default: of a\n"
	    "                     long gap in which the thread did not block, or more\n"
	    "                     threads made calls than the traced process had CPUs,\n"
	    "                     only the time it was on its CPU is think time)\n"
	    "      --no-sampled   ignore the trace's sampled durations (default: an\n"
	    "                     untimed call is taken to last as long as its type\n"
	    "                     typically does in its thread, and that is not think\n"
	    "                     time)\n"
	    "      --no-reorder   a free of a block that is not live is an anomaly at once\n"
	    "                     (default: one stamped up to 2 us ahead of another\n"
	    "                     thread's allocation of the block, which the unfenced\n"
	    "                     clock read allows, comes after that allocation)\n"
	    "      --threads N    2: read the trace on a second thread while this one\n"
	    "                     converts (the default where two cores are usable);\n"
	    "                     1: both on one thread (the workload is the same byte\n"
	    "                     for byte)\n"
	    "  -q, --quiet        neither anomaly reports nor the summary: only errors\n"
	    "                     and warnings\n"
	    "      --no-progress  no progress line even on a terminal\n"
	    "Filters select allocations as report's do; a block left out is left out\n"
	    "with every later op on it (its realloc elsewhere, its free), so the workload\n"
	    "has no unknown frees (docs/CLI.md, \"convert\"):\n"
	    "  --thread T         allocations of that thread: tid, or T<serial> (repeatable)\n"
	    "  --from X, --to X   allocations from X; the workload ends at X (seconds\n"
	    "                     since the trace began, or a marker's label)\n"
	    "  --module M         allocations with a frame in module M\n"
	    "  --function REGEX   allocations with a frame whose function matches\n"
	    "  --suppress FILE    refused: a workload replays every selected block as it\n"
	    "                     lived (suppressions only hide leaks in reports)\n",
	    RP_THINK_FLOOR_NS);
}

/* rp_convert_opts.keep: report's selection of allocations (--thread,
 * --module, --function); free(NULL) has no stack. */
static int keep_call(void *arg, atr_file *f, const struct atr_event *ev)
{
	struct an_session_stack_cache *k = arg;
	const struct an_session_opts *ro = k->o;
	if (!an_filter_thread_kept(&ro->flt, ev))
		return 0;
	if (!ro->module && !ro->have_fre)
		return 1;
	if (ev->type == ATR_T_FREE)
		return 0;
	return an_session_stack_selected(k, f,
					 ev->stack_id ? atr_stack_canonical(f, ev->stack_id) : 0);
}

/* convert's anomaly lines and progress line */
static void conv_note(void *arg, int kind, const char *msg)
{
	(void)arg;
	if (kind == RP_NOTE_ANOMALY)
		util_warn("%s", msg);
	else if (*msg)
		fprintf(stderr, "\r%s   ", msg);
	else
		fprintf(stderr, "\r%60s\r", "");
}

/* opt: the command's settings; ro: the filters (NULL: none) */
static int do_convert(const char *in, const char *out, const struct rp_convert_opts *opt,
		      const struct an_session_opts *ro)
{
	struct rp_convert_opts o = *opt;
	o.note = conv_note;
	struct an_session_stack_cache sc = {.o = ro};
	if (ro) {
		o.have_from = ro->flt.have_from;
		o.from_s = ro->flt.from_s;
		o.from_label = ro->flt.from_label;
		o.have_to = ro->flt.have_to;
		o.to_s = ro->flt.to_s;
		o.to_label = ro->flt.to_label;
		o.keep_stacks = ro->module || ro->have_fre;
		if (ro->flt.nthreads || o.keep_stacks) {
			o.keep = keep_call;
			o.keep_arg = &sc;
		}
	}
	struct rp_convert_stats st;
	char eb[1024];
	int rc = rp_convert(in, out, &o, &st, eb, sizeof(eb));
	an_session_stack_cache_free(&sc);
	if (rc) {
		util_err("convert: %s", eb);
		return 1;
	}
	if (st.no_stacks)
		util_warn("convert: %s recorded without stacks (record --stacks): --module and "
			  "--function keep none of %s allocations",
			  st.no_stacks > 1 ? "processes were" : "the process was",
			  st.no_stacks > 1 ? "their" : "its");
	if (o.have_from && o.from_label && !st.window_open)
		util_warn("convert: no marker '%s' (--from): no allocation kept", o.from_label);
	if (o.have_to && o.to_label && !st.window_closed)
		util_warn("convert: no marker '%s' (--to): kept up to the end", o.to_label);
	char a[32], b[32], c[32], d[32], e[32], g[32], h[32];
	if (!o.quiet) {
		if (st.dj)
			fprintf(stderr, "convert: dj/malloc trace (%s)%s", st.trace_path,
				st.dj_alloctrace_export ? ", written by alloctrace export" : "");
		else if (o.merge)
			fprintf(stderr, "convert: %" PRIu32 " processes of %s merged", st.nprocs,
				st.trace_path);
		else
			fprintf(stderr, "convert: process %" PRIu32 " (%s)", st.pid, st.trace_path);
		if (!o.merge && st.nprocs > 1)
			fprintf(stderr,
				", 1 of %" PRIu32 " processes%s (--pid picks another, --merge "
				"takes all)",
				st.nprocs, o.pid ? "" : ", the busiest");
		fprintf(stderr, "\n");
		if (o.keep || o.have_from || o.have_to)
			fprintf(stderr, "convert: filters left out %s of the calls\n",
				util_fmt_u64(h, sizeof(h), st.excluded_calls));
		fprintf(stderr,
			"convert: %s records, %s calls, %" PRIu64
			" threads -> %s ops, %s waits, %s slots, %s bytes "
			"(%.2f B/call) in %.2f s (%.1f M records/s)\n",
			util_fmt_u64(a, sizeof(a), st.records),
			util_fmt_u64(b, sizeof(b), st.calls), st.threads,
			util_fmt_u64(c, sizeof(c), st.ops), util_fmt_u64(d, sizeof(d), st.waits),
			util_fmt_u64(e, sizeof(e), st.slots),
			util_fmt_u64(g, sizeof(g), st.bytes_out),
			st.calls ? (double)st.bytes_out / (double)st.calls : 0.0, st.seconds,
			st.seconds > 0 ? (double)st.records / st.seconds / 1e6 : 0.0);
		fprintf(stderr, "convert: ideal RSS (peak live requested bytes) %s bytes\n",
			util_fmt_u64(a, sizeof(a), st.ideal_peak));
		if (st.traced_rss)
			fprintf(stderr,
				"convert: the traced program's Max RSS %s bytes (record's RSS "
				"samples; %s)\n",
				util_fmt_u64(a, sizeof(a), st.traced_rss),
				st.traced_rss_self ? "the tracer's own memory left out"
						   : "the tracer's buffers included: a recorder "
						     "that did not measure them");
		fprintf(stderr,
			"convert: threads alive at once: at most %" PRIu32 "; think time %.3f s\n",
			st.max_live, (double)st.think_ns / 1e9);
		if (st.joins)
			fprintf(stderr,
				"convert: %" PRIu64
				" gaps taken as waits for a thread's exit (joins; "
				"--no-joins keeps them as think time)\n",
				st.joins);
		if (st.handoffs)
			fprintf(stderr,
				"convert: %" PRIu64
				" gaps off the CPU taken as waits for the thread that woke them "
				"(hand-offs): %.3f s left out of think time (--no-handoffs keeps "
				"it)\n",
				st.handoffs, (double)st.handoff_ns / 1e9);
		if (st.shared_gaps)
			fprintf(
			    stderr,
			    "convert: %" PRIu64
			    " long gaps shared among more threads than the %" PRIu32
			    " CPUs of the traced process: %.3f s of waiting for a core left out of "
			    "think time (--no-share keeps it)\n",
			    st.shared_gaps, st.ncpu, (double)st.shared_ns / 1e9);
		if (st.cpu_gaps)
			fprintf(stderr,
				"convert: %" PRIu64
				" long gaps cut to the thread's CPU time (CPU records): %.3f s of "
				"waiting for a core left out of think time (--no-cpu keeps it); "
				"%" PRIu64 " with no more threads busy than CPUs kept\n",
				st.cpu_gaps, (double)st.cpu_off_ns / 1e9, st.cpu_kept);
		if (st.recorder_ns)
			fprintf(stderr,
				"convert: the recorder's own work (flushes, thread set-up): %.3f s "
				"left out of think time\n",
				(double)st.recorder_ns / 1e9);
		if (st.est_calls)
			fprintf(stderr,
				"convert: sampled durations: %" PRIu64
				" untimed calls taken to last their type's typical time, %.3f s "
				"left out of think time (--no-sampled keeps it)\n",
				st.est_calls, (double)st.est_ns / 1e9);
		if (st.xcalls)
			fprintf(
			    stderr,
			    "convert: other calls: %s records -> %s ops, %" PRIu64
			    " mapping slots; not replayed: %" PRIu64 " file-backed mmaps, %" PRIu64
			    " brk/sbrk, %" PRIu64 " madvise of other advice; %" PRIu64
			    " unmaps/remaps/advice of ranges never mapped in the trace, %" PRIu64
			    " mapping calls replayed as an unmap and a new mapping, %" PRIu64
			    " malloc_usable_size of unknown blocks\n",
			    util_fmt_u64(a, sizeof(a), st.xcalls),
			    util_fmt_u64(b, sizeof(b), st.xops), st.map_slots, st.file_maps,
			    st.break_moves, st.madvise_other, st.map_unknown, st.map_odd,
			    st.usable_unknown);
		if (st.touch_ops)
			fprintf(stderr,
				"convert: %s large blocks get TOUCH ops, %s of them with the "
				"pages the program had resident, %s with an estimate; %s "
				"resident pages of heap chunks left out: earlier blocks'\n",
				util_fmt_u64(a, sizeof(a), st.touch_ops),
				util_fmt_u64(b, sizeof(b), st.touch_counted),
				util_fmt_u64(c, sizeof(c), st.touch_estimated),
				util_fmt_u64(d, sizeof(d), st.touch_prior_pages));
		if (st.reordered)
			fprintf(stderr,
				"convert: %s frees stamped ahead of another thread's allocation of "
				"the block, put after it (--no-reorder counts them as anomalies)\n",
				util_fmt_u64(a, sizeof(a), st.reordered));
		if (st.anomalies || st.lost_records)
			fprintf(stderr,
				"convert: anomalies: %" PRIu64 " unknown frees, %" PRIu64
				" double frees, %" PRIu64 " allocations of a live address, %" PRIu64
				" reallocs of unknown blocks; %" PRIu64 " lost records\n",
				st.unknown_frees, st.double_frees, st.dup_allocs,
				st.unknown_reallocs, st.lost_records);
		if (st.dj)
			fprintf(stderr,
				"convert: dj trace: %" PRIu64
				" inversions fixed (allocations placed after the release "
				"of their address), %" PRIu64 " left, %" PRIu64
				" reallocs merged with their inner "
				"malloc/free, %" PRIu64 " unknown records skipped, %" PRIu64
				" trailing bytes ignored, %" PRIu64 " ownership hints skipped\n",
				st.dj_inversions_fixed, st.dj_inversions_pending,
				st.dj_reallocs_merged, st.dj_unknown_records, st.dj_truncated_bytes,
				st.dj_hints);
	}
	return 0;
}

int cmd_convert(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"output", required_argument, NULL, 'o'},
	    {"pid", required_argument, NULL, 'p'},
	    {"quiet", no_argument, NULL, 'q'},
	    {"no-progress", no_argument, NULL, 'P'},
	    {"think-floor", required_argument, NULL, 'F'},
	    {"threads", required_argument, NULL, 'T'},
	    {"merge", no_argument, NULL, 'M'},
	    {"no-joins", no_argument, NULL, 'J'},
	    {"no-handoffs", no_argument, NULL, 'H'},
	    {"no-share", no_argument, NULL, 'W'},
	    {"no-cpu", no_argument, NULL, 'C'},
	    {"no-sampled", no_argument, NULL, 'S'},
	    {"no-reorder", no_argument, NULL, 'R'},
	    {"thread", required_argument, NULL, REP_OPT_BASE + 2},
	    {"from", required_argument, NULL, REP_OPT_BASE + 3},
	    {"to", required_argument, NULL, REP_OPT_BASE + 4},
	    {"module", required_argument, NULL, REP_OPT_BASE + 5},
	    {"function", required_argument, NULL, REP_OPT_BASE + 6},
	    {"suppress", required_argument, NULL, REP_OPT_BASE + 7},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *out = NULL;
	struct rp_convert_opts o = {.progress = isatty(2), .think_floor_ns = RP_THINK_FLOOR_NS};
	int c, rc;
	struct an_session_opts ro;
	an_session_opts_init(&ro);
	optind = 1;
	while ((c = cmdu_getopt(argc, argv, "o:p:qh", opts, NULL)) != -1) {
		if (c == REP_OPT_BASE + 7) {
			util_err("convert: --suppress hides leaks in reports; a workload replays "
				 "every kept block as it lived (select blocks with --module or "
				 "--function instead)");
			an_session_opts_free(&ro);
			return 2;
		}
		if ((rc = cmdu_session_opt(&ro, c, optarg, "convert")) != 0) {
			if (rc < 0) {
				an_session_opts_free(&ro);
				return 2;
			}
			continue;
		}
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'p': {
			char *e;
			unsigned long v = strtoul(optarg, &e, 10);
			if (*e || !v || v > UINT32_MAX) {
				util_err("convert: bad --pid '%s'", optarg);
				return 2;
			}
			o.pid = (uint32_t)v;
			break;
		}
		case 'q':
			o.quiet = 1;
			break;
		case 'F': {
			char *e;
			o.think_floor_ns = strtoull(optarg, &e, 10);
			if (*e || !*optarg) {
				util_err("convert: bad --think-floor '%s'", optarg);
				return 2;
			}
			break;
		}
		case 'P':
			o.progress = 0;
			break;
		case 'T':
			if (strcmp(optarg, "1") && strcmp(optarg, "2")) {
				util_err("convert: bad --threads '%s' (1 or 2)", optarg);
				an_session_opts_free(&ro);
				return 2;
			}
			o.threads = optarg[0] - '0';
			break;
		case 'M':
			o.merge = 1;
			break;
		case 'J':
			o.no_joins = 1;
			break;
		case 'H':
			o.no_handoffs = 1;
			break;
		case 'W':
			o.no_share = 1;
			break;
		case 'C':
			o.no_cpu = 1;
			break;
		case 'S':
			o.no_sampled = 1;
			break;
		case 'R':
			o.no_reorder = 1;
			break;
		case 'h':
			an_session_opts_free(&ro);
			convert_usage(stdout);
			return 0;
		default:
			an_session_opts_free(&ro);
			convert_usage(stderr);
			return 2;
		}
	}
	if (optind + 1 != argc || !out || (o.merge && o.pid)) {
		util_err("convert: %s", o.merge && o.pid ? "--merge takes every process: no --pid"
							 : "need one TRACE and -o WORKLOAD");
		an_session_opts_free(&ro);
		convert_usage(stderr);
		return 2;
	}
	o.progress = o.progress && !o.quiet;
	rc = do_convert(argv[optind], out, &o, ro.any_filter ? &ro : NULL);
	an_session_opts_free(&ro);
	return rc;
}

/* trace2wl OUT [IN]: IN defaults to standard input (copied to a temporary
 * file: the reader maps its input). */
int cmd_trace2wl(int argc, char **argv)
{
	if (argc < 2 || argc > 3 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fprintf(argc == 2 ? stdout : stderr,
			"usage: trace2wl OUTFILE [INFILE]\n"
			"Convert a trace to a workload (alloctrace convert INFILE -o OUTFILE);\n"
			"without INFILE the trace is read from standard input.\n");
		return argc == 2 ? 0 : 2;
	}
	struct rp_convert_opts o = {.progress = isatty(2), .think_floor_ns = RP_THINK_FLOOR_NS};
	if (argc == 3)
		return do_convert(argv[2], argv[1], &o, NULL);
	const char *td = getenv("TMPDIR");
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s/trace2wl.XXXXXX", td && *td ? td : "/tmp");
	int fd = mkstemp(tmp);
	if (fd < 0) {
		util_err("trace2wl: cannot create a temporary file in %s", td && *td ? td : "/tmp");
		return 1;
	}
	char buf[1 << 16];
	ssize_t n;
	int rc = 0;
	while ((n = read(0, buf, sizeof(buf))) > 0)
		if (write(fd, buf, (size_t)n) != n) {
			util_err("trace2wl: write to %s failed", tmp);
			rc = 1;
			break;
		}
	close(fd);
	if (n < 0) {
		util_err("trace2wl: read error on standard input");
		rc = 1;
	}
	o.progress = 0; /* the trace came on standard input */
	if (!rc)
		rc = do_convert(tmp, argv[1], &o, NULL);
	unlink(tmp);
	return rc;
}
