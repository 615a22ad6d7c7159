/* att_attach.h - `alloctrace record -p PID`: attach to a running process
 * (docs/ATTACH.md).  x86-64 Linux only; elsewhere att_attach() says so. */
#ifndef ATT_ATTACH_H
#define ATT_ATTACH_H

#include <stdint.h>
#include <sys/types.h>

/* Load lib (absolute path) into pid, redirect the malloc family of its
 * modules to it and trace into absdir/<pid>.atr for duration seconds
 * (<= 0: until SIGINT/SIGTERM), then restore and detach.  settings: the
 * tracer's ALLOCTRACE_* settings, "NAME=VALUE" strings each ended by a NUL,
 * then an empty one (settings_len bytes in all, at most 512).  Returns 0,
 * or 1 after printing why. */
int att_attach(pid_t pid, const char *lib, const char *absdir, uint64_t ticks_per_sec,
	       const char *settings, size_t settings_len, double duration);

#endif
