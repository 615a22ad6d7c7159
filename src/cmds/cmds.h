/* cmds.h - the `alloctrace` subcommands.
 *
 * Each command is `int cmd_<name>(int argc, char **argv)` with argv[0] the
 * command name; it returns the process exit status: 0 success, 1 failure
 * (bad input, I/O), 2 usage error.  Messages go to stderr through
 * util_err() ("alloctrace: ...").
 */
#ifndef CMDS_H
#define CMDS_H

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

int cmd_info(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_flamegraph(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_arenas(int argc, char **argv);
int cmd_load(int argc, char **argv);
int cmd_collect(int argc, char **argv);
int cmd_snapshot(int argc, char **argv);
/* The seed's entry points, chosen by argv[0]: trace2wl OUT [IN],
 * trace_run WORKLOAD. */
int cmd_trace2wl(int argc, char **argv);
int cmd_trace_run(int argc, char **argv);

/* cmd_util.c: shared by the commands. */
/* getopt_long() for every command (use it instead, so that the machinery
 * built on the option tables works for new options and commands too):
 * - an unknown long option gets a "did you mean '--json'?" line;
 * - `alloctrace CMD --list-options` as the first argument prints the
 *   table, one option a line (`--by=` takes an argument, then the values
 *   completion offers, from cmdu_values in cmd_util.c) and exits 0; bash
 *   completion and the man-page test (tests/install/) read it. */
int cmdu_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts,
		int *longindex);
/* Our own helper files (liballoctrace.so, the replay runner): the first of
 * DIR + rel[i] (i < n; DIR the directory of /proc/self/exe, rel[i]
 * starting with '/') that is a regular file, as an absolute path into out
 * (PATH_MAX bytes).  0, or -1 with DIR in exedir (PATH_MAX bytes) for the
 * message ("" when /proc/self/exe cannot be read: errno says why). */
int cmdu_find_beside_exe(const char *const *rel, size_t n, char *out, char *exedir);
/* atr_list() with its error printed; returns 0 or 1 (error shown). */
int cmdu_list(const char *path, char ***paths, size_t *n);
/* Process status in words: "clean exit", "no clean exit (killed or
 * exec'd)", "truncated (write failed: ...)". */
const char *cmdu_status_text(unsigned status, unsigned err, char *buf, size_t len);
/* Options of a command that takes [--json] [--help] TRACE...: -1 to go on
 * (TRACE arguments from optind), else the exit status. */
int cmdu_json_args(int argc, char **argv, const char *name, void (*usage)(FILE *), int *json);
/* The trace loop: fn(arg, path) for every trace of every argument (a file
 * or a record directory), in order.  1 if a listing failed or fn returned
 * non-zero for any trace, else 0. */
int cmdu_each_trace(int argc, char **argv, int (*fn)(void *arg, const char *path), void *arg);
/* Every trace of every argument into *all (free with atr_list_free);
 * 0, or 1 (error shown; with stop, at the first argument that fails to
 * list, and *all is then empty). */
int cmdu_collect(int argc, char **argv, int stop, char ***all, size_t *nall);
/* The --json wrapper {"processes": [...]} around one object per process:
 * json_init on stdout and the opening (wrap: with the wrapper), then the
 * closing and json_finish. */
struct json_writer;
void cmdu_json_begin(struct json_writer *w, int wrap);
void cmdu_json_end(struct json_writer *w, int wrap);
/* Flush stdout; 0, or 1 with "NAME: write error on standard output". */
int cmdu_flush_stdout(const char *name);
/* --by KEY (an_by_parse): the enum an_by value, or -1 with "CMD: unknown
 * --by ..." shown. */
int cmdu_parse_by(const char *arg, const char *cmd);
/* --top N: 0 with *top set, or -1 with "CMD: bad --top ..." shown. */
int cmdu_parse_top(const char *arg, const char *cmd, size_t *top);

/* The analysis session (analysis/an_session.h) with its messages printed
 * (the library prints nothing). */
struct an_session;
struct an_session_opts;
/* an_session_opt(): 1 taken, 0 not a session option, -1 bad value
 * ("CMD: ..." shown). */
int cmdu_session_opt(struct an_session_opts *o, int c, const char *arg, const char *cmd);
/* an_session_list(): 0, or 1 with every error shown (the traces that
 * could be listed are in *paths all the same). */
int cmdu_session_list(int argc, char **argv, const struct an_session_opts *o, const char *cmd,
		      char ***paths, size_t *n);
/* an_session_open(): 0 with its warnings shown, or 1 with the error shown. */
int cmdu_session_open(const char *path, struct an_session *c, uint32_t tl_buckets,
		      const struct an_session_opts *o);

#endif
