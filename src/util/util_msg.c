/* util_msg.c - see util_msg.h. */
#include "util_msg.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static const char *msg_prog = "alloctrace";

void util_msg_set_prog(const char *name)
{
	msg_prog = name;
}

const char *util_msg_prog(void)
{
	return msg_prog;
}

static void __attribute__((format(printf, 2, 0)))
vmsg(const char *kind, const char *fmt, va_list ap)
{
	fflush(stdout);
	fprintf(stderr, "%s: %s", msg_prog, kind);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void util_err(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
}

void util_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmsg("warning: ", fmt, ap);
	va_end(ap);
}

void util_die_nomem(void)
{
	fprintf(stderr, "%s: out of memory\n", msg_prog);
	exit(1);
}
