/* atp_net.c - ALLOCTRACE_COLLECTOR=ADDR:PORT: the trace goes to a
 * collector (`alloctrace collect`) over TCP instead of into a file.
 *
 * The file header and the staging blocks then live in anonymous memory;
 * each full block's FRAME, which the flush path builds anyway, is queued
 * in one bounded process-wide buffer and sent without blocking.  When the
 * buffer is full the flushing thread waits at most ALLOCTRACE_NET_TIMEOUT_MS
 * once; after that, frames that do not fit are dropped (counted as lost
 * records, and a LOST record goes into the thread's next block) until the
 * buffer drains.  A broken connection stops recording like a failed file
 * write.  At exit the staging blocks and the final header are sent.
 * docs/NET_FORMAT.md is the wire format.  Runs with the guard set, never
 * on the per-call path.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "atn_stream.h"
#include "atp_internal.h"

static struct {
	int fd;
	int dead;    /* the connection broke: nothing more is sent */
	int stalled; /* the last frame did not fit after waiting: drop, do not wait */
	pthread_mutex_t lock;
	uint8_t *buf;
	size_t cap, head, tail;
	struct sockaddr_storage addr;
	socklen_t alen;
	uint64_t ino, dev; /* the socket, to notice a program that closed or reused its fd */
	uint32_t timeout_ms;
	char name[96]; /* tcp://ADDR:PORT, for messages */
} n = {.fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER};

const char *atp_net_name(void)
{
	return n.name;
}

static void put32(uint8_t *p, uint32_t v)
{
	atp_put_u32(p, v);
}

/* "1.2.3.4:5" or "[::1]:5" (numeric only: name lookups may load NSS
 * modules inside the program; `record` resolves names first). */
int atp_net_config(const char *spec, uint64_t buffer_kb, uint64_t timeout_ms)
{
	char host[64];
	atp_strlcpy(n.name, "tcp://", sizeof n.name);
	atp_strlcat(n.name, spec, sizeof n.name);
	const char *colon = strrchr(spec, ':');
	if (!colon || colon == spec || !colon[1])
		return -EINVAL;
	size_t hl = (size_t)(colon - spec);
	const char *h = spec;
	if (spec[0] == '[') {
		if (hl < 3 || spec[hl - 1] != ']')
			return -EINVAL;
		h = spec + 1;
		hl -= 2;
	}
	if (hl >= sizeof host)
		return -EINVAL;
	memcpy(host, h, hl);
	host[hl] = 0;
	uint32_t port = 0;
	for (const char *c = colon + 1; *c; c++) {
		if (*c < '0' || *c > '9' || port > 65535)
			return -EINVAL;
		port = port * 10 + (uint32_t)(*c - '0');
	}
	if (port == 0 || port > 65535)
		return -EINVAL;
	memset(&n.addr, 0, sizeof n.addr);
	struct sockaddr_in *a4 = (struct sockaddr_in *)&n.addr;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&n.addr;
	if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)port);
		n.alen = sizeof *a4;
	} else if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)port);
		n.alen = sizeof *a6;
	} else {
		return -EINVAL;
	}
	size_t need = 2 * (ATN_MSG_HEADER_SIZE + 2 * (size_t)g.block_size + 4096);
	n.cap = buffer_kb << 10;
	if (n.cap < need)
		n.cap = need;
	n.cap = (n.cap + 4095) & ~(size_t)4095;
	n.timeout_ms = timeout_ms ? (uint32_t)timeout_ms : 1;
	return 0;
}

static uint64_t deadline_after(uint32_t ms)
{
	return atp_mono_ns() + (uint64_t)ms * 1000000u;
}

static int wait_fd(short ev, uint64_t deadline)
{
	for (;;) {
		uint64_t now = atp_mono_ns();
		if (now >= deadline)
			return 0;
		struct pollfd p = {.fd = n.fd, .events = ev};
		int r = poll(&p, 1, (int)((deadline - now + 999999) / 1000000));
		if (r > 0)
			return 1;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

/* Send what is buffered; wait for the socket until deadline (0: not at
 * all).  0: sent or timed out; < 0: the connection is gone. */
static int drain(uint64_t deadline)
{
	struct stat st;
	/* a program that closes every fd (daemons) may have reused ours for
	 * a file of its own: never write there */
	if (n.tail > n.head &&
	    (fstat(n.fd, &st) != 0 || (uint64_t)st.st_ino != n.ino || (uint64_t)st.st_dev != n.dev))
		return -EBADF;
	while (n.tail > n.head) {
		ssize_t w =
		    send(n.fd, n.buf + n.head, n.tail - n.head, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w > 0) {
			n.head += (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			int r = deadline ? wait_fd(POLLOUT, deadline) : 0;
			if (r < 0)
				return r;
			if (r == 0)
				return 0;
			continue;
		}
		return w < 0 ? -errno : -EPIPE;
	}
	n.head = n.tail = 0;
	return 0;
}

static void broken(int err)
{
	n.dead = 1;
	atp_fail_at("sending to", n.name, err);
}

/* Room for len more bytes at the tail, waiting once if allowed.  0 if
 * there is room, 1 if not (drop), < 0 if the connection broke. */
static int make_room(size_t len, int may_wait)
{
	int rc = drain(0);
	if (rc == 0 && n.cap - (n.tail - n.head) < len && may_wait && !n.stalled)
		rc = drain(deadline_after(n.timeout_ms));
	if (rc < 0)
		return rc;
	if (n.cap - (n.tail - n.head) < len) {
		n.stalled = 1;
		return 1;
	}
	n.stalled = 0;
	if (n.cap - n.tail < len) {
		memmove(n.buf, n.buf + n.head, n.tail - n.head);
		n.tail -= n.head;
		n.head = 0;
	}
	return 0;
}

static void put_msg_header(uint32_t type, size_t len)
{
	put32(n.buf + n.tail, type);
	put32(n.buf + n.tail + 4, (uint32_t)len);
	n.tail += ATN_MSG_HEADER_SIZE;
}

/* Queue one message and send what the socket takes.  0 queued, 1
 * dropped (buffer full), < 0 the connection is gone. */
int atp_net_send(uint32_t type, const void *payload, size_t len)
{
	pthread_mutex_lock(&n.lock);
	int rc = n.dead ? -EPIPE : make_room(ATN_MSG_HEADER_SIZE + len, 1);
	if (rc == 0) {
		put_msg_header(type, len);
		memcpy(n.buf + n.tail, payload, len);
		n.tail += len;
		rc = drain(0);
	}
	if (rc < 0 && !n.dead)
		broken(-rc);
	pthread_mutex_unlock(&n.lock);
	return rc;
}

/* A staging block that its thread may still be writing: copy its records
 * up to the terminator, and keep the copy only if the block was not
 * flushed and reset meanwhile (its seq is unchanged). */
static int send_staging(const uint8_t *b, uint32_t bs)
{
	for (int tries = 0; tries < 3; tries++) {
		uint64_t seq0 =
		    __atomic_load_n((const uint64_t *)(b + ATR_B_SEQ), __ATOMIC_ACQUIRE);
		uint32_t used, nrec;
		atp_staging_extent(b, bs, &used, &nrec);
		if (used == 0)
			return 0;
		size_t len = ATR_BLOCK_HEADER_SIZE + used + 8;
		int rc = make_room(ATN_MSG_HEADER_SIZE + len, 1);
		if (rc == 1)
			atp_lost(nrec);
		if (rc)
			return rc;
		size_t at = n.tail;
		put_msg_header(ATN_MSG_UNIT, len);
		memcpy(n.buf + n.tail, b, ATR_BLOCK_HEADER_SIZE + used);
		memset(n.buf + n.tail + ATR_BLOCK_HEADER_SIZE + used, 0, 8);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n((const uint64_t *)(b + ATR_B_SEQ), __ATOMIC_RELAXED) == seq0) {
			n.tail += len;
			atomic_fetch_sub(&g.net_unreported, atp_first_lost(b));
			return drain(0);
		}
		n.tail = at; /* flushed under us: its records are in a frame now */
	}
	return 0;
}

/* Connect (bounded by the timeout) and send a hello with the trace
 * header hdr. */
static int net_connect(const uint8_t *hdr, uint32_t flags)
{
	if (!n.buf) {
		void *m =
		    mmap(NULL, n.cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return -errno;
		n.buf = m;
	}
	n.head = n.tail = 0;
	n.dead = n.stalled = 0;
	n.fd = socket(n.addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (n.fd < 0)
		return -errno;
	/* the kernel's send buffer is part of the bound too */
	int sb = n.cap < (4u << 20) ? (int)n.cap : (4 << 20);
	setsockopt(n.fd, SOL_SOCKET, SO_SNDBUF, &sb, sizeof sb);
	int rc = 0;
	if (connect(n.fd, (struct sockaddr *)&n.addr, n.alen) != 0) {
		rc = -errno;
		if (rc == -EINPROGRESS) {
			int w = wait_fd(POLLOUT, deadline_after(n.timeout_ms));
			int err = 0;
			socklen_t el = sizeof err;
			if (w <= 0)
				rc = w < 0 ? w : -ETIMEDOUT;
			else if (getsockopt(n.fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0)
				rc = -errno;
			else
				rc = -err;
		}
	}
	struct stat st;
	if (rc == 0 && fstat(n.fd, &st) != 0)
		rc = -errno;
	if (rc == 0) {
		n.ino = (uint64_t)st.st_ino;
		n.dev = (uint64_t)st.st_dev;
		uint8_t *h = n.buf;
		memset(h, 0, ATN_HELLO_SIZE);
		memcpy(h + ATN_H_MAGIC, ATN_MAGIC, 8);
		put32(h + ATN_H_VERSION, ATN_VERSION);
		put32(h + ATN_H_HELLO_SIZE, ATN_HELLO_SIZE);
		put32(h + ATN_H_TRACE_HDR, ATR_HEADER_SIZE);
		put32(h + ATN_H_FLAGS, flags);
		struct utsname u;
		if (uname(&u) == 0)
			atp_strlcpy((char *)h + ATN_H_HOST, u.nodename, ATN_HOST_MAX);
		memcpy(h + ATN_HELLO_SIZE, hdr, ATR_HEADER_SIZE);
		n.tail = ATN_HELLO_SIZE + ATR_HEADER_SIZE;
		rc = drain(deadline_after(n.timeout_ms));
		if (rc == 0 && n.tail)
			rc = -ETIMEDOUT;
	}
	if (rc) {
		close(n.fd);
		n.fd = -1;
		n.dead = 1;
	}
	return rc;
}

int atp_net_open(void)
{
	return net_connect(g.hdr, 0);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

/* Init of an exec'd image, before its own connection: nobody else runs. */
void atp_net_ship_file(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return;
	struct stat st;
	void *m = MAP_FAILED;
	if (fstat(fd, &st) == 0 && st.st_size >= ATR_HEADER_SIZE)
		m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return;
	const uint8_t *f = m;
	size_t size = (size_t)st.st_size;
	uint32_t bs = get32(f + ATR_H_BLOCK_SIZE);
	int ours = !memcmp(f, ATR_MAGIC, 8) && get32(f + ATR_H_VERSION) == ATR_VERSION &&
		   get32(f + ATR_H_PID) == (uint32_t)g.pid && bs >= ATR_BLOCK_SIZE_MIN &&
		   bs <= g.block_size && !(bs & (bs - 1));
	if (ours && net_connect(f, ATN_FLAG_CONTINUATION) == 0) {
		int rc = 0;
		/* a spool holds staging blocks only, page-aligned, block_size each */
		for (size_t off = (ATR_HEADER_SIZE + 4095) & ~(size_t)4095;
		     off + bs <= size && rc >= 0; off += bs) {
			uint32_t kind = get32(f + off + ATR_B_KIND);
			if (get32(f + off) == ATR_BLOCK_MAGIC &&
			    (kind == ATR_BLOCK_STAGING || kind == ATR_BLOCK_RETIRED))
				rc = send_staging(f + off, bs);
		}
		if (rc >= 0 && make_room(ATN_MSG_HEADER_SIZE + ATR_HEADER_SIZE, 1) == 0) {
			put_msg_header(ATN_MSG_HEADER, ATR_HEADER_SIZE);
			memcpy(n.buf + n.tail, f, ATR_HEADER_SIZE);
			n.tail += ATR_HEADER_SIZE;
			rc = drain(deadline_after(n.timeout_ms));
		}
		if (rc == 0 && n.tail == n.head)
			unlink(path);
		close(n.fd);
		n.fd = -1;
	}
	munmap(m, size);
}

/* The library destructor: every staging block (live threads' and parked
 * ones) and the final header, then wait (bounded) until all is sent.
 * Records written after this that do not fill a block are not sent. */
void atp_net_fini(uint8_t *const *blocks, size_t nblocks)
{
	pthread_mutex_lock(&n.lock);
	int rc = n.dead ? -EPIPE : 0;
	for (size_t i = 0; i < nblocks && rc >= 0; i++)
		rc = send_staging(blocks[i], g.block_size);
	/* dropped frames whose LOST record never made it: the header counts
	 * them.  It goes last, worth one more wait. */
	atp_lost(atomic_exchange(&g.net_unreported, 0));
	n.stalled = 0;
	if (rc >= 0 && make_room(ATN_MSG_HEADER_SIZE + ATR_HEADER_SIZE, 1) == 0) {
		put_msg_header(ATN_MSG_HEADER, ATR_HEADER_SIZE);
		memcpy(n.buf + n.tail, g.hdr, ATR_HEADER_SIZE);
		n.tail += ATR_HEADER_SIZE;
	}
	if (rc >= 0)
		rc = drain(deadline_after(n.timeout_ms));
	if (rc < 0 && !n.dead)
		broken(-rc);
	if (rc == 0 && n.tail == n.head)
		unlink(g.path); /* all sent: the spool is done */
	else if (!n.dead)
		atp_message("collector too slow: the end of the trace stays in", g.path, NULL, 0);
	pthread_mutex_unlock(&n.lock);
}

uint64_t atp_first_lost(const uint8_t *b)
{
	const uint64_t *r = (const uint64_t *)(b + ATR_BLOCK_HEADER_SIZE);
	uint64_t v = 0;
	if ((r[0] & ATR_TYPE_MASK) == ATR_T_LOST && (r[1] & 0xffffffffu) >= 8)
		memcpy(&v, r + 2, 8);
	return v;
}

/* Fork child: the connection and what is queued are the parent's. */
void atp_net_after_fork_child(void)
{
	pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
	memcpy(&n.lock, &fresh, sizeof fresh);
	if (n.fd >= 0)
		close(n.fd);
	n.fd = -1;
	n.head = n.tail = 0;
}
