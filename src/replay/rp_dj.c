/* rp_dj.c - see rp_dj.h. */
#define _GNU_SOURCE
#include "replay/rp_dj.h"

#include "dj_trace.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int is_awl(const char *path)
{
	char m[8];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 1; /* let the workload reader say what is wrong */
	ssize_t n = pread(fd, m, sizeof(m), 0);
	close(fd);
	return n == (ssize_t)sizeof(m) && !memcmp(m, AWL_MAGIC, 8);
}

int rp_dj_prepare(const char *path, char *tmp, size_t tmplen, struct dj_wl_stats *st, char *eb,
		  size_t el)
{
	memset(st, 0, sizeof(*st));
	if (is_awl(path))
		return 0;
	if (dj_trace_detect_path(path)) {
		snprintf(
		    eb, el,
		    "%s: a dj/malloc trace, not a workload: convert it first (trace2wl OUT %s)",
		    path, path);
		return -1;
	}
	const char *td = getenv("TMPDIR");
	snprintf(tmp, tmplen, "%s/alloctrace-djwl.XXXXXX", td && *td ? td : "/tmp");
	int fd = mkstemp(tmp);
	if (fd < 0) {
		snprintf(eb, el, "cannot create a temporary file in %s: %s",
			 td && *td ? td : "/tmp", strerror(errno));
		return -1;
	}
	close(fd);
	int pfd[2];
	if (pipe(pfd) < 0) {
		unlink(tmp);
		snprintf(eb, el, "pipe: %s", strerror(errno));
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		unlink(tmp);
		snprintf(eb, el, "fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		/* child: the stats, or an error message after a 0 byte */
		close(pfd[0]);
		char b[1024];
		int rc = dj_wl_translate(path, tmp, st, b + 1, sizeof(b) - 1);
		ssize_t w;
		if (rc == 0) {
			w = write(pfd[1], st, sizeof(*st));
		} else {
			b[0] = 0;
			w = write(pfd[1], b, 1 + strlen(b + 1));
		}
		_exit(w > 0 && rc == 0 ? 0 : 1);
	}
	close(pfd[1]);
	char b[1024 + sizeof(*st)];
	size_t n = 0;
	ssize_t k;
	while (n < sizeof(b) - 1 &&
	       ((k = read(pfd[0], b + n, sizeof(b) - 1 - n)) > 0 || (k < 0 && errno == EINTR)))
		if (k > 0)
			n += (size_t)k;
	close(pfd[0]);
	int wst = 0;
	while (waitpid(pid, &wst, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(wst) && WEXITSTATUS(wst) == 0 && n == sizeof(*st)) {
		memcpy(st, b, sizeof(*st));
		return 1;
	}
	unlink(tmp);
	b[n] = 0;
	if (n > 1 && b[0] == 0)
		snprintf(eb, el, "%s", b + 1);
	else
		snprintf(eb, el, "%s: translating the dj workload failed (%s)", path,
			 WIFSIGNALED(wst) ? strsignal(WTERMSIG(wst)) : "no result");
	return -1;
}

char *rp_dj_comma(char *buf, size_t len, long long v)
{
	/* dj's comma(): a comma wherever the digits (and sign) left to
	   write are a multiple of 3 */
	char s[32];
	int l = snprintf(s, sizeof(s), "%lld", v);
	size_t o = 0;
	for (int i = 0; i < l && o + 2 < len; i++) {
		buf[o++] = s[i];
		if ((l - i - 1) % 3 == 0 && i + 1 < l)
			buf[o++] = ',';
	}
	buf[o] = 0;
	return buf;
}

static long long ll(uint64_t v)
{
	return v > (uint64_t)INT64_MAX ? INT64_MAX : (long long)v;
}

void rp_dj_print(FILE *out, const struct rp_result *r)
{
	char a[40], b[40], c[40];
	/* dj's trace_run: memalign counts as malloc; it has no other calls,
	   so the aligned ones and valloc/pvalloc go there too, reallocarray
	   to realloc */
	static const unsigned group[RP_NTYPES] = {
	    [AWL_OP_MALLOC] = 0,	 [AWL_OP_CALLOC] = 1,	     [AWL_OP_REALLOC] = 2,
	    [AWL_OP_REALLOCARRAY] = 2,	 [AWL_OP_FREE] = 3,	     [AWL_OP_MEMALIGN] = 0,
	    [AWL_OP_POSIX_MEMALIGN] = 0, [AWL_OP_ALIGNED_ALLOC] = 0, [AWL_OP_VALLOC] = 0,
	    [AWL_OP_PVALLOC] = 0,
	};
	uint64_t cnt[4] = {0}, sum[4] = {0};
	for (unsigned k = 1; k < RP_NTYPES; k++) {
		cnt[group[k]] += r->st[k].count;
		sum[group[k]] += rp_stat_total(&r->st[k]);
	}
	fprintf(out, "%s cycles\n", rp_dj_comma(a, sizeof(a), ll(r->cycles)));
	fprintf(out, "%s usec wall time\n", rp_dj_comma(a, sizeof(a), ll(r->wall_ns / 1000)));
	fprintf(out, "%s usec across %d thread%s\n",
		rp_dj_comma(a, sizeof(a), ll(r->thread_cpu_ns_sum / 1000)), (int)r->threads,
		r->threads == 1 ? "" : "s");
	fprintf(out, "%s Kb Max RSS (%s -> %s)\n",
		rp_dj_comma(a, sizeof(a), (long long)r->rss_after_kb - (long long)r->rss_before_kb),
		rp_dj_comma(b, sizeof(b), ll(r->rss_before_kb)),
		rp_dj_comma(c, sizeof(c), ll(r->rss_after_kb)));
	fprintf(out, "%s Kb Max Ideal RSS\n", rp_dj_comma(a, sizeof(a), ll(r->ideal_peak / 1024)));
	fprintf(out, "\nsizeof ticks_t is 8\n");
	uint64_t n[4], total = 0;
	for (int i = 0; i < 4; i++) {
		n[i] = cnt[i] ? cnt[i] : 1; /* dj prints a 0 count as 1 */
		total += sum[i];
	}
	char d[40], e[40], f[40], g[40], h[40];
	fprintf(out, "Avg malloc time: %6s in %10s calls\n",
		rp_dj_comma(a, sizeof(a), ll(sum[0] / n[0])), rp_dj_comma(b, sizeof(b), ll(n[0])));
	fprintf(out, "Avg calloc time: %6s in %10s calls\n",
		rp_dj_comma(c, sizeof(c), ll(sum[1] / n[1])), rp_dj_comma(d, sizeof(d), ll(n[1])));
	fprintf(out, "Avg realloc time: %5s in %10s calls\n",
		rp_dj_comma(e, sizeof(e), ll(sum[2] / n[2])), rp_dj_comma(f, sizeof(f), ll(n[2])));
	fprintf(out, "Avg free time: %8s in %10s calls\n",
		rp_dj_comma(g, sizeof(g), ll(sum[3] / n[3])), rp_dj_comma(h, sizeof(h), ll(n[3])));
	fprintf(out, "Total call time: %s cycles\n\n", rp_dj_comma(a, sizeof(a), ll(total)));
}
