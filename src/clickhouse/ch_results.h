/* ch_results.h - replay results into ClickHouse (`compare --clickhouse`).
 *
 * Every run of a compare becomes one row of replay_runs: the workload, the
 * allocator (name, library, its Debian package version), its tunables, the
 * host and the metrics, all rows of one compare sharing a run_id.  The rows
 * go in one INSERT (one block: all of them or none).  The view
 * replay_medians gives what `compare --json` prints: median, min and max of
 * each metric per allocator (docs/CLICKHOUSE.md).
 */
#ifndef CH_RESULTS_H
#define CH_RESULTS_H

#include <stddef.h>
#include <stdint.h>

#include "ch_client.h"

struct ch_replay_col {
	const char *spec;      /* as given: glibc+glibc.malloc.arena_max=1 */
	const char *allocator; /* glibc, jemalloc, PATH.so ... */
	const char *lib;       /* the preloaded library, "" for glibc/none */
	const char *const *tunables;
	int ntunables;
	const double *const *values; /* values[metric][run] */
};

struct ch_replay_set {
	const char *workload;
	const char *const *options; /* "touch=first", ... */
	int noptions;
	int runs;
	const char *const *metrics; /* compare's JSON keys: wall_ms, max_rss_mib ... */
	int nmetrics;
	const struct ch_replay_col *cols;
	int ncols;
};

/* Store the runs in database db (tables created if missing).  Metrics
 * without a column in replay_runs are skipped.  0, or -1 with err filled;
 * *run_id receives the compare's id. */
int ch_results_store(struct ch_client *c, const char *db, const struct ch_replay_set *s,
		     uint64_t *run_id, char *err, size_t errlen);

/* The Debian package version of the package holding library path lib
 * ("" for glibc: libc's), e.g. "5.3.0-1"; "" if unknown. */
void ch_allocator_version(const char *lib, char *out, size_t len);

#endif
