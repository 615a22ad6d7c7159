/* util_wbehind.h - write-behind for files that other processes append to.
 *
 * A thread that, every few milliseconds, looks at the files of one
 * directory whose names end in a suffix and, for each, writes to disk and
 * drops from the page cache everything but its newest window bytes.
 * `record` runs one on its trace directory while the program runs: the
 * recorder's full staging blocks go into the file through the page cache,
 * and on a VM whose host backs guest memory lazily a write into pages the
 * guest has not used for a while costs several times the copy
 * (bench/RESULTS.md, "Write-behind").  Pages dropped behind the writer are
 * reused at once by its next writes.  Only the page cache changes: the
 * files' bytes do not, whatever the timing, since dirty pages are written
 * before they are dropped and pages dirtied again stay.
 */
#ifndef UTIL_WBEHIND_H
#define UTIL_WBEHIND_H

#include <stdint.h>

struct util_wbehind;

/* Starts the thread on dir's files named *suffix, keeping the newest
 * window bytes of each in the page cache, looking every interval_ms.
 * NULL if window is 0 or the thread could not start (errno set). */
struct util_wbehind *util_wbehind_start(const char *dir, const char *suffix, uint64_t window,
					unsigned interval_ms);

/* Stops and frees it (NULL: nothing); returns the bytes of data (holes
 * not counted) it wrote back and dropped. */
uint64_t util_wbehind_stop(struct util_wbehind *w);

#endif
