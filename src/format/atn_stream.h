/* atn_stream.h - the trace stream that travels over the network
 * (`record -o tcp://HOST:PORT` -> `alloctrace collect`).
 *
 * docs/NET_FORMAT.md is the byte-level spec.  The constants below are
 * shared with the preload library (the sender); the incremental parser
 * (atn_rx_*) is the collector's reader, fed whatever bytes a socket gave.
 * All integers little-endian.
 */
#ifndef ATN_STREAM_H
#define ATN_STREAM_H

#include <stddef.h>
#include <stdint.h>

#define ATN_MAGIC	   "ALCTSTRM" /* 8 bytes, no NUL */
#define ATN_VERSION	   1u
#define ATN_HELLO_SIZE	   64u	 /* what a version-1 sender writes */
#define ATN_HELLO_SIZE_MAX 4096u /* larger hellos: the rest is skipped */
/* Feature ACK: the sender keeps what it sent until the collector
 * acknowledges it (u64 counts sent back), and sends it again after a
 * reconnect.  A collector must send acknowledgements for such a stream. */
#define ATN_FEAT_ACK	    1ULL
#define ATN_FEATURES_KNOWN  1ULL
#define ATN_MSG_HEADER_SIZE 8u
#define ATN_HOST_MAX	    32u
/* Hello flags: CONTINUATION: the rest of a stream whose image ended
 * without sending it (exec, kill): its staging blocks and header, sent by
 * the next image of the pid or by `record`. */
#define ATN_FLAG_CONTINUATION 1u
/* RESUME: a reconnect: the stream goes on in the file of the same image;
 * units the collector already wrote may come again and are skipped. */
#define ATN_FLAG_RESUME 2u
#define ATN_FLAGS_KNOWN 3u

/* Hello: offsets */
enum {
	ATN_H_MAGIC = 0,       /* char[8] ATN_MAGIC */
	ATN_H_VERSION = 8,     /* u32 */
	ATN_H_HELLO_SIZE = 12, /* u32 bytes of this hello (>= 64) */
	ATN_H_FEATURES = 16,   /* u64 */
	ATN_H_TRACE_HDR = 24,  /* u32 bytes of the trace file header after the hello */
	ATN_H_FLAGS = 28,      /* u32 ATN_FLAG_* */
	ATN_H_HOST = 32,       /* char[32] sender's host name, NUL-padded */
};

/* Message header: u32 type, u32 payload length, then the payload. */
enum {
	ATN_MSG_UNIT = 1,   /* a trace unit (docs/TRACE_FORMAT.md "Units") */
	ATN_MSG_HEADER = 2, /* the trace file header again, with final fields */
	ATN_MSG_END = 3,    /* the sender is done: no more messages */
};

/* ---- the collector's reader ---- */

enum atn_rx_state { ATN_RX_HELLO, ATN_RX_TRACE_HDR, ATN_RX_MSG_HDR, ATN_RX_PAYLOAD, ATN_RX_DONE };

struct atn_hello {
	uint32_t version, hello_size, trace_hdr_size, flags;
	uint64_t features;
	char host[ATN_HOST_MAX + 1];
	/* from the trace header */
	uint32_t pid, block_size;
	uint64_t trace_features, start_realtime;
};

struct atn_rx_cb {
	/* hdr: the trace file header (h->trace_hdr_size bytes); first says
	 * whether it is the one from the hello.  Non-zero return: stop with
	 * that error (message already in rx->err via atn_rx_fail). */
	int (*header)(void *ctx, const uint8_t *hdr, int first);
	/* a validated unit: 64-byte unit header, then len - 64 bytes */
	int (*unit)(void *ctx, const uint8_t *unit, size_t len);
	int (*end)(void *ctx);
};

struct atn_rx {
	enum atn_rx_state state;
	uint8_t *buf;
	size_t have, need, cap;
	uint32_t msg_type;
	uint64_t units, bytes;
	/* acknowledgements (feature ACK): bytes consumed, where the messages
	 * start (after the trace header) and where the last whole message
	 * ended: the collector acknowledges done - msg_base once written */
	uint64_t pos, msg_base, done;
	int hello_rest; /* skipping the rest of a longer hello */
	struct atn_hello hello;
	void *scratch; /* frame decoding buffers */
	char err[256];
};

void atn_rx_init(struct atn_rx *rx);
void atn_rx_free(struct atn_rx *rx);
/* Feed n bytes.  0: fine (more may come); -1: bad input, rx->err says
 * why; the stream cannot continue. */
int atn_rx_feed(struct atn_rx *rx, const uint8_t *p, size_t n, const struct atn_rx_cb *cb,
		void *ctx);
/* Set rx->err (printf-style); returns -1. */
int atn_rx_fail(struct atn_rx *rx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- the files the collector writes (docs/NET_FORMAT.md "What the
 * collector writes"): a trace file header, then the units as a local
 * recording lays them out ---- */

#define ATN_FILE_HDR_SIZE 4096u /* the trace file header (ATR_HEADER_SIZE) */

/* What the collector reads of a trace file header. */
struct atn_file_hdr {
	uint32_t pid, exec_seq, block_size;
	int clean_exit; /* the status says the program exited */
	uint64_t start_realtime;
	char exe[256]; /* NUL-terminated */
};
/* h: ATN_FILE_HDR_SIZE bytes.  0, or -1 if they are not a trace header
 * (magic). */
int atn_file_hdr_read(const uint8_t *h, struct atn_file_hdr *out);
/* The file's name says which image of the pid it is: its exec_seq. */
void atn_file_hdr_set_exec_seq(uint8_t *h, uint32_t exec_seq);

/* A unit and the place it takes in the file. */
struct atn_unit {
	uint64_t key;  /* thread serial and sequence number: the same for a copy */
	int frame;     /* a FRAME; else a staging block (staging or retired) */
	uint64_t span; /* bytes from its start to where the next unit may start */
};
/* A unit the stream handed out (atn_rx_cb.unit: len bytes). */
void atn_unit_of(const uint8_t *u, size_t len, uint32_t block_size, struct atn_unit *out);
/* Where a unit starts when the file's units end at end: frames right
 * there, staging blocks at the next page, as a local recording. */
uint64_t atn_unit_start(const struct atn_unit *u, uint64_t end);
/* The units of a file a collector wrote (before a restart, or before a
 * reconnect), size bytes long: fn(ctx, unit, offset) for each whole one
 * from the header on, in file order, up to the first that is cut short or
 * is not a unit (a kill of the collector in the middle of a write).
 * fn returns 0 to go on, or a negative value to stop.  Returns where the
 * last whole unit ends (ATN_FILE_HDR_SIZE if none), or fn's negative
 * value. */
typedef int (*atn_unit_fn)(void *ctx, const struct atn_unit *u, uint64_t off);
int64_t atn_file_units(int fd, uint64_t size, uint32_t block_size, atn_unit_fn fn, void *ctx);

#endif
