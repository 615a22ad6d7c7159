/*
 * Tiny LD_PRELOAD helper for the benchmark: since glibc 2.34 the malloc
 * tracing code lives in libc_malloc_debug.so and MALLOC_TRACE alone does
 * nothing unless the program calls mtrace().  Preload it *after*
 * libc_malloc_debug.so.0 so that this mtrace() call binds to the debug
 * library's implementation:
 *
 *   LD_PRELOAD="/usr/lib/x86_64-linux-gnu/libc_malloc_debug.so.0 ./libmtrace_start.so" \
 *   MALLOC_TRACE=/tmp/trace.txt ./prog
 */
#include <mcheck.h>

__attribute__((constructor)) static void mtrace_start(void)
{
	mtrace();
}
