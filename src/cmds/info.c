/* info.c - `alloctrace info FILE_OR_DIR... [--json]`. */
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h> /* optind */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis/an_summary.h"
#include "atr_reader.h"
#include "atr_rss.h"
#include "cmds/cmds.h"
#include "util_fmt.h"
#include "util_json.h"
#include "util_msg.h"

static void info_usage(FILE *out)
{
	fprintf(out, "usage: alloctrace info [--json] FILE_OR_DIR...\n"
		     "Summarise each traced process: command, status, duration, calls per\n"
		     "function, bytes requested, peak live bytes, threads.  A directory means\n"
		     "all its *.atr files (one per process image), oldest first.\n"
		     "  --json   one JSON object {\"processes\": [...]} instead of text\n");
}

static uint64_t to_ns(const atr_file *f, uint64_t ticks)
{
	return atr_ticks_to_ns_u64(f, ticks);
}

static int have_wall(const struct atr_info *in)
{
	return in->end_mono_ns && in->end_mono_ns >= in->start_mono_ns;
}

static void print_text(const atr_file *f, const struct an_summary *s, int first)
{
	const struct atr_info *in = atr_get_info(f);
	char a[64], b[64], c[64], st[256];
	if (!first)
		printf("\n");
	printf("process %" PRIu32 "  (%s)\n", in->pid, in->path);
	printf("  %-16s %" PRIu32 "\n", "ppid", in->ppid);
	printf("  %-16s %" PRIu32 "\n", "exec seq", in->exec_seq);
	printf("  %-16s %s\n", "exe", in->exe[0] ? in->exe : "(unknown)");
	printf("  %-16s %s\n", "cmdline", in->cmdline);
	time_t t = (time_t)(in->start_realtime_ns / UINT64_C(1000000000));
	struct tm tm;
	if (in->start_realtime_ns && localtime_r(&t, &tm)) {
		char tb[64];
		strftime(tb, sizeof(tb), "%Y-%m-%d %H:%M:%S", &tm);
		printf("  %-16s %s.%03" PRIu64 "\n", "started", tb,
		       in->start_realtime_ns % UINT64_C(1000000000) / UINT64_C(1000000));
	}
	printf("  %-16s %s\n", "status",
	       cmdu_status_text(in->status, in->header_errno, st, sizeof(st)));
	uint64_t dur = s->records ? to_ns(f, s->last_ts - s->first_ts) : 0;
	printf("  %-16s %s", "duration", util_fmt_ns(a, sizeof(a), dur));
	if (have_wall(in))
		printf(" (wall %s)",
		       util_fmt_ns(b, sizeof(b), in->end_mono_ns - in->start_mono_ns));
	printf("\n");
	if (in->ticks_guessed)
		printf("  %-16s %s\n", "clock", "uncalibrated: 1 tick = 1 ns assumed");
	printf("  %-16s %" PRIu32 "\n", "threads", in->threads);
	printf("  %-16s %s\n", "calls", util_fmt_u64(a, sizeof(a), s->total_calls));
	for (unsigned ty = 1; ty <= ATR_T_CALL_LAST; ty++)
		printf("    %-14s %14s\n", atr_type_name(ty),
		       util_fmt_u64(a, sizeof(a), s->calls[ty]));
	/* the other traced calls: only those the program made */
	for (unsigned i = 0; i < ATR_NXCALLS; i++)
		if (s->xcalls[i])
			printf("    %-18s %10s\n", atr_type_name(ATR_T_XCALL_FIRST + i),
			       util_fmt_u64(a, sizeof(a), s->xcalls[i]));
	printf("  %-16s %s bytes (%s)\n", "requested",
	       util_fmt_u64(a, sizeof(a), s->bytes_requested),
	       util_fmt_bytes(b, sizeof(b), s->bytes_requested));
	uint64_t pns = to_ns(f, s->peak_ts);
	printf("  %-16s %s bytes (%s) at %" PRIu64 ".%09" PRIu64 " s\n", "peak live",
	       util_fmt_u64(a, sizeof(a), s->peak_live_bytes),
	       util_fmt_bytes(b, sizeof(b), s->peak_live_bytes), pns / UINT64_C(1000000000),
	       pns % UINT64_C(1000000000));
	printf("  %-16s %s bytes in %s blocks\n", "live at end",
	       util_fmt_u64(a, sizeof(a), s->live_bytes),
	       util_fmt_u64(b, sizeof(b), s->live_blocks));
	const struct an_maps *m = &s->maps;
	if (m->maps || m->brk_net) {
		/* the program's own mmap/brk: not heap (an_maps.h) */
		uint64_t mpns = to_ns(f, m->peak_ts);
		printf("  %-16s %s bytes (%s) in %zu ranges at end, peak %s at %" PRIu64
		       ".%09" PRIu64 " s\n",
		       "mapped", util_fmt_u64(a, sizeof(a), m->mapped),
		       util_fmt_bytes(b, sizeof(b), m->mapped), m->n,
		       util_fmt_bytes(c, sizeof(c), m->peak), mpns / UINT64_C(1000000000),
		       mpns % UINT64_C(1000000000));
	}
	struct atr_rss_peak rp;
	if (atr_rss_peak_of(f, &rp)) {
		/* record's RSS samples (docs/RSS_FORMAT.md) */
		char d[UTIL_FMT_BUF];
		printf("  %-16s %s bytes (%s), the program's (of %zu RSS samples; ", "max RSS",
		       util_fmt_u64(a, sizeof(a), rp.program),
		       util_fmt_bytes(b, sizeof(b), rp.program), rp.samples);
		if (rp.self_known)
			printf("the recorder's own %s then left out)\n",
			       util_fmt_bytes(d, sizeof(d), rp.tracer));
		else
			printf("the recorder's own memory included: it did not measure it)\n");
	}
	printf("  %-16s %s\n", "failed allocs", util_fmt_u64(a, sizeof(a), s->failed));
	printf("  %-16s %s\n", "unknown frees", util_fmt_u64(a, sizeof(a), s->unknown_frees));
	if (s->reordered_releases)
		printf("  %-16s %s frees stamped ahead of another thread's allocation of the "
		       "block, put after it\n",
		       "reordered", util_fmt_u64(a, sizeof(a), s->reordered_releases));
	if (in->status & ATR_STATUS_FORK_CHILD)
		printf("  %-16s %s (fork child: blocks from the parent's heap)\n",
		       "inherited frees", util_fmt_u64(a, sizeof(a), s->inherited_frees));
	if (in->status & ATR_STATUS_ATTACHED)
		printf("  %-16s %s (attached: blocks allocated before the attach)\n",
		       "pre-attach frees", util_fmt_u64(a, sizeof(a), s->pre_attach_frees));
	printf("  %-16s %s\n", "lost records", util_fmt_u64(a, sizeof(a), in->lost_records));
	if (in->lost_blocks)
		printf("  %-16s %s\n", "lost blocks", util_fmt_u64(a, sizeof(a), in->lost_blocks));
	if (in->truncated_records || in->truncated_blocks)
		printf("  %-16s %s records in %s blocks cut by end of file\n", "truncated",
		       util_fmt_u64(a, sizeof(a), in->truncated_records),
		       util_fmt_u64(b, sizeof(b), in->truncated_blocks));
	printf("  %-16s %s\n", "untraced calls", util_fmt_u64(a, sizeof(a), in->untraced_calls));
	if (in->sample_rate) /* info counts records: `report` estimates */
		printf("  %-16s every %s bytes (the counts here are of sampled records; "
		       "report shows estimates)\n",
		       "sampled", util_fmt_u64(a, sizeof(a), in->sample_rate));
	if (in->clock_inversions)
		printf("  %-16s %s\n", "clock inversions",
		       util_fmt_u64(a, sizeof(a), in->clock_inversions));
	printf("  %-16s %s\n", "markers", util_fmt_u64(a, sizeof(a), s->markers));
	printf("  %-8s %10s %16s %20s\n", "thread", "tid", "calls", "bytes");
	for (uint32_t i = 0; i < s->nthreads; i++) {
		const struct an_thread_stat *th = &s->threads[i];
		printf("  T%-7" PRIu32 " %10" PRIu32 " %16s %20s\n", th->serial, th->tid,
		       util_fmt_u64(a, sizeof(a), th->calls),
		       util_fmt_u64(b, sizeof(b), th->bytes));
	}
}

static void print_json(struct json_writer *w, const atr_file *f, const struct an_summary *s)
{
	const struct atr_info *in = atr_get_info(f);
	char st[256];
	json_begin_object(w);
	json_key(w, "path");
	json_string(w, in->path);
	json_key(w, "pid");
	json_u64(w, in->pid);
	json_key(w, "ppid");
	json_u64(w, in->ppid);
	json_key(w, "exec_seq");
	json_u64(w, in->exec_seq);
	json_key(w, "exe");
	json_string(w, in->exe);
	json_key(w, "cmdline");
	json_string(w, in->cmdline);
	json_key(w, "start_realtime_ns");
	json_u64(w, in->start_realtime_ns);
	json_key(w, "status");
	json_string(w, cmdu_status_text(in->status, in->header_errno, st, sizeof(st)));
	json_key(w, "clean_exit");
	json_bool(w, (in->status & ATR_STATUS_CLEAN_EXIT) != 0);
	json_key(w, "truncated");
	json_bool(w, (in->status & ATR_STATUS_TRUNCATED) != 0);
	json_key(w, "write_errno");
	json_u64(w, in->header_errno);
	json_key(w, "duration_ns");
	json_u64(w, s->records ? to_ns(f, s->last_ts - s->first_ts) : 0);
	json_key(w, "wall_ns");
	if (have_wall(in))
		json_u64(w, in->end_mono_ns - in->start_mono_ns);
	else
		json_null(w);
	json_key(w, "ticks_per_sec");
	json_double(w, in->ticks_per_sec);
	json_key(w, "clock_uncalibrated");
	json_bool(w, in->ticks_guessed);
	json_key(w, "threads");
	json_u64(w, in->threads);
	json_key(w, "calls");
	json_begin_object(w);
	for (unsigned ty = 1; ty <= ATR_T_CALL_LAST; ty++) {
		json_key(w, atr_type_name(ty));
		json_u64(w, s->calls[ty]);
	}
	json_end_object(w);
	json_key(w, "other_calls");
	json_begin_object(w);
	for (unsigned i = 0; i < ATR_NXCALLS; i++) {
		json_key(w, atr_type_name(ATR_T_XCALL_FIRST + i));
		json_u64(w, s->xcalls[i]);
	}
	json_end_object(w);
	json_key(w, "total_calls");
	json_u64(w, s->total_calls);
	json_key(w, "records");
	json_u64(w, s->records);
	json_key(w, "bytes_requested");
	json_u64(w, s->bytes_requested);
	json_key(w, "peak_live_bytes");
	json_u64(w, s->peak_live_bytes);
	json_key(w, "peak_live_ns");
	json_u64(w, to_ns(f, s->peak_ts));
	json_key(w, "live_bytes_at_end");
	json_u64(w, s->live_bytes);
	json_key(w, "live_blocks_at_end");
	json_u64(w, s->live_blocks);
	struct atr_rss_peak rp;
	json_key(w, "max_rss");
	if (atr_rss_peak_of(f, &rp)) {
		json_begin_object(w);
		json_key(w, "program_bytes");
		json_u64(w, rp.program);
		json_key(w, "tracer_bytes");
		json_u64(w, rp.tracer);
		json_key(w, "tracer_known");
		json_bool(w, rp.self_known);
		json_key(w, "samples");
		json_u64(w, rp.samples);
		json_end_object(w);
	} else {
		json_null(w);
	}
	json_key(w, "mapped");
	json_begin_object(w);
	json_key(w, "bytes_at_end");
	json_u64(w, s->maps.mapped);
	json_key(w, "ranges_at_end");
	json_u64(w, s->maps.n);
	json_key(w, "brk_bytes_at_end");
	json_u64(w, s->maps.brk_bytes);
	json_key(w, "peak_bytes");
	json_u64(w, s->maps.peak);
	json_key(w, "peak_ns");
	json_u64(w, to_ns(f, s->maps.peak_ts));
	json_key(w, "mmaps");
	json_u64(w, s->maps.maps);
	json_key(w, "munmaps");
	json_u64(w, s->maps.unmaps);
	json_key(w, "failed");
	json_u64(w, s->maps.failed);
	json_end_object(w);
	json_key(w, "failed_allocations");
	json_u64(w, s->failed);
	json_key(w, "unknown_frees");
	json_u64(w, s->unknown_frees);
	json_key(w, "reordered_releases");
	json_u64(w, s->reordered_releases);
	json_key(w, "inherited_frees");
	json_u64(w, s->inherited_frees);
	json_key(w, "fork_child");
	json_bool(w, (in->status & ATR_STATUS_FORK_CHILD) != 0);
	if (in->status & ATR_STATUS_ATTACHED) { /* `record -p` traces only */
		json_key(w, "attached");
		json_bool(w, 1);
		json_key(w, "pre_attach_frees");
		json_u64(w, s->pre_attach_frees);
	}
	json_key(w, "free_null");
	json_u64(w, s->free_null);
	json_key(w, "lost_records");
	json_u64(w, in->lost_records);
	json_key(w, "lost_blocks");
	json_u64(w, in->lost_blocks);
	json_key(w, "truncated_records");
	json_u64(w, in->truncated_records);
	json_key(w, "untraced_calls");
	json_u64(w, in->untraced_calls);
	json_key(w, "clock_inversions");
	json_u64(w, in->clock_inversions);
	json_key(w, "sample_rate");
	json_u64(w, in->sample_rate);
	json_key(w, "markers");
	json_u64(w, s->markers);
	json_key(w, "thread_stats");
	json_begin_array(w);
	for (uint32_t i = 0; i < s->nthreads; i++) {
		json_begin_object(w);
		json_key(w, "serial");
		json_u64(w, s->threads[i].serial);
		json_key(w, "tid");
		json_u64(w, s->threads[i].tid);
		json_key(w, "calls");
		json_u64(w, s->threads[i].calls);
		json_key(w, "bytes");
		json_u64(w, s->threads[i].bytes);
		json_end_object(w);
	}
	json_end_array(w);
	json_end_object(w);
}

struct info_run {
	int json, shown;
	struct json_writer w;
};

static int info_one(void *arg, const char *path)
{
	struct info_run *ir = arg;
	char eb[512];
	atr_file *f;
	if (atr_open(path, &f, eb, sizeof(eb)) < 0) {
		util_err("%s", eb);
		return 1;
	}
	struct an_summary s;
	int r = an_summary_compute(f, &s);
	if (r < 0) {
		if (r == ATR_E_NOMEM)
			util_err("%s: out of memory", path);
		else
			util_err("%s", atr_last_error(f));
	} else if (ir->json) {
		print_json(&ir->w, f, &s);
	} else {
		print_text(f, &s, !ir->shown);
	}
	if (r >= 0)
		ir->shown++;
	an_summary_free(&s);
	atr_close(f);
	return r < 0;
}

int cmd_info(int argc, char **argv)
{
	struct info_run ir = {0};
	int st = cmdu_json_args(argc, argv, "info", info_usage, &ir.json);
	if (st >= 0)
		return st;
	if (ir.json)
		cmdu_json_begin(&ir.w, 1);
	int rc = cmdu_each_trace(argc - optind, argv + optind, info_one, &ir);
	if (ir.json)
		cmdu_json_end(&ir.w, 1);
	return rc | cmdu_flush_stdout("info");
}
