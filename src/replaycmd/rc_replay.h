/* rc_replay.h - the replay command's options, its run and its printers,
 * shared by `alloctrace replay` (which parses the options, resolves the
 * allocator and executes the runner) and the lean runner
 * `alloctrace-replay` (src/replay_main.c: parses the same options again and
 * replays in its own process, which maps no more than the replay needs:
 * docs/INTERNALS.md "Replay").  Prints to stdout and stderr as a
 * command does; never exits. */
#ifndef RC_REPLAY_H
#define RC_REPLAY_H

#include <getopt.h>
#include <stdio.h>

#include "replay/rp_replay.h"
#include "util_buf.h"

/* The runner's file name; `alloctrace replay` finds it beside itself (the
 * build tree) or in the installed libexec directory. */
#define RC_RUNNER_NAME "alloctrace-replay"

struct rc_args {
	struct rp_opts o;
	const char *alloc;   /* -a: glibc (default), none, jemalloc, ..., PATH.so */
	struct util_buf tun; /* -T options joined with ':' (GLIBC_TUNABLES) */
	int json, kv, dj, extras;
	const char *workload; /* argv[optind] */
};

/* getopt_long or cmdu_getopt (`alloctrace replay`: --list-options and
 * "did you mean"). */
typedef int (*rc_getopt_fn)(int argc, char **argv, const char *shortopts,
			    const struct option *longopts, int *longindex);

/* Parses argv (argv[0] the command's name) into *a.  0: go on; 1:
 * --help printed (exit 0); 2: a usage error, printed (exit 2).  Free *a
 * with rc_args_free() in every case. */
int rc_replay_parse(int argc, char **argv, rc_getopt_fn getopt_fn, struct rc_args *a);
void rc_args_free(struct rc_args *a);

/* Replays a->workload in this process under the allocator it runs with
 * (the caller preloaded it) and prints the result as a asks; a dj/malloc
 * workload is translated first.  The exit status: 0, or 1 (printed). */
int rc_replay_run(const struct rc_args *a);

#endif
