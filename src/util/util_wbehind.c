/* util_wbehind.c - write-behind for files that other processes append to
 * (util_wbehind.h). */
#define _GNU_SOURCE
#include "util_wbehind.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

/* Ranges go to disk in whole MiB: fewer, larger writes. */
#define WB_STEP (1u << 20)

struct wb_file {
	dev_t dev;
	ino_t ino;
	int fd;	       /* -1: left alone (tmpfs: its pages are the file) */
	uint64_t done; /* written back and dropped below this offset */
};

struct util_wbehind {
	char *dir, *suffix;
	uint64_t window;
	unsigned interval_ms;
	pthread_t th;
	atomic_int stop;
	struct wb_file *f;
	size_t n, cap;
	uint64_t dropped; /* data bytes, holes not counted */
};

static int has_suffix(const char *name, const char *suffix)
{
	size_t a = strlen(name), b = strlen(suffix);
	return a > b && memcmp(name + a - b, suffix, b) == 0;
}

static struct wb_file *wb_find(struct util_wbehind *w, dev_t dev, ino_t ino, int dfd,
			       const char *name)
{
	for (size_t i = 0; i < w->n; i++)
		if (w->f[i].dev == dev && w->f[i].ino == ino)
			return &w->f[i];
	if (w->n == w->cap) {
		size_t nc = w->cap ? 2 * w->cap : 16;
		struct wb_file *nf = realloc(w->f, nc * sizeof(*nf));
		if (!nf)
			return NULL;
		w->f = nf;
		w->cap = nc;
	}
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	struct statfs sf;
	if (fstatfs(fd, &sf) == 0 && sf.f_type == 0x01021994 /* TMPFS_MAGIC */) {
		close(fd);
		fd = -1;
	}
	w->f[w->n] = (struct wb_file){.dev = dev, .ino = ino, .fd = fd};
	return &w->f[w->n++];
}

/* Bytes of data (not holes) in [a, b) of fd. */
static uint64_t data_bytes(int fd, uint64_t a, uint64_t b)
{
	uint64_t n = 0;
	while (a < b) {
		off_t d = lseek(fd, (off_t)a, SEEK_DATA);
		if (d < 0 || (uint64_t)d >= b)
			break;
		off_t h = lseek(fd, d, SEEK_HOLE);
		uint64_t e = h < 0 || (uint64_t)h > b ? b : (uint64_t)h;
		if (e <= (uint64_t)d)
			break; /* the file changed under us: count no more */
		n += e - (uint64_t)d;
		a = e;
	}
	return n;
}

/* One look at the directory. */
static void wb_pass(struct util_wbehind *w)
{
	DIR *d = opendir(w->dir);
	if (!d)
		return; /* not made yet */
	struct dirent *de;
	while (!atomic_load_explicit(&w->stop, memory_order_relaxed) && (de = readdir(d))) {
		if (!has_suffix(de->d_name, w->suffix))
			continue;
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, 0) != 0 || !S_ISREG(st.st_mode) ||
		    (uint64_t)st.st_size <= w->window + WB_STEP)
			continue;
		uint64_t upto = ((uint64_t)st.st_size - w->window) & ~(uint64_t)(WB_STEP - 1);
		struct wb_file *f = wb_find(w, st.st_dev, st.st_ino, dirfd(d), de->d_name);
		if (!f || f->fd < 0 || upto <= f->done)
			continue;
		/* written first: DONTNEED leaves dirty pages where they are */
		if (sync_file_range(f->fd, (off_t)f->done, (off_t)(upto - f->done),
				    SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
					SYNC_FILE_RANGE_WAIT_AFTER) == 0 &&
		    posix_fadvise(f->fd, (off_t)f->done, (off_t)(upto - f->done),
				  POSIX_FADV_DONTNEED) == 0)
			w->dropped += data_bytes(f->fd, f->done, upto);
		f->done = upto;
	}
	closedir(d);
}

static void *wb_thread(void *arg)
{
	struct util_wbehind *w = arg;
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	while (!atomic_load(&w->stop)) {
		wb_pass(w);
		next.tv_nsec += (long)w->interval_ms * 1000000L;
		while (next.tv_nsec >= 1000000000L) {
			next.tv_nsec -= 1000000000L;
			next.tv_sec++;
		}
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
			;
	}
	return NULL;
}

struct util_wbehind *util_wbehind_start(const char *dir, const char *suffix, uint64_t window,
					unsigned interval_ms)
{
	if (!window) {
		errno = EINVAL;
		return NULL;
	}
	struct util_wbehind *w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->dir = strdup(dir);
	w->suffix = strdup(suffix);
	w->window = window;
	w->interval_ms = interval_ms ? interval_ms : 1;
	if (!w->dir || !w->suffix)
		goto fail;
	/* signals stay with the caller's threads */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int rc = pthread_create(&w->th, NULL, wb_thread, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc == 0)
		return w;
	errno = rc;
fail:
	free(w->dir);
	free(w->suffix);
	free(w);
	return NULL;
}

uint64_t util_wbehind_stop(struct util_wbehind *w)
{
	if (!w)
		return 0;
	atomic_store(&w->stop, 1);
	pthread_join(w->th, NULL);
	uint64_t r = w->dropped;
	for (size_t i = 0; i < w->n; i++)
		if (w->f[i].fd >= 0)
			close(w->f[i].fd);
	free(w->f);
	free(w->dir);
	free(w->suffix);
	free(w);
	return r;
}
