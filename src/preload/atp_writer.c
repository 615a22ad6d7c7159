/* atp_writer.c - the trace file: header, staging blocks, flushes.
 *
 * Each thread writes records into its staging block, a MAP_SHARED mapping
 * of one block of the trace file that it reuses: its pages are faulted in
 * once, and what is in them is in the file even after a kill -9.  A full
 * staging block is encoded into a FRAME appended to the file, by an
 * encoder thread (atp_offload.c) or by the thread itself, then reused.  The file is opened by path
 * for every write, so programs that close all descriptors do not break it. Everything here runs
 * with the calling thread's guard set.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <pthread.h>
#include <unistd.h>

#include "atn_stream.h"
#include "atp_internal.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the writer stores native words");

void atp_hdr_set_status(uint32_t bits)
{
	if (g.hdr)
		atomic_fetch_or_explicit((_Atomic uint32_t *)(g.hdr + ATR_H_STATUS), bits,
					 memory_order_relaxed);
}

void atp_hdr_clear_status(uint32_t bits)
{
	if (g.hdr)
		atomic_fetch_and_explicit((_Atomic uint32_t *)(g.hdr + ATR_H_STATUS), ~bits,
					  memory_order_relaxed);
}

void atp_self_rss_add(_Atomic uint64_t *part, int64_t d)
{
	atomic_fetch_add_explicit(part, (uint64_t)d, memory_order_relaxed);
	if (g.hdr)
		atomic_fetch_add_explicit((_Atomic uint64_t *)(g.hdr + ATR_H_SELF_RSS), (uint64_t)d,
					  memory_order_relaxed);
}

uint64_t atp_self_rss(void)
{
	return ATR_HEADER_SIZE + atomic_load(&g.self_staging) + atomic_load(&g.self_other);
}

void atp_lost(uint64_t n)
{
	if (g.hdr)
		atomic_fetch_add_explicit((_Atomic uint64_t *)(g.hdr + ATR_H_LOST), n,
					  memory_order_relaxed);
}

/* The first failure stops recording for good: the header says the trace
 * was cut short and why, stderr says it once. */
void atp_fail(const char *what, int err)
{
	atp_fail_at(what, g.path, err);
}

void atp_fail_at(const char *what, const char *name, int err)
{
	int expected = 0;
	g.recording = 0;
	if (!atomic_compare_exchange_strong(&g.failed, &expected, 1))
		return;
	if (g.hdr) {
		atr_put32(g.hdr + ATR_H_ERRNO, (uint32_t)err);
		atp_hdr_set_status(ATR_STATUS_TRUNCATED);
	}
	atp_message(what, name, "failed, trace cut short", err);
}

/* Open the trace by path and check it is still the file we created. */
static int open_trace_fd(void)
{
	int fd = open(g.path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) != 0 || (uint64_t)st.st_ino != g.ino || (uint64_t)st.st_dev != g.dev) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

/* Reserve len bytes of the file at a multiple of align (a power of two):
 * one compare-and-swap, never per call.  A gap left for alignment, or
 * space whose writer was killed before it wrote, reads as zeros, which a
 * reader skips (docs/TRACE_FORMAT.md, "Units"). */
static off_t reserve_unit(uint64_t len, uint64_t align)
{
	uint64_t old = atomic_load_explicit(&g.next_off, memory_order_relaxed), at;
	do {
		at = (old + align - 1) & ~(align - 1);
	} while (!atomic_compare_exchange_weak_explicit(
	    &g.next_off, &old, at + len, memory_order_relaxed, memory_order_relaxed));
	if (g.hdr)
		atomic_fetch_add_explicit((_Atomic uint64_t *)(g.hdr + ATR_H_BLOCKS), 1,
					  memory_order_relaxed);
	return (off_t)at;
}

/* Growing the file past RLIMIT_FSIZE would raise SIGXFSZ in the program:
 * fail our write instead, as if the disk were full. */
static int fsize_check(off_t end)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    (uint64_t)end > (uint64_t)rl.rlim_cur)
		return -EFBIG;
	return 0;
}

/* All of buf at off: 0, or -errno (-ENOSPC for a write of nothing). */
static int write_at(int fd, const void *buf, size_t len, off_t off)
{
	for (size_t done = 0; done < len;) {
		ssize_t w = pwrite(fd, (const char *)buf + done, len - done, off + (off_t)done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -ENOSPC;
		done += (size_t)w;
	}
	return 0;
}

/* Disk space for a mapped block must exist before it is written, or a full
 * disk turns into SIGBUS.  Filesystems without fallocate get zeros. */
static int reserve_space(int fd, off_t off, size_t len)
{
	int rc = fsize_check(off + (off_t)len);
	if (rc)
		return rc;
	if (fallocate(fd, 0, off, (off_t)len) == 0)
		return 0;
	if (errno != EOPNOTSUPP && errno != ENOSYS)
		return -errno;
	static const char zeros[4096];
	for (size_t done = 0; done < len && rc == 0; done += sizeof zeros)
		rc = write_at(fd, zeros, len - done < sizeof zeros ? len - done : sizeof zeros,
			      off + (off_t)done);
	return rc;
}

static void write_block_header(uint8_t *b, uint32_t kind, const struct atp_thread *t, uint64_t seq,
			       uint32_t used, uint32_t nrec)
{
	memset(b, 0, ATR_BLOCK_HEADER_SIZE);
	atr_put32(b + ATR_B_KIND, kind);
	atr_put32(b + ATR_B_THREAD, t->serial);
	atr_put32(b + ATR_B_TID, t->tid);
	atr_put64(b + ATR_B_SEQ, seq);
	atr_put32(b + ATR_B_USED, used);
	atr_put32(b + ATR_B_RECORDS, nrec);
	atr_put32(b + ATR_B_PID, (uint32_t)g.pid);
	ATP_BARRIER();
	atr_put32(b + ATR_B_MAGIC, ATR_BLOCK_MAGIC); /* valid from here on */
}

/* A staging block's pages are counted in the header's self_rss as the
 * thread's writes first reach them, this many bytes at a time: t->end
 * stops at the counted bytes, so the hot path's one bound check sends
 * the thread here once per step of a block's first fill (a few hundred
 * calls), never again once the block was full.  An untraced program has
 * none of these pages, and a thread that made a few calls has one step
 * of its block resident, not all of it (64 threads of
 * bench/replay/thread_waves.c: 16.6 MB of a traced 40.8 MB Max RSS,
 * bench/RESULTS.md). */
#define ATP_TOUCH_STEP (16u << 10)

/* t->end at the bytes of t->block counted so far */
static void touch_end(struct atp_thread *t)
{
	t->end =
	    t->touched >= g.block_size ? t->block_end : (uint64_t *)(t->block + t->touched) - 1;
}

/* Count steps of t's block until nwords more words fit or the block's
 * end is counted; 1 if they fit now. */
static int touch_more(struct atp_thread *t, unsigned nwords)
{
	while (t->cur + nwords > t->end && t->end < t->block_end) {
		uint32_t step = g.block_size - t->touched < ATP_TOUCH_STEP
				    ? g.block_size - t->touched
				    : ATP_TOUCH_STEP;
		t->touched += step;
		atp_self_rss_add(&g.self_staging, step);
		touch_end(t);
	}
	return t->cur + nwords <= t->end;
}

static void reset_cursor(struct atp_thread *t)
{
	uint64_t *first = (uint64_t *)(t->block + ATR_BLOCK_HEADER_SIZE);
	first[0] = 0;
	t->cur = first;
	t->block_end = (uint64_t *)(t->block + g.block_size) - 1;
	touch_end(t);
	touch_more(t, 1); /* the header and the first terminator */
	t->nrec_block = 0;
}

/* Encode and compress a staging block's records into a FRAME unit and
 * append it to the file (one pwrite), or queue it for the collector.
 * 1: dropped (the collector's buffer is full); *calls: its call records. */
int atp_flush_block(const uint8_t *b, uint32_t serial, uint32_t tid, uint64_t seq, uint32_t used,
		    uint32_t *calls)
{
	struct atp_frame fr;
	int rc = atp_encode_block(b + ATR_BLOCK_HEADER_SIZE, used, serial, tid, seq, &fr);
	if (rc)
		return rc;
	*calls = atr_get32(fr.data + ATR_U_CALLS);
	if (g.net) {
		rc = atp_net_send(ATN_MSG_UNIT, fr.data, fr.len);
		atp_encode_done(&fr);
		return rc;
	}
	int fd = open_trace_fd();
	if (fd < 0) {
		atp_encode_done(&fr);
		return fd;
	}
	off_t off = reserve_unit(fr.len, ATR_UNIT_ALIGN);
	rc = fsize_check(off + (off_t)fr.len);
	if (rc == 0)
		rc = write_at(fd, fr.data, fr.len, off);
	atp_encode_done(&fr);
	close(fd);
	return rc;
}

static int write_meta_at(struct atp_thread *t, uint64_t ts, unsigned type, uint32_t arg,
			 const void *payload, uint32_t len);

/* ALLOCTRACE_ENCODE=later: the staging block b, records and all, copied
 * into a unit of its own at the end of the file, a STAGING unit with b's
 * thread and seq that `record` turns into frames after the program
 * (atr_compact.c).  Its header goes first with kind RETIRED, which a
 * reader skips, and becomes STAGING once every byte is in: a copy cut
 * short (kill -9, a full disk) is never read, and until the caller moves
 * b on to the next seq the two units hold the same records, of which a
 * reader reads one (feature INFLIGHT: a repeated seq is superseded).
 * One reservation and three pwrites (header, records, kind): no
 * mapping, so no page faults of fresh pages (docs/TRACE_FORMAT.md,
 * "Blocks in flight"). */
static int copy_block(const uint8_t *b)
{
	int fd = open_trace_fd();
	if (fd < 0)
		return fd;
	uint8_t h[ATR_BLOCK_HEADER_SIZE];
	memcpy(h, b, sizeof h);
	atr_put32(h + ATR_B_KIND, ATR_BLOCK_RETIRED);
	off_t off = reserve_unit(g.block_size, g.page);
	uint32_t kind = ATR_BLOCK_STAGING;
	int rc = fsize_check(off + (off_t)g.block_size);
	if (rc == 0)
		rc = write_at(fd, h, sizeof h, off);
	if (rc == 0)
		rc = write_at(fd, b + sizeof h, g.block_size - sizeof h, off + (off_t)sizeof h);
	if (rc == 0)
		rc = write_at(fd, &kind, sizeof kind, off + ATR_B_KIND);
	close(fd);
	return rc;
}

/* ALLOCTRACE_ENCODE=later and the file still below its cap (later_max):
 * past it, full blocks are encoded in the thread as without `later` */
static int later_room(void)
{
	return g.encode_later &&
	       atomic_load_explicit(&g.next_off, memory_order_relaxed) + g.block_size <=
		   g.later_max;
}

/* ts: the stamp of the record waiting for room (a LOST record must not
 * be later than it) */
static int flush_staging(struct atp_thread *t, uint64_t ts)
{
	uint32_t used = (uint32_t)((uint8_t *)t->cur - (t->block + ATR_BLOCK_HEADER_SIZE));
	if (used == 0)
		return 0;
	if (later_room()) {
		/* a raw copy in the file; this block goes on with the next seq */
		int rc = copy_block(t->block);
		if (rc < 0)
			return rc;
		t->seq++;
		atp_staging_retarget(t, t->block, t->touched);
		return 0;
	}
	/* an encoder thread takes it (atp_offload.c), or this thread does */
	if (atp_offload_handoff(t, used) == 0)
		return 0;
	uint32_t calls = 0;
	int rc = atp_flush_block(t->block, t->serial, t->tid, t->seq, used, &calls);
	if (rc < 0)
		return rc;
	/* now the FRAME has this seq (or it was dropped on its way to
	 * the collector: a missing seq): move the staging block on */
	t->seq++;
	atr_put64(t->block + ATR_B_SEQ, t->seq);
	reset_cursor(t);
	if (rc == 1) {
		/* the collector's buffer was full: the next block says how many
		 * calls are missing so far (a LOST record, counted once) */
		t->net_lost += calls;
		atomic_fetch_add(&g.net_unreported, calls);
		write_meta_at(t, ts, ATR_T_LOST, 0, &t->net_lost, sizeof t->net_lost);
	} else if (t->net_lost) {
		atomic_fetch_sub(&g.net_unreported, t->net_lost);
		t->net_lost = 0;
	}
	return 0;
}

/* Bytes, records and call records of a staging block whose owner is gone
 * (its cursor went with its TLS): walk the records up to the terminator. */
void atp_staging_extent(const uint8_t *b, uint32_t bs, uint32_t *used, uint32_t *nrec,
			uint32_t *calls)
{
	const uint64_t *p = (const uint64_t *)(b + ATR_BLOCK_HEADER_SIZE);
	const uint64_t *end = (const uint64_t *)(b + bs);
	uint32_t n = 0, nc = 0;
	while (p < end && p[0] != 0) {
		unsigned type = (unsigned)(p[0] & ATR_TYPE_MASK);
		unsigned fl = (unsigned)(p[0] & ATR_FLAG_MASK);
		uint64_t w = type <= ATR_T_CALL_LAST ? atr_record_words(type, fl)
			     : p + 1 >= end	     ? 1
			     : type == ATR_T_EXT     ? atr_ext_words(p[1], fl)
						     : 2 + ((p[1] & 0xffffffffu) + 7) / 8;
		if (w == 0 || w > (uint64_t)(end - p))
			break;
		p += w;
		n++;
		nc += type <= ATR_T_EXT;
	}
	*used = (uint32_t)((const uint8_t *)p - (b + ATR_BLOCK_HEADER_SIZE));
	*nrec = n;
	*calls = nc;
}

static uint32_t claim_slot(void)
{
	for (uint32_t i = 0; i < ATP_MAX_SLOTS; i++) {
		uint32_t z = 0;
		if (atomic_load_explicit(&atp_slots[i].used, memory_order_relaxed) == 0 &&
		    atomic_compare_exchange_strong(&atp_slots[i].used, &z, 1)) {
			atp_slots[i].count = 0;
			uint32_t hi = atomic_load(&g.slot_hi);
			while (hi < i + 1 && !atomic_compare_exchange_weak(&g.slot_hi, &hi, i + 1))
				;
			return i;
		}
	}
	return ATP_MAX_SLOTS;
}

static void spare_lock(void)
{
	while (atomic_flag_test_and_set_explicit(&g.spare_lock, memory_order_acquire))
		;
}

static void spare_unlock(void)
{
	atomic_flag_clear_explicit(&g.spare_lock, memory_order_release);
}

/* The staging block of a thread that has exited for good, or NULL; its
 * bytes counted in *touched.  The kernel answers ESRCH for a tid once
 * that thread is gone, so no late call of it can still be writing the
 * block. */
static uint8_t *spare_take(uint32_t *touched)
{
	uint8_t *b = NULL;
	pid_t pid = getpid();
	spare_lock();
	for (uint32_t i = 0; i < g.nspare; i++) {
		if (syscall(SYS_tgkill, pid, (pid_t)g.spare[i].tid, 0) == 0 || errno != ESRCH)
			continue;
		b = g.spare[i].block;
		*touched = g.spare[i].touched;
		g.spare[i] = g.spare[--g.nspare];
		break;
	}
	spare_unlock();
	return b;
}

/* Park an exiting thread's staging block.  1 if kept. */
static int spare_put(uint8_t *b, uint32_t tid, uint32_t touched)
{
	int kept = 0;
	spare_lock();
	if (g.nspare < ATP_MAX_SPARE) {
		g.spare[g.nspare].block = b;
		g.spare[g.nspare].tid = tid;
		g.spare[g.nspare].touched = touched;
		g.nspare++;
		kept = 1;
	}
	spare_unlock();
	return kept;
}

/* In a fork child the spare blocks are the parent's file: drop them. */
void atp_spares_forget(void)
{
	for (uint32_t i = 0; i < g.nspare; i++)
		g.real.munmap(g.spare[i].block, g.block_size);
	g.nspare = 0;
	atomic_flag_clear(&g.spare_lock);
}

static void adopt_block(struct atp_thread *t, uint8_t *b, uint32_t touched)
{
	t->block = b;
	if (t->serial == 0)
		t->serial = atomic_fetch_add(&g.next_serial, 1) + 1;
	t->tid = (uint32_t)gettid();
	if (!t->counter) {
		t->slot = claim_slot();
		t->counter = t->slot < ATP_MAX_SLOTS ? &atp_slots[t->slot].count : &t->own_count;
	}
	/* a spare block's header changes under RETIRED: a reader never
	 * sees it half written (atp_staging_retarget) */
	atp_staging_retarget(t, b, touched);
	t->state = ATP_T_ACTIVE;
}

/* First record of a thread: a staging block of its own. */
static int start_thread(struct atp_thread *t)
{
	uint32_t touched = 0;
	uint8_t *spare = spare_take(&touched);
	if (spare) {
		/* keep what the old thread wrote after its exit hook */
		uint32_t used, nrec, calls = 0;
		atp_staging_extent(spare, g.block_size, &used, &nrec, &calls);
		int rc = !used ? 0
			 : later_room()
			     ? copy_block(spare)
			     : atp_flush_block(spare, atr_get32(spare + ATR_B_THREAD),
					       atr_get32(spare + ATR_B_TID),
					       atr_get64(spare + ATR_B_SEQ), used, &calls);
		if (rc == 0 && used)
			atomic_fetch_sub(&g.net_unreported, atp_first_lost(spare));
		else if (rc == 1)
			atp_lost(calls); /* dropped on its way to the collector */
		if (rc < 0) {
			spare_put(spare, 0, touched); /* tid 0 never answers ESRCH... */
			return rc;
		}
		adopt_block(t, spare, touched);
		return 0;
	}
	uint8_t *m;
	int rc = atp_new_staging(&m);
	if (rc)
		return rc;
	adopt_block(t, m, 0);
	return 0;
}

int atp_new_staging(uint8_t **out)
{
	int fd = open_trace_fd();
	if (fd < 0)
		return fd;
	off_t off = reserve_unit(g.block_size, g.page);
	int rc = reserve_space(fd, off, g.block_size);
	if (rc) {
		close(fd);
		return rc;
	}
	void *m = g.real.mmap(NULL, g.block_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off);
	rc = m == MAP_FAILED ? -errno : 0;
	close(fd);
	if (rc == 0)
		*out = m;
	return rc;
}

/* A fresh block is all zeros; a reused one holds records that a FRAME
 * with its seq has: RETIRED while its header changes (a reader skips
 * RETIRED units), its first record word zeroed, then STAGING again. */
void atp_staging_retarget(struct atp_thread *t, uint8_t *b, uint32_t touched)
{
	volatile uint32_t *kind = (volatile uint32_t *)(b + ATR_B_KIND);
	if (atr_get32(b + ATR_B_MAGIC) == ATR_BLOCK_MAGIC) {
		*kind = ATR_BLOCK_RETIRED;
		ATP_BARRIER();
		((volatile uint64_t *)(b + ATR_BLOCK_HEADER_SIZE))[0] = 0;
		ATP_BARRIER();
		atr_put32(b + ATR_B_THREAD, t->serial);
		atr_put32(b + ATR_B_TID, t->tid);
		atr_put64(b + ATR_B_SEQ, t->seq);
		atr_put32(b + ATR_B_PID, (uint32_t)g.pid);
		ATP_BARRIER();
		*kind = ATR_BLOCK_STAGING;
	} else {
		write_block_header(b, ATR_BLOCK_STAGING, t, t->seq, 0, 0);
	}
	t->block = b;
	t->touched = touched;
	if (t->slot < ATP_MAX_SLOTS)
		atp_slots[t->slot].block = b;
	reset_cursor(t);
}

static int write_meta_at(struct atp_thread *t, uint64_t ts, unsigned type, uint32_t arg,
			 const void *payload, uint32_t len)
{
	unsigned n = 2 + (len + 7) / 8;
	uint64_t *p = atp_reserve(t, n, ts);
	if (!p)
		return -1;
	p[1] = (uint64_t)len | (uint64_t)arg << 32;
	if (len) {
		p[n - 1] = 0; /* zero the padding */
		memcpy(p + 2, payload, len);
	}
	atp_commit(t, p, n, atp_w0(ts, type));
	return 0;
}

int atp_write_meta_at(struct atp_thread *t, uint64_t ts, unsigned type, uint32_t arg,
		      const void *payload, uint32_t len)
{
	return write_meta_at(t, ts, type, arg, payload, len);
}

int atp_write_meta(struct atp_thread *t, unsigned type, uint32_t arg, const void *payload,
		   uint32_t len)
{
	return write_meta_at(t, atp_now(), type, arg, payload, len);
}

/* glibc's sbrk(0) reads its cached break (__curbrk), no syscall once
 * malloc has used the break. */
void atp_write_brk(struct atp_thread *t, uint64_t ts)
{
	if (!g.glibc)
		return;
	uint64_t v[2] = {g.brk0, (uint64_t)(uintptr_t)g.real.sbrk(0)};
	write_meta_at(t, ts, ATR_T_BRK, 0, v, sizeof v);
}

/* heap_info (glibc arena.c) starts the 64 MiB-aligned heap: ar_ptr, prev,
 * size, ...  Mapped while chunk r is live.  docs/ARENAS.md. */
void atp_heap_note(struct atp_thread *t, uint64_t ts, const void *r, uint64_t chunk_end)
{
	uint64_t lo = (uint64_t)(uintptr_t)r & ~(ATR_ARENA_HEAP_MAX - 1);
	if (!g.arena_heaps) {
		t->heap_lo = lo; /* no heap_info reads: keep the hot path quiet */
		t->heap_hi = UINT64_MAX;
		return;
	}
	const volatile uint64_t *hi = (const volatile uint64_t *)(uintptr_t)lo;
	uint64_t v[3] = {lo, hi[0], hi[2]};
	t->heap_lo = lo;
	t->heap_hi = lo + (v[2] < ATR_ARENA_HEAP_MAX ? v[2] : ATR_ARENA_HEAP_MAX);
	if (t->heap_hi < chunk_end)
		t->heap_hi = chunk_end; /* never again for this chunk */
	write_meta_at(t, ts, ATR_T_HEAP, 0, v, sizeof v);
}

/* The gap that ends at ts may hold time the thread spent off its CPU
 * (preempted, blocked): its CPU time and context switches here and at its
 * previous CPU record tell convert how much of the gap was work, and
 * whether it ever blocked (docs/TRACE_FORMAT.md, "CPU time").  The CPU
 * time comes from the thread CPU clock (exact); getrusage's CPU times
 * move by scheduler ticks (4 ms here), coarser than the gaps, so it gives
 * the switch counts only.  Two system calls, ~2.4 us on our VM.  cpu_last
 * is set first: the record's own reserve must not come back here.  Out of
 * line; errno kept. */
__attribute__((noinline, cold)) void atp_cpu_note(struct atp_thread *t, uint64_t ts)
{
	t->cpu_last = ts;
	int e = errno;
	struct timespec cpu;
	struct rusage ru;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0 &&
	    getrusage(RUSAGE_THREAD, &ru) == 0) {
		uint64_t ns = (uint64_t)cpu.tv_sec * 1000000000u + (uint64_t)cpu.tv_nsec;
		uint64_t v[3] = {ns, (uint64_t)ru.ru_nvcsw, (uint64_t)ru.ru_nivcsw};
		write_meta_at(t, ts, ATR_T_CPU, 0, v, sizeof v);
	}
	errno = e;
}

uint64_t *atp_reserve_slow(struct atp_thread *t, unsigned nwords, uint64_t ts)
{
	if (!g.recording || atomic_load_explicit(&g.failed, memory_order_relaxed)) {
		if (atomic_load_explicit(&g.failed, memory_order_relaxed))
			atp_lost(1);
		return NULL;
	}
	if (t->state == ATP_T_DEAD)
		return NULL;
	/* only the counted bytes of the block were full (touch_end) */
	if (t->block && t->end < t->block_end && touch_more(t, nwords))
		return t->cur;
	int saved = errno;
	int rc = 0;
	if (t->block == NULL) {
		/* a new thread, or one whose last destructor ran already: its
		   set-up runs after the stamp of its first record, like a
		   flush (below), and takes as long as hundreds of calls */
		int fresh = t->state == ATP_T_NEW;
		uint64_t a = atp_now();
		rc = start_thread(t);
		if (rc == 0 && fresh) {
			atp_thread_registered(t);
			uint64_t self = (uint64_t)pthread_self();
			write_meta_at(t, ts, ATR_T_THREAD_START, t->tid, &self, sizeof self);
		}
		if (rc == 0) {
			atp_write_brk(t, ts);
			uint64_t spent = atp_now() - a;
			write_meta_at(t, ts, ATR_T_RECORDER, 0, &spent, sizeof spent);
		}
	} else {
		/* the flush runs after the stamp of the record it makes room
		   for, in the program's time between that call and its next:
		   a RECORDER record says how long, for convert's think time */
		uint64_t a = atp_now();
		rc = flush_staging(t, ts);
		if (rc == 0) {
			atp_write_brk(t, ts);
			uint64_t spent = atp_now() - a;
			write_meta_at(t, ts, ATR_T_RECORDER, 0, &spent, sizeof spent);
		}
	}
	errno = saved;
	if (rc) {
		atp_fail(t->block ? "writing" : "extending", -rc);
		atp_lost(1);
		return NULL;
	}
	if (!touch_more(t, nwords))
		return NULL; /* larger than a block: cannot happen for our records */
	return t->cur;
}

/* Thread exit (last pthread key destructor round).  glibc still calls
 * free() after this (twice per thread in 2.36), so the staging block stays
 * the thread's: it is parked, and a later thread adopts it (flushing the
 * late records first) once this one is gone. */
void atp_thread_finish(struct atp_thread *t)
{
	if (t->block == NULL)
		return;
	int saved = errno;
	if (g.recording)
		atp_write_meta(t, ATR_T_THREAD_EXIT, t->tid, NULL, 0);
	/* if the list is full the block stays mapped and is never reused
	   (its pages stay counted: they stay resident) */
	spare_put(t->block, t->tid, t->touched);
	atp_stacks_thread_done(t);
	atomic_fetch_add(&g.exited_records, *t->counter);
	if (t->slot < ATP_MAX_SLOTS) {
		atp_slots[t->slot].block = NULL;
		atp_slots[t->slot].count = 0;
		atomic_store(&atp_slots[t->slot].used, 0);
		t->slot = ATP_MAX_SLOTS;
	}
	t->own_count = 0;
	t->counter = &t->own_count;
	t->state = ATP_T_EXITED;
	errno = saved;
}

size_t atp_staging_blocks(uint8_t **out, size_t cap)
{
	size_t k = 0;
	spare_lock();
	for (uint32_t i = 0; i < g.nspare && k < cap; i++)
		out[k++] = g.spare[i].block;
	for (uint32_t i = 0; i < ATP_MAX_SLOTS && k < cap; i++) {
		uint8_t *b = atomic_load_explicit(&atp_slots[i].used, memory_order_acquire)
				 ? atp_slots[i].block
				 : NULL;
		int dup = 0;
		for (size_t j = 0; j < k && b && !dup; j++)
			dup = out[j] == b;
		if (b && !dup)
			out[k++] = b;
	}
	spare_unlock();
	return k;
}

uint64_t atp_record_count(void)
{
	uint64_t n = atomic_load(&g.exited_records);
	for (uint32_t i = 0; i < ATP_MAX_SLOTS; i++)
		if (atomic_load_explicit(&atp_slots[i].used, memory_order_relaxed))
			n += __atomic_load_n(&atp_slots[i].count, __ATOMIC_RELAXED);
	struct atp_thread *t = &atp_tls;
	if (t->slot >= ATP_MAX_SLOTS)
		n += t->own_count;
	return n;
}
