/* util_fmt.h - number formatting for human-readable output. */
#ifndef UTIL_FMT_H
#define UTIL_FMT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define UTIL_FMT_BUF 32

/* 1234567 -> "1,234,567".  Returns buf (len >= UTIL_FMT_BUF is enough). */
char *util_fmt_u64(char *buf, size_t len, uint64_t v);
/* Nanoseconds as "1.234567890 s" / "12.345 ms" / "850 ns". */
char *util_fmt_ns(char *buf, size_t len, uint64_t ns);
/* Bytes as "1,234 B (1.2 KiB)" style short form: "1.2 KiB"; < 1024: "N B". */
char *util_fmt_bytes(char *buf, size_t len, uint64_t bytes);
/* At most max bytes of s as HTML/XML text or attribute value: < > & "
 * escaped, control characters as '?'. */
void util_fputs_html(FILE *out, const char *s, size_t max);

#endif
