/* threads.c - N worker threads with known counts, plus a producer/consumer
 * pair where every block is allocated in one thread and freed in another.
 *
 * usage: threads [NWORKERS] [fork]   (default 8)
 *
 * With "fork", main forks while the workers are allocating: the child (a
 * single thread) makes its own calls and prints its own line; the parent
 * carries on as usual.
 *
 * Threads in the trace: main + NWORKERS + producer + consumer, all of which
 * make calls.
 *
 * glibc (2.36) itself calls the traced functions around threads, and the
 * program counts those calls as its own:
 *  - pthread_create: the new thread's DTV (dynamic thread vector) comes from
 *    calloc in ld.so, which after start-up resolves calloc through the
 *    global scope and so reaches the interposed one: one calloc per thread
 *    whose stack is freshly mapped (all of ours), made by the creator;
 *  - thread exit: __libc_thread_freeres frees two per-thread buffers that
 *    are NULL here: two free(NULL) per thread, made by the exiting thread;
 *  - when the stack cache grows past 40 MB, pthread_join frees cached
 *    stacks and their DTVs (a free per DTV slot): the threads get 256 KiB
 *    stacks so that never happens.
 * run_progs.py's untraced self-check cannot see these; the traced run does.
 */
#include "progs.h"

#include <sched.h>
#include <stdatomic.h>
#include <sys/wait.h>

#define WORKER_ITERS 3000
#define QUEUE_ITEMS  5000
#define QUEUE_CAP    64

/* calls glibc makes through the traced functions (see above) */
#define CALLOC_PER_PTHREAD_CREATE 1
#define FREE_PER_THREAD_EXIT	  2
#define STACK_SIZE		  (256 << 10)

static pthread_barrier_t start_line;
static atomic_uint running; /* workers past the start line */

static void *worker(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg;
	void *keep[16] = {0};
	pthread_barrier_wait(&start_line);
	atomic_fetch_add(&running, 1);
	for (unsigned i = 0; i < WORKER_ITERS; i++) {
		void *p = t_malloc(16 + (i * 7 + id) % 2000);
		CHECK(p);
		unsigned k = i % 16;
		if (keep[k])
			t_free(keep[k]);
		keep[k] = p;
		if (i % 10 == 0) {
			void *c = t_calloc(4, 32 + id);
			CHECK(c);
			c = t_realloc(c, 4096 + i);
			CHECK(c);
			t_free(c);
		}
		if (i % 100 == 0) {
			void *a = NULL;
			CHECK(t_posix_memalign(&a, 64, 100) == 0);
			t_free(a);
			a = t_aligned_alloc(128, 256);
			CHECK(a);
			t_free(a);
		}
	}
	for (unsigned k = 0; k < 16; k++)
		t_free(keep[k]);
	tally_merge();
	return NULL;
}

/* ---- producer/consumer: blocks cross threads ------------------------- */

static void *queue[QUEUE_CAP];
static unsigned q_head, q_tail, q_count;
static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_not_full = PTHREAD_COND_INITIALIZER;
static pthread_cond_t q_not_empty = PTHREAD_COND_INITIALIZER;

static void *producer(void *arg)
{
	(void)arg;
	for (unsigned i = 0; i < QUEUE_ITEMS; i++) {
		unsigned *p = t_malloc(32 + i % 500);
		CHECK(p);
		*p = i;
		pthread_mutex_lock(&q_lock);
		while (q_count == QUEUE_CAP)
			pthread_cond_wait(&q_not_full, &q_lock);
		queue[q_tail] = p;
		q_tail = (q_tail + 1) % QUEUE_CAP;
		q_count++;
		pthread_cond_signal(&q_not_empty);
		pthread_mutex_unlock(&q_lock);
	}
	tally_merge();
	return NULL;
}

static void *consumer(void *arg)
{
	(void)arg;
	for (unsigned i = 0; i < QUEUE_ITEMS; i++) {
		pthread_mutex_lock(&q_lock);
		while (q_count == 0)
			pthread_cond_wait(&q_not_empty, &q_lock);
		unsigned *p = queue[q_head];
		q_head = (q_head + 1) % QUEUE_CAP;
		q_count--;
		pthread_cond_signal(&q_not_full);
		pthread_mutex_unlock(&q_lock);
		if (*p != i)
			die("queue order: got %u, want %u", *p, i);
		t_free(p); /* allocated by the producer */
	}
	tally_merge();
	return NULL;
}

static pthread_attr_t attr;

static void create(pthread_t *th, void *(*fn)(void *), void *arg)
{
	int rc = pthread_create(th, &attr, fn, arg);
	if (rc != 0)
		die("pthread_create: %s", strerror(rc));
	tally_add(F_CALLOC, CALLOC_PER_PTHREAD_CREATE);
}

static void join(pthread_t th)
{
	int rc = pthread_join(th, NULL);
	if (rc != 0)
		die("pthread_join: %s", strerror(rc));
	tally_add(F_FREE, FREE_PER_THREAD_EXIT);
	tally_add(F_FREE_NULL, FREE_PER_THREAD_EXIT);
}

int main(int argc, char **argv)
{
	prog_name = "threads";
	unsigned n = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 8;
	int fork_mode = argc > 2 && strcmp(argv[2], "fork") == 0;
	if (n < 1 || n > 256)
		die("bad worker count %u", n);

	/* main makes calls too: it is a traced thread */
	void *m = t_malloc(100);
	t_free(m);

	pthread_t *th = t_calloc(n, sizeof *th);
	CHECK(th);
	pthread_t pc[2];
	if (pthread_barrier_init(&start_line, NULL, n) != 0)
		die("pthread_barrier_init");
	if (pthread_attr_init(&attr) != 0 || pthread_attr_setstacksize(&attr, STACK_SIZE) != 0)
		die("pthread_attr");
	for (unsigned i = 0; i < n; i++)
		create(&th[i], worker, (void *)(uintptr_t)i);
	create(&pc[0], producer, NULL);
	create(&pc[1], consumer, NULL);
	pid_t child = -1;
	if (fork_mode) {
		/* fork while every worker is busy allocating */
		while (atomic_load(&running) < n)
			sched_yield();
		child = fork();
		if (child < 0)
			die("fork: %s", strerror(errno));
		if (child == 0) {
			tally_reset();
			for (unsigned i = 0; i < 1000; i++) {
				void *p = t_malloc(10 + i);
				CHECK(p);
				p = t_realloc(p, 20 + i);
				CHECK(p);
				t_free(p);
			}
			expect_print("\"threads\":1,\"role\":\"fork-child\"");
			exit(0);
		}
	}
	for (unsigned i = 0; i < n; i++)
		join(th[i]);
	join(pc[0]);
	join(pc[1]);
	if (fork_mode) {
		int st;
		if (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			die("fork child failed (status 0x%x)", st);
	}
	t_free(th);

	char extra[64];
	snprintf(extra, sizeof extra, "\"threads\":%u", n + 3);
	expect_print(extra);
	return 0;
}
