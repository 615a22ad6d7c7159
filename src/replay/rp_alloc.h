/* rp_alloc.h - finding the allocator under test and running the replay
 * under it (the replay runner executed with LD_PRELOAD and GLIBC_TUNABLES). */
#ifndef RP_ALLOC_H
#define RP_ALLOC_H

#include <stddef.h>

#include "atr_err.h"

#define RP_CHILD_ENV "ALLOCTRACE_REPLAY_CHILD"

/* The names rp_find_allocator() knows, NULL-terminated (shell completion). */
extern const char *const rp_allocator_names[];

/* name: glibc | none | jemalloc | tcmalloc | mimalloc | PATH.so.
 * Sets *lib to "" for glibc and none (no preload) or the library path.
 * 0, or with the message in errbuf ATR_E_IO (PATH.so unreadable),
 * ATR_E_NOTFOUND (a known allocator that is not installed: which package)
 * or ATR_E_USAGE (an unknown name). */
int rp_find_allocator(const char *name, char *lib, size_t liblen, char *errbuf, size_t errlen);

/* Executes the replay runner exe (RC_RUNNER_NAME, found by `alloctrace
 * replay`) with argv, RP_CHILD_ENV=1 (the runner refuses to run without
 * it: it would not preload the allocator itself), LD_PRELOAD=lib (if
 * lib[0]) and GLIBC_TUNABLES=tunables (if non-empty).  With a lib or
 * tunables, LD_PRELOAD keeps only liballoctrace.so of what it held (a
 * user recording the replay); for plain glibc it is left as it is.
 * Returns only on failure, with the message in errbuf: ATR_E_UNSUPPORTED
 * (an ASan build under another allocator) or ATR_E_IO. */
int rp_exec_runner(const char *exe, char **argv, const char *lib, const char *tunables,
		   char *errbuf, size_t errlen);

#endif
