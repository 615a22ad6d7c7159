/* rp_replay.h - the workload simulator (`alloctrace replay`, `trace_run`).
 *
 * One thread per workload thread runs its op stream against the malloc of
 * this process (whatever LD_PRELOAD put there).  Root threads start with
 * the replay; the others are created by their parent's SPAWN op and joined
 * when their stream ends, so threads overlap as in the traced program.
 * WAIT ops spin briefly (only while there is a core for every running
 * replay thread), then sleep on a futex.  THINK ops spend the traced
 * program's time between calls as memory-touching work (--think).  Each call is timed with the
 * cheapest stable clock (rp_ticks(), fenced: enum rp_timing) minus the clock's own floor; decoding,
 * slot bookkeeping and touching memory are outside the timed region.
 */
#ifndef RP_REPLAY_H
#define RP_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "atr_err.h"
#include "awl_workload.h"

/* How the replay writes a block it allocated.  TRACE: a block with a
 * TOUCH op (the workload's AWL_FEAT_TOUCH: large blocks) as many pages as
 * the program had resident, the others as FIRST.  AUTO: TRACE if the
 * workload has TOUCH ops, else FIRST (workloads from older traces). */
enum rp_touch { RP_TOUCH_NONE, RP_TOUCH_FIRST, RP_TOUCH_ALL, RP_TOUCH_TRACE, RP_TOUCH_AUTO };
/* How a call is timed: SERIAL fences the clock reads so the call runs
 * between them and subtracts the empty-region floor; FAST reads the clock
 * without fences (cheaper, but a call that takes less than the clock
 * read's latency measures as that latency); OFF times nothing (lowest
 * overhead: wall time only); SAMPLE (the commands' default) times about
 * one call in RP_TIMING_SAMPLE_EVERY of each thread as SERIAL does and
 * counts the others: SERIAL's two fenced reads cost ~90 ns per call here,
 * which the wall time (the predicted run time) would carry
 * (docs/REPLAY.md, "Timing"). */
enum rp_timing { RP_TIMING_SERIAL, RP_TIMING_FAST, RP_TIMING_OFF, RP_TIMING_SAMPLE };
#define RP_TIMING_SAMPLE_EVERY 32u
/* THINK ops: OFF skips them (calls back to back), ON spends them writing a
 * per-thread working set (RP_THINK_WSET bytes) until the clock says the
 * gap is spent, less the replay's own work between the calls (decoding,
 * its tables, TOUCH's page writes: it stands in for the program's work
 * there; measured on about one call in RP_OWN_SAMPLE_EVERY); WHOLE spends
 * every gap in full on top of that work; SHARE spends gaps as WHOLE, but
 * while more replay threads run than there are cores only the thread's
 * share of a gap (cores / running threads) as work, the rest being the
 * trace's preemption, which the replay's own threads reproduce. */
enum rp_think { RP_THINK_ON, RP_THINK_OFF, RP_THINK_SHARE, RP_THINK_WHOLE };
/* --think's names, by enum rp_think; rp_think_parse: the mode named s, or
 * -1 (replay and compare take the same names). */
extern const char *const rp_think_names[4];
int rp_think_parse(const char *s);
#define RP_OWN_SAMPLE_EVERY 32u
/* A sample of the replay's own work between two calls longer than this is
 * a preemption or an interrupt, not work: left out. */
#define RP_OWN_SAMPLE_MAX_NS 50000u
#define RP_THINK_WSET	     (8u << 10)
/* Of a longer gap, only this much is spent working, the rest sleeping. */
#define RP_THINK_SPIN_MAX_NS 500000u
/* Pause iterations a WAIT spins before it sleeps (docs/REPLAY.md). */
#define RP_SPIN_DEFAULT 200u
/* A WAIT while more replay threads run than cores: sched_yield this many
 * times (the thread waited for may be the one that gets the core) before
 * sleeping.  bench/replay/RESULTS.md, "Think time: CPU records merged,
 * sampled durations, waits that yield": 16 took the 200-thread replay
 * from 21,000 futex sleeps to 4,500 and 13% off its wall time (--think
 * off); 64 and 256 saved a little more time for 10-20% more CPU. */
#define RP_WAIT_YIELDS 16u

#define RP_HIST_BUCKETS 496
#define RP_NTYPES	(AWL_OP_CALL_LAST + 1) /* [0] unused */
#define RP_TRIM		RP_NTYPES	       /* stats slot for malloc_trim */

struct rp_opts {
	enum rp_touch touch;
	uint64_t trim_interval; /* ops per thread between malloc_trim(0); 0 off */
	int dry_run;		/* bookkeeping only: no allocator calls */
	const char *timeline;	/* file for "ms vmsize_kb rss_kb ideal_kb" */
	unsigned timeline_ms;	/* sampling period (default 10) */
	enum rp_timing timing;
	enum rp_think think;
	unsigned spin;	/* pauses before a wait sleeps; 0: RP_SPIN_DEFAULT, UINT_MAX: none */
	int no_mallopt; /* skip the program's mallopt and malloc_trim ops */
	int no_maps;	/* skip the program's mappings (mmap .. madvise ops) */
	int no_warm;	/* --no-warm: no block fetched before its free */
	int membarrier; /* --membarrier: sleepers issue membarrier(), publishers no fence */
};

/* The program's other calls (workload v3 ops AWL_OP_XFIRST + i). */
#define RP_NXOPS (AWL_OP_XLAST - AWL_OP_XFIRST + 1)
struct rp_xstat {
	uint64_t ops;	  /* in the streams run */
	uint64_t done;	  /* made */
	uint64_t skipped; /* --no-mallopt, --no-mappings */
	uint64_t na;	  /* the allocator under test does not export the function */
	uint64_t failed;  /* failed here (or its mapping's mmap had) */
	uint64_t unlike;  /* mallopt, malloc_trim: another result than traced */
};

struct rp_callstat {
	uint64_t count, sum, max;
	uint64_t timed; /* calls in sum, max and hist (count but for SAMPLE) */
	uint64_t hist[RP_HIST_BUCKETS];
};

struct rp_result {
	uint32_t threads;
	uint64_t ops, waits, sleeps;
	uint64_t wait_ns;	   /* thread time in waits that did not find their op done */
	uint64_t threads_created;  /* replay threads run (roots included) */
	uint32_t max_live_threads; /* most alive at once (spawn .. exit op) */
	uint32_t trace_max_live;   /* the same in the trace (workload header) */
	uint64_t overlap_checked, overlap_diff;	   /* starts whose live-thread count
						       differed from the trace's */
	uint64_t thread_create_ns, thread_exit_ns; /* pthread_create; teardown + join */
	uint64_t decoder_peak_bytes;		   /* decoder buffers alive at once */
	uint64_t thread_state_peak_bytes;	   /* per-thread stats + think sets (mapped) */
	uint64_t slot_table_bytes;		   /* the replay's pointer table */
	uint64_t think_ns, think_trace_ns;	   /* spent; in the workload */
	uint64_t think_own_ns; /* RP_THINK_ON: the replay's own work between calls, taken out */
	uint64_t think_shared; /* THINK ops spent as a share (RP_THINK_SHARE) */
	uint64_t warmed;       /* blocks fetched in a think time before their
				  free or realloc (not --no-warm) */
	uint64_t trace_duration_ns; /* the traced run, first to last record */
	int version;		    /* workload format version */
	enum rp_touch touch;	    /* the mode used (AUTO resolved) */
	int has_touch;		    /* the workload has TOUCH ops */
	uint64_t wall_ns, cycles, thread_ns_sum;
	uint64_t thread_cpu_ns_sum;	      /* CPU time of the replay threads */
	uint64_t invol_switches;	      /* their involuntary context switches */
	uint64_t rss_before_kb, rss_after_kb; /* ru_maxrss */
	uint64_t vmrss_end_kb, vmsize_end_kb; /* /proc/self/statm at the end */
	uint64_t ideal_peak;		      /* from the workload */
	uint64_t traced_rss; /* the traced program's Max RSS (workload), bytes; 0 unknown */
	uint64_t unexpected_ok, unexpected_fail; /* results that differ from the trace */
	uint64_t emulated;			 /* calls the allocator lacks, emulated */
	struct rp_callstat st[RP_NTYPES + 1];
	struct rp_xstat x[RP_NXOPS];
	int xops;			     /* the workload has them (AWL_FEAT_XOPS) */
	uint64_t map_bytes;		     /* mapped by mmap ops and mremap growth */
	uint64_t usable_trace, usable_bytes; /* malloc_usable_size results: traced, here */
	uint64_t total_cycles;
	uint64_t timer_floor; /* ticks subtracted from every timed call */
	enum rp_timing timing;
	double ticks_per_ns;
	const char *clock; /* "tsc", "cntvct", "clock_gettime" */
};

uint64_t rp_ticks(void);
/* Percentile (0..100) of a call stat in ticks, from its histogram. */
uint64_t rp_percentile(const struct rp_callstat *s, double pct);
/* The mean time of a timed call, and the estimated time of all count. */
uint64_t rp_stat_avg(const struct rp_callstat *s);
uint64_t rp_stat_total(const struct rp_callstat *s);

/* Verify (in a forked child, so its memory does not count in this
 * process's max RSS) and run.  0, or a negative atr_err with the message
 * in errbuf: awl_open's, ATR_E_RECORD (the workload does not verify or
 * decode), ATR_E_NOMEM (tables, threads, decoder buffers), ATR_E_IO (the
 * --timeline file). */
int rp_replay(const char *path, const struct rp_opts *o, struct rp_result *res, char *errbuf,
	      size_t errlen);

#endif
