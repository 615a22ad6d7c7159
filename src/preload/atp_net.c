/* atp_net.c - ALLOCTRACE_COLLECTOR=ADDR:PORT: the trace goes to a
 * collector (`alloctrace collect`) over TCP instead of into a file.
 *
 * The file is a spool: header and staging blocks only.  Each full block's
 * FRAME, which the flush path builds anyway, is queued in one bounded
 * process-wide ring and sent without blocking.  The collector acknowledges
 * what it has written; a message leaves the ring only then, so when the
 * connection breaks (collector killed or restarted, network gone) the
 * sender reconnects in the background (non-blocking connect, tried from
 * the flush path with a backoff) and sends again what was not
 * acknowledged; the collector skips what it already has.  When the ring is
 * full the flushing thread waits at most ALLOCTRACE_NET_TIMEOUT_MS once
 * (only while connected); after that, frames that do not fit are dropped
 * and their calls counted lost (a LOST record in the thread's next block)
 * until the ring drains.  At exit the staging blocks and the final header
 * are sent, waiting (bounded) for the collector to acknowledge them.
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

/* reconnect attempts: the first soon after the break, then less often */
#define NET_RETRY_MIN_MS 50u
#define NET_RETRY_MAX_MS 1000u

enum { NET_DOWN, NET_CONNECTING, NET_UP, NET_CLOSED };

static struct {
	int fd;
	int state;    /* NET_*: CLOSED = this stream is over (record -p stopped) */
	int stalled;  /* the last frame did not fit after waiting: drop, do not wait */
	int streamed; /* a connection of this stream was up before: RESUME */
	int outage;   /* the loss of the connection was reported */
	pthread_mutex_t lock;
	/* the ring: [ack, sent) sent, not yet acknowledged; [sent, tail)
	 * queued.  Offsets into buf, moved to 0 when room is short. */
	uint8_t *buf;
	size_t cap, ack, sent, tail;
	uint64_t conn_acked; /* the collector's count on this connection */
	uint8_t abuf[8];     /* an acknowledgement being read */
	unsigned ahave;
	/* hello + trace header of the current connection */
	uint8_t pre[ATN_HELLO_SIZE + ATR_HEADER_SIZE];
	size_t pre_len, pre_sent;
	uint32_t flags;	    /* hello flags of the current connection */
	const uint8_t *hdr; /* the stream's trace header (a reconnect sends it) */
	uint64_t retry_at, conn_deadline;
	uint32_t backoff_ms;
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

/* Wait for ev on the socket until deadline: 1 ready, 0 timed out. */
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
			return 1; /* the next call on the socket says what is wrong */
	}
}

static void sleep_until(uint64_t t)
{
	uint64_t now = atp_mono_ns();
	if (t > now)
		poll(NULL, 0, (int)((t - now + 999999) / 1000000));
}

/* The connection is gone: everything not acknowledged goes again on the
 * next one.  Reconnecting is tried from the flush path after a backoff. */
static void go_down(int err)
{
	if (n.fd >= 0)
		close(n.fd);
	n.fd = -1;
	n.state = NET_DOWN;
	n.sent = n.ack;
	n.pre_sent = n.pre_len = 0;
	n.ahave = 0;
	n.backoff_ms = n.backoff_ms ? n.backoff_ms * 2 : NET_RETRY_MIN_MS;
	if (n.backoff_ms > NET_RETRY_MAX_MS)
		n.backoff_ms = NET_RETRY_MAX_MS;
	n.retry_at = deadline_after(n.backoff_ms);
	if (n.streamed && !n.outage) {
		n.outage = 1;
		atp_message("lost the connection to", n.name,
			    "(reconnecting; calls that do not fit the buffer meanwhile are counted "
			    "lost)",
			    err);
	}
}

static void fill_hello(const uint8_t *hdr)
{
	uint8_t *h = n.pre;
	memset(h, 0, ATN_HELLO_SIZE);
	memcpy(h + ATN_H_MAGIC, ATN_MAGIC, 8);
	atr_put32(h + ATN_H_VERSION, ATN_VERSION);
	atr_put32(h + ATN_H_HELLO_SIZE, ATN_HELLO_SIZE);
	atr_put64(h + ATN_H_FEATURES, ATN_FEAT_ACK);
	atr_put32(h + ATN_H_TRACE_HDR, ATR_HEADER_SIZE);
	atr_put32(h + ATN_H_FLAGS, n.flags);
	struct utsname u;
	if (uname(&u) == 0)
		atp_strlcpy((char *)h + ATN_H_HOST, u.nodename, ATN_HOST_MAX);
	memcpy(h + ATN_HELLO_SIZE, hdr, ATR_HEADER_SIZE);
	n.pre_len = ATN_HELLO_SIZE + ATR_HEADER_SIZE;
	n.pre_sent = 0;
}

static void connected(void)
{
	struct stat st;
	if (fstat(n.fd, &st) != 0) {
		go_down(errno);
		return;
	}
	n.ino = (uint64_t)st.st_ino;
	n.dev = (uint64_t)st.st_dev;
	n.state = NET_UP;
	n.sent = n.ack;
	n.conn_acked = 0;
	n.ahave = 0;
	n.backoff_ms = 0;
	if (n.streamed) {
		/* the header as it is now; the collector finds the file */
		n.flags |= ATN_FLAG_RESUME;
		fill_hello(n.hdr);
		if (n.outage)
			atp_message("reconnected to", n.name,
				    "(sending again what was not confirmed)", 0);
	}
	n.outage = 0;
	n.streamed = 1;
}

/* Start a non-blocking connect.  With hdr (the first connection of a
 * stream) the hello carries that header. */
static void start_connect(const uint8_t *hdr)
{
	n.fd = socket(n.addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (n.fd < 0) {
		go_down(errno);
		return;
	}
	/* the kernel's send buffer is part of the bound too */
	int sb = n.cap < (4u << 20) ? (int)n.cap : (4 << 20);
	setsockopt(n.fd, SOL_SOCKET, SO_SNDBUF, &sb, sizeof sb);
	if (hdr)
		fill_hello(hdr);
	if (connect(n.fd, (struct sockaddr *)&n.addr, n.alen) == 0) {
		connected();
	} else if (errno == EINPROGRESS) {
		n.state = NET_CONNECTING;
		n.conn_deadline = deadline_after(n.timeout_ms);
	} else {
		go_down(errno);
	}
}

static void check_connecting(void)
{
	struct pollfd p = {.fd = n.fd, .events = POLLOUT};
	if (poll(&p, 1, 0) == 1) {
		int err = 0;
		socklen_t el = sizeof err;
		if (getsockopt(n.fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0)
			err = errno;
		if (err)
			go_down(err);
		else
			connected();
	} else if (atp_mono_ns() >= n.conn_deadline) {
		go_down(ETIMEDOUT);
	}
}

/* Acknowledgements: u64 bytes of messages of this connection that the
 * collector has written.  0, or an errno (connection over). */
static int read_acks(void)
{
	for (;;) {
		ssize_t r = recv(n.fd, n.abuf + n.ahave, 8 - n.ahave, MSG_DONTWAIT);
		if (r > 0) {
			n.ahave += (unsigned)r;
			if (n.ahave < 8)
				continue;
			n.ahave = 0;
			uint64_t v;
			memcpy(&v, n.abuf, 8);
			if (v < n.conn_acked || v - n.conn_acked > n.sent - n.ack)
				return EPROTO; /* acknowledges what was never sent */
			n.ack += (size_t)(v - n.conn_acked);
			n.conn_acked = v;
			continue;
		}
		if (r == 0)
			return ECONNRESET; /* the collector closed */
		if (errno == EINTR)
			continue;
		return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : errno;
	}
}

/* One non-blocking round: reconnect if due, read acknowledgements, send
 * what is queued.  1 if the socket would block with bytes left to send. */
static int pump_once(void)
{
	if (n.state == NET_DOWN && atp_mono_ns() >= n.retry_at)
		start_connect(NULL);
	if (n.state == NET_CONNECTING)
		check_connecting();
	if (n.state != NET_UP)
		return 0;
	struct stat st;
	/* a program that closes every fd (daemons) may have reused ours for
	 * a file of its own: never write or read there */
	if (fstat(n.fd, &st) != 0 || (uint64_t)st.st_ino != n.ino || (uint64_t)st.st_dev != n.dev) {
		n.fd = -1; /* not ours any more: not closed either */
		go_down(EBADF);
		return 0;
	}
	int err = read_acks();
	if (err) {
		go_down(err);
		return 0;
	}
	while (n.pre_sent < n.pre_len || n.sent < n.tail) {
		const uint8_t *p = n.pre_sent < n.pre_len ? n.pre + n.pre_sent : n.buf + n.sent;
		size_t len = n.pre_sent < n.pre_len ? n.pre_len - n.pre_sent : n.tail - n.sent;
		ssize_t w = send(n.fd, p, len, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w > 0) {
			if (n.pre_sent < n.pre_len)
				n.pre_sent += (size_t)w;
			else
				n.sent += (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 1;
		go_down(w < 0 ? errno : EPIPE);
		return 0;
	}
	return 0;
}

static size_t room(void)
{
	return n.cap - (n.tail - n.ack);
}

/* Pump until the deadline passes or: need > 0: the ring has need bytes
 * free (given up as soon as the connection is not up); need == 0: the
 * collector has acknowledged everything (while the connection is down
 * this sleeps until the next reconnect attempt). */
static void pump_until(uint64_t deadline, size_t need)
{
	for (;;) {
		int blocked = pump_once();
		int done = need ? room() >= need || n.state != NET_UP
				: n.state == NET_UP && n.ack == n.tail && n.pre_sent == n.pre_len;
		uint64_t now = atp_mono_ns();
		if (done || now >= deadline)
			return;
		if (n.state == NET_UP)
			wait_fd(blocked ? POLLIN | POLLOUT : POLLIN, deadline);
		else if (n.state == NET_CONNECTING)
			wait_fd(POLLOUT, n.conn_deadline < deadline ? n.conn_deadline : deadline);
		else
			sleep_until(n.retry_at < deadline ? n.retry_at : deadline);
	}
}

/* Room for len more bytes at the tail, waiting once if allowed (only on
 * a live connection: a dead or slow-to-come collector never holds the
 * program).  0 if there is room, 1 if not (drop). */
static int make_room(size_t len, int may_wait)
{
	pump_once();
	if (room() < len && may_wait && !n.stalled && n.state == NET_UP)
		pump_until(deadline_after(n.timeout_ms), len);
	if (room() < len) {
		n.stalled = 1;
		return 1;
	}
	n.stalled = 0;
	if (n.cap - n.tail < len) {
		memmove(n.buf, n.buf + n.ack, n.tail - n.ack);
		n.tail -= n.ack;
		n.sent -= n.ack;
		n.ack = 0;
	}
	return 0;
}

static void put_msg_header(uint32_t type, size_t len)
{
	atr_put32(n.buf + n.tail, type);
	atr_put32(n.buf + n.tail + 4, (uint32_t)len);
	n.tail += ATN_MSG_HEADER_SIZE;
}

/* Queue one message and send what the socket takes.  0 queued, 1
 * dropped (ring full, or the stream is over). */
int atp_net_send(uint32_t type, const void *payload, size_t len)
{
	pthread_mutex_lock(&n.lock);
	int rc = n.state == NET_CLOSED ? 1 : make_room(ATN_MSG_HEADER_SIZE + len, 1);
	if (rc == 0) {
		put_msg_header(type, len);
		memcpy(n.buf + n.tail, payload, len);
		n.tail += len;
		pump_once();
	}
	pthread_mutex_unlock(&n.lock);
	return rc;
}

/* A staging block that its thread may still be writing: copy its records
 * up to the terminator, and keep the copy only if the block was not
 * flushed and reset meanwhile (its seq is unchanged).  0 queued (or
 * nothing to send), 1 dropped (its calls are counted lost). */
static int send_staging(const uint8_t *b, uint32_t bs)
{
	for (int tries = 0; tries < 3; tries++) {
		uint64_t seq0 =
		    __atomic_load_n((const uint64_t *)(b + ATR_B_SEQ), __ATOMIC_ACQUIRE);
		uint32_t used, nrec, calls;
		atp_staging_extent(b, bs, &used, &nrec, &calls);
		if (used == 0)
			return 0;
		size_t len = ATR_BLOCK_HEADER_SIZE + used + 8;
		if (make_room(ATN_MSG_HEADER_SIZE + len, 1)) {
			atp_lost(calls);
			return 1;
		}
		size_t at = n.tail;
		put_msg_header(ATN_MSG_UNIT, len);
		memcpy(n.buf + n.tail, b, ATR_BLOCK_HEADER_SIZE + used);
		memset(n.buf + n.tail + ATR_BLOCK_HEADER_SIZE + used, 0, 8);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n((const uint64_t *)(b + ATR_B_SEQ), __ATOMIC_RELAXED) == seq0) {
			n.tail += len;
			atomic_fetch_sub(&g.net_unreported, atp_first_lost(b));
			pump_once();
			return 0;
		}
		n.tail = at; /* flushed under us: its records are in a frame now */
	}
	return 0;
}

/* A new stream (flags: 0 or CONTINUATION) with trace header hdr: connect,
 * waiting at most the timeout.  0 or -errno. */
static int stream_open(const uint8_t *hdr, uint32_t flags)
{
	if (!n.buf) {
		void *m =
		    mmap(NULL, n.cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return -errno;
		n.buf = m;
	}
	if (n.fd >= 0)
		close(n.fd);
	n.fd = -1;
	n.ack = n.sent = n.tail = 0;
	n.stalled = n.streamed = n.outage = 0;
	n.backoff_ms = 0;
	n.flags = flags;
	n.hdr = hdr;
	start_connect(hdr);
	uint64_t deadline = deadline_after(n.timeout_ms);
	while (n.state == NET_CONNECTING && atp_mono_ns() < deadline) {
		wait_fd(POLLOUT, deadline);
		check_connecting();
	}
	if (n.state != NET_UP) {
		if (n.fd >= 0)
			close(n.fd);
		n.fd = -1;
		n.state = NET_DOWN;
		return -ECONNREFUSED;
	}
	/* the hello and the header go out at once */
	pump_until(deadline, 0);
	if (n.state != NET_UP || n.pre_sent < n.pre_len) {
		if (n.fd >= 0)
			close(n.fd);
		n.fd = -1;
		n.state = NET_DOWN;
		return -ETIMEDOUT;
	}
	return 0;
}

int atp_net_open(void)
{
	return stream_open(g.hdr, 0);
}

static void stream_close(void)
{
	if (n.fd >= 0)
		close(n.fd);
	n.fd = -1;
	n.state = NET_DOWN;
	n.ack = n.sent = n.tail = 0;
}

/* Queue a HEADER message (the final header) and wait, at most the
 * timeout, until the collector acknowledged everything.  1 if it did. */
static int finish(const uint8_t *hdr)
{
	n.stalled = 0;
	if (make_room(ATN_MSG_HEADER_SIZE + ATR_HEADER_SIZE, 1) == 0) {
		put_msg_header(ATN_MSG_HEADER, ATR_HEADER_SIZE);
		memcpy(n.buf + n.tail, hdr, ATR_HEADER_SIZE);
		n.tail += ATR_HEADER_SIZE;
	} else {
		return 0;
	}
	pump_until(deadline_after(n.timeout_ms), 0);
	return n.ack == n.tail && n.state == NET_UP;
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
	uint32_t bs = atr_get32(f + ATR_H_BLOCK_SIZE);
	int ours = !memcmp(f, ATR_MAGIC, 8) && atr_get32(f + ATR_H_VERSION) == ATR_VERSION &&
		   atr_get32(f + ATR_H_PID) == (uint32_t)g.pid && bs >= ATR_BLOCK_SIZE_MIN &&
		   bs <= g.block_size && !(bs & (bs - 1));
	if (ours && stream_open(f, ATN_FLAG_CONTINUATION) == 0) {
		int dropped = 0;
		/* a spool holds staging blocks only, page-aligned, block_size each */
		for (size_t off = (ATR_HEADER_SIZE + 4095) & ~(size_t)4095; off + bs <= size;
		     off += bs) {
			uint32_t kind = atr_get32(f + off + ATR_B_KIND);
			if (atr_get32(f + off) == ATR_BLOCK_MAGIC &&
			    (kind == ATR_BLOCK_STAGING || kind == ATR_BLOCK_RETIRED))
				dropped |= send_staging(f + off, bs);
		}
		if (!dropped && finish(f))
			unlink(path);
		stream_close();
	}
	munmap(m, size);
}

/* Calls of the FRAME messages still in the ring (never acknowledged). */
static uint64_t ring_calls(void)
{
	uint64_t c = 0;
	for (size_t at = n.ack; at + ATN_MSG_HEADER_SIZE <= n.tail;) {
		uint32_t type = atr_get32(n.buf + at), len = atr_get32(n.buf + at + 4);
		const uint8_t *u = n.buf + at + ATN_MSG_HEADER_SIZE;
		if (type == ATN_MSG_UNIT && len >= ATR_BLOCK_HEADER_SIZE &&
		    atr_get32(u + ATR_B_KIND) == ATR_BLOCK_FRAME)
			c += atr_get32(u + ATR_U_CALLS);
		at += ATN_MSG_HEADER_SIZE + len;
	}
	return c;
}

/* The end of the stream: every staging block (live threads' and parked
 * ones) and the final header, then wait (bounded; while the collector is
 * away that includes reconnecting) until the collector has all of it.
 * Records written after this that do not fill a block are not sent. */
static void net_end(uint8_t *const *blocks, size_t nblocks)
{
	if (n.state == NET_CLOSED)
		return;
	int dropped = 0;
	for (size_t i = 0; i < nblocks; i++)
		dropped |= send_staging(blocks[i], g.block_size);
	/* dropped frames whose LOST record never made it: the header counts
	 * them.  It goes last, worth one more wait. */
	atp_lost(atomic_exchange(&g.net_unreported, 0));
	if (finish(g.hdr) && !dropped) {
		unlink(g.path); /* all of it is at the collector: the spool is done */
		return;
	}
	if (n.state == NET_UP) {
		atp_message("collector too slow: the end of the trace stays in", g.path, NULL, 0);
		return;
	}
	/* the collector is gone: what the ring holds is lost, and the spool
	 * (header and staging blocks, which `record` sends if it can) says so */
	atp_lost(ring_calls());
	atp_hdr_set_status(ATR_STATUS_TRUNCATED);
	atp_message("cannot reach", n.name, "at exit: trace cut short", 0);
}

void atp_net_fini(uint8_t *const *blocks, size_t nblocks)
{
	pthread_mutex_lock(&n.lock);
	net_end(blocks, nblocks);
	pthread_mutex_unlock(&n.lock);
}

/* `record -p` detaching: the stream ends here (the library stays loaded
 * but idle); later flushes are dropped. */
void atp_net_stop(uint8_t *const *blocks, size_t nblocks)
{
	pthread_mutex_lock(&n.lock);
	net_end(blocks, nblocks);
	stream_close();
	n.state = NET_CLOSED;
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
	n.state = NET_DOWN;
	n.ack = n.sent = n.tail = 0;
}
