/* ch_schema.h - the alloctrace tables in ClickHouse (docs/CLICKHOUSE.md).
 *
 * One definition per table (columns in RowBinary order, engine, order key)
 * serves three uses: the CREATE TABLE statements, the column lists of the
 * inserts, and the check that a database created earlier holds exactly this
 * schema (an older alloctrace's tables are refused with a message, never
 * written into).
 */
#ifndef CH_SCHEMA_H
#define CH_SCHEMA_H

#include <stddef.h>

#include "ch_client.h"

/* Bump on any change of a table below. */
#define CH_SCHEMA_VERSION 1

enum ch_table {
	CH_T_LOADS,
	CH_T_PROCESSES,
	CH_T_THREADS,
	CH_T_EVENTS,
	CH_T_STACKS,
	CH_T_FRAMES,
	CH_T_MODULES,
	CH_T_RSS,
	CH_T_STACK_STATS,
	CH_T_THREAD_STATS,
	CH_T_REPLAY_RUNS,
	CH_T_COUNT
};

/* The metrics of a replay (compare's JSON keys), one Float64 column each in
 * replay_runs, in this order. */
#define CH_REPLAY_METRICS(X)                                                                       \
	X(wall_ms)                                                                                 \
	X(thread_cpu_ms)                                                                           \
	X(call_mcycles)                                                                            \
	X(max_rss_mib)                                                                             \
	X(rss_end_mib)                                                                             \
	X(malloc_cycles)                                                                           \
	X(calloc_cycles)                                                                           \
	X(realloc_cycles)                                                                          \
	X(free_cycles)                                                                             \
	X(other_cycles)

/* Table name ("events") and its insert column list ("trace_id, ..."). */
const char *ch_table_name(enum ch_table t);
const char *ch_table_columns(enum ch_table t);

/* Create the database, the tables and views if missing, after checking
 * that what exists is this version's schema.  0, or -1 with err filled. */
int ch_schema_ensure(struct ch_client *c, const char *db, char *err, size_t errlen);

/* Create <table>_all Distributed tables over cluster (a <remote_servers>
 * entry of the server's configuration) next to the local ones, sharded by
 * trace_id (replay_runs by run_id).  0, or -1 with err filled. */
int ch_schema_distributed(struct ch_client *c, const char *db, const char *cluster, char *err,
			  size_t errlen);

#endif
