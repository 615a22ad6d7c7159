/* alloctrace.h - control API of the alloctrace malloc tracer.
 *
 * Every function is safe to call whether or not liballoctrace.so is loaded:
 * they are weak references, and without the tracer they do nothing and
 * return 0.  Link nothing; just include this header.
 *
 *   alloctrace_start()   begin recording (recording starts by itself unless
 *                        ALLOCTRACE_START=0 / `record --no-start` was given)
 *   alloctrace_stop()    stop recording for the rest of the process
 *                        (start() may turn it on again)
 *   alloctrace_pause()   suspend recording; calls in between are not traced
 *   alloctrace_resume()  undo pause()
 *   alloctrace_sync()    returns the number of records written so far by the
 *                        whole process; data up to here is in the file
 *   alloctrace_marker()  writes a named event (label up to 255 bytes)
 */
#ifndef ALLOCTRACE_H
#define ALLOCTRACE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ALLOCTRACE_API_VERSION 1

/* Implemented by liballoctrace.so; the weak declarations let a program
 * that was not started under the tracer link and run unchanged. */
int alloctrace_start_impl(void) __attribute__((weak));
int alloctrace_stop_impl(void) __attribute__((weak));
int alloctrace_pause_impl(void) __attribute__((weak));
int alloctrace_resume_impl(void) __attribute__((weak));
uint64_t alloctrace_sync_impl(void) __attribute__((weak));
int alloctrace_marker_impl(const char *label) __attribute__((weak));

/* 1 when the tracer is loaded in this process, 0 otherwise. */
static inline int alloctrace_present(void)
{
	return alloctrace_sync_impl != 0;
}

static inline int alloctrace_start(void)
{
	return alloctrace_start_impl ? alloctrace_start_impl() : 0;
}

static inline int alloctrace_stop(void)
{
	return alloctrace_stop_impl ? alloctrace_stop_impl() : 0;
}

static inline int alloctrace_pause(void)
{
	return alloctrace_pause_impl ? alloctrace_pause_impl() : 0;
}

static inline int alloctrace_resume(void)
{
	return alloctrace_resume_impl ? alloctrace_resume_impl() : 0;
}

static inline uint64_t alloctrace_sync(void)
{
	return alloctrace_sync_impl ? alloctrace_sync_impl() : 0;
}

static inline int alloctrace_marker(const char *label)
{
	return alloctrace_marker_impl ? alloctrace_marker_impl(label) : 0;
}

/* Seed compatibility: the dj/malloc branch's names. */
#define mtrace_start()	 alloctrace_start()
#define mtrace_stop()	 alloctrace_stop()
#define mtrace_pause()	 alloctrace_pause()
#define mtrace_unpause() alloctrace_resume()
#define mtrace_sync()	 alloctrace_sync()

#ifdef __cplusplus
}
#endif
#endif
