/* atp_offload.c - full staging blocks encoded by a helper thread.
 *
 * Encoding and zstd are 60-80% of the recorder's instructions per call
 * (bench/RESULTS.md, "Instructions per call in the program's threads").
 * With ALLOCTRACE_OFFLOAD=1 (not the default: bench/RESULTS.md, "All of it
 * together": fewer instructions in the program's threads, not less time), a thread whose staging
 * block is full hands it to an encoder thread of the library and goes on in another staging block
 * of its own: each slot (thread) has ATP_INFLIGHT spare blocks, mapped once and reused.  The
 * hand-off is a few atomic stores and, when the encoder sleeps, one futex wake.  If every block of
 * the thread is still waiting (the encoder is behind or stalled), or there is no encoder (it could
 * not start, the library destructor ran, a collector or an attach), the thread encodes its block
 * itself as before.
 *
 * A block handed over stays a STAGING unit of the file, with its seq, until
 * its FRAME is written: kill -9 loses none of it, and a reader takes for
 * each seq the FRAME if there is one, else the STAGING unit (feature
 * INFLIGHT, docs/TRACE_FORMAT.md).  The encoder thread sets its guard for
 * good: whatever it calls is not traced.  Created at the first hand-off
 * of a program that has threads already (glibc's __libc_single_threaded:
 * a single-threaded program stays one, its threads encode as before),
 * with every signal blocked; again in a fork child.  The destructor
 * encodes what is left and stops the hand-offs.  ALLOCTRACE_OFFLOAD=0 (the
 * default) turns it off; =2 starts a helper that never encodes (the tests' stalled
 * encoder: every thread falls back once its blocks are all handed over).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#if __has_include(<sys/single_threaded.h>)
#include <sys/single_threaded.h>
#define ATP_SINGLE_THREADED() __libc_single_threaded
#else
#define ATP_SINGLE_THREADED() 0
#endif

#include "atp_internal.h"

static long futex(_Atomic uint32_t *w, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, (uint32_t *)w, op, val, ts, NULL, 0);
}

/* Encode one block if it is waiting: 1 if this call did. */
static int encode_one(struct atp_flight *e)
{
	uint32_t q = ATP_FL_QUEUED;
	if (atomic_load_explicit(&e->state, memory_order_relaxed) != q ||
	    !atomic_compare_exchange_strong_explicit(&e->state, &q, ATP_FL_BUSY,
						     memory_order_acquire, memory_order_relaxed))
		return 0;
	uint32_t calls = 0;
	int rc = atp_flush_block(e->block, e->serial, e->tid, e->seq, e->used, &calls);
	if (rc < 0) {
		/* the STAGING unit keeps the records; never reuse it */
		atp_fail("writing", -rc);
		atomic_store_explicit(&e->state, ATP_FL_HELD, memory_order_release);
		return 1;
	}
	atomic_store_explicit(&e->state, ATP_FL_FREE, memory_order_release);
	return 1;
}

static unsigned encode_all(int helper)
{
	unsigned n = 0;
	if (helper && g.offload == 2)
		return 0; /* ALLOCTRACE_OFFLOAD=2: a helper that never keeps up */
	uint32_t hi = atomic_load(&g.slot_hi);
	for (uint32_t s = 0; s < hi && s < ATP_MAX_SLOTS; s++)
		for (int i = 0; i < ATP_INFLIGHT; i++)
			n += (unsigned)encode_one(&atp_flights[s][i]);
	return n;
}

static void *encoder_main(void *arg)
{
	(void)arg;
	atp_tls.guard = ATP_GUARD_INTERNAL; /* never traced */
	for (;;) {
		uint32_t seen = atomic_load(&g.off_seq);
		if (encode_all(1))
			continue;
		atomic_store(&g.off_sleeping, 1);
		if (atomic_load(&g.off_seq) == seen) {
			/* a bound only: every hand-off wakes us if we sleep */
			struct timespec ts = {1, 0};
			futex(&g.off_seq, FUTEX_WAIT_PRIVATE, seen, &ts);
		}
		atomic_store(&g.off_sleeping, 0);
	}
	return NULL;
}

/* Guard set.  0 if the encoder runs. */
static int start_encoder(void)
{
	int none = ATP_OFF_NONE;
	if (!atomic_compare_exchange_strong(&g.off_state, &none, ATP_OFF_STARTING))
		return -1; /* another thread is starting it: encode this one */
	/* pthread_create allocates: ours, not an untraced call of the program */
	atp_tls.guard += ATP_GUARD_INTERNAL;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_t a;
	pthread_t th;
	int rc = pthread_attr_init(&a);
	if (rc == 0) {
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&a, 256u << 10);
		rc = pthread_create(&th, &a, encoder_main, NULL);
		pthread_attr_destroy(&a);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	atp_tls.guard -= ATP_GUARD_INTERNAL;
	atomic_store(&g.off_state, rc == 0 ? ATP_OFF_RUNNING : ATP_OFF_STOPPED);
	return rc == 0 ? 0 : -1;
}

int atp_offload_handoff(struct atp_thread *t, uint32_t used)
{
	if (!g.offload || t->slot >= ATP_MAX_SLOTS || t->state != ATP_T_ACTIVE)
		return -1;
	int st = atomic_load_explicit(&g.off_state, memory_order_relaxed);
	if (ATP_UNLIKELY(st != ATP_OFF_RUNNING)) {
		/* a thread of ours would make a single-threaded program a
		 * multi-threaded one for glibc: its malloc takes locks then,
		 * and retries failed allocations in another arena */
		if (st != ATP_OFF_NONE || ATP_SINGLE_THREADED() || start_encoder() != 0)
			return -1;
	}
	struct atp_flight *fl = atp_flights[t->slot], *e = NULL;
	for (int i = 0; i < ATP_INFLIGHT && !e; i++) {
		uint32_t s = atomic_load_explicit(&fl[i].state, memory_order_acquire);
		if (s == ATP_FL_FREE || s == ATP_FL_EMPTY)
			e = &fl[i];
	}
	if (!e)
		return -1; /* all waiting: encode this one here */
	uint8_t *nb = e->block;
	uint32_t touched = nb ? e->touched : 0;
	if (!nb && atp_new_staging(&nb) != 0)
		return -1;
	e->block = t->block;
	e->touched = t->touched;
	e->used = used;
	e->serial = t->serial;
	e->tid = t->tid;
	e->seq = t->seq;
	atomic_store_explicit(&e->state, ATP_FL_QUEUED, memory_order_release);
	atomic_fetch_add(&g.off_seq, 1);
	if (atomic_load(&g.off_sleeping))
		futex(&g.off_seq, FUTEX_WAKE_PRIVATE, 1, NULL);
	t->seq++;
	atp_staging_retarget(t, nb, touched);
	return 0;
}

void atp_offload_drain(void)
{
	if (!g.offload)
		return;
	/* later full blocks are encoded by their threads */
	atomic_store(&g.off_state, ATP_OFF_STOPPED);
	encode_all(0);
	/* wait (bounded) for the ones the encoder thread is writing */
	for (int round = 0; round < 10000; round++) {
		int busy = 0;
		uint32_t hi = atomic_load(&g.slot_hi);
		for (uint32_t s = 0; s < hi && s < ATP_MAX_SLOTS && !busy; s++)
			for (int i = 0; i < ATP_INFLIGHT; i++)
				busy |= atomic_load(&atp_flights[s][i].state) == ATP_FL_BUSY;
		if (!busy)
			break;
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
}

/* Only the forking thread exists now: the blocks are the parent's file. */
void atp_offload_after_fork_child(void)
{
	uint32_t hi = atomic_load(&g.slot_hi);
	for (uint32_t s = 0; s < hi && s < ATP_MAX_SLOTS; s++)
		for (int i = 0; i < ATP_INFLIGHT; i++) {
			struct atp_flight *e = &atp_flights[s][i];
			if (e->block)
				g.real.munmap(e->block, g.block_size);
			e->block = NULL;
			atomic_store(&e->state, ATP_FL_EMPTY);
		}
	atomic_store(&g.slot_hi, 0);
	atomic_store(&g.off_seq, 0);
	atomic_store(&g.off_sleeping, 0);
	atomic_store(&g.off_state, ATP_OFF_NONE);
}
