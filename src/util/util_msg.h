/* util_msg.h - messages to stderr, all prefixed "alloctrace: ". */
#ifndef UTIL_MSG_H
#define UTIL_MSG_H

/* Set the prefix word (default "alloctrace"). */
void util_msg_set_prog(const char *name);
const char *util_msg_prog(void);
/* "alloctrace: <message>\n" */
void util_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "alloctrace: warning: <message>\n" */
void util_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Out of memory: message and exit(1). */
void util_die_nomem(void) __attribute__((noreturn));

#endif
