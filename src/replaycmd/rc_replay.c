/* rc_replay.c - see rc_replay.h: the replay command's options, run and
 * printers. */
#define _GNU_SOURCE
#include "replaycmd/rc_replay.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "replay/rp_dj.h"
#include "replay/rp_replay.h"
#include "util_fmt.h"
#include "util_json.h"
#include "util_msg.h"

static void replay_usage(FILE *out)
{
	fprintf(
	    out,
	    "usage: alloctrace replay WORKLOAD [options]\n"
	    "Run a workload (from `alloctrace convert`) with one thread per traced thread\n"
	    "against an allocator, timing its calls (docs/REPLAY.md).\n"
	    "  -a, --allocator A      glibc (default), jemalloc, tcmalloc, mimalloc, PATH.so,\n"
	    "                         or none (bookkeeping only: the simulator's own cost)\n"
	    "  -T, --tunable T=V      a glibc tunable, e.g. glibc.malloc.arena_max=2 (repeatable;\n"
	    "                         passed through GLIBC_TUNABLES at exec time)\n"
	    "      --trim-interval N  call malloc_trim(0) every N ops of each thread\n"
	    "      --no-mallopt       skip the program's own mallopt and malloc_trim calls\n"
	    "                         (workload version 3): the allocator's defaults\n"
	    "      --no-mappings      skip the program's own mappings (mmap, munmap, mremap,\n"
	    "                         madvise; workload version 3): the heap's RSS alone\n"
	    "      --touch MODE       how allocated blocks are written: trace (default for\n"
	    "                         workloads with TOUCH ops: large blocks as many pages as\n"
	    "                         the program had resident, the others as first) | first\n"
	    "                         (default otherwise: first byte of each page) | all | none\n"
	    "      --timing MODE      sample (default: about one call in %u of each thread\n"
	    "                         timed as serial times it, the others counted) | serial\n"
	    "                         (every call: fenced clock reads, their floor subtracted;\n"
	    "                         ~90 ns per call more wall time here) | fast (unfenced:\n"
	    "                         cheap calls read as the clock's latency) | off (no\n"
	    "                         per-call times, least overhead)\n"
	    "      --think MODE       on (default): spend the traced threads' time between\n"
	    "                         calls (workload version 2) writing a per-thread working\n"
	    "                         set, less the replay's own work between the calls, so\n"
	    "                         wall time predicts the program's | whole: every gap in\n"
	    "                         full, on top of that work | share: as whole, but with\n"
	    "                         more replay threads than cores only their share of a\n"
	    "                         gap (cores / threads), as work | off: calls back to\n"
	    "                         back (the allocator's time only)\n"
	    "      --no-warm          do not fetch a block the ops after a think time free\n"
	    "                         while that time runs (the default does: the program\n"
	    "                         had just used it, so the allocator found it cached)\n"
	    "      --spin N           pauses a wait spins before it sleeps (default %u; spins\n"
	    "                         only while every running replay thread has a core)\n"
	    "      --membarrier       a sleeping wait issues membarrier() so the threads it\n"
	    "                         waits for need no fence per op (cheaper where IPIs are\n"
	    "                         cheap; the default fences: on a VM it was 2x the CPU)\n"
	    "      --timeline FILE    sample VmSize, VmRSS and ideal live bytes (ms vmsize_kb\n"
	    "                         rss_kb ideal_kb) every --interval ms (default 10)\n"
	    "      --interval MS      the --timeline sampling period\n"
	    "  -n, --dry-run          the same as --allocator none\n"
	    "  -j, --json             one JSON object instead of text\n"
	    "      --kv               key=value lines (what `alloctrace compare` reads)\n"
	    "      --dj               dj/malloc trace_run's 13 lines instead (the default as\n"
	    "                         trace_run); --extras adds this report on stderr\n"
	    "A glibc dj/malloc workload (.wl) is replayed too (docs/DJ_COMPAT.md).\n",
	    RP_TIMING_SAMPLE_EVERY, RP_SPIN_DEFAULT);
}

#define NAME_(NAME, name, type, op, args, ret, params) [AWL_OP_##NAME] = #name,
static const char *const type_names[RP_NTYPES + 1] = {"?",
						      ATR_CALLS(NAME_)[RP_TRIM] = "malloc_trim"};
#undef NAME_

/* Threads that waited for a CPU make the wall time (and per-call times
 * that straddle a preemption) the machine's, not the allocator's: the
 * first pass measured `--allocator none` slower than glibc that way. */
static void warn_descheduled(const struct rp_result *r)
{
	if (!r->thread_ns_sum || r->thread_ns_sum < 20000000u)
		return;
	if (r->think_ns * 10 > r->thread_ns_sum)
		return; /* the threads sleep through long think times by design */
	double ran = (double)r->thread_cpu_ns_sum / (double)r->thread_ns_sum;
	if (ran < 0.9 && r->waits * 1000 < r->ops)
		util_warn(
		    "replay: the replay threads ran only %.0f%% of their wall time (%" PRIu64
		    " involuntary context switches): fewer free cores than threads; compare CPU "
		    "time (thread_cpu_us), not wall time",
		    100.0 * ran, r->invol_switches);
}

/* The program's other calls (workload v3): what the replay made of them. */
static void print_xops(const struct rp_opts *o, const struct rp_result *r)
{
	if (!r->xops) {
		printf("program's other calls: none in this workload (version %d%s)\n", r->version,
		       r->version >= 3 ? ", traced without them" : ": the malloc family only");
		return;
	}
	char a[32], b[32];
	printf("program's other calls (made / in the workload):");
	int any = 0;
	for (unsigned k = 0; k < RP_NXOPS; k++) {
		const struct rp_xstat *x = &r->x[k];
		if (!x->ops)
			continue;
		printf("%s %s %s/%s", any ? "," : "", awl_op_name(AWL_OP_XFIRST + k),
		       util_fmt_u64(a, sizeof(a), x->done), util_fmt_u64(b, sizeof(b), x->ops));
		if (x->skipped)
			printf(" (%s skipped: %s)", util_fmt_u64(a, sizeof(a), x->skipped),
			       k + AWL_OP_XFIRST <= AWL_OP_MALLOC_TRIM ? "--no-mallopt"
								       : "--no-mappings");
		if (x->na)
			printf(" (%s not applicable: the allocator does not export it)",
			       util_fmt_u64(a, sizeof(a), x->na));
		if (x->failed)
			printf(" (%s failed)", util_fmt_u64(a, sizeof(a), x->failed));
		if (x->unlike)
			printf(" (%s with another result than traced)",
			       util_fmt_u64(a, sizeof(a), x->unlike));
		any = 1;
	}
	printf("%s\n", any ? "" : " none");
	if (r->map_bytes)
		printf("program's mappings: %s Kb mapped (touch as blocks)\n",
		       util_fmt_u64(a, sizeof(a), r->map_bytes / 1024));
	if (r->x[AWL_OP_USABLE_SIZE - AWL_OP_XFIRST].done)
		printf("malloc_usable_size: %s bytes in all here, %s traced\n",
		       util_fmt_u64(a, sizeof(a), r->usable_bytes),
		       util_fmt_u64(b, sizeof(b), r->usable_trace));
	(void)o;
}
static const char *const touch_names[] = {"none", "first", "all", "trace", "auto"};

static void print_text(const char *wl, const char *alloc, const struct rp_opts *o,
		       const struct rp_result *r)
{
	char a[32], b[32], c[32];
	const char *const *tn = touch_names;
	static const char *const tmn[] = {"serial", "fast", "off", "sample"};
	printf("replay %s: allocator %s, %" PRIu32
	       " thread%s, touch %s, clock %s (%.3f ticks/ns), timing %s",
	       wl, alloc, r->threads, r->threads == 1 ? "" : "s", tn[r->touch], r->clock,
	       r->ticks_per_ns, tmn[r->timing]);
	if (r->timing == RP_TIMING_OFF)
		printf(" (no per-call times)\n");
	else if (r->timing == RP_TIMING_SAMPLE)
		printf(" (about 1 call in %u timed, clock floor of %" PRIu64
		       " ticks subtracted; times below are of the timed calls)\n",
		       RP_TIMING_SAMPLE_EVERY, r->timer_floor);
	else
		printf(" (clock floor of %" PRIu64 " ticks subtracted per call)\n", r->timer_floor);
	printf("%s cycles\n", util_fmt_u64(a, sizeof(a), r->cycles));
	printf("%s usec wall time\n", util_fmt_u64(a, sizeof(a), r->wall_ns / 1000));
	printf("%s usec across %" PRIu32 " thread%s\n",
	       util_fmt_u64(a, sizeof(a), r->thread_ns_sum / 1000), r->threads,
	       r->threads == 1 ? "" : "s");
	printf("%s usec CPU across %" PRIu32
	       " thread%s (%.0f%% of their wall time, %s involuntary context "
	       "switches)\n",
	       util_fmt_u64(a, sizeof(a), r->thread_cpu_ns_sum / 1000), r->threads,
	       r->threads == 1 ? "" : "s",
	       r->thread_ns_sum ? 100.0 * (double)r->thread_cpu_ns_sum / (double)r->thread_ns_sum
				: 100.0,
	       util_fmt_u64(b, sizeof(b), r->invol_switches));
	printf(
	    "%s Kb Max RSS (%s -> %s)\n",
	    util_fmt_u64(a, sizeof(a),
			 r->rss_after_kb - (r->rss_after_kb > r->rss_before_kb ? r->rss_before_kb
									       : r->rss_after_kb)),
	    util_fmt_u64(b, sizeof(b), r->rss_before_kb),
	    util_fmt_u64(c, sizeof(c), r->rss_after_kb));
	printf("%s Kb Max Ideal RSS\n", util_fmt_u64(a, sizeof(a), (r->ideal_peak + 1023) / 1024));
	if (r->traced_rss)
		printf("%s Kb Max RSS of the traced program\n",
		       util_fmt_u64(a, sizeof(a), (r->traced_rss + 1023) / 1024));
	static const unsigned seed_order[] = {AWL_OP_MALLOC, AWL_OP_CALLOC, AWL_OP_REALLOC,
					      AWL_OP_FREE};
	for (unsigned i = 0; i < 4; i++) {
		const struct rp_callstat *s = &r->st[seed_order[i]];
		printf("Avg %s time: %s in %s calls\n", type_names[seed_order[i]],
		       util_fmt_u64(a, sizeof(a), rp_stat_avg(s)),
		       util_fmt_u64(b, sizeof(b), s->count));
	}
	for (unsigned k = 1; k <= RP_NTYPES; k++) {
		if (k == AWL_OP_MALLOC || k == AWL_OP_CALLOC || k == AWL_OP_REALLOC ||
		    k == AWL_OP_FREE)
			continue;
		const struct rp_callstat *s = &r->st[k];
		if (s->count)
			printf("Avg %s time: %s in %s calls\n", type_names[k],
			       util_fmt_u64(a, sizeof(a), rp_stat_avg(s)),
			       util_fmt_u64(b, sizeof(b), s->count));
	}
	printf("Total call time: %s cycles\n", util_fmt_u64(a, sizeof(a), r->total_cycles));
	printf("\n%-15s %14s %9s %9s %9s %12s  (%s ticks)\n", "call", "count", "avg", "p50", "p99",
	       "max", r->clock);
	for (unsigned k = 1; k <= RP_NTYPES; k++) {
		const struct rp_callstat *s = &r->st[k];
		if (!s->count)
			continue;
		printf("%-15s %14s %9" PRIu64 " %9" PRIu64 " %9" PRIu64 " %12" PRIu64 "\n",
		       type_names[k], util_fmt_u64(a, sizeof(a), s->count), rp_stat_avg(s),
		       rp_percentile(s, 50), rp_percentile(s, 99), s->max);
	}
	char d[32], e[32], f[32];
	printf("\nops %s, waits %s (slept %s, %s usec), RSS at end %s Kb, VmSize at end %s Kb\n",
	       util_fmt_u64(a, sizeof(a), r->ops), util_fmt_u64(b, sizeof(b), r->waits),
	       util_fmt_u64(c, sizeof(c), r->sleeps), util_fmt_u64(f, sizeof(f), r->wait_ns / 1000),
	       util_fmt_u64(d, sizeof(d), r->vmrss_end_kb),
	       util_fmt_u64(e, sizeof(e), r->vmsize_end_kb));
	printf("threads: %s created, at most %" PRIu32 " alive at once (traced: %" PRIu32
	       "); pthread_create %s usec, thread exit and join %s usec (summed over threads, not "
	       "in the "
	       "call times)\n",
	       util_fmt_u64(a, sizeof(a), r->threads_created), r->max_live_threads,
	       r->trace_max_live, util_fmt_u64(b, sizeof(b), r->thread_create_ns / 1000),
	       util_fmt_u64(c, sizeof(c), r->thread_exit_ns / 1000));
	if (r->overlap_checked)
		printf("thread starts with as many threads alive as traced: %" PRIu64 " of %" PRIu64
		       "\n",
		       r->overlap_checked - r->overlap_diff, r->overlap_checked);
	if (r->version < 2)
		printf("think time: none (workload version %d has none)\n", r->version);
	else {
		char own[32], mode[24] = "";
		if (o->think != RP_THINK_ON)
			snprintf(mode, sizeof(mode), " (--think %s)", rp_think_names[o->think]);
		printf("think time: %s usec spent%s (workload: %s usec; %s usec of it was the "
		       "replay's own work between calls; %s gaps as a share); the traced run "
		       "lasted %s usec\n",
		       util_fmt_u64(a, sizeof(a), r->think_ns / 1000), mode,
		       util_fmt_u64(b, sizeof(b), r->think_trace_ns / 1000),
		       util_fmt_u64(own, sizeof(own), r->think_own_ns / 1000),
		       util_fmt_u64(d, sizeof(d), r->think_shared),
		       util_fmt_u64(c, sizeof(c), r->trace_duration_ns / 1000));
		if (o->think != RP_THINK_OFF)
			printf("blocks warmed in a think time before their free or realloc: %s%s\n",
			       util_fmt_u64(a, sizeof(a), r->warmed),
			       o->no_warm ? " (--no-warm)" : "");
	}
	printf("replay's own memory (mapped, virtual): decoder buffers %s Kb and thread stats %s "
	       "Kb at most (per "
	       "live thread, reused by the next thread to start), slot table %s Kb\n",
	       util_fmt_u64(a, sizeof(a), r->decoder_peak_bytes / 1024),
	       util_fmt_u64(b, sizeof(b), r->thread_state_peak_bytes / 1024),
	       util_fmt_u64(c, sizeof(c), r->slot_table_bytes / 1024));
	if (r->unexpected_ok || r->unexpected_fail)
		printf("results unlike the trace: %" PRIu64
		       " calls succeeded that failed when traced, %" PRIu64
		       " failed that succeeded\n",
		       r->unexpected_ok, r->unexpected_fail);
	print_xops(o, r);
	if (r->emulated) {
		printf("emulated with the allocator's own calls (it lacks them):");
		for (unsigned k = 1; k <= AWL_OP_CALL_LAST; k++)
			if (r->emulated & (1u << k))
				printf(" %s", type_names[k]);
		printf("\n");
	}
}

static void print_json(const char *wl, const char *alloc, const char *tun, const struct rp_opts *o,
		       const struct rp_result *r)
{
	struct json_writer w;
	json_init(&w, stdout, 1);
	json_begin_object(&w);
	json_key(&w, "workload");
	json_string(&w, wl);
	json_key(&w, "allocator");
	json_string(&w, alloc);
	json_key(&w, "tunables");
	json_string(&w, tun ? tun : "");
	json_key(&w, "dry_run");
	json_bool(&w, o->dry_run);
	json_key(&w, "touch");
	json_string(&w, touch_names[r->touch]);
	json_key(&w, "threads");
	json_u64(&w, r->threads);
	json_key(&w, "ops");
	json_u64(&w, r->ops);
	json_key(&w, "wall_us");
	json_u64(&w, r->wall_ns / 1000);
	json_key(&w, "cycles");
	json_u64(&w, r->cycles);
	json_key(&w, "thread_us");
	json_u64(&w, r->thread_ns_sum / 1000);
	json_key(&w, "timing");
	json_string(&w, r->timing == RP_TIMING_SERIAL	? "serial"
			: r->timing == RP_TIMING_FAST	? "fast"
			: r->timing == RP_TIMING_SAMPLE ? "sample"
							: "off");
	json_key(&w, "timer_floor_cycles");
	json_u64(&w, r->timer_floor);
	json_key(&w, "thread_cpu_us");
	json_u64(&w, r->thread_cpu_ns_sum / 1000);
	json_key(&w, "involuntary_switches");
	json_u64(&w, r->invol_switches);
	json_key(&w, "clock");
	json_string(&w, r->clock);
	json_key(&w, "ticks_per_ns");
	json_double(&w, r->ticks_per_ns);
	json_key(&w, "max_rss_kb");
	json_u64(&w, r->rss_after_kb);
	json_key(&w, "max_rss_before_kb");
	json_u64(&w, r->rss_before_kb);
	json_key(&w, "rss_end_kb");
	json_u64(&w, r->vmrss_end_kb);
	json_key(&w, "vmsize_end_kb");
	json_u64(&w, r->vmsize_end_kb);
	json_key(&w, "ideal_rss_peak_bytes");
	json_u64(&w, r->ideal_peak);
	json_key(&w, "traced_rss_kb");
	json_u64(&w, (r->traced_rss + 1023) / 1024);
	json_key(&w, "total_call_cycles");
	json_u64(&w, r->total_cycles);
	json_key(&w, "waits");
	json_u64(&w, r->waits);
	json_key(&w, "workload_version");
	json_u64(&w, (uint64_t)r->version);
	json_key(&w, "threads_created");
	json_u64(&w, r->threads_created);
	json_key(&w, "max_live_threads");
	json_u64(&w, r->max_live_threads);
	json_key(&w, "trace_max_live_threads");
	json_u64(&w, r->trace_max_live);
	json_key(&w, "thread_starts_checked");
	json_u64(&w, r->overlap_checked);
	json_key(&w, "thread_starts_unlike_trace");
	json_u64(&w, r->overlap_diff);
	json_key(&w, "thread_create_us");
	json_u64(&w, r->thread_create_ns / 1000);
	json_key(&w, "thread_exit_us");
	json_u64(&w, r->thread_exit_ns / 1000);
	json_key(&w, "decoder_peak_bytes");
	json_u64(&w, r->decoder_peak_bytes);
	json_key(&w, "thread_state_peak_bytes");
	json_u64(&w, r->thread_state_peak_bytes);
	json_key(&w, "slot_table_bytes");
	json_u64(&w, r->slot_table_bytes);
	json_key(&w, "think");
	json_string(&w, rp_think_names[o->think]);
	json_key(&w, "think_us");
	json_u64(&w, r->think_ns / 1000);
	json_key(&w, "think_own_us");
	json_u64(&w, r->think_own_ns / 1000);
	json_key(&w, "think_shared");
	json_u64(&w, r->think_shared);
	json_key(&w, "warmed");
	json_u64(&w, r->warmed);
	json_key(&w, "think_trace_us");
	json_u64(&w, r->think_trace_ns / 1000);
	json_key(&w, "trace_duration_us");
	json_u64(&w, r->trace_duration_ns / 1000);
	json_key(&w, "wait_sleeps");
	json_u64(&w, r->sleeps);
	json_key(&w, "wait_us");
	json_u64(&w, r->wait_ns / 1000);
	json_key(&w, "unexpected_success");
	json_u64(&w, r->unexpected_ok);
	json_key(&w, "unexpected_failure");
	json_u64(&w, r->unexpected_fail);
	json_key(&w, "mallopt");
	json_bool(&w, !o->no_mallopt);
	json_key(&w, "mappings");
	json_bool(&w, !o->no_maps);
	json_key(&w, "warm");
	json_bool(&w, !o->no_warm);
	json_key(&w, "other_calls_traced");
	json_bool(&w, r->xops);
	json_key(&w, "mapped_bytes");
	json_u64(&w, r->map_bytes);
	json_key(&w, "usable_size_bytes");
	json_u64(&w, r->usable_bytes);
	json_key(&w, "usable_size_trace_bytes");
	json_u64(&w, r->usable_trace);
	json_key(&w, "other_calls");
	json_begin_object(&w);
	for (unsigned k = 0; k < RP_NXOPS; k++) {
		const struct rp_xstat *x = &r->x[k];
		json_key(&w, awl_op_name(AWL_OP_XFIRST + k));
		json_begin_object(&w);
		json_key(&w, "ops");
		json_u64(&w, x->ops);
		json_key(&w, "done");
		json_u64(&w, x->done);
		json_key(&w, "skipped");
		json_u64(&w, x->skipped);
		json_key(&w, "not_applicable");
		json_u64(&w, x->na);
		json_key(&w, "failed");
		json_u64(&w, x->failed);
		json_key(&w, "unlike_trace");
		json_u64(&w, x->unlike);
		json_end_object(&w);
	}
	json_end_object(&w);
	json_key(&w, "calls");
	json_begin_object(&w);
	for (unsigned k = 1; k <= RP_NTYPES; k++) {
		const struct rp_callstat *s = &r->st[k];
		if (!s->count && k > AWL_OP_CALL_LAST)
			continue;
		json_key(&w, type_names[k]);
		json_begin_object(&w);
		json_key(&w, "count");
		json_u64(&w, s->count);
		json_key(&w, "avg_cycles");
		json_u64(&w, rp_stat_avg(s));
		json_key(&w, "timed");
		json_u64(&w, s->timed);
		json_key(&w, "total_cycles"); /* estimated from the timed calls */
		json_u64(&w, rp_stat_total(s));
		json_key(&w, "p50_cycles");
		json_u64(&w, rp_percentile(s, 50));
		json_key(&w, "p99_cycles");
		json_u64(&w, rp_percentile(s, 99));
		json_key(&w, "max_cycles");
		json_u64(&w, s->max);
		json_end_object(&w);
	}
	json_end_object(&w);
	json_end_object(&w);
	json_finish(&w);
}

/* compare reads these "key value" lines. */
static void print_kv(const struct rp_result *r)
{
	printf("wall_us %" PRIu64 "\ntotal_call_cycles %" PRIu64 "\nmax_rss_kb %" PRIu64
	       "\nrss_end_kb %" PRIu64 "\nideal_rss_peak_bytes %" PRIu64 "\nthread_cpu_us %" PRIu64
	       "\nthink_us %" PRIu64 "\nthreads_created %" PRIu64 "\n",
	       r->wall_ns / 1000, r->total_cycles, r->rss_after_kb, r->vmrss_end_kb, r->ideal_peak,
	       r->thread_cpu_ns_sum / 1000, r->think_ns / 1000, r->threads_created);
	for (unsigned k = 1; k <= AWL_OP_CALL_LAST; k++)
		printf("count_%s %" PRIu64 "\navg_%s %" PRIu64 "\n", type_names[k], r->st[k].count,
		       type_names[k], rp_stat_avg(&r->st[k]));
	for (unsigned k = 0; k < RP_NXOPS; k++)
		printf("done_%s %" PRIu64 "\n", awl_op_name(AWL_OP_XFIRST + k), r->x[k].done);
	printf("mapped_kb %" PRIu64 "\ntrace_duration_us %" PRIu64 "\nwait_us %" PRIu64
	       "\ntraced_rss_kb %" PRIu64 "\n",
	       r->map_bytes / 1024, r->trace_duration_ns / 1000, r->wait_ns / 1000,
	       (r->traced_rss + 1023) / 1024);
}

int rc_replay_parse(int argc, char **argv, rc_getopt_fn getopt_fn, struct rc_args *a)
{
	static const struct option opts[] = {
	    {"allocator", required_argument, NULL, 'a'},
	    {"tunable", required_argument, NULL, 'T'},
	    {"trim-interval", required_argument, NULL, 'I'},
	    {"no-mallopt", no_argument, NULL, 'O'},
	    {"no-mappings", no_argument, NULL, 'M'},
	    {"no-warm", no_argument, NULL, 'W'},
	    {"touch", required_argument, NULL, 't'},
	    {"timing", required_argument, NULL, 'm'},
	    {"timeline", required_argument, NULL, 'L'},
	    {"think", required_argument, NULL, 'K'},
	    {"spin", required_argument, NULL, 'S'},
	    {"membarrier", no_argument, NULL, 'B'},
	    {"interval", required_argument, NULL, 'i'},
	    {"json", no_argument, NULL, 'j'},
	    {"kv", no_argument, NULL, 'k'},
	    {"dry-run", no_argument, NULL, 'n'},
	    {"dj", no_argument, NULL, 'D'},
	    {"extras", no_argument, NULL, 'E'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	memset(a, 0, sizeof(*a));
	a->o.touch = RP_TOUCH_AUTO;
	a->o.timing = RP_TIMING_SAMPLE;
	a->alloc = "glibc";
	int c;
	optind = 1;
	while ((c = getopt_fn(argc, argv, "a:T:jnh", opts, NULL)) != -1) {
		char *e;
		switch (c) {
		case 'a':
			a->alloc = optarg;
			break;
		case 'T':
			if (strncmp(optarg, "glibc.", 6) || !strchr(optarg, '=')) {
				util_err("replay: bad tunable '%s' (want glibc.malloc.NAME=VALUE)",
					 optarg);
				return 2;
			}
			if ((a->tun.len && util_buf_puts(&a->tun, ":") < 0) ||
			    util_buf_puts(&a->tun, optarg) < 0)
				util_die_nomem();
			break;
		case 'I':
			a->o.trim_interval = strtoull(optarg, &e, 10);
			if (*e || !*optarg) {
				util_err("replay: bad --trim-interval '%s'", optarg);
				return 2;
			}
			break;
		case 'O':
			a->o.no_mallopt = 1;
			break;
		case 'M':
			a->o.no_maps = 1;
			break;
		case 'W':
			a->o.no_warm = 1;
			break;
		case 't':
			if (!strcmp(optarg, "none"))
				a->o.touch = RP_TOUCH_NONE;
			else if (!strcmp(optarg, "first"))
				a->o.touch = RP_TOUCH_FIRST;
			else if (!strcmp(optarg, "all"))
				a->o.touch = RP_TOUCH_ALL;
			else if (!strcmp(optarg, "trace"))
				a->o.touch = RP_TOUCH_TRACE;
			else {
				util_err("replay: bad --touch '%s' (trace, first, all, none)",
					 optarg);
				return 2;
			}
			break;
		case 'm':
			if (!strcmp(optarg, "sample"))
				a->o.timing = RP_TIMING_SAMPLE;
			else if (!strcmp(optarg, "serial"))
				a->o.timing = RP_TIMING_SERIAL;
			else if (!strcmp(optarg, "fast"))
				a->o.timing = RP_TIMING_FAST;
			else if (!strcmp(optarg, "off"))
				a->o.timing = RP_TIMING_OFF;
			else {
				util_err("replay: bad --timing '%s' (sample, serial, fast, off)",
					 optarg);
				return 2;
			}
			break;
		case 'L':
			a->o.timeline = optarg;
			break;
		case 'K': {
			int k = rp_think_parse(optarg);
			if (k < 0) {
				util_err("replay: bad --think '%s' (on, whole, share, off)",
					 optarg);
				return 2;
			}
			a->o.think = (enum rp_think)k;
			break;
		}
		case 'S': {
			unsigned long v = strtoul(optarg, &e, 10);
			if (*e || !*optarg || v > 100000000ul) {
				util_err("replay: bad --spin '%s'", optarg);
				return 2;
			}
			a->o.spin = v ? (unsigned)v : UINT_MAX;
			break;
		}
		case 'B':
			a->o.membarrier = 1;
			break;
		case 'i':
			a->o.timeline_ms = (unsigned)strtoul(optarg, &e, 10);
			if (*e || !a->o.timeline_ms) {
				util_err("replay: bad --interval '%s'", optarg);
				return 2;
			}
			break;
		case 'j':
			a->json = 1;
			break;
		case 'k':
			a->kv = 1;
			break;
		case 'n':
			a->alloc = "none";
			break;
		case 'D':
			a->dj = 1;
			break;
		case 'E':
			a->extras = 1;
			break;
		case 'h':
			replay_usage(stdout);
			return 1;
		default:
			replay_usage(stderr);
			return 2;
		}
	}
	if (optind + 1 != argc) {
		util_err("replay: need exactly one WORKLOAD");
		replay_usage(stderr);
		return 2;
	}
	a->workload = argv[optind];
	a->o.dry_run = !strcmp(a->alloc, "none");
	return 0;
}

void rc_args_free(struct rc_args *a)
{
	util_buf_free(&a->tun);
}

int rc_replay_run(const struct rc_args *a)
{
	char eb[1024];
	struct rp_result *res = calloc(1, sizeof(*res));
	if (!res)
		util_die_nomem();
	/* a dj/malloc workload runs as its alloctrace translation */
	char djtmp[4096];
	struct dj_wl_stats djs;
	const char *wl = a->workload;
	int isdj = rp_dj_prepare(wl, djtmp, sizeof(djtmp), &djs, eb, sizeof(eb));
	if (isdj < 0) {
		util_err("replay: %s", eb);
		free(res);
		return 1;
	}
	if (isdj) {
		wl = djtmp;
		if (!a->kv && !a->json)
			util_warn("replay: dj/malloc workload %s: %" PRIu32 " threads, %" PRIu64
				  " calls, %" PRIu64 " syncs kept as %" PRIu64 " waits, %" PRIu64
				  " unsynchronised slot uses ordered",
				  a->workload, djs.threads, djs.calls[0], djs.syncs_r, djs.waits,
				  djs.races_fixed);
	}
	int failed = rp_replay(wl, &a->o, res, eb, sizeof(eb)) < 0;
	if (isdj)
		unlink(djtmp);
	if (failed) {
		util_err("replay: %s", eb);
		free(res);
		return 1;
	}
	warn_descheduled(res);
	if (a->o.touch == RP_TOUCH_TRACE && !res->has_touch)
		util_warn("replay: %s has no TOUCH ops (its trace has no resident counts): "
			  "--touch trace wrote every block as first",
			  a->workload);
	if (a->kv)
		print_kv(res);
	else if (a->json)
		print_json(a->workload, a->alloc, a->tun.data, &a->o, res);
	else if (a->dj)
		rp_dj_print(stdout, res);
	else
		print_text(a->workload, a->alloc, &a->o, res);
	if (a->dj && a->extras && !a->kv && !a->json) {
		/* alloctrace's own report, on stderr: stdout stays dj's */
		fflush(stdout);
		int saved = dup(1);
		if (saved >= 0 && dup2(2, 1) >= 0) {
			print_text(a->workload, a->alloc, &a->o, res);
			fflush(stdout);
			dup2(saved, 1);
		}
		if (saved >= 0)
			close(saved);
	}
	free(res);
	int rc = 0;
	if (fflush(stdout) != 0 || ferror(stdout)) {
		util_err("replay: write error on standard output");
		rc = 1;
	}
	return rc;
}
