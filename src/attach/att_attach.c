/* att_attach.c - `alloctrace record -p PID` (docs/ATTACH.md).
 *
 * 1. Stop one thread of the target (PTRACE_SEIZE + PTRACE_INTERRUPT) and
 *    make it call dlopen(liballoctrace.so, RTLD_NOW) and then
 *    alloctrace_attach_impl(dir, ticks, real, settings) (remote calls: registers set
 *    to the function and its arguments, strings on the stack below the red
 *    zone, return address 0, so the return is a SIGSEGV stop).  The other
 *    threads keep running meanwhile, so locks they hold get released.
 * 2. Stop every thread and point each module's GOT entries (JUMP_SLOT and
 *    GLOB_DAT) of the malloc family at the library's exports, remembering
 *    the old values; detach.  New modules are patched the same way when
 *    /proc/PID/maps shows them.
 * 3. At the end stop every thread again, write back the old values (only
 *    where our value is still there), call alloctrace_stop_impl, detach.
 * Memory is read and written through /proc/PID/mem, which also writes
 * read-only (RELRO) pages.
 */
#define _GNU_SOURCE
#include "attach/att_attach.h"
#include "atr_calls.h"
#include "plat_clock.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#if !defined(__x86_64__)

int att_attach(const struct att_opts *o, char *errbuf, size_t errlen)
{
	(void)o;
	snprintf(errbuf, errlen,
		 "attaching to a running process is not supported on this architecture "
		 "(x86-64 only)");
	return ATR_E_UNSUPPORTED;
}

#else

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The traced functions in ATR_CALLS order, then the other calls in
 * ATR_XCALLS order, then mmap64 (an alias of mmap, its own GOT entries):
 * alloctrace_attach_impl hands back the target's real functions in the
 * same order. */
#define NFUNCS					       ((int)(ATR_NCALLS + ATR_NXCALLS + 1))
#define FUNC_(NAME, name, type, op, args, ret, params) #name,
#define XFUNC_(NAME, name, type, words, ret, params)   #name,
static const char *const funcs[NFUNCS] = {ATR_CALLS(FUNC_) ATR_XCALLS(XFUNC_) "mmap64"};
#undef FUNC_
#undef XFUNC_

#define CALL_TIMEOUT_MS 10000
#define MAX_TASKS	4096

static volatile sig_atomic_t at_stop;
/* /proc/PID, or /proc/PID/task/TID of a live thread when the main thread
 * has exited (its maps, mem and map_files are empty then) */
static char at_proc[64];

static void at_on_signal(int sig)
{
	(void)sig;
	at_stop = 1;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* ---- target memory ------------------------------------------------------ */

struct target {
	pid_t pid;
	int mem; /* /proc/PID/mem */
	struct task {
		pid_t tid;
		int sig; /* signal to deliver at detach */
	} * tasks;
	size_t ntasks;
	const struct att_opts *o;
	char *eb; /* the caller's errbuf: the failure so far (see fail()) */
	size_t el;
	int err; /* its atr_err code */
};

/* Record a failure: message into errbuf, code kept.  A message already
 * there is the cause found by a deeper step ("the call in the target
 * faulted ..."): it follows this one after ": ", and its code stays. */
static int fail(struct target *t, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(struct target *t, int code, const char *fmt, ...)
{
	char m[1024], cause[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m, sizeof(m), fmt, ap);
	va_end(ap);
	snprintf(cause, sizeof(cause), "%s", t->eb);
	if (cause[0])
		snprintf(t->eb, t->el, "%s: %s", m, cause);
	else
		snprintf(t->eb, t->el, "%s", m);
	if (!t->err)
		t->err = code;
	return t->err;
}

/* Progress and warnings, to the caller's note function. */
static void note(struct target *t, enum att_note kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void note(struct target *t, enum att_note kind, const char *fmt, ...)
{
	char m[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m, sizeof(m), fmt, ap);
	va_end(ap);
	if (t->o->note)
		t->o->note(t->o->note_arg, kind, m);
}

/* A failure the attach goes on past (or that ends it without harm): its
 * message becomes an ATT_ERROR note and errbuf is clear again. */
static void note_failure(struct target *t)
{
	if (t->eb[0])
		note(t, ATT_ERROR, "%s", t->eb);
	t->eb[0] = 0;
	t->err = 0;
}

static int mem_read(struct target *t, uint64_t addr, void *buf, size_t n)
{
	ssize_t r = pread(t->mem, buf, n, (off_t)addr);
	return r == (ssize_t)n ? 0 : -1;
}

static int mem_write(struct target *t, uint64_t addr, const void *buf, size_t n)
{
	ssize_t r = pwrite(t->mem, buf, n, (off_t)addr);
	return r == (ssize_t)n ? 0 : -1;
}

/* ---- modules (/proc/PID/maps) -------------------------------------------- */

struct module {
	char path[PATH_MAX];
	uint64_t lo, hi;   /* lowest and highest mapped address */
	uint64_t base;	   /* start of the offset-0 mapping (0: none) */
	uint64_t base_end; /* its end, for /proc/PID/map_files */
	uint64_t dev, ino;
	int done; /* GOT patched */
};

static int parse_maps(pid_t pid, struct module **out, size_t *nout)
{
	char p[96];
	(void)pid;
	snprintf(p, sizeof(p), "%s/maps", at_proc);
	FILE *f = fopen(p, "re");
	if (!f)
		return -1;
	struct module *m = NULL;
	size_t n = 0, cap = 0;
	char line[PATH_MAX + 256];
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off, ino;
		unsigned maj, mnr;
		char perms[8];
		int pos = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &lo, &hi, perms, &off, &maj,
			   &mnr, &ino, &pos) < 7 ||
		    ino == 0)
			continue;
		char *path = line + pos;
		path[strcspn(path, "\n")] = 0;
		if (path[0] != '/' || strstr(path, " (deleted)"))
			continue;
		uint64_t dev = ((uint64_t)maj << 32) | mnr;
		size_t i;
		for (i = 0; i < n; i++)
			if (m[i].ino == ino && m[i].dev == dev && !strcmp(m[i].path, path))
				break;
		if (i == n) {
			if (n == cap) {
				cap = cap ? 2 * cap : 32;
				struct module *nm = realloc(m, cap * sizeof(*m));
				if (!nm) {
					free(m);
					fclose(f);
					return -1;
				}
				m = nm;
			}
			memset(&m[n], 0, sizeof(m[n]));
			snprintf(m[n].path, sizeof(m[n].path), "%s", path);
			m[n].lo = lo;
			m[n].dev = dev;
			m[n].ino = ino;
			n++;
		}
		if (lo < m[i].lo)
			m[i].lo = lo;
		if (hi > m[i].hi)
			m[i].hi = hi;
		if (off == 0 && !m[i].base) {
			m[i].base = lo;
			m[i].base_end = hi;
		}
	}
	fclose(f);
	*out = m;
	*nout = n;
	return 0;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* ---- ELF files ----------------------------------------------------------- */

struct elf {
	uint8_t *data;
	size_t size;
	const Elf64_Ehdr *eh;
	const Elf64_Shdr *sh;
	const Elf64_Sym *dynsym;
	size_t ndynsym;
	const char *dynstr;
	size_t dynstr_size;
	const uint16_t *versym;
	unsigned dynsym_idx;
};

static void elf_close(struct elf *e)
{
	if (e->data)
		munmap(e->data, e->size);
	memset(e, 0, sizeof(*e));
}

/* Map the module's file: the very file the target mapped if
 * /proc/PID/map_files allows it, else by path (as seen by the target). */
static int elf_open(struct elf *e, pid_t pid, const struct module *m)
{
	memset(e, 0, sizeof(*e));
	char p[PATH_MAX + 128];
	int fd = -1;
	(void)pid;
	if (m->base) {
		snprintf(p, sizeof(p), "%s/map_files/%" PRIx64 "-%" PRIx64, at_proc, m->base,
			 m->base_end);
		fd = open(p, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0) {
		snprintf(p, sizeof(p), "%s/root%s", at_proc, m->path);
		fd = open(p, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0)
		fd = open(m->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct stat st;
	if (fstat(fd, &st) < 0 || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
		close(fd);
		return -1;
	}
	void *d = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (d == MAP_FAILED)
		return -1;
	e->data = d;
	e->size = (size_t)st.st_size;
	e->eh = d;
	const Elf64_Ehdr *h = e->eh;
	if (memcmp(h->e_ident, ELFMAG, SELFMAG) || h->e_ident[EI_CLASS] != ELFCLASS64 ||
	    h->e_machine != EM_X86_64 || h->e_shentsize != sizeof(Elf64_Shdr) ||
	    h->e_shoff > e->size ||
	    (uint64_t)h->e_shnum * sizeof(Elf64_Shdr) > e->size - h->e_shoff ||
	    h->e_phoff > e->size ||
	    (uint64_t)h->e_phnum * sizeof(Elf64_Phdr) > e->size - h->e_phoff)
		goto bad;
	e->sh = (const Elf64_Shdr *)(e->data + h->e_shoff);
	for (unsigned i = 0; i < h->e_shnum; i++) {
		const Elf64_Shdr *s = &e->sh[i];
		if (s->sh_type != SHT_DYNSYM || s->sh_link >= h->e_shnum)
			continue;
		const Elf64_Shdr *str = &e->sh[s->sh_link];
		if (s->sh_offset > e->size || s->sh_size > e->size - s->sh_offset ||
		    str->sh_offset > e->size || str->sh_size > e->size - str->sh_offset)
			goto bad;
		e->dynsym = (const Elf64_Sym *)(e->data + s->sh_offset);
		e->ndynsym = s->sh_size / sizeof(Elf64_Sym);
		e->dynstr = (const char *)e->data + str->sh_offset;
		e->dynstr_size = str->sh_size;
		e->dynsym_idx = i;
	}
	for (unsigned i = 0; i < h->e_shnum; i++) {
		const Elf64_Shdr *s = &e->sh[i];
		if (s->sh_type == SHT_GNU_versym && s->sh_offset <= e->size &&
		    s->sh_size <= e->size - s->sh_offset && s->sh_size / 2 >= e->ndynsym)
			e->versym = (const uint16_t *)(e->data + s->sh_offset);
	}
	return 0;
bad:
	elf_close(e);
	return -1;
}

static const char *sym_name(const struct elf *e, const Elf64_Sym *s)
{
	if (s->st_name >= e->dynstr_size)
		return "";
	const char *n = e->dynstr + s->st_name;
	return memchr(n, 0, e->dynstr_size - s->st_name) ? n : "";
}

/* Load bias: where the module's vaddr 0 is in the target. */
static int elf_bias(const struct elf *e, const struct module *m, uint64_t *bias)
{
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(e->data + e->eh->e_phoff);
	for (unsigned i = 0; i < e->eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && ph[i].p_offset == 0 && m->base) {
			*bias = m->base - (ph[i].p_vaddr & ~(uint64_t)4095);
			return 0;
		}
	return -1;
}

/* Value of a defined dynamic symbol (the default version first), 0 if none. */
static uint64_t elf_sym(const struct elf *e, const char *name)
{
	uint64_t any = 0;
	for (size_t i = 1; i < e->ndynsym; i++) {
		const Elf64_Sym *s = &e->dynsym[i];
		if (s->st_shndx == SHN_UNDEF || !s->st_value || strcmp(sym_name(e, s), name))
			continue;
		if (!e->versym || !(e->versym[i] & 0x8000))
			return s->st_value;
		if (!any)
			any = s->st_value;
	}
	return any;
}

/* ---- ptrace ---------------------------------------------------------------- */

static int explain_eperm(struct target *t, pid_t pid)
{
	char b[64];
	int scope = -1;
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
	if (f) {
		if (fscanf(f, "%d", &scope) != 1)
			scope = -1;
		fclose(f);
	}
	snprintf(b, sizeof(b), "/proc/%d/status", (int)pid);
	long tracer = 0;
	f = fopen(b, "re");
	if (f) {
		char line[256];
		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, "TracerPid:", 10))
				tracer = strtol(line + 10, NULL, 10);
		fclose(f);
	}
	if (tracer > 0)
		return fail(t, ATR_E_PERM,
			    "process %d is already being traced by process %ld (a debugger?)",
			    (int)pid, tracer);
	if (scope >= 1)
		return fail(t, ATR_E_PERM,
			    "ptrace is not permitted: kernel.yama.ptrace_scope = %d (1: only "
			    "descendants, 2: only with CAP_SYS_PTRACE, 3: never).  Run as root "
			    "(scope 1 or 2), or `sysctl kernel.yama.ptrace_scope=0`; see "
			    "docs/ATTACH.md",
			    scope);
	if (geteuid() == 0)
		return fail(t, ATR_E_PERM,
			    "ptrace is not permitted on process %d even as root: no CAP_SYS_PTRACE "
			    "(a container?), a security module, or a process outside this PID "
			    "namespace",
			    (int)pid);
	return fail(t, ATR_E_PERM,
		    "ptrace is not permitted: process %d belongs to another user or is not "
		    "dumpable; run as its user or as root (CAP_SYS_PTRACE)",
		    (int)pid);
}

/* Wait for tid's stop after PTRACE_INTERRUPT.  0 stopped, -1 gone. */
static int wait_stopped(struct task *k)
{
	for (;;) {
		int st;
		pid_t r = waitpid(k->tid, &st, __WALL);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (WIFEXITED(st) || WIFSIGNALED(st))
			return -1;
		if (!WIFSTOPPED(st))
			continue;
		int sig = WSTOPSIG(st);
		if ((st >> 16) == PTRACE_EVENT_STOP || sig == SIGTRAP)
			return 0;
		/* a signal-delivery-stop: keep the signal for the detach */
		k->sig = sig;
		return 0;
	}
}

static int task_known(const struct target *t, pid_t tid)
{
	for (size_t i = 0; i < t->ntasks; i++)
		if (t->tasks[i].tid == tid)
			return 1;
	return 0;
}

/* A thread that exited (a main thread after pthread_exit stays a zombie
 * while others run): it never stops, so it is left alone. */
static int task_dead(pid_t pid, pid_t tid)
{
	char p[96], b[512];
	snprintf(p, sizeof(p), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 1;
	ssize_t n = read(fd, b, sizeof(b) - 1);
	close(fd);
	if (n <= 0)
		return 1;
	b[n] = 0;
	const char *rp = strrchr(b, ')'); /* the name may hold anything */
	return !rp || rp[1] != ' ' || rp[2] == 'Z' || rp[2] == 'X' || rp[2] == 'x';
}

/* Has the process a live thread?  (An exited process stays a zombie
 * until its parent reaps it.) */
static int proc_alive(pid_t pid)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/task", (int)pid);
	DIR *d = opendir(p);
	if (!d)
		return 0;
	struct dirent *de;
	int alive = 0;
	while (!alive && (de = readdir(d)) != NULL)
		alive = atoi(de->d_name) > 0 && !task_dead(pid, (pid_t)atoi(de->d_name));
	closedir(d);
	return alive;
}

/* Seize and stop one thread.  1 done, 0 gone, -1 not permitted. */
static int stop_task(struct target *t, pid_t tid)
{
	if (task_dead(t->pid, tid))
		return 0;
	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) < 0) {
		if (errno == ESRCH)
			return 0;
		if (errno == EPERM)
			explain_eperm(t, t->pid);
		else
			fail(t, ATR_E_PERM, "PTRACE_SEIZE %d: %s", (int)tid, strerror(errno));
		return -1;
	}
	struct task k = {tid, 0};
	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) < 0 || wait_stopped(&k) < 0) {
		ptrace(PTRACE_DETACH, tid, NULL, NULL);
		return 0;
	}
	t->tasks[t->ntasks++] = k;
	return 1;
}

static void detach_all(struct target *t)
{
	for (size_t i = 0; i < t->ntasks; i++)
		ptrace(PTRACE_DETACH, t->tasks[i].tid, NULL, (void *)(uintptr_t)t->tasks[i].sig);
	t->ntasks = 0;
}

/* Stop every thread of the process (threads started meanwhile too). */
static int stop_world(struct target *t)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/task", (int)t->pid);
	for (int more = 1; more;) {
		more = 0;
		DIR *d = opendir(p);
		if (!d) {
			fail(t, ATR_E_PROCESS, "process %d is gone", (int)t->pid);
			return -1;
		}
		struct dirent *de;
		while ((de = readdir(d)) != NULL) {
			pid_t tid = (pid_t)atoi(de->d_name);
			if (tid <= 0 || task_known(t, tid))
				continue;
			if (t->ntasks == MAX_TASKS) {
				closedir(d);
				fail(t, ATR_E_UNSUPPORTED, "more than %d threads", MAX_TASKS);
				return -1;
			}
			int r = stop_task(t, tid);
			if (r < 0) {
				closedir(d);
				return -1;
			}
			more |= r;
		}
		closedir(d);
	}
	if (!t->ntasks) {
		fail(t, ATR_E_PROCESS, "process %d has no threads left", (int)t->pid);
		return -1;
	}
	return 0;
}

/* Call fn(a0, a1, a2, a3) in stopped thread k, on its stack 8 KiB below
 * where it stopped; its registers are restored afterwards. */
static int remote_call(struct target *t, struct task *k, uint64_t fn, uint64_t a0, uint64_t a1,
		       uint64_t a2, uint64_t a3, uint64_t *ret)
{
	struct user_regs_struct saved, r;
	if (ptrace(PTRACE_GETREGS, k->tid, NULL, &saved) < 0)
		return -1;
	/* the called code uses SSE/AVX registers too: save the whole extended
	 * state (x87, SSE, AVX, AVX-512), or at least x87 + SSE */
	static _Alignas(64) uint8_t xstate[16384];
	struct user_fpregs_struct fpregs;
	struct iovec xv = {xstate, sizeof(xstate)};
	int have_x = ptrace(PTRACE_GETREGSET, k->tid, (void *)(uintptr_t)NT_X86_XSTATE, &xv) == 0;
	if (!have_x && ptrace(PTRACE_GETFPREGS, k->tid, NULL, &fpregs) < 0)
		return -1;
	r = saved;
	uint64_t sp = ((saved.rsp - 8192) & ~(uint64_t)15) - 8;
	uint64_t zero = 0;
	if (mem_write(t, sp, &zero, 8) < 0)
		return -1;
	r.rsp = sp;
	r.rip = fn;
	r.rdi = a0;
	r.rsi = a1;
	r.rdx = a2;
	r.rcx = a3;
	r.rax = 0;
	r.orig_rax = (uint64_t)-1; /* no syscall restart */
	if (ptrace(PTRACE_SETREGS, k->tid, NULL, &r) < 0)
		return -1;
	int rc = -1, sig = 0;
	if (ptrace(PTRACE_CONT, k->tid, NULL, NULL) < 0)
		goto out;
	for (int waited = 0;;) {
		int st;
		pid_t w = waitpid(k->tid, &st, __WALL | WNOHANG);
		if (w < 0 && errno != EINTR)
			return -1; /* gone */
		if (w <= 0) {
			if (waited++ > CALL_TIMEOUT_MS) {
				fail(t, ATR_E_PROCESS,
				     "the call in the target did not return within %d s (a lock "
				     "held by a stopped thread?)",
				     CALL_TIMEOUT_MS / 1000);
				ptrace(PTRACE_INTERRUPT, k->tid, NULL, NULL);
				struct task tmp = *k;
				if (wait_stopped(&tmp) < 0)
					return -1;
				goto out;
			}
			sleep_ms(1);
			continue;
		}
		if (WIFEXITED(st) || WIFSIGNALED(st))
			return -1;
		if (!WIFSTOPPED(st))
			continue;
		int s = WSTOPSIG(st);
		if ((st >> 16) == PTRACE_EVENT_STOP || s == SIGTRAP) {
			ptrace(PTRACE_CONT, k->tid, NULL, NULL);
			continue;
		}
		if (s == SIGSEGV || s == SIGBUS || s == SIGILL || s == SIGFPE) {
			struct user_regs_struct e;
			if (ptrace(PTRACE_GETREGS, k->tid, NULL, &e) < 0)
				return -1;
			if (s == SIGSEGV && e.rip == 0) {
				*ret = e.rax;
				rc = 0;
			} else {
				fail(t, ATR_E_PROCESS,
				     "the call in the target faulted (signal %d at %#llx)", s,
				     (unsigned long long)e.rip);
			}
			break;
		}
		/* an asynchronous signal: deliver it after we are done */
		sig = s;
		ptrace(PTRACE_CONT, k->tid, NULL, NULL);
	}
out:
	if (sig)
		k->sig = sig;
	if (have_x ? ptrace(PTRACE_SETREGSET, k->tid, (void *)(uintptr_t)NT_X86_XSTATE, &xv) < 0
		   : ptrace(PTRACE_SETFPREGS, k->tid, NULL, &fpregs) < 0)
		rc = -1;
	if (ptrace(PTRACE_SETREGS, k->tid, NULL, &saved) < 0)
		return -1;
	return rc;
}

/* Copy a buffer onto the thread's stack, far below its frame (and below
 * the 8 KiB that remote_call skips); returns its address. */
static int push_data(struct target *t, struct task *k, uint64_t off, const void *d, size_t n,
		     uint64_t *addr)
{
	struct user_regs_struct r;
	if (ptrace(PTRACE_GETREGS, k->tid, NULL, &r) < 0)
		return -1;
	*addr = (r.rsp - 128 - off - n) & ~(uint64_t)15;
	return mem_write(t, *addr, d, n);
}

static struct module *find_module(struct module *m, size_t n, const char *const *names)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; names[j]; j++)
			if (!strncmp(base_name(m[i].path), names[j], strlen(names[j])) && m[i].base)
				return &m[i];
	return NULL;
}

/* Address of name in module m of the target, 0 if none. */
static uint64_t target_sym(pid_t pid, const struct module *m, const char *name)
{
	struct elf e;
	uint64_t bias, v = 0;
	if (elf_open(&e, pid, m) < 0)
		return 0;
	if (elf_bias(&e, m, &bias) == 0 && (v = elf_sym(&e, name)) != 0)
		v += bias;
	elf_close(&e);
	return v;
}

/* ---- GOT patching ---------------------------------------------------------- */

struct slot {
	uint64_t addr, orig, ours;
};

/* A GOT entry left alone: bound to something else than the allocator our
 * hooks call (reported: such calls are not traced). */
struct skip {
	char module[64];
	int f;
	uint64_t cur;
};

struct patcher {
	struct target *t;
	struct skip skips[16];
	size_t nskips;
	uint64_t real[NFUNCS], ours[NFUNCS];
	/* the program's canonical PLT entry of a function (0: none): what
	 * dlsym and every GLOB_DAT find; real[] is the function behind it */
	uint64_t stub[NFUNCS];
	uint64_t self_dev, self_ino;
	struct slot *slots;
	size_t nslots, cap;
	size_t modules, skipped;
	struct module *mods; /* seen so far */
	size_t nmods;
};

/* Call fn for every JUMP_SLOT and GLOB_DAT relocation of e that binds one
 * of the traced functions (its index f); stops at fn's first non-zero. */
typedef int (*reloc_fn)(void *ctx, const struct elf *e, const Elf64_Rela *r, uint32_t type,
			const Elf64_Sym *sym, int f);

static int each_alloc_reloc(const struct elf *e, reloc_fn fn, void *ctx)
{
	for (unsigned i = 0; i < e->eh->e_shnum; i++) {
		const Elf64_Shdr *s = &e->sh[i];
		if (s->sh_type != SHT_RELA || s->sh_link != e->dynsym_idx ||
		    s->sh_offset > e->size || s->sh_size > e->size - s->sh_offset)
			continue;
		const Elf64_Rela *ra = (const Elf64_Rela *)(e->data + s->sh_offset);
		size_t nr = s->sh_size / sizeof(Elf64_Rela);
		for (size_t j = 0; j < nr; j++) {
			uint32_t type = (uint32_t)ELF64_R_TYPE(ra[j].r_info);
			size_t si = ELF64_R_SYM(ra[j].r_info);
			if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) || !si ||
			    si >= e->ndynsym)
				continue;
			const char *name = sym_name(e, &e->dynsym[si]);
			for (int f = 0; f < NFUNCS; f++)
				if (!strcmp(name, funcs[f])) {
					int r = fn(ctx, e, &ra[j], type, &e->dynsym[si], f);
					if (r)
						return r;
					break;
				}
		}
	}
	return 0;
}

struct patch_ctx {
	struct patcher *pt;
	struct module *m;
	uint64_t bias;
	int any, unrelocated;
};

static int patch_reloc(void *ctx, const struct elf *e, const Elf64_Rela *r, uint32_t type,
		       const Elf64_Sym *sym, int f)
{
	struct patch_ctx *c = ctx;
	struct patcher *pt = c->pt;
	const struct module *m = c->m;
	uint64_t addr = c->bias + r->r_offset, cur;
	(void)e;
	(void)sym;
	if (mem_read(pt->t, addr, &cur, 8) < 0)
		return 0;
	if (cur == pt->ours[f])
		return 0; /* done in an earlier scan */
	if (cur < m->hi - m->lo && cur != pt->real[f]) {
		/* not relocated yet: a dlopen in progress; retry */
		c->unrelocated = 1;
		return 0;
	}
	/* bound to the allocator our hooks call, to the program's canonical
	 * PLT entry (which leads there too), or not yet bound (lazy binding:
	 * the module's own PLT stub) */
	int lazy = type == R_X86_64_JUMP_SLOT && cur >= m->lo && cur < m->hi;
	if (cur != pt->real[f] && !lazy && !(pt->stub[f] && cur == pt->stub[f])) {
		pt->skipped++;
		if (pt->nskips < sizeof(pt->skips) / sizeof(*pt->skips)) {
			struct skip *k = &pt->skips[pt->nskips++];
			const char *mn = base_name(m->path);
			size_t ml = strlen(mn);
			if (ml >= sizeof(k->module))
				ml = sizeof(k->module) - 1; /* cut */
			memcpy(k->module, mn, ml);
			k->module[ml] = 0;
			k->f = f;
			k->cur = cur;
		}
		return 0;
	}
	if (pt->nslots == pt->cap) {
		size_t nc = pt->cap ? 2 * pt->cap : 64;
		struct slot *ns = realloc(pt->slots, nc * sizeof(*ns));
		if (!ns)
			return -1;
		pt->slots = ns;
		pt->cap = nc;
	}
	if (mem_write(pt->t, addr, &pt->ours[f], 8) < 0) {
		pt->skipped++;
		return 0;
	}
	pt->slots[pt->nslots++] = (struct slot){addr, cur, pt->ours[f]};
	c->any = 1;
	return 0;
}

static int patch_module(struct patcher *pt, struct module *m)
{
	struct elf e;
	struct patch_ctx c = {.pt = pt, .m = m};
	m->done = 1;
	if (m->dev == pt->self_dev && m->ino == pt->self_ino)
		return 0;
	if (elf_open(&e, pt->t->pid, m) < 0)
		return 0; /* not an ELF file we can read (data, fonts...) */
	if (!e.dynsym || elf_bias(&e, m, &c.bias) < 0) {
		elf_close(&e);
		return 0;
	}
	int rc = each_alloc_reloc(&e, patch_reloc, &c);
	pt->modules += c.any;
	if (c.unrelocated)
		m->done = 0;
	elf_close(&e);
	return rc < 0 ? -1 : 0;
}

/* ---- canonical PLT entries ---------------------------------------------------- */

struct canon_ctx {
	struct patcher *pt;
	const struct module *m, *libc;
	uint64_t bias;
};

/* A JUMP_SLOT whose undefined symbol has a value: the PLT stub at that
 * value is the function's official address in the whole process. */
static int canon_reloc(void *ctx, const struct elf *e, const Elf64_Rela *r, uint32_t type,
		       const Elf64_Sym *sym, int f)
{
	struct canon_ctx *c = ctx;
	struct patcher *pt = c->pt;
	uint64_t got;
	if (type != R_X86_64_JUMP_SLOT || sym->st_shndx != SHN_UNDEF || !sym->st_value ||
	    pt->stub[f] || mem_read(pt->t, c->bias + r->r_offset, &got, 8) < 0)
		return 0;
	/* The GOT entry behind the stub holds the function a PLT lookup
	 * found, which skips the program's own undefined symbol: the real
	 * one.  Not called yet (lazy binding: it points back into the
	 * program's PLT): take libc's, what that lookup would find without
	 * an allocator preloaded. */
	if (got >= c->m->lo && got < c->m->hi)
		got = c->libc ? target_sym(pt->t->pid, c->libc, funcs[f]) : 0;
	(void)e;
	if (got) {
		pt->stub[f] = c->bias + sym->st_value;
		pt->real[f] = got;
	}
	return 0;
}

/* A non-PIE program that takes the address of a malloc-family function
 * gets a canonical PLT entry for it (docs/ATTACH.md): dlsym, and every
 * GLOB_DAT in the process, find the program's stub, which jumps through
 * the program's GOT.  Hooks calling the stub would call themselves once
 * that GOT entry is redirected, so the tracer is handed the function
 * behind the stub instead (pt->real[f], passed to alloctrace_attach_impl)
 * and the entries that hold the stub are redirected as well. */
static void find_canonical(struct patcher *pt, const struct module *mods, size_t n,
			   const struct module *libc)
{
	for (size_t i = 0; i < n; i++) {
		struct elf e;
		struct canon_ctx c = {.pt = pt, .m = &mods[i], .libc = libc};
		if (elf_open(&e, pt->t->pid, &mods[i]) < 0)
			continue;
		/* only an executable (ET_EXEC) has them: position-independent
		 * code takes addresses through the GOT */
		if (e.dynsym && e.eh->e_type == ET_EXEC && elf_bias(&e, &mods[i], &c.bias) == 0)
			each_alloc_reloc(&e, canon_reloc, &c);
		elf_close(&e);
	}
}

static const char *module_of(const struct patcher *pt, uint64_t a)
{
	for (size_t i = 0; i < pt->nmods; i++)
		if (a >= pt->mods[i].lo && a < pt->mods[i].hi) {
			const char *b = strrchr(pt->mods[i].path, '/');
			return b ? b + 1 : pt->mods[i].path;
		}
	return "?";
}

/* Say which calls are not traced and why (docs/ATTACH.md, "What is not
 * redirected").  The usual cause: a non-PIE program that takes the
 * address of malloc or free gets a "canonical PLT" entry; the dynamic
 * linker then resolves every module's malloc to that stub, dlsym finds it
 * first, and our hooks call it: the program's own GOT entry holds libc's
 * malloc and cannot be redirected to hooks that would call back through
 * it. */
static void report_skips(const struct patcher *pt)
{
	for (size_t i = 0; i < pt->nskips; i++) {
		const struct skip *k = &pt->skips[i];
		note(pt->t, ATT_WARN,
		     "%s's %s not redirected: it is bound to 0x%llx (%s), the tracer calls 0x%llx "
		     "(%s); calls through it are NOT traced",
		     k->module, funcs[k->f], (unsigned long long)k->cur, module_of(pt, k->cur),
		     (unsigned long long)pt->real[k->f], module_of(pt, pt->real[k->f]));
	}
	if (pt->nskips)
		note(pt->t, ATT_WARN,
		     "the trace misses those calls; record the program from its start "
		     "(LD_PRELOAD) to see them (docs/ATTACH.md)");
}

/* Name the functions reached past the program's canonical PLT entries:
 * older versions could not trace them (docs/ATTACH.md). */
static void report_canonical(const struct patcher *pt)
{
	char names[256] = "";
	const char *prog = NULL, *lib = NULL;
	for (int f = 0; f < NFUNCS; f++)
		if (pt->stub[f]) {
			size_t l = strlen(names);
			snprintf(names + l, sizeof(names) - l, "%s%s", l ? ", " : "", funcs[f]);
			prog = module_of(pt, pt->stub[f]);
			lib = module_of(pt, pt->real[f]);
		}
	if (prog)
		note(pt->t, ATT_INFO,
		     "%s takes the address of %s (canonical PLT entries): the tracer calls %s's "
		     "functions behind them; calls through them are traced",
		     prog, names, lib);
}

static int same_module(const struct module *a, const struct module *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->base == b->base &&
	       !strcmp(a->path, b->path);
}

/* Patch modules of the current maps not patched before.  With the world
 * running; stops it only if there is something new.  1 if anything new. */
static int patch_new(struct patcher *pt, int world_stopped)
{
	struct module *m;
	size_t n;
	if (parse_maps(pt->t->pid, &m, &n) < 0)
		return -1;
	int fresh = 0;
	for (size_t i = 0; i < n; i++) {
		m[i].done = 0;
		for (size_t j = 0; j < pt->nmods; j++)
			if (same_module(&m[i], &pt->mods[j]))
				m[i].done = 1;
		fresh |= !m[i].done;
	}
	if (!fresh) {
		free(m);
		return 0;
	}
	if (!world_stopped && stop_world(pt->t) < 0) {
		free(m);
		return -1;
	}
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++)
		if (!m[i].done)
			rc = patch_module(pt, &m[i]);
	if (!world_stopped)
		detach_all(pt->t);
	/* modules still being loaded (done == 0) stay unseen: next scan */
	size_t keep = 0;
	for (size_t i = 0; i < n; i++)
		if (m[i].done)
			m[keep++] = m[i];
	free(pt->mods);
	pt->mods = m;
	pt->nmods = keep;
	return rc < 0 ? -1 : 1;
}

static size_t restore_all(struct patcher *pt)
{
	size_t n = 0;
	for (size_t i = 0; i < pt->nslots; i++) {
		uint64_t cur;
		const struct slot *s = &pt->slots[i];
		/* someone else (lazy binding) may have rewritten it: leave that */
		if (mem_read(pt->t, s->addr, &cur, 8) == 0 && cur == s->ours &&
		    mem_write(pt->t, s->addr, &s->orig, 8) == 0)
			n++;
	}
	return n;
}

/* ---- safe point ------------------------------------------------------------ */

/* Can thread k run dlopen now?  Not while it is inside the dynamic loader,
 * nor inside libc unless it is blocked in a syscall that is no part of the
 * allocator's work: a single-threaded glibc malloc takes no lock, so
 * calling into it while it is half way through an operation corrupts the
 * heap.  (A thread in a signal handler that interrupted malloc is not
 * detected.) */
static int at_safe_point(struct task *k, const struct module *libc, const struct module *ldso)
{
	struct user_regs_struct r;
	if (ptrace(PTRACE_GETREGS, k->tid, NULL, &r) < 0)
		return 0;
	if (ldso && r.rip >= ldso->lo && r.rip < ldso->hi)
		return 0;
	if (libc && r.rip >= libc->lo && r.rip < libc->hi) {
		long nr = (long)r.orig_rax;
		return nr >= 0 && nr != SYS_mmap && nr != SYS_munmap && nr != SYS_mprotect &&
		       nr != SYS_brk && nr != SYS_mremap && nr != SYS_madvise;
	}
	return 1;
}

/* Let the stopped thread k run on in short steps until it stops at a safe
 * point; 0, or -1 (gone or never safe: nothing was done). */
static int reach_safe_point(struct target *t, struct task *k, const struct module *libc,
			    const struct module *ldso)
{
	for (int i = 0; i < 3000; i++) {
		if (at_safe_point(k, libc, ldso))
			return 0;
		/* a signal held from a signal-delivery-stop goes now: only such a
		 * stop can pass it on at the detach */
		int sig = k->sig;
		k->sig = 0;
		if (ptrace(PTRACE_CONT, k->tid, NULL, (void *)(uintptr_t)sig) < 0)
			return -1;
		struct timespec ts = {0, 100000 + (long)(i % 7) * 150000};
		nanosleep(&ts, NULL);
		if (ptrace(PTRACE_INTERRUPT, k->tid, NULL, NULL) < 0 || wait_stopped(k) < 0)
			return -1;
	}
	fail(t, ATR_E_PROCESS,
	     "thread %d never stopped outside the allocator and the loader in 3000 tries; nothing "
	     "was changed",
	     (int)k->tid);
	return -1;
}

/* ---- the command ------------------------------------------------------------ */

static int read_str(struct target *t, uint64_t addr, char *buf, size_t n)
{
	buf[0] = 0;
	for (size_t i = 0; i + 1 < n; i++) {
		if (mem_read(t, addr + i, buf + i, 1) < 0)
			return -1;
		if (!buf[i])
			return 0;
	}
	buf[n - 1] = 0;
	return 0;
}

/* With the GOT restored and every thread stopped: let all threads but one
 * go, bring that one to a safe point and call alloctrace_stop_impl there;
 * detach it too. */
static int stop_recording(struct target *t, struct patcher *pt, uint64_t stop_at)
{
	static const char *const libc_names[] = {"libc.so", "libc-", NULL};
	static const char *const ld_names[] = {"ld-linux", "ld-", NULL};
	for (size_t i = 1; i < t->ntasks; i++)
		ptrace(PTRACE_DETACH, t->tasks[i].tid, NULL, (void *)(uintptr_t)t->tasks[i].sig);
	t->ntasks = 1;
	uint64_t ret = 0;
	int rc = -1;
	const struct module *libc = find_module(pt->mods, pt->nmods, libc_names);
	const struct module *ldso = find_module(pt->mods, pt->nmods, ld_names);
	if (reach_safe_point(t, &t->tasks[0], libc, ldso) == 0 &&
	    remote_call(t, &t->tasks[0], stop_at, 0, 0, 0, 0, &ret) == 0)
		rc = 0;
	detach_all(t);
	return rc;
}

int att_attach(const struct att_opts *o, char *errbuf, size_t errlen)
{
	const pid_t pid = o->pid;
	const char *lib = o->lib, *absdir = o->absdir;
	struct target t = {.pid = pid, .mem = -1, .o = o, .eb = errbuf, .el = errlen};
	struct patcher pt = {.t = &t};
	struct module *mods = NULL;
	size_t nmods = 0;
	int rc = -1;
	struct stat lst;
	errbuf[0] = 0;
	if (pid <= 0 || pid == getpid())
		return fail(&t, ATR_E_USAGE, "%d: not a process I can attach to", (int)pid);
	if (kill(pid, 0) < 0 && errno == ESRCH)
		return fail(&t, ATR_E_NOTFOUND, "no process %d", (int)pid);
	if (stat(lib, &lst) < 0)
		return fail(&t, ATR_E_IO, "%s: %s", lib, strerror(errno));
	pt.self_dev = ((uint64_t)major(lst.st_dev) << 32) | minor(lst.st_dev);
	pt.self_ino = (uint64_t)lst.st_ino;
	t.tasks = calloc(MAX_TASKS, sizeof(*t.tasks));
	if (!t.tasks)
		return fail(&t, ATR_E_NOMEM, "out of memory");
	/* from here on, Ctrl-C only asks to finish: dying in the middle of a
	 * remote call would leave a thread that returns to address 0 */
	static const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
	struct sigaction sa, old_sa[3];
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = at_on_signal;
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &sa, &old_sa[i]);
	char p[96];
	snprintf(at_proc, sizeof(at_proc), "/proc/%d", (int)pid);
	if (task_dead(pid, pid)) {
		snprintf(p, sizeof(p), "/proc/%d/task", (int)pid);
		DIR *d = opendir(p);
		struct dirent *de;
		while (d && (de = readdir(d)) != NULL) {
			pid_t tid = (pid_t)atoi(de->d_name);
			if (tid > 0 && !task_dead(pid, tid)) {
				snprintf(at_proc, sizeof(at_proc), "/proc/%d/task/%d", (int)pid,
					 (int)tid);
				break;
			}
		}
		if (d)
			closedir(d);
	}
	if (parse_maps(pid, &mods, &nmods) < 0) {
		if (errno == EACCES || errno == EPERM)
			explain_eperm(&t, pid);
		else
			fail(&t, ATR_E_IO, "cannot read /proc/%d/maps: %s", (int)pid,
			     strerror(errno));
		goto out;
	}
	for (size_t i = 0; i < nmods; i++)
		if ((mods[i].dev == pt.self_dev && mods[i].ino == pt.self_ino) ||
		    !strcmp(base_name(mods[i].path), base_name(lib)) ||
		    !strcmp(base_name(mods[i].path), "libmtracectl.so")) {
			fail(&t, ATR_E_UNSUPPORTED,
			     "process %d already has %s loaded (it is or was traced); attaching "
			     "twice is not supported",
			     (int)pid, lib);
			goto out;
		}
	static const char *const libc_names[] = {"libc.so", "libc-", NULL};
	static const char *const libdl_names[] = {"libdl.so", "libdl-", NULL};
	struct module *libc = find_module(mods, nmods, libc_names);
	uint64_t dlopen_at = libc ? target_sym(pid, libc, "dlopen") : 0;
	uint64_t dlerror_at = libc ? target_sym(pid, libc, "dlerror") : 0;
	if (!dlopen_at) {
		struct module *dl = find_module(mods, nmods, libdl_names);
		dlopen_at = dl ? target_sym(pid, dl, "dlopen") : 0;
		dlerror_at = dl ? target_sym(pid, dl, "dlerror") : 0;
	}
	if (!dlopen_at) {
		fail(&t, ATR_E_UNSUPPORTED,
		     "process %d has no dynamic loader to call (%s); static binaries cannot be "
		     "attached to (docs/ATTACH.md)",
		     (int)pid, libc ? "no dlopen in its libc" : "no libc.so mapped");
		goto out;
	}

	/* 1. load the library with one thread stopped: the main thread, or
	 * the first live one if it has exited */
	int st = stop_task(&t, pid);
	if (st == 0) {
		DIR *d;
		snprintf(p, sizeof(p), "/proc/%d/task", (int)pid);
		if ((d = opendir(p)) != NULL) {
			struct dirent *de;
			while (st == 0 && (de = readdir(d)) != NULL)
				if (atoi(de->d_name) > 0)
					st = stop_task(&t, (pid_t)atoi(de->d_name));
			closedir(d);
		}
	}
	if (st <= 0) {
		if (st == 0)
			fail(&t, ATR_E_PROCESS, "cannot stop process %d (gone?)", (int)pid);
		goto out;
	}
	snprintf(p, sizeof(p), "%s/mem", at_proc);
	t.mem = open(p, O_RDWR | O_CLOEXEC);
	if (t.mem < 0) {
		fail(&t, ATR_E_IO, "%s: %s", p, strerror(errno));
		goto out_detach;
	}
	struct task *k = &t.tasks[0];
	static const char *const ld_names[] = {"ld-linux", "ld-", NULL};
	if (reach_safe_point(&t, k, libc, find_module(mods, nmods, ld_names)) < 0) {
		if (!proc_alive(pid))
			fail(&t, ATR_E_PROCESS,
			     "process %d exited while it was being stepped to a safe point; "
			     "nothing was traced",
			     (int)pid);
		goto out_detach;
	}
	uint64_t path_at, ret = 0;
	if (push_data(&t, k, 0, lib, strlen(lib) + 1, &path_at) < 0 ||
	    remote_call(&t, k, dlopen_at, path_at, 2 /* RTLD_NOW */, 0, 0, &ret) < 0) {
		fail(&t, ATR_E_PROCESS, "calling dlopen in process %d failed", (int)pid);
		goto out_detach;
	}
	if (!ret) {
		char msg[512] = "unknown error";
		uint64_t m = 0;
		if (dlerror_at && remote_call(&t, k, dlerror_at, 0, 0, 0, 0, &m) == 0 && m)
			read_str(&t, m, msg, sizeof(msg));
		fail(&t, ATR_E_PROCESS, "dlopen(%s) in process %d failed: %s", lib, (int)pid, msg);
		goto out_detach;
	}
	free(mods);
	mods = NULL;
	if (parse_maps(pid, &mods, &nmods) < 0) {
		fail(&t, ATR_E_IO, "cannot read /proc/%d/maps: %s", (int)pid, strerror(errno));
		goto out_detach;
	}
	struct module *self = NULL;
	for (size_t i = 0; i < nmods; i++)
		if (mods[i].dev == pt.self_dev && mods[i].ino == pt.self_ino && mods[i].base)
			self = &mods[i];
	uint64_t attach_at = self ? target_sym(pid, self, "alloctrace_attach_impl") : 0;
	uint64_t stop_at = self ? target_sym(pid, self, "alloctrace_stop_impl") : 0;
	for (int f = 0; f < NFUNCS; f++)
		pt.ours[f] = self ? target_sym(pid, self, funcs[f]) : 0;
	for (int f = 0; f < NFUNCS; f++)
		if (!pt.ours[f])
			attach_at = 0;
	if (!attach_at || !stop_at) {
		fail(&t, ATR_E_PROCESS, "%s is loaded in process %d but its symbols were not found",
		     lib, (int)pid);
		goto out_detach;
	}
	/* hand the tracer the functions behind canonical PLT stubs */
	find_canonical(&pt, mods, nmods, find_module(mods, nmods, libc_names));
	uint64_t dir_at, real_at, set_at;
	size_t set_off = strlen(absdir) + 64 + sizeof(pt.real) + 64;
	if (push_data(&t, k, 0, absdir, strlen(absdir) + 1, &dir_at) < 0 ||
	    push_data(&t, k, strlen(absdir) + 64, pt.real, sizeof(pt.real), &real_at) < 0 ||
	    push_data(&t, k, set_off, o->settings, o->settings_len, &set_at) < 0 ||
	    remote_call(&t, k, attach_at, dir_at, o->ticks_per_sec, real_at, set_at, &ret) < 0 ||
	    mem_read(&t, real_at, pt.real, sizeof(pt.real)) < 0) {
		fail(&t, ATR_E_PROCESS, "starting the tracer in process %d failed", (int)pid);
		goto out_detach;
	}
	if ((int)ret != 0) {
		fail(&t, ATR_E_PROCESS,
		     "the tracer in process %d could not start: %s (trace directory %s)", (int)pid,
		     strerror(-(int)ret), absdir);
		goto out_detach;
	}

	/* 2. patch with every thread stopped */
	uint64_t ta_lo = plat_mono_ns();
	if (stop_world(&t) < 0 || patch_new(&pt, 1) < 0) {
		restore_all(&pt);
		goto out_stop;
	}
	detach_all(&t);
	uint64_t ta_hi = plat_mono_ns();
	note(&t, ATT_INFO,
	     "attached to process %d: %zu GOT entries in %zu modules redirected (%zu bound "
	     "elsewhere, left alone); tracing %s",
	     (int)pid, pt.nslots, pt.modules, pt.skipped,
	     o->duration > 0 ? "for the given duration" : "until Ctrl-C");
	report_canonical(&pt);
	report_skips(&pt);

	/* 3. trace; patch modules loaded meanwhile */
	uint64_t end = o->duration > 0 ? ta_hi + (uint64_t)(o->duration * 1e9) : UINT64_MAX;
	int gone = 0;
	for (unsigned tick = 0; !at_stop && plat_mono_ns() < end; tick++) {
		uint64_t left = end - plat_mono_ns();
		sleep_ms(left < 50000000u ? (unsigned)(left / 1000000u) + 1 : 50);
		if (!proc_alive(pid)) {
			gone = 1;
			break;
		}
		if (tick % 4 == 3 && !at_stop && patch_new(&pt, 0) < 0) {
			note_failure(&t);
			gone = !proc_alive(pid); /* else: restore and detach now */
			break;
		}
	}
	if (gone) {
		note(&t, ATT_INFO, "process %d exited while traced; trace in %s", (int)pid, absdir);
		rc = 0;
		goto out;
	}

	/* 4. restore, stop, detach */
	uint64_t tb_lo = plat_mono_ns();
	if (stop_world(&t) < 0) {
		if (!proc_alive(pid)) {
			note_failure(&t);
			note(&t, ATT_INFO, "process %d exited while traced; trace in %s", (int)pid,
			     absdir);
			rc = 0;
			goto out;
		}
		fail(&t, ATR_E_PROCESS,
		     "cannot stop process %d to detach; its GOT entries stay redirected and it "
		     "keeps recording until it exits",
		     (int)pid);
		goto out;
	}
	uint64_t tb_hi = plat_mono_ns();
	size_t restored = restore_all(&pt);
	if (stop_recording(&t, &pt, stop_at) < 0) {
		fail(&t, ATR_E_PROCESS,
		     "could not stop the recording in process %d (its trace ends here anyway: no "
		     "call reaches the library any more)",
		     (int)pid);
		note_failure(&t);
	}
	note(&t, ATT_INFO,
	     "detached from process %d after %.3f s: %zu of %zu GOT entries restored%s", (int)pid,
	     (double)(tb_lo - ta_hi) / 1e9, restored, pt.nslots,
	     restored < pt.nslots ? " (the others were rebound by the program)" : "");
	note(&t, ATT_INFO,
	     "attach window (CLOCK_MONOTONIC ns): start %" PRIu64 "..%" PRIu64 ", end %" PRIu64
	     "..%" PRIu64,
	     ta_lo, ta_hi, tb_lo, tb_hi);
	rc = 0;
	goto out;

out_stop:
	/* the failure that brought us here stays the one returned */
	if (t.ntasks) {
		char cause[1024];
		snprintf(cause, sizeof(cause), "%s", errbuf);
		if (stop_recording(&t, &pt, stop_at) < 0)
			snprintf(errbuf, errlen,
				 "%s; and the recording in process %d could not be "
				 "stopped",
				 cause, (int)pid);
		else
			snprintf(errbuf, errlen, "%s", cause);
	}
out_detach:
	detach_all(&t);
out:
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &old_sa[i], NULL);
	if (t.mem >= 0)
		close(t.mem);
	free(t.tasks);
	free(mods);
	free(pt.mods);
	free(pt.slots);
	if (rc < 0 && !t.err) /* a step failed without saying why */
		fail(&t, ATR_E_PROCESS, "attaching to process %d failed", (int)pid);
	return rc < 0 ? t.err : 0;
}

#endif
