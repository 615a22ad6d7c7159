/* atp_init.c - start-up, settings, file creation, fork, thread exit, exit.
 *
 * Bootstrapping: g.real starts out pointing at boot_* functions.  The first
 * call (or the constructor, whichever comes first) runs atp_init(), which
 * resolves the real allocator with dlsym(RTLD_NEXT); allocations made by
 * dlsym itself are served from a static pool and never reach the real
 * free.  Other threads arriving during init wait for it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "atp_internal.h"

__thread struct atp_thread atp_tls __attribute__((tls_model("initial-exec")));

/* ---- bootstrap pool ---------------------------------------------------- */

char atp_boot_pool[ATP_BOOT_POOL_SIZE] __attribute__((aligned(64)));
static _Atomic size_t boot_used;

/* 16-byte header before each block holds its size. */
static void *boot_alloc(size_t size, size_t align)
{
	if (align < 16)
		align = 16;
	size_t old = atomic_load(&boot_used), start, next;
	do {
		start = (old + 16 + align - 1) & ~(align - 1);
		next = start + size;
		if (next > ATP_BOOT_POOL_SIZE || next < start)
			return NULL;
	} while (!atomic_compare_exchange_weak(&boot_used, &old, next));
	*(size_t *)(atp_boot_pool + start - 16) = size;
	return atp_boot_pool + start; /* static storage: already zero */
}

size_t atp_boot_size(const void *p)
{
	if (!p)
		return 0;
	return *(const size_t *)((const char *)p - 16);
}

static void wait_ready(void)
{
	atp_init();
	while (atomic_load(&g.state) == ATP_INITIALIZING)
		sched_yield();
}

/* While initialising, the initialising thread is guarded, so its nested
 * calls land here; every other caller waits for init to finish. */
#define IN_INIT() (atomic_load(&g.state) == ATP_INITIALIZING && atp_tls.guard)

static void *boot_malloc(size_t n)
{
	if (IN_INIT())
		return boot_alloc(n, 16);
	wait_ready();
	return g.real.malloc(n);
}
static void boot_free(void *p)
{
	if (IN_INIT() || p == NULL)
		return;
	wait_ready();
	g.real.free(p);
}
static void *boot_calloc(size_t a, size_t b)
{
	size_t n;
	if (__builtin_mul_overflow(a, b, &n))
		return NULL;
	if (IN_INIT())
		return boot_alloc(n, 16);
	wait_ready();
	return g.real.calloc(a, b);
}
static void *boot_realloc(void *p, size_t n)
{
	if (IN_INIT()) {
		void *r = boot_alloc(n, 16);
		if (r && p)
			memcpy(r, p, atp_boot_size(p) < n ? atp_boot_size(p) : n);
		return r;
	}
	wait_ready();
	return g.real.realloc(p, n);
}
static void *boot_reallocarray(void *p, size_t a, size_t b)
{
	size_t n;
	if (__builtin_mul_overflow(a, b, &n))
		return NULL;
	if (IN_INIT())
		return boot_realloc(p, n);
	wait_ready();
	return g.real.reallocarray(p, a, b);
}
static void *boot_memalign(size_t al, size_t n)
{
	if (IN_INIT())
		return boot_alloc(n, al);
	wait_ready();
	return g.real.memalign(al, n);
}
static void *boot_aligned_alloc(size_t al, size_t n)
{
	if (IN_INIT())
		return boot_alloc(n, al);
	wait_ready();
	return g.real.aligned_alloc(al, n);
}
static int boot_posix_memalign(void **out, size_t al, size_t n)
{
	if (IN_INIT()) {
		*out = boot_alloc(n, al);
		return *out ? 0 : ENOMEM;
	}
	wait_ready();
	return g.real.posix_memalign(out, al, n);
}
static void *boot_valloc(size_t n)
{
	if (IN_INIT())
		return boot_alloc(n, 4096);
	wait_ready();
	return g.real.valloc(n);
}
static void *boot_pvalloc(size_t n)
{
	if (IN_INIT())
		return boot_alloc((n + 4095) & ~(size_t)4095, 4096);
	wait_ready();
	return g.real.pvalloc(n);
}

/* The other traced calls (ATR_XCALLS).  The initialising thread's own
 * calls reach the kernel (mappings) or libc by name; a function the libc
 * lacks (resolve() found none) fails with ENOSYS. */
#define XBOOT_MISSING(name, fail)                                                                  \
	do {                                                                                       \
		if (g.real.name == boot_##name) {                                                  \
			errno = ENOSYS;                                                            \
			return fail;                                                               \
		}                                                                                  \
	} while (0)
#define XBOOT_NEXT(name) dlsym(g.attach ? RTLD_DEFAULT : RTLD_NEXT, #name)

static void *boot_mmap(void *a, size_t n, int prot, int fl, int fd, off_t off)
{
	if (IN_INIT())
		return (void *)syscall(SYS_mmap, a, n, prot, fl, fd, off);
	wait_ready();
	XBOOT_MISSING(mmap, MAP_FAILED);
	return g.real.mmap(a, n, prot, fl, fd, off);
}
static int boot_munmap(void *a, size_t n)
{
	if (IN_INIT())
		return (int)syscall(SYS_munmap, a, n);
	wait_ready();
	XBOOT_MISSING(munmap, -1);
	return g.real.munmap(a, n);
}
static void *boot_mremap(void *a, size_t n, size_t nn, int fl, ...)
{
	void *na = NULL;
	if (fl & (MREMAP_FIXED | ATP_MREMAP_DONTUNMAP)) {
		va_list ap;
		va_start(ap, fl);
		na = va_arg(ap, void *);
		va_end(ap);
	}
	if (IN_INIT())
		return (void *)syscall(SYS_mremap, a, n, nn, fl, na);
	wait_ready();
	XBOOT_MISSING(mremap, MAP_FAILED);
	return g.real.mremap(a, n, nn, fl, na);
}
static int boot_madvise(void *a, size_t n, int adv)
{
	if (IN_INIT())
		return (int)syscall(SYS_madvise, a, n, adv);
	wait_ready();
	XBOOT_MISSING(madvise, -1);
	return g.real.madvise(a, n, adv);
}
static int boot_brk(void *a)
{
	if (IN_INIT()) {
		int (*f)(void *) = (int (*)(void *))XBOOT_NEXT(brk);
		return f ? f(a) : (errno = ENOSYS, -1);
	}
	wait_ready();
	XBOOT_MISSING(brk, -1);
	return g.real.brk(a);
}
static void *boot_sbrk(intptr_t incr)
{
	if (IN_INIT()) {
		void *(*f)(intptr_t) = (void *(*)(intptr_t))XBOOT_NEXT(sbrk);
		return f ? f(incr) : (errno = ENOSYS, (void *)-1);
	}
	wait_ready();
	XBOOT_MISSING(sbrk, (void *)-1);
	return g.real.sbrk(incr);
}
static int boot_mallopt(int param, int value)
{
	if (IN_INIT()) {
		int (*f)(int, int) = (int (*)(int, int))XBOOT_NEXT(mallopt);
		return f ? f(param, value) : 0;
	}
	wait_ready();
	XBOOT_MISSING(mallopt, 0);
	return g.real.mallopt(param, value);
}
static int boot_malloc_trim(size_t pad)
{
	if (IN_INIT())
		return 0; /* nothing of the heap is ours to give back yet */
	wait_ready();
	XBOOT_MISSING(malloc_trim, 0);
	return g.real.malloc_trim(pad);
}
static size_t boot_malloc_usable_size(void *p)
{
	if (atp_is_boot_ptr(p))
		return atp_boot_size(p);
	if (IN_INIT() || !p)
		return 0;
	wait_ready();
	XBOOT_MISSING(malloc_usable_size, 0);
	return g.real.malloc_usable_size(p);
}

/* g.real is never NULL, even for a call that comes before our constructor */
/* every traced function has a boot_<name> forwarder above */
#define BOOT_(NAME, name, type, op, args, ret, params) .name = boot_##name,
#define XBOOT_(NAME, name, type, words, ret, params)   .name = boot_##name,
struct atp_slot atp_slots[ATP_MAX_SLOTS];
struct atp_flight atp_flights[ATP_MAX_SLOTS][ATP_INFLIGHT];

struct atp_global g = {
    .real = {ATR_CALLS(BOOT_) ATR_XCALLS(XBOOT_)},
    .cpu_gap = INT64_MAX, /* no CPU records before the settings are read */
};

/* ---- settings ------------------------------------------------------------ */

/* `record -p`: record's settings block, never the target's environment */
static const char *attach_env(const char *name)
{
	size_t n = strlen(name);
	for (const char *p = g.attach_env; *p; p += strlen(p) + 1)
		if (!strncmp(p, name, n) && p[n] == '=')
			return p + n + 1;
	return NULL;
}

static const char *env(const char *name)
{
	const char *v = g.attach ? attach_env(name) : secure_getenv(name);
	return v && *v ? v : NULL;
}

static uint64_t env_u64_of(const char *v, uint64_t dflt)
{
	uint64_t r = 0;
	if (!*v)
		return dflt;
	for (; *v >= '0' && *v <= '9'; v++)
		r = r * 10 + (uint64_t)(*v - '0');
	return *v ? dflt : r;
}

static uint64_t env_u64(const char *name, uint64_t dflt)
{
	const char *v = env(name);
	return v ? env_u64_of(v, dflt) : dflt;
}

/* A percentage with up to two decimals ("0.5", "2", "100") in basis
 * points (1/100 %), 1..10000; anything else: the default. */
static uint32_t env_percent_bp(const char *name, uint32_t dflt)
{
	const char *v = env(name);
	if (!v)
		return dflt;
	uint64_t r = 0;
	int frac = -1;
	for (; *v; v++) {
		if (*v == '.' && frac < 0) {
			frac = 0;
			continue;
		}
		if (*v < '0' || *v > '9' || frac >= 2 || r > 10000)
			return dflt;
		r = r * 10 + (uint64_t)(*v - '0');
		if (frac >= 0)
			frac++;
	}
	for (frac = frac < 0 ? 0 : frac; frac < 2; frac++)
		r *= 10;
	return r >= 1 && r <= 10000 ? (uint32_t)r : dflt;
}

/* ALLOCTRACE_ZSTD_LEVEL: 0 (no zstd), 1..19, or -1..-100 (zstd's fast
 * levels); anything else: the default. */
static int env_zstd_level(void)
{
	const char *v = env("ALLOCTRACE_ZSTD_LEVEL");
	if (!v)
		return ATP_ZSTD_LEVEL_DEFAULT;
	int neg = *v == '-';
	uint64_t r = env_u64_of(v + neg, UINT64_MAX);
	if (r > (neg ? 100u : 19u))
		return ATP_ZSTD_LEVEL_DEFAULT;
	return neg ? -(int)r : (int)r;
}

static int env_flag(const char *name, int dflt)
{
	const char *v = env(name);
	if (!v)
		return dflt;
	return !(v[0] == '0' || v[0] == 'n' || v[0] == 'N' || v[0] == 'f' || v[0] == 'F');
}

static void absolute(char *dst, const char *path, size_t n)
{
	dst[0] = 0;
	if (path[0] != '/') {
		if (getcwd(dst, n) == NULL)
			dst[0] = 0; /* stays relative */
		else if (strcmp(dst, "/") != 0)
			atp_strlcat(dst, "/", n);
	}
	atp_strlcat(dst, path, n);
}

/* ---- the file ------------------------------------------------------------ */

static int try_create(const char *path)
{
	return open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
}

/* DIR/<pid>.atr, DIR/<pid>.<n>.atr for later images of the same pid (exec);
 * FILE, then FILE.<pid>, FILE.<pid>.<n>; default /tmp/alloctrace.<pid>.atr.
 * The n-th name tried; *gen: the image number it stands for. */
static void image_path(char *p, unsigned n, unsigned *gen)
{
	char pid[24], num[24];
	atp_utoa((uint64_t)g.pid, pid);
	p[0] = 0;
	if (g.dir[0]) {
		atp_strlcat(p, g.dir, ATP_PATH_MAX);
		atp_strlcat(p, "/", ATP_PATH_MAX);
		atp_strlcat(p, pid, ATP_PATH_MAX);
	} else if (g.file[0]) {
		atp_strlcat(p, g.file, ATP_PATH_MAX);
		if (n > 0) {
			atp_strlcat(p, ".", ATP_PATH_MAX);
			atp_strlcat(p, pid, ATP_PATH_MAX);
		}
	} else {
		atp_strlcat(p, "/tmp/alloctrace.", ATP_PATH_MAX);
		atp_strlcat(p, pid, ATP_PATH_MAX);
	}
	*gen = g.file[0] && !g.dir[0] ? (n > 1 ? n - 1 : 0) : n;
	if (*gen) {
		atp_strlcat(p, ".", ATP_PATH_MAX);
		atp_strlcat(p, atp_utoa(*gen, num), ATP_PATH_MAX);
	}
	if (g.dir[0] || !g.file[0])
		atp_strlcat(p, ".atr", ATP_PATH_MAX);
}

static unsigned name_idx; /* which image_path() the file got */

static int create_file(void)
{
	for (unsigned n = 0; n < 1000; n++) {
		unsigned gen;
		image_path(g.path, n, &gen);
		int fd = try_create(g.path);
		if (fd >= 0) {
			g.exec_seq = gen;
			name_idx = n;
			return fd;
		}
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

/* With a collector the file is a spool: header and staging blocks only.
 * An earlier image of this pid (exec) left its staging blocks there: send
 * them as the rest of its stream, then connect for ourselves. */
static int open_net(void)
{
	char p[ATP_PATH_MAX];
	for (unsigned n = 0; n < name_idx; n++) {
		unsigned gen;
		image_path(p, n, &gen);
		atp_net_ship_file(p);
	}
	return atp_net_open();
}

static void fill_header(uint8_t *h);

static void read_file(const char *path, uint8_t *dst, size_t cap, size_t *len)
{
	*len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	while (*len < cap) {
		ssize_t n = read(fd, dst + *len, cap - *len);
		if (n <= 0)
			break;
		*len += (size_t)n;
	}
	close(fd);
}

/* Create the file and its header page; map the header for status updates. */
int atp_open_trace(void)
{
	int fd = create_file();
	if (fd < 0) {
		atp_message("cannot create trace file", g.path, NULL, -fd);
		return fd;
	}
	struct stat st;
	int rc = 0;
	if (fstat(fd, &st) != 0 || fallocate(fd, 0, 0, ATR_HEADER_SIZE) != 0) {
		/* fallocate may be unsupported: a plain ftruncate then */
		if (ftruncate(fd, ATR_HEADER_SIZE) != 0)
			rc = -errno;
	}
	void *m =
	    rc ? MAP_FAILED
	       : g.real.mmap(NULL, ATR_HEADER_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		rc = rc ? rc : -errno;
		close(fd);
		atp_message("cannot map trace file", g.path, NULL, -rc);
		return rc;
	}
	g.ino = (uint64_t)st.st_ino;
	g.dev = (uint64_t)st.st_dev;
	if (g.encode_later) {
		/* raw blocks are ~5-20x the size of frames: a long run must not
		 * fill the disk before `record` compacts the file */
		struct statvfs vs;
		g.later_max = g.later_max_env;
		if (fstatvfs(fd, &vs) == 0) {
			uint64_t quarter = (uint64_t)vs.f_bavail * vs.f_frsize / 4;
			if (quarter < g.later_max)
				g.later_max = quarter;
		}
	}
	close(fd);
	fill_header(m);
	if (g.net && (rc = open_net()) != 0) {
		atp_message("cannot send the trace to", atp_net_name(), "(not traced)", -rc);
		munmap(g.hdr, ATR_HEADER_SIZE);
		g.hdr = NULL;
		unlink(g.path);
		return rc;
	}
	return 0;
}

/* CPUs this process may run on (a raw syscall: no allocation) */
static uint32_t usable_cpus(void)
{
	cpu_set_t set;
	long n = syscall(SYS_sched_getaffinity, 0, sizeof(set), &set);
	return n > 0 ? (uint32_t)CPU_COUNT_S((size_t)n, &set) : 0;
}

static void fill_header(uint8_t *h)
{
	memcpy(h + ATR_H_MAGIC, ATR_MAGIC, 8);
	atr_put32(h + ATR_H_VERSION, ATR_VERSION);
	atr_put32(h + ATR_H_HEADER_SIZE, ATR_HEADER_SIZE);
	uint64_t feat = g.clock == ATP_CLOCK_TSC      ? ATR_FEAT_CLOCK_TSC
			: g.clock == ATP_CLOCK_CNTVCT ? ATR_FEAT_CLOCK_CNTVCT
						      : ATR_FEAT_CLOCK_MONO_NS;
	if (g.timing)
		feat |= ATR_FEAT_TIMING;
	if (g.stacks)
		feat |= ATR_FEAT_STACKS;
	if (g.glibc)
		feat |= ATR_FEAT_CHUNK_FLAGS;
	if (g.zstd_level)
		feat |= ATR_FEAT_ZSTD;
	if (g.sample_rate)
		feat |= ATR_FEAT_SAMPLED;
	feat |= ATR_FEAT_XCALLS; /* EXT records (atp_xhooks.c) */
	if (g.offload || g.encode_later)
		feat |= ATR_FEAT_INFLIGHT; /* blocks handed over (atp_offload.c) or
					      copied raw (ALLOCTRACE_ENCODE=later) */
	g.features = feat;
	atr_put64(h + ATR_H_FEATURES, feat);
	atr_put64(h + ATR_H_SAMPLE_RATE, g.sample_rate);
	atr_put64(h + ATR_H_RESIDENT_MIN, g.resident_min);
	atr_put32(h + ATR_H_PAGE_SIZE, (uint32_t)g.page);
	atr_put32(h + ATR_H_RES_BUDGET, g.resident_min ? g.resident_budget : 0);
	atr_put32(h + ATR_H_NCPU, usable_cpus());
	atr_put32(h + ATR_H_CPU_GAP, g.cpu_gap_ns);
	atr_put32(h + ATR_H_TIMING_SAMPLE, g.time_every);
	atr_put32(h + ATR_H_BLOCK_SIZE, g.block_size);
	atr_put32(h + ATR_H_STATUS, (g.no_children ? ATR_STATUS_NO_CHILDREN : 0) | g.open_status);
	atr_put32(h + ATR_H_PID, (uint32_t)g.pid);
	atr_put32(h + ATR_H_PPID, (uint32_t)getppid());
	struct timespec rt;
	clock_gettime(CLOCK_REALTIME, &rt);
	atr_put64(h + ATR_H_START_REALTIME,
		  (uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec);
	atr_put64(h + ATR_H_START_MONO, plat_mono_ns());
	g.t0 = atp_now();
	atr_put64(h + ATR_H_START_TICKS, g.t0);
	atr_put64(h + ATR_H_TICKS_PER_SEC, g.ticks_hint);
	atr_put32(h + ATR_H_EXEC_SEQ, g.exec_seq);
	ssize_t l = readlink("/proc/self/exe", (char *)h + ATR_H_EXE, 255);
	h[ATR_H_EXE + (l > 0 ? l : 0)] = 0;
	size_t clen;
	read_file("/proc/self/cmdline", h + ATR_H_CMDLINE + 4, ATR_H_CMDLINE_MAX, &clen);
	atr_put32(h + ATR_H_CMDLINE, (uint32_t)clen);
	atr_put64(h + ATR_H_SELF_RSS, atp_self_rss());
	g.hdr = h;
	atomic_store(&g.next_block, 0);
	atomic_store(&g.next_off, ATR_HEADER_SIZE);
}

/* ---- children -------------------------------------------------------- */

/* --no-children: take ourselves out of LD_PRELOAD in place (no allocation),
 * so exec'd programs are not traced; other preloaded libraries stay. */
static void strip_preload(void)
{
	extern char **environ;
	Dl_info info;
	if (!dladdr((void *)atp_init, &info) || !info.dli_fname)
		return;
	const char *self = strrchr(info.dli_fname, '/');
	self = self ? self + 1 : info.dli_fname;
	for (char **e = environ; e && *e; e++) {
		if (strncmp(*e, "LD_PRELOAD=", 11) != 0)
			continue;
		char *src = *e + 11, *dst = src;
		while (*src) {
			size_t len = strcspn(src, ": ");
			const char *base = src;
			for (size_t i = 0; i < len; i++)
				if (src[i] == '/')
					base = src + i + 1;
			size_t blen = (size_t)(src + len - base);
			int ours = blen == strlen(self) && memcmp(base, self, blen) == 0;
			if (!ours) {
				if (dst != *e + 11)
					*dst++ = ':';
				memmove(dst, src, len);
				dst += len;
			}
			src += len;
			while (*src == ':' || *src == ' ')
				src++;
		}
		*dst = 0;
	}
}

static void after_fork_child(void)
{
	struct atp_thread *t = &atp_tls;
	int saved = errno;
	/* everything mapped belongs to the parent's file: never write it */
	atp_stacks_after_fork_child();
	atp_sample_after_fork_child();
	if (t->block)
		g.real.munmap(t->block, g.block_size);
	if (g.hdr)
		g.real.munmap(g.hdr, ATR_HEADER_SIZE);
	g.hdr = NULL;
	atp_spares_forget();
	atomic_store(&g.self_staging, 0); /* those blocks were all of them */
	atp_offload_after_fork_child();
	atp_encode_after_fork();
	memset(t, 0, sizeof *t);
	t->slot = ATP_MAX_SLOTS;
	for (uint32_t i = 0; i < ATP_MAX_SLOTS; i++) {
		atomic_store(&atp_slots[i].used, 0);
		atp_slots[i].block = NULL;
	}
	if (g.net)
		atp_net_after_fork_child();
	atomic_store(&g.net_unreported, 0);
	atomic_store(&g.exited_records, 0);
	atomic_store(&g.next_serial, 0);
	g.pid = getpid();
	if (g.no_children || atomic_load(&g.failed) || atomic_load(&g.state) != ATP_READY) {
		g.recording = 0;
		atomic_store(&g.state, ATP_DISABLED);
		errno = saved;
		return;
	}
	int was = g.recording;
	g.recording = 0;
	g.exec_seq = 0;
	/* in the header from the start: a collector gets it in the hello */
	g.open_status = ATR_STATUS_FORK_CHILD | (was ? 0 : ATR_STATUS_STOPPED);
	if (atp_open_trace() != 0)
		atomic_store(&g.state, ATP_DISABLED);
	else
		g.recording = was;
	errno = saved;
}

/* ---- threads ----------------------------------------------------------- */

static pthread_key_t thread_key;

/* Runs at thread exit.  Re-arming makes it run again after the destructors
 * of keys created later, which may still allocate. */
static void thread_dtor(void *arg)
{
	struct atp_thread *t = &atp_tls;
	(void)arg;
	if (t->dtor_rounds++ < 3) {
		pthread_setspecific(thread_key, t);
		return;
	}
	t->guard++;
	atp_thread_finish(t);
	t->guard--;
}

/* ---- init --------------------------------------------------------------- */

static void resolve(void)
{
	/* attached (dlopen'ed by `record -p`): we are not in the symbol
	 * search order, so the process's own allocator is the default one */
	void *next = g.attach ? RTLD_DEFAULT : RTLD_NEXT;
	static const struct atp_real boot = {ATR_CALLS(BOOT_)};
#define R(NAME, name, type, op, args, ret, params) g.real.name = (ret(*) params)dlsym(next, #name);
	ATR_CALLS(R)
#undef R
	g.real.usable_size = (size_t(*)(void *))dlsym(next, "malloc_usable_size");
	/* the other calls: what the libc lacks fails (boot_*, ENOSYS) */
#define XR(NAME, name, type, words, ret, params)                                                   \
	{                                                                                          \
		ret(*f_) params = (ret(*) params)dlsym(next, #name);                               \
		g.real.name = f_ ? f_ : boot_##name;                                               \
	}
	ATR_XCALLS(XR)
#undef XR
	if (g.attach) { /* the functions behind canonical PLT stubs, as below */
		void **x = (void **)&g.real + ATR_NCALLS + 1;
		for (size_t i = 0; i < ATR_NXCALLS; i++)
			if (g.attach_real[ATR_NCALLS + i])
				x[i] = g.attach_real[ATR_NCALLS + i];
		if (!g.attach_real[ATR_NCALLS] && g.attach_real[ATP_ATTACH_NREAL - 1])
			g.real.mmap = (void *(*)(void *, size_t, int, int, int,
						 off_t))g.attach_real[ATP_ATTACH_NREAL - 1];
	}
	/* anything missing keeps its boot version, which forwards to malloc */
	void **dst = (void **)&g.real, **src = (void **)&boot;
	for (size_t i = 0; i < ATR_NCALLS; i++) {
		/* record -p resolved dlsym's answer, a canonical PLT stub of the
		 * program, to the function behind it (docs/ATTACH.md) */
		if (g.attach && g.attach_real[i])
			dst[i] = g.attach_real[i];
		if (!dst[i])
			dst[i] = src[i];
	}
	void *libc_malloc = dlsym(next, "__libc_malloc");
	/* mimalloc exports __libc_malloc too (as its own malloc): glibc's
	 * chunk headers and heaps are read only if malloc is libc's */
	Dl_info di;
	g.glibc = libc_malloc && libc_malloc == (void *)g.real.malloc && dladdr(libc_malloc, &di) &&
		  di.dli_fname &&
		  (strstr(di.dli_fname, "/libc.so") || strstr(di.dli_fname, "/libc-"));
	if (g.glibc) {
		/* docs/ARENAS.md: the break before glibc's first sbrk, and
		 * whether heap_info can be read at ret & ~(64 MiB - 1) (not
		 * with glibc.malloc.hugetlb >= 2: heaps are then smaller) */
		g.brk0 = (uint64_t)(uintptr_t)g.real.sbrk(0);
		const char *tun = getenv("GLIBC_TUNABLES");
		const char *hp = tun ? strstr(tun, "glibc.malloc.hugetlb=") : NULL;
		g.arena_heaps =
		    sizeof(size_t) == 8 &&
		    (!hp || hp[21] == '0' || (hp[21] == '1' && (hp[22] == ':' || !hp[22])));
	}
}

void atp_init(void)
{
	int expected = ATP_UNINIT;
	if (!atomic_compare_exchange_strong(&g.state, &expected, ATP_INITIALIZING))
		return;
	struct atp_thread *t = &atp_tls;
	int saved = errno;
	t->guard++;
	resolve();
	int secure = getauxval(AT_SECURE) != 0;
	g.pid = getpid();
	g.quiet = env_flag("ALLOCTRACE_QUIET", 0);
	g.timing = env_flag("ALLOCTRACE_TIMING", 0);
	g.no_children = env_flag("ALLOCTRACE_NO_CHILDREN", 0);
	g.start_on = g.attach || env_flag("ALLOCTRACE_START", 1);
	g.stacks = env_flag("ALLOCTRACE_STACKS", 0);
	g.stack_depth = (uint32_t)env_u64("ALLOCTRACE_STACK_DEPTH", ATR_STACK_DEPTH_DEFAULT);
	atp_stacks_init();
	/* an attach: record's --sample, in alloctrace_attach_impl's settings */
	g.sample_rate = env_u64("ALLOCTRACE_SAMPLE", 0);
	atp_sample_init(g.sample_rate, env_u64("ALLOCTRACE_SAMPLE_SEED", 0));
	uint64_t kb = env_u64("ALLOCTRACE_BUFFER_KB", ATR_BLOCK_SIZE_DEFAULT >> 10);
	if (kb < (ATR_BLOCK_SIZE_MIN >> 10) || kb > (ATR_BLOCK_SIZE_MAX >> 10) || (kb & (kb - 1)))
		kb = ATR_BLOCK_SIZE_DEFAULT >> 10;
	g.block_size = (uint32_t)(kb << 10);
	g.zstd_level = env_zstd_level();
	long pg = sysconf(_SC_PAGESIZE);
	g.page = pg >= 4096 ? (uint64_t)pg : 4096;
	/* RESIDENT records (atp_resident.c): 0 turns them off */
	g.resident_min = env_u64("ALLOCTRACE_RESIDENT_MIN", ATP_RESIDENT_MIN_DEFAULT);
	g.resident_cmin = g.resident_min ? g.resident_min + sizeof(size_t) : UINT64_MAX;
	g.resident_budget =
	    env_percent_bp("ALLOCTRACE_RESIDENT_BUDGET", ATP_RESIDENT_BUDGET_DEFAULT);
	g.resident_wait = 10000 / g.resident_budget - 1;
	atp_encode_init();
	const char *d = env("ALLOCTRACE_DIR"), *f = env("ALLOCTRACE_FILE");
	if (!f)
		f = env("MTRACE_CTL_FILE");
	/* made absolute now: the program may chdir before the next block */
	if (g.attach) {
		/* alloctrace_attach_impl set g.dir and g.ticks_hint */
	} else if (d) {
		absolute(g.dir, d, sizeof g.dir);
	}
	if (f && !g.attach)
		absolute(g.file, f, sizeof g.file);
	g.clock = ATP_CLOCK_MONO;
#if defined(__aarch64__)
	g.clock = ATP_CLOCK_CNTVCT;
#else
	if (plat_hw_ticks_usable())
		g.clock = ATP_CLOCK_TSC;
#endif
	if (g.clock != ATP_CLOCK_MONO) {
		if (!g.attach)
			g.ticks_hint = env_u64("ALLOCTRACE_TICKS_PER_SEC", 0);
		if (!g.ticks_hint)
			g.ticks_hint =
			    plat_ticks_per_sec(2000000, 0); /* `record` passes a better value */
	} else {
		g.ticks_hint = 1000000000ull;
	}
	/* CPU records (atp_cpu_note): a clock read costs a system call (~2 us
	   on our VM), so only at gaps of at least ALLOCTRACE_CPU_GAP_US
	   (bench/replay/RESULTS.md, "Think time and the CPU clock"); 0: off */
	uint64_t gap_us = env_u64("ALLOCTRACE_CPU_GAP_US", ATP_CPU_GAP_US_DEFAULT);
	if (g.sample_rate)
		gap_us = 0; /* a sample's records are far apart: no think time there */
	if (gap_us > UINT32_MAX / 1000)
		gap_us = UINT32_MAX / 1000;
	g.cpu_gap_ns = (uint32_t)(gap_us * 1000);
	g.cpu_gap =
	    gap_us ? (uint64_t)((double)gap_us * 1e-6 * (double)g.ticks_hint) : (uint64_t)INT64_MAX;
	/* sampled durations (atp_timed): one call in time_every of a thread
	   is timed, for convert's think time; all with --timing, none in a
	   sampled trace (its records are far apart) */
	uint64_t every = env_u64("ALLOCTRACE_TIMING_SAMPLE", ATP_TIMING_SAMPLE_DEFAULT);
	if (g.timing || g.sample_rate)
		every = 0;
	g.time_every = every > UINT32_MAX ? UINT32_MAX : (uint32_t)every;
	g.timed_min = every && g.resident_min ? g.resident_min : UINT64_MAX;
	/* attached: record's settings hold it (record -p -o tcp://) */
	const char *col = env("ALLOCTRACE_COLLECTOR");
	if (col) {
		g.net = 1;
		if (atp_net_config(col, env_u64("ALLOCTRACE_NET_BUFFER_KB", 4096),
				   env_u64("ALLOCTRACE_NET_TIMEOUT_MS", 2000)) != 0) {
			atp_message("ALLOCTRACE_COLLECTOR", col,
				    "is not ADDR:PORT with a numeric address (not traced)", 0);
			secure = 1; /* nothing opened below */
		}
	}
	/* full blocks encoded by a helper thread (not for a collector's
	 * stream or an attached process: they encode in their threads) */
	g.offload = 0;
	if (!g.net && !g.attach) {
		/* off by default: it cuts the program threads' instructions
		 * but not their time (bench/RESULTS.md, "All of it together") */
		uint64_t o = env_u64("ALLOCTRACE_OFFLOAD", 0);
		g.offload = o <= 2 ? (int)o : 0; /* 2: the helper never encodes (tests) */
		/* ALLOCTRACE_ENCODE=later: full blocks stay raw in the file
		 * until `record` compacts it after the program (not for a
		 * collector, which needs frames, nor an attach) */
		const char *enc = env("ALLOCTRACE_ENCODE");
		g.encode_later = enc && !strcmp(enc, "later");
		g.later_max_env = env_u64("ALLOCTRACE_LATER_MAX", ATP_LATER_MAX_DEFAULT);
		if (g.encode_later)
			g.offload = 0;
	}
	g.open_status = g.start_on ? 0 : ATR_STATUS_STOPPED;
	int state = ATP_DISABLED;
	if (!secure && atp_open_trace() == 0) {
		pthread_key_create(&thread_key, thread_dtor);
		pthread_atfork(NULL, NULL, after_fork_child);
		if (g.no_children)
			strip_preload();
		state = ATP_READY;
	}
	atomic_store(&g.state, state);
	if (state == ATP_READY && g.start_on)
		g.recording = 1;
	t->guard--;
	errno = saved;
}

int atp_passthrough(struct atp_thread *t)
{
	if (t->guard) {
		/* re-entrant (e.g. a signal handler interrupted the tracer) */
		if (g.recording && g.hdr && t->guard < ATP_GUARD_INTERNAL)
			atomic_fetch_add_explicit((_Atomic uint64_t *)(g.hdr + ATR_H_UNTRACED), 1,
						  memory_order_relaxed);
		return 1;
	}
	if (atomic_load(&g.state) <= ATP_INITIALIZING)
		wait_ready();
	if (ATP_UNLIKELY(atomic_load_explicit(&g.failed, memory_order_relaxed)))
		atp_lost(1); /* the trace was cut short: count what it misses */
	return !g.recording;
}

/* Threads register for the exit hook when they get a staging block. */
void atp_thread_registered(struct atp_thread *t)
{
	pthread_setspecific(thread_key, t);
}

/* Were we dlopen'ed into a running process (`record -p`) rather than
 * preloaded?  Then the process's malloc is not ours and LD_PRELOAD does
 * not name us; init waits for alloctrace_attach_impl. */
static int loaded_late(void)
{
	Dl_info self, m;
	if (!dladdr((void *)atp_init, &self) || !self.dli_fname)
		return 0;
	void *pm = dlsym(RTLD_DEFAULT, "malloc");
	if (!pm || (dladdr(pm, &m) && m.dli_fbase == self.dli_fbase))
		return 0;
	const char *base = strrchr(self.dli_fname, '/');
	base = base ? base + 1 : self.dli_fname;
	const char *pre = getenv("LD_PRELOAD");
	return !pre || !*base || !strstr(pre, base);
}

__attribute__((constructor(101))) static void atp_preinit(void)
{
	if (atomic_load(&g.state) == ATP_UNINIT && loaded_late()) {
		g.deferred = 1;
		return;
	}
	atp_init();
	if (atomic_load(&g.state) == ATP_READY)
		atp_stacks_load();
}

/* The program is done: say so in the header, but keep recording; atexit
 * handlers and destructors that run after this one are traced too. */
__attribute__((destructor(101))) static void atp_fini(void)
{
	if (atomic_load(&g.state) != ATP_READY || !g.hdr)
		return;
	struct atp_thread *t = &atp_tls;
	t->guard++;
	atp_offload_drain();
	if (g.recording) {
		atp_write_meta(t, ATR_T_CONTROL, ATR_CTL_EXIT, NULL, 0);
		atp_write_brk(t, atp_now());
	}
	atr_put64(g.hdr + ATR_H_END_MONO, plat_mono_ns());
	atr_put64(g.hdr + ATR_H_END_TICKS, atp_now());
	atp_hdr_set_status(ATR_STATUS_CLEAN_EXIT);
	if (g.net) {
		static uint8_t *blocks[ATP_MAX_SLOTS + ATP_MAX_SPARE];
		atp_net_fini(blocks, atp_staging_blocks(blocks, ATP_MAX_SLOTS + ATP_MAX_SPARE));
	}
	t->guard--;
}
