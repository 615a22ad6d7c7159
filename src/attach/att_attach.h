/* att_attach.h - `alloctrace record -p PID`: attach to a running process
 * (docs/ATTACH.md).  x86-64 Linux only; elsewhere att_attach() says so. */
#ifndef ATT_ATTACH_H
#define ATT_ATTACH_H

#include <stdint.h>
#include <sys/types.h>

/* Load lib (absolute path) into pid, redirect the malloc family of its
 * modules to it and trace into absdir/<pid>.atr for duration seconds
 * (<= 0: until SIGINT/SIGTERM), then restore and detach; sample_rate > 0:
 * record --sample.  Returns 0, or 1 after printing why. */
int att_attach(pid_t pid, const char *lib, const char *absdir, uint64_t ticks_per_sec,
	       uint64_t sample_rate, double duration);

#endif
