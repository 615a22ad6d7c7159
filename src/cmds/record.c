/* record.c - `alloctrace record [options] -- PROG ARGS...`.
 *
 * Runs PROG with liballoctrace.so preloaded and ALLOCTRACE_* settings in
 * its environment; the library writes DIR/<pid>.atr per process image.
 * The parent only forwards signals, waits, and counts what was recorded.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <pthread.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <sys/socket.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "atn_stream.h"
#include "atr_compact.h"
#include "atr_format.h"
#include "atr_reader.h"
#include "atr_rss.h"
#include "plat_clock.h"
#include "cmds/cmds.h"
#include "attach/att_attach.h"
#include "util_buf.h"
#include "util_fmt.h"
#include "util_hmap.h"
#include "util_msg.h"
#include "util_wbehind.h"

#define REC_DEFAULT_DIR "alloctrace.data"
/* --encode: bench/RESULTS.md, "Deferred encoding" */
#define REC_ENCODE_DEFAULT "later"
/* --write-behind: the newest 32 MiB of each trace file stay in the page
 * cache while the program runs; the rest is written out and dropped every
 * 10 ms (bench/RESULTS.md, "Write-behind") */
#define REC_WBEHIND_MIB		32
#define REC_STR_(x)		#x
#define REC_XSTR_(x)		REC_STR_(x)
#define REC_WBEHIND_STR		REC_XSTR_(REC_WBEHIND_MIB)
#define REC_WBEHIND_INTERVAL_MS 10u
#define REC_LIB_NAME		"liballoctrace.so"

static volatile sig_atomic_t rec_child;

static void record_usage(FILE *out)
{
	fprintf(out,
		"usage: alloctrace record [options] [--] PROG [ARGS...]\n"
		"       alloctrace record -p PID [-o DIR|tcp://HOST:PORT] [--sample BYTES]\n"
		"                         [--duration SECONDS]\n"
		"Run PROG with the tracer preloaded; each process image writes\n"
		"DIR/<pid>.atr (DIR/<pid>.<n>.atr for the n-th exec of the same pid).\n"
		"  -o, --output DIR   trace directory (default " REC_DEFAULT_DIR "; an existing\n"
		"                     default directory is renamed to " REC_DEFAULT_DIR ".old)\n"
		"  -o tcp://HOST:PORT  send the trace to `alloctrace collect` on HOST\n"
		"                     instead (docs/NET_FORMAT.md; no RSS samples; with -p\n"
		"                     too); reconnects if the collector comes back\n"
		"      --force        allow an -o DIR that already holds *.atr files\n"
		"                     (they are deleted first)\n"
		"      --no-children  do not trace child processes\n"
		"      --stacks       record the call stack of every allocation\n"
		"      --stack-depth N  frames kept per stack (1..256, default 64)\n"
		"      --timing       record the time spent in each call\n"
		"      --no-start     start paused; the program calls alloctrace_start()\n"
		"      --sample BYTES sample allocations: on average one per BYTES bytes\n"
		"                     allocated (e.g. 512k), and the frees of those blocks;\n"
		"                     analysis shows estimated totals (docs/SAMPLING.md)\n"
		"      --zstd-level N  compression of full blocks, 0 (none: compact\n"
		"                     encoding only, least CPU) to 19, or -1 to -100\n"
		"                     (zstd's fast levels); default 1\n"
		"      --encode WHEN  later (default): full blocks go to the file as they\n"
		"                     are, encoded and compressed after the program with\n"
		"                     the rest (least work in PROG's threads, a larger file\n"
		"                     while it runs); thread: each full block is encoded\n"
		"                     and compressed at once by the thread that filled it\n"
		"                     (-o tcp:// and -p: always thread)\n"
		"      --compact-level N  after the program, recompress each finished\n"
		"                     process's trace at zstd level N (1..19; larger frames,\n"
		"                     smaller file, more CPU then), or 0 (frames kept as\n"
		"                     written, staging blocks compacted only); default 9\n"
		"      --buffer-kb N  per-thread block size in KiB (power of two, 4..65536;\n"
		"                     default 256)\n"
		"      --no-rss       do not sample the RSS/VmSize of PROG and of every\n"
		"                     traced process every 10 ms into DIR/<pid>.rss\n"
		"                     (docs/RSS_FORMAT.md)\n"
		"      --write-behind MIB  while PROG runs, keep the newest MIB of each\n"
		"                     trace file in the page cache: older parts are written\n"
		"                     to disk and dropped (0: leave it to the kernel);\n"
		"                     default " REC_WBEHIND_STR "\n"
		"  -p, --pid PID      attach to running process PID (ptrace, x86-64) and trace\n"
		"                     it until Ctrl-C or --duration; see docs/ATTACH.md\n"
		"      --duration S   with -p: detach after S seconds (--stacks, --stack-depth,\n"
		"                     --timing, --buffer-kb, --zstd-level, --no-children\n"
		"                     apply to -p too)\n"
		"The exit status is PROG's (128+N if it was killed by signal N).\n"
		"Environment: ALLOCTRACE_LIB overrides the library path.\n");
}

static void rec_forward(int sig, siginfo_t *si, void *ctx)
{
	(void)ctx;
	/* A terminal's ^C/^\ already reached the child (same process group);
	 * forward only signals sent to us alone. */
	if (rec_child > 0 && si->si_code != SI_KERNEL)
		kill((pid_t)rec_child, sig);
}

static int file_exists(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* Absolute path of liballoctrace.so into out (PATH_MAX). */
static int find_lib(char *out)
{
	const char *env = getenv("ALLOCTRACE_LIB");
	if (env && *env) {
		if (!file_exists(env) || !realpath(env, out)) {
			util_err("record: ALLOCTRACE_LIB=%s: %s", env,
				 errno ? strerror(errno) : "not a regular file");
			return -1;
		}
		return 0;
	}
	/* the build tree, then the installed layout (CMake passes the
	 * relative path from bindir to the library's directory) */
	static const char *const rel[] = {
	    "/" REC_LIB_NAME,
#ifdef ALLOCTRACE_REL_PKGLIBDIR
	    "/" ALLOCTRACE_REL_PKGLIBDIR "/" REC_LIB_NAME,
#endif
	    "/../lib/alloctrace/" REC_LIB_NAME,
	    "/../lib/" REC_LIB_NAME,
	};
	char exe[PATH_MAX];
	if (cmdu_find_beside_exe(rel, sizeof(rel) / sizeof(rel[0]), out, exe) == 0)
		return 0;
	if (!exe[0]) {
		util_err("record: cannot find my own executable: %s", strerror(errno));
		return -1;
	}
	util_err("record: cannot find %s next to %s or in %s (set ALLOCTRACE_LIB)", REC_LIB_NAME,
		 exe, rel[1] + 1);
	return -1;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	int r = (flag == FTW_DP) ? rmdir(path) : unlink(path);
	if (r < 0)
		util_err("record: cannot remove %s: %s", path, strerror(errno));
	return r < 0 ? -1 : 0;
}

static int is_atr_name(const char *n)
{
	size_t l = strlen(n);
	return l >= 5 && strcmp(n + l - 4, ".atr") == 0;
}

/* Count (and with del, delete) the *.atr files in dir; -1 on error. */
static int atr_files(const char *dir, int del)
{
	DIR *d = opendir(dir);
	if (!d) {
		util_err("record: %s: %s", dir, strerror(errno));
		return -1;
	}
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (!is_atr_name(de->d_name)) {
			size_t l = strlen(de->d_name);
			/* memory samples of an older recording go with its traces */
			if (del && l >= 5 && !strcmp(de->d_name + l - 4, ".rss"))
				(void)unlinkat(dirfd(d), de->d_name, 0);
			continue;
		}
		n++;
		if (del && unlinkat(dirfd(d), de->d_name, 0) < 0) {
			util_err("record: cannot remove %s/%s: %s", dir, de->d_name,
				 strerror(errno));
			closedir(d);
			return -1;
		}
	}
	closedir(d);
	return n;
}

static int prepare_dir(const char *dir, int explicit_dir, int force)
{
	struct stat st;
	if (lstat(dir, &st) == 0) {
		if (!explicit_dir) {
			const char *old = REC_DEFAULT_DIR ".old";
			struct stat ost;
			if (lstat(old, &ost) == 0) {
				if (S_ISDIR(ost.st_mode)) {
					if (nftw(old, rm_entry, 16, FTW_DEPTH | FTW_PHYS) < 0)
						return -1;
				} else if (unlink(old) < 0) {
					util_err("record: cannot remove %s: %s", old,
						 strerror(errno));
					return -1;
				}
			}
			if (rename(dir, old) < 0) {
				util_err("record: cannot rename %s to %s: %s", dir, old,
					 strerror(errno));
				return -1;
			}
		} else {
			if (!S_ISDIR(st.st_mode)) {
				util_err("record: %s exists and is not a directory", dir);
				return -1;
			}
			int n = atr_files(dir, 0);
			if (n < 0)
				return -1;
			if (n > 0 && !force) {
				util_err(
				    "record: %s already holds %d trace file(s); use --force to "
				    "replace them or choose another -o DIR",
				    dir, n);
				return -1;
			}
			if (n > 0 && atr_files(dir, 1) < 0)
				return -1;
			return 0;
		}
	}
	if (mkdir(dir, 0700) < 0) {
		util_err("record: cannot create %s: %s", dir, strerror(errno));
		return -1;
	}
	return 0;
}

static int set_env(const char *k, const char *v)
{
	return v ? setenv(k, v, 1) : unsetenv(k);
}

struct rec_opts {
	const char *dir;
	char collector[128]; /* -o tcp://: numeric ADDR:PORT for the library */
	int explicit_dir, force, no_children, stacks, timing, no_start, no_rss;
	const char *buffer_kb;
	const char *stack_depth;
	const char *zstd_level;
	const char *encode;   /* --encode: ALLOCTRACE_ENCODE */
	int compact_level;    /* --compact-level: after the program (atr_compact.h) */
	unsigned wbehind_mib; /* --write-behind, 0: off */
	char sample[24];      /* --sample: bytes, "" = every call */
};

/* record -p: the tracer's settings for alloctrace_attach_impl, the same
 * ALLOCTRACE_* names the child of a plain record gets, as "NAME=VALUE"
 * strings each ended by a NUL, then an empty one.  Returns the length. */
static size_t attach_settings(const struct rec_opts *o, char *buf, size_t cap)
{
	const struct {
		const char *name, *value;
	} set[] = {
	    {"ALLOCTRACE_NO_CHILDREN", o->no_children ? "1" : NULL},
	    {"ALLOCTRACE_TIMING", o->timing ? "1" : NULL},
	    {"ALLOCTRACE_STACKS", o->stacks ? "1" : NULL},
	    {"ALLOCTRACE_STACK_DEPTH", o->stack_depth},
	    {"ALLOCTRACE_BUFFER_KB", o->buffer_kb},
	    {"ALLOCTRACE_ZSTD_LEVEL", o->zstd_level},
	    {"ALLOCTRACE_SAMPLE", *o->sample ? o->sample : NULL},
	    /* -o tcp://: the stream's settings from record's environment */
	    {"ALLOCTRACE_COLLECTOR", o->collector[0] ? o->collector : NULL},
	    {"ALLOCTRACE_NET_BUFFER_KB",
	     o->collector[0] ? getenv("ALLOCTRACE_NET_BUFFER_KB") : NULL},
	    {"ALLOCTRACE_NET_TIMEOUT_MS",
	     o->collector[0] ? getenv("ALLOCTRACE_NET_TIMEOUT_MS") : NULL},
	};
	size_t n = 0;
	for (size_t i = 0; i < sizeof(set) / sizeof(*set); i++) {
		if (!set[i].value)
			continue;
		/* the values were checked: short numbers, well below cap */
		int w = snprintf(buf + n, cap - n - 1, "%s=%s", set[i].name, set[i].value);
		if (w > 0 && (size_t)w < cap - n - 1)
			n += (size_t)w + 1;
	}
	buf[n++] = 0;
	return n;
}

/* In the child: environment, then exec.  Never returns. */
static void child_exec(const struct rec_opts *o, const char *lib, const char *absdir, uint64_t tps,
		       char **prog, int errfd)
{
	char buf[32];
	const char *prev = getenv("LD_PRELOAD");
	struct util_buf pre = {0};
	if (util_buf_puts(&pre, lib) < 0 ||
	    (prev && *prev && (util_buf_puts(&pre, ":") < 0 || util_buf_puts(&pre, prev) < 0)))
		_exit(127);
	int bad = 0;
	bad |= set_env("LD_PRELOAD", pre.data);
	bad |= set_env("ALLOCTRACE_DIR", absdir); /* with a collector: the spool */
	bad |= set_env("ALLOCTRACE_COLLECTOR", o->collector[0] ? o->collector : NULL);
	bad |= set_env("ALLOCTRACE_FILE", NULL);
	bad |= set_env("MTRACE_CTL_FILE", NULL);
	bad |= set_env("ALLOCTRACE_NO_CHILDREN", o->no_children ? "1" : NULL);
	bad |= set_env("ALLOCTRACE_TIMING", o->timing ? "1" : NULL);
	bad |= set_env("ALLOCTRACE_STACKS", o->stacks ? "1" : NULL);
	bad |= set_env("ALLOCTRACE_STACK_DEPTH", o->stack_depth);
	bad |= set_env("ALLOCTRACE_START", o->no_start ? "0" : NULL);
	bad |= set_env("ALLOCTRACE_BUFFER_KB", o->buffer_kb);
	bad |= set_env("ALLOCTRACE_ZSTD_LEVEL", o->zstd_level);
	/* a collector's stream is frames: the library ignores it there */
	bad |= set_env("ALLOCTRACE_ENCODE", o->collector[0] ? NULL : o->encode);
	bad |= set_env("ALLOCTRACE_SAMPLE", *o->sample ? o->sample : NULL);
	if (tps) {
		snprintf(buf, sizeof(buf), "%" PRIu64, tps);
		bad |= set_env("ALLOCTRACE_TICKS_PER_SEC", buf);
	} else {
		bad |= set_env("ALLOCTRACE_TICKS_PER_SEC", NULL);
	}
	int e = ENOMEM;
	if (!bad) {
		execvp(prog[0], prog);
		e = errno;
	}
	if (write(errfd, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

/* ---- RSS sampling: /proc/<pid>/statm every 10 ms into DIR/<pid>.rss ----
 * The child's from its start; every other traced process's from when its
 * trace file appears in DIR (looked for every other sample, less often
 * when reading the directory takes long: at most ~2% of the thread's
 * time): a fork child's Max RSS is what compare anchors its prediction
 * at (rp_convert.c's traced_rss), and report's RSS account needs them. */

#define REC_RSS_INTERVAL_NS 10000000u
#define REC_RSS_SCAN_TICKS  2u

struct rss_proc {
	struct atr_rss_writer w;
	int live;
};

struct rss_sampler {
	struct atr_rss_writer w; /* the child's */
	int root_live;
	pid_t root;
	char root_trace[PATH_MAX + 32]; /* its first image's trace, until open */
	char dir[PATH_MAX];
	struct rss_proc *more; /* the other processes' */
	size_t nmore, capmore;
	struct util_hmap seen; /* pid -> 1: a writer was tried */
	pthread_t th;
	volatile int stop;
	int running, err;
};

/* A sample of w: 1 while its process lives, 0 when it is gone. */
static int rss_sample(struct rss_sampler *s, struct atr_rss_writer *w)
{
	int rc = atr_rss_writer_sample(w);
	if (rc >= 0)
		return 1;
	if (rc != -ESRCH && rc != -ENOENT && !s->err)
		s->err = -rc;
	return 0;
}

/* "<pid>.atr" or "<pid>.<n>.atr": the pid and *seq n (0 for the
 * first), else 0. */
static pid_t rss_trace_pid(const char *name, uint32_t *seq)
{
	char *e;
	long v = strtol(name, &e, 10);
	*seq = 0;
	if (e == name || v <= 0 || v > INT32_MAX || (*e != '.'))
		return 0;
	if (!strcmp(e, ".atr"))
		return (pid_t)v;
	char *f;
	long n = strtol(e + 1, &f, 10);
	if (f == e + 1 || n <= 0 || n > INT32_MAX || strcmp(f, ".atr"))
		return 0;
	*seq = (uint32_t)n;
	return (pid_t)v;
}

/* The writer of pid's samples, a new one for a new process, or NULL
 * (none could be opened, or its process is gone). */
static struct atr_rss_writer *rss_writer_of(struct rss_sampler *s, pid_t pid)
{
	if (pid == s->root)
		return s->root_live ? &s->w : NULL;
	uint64_t v;
	if (util_hmap_lookup(&s->seen, (uint64_t)pid, &v))
		return v && s->more[v - 1].live ? &s->more[v - 1].w : NULL;
	if (util_hmap_insert(&s->seen, (uint64_t)pid, 0, NULL) < 0)
		return NULL;
	if (s->nmore == s->capmore) {
		size_t nc = s->capmore ? s->capmore * 2 : 16;
		struct rss_proc *nm = realloc(s->more, nc * sizeof(*nm));
		if (!nm)
			return NULL;
		s->more = nm;
		s->capmore = nc;
	}
	char path[PATH_MAX + 32];
	snprintf(path, sizeof(path), "%s/%d.rss", s->dir, (int)pid);
	struct rss_proc *r = &s->more[s->nmore];
	/* gone already, or an earlier process of the pid has the file */
	if (atr_rss_writer_open(&r->w, path, (uint32_t)pid, REC_RSS_INTERVAL_NS) < 0)
		return NULL;
	r->live = 1;
	util_hmap_insert(&s->seen, (uint64_t)pid, ++s->nmore, NULL);
	return &r->w;
}

/* New trace files in the directory: a writer for each new process, and
 * each process's samples read the self_rss of its latest image's trace
 * (an image that exec'd keeps the old one's until then: its first
 * samples, where its RSS is small, may subtract too much). */
static void rss_scan(struct rss_sampler *s)
{
	DIR *d = opendir(s->dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		uint32_t seq;
		pid_t pid = rss_trace_pid(de->d_name, &seq);
		struct atr_rss_writer *w = pid ? rss_writer_of(s, pid) : NULL;
		if (!w || (w->trace >= 0 && seq <= w->trace_seq))
			continue;
		char path[PATH_MAX + 300];
		snprintf(path, sizeof(path), "%s/%s", s->dir, de->d_name);
		atr_rss_writer_trace(w, path, seq);
	}
	closedir(d);
}

static void *rss_thread(void *arg)
{
	struct rss_sampler *s = arg;
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	uint64_t scan_at = 0;
	for (uint64_t tick = 0; !s->stop; tick++) {
		/* the child's trace from the first sample after its library
		   created it, not at the next directory scan */
		if (s->root_live && s->w.trace < 0)
			atr_rss_writer_trace(&s->w, s->root_trace, 0);
		if (s->root_live)
			s->root_live = rss_sample(s, &s->w);
		if (tick >= scan_at) {
			uint64_t t0 = plat_mono_ns();
			rss_scan(s);
			uint64_t took = plat_mono_ns() - t0;
			scan_at = tick + REC_RSS_SCAN_TICKS + 50 * took / REC_RSS_INTERVAL_NS;
		}
		for (size_t i = 0; i < s->nmore; i++)
			if (s->more[i].live && !(s->more[i].live = rss_sample(s, &s->more[i].w)))
				atr_rss_writer_close(&s->more[i].w);
		next.tv_nsec += REC_RSS_INTERVAL_NS;
		if (next.tv_nsec >= 1000000000L) {
			next.tv_nsec -= 1000000000L;
			next.tv_sec++;
		}
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
			;
	}
	return NULL;
}

static void rss_start(struct rss_sampler *s, const char *dir, pid_t pid)
{
	char path[PATH_MAX + 32];
	memset(s, 0, sizeof(*s));
	snprintf(path, sizeof(path), "%s/%d.rss", dir, (int)pid);
	snprintf(s->dir, sizeof(s->dir), "%s", dir);
	s->root = pid;
	util_hmap_init(&s->seen);
	int rc = atr_rss_writer_open(&s->w, path, (uint32_t)pid, REC_RSS_INTERVAL_NS);
	if (rc < 0) {
		util_err("record: %s: %s (no RSS samples)", path, strerror(-rc));
		util_hmap_destroy(&s->seen);
		return;
	}
	s->root_live = 1;
	snprintf(s->root_trace, sizeof(s->root_trace), "%s/%d.atr", dir, (int)pid);
	/* signals stay with the main thread (it forwards them) */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = pthread_create(&s->th, NULL, rss_thread, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		util_err("record: RSS sampling thread: %s", strerror(rc));
		atr_rss_writer_close(&s->w);
		util_hmap_destroy(&s->seen);
		return;
	}
	s->running = 1;
}

static void rss_stop(struct rss_sampler *s)
{
	if (!s->running)
		return;
	s->stop = 1;
	pthread_join(s->th, NULL);
	int rc = atr_rss_writer_close(&s->w);
	for (size_t i = 0; i < s->nmore; i++) {
		int r = s->more[i].live ? atr_rss_writer_close(&s->more[i].w) : 0;
		if (r < 0 && !rc)
			rc = r;
	}
	free(s->more);
	util_hmap_destroy(&s->seen);
	if (s->err || rc < 0)
		util_err("record: writing RSS samples: %s", strerror(s->err ? s->err : -rc));
	s->running = 0;
}

/* -o tcp://HOST:PORT: the library takes numeric addresses only (a name
 * lookup inside the traced program could load NSS modules), so resolve
 * here.  0, or 2 (usage) / 1 (lookup failed) with the error shown. */
static int rec_collector(const char *url, char *out, size_t len)
{
	const char *spec = url + 6, *colon = strrchr(spec, ':');
	char host[256];
	if (!colon || colon == spec || !colon[1] ||
	    strspn(colon + 1, "0123456789") != strlen(colon + 1) ||
	    (size_t)(colon - spec) >= sizeof host) {
		util_err("record: -o %s: expected tcp://HOST:PORT", url);
		return 2;
	}
	size_t hl = (size_t)(colon - spec);
	const char *h = spec;
	if (hl >= 2 && spec[0] == '[' && spec[hl - 1] == ']') {
		h++;
		hl -= 2;
	}
	memcpy(host, h, hl);
	host[hl] = 0;
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res;
	int e = getaddrinfo(host, colon + 1, &hints, &res);
	if (e) {
		util_err("record: -o %s: %s", url, gai_strerror(e));
		return 1;
	}
	char nh[NI_MAXHOST];
	e = getnameinfo(res->ai_addr, res->ai_addrlen, nh, sizeof nh, NULL, 0, NI_NUMERICHOST);
	int v6 = res->ai_family == AF_INET6;
	freeaddrinfo(res);
	if (e) {
		util_err("record: -o %s: %s", url, gai_strerror(e));
		return 1;
	}
	snprintf(out, len, v6 ? "[%s]:%s" : "%s:%s", nh, colon + 1);
	return 0;
}

/* ---- -o tcp://: the spool ----
 * With a collector the library's files are spools: the header and the
 * staging blocks, everything else went over the network.  A process image
 * that exited sent its staging blocks and deleted its spool; an exec'd
 * image's spool is sent by the next image.  What is left when PROG is done
 * belongs to killed processes: sent here as the rest of their streams
 * (docs/NET_FORMAT.md, CONTINUATION). */

static int send_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int net_connect_numeric(const char *spec)
{
	char host[128];
	const char *colon = strrchr(spec, ':');
	size_t hl = (size_t)(colon - spec);
	const char *h = spec;
	if (spec[0] == '[') {
		h++;
		hl -= 2;
	}
	snprintf(host, sizeof host, "%.*s", (int)hl, h);
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST}, *res;
	if (getaddrinfo(host, colon + 1, &hints, &res) != 0)
		return -1;
	int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct timeval tv = {.tv_sec = 10};
	if (fd >= 0 && (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0 ||
			connect(fd, res->ai_addr, res->ai_addrlen) != 0)) {
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return fd;
}

/* 0 sent, -1 not (kept), 1 not a finished process's spool (left alone). */
static int ship_spool(const char *path, const char *collector)
{
	struct util_buf b = {0};
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	uint8_t chunk[65536];
	ssize_t r;
	while ((r = read(fd, chunk, sizeof chunk)) > 0)
		if (util_buf_append(&b, chunk, (size_t)r) < 0)
			util_die_nomem();
	close(fd);
	const uint8_t *f = (const uint8_t *)b.data;
	uint32_t bs, pid;
	if (b.len < ATR_HEADER_SIZE || memcmp(f, ATR_MAGIC, 8) != 0) {
		util_buf_free(&b);
		return 1;
	}
	memcpy(&bs, f + ATR_H_BLOCK_SIZE, 4);
	memcpy(&pid, f + ATR_H_PID, 4);
	if (bs < ATR_BLOCK_SIZE_MIN || bs > ATR_BLOCK_SIZE_MAX || (bs & (bs - 1)) ||
	    (kill((pid_t)pid, 0) == 0 || errno != ESRCH)) {
		util_buf_free(&b); /* still running (a daemon child), or not ours */
		return 1;
	}
	int s = net_connect_numeric(collector);
	uint8_t hello[ATN_HELLO_SIZE] = {0}, mh[ATN_MSG_HEADER_SIZE];
	memcpy(hello + ATN_H_MAGIC, ATN_MAGIC, 8);
	atr_put32(hello + ATN_H_VERSION, ATN_VERSION);
	atr_put32(hello + ATN_H_HELLO_SIZE, ATN_HELLO_SIZE);
	atr_put32(hello + ATN_H_TRACE_HDR, ATR_HEADER_SIZE);
	atr_put32(hello + ATN_H_FLAGS, ATN_FLAG_CONTINUATION);
	gethostname((char *)hello + ATN_H_HOST, ATN_HOST_MAX - 1);
	int rc = s < 0 || send_all(s, hello, sizeof hello) || send_all(s, f, ATR_HEADER_SIZE);
	/* staging blocks: page-aligned, block_size each; sent whole (records
	 * end at the first zero word) */
	for (size_t off = (ATR_HEADER_SIZE + 4095) & ~(size_t)4095; !rc && off + bs <= b.len;
	     off += bs) {
		uint32_t magic, kind;
		memcpy(&magic, f + off, 4);
		memcpy(&kind, f + off + ATR_B_KIND, 4);
		if (magic != ATR_BLOCK_MAGIC ||
		    (kind != ATR_BLOCK_STAGING && kind != ATR_BLOCK_RETIRED))
			continue;
		atr_put32(mh, ATN_MSG_UNIT);
		atr_put32(mh + 4, bs);
		rc = send_all(s, mh, sizeof mh) || send_all(s, f + off, bs);
	}
	atr_put32(mh, ATN_MSG_HEADER);
	atr_put32(mh + 4, ATR_HEADER_SIZE);
	if (!rc)
		rc = send_all(s, mh, sizeof mh) || send_all(s, f, ATR_HEADER_SIZE);
	if (s >= 0)
		close(s);
	util_buf_free(&b);
	if (!rc)
		unlink(path);
	return rc ? -1 : 0;
}

static void ship_leftovers(const char *spool, const char *collector)
{
	DIR *d = opendir(spool);
	int sent = 0, kept = 0;
	struct dirent *de;
	while (d && (de = readdir(d)) != NULL) {
		if (!is_atr_name(de->d_name))
			continue;
		char p[PATH_MAX + 256];
		snprintf(p, sizeof p, "%s/%s", spool, de->d_name);
		int r = ship_spool(p, collector);
		sent += r == 0;
		kept += r != 0;
	}
	if (d)
		closedir(d);
	if (sent)
		fprintf(stderr,
			"%s: sent what %d process image(s) killed before their exit had left to "
			"tcp://%s\n",
			util_msg_prog(), sent, collector);
	if (kept)
		util_err("record: %d spool file(s) not sent (still running or the collector is "
			 "gone): kept in %s",
			 kept, spool);
	else if (rmdir(spool) != 0)
		util_err("record: cannot remove %s: %s", spool, strerror(errno));
}

/* The staging blocks of processes that are gone are waste now: each
 * file is rewritten without them (atr_compact.h).  A process still
 * running (a daemon child, an attached target) is left alone, and so is
 * any file a reader would call damaged. */
_Static_assert(ATR_COMPACT_LEVEL_DEFAULT == 9, "--help and docs/CLI.md say 9");

/* Files of at least this many bytes in all make `record` say that it
 * compacts them and how long it took: ~0.04 s of waiting per 10 MB at
 * level 9 on 2 cores (bench/RESULTS.md, "Compaction on every core"), so a
 * user does not take a long silence after the program for a hang. */
#define REC_COMPACT_NOTE_BYTES (256ULL << 20)

/* Traces this large get notes on what record does after the program. */
static uint64_t rec_note_bytes(void)
{
	const char *nb = getenv("ALLOCTRACE_COMPACT_NOTE_BYTES"); /* tests */
	return nb ? strtoull(nb, NULL, 10) : REC_COMPACT_NOTE_BYTES;
}

/* The trace files of finished processes in dir, compacted at level
 * (atr_compact.h). */
static void compact_dir(const char *dir, int level)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	uint64_t total = 0, saved = 0, t0 = plat_mono_ns();
	size_t files = 0;
	while (d && (de = readdir(d)) != NULL) {
		struct stat st;
		char p[PATH_MAX + 256];
		snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
		if (is_atr_name(de->d_name) && stat(p, &st) == 0) {
			total += (uint64_t)st.st_size;
			files++;
		}
	}
	int note = total >= rec_note_bytes();
	char b1[UTIL_FMT_BUF], b2[UTIL_FMT_BUF];
	if (note)
		fprintf(stderr,
			"%s: compacting %zu trace file(s), %s, at zstd level %d (--compact-level 0 "
			"skips the recompression)\n",
			util_msg_prog(), files, util_fmt_bytes(b1, sizeof b1, total), level);
	if (d)
		rewinddir(d);
	while (d && (de = readdir(d)) != NULL) {
		if (!is_atr_name(de->d_name))
			continue;
		char p[PATH_MAX + 256], eb[512] = "";
		snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
		uint8_t h[ATR_HEADER_SIZE];
		int fd = open(p, O_RDONLY | O_CLOEXEC);
		ssize_t got = fd < 0 ? -1 : pread(fd, h, sizeof h, 0);
		if (fd >= 0)
			close(fd);
		uint32_t pid;
		if (got != (ssize_t)sizeof h || memcmp(h, ATR_MAGIC, 8) != 0)
			continue;
		memcpy(&pid, h + ATR_H_PID, 4);
		if (pid && (kill((pid_t)pid, 0) == 0 || errno != ESRCH))
			continue; /* still running */
		uint64_t before = 0, after = 0;
		int r = atr_compact(p, level, 0, &before, &after, eb, sizeof eb);
		if (r < 0)
			util_err("record: %s (the file is unchanged)", eb);
		else if (r == 1)
			saved += before - after;
	}
	if (d)
		closedir(d);
	if (note)
		fprintf(stderr, "%s: compacted in %.1f s: %s\n", util_msg_prog(),
			(double)(plat_mono_ns() - t0) * 1e-9,
			util_fmt_bytes(b2, sizeof b2, total - saved));
}

/* The library's spool directory (-o tcp://): staging blocks. */
static int make_spool(char *out, size_t len)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(out, len, "%s/alloctrace-spool-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(out)) {
		util_err("record: cannot create a spool directory in %s: %s",
			 tmp && *tmp ? tmp : "/tmp", strerror(errno));
		return -1;
	}
	return 0;
}

/* att_attach's progress and warnings, as it goes. */
static void attach_note(void *arg, enum att_note kind, const char *msg)
{
	(void)arg;
	if (kind == ATT_WARN)
		util_warn("%s", msg);
	else if (kind == ATT_ERROR)
		util_err("record -p: %s", msg);
	else
		fprintf(stderr, "%s: %s\n", util_msg_prog(), msg);
}

/* The summary line: every process while there are few, else the
 * busiest ones and a count of the rest (a shell wrapper or a build forks
 * dozens of small processes). */
#define REPORT_LIST_MAX 6

struct proc_calls {
	uint32_t pid, exec_seq;
	uint64_t calls;
};

static int by_calls_desc(const void *a, const void *b)
{
	const struct proc_calls *x = a, *y = b;
	return x->calls < y->calls ? 1 : x->calls > y->calls ? -1 : 0;
}

static int report(const char *dir)
{
	char **paths;
	size_t n;
	char eb[512];
	uint64_t total = 0;
	size_t procs = 0;
	int rc = 0;
	if (atr_list(dir, &paths, &n, eb, sizeof(eb)) < 0) {
		paths = NULL;
		n = 0;
	}
	struct proc_calls *pc = calloc(n ? n : 1, sizeof(*pc));
	if (!pc)
		util_die_nomem();
	for (size_t i = 0; i < n; i++) {
		atr_file *f;
		uint64_t c = 0;
		if (atr_open(paths[i], &f, eb, sizeof(eb)) < 0) {
			util_err("%s", eb);
			rc = 1;
			continue;
		}
		if (atr_count_calls_quick(f, &c) < 0) {
			util_err("%s", atr_last_error(f));
			rc = 1;
		}
		const struct atr_info *in = atr_get_info(f);
		pc[procs].pid = in->pid;
		pc[procs].exec_seq = in->exec_seq;
		pc[procs].calls = c;
		total += c;
		procs++;
		atr_close(f);
	}
	atr_list_free(paths, n);
	size_t shown = procs;
	if (procs > REPORT_LIST_MAX) {
		qsort(pc, procs, sizeof(*pc), by_calls_desc);
		shown = REPORT_LIST_MAX - 1;
	}
	struct util_buf detail = {0};
	uint64_t rest = total;
	for (size_t i = 0; i < shown; i++) {
		util_buf_printf(&detail, "%spid %" PRIu32, i ? ", " : "", pc[i].pid);
		if (pc[i].exec_seq)
			util_buf_printf(&detail, " (exec %" PRIu32 ")", pc[i].exec_seq);
		util_buf_printf(&detail, ": %" PRIu64 " calls", pc[i].calls);
		rest -= pc[i].calls;
	}
	if (shown < procs)
		util_buf_printf(&detail,
				", %zu more: %" PRIu64 " calls; alloctrace info %s lists them",
				procs - shown, rest, dir);
	fprintf(stderr, "%s: recorded %" PRIu64 " calls in %zu process(es) to %s", util_msg_prog(),
		total, procs, dir);
	if (procs)
		fprintf(stderr, " (%s)", detail.data ? detail.data : "");
	fputc('\n', stderr);
	util_buf_free(&detail);
	free(pc);
	return rc;
}

/* --sample BYTES: 1 .. 2^40, with an optional binary suffix; 0 if bad. */
static uint64_t parse_sample(const char *s)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return 0;
	unsigned sh = 0;
	if (*end == 'k' || *end == 'K')
		sh = 10;
	else if (*end == 'm' || *end == 'M')
		sh = 20;
	else if (*end == 'g' || *end == 'G')
		sh = 30;
	if (sh)
		end++;
	if (*end || v == 0 || v > (1ULL << 40) >> sh)
		return 0;
	return (uint64_t)v << sh;
}

int cmd_record(int argc, char **argv)
{
	enum {
		O_FORCE = 256,
		O_NOCHILD,
		O_STACKS,
		O_TIMING,
		O_NOSTART,
		O_BUFKB,
		O_DEPTH,
		O_NORSS,
		O_DURATION,
		O_ZSTD,
		O_SAMPLE,
		O_COMPACT,
		O_ENCODE,
		O_WBEHIND
	};
	static const struct option opts[] = {
	    {"output", required_argument, NULL, 'o'},
	    {"force", no_argument, NULL, O_FORCE},
	    {"no-children", no_argument, NULL, O_NOCHILD},
	    {"stacks", no_argument, NULL, O_STACKS},
	    {"timing", no_argument, NULL, O_TIMING},
	    {"no-start", no_argument, NULL, O_NOSTART},
	    {"buffer-kb", required_argument, NULL, O_BUFKB},
	    {"stack-depth", required_argument, NULL, O_DEPTH},
	    {"zstd-level", required_argument, NULL, O_ZSTD},
	    {"compact-level", required_argument, NULL, O_COMPACT},
	    {"encode", required_argument, NULL, O_ENCODE},
	    {"sample", required_argument, NULL, O_SAMPLE},
	    {"no-rss", no_argument, NULL, O_NORSS},
	    {"write-behind", required_argument, NULL, O_WBEHIND},
	    {"pid", required_argument, NULL, 'p'},
	    {"duration", required_argument, NULL, O_DURATION},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct rec_opts o = {.dir = REC_DEFAULT_DIR,
			     .compact_level = ATR_COMPACT_LEVEL_DEFAULT,
			     .wbehind_mib = REC_WBEHIND_MIB,
			     .encode = REC_ENCODE_DEFAULT};
	long attach_pid = 0;
	double duration = 0;
	int c;
	optind = 1;
	while ((c = cmdu_getopt(argc, argv, "+o:hp:", opts, NULL)) != -1) {
		switch (c) {
		case 'p': {
			char *end;
			errno = 0;
			attach_pid = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || attach_pid <= 0 ||
			    attach_pid > INT_MAX) {
				util_err("record: -p %s: not a process id", optarg);
				return 2;
			}
			break;
		}
		case O_DURATION: {
			char *end;
			errno = 0;
			duration = strtod(optarg, &end);
			if (errno || *end || end == optarg || !(duration > 0) || duration > 1e7) {
				util_err(
				    "record: --duration %s: must be a positive number of seconds",
				    optarg);
				return 2;
			}
			break;
		}
		case 'o':
			o.dir = optarg;
			o.explicit_dir = 1;
			break;
		case O_FORCE:
			o.force = 1;
			break;
		case O_NOCHILD:
			o.no_children = 1;
			break;
		case O_STACKS:
			o.stacks = 1;
			break;
		case O_TIMING:
			o.timing = 1;
			break;
		case O_NOSTART:
			o.no_start = 1;
			break;
		case O_NORSS:
			o.no_rss = 1;
			break;
		case O_SAMPLE: {
			uint64_t b = parse_sample(optarg);
			if (!b) {
				util_err(
				    "record: --sample %s: must be a number of bytes from 1 to 2^40 "
				    "(suffix k, M or G allowed)",
				    optarg);
				return 2;
			}
			snprintf(o.sample, sizeof o.sample, "%" PRIu64, b);
			break;
		}
		case O_WBEHIND: {
			char *end;
			errno = 0;
			unsigned long v = strtoul(optarg, &end, 10);
			if (errno || *end || end == optarg || v > 1048576 || optarg[0] == '-') {
				util_err("record: --write-behind %s: must be 0 to 1048576 (MiB)",
					 optarg);
				return 2;
			}
			o.wbehind_mib = (unsigned)v;
			break;
		}
		case O_BUFKB: {
			char *end;
			errno = 0;
			unsigned long v = strtoul(optarg, &end, 10);
			if (errno || *end || end == optarg || v < 4 || v > 65536 || (v & (v - 1))) {
				util_err("record: --buffer-kb %s: must be a power of two from 4 to "
					 "65536",
					 optarg);
				return 2;
			}
			o.buffer_kb = optarg;
			break;
		}
		case O_ZSTD: {
			char *end;
			errno = 0;
			long v = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || v > 19 || v < -100) {
				util_err("record: --zstd-level %s: must be -100 to 19", optarg);
				return 2;
			}
			o.zstd_level = optarg;
			break;
		}
		case O_COMPACT: {
			char *end;
			errno = 0;
			long v = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || v < 0 || v > 19) {
				util_err("record: --compact-level %s: must be 0 to 19", optarg);
				return 2;
			}
			o.compact_level = (int)v;
			break;
		}
		case O_ENCODE:
			if (strcmp(optarg, "later") != 0 && strcmp(optarg, "thread") != 0) {
				util_err("record: --encode %s: must be later or thread", optarg);
				return 2;
			}
			o.encode = optarg;
			break;
		case O_DEPTH: {
			char *end;
			errno = 0;
			unsigned long v = strtoul(optarg, &end, 10);
			if (errno || *end || end == optarg || v < 1 || v > 256) {
				util_err("record: --stack-depth %s: must be 1 to 256", optarg);
				return 2;
			}
			o.stack_depth = optarg;
			break;
		}
		case 'h':
			record_usage(stdout);
			return 0;
		default:
			record_usage(stderr);
			return 2;
		}
	}
	if (attach_pid || duration > 0) {
		if (!attach_pid || optind < argc) {
			util_err("record: %s", attach_pid ? "-p PID takes no program"
							  : "--duration needs -p PID");
			return 2;
		}
		if (!*o.dir) {
			util_err("record: empty -o DIR");
			return 2;
		}
		if (o.no_start)
			util_warn("record: --no-start does not apply to -p: the attach starts "
				  "recording (docs/ATTACH.md)");
		if (o.no_rss)
			util_warn("record: --no-rss does not apply to -p: no RSS is sampled while "
				  "attached");
		int anet = !strncmp(o.dir, "tcp://", 6);
		char alib[PATH_MAX], adir[PATH_MAX];
		if (anet) {
			int r = rec_collector(o.dir, o.collector, sizeof o.collector);
			if (r)
				return r;
		}
		char settings[512];
		size_t slen = attach_settings(&o, settings, sizeof(settings));
		if (find_lib(alib) < 0)
			return 1;
		if (anet) {
			/* the tracer's spool (docs/NET_FORMAT.md), writable by the target */
			if (make_spool(adir, sizeof adir) < 0)
				return 1;
			struct stat pst;
			char proc[32];
			snprintf(proc, sizeof proc, "/proc/%ld", attach_pid);
			if (stat(proc, &pst) == 0 && pst.st_uid != geteuid() &&
			    chown(adir, pst.st_uid, pst.st_gid) != 0)
				util_warn("record: cannot give %s to the process's user: %s", adir,
					  strerror(errno));
		} else if (prepare_dir(o.dir, o.explicit_dir, o.force) < 0) {
			return 1;
		} else if (!realpath(o.dir, adir)) {
			util_err("record: %s: %s", o.dir, strerror(errno));
			return 1;
		}
		struct att_opts ao = {.pid = (pid_t)attach_pid,
				      .lib = alib,
				      .absdir = adir,
				      .ticks_per_sec = plat_ticks_per_sec(20000000, 1),
				      .settings = settings,
				      .settings_len = slen,
				      .duration = duration,
				      .note = attach_note};
		char eb[4200];
		int arc = att_attach(&ao, eb, sizeof(eb));
		if (arc < 0)
			util_err("record -p: %s", eb);
		if (anet) {
			ship_leftovers(adir, o.collector);
			if (arc >= 0)
				fprintf(stderr,
					"%s: recorded to %s (the collector wrote the files)\n",
					util_msg_prog(), o.dir);
			return arc < 0 ? 1 : 0;
		}
		if (arc < 0)
			return 1;
		report(adir);
		return 0;
	}
	if (optind >= argc) {
		util_err("record: no program given");
		record_usage(stderr);
		return 2;
	}
	if (!*o.dir) {
		util_err("record: empty -o DIR");
		return 2;
	}
	char **prog = argv + optind;
	char lib[PATH_MAX];
	if (find_lib(lib) < 0)
		return 1;
	int net = !strncmp(o.dir, "tcp://", 6);
	char spool[PATH_MAX] = "";
	if (net) {
		int r = rec_collector(o.dir, o.collector, sizeof o.collector);
		if (r)
			return r;
		o.no_rss = 1; /* the samples would be a local file */
		if (make_spool(spool, sizeof spool) < 0)
			return 1;
	} else if (prepare_dir(o.dir, o.explicit_dir, o.force) < 0) {
		return 1;
	}
	char absdir[PATH_MAX] = "";
	if (net)
		snprintf(absdir, sizeof absdir, "%s", spool);
	else if (!realpath(o.dir, absdir)) {
		util_err("record: %s: %s", o.dir, strerror(errno));
		return 1;
	}
	uint64_t tps = plat_ticks_per_sec(20000000, 1);

	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0) {
		util_err("record: pipe: %s", strerror(errno));
		return 1;
	}
	struct sigaction sa, old[4];
	static const int sigs[4] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = rec_forward;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		util_err("record: fork: %s", strerror(errno));
		close(pfd[0]);
		close(pfd[1]);
		return 1;
	}
	if (pid == 0) {
		close(pfd[0]);
		child_exec(&o, lib, absdir, tps, prog, pfd[1]);
	}
	rec_child = pid;
	for (int i = 0; i < 4; i++)
		sigaction(sigs[i], &sa, &old[i]);
	close(pfd[1]);
	int exec_err = 0;
	ssize_t got;
	do
		got = read(pfd[0], &exec_err, sizeof(exec_err));
	while (got < 0 && errno == EINTR);
	close(pfd[0]);
	struct rss_sampler rss = {0};
	if (got == 0 && !o.no_rss)
		rss_start(&rss, absdir, pid);
	/* the trace files' page cache (util_wbehind.h); -o tcp:// writes none */
	struct util_wbehind *wb = NULL;
	if (got == 0 && !net && o.wbehind_mib) {
		wb = util_wbehind_start(absdir, ".atr", (uint64_t)o.wbehind_mib << 20,
					REC_WBEHIND_INTERVAL_MS);
		if (!wb)
			util_err("record: write-behind thread: %s (the kernel writes the trace "
				 "when it will)",
				 strerror(errno));
	}

	int status = 0;
	pid_t w;
	do
		w = waitpid(pid, &status, 0);
	while (w < 0 && errno == EINTR);
	rec_child = 0;
	rss_stop(&rss);
	uint64_t behind = util_wbehind_stop(wb);
	for (int i = 0; i < 4; i++)
		sigaction(sigs[i], &old[i], NULL);
	if (w < 0) {
		util_err("record: waitpid: %s", strerror(errno));
		return 1;
	}
	if (got == (ssize_t)sizeof(exec_err)) {
		util_err("record: %s: %s", prog[0], strerror(exec_err));
		return exec_err == ENOENT ? 127 : 126;
	}
	int rc;
	if (WIFEXITED(status))
		rc = WEXITSTATUS(status);
	else if (WIFSIGNALED(status))
		rc = 128 + WTERMSIG(status);
	else
		rc = 1;
	if (net) {
		ship_leftovers(spool, o.collector);
		fprintf(stderr, "%s: recorded to %s (the collector wrote the files)\n",
			util_msg_prog(), o.dir);
	} else {
		if (behind && behind >= rec_note_bytes()) {
			char b[UTIL_FMT_BUF];
			fprintf(stderr,
				"%s: %s of trace written to disk while the program ran (its page "
				"cache kept to the newest %u MiB per file: --write-behind)\n",
				util_msg_prog(), util_fmt_bytes(b, sizeof b, behind),
				o.wbehind_mib);
		}
		compact_dir(o.dir, o.compact_level);
		report(o.dir);
	}
	return rc;
}
