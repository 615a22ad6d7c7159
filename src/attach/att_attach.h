/* att_attach.h - `alloctrace record -p PID`: attach to a running process
 * (docs/ATTACH.md).  x86-64 Linux only; elsewhere att_attach() says so. */
#ifndef ATT_ATTACH_H
#define ATT_ATTACH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "atr_err.h"

/* What att_attach() tells while it works; the command prints it.
 * ATT_INFO: attached, detached, the attach window, the process exited;
 * ATT_WARN: calls that stay untraced; ATT_ERROR: a failure it went on past
 * (or that ended the recording without harm). */
enum att_note { ATT_INFO, ATT_WARN, ATT_ERROR };
typedef void (*att_note_fn)(void *arg, enum att_note kind, const char *msg);

struct att_opts {
	pid_t pid;
	const char *lib;    /* liballoctrace.so, an absolute path */
	const char *absdir; /* the trace directory (absolute): absdir/<pid>.atr */
	uint64_t ticks_per_sec;
	/* the tracer's ALLOCTRACE_* settings, "NAME=VALUE" strings each ended
	 * by a NUL, then an empty one (settings_len bytes in all, at most 512) */
	const char *settings;
	size_t settings_len;
	double duration; /* seconds; <= 0: until SIGINT/SIGTERM */
	att_note_fn note;
	void *note_arg;
};

/* Load o->lib into o->pid, redirect the malloc family of its modules to it
 * and trace for o->duration, then restore and detach.  0, or a negative
 * atr_err with the message in errbuf (ATR_E_PERM: ptrace refused, with
 * what to do; ATR_E_NOTFOUND: no such process; ATR_E_UNSUPPORTED: a static
 * program, a second attach, another architecture; ATR_E_PROCESS: the
 * target failed a step). */
int att_attach(const struct att_opts *o, char *errbuf, size_t errlen);

#endif
