/* main.c - `alloctrace <command> [args]`. */
#include <stdio.h>
#include <string.h>

#include "cmds/cmds.h"
#include "util_msg.h"
#include "util_suggest.h"

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
    {"record", cmd_record, "run a program and trace its malloc calls"},
    {"info", cmd_info, "summarise traces: calls, bytes, peak, threads"},
    {"dump", cmd_dump, "print every record in time order (text or JSON Lines)"},
    {"report", cmd_report, "where memory goes: hot call paths, leaks, peak (--stacks)"},
    {"flamegraph", cmd_flamegraph, "folded call stacks for flamegraph.pl / speedscope"},
    {"export", cmd_export, "write a trace for pprof, Perfetto, massif (ms_print), flamegraph.pl"},
    {"diff", cmd_diff, "what grew and shrank between two traces, by stack"},
    {"snapshot", cmd_snapshot, "copy a running process's trace now: its live heap by stack"},
    {"convert", cmd_convert, "turn a trace into a workload for replay"},
    {"replay", cmd_replay, "run a workload against an allocator, timing every call"},
    {"compare", cmd_compare, "replay a workload under several allocators: one table"},
    {"arenas", cmd_arenas, "glibc arenas, heaps, sbrk, mmap thresholds (systemtap-style)"},
    {"load", cmd_load, "stream traces into ClickHouse (docs/CLICKHOUSE.md)"},
    {"collect", cmd_collect, "receive traces sent with record -o tcp://HOST:PORT"},
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < N_COMMANDS; i++)
		if (!strcmp(name, commands[i].name))
			return &commands[i];
	return NULL;
}

static void usage(FILE *out);

/* Unknown command: the closest one if it is a plausible typo, else the list. */
static int unknown_command(const char *name)
{
	const char *names[N_COMMANDS + 1];
	for (size_t i = 0; i < N_COMMANDS; i++)
		names[i] = commands[i].name;
	names[N_COMMANDS] = "help";
	const char *s = util_suggest(name, names, N_COMMANDS + 1);
	util_err("unknown command '%s'", name);
	if (s) {
		util_err("did you mean '%s'? (alloctrace --help lists the commands)", s);
	} else {
		usage(stderr);
	}
	return 2;
}

static void usage(FILE *out)
{
	fprintf(out, "usage: alloctrace <command> [args]\n"
		     "       alloctrace <command> --help\n"
		     "       alloctrace --version\n\ncommands:\n");
	for (size_t i = 0; i < N_COMMANDS; i++)
		fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
}

int main(int argc, char **argv)
{
	/* the seed's tool names (symlinks to this binary) */
	const char *base = argv[0] ? strrchr(argv[0], '/') : NULL;
	base = base ? base + 1 : argv[0] ? argv[0] : "";
	if (!strcmp(base, "trace2wl"))
		return cmd_trace2wl(argc, argv);
	if (!strcmp(base, "trace_run"))
		return cmd_trace_run(argc, argv);
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	const char *c = argv[1];
	if (!strcmp(c, "--help") || !strcmp(c, "-h") || !strcmp(c, "help")) {
		if (!strcmp(c, "help") && argc > 2) {
			const struct command *cmd = find_command(argv[2]);
			if (!cmd)
				return unknown_command(argv[2]);
			char *hargv[] = {argv[2], (char *)"--help", NULL};
			return cmd->fn(2, hargv);
		}
		usage(stdout);
		return 0;
	}
	if (!strcmp(c, "--version") || !strcmp(c, "-V")) {
		printf("alloctrace %s\n", ALLOCTRACE_VERSION_STRING);
		return 0;
	}
	/* for shell completion and the man-page test (tests/install/) */
	if (!strcmp(c, "--list-commands")) {
		for (size_t i = 0; i < N_COMMANDS; i++)
			printf("%s\t%s\n", commands[i].name, commands[i].summary);
		return 0;
	}
	const struct command *cmd = find_command(c);
	if (!cmd) {
		if (c[0] == '-') {
			util_err("unknown option '%s' (options go after the command: alloctrace "
				 "<command> [options])",
				 c);
			return 2;
		}
		return unknown_command(c);
	}
	/* getopt's messages then read "alloctrace info: ..." */
	char name[64];
	snprintf(name, sizeof(name), "alloctrace %s", cmd->name);
	argv[1] = name;
	return cmd->fn(argc - 1, argv + 1);
}
