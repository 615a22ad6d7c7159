/* replay_main.c - `alloctrace-replay`, the lean replay runner: what
 * `alloctrace replay` executes (with the allocator preloaded) once it has
 * checked the options.  It links only the replay engine, the workload
 * reader and what they need (no symbolizer, no libdw/libelf/zlib...), so
 * the replay process maps little beside the allocator and the workload:
 * its Max RSS is compared with the program's (docs/INTERNALS.md
 * "Replay", bench/replay/RESULTS.md). */
#include <getopt.h>
#include <stdlib.h>

#include "replay/rp_alloc.h"
#include "replaycmd/rc_replay.h"
#include "util_msg.h"

/* getopt_long with rc_getopt_fn's type (argv not const) */
static int plain_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts,
			int *longindex)
{
	return getopt_long(argc, argv, shortopts, longopts, longindex);
}

int main(int argc, char **argv)
{
	/* Run directly, it would replay under whatever is preloaded, not
	   under the allocator the options name. */
	if (!getenv(RP_CHILD_ENV)) {
		util_err("%s is run by `alloctrace replay` (which preloads the allocator): run "
			 "that instead",
			 RC_RUNNER_NAME);
		return 2;
	}
	unsetenv(RP_CHILD_ENV);
	struct rc_args a;
	int rc = rc_replay_parse(argc, argv, plain_getopt, &a);
	if (rc == 0)
		rc = rc_replay_run(&a);
	else
		rc = rc == 1 ? 0 : 2;
	rc_args_free(&a);
	return rc;
}
