/* load.c - `alloctrace load TRACE... --clickhouse URL`: traces into
 * ClickHouse (src/clickhouse/, docs/CLICKHOUSE.md). */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clickhouse/ch_client.h"
#include "clickhouse/ch_load.h"
#include "clickhouse/ch_schema.h"
#include "cmds/cmds.h"
#include "util_msg.h"

static void load_usage(FILE *out)
{
	fprintf(out,
		"usage: alloctrace load TRACE... --clickhouse URL [--database DB]\n"
		"                       [--events all|none] [--name NAME] [--label KEY=VALUE]...\n"
		"                       [--replace] [--cluster NAME]\n"
		"       alloctrace load --clickhouse URL [--database DB] [--cluster NAME] "
		"--schema-only\n"
		"Stream traces (files or `record` directories) into ClickHouse: events,\n"
		"stacks and symbolized frames, modules, processes, threads, RSS samples,\n"
		"per-stack and per-thread numbers (docs/CLICKHOUSE.md).  A trace already\n"
		"loaded completely is left alone; an interrupted load never counts.\n"
		"  --clickhouse URL  the server's HTTP interface, e.g. http://127.0.0.1:8123\n"
		"                    (default: $ALLOCTRACE_CLICKHOUSE)\n"
		"  --database DB     default alloctrace; created with the tables if missing\n"
		"  --events none     only the per-stack and per-thread numbers (for traces too\n"
		"                    big to keep call by call); default all\n"
		"  --name NAME       loads.name (default: the trace's path)\n"
		"  --label K=V       loads.labels, e.g. version=2.1 (repeatable)\n"
		"  --replace         load again a trace that is loaded already\n"
		"  --cluster NAME    also create <table>_all Distributed tables over the\n"
		"                    server's cluster NAME and insert through them\n"
		"  --schema-only     create the database and tables, load nothing\n");
}

int cmd_load(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"clickhouse", required_argument, NULL, 'c'},
	    {"database", required_argument, NULL, 'd'},
	    {"events", required_argument, NULL, 'e'},
	    {"name", required_argument, NULL, 'n'},
	    {"label", required_argument, NULL, 'l'},
	    {"replace", no_argument, NULL, 'r'},
	    {"cluster", required_argument, NULL, 'C'},
	    {"schema-only", no_argument, NULL, 's'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *url = getenv("ALLOCTRACE_CLICKHOUSE"), *db = "alloctrace", *cluster = NULL;
	const char *labels[64];
	struct ch_load_opts o = {.events = 1, .labels = labels};
	int schema_only = 0, c;
	optind = 1;
	while ((c = cmdu_getopt(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			url = optarg;
			break;
		case 'd':
			db = optarg;
			break;
		case 'e':
			if (strcmp(optarg, "all") && strcmp(optarg, "none")) {
				util_err("load: --events takes all or none");
				return 2;
			}
			o.events = !strcmp(optarg, "all");
			break;
		case 'n':
			o.name = optarg;
			break;
		case 'l':
			if (o.nlabels == sizeof(labels) / sizeof(labels[0])) {
				util_err("load: at most 64 labels");
				return 2;
			}
			labels[o.nlabels++] = optarg;
			break;
		case 'r':
			o.replace = 1;
			break;
		case 'C':
			cluster = optarg;
			break;
		case 's':
			schema_only = 1;
			break;
		case 'h':
			load_usage(stdout);
			return 0;
		default:
			load_usage(stderr);
			return 2;
		}
	}
	if (!url || !*url) {
		util_err("load: no --clickhouse URL given");
		load_usage(stderr);
		return 2;
	}
	if (schema_only != (optind >= argc)) {
		util_err(schema_only ? "load: --schema-only takes no TRACE"
				     : "load: no trace file or directory given");
		load_usage(stderr);
		return 2;
	}
	if (o.name && argc - optind > 1) {
		util_err("load: --name needs a single TRACE");
		return 2;
	}
	char err[1024];
	struct ch_client *ch = ch_open(url, NULL, err, sizeof(err));
	if (!ch) {
		util_err("load: %s", err);
		return 2;
	}
	int rc = 0;
	if (ch_schema_ensure(ch, db, err, sizeof(err)) < 0 ||
	    (cluster && ch_schema_distributed(ch, db, cluster, err, sizeof(err)) < 0)) {
		util_err("load: %s", err);
		rc = 1;
	}
	if (cluster && !rc) {
		/* a 200 answer then means: written on the shard */
		o.distributed = 1;
		ch_set(ch, "insert_distributed_sync", "1");
	}
	for (int i = optind; i < argc && !rc; i++) {
		struct ch_load_result r;
		if (ch_load_trace(ch, db, argv[i], &o, &r, err, sizeof(err)) < 0) {
			util_err("load: %s: %s", argv[i], err);
			if (r.load_id)
				util_err(
				    "load: %s: trace %" PRIu64
				    " is not loaded completely (load %" PRIu64
				    " left incomplete, invisible to complete_loads); load it again",
				    argv[i], r.trace_id, r.load_id);
			rc = 1;
		} else if (r.skipped) {
			printf("%s: trace %" PRIu64
			       " is loaded already (--replace loads it again)\n",
			       argv[i], r.trace_id);
		} else {
			printf("%s: trace %" PRIu64 " loaded into %s: %" PRIu32
			       " process%s, %" PRIu64 " calls, %" PRIu64 " rows (%" PRIu64
			       " events) in %.2f s, %.0f rows/s\n",
			       argv[i], r.trace_id, db, r.processes, r.processes == 1 ? "" : "es",
			       r.calls, r.rows, r.event_rows, r.seconds,
			       r.seconds > 0 ? (double)r.rows / r.seconds : 0.0);
		}
	}
	ch_close(ch);
	return rc;
}
