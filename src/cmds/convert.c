/* convert.c - `alloctrace convert TRACE -o WORKLOAD` and the seed's
 * `trace2wl OUT [IN]`. */
#define _GNU_SOURCE
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmds/cmds.h"
#include "replay/rp_convert.h"
#include "util_fmt.h"
#include "util_msg.h"

static void convert_usage(FILE *out)
{
	fprintf(
	    out,
	    "usage: alloctrace convert TRACE -o WORKLOAD [--pid PID] [--think-floor NS] [--quiet]\n"
	    "                          [--no-progress]\n"
	    "Turn a trace (a directory from `record -o`, one .atr file, or a glibc dj/malloc\n"
	    "trace, docs/DJ_COMPAT.md) into a workload\n"
	    "for `alloctrace replay` (format: docs/WORKLOAD_FORMAT.md).  One process per\n"
	    "workload: the first one unless --pid picks another.\n"
	    "  -o, --output FILE  workload to write\n"
	    "  -p, --pid PID      the traced process to convert\n"
	    "      --think-floor NS  the recorder's own share of each gap between two calls\n"
	    "                     of a thread, not counted as think time (default %u)\n"
	    "  -q, --quiet        no anomaly reports (they are still counted)\n"
	    "      --no-progress  no progress line even on a terminal\n",
	    RP_THINK_FLOOR_NS);
}

static int do_convert(const char *in, const char *out, uint32_t pid, int quiet, int progress,
		      uint64_t floor_ns)
{
	struct rp_convert_opts o = {
	    .pid = pid, .progress = progress, .quiet = quiet, .think_floor_ns = floor_ns};
	struct rp_convert_stats st;
	char eb[1024];
	if (rp_convert(in, out, &o, &st, eb, sizeof(eb)) < 0) {
		util_err("convert: %s", eb);
		return 1;
	}
	char a[32], b[32], c[32], d[32], e[32], g[32], h[32];
	if (!quiet) {
		if (st.dj)
			fprintf(stderr, "convert: dj/malloc trace (%s)%s", st.trace_path,
				st.dj_alloctrace_export ? ", written by alloctrace export" : "");
		else
			fprintf(stderr, "convert: process %" PRIu32 " (%s)", st.pid, st.trace_path);
		if (st.nprocs > 1)
			fprintf(stderr, ", 1 of %" PRIu32 " processes (--pid picks another)",
				st.nprocs);
		fprintf(stderr, "\n");
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
		(void)h;
		fprintf(stderr, "convert: ideal RSS (peak live requested bytes) %s bytes\n",
			util_fmt_u64(a, sizeof(a), st.ideal_peak));
		fprintf(stderr,
			"convert: threads alive at once: at most %" PRIu32 "; think time %.3f s\n",
			st.max_live, (double)st.think_ns / 1e9);
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
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *out = NULL;
	uint32_t pid = 0;
	int quiet = 0, progress = isatty(2), c;
	uint64_t floor_ns = RP_THINK_FLOOR_NS;
	optind = 1;
	while ((c = cmdu_getopt(argc, argv, "o:p:qh", opts, NULL)) != -1) {
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
			pid = (uint32_t)v;
			break;
		}
		case 'q':
			quiet = 1;
			break;
		case 'F': {
			char *e;
			floor_ns = strtoull(optarg, &e, 10);
			if (*e || !*optarg) {
				util_err("convert: bad --think-floor '%s'", optarg);
				return 2;
			}
			break;
		}
		case 'P':
			progress = 0;
			break;
		case 'h':
			convert_usage(stdout);
			return 0;
		default:
			convert_usage(stderr);
			return 2;
		}
	}
	if (optind + 1 != argc || !out) {
		util_err("convert: need one TRACE and -o WORKLOAD");
		convert_usage(stderr);
		return 2;
	}
	return do_convert(argv[optind], out, pid, quiet, progress && !quiet, floor_ns);
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
	if (argc == 3)
		return do_convert(argv[2], argv[1], 0, 0, isatty(2), RP_THINK_FLOOR_NS);
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
	if (!rc)
		rc = do_convert(tmp, argv[1], 0, 0, 0, RP_THINK_FLOOR_NS);
	unlink(tmp);
	return rc;
}
