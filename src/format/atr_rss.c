/* atr_rss.c - see atr_rss.h and docs/RSS_FORMAT.md. */
#define _GNU_SOURCE
#include "atr_rss.h"
#include "atr_format.h"
#include "atr_reader.h"
#include "plat_clock.h"
#include "util_io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int atr_rss_writer_open(struct atr_rss_writer *w, const char *path, uint32_t pid,
			uint64_t interval_ns)
{
	memset(w, 0, sizeof(*w));
	w->fd = w->statm = w->trace = -1;
	char sp[64];
	snprintf(sp, sizeof(sp), "/proc/%u/statm", pid);
	w->statm = open(sp, O_RDONLY | O_CLOEXEC);
	if (w->statm < 0)
		return -errno;
	w->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (w->fd < 0) {
		int e = errno;
		close(w->statm);
		w->statm = -1;
		return -e;
	}
	w->page = sysconf(_SC_PAGESIZE);
	if (w->page <= 0)
		w->page = 4096;
	unsigned char h[ATR_RSS_HEADER_SIZE];
	memset(h, 0, sizeof(h));
	memcpy(h, ATR_RSS_MAGIC, 8);
	atr_put32(h + 8, ATR_RSS_VERSION);
	atr_put32(h + 12, ATR_RSS_HEADER_SIZE);
	atr_put32(h + 16, ATR_RSS_SAMPLE_SIZE);
	atr_put32(h + 20, pid);
	atr_put32(h + 24, (uint32_t)w->page);
	atr_put64(h + 32, interval_ns);
	atr_put64(h + 40, plat_mono_ns());
	int rc = util_write_all(w->fd, h, sizeof(h));
	if (rc < 0) {
		close(w->fd);
		close(w->statm);
		w->fd = w->statm = -1;
	}
	return rc;
}

static int flush(struct atr_rss_writer *w)
{
	int rc = w->used ? util_write_all(w->fd, w->buf, w->used) : 0;
	w->used = 0;
	return rc;
}

int atr_rss_writer_trace(struct atr_rss_writer *w, const char *trace_path, uint32_t exec_seq)
{
	if (w->trace >= 0 && exec_seq <= w->trace_seq)
		return 0;
	int fd = open(trace_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (w->trace >= 0)
		close(w->trace);
	w->trace = fd;
	w->trace_seq = exec_seq;
	return 0;
}

int atr_rss_writer_sample(struct atr_rss_writer *w)
{
	char b[256];
	ssize_t n = pread(w->statm, b, sizeof(b) - 1, 0);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -ESRCH;
	b[n] = 0;
	unsigned long long size = 0, res = 0;
	if (sscanf(b, "%llu %llu", &size, &res) != 2)
		return -EINVAL;
	if (size == 0 && res == 0)
		return -ESRCH; /* a zombie: the program has exited */
	unsigned char *p = w->buf + w->used;
	atr_put64(p, plat_mono_ns());
	atr_put64(p + 8, (uint64_t)size * (uint64_t)w->page);
	atr_put64(p + 16, (uint64_t)res * (uint64_t)w->page);
	/* the recorder's own then: read after statm, it may count the
	   staging pages of a few microseconds more than statm saw */
	unsigned char v[8];
	uint64_t self = 0;
	if (w->trace >= 0 && pread(w->trace, v, sizeof v, ATR_H_SELF_RSS) == (ssize_t)sizeof v)
		self = atr_get64(v);
	atr_put64(p + 24, self);
	w->used += ATR_RSS_SAMPLE_SIZE;
	w->count++;
	if (w->used + ATR_RSS_SAMPLE_SIZE > sizeof(w->buf))
		return flush(w);
	return 0;
}

int atr_rss_writer_close(struct atr_rss_writer *w)
{
	int rc = 0;
	if (w->fd >= 0) {
		rc = flush(w);
		if (close(w->fd) < 0 && !rc)
			rc = -errno;
	}
	if (w->statm >= 0)
		close(w->statm);
	if (w->trace >= 0)
		close(w->trace);
	w->fd = w->statm = w->trace = -1;
	return rc;
}

int atr_rss_read(const char *path, struct atr_rss *out, char *errbuf, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(errbuf, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	unsigned char h[ATR_RSS_HEADER_SIZE];
	if (fread(h, 1, sizeof(h), f) != sizeof(h) || memcmp(h, ATR_RSS_MAGIC, 8) != 0) {
		snprintf(errbuf, errlen, "%s: not an alloctrace RSS file", path);
		fclose(f);
		return -1;
	}
	uint32_t ver = atr_get32(h + 8), hsize = atr_get32(h + 12), ssize = atr_get32(h + 16);
	if (ver != ATR_RSS_VERSION || hsize < ATR_RSS_HEADER_SIZE || hsize > 65536 ||
	    ssize < ATR_RSS_SAMPLE_MIN || ssize > 4096) {
		snprintf(errbuf, errlen, "%s: unsupported RSS file (version %u)", path, ver);
		fclose(f);
		return -1;
	}
	out->pid = atr_get32(h + 20);
	out->page_size = atr_get32(h + 24);
	out->interval_ns = atr_get64(h + 32);
	out->start_mono_ns = atr_get64(h + 40);
	if (fseek(f, hsize, SEEK_SET) != 0) {
		snprintf(errbuf, errlen, "%s: %s", path, strerror(errno));
		fclose(f);
		return -1;
	}
	size_t cap = 0;
	unsigned char rec[4096];
	while (fread(rec, 1, ssize, f) == ssize) {
		if (out->n == cap) {
			size_t nc = cap ? cap * 2 : 1024;
			struct atr_rss_sample *s = realloc(out->s, nc * sizeof(*s));
			if (!s) {
				snprintf(errbuf, errlen, "%s: out of memory", path);
				fclose(f);
				atr_rss_free(out);
				return -1;
			}
			out->s = s;
			cap = nc;
		}
		out->s[out->n].mono_ns = atr_get64(rec);
		out->s[out->n].vmsize = atr_get64(rec + 8);
		out->s[out->n].rss = atr_get64(rec + 16);
		out->s[out->n].self = ssize >= ATR_RSS_SAMPLE_SIZE ? atr_get64(rec + 24) : 0;
		out->n++;
	}
	fclose(f);
	return 0;
}

void atr_rss_free(struct atr_rss *r)
{
	free(r->s);
	r->s = NULL;
	r->n = 0;
}

/* out: file name in trace_path's directory; 0, or -1 if it does not fit. */
static int path_beside(const char *trace_path, const char *name, char *out, size_t len)
{
	const char *slash = strrchr(trace_path, '/');
	int dl = slash ? (int)(slash - trace_path) + 1 : 0;
	int n = snprintf(out, len, "%.*s%s", dl, trace_path, name);
	return n > 0 && (size_t)n < len ? 0 : -1;
}

int atr_rss_path_for_trace(const char *trace_path, uint32_t pid, char *out, size_t len)
{
	char name[32];
	snprintf(name, sizeof(name), "%u.rss", pid);
	return path_beside(trace_path, name, out, len);
}

void atr_rss_peak_in(const struct atr_rss *r, uint64_t from_ns, uint64_t to_ns,
		     struct atr_rss_peak *p)
{
	memset(p, 0, sizeof(*p));
	for (size_t i = 0; i < r->n; i++) {
		p->self_known |= r->s[i].self != 0;
		if (r->s[i].mono_ns < from_ns || r->s[i].mono_ns > to_ns)
			continue;
		p->samples++;
		if (atr_rss_program(&r->s[i]) > p->program) {
			p->program = atr_rss_program(&r->s[i]);
			p->tracer = r->s[i].rss - p->program;
		}
	}
}

/* When the image after in's (the same pid, exec) started: its trace's
 * start_mono, or 0 if there is no such file next to in's. */
static uint64_t next_image_start(const struct atr_info *in)
{
	char name[48], path[4096];
	snprintf(name, sizeof(name), "%u.%u.atr", in->pid, in->exec_seq + 1);
	if (path_beside(in->path, name, path, sizeof(path)) < 0)
		return 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	unsigned char h[ATR_H_START_MONO + 8];
	ssize_t got = pread(fd, h, sizeof(h), 0);
	close(fd);
	if (got != (ssize_t)sizeof(h) || memcmp(h, ATR_MAGIC, 8) != 0)
		return 0;
	return atr_get64(h + ATR_H_START_MONO);
}

int atr_rss_peak_of(const atr_file *f, struct atr_rss_peak *p)
{
	memset(p, 0, sizeof(*p));
	const struct atr_info *in = atr_get_info(f);
	char path[4096], eb[256];
	struct atr_rss r;
	if (!in->path || atr_rss_path_for_trace(in->path, in->pid, path, sizeof(path)) < 0 ||
	    atr_rss_read(path, &r, eb, sizeof(eb)) < 0)
		return 0;
	uint64_t from = in->start_mono_ns;
	uint64_t to = in->end_mono_ns ? in->end_mono_ns
				      : from + atr_ticks_to_ns_u64(f, in->last_ts) + r.interval_ns;
	/* an image that exec'd: never into the next image's samples */
	uint64_t next = in->end_mono_ns ? 0 : next_image_start(in);
	if (next > from && next < to)
		to = next;
	atr_rss_peak_in(&r, from, to, p);
	atr_rss_free(&r);
	return p->samples > 0;
}
