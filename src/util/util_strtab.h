/* util_strtab.h - interned strings: each distinct string stored once,
 * numbered 0, 1, ... in order of first appearance (pprof's string table,
 * massif's labels, the HTML report's frame names).  Open addressing on an
 * FNV-1a hash, grown at 50% load; the strings are copied. */
#ifndef UTIL_STRTAB_H
#define UTIL_STRTAB_H

#include <stddef.h>
#include <stdint.h>

/* Zero-initialised is empty. */
struct util_strtab {
	char **s; /* s[i]: the string numbered i */
	size_t n, cap;
	uint32_t *slots; /* index + 1, 0 = empty */
	size_t nslots;
};

/* Index of s (added if new), -1 on out of memory. */
long util_str_intern(struct util_strtab *t, const char *s);
void util_str_free(struct util_strtab *t);

#endif
