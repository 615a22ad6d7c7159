/* plat_cpus.h - how many cores this process may run on, for the tools that
 * size their own threads (replay's workers, convert's second thread,
 * compaction's workers), and the pause of a spin-wait loop.
 * Header-only and libc-only, as plat_clock.h. */
#ifndef PLAT_CPUS_H
#define PLAT_CPUS_H

#include <sched.h>
#include <unistd.h>

/* The CPUs in this process's affinity mask (taskset counts), else the
 * online ones; at least 1. */
static inline unsigned plat_usable_cpus(void)
{
	cpu_set_t cs;
	if (sched_getaffinity(0, sizeof(cs), &cs) == 0 && CPU_COUNT(&cs) > 0)
		return (unsigned)CPU_COUNT(&cs);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (unsigned)n : 1;
}

/* One pause of a spin-wait loop: the core runs the other hardware thread
 * meanwhile, and leaves the loop without a memory-order flush. */
static inline void plat_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__asm__ volatile("pause");
#elif defined(__aarch64__)
	__asm__ volatile("yield");
#endif
}

#endif
