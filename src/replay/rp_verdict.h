/* rp_verdict.h - compare's answer to "is swapping the allocator worth it":
 * per allocator, the predicted run time (replay wall time, with think
 * time) and its change against the first column with a range from the
 * runs, and the Max RSS change, as one line:
 *
 *   tcmalloc: -9% time (+-2%), +14% Max RSS
 *
 * Runs are interleaved (A B C, A B C, ...), so run i of every column saw
 * the same machine: the change is the median of the per-run ratios
 * (column / first column), the range half the spread of those ratios.
 *
 * Max RSS: when the workload knows the traced program's Max RSS, the
 * prediction is that plus the replay's difference from the first column
 * (median of the per-run differences), and the change is that
 * difference over it: the replay holds the heap but not the program's
 * code and data, so its own ratios overstated every change of a program
 * whose heap is a small part of its memory (python-threads: +46% under
 * jemalloc for +20% real, bench/fidelity/RESULTS.md).  Without it, the
 * replay's own Max RSS and ratios. */
#ifndef RP_VERDICT_H
#define RP_VERDICT_H

#include <stddef.h>

struct rp_verdict {
	int runs;
	double time_ms;	       /* median wall time */
	double time_change;    /* median of the per-run ratios - 1 */
	double time_range;     /* (max ratio - min ratio) / 2; 0 with 1 run */
	double rss_mib;	       /* the predicted Max RSS (see above) */
	double rss_change;     /* its change against the first column */
	double replay_rss_mib; /* the replay's median Max RSS */
	int rss_anchored;      /* rss_mib is the traced program's plus a difference */
	double ideal_mib;      /* the floor: peak live requested bytes */
};

/* wall/rss: runs values of this column and of the first (base) one;
 * traced_mib: the traced program's Max RSS, 0 if unknown. */
void rp_verdict_compute(const double *wall, const double *base_wall, const double *rss,
			const double *base_rss, int runs, double ideal_mib, double traced_mib,
			struct rp_verdict *v);
/* "NAME: -9% time (+-2%), +14% Max RSS" (no newline); returns
 * snprintf's result. */
int rp_verdict_line(char *buf, size_t len, const char *name, const struct rp_verdict *v);

#endif
