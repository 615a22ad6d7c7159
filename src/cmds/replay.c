/* replay.c - `alloctrace replay WORKLOAD [options]` and the seed's
 * `trace_run WORKLOAD`: the options are checked here, then the lean
 * runner (src/replay_main.c) replays in this process's place, under the
 * allocator (docs/INTERNALS.md "Replay"). */
#define _GNU_SOURCE
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds/cmds.h"
#include "replay/rp_alloc.h"
#include "replaycmd/rc_replay.h"
#include "util_msg.h"

/* The runner beside us (the build tree) or in the installed libexec
 * directory (CMake passes its path relative to bindir). */
static int find_runner(char *out)
{
	static const char *const rel[] = {
	    "/" RC_RUNNER_NAME,
#ifdef ALLOCTRACE_REL_LIBEXECDIR
	    "/" ALLOCTRACE_REL_LIBEXECDIR "/" RC_RUNNER_NAME,
#endif
	    "/../libexec/alloctrace/" RC_RUNNER_NAME,
	};
	char exe[PATH_MAX];
	if (cmdu_find_beside_exe(rel, sizeof(rel) / sizeof(rel[0]), out, exe) == 0)
		return 0;
	util_err("replay: cannot find %s next to %s or in %s (a broken installation?)",
		 RC_RUNNER_NAME, exe[0] ? exe : "/proc/self/exe", rel[1] + 1);
	return -1;
}

int cmd_replay(int argc, char **argv)
{
	struct rc_args a;
	int rc = rc_replay_parse(argc, argv, cmdu_getopt, &a);
	if (rc) {
		rc_args_free(&a);
		return rc == 1 ? 0 : 2;
	}
	char lib[1024], eb[1024], runner[PATH_MAX];
	if (rp_find_allocator(a.alloc, lib, sizeof(lib), eb, sizeof(eb)) < 0) {
		util_err("replay: %s", eb);
		rc_args_free(&a);
		return 1;
	}
	if (find_runner(runner) < 0) {
		rc_args_free(&a);
		return 1;
	}
	/* the runner parses the same arguments (argv[0] its name) */
	char **nargv = calloc((size_t)argc + 1, sizeof(*nargv));
	if (!nargv)
		util_die_nomem();
	nargv[0] = (char *)RC_RUNNER_NAME;
	for (int i = 1; i < argc; i++)
		nargv[i] = argv[i];
	rp_exec_runner(runner, nargv, lib, a.tun.data, eb, sizeof(eb));
	free(nargv);
	util_err("replay: %s", eb);
	rc_args_free(&a);
	return 1;
}

/* trace_run [options] WORKLOAD: the seed's simulator entry point, with
 * dj/malloc trace_run's stdout (alloctrace replay --dj). */
int cmd_trace_run(int argc, char **argv)
{
	char **nargv = calloc((size_t)argc + 2, sizeof(*nargv));
	if (!nargv)
		util_die_nomem();
	nargv[0] = argv[0];
	nargv[1] = (char *)"--dj";
	for (int i = 1; i < argc; i++)
		nargv[i + 1] = argv[i];
	int rc = cmd_replay(argc + 1, nargv);
	free(nargv);
	return rc;
}
