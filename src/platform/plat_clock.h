/* plat_clock.h - the clocks every part of alloctrace reads, in one place
 * (mimalloc's prim.h idea): the monotonic clock, the hardware tick counter,
 * the invariant-TSC check and tick calibration.
 *
 * Header-only and libc-only (no stdio, no allocation), so the preload
 * library includes it too: the recorder, `record`, replay, the attacher and
 * the RSS sampler all read the same clock the same way.
 */
#ifndef PLAT_CLOCK_H
#define PLAT_CLOCK_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

/* CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t plat_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CLOCK_MONOTONIC in seconds (progress lines, rates). */
static inline double plat_mono_s(void)
{
	return (double)plat_mono_ns() * 1e-9;
}

/* The hardware tick counter: rdtsc, cntvct_el0, else the monotonic clock.
 * Use it as a clock only where plat_hw_ticks_usable() said so. */
static inline uint64_t plat_hw_ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __rdtsc();
#elif defined(__aarch64__)
	uint64_t v;
	__asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
	return v;
#else
	return plat_mono_ns();
#endif
}

/* The same, fenced so that the code between two reads runs between them
 * (lfence; rdtsc; lfence / isb; mrs; isb): a plain rdtsc lets a short call
 * run in the shadow of its own latency. */
static inline uint64_t plat_hw_ticks_fenced(void)
{
#if defined(__x86_64__) || defined(__i386__)
	_mm_lfence();
	uint64_t t = __rdtsc();
	_mm_lfence();
	return t;
#elif defined(__aarch64__)
	uint64_t v;
	__asm__ __volatile__("isb\n\tmrs %0, cntvct_el0\n\tisb" : "=r"(v)::"memory");
	return v;
#else
	return plat_mono_ns();
#endif
}

/* 1 when plat_hw_ticks() is a usable global clock: an invariant TSC
 * (constant_tsc and nonstop_tsc in the first CPU's flags) on x86, the
 * generic timer on aarch64; 0 elsewhere.  Reads /proc/cpuinfo with
 * open/read into a static buffer: call it once, at start-up. */
static inline int plat_hw_ticks_usable(void)
{
#if defined(__x86_64__) || defined(__i386__)
	static char buf[16384]; /* only the first CPU's flags line matters */
	int fd = open("/proc/cpuinfo", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n;
	do
		n = read(fd, buf, sizeof buf - 1);
	while (n < 0 && errno == EINTR);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	char *flags = strncmp(buf, "flags", 5) == 0 ? buf : strstr(buf, "\nflags");
	if (!flags)
		return 0;
	char *eol = strchr(flags + 1, '\n');
	if (eol)
		*eol = 0;
	return strstr(flags, " constant_tsc") && strstr(flags, " nonstop_tsc");
#elif defined(__aarch64__)
	return 1;
#else
	return 0;
#endif
}

/* Ticks per second of plat_hw_ticks(), 0 if unknown.  aarch64 reads the
 * frequency register; elsewhere the ticks are counted across window_ns of
 * the monotonic clock, sleeping (sleep != 0: `record`, which can wait
 * 20 ms) or spinning (the preload library: a short busy wait inside the
 * program's first malloc). */
static inline uint64_t plat_ticks_per_sec(uint64_t window_ns, int sleep)
{
#if defined(__aarch64__)
	uint64_t f;
	__asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(f));
	(void)window_ns;
	(void)sleep;
	return f;
#else
	uint64_t m0 = plat_mono_ns(), c0 = plat_hw_ticks(), m1, c1;
	if (sleep) {
		struct timespec req = {(time_t)(window_ns / 1000000000ull),
				       (long)(window_ns % 1000000000ull)};
		while (nanosleep(&req, &req) < 0 && errno == EINTR)
			;
	}
	do {
		m1 = plat_mono_ns();
		c1 = plat_hw_ticks();
	} while (m1 - m0 < window_ns);
	if (m1 <= m0 || c1 <= c0)
		return 0;
	return (uint64_t)((double)(c1 - c0) * 1e9 / (double)(m1 - m0));
#endif
}

#endif
