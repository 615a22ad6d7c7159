/* cmd_util.c - helpers shared by the commands (see cmds.h). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "atr_format.h"
#include "atr_reader.h"
#include "cmds/cmds.h"
#include "util_msg.h"

int cmdu_list(const char *path, char ***paths, size_t *n)
{
	char eb[512];
	int r = atr_list(path, paths, n, eb, sizeof(eb));
	if (r < 0) {
		util_err("%s", eb);
		return 1;
	}
	return 0;
}

const char *cmdu_status_text(unsigned status, unsigned err, char *buf, size_t len)
{
	if (status & ATR_STATUS_TRUNCATED)
		snprintf(buf, len, "truncated (write failed: %s)",
			 err ? strerror((int)err) : "unknown error");
	else if (status & ATR_STATUS_CLEAN_EXIT)
		snprintf(buf, len, "clean exit");
	else
		snprintf(buf, len, "no clean exit (killed or exec'd)");
	if (status & ATR_STATUS_FORK_CHILD) {
		size_t l = strlen(buf);
		snprintf(buf + l, len - l, ", fork child");
	}
	if (status & ATR_STATUS_ATTACHED) {
		size_t l = strlen(buf);
		snprintf(buf + l, len - l, ", attached");
	}
	if (status & ATR_STATUS_STOPPED) {
		size_t l = strlen(buf);
		snprintf(buf + l, len - l, ", recording stopped");
	}
	return buf;
}

int cmdu_json_args(int argc, char **argv, const char *name, void (*usage)(FILE *), int *json)
{
	static const struct option opts[] = {
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;
	*json = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "jh", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			*json = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		util_err("%s: no trace file or directory given", name);
		usage(stderr);
		return 2;
	}
	return -1;
}
