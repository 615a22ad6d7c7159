/* ch_results.c - see ch_results.h. */
#define _GNU_SOURCE
#include "ch_results.h"

#include <dlfcn.h>
#include <errno.h>
#include <gnu/libc-version.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ch_rowbin.h"
#include "ch_schema.h"

#ifndef ALLOCTRACE_VERSION_STRING
#define ALLOCTRACE_VERSION_STRING "0.1.0"
#endif

/* argv's standard output (at most len-1 bytes, trailing newline cut), "" if
 * it fails. */
static void run_capture(char *const argv[], char *out, size_t len)
{
	out[0] = 0;
	int pfd[2];
	if (pipe(pfd) < 0)
		return;
	pid_t pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return;
	}
	if (pid == 0) {
		dup2(pfd[1], 1);
		close(pfd[0]);
		close(pfd[1]);
		freopen("/dev/null", "w", stderr);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(pfd[1]);
	size_t n = 0;
	ssize_t r;
	while (n + 1 < len && (r = read(pfd[0], out + n, len - 1 - n)) != 0) {
		if (r < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		n += (size_t)r;
	}
	out[n] = 0;
	close(pfd[0]);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		out[0] = 0;
	char *nl = strchr(out, '\n');
	if (nl)
		*nl = 0;
}

void ch_allocator_version(const char *lib, char *out, size_t len)
{
	char path[PATH_MAX], pkg[512];
	out[0] = 0;
	if (!lib || !*lib) {
		Dl_info di;
		if (!dladdr((void *)gnu_get_libc_version, &di) || !di.dli_fname) {
			snprintf(out, len, "%s", gnu_get_libc_version());
			return;
		}
		lib = di.dli_fname;
	}
	/* "libjemalloc2:amd64: /usr/lib/x86_64-linux-gnu/libjemalloc.so.2";
	 * the path as given first (dpkg knows /lib/... on merged-/usr systems),
	 * then the file it resolves to */
	char *q1[] = {(char *)"dpkg-query", (char *)"-S", (char *)lib, NULL};
	run_capture(q1, pkg, sizeof(pkg));
	if (!strstr(pkg, ": ") && realpath(lib, path)) {
		q1[2] = path;
		run_capture(q1, pkg, sizeof(pkg));
	}
	char *colon = strstr(pkg, ": ");
	if (!colon)
		return;
	*colon = 0;
	char *q2[] = {(char *)"dpkg-query", (char *)"-W", (char *)"-f=${Version}", pkg, NULL};
	run_capture(q2, out, len);
}

static int metric_index(const struct ch_replay_set *s, const char *name)
{
	for (int m = 0; m < s->nmetrics; m++)
		if (!strcmp(s->metrics[m], name))
			return m;
	return -1;
}

int ch_results_store(struct ch_client *c, const char *db, const struct ch_replay_set *s,
		     uint64_t *run_id, char *err, size_t errlen)
{
	static const char *const cols[] = {
#define METRIC_NAME(m) #m,
	    CH_REPLAY_METRICS(METRIC_NAME)
#undef METRIC_NAME
	};
	enum { NCOL = sizeof(cols) / sizeof(cols[0]) };
	int mi[NCOL];
	for (int k = 0; k < NCOL; k++)
		mi[k] = metric_index(s, cols[k]);
	if (ch_schema_ensure(c, db, err, errlen) < 0)
		return -1;
	struct timeval tv;
	gettimeofday(&tv, NULL);
	*run_id = (((uint64_t)tv.tv_sec * 1000000u + (uint64_t)tv.tv_usec) << 12) |
		  ((uint64_t)getpid() & 0xfff);
	char host[256] = "", wl[PATH_MAX];
	gethostname(host, sizeof(host) - 1);
	if (!realpath(s->workload, wl))
		snprintf(wl, sizeof(wl), "%s", s->workload);
	const char *base = strrchr(wl, '/');
	base = base ? base + 1 : wl;
	struct ch_batch b;
	char table[300];
	snprintf(table, sizeof(table), "%s.%s", db, ch_table_name(CH_T_REPLAY_RUNS));
	ch_batch_init(&b, table, ch_table_columns(CH_T_REPLAY_RUNS));
	for (int k = 0; k < s->ncols; k++) {
		const struct ch_replay_col *col = &s->cols[k];
		char ver[256];
		ch_allocator_version(col->lib, ver, sizeof(ver));
		for (int r = 0; r < s->runs; r++) {
			if (ch_batch_reserve(&b, 64) < 0)
				break;
			ch_put_u64(&b, *run_id);
			ch_put_u32(&b, (uint32_t)tv.tv_sec);
			ch_put_str(&b, host);
			ch_put_str(&b, wl);
			ch_put_str(&b, base);
			if (ch_batch_reserve(&b, 64) < 0)
				break;
			ch_put_u32(&b, (uint32_t)s->runs);
			ch_put_u32(&b, (uint32_t)r);
			ch_put_u32(&b, (uint32_t)k);
			ch_put_str(&b, col->spec);
			ch_put_str(&b, col->allocator);
			ch_put_str(&b, col->lib);
			ch_put_str(&b, ver);
			if (ch_batch_reserve(&b, 32) < 0)
				break;
			ch_put_leb(&b, (uint64_t)col->ntunables);
			for (int t = 0; t < col->ntunables; t++)
				ch_put_str(&b, col->tunables[t]);
			if (ch_batch_reserve(&b, 32) < 0)
				break;
			ch_put_leb(&b, (uint64_t)s->noptions);
			for (int t = 0; t < s->noptions; t++)
				ch_put_str(&b, s->options[t]);
			ch_put_str(&b, ALLOCTRACE_VERSION_STRING);
			if (ch_batch_reserve(&b, 8 * NCOL) < 0)
				break;
			for (int m = 0; m < NCOL; m++)
				ch_put_f64(&b, mi[m] >= 0 ? col->values[mi[m]][r] : 0.0);
			b.rows++;
		}
	}
	int rc = 0;
	if (b.nomem) {
		snprintf(err, errlen, "out of memory");
		rc = -1;
	} else if (ch_batch_flush(&b, c) < 0) {
		snprintf(err, errlen, "%s (inserting into %s)", ch_error(c), table);
		rc = -1;
	}
	ch_batch_free(&b);
	return rc;
}
