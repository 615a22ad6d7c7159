/* ch_load.h - stream a trace into ClickHouse (`alloctrace load`).
 *
 * A trace (a trace file, or a `record` directory of them: one process
 * each) gets a trace id, a hash of its processes' identities (pid, ppid,
 * exec number, start times, file size), so loading it again finds it.
 * Every load of it gets a new load id: all rows carry both, and a load
 * counts only once its `loads` row with complete = 1 is written, after every
 * other row was accepted (the view complete_loads names the newest
 * complete load of each trace).  Loading a trace that is complete already
 * does nothing unless `replace` is set; after a complete load the rows of
 * the trace's other loads (older ones, or a half-loaded one) are deleted.
 *
 * Rows are sent in RowBinary batches of at most CH_BATCH_ROWS rows or
 * CH_BATCH_BYTES: memory is one batch per table, the live set and the
 * stacks of the process being loaded.
 */
#ifndef CH_LOAD_H
#define CH_LOAD_H

#include <stddef.h>
#include <stdint.h>

#include "ch_client.h"

struct ch_load_opts {
	const char *name;	   /* loads.name; NULL: the trace's real path */
	const char *const *labels; /* loads.labels, e.g. "version=2.1" */
	size_t nlabels;
	int events;	 /* 1: every record; 0: per-stack and per-thread aggregates only */
	int replace;	 /* load again when complete already */
	int distributed; /* insert through the <table>_all Distributed tables */
};

struct ch_load_result {
	uint64_t trace_id, load_id;
	uint64_t rows, event_rows, calls, bytes_sent;
	uint32_t processes;
	int skipped; /* complete already, nothing done */
	double seconds;
};

/* Load one trace (file or directory) into database db (created with
 * ch_schema_ensure() before).  0, or -1 with err filled (the load is then
 * not complete; rows sent so far stay invisible to complete_loads). */
int ch_load_trace(struct ch_client *c, const char *db, const char *path,
		  const struct ch_load_opts *o, struct ch_load_result *res, char *err,
		  size_t errlen);

/* The trace id of a trace without loading it.  0, or -1 with err filled. */
int ch_trace_id(const char *path, uint64_t *id, char *err, size_t errlen);

#endif
