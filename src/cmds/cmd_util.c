/* cmd_util.c - helpers shared by the commands (see cmds.h). */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/an_report.h"
#include "analysis/an_session.h"
#include "atr_format.h"
#include "atr_reader.h"
#include "cmds/cmds.h"
#include "replay/rp_alloc.h"
#include "util_json.h"
#include "util_msg.h"
#include "util_suggest.h"

int cmdu_find_beside_exe(const char *const *rel, size_t n, char *out, char *exedir)
{
	ssize_t len = readlink("/proc/self/exe", exedir, PATH_MAX - 1);
	if (len <= 0) {
		exedir[0] = 0;
		return -1;
	}
	exedir[len] = 0;
	char *slash = strrchr(exedir, '/');
	if (slash)
		*slash = 0;
	for (size_t i = 0; i < n; i++) {
		char cand[PATH_MAX + 64];
		struct stat st;
		snprintf(cand, sizeof(cand), "%s%s", exedir, rel[i]);
		if (stat(cand, &st) == 0 && S_ISREG(st.st_mode) && realpath(cand, out))
			return 0;
	}
	return -1;
}

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
	static const struct {
		unsigned bit;
		const char *text;
	} more[] = {{ATR_STATUS_FORK_CHILD, ", fork child"},
		    {ATR_STATUS_ATTACHED, ", attached"},
		    {ATR_STATUS_SNAPSHOT, ", snapshot of a running process"},
		    {ATR_STATUS_STOPPED, ", recording stopped"}};
	for (size_t i = 0; i < sizeof more / sizeof *more; i++)
		if (status & more[i].bit) {
			size_t l = strlen(buf);
			snprintf(buf + l, len - l, "%s", more[i].text);
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
	while ((c = cmdu_getopt(argc, argv, "jh", opts, NULL)) != -1) {
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

/* Values that shell completion offers for an option argument, by long
 * option name (options without an argument are never looked up here).
 * closed: the command takes nothing else, so a near miss ("--by clals")
 * gets "did you mean". */
static const char *const cmdu_formats[] = {"folded", "perfetto", "pprof", "massif", NULL};
static const char *const cmdu_touch[] = {"none", "first", "all", NULL};
static const char *const cmdu_timing[] = {"sample", "serial", "fast", "off", NULL};
static const char *cmdu_by[AN_BY_TEMPORARY + 2]; /* from an_by_name() */
static const struct {
	const char *opt;
	const char *const *values;
	int closed;
} cmdu_values[] = {
    {"by", cmdu_by, 1},
    {"format", cmdu_formats, 0},	  /* export also takes "chrome" */
    {"allocator", rp_allocator_names, 0}, /* or PATH.so */
    {"allocators", rp_allocator_names, 0},
    {"touch", cmdu_touch, 1},
    {"timing", cmdu_timing, 1},
};

/* The values of option name (NULL-terminated), or NULL. */
static const char *const *cmdu_option_values(const char *name, int *closed)
{
	if (!cmdu_by[0])
		for (int b = AN_BY_CALLS; b <= AN_BY_TEMPORARY; b++)
			cmdu_by[b] = an_by_name((enum an_by)b);
	for (size_t i = 0; i < sizeof(cmdu_values) / sizeof(cmdu_values[0]); i++)
		if (!strcmp(name, cmdu_values[i].opt)) {
			*closed = cmdu_values[i].closed;
			return cmdu_values[i].values;
		}
	return NULL;
}

static void cmdu_print_values(const char *name)
{
	int closed;
	const char *const *v = cmdu_option_values(name, &closed);
	for (; v && *v; v++)
		printf(" %s", *v);
}

static void cmdu_list_options(const char *shortopts, const struct option *longopts)
{
	for (const struct option *o = longopts; o->name; o++) {
		printf("--%s%s", o->name, o->has_arg == no_argument ? "" : "=");
		if (o->has_arg != no_argument)
			cmdu_print_values(o->name);
		putchar('\n');
	}
	for (const char *s = shortopts; *s; s++) {
		if (*s == '+' || *s == '-' || *s == ':')
			continue;
		int arg = s[1] == ':';
		printf("-%c%s", *s, arg ? "=" : "");
		/* the values of the long option that the short one stands for */
		for (const struct option *o = longopts; arg && o->name; o++)
			if (!o->flag && o->val == *s && o->has_arg != no_argument) {
				cmdu_print_values(o->name);
				break;
			}
		putchar('\n');
		while (s[1] == ':')
			s++;
	}
}

/* After getopt_long's own "unrecognized option" message: a plausible typo
 * gets its correction and exit status 2 at once (no usage text burying it). */
static void cmdu_hint_option(const char *prog, const char *arg, const struct option *longopts)
{
	const char *word = arg + 2;
	size_t len = strcspn(word, "=");
	char name[64];
	if (len == 0 || len >= sizeof(name))
		return;
	memcpy(name, word, len);
	name[len] = 0;
	const char *names[128];
	size_t n = 0, prefixes = 0;
	for (const struct option *o = longopts; o->name && n < 128; o++) {
		names[n++] = o->name;
		prefixes += !strncmp(o->name, name, len);
		if (!strcmp(o->name, name))
			return; /* known: a missing or extra argument, not a typo */
	}
	/* an abbreviation: ambiguous (getopt listed the candidates) or
	 * missing its argument */
	if (prefixes)
		return;
	const char *s = util_suggest(name, names, n);
	if (s) {
		util_err("did you mean '--%s'? ('%s --help' lists the options)", s, prog);
		exit(2);
	}
}

/* A near miss of a value from a closed set: its correction and exit 2. */
static void cmdu_hint_value(const char *prog, const struct option *lo, int c,
			    const struct option *longopts)
{
	for (const struct option *o = longopts; !lo && o->name; o++)
		if (!o->flag && o->val == c && o->has_arg != no_argument)
			lo = o; /* the long form of a short option */
	int closed = 0;
	const char *const *v = lo ? cmdu_option_values(lo->name, &closed) : NULL;
	if (!v || !closed)
		return;
	size_t n = 0;
	for (; v[n]; n++)
		if (!strcmp(v[n], optarg))
			return;
	const char *s = util_suggest(optarg, v, n);
	if (s) {
		const char *cmd = strrchr(prog, ' '); /* "alloctrace report" */
		util_err("%s: unknown --%s '%s'; did you mean '%s'?", cmd ? cmd + 1 : prog,
			 lo->name, optarg, s);
		exit(2);
	}
}

int cmdu_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts,
		int *longindex)
{
	if (optind <= 1 && argc >= 2 && !strcmp(argv[1], "--list-options")) {
		cmdu_list_options(shortopts, longopts);
		fflush(stdout);
		exit(ferror(stdout) ? 1 : 0);
	}
	int li = -1;
	int c = getopt_long(argc, argv, shortopts, longopts, &li);
	if (longindex)
		*longindex = li;
	if (c == '?' && optopt == 0 && optind >= 1 && optind <= argc &&
	    !strncmp(argv[optind - 1], "--", 2))
		cmdu_hint_option(argv[0], argv[optind - 1], longopts);
	if (c > 0 && c != '?' && c != ':' && optarg)
		cmdu_hint_value(argv[0], li >= 0 ? &longopts[li] : NULL, c, longopts);
	return c;
}

int cmdu_each_trace(int argc, char **argv, int (*fn)(void *arg, const char *path), void *arg)
{
	int rc = 0;
	for (int a = 0; a < argc; a++) {
		char **paths;
		size_t n;
		if (cmdu_list(argv[a], &paths, &n)) {
			rc = 1;
			continue;
		}
		for (size_t i = 0; i < n; i++)
			if (fn(arg, paths[i]))
				rc = 1;
		atr_list_free(paths, n);
	}
	return rc;
}

int cmdu_collect(int argc, char **argv, int stop, char ***all, size_t *nall)
{
	int rc = 0;
	*all = NULL;
	*nall = 0;
	for (int a = 0; a < argc; a++) {
		char **paths;
		size_t n;
		if (cmdu_list(argv[a], &paths, &n)) {
			rc = 1;
			if (stop)
				break;
			continue;
		}
		char **na = realloc(*all, (*nall + n) * sizeof(*na));
		if (!na) {
			atr_list_free(paths, n);
			util_err("out of memory");
			rc = 1;
			break;
		}
		*all = na;
		for (size_t i = 0; i < n; i++)
			(*all)[(*nall)++] = strdup(paths[i]);
		atr_list_free(paths, n);
	}
	if (rc && stop) {
		atr_list_free(*all, *nall);
		*all = NULL;
		*nall = 0;
	}
	return rc;
}

void cmdu_json_begin(struct json_writer *w, int wrap)
{
	json_init(w, stdout, 1);
	if (wrap) {
		json_begin_object(w);
		json_key(w, "processes");
		json_begin_array(w);
	}
}

void cmdu_json_end(struct json_writer *w, int wrap)
{
	if (wrap) {
		json_end_array(w);
		json_end_object(w);
	}
	json_finish(w);
}

int cmdu_flush_stdout(const char *name)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		util_err("%s: write error on standard output", name);
		return 1;
	}
	return 0;
}

int cmdu_parse_by(const char *arg, const char *cmd)
{
	int b = an_by_parse(arg);
	if (b < 0)
		util_err("%s: unknown --by '%s' (calls, bytes, peak, leaked, temporary)", cmd, arg);
	return b;
}

int cmdu_parse_top(const char *arg, const char *cmd, size_t *top)
{
	char *end;
	unsigned long v = strtoul(arg, &end, 10);
	if (*end || end == arg) {
		util_err("%s: bad --top '%s'", cmd, arg);
		return -1;
	}
	*top = v;
	return 0;
}

int cmdu_session_opt(struct an_session_opts *o, int c, const char *arg, const char *cmd)
{
	char eb[4200];
	int r = an_session_opt(o, c, arg, eb, sizeof(eb));
	if (r < 0) {
		util_err("%s: %s", cmd, eb);
		return -1;
	}
	return r;
}

static void print_err(void *arg, const char *msg)
{
	(void)arg;
	util_err("%s", msg);
}

int cmdu_session_list(int argc, char **argv, const struct an_session_opts *o, const char *cmd,
		      char ***paths, size_t *n)
{
	int r = an_session_list(argc, argv, o, paths, n, print_err, NULL);
	if (r == ATR_E_NOTFOUND)
		util_err("%s: no trace of process %ld", cmd, o->pid);
	else if (r == ATR_E_NOMEM)
		util_err("%s: out of memory", cmd);
	return r < 0;
}

int cmdu_session_open(const char *path, struct an_session *c, uint32_t tl_buckets,
		      const struct an_session_opts *o)
{
	char eb[4200];
	if (an_session_open(path, c, tl_buckets, o, eb, sizeof(eb)) < 0) {
		util_err("%s", eb);
		return 1;
	}
	for (unsigned i = 0; i < c->nwarn; i++)
		util_warn("%s", c->warn[i]);
	return 0;
}
