/* util_strtab.h - interned strings: each distinct string once, by index.
 * Open addressing on an FNV-1a hash; the strings are copied. */
#ifndef UTIL_STRTAB_H
#define UTIL_STRTAB_H

#include <stddef.h>
#include <stdint.h>

struct util_strtab {
	char **s;
	size_t n, cap;
	uint32_t *slots; /* open addressing: index + 1, 0 = empty */
	size_t nslots;
};

/* Index of s (added if new), -1 on out of memory. */
long util_str_intern(struct util_strtab *t, const char *s);
void util_str_free(struct util_strtab *t);

#endif
