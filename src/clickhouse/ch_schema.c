/* ch_schema.c - see ch_schema.h; the tables are explained in
 * docs/CLICKHOUSE.md. */
#include "ch_schema.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atr_reader.h"

struct ch_col {
	const char *name, *type;
};

struct ch_tdef {
	const char *name;
	const char *order; /* MergeTree ORDER BY */
	const struct ch_col *cols;
	char *list; /* "a, b, c": built on first use */
};

#define KEY                                                                                        \
	{"trace_id", "UInt64"}, {"load_id", "UInt64"},                                             \
	{                                                                                          \
		"proc", "UInt32"                                                                   \
	}

static const struct ch_col c_loads[] = {{"trace_id", "UInt64"},
					{"load_id", "UInt64"},
					{"name", "String"},
					{"labels", "Array(String)"},
					{"host", "String"},
					{"source", "String"},
					{"events_mode", "String"},
					{"processes", "UInt32"},
					{"event_rows", "UInt64"},
					{"calls", "UInt64"},
					{"started", "DateTime"},
					{"finished", "DateTime"},
					{"complete", "UInt8"},
					{"alloctrace_version", "String"},
					{NULL, NULL}};

static const struct ch_col c_processes[] = {KEY,
					    {"pid", "UInt32"},
					    {"ppid", "UInt32"},
					    {"exec_seq", "UInt32"},
					    {"path", "String"},
					    {"exe", "String"},
					    {"cmdline", "String"},
					    {"status", "UInt32"},
					    {"features", "UInt64"},
					    {"start_realtime_ns", "UInt64"},
					    {"start_mono_ns", "UInt64"},
					    {"ticks_per_sec", "Float64"},
					    {"ns_per_tick", "Float64"},
					    {"threads", "UInt32"},
					    {"records", "UInt64"},
					    {"calls", "UInt64"},
					    {"lost_records", "UInt64"},
					    {"untraced_calls", "UInt64"},
					    {"duration_ns", "UInt64"},
					    {"peak_live_bytes", "UInt64"},
					    {"peak_seq", "UInt64"},
					    {"peak_ns", "UInt64"},
					    {"leaked_bytes", "UInt64"},
					    {"leaked_blocks", "UInt64"},
					    {NULL, NULL}};

static const struct ch_col c_threads[] = {
    KEY, {"serial", "UInt32"}, {"tid", "UInt32"}, {NULL, NULL}};

static const struct ch_col c_events[] = {KEY,
					 {"seq", "UInt64"},
					 {"ts", "UInt64"},
					 {"thread", "UInt32"},
					 {"type", "UInt8"},
					 {"flags", "UInt8"},
					 {"chunk_flags", "UInt8"},
					 {"size", "UInt64"},
					 {"nmemb", "UInt64"},
					 {"align", "UInt64"},
					 {"ptr", "UInt64"},
					 {"ret", "UInt64"},
					 {"usable", "UInt64"},
					 {"stack", "UInt32"},
					 {"duration", "UInt64"},
					 {"born", "UInt8"},
					 {"released", "UInt8"},
					 {"released_stack", "UInt32"},
					 {"released_bytes", "UInt64"},
					 {"temporary", "UInt8"},
					 {"live_bytes", "UInt64"},
					 {"text", "String"},
					 {NULL, NULL}};

static const struct ch_col c_stacks[] = {KEY,
					 {"stack", "UInt32"},
					 {"key", "UInt64"},
					 {"ips", "Array(UInt64)"},
					 {"frames", "Array(String)"},
					 {NULL, NULL}};

static const struct ch_col c_frames[] = {KEY,
					 {"stack", "UInt32"},
					 {"n", "UInt32"},
					 {"function", "String"},
					 {"file", "String"},
					 {"line", "UInt32"},
					 {"module", "String"},
					 {"address", "UInt64"},
					 {"offset", "UInt64"},
					 {"inlined", "UInt8"},
					 {NULL, NULL}};

static const struct ch_col c_modules[] = {KEY,
					  {"start", "UInt64"},
					  {"size", "UInt64"},
					  {"bias", "UInt64"},
					  {"build_id", "String"},
					  {"path", "String"},
					  {"load_ns", "UInt64"},
					  {"unload_ns", "UInt64"},
					  {"main_program", "UInt8"},
					  {NULL, NULL}};

static const struct ch_col c_rss[] = {
    KEY, {"t_ns", "Int64"}, {"vmsize", "UInt64"}, {"rss", "UInt64"}, {NULL, NULL}};

static const struct ch_col c_stack_stats[] = {KEY,
					      {"stack", "UInt32"},
					      {"calls", "UInt64"},
					      {"bytes", "UInt64"},
					      {"peak_bytes", "UInt64"},
					      {"leaked_bytes", "UInt64"},
					      {"leaked_blocks", "UInt64"},
					      {"temporary", "UInt64"},
					      {NULL, NULL}};

static const struct ch_col c_thread_stats[] = {KEY,
					       {"serial", "UInt32"},
					       {"tid", "UInt32"},
					       {"calls", "UInt64"},
					       {"bytes", "UInt64"},
					       {"run_ns", "UInt64"},
					       {"alloc_ns", "UInt64"},
					       {NULL, NULL}};

#define METRIC_COL(m) {#m, "Float64"},
static const struct ch_col c_replay_runs[] = {{"run_id", "UInt64"},
					      {"time", "DateTime"},
					      {"host", "String"},
					      {"workload", "String"},
					      {"workload_name", "String"},
					      {"runs", "UInt32"},
					      {"run", "UInt32"},
					      {"column", "UInt32"},
					      {"allocator_spec", "String"},
					      {"allocator", "String"},
					      {"allocator_path", "String"},
					      {"allocator_version", "String"},
					      {"tunables", "Array(String)"},
					      {"options", "Array(String)"},
					      {"alloctrace_version", "String"},
					      CH_REPLAY_METRICS(METRIC_COL){NULL, NULL}};

#define PKEY "trace_id, load_id, proc"
static struct ch_tdef tdefs[CH_T_COUNT] = {
    [CH_T_LOADS] = {"loads", "trace_id, load_id", c_loads, NULL},
    [CH_T_PROCESSES] = {"processes", PKEY, c_processes, NULL},
    [CH_T_THREADS] = {"threads", PKEY ", serial", c_threads, NULL},
    /* stack first: a stack's calls are one range (drill-down by stack reads
     * only it) and its sizes compress together */
    [CH_T_EVENTS] = {"events", PKEY ", stack, seq", c_events, NULL},
    [CH_T_STACKS] = {"stacks", PKEY ", stack", c_stacks, NULL},
    [CH_T_FRAMES] = {"frames", PKEY ", stack, n", c_frames, NULL},
    [CH_T_MODULES] = {"modules", PKEY ", start", c_modules, NULL},
    [CH_T_RSS] = {"rss", PKEY ", t_ns", c_rss, NULL},
    [CH_T_STACK_STATS] = {"stack_stats", PKEY ", stack", c_stack_stats, NULL},
    [CH_T_THREAD_STATS] = {"thread_stats", PKEY ", serial", c_thread_stats, NULL},
    [CH_T_REPLAY_RUNS] = {"replay_runs", "workload_name, allocator, time, run_id", c_replay_runs,
			  NULL},
};

const char *ch_table_name(enum ch_table t)
{
	return tdefs[t].name;
}

const char *ch_table_columns(enum ch_table t)
{
	struct ch_tdef *d = &tdefs[t];
	if (!d->list) {
		struct util_buf b = {0};
		for (const struct ch_col *c = d->cols; c->name; c++)
			util_buf_printf(&b, "%s`%s`", c == d->cols ? "" : ", ", c->name);
		d->list = b.data; /* kept for the life of the process */
	}
	return d->list ? d->list : "";
}

/* Fails with err filled from the client. */
static int fail(struct ch_client *c, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s", ch_error(c));
	return -1;
}

/* Names are inserted into SQL: allow only what an identifier may hold. */
static int check_ident(const char *what, const char *s, char *err, size_t errlen)
{
	if (!*s)
		goto bad;
	for (const char *p = s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '_'))
			goto bad;
	return 0;
bad:
	snprintf(err, errlen, "%s '%s': only letters, digits and _ please", what, s);
	return -1;
}

/* The columns of the existing tables against the definitions. */
static int check_columns(struct ch_client *c, const char *db, int *ntables, char *err,
			 size_t errlen)
{
	char sql[512];
	struct util_buf ans = {0};
	snprintf(sql, sizeof(sql),
		 "SELECT table, name, type FROM system.columns WHERE database = '%s' FORMAT TSV",
		 db);
	*ntables = -1;
	if (ch_exec(c, sql, &ans) < 0) {
		util_buf_free(&ans);
		return fail(c, err, errlen);
	}
	int found[CH_T_COUNT] = {0}, rc = 0;
	*ntables = 0;
	for (char *line = ans.data, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		char *tab1 = strchr(line, '\t'), *tab2 = tab1 ? strchr(tab1 + 1, '\t') : NULL;
		if (!tab2)
			continue;
		*tab1 = *tab2 = 0;
		const char *table = line, *name = tab1 + 1, *type = tab2 + 1;
		for (int t = 0; t < CH_T_COUNT; t++) {
			if (strcmp(table, tdefs[t].name))
				continue;
			if (!found[t]++)
				(*ntables)++;
			const struct ch_col *col = tdefs[t].cols;
			while (col->name && strcmp(col->name, name))
				col++;
			if (!col->name || strcmp(col->type, type)) {
				if (!rc)
					snprintf(err, errlen,
						 "database %s: table %s has column %s %s, which "
						 "alloctrace's schema version %d %s",
						 db, table, name, type, CH_SCHEMA_VERSION,
						 col->name ? "types differently" : "does not have");
				rc = -1;
			}
		}
	}
	/* a column this version has and the table lacks */
	for (int t = 0; t < CH_T_COUNT && !rc; t++) {
		if (!found[t])
			continue;
		int n = 0;
		for (const struct ch_col *col = tdefs[t].cols; col->name; col++)
			n++;
		if (found[t] != n) {
			snprintf(
			    err, errlen,
			    "database %s: table %s has %d columns, alloctrace's schema version %d "
			    "has %d",
			    db, tdefs[t].name, found[t], CH_SCHEMA_VERSION, n);
			rc = -1;
		}
	}
	util_buf_free(&ans);
	return rc;
}

static const char view_complete[] =
    "CREATE VIEW IF NOT EXISTS %s.complete_loads AS "
    "SELECT trace_id, max(load_id) AS load_id FROM %s.loads WHERE complete = 1 GROUP BY trace_id";

static int call_types_view(struct util_buf *b, const char *db)
{
	util_buf_printf(
	    b,
	    "CREATE VIEW IF NOT EXISTS %s.call_types AS SELECT t.1 AS type, t.2 AS name "
	    "FROM (SELECT arrayJoin([",
	    db);
	for (unsigned t = 1; t <= ATR_T_META_LAST; t++) {
		const char *n = atr_type_name(t);
		if (strcmp(n, "unknown"))
			util_buf_printf(b, "(%u, '%s'), ", t, n);
	}
	for (unsigned t = ATR_T_XCALL_FIRST; t <= ATR_T_XCALL_LAST; t++)
		util_buf_printf(b, "(%u, '%s'), ", t, atr_type_name(t));
	return util_buf_printf(b, "(%u, 'realloc_release')]) AS t)", ATR_EV_REALLOC_RELEASE);
}

/* What `compare --json` prints, per compare (run_id) and allocator column:
 * median (the mean of the middle two for an even count), min, max. */
static int medians_view(struct util_buf *b, const char *db)
{
	util_buf_printf(
	    b,
	    "CREATE VIEW IF NOT EXISTS %s.replay_medians AS SELECT run_id, workload, "
	    "workload_name, column, allocator_spec, any(time) AS time, any(host) AS host, "
	    "any(allocator) AS allocator, any(allocator_path) AS allocator_path, "
	    "any(allocator_version) AS allocator_version, any(tunables) AS tunables, "
	    "any(options) AS options, count() AS runs",
	    db);
#define METRIC_AGG(m)                                                                              \
	util_buf_printf(b,                                                                         \
			", arraySort(groupArray(" #m ")) AS " #m "_sorted, if(runs %% 2 = 1, " #m  \
			"_sorted[intDiv(runs, 2) + 1], (" #m "_sorted[intDiv(runs, 2)] + " #m      \
			"_sorted[intDiv(runs, 2) + 1]) / 2) AS " #m "_median, min(" #m ") AS " #m  \
			"_min, max(" #m ") AS " #m "_max");
	CH_REPLAY_METRICS(METRIC_AGG)
#undef METRIC_AGG
	return util_buf_printf(b,
			       " FROM %s.replay_runs GROUP BY run_id, workload, workload_name, "
			       "column, allocator_spec",
			       db);
}

int ch_schema_ensure(struct ch_client *c, const char *db, char *err, size_t errlen)
{
	if (check_ident("database", db, err, errlen) < 0)
		return -1;
	if (ch_execf(c, "CREATE DATABASE IF NOT EXISTS %s", db) < 0)
		return fail(c, err, errlen);
	unsigned long long have = 0, ver = 0, nver = 0;
	char sql[512];
	snprintf(sql, sizeof(sql),
		 "SELECT count() FROM system.tables WHERE database = '%s' AND name = "
		 "'alloctrace_schema'",
		 db);
	if (ch_query_u64(c, sql, &have) < 0)
		return fail(c, err, errlen);
	int ntables;
	if (have) {
		snprintf(sql, sizeof(sql), "SELECT uniqExact(version) FROM %s.alloctrace_schema",
			 db);
		if (ch_query_u64(c, sql, &nver) < 0)
			return fail(c, err, errlen);
		snprintf(sql, sizeof(sql), "SELECT max(version) FROM %s.alloctrace_schema", db);
		if (ch_query_u64(c, sql, &ver) < 0)
			return fail(c, err, errlen);
		if (nver > 1 || ver != CH_SCHEMA_VERSION) {
			snprintf(
			    err, errlen,
			    "database %s holds alloctrace schema version %llu; this alloctrace "
			    "writes version %d: load into another --database, or move the old "
			    "tables away (docs/CLICKHOUSE.md, \"Schema versions\")",
			    db, nver > 1 ? 0ull : ver, CH_SCHEMA_VERSION);
			return -1;
		}
	}
	int cols_rc = check_columns(c, db, &ntables, err, errlen);
	if (cols_rc < 0 && ntables < 0)
		return -1; /* the query failed */
	if (!have && ntables > 0) {
		snprintf(err, errlen,
			 "database %s holds alloctrace tables without a schema version (an older "
			 "alloctrace, or someone else's): load into another --database",
			 db);
		return -1;
	}
	if (cols_rc < 0)
		return -1;
	struct util_buf b = {0};
	int rc = 0;
	for (int t = 0; t < CH_T_COUNT && !rc; t++) {
		b.len = 0;
		util_buf_printf(&b, "CREATE TABLE IF NOT EXISTS %s.%s (", db, tdefs[t].name);
		for (const struct ch_col *col = tdefs[t].cols; col->name; col++)
			util_buf_printf(&b, "%s`%s` %s", col == tdefs[t].cols ? "" : ", ",
					col->name, col->type);
		util_buf_printf(&b, ") ENGINE = MergeTree ORDER BY (%s)", tdefs[t].order);
		if (!b.data)
			rc = -1;
		else if (ch_exec(c, b.data, NULL) < 0)
			rc = fail(c, err, errlen);
	}
	if (!rc && !have) {
		if (ch_execf(c,
			     "CREATE TABLE IF NOT EXISTS %s.alloctrace_schema (version UInt32, "
			     "created DateTime) ENGINE = TinyLog",
			     db) < 0 ||
		    ch_execf(c, "INSERT INTO %s.alloctrace_schema VALUES (%d, now())", db,
			     CH_SCHEMA_VERSION) < 0)
			rc = fail(c, err, errlen);
	}
	if (!rc && ch_execf(c, view_complete, db, db) < 0)
		rc = fail(c, err, errlen);
	b.len = 0;
	if (!rc && (call_types_view(&b, db) < 0 || ch_exec(c, b.data, NULL) < 0))
		rc = fail(c, err, errlen);
	b.len = 0;
	if (!rc && (medians_view(&b, db) < 0 || ch_exec(c, b.data, NULL) < 0))
		rc = fail(c, err, errlen);
	util_buf_free(&b);
	return rc;
}

int ch_schema_distributed(struct ch_client *c, const char *db, const char *cluster, char *err,
			  size_t errlen)
{
	if (check_ident("cluster", cluster, err, errlen) < 0)
		return -1;
	for (int t = 0; t < CH_T_COUNT; t++) {
		const char *key = t == CH_T_REPLAY_RUNS ? "run_id" : "trace_id";
		if (ch_execf(c,
			     "CREATE TABLE IF NOT EXISTS %s.%s_all AS %s.%s "
			     "ENGINE = Distributed(%s, %s, %s, %s)",
			     db, tdefs[t].name, db, tdefs[t].name, cluster, db, tdefs[t].name,
			     key) < 0)
			return fail(c, err, errlen);
	}
	/* the views too: each shard answers for its own traces and runs */
	static const char *const views[][2] = {{"complete_loads", "trace_id"},
					       {"replay_medians", "run_id"}};
	for (size_t v = 0; v < sizeof(views) / sizeof(views[0]); v++)
		if (ch_execf(c,
			     "CREATE TABLE IF NOT EXISTS %s.%s_all AS %s.%s "
			     "ENGINE = Distributed(%s, %s, %s, %s)",
			     db, views[v][0], db, views[v][0], cluster, db, views[v][0],
			     views[v][1]) < 0)
			return fail(c, err, errlen);
	return 0;
}
