/* collect.c - `alloctrace collect --listen [ADDR:]PORT [-o DIR]`.
 *
 * Receives the trace streams of processes recorded with
 * `record -o tcp://HOST:PORT` (docs/NET_FORMAT.md) and writes each as an
 * ordinary trace file, DIR/<pid>.atr (DIR/<pid>.<n>.atr when the name is
 * taken: a later image of the same pid), which every command reads.  One
 * thread, poll(): a client that sends garbage or vanishes mid-stream loses
 * its connection, never the collector.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "atn_stream.h"
#include "atr_compact.h"
#include "cmds/cmds.h"
#include "util_hmap.h"
#include "util_msg.h"

#define COL_DEFAULT_DIR "alloctrace.data"
#define COL_READ_SIZE	(256u << 10)
#define COL_RCVBUF	(1 << 20)

static volatile sig_atomic_t col_stop;
static sigset_t col_waitmask; /* the mask before SIGINT/SIGTERM were blocked */

static void col_usage(FILE *out)
{
	fprintf(out, "usage: alloctrace collect --listen [ADDR:]PORT [-o DIR] [--streams N]\n"
		     "                          [--compact-level N]\n"
		     "Receive the traces of programs recorded with `alloctrace record -o\n"
		     "tcp://HOST:PORT` and write one trace file per process image to DIR,\n"
		     "named as a local record names them (DIR/<pid>.atr, DIR/<pid>.<n>.atr).\n"
		     "Runs until SIGINT/SIGTERM (or --streams); see docs/NET_FORMAT.md.\n"
		     "  -l, --listen [ADDR:]PORT  address to listen on (default: all; PORT 0\n"
		     "                     picks a free port, printed on stderr)\n"
		     "  -o, --output DIR   where the trace files go (default " COL_DEFAULT_DIR
		     "; created\n"
		     "                     if missing; existing files are never overwritten)\n"
		     "      --streams N    exit after N connections (streams or their\n"
		     "                     continuations) have ended\n"
		     "      --compact-level N  when a process's stream has ended, recompress\n"
		     "                     its file at zstd level N (1..19), or 0 (only\n"
		     "                     staging blocks to frames); default 9\n");
}

static void col_on_signal(int sig)
{
	(void)sig;
	col_stop = 1;
}

/* One output file: a process image's stream, possibly in several
 * connections (a continuation sent after an exec or a kill, a reconnect
 * after the connection broke or this collector was restarted). */
struct col_file {
	char path[PATH_MAX];
	int fd, refs;
	uint64_t off; /* end of the units written */
	uint32_t pid, exec_seq, block_size;
	int clean_exit; /* the last header says the program exited */
	uint64_t start_realtime;
	char host[ATN_HOST_MAX + 1];
	/* staging blocks written, (thread, seq) -> offset: a later copy
	 * replaces one */
	struct util_hmap stg;
	/* after a reconnect (dedup): the frames in the file, (thread, seq),
	 * so that frames sent again are skipped */
	struct util_hmap frames;
	int dedup;
	int continued; /* a CONTINUATION came: the rest of an ended stream */
	int cont_done; /* ... and its connection ended cleanly */
	int compacted; /* its stream ended and it was handed to a compactor */
};

struct col_conn {
	int fd;
	char peer[80];
	struct atn_rx rx;
	struct col_file *f;
	uint64_t frames, staging, dups;
	uint64_t acked;	   /* the last acknowledgement queued */
	uint8_t ack[8];	   /* an acknowledgement being sent */
	unsigned ack_left; /* its bytes not sent yet */
	int cont;	   /* it carries a CONTINUATION (`record` after a kill) */
};

struct col {
	const char *dir;
	struct col_conn **c;
	size_t n;
	struct col_file **files; /* every file of this run */
	size_t nfiles;
	unsigned long ended;
	int lfd, level; /* the listening socket; --compact-level */
	pid_t *kids;	/* compactors running */
	size_t nkids;
};

static int write_at(struct col_conn *k, const void *p, size_t len, uint64_t off)
{
	const uint8_t *b = p;
	while (len) {
		ssize_t w = pwrite(k->f->fd, b, len, (off_t)off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return atn_rx_fail(&k->rx, "writing %s: %s", k->f->path,
					   w < 0 ? strerror(errno) : "short write");
		b += w;
		len -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

/* The name a local record would use: <pid>.atr, then <pid>.<n>.atr. */
static int col_create(struct col *cs, struct col_conn *k, struct col_file *f)
{
	for (uint32_t n = 0; n < 1000; n++) {
		if (n)
			snprintf(f->path, sizeof f->path, "%s/%" PRIu32 ".%" PRIu32 ".atr", cs->dir,
				 f->pid, n);
		else
			snprintf(f->path, sizeof f->path, "%s/%" PRIu32 ".atr", cs->dir, f->pid);
		f->fd = open(f->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (f->fd >= 0) {
			f->exec_seq = n;
			return 0;
		}
		if (errno != EEXIST)
			return atn_rx_fail(&k->rx, "cannot create %s: %s", f->path,
					   strerror(errno));
	}
	return atn_rx_fail(&k->rx, "%s: 1000 files for pid %" PRIu32 " already", cs->dir, f->pid);
}

/* One unit of the file: where a staging block is, that a frame is there. */
static int scan_unit(void *ctx, const struct atn_unit *u, uint64_t off)
{
	struct col_file *f = ctx;
	if (util_hmap_insert(u->frame ? &f->frames : &f->stg, u->key, u->frame ? 1 : off, NULL) < 0)
		util_die_nomem();
	return 0;
}

/* The units of a file this collector wrote (now or before a restart):
 * where each staging block and frame is, and where the last whole unit
 * ends.  A unit cut by a kill of the collector is cut off: the stream
 * sends it again.  0, or -1 with the error in k->rx. */
static int col_scan(struct col_conn *k, struct col_file *f)
{
	struct stat st;
	if (fstat(f->fd, &st) != 0)
		return atn_rx_fail(&k->rx, "%s: %s", f->path, strerror(errno));
	util_hmap_clear(&f->stg);
	util_hmap_clear(&f->frames);
	int64_t end = atn_file_units(f->fd, (uint64_t)st.st_size, f->block_size, scan_unit, f);
	if (ftruncate(f->fd, (off_t)end) != 0)
		return atn_rx_fail(&k->rx, "%s: %s", f->path, strerror(errno));
	f->off = (uint64_t)end;
	f->dedup = 1;
	return 0;
}

/* A continuation belongs to the file of the same process image. */
static struct col_file *col_find(struct col *cs, const struct col_file *id)
{
	for (size_t i = cs->nfiles; i-- > 0;) {
		struct col_file *f = cs->files[i];
		if (f->pid == id->pid && f->start_realtime == id->start_realtime &&
		    !strcmp(f->host, id->host) && !f->compacted)
			return f;
	}
	return NULL;
}

static struct col_file *col_add(struct col *cs, const struct col_file *id)
{
	struct col_file *f = calloc(1, sizeof *f);
	struct col_file **fs = realloc(cs->files, (cs->nfiles + 1) * sizeof *fs);
	if (!f || !fs)
		util_die_nomem();
	cs->files = fs;
	*f = *id;
	f->fd = -1;
	cs->files[cs->nfiles++] = f;
	return f;
}

/* ... or to a file a collector wrote into DIR before (this one before a
 * restart): <pid>.atr or <pid>.<n>.atr whose header names the same pid
 * and start time.  NULL if there is none. */
static struct col_file *col_find_disk(struct col *cs, const struct col_file *id)
{
	char pre[24];
	int pl = snprintf(pre, sizeof pre, "%" PRIu32 ".", id->pid);
	DIR *d = opendir(cs->dir);
	struct dirent *de;
	struct col_file *found = NULL;
	while (d && !found && (de = readdir(d)) != NULL) {
		const char *nm = de->d_name, *rest = nm + pl;
		size_t dl = strspn(rest, "0123456789");
		if (strncmp(nm, pre, (size_t)pl) != 0 ||
		    (strcmp(rest, "atr") != 0 && (dl == 0 || strcmp(rest + dl, ".atr") != 0)))
			continue;
		char path[PATH_MAX];
		if (snprintf(path, sizeof path, "%s/%s", cs->dir, nm) >= (int)sizeof path)
			continue;
		int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
		uint8_t h[ATN_FILE_HDR_SIZE];
		struct atn_file_hdr fh;
		if (fd < 0)
			continue;
		if (pread(fd, h, sizeof h, 0) == (ssize_t)sizeof h && !atn_file_hdr_read(h, &fh) &&
		    fh.pid == id->pid && fh.start_realtime == id->start_realtime) {
			found = col_add(cs, id);
			snprintf(found->path, sizeof found->path, "%s", path);
			found->fd = fd;
			found->exec_seq = fh.exec_seq;
		} else {
			close(fd);
		}
	}
	if (d)
		closedir(d);
	return found;
}

struct col_ctx {
	struct col *cs;
	struct col_conn *k;
};

static int col_attach(struct col *cs, struct col_conn *k, const uint8_t *h)
{
	struct atn_file_hdr fh;
	atn_file_hdr_read(h, &fh); /* the stream's reader checked it */
	struct col_file id = {
	    .pid = fh.pid, .start_realtime = fh.start_realtime, .block_size = fh.block_size};
	memcpy(id.host, k->rx.hello.host, sizeof id.host);
	uint32_t fl = k->rx.hello.flags;
	int resume = (fl & ATN_FLAG_RESUME) != 0;
	struct col_file *f = NULL;
	if (fl & (ATN_FLAG_CONTINUATION | ATN_FLAG_RESUME)) {
		f = col_find(cs, &id);
		if (!f && (f = col_find_disk(cs, &id)) != NULL)
			resume = 1; /* written before a restart: find its units */
	}
	if (f) {
		if (f->fd < 0 && (f->fd = open(f->path, O_RDWR | O_CLOEXEC)) < 0)
			return atn_rx_fail(&k->rx, "cannot reopen %s: %s", f->path,
					   strerror(errno));
		f->refs++;
		f->continued |= (fl & ATN_FLAG_CONTINUATION) != 0;
		k->cont = (fl & ATN_FLAG_CONTINUATION) != 0;
		k->f = f;
		if (resume && col_scan(k, f))
			return -1;
		fprintf(stderr, "%s: %s: pid %" PRIu32 ": %s -> %s\n", util_msg_prog(), k->peer,
			f->pid,
			fl & ATN_FLAG_RESUME ? "reconnected, the stream goes on"
					     : "the rest of its stream",
			f->path);
		return 0;
	}
	f = col_add(cs, &id);
	if (col_create(cs, k, f)) {
		cs->nfiles--;
		free(f);
		return -1;
	}
	f->refs = 1;
	f->continued = (fl & ATN_FLAG_CONTINUATION) != 0;
	k->cont = f->continued;
	f->off = ATN_FILE_HDR_SIZE;
	f->dedup = resume;
	k->f = f;
	fprintf(stderr, "%s: %s: pid %" PRIu32 " (%s) -> %s%s\n", util_msg_prog(), k->peer, f->pid,
		fh.exe, f->path,
		fl & ATN_FLAG_RESUME ? " (a reconnect, but no file of its start is here: the "
				       "beginning of its trace is missing)"
				     : "");
	return 0;
}

static int cb_header(void *arg, const uint8_t *hdr, int first)
{
	struct col_ctx *x = arg;
	struct col_conn *k = x->k;
	uint8_t h[ATN_FILE_HDR_SIZE];
	memcpy(h, hdr, sizeof h);
	if (first && col_attach(x->cs, k, h))
		return -1;
	/* the file's name says which image of the pid this is */
	atn_file_hdr_set_exec_seq(h, k->f->exec_seq);
	struct atn_file_hdr fh;
	atn_file_hdr_read(h, &fh);
	k->f->clean_exit = fh.clean_exit;
	return write_at(k, h, sizeof h, 0);
}

static int cb_unit(void *arg, const uint8_t *u, size_t len)
{
	struct col_conn *k = ((struct col_ctx *)arg)->k;
	struct col_file *f = k->f;
	struct atn_unit x;
	atn_unit_of(u, len, f->block_size, &x);
	uint64_t key = x.key, at;
	if (x.frame) {
		/* after a reconnect, frames written but not yet acknowledged
		 * come again */
		if (f->dedup && util_hmap_lookup(&f->frames, key, NULL)) {
			k->dups++;
			return 0;
		}
		if (write_at(k, u, len, f->off))
			return -1;
		if (f->dedup && util_hmap_insert(&f->frames, key, 1, NULL) < 0)
			util_die_nomem();
		f->off += x.span;
		k->frames++;
		return 0;
	}
	/* a staging block: page-aligned, block_size long as in a local file;
	 * a later copy of the same block (sent again after an exec, a kill
	 * or a reconnect) holds at least as much: it replaces the earlier one */
	k->staging++;
	if (util_hmap_lookup(&f->stg, key, &at))
		return write_at(k, u, len, at);
	f->off = atn_unit_start(&x, f->off);
	if (util_hmap_insert(&f->stg, key, f->off, NULL) < 0)
		util_die_nomem();
	if (write_at(k, u, len, f->off))
		return -1;
	f->off += x.span;
	return 0;
}

static const struct atn_rx_cb col_cb = {.header = cb_header, .unit = cb_unit};

_Static_assert(ATR_COMPACT_LEVEL_DEFAULT == 9, "--help and docs/CLI.md say 9");

/* A file whose stream has ended is compacted (atr_compact.h) by a child
 * process, so that the streams still coming in are never held up. */
static void col_compact(struct col *cs, struct col_file *f)
{
	pid_t *kids = realloc(cs->kids, (cs->nkids + 1) * sizeof *kids);
	if (!kids)
		util_die_nomem();
	cs->kids = kids;
	f->compacted = 1;
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0) {
		util_err("collect: %s: cannot start its compaction: %s (left as it is)", f->path,
			 strerror(errno));
		return;
	}
	if (pid == 0) {
		sigprocmask(SIG_SETMASK, &col_waitmask, NULL);
		/* the connections stay the collector's alone */
		for (size_t i = 0; i < cs->n; i++)
			close(cs->c[i]->fd);
		close(cs->lfd);
		char eb[512] = "";
		int r = atr_compact(f->path, cs->level, 0, NULL, NULL, eb, sizeof eb);
		if (r < 0)
			util_err("collect: %s (the file is unchanged)", eb);
		_exit(r < 0);
	}
	cs->kids[cs->nkids++] = pid;
}

/* Reap the compactors that are done (block: wait for all of them). */
static void col_reap(struct col *cs, int block)
{
	for (size_t i = cs->nkids; i-- > 0;) {
		int st;
		pid_t r = waitpid(cs->kids[i], &st, block ? 0 : WNOHANG);
		if (r == 0 || (r < 0 && errno == EINTR))
			continue;
		cs->kids[i] = cs->kids[--cs->nkids];
	}
}

static void col_close(struct col *cs, size_t i, const char *why)
{
	struct col_conn *k = cs->c[i];
	struct col_file *f = k->f;
	if (f && k->cont && !why)
		f->cont_done = 1;
	if (f && --f->refs == 0) {
		struct stat st;
		/* the last staging block reads to its end */
		if (fstat(f->fd, &st) == 0 && (uint64_t)st.st_size < f->off &&
		    ftruncate(f->fd, (off_t)f->off) != 0)
			util_err("collect: %s: %s", f->path, strerror(errno));
		if (close(f->fd) != 0)
			util_err("collect: %s: %s", f->path, strerror(errno));
		f->fd = -1;
		/* nothing more comes for it: the program exited (or the rest
		 * of its stream came) and the last connection ended cleanly,
		 * or the rest of the stream came whole before the killed
		 * program's own connection, cut mid-message, was seen to end */
		if ((!why && (f->clean_exit || f->continued)) || f->cont_done)
			col_compact(cs, f);
	}
	if (f) {
		const char *end = f->clean_exit
				      ? "the program exited"
				      : "no clean exit (killed, exec'd, or the stream was cut)";
		char dups[64] = "";
		if (k->dups)
			snprintf(dups, sizeof dups, ", %" PRIu64 " frame(s) it had already",
				 k->dups);
		fprintf(stderr,
			"%s: %s: pid %" PRIu32 ": %" PRIu64 " frame(s), %" PRIu64
			" staging block(s)%s, %" PRIu64 " bytes -> %s (%s%s%s)\n",
			util_msg_prog(), k->peer, f->pid, k->frames, k->staging, dups, k->rx.bytes,
			f->path, end, why ? "; " : "", why ? why : "");
		cs->ended++;
	} else if (why) {
		util_err("collect: %s: %s", k->peer, why);
	}
	close(k->fd);
	atn_rx_free(&k->rx);
	free(k);
	cs->c[i] = cs->c[--cs->n];
}

/* Feature ACK: tell the sender how much of this connection's messages is
 * in the file (it keeps the rest to send again after a reconnect).  Never
 * waits: a sender that does not read gets the next count later. */
static void col_ack(struct col_conn *k)
{
	if (!(k->rx.hello.features & ATN_FEAT_ACK))
		return;
	uint64_t v = k->rx.done - k->rx.msg_base;
	if (!k->ack_left && v > k->acked) {
		memcpy(k->ack, &v, 8); /* little-endian hosts only, as the writer */
		k->acked = v;
		k->ack_left = 8;
	}
	while (k->ack_left) {
		ssize_t w =
		    send(k->fd, k->ack + 8 - k->ack_left, k->ack_left, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w <= 0)
			return; /* full or gone: the read side will tell */
		k->ack_left -= (unsigned)w;
	}
}

static void col_read(struct col *cs, size_t i, uint8_t *buf)
{
	struct col_conn *k = cs->c[i];
	ssize_t r = read(k->fd, buf, COL_READ_SIZE);
	if (r < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (r < 0) {
		char why[128];
		snprintf(why, sizeof why, "connection error: %s", strerror(errno));
		col_close(cs, i, why);
		return;
	}
	if (r == 0) {
		char why[128] = "";
		if (k->rx.state == ATN_RX_HELLO || k->rx.state == ATN_RX_TRACE_HDR)
			snprintf(why, sizeof why, "connection closed before a whole hello");
		else if (k->rx.have)
			snprintf(why, sizeof why,
				 "connection closed inside a message: %zu byte(s) dropped",
				 k->rx.have);
		col_close(cs, i, why[0] ? why : NULL);
		return;
	}
	struct col_ctx x = {cs, k};
	if (atn_rx_feed(&k->rx, buf, (size_t)r, &col_cb, &x) != 0) {
		char why[320];
		snprintf(why, sizeof why, "bad stream, connection dropped: %s", k->rx.err);
		col_close(cs, i, why);
		return;
	}
	col_ack(k);
}

/* [ADDR:]PORT, ADDR a name, an IPv4 address or [IPv6]. */
static int col_listen(const char *spec)
{
	char host[256] = "", port[16];
	const char *colon = strrchr(spec, ':');
	const char *ps = colon ? colon + 1 : spec;
	if (strlen(ps) == 0 || strlen(ps) >= sizeof port ||
	    strspn(ps, "0123456789") != strlen(ps)) {
		util_err("collect: --listen %s: expected [ADDR:]PORT", spec);
		return -2;
	}
	snprintf(port, sizeof port, "%s", ps);
	if (colon) {
		size_t hl = (size_t)(colon - spec);
		const char *h = spec;
		if (hl >= 2 && spec[0] == '[' && spec[hl - 1] == ']') {
			h++;
			hl -= 2;
		}
		if (hl >= sizeof host) {
			util_err("collect: --listen %s: address too long", spec);
			return -2;
		}
		memcpy(host, h, hl);
		host[hl] = 0;
	}
	struct addrinfo hints = {.ai_family = AF_UNSPEC,
				 .ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_PASSIVE},
			*res;
	int e = getaddrinfo(host[0] ? host : NULL, port, &hints, &res);
	if (e) {
		util_err("collect: --listen %s: %s", spec, gai_strerror(e));
		return -1;
	}
	int fd = -1, err = 0;
	for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0) {
			err = errno;
			continue;
		}
		int one = 1, rb = COL_RCVBUF;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		/* per client: bounds the collector's kernel memory (inherited
		 * by accepted sockets) */
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rb, sizeof rb);
		if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 64) != 0) {
			err = errno;
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(res);
	if (fd < 0)
		util_err("collect: cannot listen on %s: %s", spec, strerror(err));
	return fd;
}

static void peer_name(int fd, char *out, size_t len)
{
	struct sockaddr_storage a;
	socklen_t al = sizeof a;
	char h[NI_MAXHOST], p[NI_MAXSERV];
	if (getpeername(fd, (struct sockaddr *)&a, &al) != 0 ||
	    getnameinfo((struct sockaddr *)&a, al, h, sizeof h, p, sizeof p,
			NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
		snprintf(out, len, "?");
		return;
	}
	snprintf(out, len, a.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s", h, p);
}

static void col_accept(struct col *cs, int lfd)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0) {
		if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
			util_err("collect: accept: %s", strerror(errno));
		return;
	}
	struct col_conn *k = calloc(1, sizeof *k);
	struct col_conn **c = realloc(cs->c, (cs->n + 1) * sizeof *c);
	if (!k || !c)
		util_die_nomem();
	cs->c = c;
	k->fd = fd;
	peer_name(fd, k->peer, sizeof k->peer);
	atn_rx_init(&k->rx);
	cs->c[cs->n++] = k;
}

static void print_listening(int fd, const char *dir)
{
	struct sockaddr_storage a;
	socklen_t al = sizeof a;
	char h[NI_MAXHOST] = "?", p[NI_MAXSERV] = "?";
	if (getsockname(fd, (struct sockaddr *)&a, &al) == 0)
		getnameinfo((struct sockaddr *)&a, al, h, sizeof h, p, sizeof p,
			    NI_NUMERICHOST | NI_NUMERICSERV);
	fprintf(stderr, "%s: collect: listening on %s%s%s:%s, writing to %s\n", util_msg_prog(),
		strchr(h, ':') ? "[" : "", h, strchr(h, ':') ? "]" : "", p, dir);
}

int cmd_collect(int argc, char **argv)
{
	enum { O_STREAMS = 256, O_COMPACT };
	static const struct option opts[] = {
	    {"listen", required_argument, NULL, 'l'},
	    {"output", required_argument, NULL, 'o'},
	    {"streams", required_argument, NULL, O_STREAMS},
	    {"compact-level", required_argument, NULL, O_COMPACT},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *listen_on = NULL, *dir = COL_DEFAULT_DIR;
	unsigned long streams = 0;
	int c, level = ATR_COMPACT_LEVEL_DEFAULT;
	optind = 1;
	while ((c = cmdu_getopt(argc, argv, "l:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'l':
			listen_on = optarg;
			break;
		case 'o':
			dir = optarg;
			break;
		case O_STREAMS: {
			char *end;
			errno = 0;
			streams = strtoul(optarg, &end, 10);
			if (errno || *end || end == optarg || streams == 0 || optarg[0] == '-') {
				util_err("collect: --streams %s: must be a positive number",
					 optarg);
				return 2;
			}
			break;
		}
		case O_COMPACT: {
			char *end;
			errno = 0;
			long v = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || v < 0 || v > 19) {
				util_err("collect: --compact-level %s: must be 0 to 19", optarg);
				return 2;
			}
			level = (int)v;
			break;
		}
		case 'h':
			col_usage(stdout);
			return 0;
		default:
			col_usage(stderr);
			return 2;
		}
	}
	if (optind < argc || !listen_on || !*dir) {
		util_err("collect: %s", optind < argc ? "unexpected argument"
					: !listen_on  ? "--listen [ADDR:]PORT is required"
						      : "empty -o DIR");
		col_usage(stderr);
		return 2;
	}
	struct stat st;
	if (stat(dir, &st) != 0) {
		if (errno != ENOENT || mkdir(dir, 0755) != 0) {
			util_err("collect: cannot create %s: %s", dir, strerror(errno));
			return 1;
		}
	} else if (!S_ISDIR(st.st_mode)) {
		util_err("collect: %s exists and is not a directory", dir);
		return 1;
	}
	int lfd = col_listen(listen_on);
	if (lfd < 0)
		return lfd == -2 ? 2 : 1;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = col_on_signal; /* no SA_RESTART: poll returns */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* the signals are let in only inside ppoll: one that came between the
	 * col_stop test and a plain poll(-1) was lost and the collector slept on */
	sigset_t stops, waitmask;
	sigemptyset(&stops);
	sigaddset(&stops, SIGINT);
	sigaddset(&stops, SIGTERM);
	sigprocmask(SIG_BLOCK, &stops, &waitmask);
	col_waitmask = waitmask;
	signal(SIGPIPE, SIG_IGN);
	print_listening(lfd, dir);

	struct col cs = {.dir = dir, .lfd = lfd, .level = level};
	uint8_t *buf = malloc(COL_READ_SIZE);
	struct pollfd *pf = NULL;
	if (!buf)
		util_die_nomem();
	int rc = 0;
	while (!col_stop && !(streams && cs.ended >= streams)) {
		pf = realloc(pf, (cs.n + 1) * sizeof *pf);
		if (!pf)
			util_die_nomem();
		pf[0] = (struct pollfd){.fd = lfd, .events = POLLIN};
		for (size_t i = 0; i < cs.n; i++)
			pf[i + 1] = (struct pollfd){.fd = cs.c[i]->fd, .events = POLLIN};
		size_t np = cs.n + 1;
		col_reap(&cs, 0);
		int r = ppoll(pf, np, NULL, &col_waitmask);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			util_err("collect: poll: %s", strerror(errno));
			rc = 1;
			break;
		}
		/* from the end: col_close moves the last connection into i */
		for (size_t i = np - 1; i >= 1; i--)
			if (pf[i].revents && i - 1 < cs.n && cs.c[i - 1]->fd == pf[i].fd)
				col_read(&cs, i - 1, buf);
		if (pf[0].revents & POLLIN)
			col_accept(&cs, lfd);
	}
	while (cs.n)
		col_close(&cs, cs.n - 1, "collector stopped");
	/* after --streams N the files are final when the collector is gone;
	 * after a signal it goes at once, and compactions under way finish
	 * on their own (each replaces its file only once it is done) */
	col_reap(&cs, !col_stop);
	for (size_t i = 0; i < cs.nfiles; i++) {
		util_hmap_destroy(&cs.files[i]->stg);
		util_hmap_destroy(&cs.files[i]->frames);
		free(cs.files[i]);
	}
	free(cs.files);
	free(cs.kids);
	free(cs.c);
	free(pf);
	free(buf);
	close(lfd);
	fprintf(stderr, "%s: collect: %lu stream(s) written to %s\n", util_msg_prog(), cs.ended,
		dir);
	return rc;
}
