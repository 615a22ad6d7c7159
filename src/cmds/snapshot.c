/* snapshot.c - `alloctrace snapshot PID`: the trace of a running traced
 * process as it is now, without stopping or signalling it.
 *
 * The tracer writes its trace while the program runs: full blocks as
 * FRAMEs, the rest in per-thread staging blocks that are shared mappings of
 * the file, so the file always holds every record written so far (records
 * are published word 0 last).  A snapshot copies the file (found through
 * the process's mappings), marks the copy ATR_STATUS_SNAPSHOT and checks it
 * with the reader; a copy that caught a unit in the middle of being
 * written is taken again.  Every analysis command reads the copy: blocks
 * live at its end are the live heap at the snapshot (with `record
 * --sample`, estimated by stack), and `diff A B --by leaked` shows what grew
 * between two snapshots.  docs/SAMPLING.md, "Snapshots".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "atr_reader.h"
#include "cmds/cmds.h"
#include "util_msg.h"

#define SNAP_TRIES 20

static void snapshot_usage(FILE *out)
{
	fprintf(out,
		"usage: alloctrace snapshot [-o FILE] [--interval S [--count N]] PID\n"
		"Copy the trace of running traced process PID (alloctrace record, with or\n"
		"without --sample) as it is now, without stopping it; the copy is a trace\n"
		"whose end is this moment: `report --by leaked` shows the live heap by stack,\n"
		"`diff A B --by leaked` what grew between two snapshots.\n"
		"  -o, --output FILE  the copy (default snapshot-PID-<n>.atr, n = 1, 2, ...\n"
		"                     the first name not taken); with --interval a\n"
		"                     directory that receives snapshot-<n>.atr\n"
		"      --interval S   take one every S seconds until PID exits or Ctrl-C\n"
		"      --count N      with --interval: stop after N snapshots\n");
}

/* The trace file PID writes: the *.atr file it has mapped (its header and
 * staging blocks are shared mappings).  0, or 1 with the error shown. */
static int find_trace(long pid, char *path, size_t len)
{
	char maps[64];
	snprintf(maps, sizeof maps, "/proc/%ld/maps", pid);
	FILE *f = fopen(maps, "r");
	if (!f) {
		util_err("snapshot: process %ld: %s", pid, strerror(errno));
		return 1;
	}
	char line[PATH_MAX + 256];
	int found = 0;
	while (!found && fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = 0;
		char *p = strchr(line, '/');
		size_t l = p ? strlen(p) : 0;
		if (l > 4 && !strcmp(p + l - 4, ".atr") && l < len) {
			memcpy(path, p, l + 1);
			found = 1;
		}
	}
	fclose(f);
	if (!found)
		util_err("snapshot: process %ld has no trace file mapped: is it traced (alloctrace "
			 "record, or LD_PRELOAD=liballoctrace.so)?",
			 pid);
	return !found;
}

/* Copy src into dst (a new file), set the SNAPSHOT status bit in the copy
 * and check it with the reader.  0 ok, 1 failed (retry), -1 fatal (shown). */
static int copy_once(const char *src, const char *dst, char *why, size_t wl)
{
	int in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0) {
		util_err("snapshot: %s: %s", src, strerror(errno));
		return -1;
	}
	int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (out < 0) {
		util_err("snapshot: %s: %s", dst, strerror(errno));
		close(in);
		return -1;
	}
	static char buf[1 << 20];
	ssize_t n;
	uint64_t total = 0;
	int rc = 0;
	while ((n = read(in, buf, sizeof buf)) > 0) {
		atr_mark_snapshot(buf, total, (size_t)n);
		if (write(out, buf, (size_t)n) != n) {
			util_err("snapshot: %s: %s", dst, strerror(errno));
			rc = -1;
			break;
		}
		total += (uint64_t)n;
	}
	if (n < 0 && rc == 0) {
		util_err("snapshot: %s: %s", src, strerror(errno));
		rc = -1;
	}
	close(in);
	if (close(out) != 0 && rc == 0) {
		util_err("snapshot: %s: %s", dst, strerror(errno));
		rc = -1;
	}
	if (rc)
		return rc;
	/* a unit caught half-written reads as corrupt: the next copy won't */
	atr_file *f;
	if (atr_open(dst, &f, why, wl) < 0)
		return 1;
	uint64_t cnt;
	int r = atr_count_records(f, &cnt);
	if (r < 0)
		snprintf(why, wl, "%s", atr_last_error(f));
	atr_close(f);
	return r < 0;
}

static int take(long pid, const char *src, const char *dst)
{
	char why[1024] = "";
	for (int i = 0; i < SNAP_TRIES; i++) {
		int r = copy_once(src, dst, why, sizeof why);
		if (r <= 0) {
			if (r == 0)
				fprintf(stderr, "alloctrace: snapshot of process %ld: %s\n", pid,
					dst);
			return r < 0;
		}
		nanosleep(&(struct timespec){0, 20000000}, NULL);
	}
	util_err("snapshot: no consistent copy of %s in %d tries (last: %s)", src, SNAP_TRIES, why);
	unlink(dst);
	return 1;
}

static volatile sig_atomic_t snap_stop;

static void on_stop(int sig)
{
	(void)sig;
	snap_stop = 1;
}

int cmd_snapshot(int argc, char **argv)
{
	enum { O_INTERVAL = 256, O_COUNT };
	static const struct option opts[] = {
	    {"output", required_argument, NULL, 'o'},
	    {"interval", required_argument, NULL, O_INTERVAL},
	    {"count", required_argument, NULL, O_COUNT},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *out = NULL;
	double interval = 0;
	long count = 0;
	int c;
	optind = 1;
	while ((c = cmdu_getopt(argc, argv, "o:h", opts, NULL)) != -1) {
		char *end;
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case O_INTERVAL:
			errno = 0;
			interval = strtod(optarg, &end);
			if (errno || *end || end == optarg || !(interval >= 0.01) ||
			    interval > 1e7) {
				util_err("snapshot: --interval %s: must be seconds, at least 0.01",
					 optarg);
				return 2;
			}
			break;
		case O_COUNT:
			errno = 0;
			count = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || count < 1) {
				util_err("snapshot: --count %s: must be a positive number", optarg);
				return 2;
			}
			break;
		case 'h':
			snapshot_usage(stdout);
			return 0;
		default:
			snapshot_usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		util_err("snapshot: need one PID");
		snapshot_usage(stderr);
		return 2;
	}
	char *end;
	errno = 0;
	long pid = strtol(argv[optind], &end, 10);
	if (errno || *end || pid <= 0 || pid > INT_MAX) {
		util_err("snapshot: %s: not a process id", argv[optind]);
		return 2;
	}
	if (count && !interval) {
		util_err("snapshot: --count needs --interval");
		return 2;
	}
	char src[PATH_MAX], dst[PATH_MAX + 64];
	if (find_trace(pid, src, sizeof src))
		return 1;
	if (!interval) {
		if (out) {
			snprintf(dst, sizeof dst, "%s", out);
		} else {
			for (int n = 1;; n++) {
				snprintf(dst, sizeof dst, "snapshot-%ld-%d.atr", pid, n);
				if (access(dst, F_OK) != 0)
					break;
			}
		}
		return take(pid, src, dst);
	}
	const char *dir = out ? out : ".";
	if (out && mkdir(out, 0700) != 0 && errno != EEXIST) {
		util_err("snapshot: %s: %s", out, strerror(errno));
		return 1;
	}
	struct sigaction sa = {.sa_handler = on_stop};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	int rc = 0;
	for (long n = 1; !snap_stop && (!count || n <= count); n++) {
		if (n > 1) {
			struct timespec ts = {(time_t)interval,
					      (long)((interval - (double)(time_t)interval) * 1e9)};
			while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !snap_stop)
				;
			if (snap_stop)
				break;
		}
		if (kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
			fprintf(stderr, "alloctrace: process %ld exited\n", pid);
			break;
		}
		snprintf(dst, sizeof dst, "%s/snapshot-%ld.atr", dir, n);
		if (take(pid, src, dst)) {
			rc = 1;
			break;
		}
	}
	return rc;
}
